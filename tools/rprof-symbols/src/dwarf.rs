//! Source lines and inlined functions from DWARF, for `rprof annotate`
//! and the exports.
//!
//! Sections compressed in place (`SHF_COMPRESSED`, zlib or zstd, what
//! `gcc -gz` and distributions' debug packages produce) are decompressed.
//! Addresses are virtual addresses of the unrelocated image, as
//! [`crate::ElfImage`] gives them.

use object::{Object, ObjectSection};
use std::sync::Arc;

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// The line tables and inlining of one ELF file.  It owns its sections
/// (copied out, decompressed where they were compressed), so the file's
/// bytes need not outlive it.
pub struct Lines {
    ctx: addr2line::Context<Reader>,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lines")
    }
}

impl Lines {
    /// Loads the DWARF of an ELF file's bytes; `None` if it has no line
    /// information that can be read.
    pub fn parse(data: &[u8]) -> Option<Lines> {
        let file = object::File::parse(data).ok()?;
        file.section_by_name(".debug_line")?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let bytes: Arc<[u8]> = match file.section_by_name(id.name()) {
                Some(s) => match s.uncompressed_data() {
                    Ok(b) => Arc::from(b.as_ref()),
                    // A section that cannot be decompressed reads as empty.
                    Err(_) => Arc::from(&[][..]),
                },
                None => Arc::from(&[][..]),
            };
            Ok(Reader::new(bytes, endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(Lines { ctx })
    }

    /// Whether `data` is an ELF file with a line table.
    pub fn present(data: &[u8]) -> bool {
        object::File::parse(data)
            .map(|f| f.section_by_name(".debug_line").is_some())
            .unwrap_or(false)
    }

    /// The source file and line of `vaddr`.
    pub fn line(&self, vaddr: u64) -> Option<(String, u32)> {
        let loc = self.ctx.find_location(vaddr).ok()??;
        Some((loc.file?.to_string(), loc.line?))
    }

    /// The functions inlined at `vaddr`, innermost first, ending with the
    /// function that holds the code: each with its name (demangled) and
    /// the source file and line it is at there (for an outer function,
    /// the call site of the inner one).  Empty if DWARF does not cover
    /// `vaddr`.
    pub fn frames(&self, vaddr: u64) -> Vec<InlineFrame> {
        let mut out = Vec::new();
        let Ok(mut iter) = self.ctx.find_frames(vaddr).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(f)) = iter.next() {
            let function = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map(|n| crate::demangle::demangle(&n).into_owned());
            let (file, line) = match &f.location {
                Some(l) => (l.file.map(str::to_string), l.line.unwrap_or(0)),
                None => (None, 0),
            };
            out.push(InlineFrame {
                function,
                file,
                line,
            });
        }
        out
    }
}

/// One function of [`Lines::frames`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFrame {
    /// Its name, if DWARF has one.
    pub function: Option<String>,
    /// The source file the address is at in it.
    pub file: Option<String>,
    /// The line the address is at in it (0: unknown).
    pub line: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_has_no_lines() {
        assert!(Lines::parse(b"not elf").is_none());
    }
}

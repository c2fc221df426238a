//! What the attribution checks need of an ELF file: one function, found by
//! name in its symbol tables, and the file's loadable segments.
//!
//! The module reports user samples as (file cookie, file offset); the
//! segments, and turning a file offset into a virtual address through them,
//! are the symbolizer's ([`rprof_symbols::ElfImage`]).  Symbol values are
//! virtual addresses of the same (unrelocated) image, for executables and
//! shared objects alike.
//!
//! The function is looked up among every defined function symbol of
//! `.symtab` and then `.dynsym`, aliases included; the symbolizer keeps one
//! name per address, which is what a report wants but not what a check
//! naming a function wants.

use object::read::elf::ElfFile64;
use object::{Endianness, Object, ObjectSymbol, SymbolKind};
use rprof_symbols::elf::{load_with, parse_elf64};
use rprof_symbols::ElfImage;
use std::path::Path;

/// A defined symbol: its address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol {
    /// `st_value`.
    pub addr: u64,
    /// `st_size`.
    pub size: u64,
}

impl Symbol {
    /// Whether `vaddr` is inside the symbol.
    pub fn contains(&self, vaddr: u64) -> bool {
        vaddr >= self.addr && vaddr - self.addr < self.size
    }
}

/// Of the symbols of one name, in file order: the first if it has a size,
/// else the first that has one, else the first.
fn pick(mut found: impl Iterator<Item = Symbol>) -> Option<Symbol> {
    let first = found.next()?;
    if first.size > 0 {
        return Some(first);
    }
    Some(found.find(|s| s.size > 0).unwrap_or(first))
}

/// The function symbol `name` of `elf` (a sized one if there are several):
/// from the full symbol table if the file kept one, then the dynamic one.
pub fn function_symbol(elf: &ElfFile64<'_, Endianness>, name: &str) -> Option<Symbol> {
    pick(
        elf.symbols()
            .chain(elf.dynamic_symbols())
            .filter(|s| {
                !s.is_undefined() && s.kind() == SymbolKind::Text && s.name().ok() == Some(name)
            })
            .map(|s| Symbol {
                addr: s.address(),
                size: s.size(),
            }),
    )
}

/// A function of an ELF file, and the file's segments.
#[derive(Debug, Clone)]
pub struct Function {
    /// The file's segments (and the symbolizer's view of it).
    pub image: ElfImage,
    /// The function.
    pub symbol: Symbol,
}

impl Function {
    /// Function `name` of a 64-bit ELF file's bytes.
    pub fn parse(data: &[u8], name: &str) -> Result<Function, String> {
        let elf = parse_elf64(data)?;
        let symbol =
            function_symbol(&elf, name).ok_or_else(|| format!("no function symbol '{name}'"))?;
        Ok(Function {
            image: ElfImage::from_elf(&elf),
            symbol,
        })
    }

    /// Function `name` of the ELF file at `path`; errors name the path.
    pub fn load(path: &Path, name: &str) -> Result<Function, String> {
        load_with(path, |data| Self::parse(data, name))
    }

    /// Whether file offset `offset` is inside the function; `None` if no
    /// PT_LOAD segment holds the offset.
    pub fn holds_offset(&self, offset: u64) -> Option<bool> {
        self.image
            .vaddr_of_offset(offset)
            .map(|vaddr| self.symbol.contains(vaddr))
    }
}

/// Where function `name` of a kernel module's `.ko` lies in the module's
/// core text once loaded: `[start, end)` as offsets from the text's base
/// (what a MODULE record's `base` is).
///
/// The module loader (kernel/module/main.c, `layout_sections`) lays the
/// allocated executable sections of the object out in file order, each at
/// its alignment, leaving the `.init*` ones to the init text; a function's
/// offset is its section's place in that layout plus its symbol value
/// (relative to its section in a relocatable object).  Computed here from
/// the file alone, independently of anything the profiler reports.
pub fn module_text_range(data: &[u8], name: &str) -> Result<(u64, u64), String> {
    use object::read::elf::SectionHeader;
    use object::{elf, ObjectSection};
    let elf = parse_elf64(data)?;
    let sym = elf
        .symbols()
        .find(|s| !s.is_undefined() && s.kind() == SymbolKind::Text && s.name().ok() == Some(name))
        .ok_or_else(|| format!("no function symbol '{name}'"))?;
    let want = sym
        .section_index()
        .ok_or_else(|| format!("'{name}' is not defined in a section"))?;
    let endian = elf.endian();
    let mut offset = 0u64;
    for section in elf.sections() {
        let header = section.elf_section_header();
        let flags = header.sh_flags(endian);
        let exec = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
        let sname = section.name().unwrap_or("");
        if flags & exec != exec || sname.starts_with(".init") {
            continue;
        }
        let align = header.sh_addralign(endian).max(1);
        offset = offset.next_multiple_of(align);
        if section.index() == want {
            let start = offset + sym.address();
            return Ok((start, start + sym.size()));
        }
        offset += header.sh_size(endian);
    }
    Err(format!(
        "'{name}' is not in the module's core text (an .init section?)"
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A function of this test binary, found by name in its symbol table.
    #[no_mangle]
    #[inline(never)]
    pub extern "C" fn rprof_e2e_elf_test_marker(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3).wrapping_add(7))
    }

    /// [`rprof_e2e_elf_test_marker`] in the running test binary.
    pub(crate) fn marker_function() -> Function {
        let exe = std::env::current_exe().unwrap();
        Function::load(&exe, "rprof_e2e_elf_test_marker").unwrap()
    }

    #[test]
    fn finds_a_function_of_this_binary() {
        assert_eq!(rprof_e2e_elf_test_marker(1), 10);
        let f = marker_function();
        let (image, sym) = (&f.image, f.symbol);
        assert!(image.segments.iter().any(|s| s.exec), "{image:?}");
        assert!(sym.size > 0);
        // File offset and address convert into each other inside the
        // function; the function is in an executable segment.
        let off = image.offset_of_vaddr(sym.addr).unwrap();
        assert_eq!(image.vaddr_of_offset(off), Some(sym.addr));
        assert_eq!(
            image.vaddr_of_offset(off + sym.size - 1),
            Some(sym.addr + sym.size - 1)
        );
        assert!(sym.contains(sym.addr) && !sym.contains(sym.addr + sym.size));
        assert_eq!(f.holds_offset(off), Some(true));
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let elf = parse_elf64(&data).unwrap();
        assert_eq!(function_symbol(&elf, "no_such_symbol_anywhere"), None);
        let e = Function::load(&exe, "no_such_symbol_anywhere").unwrap_err();
        assert!(
            e.ends_with(": no function symbol 'no_such_symbol_anywhere'"),
            "{e}"
        );
    }

    #[test]
    fn a_sized_symbol_first() {
        let unsized_f = Symbol {
            addr: 0x1010,
            size: 0,
        };
        let sized_f = Symbol {
            addr: 0x1010,
            size: 0x20,
        };
        assert_eq!(pick([unsized_f, sized_f].into_iter()), Some(sized_f));
    }

    #[test]
    fn not_elf_is_an_error() {
        assert!(Function::parse(b"#!/bin/sh\n", "f").is_err());
        assert!(Function::parse(&[], "f").is_err());
        assert!(Function::load(Path::new("/nonexistent/rprof/elf"), "f").is_err());
    }
}

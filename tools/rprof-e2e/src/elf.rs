//! What the attribution check needs of an ELF file: its loadable segments
//! (to turn a file offset into a virtual address) and its function symbols.
//!
//! The module reports user samples as (file cookie, file offset), where the
//! offset is `(vm_pgoff << PAGE_SHIFT) + ip - vm_start`.  The mapping of a
//! segment covers its bytes at the same distance from the segment's start
//! in the file and in memory, so for the PT_LOAD segment that holds the
//! offset: `vaddr = offset - p_offset + p_vaddr`.  Symbol values are
//! virtual addresses of the same (unrelocated) image, for executables and
//! shared objects alike.

use object::elf::{PF_X, PT_LOAD};
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol, SymbolKind};
use std::path::Path;

/// A PT_LOAD segment: where its bytes are in the file and in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub file_size: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_flags & PF_X`.
    pub exec: bool,
}

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

/// The loadable segments and the function symbols of one ELF file.
#[derive(Debug, Clone, Default)]
pub struct ElfImage {
    /// The PT_LOAD segments, in program header order.
    pub segments: Vec<Segment>,
    symbols: Vec<(String, Symbol)>,
}

impl ElfImage {
    /// Parses a 64-bit ELF file's bytes.
    pub fn parse(data: &[u8]) -> Result<ElfImage, String> {
        let elf = ElfFile64::<Endianness>::parse(data)
            .map_err(|e| format!("not a 64-bit ELF file: {e}"))?;
        let endian = elf.endian();
        let segments = elf
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| Segment {
                offset: ph.p_offset(endian),
                file_size: ph.p_filesz(endian),
                vaddr: ph.p_vaddr(endian),
                exec: ph.p_flags(endian) & PF_X != 0,
            })
            .collect();
        // The full symbol table if the file kept one, then the dynamic one.
        let mut symbols = Vec::new();
        for sym in elf.symbols().chain(elf.dynamic_symbols()) {
            if sym.is_undefined() || sym.kind() != SymbolKind::Text {
                continue;
            }
            if let Ok(name) = sym.name() {
                symbols.push((
                    name.to_string(),
                    Symbol {
                        addr: sym.address(),
                        size: sym.size(),
                    },
                ));
            }
        }
        Ok(ElfImage { segments, symbols })
    }

    /// Reads and parses the ELF file at `path`.
    pub fn load(path: &Path) -> Result<ElfImage, String> {
        let data =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&data).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The virtual address of file offset `offset`: in the PT_LOAD segment
    /// whose file bytes hold it (an executable one first, should segments
    /// share a page of the file).
    pub fn vaddr_of_offset(&self, offset: u64) -> Option<u64> {
        let holds = |s: &&Segment| offset >= s.offset && offset - s.offset < s.file_size;
        let seg = self
            .segments
            .iter()
            .filter(holds)
            .find(|s| s.exec)
            .or_else(|| self.segments.iter().find(holds))?;
        (offset - seg.offset).checked_add(seg.vaddr)
    }

    /// The file offset of virtual address `vaddr` (the inverse of
    /// [`ElfImage::vaddr_of_offset`], for tests and reports).
    pub fn offset_of_vaddr(&self, vaddr: u64) -> Option<u64> {
        let seg = self
            .segments
            .iter()
            .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.file_size)?;
        (vaddr - seg.vaddr).checked_add(seg.offset)
    }

    /// The function symbol `name` (a sized one if there are several).
    pub fn symbol(&self, name: &str) -> Option<Symbol> {
        let mut found = self
            .symbols
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, s)| *s);
        let first = found.next()?;
        if first.size > 0 {
            return Some(first);
        }
        Some(found.find(|s| s.size > 0).unwrap_or(first))
    }
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

    /// The running test binary, parsed.
    pub(crate) fn this_binary() -> ElfImage {
        let exe = std::env::current_exe().unwrap();
        ElfImage::load(&exe).unwrap()
    }

    #[test]
    fn finds_a_function_of_this_binary() {
        assert_eq!(rprof_e2e_elf_test_marker(1), 10);
        let image = this_binary();
        assert!(image.segments.iter().any(|s| s.exec), "{image:?}");
        let sym = image.symbol("rprof_e2e_elf_test_marker").unwrap();
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
        assert_eq!(image.symbol("no_such_symbol_anywhere"), None);
    }

    #[test]
    fn segment_arithmetic() {
        let image = ElfImage {
            segments: vec![
                Segment {
                    offset: 0,
                    file_size: 0x500,
                    vaddr: 0,
                    exec: false,
                },
                Segment {
                    offset: 0x1000,
                    file_size: 0x200,
                    vaddr: 0x1000,
                    exec: true,
                },
                Segment {
                    offset: 0x2000,
                    file_size: 0x100,
                    vaddr: 0x3000,
                    exec: false,
                },
            ],
            symbols: vec![
                (
                    "f".into(),
                    Symbol {
                        addr: 0x1010,
                        size: 0,
                    },
                ),
                (
                    "f".into(),
                    Symbol {
                        addr: 0x1010,
                        size: 0x20,
                    },
                ),
            ],
        };
        assert_eq!(image.vaddr_of_offset(0x10), Some(0x10));
        assert_eq!(image.vaddr_of_offset(0x1100), Some(0x1100));
        assert_eq!(image.vaddr_of_offset(0x2010), Some(0x3010));
        assert_eq!(image.vaddr_of_offset(0x600), None, "between segments");
        assert_eq!(image.vaddr_of_offset(0x2100), None, "past the file bytes");
        assert_eq!(image.offset_of_vaddr(0x3020), Some(0x2020));
        assert_eq!(
            image.symbol("f"),
            Some(Symbol {
                addr: 0x1010,
                size: 0x20
            })
        );
    }

    #[test]
    fn not_elf_is_an_error() {
        assert!(ElfImage::parse(b"#!/bin/sh\n").is_err());
        assert!(ElfImage::parse(&[]).is_err());
        assert!(ElfImage::load(Path::new("/nonexistent/rprof/elf")).is_err());
    }
}

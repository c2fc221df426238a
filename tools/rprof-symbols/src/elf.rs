//! ELF files: function symbols by file offset, and build-ids.
//!
//! The module reports a user sample as (file cookie, file offset), the
//! offset being `(vm_pgoff << PAGE_SHIFT) + ip - vm_start`.  A PT_LOAD
//! segment maps its file bytes at the same distances in memory, so for the
//! segment that holds the offset `vaddr = offset - p_offset + p_vaddr`, and
//! symbol values are virtual addresses of that same unrelocated image, for
//! executables and shared objects alike.

use crate::hit::Hit;
use object::elf::{PF_X, PT_LOAD};
use object::read::elf::{ElfFile, ElfFile32, ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, FileKind, Object, ObjectSymbol, ReadCache, SymbolKind};
use std::fs::File;
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

#[derive(Debug, Clone, PartialEq, Eq)]
struct Sym {
    addr: u64,
    size: u64,
    /// The name as shown (demangled).
    name: String,
    /// The name in the symbol table, when demangling changed it.
    raw: Option<String>,
}

/// The loadable segments and function symbols of one ELF file.
#[derive(Debug, Clone, Default)]
pub struct ElfImage {
    /// The PT_LOAD segments, in program header order.
    pub segments: Vec<Segment>,
    /// Function symbols sorted by address, one per address.
    symbols: Vec<Sym>,
    /// The GNU build-id, if the file has one.
    pub build_id: Option<Vec<u8>>,
    /// Whether the symbols include a full `.symtab` (not only `.dynsym`,
    /// as in a stripped file).
    pub has_symtab: bool,
}

/// Sorts raw (mangled) symbols by address, keeps one per address (the
/// sized one, then the global-looking: shortest, for aliases like
/// `__libc_foo` / `foo` the first by name), and demangles them.
fn one_per_address(mut symbols: Vec<Sym>) -> Vec<Sym> {
    symbols.sort_by(|a, b| {
        a.addr
            .cmp(&b.addr)
            .then(b.size.cmp(&a.size))
            .then(a.name.len().cmp(&b.name.len()))
            .then(a.name.cmp(&b.name))
    });
    symbols.dedup_by(|b, a| a.addr == b.addr);
    for s in &mut symbols {
        if let std::borrow::Cow::Owned(d) = crate::demangle(&s.name) {
            s.raw = Some(std::mem::replace(&mut s.name, d));
        }
    }
    symbols
}

/// Parses a 64-bit ELF file's bytes (headers only; tables are read as they
/// are asked for).
pub fn parse_elf64(data: &[u8]) -> Result<ElfFile64<'_, Endianness>, String> {
    ElfFile64::<Endianness>::parse(data).map_err(|e| format!("not a 64-bit ELF file: {e}"))
}

pub use crate::root::MAX_FILE;

/// Opens `path` for reading if it is a regular file.  Paths come from
/// recordings, which may name a FIFO (opening it would block), a device
/// or a `/proc` file (reading it might never end): only a path that is a
/// regular file is opened for reading (see [`crate::root`]).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    crate::root::open_regular(path)
}

/// The bytes of the regular file at `path` (see [`open_regular`]).
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::root::read_sized(open_regular(path)?, MAX_FILE)
}

/// Reads the file at `path` and hands its bytes to `parse`; an error of
/// either names the path.
pub fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, String> {
    let data = read_file(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&data).map_err(|e| format!("{}: {e}", path.display()))
}

impl ElfImage {
    /// Parses an ELF file's bytes: 64-bit, or 32-bit (the programs of a
    /// 32-bit task, which the module walks and attributes like any).
    pub fn parse(data: &[u8]) -> Result<ElfImage, String> {
        if let Ok(FileKind::Elf32) = FileKind::parse(data) {
            let elf = ElfFile32::<Endianness>::parse(data)
                .map_err(|e| format!("not a valid 32-bit ELF file: {e}"))?;
            return Ok(Self::from_elf(&elf));
        }
        Ok(Self::from_elf(&parse_elf64(data)?))
    }

    /// The segments, function symbols and build-id of a parsed ELF file
    /// of either class.
    pub fn from_elf<Elf: FileHeader<Endian = Endianness>>(elf: &ElfFile<'_, Elf>) -> ElfImage {
        let endian = elf.endian();
        let segments = elf
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == PT_LOAD)
            .map(|ph| Segment {
                offset: ph.p_offset(endian).into(),
                file_size: ph.p_filesz(endian).into(),
                vaddr: ph.p_vaddr(endian).into(),
                exec: ph.p_flags(endian) & PF_X != 0,
            })
            .collect();
        let symbols: Vec<Sym> = elf
            .symbols()
            .chain(elf.dynamic_symbols())
            .filter(|s| !s.is_undefined() && s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                (!name.is_empty()).then(|| Sym {
                    addr: s.address(),
                    size: s.size(),
                    name: name.to_string(),
                    raw: None,
                })
            })
            .collect();
        let symbols = one_per_address(symbols);
        let build_id = elf.build_id().ok().flatten().map(<[u8]>::to_vec);
        ElfImage {
            segments,
            symbols,
            build_id,
            has_symtab: elf.section_by_name(".symtab").is_some(),
        }
    }

    /// Adds the function symbols of `debug`, the separate debug file of
    /// this (stripped) file: its `.symtab` has the local functions that
    /// stripping removed, at the same virtual addresses.  Segments and
    /// build-id stay this file's.
    pub fn add_symbols_of(&mut self, debug: &ElfImage) {
        let mut all = std::mem::take(&mut self.symbols);
        all.extend(debug.symbols.iter().cloned());
        // Back to the raw names, which `one_per_address` orders and
        // demangles.
        for s in &mut all {
            if let Some(raw) = s.raw.take() {
                s.name = raw;
            }
        }
        self.symbols = one_per_address(all);
        self.has_symtab |= debug.has_symtab;
    }

    /// Reads and parses the ELF file at `path`.
    pub fn load(path: &Path) -> Result<ElfImage, String> {
        load_with(path, Self::parse)
    }

    /// The virtual address of file offset `offset`: in the PT_LOAD segment
    /// whose file bytes hold it (an executable one first, should segments
    /// share a page of the file).
    pub fn vaddr_of_offset(&self, offset: u64) -> Option<u64> {
        let seg = self.segment_of_offset(offset)?;
        (offset - seg.offset).checked_add(seg.vaddr)
    }

    /// The PT_LOAD segment whose file bytes hold file offset `offset` (an
    /// executable one first, should segments share a page of the file).
    pub fn segment_of_offset(&self, offset: u64) -> Option<&Segment> {
        let holds = |s: &&Segment| offset >= s.offset && offset - s.offset < s.file_size;
        self.segments
            .iter()
            .filter(holds)
            .find(|s| s.exec)
            .or_else(|| self.segments.iter().find(holds))
    }

    /// The file offset of virtual address `vaddr`.
    pub fn offset_of_vaddr(&self, vaddr: u64) -> Option<u64> {
        let seg = self
            .segments
            .iter()
            .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.file_size)?;
        (vaddr - seg.vaddr).checked_add(seg.offset)
    }

    /// The function symbol that holds virtual address `vaddr`: the
    /// nearest one at or below it, if `vaddr` is inside its size (or, for
    /// a symbol without a size, below the next symbol).
    pub fn symbol_at(&self, vaddr: u64) -> Option<Hit<'_>> {
        let i = self.symbols.partition_point(|s| s.addr <= vaddr);
        let sym = self.symbols.get(i.checked_sub(1)?)?;
        let offset = vaddr - sym.addr;
        let inside = if sym.size > 0 {
            offset < sym.size
        } else {
            // Unsized: up to the next symbol, within the same segment.
            let next = self.symbols.get(i).map_or(u64::MAX, |s| s.addr);
            vaddr < next
                && self
                    .segments
                    .iter()
                    .any(|s| sym.addr >= s.vaddr && vaddr - s.vaddr < s.file_size)
        };
        inside.then_some(Hit {
            name: &sym.name,
            addr: sym.addr,
            size: sym.size,
            offset,
        })
    }

    /// The function symbol of file offset `offset`, and the virtual address
    /// the offset is at.
    pub fn symbol_at_offset(&self, offset: u64) -> (Option<u64>, Option<Hit<'_>>) {
        let vaddr = self.vaddr_of_offset(offset);
        (vaddr, vaddr.and_then(|v| self.symbol_at(v)))
    }

    /// Every function symbol named `name`, demangled or as the symbol
    /// table has it (aliases of one address count once): (address, size).
    pub fn symbols_named(&self, name: &str) -> Vec<(u64, u64)> {
        self.symbols
            .iter()
            .filter(|s| s.name == name || s.raw.as_deref() == Some(name))
            .map(|s| (s.addr, s.size))
            .collect()
    }

    /// Number of distinct function symbols.
    pub fn symbol_count(&self) -> usize {
        self.symbols.len()
    }
}

/// The GNU build-id of the ELF file at `path`: `Ok(None)` if it is not ELF
/// or has no `.note.gnu.build-id`.  Reads only the headers and notes.
pub fn read_build_id(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let file = open_regular(path)?;
    let cache = ReadCache::new(file);
    let Ok(elf) = object::File::parse(&cache) else {
        return Ok(None);
    };
    Ok(elf.build_id().ok().flatten().map(<[u8]>::to_vec))
}

/// A build-id as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dwarf::Lines;

    /// A function of this test binary, found by name in its symbol table.
    #[no_mangle]
    #[inline(never)]
    pub extern "C" fn rprof_symbols_test_marker(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3).wrapping_add(7))
    }

    #[test]
    fn finds_a_function_of_this_binary_by_file_offset() {
        assert_eq!(rprof_symbols_test_marker(1), 10);
        let exe = std::env::current_exe().unwrap();
        let image = ElfImage::load(&exe).unwrap();
        let syms = image.symbols_named("rprof_symbols_test_marker");
        assert_eq!(syms.len(), 1, "{syms:?}");
        let (addr, size) = syms[0];
        assert!(size > 0);
        let off = image.offset_of_vaddr(addr + 1).unwrap();
        let (vaddr, hit) = image.symbol_at_offset(off);
        assert_eq!(vaddr, Some(addr + 1));
        let hit = hit.unwrap();
        assert_eq!((hit.name, hit.offset), ("rprof_symbols_test_marker", 1));
        // The build-id, both ways (Rust test binaries on Linux have one
        // when the linker adds it; both must agree either way).
        assert_eq!(read_build_id(&exe).unwrap(), image.build_id);
    }

    /// A 32-bit program (`cc -m32`, what a 32-bit task runs): its
    /// segments, function symbols, build-id and DWARF lines are read like
    /// a 64-bit one's.
    #[test]
    fn a_32_bit_program_is_symbolized() {
        let dir = crate::testutil::test_dir("elf", "m32");
        let bin = crate::testprog::build_c(&dir, "m32.c", "m32", "hot32", false, &["-m32"]);
        let data = std::fs::read(&bin).unwrap();
        assert_eq!(FileKind::parse(&*data).unwrap(), FileKind::Elf32);
        let image = ElfImage::parse(&data).unwrap();
        assert!(
            image.segments.iter().any(|s| s.exec),
            "{:?}",
            image.segments
        );
        let syms = image.symbols_named("hot32");
        assert_eq!(syms.len(), 1, "{syms:?}");
        let (addr, size) = syms[0];
        assert!(size > 0);
        let off = image.offset_of_vaddr(addr + 2).unwrap();
        let (vaddr, hit) = image.symbol_at_offset(off);
        assert_eq!(vaddr, Some(addr + 2));
        let hit = hit.unwrap();
        assert_eq!((hit.name, hit.offset), ("hot32", 2));
        assert!(image.build_id.is_some());
        assert_eq!(read_build_id(&bin).unwrap(), image.build_id);
        let lines = crate::dwarf::Lines::parse(&data).expect("DWARF of a 32-bit file");
        let (file, _) = lines.line(addr + 2).expect("a line in hot32");
        assert!(file.ends_with("m32.c"), "{file}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A Rust function of this binary that stays a function of its own:
    /// never inlined, and its address taken (a test function itself may
    /// be inlined into the test harness's closure, depending on codegen).
    #[inline(never)]
    fn a_rust_function_to_find(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(3)
    }

    /// A Rust function of this test binary is shown demangled, and is
    /// found by either name.
    #[test]
    fn rust_functions_of_this_binary_are_demangled() {
        let f: fn(u64) -> u64 = a_rust_function_to_find;
        assert_eq!(std::hint::black_box(f)(2), 6);
        let exe = std::env::current_exe().unwrap();
        let image = ElfImage::load(&exe).unwrap();
        let demangled = image
            .symbols
            .iter()
            .find(|s| s.name.ends_with("elf::tests::a_rust_function_to_find"))
            .unwrap_or_else(|| panic!("no demangled test function among {}", image.symbols.len()));
        let raw = demangled.raw.clone().expect("the mangled name is kept");
        assert!(raw.starts_with("_ZN") || raw.starts_with("_R"), "{raw}");
        assert_eq!(
            image.symbols_named(&raw),
            image.symbols_named(&demangled.name)
        );
        assert!(!image
            .symbols
            .iter()
            .any(|s| s.name.starts_with("_ZN") && s.name.contains("17h")));
    }

    #[test]
    fn nearest_symbol_rules() {
        let image = ElfImage {
            segments: vec![Segment {
                offset: 0,
                file_size: 0x2000,
                vaddr: 0x1000,
                exec: true,
            }],
            symbols: vec![
                Sym {
                    addr: 0x1100,
                    size: 0x10,
                    name: "sized".into(),
                    raw: None,
                },
                Sym {
                    addr: 0x1200,
                    size: 0,
                    name: "unsized".into(),
                    raw: None,
                },
                Sym {
                    addr: 0x1300,
                    size: 0x10,
                    name: "last".into(),
                    raw: None,
                },
            ],
            build_id: None,
            has_symtab: true,
        };
        assert_eq!(image.symbol_at(0x10ff), None);
        assert_eq!(image.symbol_at(0x110f).map(|h| h.offset), Some(0xf));
        assert_eq!(image.symbol_at(0x1110), None, "past a sized symbol");
        assert_eq!(image.symbol_at(0x12ff).map(|h| h.name), Some("unsized"));
        assert_eq!(image.symbol_at(0x1310), None);
        assert_eq!(image.vaddr_of_offset(0x300), Some(0x1300));
        assert_eq!(image.vaddr_of_offset(0x2000), None);
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
            ..ElfImage::default()
        };
        assert_eq!(image.vaddr_of_offset(0x10), Some(0x10));
        assert_eq!(image.vaddr_of_offset(0x1100), Some(0x1100));
        assert_eq!(image.vaddr_of_offset(0x2010), Some(0x3010));
        assert_eq!(image.vaddr_of_offset(0x600), None, "between segments");
        assert_eq!(image.vaddr_of_offset(0x2100), None, "past the file bytes");
        assert_eq!(image.offset_of_vaddr(0x3020), Some(0x2020));
    }

    #[test]
    fn not_elf() {
        assert!(ElfImage::parse(b"#!/bin/sh\n").is_err());
        assert!(ElfImage::parse(&[]).is_err());
        assert!(ElfImage::load(Path::new("/nonexistent/rprof/elf")).is_err());
        let dir = std::env::temp_dir().join(format!("rprof-sym-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("script");
        std::fs::write(&p, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(read_build_id(&p).unwrap(), None);
        assert!(read_build_id(&dir.join("missing")).is_err());
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }

    /// A new test directory named after `name`, with a FIFO in it: (the
    /// directory, the FIFO).
    fn fifo_in(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = crate::testutil::test_dir("elf", name);
        let fifo = dir.join("fifo");
        crate::testutil::mkfifo(&fifo);
        (dir, fifo)
    }

    /// A FIFO or a device named by a recording is refused at once, never
    /// opened for a blocking read or read without end.
    #[test]
    fn only_regular_files_are_read() {
        let (dir, fifo) = fifo_in("rprof-fifo");
        for p in [
            fifo.as_path(),
            Path::new("/dev/zero"),
            Path::new("/dev/null"),
        ] {
            assert!(read_build_id(p).is_err(), "{}", p.display());
            assert!(ElfImage::load(p).is_err(), "{}", p.display());
            assert!(read_file(p).is_err(), "{}", p.display());
        }
        // /proc's files are regular but say they hold nothing: nothing
        // is read from them (pagemap would give gigabytes).
        assert_eq!(read_file(Path::new("/proc/self/maps")).unwrap().len(), 0);
        assert!(ElfImage::load(Path::new("/proc/self/pagemap")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Refused, and not opened at all: a process waiting to write to a
    /// FIFO that a recording names must not be let through (opening it
    /// for reading, even without blocking, would; so may opening a
    /// device, with whatever its driver does on open).
    #[test]
    fn a_fifo_is_not_opened_to_be_refused() {
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::mpsc;
        use std::time::{Duration, Instant};
        let (dir, fifo) = fifo_in("rprof-fifo-open");
        let (tid_tx, tid_rx) = mpsc::channel();
        let (opened_tx, opened_rx) = mpsc::channel();
        let writer = {
            let fifo = fifo.clone();
            // Blocks in open() until someone opens the FIFO for reading.
            std::thread::spawn(move || {
                // SAFETY: gettid() has no preconditions.
                tid_tx.send(unsafe { libc::gettid() }).unwrap();
                let f = std::fs::OpenOptions::new().write(true).open(&fifo);
                let _ = opened_tx.send(());
                f.is_ok()
            })
        };
        // Until the writer really waits in openat(2) (its syscall file
        // starts with the number): a writer not blocked yet would let an
        // opening implementation through unseen.
        let tid = tid_rx.recv().unwrap();
        let syscall = format!("/proc/self/task/{tid}/syscall");
        let openat = libc::SYS_openat.to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&syscall)
            .is_ok_and(|s| s.split(' ').next() == Some(openat.as_str()))
        {
            assert!(
                Instant::now() < deadline,
                "the writer never blocked in openat"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(open_regular(&fifo).is_err());
        assert!(read_file(&fifo).is_err());
        // An open for reading wakes the writer at once; a second is ample
        // for it to say so.
        let let_through = opened_rx.recv_timeout(Duration::from_secs(1)).is_ok();
        // Release the writer either way.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert!(writer.join().unwrap());
        drop(reader);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            !let_through,
            "the FIFO was opened for reading before it was refused"
        );
    }

    #[test]
    fn this_test_binary_may_have_lines() {
        // Test binaries carry line tables in the default profile only with
        // debug info; either way nothing panics, and a found line names a
        // file.
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(exe).unwrap();
        if let Some(lines) = Lines::parse(&data) {
            let image = crate::ElfImage::parse(&data).unwrap();
            let syms = image.symbols_named("rprof_symbols_test_marker");
            if let Some((addr, _)) = syms.first() {
                if let Some((file, line)) = lines.line(*addr) {
                    assert!(!file.is_empty() && line > 0);
                }
            }
        }
    }
}

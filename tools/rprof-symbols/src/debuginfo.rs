//! Separate debug files, found the way distributions ship them.
//!
//! A packaged binary is stripped; its `.symtab` and DWARF live in another
//! file (Debian's `-dbgsym` packages, Fedora's `-debuginfo`), found as
//! GDB finds it:
//!
//! 1. by build-id: `/usr/lib/debug/.build-id/XX/YYYY….debug`, where `XX`
//!    is the first byte of the build-id in hex and `YYYY…` the rest; the
//!    file found must carry the same build-id;
//! 2. by `.gnu_debuglink` (a file name and the CRC-32 of that file): in
//!    the binary's directory, in its `.debug/` subdirectory, and under
//!    `/usr/lib/debug` followed by the binary's directory; the file found
//!    must have that CRC.
//!
//! Paths are the recorded ones, opened in a [`Root`], so under `--symfs`
//! the debug files are the symfs's.
//!
//! A candidate is checked before it is read whole: a build-id candidate by
//! its headers and notes alone, a debuglink candidate by a CRC computed a
//! chunk at a time.  A file that is not the one (a debug file of another
//! build, a large file that happens to have the name) costs a chunk of
//! memory, not its size; only the one that matches is kept in memory.

use crate::root::{read_sized, MAX_FILE};
use crate::Root;
use object::elf::{FileHeader32, FileHeader64, ELF_NOTE_GNU, NT_GNU_BUILD_ID, SHT_NOTE};
use object::read::elf::{FileHeader, SectionHeader};
use object::{Endianness, FileKind, Object, ReadCache};
use std::fs::File;
use std::io::{ErrorKind, Read, Result, Seek};

/// Where the build-id tree of debug files is.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// The bytes a debuglink candidate's CRC is computed over at a time: all
/// the memory a candidate of the wrong CRC costs.
const CHUNK: usize = 64 * 1024;

/// A debug file found for a binary.
#[derive(Debug, Clone)]
pub struct DebugFile {
    /// Its path, as looked up in the root.
    pub path: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// The separate debug file of the ELF file whose bytes are `data` and
/// whose recorded path is `path`, if one is found in `root` and matches
/// (see the module's documentation).
pub fn find(root: &Root, path: &str, data: &[u8]) -> Option<DebugFile> {
    let elf = object::File::parse(data).ok()?;
    if let Some(id) = elf.build_id().ok().flatten().filter(|id| id.len() >= 2) {
        let hex = crate::elf::hex(id);
        let candidate = format!("{DEBUG_DIR}/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        // `open` takes only a regular file of at most MAX_FILE bytes.
        if let Some(debug) = root
            .open(&candidate)
            .ok()
            .and_then(|file| load_if_build_id(file, id))
        {
            return Some(DebugFile {
                path: candidate,
                data: debug,
            });
        }
    }
    let (name, crc) = elf.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    // A debuglink is a file name, never a path.
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    let dir = match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    };
    let candidates = [
        format!("{dir}/{name}"),
        format!("{dir}/.debug/{name}"),
        format!("{DEBUG_DIR}{dir}/{name}"),
    ];
    candidates.into_iter().find_map(|candidate| {
        if candidate == path {
            return None;
        }
        let file = root.open(&candidate).ok()?;
        // As `read_sized` has it: no more than fstat says, at most
        // MAX_FILE (a /proc file that says 0 gives nothing).
        let len = file.metadata().ok()?.len().min(MAX_FILE);
        let debug = load_if_crc(file, len, crc).ok()??;
        Some(DebugFile {
            path: candidate,
            data: debug,
        })
    })
}

/// The bytes of `file` (a regular file of at most [`MAX_FILE`] bytes, as
/// [`Root::open`] opens) if it is an ELF file whose build-id is `id`.
/// Only its headers and notes are read to tell: a file of another build is
/// never read whole.
fn load_if_build_id(mut file: File, id: &[u8]) -> Option<Vec<u8>> {
    if !has_build_id(&mut file, id) {
        return None;
    }
    file.rewind().ok()?;
    let data = read_sized(file, MAX_FILE).ok()?;
    // The file may have changed since its notes were read: what is kept
    // is what was checked.
    let same = object::File::parse(&*data)
        .ok()
        .and_then(|d| d.build_id().ok().flatten().map(|b| b == id))
        .unwrap_or(false);
    same.then_some(data)
}

/// Whether the ELF file `r` reads has the build-id `id`, told from its
/// file header, its section headers and its note sections alone, at most
/// [`NOTES_BUDGET`] bytes of notes in all: not through a parse of the
/// whole file, which reads the symbol tables too, and whose cache keeps a
/// copy of every read (overlapping note sections would make a small file
/// cost many times its size).
fn has_build_id<R: Read + Seek>(r: R, id: &[u8]) -> bool {
    let cache = ReadCache::new(r);
    match FileKind::parse(&cache) {
        Ok(FileKind::Elf64) => note_build_id::<FileHeader64<Endianness>, _>(&cache, id),
        Ok(FileKind::Elf32) => note_build_id::<FileHeader32<Endianness>, _>(&cache, id),
        _ => false,
    }
}

/// The bytes of note sections [`has_build_id`] reads at most.
const NOTES_BUDGET: u64 = 16 * CHUNK as u64;

/// Whether the first GNU build-id note of the note sections of the ELF
/// file in `data` is `id` (see [`has_build_id`]).  A file whose note
/// sections exceed [`NOTES_BUDGET`] before the note is found is not the
/// one (a debug file's notes are a few hundred bytes).
fn note_build_id<Elf, R>(data: &ReadCache<R>, id: &[u8]) -> bool
where
    Elf: FileHeader<Endian = Endianness>,
    R: Read + Seek,
{
    let Ok(header) = Elf::parse(data) else {
        return false;
    };
    let Ok(endian) = header.endian() else {
        return false;
    };
    let Ok(sections) = header.section_headers(endian, data) else {
        return false;
    };
    let mut budget = NOTES_BUDGET;
    for s in sections.iter().filter(|s| s.sh_type(endian) == SHT_NOTE) {
        let size: u64 = s.sh_size(endian).into();
        let Some(left) = budget.checked_sub(size) else {
            return false;
        };
        budget = left;
        let Ok(Some(mut notes)) = s.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == ELF_NOTE_GNU && note.n_type(endian) == NT_GNU_BUILD_ID {
                return note.desc() == id;
            }
        }
    }
    false
}

/// The first `len` bytes `r` reads, if their CRC-32 is `crc`; `Ok(None)`
/// if it is another.  The CRC is computed [`CHUNK`] bytes at a time, in
/// one buffer: only a candidate that matches is then read whole (again,
/// from the start), and kept if it still matches.
fn load_if_crc<R: Read + Seek>(mut r: R, len: u64, crc: u32) -> Result<Option<Vec<u8>>> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut input = (&mut r).take(len);
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if hasher.finalize() != crc {
        return Ok(None);
    }
    drop(buf);
    r.rewind()?;
    let mut data = Vec::new();
    r.take(len).read_to_end(&mut data)?;
    // The file may have changed between the two reads.
    Ok((crc32fast::hash(&data) == crc).then_some(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::Lines;
    use crate::ElfImage;
    use std::io::{Read, Seek};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn run(cmd: &mut Command) {
        let st = cmd.status().unwrap();
        assert!(st.success(), "{cmd:?} failed");
    }

    /// A C program with a static (local) function, built with `cflags`
    /// into `dir/name`.
    fn build(dir: &Path, name: &str, cflags: &[&str]) -> PathBuf {
        crate::testprog::build_c(dir, "dbg.c", name, "local_hot", true, cflags)
    }

    /// `objcopy --only-keep-debug BIN DEBUG`, then `strip BIN`.
    fn split(bin: &Path, debug: &Path) {
        run(Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(bin)
            .arg(debug));
        run(Command::new("strip").arg("--strip-all").arg(bin));
    }

    /// The symbols and lines of `bin` (recorded as `path`) once its debug
    /// file is looked up in `root`: `local_hot`'s address, and whether a
    /// line is known there.
    fn symbolize(root: &Root, path: &str) -> (Option<String>, Option<u32>) {
        let data = root.read(path).unwrap();
        let mut image = ElfImage::parse(&data).unwrap();
        let debug = find(root, path, &data);
        let lines = match &debug {
            Some(d) => {
                image.add_symbols_of(&ElfImage::parse(&d.data).unwrap());
                Lines::parse(&d.data)
            }
            None => Lines::parse(&data),
        };
        let Some(&(addr, _)) = image.symbols_named("local_hot").first() else {
            return (debug.map(|d| d.path), None);
        };
        let line = lines.and_then(|l| l.line(addr)).map(|(file, line)| {
            assert!(file.ends_with("dbg.c"), "{file}");
            line
        });
        (debug.map(|d| d.path), line)
    }

    fn tmp(name: &str) -> PathBuf {
        crate::testutil::test_dir("dbg", name)
    }

    /// A stripped binary's local function and its lines come back from
    /// its debug file in the build-id tree (under a symfs, as a sysroot
    /// has it) and by `.gnu_debuglink` beside it or in `.debug/`; a debug
    /// file of another build or with another CRC is not used.
    #[test]
    fn stripped_binaries_find_their_debug_files() {
        let fs = tmp("symfs");
        std::fs::create_dir_all(fs.join("bin")).unwrap();
        let bin = build(&fs.join("bin"), "prog", &[]);
        let id = ElfImage::load(&bin).unwrap().build_id.unwrap();
        let hex = crate::elf::hex(&id);
        let tree = fs.join(format!("usr/lib/debug/.build-id/{}", &hex[..2]));
        std::fs::create_dir_all(&tree).unwrap();
        split(&bin, &tree.join(format!("{}.debug", &hex[2..])));
        let root = Root::symfs(&fs).unwrap();
        let (found, line) = symbolize(&root, "/bin/prog");
        assert_eq!(
            found.as_deref(),
            Some(&*format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &hex[..2],
                &hex[2..]
            ))
        );
        assert!(line.is_some_and(|l| l > 0), "no line for local_hot");
        // The debug file of another build in its place is refused.
        let other = build(&fs, "other", &["-O1", "-DOTHER"]);
        let slot = tree.join(format!("{}.debug", &hex[2..]));
        let kept = std::fs::read(&slot).unwrap();
        split(&other, &slot);
        assert_eq!(symbolize(&root, "/bin/prog"), (None, None));
        std::fs::write(&slot, &kept).unwrap();
        assert!(symbolize(&root, "/bin/prog").0.is_some());
        // Without the debug file, the stripped binary has no local_hot.
        std::fs::remove_dir_all(fs.join("usr")).unwrap();
        assert_eq!(symbolize(&root, "/bin/prog"), (None, None));

        // .gnu_debuglink, in .debug/ beside the binary (host root).
        let dir = tmp("link");
        let bin = build(&dir, "prog", &[]);
        std::fs::create_dir_all(dir.join(".debug")).unwrap();
        let debug = dir.join(".debug/prog.dbg");
        split(&bin, &debug);
        run(Command::new("objcopy")
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(&bin));
        let path = bin.to_string_lossy().into_owned();
        let (found, line) = symbolize(&Root::host(), &path);
        assert_eq!(found.as_deref(), Some(&*debug.to_string_lossy()));
        assert!(line.is_some_and(|l| l > 0));
        // Another file under that name (a CRC mismatch) is refused.
        let mut bytes = std::fs::read(&debug).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&debug, &bytes).unwrap();
        assert_eq!(symbolize(&Root::host(), &path), (None, None));
        std::fs::remove_dir_all(&fs).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A reader that counts what is asked of it: the largest buffer one
    /// `read` was given to fill, and the bytes it gave in all.
    struct Counting<R> {
        inner: R,
        largest: usize,
        given: u64,
    }

    impl<R> Counting<R> {
        fn new(inner: R) -> Self {
            Counting {
                inner,
                largest: 0,
                given: 0,
            }
        }
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.largest = self.largest.max(buf.len());
            let n = self.inner.read(buf)?;
            self.given += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    /// `len` bytes of a pattern, made as they are read (never held whole).
    struct Pattern {
        len: u64,
        pos: u64,
    }

    impl Read for Pattern {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min((self.len - self.pos) as usize);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = ((self.pos + i as u64) % 251) as u8;
            }
            self.pos += n as u64;
            Ok(n)
        }
    }

    impl Seek for Pattern {
        fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
            self.pos = match pos {
                std::io::SeekFrom::Start(p) => p,
                std::io::SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
                std::io::SeekFrom::End(d) => self.len.saturating_add_signed(d),
            }
            .min(self.len);
            Ok(self.pos)
        }
    }

    /// A debuglink candidate of another CRC is refused having been read a
    /// chunk at a time into one buffer (a whole-file read asks for ever
    /// larger buffers, up to its size); one that matches comes back whole,
    /// and no more than the size it is given is read.
    #[test]
    fn a_debuglink_candidate_is_checked_a_chunk_at_a_time() {
        let len = 3 * CHUNK as u64 + 17;
        let mut all = Vec::new();
        Pattern { len, pos: 0 }.read_to_end(&mut all).unwrap();
        let crc = crc32fast::hash(&all);
        let mut r = Counting::new(Pattern { len, pos: 0 });
        assert_eq!(load_if_crc(&mut r, len, crc).unwrap(), Some(all));

        let big = 16 << 20;
        let mut r = Counting::new(Pattern { len: big, pos: 0 });
        assert_eq!(load_if_crc(&mut r, big, crc).unwrap(), None);
        assert_eq!(r.given, big, "the CRC is of the whole file");
        assert!(
            r.largest <= CHUNK,
            "{} bytes asked at once of a candidate of another CRC",
            r.largest
        );
        let mut r = Counting::new(Pattern { len: big, pos: 0 });
        assert_eq!(load_if_crc(&mut r, 1000, crc).unwrap(), None);
        assert_eq!(r.given, 1000);
    }

    /// A build-id candidate is told by its headers and notes: a large
    /// debug file is read only in part, whether its build-id is the one
    /// or another; the one that matches is then read whole.
    #[test]
    fn a_build_id_candidate_is_checked_by_its_notes() {
        let dir = tmp("notes");
        let bin = build(&dir, "prog", &[]);
        let id = ElfImage::load(&bin).unwrap().build_id.unwrap();
        let debug = dir.join("prog.debug");
        split(&bin, &debug);
        // Past the section headers: what only a whole-file read reads.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&debug)
            .unwrap();
        file.set_len(4 << 20).unwrap();
        drop(file);
        for (which, want) in [(id.clone(), true), (vec![0xab; id.len()], false)] {
            let mut r = Counting::new(std::fs::File::open(&debug).unwrap());
            assert_eq!(has_build_id(&mut r, &which), want);
            assert!(r.given < 1 << 20, "{} bytes read to tell", r.given);
        }
        let data = load_if_build_id(std::fs::File::open(&debug).unwrap(), &id).unwrap();
        assert_eq!(data.len(), 4 << 20);
        assert!(load_if_build_id(std::fs::File::open(&debug).unwrap(), &[0xab; 20]).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A 64-bit little-endian ELF file of `n` note sections whose ranges
    /// all overlap one block of zeros (no note in it): a few hundred KB.
    fn overlapping_notes(n: usize) -> Vec<u8> {
        const K: usize = 20_000;
        let data_off = 64u64;
        let sh_off = data_off + 12 * K as u64;
        let mut f = vec![0u8; 64];
        f[0..4].copy_from_slice(b"\x7fELF");
        (f[4], f[5], f[6]) = (2, 1, 1); // ELFCLASS64, little-endian, v1
        f[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
        f[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[40..48].copy_from_slice(&sh_off.to_le_bytes());
        f[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        f[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        f[60..62].copy_from_slice(&((n + 2) as u16).to_le_bytes());
        f[62..64].copy_from_slice(&1u16.to_le_bytes()); // e_shstrndx
        f.resize(sh_off as usize + 64, 0); // the zeros, then section 0
        let header = |f: &mut Vec<u8>, kind: u32, off: u64, size: u64, align: u64| {
            for (v, w) in [
                (0u64, 4),
                (u64::from(kind), 4),
                (0, 8),
                (0, 8),
                (off, 8),
                (size, 8),
                (0, 4),
                (0, 4),
                (align, 8),
                (0, 8),
            ] {
                f.extend(&v.to_le_bytes()[..w]);
            }
        };
        header(&mut f, 3, data_off, 1, 1); // .shstrtab
        for i in 0..n {
            header(&mut f, 7, data_off + 12 * i as u64, 12 * (K - i) as u64, 4);
            // SHT_NOTE
        }
        f
    }

    /// Overlapping note sections cannot make the check read (and cache)
    /// many times the file: notes count against a budget.  Through a
    /// whole-file parse of a `ReadCache`, 200 sections over 240 KB read
    /// 47.8 MB.
    #[test]
    fn overlapping_notes_cost_no_more_than_the_budget() {
        let f = overlapping_notes(200);
        assert!(f.len() < 300_000, "{}", f.len());
        assert!(object::File::parse(&*f)
            .unwrap()
            .build_id()
            .unwrap()
            .is_none());
        let mut r = Counting::new(std::io::Cursor::new(f));
        assert!(!has_build_id(&mut r, &[1; 20]));
        assert!(r.given <= NOTES_BUDGET + 100_000, "{} bytes read", r.given);
    }

    /// DWARF compressed in place (`gcc -gz`, zlib) gives the same lines as
    /// uncompressed DWARF.
    #[test]
    fn compressed_dwarf_has_lines() {
        let dir = tmp("gz");
        let plain = build(&dir, "plain", &[]);
        let gz = build(&dir, "gz", &["-gz=zlib"]);
        let sections = Command::new("readelf")
            .arg("-SW")
            .arg(&gz)
            .output()
            .unwrap();
        let sections = String::from_utf8_lossy(&sections.stdout).into_owned();
        let info = sections
            .lines()
            .find(|l| l.contains(".debug_info"))
            .unwrap();
        // readelf's flags column: C for SHF_COMPRESSED.
        assert!(
            info.split_whitespace()
                .any(|f| f.contains('C') && f.len() <= 4),
            "{info}"
        );
        let host = Root::host();
        let a = symbolize(&host, &plain.to_string_lossy());
        let b = symbolize(&host, &gz.to_string_lossy());
        assert!(a.1.is_some_and(|l| l > 0), "{a:?}");
        assert_eq!(a, b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

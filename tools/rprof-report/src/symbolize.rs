//! Naming (cookie, offset) pairs: the shared object and the function.
//!
//! | cookie | shared object | symbol |
//! |---|---|---|
//! | file, found and the same file | its base name | ELF symbol of the file offset, else `[unknown] NAME+0xOFF` |
//! | file, build-id or inode differs | its base name | `[mismatch] PATH` (one row per file: no wrong symbols) |
//! | file, missing or deleted | its base name | `[unknown] PATH+0xOFF` |
//! | KERNEL | `[kernel.kallsyms]` (or `[MODULE]`) | kallsyms, else `[unknown] 0xIP` |
//! | module | `[NAME]` | kallsyms `[NAME]` entries at base + offset, else `[unknown] [NAME]+0xOFF` |
//! | ANON | `[anon]` (or `perf-PID.map`) | the process's `/tmp/perf-PID.map` (JIT code, see [`Symbolizer::frame_of`]), else `[unknown] 0xIP` |
//! | NONE or never named | `[unknown]` | `[unknown] 0xOFF` |
//!
//! "The same file": when `rprof.data` recorded a build-id for the cookie,
//! the file found now must have that build-id; otherwise its device and
//! inode must be the COOKIE record's (not checked under `--symfs`, where
//! files are copies).
//!
//! Files are opened in a [`Root`]: the host's tree, or a `--symfs`
//! directory that recorded paths cannot leave.  A stripped file's symbols
//! and DWARF come from its separate debug file
//! ([`rprof_symbols::debuginfo`]: the build-id tree, `.gnu_debuglink`).

use rprof_data::FileInfo;
use rprof_decode::{CookieName, Resolver};
use rprof_symbols::dev::same_device;
use rprof_symbols::dwarf::Lines;
use rprof_symbols::perfmap::PerfMap;
use rprof_symbols::{ElfImage, Kallsyms, Root};
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a frame is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    /// A user-space file.
    File,
    /// The kernel image.
    Kernel,
    /// A kernel module.
    Module,
    /// Anonymous executable memory.
    Anon,
    /// Nothing known.
    Unknown,
}

/// A named place: a function of a shared object (or the best that is
/// known).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// The shared object's short name: a file's base name,
    /// `[kernel.kallsyms]`, `[MODULE]`, `[anon]`, `[unknown]`.
    pub dso: String,
    /// The full path of a file (else the same as `dso`).
    pub path: String,
    /// The function, or `[unknown] ...` / `[mismatch] ...`.
    pub symbol: String,
    /// What the object is.
    pub kind: FrameKind,
    /// Whether `symbol` is a real symbol name.
    pub resolved: bool,
    /// The function's address (virtual address in the file, or kernel
    /// address); for an unresolved frame the offset or ip.
    pub addr: u64,
    /// The file's build-id, if known.
    pub build_id: Vec<u8>,
}

/// The object a sampled address is in, as a profile's mapping describes
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MappingKey {
    /// A file's path, `[kernel.kallsyms]`, `[MODULE]`, `[anon]` or
    /// `[unknown]`.
    pub path: String,
    /// Where the object's bytes are, when known: (start, limit, file
    /// offset of start), e.g. a file's PT_LOAD segment at its virtual
    /// address, or a module's text.  `None`: only the sampled addresses
    /// say; for a file, the addresses are then its file offsets.
    pub range: Option<(u64, u64, u64)>,
    /// The file's build-id, if known.
    pub build_id: Vec<u8>,
    /// Whether it is a file (not the kernel, a module or anonymous
    /// memory).
    pub is_file: bool,
}

/// Where a sampled (cookie, offset) is: an address, and the object that
/// holds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Place {
    /// A file's virtual address (its file offset if the file cannot be
    /// read), a kernel address, or for an unknown cookie the offset.
    pub address: u64,
    /// The object.
    pub mapping: MappingKey,
}

/// Why a file cookie's symbols cannot be used.
#[derive(Debug, Clone)]
enum ImageState {
    Ok(Arc<ElfImage>),
    Mismatch,
    Missing,
    Unreadable,
}

/// Where recorded files are looked up, and whose perf maps are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolOptions {
    /// `--symfs`: a directory that stands for the recorded machine's root.
    pub symfs: Option<PathBuf>,
    /// `--force`: perf maps whoever owns them.
    pub any_perf_map_owner: bool,
}

impl From<Option<PathBuf>> for SymbolOptions {
    fn from(symfs: Option<PathBuf>) -> Self {
        SymbolOptions {
            symfs,
            any_perf_map_owner: false,
        }
    }
}

/// Turns (cookie, offset) into [`Frame`]s, caching files and results.
#[derive(Debug, Default)]
pub struct Symbolizer {
    kallsyms: Arc<Kallsyms>,
    files: HashMap<u64, FileInfo>,
    /// Where files are opened; `None` if the `--symfs` directory could not
    /// be opened (then no file is found; a warning says why).
    root: Option<Root>,
    images: HashMap<u64, ImageState>,
    /// Where each file cookie's DWARF is read from (the file itself or its
    /// debug file, a path in `root`), once its image is loaded, with the
    /// length and CRC-32 of the bytes that were checked then: DWARF is
    /// read again only when asked for, and only those same bytes are used
    /// (the path may name another file by then).
    dwarf_paths: HashMap<u64, DwarfSource>,
    /// Each file cookie's DWARF, once asked for.
    lines: HashMap<u64, Option<Arc<Lines>>>,
    /// Each process's `/tmp/perf-PID.map`, once asked for.
    perf_maps: HashMap<u32, Option<Arc<PerfMap>>>,
    /// Read perf maps whoever owns them (`--force`), not only root's and
    /// the reader's ([`rprof_symbols::perfmap::owner_trusted`]).
    any_perf_map_owner: bool,
    /// Frames of anonymous memory named by a perf map, by (pid, ip).
    jit_frames: HashMap<(u32, u64), Arc<Frame>>,
    frames: HashMap<(u64, u64), Arc<Frame>>,
    interned: HashSet<Arc<Frame>>,
    warnings: Vec<String>,
}

/// Where a file's DWARF is, and what its bytes were when its image was
/// loaded and checked against the recording.
#[derive(Debug, Clone)]
struct DwarfSource {
    path: String,
    len: usize,
    crc: u32,
}

impl DwarfSource {
    fn of(path: String, data: &[u8]) -> Self {
        DwarfSource {
            path,
            len: data.len(),
            crc: crc32fast::hash(data),
        }
    }

    /// Whether `data` are the bytes that were checked.
    fn same(&self, data: &[u8]) -> bool {
        data.len() == self.len && crc32fast::hash(data) == self.crc
    }
}

/// The base name of a path.
fn base_name(path: &str) -> &str {
    path.rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(path)
}

impl Symbolizer {
    /// A symbolizer over kallsyms text and the recorded file snapshot;
    /// with `symfs`, files are looked up under that directory.
    pub fn new(kallsyms: &str, files: &[FileInfo], symfs: Option<PathBuf>) -> Self {
        Symbolizer::with_kallsyms(Kallsyms::parse(kallsyms), files, symfs)
    }

    /// [`new`](Self::new) with [`SymbolOptions`].
    pub fn with_options(kallsyms: &str, files: &[FileInfo], opts: SymbolOptions) -> Self {
        let mut sym = Symbolizer::new(kallsyms, files, opts.symfs);
        sym.any_perf_map_owner = opts.any_perf_map_owner;
        sym
    }

    /// [`new`](Self::new) with kallsyms parsed already (a daemon keeps
    /// them across sessions).
    pub fn with_kallsyms(
        kallsyms: impl Into<Arc<Kallsyms>>,
        files: &[FileInfo],
        symfs: Option<PathBuf>,
    ) -> Self {
        let kallsyms = kallsyms.into();
        let mut warnings = Vec::new();
        if kallsyms.restricted() {
            warnings.push(
                "kallsyms addresses were hidden (kptr_restrict): kernel samples stay unresolved"
                    .to_string(),
            );
        }
        let root = match &symfs {
            None => Some(Root::host()),
            Some(dir) => match Root::symfs(dir) {
                Ok(r) => Some(r),
                Err(e) => {
                    warnings.push(format!("{e}: no file can be symbolized"));
                    None
                }
            },
        };
        Symbolizer {
            kallsyms,
            files: files.iter().map(|f| (f.cookie, f.clone())).collect(),
            root,
            warnings,
            ..Symbolizer::default()
        }
    }

    /// Reads perf maps whoever owns them (`--force`), as `perf report -f`
    /// does; by default only root's and the reader's own are read.
    pub fn read_perf_maps_of_anyone(&mut self, yes: bool) {
        self.any_perf_map_owner = yes;
    }

    /// Notes about files that did not match, for the report's header.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The ELF image of file cookie `cookie`, if it is usable.
    pub fn image(&mut self, cookie: u64, names: &Resolver) -> Option<Arc<ElfImage>> {
        match self.image_state(cookie, names) {
            ImageState::Ok(i) => Some(i.clone()),
            _ => None,
        }
    }

    /// Where file `path` is read from (for messages).
    pub fn host_path(&self, path: &str) -> PathBuf {
        match &self.root {
            Some(root) => root.display(path),
            None => PathBuf::from(path),
        }
    }

    /// The bytes of recorded file `path`, a regular file opened in this
    /// symbolizer's root.
    pub fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        match &self.root {
            Some(root) => root.read(path),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the --symfs directory could not be opened",
            )),
        }
    }

    fn is_symfs(&self) -> bool {
        self.root.as_ref().is_none_or(Root::is_symfs)
    }

    /// The DWARF of file cookie `cookie` (from its debug file if it has
    /// one), if its image is usable and has line tables.
    pub fn lines(&mut self, cookie: u64, names: &Resolver) -> Option<Arc<Lines>> {
        self.image(cookie, names)?;
        if let Some(l) = self.lines.get(&cookie) {
            return l.clone();
        }
        let source = self.dwarf_paths.get(&cookie).cloned();
        let lines = source.and_then(|src| {
            let data = self.read(&src.path).ok()?;
            if !src.same(&data) {
                self.warnings.push(format!(
                    "{}: changed since its symbols were read: no line information",
                    self.host_path(&src.path).display()
                ));
                return None;
            }
            Lines::parse(&data).map(Arc::new)
        });
        self.lines.insert(cookie, lines.clone());
        lines
    }

    /// The kernel symbols.
    pub fn kallsyms(&self) -> &Kallsyms {
        &self.kallsyms
    }

    fn image_state(&mut self, cookie: u64, names: &Resolver) -> &ImageState {
        if !self.images.contains_key(&cookie) {
            let state = self.load(cookie, names);
            self.images.insert(cookie, state);
        }
        // Inserted just above if it was missing.
        &self.images[&cookie]
    }

    fn load(&mut self, cookie: u64, names: &Resolver) -> ImageState {
        let Some(CookieName::File {
            path,
            flags,
            dev,
            ino,
        }) = names.name(cookie)
        else {
            return ImageState::Missing;
        };
        if u32::from(*flags) & rprof_abi::RPROF_COOKIE_DELETED != 0 {
            return ImageState::Missing;
        }
        let path = path.clone();
        let host = self.host_path(&path);
        let Some(root) = &self.root else {
            return ImageState::Missing;
        };
        let Ok(file) = root.open(&path) else {
            return ImageState::Missing;
        };
        let Ok(meta) = file.metadata() else {
            return ImageState::Missing;
        };
        let data = {
            match rprof_symbols::root::read_sized(file, rprof_symbols::root::MAX_FILE) {
                Ok(data) => data,
                Err(e) => {
                    self.warnings
                        .push(format!("cannot read {}: {e}", host.display()));
                    return ImageState::Unreadable;
                }
            }
        };
        let mut image = match ElfImage::parse(&data) {
            Ok(image) => image,
            Err(e) => {
                self.warnings.push(format!("{}: {e}", host.display()));
                return ImageState::Unreadable;
            }
        };
        let recorded = self.files.get(&cookie);
        let mismatch = match recorded.filter(|f| !f.build_id.is_empty()) {
            Some(f) => match &image.build_id {
                Some(now) if *now == f.build_id => None,
                Some(now) => Some(format!(
                    "build-id {} recorded, {} found",
                    rprof_symbols::elf::hex(&f.build_id),
                    rprof_symbols::elf::hex(now)
                )),
                None => Some("build-id recorded, none found".to_string()),
            },
            None if self.is_symfs() => None,
            None => (!(same_device(*dev, meta.dev()) && *ino == meta.ino())).then(|| {
                format!(
                    "device/inode {dev:#x}/{ino} recorded, {:#x}/{} found",
                    meta.dev(),
                    meta.ino()
                )
            }),
        };
        if let Some(why) = mismatch {
            self.warnings
                .push(format!("{}: not the recorded file ({why})", host.display()));
            return ImageState::Mismatch;
        }
        // A stripped file: its local functions and DWARF are in its debug
        // file.
        let mut dwarf = None;
        if !image.has_symtab || !Lines::present(&data) {
            if let Some(debug) = rprof_symbols::debuginfo::find(root, &path, &data) {
                if let Ok(d) = ElfImage::parse(&debug.data) {
                    image.add_symbols_of(&d);
                }
                if Lines::present(&debug.data) || !Lines::present(&data) {
                    dwarf = Some(DwarfSource::of(debug.path, &debug.data));
                }
            }
        }
        let dwarf = dwarf.unwrap_or_else(|| DwarfSource::of(path, &data));
        self.dwarf_paths.insert(cookie, dwarf);
        ImageState::Ok(Arc::new(image))
    }

    /// The frame of `offset` relative to `cookie` in process `pid`: for
    /// anonymous memory, the function that the process's
    /// `/tmp/perf-PID.map` (read in this symbolizer's root when first
    /// needed, as `perf report` does) names there, if any; otherwise
    /// [`frame`](Self::frame).  The map is the one on the machine (or
    /// symfs) that reports, so report where the process ran, soon after.
    pub fn frame_of(&mut self, pid: u32, cookie: u64, offset: u64, names: &Resolver) -> Arc<Frame> {
        if cookie != u64::from(rprof_abi::RPROF_COOKIE_ANON) || pid == 0 {
            return self.frame(cookie, offset, names);
        }
        if let Some(f) = self.jit_frames.get(&(pid, offset)) {
            return f.clone();
        }
        let Some(map) = self.perf_map(pid) else {
            return self.frame(cookie, offset, names);
        };
        let path = format!("/tmp/perf-{pid}.map");
        let frame = match map.lookup(offset) {
            Some(hit) => Frame {
                dso: base_name(&path).to_string(),
                path,
                symbol: hit.name.to_string(),
                kind: FrameKind::Anon,
                resolved: true,
                addr: hit.addr,
                build_id: Vec::new(),
            },
            None => return self.frame(cookie, offset, names),
        };
        let frame = self.intern(frame);
        self.jit_frames.insert((pid, offset), frame.clone());
        frame
    }

    /// The one shared copy of `frame`.
    fn intern(&mut self, frame: Frame) -> Arc<Frame> {
        match self.interned.get(&frame) {
            Some(f) => f.clone(),
            None => {
                let f = Arc::new(frame);
                self.interned.insert(f.clone());
                f
            }
        }
    }

    fn perf_map(&mut self, pid: u32) -> Option<Arc<PerfMap>> {
        if let Some(m) = self.perf_maps.get(&pid) {
            return m.clone();
        }
        let path = format!("/tmp/perf-{pid}.map");
        let shown = self.host_path(&path);
        let file = self.root.as_ref().and_then(|r| r.open(&path).ok());
        let map = match file.map(|f| (f.metadata().map_or(0, |m| m.len()), f)) {
            Some((_, f))
                if !self.any_perf_map_owner
                    && !f
                        .metadata()
                        .is_ok_and(|m| rprof_symbols::perfmap::owner_trusted(m.uid())) =>
            {
                self.warnings.push(format!(
                    "{}: not owned by root or by you, not read (as perf; --force reads it)",
                    shown.display()
                ));
                None
            }
            Some((len, _)) if len > rprof_symbols::perfmap::MAX_MAP => {
                self.warnings.push(format!(
                    "{}: larger than {} bytes, not read",
                    shown.display(),
                    rprof_symbols::perfmap::MAX_MAP
                ));
                None
            }
            Some((_, f)) => {
                match rprof_symbols::root::read_sized(f, rprof_symbols::perfmap::MAX_MAP) {
                    Ok(bytes) => {
                        let map = PerfMap::parse(&String::from_utf8_lossy(&bytes));
                        if map.bad_lines > 0 {
                            self.warnings.push(format!(
                                "{}: {} lines that are not START SIZE NAME skipped",
                                shown.display(),
                                map.bad_lines
                            ));
                        }
                        Some(Arc::new(map))
                    }
                    Err(e) => {
                        self.warnings
                            .push(format!("cannot read {}: {e}", shown.display()));
                        None
                    }
                }
            }
            None => None,
        };
        self.perf_maps.insert(pid, map.clone());
        map
    }

    /// The frame of `offset` relative to `cookie`; `names` are the stream's
    /// cookie names.
    pub fn frame(&mut self, cookie: u64, offset: u64, names: &Resolver) -> Arc<Frame> {
        if let Some(f) = self.frames.get(&(cookie, offset)) {
            return f.clone();
        }
        let frame = self.compute(cookie, offset, names);
        let frame = self.intern(frame);
        self.frames.insert((cookie, offset), frame.clone());
        frame
    }

    /// The address of `offset` relative to `cookie`, and its object.
    pub fn place(&mut self, cookie: u64, offset: u64, names: &Resolver) -> Place {
        use rprof_abi::{RPROF_COOKIE_ANON, RPROF_COOKIE_KERNEL};
        let other = |path: &str, range| Place {
            address: offset,
            mapping: MappingKey {
                path: path.to_string(),
                range,
                build_id: Vec::new(),
                is_file: false,
            },
        };
        if cookie == u64::from(RPROF_COOKIE_KERNEL) {
            let path = match self.kallsyms.lookup(offset) {
                Some((_, Some(m))) => format!("[{m}]"),
                _ => "[kernel.kallsyms]".to_string(),
            };
            return other(&path, None);
        }
        if cookie == u64::from(RPROF_COOKIE_ANON) {
            return other("[anon]", None);
        }
        match names.name(cookie) {
            Some(CookieName::Module {
                name, base, size, ..
            }) => Place {
                address: base.wrapping_add(offset),
                mapping: MappingKey {
                    path: format!("[{name}]"),
                    range: (offset < *size).then(|| (*base, base.wrapping_add(*size), 0)),
                    build_id: Vec::new(),
                    is_file: false,
                },
            },
            Some(CookieName::File { path, .. }) => {
                let path = path.clone();
                let build_id = self
                    .files
                    .get(&cookie)
                    .map(|f| f.build_id.clone())
                    .unwrap_or_default();
                let mut place = Place {
                    address: offset,
                    mapping: MappingKey {
                        path,
                        range: None,
                        build_id,
                        is_file: true,
                    },
                };
                if let Some(image) = self.image(cookie, names) {
                    if let Some(seg) = image.segment_of_offset(offset) {
                        let start = seg.vaddr;
                        if let (Some(limit), Some(address)) = (
                            start.checked_add(seg.file_size),
                            (offset - seg.offset).checked_add(start),
                        ) {
                            place.address = address;
                            place.mapping.range = Some((start, limit, seg.offset));
                        }
                    }
                    if place.mapping.build_id.is_empty() {
                        place.mapping.build_id = image.build_id.clone().unwrap_or_default();
                    }
                }
                place
            }
            None => other("[unknown]", None),
        }
    }

    /// The inlined functions at each of `vaddrs` in the file of `cookie`
    /// ([`rprof_symbols::dwarf::Lines::frames`]; empty where DWARF says
    /// nothing).
    pub fn source_frames(
        &mut self,
        cookie: u64,
        vaddrs: &[u64],
        names: &Resolver,
    ) -> Vec<Vec<rprof_symbols::dwarf::InlineFrame>> {
        match self.lines(cookie, names) {
            Some(lines) => vaddrs.iter().map(|v| lines.frames(*v)).collect(),
            None => vec![Vec::new(); vaddrs.len()],
        }
    }

    fn compute(&mut self, cookie: u64, offset: u64, names: &Resolver) -> Frame {
        use rprof_abi::{RPROF_COOKIE_ANON, RPROF_COOKIE_KERNEL};
        let unknown = |dso: &str, path: &str, kind: FrameKind, symbol: String| Frame {
            dso: dso.to_string(),
            path: path.to_string(),
            symbol,
            kind,
            resolved: false,
            addr: offset,
            build_id: Vec::new(),
        };
        if cookie == u64::from(RPROF_COOKIE_KERNEL) {
            return match self.kallsyms.lookup(offset) {
                Some((hit, module)) => {
                    let (dso, kind) = match module {
                        Some(m) => (format!("[{m}]"), FrameKind::Module),
                        None => ("[kernel.kallsyms]".to_string(), FrameKind::Kernel),
                    };
                    Frame {
                        path: dso.clone(),
                        dso,
                        symbol: hit.name.to_string(),
                        kind,
                        resolved: true,
                        addr: hit.addr,
                        build_id: Vec::new(),
                    }
                }
                None => unknown(
                    "[kernel.kallsyms]",
                    "[kernel.kallsyms]",
                    FrameKind::Kernel,
                    format!("[unknown] {offset:#x}"),
                ),
            };
        }
        if cookie == u64::from(RPROF_COOKIE_ANON) {
            return unknown(
                "[anon]",
                "[anon]",
                FrameKind::Anon,
                format!("[unknown] {offset:#x}"),
            );
        }
        match names.name(cookie) {
            Some(CookieName::Module {
                name, base, size, ..
            }) => {
                let dso = format!("[{name}]");
                let addr = base.wrapping_add(offset);
                let hit = if offset < *size {
                    self.kallsyms.lookup_in_module(name, addr)
                } else {
                    None
                };
                match hit {
                    Some(hit) => Frame {
                        path: dso.clone(),
                        dso,
                        symbol: hit.name.to_string(),
                        kind: FrameKind::Module,
                        resolved: true,
                        addr: hit.addr,
                        build_id: Vec::new(),
                    },
                    None => unknown(
                        &dso,
                        &dso,
                        FrameKind::Module,
                        format!("[unknown] {dso}+{offset:#x}"),
                    ),
                }
            }
            Some(CookieName::File { path, .. }) => {
                let path = path.clone();
                let dso = base_name(&path).to_string();
                let build_id = self
                    .files
                    .get(&cookie)
                    .map(|f| f.build_id.clone())
                    .unwrap_or_default();
                let mut frame = unknown(
                    &dso,
                    &path,
                    FrameKind::File,
                    format!("[unknown] {path}+{offset:#x}"),
                );
                frame.build_id = build_id;
                match self.image_state(cookie, names).clone() {
                    ImageState::Ok(image) => {
                        let (vaddr, hit) = image.symbol_at_offset(offset);
                        match hit {
                            Some(hit) => {
                                frame.symbol = hit.name.to_string();
                                frame.resolved = true;
                                frame.addr = hit.addr;
                            }
                            None => {
                                frame.symbol = format!("[unknown] {dso}+{offset:#x}");
                                frame.addr = vaddr.unwrap_or(offset);
                            }
                        }
                    }
                    ImageState::Mismatch => {
                        frame.symbol = format!("[mismatch] {path}");
                        frame.addr = 0;
                    }
                    ImageState::Missing | ImageState::Unreadable => {}
                }
                frame
            }
            None => unknown(
                "[unknown]",
                "[unknown]",
                FrameKind::Unknown,
                format!("[unknown] {offset:#x}"),
            ),
        }
    }
}

/// Whether `path` names a file that exists.
pub fn exists(path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn names_user_kernel_module_and_unknown_samples() {
        let (stream, info) = testdata::stream();
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, std::slice::from_ref(&info), None);
        let names = agg.resolver();
        let hot = sym.frame(16, testdata::hot_offset(), names);
        assert_eq!(hot.symbol, "rprof_report_test_hot");
        assert_eq!(hot.kind, FrameKind::File);
        assert!(hot.resolved);
        assert_eq!(hot.path, testdata::exe().to_string_lossy());
        let k = sym.frame(1, 0xffffffff81001010, names);
        assert_eq!(
            (k.dso.as_str(), k.symbol.as_str()),
            ("[kernel.kallsyms]", "do_idle")
        );
        let k = sym.frame(1, 0x10, names);
        assert_eq!(k.symbol, "[unknown] 0x10");
        let m = sym.frame(40, 0x8, names);
        assert_eq!(
            (m.dso.as_str(), m.symbol.as_str()),
            ("[rprof_busy]", "busy_spin")
        );
        let m = sym.frame(40, 0x1900, names);
        assert_eq!(m.symbol, "[unknown] [rprof_busy]+0x1900");
        let a = sym.frame(2, 0x7000, names);
        assert_eq!(a.dso, "[anon]");
        let u = sym.frame(77, 0x5, names);
        assert_eq!(
            (u.dso.as_str(), u.symbol.as_str()),
            ("[unknown]", "[unknown] 0x5")
        );
        // Two offsets in one function share one frame.
        let again = sym.frame(16, testdata::hot_offset() + 1, names);
        assert!(Arc::ptr_eq(&hot, &again));
    }

    #[test]
    fn places_are_addresses_in_their_objects() {
        let (stream, info) = testdata::stream();
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, std::slice::from_ref(&info), None);
        let names = agg.resolver();
        let image = ElfImage::load(&testdata::exe()).unwrap();
        let (fn_addr, _) = image.symbols_named("rprof_report_test_hot")[0];
        let p = sym.place(16, testdata::hot_offset() + 2, names);
        assert_eq!(
            p.address,
            fn_addr + 2,
            "the sampled address, not the function's"
        );
        let (start, limit, off) = p.mapping.range.unwrap();
        assert!(start <= p.address && p.address < limit);
        assert_eq!(p.address - start + off, testdata::hot_offset() + 2);
        assert_eq!(p.mapping.build_id, info.build_id);
        assert!(p.mapping.is_file);
        let k = sym.place(1, 0xffffffff81001010, names);
        assert_eq!(
            (k.address, k.mapping.path.as_str()),
            (0xffffffff81001010, "[kernel.kallsyms]")
        );
        let m = sym.place(40, 0x8, names);
        assert_eq!(m.mapping.path, "[rprof_busy]");
        let (start, limit, _) = m.mapping.range.unwrap();
        assert_eq!(m.address, start + 8);
        assert!(limit > m.address);
        let u = sym.place(77, 0x5, names);
        assert_eq!(
            (u.address, u.mapping.path.as_str(), u.mapping.range),
            (5, "[unknown]", None)
        );
    }

    #[test]
    fn another_build_id_is_a_mismatch() {
        let (stream, mut info) = testdata::stream();
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        info.build_id = vec![1, 2, 3];
        let mut sym = Symbolizer::new("", &[info], None);
        let f = sym.frame(16, testdata::hot_offset(), agg.resolver());
        assert_eq!(
            f.symbol,
            format!("[mismatch] {}", testdata::exe().display())
        );
        assert!(!f.resolved);
        assert!(sym
            .warnings()
            .iter()
            .any(|w| w.contains("not the recorded file")));
    }

    /// The line tables come from the bytes that were checked against the
    /// recording when the file's symbols were read, or not at all: a file
    /// put in its place since (a package upgrade renames a new build over
    /// the old) gives no lines, and a warning says why.  Before, the DWARF
    /// was read again by path, unchecked, and the new file's lines were
    /// shown for the old file's addresses.
    #[test]
    fn lines_come_only_from_the_file_that_was_checked() {
        let dir = std::env::temp_dir().join(format!("rprof-lines-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Two builds of one program from sources of different names: the
        // same code at the same addresses, lines in another file.
        let build = |src: &str, out: &str| {
            rprof_symbols::testprog::build_c(&dir, src, out, "lines_hot", false, &[])
        };
        let prog = build("first.c", "prog");
        let other = build("second.c", "other");
        let path = prog.to_str().unwrap().to_string();
        let (stream, mut info) = testdata::stream_with(None, Some(&path));
        info.build_id = rprof_symbols::read_build_id(&prog).unwrap().unwrap();
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let image = ElfImage::load(&prog).unwrap();
        let vaddr = image.symbols_named("lines_hot")[0].0;
        let offset = image.offset_of_vaddr(vaddr).unwrap();
        let files = |frames: &[Vec<rprof_symbols::dwarf::InlineFrame>]| -> Vec<String> {
            frames
                .iter()
                .flatten()
                .filter_map(|f| f.file.clone())
                .collect()
        };

        // The file as it was recorded: its lines.
        let mut sym = Symbolizer::new("", &[info.clone()], None);
        assert_eq!(sym.frame(16, offset, agg.resolver()).symbol, "lines_hot");
        let seen = files(&sym.source_frames(16, &[vaddr], agg.resolver()));
        assert!(seen.iter().any(|f| f.ends_with("first.c")), "{seen:?}");

        // Its symbols read, then another build renamed over it.
        let mut sym = Symbolizer::new("", &[info], None);
        assert_eq!(sym.frame(16, offset, agg.resolver()).symbol, "lines_hot");
        std::fs::rename(&other, &prog).unwrap();
        let seen = files(&sym.source_frames(16, &[vaddr], agg.resolver()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(seen.is_empty(), "lines of the new file: {seen:?}");
        assert!(
            sym.warnings().iter().any(|w| w.contains("changed since")),
            "{:?}",
            sym.warnings()
        );
    }

    #[test]
    fn another_inode_is_a_mismatch_and_a_missing_file_unknown() {
        let (stream, mut info) = testdata::stream_with(Some(12345), None);
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        info.build_id.clear();
        let mut sym = Symbolizer::new("", &[info.clone()], None);
        let f = sym.frame(16, testdata::hot_offset(), agg.resolver());
        assert!(f.symbol.starts_with("[mismatch] "), "{f:?}");
        // Under --symfs the inode is not compared.
        let mut sym = Symbolizer::new("", &[info], Some(PathBuf::from("/")));
        let f = sym.frame(16, testdata::hot_offset(), agg.resolver());
        assert_eq!(f.symbol, "rprof_report_test_hot");

        let (stream, _) = testdata::stream_with(None, Some("/nonexistent/rprof/prog"));
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new("", &[], None);
        let f = sym.frame(16, 0x1234, agg.resolver());
        assert_eq!(f.symbol, "[unknown] /nonexistent/rprof/prog+0x1234");
        assert_eq!(f.dso, "prog");
    }
}

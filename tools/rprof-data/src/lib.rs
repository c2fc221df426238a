//! The `rprof.data` file: a recorded session and what reporting it later
//! needs.
//!
//! `rprof record` writes one; `rprof report`, `annotate` and `export` read
//! it, possibly on another machine or after the files it names changed.
//! So next to the raw event stream (the bytes exactly as read from
//! `/dev/rprof`) it keeps a snapshot taken at the end of the recording:
//! `/proc/kallsyms`, `/proc/modules`, and for every file cookie of the
//! stream its path, device, inode and GNU build-id.  The report compares
//! the build-id and inode with the file it finds at report time and refuses
//! to show symbols of a different file.
//!
//! # Layout
//!
//! All integers are little-endian.
//!
//! ```text
//! header   "RPROFDAT"  u32 version (1)  u32 flags (0)
//! section  u32 kind  u32 flags  u64 len  len bytes of payload
//! ...
//! section  END (kind 255, len 0), then nothing
//! ```
//!
//! The writer puts CONFIG, KALLSYMS and MODULES first, then STREAM (the
//! stream is written as it is read, its length patched at the end), then
//! META, FILES, STATS, KALLSYMS and MODULES again if they changed during
//! the recording (a module was loaded), and END.  Kernel symbols come
//! before the stream so that a recording that never finished (SIGKILL,
//! power loss, a full disk) still names its kernel samples.
//!
//! # Incomplete files
//!
//! A recording that was interrupted has no END section, and its STREAM
//! section may still have the length [`STREAM_OPEN`] (the writer patches
//! it last) or be cut anywhere.  [`DataFile::parse`] reads such a file up
//! to its last complete record: the stream is taken up to the end of the
//! last whole record (by the records' size fields), a section cut short is
//! dropped, and [`DataFile::cut`] says where and why the file ended.  Only
//! a file cut before its CONFIG section is an error.

//! | kind | section | payload |
//! |------|---------|---------|
//! | 1 | META | u32 count, then count times: u16 key length, key, u32 value length, value (UTF-8) |
//! | 2 | CONFIG | `struct rprof_config` as the session used it (160 bytes or more) |
//! | 3 | STREAM | the event stream as read |
//! | 4 | KALLSYMS | `/proc/kallsyms` as text |
//! | 5 | MODULES | `/proc/modules` as text |
//! | 6 | FILES | u32 count, then count [`FileInfo`] entries (see [`FileInfo`]) |
//! | 7 | STATS | u32 count, then count u64 ([`Stats`], in its field order; counters a file lacks read as 0, those a reader does not know are ignored) |
//! | 255 | END | empty: the file is complete |
//!
//! Section flag [`SECTION_GZIP`] says the payload is gzip'd (the writer does
//! so for KALLSYMS and MODULES; a payload inflates to at most
//! [`MAX_INFLATED`] bytes).  Unknown section kinds are skipped without
//! being decompressed, so later versions can add sections.  CONFIG and
//! STREAM are required; a section may appear once, except KALLSYMS and
//! MODULES, where the last one counts.  [`DataFile::parse`] validates
//! everything and never panics: errors say at which byte offset the file
//! went wrong.
//!
//! # Examples
//!
//! ```
//! use rprof_data::{DataFile, Snapshot};
//!
//! let mut file = DataFile::new(rprof_data::rprof_config::new());
//! file.stream = vec![0; 16];
//! file.kallsyms = "ffffffff81000000 T _stext\n".into();
//! let bytes = file.to_bytes();
//! assert_eq!(DataFile::parse(&bytes).unwrap(), file);
//! // Cut short: still readable, and it says so.
//! let cut = DataFile::parse(&bytes[..bytes.len() - 1]).unwrap();
//! assert!(cut.cut.is_some());
//! assert_eq!(cut.stream, file.stream);
//! ```

#![forbid(unsafe_code)]

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

pub use rprof_abi::rprof_config;

/// The first bytes of every `rprof.data` file.
pub const MAGIC: &[u8; 8] = b"RPROFDAT";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// The payload of a section is gzip'd.
pub const SECTION_GZIP: u32 = 1;
/// The largest section payload after decompression (a guard against gzip
/// bombs): 256 MiB, some twenty times a large kallsyms.
pub const MAX_INFLATED: u64 = 1 << 28;
/// The STREAM length of a recording whose writer has not finished: the
/// stream runs to the end of the file.
pub const STREAM_OPEN: u64 = u64::MAX;

/// Section kinds.
pub mod section {
    /// Key/value metadata.
    pub const META: u32 = 1;
    /// `struct rprof_config`.
    pub const CONFIG: u32 = 2;
    /// The raw event stream.
    pub const STREAM: u32 = 3;
    /// `/proc/kallsyms`.
    pub const KALLSYMS: u32 = 4;
    /// `/proc/modules`.
    pub const MODULES: u32 = 5;
    /// File cookies and their build-ids.
    pub const FILES: u32 = 6;
    /// The module's statistics at the end.
    pub const STATS: u32 = 7;
    /// The end of the file.
    pub const END: u32 = 255;
}

/// Well-known keys of [`DataFile::meta`].
pub mod meta {
    /// The rprof version that recorded.
    pub const RPROF_VERSION: &str = "rprof-version";
    /// `uname -n`.
    pub const HOSTNAME: &str = "hostname";
    /// `uname -r`.
    pub const KERNEL: &str = "kernel-release";
    /// Seconds since the epoch at the start of the recording.
    pub const START_UNIX: &str = "start-unix";
    /// The recording's length in ns (wall clock).
    pub const DURATION_NS: &str = "duration-ns";
    /// The command that `rprof record -- CMD` ran, space-separated.
    pub const COMMAND: &str = "command";
    /// The pid of that command, or of `-p PID`.
    pub const TARGET_PID: &str = "target-pid";
}

/// `FileInfo::snapshot_flags`: the path did not exist when the snapshot was
/// taken (no build-id).
pub const FILE_MISSING: u32 = 1 << 0;
/// `FileInfo::snapshot_flags`: the file at the path had another device or
/// inode than the cookie's by the end of the recording (no build-id).
pub const FILE_REPLACED: u32 = 1 << 1;
/// `FileInfo::snapshot_flags`: the file is not ELF or has no build-id note.
pub const FILE_NO_BUILD_ID: u32 = 1 << 2;

/// A file cookie of the stream as the snapshot saw it.
///
/// Encoded as: u32 entry length (of what follows), u64 cookie, u64 dev,
/// u64 ino, u32 cookie flags (`RPROF_COOKIE_*`), u32 snapshot flags
/// (`FILE_*`), u32 build-id length, u32 path length, the build-id, the
/// path (UTF-8).  Bytes after the path within the entry length are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileInfo {
    /// The cookie.
    pub cookie: u64,
    /// `new_encode_dev()` of the file's device, from the COOKIE record.
    pub dev: u64,
    /// Its inode number, from the COOKIE record.
    pub ino: u64,
    /// The COOKIE record's flags (`RPROF_COOKIE_DELETED`...).
    pub cookie_flags: u32,
    /// [`FILE_MISSING`], [`FILE_REPLACED`], [`FILE_NO_BUILD_ID`].
    pub snapshot_flags: u32,
    /// The file's GNU build-id, if it has one (empty otherwise).
    pub build_id: Vec<u8>,
    /// The path.
    pub path: String,
}

/// The module's statistics at the end of the recording (the totals of
/// `RPROF_IOC_GET_STATS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Records written by the sampling handler.
    pub samples: u64,
    /// Put into the event buffer.
    pub delivered: u64,
    /// Dropped: a CPU's ring was full.
    pub lost_ring: u64,
    /// Dropped: the event buffer was full.
    pub lost_buffer: u64,
    /// User sample of a task without an mm.
    pub lost_no_mm: u64,
    /// User ip in no mapping.
    pub lost_no_mapping: u64,
    /// The cookie table was full.
    pub lost_no_cookie: u64,
    /// Times perf throttled a counter.
    pub throttled: u64,
    /// Highest ring fill seen, in records.
    pub ring_high_water: u64,
    /// Drain passes run.
    pub drains: u64,
    /// Reader wakeups issued.
    pub wakeups: u64,
    /// User samples not resolved for a busy `mmap_lock`, all CPUs
    /// (`lost_mm_busy`; 0 in files written before it was kept, or from a
    /// module older than `RPROF_STATS_SIZE_VER2`).
    pub lost_mm_busy: u64,
    /// Bytes of the session's buffers charged to its owner's locked
    /// memory (`locked_bytes`; 0 as `lost_mm_busy`).
    pub locked_bytes: u64,
}

impl Stats {
    /// Counters in a STATS section: 11 in files written before
    /// `lost_mm_busy` and `locked_bytes` were kept.
    const FIELDS: usize = 13;

    fn to_array(self) -> [u64; Self::FIELDS] {
        [
            self.samples,
            self.delivered,
            self.lost_ring,
            self.lost_buffer,
            self.lost_no_mm,
            self.lost_no_mapping,
            self.lost_no_cookie,
            self.throttled,
            self.ring_high_water,
            self.drains,
            self.wakeups,
            self.lost_mm_busy,
            self.locked_bytes,
        ]
    }

    fn from_slice(v: &[u64]) -> Stats {
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Stats {
            samples: at(0),
            delivered: at(1),
            lost_ring: at(2),
            lost_buffer: at(3),
            lost_no_mm: at(4),
            lost_no_mapping: at(5),
            lost_no_cookie: at(6),
            throttled: at(7),
            ring_high_water: at(8),
            drains: at(9),
            wakeups: at(10),
            lost_mm_busy: at(11),
            locked_bytes: at(12),
        }
    }
}

/// What the recorder adds after the stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// `/proc/kallsyms`.
    pub kallsyms: String,
    /// `/proc/modules`.
    pub modules: String,
    /// The file cookies of the stream.
    pub files: Vec<FileInfo>,
    /// The module's statistics at the end.
    pub stats: Option<Stats>,
}

/// A whole `rprof.data` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Key/value metadata ([`meta`] has the well-known keys).
    pub meta: BTreeMap<String, String>,
    /// The session's configuration.
    pub config: rprof_config,
    /// The event stream, exactly as read.
    pub stream: Vec<u8>,
    /// `/proc/kallsyms` at the end of the recording.
    pub kallsyms: String,
    /// `/proc/modules` at the end of the recording.
    pub modules: String,
    /// The file cookies of the stream.
    pub files: Vec<FileInfo>,
    /// The module's statistics at the end, if recorded.
    pub stats: Option<Stats>,
    /// Set if the file is incomplete (an interrupted recording): what was
    /// kept of it.
    pub cut: Option<Cut>,
}

/// Where an incomplete file ends, and what [`DataFile::parse`] kept of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Nothing from this byte offset on was used.
    pub at: u64,
    /// The file's length.
    pub file_len: u64,
    /// Why the file counts as incomplete, e.g. "it ends inside the
    /// KALLSYMS section".
    pub reason: String,
    /// Bytes of an incomplete last record of the stream that were left
    /// out.
    pub stream_dropped: u64,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "incomplete recording (interrupted?): {}; read up to byte {} of {}",
            self.reason, self.at, self.file_len
        )?;
        if self.stream_dropped > 0 {
            write!(
                f,
                ", without the {} bytes of a last record cut short",
                self.stream_dropped
            )?;
        }
        Ok(())
    }
}

/// A malformed file: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for FormatError {}

/// An error of [`DataFile::read`]: the file could not be read, or is
/// malformed.
#[derive(Debug)]
pub enum ReadError {
    /// `open`/`read` failed.
    Io(io::Error),
    /// The contents are malformed.
    Format(FormatError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Format(e) => write!(f, "not a valid rprof.data file: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<FormatError> for ReadError {
    fn from(e: FormatError) -> Self {
        ReadError::Format(e)
    }
}

/// A [`FormatError`] at `offset` (as whichever error type the caller
/// returns: `FormatError` or [`ReadError`]).
fn err<T, E: From<FormatError>>(offset: u64, message: impl Into<String>) -> Result<T, E> {
    Err(FormatError {
        offset,
        message: message.into(),
    }
    .into())
}

/// A bounds-checked little-endian reader over a section's payload.
struct Fields<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// File offset of `bytes[0]` (for a decompressed payload: of the
    /// section's payload).
    base: u64,
    what: &'static str,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8], base: u64, what: &'static str) -> Self {
        Fields {
            bytes,
            pos: 0,
            base,
            what,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], FormatError> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return err(
                self.offset(),
                format!(
                    "{}: {field} needs {n} bytes, only {left} are left",
                    self.what
                ),
            );
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N], FormatError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }

    fn u16(&mut self, field: &str) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }

    fn u32(&mut self, field: &str) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: &str) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    fn string(&mut self, len: usize, field: &str) -> Result<String, FormatError> {
        let at = self.offset();
        let b = self.take(len, field)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => err(
                at + e.valid_up_to() as u64,
                format!("{}: {field} is not UTF-8", self.what),
            ),
        }
    }

    /// A count of entries of at least `min_size` bytes each, checked
    /// against what is left.
    fn count(&mut self, min_size: usize, field: &str) -> Result<usize, FormatError> {
        let at = self.offset();
        let n = self.u32(field)? as usize;
        let left = self.bytes.len() - self.pos;
        if n.saturating_mul(min_size) > left {
            return err(
                at,
                format!(
                    "{}: {n} {field} cannot fit in the {left} bytes left",
                    self.what
                ),
            );
        }
        Ok(n)
    }

    fn finished(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

/// Bytes of a section header: kind, flags, length.
const SECTION_HEADER: usize = 16;

/// The length of the longest prefix of `stream` made of whole records, by
/// their headers' size fields (at least 8, a multiple of 8, within the
/// bytes).  What the records hold is the decoder's business.
pub fn whole_records(stream: &[u8]) -> usize {
    let mut pos = 0usize;
    while let Some(header) = stream.get(pos..pos.saturating_add(8)) {
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if size < 8 || size % 8 != 0 || size > stream.len() - pos {
            break;
        }
        pos += size;
    }
    pos
}

fn section_name(kind: u32) -> &'static str {
    match kind {
        section::META => "META",
        section::CONFIG => "CONFIG",
        section::STREAM => "STREAM",
        section::KALLSYMS => "KALLSYMS",
        section::MODULES => "MODULES",
        section::FILES => "FILES",
        section::STATS => "STATS",
        section::END => "END",
        _ => "unknown",
    }
}

impl DataFile {
    /// An empty recording of `config`.
    pub fn new(config: rprof_config) -> Self {
        DataFile {
            meta: BTreeMap::new(),
            config,
            stream: Vec::new(),
            kallsyms: String::new(),
            modules: String::new(),
            files: Vec::new(),
            stats: None,
            cut: None,
        }
    }

    /// The value of metadata `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta.get(key).map(String::as_str)
    }

    /// The file cookie `cookie`'s snapshot.
    pub fn file(&self, cookie: u64) -> Option<&FileInfo> {
        self.files.iter().find(|f| f.cookie == cookie)
    }

    /// The whole file as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let write = || -> io::Result<Vec<u8>> {
            let mut w = Writer::new(
                Cursor::new(Vec::new()),
                &self.config,
                &self.kallsyms,
                &self.modules,
            )?;
            w.write_stream(&self.stream)?;
            let snap = Snapshot {
                kallsyms: self.kallsyms.clone(),
                modules: self.modules.clone(),
                files: self.files.clone(),
                stats: self.stats,
            };
            Ok(w.finish(&self.meta, &snap)?.into_inner())
        };
        // Writing to a Vec fails only if memory runs out, which aborts.
        write().unwrap_or_default()
    }

    /// Reads and parses the file at `path`, section by section: each
    /// payload is read once, into what keeps it (the stream straight into
    /// [`DataFile::stream`]), and unknown sections are skipped without
    /// being read.
    ///
    /// A pipe or FIFO (`rprof report -i <(...)`) has no length to go by:
    /// it is read whole, then parsed.
    pub fn read(path: &Path) -> Result<DataFile, ReadError> {
        let mut file = std::fs::File::open(path).map_err(ReadError::Io)?;
        let meta = file.metadata().map_err(ReadError::Io)?;
        if !meta.is_file() {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(ReadError::Io)?;
            return DataFile::parse(&bytes).map_err(ReadError::Format);
        }
        DataFile::parse_from(&mut io::BufReader::new(file), meta.len())
    }

    /// Parses a whole file.
    pub fn parse(bytes: &[u8]) -> Result<DataFile, FormatError> {
        DataFile::parse_from(&mut Cursor::new(bytes), bytes.len() as u64).map_err(|e| match e {
            ReadError::Format(e) => e,
            // Reading a slice fails only past its end, which the parser
            // never asks for (lengths are checked against the file's).
            ReadError::Io(e) => FormatError {
                offset: 0,
                message: format!("reading: {e}"),
            },
        })
    }

    /// Parses the `file_len` bytes of `r` from its current position.
    fn parse_from<R: Read + Seek>(r: &mut R, file_len: u64) -> Result<DataFile, ReadError> {
        let mut header = [0u8; 16];
        let got = read_up_to(r, &mut header).map_err(ReadError::Io)?;
        let mut f = Fields::new(&header[..got], 0, "header");
        let magic = f.take(8, "the magic")?;
        if magic != MAGIC {
            return err(0, "not an rprof.data file (no RPROFDAT magic)");
        }
        let version = f.u32("the version")?;
        if version != VERSION {
            return err(
                8,
                format!("format version {version}, this rprof reads version {VERSION}"),
            );
        }
        let flags = f.u32("the flags")?;
        if flags != 0 {
            return err(12, format!("unknown header flags {flags:#x}"));
        }
        let mut file = DataFile::new(rprof_config::new());
        let mut seen: Vec<u32> = Vec::new();
        let cut = |at: u64, reason: String| Cut {
            at,
            file_len,
            reason,
            stream_dropped: 0,
        };
        // The offset of `r`'s position in the file.
        let mut pos = f.offset();
        loop {
            let at = pos;
            if pos >= file_len {
                file.cut = Some(cut(at, "it has no END section".into()));
                break;
            }
            if file_len - pos < SECTION_HEADER as u64 {
                file.cut = Some(cut(at, "it ends inside a section header".into()));
                break;
            }
            let mut head = [0u8; SECTION_HEADER];
            r.read_exact(&mut head)
                .map_err(|e| ReadError::Io(shrunk(e, at)))?;
            pos += SECTION_HEADER as u64;
            let mut f = Fields::new(&head, at, "section header");
            let kind = f.u32("the kind")?;
            let sflags = f.u32("the flags")?;
            let len = f.u64("the length")?;
            if sflags & !SECTION_GZIP != 0 {
                return err(at + 4, format!("unknown section flags {sflags:#x}"));
            }
            let once = !matches!(kind, section::KALLSYMS | section::MODULES);
            if once && seen.contains(&kind) {
                return err(at, format!("a second {} section", section_name(kind)));
            }
            let payload_at = pos;
            let left = file_len - pos;
            if kind == section::STREAM && sflags == 0 && (len == STREAM_OPEN || len > left) {
                // The writer never finished, or the file was cut inside
                // the stream: keep its whole records.
                seen.push(kind);
                let mut rest = read_vec(r, left).map_err(ReadError::Io)?;
                let keep = whole_records(&rest);
                let dropped = (rest.len() - keep) as u64;
                rest.truncate(keep);
                file.stream = rest;
                let reason = if len == STREAM_OPEN {
                    "the stream was never finished".to_string()
                } else {
                    format!("it ends inside the STREAM section of {len} bytes")
                };
                file.cut = Some(Cut {
                    stream_dropped: dropped,
                    ..cut(payload_at + keep as u64, reason)
                });
                break;
            }
            if len > left {
                if kind == section::END {
                    return err(at, "the END section is not empty");
                }
                file.cut = Some(cut(
                    at,
                    format!(
                        "it ends inside the {} section of {len} bytes",
                        section_name(kind)
                    ),
                ));
                break;
            }
            seen.push(kind);
            if kind == section::END {
                if len != 0 {
                    return err(at, "the END section is not empty");
                }
                if pos != file_len {
                    return err(pos, "bytes after the END section");
                }
                break;
            }
            if section_name(kind) == "unknown" {
                // A later version's section: skipped, not even read.
                let Ok(skip) = i64::try_from(len) else {
                    return err(at, format!("a section of {len} bytes"));
                };
                r.seek(SeekFrom::Current(skip)).map_err(ReadError::Io)?;
                pos += len;
                continue;
            }
            let raw = read_vec(r, len).map_err(ReadError::Io)?;
            pos += len;
            let payload = if sflags & SECTION_GZIP != 0 {
                gunzip(&raw).map_err(|e| {
                    ReadError::Format(FormatError {
                        offset: payload_at,
                        message: format!("{} section: bad gzip data: {e}", section_name(kind)),
                    })
                })?
            } else {
                raw
            };
            if kind == section::STREAM {
                // Kept as read: no copy.
                file.stream = payload;
            } else {
                file.parse_section(kind, &payload, payload_at)?;
            }
        }
        if !seen.contains(&section::CONFIG) {
            return err(
                pos.min(file_len),
                match &file.cut {
                    Some(c) => format!("no CONFIG section: nothing to read ({})", c.reason),
                    None => "no CONFIG section".to_string(),
                },
            );
        }
        if file.cut.is_none() && !seen.contains(&section::STREAM) {
            return err(file_len, "no STREAM section");
        }
        Ok(file)
    }

    fn parse_section(&mut self, kind: u32, payload: &[u8], at: u64) -> Result<(), FormatError> {
        let text = |what: &'static str| -> Result<String, FormatError> {
            Fields::new(payload, at, what).string(payload.len(), "the text")
        };
        match kind {
            section::META => {
                let mut f = Fields::new(payload, at, "META section");
                let n = f.count(6, "entries")?;
                for _ in 0..n {
                    let klen = f.u16("a key length")? as usize;
                    let key = f.string(klen, "a key")?;
                    let vlen = f.u32("a value length")? as usize;
                    let value = f.string(vlen, "a value")?;
                    self.meta.insert(key, value);
                }
                if !f.finished() {
                    return err(f.offset(), "META section: bytes after the entries");
                }
            }
            section::CONFIG => match rprof_decode::decode_config(payload) {
                Some(c) => self.config = c,
                None => {
                    return err(
                        at,
                        format!(
                            "CONFIG section of {} bytes, struct rprof_config needs {}",
                            payload.len(),
                            std::mem::size_of::<rprof_config>()
                        ),
                    )
                }
            },
            section::STREAM => self.stream = payload.to_vec(),
            section::KALLSYMS => self.kallsyms = text("KALLSYMS section")?,
            section::MODULES => self.modules = text("MODULES section")?,
            section::FILES => {
                let mut f = Fields::new(payload, at, "FILES section");
                let n = f.count(44, "entries")?;
                for _ in 0..n {
                    let entry_at = f.offset();
                    let elen = f.u32("an entry length")? as usize;
                    let entry = f.take(elen, "an entry")?;
                    let mut e = Fields::new(entry, entry_at + 4, "FILES entry");
                    let mut info = FileInfo {
                        cookie: e.u64("the cookie")?,
                        dev: e.u64("the device")?,
                        ino: e.u64("the inode")?,
                        cookie_flags: e.u32("the cookie flags")?,
                        snapshot_flags: e.u32("the snapshot flags")?,
                        ..FileInfo::default()
                    };
                    let blen = e.u32("the build-id length")? as usize;
                    let plen = e.u32("the path length")? as usize;
                    info.build_id = e.take(blen, "the build-id")?.to_vec();
                    info.path = e.string(plen, "the path")?;
                    self.files.push(info);
                }
                if !f.finished() {
                    return err(f.offset(), "FILES section: bytes after the entries");
                }
            }
            section::STATS => {
                let mut f = Fields::new(payload, at, "STATS section");
                let n = f.count(8, "counters")?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(f.u64("a counter")?);
                }
                if !f.finished() {
                    return err(f.offset(), "STATS section: bytes after the counters");
                }
                self.stats = Some(Stats::from_slice(&v));
            }
            // A later version's section.
            _ => {}
        }
        Ok(())
    }
}

/// Reads `buf.len()` bytes of `r`, fewer only at its end; how many.
fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// `e`, said as the file having ended early at `at` if it did.
fn shrunk(e: io::Error, at: u64) -> io::Error {
    if e.kind() != io::ErrorKind::UnexpectedEof {
        return e;
    }
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "the file ended at byte {at}, before its length when opened (cut while being read?)"
        ),
    )
}

/// Reads exactly `len` bytes of `r` (the caller checked that the file
/// has them: the allocation is bounded by the file's size, and made once,
/// or refused with an error rather than aborting).
fn read_vec<R: Read>(r: &mut R, len: u64) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| v.try_reserve_exact(n).ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("a section of {len} bytes does not fit in memory"),
            )
        })?;
    r.take(len).read_to_end(&mut v)?;
    if (v.len() as u64) < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the file ended {} bytes early (cut while being read?)",
                len - v.len() as u64
            ),
        ));
    }
    Ok(v)
}

/// Decompresses gzip'd `bytes`, at most [`MAX_INFLATED`] bytes.
fn gunzip(bytes: &[u8]) -> io::Result<Vec<u8>> {
    gunzip_limited(bytes, MAX_INFLATED)
}

/// Decompresses gzip'd `bytes`, at most `limit` bytes.
fn gunzip_limited(bytes: &[u8], limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    GzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::other(format!(
            "more than {limit} bytes once decompressed"
        )));
    }
    Ok(out)
}

/// Writes an `rprof.data` file while a session runs: the header, CONFIG
/// and the kernel's symbols first, then the stream as it arrives, then
/// META (which may name a process started after the session) and the rest
/// of the snapshot.
///
/// The STREAM section's length is written as [`STREAM_OPEN`] at first and
/// patched by [`Writer::finish`]; a file whose writer never finished reads
/// as [`DataFile::cut`], with every whole record of its stream.
pub struct Writer<W: Write + Seek> {
    out: W,
    /// Where the STREAM section's length field is.
    stream_len_at: u64,
    stream_len: u64,
    /// KALLSYMS and MODULES as written before the stream.
    kallsyms: String,
    modules: String,
}

fn put_section_header<W: Write>(out: &mut W, kind: u32, flags: u32, len: u64) -> io::Result<()> {
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&flags.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())
}

fn put_section<W: Write>(out: &mut W, kind: u32, flags: u32, payload: &[u8]) -> io::Result<()> {
    put_section_header(out, kind, flags, payload.len() as u64)?;
    out.write_all(payload)
}

fn gzip(bytes: &[u8]) -> io::Result<Vec<u8>> {
    gzip_level(bytes, flate2::Compression::default())
}

fn gzip_level(bytes: &[u8], level: flate2::Compression) -> io::Result<Vec<u8>> {
    let mut e = GzEncoder::new(Vec::new(), level);
    e.write_all(bytes)?;
    e.finish()
}

fn too_long(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("{what} is too long"))
}

fn encode_meta(meta: &BTreeMap<String, String>) -> io::Result<Vec<u8>> {
    let mut b = Vec::new();
    let n = u32::try_from(meta.len()).map_err(|_| too_long("the metadata"))?;
    b.extend_from_slice(&n.to_le_bytes());
    for (k, v) in meta {
        let klen = u16::try_from(k.len()).map_err(|_| too_long("a metadata key"))?;
        let vlen = u32::try_from(v.len()).map_err(|_| too_long("a metadata value"))?;
        b.extend_from_slice(&klen.to_le_bytes());
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(&vlen.to_le_bytes());
        b.extend_from_slice(v.as_bytes());
    }
    Ok(b)
}

fn encode_files(files: &[FileInfo]) -> io::Result<Vec<u8>> {
    let mut b = Vec::new();
    let n = u32::try_from(files.len()).map_err(|_| too_long("the file list"))?;
    b.extend_from_slice(&n.to_le_bytes());
    for f in files {
        let blen = u32::try_from(f.build_id.len()).map_err(|_| too_long("a build-id"))?;
        let plen = u32::try_from(f.path.len()).map_err(|_| too_long("a path"))?;
        let elen = 40 + blen + plen;
        b.extend_from_slice(&elen.to_le_bytes());
        b.extend_from_slice(&f.cookie.to_le_bytes());
        b.extend_from_slice(&f.dev.to_le_bytes());
        b.extend_from_slice(&f.ino.to_le_bytes());
        b.extend_from_slice(&f.cookie_flags.to_le_bytes());
        b.extend_from_slice(&f.snapshot_flags.to_le_bytes());
        b.extend_from_slice(&blen.to_le_bytes());
        b.extend_from_slice(&plen.to_le_bytes());
        b.extend_from_slice(&f.build_id);
        b.extend_from_slice(f.path.as_bytes());
    }
    Ok(b)
}

impl<W: Write + Seek> Writer<W> {
    /// Writes the header, CONFIG, KALLSYMS, MODULES and the start of
    /// STREAM to `out` (at its current position, normally 0).
    pub fn new(
        mut out: W,
        config: &rprof_config,
        kallsyms: &str,
        modules: &str,
    ) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        let mut c = Vec::new();
        rprof_decode::encode_config(config, &mut c);
        put_section(&mut out, section::CONFIG, 0, &c)?;
        // Fast compression: a recorder writes this while it samples.
        let fast = flate2::Compression::fast();
        let z = gzip_level(kallsyms.as_bytes(), fast)?;
        put_section(&mut out, section::KALLSYMS, SECTION_GZIP, &z)?;
        let z = gzip_level(modules.as_bytes(), fast)?;
        put_section(&mut out, section::MODULES, SECTION_GZIP, &z)?;
        let stream_len_at = out.stream_position()? + 8;
        put_section_header(&mut out, section::STREAM, 0, STREAM_OPEN)?;
        Ok(Writer {
            out,
            stream_len_at,
            stream_len: 0,
            kallsyms: kallsyms.to_string(),
            modules: modules.to_string(),
        })
    }

    /// Appends bytes of the stream.
    pub fn write_stream(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.stream_len += bytes.len() as u64;
        Ok(())
    }

    /// Bytes of stream written so far.
    pub fn stream_len(&self) -> u64 {
        self.stream_len
    }

    /// Patches the STREAM length, writes META, the snapshot (kallsyms and
    /// modules only if they changed since [`Writer::new`]) and END;
    /// returns the output, flushed.
    pub fn finish(mut self, meta: &BTreeMap<String, String>, snap: &Snapshot) -> io::Result<W> {
        let end = self.out.stream_position()?;
        self.out.seek(SeekFrom::Start(self.stream_len_at))?;
        self.out.write_all(&self.stream_len.to_le_bytes())?;
        self.out.seek(SeekFrom::Start(end))?;
        let out = &mut self.out;
        put_section(out, section::META, 0, &encode_meta(meta)?)?;
        put_section(out, section::FILES, 0, &encode_files(&snap.files)?)?;
        if let Some(stats) = snap.stats {
            let mut b = (Stats::FIELDS as u32).to_le_bytes().to_vec();
            for v in stats.to_array() {
                b.extend_from_slice(&v.to_le_bytes());
            }
            put_section(out, section::STATS, 0, &b)?;
        }
        if snap.kallsyms != self.kallsyms {
            let z = gzip(snap.kallsyms.as_bytes())?;
            put_section(out, section::KALLSYMS, SECTION_GZIP, &z)?;
        }
        if snap.modules != self.modules {
            let z = gzip(snap.modules.as_bytes())?;
            put_section(out, section::MODULES, SECTION_GZIP, &z)?;
        }
        put_section_header(out, section::END, 0, 0)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 LOST records (24 bytes each) and an unknown 16-byte record.
    fn stream() -> Vec<u8> {
        let mut b = Vec::new();
        for i in 0..40 {
            rprof_decode::Record::Lost {
                stage: 1,
                cpu: i,
                count: u64::from(i) + 1,
            }
            .encode(&mut b);
        }
        b.extend_from_slice(&[99, 0, 0, 0, 16, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        b
    }

    /// `read` takes an unknown section's length from its header and seeks
    /// past it: one of a terabyte (a sparse file) is neither read nor
    /// allocated.  Before, `read` took the whole file into memory first (an
    /// allocation this size aborts the process) and copied the stream
    /// out of it (the stream twice in memory).
    #[test]
    fn read_skips_a_terabyte_unknown_section_without_reading_it() {
        let bytes = example().to_bytes();
        // The END section (16 bytes) last; the unknown one goes before it.
        let (body, end) = bytes.split_at(bytes.len() - SECTION_HEADER);
        let huge = 1u64 << 40;
        let path = std::env::temp_dir().join(format!("rprof-sparse-{}.data", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(body).unwrap();
        f.write_all(&200u32.to_le_bytes()).unwrap();
        f.write_all(&0u32.to_le_bytes()).unwrap();
        f.write_all(&huge.to_le_bytes()).unwrap();
        let len = body.len() as u64 + SECTION_HEADER as u64 + huge;
        f.set_len(len).unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        f.write_all(end).unwrap();
        drop(f);
        let read = DataFile::read(&path);
        let _ = std::fs::remove_file(&path);
        let read = read.unwrap();
        assert!(read.cut.is_none(), "{:?}", read.cut);
        assert_eq!(read.stream, stream());
        assert_eq!(read.meta(meta::TARGET_PID), Some("42"));
    }

    /// A recording given through a pipe or FIFO (`report -i <(...)`), which
    /// has no length to go by, is read whole (the sectioned read took a
    /// FIFO's length as 0 and found nothing).
    #[test]
    fn read_takes_a_recording_from_a_fifo() {
        let dir = std::env::temp_dir().join(format!("rprof-data-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("rec");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let bytes = example().to_bytes();
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
        };
        let read = DataFile::read(&fifo);
        writer.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let read = read.unwrap();
        assert!(read.cut.is_none(), "{:?}", read.cut);
        assert_eq!(read.stream, stream());
    }

    /// Where each record of [`stream`] ends.
    fn record_ends() -> Vec<usize> {
        let mut v: Vec<usize> = (0..=40).map(|i| i * 24).collect();
        v.push(40 * 24 + 16);
        v
    }

    fn example() -> DataFile {
        let mut c = rprof_config::new();
        c.nr_events = 1;
        c.events[0].kind = 1;
        c.events[0].flags = 1;
        c.events[0].period = 999;
        c.pid = 42;
        let mut f = DataFile::new(c);
        f.meta.insert(meta::COMMAND.into(), "/bin/true -x".into());
        f.meta.insert(meta::TARGET_PID.into(), "42".into());
        f.stream = stream();
        f.kallsyms = "ffffffff81000000 T _stext\nffffffff81000100 t foo\n".repeat(20);
        f.modules = "rprof 65536 0 - Live 0xffffffffc0000000 (O)\n".into();
        f.files = vec![
            FileInfo {
                cookie: 16,
                dev: 0x801,
                ino: 1234,
                cookie_flags: 0,
                snapshot_flags: 0,
                build_id: vec![0xab; 20],
                path: "/usr/bin/ä".into(),
            },
            FileInfo {
                cookie: 17,
                dev: 1,
                ino: 2,
                cookie_flags: 1,
                snapshot_flags: FILE_MISSING,
                build_id: vec![],
                path: "/tmp/gone (deleted)".into(),
            },
        ];
        f.stats = Some(Stats {
            samples: 10,
            delivered: 9,
            lost_ring: 1,
            wakeups: 3,
            lost_mm_busy: 4,
            locked_bytes: 1 << 20,
            ..Stats::default()
        });
        f
    }

    /// A file written before `lost_mm_busy` and `locked_bytes` were kept
    /// has 11 counters in its STATS section: it still reads, the two as 0;
    /// a later one's extra counters are ignored.
    #[test]
    fn stats_sections_of_other_versions() {
        let mut f = example();
        let stats = f.stats.take().unwrap();
        let bytes = f.to_bytes();
        let (body, end) = bytes.split_at(bytes.len() - SECTION_HEADER);
        for n in [11usize, 15] {
            let mut counters: Vec<u64> = stats.to_array().to_vec();
            counters.resize(n, 99);
            let mut payload = (n as u32).to_le_bytes().to_vec();
            for v in &counters {
                payload.extend_from_slice(&v.to_le_bytes());
            }
            let mut file = body.to_vec();
            put_section(&mut file, section::STATS, 0, &payload).unwrap();
            file.extend_from_slice(end);
            let back = DataFile::parse(&file).unwrap();
            let want = if n == 11 {
                Stats {
                    lost_mm_busy: 0,
                    locked_bytes: 0,
                    ..stats
                }
            } else {
                stats
            };
            assert_eq!(back.stats, Some(want), "{n} counters");
            assert!(back.cut.is_none(), "{n} counters: {:?}", back.cut);
        }
    }

    #[test]
    fn round_trip() {
        let f = example();
        let bytes = f.to_bytes();
        assert_eq!(&bytes[..8], MAGIC);
        let back = DataFile::parse(&bytes).unwrap();
        assert_eq!(back, f);
        assert_eq!(back.meta(meta::TARGET_PID), Some("42"));
        assert_eq!(back.file(17).map(|f| f.ino), Some(2));
        // An empty one too.
        let empty = DataFile::new(rprof_config::new());
        assert_eq!(DataFile::parse(&empty.to_bytes()).unwrap(), empty);
    }

    #[test]
    fn writer_streams_and_patches_the_length() {
        let f = example();
        let mut w =
            Writer::new(Cursor::new(Vec::new()), &f.config, &f.kallsyms, &f.modules).unwrap();
        for chunk in f.stream.chunks(7) {
            w.write_stream(chunk).unwrap();
        }
        assert_eq!(w.stream_len(), f.stream.len() as u64);
        let snap = Snapshot {
            kallsyms: f.kallsyms.clone(),
            modules: f.modules.clone(),
            files: f.files.clone(),
            stats: f.stats,
        };
        let bytes = w.finish(&f.meta, &snap).unwrap().into_inner();
        assert_eq!(bytes, f.to_bytes());
        assert_eq!(DataFile::parse(&bytes).unwrap(), f);
    }

    #[test]
    fn symbols_that_changed_while_recording_are_written_again() {
        let f = example();
        let mut w = Writer::new(Cursor::new(Vec::new()), &f.config, "old kallsyms", "old").unwrap();
        w.write_stream(&f.stream).unwrap();
        let snap = Snapshot {
            kallsyms: f.kallsyms.clone(),
            modules: "old".into(),
            ..Snapshot::default()
        };
        let bytes = w.finish(&f.meta, &snap).unwrap().into_inner();
        let back = DataFile::parse(&bytes).unwrap();
        assert_eq!(back.kallsyms, f.kallsyms, "the last KALLSYMS counts");
        assert_eq!(back.modules, "old");
        assert_eq!(back.cut, None);
    }

    /// A writer killed mid-stream (SIGKILL, power loss): the kernel
    /// symbols and every whole record are there, and the file says it
    /// is incomplete.
    #[test]
    fn an_unfinished_writer_leaves_a_readable_file() {
        let f = example();
        let mut w =
            Writer::new(Cursor::new(Vec::new()), &f.config, &f.kallsyms, &f.modules).unwrap();
        // Ten records and a half.
        w.write_stream(&f.stream[..10 * 24 + 12]).unwrap();
        let bytes = w.out.into_inner();
        let d = DataFile::parse(&bytes).unwrap();
        assert_eq!(d.stream, f.stream[..10 * 24]);
        assert_eq!(d.kallsyms, f.kallsyms);
        assert_eq!(d.modules, f.modules);
        assert_eq!((d.files.len(), d.stats, d.meta.len()), (0, None, 0));
        let cut = d.cut.unwrap();
        assert_eq!(cut.reason, "the stream was never finished");
        assert_eq!((cut.stream_dropped, cut.file_len), (12, bytes.len() as u64));
        assert_eq!(cut.at, bytes.len() as u64 - 12);
        assert!(
            cut.to_string()
                .contains("without the 12 bytes of a last record"),
            "{cut}"
        );
    }

    /// A file cut at every length: before the end of CONFIG an error
    /// inside the file, after it a file that says it is cut and keeps a
    /// prefix of the stream made of whole records.
    #[test]
    fn every_truncation_reads_what_it_kept() {
        let f = example();
        let bytes = f.to_bytes();
        let mut c = Vec::new();
        rprof_decode::encode_config(&f.config, &mut c);
        let config_end = 16 + 16 + c.len();
        let ends = record_ends();
        for n in 0..bytes.len() {
            match DataFile::parse(&bytes[..n]) {
                Err(e) => {
                    assert!(e.offset <= n as u64, "cut at {n}: {e} is past the end");
                    assert!(n < config_end, "cut at {n}, after CONFIG: {e}");
                }
                Ok(d) => {
                    assert!(n >= config_end, "cut at {n}: parsed without CONFIG");
                    let cut = d
                        .cut
                        .unwrap_or_else(|| panic!("cut at {n} parsed as complete"));
                    assert!(cut.at <= n as u64 && cut.file_len == n as u64, "{cut:?}");
                    assert!(f.stream.starts_with(&d.stream), "cut at {n}");
                    assert!(
                        ends.contains(&d.stream.len()),
                        "cut at {n}: {}",
                        d.stream.len()
                    );
                    assert_eq!(d.config, f.config);
                }
            }
        }
        let d = DataFile::parse(&bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(d.stream, f.stream);
        assert_eq!(d.meta, f.meta);
        assert_eq!(d.cut.unwrap().reason, "it ends inside a section header");
    }

    #[test]
    fn unknown_sections_are_not_inflated_and_inflation_is_bounded() {
        let mut b = DataFile::new(rprof_config::new()).to_bytes();
        let end = b.split_off(b.len() - 16);
        // Not gzip at all, flagged as gzip: skipped, never inflated.
        put_section(&mut b, 200, SECTION_GZIP, b"\x1f\x8bnot gzip at all").unwrap();
        b.extend_from_slice(&end);
        assert!(DataFile::parse(&b).is_ok());
        // Inflation stops at the limit.
        let zeros = gzip(&vec![0u8; 4096]).unwrap();
        assert_eq!(gunzip_limited(&zeros, 4096).unwrap().len(), 4096);
        let e = gunzip_limited(&zeros, 4095).unwrap_err();
        assert!(e.to_string().contains("more than 4095 bytes"), "{e}");
    }

    #[test]
    fn corrupted_files_never_panic() {
        let bytes = example().to_bytes();
        // Flip every byte in turn (some flips are harmless: stream bytes).
        let mut rejected = 0;
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            if DataFile::parse(&b).is_err() {
                rejected += 1;
            }
        }
        assert!(rejected > 100, "only {rejected} corruptions were noticed");
        // Garbage of many lengths, with and without the magic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..400 {
            let mut g: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            assert!(DataFile::parse(&g).is_err());
            if g.len() >= 16 {
                g[..8].copy_from_slice(MAGIC);
                g[8..12].copy_from_slice(&VERSION.to_le_bytes());
                g[12..16].copy_from_slice(&[0; 4]);
                let _ = DataFile::parse(&g);
            }
        }
    }

    #[test]
    fn specific_errors() {
        let bytes = example().to_bytes();
        let e = DataFile::parse(b"NOTRPROF\x01\0\0\0\0\0\0\0").unwrap_err();
        assert_eq!(e.offset, 0);
        let mut b = bytes.clone();
        b[8] = 9;
        let e = DataFile::parse(&b).unwrap_err();
        assert!(e.message.contains("version 9"), "{e}");
        // Bytes after END.
        let mut b = bytes.clone();
        b.push(0);
        let e = DataFile::parse(&b).unwrap_err();
        assert_eq!(e.offset, bytes.len() as u64, "{e}");
        // No STREAM section: a file with only header, CONFIG and END.
        let mut b = bytes[..16].to_vec();
        let mut c = Vec::new();
        rprof_decode::encode_config(&rprof_config::new(), &mut c);
        put_section(&mut b, section::CONFIG, 0, &c).unwrap();
        put_section(&mut b, 99, 0, b"future").unwrap();
        put_section_header(&mut b, section::END, 0, 0).unwrap();
        let e = DataFile::parse(&b).unwrap_err();
        assert!(e.message.contains("no STREAM"), "{e}");
        // A gzip bomb-ish or bad gzip payload.
        let mut b = bytes[..16].to_vec();
        put_section(&mut b, section::KALLSYMS, SECTION_GZIP, b"\x1f\x8bnot gzip").unwrap();
        let e = DataFile::parse(&b).unwrap_err();
        assert!(e.message.contains("gzip"), "{e}");
        assert_eq!(e.offset, 32);
    }

    #[test]
    fn error_messages_name_the_offset() {
        let e = FormatError {
            offset: 12,
            message: "x".into(),
        };
        assert_eq!(e.to_string(), "at byte 12: x");
    }
}

//! What has been uploaded to the session, and what to do with the next file: the upload state machine.
//!
//! [`Uploads`] is given files (by [`FileKey`], with a way to open them)
//! and decides: a file uploaded since the last RESET, or one that failed
//! for good, is not done again; otherwise it is opened, its table built
//! (cache or compile) and uploaded.  EEXIST is success (the session had
//! it).  ENOSPC or EPERM (the module's `unwind_kb`, the locked-memory
//! limit) say that a table of that size no longer fits: until a RESET
//! frees the session's tables, tables as large or larger are not offered
//! (room only shrinks until then), smaller ones still are; ENOTTY (a
//! module without tables) or EBUSY stop uploading for good.  Each of
//! those is said once, as a note for the caller to print.  The device,
//! the files and the compiler are a [`Backend`], faked in the tests.

use super::counts::Counts;
use super::maps::FileKey;
use std::collections::HashMap;
use std::time::Instant;

/// Why a file has no table in the session.  The `&'static str` names
/// are the keys of [`Counts::failures`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// A short name: `open`, `changed`, `read`, `not-elf`, `not-x86-64`,
    /// `no-cfi`, `refused`...
    pub reason: &'static str,
    /// Whether a RESET makes it worth another try (the file could not be
    /// opened now), or the file itself is the cause (never retried).
    pub retry_after_reset: bool,
}

impl Failure {
    /// A failure that is the file's own (its content).
    pub fn of_file(reason: &'static str) -> Failure {
        Failure {
            reason,
            retry_after_reset: false,
        }
    }

    /// A failure of the moment (the file could not be reached).
    pub fn of_moment(reason: &'static str) -> Failure {
        Failure {
            reason,
            retry_after_reset: true,
        }
    }
}

/// A table ready to upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The table in the module's format.
    pub bytes: Vec<u8>,
    /// It came from the cache (else it was compiled).
    pub cache_hit: bool,
}

/// The device, the files and the compiler.
pub trait Backend {
    /// Where a file is opened from (a process's mapping, a path).
    type Source;
    /// An open file.
    type File;
    /// Opens the file `source` names, checking it is `key`.
    fn open(&mut self, key: FileKey, source: &Self::Source) -> Result<Self::File, Failure>;
    /// Its table, from the cache or compiled.
    fn build(&mut self, file: &Self::File) -> Result<Built, Failure>;
    /// `RPROF_IOC_ADD_UNWIND`: `Err(errno)` (EEXIST is `Ok`).
    fn upload(&mut self, file: &Self::File, table: &[u8]) -> Result<(), i32>;
}

/// Where a file stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Done {
    Uploaded,
    Failed(Failure),
}

/// Why uploading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// ENOTTY or EBUSY: for good.
    Off,
}

/// The upload state of one session.
#[derive(Debug)]
pub struct Uploads<B: Backend> {
    backend: B,
    files: HashMap<FileKey, Done>,
    halt: Option<Halt>,
    /// The smallest table refused for want of room (ENOSPC, EPERM) since
    /// the last RESET: no larger one fits until then.
    no_room: Option<usize>,
    said_full: bool,
    /// The figures so far.
    pub counts: Counts,
    /// Lines to print once each (`rprof: unwind tables: ...`), taken by
    /// the caller.
    pub notes: Vec<String>,
}

impl<B: Backend> Uploads<B> {
    /// Nothing uploaded yet.
    pub fn new(backend: B) -> Self {
        Uploads {
            backend,
            files: HashMap::new(),
            halt: None,
            no_room: None,
            said_full: false,
            counts: Counts::default(),
            notes: Vec::new(),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Whether `key` has been dealt with (uploaded since the last RESET,
    /// or failed).
    pub fn known(&self, key: FileKey) -> bool {
        match self.files.get(&key) {
            None => false,
            // A file that could not be reached from one source (a COOKIE's
            // path, read in the wrong process's root) may be from another
            // (a process's own mapping): not known for good.
            Some(Done::Failed(f)) => !f.retry_after_reset,
            Some(Done::Uploaded) => true,
        }
    }

    /// Why uploading stopped, if it did.
    pub fn halted(&self) -> Option<Halt> {
        self.halt
    }

    /// Uploads the table of `key`, opened from `source`, unless it is
    /// known or uploading has stopped.  Returns whether the session has
    /// its table now.
    pub fn offer(&mut self, key: FileKey, source: &B::Source) -> bool {
        match self.files.get(&key) {
            Some(Done::Uploaded) => return true,
            Some(Done::Failed(f)) if !f.retry_after_reset => return false,
            // A failure of the moment: this source may reach it (each
            // source is offered once: the reader names a file once between
            // RESETs, a process is scanned once).
            Some(Done::Failed(_)) | None => {}
        }
        if self.halt.is_some() {
            return false;
        }
        let t0 = Instant::now();
        let result = self.one(key, source);
        self.counts.time += t0.elapsed();
        match result {
            Ok(true) => {
                self.files.insert(key, Done::Uploaded);
                true
            }
            // Halted: the file is not marked, a RESET may let it in.
            Ok(false) => false,
            Err(f) => {
                self.counts.fail(f.reason);
                self.files.insert(key, Done::Failed(f));
                false
            }
        }
    }

    /// Open, build, upload: `Ok(false)` if uploading has stopped.
    fn one(&mut self, key: FileKey, source: &B::Source) -> Result<bool, Failure> {
        let file = self.backend.open(key, source)?;
        let built = self.backend.build(&file)?;
        if built.cache_hit {
            self.counts.cache_hits += 1;
        } else {
            self.counts.compiled += 1;
        }
        let size = built.bytes.len();
        if self.no_room.is_some_and(|n| size >= n) {
            // Would be refused: the file waits for a RESET, unmarked.
            self.counts.fail("no-space");
            return Ok(false);
        }
        match self.backend.upload(&file, &built.bytes) {
            Ok(()) => {
                self.counts.uploaded += 1;
                self.counts.bytes += built.bytes.len() as u64;
                Ok(true)
            }
            Err(errno @ (libc::ENOSPC | libc::EPERM)) => {
                self.no_room = Some(self.no_room.map_or(size, |n| n.min(size)));
                if !self.said_full {
                    self.said_full = true;
                    let why = if errno == libc::ENOSPC {
                        "the module's unwind_kb is used up (ENOSPC)"
                    } else {
                        "they pass the locked-memory limit (EPERM; ulimit -l)"
                    };
                    self.notes.push(format!(
                        "unwind tables: not all uploaded: {why}; programs whose table does \
                         not fit are walked by frame pointers"
                    ));
                }
                self.counts.fail("no-space");
                Ok(false)
            }
            Err(errno @ (libc::ENOTTY | libc::EBUSY)) => {
                self.halt = Some(Halt::Off);
                self.notes.push(if errno == libc::ENOTTY {
                    "unwind tables: the module takes none (ENOTTY: older than these tools); \
                     call chains by frame pointers"
                        .to_string()
                } else {
                    "unwind tables: the session belongs to another file (EBUSY); none uploaded"
                        .to_string()
                });
                Ok(false)
            }
            Err(libc::EINVAL) => Err(Failure::of_file("refused")),
            Err(_) => Err(Failure::of_moment("upload")),
        }
    }

    /// A RESET record: the module dropped the session's tables.  What was
    /// uploaded is forgotten (and uploaded again when named again), as
    /// are failures of the moment; a full session has room again.
    /// Failures of the file's own stay.
    pub fn reset(&mut self) {
        self.files.retain(|_, d| match d {
            Done::Uploaded => false,
            Done::Failed(f) => !f.retry_after_reset,
        });
        self.no_room = None;
        self.counts.resets += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake: files are names; `fail_build` and `fail_open` name the
    /// ones that fail; the device answers from `answers` (then `Ok`).
    #[derive(Debug, Default)]
    struct Fake {
        opens: Vec<&'static str>,
        builds: Vec<&'static str>,
        uploads: Vec<&'static str>,
        fail_open: Vec<&'static str>,
        fail_build: Vec<&'static str>,
        answers: Vec<i32>,
        cached: Vec<&'static str>,
        /// Table sizes other than 64 bytes.
        sizes: Vec<(&'static str, usize)>,
    }

    impl Backend for Fake {
        type Source = &'static str;
        type File = &'static str;
        fn open(&mut self, _: FileKey, s: &&'static str) -> Result<&'static str, Failure> {
            self.opens.push(s);
            if self.fail_open.contains(s) {
                return Err(Failure::of_moment("open"));
            }
            Ok(s)
        }
        fn build(&mut self, f: &&'static str) -> Result<Built, Failure> {
            self.builds.push(f);
            if self.fail_build.contains(f) {
                return Err(Failure::of_file("not-elf"));
            }
            let size = self
                .sizes
                .iter()
                .find(|(n, _)| n == f)
                .map_or(64, |&(_, s)| s);
            Ok(Built {
                bytes: vec![0; size],
                cache_hit: self.cached.contains(f),
            })
        }
        fn upload(&mut self, f: &&'static str, _: &[u8]) -> Result<(), i32> {
            self.uploads.push(f);
            if self.answers.is_empty() {
                Ok(())
            } else {
                match self.answers.remove(0) {
                    0 => Ok(()),
                    e => Err(e),
                }
            }
        }
    }

    fn key(ino: u64) -> FileKey {
        FileKey { dev: 0x801, ino }
    }

    #[test]
    fn once_per_inode() {
        let mut u = Uploads::new(Fake {
            cached: vec!["/lib/libc.so.6"],
            ..Fake::default()
        });
        assert!(u.offer(key(1), &"/bin/prog"));
        assert!(u.offer(key(2), &"/lib/libc.so.6"));
        // The same inode under another name (a hard link, another
        // process's mapping): nothing more.
        assert!(u.offer(key(1), &"/proc/7/root/bin/prog"));
        assert!(u.known(key(1)));
        assert_eq!(u.backend().uploads, ["/bin/prog", "/lib/libc.so.6"]);
        let c = &u.counts;
        assert_eq!(
            (c.uploaded, c.compiled, c.cache_hits, c.bytes),
            (2, 1, 1, 128)
        );
        assert!(u.notes.is_empty());
    }

    #[test]
    fn a_failed_compile_is_not_retried_even_after_reset() {
        let mut u = Uploads::new(Fake {
            fail_build: vec!["/bin/bad"],
            ..Fake::default()
        });
        assert!(!u.offer(key(1), &"/bin/bad"));
        assert!(!u.offer(key(1), &"/bin/bad"));
        u.reset();
        assert!(!u.offer(key(1), &"/bin/bad"));
        assert_eq!(u.backend().builds, ["/bin/bad"]);
        assert_eq!(u.counts.failures.get("not-elf"), Some(&1));
        assert_eq!(u.counts.uploaded, 0);
    }

    /// A file not reached from one source (a COOKIE's path read in the
    /// wrong process's root) is not known for good: another source (a
    /// process's own mapping) gets it; a RESET forgets the failure too.
    #[test]
    fn an_open_failure_leaves_the_file_to_another_source() {
        let mut u = Uploads::new(Fake {
            fail_open: vec!["/gone"],
            ..Fake::default()
        });
        assert!(!u.offer(key(1), &"/gone"));
        assert!(!u.known(key(1)));
        assert!(u.offer(key(1), &"/here"));
        assert!(u.known(key(1)));
        assert_eq!(u.backend().opens.len(), 2);
        assert_eq!(u.counts.failures.get("open"), Some(&1));
        assert_eq!(u.counts.uploaded, 1);
        assert!(!u.offer(key(2), &"/gone"));
        u.reset();
        assert!(!u.offer(key(2), &"/gone"));
        assert_eq!(u.counts.failures.get("open"), Some(&3));
    }

    #[test]
    fn eexist_is_done() {
        // The device wrapper turns EEXIST into Ok; a refusal (EINVAL) is
        // the file's.
        let mut u = Uploads::new(Fake {
            answers: vec![libc::EINVAL],
            ..Fake::default()
        });
        assert!(!u.offer(key(1), &"/bin/odd"));
        assert!(!u.offer(key(1), &"/bin/odd"));
        assert!(u.offer(key(2), &"/bin/fine"));
        assert_eq!(u.backend().uploads, ["/bin/odd", "/bin/fine"]);
        assert_eq!(u.counts.failures.get("refused"), Some(&1));
    }

    #[test]
    fn enospc_keeps_out_tables_as_large_until_reset_and_is_said_once() {
        let mut u = Uploads::new(Fake {
            answers: vec![0, libc::ENOSPC, 0, 0, 0],
            sizes: vec![("/big", 4096), ("/bigger", 8192), ("/b2", 4096)],
            ..Fake::default()
        });
        assert!(u.offer(key(1), &"/a"));
        assert!(!u.offer(key(2), &"/big"));
        assert_eq!(u.halted(), None, "one table too large stops no other");
        assert!(!u.known(key(2)), "a file refused for space is not marked");
        // As large or larger: not offered to the module (it would refuse).
        assert!(!u.offer(key(3), &"/bigger"));
        assert!(!u.offer(key(4), &"/b2"));
        // Smaller: still uploaded.
        assert!(u.offer(key(5), &"/small"));
        assert_eq!(u.backend().uploads, ["/a", "/big", "/small"]);
        assert_eq!(u.notes.len(), 1);
        assert!(u.notes[0].contains("ENOSPC"), "{:?}", u.notes);
        // A RESET frees the tables: the large ones go in again.
        u.reset();
        assert!(u.offer(key(2), &"/big"));
        assert!(u.offer(key(3), &"/bigger"));
        assert_eq!(u.notes.len(), 1, "said once: {:?}", u.notes);
        assert_eq!(u.counts.uploaded, 4);
        assert_eq!(u.counts.failures.get("no-space"), Some(&3));
        assert_eq!(u.counts.resets, 1);
    }

    #[test]
    fn eperm_is_room_too() {
        let mut u = Uploads::new(Fake {
            answers: vec![libc::EPERM],
            sizes: vec![("/big", 4096)],
            ..Fake::default()
        });
        assert!(!u.offer(key(1), &"/big"));
        assert!(u.offer(key(2), &"/small"));
        assert!(u.notes[0].contains("EPERM"), "{:?}", u.notes);
    }

    #[test]
    fn reset_forgets_what_was_uploaded() {
        let mut u = Uploads::new(Fake::default());
        assert!(u.offer(key(1), &"/a"));
        u.reset();
        assert!(!u.known(key(1)));
        assert!(u.offer(key(1), &"/a"));
        assert_eq!(u.backend().uploads, ["/a", "/a"]);
    }

    #[test]
    fn enotty_turns_tables_off_for_good() {
        let mut u = Uploads::new(Fake {
            answers: vec![libc::ENOTTY],
            ..Fake::default()
        });
        assert!(!u.offer(key(1), &"/a"));
        assert_eq!(u.halted(), Some(Halt::Off));
        u.reset();
        assert!(!u.offer(key(2), &"/b"));
        assert_eq!(u.backend().uploads, ["/a"]);
        assert_eq!(u.notes.len(), 1);
        assert!(u.notes[0].contains("ENOTTY"), "{:?}", u.notes);
    }
}

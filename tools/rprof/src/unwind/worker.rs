//! The uploader's thread, and [`Watch`], the reader's side of it: COOKIE and RESET records become jobs.
//!
//! The reader never waits for a compile: it hands the worker a job per
//! file it has not named before (a channel send) and goes on.  The worker
//! first lists what runs in the session's scope now (every executable
//! file mapping, a backlog), then takes the reader's jobs before each
//! file of that backlog: a file the stream names has samples already.
//! A COOKIE from a process the worker has not looked at yet has it read
//! that process's maps too, so that its libraries have tables before
//! their first samples.

use super::counts::{status_path, write_status, Counts};
use super::files::{DeviceBackend, Source};
use super::maps::{exec_files, key_of, processes, FileKey, Scope};
use super::state::Uploads;
use crate::{Device, Error};
use rprof_decode::Record;
use rprof_unwind::cache::Cache;
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the reader asks of the worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// A COOKIE record named this file.
    Cookie {
        /// The file.
        key: FileKey,
        /// Its path in the record.
        path: String,
        /// The process of the TASK record before it, if any.
        pid: Option<i32>,
    },
    /// A RESET record: the module dropped the session's tables.
    Reset,
    /// These files now, before anything else; then `ack` (the program
    /// `record` is about to start and what it loads, `Worker::preload`).
    Preload {
        /// The files, by path in our own root.
        paths: Vec<PathBuf>,
        /// Told when they are done.
        ack: Ack,
    },
}

/// The answer channel of [`Job::Preload`]; jobs compare equal whatever
/// their channels (tests compare the jobs a [`Watch`] sends).
#[derive(Debug, Clone)]
pub struct Ack(Sender<()>);

impl PartialEq for Ack {
    fn eq(&self, _: &Ack) -> bool {
        true
    }
}

impl Eq for Ack {}

/// The reader's side: turns records into [`Job`]s, each file once
/// between RESETs.
#[derive(Debug)]
pub struct Watch {
    tx: Sender<Job>,
    sent: HashSet<FileKey>,
    pid: Option<i32>,
}

impl Watch {
    /// A watch whose jobs go to `tx` (normally [`Worker::watch`]).
    pub fn new(tx: Sender<Job>) -> Watch {
        Watch {
            tx,
            sent: HashSet::new(),
            pid: None,
        }
    }

    /// A watch for a new session of the same worker: it has sent
    /// nothing yet, and its first job tells the worker that the session's
    /// tables are gone (a daemon's renewal: SET_CONFIG dropped them).
    pub fn for_new_session(&self) -> Watch {
        let mut w = Watch::new(self.tx.clone());
        w.reset();
        w
    }

    /// A TASK record: the following records are of process `pid`.
    pub fn task(&mut self, pid: u32) {
        self.pid = i32::try_from(pid).ok().filter(|&p| p > 0);
    }

    /// A COOKIE record.
    pub fn cookie(&mut self, dev: u64, ino: u64, path: &str) {
        let key = FileKey { dev, ino };
        if self.sent.insert(key) {
            // A worker that has ended takes nothing more; that is all.
            let _ = self.tx.send(Job::Cookie {
                key,
                path: path.to_string(),
                pid: self.pid,
            });
        }
    }

    /// A RESET record.
    pub fn reset(&mut self) {
        self.sent.clear();
        let _ = self.tx.send(Job::Reset);
    }

    /// Any decoded record (those that are not TASK, COOKIE or RESET are
    /// nothing to it).
    pub fn record(&mut self, r: &Record) {
        match r {
            Record::Task { pid, .. } => self.task(*pid),
            Record::Cookie { dev, ino, path, .. } => self.cookie(*dev, *ino, path),
            Record::Reset { .. } => self.reset(),
            _ => {}
        }
    }
}

/// What the worker shares with its owner.
#[derive(Debug, Default)]
struct Shared {
    counts: Counts,
    notes: Vec<String>,
    /// Files of the backlog and jobs not done yet.
    pending: usize,
}

/// The uploader's thread.
#[derive(Debug)]
pub struct Worker {
    tx: Sender<Job>,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    done: Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

/// How often the status file is rewritten, at most.
const STATUS_EVERY: Duration = Duration::from_secs(1);

impl Worker {
    /// Starts the uploader of the session of `dev` (a descriptor of its
    /// file, see [`Device::try_clone`]) that samples `scope`, with tables
    /// kept in `cache` if there is one.
    pub fn spawn(dev: Device, cache: Option<Cache>, scope: Scope) -> Result<Worker, Error> {
        let (tx, rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared::default()));
        let status = cache.as_ref().map(|c| status_path(c.dir()));
        let mut run = Run {
            uploads: Uploads::new(DeviceBackend::new(dev, cache)),
            backlog: VecDeque::new(),
            scanned: HashSet::new(),
            own_exe: std::fs::metadata("/proc/self/exe").ok().map(|m| key_of(&m)),
            stop: stop.clone(),
            shared: shared.clone(),
            status,
            last_status: None,
        };
        let thread = std::thread::Builder::new()
            .name("rprof-unwind".into())
            .spawn(move || {
                run.main(scope, &rx);
                let _ = done_tx.send(());
            })
            .map_err(|e| Error::io("starting the unwind-table thread", e))?;
        Ok(Worker {
            tx,
            stop,
            shared,
            done,
            thread: Some(thread),
        })
    }

    /// A [`Watch`] for the reader.
    pub fn watch(&self) -> Watch {
        Watch::new(self.tx.clone())
    }

    /// Uploads the tables of `paths` before any other work and waits for
    /// them, at most `wait`: whether they were done in time.
    pub fn preload(&self, paths: Vec<PathBuf>, wait: Duration) -> bool {
        let (ack, done) = mpsc::channel();
        self.tx
            .send(Job::Preload {
                paths,
                ack: Ack(ack),
            })
            .is_ok()
            && done.recv_timeout(wait).is_ok()
    }

    /// The lines to print once each since the last call.
    pub fn take_notes(&self) -> Vec<String> {
        match self.shared.lock() {
            Ok(mut s) => std::mem::take(&mut s.notes),
            Err(_) => Vec::new(),
        }
    }

    /// Stops the worker (the file at hand is finished, what waits is
    /// dropped) and waits for it at most `wait`.  Returns the figures,
    /// the notes not taken yet, and how many files were still to do.
    pub fn finish(mut self, wait: Duration) -> (Counts, Vec<String>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes a worker waiting for a job.
        let _ = self.tx.send(Job::Reset);
        if self.done.recv_timeout(wait).is_ok() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
        // A worker still compiling is left to end with the process.
        match self.shared.lock() {
            Ok(mut s) => (s.counts.clone(), std::mem::take(&mut s.notes), s.pending),
            Err(_) => (Counts::default(), Vec::new(), 0),
        }
    }
}

/// The worker's state.
struct Run {
    uploads: Uploads<DeviceBackend>,
    /// Files to do when no job waits.
    backlog: VecDeque<(FileKey, Source)>,
    /// Processes whose maps were read since the last RESET.
    scanned: HashSet<i32>,
    /// rprof's own executable: not a program to profile.
    own_exe: Option<FileKey>,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    status: Option<PathBuf>,
    last_status: Option<Instant>,
}

impl Run {
    fn main(&mut self, scope: Scope, rx: &Receiver<Job>) {
        let me = std::process::id() as i32;
        for pid in processes(Path::new("/proc"), scope) {
            if pid != me {
                self.scan(pid, false);
            }
        }
        self.publish(false);
        while !self.stop.load(Ordering::Relaxed) {
            let job = if self.backlog.is_empty() {
                match rx.recv_timeout(STATUS_EVERY) {
                    Ok(job) => Some(job),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match rx.try_recv() {
                    Ok(job) => Some(job),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            };
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            match job {
                Some(Job::Cookie { key, path, pid }) => self.cookie(key, path, pid),
                Some(Job::Reset) => {
                    self.uploads.reset();
                    self.scanned.clear();
                }
                Some(Job::Preload { paths, ack }) => {
                    for path in paths {
                        self.path(path);
                    }
                    let _ = ack.0.send(());
                }
                None => {
                    if let Some((key, source)) = self.backlog.pop_front() {
                        self.uploads.offer(key, &source);
                    }
                }
            }
            self.publish(false);
        }
        self.publish(true);
    }

    /// Reads the maps of `pid` and queues its files: at the front (before
    /// the start's backlog) if `first`.
    fn scan(&mut self, pid: i32, first: bool) {
        self.scanned.insert(pid);
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        let files = exec_files(&maps)
            .into_iter()
            .filter(|m| Some(m.key) != self.own_exe && !self.uploads.known(m.key))
            .map(|m| {
                let source = Source::Mapping {
                    pid,
                    range: m.range,
                    path: m.path,
                };
                (m.key, source)
            });
        if first {
            for f in files.collect::<Vec<_>>().into_iter().rev() {
                self.backlog.push_front(f);
            }
        } else {
            self.backlog.extend(files);
        }
    }

    /// A COOKIE of `key`: its process's files first, else its path.
    fn cookie(&mut self, key: FileKey, path: String, pid: Option<i32>) {
        if self.uploads.known(key) || Some(key) == self.own_exe {
            return;
        }
        if let Some(pid) = pid.filter(|p| !self.scanned.contains(p)) {
            self.scan(pid, true);
        }
        // This file now, from the mapping just read if there is one.
        let mapped = self.backlog.iter().position(|(k, _)| *k == key);
        let source = match mapped.and_then(|i| self.backlog.remove(i)) {
            Some((_, source)) => source,
            None => Source::Path { pid, path },
        };
        self.uploads.offer(key, &source);
    }

    /// The file at `path` (in our root), unless known.
    fn path(&mut self, path: PathBuf) {
        let Ok(meta) = std::fs::metadata(&path) else {
            return;
        };
        let key = key_of(&meta);
        if self.uploads.known(key) || Some(key) == self.own_exe {
            return;
        }
        let source = Source::Path {
            pid: None,
            path: path.to_string_lossy().into_owned(),
        };
        self.uploads.offer(key, &source);
    }

    /// Hands the figures and notes to the owner; writes the status file
    /// at most every [`STATUS_EVERY`] (and at the end).
    fn publish(&mut self, last: bool) {
        let counts = self.uploads.counts.clone();
        if let Ok(mut s) = self.shared.lock() {
            s.counts = counts.clone();
            s.notes.append(&mut self.uploads.notes);
            s.pending = self.backlog.len();
        }
        let due = self.last_status.is_none_or(|t| t.elapsed() >= STATUS_EVERY);
        if let (Some(path), true) = (&self.status, last || due) {
            // The status is for `rprof stat`; a cache directory that
            // cannot be written loses it, nothing else.
            let _ = write_status(path, std::process::id(), &counts);
            self.last_status = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole worker on this test process, with a plain file as the
    /// device (no module on the host): the first table is built and
    /// refused with ENOTTY, which turns tables off with one note; the
    /// status file for rprof stat is written.
    #[test]
    fn worker_on_an_old_module() {
        let dir = std::env::temp_dir().join(format!("rprof-worker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake_dev = dir.join("dev");
        std::fs::write(&fake_dev, b"").unwrap();
        let dev = Device::open(&fake_dev).unwrap();
        let cache = Cache::new(dir.join("cache"));
        let me = std::process::id() as i32;
        let scope = Scope::Pid {
            pid: me,
            descendants: false,
        };
        let worker = Worker::spawn(dev, Some(cache.clone()), scope).unwrap();
        let mut watch = worker.watch();
        watch.task(me as u32);
        watch.cookie(1, 2, "/nonexistent/file");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut notes = Vec::new();
        while notes.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            notes = worker.take_notes();
        }
        let (counts, more, _) = worker.finish(Duration::from_secs(60));
        notes.extend(more);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("ENOTTY"), "{notes:?}");
        assert_eq!(counts.uploaded, 0);
        assert_eq!(counts.compiled + counts.cache_hits, 1, "{counts:?}");
        let (pid, status) =
            super::super::counts::read_status(&status_path(cache.dir())).expect("the status file");
        assert_eq!(
            (pid, status.compiled),
            (std::process::id(), counts.compiled)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A preload is answered once its files were tried: /bin/ls and what
    /// it loads, compiled (no cache) and refused by the plain file that
    /// stands in for the device (ENOTTY: tables off after the first).
    #[test]
    fn preload_is_answered() {
        let dir = std::env::temp_dir().join(format!("rprof-preload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake_dev = dir.join("dev");
        std::fs::write(&fake_dev, b"").unwrap();
        let scope = Scope::Pid {
            pid: i32::MAX,
            descendants: false,
        };
        let w = Worker::spawn(Device::open(&fake_dev).unwrap(), None, scope).unwrap();
        let files = rprof_unwind::deps::closure(Path::new("/bin/ls"), None, 16, &mut |p| {
            std::fs::read(p).ok()
        });
        assert!(files.len() >= 2, "{files:?}");
        assert!(w.preload(files, Duration::from_secs(60)), "no answer");
        let (counts, _, _) = w.finish(Duration::from_secs(10));
        assert_eq!(counts.uploaded, 0);
        assert!(counts.compiled >= 1, "{counts:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn watch_sends_each_file_once_between_resets() {
        let (tx, rx) = mpsc::channel();
        let mut w = Watch::new(tx);
        w.record(&Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: 0x801,
            ino: 5,
            path: "/bin/a".into(),
        });
        w.task(42);
        w.cookie(0x801, 6, "/lib/b.so");
        w.cookie(0x801, 5, "/bin/a");
        w.record(&Record::Reset {
            time_ns: 1,
            next_cookie: 20,
            next_stack: 1,
        });
        w.task(0);
        w.cookie(0x801, 5, "/bin/a");
        let key = |ino| FileKey { dev: 0x801, ino };
        let jobs: Vec<Job> = rx.try_iter().collect();
        assert_eq!(
            jobs,
            [
                Job::Cookie {
                    key: key(5),
                    path: "/bin/a".into(),
                    pid: None
                },
                Job::Cookie {
                    key: key(6),
                    path: "/lib/b.so".into(),
                    pid: Some(42)
                },
                Job::Reset,
                Job::Cookie {
                    key: key(5),
                    path: "/bin/a".into(),
                    pid: None
                },
            ]
        );
    }
}

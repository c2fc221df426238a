//! The state of a compact stream: who and where each sample is.
//!
//! A SAMPLE record carries only its time, offset and period.  Its CPU and
//! task come from the last TASK record before it, and the cookie its offset
//! is relative to from the last SWITCH record; both hold until replaced
//! (LOST, START, STOP and THROTTLE records change neither).  COOKIE records
//! name file cookies and MODULE records name kernel modules' cookies.
//! [`Resolver`] walks the records in order, keeps that context and the
//! cookie names, and turns every sample into a [`ResolvedSample`].
//!
//! # Examples
//!
//! ```
//! use rprof_decode::{CookieName, Record, Resolver};
//!
//! let records = [
//!     Record::Cookie { cookie: 17, flags: 0, dev: 1, ino: 2, path: "/bin/busybox".into() },
//!     Record::Task { cpu: 1, pid: 7, tid: 7, exe_cookie: 17, comm: "sh".into() },
//!     Record::Switch { cookie: 17 },
//!     Record::Sample { flags: 1, time_ns: 5, offset: 0x1234, period: 1000, stack: None },
//! ];
//! let mut resolver = Resolver::new();
//! let samples: Vec<_> = records.iter().filter_map(|r| resolver.feed(r)).collect();
//! assert_eq!(samples.len(), 1);
//! let s = &samples[0];
//! assert_eq!((s.cpu(), s.pid(), s.comm()), (Some(1), Some(7), Some("sh")));
//! assert!(s.user);
//! assert_eq!((s.cookie, s.offset), (17, 0x1234));
//! assert_eq!(resolver.path(17), Some("/bin/busybox"));
//! assert_eq!(resolver.label(s.cookie), "/bin/busybox");
//! ```

use crate::Record;
use rprof_abi::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The context of a TASK record: the CPU and task of the samples after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskContext {
    /// The sampling CPU.
    pub cpu: u32,
    /// Thread group id (0: idle).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The task's executable, `RPROF_COOKIE_NONE` if none.
    pub exe_cookie: u64,
    /// The task's `comm`.
    pub comm: String,
}

/// What a cookie names: a file (COOKIE record) or a kernel module (MODULE
/// record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CookieName {
    /// A file, named by a COOKIE record.
    File {
        /// Its path, as the module's `d_path()` gave it.
        path: String,
        /// `RPROF_COOKIE_DELETED`, `_TRUNCATED`, `_NO_PATH`.
        flags: u16,
        /// `new_encode_dev()` of its device.
        dev: u64,
        /// Its inode number.
        ino: u64,
    },
    /// A kernel module, named by a MODULE record.
    Module {
        /// The module's name.
        name: String,
        /// Start of its text.
        base: u64,
        /// Bytes of text.
        size: u64,
        /// The region is the module's init text (`RPROF_MODULE_INIT`).
        init: bool,
        /// Whether a MODULE record with `RPROF_MODULE_UNLOAD` came since.
        unloaded: bool,
    },
}

impl CookieName {
    /// What a COOKIE or MODULE record names: its cookie, and the file or
    /// module.  `None` for every other record.
    pub fn of_record(record: &Record) -> Option<(u64, CookieName)> {
        match record {
            Record::Cookie {
                cookie,
                flags,
                dev,
                ino,
                path,
            } => Some((
                *cookie,
                CookieName::File {
                    path: path.clone(),
                    flags: *flags,
                    dev: *dev,
                    ino: *ino,
                },
            )),
            Record::Module {
                cookie,
                base,
                size,
                name,
                ..
            } => Some((
                *cookie,
                CookieName::Module {
                    name: name.clone(),
                    base: *base,
                    size: *size,
                    init: record.is_module_init(),
                    unloaded: record.is_module_unload(),
                },
            )),
            _ => None,
        }
    }

    /// The file's path, or the module's name.
    pub fn label(&self) -> &str {
        match self {
            CookieName::File { path, .. } => path,
            CookieName::Module { name, .. } => name,
        }
    }
}

/// A sample with its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSample {
    /// The last TASK record before the sample; `None` if there was none (a
    /// stream that does not start with its session).
    pub task: Option<Arc<TaskContext>>,
    /// Taken in user mode (`RPROF_SAMPLE_USER`).
    pub user: bool,
    /// Index into the session's `rprof_config.events`.
    pub event: u32,
    /// The cookie of the last SWITCH record (`RPROF_COOKIE_NONE` if none).
    pub cookie: u64,
    /// Relative to `cookie`: a file offset, an offset from a module's base,
    /// or for `RPROF_COOKIE_KERNEL` and `RPROF_COOKIE_ANON` the ip.
    pub offset: u64,
    /// Events this sample stands for.
    pub period: u64,
    /// CLOCK_MONOTONIC when the sample was taken, in ns.
    pub time_ns: u64,
    /// The sample's call chain, if it named one the stream had (a STACK
    /// record before it).
    pub stack: Option<Arc<Stack>>,
}

/// A call chain of the stream (a STACK record).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stack {
    /// `RPROF_STACK_*`: why each side ended.
    pub flags: u16,
    /// How many of `frames` are kernel frames (they come first).
    pub nr_kernel: usize,
    /// (cookie, offset) of each frame, innermost first.  Every frame is a
    /// return address except the first user frame of a sample taken in
    /// kernel mode (the user ip at kernel entry).
    pub frames: Vec<(u64, u64)>,
}

impl Stack {
    /// Whether frame `i` is a return address (symbolize `offset - 1`, the
    /// call) for a sample taken in user mode (`user`) or not.
    pub fn is_return_address(&self, i: usize, user: bool) -> bool {
        user || i != self.nr_kernel
    }
}

impl ResolvedSample {
    /// The sampling CPU, if a TASK record said.
    pub fn cpu(&self) -> Option<u32> {
        self.task.as_ref().map(|t| t.cpu)
    }

    /// The thread group id, if a TASK record said.
    pub fn pid(&self) -> Option<u32> {
        self.task.as_ref().map(|t| t.pid)
    }

    /// The thread id, if a TASK record said.
    pub fn tid(&self) -> Option<u32> {
        self.task.as_ref().map(|t| t.tid)
    }

    /// The task's `comm`, if a TASK record said.
    pub fn comm(&self) -> Option<&str> {
        self.task.as_ref().map(|t| t.comm.as_str())
    }
}

/// The stream state: the current TASK and cookie, and the cookie names.
///
/// Feed it every record in stream order with [`Resolver::feed`].
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    task: Option<Arc<TaskContext>>,
    cookie: u64,
    names: BTreeMap<u64, CookieName>,
    samples: u64,
    samples_without_task: u64,
    samples_unnamed_cookie: u64,
    stacks: HashMap<u64, Arc<Stack>>,
    samples_unknown_stack: u64,
    /// The last RESET's `next_cookie` (0 before any): names below it are
    /// retired, kept only while counts need them ([`Self::forget_retired`]).
    retired_below: u64,
}

impl Resolver {
    /// A resolver at the start of a stream: no task, cookie NONE, no names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next record of the stream; returns the sample it is, with
    /// its context, or `None` for every other record.
    pub fn feed(&mut self, record: &Record) -> Option<ResolvedSample> {
        match record {
            Record::Sample {
                flags,
                time_ns,
                offset,
                period,
                stack,
            } => {
                self.samples += 1;
                let stack = stack.and_then(|id| {
                    let s = self.stacks.get(&id).cloned();
                    if s.is_none() {
                        self.samples_unknown_stack += 1;
                    }
                    s
                });
                if self.task.is_none() {
                    self.samples_without_task += 1;
                }
                if u64::from(RPROF_COOKIE_FIRST) <= self.cookie
                    && !self.names.contains_key(&self.cookie)
                {
                    self.samples_unnamed_cookie += 1;
                }
                return Some(ResolvedSample {
                    task: self.task.clone(),
                    user: record.is_user_sample(),
                    event: sample_event(*flags),
                    cookie: self.cookie,
                    offset: *offset,
                    period: *period,
                    time_ns: *time_ns,
                    stack,
                });
            }
            Record::Stack {
                id,
                flags,
                nr_kernel,
                frames,
            } => {
                self.stacks.insert(
                    *id,
                    Arc::new(Stack {
                        flags: *flags,
                        nr_kernel: usize::from(*nr_kernel).min(frames.len()),
                        frames: frames.clone(),
                    }),
                );
            }
            Record::Task {
                cpu,
                pid,
                tid,
                exe_cookie,
                comm,
            } => {
                let same = self.task.as_deref().is_some_and(|t| {
                    t.cpu == *cpu
                        && t.pid == *pid
                        && t.tid == *tid
                        && t.exe_cookie == *exe_cookie
                        && t.comm == *comm
                });
                if !same {
                    self.task = Some(Arc::new(TaskContext {
                        cpu: *cpu,
                        pid: *pid,
                        tid: *tid,
                        exe_cookie: *exe_cookie,
                        comm: comm.clone(),
                    }));
                }
            }
            Record::Switch { cookie } => self.cookie = *cookie,
            Record::Reset {
                next_cookie,
                next_stack,
                ..
            } => {
                // No later record names these stacks (samples already
                // resolved hold theirs), nor these cookies: their names
                // stay until the counts that hold them are written.
                self.stacks.retain(|id, _| id >= next_stack);
                self.retired_below = self.retired_below.max(*next_cookie);
                // The module writes TASK and SWITCH again before the next
                // sample: a sample without them is counted as such.
                self.task = None;
                self.cookie = u64::from(RPROF_COOKIE_NONE);
            }
            Record::Cookie { .. } | Record::Module { .. } => {
                if let Some((cookie, name)) = CookieName::of_record(record) {
                    self.names.insert(cookie, name);
                }
            }
            Record::Lost { .. }
            | Record::Start { .. }
            | Record::Stop { .. }
            | Record::Throttle { .. }
            | Record::Unthrottle { .. }
            | Record::Unknown { .. } => {}
        }
        None
    }

    /// The context of the last TASK record.
    pub fn task(&self) -> Option<&TaskContext> {
        self.task.as_deref()
    }

    /// The cookie of the last SWITCH record (`RPROF_COOKIE_NONE` before
    /// any).
    pub fn current_cookie(&self) -> u64 {
        self.cookie
    }

    /// Every cookie named so far: files and modules (retired ones
    /// included, until [`Self::forget_retired`]).
    pub fn names(&self) -> &BTreeMap<u64, CookieName> {
        &self.names
    }

    /// How many cookies were named since the last RESET record (all of
    /// them without one): what the module's cookie table holds.
    pub fn names_since_reset(&self) -> usize {
        self.names.range(self.retired_below..).count()
    }

    /// Whether names of cookies a RESET retired are still kept.
    pub fn has_retired(&self) -> bool {
        self.names
            .range(..self.retired_below)
            .any(|(c, _)| *c >= u64::from(RPROF_COOKIE_FIRST))
    }

    /// Forgets the names of the cookies a RESET record retired, except
    /// those `keep` says counts still need.
    pub fn forget_retired(&mut self, keep: impl Fn(u64) -> bool) {
        let first = u64::from(RPROF_COOKIE_FIRST);
        let retired: Vec<u64> = self
            .names
            .range(first..self.retired_below.max(first))
            .map(|(c, _)| *c)
            .filter(|c| !keep(*c))
            .collect();
        for c in retired {
            self.names.remove(&c);
        }
    }

    /// A resolver that knows only the names of this one (no task, no
    /// stacks, no counts): all that symbolizing counted samples needs, as
    /// their keys hold their stacks already.  Bounded by the session's
    /// cookie table, unlike the stacks.
    pub fn names_only(&self) -> Resolver {
        Resolver {
            names: self.names.clone(),
            ..Resolver::default()
        }
    }

    /// What `cookie` names, if a record named it.
    pub fn name(&self, cookie: u64) -> Option<&CookieName> {
        self.names.get(&cookie)
    }

    /// The path of file cookie `cookie`, if a COOKIE record named it.
    pub fn path(&self, cookie: u64) -> Option<&str> {
        match self.names.get(&cookie) {
            Some(CookieName::File { path, .. }) => Some(path),
            _ => None,
        }
    }

    /// A printable name of `cookie`: `[none]`, `[kernel]`, `[anon]`, a
    /// file's path, `[module NAME]` (`[module NAME init]` for its init
    /// text), or `[cookie N]` for one never named.
    pub fn label(&self, cookie: u64) -> String {
        match (u32::try_from(cookie), self.names.get(&cookie)) {
            (_, Some(CookieName::File { path, .. })) => path.clone(),
            (_, Some(CookieName::Module { name, init, .. })) => {
                format!("[module {name}{}]", if *init { " init" } else { "" })
            }
            (Ok(RPROF_COOKIE_NONE), None) => "[none]".into(),
            (Ok(RPROF_COOKIE_KERNEL), None) => "[kernel]".into(),
            (Ok(RPROF_COOKIE_ANON), None) => "[anon]".into(),
            _ => format!("[cookie {cookie}]"),
        }
    }

    /// Samples fed so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Samples that came before any TASK record.
    pub fn samples_without_task(&self) -> u64 {
        self.samples_without_task
    }

    /// Samples whose cookie (`>= RPROF_COOKIE_FIRST`) no COOKIE or MODULE
    /// record had named before them.
    pub fn samples_unnamed_cookie(&self) -> u64 {
        self.samples_unnamed_cookie
    }

    /// Samples that named a stack no STACK record had defined before them
    /// (they resolve without one).
    pub fn samples_unknown_stack(&self) -> u64 {
        self.samples_unknown_stack
    }
}

/// Resolves every sample of `records`; returns them and the final state
/// (with the cookie names of the whole stream).
pub fn resolve_all<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> (Vec<ResolvedSample>, Resolver) {
    let mut resolver = Resolver::new();
    let samples = records
        .into_iter()
        .filter_map(|r| resolver.feed(r))
        .collect();
    (samples, resolver)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{random_record, XorShift};

    fn task(cpu: u32, pid: u32, comm: &str) -> Record {
        Record::Task {
            cpu,
            pid,
            tid: pid + 1,
            exe_cookie: 17,
            comm: comm.into(),
        }
    }

    fn sample(user: bool, event: u32, offset: u64) -> Record {
        Record::Sample {
            flags: sample_flags(user, event),
            time_ns: offset,
            offset,
            period: 10,
            stack: None,
        }
    }

    #[test]
    fn context_holds_until_replaced() {
        let config = rprof_config::new();
        let records = vec![
            Record::Start { time_ns: 0, config },
            sample(false, 0, 1), // no TASK yet, cookie NONE
            task(0, 10, "a"),
            Record::Switch {
                cookie: u64::from(RPROF_COOKIE_KERNEL),
            },
            sample(false, 0, 2),
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 3,
                ino: 4,
                path: "/bin/a".into(),
            },
            Record::Switch { cookie: 16 },
            sample(true, 1, 3),
            // LOST and THROTTLE change nothing.
            Record::Lost {
                stage: RPROF_LOST_NO_MM,
                cpu: 0,
                count: 1,
            },
            Record::Throttle {
                time_ns: 0,
                cpu: 0,
                event: 0,
            },
            sample(true, 2, 4),
            // A TASK does not change the cookie, a SWITCH not the task.
            task(1, 20, "b"),
            sample(true, 0, 5),
            Record::Switch { cookie: 99 }, // never named
            sample(true, 0, 6),
            Record::Module {
                cookie: 40,
                flags: 0,
                base: 0x1000,
                size: 0x100,
                name: "m".into(),
            },
            Record::Switch { cookie: 40 },
            sample(false, 0, 7),
            Record::Module {
                cookie: 40,
                flags: RPROF_MODULE_UNLOAD as u16,
                base: 0x1000,
                size: 0x100,
                name: "m".into(),
            },
            Record::Module {
                cookie: 41,
                flags: RPROF_MODULE_INIT as u16,
                base: 0x2000,
                size: 0x10,
                name: "m".into(),
            },
            Record::Stop { time_ns: 9, config },
        ];
        let (samples, r) = resolve_all(&records);
        let got: Vec<_> = samples
            .iter()
            .map(|s| {
                (
                    s.cpu(),
                    s.pid(),
                    s.comm(),
                    s.user,
                    s.event,
                    s.cookie,
                    s.offset,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (None, None, None, false, 0, 0, 1),
                (Some(0), Some(10), Some("a"), false, 0, 1, 2),
                (Some(0), Some(10), Some("a"), true, 1, 16, 3),
                (Some(0), Some(10), Some("a"), true, 2, 16, 4),
                (Some(1), Some(20), Some("b"), true, 0, 16, 5),
                (Some(1), Some(20), Some("b"), true, 0, 99, 6),
                (Some(1), Some(20), Some("b"), false, 0, 40, 7),
            ]
        );
        assert_eq!(samples[1].tid(), Some(11));
        assert_eq!(r.samples(), 7);
        assert_eq!(r.samples_without_task(), 1);
        assert_eq!(r.samples_unnamed_cookie(), 1);
        assert_eq!(r.current_cookie(), 40);
        assert_eq!(r.task().map(|t| t.pid), Some(20));
        assert_eq!(r.path(16), Some("/bin/a"));
        assert_eq!(r.path(40), None);
        assert_eq!(
            r.name(40),
            Some(&CookieName::Module {
                name: "m".into(),
                base: 0x1000,
                size: 0x100,
                init: false,
                unloaded: true
            })
        );
        assert_eq!(r.names().len(), 3);
        let labels: Vec<String> = [0, 1, 2, 16, 40, 41, 99]
            .iter()
            .map(|&c| r.label(c))
            .collect();
        assert_eq!(
            labels,
            [
                "[none]",
                "[kernel]",
                "[anon]",
                "/bin/a",
                "[module m]",
                "[module m init]",
                "[cookie 99]"
            ]
        );
        assert_eq!(r.name(16).map(CookieName::label), Some("/bin/a"));
        // The names are what the records say.
        for rec in &records {
            match CookieName::of_record(rec) {
                Some((cookie, _)) => assert!(r.name(cookie).is_some(), "{rec:?}"),
                None => assert!(
                    !matches!(rec, Record::Cookie { .. } | Record::Module { .. }),
                    "{rec:?}"
                ),
            }
        }
        assert_eq!(
            CookieName::of_record(&records[5]),
            Some((16, r.name(16).cloned().unwrap()))
        );
    }

    #[test]
    fn repeated_task_records_share_their_context() {
        let mut r = Resolver::new();
        r.feed(&task(0, 5, "x"));
        let a = r.feed(&sample(true, 0, 1)).unwrap();
        r.feed(&task(0, 5, "x"));
        let b = r.feed(&sample(true, 0, 2)).unwrap();
        let (Some(a), Some(b)) = (a.task, b.task) else {
            panic!("samples without a task")
        };
        assert!(Arc::ptr_eq(&a, &b));
    }

    /// A RESET record: the stacks it retires are gone (a sample naming
    /// one finds none), the context is gone until the next TASK and
    /// SWITCH, and the names it retires stay until forgotten, except those
    /// `keep` holds; names after it count as the module's table.
    #[test]
    fn reset_retires_stacks_names_and_context() {
        let cookie = |c: u64, path: &str| Record::Cookie {
            cookie: c,
            flags: 0,
            dev: 1,
            ino: c,
            path: path.into(),
        };
        let stack = |id: u64, c: u64| Record::Stack {
            id,
            flags: 0,
            nr_kernel: 0,
            frames: vec![(c, 0x10)],
        };
        let with_stack = |id: u64| Record::Sample {
            flags: sample_flags(true, 0),
            time_ns: 1,
            offset: 0x20,
            period: 1,
            stack: Some(id),
        };
        let mut r = Resolver::new();
        for rec in [
            cookie(16, "/a"),
            cookie(17, "/b"),
            stack(1, 16),
            task(0, 5, "a"),
            Record::Switch { cookie: 16 },
        ] {
            r.feed(&rec);
        }
        assert!(r.feed(&with_stack(1)).unwrap().stack.is_some());
        assert_eq!(r.names_since_reset(), 2);
        assert!(!r.has_retired());
        r.feed(&Record::Reset {
            time_ns: 2,
            next_cookie: 18,
            next_stack: 2,
        });
        assert_eq!(r.names_since_reset(), 0);
        assert!(r.has_retired());
        let s = r.feed(&with_stack(1)).unwrap();
        assert_eq!((s.stack, s.task, s.cookie), (None, None, 0));
        assert_eq!(r.samples_unknown_stack(), 1);
        for rec in [cookie(18, "/a"), stack(2, 18), task(0, 5, "a")] {
            r.feed(&rec);
        }
        r.feed(&Record::Switch { cookie: 18 });
        let s = r.feed(&with_stack(2)).unwrap();
        assert_eq!((s.cookie, s.stack.unwrap().frames[0].0), (18, 18));
        assert_eq!(r.names_since_reset(), 1);
        r.forget_retired(|c| c == 17);
        assert_eq!(r.names().keys().copied().collect::<Vec<_>>(), [17, 18]);
        assert!(r.has_retired());
        r.forget_retired(|_| false);
        assert_eq!(r.names().keys().copied().collect::<Vec<_>>(), [18]);
        assert!(!r.has_retired());
    }

    /// On random streams the resolver agrees with a plain model of the
    /// rules: every sample gets the last TASK and the last SWITCH before it
    /// (none after a RESET).
    #[test]
    fn random_streams_follow_the_model() {
        let mut rng = XorShift::new(0xfeed_f00d);
        for _ in 0..200 {
            let records: Vec<Record> = (0..200).map(|_| random_record(&mut rng)).collect();
            let (samples, resolver) = resolve_all(&records);
            let mut expected = Vec::new();
            let (mut task, mut cookie) = (None, 0);
            for r in &records {
                match r {
                    Record::Task { pid, cpu, .. } => task = Some((*cpu, *pid)),
                    Record::Switch { cookie: c } => cookie = *c,
                    Record::Reset { .. } => (task, cookie) = (None, 0),
                    Record::Sample { offset, flags, .. } => expected.push((
                        task,
                        cookie,
                        *offset,
                        u32::from(*flags) & 1 != 0,
                        (u32::from(*flags) >> 8) & 7,
                    )),
                    _ => {}
                }
            }
            let got: Vec<_> = samples
                .iter()
                .map(|s| {
                    (
                        s.task.as_ref().map(|t| (t.cpu, t.pid)),
                        s.cookie,
                        s.offset,
                        s.user,
                        s.event,
                    )
                })
                .collect();
            assert_eq!(got, expected);
            assert_eq!(resolver.samples(), expected.len() as u64);
        }
    }
}

//! The daemon's one writer thread, the jobs it is handed (intervals and
//! ended sessions) and the symbolizer it keeps.

use super::args::DaemonArgs;
use super::profile::Interval;
use super::schedule::{nanos, write_counted, Profiles};
use super::tally::{Tally, Written};
use crate::{live, signal};
use rprof_symbols::Kallsyms;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

/// How many jobs (intervals, ended sessions) may wait for the writer
/// thread before the daemon waits for it in turn: each holds its samples
/// in memory, and a SIGKILL loses them.
pub(super) const WRITER_BACKLOG: usize = 8;

/// Work for the writer thread, in the order the daemon read it: so
/// that the thread that reads the module never stops to symbolize,
/// compress and write (up to seconds on a slow machine), while the rings
/// and the cookie table fill.
pub(super) enum Job {
    /// One interval of the session being read.
    Interval(Live),
    /// A session that ended: the rest of its profiles.
    Ended(Ended),
}

/// One interval of the session being read, taken out of its aggregate
/// ([`rprof_report::Aggregate::take_interval`]).
pub(super) struct Live {
    pub(super) agg: rprof_report::Aggregate,
    pub(super) interval: Interval,
    /// Which of the daemon's sessions, and of its resets (see [`Syms`]).
    pub(super) session: Epoch,
    pub(super) kallsyms: Arc<Kallsyms>,
}

/// A session that ended, on its way to the writer thread: its samples,
/// the kernel's symbols of its time and where its profiles go in the
/// daemon's numbering.
pub(super) struct Ended {
    pub(super) sink: live::AggregateSink,
    /// Which of the daemon's sessions, and of its resets (see [`Syms`]).
    pub(super) session: Epoch,
    pub(super) kallsyms: Arc<Kallsyms>,
    /// Its start, since the Unix epoch.
    pub(super) started: Duration,
    /// The sequence number of its first interval, and of its next profile.
    pub(super) first: u64,
    pub(super) seq: u64,
    /// Its end in the stream's clock ([`session_end`](super::schedule::session_end)).
    pub(super) until: u64,
    /// How many profiles it makes ([`profiles_left`](super::schedule::profiles_left)).
    pub(super) profiles: u64,
}

/// Which symbolizer a job needs: its session's number (each session
/// numbers its cookies afresh) and how many RESET records of that session
/// were read before it (after one, the files of forgotten cookies are not
/// needed for long: a new symbolizer lets them go, and with them what it
/// cached per process, so that its memory stays bounded in a session
/// that lives for weeks).
pub(super) type Epoch = (u64, u64);

/// The writer's symbolizer, kept from one profile of a session to the
/// next (not rebuilt every interval), and new for a new session or a
/// reset of its cookie table ([`Epoch`]) or new kernel symbols (a module
/// loaded or gone).
#[derive(Default)]
pub(super) struct Syms {
    current: Option<(Epoch, Arc<Kallsyms>, rprof_report::Symbolizer)>,
}

impl Syms {
    /// The symbolizer for `session`, whose kernel symbols are `kallsyms`.
    pub(super) fn get(
        &mut self,
        session: Epoch,
        kallsyms: &Arc<Kallsyms>,
    ) -> &mut rprof_report::Symbolizer {
        let same = matches!(&self.current,
            Some((s, k, _)) if *s == session && Arc::ptr_eq(k, kallsyms));
        if !same {
            self.current = None;
        }
        let (_, _, sym) = self.current.get_or_insert_with(|| {
            (
                session,
                kallsyms.clone(),
                rprof_report::Symbolizer::with_kallsyms(kallsyms.clone(), &[], None),
            )
        });
        sym
    }
}

impl Job {
    /// How many profiles it writes.
    pub(super) fn profiles(&self) -> u64 {
        match self {
            Job::Interval(_) => 1,
            Job::Ended(e) => e.profiles,
        }
    }

    /// Writes its profiles, adding to `w`.
    pub(super) fn run(
        self,
        args: &DaemonArgs,
        config: &rprof_abi::rprof_config,
        syms: &mut Syms,
        w: &mut Written,
    ) {
        match self {
            Job::Interval(l) => {
                let sym = syms.get(l.session, &l.kallsyms);
                write_counted(args, config, l.interval, &l.agg, sym, w);
            }
            Job::Ended(e) => {
                e.write(args, config, syms, w);
                // That session has no more profiles to come.
                syms.current = None;
            }
        }
    }
}

impl Ended {
    /// Writes every profile of this session, adding to `w`.
    fn write(
        mut self,
        args: &DaemonArgs,
        config: &rprof_abi::rprof_config,
        syms: &mut Syms,
        w: &mut Written,
    ) {
        let sym = syms.get(self.session, &self.kallsyms);
        let mut out = Profiles {
            args,
            config,
            started: self.started,
            first: self.first,
            seq: self.seq,
            written: 0,
            skipped: 0,
        };
        out.write_rest(&mut self.sink, sym, nanos(args.interval), self.until);
        w.written += out.written;
        w.skipped += out.skipped;
        if let Err(e) = self.sink.finish() {
            eprintln!("rprof daemon: a session's stream: {e}");
            w.stream_error.get_or_insert(e);
        }
    }
}

/// The daemon's one writer thread: every job, in the order the daemon
/// sent them, until the channel closes; what each did goes into `tally`
/// as soon as it is done (before anything else that could fail), so it
/// counts even if the thread dies later.  A job whose writing panics (a
/// bug) has its profiles counted as skipped, and the thread goes on with
/// the next: the jobs queued behind it are not lost.
pub(super) fn writer(
    rx: Receiver<Job>,
    args: &DaemonArgs,
    config: &rprof_abi::rprof_config,
    tally: &Tally,
) {
    // The daemon's signals go to the thread that reads the module.
    signal::block_in_this_thread();
    let mut syms = Syms::default();
    #[cfg(test)]
    let mut jobs = 0u64;
    for job in rx {
        let profiles = job.profiles();
        let mut this = Written::default();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            job.run(args, config, &mut syms, &mut this)
        }));
        let panicked = done.is_err();
        let left = if panicked {
            profiles.saturating_sub(this.written + this.skipped)
        } else {
            0
        };
        tally.add(this, left);
        if panicked {
            // Whatever it held may be half-updated.
            syms = Syms::default();
            eprintln!(
                "rprof daemon: writing profiles failed (a bug); counted as skipped: {left} (some may be written)"
            );
        }
        #[cfg(test)]
        {
            jobs += 1;
            if tally.die_after == Some(jobs) {
                panic!("the writer thread dies, as a test asks");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer keeps one symbolizer per session (not one per
    /// interval), and makes a new one for a new session, a reset of its
    /// cookie table or new kernel symbols.
    #[test]
    fn the_writer_symbolizer_lives_as_long_as_its_session() {
        let k1 = Arc::new(Kallsyms::parse(""));
        let k2 = Arc::new(Kallsyms::parse(""));
        let mut syms = Syms::default();
        let addr = |s: &mut rprof_report::Symbolizer| s as *const _ as usize;
        let first = addr(syms.get((1, 0), &k1));
        let id = |syms: &Syms| syms.current.as_ref().map(|(s, k, _)| (*s, Arc::as_ptr(k)));
        assert_eq!(addr(syms.get((1, 0), &k1)), first);
        assert_eq!(id(&syms), Some(((1, 0), Arc::as_ptr(&k1))));
        // A reset of the cookie table: a new one.
        syms.get((1, 1), &k1);
        assert_eq!(id(&syms), Some(((1, 1), Arc::as_ptr(&k1))));
        syms.get((2, 0), &k1);
        assert_eq!(id(&syms), Some(((2, 0), Arc::as_ptr(&k1))));
        syms.get((2, 0), &k2);
        assert_eq!(id(&syms), Some(((2, 0), Arc::as_ptr(&k2))));
    }
}

//! The thread that reads the module: the daemon's state and its loop.

use super::args::DaemonArgs;
use super::module::{Module, Running};
use super::schedule::{
    nanos, now_unix, Profiles, StreamClock, GRACE, POLL_INTERVAL, RETRY_FIRST, RETRY_MAX,
};
use super::scrape::Pull;
use super::tally::{Tally, Written};
use super::writer::{Job, Live, Syms, WRITER_BACKLOG};
use crate::pidfd::Watch;
use crate::{live, signal, Error};
use rprof_symbols::Kallsyms;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The kernel's module list, to tell when the symbolizer's kallsyms is
/// out of date.
pub(super) fn module_list() -> String {
    std::fs::read_to_string("/proc/modules").unwrap_or_default()
}

/// How many files and modules the session has named since the module's
/// cookie table was last reset: what that table holds.
pub(super) fn named(sink: &live::AggregateSink) -> u64 {
    sink.agg.resolver().names_since_reset() as u64
}

/// Everything the module's rings hold now, then what the buffer has
/// (up to 64 reads while more comes): what an interval or a scrape
/// that ended needs before it is taken.
pub(super) fn read_rings<S: Running>(
    session: &mut S,
    sink: &mut live::AggregateSink,
) -> Result<(), Error> {
    session.flush()?;
    for _ in 0..64 {
        if session.pump(Duration::ZERO, sink)? == 0 {
            break;
        }
    }
    Ok(())
}

/// The daemon's state: the session it reads and the interval it fills.
///
/// Invariant: `sink` holds the samples of `session` since its START and
/// nothing else; with no session (a renewal could not start one; tried
/// again at `retry`) it is empty.
pub(super) struct Daemon<'a, M: Module> {
    /// The module (`/dev/rprof`; a fake in tests).
    dev: M,
    args: &'a DaemonArgs,
    config: &'a rprof_abi::rprof_config,
    pub(super) session: Option<M::Session>,
    pub(super) sink: live::AggregateSink,
    pub(super) clock: StreamClock,
    /// Parsed once, and again only when the module list (`modules`)
    /// changes; shared with the writer.
    pub(super) kallsyms: Arc<Kallsyms>,
    pub(super) modules: String,
    /// The current session's number (for the writer's [`Syms`]): how
    /// many sessions started, the last line's count.
    pub(super) session_no: u64,
    pub(super) out: Profiles<'a>,
    /// Reset the cookie table once the session has named this many files
    /// since the last reset.
    pub(super) renew_at: u64,
    /// Sessions ended for a new one (which may not have started); read by
    /// the tests.
    pub(super) renewals: u64,
    /// Cookie-table resets asked for; read by the tests.
    pub(super) resets: u64,
    /// The module knows RESET_COOKIES (no ENOTTY yet).
    pub(super) can_reset: bool,
    /// A reset is due, for this reason, from `reset_retry` on.
    pub(super) reset_due: Option<&'static str>,
    pub(super) reset_retry: Instant,
    /// A reset was asked for and its RESET record not read yet: the
    /// sink's count of RESET records when it was asked.
    pub(super) reset_asked: Option<u64>,
    /// When the session started or the table was last reset (`--renew`).
    pub(super) renewed_at: Instant,
    /// When to try to start a session again, and the wait after that.
    pub(super) retry: (Instant, Duration),
    /// The process of `--pid` is gone: stop.
    pub(super) target_gone: bool,
    /// The process of `--pid`, by its pidfd (a new process given the
    /// same pid later is not it).
    pub(super) target: Option<Watch>,
    pub(super) to_writer: SyncSender<Job>,
    /// What the writer thread has done, and been handed.
    pub(super) tally: &'a Tally,
    /// The last job had to wait for room in the writer's queue.
    writer_behind: bool,
    /// The unwind-table uploader's watch (`--call-graph dwarf`, `-g`
    /// where the module takes tables); each session's sink gets its own
    /// ([`Self::begin`]).
    pub(super) tables: Option<crate::unwind::Watch>,
    /// The listener's side in this thread (`--listen`): scrapes and
    /// the statistics `/metrics` shows ([`Self::pull`]).
    pub(super) pull: Option<Pull>,
}

impl<'a, M: Module> Daemon<'a, M> {
    /// A daemon on `dev` with no session yet ([`Self::begin`] starts the
    /// first), whose jobs go to `to_writer` and are counted in `tally`;
    /// no kernel symbols yet, no `--pid` process, no renewal for the
    /// cookie table.
    pub(super) fn new(
        dev: M,
        args: &'a DaemonArgs,
        config: &'a rprof_abi::rprof_config,
        to_writer: SyncSender<Job>,
        tally: &'a Tally,
    ) -> Self {
        Daemon {
            dev,
            args,
            config,
            session: None,
            sink: live::AggregateSink::new(),
            clock: StreamClock::new(),
            kallsyms: Arc::new(Kallsyms::parse("")),
            modules: String::new(),
            session_no: 0,
            out: Profiles {
                args,
                config,
                started: Duration::ZERO,
                first: 0,
                seq: 0,
                written: 0,
                skipped: 0,
            },
            renew_at: u64::MAX,
            renewals: 0,
            resets: 0,
            can_reset: true,
            reset_due: None,
            reset_retry: Instant::now(),
            reset_asked: None,
            renewed_at: Instant::now(),
            retry: (Instant::now(), RETRY_FIRST),
            target_gone: false,
            target: None,
            to_writer,
            tally,
            writer_behind: false,
            tables: None,
            pull: None,
        }
    }

    pub(super) fn step_ns(&self) -> u64 {
        nanos(self.args.interval)
    }

    /// A sink for a new session, scheduling intervals of `--interval`.
    pub(super) fn new_sink(&self) -> live::AggregateSink {
        let mut sink = live::AggregateSink::new();
        sink.agg.set_interval(Some(self.step_ns()));
        sink
    }

    /// Configures and STARTs a session; its intervals are numbered on
    /// from the last one's.
    pub(super) fn start(&mut self) -> Result<(), Error> {
        let session = self.dev.configure(self.config)?;
        self.begin(session)
    }

    /// STARTs `session` (configured) and makes it the one read, with a
    /// fresh sink and clock (and, in the writer, symbolizer); the next
    /// failed start waits [`RETRY_FIRST`] again.
    pub(super) fn begin(&mut self, mut session: M::Session) -> Result<(), Error> {
        session.start()?;
        self.clock = StreamClock::new();
        self.renewed_at = Instant::now();
        self.reset_due = None;
        self.reset_asked = None;
        self.session = Some(session);
        self.sink = self.new_sink();
        // A new session has none of the last one's tables: the uploader
        // starts over, from the files the new session names.
        self.sink.watch = self.tables.as_ref().map(|w| w.for_new_session());
        self.session_no += 1;
        self.out.started = now_unix();
        self.out.first = self.out.seq;
        self.retry = (Instant::now(), RETRY_FIRST);
        Ok(())
    }

    /// Whether the process of `--pid` (if any) has ended.
    fn target_ended(&self) -> bool {
        self.target.as_ref().is_some_and(|w| w.ended())
    }

    /// The process of `--pid` has ended: says so, and the daemon stops.
    fn stop_for_target(&mut self) {
        eprintln!(
            "rprof daemon: process {} has ended; stopping",
            self.args.pid.unwrap_or(0)
        );
        self.target_gone = true;
    }

    /// Whether `e` says that the process of `--pid` is gone (SET_CONFIG
    /// refuses a pid that names no process with ESRCH).
    fn target_gone_error(&self, e: &Error) -> bool {
        self.args.pid.is_some()
            && matches!(e, Error::Ioctl { source, .. } if source.raw_os_error() == Some(libc::ESRCH))
    }

    /// Gives `job` to the writer; waits while [`WRITER_BACKLOG`] jobs
    /// wait for it already (the module meanwhile drops and counts what
    /// does not fit), and writes it here if the writer is gone.
    pub(super) fn send(&mut self, job: Job) {
        let profiles = job.profiles();
        let job = match self.to_writer.try_send(job) {
            Ok(()) => {
                self.tally.sent.fetch_add(profiles, Ordering::Relaxed);
                self.writer_behind = false;
                return;
            }
            Err(TrySendError::Full(job)) => {
                // Once per stall, not for every job while it lasts.
                if !self.writer_behind {
                    eprintln!(
                        "rprof daemon: {WRITER_BACKLOG} profiles or sessions wait to be written: waiting for the writer"
                    );
                }
                self.writer_behind = true;
                match self.to_writer.send(job) {
                    Ok(()) => {
                        self.tally.sent.fetch_add(profiles, Ordering::Relaxed);
                        return;
                    }
                    Err(e) => e.0,
                }
            }
            Err(TrySendError::Disconnected(job)) => job,
        };
        // The writer thread is gone (it died; its message is out):
        // written here rather than lost.
        let mut w = Written::default();
        job.run(self.args, self.config, &mut Syms::default(), &mut w);
        self.out.written += w.written;
        self.out.skipped += w.skipped;
        // A malformed stream still makes the exit status 1.
        self.tally.add(
            Written {
                stream_error: w.stream_error,
                ..Written::default()
            },
            0,
        );
    }

    /// Starts a session; on failure says so and schedules the next try.
    pub(super) fn try_start(&mut self) {
        // A process of --pid that has ended is not followed again: its
        // pid may name another process by now.
        if self.target_ended() {
            self.stop_for_target();
            return;
        }
        let Err(e) = self.start() else { return };
        if self.target_gone_error(&e) {
            self.stop_for_target();
            return;
        }
        let (_, wait) = self.retry;
        let why = e.to_string();
        eprintln!(
            "rprof daemon: could not start a new session: {}; trying again in {} s",
            why.strip_prefix("rprof: ").unwrap_or(&why),
            wait.as_secs()
        );
        self.retry = (Instant::now() + wait, (wait * 2).min(RETRY_MAX));
    }

    /// Reads the session and writes its intervals until a signal, the
    /// end of the process of `--pid`, or an error of the device.  (A
    /// malformed record ends its session, not this loop: the daemon says
    /// so and renews at once ([`Self::pump`]); the error makes the exit
    /// status 1.)
    pub(super) fn serve(&mut self) -> Result<(), Error> {
        while !signal::stop_requested() && !self.target_gone {
            self.step()?;
        }
        Ok(())
    }

    /// One turn of [`Self::serve`]'s loop: waits for data (at most
    /// [`POLL_INTERVAL`]) and does what is due, which may be a renewal
    /// (STOP, drain, SET_CONFIG) or a wait for room in the writer's
    /// queue.
    pub(super) fn step(&mut self) -> Result<(), Error> {
        let step_ns = self.step_ns();
        let grace_ns = nanos(GRACE);
        // Scrapes to start or answer, statistics to publish (--listen).
        self.pull()?;
        if self.session.is_none() {
            // Without a session, the end of the process of --pid is not
            // seen by a failed start (that may be a minute away): here.
            if self.target_ended() {
                self.stop_for_target();
                return Ok(());
            }
            let now = Instant::now();
            // SIGHUP asks for a new session: try at once.
            if signal::renew_requested() || now >= self.retry.0 {
                self.try_start();
            } else {
                std::thread::sleep((self.retry.0 - now).min(POLL_INTERVAL));
            }
            return Ok(());
        }
        // The current interval ends at the cutoff, in the stream's
        // clock, once the START record is in.
        if self.sink.agg.cutoff().is_none() {
            if let Some(s) = self.sink.agg.span.start_ns {
                self.sink.agg.set_cutoff(Some(s.saturating_add(step_ns)));
            }
        }
        let (Some(end), Some(now)) = (self.sink.agg.cutoff(), self.clock.now(&self.sink)) else {
            return self.pump(POLL_INTERVAL);
        };
        let due = end.saturating_add(grace_ns);
        // The cookie table is reset once a quarter of it is used
        // (checked at least every POLL_INTERVAL: files can come faster
        // than intervals; not again before the last reset's record is
        // read, which the count goes by), on SIGHUP, or at an interval's
        // end once --renew has passed.
        if self.reset_asked.is_some_and(|n| self.sink.resets > n) {
            self.reset_asked = None;
        }
        if self.reset_asked.is_none() && named(&self.sink) >= self.renew_at {
            self.reset_due.get_or_insert("cookie table a quarter full");
        }
        if signal::renew_requested() {
            self.reset_due = Some("SIGHUP");
        }
        if let Some(why) = self
            .reset_due
            .filter(|_| Instant::now() >= self.reset_retry)
        {
            return self.reset(why);
        }
        if now >= due {
            // The process of --pid ended: its last interval is written
            // and the daemon stops (no reset, no renewal, which would
            // fail).
            let ended = self.target_ended();
            self.write_interval()?;
            if ended {
                self.stop_for_target();
            } else if self.renewed_at.elapsed() >= self.args.renew {
                self.reset_due.get_or_insert("--renew time");
            }
            return Ok(());
        }
        self.pump(Duration::from_nanos(due - now).min(POLL_INTERVAL))
    }

    /// Moves what the buffer holds into the sink, waiting at most `wait`.
    /// A malformed record ends the session at once (nothing after it
    /// could be read): says so, and renews; the error is reported again,
    /// and makes the exit status 1, once that session is written.
    pub(super) fn pump(&mut self, wait: Duration) -> Result<(), Error> {
        if let Some(s) = self.session.as_mut() {
            s.pump(wait, &mut self.sink)?;
        }
        if let Some(e) = self.sink.malformed() {
            eprintln!("rprof daemon: the session's stream is unreadable: {e}");
            self.renew("unreadable stream")?;
        }
        Ok(())
    }

    /// Hands the interval that ended at the cutoff to the writer and
    /// moves on to the next one.
    fn write_interval(&mut self) -> Result<(), Error> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let Some(end) = self.sink.agg.cutoff() else {
            return Ok(());
        };
        read_rings(session, &mut self.sink)?;
        let now_loaded = module_list();
        if now_loaded != self.modules {
            self.modules = now_loaded;
            // The writer's symbolizer follows (a new `Arc`).
            self.kallsyms = Arc::new(Kallsyms::parse(&crate::snapshot::read_kallsyms()));
        }
        // The interval goes to the writer; this thread reads on.
        let interval = self.out.next(self.args.interval);
        let agg = self
            .sink
            .agg
            .take_interval(Some(end.saturating_add(self.step_ns())));
        self.send(Job::Interval(Live {
            agg,
            interval,
            session: (self.session_no, self.sink.resets),
            kallsyms: self.kallsyms.clone(),
        }));
        Ok(())
    }
}

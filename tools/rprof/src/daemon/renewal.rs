//! Letting go of a session's cookies: a reset of the module's cookie
//! table, or a renewal (a new session) where that cannot be done.

use super::module::{Module, Running};
use super::reader::{named, Daemon};
use super::schedule::{profiles_left, session_end, POLL_INTERVAL};
use super::writer::{Ended, Job};
use crate::Error;
use std::time::Instant;

/// The module's `max_cookies` parameter (its default if it cannot be
/// read).
pub(super) fn max_cookies() -> u64 {
    std::fs::read_to_string("/sys/module/rprof/parameters/max_cookies")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096)
}

impl<'a, M: Module> Daemon<'a, M> {
    /// Takes the current session's samples (it is stopped and drained,
    /// or gone) with the numbers of its profiles, for the writer; the
    /// next session's profiles are numbered after them.
    pub(super) fn take_ended(&mut self) -> Ended {
        let until = session_end(&self.sink, &self.clock);
        // Scrapes read this session's stream: they end with it.
        self.end_scrapes(until);
        let fresh = self.new_sink();
        let sink = std::mem::replace(&mut self.sink, fresh);
        let left = profiles_left(&sink.agg, self.step_ns(), until);
        let ended = Ended {
            session: (self.session_no, sink.resets),
            sink,
            kallsyms: self.kallsyms.clone(),
            started: self.out.started,
            first: self.out.first,
            seq: self.out.seq,
            until,
            profiles: left,
        };
        self.out.seq += left;
        ended
    }

    /// Ends the session (STOP, drain), starts a new one and hands the old
    /// one to the writer, in that order: nothing goes unsampled while the
    /// writer catches up.  `why` says what triggered it.  A new session
    /// that cannot start is tried again later (or, if the process of
    /// `--pid` is gone, the daemon stops); only an error of the old
    /// session's stream is returned.
    pub(super) fn renew(&mut self, why: &str) -> Result<(), Error> {
        let elapsed = self.clock.started_at.elapsed();
        // Nothing is sampled from the STOP to the next START: how long
        // that is goes on the renewal's line.
        let paused = Instant::now();
        let stopped = match self.session.as_mut() {
            Some(s) => s.stop_and_drain(&mut self.sink)?,
            None => return Ok(()),
        };
        self.session = None;
        let names = named(&self.sink);
        let ended = self.take_ended();
        self.renewals += 1;
        self.try_start();
        eprintln!(
            "rprof daemon: new session after {:.1} s and {names} named files ({why}){}; not sampling for {} ms",
            elapsed.as_secs_f64(),
            if stopped { "" } else { " (no STOP record)" },
            paused.elapsed().as_millis()
        );
        self.send(Job::Ended(ended));
        Ok(())
    }

    /// Has the module forget its cookie table (`why` triggered it) while
    /// sampling goes on; the RESET record it writes splits nothing (the
    /// intervals go on).  A module that does not know the ioctl (ENOTTY),
    /// or that refuses it for another reason than a full buffer, gets a
    /// renewal instead; a full buffer (EAGAIN), another try after
    /// [`POLL_INTERVAL`].
    pub(super) fn reset(&mut self, why: &'static str) -> Result<(), Error> {
        if !self.can_reset {
            self.reset_due = None;
            return self.renew(why);
        }
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        let names = named(&self.sink);
        let elapsed = self.renewed_at.elapsed();
        let asked = Instant::now();
        let errno = match s.reset_cookies() {
            Ok(()) => {
                self.reset_due = None;
                self.reset_asked = Some(self.sink.resets);
                self.renewed_at = Instant::now();
                self.resets += 1;
                // The ioctl's time (its drain included) is the reader's
                // only: sampling goes on meanwhile.
                eprintln!(
                    "rprof daemon: reset the cookie table after {:.1} s and {names} named files ({why}); sampling goes on (the ioctl took {} us)",
                    elapsed.as_secs_f64(),
                    asked.elapsed().as_micros()
                );
                return Ok(());
            }
            Err(Error::Ioctl { source, .. }) => source.raw_os_error(),
            Err(e) => return Err(e),
        };
        if errno == Some(libc::EAGAIN) {
            self.reset_due = Some(why);
            self.reset_retry = Instant::now() + POLL_INTERVAL;
            return Ok(());
        }
        if errno == Some(libc::ENOTTY) {
            eprintln!("rprof daemon: the module cannot reset its cookie table (an older rprof.ko): renewing the session instead");
            self.can_reset = false;
        }
        self.reset_due = None;
        self.renew(why)
    }
}

//! The module as the daemon drives it: `/dev/rprof` in the daemon, a
//! fake in the tests.

use crate::session::{Session, Sink};
use crate::{Device, Error};
use std::time::Duration;

/// The module as the daemon uses it: sessions to configure.  `/dev/rprof`
/// ([`Device`]) in the daemon; a seam so that the tests can give it
/// sessions that fail to start or whose stream is malformed.
pub(super) trait Module {
    /// A configured session.
    type Session: Running;
    /// Checks the ABI version, configures a session with `config` and
    /// maps its buffer ([`Session::new`]); not started.
    fn configure(&self, config: &rprof_abi::rprof_config) -> Result<Self::Session, Error>;
}

/// A configured session as the daemon drives it (see [`Session`]).
pub(super) trait Running {
    /// START.
    fn start(&mut self) -> Result<(), Error>;
    /// Waits at most `wait` for data, then hands what is there to `sink`;
    /// returns the bytes handed.
    fn pump(&mut self, wait: Duration, sink: &mut dyn Sink) -> Result<usize, Error>;
    /// Has the module move what its per-CPU rings hold into the buffer.
    fn flush(&self) -> Result<(), Error>;
    /// `RPROF_IOC_RESET_COOKIES`.
    fn reset_cookies(&mut self) -> Result<(), Error>;
    /// STOPs (if running) and takes everything up to the STOP record;
    /// returns whether it came.
    fn stop_and_drain(&mut self, sink: &mut dyn Sink) -> Result<bool, Error>;
    /// The session's statistics (`RPROF_IOC_GET_STATS`), in total and
    /// per CPU, for `/metrics`; a fake without any says so.
    fn stats(&self) -> Result<ModuleStats, Error> {
        Err(Error::Protocol("this module has no statistics".into()))
    }
    /// Bytes of stream written and not read yet, and the event buffer's
    /// size (both 0 if not known).
    fn buffer(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// What GET_STATS says: the totals and each CPU's counters.
pub(super) type ModuleStats = (rprof_abi::rprof_stats, Vec<rprof_abi::rprof_cpu_stats>);

impl<'dev> Module for &'dev Device {
    type Session = Session<'dev>;

    fn configure(&self, config: &rprof_abi::rprof_config) -> Result<Session<'dev>, Error> {
        Session::new(self, config, false)
    }
}

impl Running for Session<'_> {
    fn start(&mut self) -> Result<(), Error> {
        Session::start(self)
    }

    fn pump(&mut self, wait: Duration, sink: &mut dyn Sink) -> Result<usize, Error> {
        Session::pump(self, wait, sink)
    }

    fn flush(&self) -> Result<(), Error> {
        self.device().flush()
    }

    fn reset_cookies(&mut self) -> Result<(), Error> {
        self.device().reset_cookies()
    }

    fn stop_and_drain(&mut self, sink: &mut dyn Sink) -> Result<bool, Error> {
        Session::stop_and_drain(self, sink)
    }

    fn stats(&self) -> Result<ModuleStats, Error> {
        self.device().stats(true)
    }

    fn buffer(&self) -> (u64, u64) {
        (self.unread(), self.buffer_size())
    }
}

//! What the writer thread did, counted outside it so that the counts
//! survive its death.

use crate::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// What one job of the writer thread did.
#[derive(Default)]
pub(super) struct Written {
    pub(super) written: u64,
    pub(super) skipped: u64,
    /// The first malformed stream among the sessions it wrote.
    pub(super) stream_error: Option<Error>,
}

/// What the writer thread has done so far, kept outside it and updated as
/// each job finishes (not handed back when it ends): if that thread dies
/// (a panic outside a job, a failed print), what it wrote and skipped
/// still counts in the daemon's last line, and what it was handed and
/// never wrote is known.
#[derive(Default)]
pub(super) struct Tally {
    /// Profiles of the jobs handed to the writer thread (some may still
    /// wait in its queue).
    pub(super) sent: AtomicU64,
    /// Profiles it wrote.
    pub(super) written: AtomicU64,
    /// Profiles it skipped (could not write, or lost to a bug).
    pub(super) skipped: AtomicU64,
    /// The first malformed stream among the sessions it wrote.
    stream_error: Mutex<Option<Error>>,
    /// For tests: the writer thread panics, outside any job, once it has
    /// done this many jobs.
    #[cfg(test)]
    pub(super) die_after: Option<u64>,
}

impl Tally {
    /// Adds what one job did, and `lost` more profiles of it as skipped.
    pub(super) fn add(&self, w: Written, lost: u64) {
        self.written.fetch_add(w.written, Ordering::Relaxed);
        self.skipped
            .fetch_add(w.skipped.saturating_add(lost), Ordering::Relaxed);
        if let Some(e) = w.stream_error {
            self.stream_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(e);
        }
    }

    /// Profiles handed to the writer thread that it neither wrote nor
    /// skipped: lost with it if it died, none otherwise.
    pub(super) fn unwritten(&self) -> u64 {
        let done = self.written.load(Ordering::Relaxed) + self.skipped.load(Ordering::Relaxed);
        self.sent.load(Ordering::Relaxed).saturating_sub(done)
    }

    /// Takes the first malformed stream the writer saw.
    pub(super) fn take_stream_error(&self) -> Option<Error> {
        self.stream_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

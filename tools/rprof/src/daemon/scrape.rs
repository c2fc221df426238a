//! A scrape of the listener (`--listen`) as the reader thread sees it:
//! what a listener thread asks ([`Ask`]) and gets back ([`Scraped`]),
//! and the reader's side of the listener ([`Pull`]).  Its work in the
//! reader's loop is `pull.rs`.

use super::metrics::Shared;
use rprof_report::Aggregate;
use rprof_symbols::Kallsyms;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most this many scrapes at once: each costs the reader a copy of
/// the stream's state (bounded by the cookie table) and a resolve of
/// every record; more are refused.
pub(super) const MAX_SCRAPES: usize = 16;

/// How often the module's statistics are published for `/metrics`.
pub(super) const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// A scrape a listener thread asks for: the samples of the next
/// `seconds` (in the stream's clock, from when the reader takes it).
pub(super) struct Ask {
    pub(super) seconds: u64,
    /// Where the answer goes: the counts, or why there are none.
    pub(super) reply: Sender<Result<Scraped, String>>,
}

/// What a scrape counted, for its listener thread to symbolize, encode
/// and send (off the reader's thread).
pub(super) struct Scraped {
    pub(super) agg: Aggregate,
    pub(super) kallsyms: Arc<Kallsyms>,
    /// Its window's start (wall clock, since the Unix epoch) and length
    /// (shorter than asked if the session ended first: `cut`).
    pub(super) start: Duration,
    pub(super) length: Duration,
    /// Why it ended before its time, if it did.
    pub(super) cut: Option<&'static str>,
}

/// A scrape being counted.
pub(super) struct Active {
    /// Its tap's number in the sink ([`crate::live::AggregateSink::taps`]).
    pub(super) id: u64,
    /// Its window, in the stream's clock: `[start_ns, end_ns)`.
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    /// Its start in the wall clock, since the Unix epoch.
    pub(super) start_unix: Duration,
    pub(super) reply: Sender<Result<Scraped, String>>,
}

/// The reader's side of the listener.
pub(super) struct Pull {
    pub(super) asks: Receiver<Ask>,
    pub(super) active: Vec<Active>,
    pub(super) next_id: u64,
    /// What `/metrics` reads.
    pub(super) shared: Arc<Shared>,
    /// The module's `max_cookies`: the cookie table's size.
    pub(super) max_cookies: u64,
    /// When the statistics were last published.
    pub(super) published: Option<Instant>,
}

impl Pull {
    /// The reader's side of a listener that sends scrapes on `asks` and
    /// shows `shared`.
    pub(super) fn new(asks: Receiver<Ask>, shared: Arc<Shared>, max_cookies: u64) -> Self {
        Pull {
            asks,
            active: Vec::new(),
            next_id: 0,
            shared,
            max_cookies,
            published: None,
        }
    }
}

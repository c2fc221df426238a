//! The pull endpoint's work in the thread that reads the module: the
//! scrapes the listener's threads ask for ([`Ask`](super::scrape::Ask)),
//! each counted in an aggregate of its own fed beside the session's, and
//! answered once its window has passed; and the statistics `/metrics`
//! shows, published once a second.  Nothing here waits for the listener.

use super::metrics::Snapshot;
use super::module::{Module, Running};
use super::reader::{named, read_rings, Daemon};
use super::schedule::{nanos, now_unix, GRACE};
use super::scrape::{Active, Scraped, MAX_SCRAPES, PUBLISH_EVERY};
use crate::Error;
use rprof_report::{Aggregate, Filter, TimeRange};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl<M: Module> Daemon<'_, M> {
    /// Publishes the statistics if a second has passed, starts the
    /// scrapes asked for since the last call (their windows start now,
    /// in the stream's clock) and answers those whose window ended
    /// [`GRACE`] ago, the module's rings read first.  Without a session
    /// (or before its START is read), asks wait.
    pub(super) fn pull(&mut self) -> Result<(), Error> {
        if self.pull.is_none() {
            return Ok(());
        }
        self.publish();
        let Some(now) = self
            .session
            .as_ref()
            .and_then(|_| self.clock.now(&self.sink))
        else {
            return Ok(());
        };
        self.take_asks(now);
        let grace = nanos(GRACE);
        let due = |a: &Active| now >= a.end_ns.saturating_add(grace);
        if !self.pull.as_ref().is_some_and(|p| p.active.iter().any(due)) {
            return Ok(());
        }
        if let Some(session) = self.session.as_mut() {
            read_rings(session, &mut self.sink)?;
        }
        let ids: Vec<u64> = self
            .pull
            .as_ref()
            .map(|p| p.active.iter().filter(|&a| due(a)).map(|a| a.id).collect())
            .unwrap_or_default();
        for id in ids {
            self.answer(id, u64::MAX, None);
        }
        Ok(())
    }

    /// Answers every scrape: the session ended at `until` (its STOP, in
    /// the stream's clock); those whose window was not over are cut
    /// short there, and say so.
    pub(super) fn end_scrapes(&mut self, until: u64) {
        let ids: Vec<u64> = self
            .pull
            .as_ref()
            .map(|p| p.active.iter().map(|a| a.id).collect())
            .unwrap_or_default();
        for id in ids {
            self.answer(id, until, Some("the module session ended first"));
        }
    }

    /// Starts the scrapes asked for, at `now` in the stream's clock; past
    /// [`MAX_SCRAPES`], refuses them.
    fn take_asks(&mut self, now: u64) {
        let Some(pull) = self.pull.as_mut() else {
            return;
        };
        while let Ok(ask) = pull.asks.try_recv() {
            if pull.active.len() >= MAX_SCRAPES {
                // The asker may be gone already.
                let _ = ask.reply.send(Err(format!(
                    "{MAX_SCRAPES} profiles are being taken already; try again later"
                )));
                continue;
            }
            let end_ns = now.saturating_add(ask.seconds.saturating_mul(1_000_000_000));
            let window = Filter {
                time: Some(TimeRange {
                    start: Some(now),
                    end: Some(end_ns),
                }),
                ..Filter::default()
            };
            let id = pull.next_id;
            pull.next_id += 1;
            self.sink.taps.push((id, self.sink.agg.fork(&window)));
            pull.active.push(Active {
                id,
                start_ns: now,
                end_ns,
                start_unix: now_unix(),
                reply: ask.reply,
            });
        }
    }

    /// Sends scrape `id` what it counted, its window ending at `until`
    /// if that comes first (then `cut` says why).
    fn answer(&mut self, id: u64, until: u64, cut: Option<&'static str>) {
        let Some(pull) = self.pull.as_mut() else {
            return;
        };
        let Some(i) = pull.active.iter().position(|a| a.id == id) else {
            return;
        };
        let a = pull.active.swap_remove(i);
        let agg = match self.sink.taps.iter().position(|(t, _)| *t == id) {
            Some(t) => self.sink.taps.swap_remove(t).1,
            None => Aggregate::new(),
        };
        let end = a.end_ns.min(until);
        let scraped = Scraped {
            agg,
            kallsyms: self.kallsyms.clone(),
            start: a.start_unix,
            length: Duration::from_nanos(end.saturating_sub(a.start_ns)),
            cut: cut.filter(|_| until < a.end_ns),
        };
        // The asker may have given up (its client gone).
        let _ = a.reply.send(Ok(scraped));
    }

    /// Publishes what `/metrics` shows, at most every [`PUBLISH_EVERY`].
    fn publish(&mut self) {
        let Some(pull) = self.pull.as_mut() else {
            return;
        };
        if pull.published.is_some_and(|t| t.elapsed() < PUBLISH_EVERY) {
            return;
        }
        pull.published = Some(Instant::now());
        let (stats, (unread, buffer_size)) = match self.session.as_ref() {
            // A failed GET_STATS leaves the module's series out.
            Some(s) => (s.stats().ok(), s.buffer()),
            None => (None, (0, 0)),
        };
        let tally = self.tally;
        pull.shared.publish(Snapshot {
            at: Instant::now(),
            stats,
            session: self.session.is_some(),
            unread,
            buffer_size,
            named: named(&self.sink),
            max_cookies: pull.max_cookies,
            written: self.out.written + tally.written.load(Ordering::Relaxed),
            skipped: self.out.skipped + tally.skipped.load(Ordering::Relaxed),
            sessions: self.session_no,
            resets: self.resets,
            scrapes: pull.active.len() as u64,
        });
    }
}

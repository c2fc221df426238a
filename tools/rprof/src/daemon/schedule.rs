//! The daemon's time: the stream's clock, the intervals (their
//! numbering, and the rest of a session cut into them), and how long the
//! daemon waits for what.

use super::args::DaemonArgs;
use super::profile::{write_profile, Interval};
use super::tally::Written;
use crate::live;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The longest wait in `poll()`.
pub(super) const POLL_INTERVAL: Duration = Duration::from_millis(100);

pub(super) fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The daemon's profiles so far.
pub(super) struct Profiles<'a> {
    pub(super) args: &'a DaemonArgs,
    pub(super) config: &'a rprof_abi::rprof_config,
    /// The current session's start, since the Unix epoch.
    pub(super) started: Duration,
    /// The sequence number of the current session's first interval.
    pub(super) first: u64,
    pub(super) seq: u64,
    pub(super) written: u64,
    pub(super) skipped: u64,
}

impl Profiles<'_> {
    /// The next interval, `length` long, and its number taken.
    pub(super) fn next(&mut self, length: Duration) -> Interval {
        let interval = Interval {
            seq: self.seq,
            start: self.started
                + Duration::from_nanos(
                    nanos(self.args.interval).saturating_mul(self.seq - self.first),
                ),
            length,
        };
        self.seq += 1;
        interval
    }

    /// Writes the next interval's profile, `length` long, of what `agg`
    /// counted; a profile that cannot be written (a full disk, ...) is
    /// skipped with a message.
    fn write(
        &mut self,
        agg: &rprof_report::Aggregate,
        sym: &mut rprof_report::Symbolizer,
        length: Duration,
    ) {
        let interval = self.next(length);
        let mut w = Written::default();
        write_counted(self.args, self.config, interval, agg, sym, &mut w);
        self.written += w.written;
        self.skipped += w.skipped;
    }
}

/// Writes `interval`'s profile of what `agg` counted, counting it in `w`
/// as written or (with a message) skipped.
pub(super) fn write_counted(
    args: &DaemonArgs,
    config: &rprof_abi::rprof_config,
    interval: Interval,
    agg: &rprof_report::Aggregate,
    sym: &mut rprof_report::Symbolizer,
    w: &mut Written,
) {
    match write_profile(&args.dir, interval, agg, config, sym, args.keep) {
        Ok(_) => w.written += 1,
        Err(e) => {
            w.skipped += 1;
            let why = e.to_string();
            eprintln!(
                "rprof daemon: profile {} ({} samples) skipped: {}",
                interval.seq,
                agg.samples,
                why.strip_prefix("rprof: ").unwrap_or(&why)
            );
        }
    }
}

/// `d` in ns, saturated.
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Profiles<'_> {
    /// At the end of a session (its STOP read): every complete interval
    /// the aggregate still holds, each in its own profile (a daemon that
    /// fell behind catches up rather than lumping them together), then
    /// the last one, cut short at the STOP.
    ///
    /// `until` is the session's end ([`session_end`]); the profiles are
    /// numbered from `self.seq` on, [`profiles_left`] of them.
    pub(super) fn write_rest(
        &mut self,
        sink: &mut live::AggregateSink,
        sym: &mut rprof_report::Symbolizer,
        step_ns: u64,
        until: u64,
    ) {
        let step_ns = step_ns.max(1);
        while let Some(end) = sink.agg.cutoff().filter(|end| *end <= until) {
            self.write(&sink.agg, sym, self.args.interval);
            sink.agg.roll(Some(end.saturating_add(step_ns)));
        }
        let begin = match sink.agg.cutoff() {
            Some(end) => end.saturating_sub(step_ns),
            None => sink.agg.span.start_ns.unwrap_or(until),
        };
        sink.agg.set_cutoff(None);
        self.write(
            &sink.agg,
            sym,
            Duration::from_nanos(until.saturating_sub(begin)),
        );
    }
}

/// Where a stopped session ends, in the stream's clock: its STOP
/// record's time, or now if it has none (`clock`).
pub(super) fn session_end(sink: &live::AggregateSink, clock: &StreamClock) -> u64 {
    sink.agg
        .span
        .stop_ns
        .unwrap_or_else(|| clock.now(sink).unwrap_or(0))
}

/// How many profiles [`Profiles::write_rest`] writes for a session that
/// ends at `until`: one per interval that ended by then, plus the last
/// one, cut short.
pub(super) fn profiles_left(agg: &rprof_report::Aggregate, step_ns: u64, until: u64) -> u64 {
    let mut n = 1;
    let mut cutoff = agg.cutoff();
    while let Some(end) = cutoff.filter(|end| *end <= until) {
        n += 1;
        // As `roll` moves it; a zero step would not move it at all.
        cutoff = Some(end.saturating_add(step_ns.max(1)));
    }
    n
}

/// How long after an interval's end the daemon waits for its samples:
/// the module drains its rings every 50 ms by default, and the daemon
/// flushes them before it writes.
pub(super) const GRACE: Duration = Duration::from_millis(250);

/// The first wait before a session is tried again after a renewal could
/// not start one; it doubles up to [`RETRY_MAX`].
pub(super) const RETRY_FIRST: Duration = Duration::from_secs(1);
pub(super) const RETRY_MAX: Duration = Duration::from_secs(60);

/// The stream's clock as the daemon reads it: the START record's time
/// plus what the daemon's own monotonic clock says has passed since
/// START returned.  Not CLOCK_MONOTONIC itself: in a time namespace the
/// daemon's CLOCK_MONOTONIC is offset from the kernel's, which stamps the
/// stream.
pub(super) struct StreamClock {
    /// When the session's START returned.
    pub(super) started_at: Instant,
}

impl StreamClock {
    pub(super) fn new() -> Self {
        StreamClock {
            started_at: Instant::now(),
        }
    }

    /// Now in the stream's clock, once `sink` has its START record.
    pub(super) fn now(&self, sink: &live::AggregateSink) -> Option<u64> {
        let start = sink.agg.span.start_ns?;
        Some(start.saturating_add(nanos(self.started_at.elapsed())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::profile::{names_in, SUFFIX};
    use crate::daemon::testutil::stream;

    /// A daemon that fell behind (or a renewal) ends a session holding
    /// samples of several intervals: each complete interval gets its own
    /// profile, then the part up to the STOP; none lumps them together.
    #[test]
    fn the_rest_of_a_session_is_written_interval_by_interval() {
        use clap::Parser;
        use rprof_decode::Record;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            d: DaemonArgs,
        }
        let dir = std::env::temp_dir().join(format!("rprof-rest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let args = Cli::parse_from(["d", "--dir", dir.to_str().unwrap(), "--interval", "1"]).d;
        let config = args.sampling.config(None).unwrap();
        let mut out = Profiles {
            args: &args,
            config: &config,
            started: Duration::from_secs(1_000_000),
            first: 0,
            seq: 0,
            written: 0,
            skipped: 0,
        };
        let s = 1_000_000_000u64;
        let mut stream = stream(
            config,
            10 * s,
            &[
                10 * s + s / 2,
                11 * s + 1,
                11 * s + s / 2,
                12 * s,
                12 * s + 9 * s / 10,
                12 * s + 1,
                12 * s + 2,
            ],
        );
        Record::Stop {
            time_ns: 13 * s + s / 5,
            config,
        }
        .encode(&mut stream);
        let mut sink = live::AggregateSink::new();
        sink.agg.set_interval(Some(s));
        sink.agg.set_cutoff(Some(11 * s));
        crate::session::Sink::feed(&mut sink, &stream).unwrap();
        let mut sym = rprof_report::Symbolizer::new("", &[], None);
        let until = session_end(&sink, &StreamClock::new());
        assert_eq!(until, 13 * s + s / 5);
        // A renewal numbers the next session's profiles with this count
        // before the writer has written any.
        let left = profiles_left(&sink.agg, s, until);
        out.write_rest(&mut sink, &mut sym, s, until);
        assert_eq!(out.seq, left);
        let mut names = names_in(&dir, |n| n.ends_with(SUFFIX)).unwrap();
        names.sort();
        let counts: Vec<i64> = names
            .iter()
            .map(|n| {
                let p = rprof_report::pprof::read(&std::fs::read(dir.join(n)).unwrap()).unwrap();
                p.sample.iter().map(|x| x.value[0]).sum()
            })
            .collect();
        assert_eq!(counts, [1, 2, 4, 0], "{names:?}");
        assert_eq!((out.written, out.skipped), (4, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A session without a STOP record ends "now" in the stream's own
    /// clock: its START time plus what has passed since, whatever the
    /// daemon's CLOCK_MONOTONIC reads (in a time namespace it is offset
    /// from the kernel's; before, the daemon scheduled with its own).
    #[test]
    fn the_stream_clock_runs_from_start() {
        use rprof_decode::Record;
        let config = rprof_abi::rprof_config::default();
        let mut stream = Vec::new();
        // Five seconds after boot in the kernel's clock.
        let start = 5_000_000_000u64;
        Record::Start {
            time_ns: start,
            config,
        }
        .encode(&mut stream);
        let mut sink = live::AggregateSink::new();
        let clock = StreamClock::new();
        assert_eq!(clock.now(&sink), None, "no START read yet");
        crate::session::Sink::feed(&mut sink, &stream).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let end = session_end(&sink, &clock);
        assert!(
            (start + 20_000_000..start + 10_000_000_000).contains(&end),
            "{end}"
        );
    }
}

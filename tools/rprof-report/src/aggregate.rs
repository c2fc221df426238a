//! Counting samples of a stream by (event, task, cookie, offset).

use rprof_abi::*;
use rprof_decode::{Decoder, LostTotals, Record, ResolvedSample, Resolver, SessionSpan, Stack};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What samples are counted by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// Index of the event in the session's configuration.
    pub event: u32,
    /// Thread group id (0: idle, or no TASK record).
    pub pid: u32,
    /// Thread id, when the aggregate counts threads apart
    /// ([`Aggregate::with_filter`]); 0 otherwise.
    pub tid: u32,
    /// The task's comm (`[unknown]` without a TASK record).
    pub comm: Arc<str>,
    /// The cookie the offset is relative to.
    pub cookie: u64,
    /// File offset, module offset, or ip (see `struct rprof_sample`).
    pub offset: u64,
    /// The sample's call chain, if it has one.
    pub stack: Option<Arc<Stack>>,
    /// Taken in user mode (which frames of `stack` are return
    /// addresses depends on it, see [`Stack::is_return_address`]).
    pub user: bool,
}

impl Key {
    /// The key of a resolved sample whose task's comm is `comm`, with
    /// its thread (`by_thread`) or not.
    pub fn of(s: &ResolvedSample, comm: Arc<str>, by_thread: bool) -> Key {
        Key {
            event: s.event,
            pid: s.pid().unwrap_or(0),
            tid: if by_thread { s.tid().unwrap_or(0) } else { 0 },
            comm,
            cookie: s.cookie,
            offset: s.offset,
            stack: s.stack.clone(),
            user: s.user,
        }
    }
}

/// Samples of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// How many.
    pub samples: u64,
    /// The sum of their periods.
    pub period: u64,
}

/// Which samples a report shows.
///
/// `pid`, `comm` and `event` are properties of the counted [`Key`]s and
/// are applied when reporting ([`accepts`](Self::accepts)); `tids`,
/// `cpus` and `time` are not kept in the counts, so an [`Aggregate`] made
/// [`with_filter`](Aggregate::with_filter) applies them while it counts
/// ([`accepts_sample`](Self::accepts_sample)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this thread group.
    pub pid: Option<u32>,
    /// Only tasks with this comm.
    pub comm: Option<String>,
    /// Only this event index.
    pub event: Option<u32>,
    /// Only these threads (empty: all).
    pub tids: Vec<u32>,
    /// Only samples taken on these CPUs (empty: all).
    pub cpus: Vec<u32>,
    /// Only samples taken in this span of the module's clock.
    pub time: Option<TimeRange>,
}

/// A span of the module's clock (`time_ns` of the samples), either end
/// open: `start <= t < end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// The first nanosecond in the span.
    pub start: Option<u64>,
    /// The first nanosecond past it.
    pub end: Option<u64>,
}

impl TimeRange {
    /// Parses `START,END` in seconds (as `rprof script` prints times, up
    /// to nanoseconds), either side empty for an open end: `5.2,6`,
    /// `5.2,`, `,6`.
    pub fn parse(spec: &str) -> Result<TimeRange, String> {
        let Some((a, b)) = spec.split_once(',') else {
            return Err(format!(
                "--time {spec}: expected START,END in seconds (either may be empty)"
            ));
        };
        let range = TimeRange {
            start: parse_seconds(a.trim())?,
            end: parse_seconds(b.trim())?,
        };
        if let (Some(s), Some(e)) = (range.start, range.end) {
            if e <= s {
                return Err(format!("--time {spec}: the end is not after the start"));
            }
        }
        Ok(range)
    }

    /// Whether `t` is in the span.
    pub fn contains(&self, t: u64) -> bool {
        self.start.is_none_or(|s| t >= s) && self.end.is_none_or(|e| t < e)
    }
}

/// Seconds with up to 9 decimals, as nanoseconds; "" is `None`.
fn parse_seconds(s: &str) -> Result<Option<u64>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    let bad = || format!("{s:?} is not a time in seconds (such as 12.345678901)");
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9
        || !(whole.chars().chain(frac.chars())).all(|c| c.is_ascii_digit())
        || (whole.is_empty() && frac.is_empty())
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(frac))
        .map(Some)
        .ok_or_else(bad)
}

/// Parses a CPU list as perf takes it: `0,2-3` (CPUs 0, 2 and 3).
pub fn parse_cpu_list(spec: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("--cpu {spec}: expected a list of CPUs and ranges such as 0,2-3");
    let mut cpus = Vec::new();
    for part in spec.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: u32 = a.trim().parse().map_err(|_| bad())?;
        let b: u32 = b.trim().parse().map_err(|_| bad())?;
        if b < a || b - a >= 1 << 16 {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

impl Filter {
    /// Whether `key` passes (`pid`, `comm`, `event`).
    pub fn accepts(&self, key: &Key) -> bool {
        self.pid.is_none_or(|p| p == key.pid)
            && self.comm.as_deref().is_none_or(|c| c == &*key.comm)
            && self.event.is_none_or(|e| e == key.event)
    }

    /// Whether sample `s` passes `tids`, `cpus` and `time` (a sample
    /// without a TASK record has no thread or CPU: it passes only if
    /// those are not asked for).
    pub fn accepts_sample(&self, s: &ResolvedSample) -> bool {
        (self.tids.is_empty() || s.tid().is_some_and(|t| self.tids.contains(&t)))
            && (self.cpus.is_empty() || s.cpu().is_some_and(|c| self.cpus.contains(&c)))
            && self.time.is_none_or(|r| r.contains(s.time_ns))
    }

    /// Whether `tids`, `cpus` or `time` is set.
    pub fn by_sample(&self) -> bool {
        !self.tids.is_empty() || !self.cpus.is_empty() || self.time.is_some()
    }

    /// Whether any filter is set.
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    /// The filters in words, for a report's header ("pid 7, CPUs 0-1").
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.pid {
            parts.push(format!("pid {p}"));
        }
        if let Some(c) = &self.comm {
            parts.push(format!("comm {c}"));
        }
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        if !self.tids.is_empty() {
            parts.push(format!("tid {}", list(&self.tids)));
        }
        if !self.cpus.is_empty() {
            parts.push(format!("cpu {}", list(&self.cpus)));
        }
        if let Some(r) = self.time {
            let s = |t: Option<u64>| {
                t.map_or(String::new(), |t| {
                    format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
                })
            };
            parts.push(format!("time {},{}", s(r.start), s(r.end)));
        }
        parts.join(", ")
    }
}

/// A stream's samples, counted, and what it said about losses.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    resolver: Resolver,
    comms: HashSet<Arc<str>>,
    counts: HashMap<Key, Counts>,
    /// Samples counted.
    pub samples: u64,
    /// LOST counts by stage (`other`: stages this program does not know).
    pub lost: LostTotals,
    /// THROTTLE records.
    pub throttles: u64,
    /// START and STOP records.
    pub span: SessionSpan,
    /// Samples taken at or after this time (the stream's clock, as
    /// `time_ns`) belong to a later interval of a continuous session:
    /// they are counted apart until [`roll`](Self::roll).
    cutoff_ns: Option<u64>,
    /// The intervals' length, if known ([`set_interval`](Self::set_interval)):
    /// samples past the cutoff are then counted apart per interval.
    step_ns: Option<u64>,
    /// Where the current interval began (the last cutoff rolled past).
    floor_ns: Option<u64>,
    /// Later intervals' counts and samples so far, by the interval's
    /// start (one bucket at the cutoff without a step).
    later: std::collections::BTreeMap<u64, (HashMap<Key, Counts>, u64)>,
    /// Samples of an earlier interval that arrived after it was closed
    /// (counted in this one).
    pub late: u64,
    /// Applied to every sample before it is counted (its `tids`, `cpus`
    /// and `time`).
    sample_filter: Filter,
    /// Samples that `sample_filter` kept out of the counts.
    pub filtered_out: u64,
    /// Threads are counted apart (a recording's report); a live one
    /// (`top`, the daemon) counts processes only.
    by_thread: bool,
}

impl Aggregate {
    /// An empty aggregate at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty aggregate that counts only the samples passing `filter`'s
    /// per-sample parts (`tids`, `cpus`, `time`); the others are counted
    /// in [`filtered_out`](Self::filtered_out).  It counts threads apart
    /// (each [`Key::tid`]), for reports by thread.
    pub fn with_filter(filter: &Filter) -> Self {
        Aggregate {
            by_thread: true,
            sample_filter: Filter {
                tids: filter.tids.clone(),
                cpus: filter.cpus.clone(),
                time: filter.time,
                ..Filter::default()
            },
            ..Self::default()
        }
    }

    /// An empty aggregate that reads on from where this one is in the
    /// same stream: the stream's state (cookie names, the current task
    /// and cookie, stacks) copied, no counts, no losses, no intervals.
    /// It counts only the samples passing `filter`'s per-sample parts
    /// (`tids`, `cpus`, `time`), threads apart or not as this one does.
    /// Fed the records this one is fed from now on, it counts what a
    /// scrape of a continuous session asks for (the daemon's pull
    /// endpoint: one per scrape, beside the session's own).
    pub fn fork(&self, filter: &Filter) -> Aggregate {
        Aggregate {
            resolver: self.resolver.clone(),
            by_thread: self.by_thread,
            sample_filter: Filter {
                tids: filter.tids.clone(),
                cpus: filter.cpus.clone(),
                time: filter.time,
                ..Filter::default()
            },
            ..Aggregate::default()
        }
    }

    /// Takes the next record of the stream.
    pub fn feed(&mut self, record: &Record) {
        match record {
            Record::Lost { stage, count, .. } => self.lost.add(*stage, *count),
            Record::Throttle { .. } => self.throttles += 1,
            Record::Start { time_ns, .. } => {
                self.span.add(record);
                // With intervals, the first one ends a step after START,
                // so that samples read in the same chunk as START are
                // already counted by interval.
                if let (None, Some(step)) = (self.cutoff_ns, self.step_ns) {
                    self.cutoff_ns = Some(time_ns.saturating_add(step));
                }
            }
            Record::Stop { .. } => self.span.add(record),
            _ => {}
        }
        let Some(s) = self.resolver.feed(record) else {
            return;
        };
        if !self.sample_filter.accepts_sample(&s) {
            self.filtered_out += 1;
            return;
        }
        let comm = s.comm().unwrap_or("[unknown]");
        let comm = match self.comms.get(comm) {
            Some(c) => c.clone(),
            None => {
                let c: Arc<str> = Arc::from(comm);
                self.comms.insert(c.clone());
                c
            }
        };
        let key = Key::of(&s, comm, self.by_thread);
        let later = self.cutoff_ns.filter(|c| s.time_ns >= *c);
        if later.is_none() && self.floor_ns.is_some_and(|f| s.time_ns < f) {
            self.late += 1;
        }
        let (counts, samples) = match later {
            Some(cutoff) => {
                let start = match self.step_ns {
                    Some(step) => cutoff + (s.time_ns - cutoff) / step * step,
                    None => cutoff,
                };
                let bucket = self.later.entry(start).or_default();
                (&mut bucket.0, &mut bucket.1)
            }
            None => (&mut self.counts, &mut self.samples),
        };
        let c = counts.entry(key).or_default();
        c.samples += 1;
        c.period = c.period.saturating_add(s.period);
        *samples += 1;
    }

    /// Counts threads apart from now on (each [`Key::tid`]), or not.
    pub fn count_threads(&mut self, yes: bool) {
        self.by_thread = yes;
    }

    /// Counts samples taken at or after `ns` (the module's clock) apart,
    /// for the next interval; `None` counts every sample now, those
    /// already counted apart included (the last interval of a session).
    pub fn set_cutoff(&mut self, ns: Option<u64>) {
        self.cutoff_ns = ns;
        if ns.is_none() {
            for (counts, samples) in std::mem::take(&mut self.later).into_values() {
                for (key, c) in counts {
                    let e = self.counts.entry(key).or_default();
                    e.samples = e.samples.saturating_add(c.samples);
                    e.period = e.period.saturating_add(c.period);
                }
                self.samples = self.samples.saturating_add(samples);
            }
        }
    }

    /// The intervals are `ns` long (from the cutoff on): samples past the
    /// cutoff are counted apart per interval, so that a reader that fell
    /// several intervals behind still gives each its own samples.  Without
    /// a cutoff, the START record sets it one interval after its time.
    pub fn set_interval(&mut self, ns: Option<u64>) {
        self.step_ns = ns.filter(|n| *n > 0);
    }

    /// The current cutoff (see [`set_cutoff`](Self::set_cutoff)).
    pub fn cutoff(&self) -> Option<u64> {
        self.cutoff_ns
    }

    /// Ends the current interval as [`roll`](Self::roll) does, and
    /// returns it as an aggregate of its own, to be written elsewhere
    /// while this one reads on: its counts and totals (moved out) with
    /// the names of the session's files, which is all that symbolizing
    /// them needs (each count's key holds its stack and comm).  Copies
    /// only the names, bounded by the session's cookie table.
    pub fn take_interval(&mut self, next: Option<u64>) -> Aggregate {
        let current = Aggregate {
            resolver: self.resolver.names_only(),
            counts: std::mem::take(&mut self.counts),
            samples: self.samples,
            lost: self.lost,
            throttles: self.throttles,
            span: self.span,
            late: self.late,
            filtered_out: self.filtered_out,
            ..Aggregate::default()
        };
        self.roll(next);
        current
    }

    /// Ends the current interval of a continuous session: the samples
    /// counted apart for the interval that starts at the cutoff (with
    /// [`set_interval`](Self::set_interval); without, all counted apart)
    /// become the counts, losses
    /// and throttles start from zero, and samples before the old cutoff
    /// that still arrive count as [`late`](Self::late).  The new cutoff
    /// is `next`.  The stream's state (cookies, tasks, stacks) is kept.
    pub fn roll(&mut self, next: Option<u64>) {
        let (counts, samples) = self
            .cutoff_ns
            .and_then(|c| self.later.remove(&c))
            .unwrap_or_default();
        self.counts = counts;
        self.samples = samples;
        self.lost = LostTotals::default();
        self.throttles = 0;
        self.late = 0;
        self.filtered_out = 0;
        self.floor_ns = self.cutoff_ns.or(self.floor_ns);
        self.cutoff_ns = next;
        self.forget_retired();
        // Comms no count holds (a session that runs for weeks sees many).
        self.comms.retain(|c| Arc::strong_count(c) > 1);
    }

    /// Forgets the names of cookies a RESET record retired that no count
    /// still held needs (a continuous session keeps its memory bounded by
    /// the module's cookie table, however many it resets).
    fn forget_retired(&mut self) {
        if !self.resolver.has_retired() {
            return;
        }
        let mut keep = HashSet::new();
        let held = self.later.values().flat_map(|(c, _)| c.keys());
        for key in self.counts.keys().chain(held) {
            keep.insert(key.cookie);
            if let Some(stack) = &key.stack {
                keep.extend(stack.frames.iter().map(|(c, _)| *c));
            }
        }
        self.resolver.forget_retired(|c| keep.contains(&c));
    }

    /// Decodes `stream` and feeds every record.  A malformed record ends
    /// the walk: the error names its byte offset in the stream (what came
    /// before it is counted).
    pub fn feed_stream(&mut self, stream: &[u8]) -> Result<(), String> {
        self.feed_stream_with_progress(stream, &mut |_| {})
    }

    /// [`feed_stream`](Self::feed_stream), telling `progress` how many
    /// bytes of `stream` are decoded every few thousand records and at
    /// the end.
    pub fn feed_stream_with_progress(
        &mut self,
        stream: &[u8],
        progress: &mut dyn FnMut(usize),
    ) -> Result<(), String> {
        let mut decoder = Decoder::new(stream);
        let mut n = 0u32;
        while let Some(item) = decoder.next() {
            match item {
                Ok(r) => self.feed(&r),
                Err(e) => {
                    return Err(format!(
                        "malformed record at stream offset {}: {}",
                        e.offset, e.kind
                    ))
                }
            }
            n = n.wrapping_add(1);
            if n % 4096 == 0 {
                progress(decoder.position());
            }
        }
        progress(stream.len());
        Ok(())
    }

    /// The counts, by key.
    pub fn counts(&self) -> &HashMap<Key, Counts> {
        &self.counts
    }

    /// The stream's state: cookie names, current context.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// Forgets the counts (not the stream's state): the next interval of
    /// a continuous session starts from zero.
    pub fn clear_counts(&mut self) {
        self.counts.clear();
        self.samples = 0;
        self.lost = LostTotals::default();
        self.throttles = 0;
        self.late = 0;
        self.filtered_out = 0;
    }

    /// All lost samples.
    pub fn lost_total(&self) -> u64 {
        // Counts come from the stream: LostTotals saturates.
        self.lost.total()
    }

    /// "ring 0, buffer 0, no_mm 1, ..., mm_busy 0" for a header.
    pub fn lost_line(&self) -> String {
        self.lost.to_string()
    }
}

/// Samples of `agg` that pass `filter`.
pub fn filtered_samples(agg: &Aggregate, filter: &Filter) -> u64 {
    agg.counts
        .iter()
        .filter(|(k, _)| filter.accepts(k))
        .map(|(_, c)| c.samples)
        .sum()
}

/// Whether `cookie` is one of the fixed ones (NONE, KERNEL, ANON).
pub fn is_fixed_cookie(cookie: u64) -> bool {
    cookie < u64::from(RPROF_COOKIE_FIRST)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    /// A user sample at `time_ns` of `period`, at offset 0x10.
    fn sample_at(time_ns: u64, period: u64) -> Record {
        Record::Sample {
            flags: 1,
            time_ns,
            offset: 0x10,
            period,
            stack: None,
        }
    }

    /// The TASK record of thread 7 of process 7, "w", on CPU 0.
    fn task_w() -> Record {
        Record::Task {
            cpu: 0,
            pid: 7,
            tid: 7,
            exe_cookie: 0,
            comm: "w".into(),
        }
    }

    #[test]
    fn time_ranges_and_cpu_lists_parse() {
        let r = TimeRange::parse("5.2,6").unwrap();
        assert_eq!((r.start, r.end), (Some(5_200_000_000), Some(6_000_000_000)));
        let r = TimeRange::parse(" 8.694761507 , ").unwrap();
        assert_eq!((r.start, r.end), (Some(8_694_761_507), None));
        assert_eq!(TimeRange::parse(",.5").unwrap().end, Some(500_000_000));
        assert!(r.contains(8_694_761_507) && !r.contains(8_694_761_506));
        let r = TimeRange::parse("1,2").unwrap();
        assert!(r.contains(1_999_999_999) && !r.contains(2_000_000_000));
        for bad in [
            "5",
            "a,b",
            "1.0000000001,",
            "2,1",
            "1,1",
            "-1,",
            "1e3,",
            ".,",
            "99999999999999999999,",
        ] {
            assert!(TimeRange::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_cpu_list("0,2-3,2").unwrap(), [0, 2, 3]);
        assert_eq!(parse_cpu_list("7").unwrap(), [7]);
        for bad in ["", "1-", "3-1", "x", "0-4294967295", "1,,2"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad}");
        }
    }

    /// A fork reads on in the same stream (it knows the task and the
    /// file named before it), counts only what its filter's time span
    /// keeps, and leaves the aggregate it came from as it was.
    #[test]
    fn a_fork_reads_on_with_the_streams_state() {
        let mut agg = Aggregate::new();
        let named = Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: 1,
            ino: 2,
            path: "/bin/w".into(),
        };
        for r in [
            task_w(),
            named,
            Record::Switch { cookie: 16 },
            sample_at(5, 1),
        ] {
            agg.feed(&r);
        }
        let window = Filter {
            time: Some(TimeRange {
                start: Some(10),
                end: Some(20),
            }),
            ..Filter::default()
        };
        let mut fork = agg.fork(&window);
        assert_eq!(fork.samples, 0);
        for t in [9, 10, 15, 19, 20] {
            let r = sample_at(t, 2);
            agg.feed(&r);
            fork.feed(&r);
        }
        assert_eq!((agg.samples, fork.samples, fork.filtered_out), (6, 3, 2));
        let keys: Vec<&Key> = fork.counts().keys().collect();
        assert_eq!(keys.len(), 1);
        assert_eq!((keys[0].pid, &*keys[0].comm, keys[0].cookie), (7, "w", 16));
        assert_eq!(fork.counts()[keys[0]].period, 6);
        assert!(fork.resolver().name(16).is_some(), "the file's name");
    }

    /// Threads, CPUs and a time span are applied as samples are counted;
    /// what they keep out is counted apart.
    #[test]
    fn per_sample_filters_count_what_passes() {
        let sample = |time_ns| sample_at(time_ns, 1);
        let task = |cpu, tid| Record::Task {
            cpu,
            pid: 7,
            tid,
            exe_cookie: 0,
            comm: "w".into(),
        };
        let mut stream = Vec::new();
        for r in [
            task(0, 7),
            sample(10),
            sample(20),
            task(1, 8),
            sample(30),
            sample(40),
            task(0, 8),
            sample(50),
        ] {
            r.encode(&mut stream);
        }
        let count = |f: Filter| {
            let mut agg = Aggregate::with_filter(&f);
            agg.feed_stream(&stream).unwrap();
            assert_eq!(agg.samples + agg.filtered_out, 5);
            agg.samples
        };
        assert_eq!(count(Filter::default()), 5);
        assert_eq!(
            count(Filter {
                tids: vec![8],
                ..Filter::default()
            }),
            3
        );
        assert_eq!(
            count(Filter {
                cpus: vec![0],
                ..Filter::default()
            }),
            3
        );
        assert_eq!(
            count(Filter {
                cpus: vec![2],
                ..Filter::default()
            }),
            0
        );
        let time = |start, end| Some(TimeRange { start, end });
        assert_eq!(
            count(Filter {
                time: time(Some(20), Some(40)),
                ..Filter::default()
            }),
            2
        );
        assert_eq!(
            count(Filter {
                time: time(None, Some(20)),
                ..Filter::default()
            }),
            1
        );
        assert_eq!(
            count(Filter {
                tids: vec![8],
                cpus: vec![0],
                time: time(Some(41), None),
                ..Filter::default()
            }),
            1
        );
        // Key filters are not applied while counting.
        assert_eq!(
            count(Filter {
                pid: Some(99),
                ..Filter::default()
            }),
            5
        );
    }

    #[test]
    fn counts_samples_and_losses() {
        let (stream, _) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        assert_eq!(agg.samples, testdata::SAMPLES);
        assert_eq!(agg.lost.no_mapping, 3);
        assert_eq!(agg.lost_total(), 3);
        assert_eq!((agg.span.starts, agg.span.stops), (1, 1));
        assert!(agg.lost_line().contains("no_mapping 3"));
        agg.feed(&Record::Lost {
            stage: RPROF_LOST_MM_BUSY,
            cpu: 1,
            count: 2,
        });
        assert_eq!(agg.lost_total(), 5);
        assert!(
            agg.lost_line().ends_with("no_cookie 0, mm_busy 2"),
            "{}",
            agg.lost_line()
        );
        let f = Filter {
            comm: Some("attr_main".into()),
            ..Filter::default()
        };
        assert_eq!(filtered_samples(&agg, &f), 40);
        let f = Filter {
            pid: Some(0),
            ..Filter::default()
        };
        assert_eq!(filtered_samples(&agg, &f), 10);
        agg.clear_counts();
        assert_eq!((agg.samples, agg.counts().len()), (0, 0));
        assert!(agg.resolver().path(16).is_some(), "names survive a clear");
    }

    /// A continuous session's intervals follow the samples' own times,
    /// not when they were read: a sample at or after the cutoff waits for
    /// the next interval, and one of a closed interval counts as late.
    #[test]
    fn intervals_by_sample_time() {
        let sample = |time_ns| sample_at(time_ns, 1);
        let mut agg = Aggregate::new();
        let head = [
            task_w(),
            Record::Switch {
                cookie: u64::from(RPROF_COOKIE_ANON),
            },
        ];
        for r in &head {
            agg.feed(r);
        }
        agg.set_cutoff(Some(25));
        for t in [10, 20, 30, 40] {
            agg.feed(&sample(t));
        }
        agg.feed(&Record::Lost {
            stage: 1,
            cpu: 0,
            count: 2,
        });
        assert_eq!((agg.samples, agg.lost_total(), agg.late), (2, 2, 0));
        agg.roll(Some(45));
        assert_eq!(
            (agg.samples, agg.lost_total(), agg.cutoff()),
            (2, 0, Some(45))
        );
        // From another CPU, read late: before the interval just closed.
        agg.feed(&sample(15));
        agg.feed(&sample(50));
        assert_eq!((agg.samples, agg.late), (3, 1));
        agg.roll(None);
        assert_eq!((agg.samples, agg.late), (1, 0));
        agg.feed(&sample(1000));
        assert_eq!(agg.samples, 2);
        // The end of a session: what was counted apart joins the last
        // interval.
        agg.set_cutoff(Some(2000));
        agg.feed(&sample(1500));
        agg.feed(&sample(2500));
        assert_eq!(agg.samples, 3);
        agg.set_cutoff(None);
        assert_eq!(agg.samples, 4);
        assert_eq!(agg.counts().values().map(|c| c.samples).sum::<u64>(), 4);
    }

    /// The current interval taken out for a writer elsewhere holds its
    /// own samples, totals and the names they need; what was counted
    /// apart for the next interval stays and becomes the next one.
    #[test]
    fn an_interval_taken_out() {
        let sample = |time_ns| sample_at(time_ns, 3);
        let mut agg = Aggregate::new();
        agg.feed(&task_w());
        agg.feed(&Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: 1,
            ino: 2,
            path: "/bin/w".into(),
        });
        agg.feed(&Record::Switch { cookie: 16 });
        agg.set_cutoff(Some(25));
        for t in [10, 20, 30] {
            agg.feed(&sample(t));
        }
        agg.feed(&Record::Lost {
            stage: 2,
            cpu: 0,
            count: 5,
        });
        let current = agg.take_interval(Some(45));
        assert_eq!((current.samples, current.lost_total()), (2, 5));
        let c: Vec<_> = current.counts().iter().collect();
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].1.samples, c[0].1.period), (2, 6));
        assert_eq!(&*c[0].0.comm, "w");
        assert_eq!(current.cutoff(), None);
        // The names, and not the rest of the stream's state.
        assert!(current.resolver().name(16).is_some());
        // The next interval: the sample at 30, and the stream's context
        // still known to the one that reads on.
        assert_eq!((agg.samples, agg.lost_total()), (1, 0));
        agg.feed(&sample(40));
        assert_eq!(agg.samples, 2);
        assert_eq!(agg.counts().values().map(|c| c.samples).sum::<u64>(), 2);
    }

    /// A continuous session whose module reset its cookies: the interval
    /// taken still has the names its counts need (before and after the
    /// RESET), and the aggregate that reads on forgets a retired name as
    /// soon as no count it holds needs it (here, one interval later: a
    /// sample of the next interval named it, as its leaf or in its
    /// chain), never before.
    #[test]
    fn retired_names_go_once_no_count_needs_them() {
        let cookie = |c: u64| Record::Cookie {
            cookie: c,
            flags: 0,
            dev: 1,
            ino: c,
            path: format!("/bin/p{c}"),
        };
        let mut agg = Aggregate::new();
        agg.set_interval(Some(10));
        agg.set_cutoff(Some(20));
        let sample = |time_ns| sample_at(time_ns, 1);
        for r in [
            cookie(16),
            cookie(17),
            task_w(),
            Record::Switch { cookie: 16 },
        ] {
            agg.feed(&r);
        }
        agg.feed(&sample(12));
        agg.feed(&Record::Switch { cookie: 17 });
        agg.feed(&Record::Stack {
            id: 1,
            flags: 0,
            nr_kernel: 0,
            frames: vec![(16, 0x40)],
        });
        // Read early: interval [20, 30), in 17 called from 16.
        agg.feed(&Record::Sample {
            flags: 1,
            time_ns: 21,
            offset: 0x10,
            period: 1,
            stack: Some(1),
        });
        agg.feed(&Record::Reset {
            time_ns: 15,
            next_cookie: 18,
            next_stack: 1,
        });
        for r in [cookie(18), task_w(), Record::Switch { cookie: 18 }] {
            agg.feed(&r);
        }
        agg.feed(&sample(16));
        assert_eq!(agg.resolver().names_since_reset(), 1);
        let names = |a: &Aggregate| a.resolver().names().keys().copied().collect::<Vec<_>>();
        let first = agg.take_interval(Some(30));
        assert_eq!(first.samples, 2);
        assert_eq!(names(&first), [16, 17, 18]);
        // 16 and 17 are needed by the second interval's sample.
        assert_eq!(names(&agg), [16, 17, 18]);
        let second = agg.take_interval(Some(40));
        assert_eq!(second.samples, 1);
        assert_eq!(names(&second), [16, 17, 18]);
        assert_eq!(names(&agg), [18]);
    }

    /// A retired name that only the interval just taken needed goes at
    /// once (its copy in that interval stays).
    #[test]
    fn a_retired_name_goes_with_the_last_interval_that_needed_it() {
        let mut agg = Aggregate::new();
        agg.set_interval(Some(10));
        agg.set_cutoff(Some(20));
        agg.feed(&Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: 1,
            ino: 16,
            path: "/bin/p16".into(),
        });
        agg.feed(&task_w());
        agg.feed(&Record::Switch { cookie: 16 });
        agg.feed(&sample_at(12, 1));
        agg.feed(&Record::Reset {
            time_ns: 15,
            next_cookie: 17,
            next_stack: 1,
        });
        let first = agg.take_interval(Some(30));
        assert!(first.resolver().name(16).is_some());
        assert!(agg.resolver().name(16).is_none());
    }

    /// A reader that fell several intervals behind: samples read early
    /// for intervals past the next one keep to their own interval (one
    /// bucket each), not lumped into the next.
    #[test]
    fn intervals_read_late_keep_their_samples() {
        let sample = |time_ns| sample_at(time_ns, 1);
        let mut agg = Aggregate::new();
        agg.feed(&task_w());
        agg.set_interval(Some(10));
        agg.set_cutoff(Some(20));
        for t in [5, 25, 35, 36, 47, 19] {
            agg.feed(&sample(t));
        }
        assert_eq!(agg.samples, 2);
        let mut per_interval = Vec::new();
        for next in [30, 40, 50] {
            agg.roll(Some(next));
            per_interval.push(agg.samples);
        }
        assert_eq!(per_interval, [1, 2, 1]);
        assert_eq!(agg.late, 0);
    }

    /// A reader that reads a session's START and seconds of its samples in
    /// one chunk (rprofd after a renewal, while it read kallsyms): the
    /// START sets the first cutoff before those samples are counted.
    #[test]
    fn the_start_record_sets_the_first_cutoff() {
        let sample = |time_ns| sample_at(time_ns, 1);
        let config = crate::testdata::config();
        let mut agg = Aggregate::new();
        agg.set_interval(Some(10));
        agg.feed(&Record::Start {
            time_ns: 100,
            config,
        });
        agg.feed(&task_w());
        for t in [101, 115, 116, 135] {
            agg.feed(&sample(t));
        }
        assert_eq!((agg.samples, agg.cutoff()), (1, Some(110)));
        let mut per_interval = Vec::new();
        for next in [120, 130, 140] {
            agg.roll(Some(next));
            per_interval.push(agg.samples);
        }
        assert_eq!(per_interval, [2, 0, 1]);
    }

    #[test]
    fn malformed_stream_names_the_offset() {
        let (mut stream, _) = testdata::stream();
        let len = stream.len();
        stream.extend_from_slice(&[1, 0, 0, 0, 12, 0, 0, 0]);
        let mut agg = Aggregate::new();
        let e = agg.feed_stream(&stream).unwrap_err();
        assert!(e.contains(&format!("offset {len}")), "{e}");
        assert_eq!(agg.samples, testdata::SAMPLES);
    }
}

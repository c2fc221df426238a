//! Event names, the `EVENT[:PERIOD|@FREQ][:u|:k]` syntax and session
//! configurations built from them.

use rprof_abi::*;
use std::fmt;
use std::str::FromStr;

/// The events rprof can sample: name, `enum rprof_event_kind` value, and
/// whether it needs a hardware PMU.
pub const EVENTS: &[(&str, u32, bool)] = &[
    ("cpu-clock", RPROF_EVENT_CPU_CLOCK, false),
    ("task-clock", RPROF_EVENT_TASK_CLOCK, false),
    ("cycles", RPROF_EVENT_CYCLES, true),
    ("instructions", RPROF_EVENT_INSTRUCTIONS, true),
    ("cache-misses", RPROF_EVENT_CACHE_MISSES, true),
    ("branch-misses", RPROF_EVENT_BRANCH_MISSES, true),
];

/// The default sampling frequency, in Hz.
pub const DEFAULT_FREQ_HZ: u64 = 1000;

/// The `enum rprof_event_kind` value of event `name`.
pub fn event_kind(name: &str) -> Option<u32> {
    EVENTS.iter().find(|e| e.0 == name).map(|e| e.1)
}

/// The name of event kind `kind`.
pub fn event_name(kind: u32) -> Option<&'static str> {
    EVENTS.iter().find(|e| e.1 == kind).map(|e| e.0)
}

/// How often an event is sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// Every this many events.
    Period(u64),
    /// About this many times a second.
    Freq(u64),
}

/// Which privilege levels an event counts, as perf's `:u` and `:k`
/// modifiers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Levels {
    /// Both (no modifier, or `:uk`).
    #[default]
    All,
    /// `:u`: user mode only.
    User,
    /// `:k`: kernel mode only.
    Kernel,
}

/// One `-e` argument: an event and, optionally, how often to sample it
/// and at which privilege levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSpec {
    /// `enum rprof_event_kind`.
    pub kind: u32,
    /// `None`: the `-c` period, the `-F` frequency, or [`DEFAULT_FREQ_HZ`].
    pub sampling: Option<Sampling>,
    /// perf's `:u` / `:k`.  The module applies them to the whole session,
    /// so every event of a session must ask for the same levels.
    pub levels: Levels,
}

impl EventSpec {
    /// The `struct rprof_event_config` of this event; `default_freq` is
    /// used if the event names no period or frequency of its own.
    pub fn to_config(&self, default_freq: u64) -> rprof_event_config {
        let (flags, period) = match self.sampling.unwrap_or(Sampling::Freq(default_freq)) {
            Sampling::Period(p) => (0, p),
            Sampling::Freq(hz) => (RPROF_EVENT_FREQ, hz),
        };
        rprof_event_config {
            kind: self.kind,
            flags,
            period,
        }
    }
}

/// Milliseconds of samples a CPU's ring should hold at the session's
/// rate.  The drain empties the rings every 50 ms and when one is half
/// full, but on CPUs that are all busy its work can wait far longer for a
/// CPU: with 4 busy CPUs (`make bench`, 2026-11-26) the default ring of
/// 4096 slots overflowed at 10 kHz (410 ms of samples; the drain waited
/// over 200 ms after its kick) and at 40 kHz, where 16384 slots did not.
const RING_MS: u64 = 800;

/// The ring size (slots) for `hz` samples a second on one CPU: enough
/// for [`RING_MS`], a power of two, at most 4 times the module's default
/// `default` (memory: each slot is about 80 bytes, per CPU; perf's
/// default buffer is 516 KiB per CPU); 0 (the module's default) when
/// that holds enough already.
pub fn ring_for_rate(hz: u64, default: u32) -> u32 {
    let want = (hz.saturating_mul(RING_MS) / 1000)
        .max(1)
        .next_power_of_two();
    let most = u64::from(default).saturating_mul(4).min(1 << 20);
    grown(want, most, default)
}

/// How long the event buffer holds samples at the session's rate before
/// the reader must have read them: the drain moves the rings' samples
/// into it as they come, so this is what a reader that is kept off its
/// CPU can miss.  perf's default buffers hold about 0.3 s at 40 kHz.
const BUFFER_MS: u64 = 500;
/// Bytes of stream a sample takes, about: 32 to 34 without chains (make
/// bench); with them, a stack id and the stacks, each sent once, more.
const STREAM_BYTES_PER_SAMPLE: u64 = 48;
const STREAM_BYTES_PER_SAMPLE_CHAINS: u64 = 96;
/// The largest event buffer chosen for a rate: 16 MiB in 4 KiB pages.
const BUFFER_PAGES_MOST: u64 = 4096;

/// The event buffer size (pages) for `hz` samples a second on each of
/// `cpus` CPUs: enough for [`BUFFER_MS`], a power of two, at most 16
/// times the module's default `default` (its `buffer_pages` parameter: an
/// administrator who made it small keeps buffers small) and at most
/// [`BUFFER_PAGES_MOST`]; 0 (the default) when that holds enough already.
pub fn buffer_for_rate(hz: u64, cpus: u64, chains: bool, default: u32) -> u32 {
    let per_sample = if chains {
        STREAM_BYTES_PER_SAMPLE_CHAINS
    } else {
        STREAM_BYTES_PER_SAMPLE
    };
    let bytes = hz
        .saturating_mul(cpus)
        .saturating_mul(per_sample)
        .saturating_mul(BUFFER_MS)
        / 1000;
    let want = bytes.div_ceil(4096).max(1).next_power_of_two();
    let most = u64::from(default).saturating_mul(16).min(BUFFER_PAGES_MOST);
    grown(want, most, default)
}

/// `-m/--mmap-pages`: a power of two (pages), or 0 for the default.
pub fn parse_buffer_pages(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of pages"))?;
    if n != 0 && !n.is_power_of_two() {
        return Err(format!(
            "{n} pages: the event buffer is a power of two pages (e.g. {})",
            n.next_power_of_two()
        ));
    }
    Ok(n)
}

/// The module's `ring_records` parameter's default: slots of each CPU's
/// ring.
pub const DEFAULT_RING_RECORDS: u32 = 4096;

/// The module's `buffer_pages` parameter's default: data pages of the
/// event buffer.
pub const DEFAULT_BUFFER_PAGES: u32 = 256;

/// The module's parameter `name` (a size it uses by default), or
/// `fallback`, its default at load, where it cannot be read.
pub(crate) fn module_param(name: &str, fallback: u32) -> u32 {
    std::fs::read_to_string(format!("/sys/module/rprof/parameters/{name}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(fallback)
}

/// CPUs online now: the module samples each (this process's affinity
/// or CPU quota says nothing about that).
pub fn online_cpus() -> u64 {
    // SAFETY: sysconf() has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u64::try_from(n).unwrap_or(1).max(1)
}

/// A size grown from the module's `default` to `want`, at most `most`: 0
/// (the default) where that is enough already.
fn grown(want: u64, most: u64, default: u32) -> u32 {
    match want.min(most) {
        n if n <= u64::from(default) => 0,
        n => n as u32,
    }
}

/// Samples a second per CPU of `events`, if known: events at a
/// frequency, and the clocks at a period (nanoseconds); the period of
/// another event counts events, whose rate is not known.
fn sampled_hz(events: &[rprof_event_config]) -> Option<u64> {
    events.iter().try_fold(0u64, |sum, e| {
        let hz = if e.flags & RPROF_EVENT_FREQ != 0 {
            e.period
        } else if matches!(e.kind, RPROF_EVENT_CPU_CLOCK | RPROF_EVENT_TASK_CLOCK) {
            1_000_000_000 / e.period.max(1)
        } else {
            return None;
        };
        Some(sum.saturating_add(hz))
    })
}

/// Parses a positive number for `what`.
fn positive(s: &str, what: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err(format!("{what} must not be 0")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{what} '{s}' is not a positive integer")),
    }
}

impl FromStr for EventSpec {
    type Err = String;

    /// `NAME`, `NAME:PERIOD` or `NAME@FREQ` (Hz), then perf's modifiers
    /// `:u` (user mode only), `:k` (kernel mode only) or `:uk`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(':');
        let head = parts.next().unwrap_or("");
        let (name, mut sampling) = match head.split_once('@') {
            Some((name, freq)) => (name, Some(Sampling::Freq(positive(freq, "frequency")?))),
            None => (head, None),
        };
        let mut levels = None;
        for part in parts {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphabetic()) {
                if levels.is_some() {
                    return Err(format!("'{s}': more than one set of modifiers"));
                }
                let (u, k) = (part.contains('u'), part.contains('k'));
                if let Some(c) = part.chars().find(|c| !matches!(c, 'u' | 'k')) {
                    return Err(match c {
                        'p' | 'P' => format!("'{s}': precise sampling (:p) is not supported"),
                        _ => format!("'{s}': unknown modifier '{c}' (rprof knows u and k)"),
                    });
                }
                levels = Some(match (u, k) {
                    (true, false) => Levels::User,
                    (false, true) => Levels::Kernel,
                    _ => Levels::All,
                });
            } else if sampling.is_none() {
                sampling = Some(Sampling::Period(positive(part, "period")?));
            } else {
                return Err(format!("'{s}': more than one period or frequency"));
            }
        }
        let kind = event_kind(name).ok_or_else(|| {
            let names: Vec<&str> = EVENTS.iter().map(|e| e.0).collect();
            format!("unknown event '{name}' (known: {})", names.join(", "))
        })?;
        Ok(EventSpec {
            kind,
            sampling,
            levels: levels.unwrap_or_default(),
        })
    }
}

/// An event configuration as text: `cpu-clock@1000`, `cycles:100000`, or
/// `kind99:...` for kinds without a name.
pub struct EventDisplay<'a>(pub &'a rprof_event_config);

impl fmt::Display for EventDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        match event_name(e.kind) {
            Some(name) => f.write_str(name)?,
            None => write!(f, "kind{}", e.kind)?,
        }
        if e.flags & RPROF_EVENT_FREQ != 0 {
            write!(f, "@{}", e.period)?;
        } else {
            write!(f, ":{}", e.period)?;
        }
        let unknown = e.flags & !RPROF_EVENT_FLAGS_ALL;
        if unknown != 0 {
            write!(f, "/flags={unknown:#x}")?;
        }
        Ok(())
    }
}

/// What `rprof dump` turns into a `struct rprof_config`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Events; empty means `cpu-clock` at the default frequency.
    pub events: Vec<EventSpec>,
    /// Frequency (Hz) of events that name no period or frequency.
    pub freq: Option<u64>,
    /// Period of events that name no period or frequency (perf's `-c`;
    /// before `freq`).
    pub period: Option<u64>,
    /// Do not sample user mode.
    pub exclude_user: bool,
    /// Do not sample kernel mode.
    pub exclude_kernel: bool,
    /// Only samples of this thread group.
    pub pid: Option<i32>,
    /// With `pid`: the samples of its descendants too.
    pub descendants: bool,
    /// Per-CPU ring slots (0: the module's default, or more at high rates).
    pub ring_records: u32,
    /// Data pages of the event buffer (0: the module's default, or more
    /// at high rates).
    pub buffer_pages: u32,
    /// Drain period in ms (0: the module's default).
    pub drain_interval_ms: u32,
    /// Reader wakeup threshold in bytes (0: the module's default).
    pub wakeup_bytes: u32,
    /// Call chains: (kernel, user) depths, each 0..=RPROF_MAX_FRAMES.
    pub callchain: Option<(u16, u16)>,
    /// With `callchain`: walk the user side through uploaded unwind tables
    /// (`RPROF_CONFIG_UNWIND_TABLES`), unless user mode is excluded or
    /// its depth is 0 (no user side to walk).
    pub unwind_tables: bool,
}

impl SessionOptions {
    /// Builds the configuration; fails if there are more than
    /// `RPROF_MAX_EVENTS` events.
    pub fn to_config(&self) -> Result<rprof_config, String> {
        let mut c = rprof_config::new();
        let default_freq = self.freq.unwrap_or(DEFAULT_FREQ_HZ);
        let default_event = [EventSpec {
            kind: RPROF_EVENT_CPU_CLOCK,
            sampling: None,
            levels: Levels::All,
        }];
        let events = if self.events.is_empty() {
            &default_event[..]
        } else {
            &self.events[..]
        };
        if events.len() > c.events.len() {
            return Err(format!(
                "at most {} events can be sampled at once, {} given",
                c.events.len(),
                events.len()
            ));
        }
        for (slot, e) in c.events.iter_mut().zip(events) {
            *slot = match (e.sampling, self.period) {
                (None, Some(p)) => EventSpec {
                    sampling: Some(Sampling::Period(p)),
                    ..*e
                }
                .to_config(default_freq),
                _ => e.to_config(default_freq),
            };
        }
        let levels = events[0].levels;
        if events.iter().any(|e| e.levels != levels) {
            return Err(
                "the events ask for different modes (:u, :k): the module samples every event of a \
                 session in the same modes, so give them all the same modifier"
                    .into(),
            );
        }
        // At most RPROF_MAX_EVENTS, checked above.
        c.nr_events = events.len() as u32;
        if self.exclude_user || levels == Levels::Kernel {
            c.flags |= RPROF_CONFIG_EXCLUDE_USER;
        }
        if self.exclude_kernel || levels == Levels::User {
            c.flags |= RPROF_CONFIG_EXCLUDE_KERNEL;
        }
        if c.flags & RPROF_CONFIG_EXCLUDE_USER != 0 && c.flags & RPROF_CONFIG_EXCLUDE_KERNEL != 0 {
            return Err("user and kernel mode both excluded: nothing would be sampled".into());
        }
        if let Some(pid) = self.pid {
            c.flags |= RPROF_CONFIG_PID_FILTER;
            c.pid = pid;
            if self.descendants {
                c.flags |= RPROF_CONFIG_PID_DESCENDANTS;
            }
        }
        c.ring_records = match self.ring_records {
            0 => {
                let hz = sampled_hz(&c.events[..c.nr_events as usize]);
                hz.map_or(0, |hz| {
                    ring_for_rate(hz, module_param("ring_records", DEFAULT_RING_RECORDS))
                })
            }
            n => n,
        };
        c.buffer_pages = match self.buffer_pages {
            0 => {
                let hz = sampled_hz(&c.events[..c.nr_events as usize]);
                let chains = self.callchain.is_some();
                hz.map_or(0, |hz| {
                    buffer_for_rate(
                        hz,
                        online_cpus(),
                        chains,
                        module_param("buffer_pages", DEFAULT_BUFFER_PAGES),
                    )
                })
            }
            n => n,
        };
        c.drain_interval_ms = self.drain_interval_ms;
        c.wakeup_bytes = self.wakeup_bytes;
        if let Some((kernel, user)) = self.callchain {
            c.flags |= RPROF_CONFIG_CALLCHAIN;
            c.max_kernel_frames = kernel;
            c.max_user_frames = user;
            if self.unwind_tables && user > 0 && c.flags & RPROF_CONFIG_EXCLUDE_USER == 0 {
                c.flags |= RPROF_CONFIG_UNWIND_TABLES;
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rings grow with the rate (0.8 s of samples), up to 4 times the
    /// module's default, and stay the default where that is enough or
    /// the rate is not known.
    #[test]
    fn rings_for_high_rates() {
        assert_eq!(ring_for_rate(999, 4096), 0);
        assert_eq!(ring_for_rate(4_000, 4096), 0);
        assert_eq!(ring_for_rate(10_000, 4096), 8192);
        assert_eq!(ring_for_rate(20_000, 4096), 16384);
        assert_eq!(ring_for_rate(40_000, 4096), 16384);
        assert_eq!(ring_for_rate(100_000, 4096), 16384);
        assert_eq!(ring_for_rate(40_000, 65536), 0);
        assert_eq!(ring_for_rate(u64::MAX, 1 << 20), 0);
        let freq = |hz| rprof_event_config {
            kind: RPROF_EVENT_CPU_CLOCK,
            flags: RPROF_EVENT_FREQ,
            period: hz,
        };
        let clock_period = rprof_event_config {
            kind: RPROF_EVENT_CPU_CLOCK,
            flags: 0,
            period: 1_000_000,
        };
        let cycles_period = rprof_event_config {
            kind: RPROF_EVENT_CYCLES,
            flags: 0,
            period: 1_000_000,
        };
        assert_eq!(sampled_hz(&[freq(20_000), freq(20_000)]), Some(40_000));
        // A clock's period is in ns: 1 ms is 1 kHz.
        assert_eq!(sampled_hz(&[freq(20_000), clock_period]), Some(21_000));
        assert_eq!(sampled_hz(&[freq(20_000), cycles_period]), None);
        let o = SessionOptions {
            freq: Some(40_000),
            ..SessionOptions::default()
        };
        // No rprof module on the host: its default, 4096.
        assert_eq!(o.to_config().unwrap().ring_records, 16384);
        let o = SessionOptions {
            freq: Some(40_000),
            ring_records: 1024,
            ..SessionOptions::default()
        };
        assert_eq!(o.to_config().unwrap().ring_records, 1024);
    }

    /// The event buffer grows with the rate and the CPUs (0.5 s of
    /// samples of 48 bytes), up to 16 times the module's default and 16
    /// MiB, and stays the module's default
    /// where that is enough or the rate is not known.
    #[test]
    fn buffers_for_high_rates() {
        assert_eq!(buffer_for_rate(4_000, 2, false, 256), 0);
        assert_eq!(buffer_for_rate(10_000, 2, false, 256), 0);
        // 40 kHz on 4 CPUs: 3.84 MB.
        assert_eq!(buffer_for_rate(40_000, 4, false, 256), 1024);
        assert_eq!(buffer_for_rate(20_000, 4, false, 256), 512);
        assert_eq!(buffer_for_rate(100_000, 64, false, 256), 4096);
        assert_eq!(buffer_for_rate(40_000, 4, false, 1024), 0);
        assert_eq!(buffer_for_rate(40_000, 4, false, 1), 16);
        // Chains: twice the bytes.
        assert_eq!(buffer_for_rate(20_000, 4, true, 256), 1024);
        assert_eq!(buffer_for_rate(u64::MAX, u64::MAX, false, 1 << 16), 0);
        let o = SessionOptions {
            freq: Some(1_000),
            ..SessionOptions::default()
        };
        assert_eq!(o.to_config().unwrap().buffer_pages, 0);
        let o = SessionOptions {
            freq: Some(100_000),
            buffer_pages: 8,
            ..SessionOptions::default()
        };
        assert_eq!(o.to_config().unwrap().buffer_pages, 8);
    }

    /// `-m` takes a power of two pages and says which one instead.
    #[test]
    fn mmap_pages_are_powers_of_two() {
        assert_eq!(parse_buffer_pages("0"), Ok(0));
        assert_eq!(parse_buffer_pages("512"), Ok(512));
        assert!(parse_buffer_pages("100").unwrap_err().contains("128"));
        assert!(parse_buffer_pages("16M").is_err());
    }

    #[test]
    fn parse_event_specs() {
        let cases = [
            ("cpu-clock", RPROF_EVENT_CPU_CLOCK, None),
            (
                "cpu-clock:100000",
                RPROF_EVENT_CPU_CLOCK,
                Some(Sampling::Period(100000)),
            ),
            (
                "cpu-clock@999",
                RPROF_EVENT_CPU_CLOCK,
                Some(Sampling::Freq(999)),
            ),
            ("task-clock", RPROF_EVENT_TASK_CLOCK, None),
            (
                "cycles:1000000",
                RPROF_EVENT_CYCLES,
                Some(Sampling::Period(1000000)),
            ),
            ("instructions", RPROF_EVENT_INSTRUCTIONS, None),
            (
                "cache-misses@10",
                RPROF_EVENT_CACHE_MISSES,
                Some(Sampling::Freq(10)),
            ),
            ("branch-misses", RPROF_EVENT_BRANCH_MISSES, None),
        ];
        for (s, kind, sampling) in cases {
            assert_eq!(
                s.parse::<EventSpec>(),
                Ok(EventSpec {
                    kind,
                    sampling,
                    levels: Levels::All
                }),
                "{s}"
            );
        }
        // perf's modifiers, after any period or frequency.
        for (s, sampling, levels) in [
            ("cycles:u", None, Levels::User),
            ("cpu-clock:k", None, Levels::Kernel),
            ("cycles:uk", None, Levels::All),
            (
                "cycles:100000:u",
                Some(Sampling::Period(100000)),
                Levels::User,
            ),
            (
                "cpu-clock@4000:k",
                Some(Sampling::Freq(4000)),
                Levels::Kernel,
            ),
        ] {
            let e = s.parse::<EventSpec>().unwrap();
            assert_eq!((e.sampling, e.levels), (sampling, levels), "{s}");
        }
        for (bad, why) in [
            ("cycles:pp", "precise sampling"),
            ("cycles:uh", "unknown modifier 'h'"),
            ("cycles:u:k", "more than one set"),
            ("cycles:5:6", "more than one period"),
            ("cycles@5:6", "more than one period"),
        ] {
            let e = bad.parse::<EventSpec>().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        for bad in [
            "",
            "cpu_clock",
            "cpu-clock:",
            "cpu-clock@0",
            "cpu-clock:-1",
            "cycles@1k",
            "nope:5",
        ] {
            assert!(
                bad.parse::<EventSpec>().is_err(),
                "'{bad}' should not parse"
            );
        }
    }

    #[test]
    fn default_config_is_cpu_clock_at_1000_hz() {
        let c = SessionOptions::default().to_config().unwrap();
        assert_eq!(c.size, RPROF_CONFIG_SIZE_VER1);
        assert_eq!(c.nr_events, 1);
        assert_eq!(
            c.events[0],
            rprof_event_config {
                kind: RPROF_EVENT_CPU_CLOCK,
                flags: RPROF_EVENT_FREQ,
                period: 1000
            }
        );
        assert_eq!((c.flags, c.pid, c.buffer_pages), (0, 0, 0));
    }

    #[test]
    fn freq_applies_to_events_without_their_own() {
        let o = SessionOptions {
            events: vec!["cycles".parse().unwrap(), "cpu-clock:5000".parse().unwrap()],
            freq: Some(99),
            exclude_kernel: true,
            pid: Some(7),
            descendants: true,
            ring_records: 256,
            ..Default::default()
        };
        let c = o.to_config().unwrap();
        assert_eq!(c.nr_events, 2);
        assert_eq!(
            (c.events[0].flags, c.events[0].period),
            (RPROF_EVENT_FREQ, 99)
        );
        assert_eq!((c.events[1].flags, c.events[1].period), (0, 5000));
        assert_eq!(
            c.flags,
            RPROF_CONFIG_EXCLUDE_KERNEL | RPROF_CONFIG_PID_FILTER | RPROF_CONFIG_PID_DESCENDANTS
        );
        assert_eq!((c.pid, c.ring_records), (7, 256));
        assert_eq!(EventDisplay(&c.events[0]).to_string(), "cycles@99");
        assert_eq!(EventDisplay(&c.events[1]).to_string(), "cpu-clock:5000");
    }

    #[test]
    fn modifiers_and_period_make_the_session() {
        let o = SessionOptions {
            events: vec![
                "cycles:u".parse().unwrap(),
                "instructions:u".parse().unwrap(),
            ],
            period: Some(12345),
            freq: Some(99),
            ..Default::default()
        };
        let c = o.to_config().unwrap();
        assert_eq!(c.flags, RPROF_CONFIG_EXCLUDE_KERNEL);
        assert_eq!((c.events[0].flags, c.events[0].period), (0, 12345));
        let k = SessionOptions {
            events: vec!["cpu-clock:k".parse().unwrap()],
            ..Default::default()
        };
        assert_eq!(k.to_config().unwrap().flags, RPROF_CONFIG_EXCLUDE_USER);
        let mixed = SessionOptions {
            events: vec!["cycles:u".parse().unwrap(), "cpu-clock".parse().unwrap()],
            ..Default::default()
        };
        assert!(mixed.to_config().unwrap_err().contains("same modifier"));
        let none = SessionOptions {
            events: vec!["cycles:u".parse().unwrap()],
            exclude_user: true,
            ..Default::default()
        };
        assert!(none
            .to_config()
            .unwrap_err()
            .contains("nothing would be sampled"));
    }

    #[test]
    fn too_many_events() {
        let o = SessionOptions {
            events: vec!["cpu-clock".parse().unwrap(); 9],
            ..Default::default()
        };
        assert!(o.to_config().is_err());
    }
}

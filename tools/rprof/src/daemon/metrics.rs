//! `GET /metrics`: what the reader thread publishes (the module's
//! statistics, the reader's lag, the cookie table, the profiles), what
//! the listener counts, and the daemon's own CPU time, in Prometheus'
//! text format (the `prometheus` crate's encoder).

use super::module::ModuleStats;
use prometheus::core::Collector;
use prometheus::{Counter, CounterVec, Encoder, Gauge, IntCounter, IntCounterVec, IntGauge};
use prometheus::{IntGaugeVec, Opts, Registry, TextEncoder};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The Content-Type of the text format.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the reader thread last published ([`super::pull`]).
pub(super) struct Snapshot {
    /// When.
    pub(super) at: Instant,
    /// GET_STATS of the session (`None`: no session, or it failed).
    pub(super) stats: Option<ModuleStats>,
    /// A session is being read.
    pub(super) session: bool,
    /// Bytes of the event buffer not read yet, and its size.
    pub(super) unread: u64,
    pub(super) buffer_size: u64,
    /// Files and modules named since the cookie table was last reset,
    /// and its size (the module's `max_cookies`).
    pub(super) named: u64,
    pub(super) max_cookies: u64,
    /// Profiles written and skipped (by the writer thread or the
    /// daemon's own).
    pub(super) written: u64,
    pub(super) skipped: u64,
    /// Sessions started, cookie-table resets asked for.
    pub(super) sessions: u64,
    pub(super) resets: u64,
    /// Scrapes being counted.
    pub(super) scrapes: u64,
}

/// What `/metrics` shows: the reader's last [`Snapshot`] and the
/// listener's own counts.
#[derive(Default)]
pub(super) struct Shared {
    snapshot: Mutex<Option<Snapshot>>,
    /// Profiles sent to scrapers.
    pub(super) served: AtomicU64,
    /// Profile requests refused or failed (4xx and 5xx answers).
    pub(super) refused: AtomicU64,
}

/// The per-CPU counters of `struct rprof_cpu_stats` that count samples
/// lost, by cause (the label's value), as `rprof stat` names them
/// without their `lost_`.
const LOST: [(&str, crate::format::Counter); 5] = [
    ("ring", |s| s.lost_ring),
    ("buffer", |s| s.lost_buffer),
    ("no_mm", |s| s.lost_no_mm),
    ("no_mapping", |s| s.lost_no_mapping),
    ("no_cookie", |s| s.lost_no_cookie),
];

impl Shared {
    /// Replaces the reader's snapshot.
    pub(super) fn publish(&self, s: Snapshot) {
        *self.snapshot.lock().unwrap_or_else(PoisonError::into_inner) = Some(s);
    }

    /// The text of `/metrics`.
    pub(super) fn render(&self) -> Result<String, prometheus::Error> {
        let r = Registry::new();
        let guard = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = guard.as_ref() {
            snapshot(&r, s)?;
        }
        drop(guard);
        add(
            &r,
            int_counter(
                "rprof_scrapes_served_total",
                "CPU profiles sent to scrapers of /debug/pprof/profile.",
                self.served.load(Ordering::Relaxed),
            )?,
        )?;
        add(
            &r,
            int_counter(
                "rprof_scrapes_refused_total",
                "Requests of /debug/pprof/profile answered with an error.",
                self.refused.load(Ordering::Relaxed),
            )?,
        )?;
        if let Some((user, system)) = cpu_time() {
            let c = CounterVec::new(
                Opts::new(
                    "rprof_daemon_cpu_seconds_total",
                    "CPU time of the daemon, all its threads, as the kernel accounts it (getrusage).",
                ),
                &["mode"],
            )?;
            c.with_label_values(&["user"]).inc_by(user.as_secs_f64());
            c.with_label_values(&["system"])
                .inc_by(system.as_secs_f64());
            add(&r, c)?;
            let total = Counter::new(
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
            )?;
            total.inc_by((user + system).as_secs_f64());
            add(&r, total)?;
        }
        let mut out = Vec::new();
        TextEncoder::new().encode(&r.gather(), &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// The series of the reader's snapshot `s`.
fn snapshot(r: &Registry, s: &Snapshot) -> Result<(), prometheus::Error> {
    let age = Gauge::new(
        "rprof_stats_age_seconds",
        "How long ago the reader thread published the values below (it does every second).",
    )?;
    age.set(s.at.elapsed().as_secs_f64());
    add(r, age)?;
    let gauges: [(&str, &str, u64); 6] = [
        (
            "rprof_session_running",
            "1 while a module session is being read, 0 between sessions.",
            u64::from(s.session),
        ),
        (
            "rprof_buffer_unread_bytes",
            "The reader's lag: bytes of the module's event buffer written and not read yet.",
            s.unread,
        ),
        (
            "rprof_buffer_size_bytes",
            "The size of the module's event buffer.",
            s.buffer_size,
        ),
        (
            "rprof_cookie_table_entries",
            "Files and modules the session has named since its cookie table was last reset.",
            s.named,
        ),
        (
            "rprof_cookie_table_capacity",
            "The module's max_cookies: names a session holds at most.",
            s.max_cookies,
        ),
        (
            "rprof_scrapes_active",
            "Profiles being taken for scrapers.",
            s.scrapes,
        ),
    ];
    for (name, help, v) in gauges {
        let g = IntGauge::new(name, help)?;
        g.set(i64::try_from(v).unwrap_or(i64::MAX));
        add(r, g)?;
    }
    let counters: [(&str, &str, u64); 4] = [
        (
            "rprof_profiles_written_total",
            "Interval profiles written to --dir.",
            s.written,
        ),
        (
            "rprof_profiles_skipped_total",
            "Interval profiles that could not be written.",
            s.skipped,
        ),
        (
            "rprof_sessions_total",
            "Module sessions started.",
            s.sessions,
        ),
        (
            "rprof_cookie_table_resets_total",
            "Resets of the module's cookie table asked for.",
            s.resets,
        ),
    ];
    for (name, help, v) in counters {
        add(r, int_counter(name, help, v)?)?;
    }
    if let Some((stats, cpus)) = &s.stats {
        module_stats(r, stats, cpus)?;
    }
    Ok(())
}

/// GET_STATS of the session: counters since its SET_CONFIG (a new
/// session starts them from zero again, which Prometheus' `rate()`
/// takes as a counter reset).
fn module_stats(
    r: &Registry,
    stats: &rprof_abi::rprof_stats,
    cpus: &[rprof_abi::rprof_cpu_stats],
) -> Result<(), prometheus::Error> {
    let per_cpu = |name: &str, help: &str| IntCounterVec::new(Opts::new(name, help), &["cpu"]);
    let taken = per_cpu(
        "rprof_samples_total",
        "Samples the module's handler took, per CPU.",
    )?;
    let delivered = per_cpu(
        "rprof_samples_delivered_total",
        "Samples put into the event buffer, per CPU.",
    )?;
    let throttled = per_cpu(
        "rprof_throttled_total",
        "Times perf throttled a sampling counter, per CPU.",
    )?;
    let lost = IntCounterVec::new(
        Opts::new(
            "rprof_samples_lost_total",
            "Samples lost, per CPU and cause (ring, buffer, no_mm, no_mapping, no_cookie).",
        ),
        &["cpu", "cause"],
    )?;
    let high = IntGaugeVec::new(
        Opts::new(
            "rprof_ring_high_water_slots",
            "The highest fill of each CPU's ring in the session, in slots.",
        ),
        &["cpu"],
    )?;
    for (i, c) in cpus.iter().enumerate() {
        let cpu = i.to_string();
        taken.with_label_values(&[&cpu]).inc_by(c.samples);
        delivered.with_label_values(&[&cpu]).inc_by(c.delivered);
        throttled.with_label_values(&[&cpu]).inc_by(c.throttled);
        for (cause, get) in LOST {
            lost.with_label_values(&[cpu.as_str(), cause])
                .inc_by(get(c));
        }
        high.with_label_values(&[&cpu])
            .set(i64::try_from(c.ring_high_water).unwrap_or(i64::MAX));
    }
    add(r, taken)?;
    add(r, delivered)?;
    add(r, throttled)?;
    add(r, lost)?;
    add(r, high)?;
    add(
        r,
        int_counter(
            "rprof_samples_lost_mm_busy_total",
            "User samples not resolved because their process held its mmap_lock (all CPUs).",
            stats.lost_mm_busy,
        )?,
    )?;
    add(
        r,
        int_counter(
            "rprof_drains_total",
            "Passes of the module's drain of the rings into the buffer.",
            stats.drains,
        )?,
    )?;
    Ok(())
}

/// A counter `name` at `value`.
fn int_counter(name: &str, help: &str, value: u64) -> Result<IntCounter, prometheus::Error> {
    let c = IntCounter::new(name, help)?;
    c.inc_by(value);
    Ok(c)
}

/// Registers `c` in `r`.
fn add(r: &Registry, c: impl Collector + 'static) -> Result<(), prometheus::Error> {
    r.register(Box::new(c))
}

/// The daemon's CPU time so far, in user and system mode, as the kernel
/// accounts it for all its threads (`getrusage(RUSAGE_SELF)`).
pub(super) fn cpu_time() -> Option<(Duration, Duration)> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole struct rusage at the pointer,
    // which points to one; nothing reads it unless the call succeeded.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: the successful call above initialized it.
    let ru = unsafe { ru.assume_init() };
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Some((time(ru.ru_utime), time(ru.ru_stime)))
}

//! `rprof daemon` / `rprofd`: continuous profiling into rotating pprof
//! files.
//!
//! One session runs for as long as the daemon, read through the mmap'ed
//! buffer.  Every interval the samples of that interval are symbolized
//! against the running system and written to
//! `DIR/rprof-<unix seconds>-<sequence>.pb.gz` (written to a temporary
//! name, then renamed, so a reader never sees half a file); only the
//! newest `--keep` such files are kept.  A reader that falls behind never
//! blocks the daemon: the module drops what does not fit and counts it,
//! and the LOST counts go into each profile's comment.  SIGTERM or SIGINT
//! stop the session, drain it and write the last interval.
//!
//! A module session pins every file it names (its cookie table holds a
//! reference on each path) and names at most `max_cookies` of them.  So
//! that a daemon that runs for weeks neither runs out of cookies nor keeps
//! deleted binaries alive, it renews the session as soon as it has named
//! a quarter of `max_cookies` (checked every 100 ms at most) and at an
//! interval's end once `--renew` seconds have passed: STOP, drain, write
//! what it holds (each complete interval, then the one cut short at the
//! STOP), then a new session whose table starts empty.  Sampling pauses for the
//! switch (milliseconds); the next interval starts at the new START.

use crate::sampling::SamplingArgs;
use crate::session::Session;
use crate::{live, signal, Device, Error};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of `rprof daemon` and `rprofd`.
#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// Directory of the profiles (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// Seconds of samples per profile (fractions allowed).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_seconds)]
    pub interval: Duration,

    /// How many profiles to keep; older ones are deleted.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: u64,

    /// Renew the module session (its cookie table and the files it pins)
    /// at the end of the first interval this many seconds after it
    /// started; it is also renewed once it has named a quarter of the
    /// module's `max_cookies`.
    #[arg(long, value_name = "SECS", default_value = "3600", value_parser = parse_seconds)]
    pub renew: Duration,

    /// Only sample the thread group (process) PID.
    #[arg(short = 'p', long = "pid", value_name = "PID",
          value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    #[command(flatten)]
    /// What to sample.
    pub sampling: SamplingArgs,
}

/// Parses a positive, finite number of seconds.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0 && secs <= 1e9) {
        return Err(format!("'{s}': the duration must be positive"));
    }
    let d = Duration::from_secs_f64(secs);
    if d < Duration::from_micros(1) {
        return Err(format!(
            "'{s}': the duration must be at least a microsecond"
        ));
    }
    Ok(d)
}

/// The longest wait in `poll()`.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Profile file names: `rprof-` + seconds + `-` + sequence + `.pb.gz`.
const PREFIX: &str = "rprof-";
const SUFFIX: &str = ".pb.gz";

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// CLOCK_MONOTONIC now, in ns: the clock of the stream's times (see the
/// uapi header), so intervals are scheduled in the samples' own clock.
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill in;
    // CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// One interval of the session: when it began (wall clock) and how
/// long it lasted, as its profile's name and `time_nanos` /
/// `duration_nanos` say.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    /// Sequence number in the daemon's run.
    pub seq: u64,
    /// Its start, since the Unix epoch.
    pub start: Duration,
    /// Its length.
    pub length: Duration,
}

/// Writes one interval's profile (what `sink` counted for it; call chains
/// through the stacks it has seen in the whole session) with `sym`, and
/// rotates; returns its path.  On an error (a full disk, ...) nothing of
/// the profile is left behind.
pub fn write_profile(
    dir: &Path,
    interval: Interval,
    sink: &mut live::AggregateSink,
    config: &rprof_abi::rprof_config,
    sym: &mut rprof_report::Symbolizer,
    keep: u64,
) -> Result<PathBuf, Error> {
    let mut comment = format!(
        "rprof daemon: {} samples, lost {}",
        sink.agg.samples,
        sink.agg.lost_line()
    );
    if sink.agg.late > 0 {
        comment.push_str(&format!(
            "; {} samples of earlier intervals read too late for them",
            sink.agg.late
        ));
    }
    let opts = rprof_report::pprof::Options {
        time_nanos: interval.start.as_nanos() as i64,
        duration_nanos: interval.length.as_nanos() as i64,
        comments: vec![comment],
    };
    let profile = rprof_report::pprof::build(
        &sink.agg,
        sym,
        &rprof_report::Filter::default(),
        config,
        &opts,
    );
    let name = format!(
        "{PREFIX}{:010}-{:06}{SUFFIX}",
        interval.start.as_secs(),
        interval.seq
    );
    let path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let written = std::fs::File::create(&tmp)
        .map_err(|e| Error::io("creating a profile", e))
        .and_then(|f| {
            let mut file = std::io::BufWriter::new(f);
            rprof_report::pprof::write_gz(&mut file, &profile)
                .and_then(|()| std::io::Write::flush(&mut file))
                .and_then(|()| file.get_ref().sync_data())
                .map_err(|e| Error::io("writing a profile", e))
        })
        .and_then(|()| {
            std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming a profile", e))
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The profile is there: a failure to delete old ones is not a skip.
    if let Err(e) = rotate(dir, keep) {
        eprintln!(
            "rprof daemon: {}: old profiles not removed: {e}",
            path.display()
        );
    }
    eprintln!("rprof daemon: wrote {}", summary(&path, &sink.agg));
    Ok(path)
}

/// The kernel's module list, to tell when the symbolizer's kallsyms is
/// out of date.
fn module_list() -> String {
    std::fs::read_to_string("/proc/modules").unwrap_or_default()
}

/// `PATH: N samples, L lost (ring R, buffer B, ...)`: one interval's
/// totals, for the daemon's line on stderr.
fn summary(path: &Path, agg: &rprof_report::Aggregate) -> String {
    format!(
        "{}: {} samples, {} lost ({})",
        path.display(),
        agg.samples,
        agg.lost_total(),
        agg.lost_line()
    )
}

/// The names of the files of the profile directory `dir` that `keep`
/// accepts.
fn names_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, Error> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| Error::io("listing the profile directory", e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| keep(n))
        .collect())
}

/// Whether `name` is the temporary name of a profile being written.
fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
        .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
}

/// Deletes the temporary files an earlier daemon killed while writing
/// left in `dir`; returns how many.
pub fn remove_temporaries(dir: &Path) -> Result<usize, Error> {
    let names = names_in(dir, is_temporary)?;
    for n in &names {
        let _ = std::fs::remove_file(dir.join(n));
    }
    Ok(names.len())
}

/// Deletes the oldest profiles of `dir` beyond `keep`.
pub fn rotate(dir: &Path, keep: u64) -> Result<(), Error> {
    let mut names = names_in(dir, |n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))?;
    names.sort();
    let excess = names.len().saturating_sub(keep as usize);
    for n in &names[..excess] {
        // Another process may have removed it already.
        let _ = std::fs::remove_file(dir.join(n));
    }
    Ok(())
}

/// The daemon's profiles so far.
struct Profiles<'a> {
    args: &'a DaemonArgs,
    config: &'a rprof_abi::rprof_config,
    /// The current session's start, since the Unix epoch.
    started: Duration,
    /// The sequence number of the current session's first interval.
    first: u64,
    seq: u64,
    written: u64,
    skipped: u64,
}

impl Profiles<'_> {
    /// Writes the next interval's profile, `length` long; a profile that
    /// cannot be written (a full disk, ...) is skipped with a message.
    fn write(
        &mut self,
        sink: &mut live::AggregateSink,
        sym: &mut rprof_report::Symbolizer,
        length: Duration,
    ) {
        let interval = Interval {
            seq: self.seq,
            start: self.started
                + Duration::from_nanos(
                    nanos(self.args.interval).saturating_mul(self.seq - self.first),
                ),
            length,
        };
        self.seq += 1;
        match write_profile(
            &self.args.dir,
            interval,
            sink,
            self.config,
            sym,
            self.args.keep,
        ) {
            Ok(_) => self.written += 1,
            Err(e) => {
                self.skipped += 1;
                let why = e.to_string();
                eprintln!(
                    "rprof daemon: profile {} ({} samples) skipped: {}",
                    interval.seq,
                    sink.agg.samples,
                    why.strip_prefix("rprof: ").unwrap_or(&why)
                );
            }
        }
    }
}

/// `d` in ns, saturated.
fn nanos(d: Duration) -> u64 {
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
    fn write_rest(
        &mut self,
        sink: &mut live::AggregateSink,
        sym: &mut rprof_report::Symbolizer,
        step_ns: u64,
        until: u64,
    ) {
        let step_ns = step_ns.max(1);
        while let Some(end) = sink.agg.cutoff().filter(|end| *end <= until) {
            self.write(sink, sym, self.args.interval);
            sink.agg.roll(Some(end.saturating_add(step_ns)));
        }
        let begin = match sink.agg.cutoff() {
            Some(end) => end.saturating_sub(step_ns),
            None => sink.agg.span.start_ns.unwrap_or(until),
        };
        sink.agg.set_cutoff(None);
        self.write(sink, sym, Duration::from_nanos(until.saturating_sub(begin)));
    }
}

/// Where a stopped session ends, in the stream's clock: its STOP
/// record's time, or now if it has none.
fn session_end(sink: &live::AggregateSink) -> u64 {
    sink.agg.span.stop_ns.unwrap_or_else(mono_ns)
}

/// How many profiles [`Profiles::write_rest`] writes for a session that
/// ends at `until`: one per interval that ended by then, plus the last
/// one, cut short.
fn profiles_left(agg: &rprof_report::Aggregate, step_ns: u64, until: u64) -> u64 {
    let mut n = 1;
    let mut cutoff = agg.cutoff();
    while let Some(end) = cutoff.filter(|end| *end <= until) {
        n += 1;
        // As `roll` moves it; a zero step would not move it at all.
        cutoff = Some(end.saturating_add(step_ns.max(1)));
    }
    n
}

/// The module's `max_cookies` parameter (its default if it cannot be
/// read).
fn max_cookies() -> u64 {
    std::fs::read_to_string("/sys/module/rprof/parameters/max_cookies")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096)
}

/// How many files and modules the session has named so far.
fn named(sink: &live::AggregateSink) -> u64 {
    sink.agg.resolver().names().len() as u64
}

/// How long after an interval's end the daemon waits for its samples:
/// the module drains its rings every 50 ms by default, and the daemon
/// flushes them before it writes.
const GRACE: Duration = Duration::from_millis(250);

/// Runs the daemon until SIGTERM/SIGINT.
///
/// Interval k holds the samples taken from the session's START plus k
/// intervals to the next such time, in the stream's clock
/// (CLOCK_MONOTONIC, which also schedules the writes), whenever the
/// daemon reads them: a sample read early waits for its own interval,
/// however many intervals ahead; one of interval k read after k's profile
/// was written counts in the next one and as late in its comment.  A profile
/// that cannot be written (a full disk) is skipped with a message; the
/// daemon goes on.
pub fn run(device: &Path, args: &DaemonArgs) -> Result<(), Error> {
    let config = args.sampling.config(args.pid)?;
    // The device first: a missing module or capability is the error to
    // report, before anything is created.
    let dev = Device::open(device)?;
    let mut session = Session::new(&dev, &config, false)?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Error::io("creating the profile directory", e))?;
    let stale = remove_temporaries(&args.dir)?;
    if stale > 0 {
        eprintln!("rprof daemon: removed {stale} temporary files an earlier daemon left");
    }
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGTERM handler", e))?;
    let mut sink = live::AggregateSink::new();
    // Parsed once, and again only when the module list changes.
    let mut kallsyms = rprof_symbols::Kallsyms::parse(&crate::snapshot::read_kallsyms());
    let new_symbolizer =
        |k: &rprof_symbols::Kallsyms| rprof_report::Symbolizer::with_kallsyms(k.clone(), &[], None);
    let mut sym = new_symbolizer(&kallsyms);
    let mut modules = module_list();
    // A quarter: the daemon does not watch the table while it writes
    // profiles (up to seconds), and files keep coming meanwhile.
    let renew_at = (max_cookies() / 4).max(1);
    session.start()?;
    let started = now_unix();
    let mut started_at = Instant::now();
    eprintln!(
        "rprof daemon: profiling into {} every {:?}, keeping {}",
        args.dir.display(),
        args.interval,
        args.keep
    );
    let step = args.interval;
    let step_ns = nanos(step);
    let grace_ns = nanos(GRACE);
    let mut out = Profiles {
        args,
        config: &config,
        started,
        first: 0,
        seq: 0,
        written: 0,
        skipped: 0,
    };
    let mut renewals = 0u64;
    sink.agg.set_interval(Some(step_ns));
    // A renewed session's profiles are written on a thread of their own:
    // symbolizing and compressing take seconds on a slow machine, and
    // meanwhile this thread must go on reading the new session (whose
    // rings and cookie table fill) and renew it in time.
    std::thread::scope(|scope| {
        let mut writers: Vec<std::thread::ScopedJoinHandle<'_, (u64, u64)>> = Vec::new();
        while !signal::stop_requested() {
            reap(&mut writers, &mut out, false);
            // The current interval ends at the cutoff, in the stream's clock
            // (CLOCK_MONOTONIC), once the START record is in.
            if sink.agg.cutoff().is_none() {
                if let Some(s) = sink.agg.span.start_ns {
                    sink.agg.set_cutoff(Some(s.saturating_add(step_ns)));
                }
            }
            let Some(end) = sink.agg.cutoff() else {
                session.pump(POLL_INTERVAL, &mut sink)?;
                continue;
            };
            let due = end.saturating_add(grace_ns);
            let now = mono_ns();
            // A new session once a quarter of the cookie table is used
            // (checked at least every POLL_INTERVAL: files can come faster
            // than intervals), or at an interval's end once --renew has
            // passed.
            let elapsed = started_at.elapsed();
            if named(&sink) >= renew_at || (now >= due && elapsed >= args.renew) {
                // Every sample up to the STOP counts: the complete intervals
                // each in its profile, then the one cut short at the STOP.
                let stopped = session.stop_and_drain(&mut sink)?;
                drop(session);
                session = Session::new(&dev, &config, false)?;
                session.start()?;
                started_at = Instant::now();
                let restarted = now_unix();
                let mut old_sink = std::mem::replace(&mut sink, live::AggregateSink::new());
                sink.agg.set_interval(Some(step_ns));
                // File symbols are cached by cookie, which the new session
                // numbers afresh: a new symbolizer for each session, and one
                // of its own for the writer (a symbolizer's DWARF cache
                // cannot move between threads).  The kernel's symbols are
                // kept (read again only when the module list changes).
                sym = new_symbolizer(&kallsyms);
                let old_kallsyms = kallsyms.clone();
                let until = session_end(&old_sink);
                let mut old_out = Profiles {
                    args,
                    config: &config,
                    started: out.started,
                    first: out.first,
                    seq: out.seq,
                    written: 0,
                    skipped: 0,
                };
                // The new session's profiles are numbered after the old
                // one's.
                out.seq += profiles_left(&old_sink.agg, step_ns, until);
                out.started = restarted;
                out.first = out.seq;
                renewals += 1;
                eprintln!(
                    "rprof daemon: new session after {:.1} s and {} named files{}",
                    elapsed.as_secs_f64(),
                    named(&old_sink),
                    if stopped { "" } else { " (no STOP record)" }
                );
                writers.push(scope.spawn(move || {
                    let mut old_sym = new_symbolizer(&old_kallsyms);
                    old_out.write_rest(&mut old_sink, &mut old_sym, step_ns, until);
                    if let Err(e) = old_sink.finish() {
                        eprintln!("rprof daemon: the previous session's stream: {e}");
                    }
                    (old_out.written, old_out.skipped)
                }));
                continue;
            }
            if now >= due {
                // Everything the rings hold now, then what the buffer has.
                session.device().flush()?;
                for _ in 0..64 {
                    if session.pump(Duration::ZERO, &mut sink)? == 0 {
                        break;
                    }
                }
                let now_loaded = module_list();
                if now_loaded != modules {
                    modules = now_loaded;
                    kallsyms = rprof_symbols::Kallsyms::parse(&crate::snapshot::read_kallsyms());
                    sym = new_symbolizer(&kallsyms);
                }
                out.write(&mut sink, &mut sym, step);
                sink.agg.roll(Some(end.saturating_add(step_ns)));
                continue;
            }
            session.pump(
                Duration::from_nanos(due - now).min(POLL_INTERVAL),
                &mut sink,
            )?;
        }
        let stopped = session.stop_and_drain(&mut sink)?;
        // The last interval, cut short: every sample read counts in it.
        let until = session_end(&sink);
        out.write_rest(&mut sink, &mut sym, step_ns, until);
        reap(&mut writers, &mut out, true);
        eprintln!(
            "rprof daemon: stopped{}; {} profiles written, {} skipped, {} sessions",
            if stopped { "" } else { " (no STOP record)" },
            out.written,
            out.skipped,
            renewals + 1
        );
        sink.finish()
    })
}

/// Joins the profile writers of renewed sessions that are done (all of
/// them with `all`, waiting), and counts what they wrote.
fn reap(
    writers: &mut Vec<std::thread::ScopedJoinHandle<'_, (u64, u64)>>,
    out: &mut Profiles<'_>,
    all: bool,
) {
    let mut i = 0;
    while i < writers.len() {
        if !all && !writers[i].is_finished() {
            i += 1;
            continue;
        }
        match writers.swap_remove(i).join() {
            Ok((written, skipped)) => {
                out.written += written;
                out.skipped += skipped;
            }
            // Its message is out already; the profiles it had left are
            // not written.
            Err(_) => {
                out.skipped += 1;
                eprintln!("rprof daemon: the thread writing a previous session's profiles failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sample = |t: u64| Record::Sample {
            flags: 0,
            time_ns: t,
            offset: 0xffffffff81000000,
            period: 1,
            stack: None,
        };
        let mut r = vec![
            Record::Start {
                time_ns: 10 * s,
                config,
            },
            Record::Task {
                cpu: 0,
                pid: 0,
                tid: 0,
                exe_cookie: 0,
                comm: "swapper/0".into(),
            },
        ];
        for t in [
            10 * s + s / 2,
            11 * s + 1,
            11 * s + s / 2,
            12 * s,
            12 * s + 9 * s / 10,
            12 * s + 1,
            12 * s + 2,
        ] {
            r.push(sample(t));
        }
        r.push(Record::Stop {
            time_ns: 13 * s + s / 5,
            config,
        });
        let mut stream = Vec::new();
        for rec in &r {
            rec.encode(&mut stream);
        }
        let mut sink = live::AggregateSink::new();
        sink.agg.set_interval(Some(s));
        sink.agg.set_cutoff(Some(11 * s));
        crate::session::Sink::feed(&mut sink, &stream).unwrap();
        let mut sym = rprof_report::Symbolizer::new("", &[], None);
        let until = session_end(&sink);
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

    #[test]
    fn rotation_keeps_the_newest() {
        let dir = std::env::temp_dir().join(format!("rprof-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..5 {
            std::fs::write(
                dir.join(format!("{PREFIX}{:010}-{i:06}{SUFFIX}", 100 + i)),
                b"x",
            )
            .unwrap();
        }
        std::fs::write(dir.join("other.txt"), b"x").unwrap();
        rotate(&dir, 2).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "other.txt",
                "rprof-0000000103-000003.pb.gz",
                "rprof-0000000104-000004.pb.gz"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporaries_of_a_killed_daemon_go() {
        let dir = std::env::temp_dir().join(format!("rprof-tmps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            ".rprof-0000000001-000000.pb.gz.tmp",
            "rprof-0000000001-000000.pb.gz",
            ".other.tmp",
            ".rprof-notes.txt.tmp",
        ];
        for n in names {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        assert_eq!(remove_temporaries(&dir).unwrap(), 1);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".other.tmp",
                ".rprof-notes.txt.tmp",
                "rprof-0000000001-000000.pb.gz"
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn summary_line() {
        use rprof_decode::Record;
        let mut agg = rprof_report::Aggregate::new();
        for (stage, count) in [(1, 2), (2, 5), (2, 1), (9, 4)] {
            agg.feed(&Record::Lost {
                cpu: 0,
                stage,
                count,
            });
        }
        assert_eq!(
            summary(Path::new("/d/rprof-1-000001.pb.gz"), &agg),
            "/d/rprof-1-000001.pb.gz: 0 samples, 12 lost \
             (ring 2, buffer 6, no_mm 0, no_mapping 0, no_cookie 0, other 4)"
        );
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        // Positive, but nothing as a Duration: intervals would not advance.
        assert!(parse_seconds("1e-12").is_err());
        assert!(parse_seconds("x").is_err());
    }
}

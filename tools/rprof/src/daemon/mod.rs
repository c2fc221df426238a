//! `rprof daemon` / `rprofd`: continuous profiling into rotating pprof
//! files.
//!
//! A module session, read through the mmap'ed buffer, runs until the
//! daemon renews it (below).  Every interval the samples of that interval are symbolized
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
//! deleted binaries alive, it has the module forget its cookies
//! (`RPROF_IOC_RESET_COOKIES`) as soon as the session has named a quarter
//! of `max_cookies` since the last reset (checked every 100 ms at most),
//! at an interval's end once `--renew` seconds have passed since, and at
//! once on SIGHUP.  Sampling goes on: the module writes a RESET record and
//! names every file used after it anew, under new cookies; the intervals
//! go on as they were.  The daemon keeps the names of the forgotten
//! cookies only while counts not yet written need them, and the writer
//! symbolizes with a new symbolizer after each reset (the old one's
//! files, symbols and per-process perf maps go with it), so memory stays
//! bounded by the cookie table however long it runs.  A reset that
//! does not fit the buffer now (EAGAIN) is tried again 100 ms later.
//!
//! A module without that ioctl (ENOTTY: an older rprof.ko) gets a renewal
//! instead, as does a session whose stream is malformed: STOP, drain,
//! write what it holds (each complete interval, then the one cut short at
//! the STOP), then a new session whose table starts empty.  Sampling
//! pauses from the STOP to the new START (the stop's drain and a
//! SET_CONFIG: 56 to 123 ms in one run under TCG and KASAN, said on each
//! renewal's line); what runs only then is in no profile.  The next
//! interval starts at the new START.  The ended session's profiles are
//! written by the daemon's one writer thread (in order, at most a few
//! sessions behind), while the new one is read.  A new session that
//! cannot start is tried again, after 1 s, then twice as long each time
//! up to a minute; with `--pid`, the daemon stops once that process has
//! ended (seen at once without a session, at the end of the current
//! interval with one).  Whatever stops it, an error included, the
//! samples it read are written first, unless the writer thread died (a
//! bug): the profiles queued to it then are counted as lost and the exit
//! status is 1.

use crate::pidfd::Watch;
use crate::sampling::SamplingArgs;
use crate::session::{Session, Sink};
use crate::{live, signal, Device, Error};
use clap::Args;
use rprof_symbols::Kallsyms;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
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

    /// Have the module forget its cookie table (and let go of the files
    /// it pins) at the end of the first interval this many seconds after
    /// the last time; it is also reset once it has named a quarter of
    /// the module's `max_cookies` since.
    #[arg(long, value_name = "SECS", default_value = "3600", value_parser = parse_seconds)]
    pub renew: Duration,

    /// Only sample the thread group (process) PID; the daemon stops once
    /// it has ended.
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

/// Writes one interval's profile (what `agg` counted for it; call chains
/// through the stacks it has seen in the whole session) with `sym`, and
/// rotates; returns its path.  On an error (a full disk, ...) nothing of
/// the profile is left behind.
pub fn write_profile(
    dir: &Path,
    interval: Interval,
    agg: &rprof_report::Aggregate,
    config: &rprof_abi::rprof_config,
    sym: &mut rprof_report::Symbolizer,
    keep: u64,
) -> Result<PathBuf, Error> {
    let mut comment = format!(
        "rprof daemon: {} samples, lost {}",
        agg.samples,
        agg.lost_line()
    );
    if agg.late > 0 {
        comment.push_str(&format!(
            "; {} samples of earlier intervals read too late for them",
            agg.late
        ));
    }
    let opts = rprof_report::pprof::Options {
        time_nanos: interval.start.as_nanos() as i64,
        duration_nanos: interval.length.as_nanos() as i64,
        comments: vec![comment],
    };
    let profile =
        rprof_report::pprof::build(agg, sym, &rprof_report::Filter::default(), config, &opts);
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
    eprintln!("rprof daemon: wrote {}", summary(&path, agg));
    Ok(path)
}

/// The kernel's module list, to tell when the symbolizer's kallsyms is
/// out of date.
fn module_list() -> String {
    std::fs::read_to_string("/proc/modules").unwrap_or_default()
}

/// `PATH: N samples, L lost (ring R, buffer B, ...)`: one interval's
/// totals, for the daemon's line on stderr; `, K of them late` follows
/// when K of the N belong to earlier intervals but were read after those
/// were written, and `, throttled T times` when the kernel throttled
/// sampling (perf's limit on samples per tick) in it.
fn summary(path: &Path, agg: &rprof_report::Aggregate) -> String {
    let mut line = format!(
        "{}: {} samples, {} lost ({})",
        path.display(),
        agg.samples,
        agg.lost_total(),
        agg.lost_line()
    );
    if agg.late > 0 {
        line.push_str(&format!(", {} of them late", agg.late));
    }
    if agg.throttles > 0 {
        line.push_str(&format!(", throttled {} times", agg.throttles));
    }
    line
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
    /// The next interval, `length` long, and its number taken.
    fn next(&mut self, length: Duration) -> Interval {
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
fn write_counted(
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
fn session_end(sink: &live::AggregateSink, clock: &StreamClock) -> u64 {
    sink.agg
        .span
        .stop_ns
        .unwrap_or_else(|| clock.now(sink).unwrap_or(0))
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

/// How many files and modules the session has named since the module's
/// cookie table was last reset: what that table holds.
fn named(sink: &live::AggregateSink) -> u64 {
    sink.agg.resolver().names_since_reset() as u64
}

/// How long after an interval's end the daemon waits for its samples:
/// the module drains its rings every 50 ms by default, and the daemon
/// flushes them before it writes.
const GRACE: Duration = Duration::from_millis(250);

/// How many jobs (intervals, ended sessions) may wait for the writer
/// thread before the daemon waits for it in turn: each holds its samples
/// in memory, and a SIGKILL loses them.
const WRITER_BACKLOG: usize = 8;

/// The first wait before a session is tried again after a renewal could
/// not start one; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The stream's clock as the daemon reads it: the START record's time
/// plus what the daemon's own monotonic clock says has passed since
/// START returned.  Not CLOCK_MONOTONIC itself: in a time namespace the
/// daemon's CLOCK_MONOTONIC is offset from the kernel's, which stamps the
/// stream.
struct StreamClock {
    /// When the session's START returned.
    started_at: Instant,
}

impl StreamClock {
    fn new() -> Self {
        StreamClock {
            started_at: Instant::now(),
        }
    }

    /// Now in the stream's clock, once `sink` has its START record.
    fn now(&self, sink: &live::AggregateSink) -> Option<u64> {
        let start = sink.agg.span.start_ns?;
        Some(start.saturating_add(nanos(self.started_at.elapsed())))
    }
}

/// Work for the writer thread, in the order the daemon read it: so
/// that the thread that reads the module never stops to symbolize,
/// compress and write (up to seconds on a slow machine), while the rings
/// and the cookie table fill.
enum Job {
    /// One interval of the session being read.
    Interval(Live),
    /// A session that ended: the rest of its profiles.
    Ended(Ended),
}

/// One interval of the session being read, taken out of its aggregate
/// ([`rprof_report::Aggregate::take_interval`]).
struct Live {
    agg: rprof_report::Aggregate,
    interval: Interval,
    /// Which of the daemon's sessions, and of its resets (see [`Syms`]).
    session: Epoch,
    kallsyms: Arc<Kallsyms>,
}

/// A session that ended, on its way to the writer thread: its samples,
/// the kernel's symbols of its time and where its profiles go in the
/// daemon's numbering.
struct Ended {
    sink: live::AggregateSink,
    /// Which of the daemon's sessions, and of its resets (see [`Syms`]).
    session: Epoch,
    kallsyms: Arc<Kallsyms>,
    /// Its start, since the Unix epoch.
    started: Duration,
    /// The sequence number of its first interval, and of its next profile.
    first: u64,
    seq: u64,
    /// Its end in the stream's clock ([`session_end`]).
    until: u64,
    /// How many profiles it makes ([`profiles_left`]).
    profiles: u64,
}

/// What one job of the writer thread did.
#[derive(Default)]
struct Written {
    written: u64,
    skipped: u64,
    /// The first malformed stream among the sessions it wrote.
    stream_error: Option<Error>,
}

/// What the writer thread has done so far, kept outside it and updated as
/// each job finishes (not handed back when it ends): if that thread dies
/// (a panic outside a job, a failed print), what it wrote and skipped
/// still counts in the daemon's last line, and what it was handed and
/// never wrote is known.
#[derive(Default)]
struct Tally {
    /// Profiles of the jobs handed to the writer thread (some may still
    /// wait in its queue).
    sent: AtomicU64,
    /// Profiles it wrote.
    written: AtomicU64,
    /// Profiles it skipped (could not write, or lost to a bug).
    skipped: AtomicU64,
    /// The first malformed stream among the sessions it wrote.
    stream_error: Mutex<Option<Error>>,
    /// For tests: the writer thread panics, outside any job, once it has
    /// done this many jobs.
    #[cfg(test)]
    die_after: Option<u64>,
}

impl Tally {
    /// Adds what one job did, and `lost` more profiles of it as skipped.
    fn add(&self, w: Written, lost: u64) {
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
    fn unwritten(&self) -> u64 {
        let done = self.written.load(Ordering::Relaxed) + self.skipped.load(Ordering::Relaxed);
        self.sent.load(Ordering::Relaxed).saturating_sub(done)
    }

    /// Takes the first malformed stream the writer saw.
    fn take_stream_error(&self) -> Option<Error> {
        self.stream_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The daemon's last line: whether the STOP record came (`stopped`), the
/// profiles written and skipped, by the writer thread (`tally`) and by
/// the daemon's own thread once the writer was gone (`out`), and how many
/// sessions ran.  If the writer thread died (`writer_died`), the profiles
/// it was handed and never wrote are counted as skipped, and the line
/// says so.
fn last_line(
    stopped: bool,
    out: &Profiles<'_>,
    tally: &Tally,
    writer_died: bool,
    sessions: u64,
) -> String {
    let lost = if writer_died { tally.unwritten() } else { 0 };
    let written = out.written + tally.written.load(Ordering::Relaxed);
    let skipped = out.skipped + tally.skipped.load(Ordering::Relaxed) + lost;
    format!(
        "rprof daemon: stopped{}; {written} profiles written, {skipped} skipped{}, {sessions} sessions",
        if stopped { "" } else { " (no STOP record)" },
        if writer_died {
            format!(" (the thread writing profiles died: {lost} of them lost with it)")
        } else {
            String::new()
        }
    )
}

/// Which symbolizer a job needs: its session's number (each session
/// numbers its cookies afresh) and how many RESET records of that session
/// were read before it (after one, the files of forgotten cookies are not
/// needed for long: a new symbolizer lets them go, and with them what it
/// cached per process, so that its memory stays bounded in a session
/// that lives for weeks).
type Epoch = (u64, u64);

/// The writer's symbolizer, kept from one profile of a session to the
/// next (not rebuilt every interval), and new for a new session or a
/// reset of its cookie table ([`Epoch`]) or new kernel symbols (a module
/// loaded or gone).
#[derive(Default)]
struct Syms {
    current: Option<(Epoch, Arc<Kallsyms>, rprof_report::Symbolizer)>,
}

impl Syms {
    /// The symbolizer for `session`, whose kernel symbols are `kallsyms`.
    fn get(&mut self, session: Epoch, kallsyms: &Arc<Kallsyms>) -> &mut rprof_report::Symbolizer {
        let same = matches!(&self.current,
            Some((s, k, _)) if *s == session && Arc::ptr_eq(k, kallsyms));
        if !same {
            self.current = None;
        }
        let (_, _, sym) = self.current.get_or_insert_with(|| {
            (
                session,
                kallsyms.clone(),
                rprof_report::Symbolizer::with_kallsyms(kallsyms.clone(), &[], None),
            )
        });
        sym
    }
}

impl Job {
    /// How many profiles it writes.
    fn profiles(&self) -> u64 {
        match self {
            Job::Interval(_) => 1,
            Job::Ended(e) => e.profiles,
        }
    }

    /// Writes its profiles, adding to `w`.
    fn run(
        self,
        args: &DaemonArgs,
        config: &rprof_abi::rprof_config,
        syms: &mut Syms,
        w: &mut Written,
    ) {
        match self {
            Job::Interval(l) => {
                let sym = syms.get(l.session, &l.kallsyms);
                write_counted(args, config, l.interval, &l.agg, sym, w);
            }
            Job::Ended(e) => {
                e.write(args, config, syms, w);
                // That session has no more profiles to come.
                syms.current = None;
            }
        }
    }
}

impl Ended {
    /// Writes every profile of this session, adding to `w`.
    fn write(
        mut self,
        args: &DaemonArgs,
        config: &rprof_abi::rprof_config,
        syms: &mut Syms,
        w: &mut Written,
    ) {
        let sym = syms.get(self.session, &self.kallsyms);
        let mut out = Profiles {
            args,
            config,
            started: self.started,
            first: self.first,
            seq: self.seq,
            written: 0,
            skipped: 0,
        };
        out.write_rest(&mut self.sink, sym, nanos(args.interval), self.until);
        w.written += out.written;
        w.skipped += out.skipped;
        if let Err(e) = self.sink.finish() {
            eprintln!("rprof daemon: a session's stream: {e}");
            w.stream_error.get_or_insert(e);
        }
    }
}

/// The daemon's one writer thread: every job, in the order the daemon
/// sent them, until the channel closes; what each did goes into `tally`
/// as soon as it is done (before anything else that could fail), so it
/// counts even if the thread dies later.  A job whose writing panics (a
/// bug) has its profiles counted as skipped, and the thread goes on with
/// the next: the jobs queued behind it are not lost.
fn writer(rx: Receiver<Job>, args: &DaemonArgs, config: &rprof_abi::rprof_config, tally: &Tally) {
    // The daemon's signals go to the thread that reads the module.
    signal::block_in_this_thread();
    let mut syms = Syms::default();
    #[cfg(test)]
    let mut jobs = 0u64;
    for job in rx {
        let profiles = job.profiles();
        let mut this = Written::default();
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            job.run(args, config, &mut syms, &mut this)
        }));
        let panicked = done.is_err();
        let left = if panicked {
            profiles.saturating_sub(this.written + this.skipped)
        } else {
            0
        };
        tally.add(this, left);
        if panicked {
            // Whatever it held may be half-updated.
            syms = Syms::default();
            eprintln!(
                "rprof daemon: writing profiles failed (a bug); counted as skipped: {left} (some may be written)"
            );
        }
        #[cfg(test)]
        {
            jobs += 1;
            if tally.die_after == Some(jobs) {
                panic!("the writer thread dies, as a test asks");
            }
        }
    }
}

/// The module as the daemon uses it: sessions to configure.  `/dev/rprof`
/// ([`Device`]) in the daemon; a seam so that the tests can give it
/// sessions that fail to start or whose stream is malformed.
trait Module {
    /// A configured session.
    type Session: Running;
    /// Checks the ABI version, configures a session with `config` and
    /// maps its buffer ([`Session::new`]); not started.
    fn configure(&self, config: &rprof_abi::rprof_config) -> Result<Self::Session, Error>;
}

/// A configured session as the daemon drives it (see [`Session`]).
trait Running {
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
}

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
}

/// The daemon's state: the session it reads and the interval it fills.
///
/// Invariant: `sink` holds the samples of `session` since its START and
/// nothing else; with no session (a renewal could not start one; tried
/// again at `retry`) it is empty.
struct Daemon<'a, M: Module> {
    /// The module (`/dev/rprof`; a fake in tests).
    dev: M,
    args: &'a DaemonArgs,
    config: &'a rprof_abi::rprof_config,
    session: Option<M::Session>,
    sink: live::AggregateSink,
    clock: StreamClock,
    /// Parsed once, and again only when the module list (`modules`)
    /// changes; shared with the writer.
    kallsyms: Arc<Kallsyms>,
    modules: String,
    /// The current session's number (for the writer's [`Syms`]): how
    /// many sessions started, the last line's count.
    session_no: u64,
    out: Profiles<'a>,
    /// Reset the cookie table once the session has named this many files
    /// since the last reset.
    renew_at: u64,
    /// Sessions ended for a new one (which may not have started); read by
    /// the tests.
    renewals: u64,
    /// Cookie-table resets asked for; read by the tests.
    resets: u64,
    /// The module knows RESET_COOKIES (no ENOTTY yet).
    can_reset: bool,
    /// A reset is due, for this reason, from `reset_retry` on.
    reset_due: Option<&'static str>,
    reset_retry: Instant,
    /// A reset was asked for and its RESET record not read yet: the
    /// sink's count of RESET records when it was asked.
    reset_asked: Option<u64>,
    /// When the session started or the table was last reset (`--renew`).
    renewed_at: Instant,
    /// When to try to start a session again, and the wait after that.
    retry: (Instant, Duration),
    /// The process of `--pid` is gone: stop.
    target_gone: bool,
    /// The process of `--pid`, by its pidfd (a new process given the
    /// same pid later is not it).
    target: Option<Watch>,
    to_writer: SyncSender<Job>,
    /// What the writer thread has done, and been handed.
    tally: &'a Tally,
    /// The last job had to wait for room in the writer's queue.
    writer_behind: bool,
}

impl<'a, M: Module> Daemon<'a, M> {
    /// A daemon on `dev` with no session yet ([`Self::begin`] starts the
    /// first), whose jobs go to `to_writer` and are counted in `tally`;
    /// no kernel symbols yet, no `--pid` process, no renewal for the
    /// cookie table.
    fn new(
        dev: M,
        args: &'a DaemonArgs,
        config: &'a rprof_abi::rprof_config,
        to_writer: SyncSender<Job>,
        tally: &'a Tally,
    ) -> Self {
        Daemon {
            dev,
            args,
            config,
            session: None,
            sink: live::AggregateSink::new(),
            clock: StreamClock::new(),
            kallsyms: Arc::new(Kallsyms::parse("")),
            modules: String::new(),
            session_no: 0,
            out: Profiles {
                args,
                config,
                started: Duration::ZERO,
                first: 0,
                seq: 0,
                written: 0,
                skipped: 0,
            },
            renew_at: u64::MAX,
            renewals: 0,
            resets: 0,
            can_reset: true,
            reset_due: None,
            reset_retry: Instant::now(),
            reset_asked: None,
            renewed_at: Instant::now(),
            retry: (Instant::now(), RETRY_FIRST),
            target_gone: false,
            target: None,
            to_writer,
            tally,
            writer_behind: false,
        }
    }

    fn step_ns(&self) -> u64 {
        nanos(self.args.interval)
    }

    /// A sink for a new session, scheduling intervals of `--interval`.
    fn new_sink(&self) -> live::AggregateSink {
        let mut sink = live::AggregateSink::new();
        sink.agg.set_interval(Some(self.step_ns()));
        sink
    }

    /// Configures and STARTs a session; its intervals are numbered on
    /// from the last one's.
    fn start(&mut self) -> Result<(), Error> {
        let session = self.dev.configure(self.config)?;
        self.begin(session)
    }

    /// STARTs `session` (configured) and makes it the one read, with a
    /// fresh sink and clock (and, in the writer, symbolizer); the next
    /// failed start waits [`RETRY_FIRST`] again.
    fn begin(&mut self, mut session: M::Session) -> Result<(), Error> {
        session.start()?;
        self.clock = StreamClock::new();
        self.renewed_at = Instant::now();
        self.reset_due = None;
        self.reset_asked = None;
        self.session = Some(session);
        self.sink = self.new_sink();
        self.session_no += 1;
        self.out.started = now_unix();
        self.out.first = self.out.seq;
        self.retry = (Instant::now(), RETRY_FIRST);
        Ok(())
    }

    /// Whether the process of `--pid` (if any) has ended.
    fn target_ended(&self) -> bool {
        self.target.as_ref().is_some_and(|w| w.ended())
    }

    /// The process of `--pid` has ended: says so, and the daemon stops.
    fn stop_for_target(&mut self) {
        eprintln!(
            "rprof daemon: process {} has ended; stopping",
            self.args.pid.unwrap_or(0)
        );
        self.target_gone = true;
    }

    /// Whether `e` says that the process of `--pid` is gone (SET_CONFIG
    /// refuses a pid that names no process with ESRCH).
    fn target_gone_error(&self, e: &Error) -> bool {
        self.args.pid.is_some()
            && matches!(e, Error::Ioctl { source, .. } if source.raw_os_error() == Some(libc::ESRCH))
    }

    /// Takes the current session's samples (it is stopped and drained,
    /// or gone) with the numbers of its profiles, for the writer; the
    /// next session's profiles are numbered after them.
    fn take_ended(&mut self) -> Ended {
        let until = session_end(&self.sink, &self.clock);
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

    /// Gives `job` to the writer; waits while [`WRITER_BACKLOG`] jobs
    /// wait for it already (the module meanwhile drops and counts what
    /// does not fit), and writes it here if the writer is gone.
    fn send(&mut self, job: Job) {
        let profiles = job.profiles();
        let job = match self.to_writer.try_send(job) {
            Ok(()) => {
                self.tally.sent.fetch_add(profiles, Ordering::Relaxed);
                self.writer_behind = false;
                return;
            }
            Err(TrySendError::Full(job)) => {
                // Once per stall, not for every job while it lasts.
                if !self.writer_behind {
                    eprintln!(
                        "rprof daemon: {WRITER_BACKLOG} profiles or sessions wait to be written: waiting for the writer"
                    );
                }
                self.writer_behind = true;
                match self.to_writer.send(job) {
                    Ok(()) => {
                        self.tally.sent.fetch_add(profiles, Ordering::Relaxed);
                        return;
                    }
                    Err(e) => e.0,
                }
            }
            Err(TrySendError::Disconnected(job)) => job,
        };
        // The writer thread is gone (it died; its message is out):
        // written here rather than lost.
        let mut w = Written::default();
        job.run(self.args, self.config, &mut Syms::default(), &mut w);
        self.out.written += w.written;
        self.out.skipped += w.skipped;
        // A malformed stream still makes the exit status 1.
        self.tally.add(
            Written {
                stream_error: w.stream_error,
                ..Written::default()
            },
            0,
        );
    }

    /// Ends the session (STOP, drain), starts a new one and hands the old
    /// one to the writer, in that order: nothing goes unsampled while the
    /// writer catches up.  `why` says what triggered it.  A new session
    /// that cannot start is tried again later (or, if the process of
    /// `--pid` is gone, the daemon stops); only an error of the old
    /// session's stream is returned.
    fn renew(&mut self, why: &str) -> Result<(), Error> {
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
    fn reset(&mut self, why: &'static str) -> Result<(), Error> {
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

    /// Starts a session; on failure says so and schedules the next try.
    fn try_start(&mut self) {
        // A process of --pid that has ended is not followed again: its
        // pid may name another process by now.
        if self.target_ended() {
            self.stop_for_target();
            return;
        }
        let Err(e) = self.start() else { return };
        if self.target_gone_error(&e) {
            self.stop_for_target();
            return;
        }
        let (_, wait) = self.retry;
        let why = e.to_string();
        eprintln!(
            "rprof daemon: could not start a new session: {}; trying again in {} s",
            why.strip_prefix("rprof: ").unwrap_or(&why),
            wait.as_secs()
        );
        self.retry = (Instant::now() + wait, (wait * 2).min(RETRY_MAX));
    }

    /// Reads the session and writes its intervals until a signal, the
    /// end of the process of `--pid`, or an error of the device.  (A
    /// malformed record ends its session, not this loop: the daemon says
    /// so and renews at once ([`Self::pump`]); the error makes the exit
    /// status 1.)
    fn serve(&mut self) -> Result<(), Error> {
        while !signal::stop_requested() && !self.target_gone {
            self.step()?;
        }
        Ok(())
    }

    /// One turn of [`Self::serve`]'s loop: waits for data (at most
    /// [`POLL_INTERVAL`]) and does what is due, which may be a renewal
    /// (STOP, drain, SET_CONFIG) or a wait for room in the writer's
    /// queue.
    fn step(&mut self) -> Result<(), Error> {
        let step_ns = self.step_ns();
        let grace_ns = nanos(GRACE);
        if self.session.is_none() {
            // Without a session, the end of the process of --pid is not
            // seen by a failed start (that may be a minute away): here.
            if self.target_ended() {
                self.stop_for_target();
                return Ok(());
            }
            let now = Instant::now();
            // SIGHUP asks for a new session: try at once.
            if signal::renew_requested() || now >= self.retry.0 {
                self.try_start();
            } else {
                std::thread::sleep((self.retry.0 - now).min(POLL_INTERVAL));
            }
            return Ok(());
        }
        // The current interval ends at the cutoff, in the stream's
        // clock, once the START record is in.
        if self.sink.agg.cutoff().is_none() {
            if let Some(s) = self.sink.agg.span.start_ns {
                self.sink.agg.set_cutoff(Some(s.saturating_add(step_ns)));
            }
        }
        let (Some(end), Some(now)) = (self.sink.agg.cutoff(), self.clock.now(&self.sink)) else {
            return self.pump(POLL_INTERVAL);
        };
        let due = end.saturating_add(grace_ns);
        // The cookie table is reset once a quarter of it is used
        // (checked at least every POLL_INTERVAL: files can come faster
        // than intervals; not again before the last reset's record is
        // read, which the count goes by), on SIGHUP, or at an interval's
        // end once --renew has passed.
        if self.reset_asked.is_some_and(|n| self.sink.resets > n) {
            self.reset_asked = None;
        }
        if self.reset_asked.is_none() && named(&self.sink) >= self.renew_at {
            self.reset_due.get_or_insert("cookie table a quarter full");
        }
        if signal::renew_requested() {
            self.reset_due = Some("SIGHUP");
        }
        if let Some(why) = self
            .reset_due
            .filter(|_| Instant::now() >= self.reset_retry)
        {
            return self.reset(why);
        }
        if now >= due {
            // The process of --pid ended: its last interval is written
            // and the daemon stops (no reset, no renewal, which would
            // fail).
            let ended = self.target_ended();
            self.write_interval()?;
            if ended {
                self.stop_for_target();
            } else if self.renewed_at.elapsed() >= self.args.renew {
                self.reset_due.get_or_insert("--renew time");
            }
            return Ok(());
        }
        self.pump(Duration::from_nanos(due - now).min(POLL_INTERVAL))
    }

    /// Moves what the buffer holds into the sink, waiting at most `wait`.
    /// A malformed record ends the session at once (nothing after it
    /// could be read): says so, and renews; the error is reported again,
    /// and makes the exit status 1, once that session is written.
    fn pump(&mut self, wait: Duration) -> Result<(), Error> {
        if let Some(s) = self.session.as_mut() {
            s.pump(wait, &mut self.sink)?;
        }
        if let Some(e) = self.sink.malformed() {
            eprintln!("rprof daemon: the session's stream is unreadable: {e}");
            self.renew("unreadable stream")?;
        }
        Ok(())
    }

    /// Hands the interval that ended at the cutoff to the writer and
    /// moves on to the next one.
    fn write_interval(&mut self) -> Result<(), Error> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let Some(end) = self.sink.agg.cutoff() else {
            return Ok(());
        };
        // Everything the rings hold now, then what the buffer has.
        session.flush()?;
        for _ in 0..64 {
            if session.pump(Duration::ZERO, &mut self.sink)? == 0 {
                break;
            }
        }
        let now_loaded = module_list();
        if now_loaded != self.modules {
            self.modules = now_loaded;
            // The writer's symbolizer follows (a new `Arc`).
            self.kallsyms = Arc::new(Kallsyms::parse(&crate::snapshot::read_kallsyms()));
        }
        // The interval goes to the writer; this thread reads on.
        let interval = self.out.next(self.args.interval);
        let agg = self
            .sink
            .agg
            .take_interval(Some(end.saturating_add(self.step_ns())));
        self.send(Job::Interval(Live {
            agg,
            interval,
            session: (self.session_no, self.sink.resets),
            kallsyms: self.kallsyms.clone(),
        }));
        Ok(())
    }
}

/// Runs the daemon until SIGTERM/SIGINT (or, with `--pid`, until that
/// process is gone).
///
/// Interval k holds the samples taken from the session's START plus k
/// intervals to the next such time, in the stream's clock
/// (CLOCK_MONOTONIC, which also schedules the writes: [`StreamClock`]),
/// whenever the daemon reads them: a sample read early waits for its own
/// interval, however many intervals ahead; one of interval k read after
/// k's profile was written counts in the next one and as late in its
/// comment.  A profile that cannot be written (a full disk) is skipped
/// with a message; the daemon goes on.
///
/// Every profile (each interval's, and the rest of each session that
/// ends at a renewal or at the end) is written by one writer thread, in
/// order, while this thread goes on reading the module: the rings and
/// the cookie table are watched during a write.  Whatever ends the
/// daemon, an error included, the samples it has read are written before
/// it returns.  If the writer thread dies (a bug), what it wrote and
/// skipped still counts in the last line, which says so; the profiles it
/// was handed and never wrote count as skipped, and those of later jobs
/// are written by this thread.
pub fn run(device: &Path, args: &DaemonArgs) -> Result<(), Error> {
    let config = args.sampling.config(args.pid)?;
    // The device first: a missing module or capability is the error to
    // report, before anything is created.
    let dev = Device::open(device)?;
    // The process of --pid by its pidfd, opened before the module's
    // filter takes its number (a pid that names no process is reported
    // by SET_CONFIG).
    let watched = args.pid.map(|pid| (pid, Watch::new(pid)));
    let first = Session::new(&dev, &config, false)?;
    let target = watched
        .map(|(pid, w)| crate::pidfd::confirm(pid, w))
        .transpose()?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Error::io("creating the profile directory", e))?;
    let stale = remove_temporaries(&args.dir)?;
    if stale > 0 {
        eprintln!("rprof daemon: removed {stale} temporary files an earlier daemon left");
    }
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGTERM handler", e))?;
    signal::install_renew_handler().map_err(|e| Error::io("installing a SIGHUP handler", e))?;
    let kallsyms = Arc::new(Kallsyms::parse(&crate::snapshot::read_kallsyms()));
    let modules = module_list();
    // A quarter: the table is checked between reads (at least every
    // 100 ms), and while the writer's queue is full the daemon waits for
    // it (up to seconds on a slow machine) as files keep coming.
    let renew_at = (max_cookies() / 4).max(1);
    let (to_writer, from_daemon) = std::sync::mpsc::sync_channel(WRITER_BACKLOG);
    // Outside the writer thread, which may die.
    let tally = Tally::default();
    // `begin` sets the session, its sink, clock, symbolizer and start.
    let mut d = Daemon::new(&dev, args, &config, to_writer, &tally);
    d.kallsyms = kallsyms;
    d.modules = modules;
    d.renew_at = renew_at;
    d.target = target;
    d.begin(first)?;
    eprintln!(
        "rprof daemon: profiling into {} every {:?}, keeping {}",
        args.dir.display(),
        args.interval,
        args.keep
    );
    std::thread::scope(|scope| {
        let config = &config;
        let tally = &tally;
        let writer = scope.spawn(move || writer(from_daemon, args, config, tally));
        let served = d.serve();
        if served.is_err() {
            eprintln!("rprof daemon: stopping on an error; writing what was read");
        }
        // Whatever ended it: every sample read so far is written, the
        // last interval cut short at the STOP.
        // No session at the end (a failed start): nothing was left unread.
        let mut stopped = Ok(true);
        if let Some(s) = d.session.as_mut() {
            stopped = s.stop_and_drain(&mut d.sink);
            d.session = None;
            let ended = d.take_ended();
            d.send(Job::Ended(ended));
        }
        let Daemon {
            out,
            session_no,
            to_writer,
            ..
        } = d;
        drop(to_writer);
        // What the writer did is in `tally`, even if it died.
        let writer_died = writer.join().is_err();
        // Sessions that started: a renewal that could not start one
        // made none.
        eprintln!(
            "{}",
            last_line(
                matches!(stopped, Ok(true)),
                &out,
                tally,
                writer_died,
                session_no
            )
        );
        served?;
        stopped?;
        tally.take_stream_error().map_or(Ok(()), Err)?;
        if writer_died {
            return Err(Error::Protocol(
                "the thread writing profiles died (a bug); see the line above".into(),
            ));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer keeps one symbolizer per session (not one per
    /// interval), and makes a new one for a new session, a reset of its
    /// cookie table or new kernel symbols.
    #[test]
    fn the_writer_symbolizer_lives_as_long_as_its_session() {
        let k1 = Arc::new(Kallsyms::parse(""));
        let k2 = Arc::new(Kallsyms::parse(""));
        let mut syms = Syms::default();
        let addr = |s: &mut rprof_report::Symbolizer| s as *const _ as usize;
        let first = addr(syms.get((1, 0), &k1));
        let id = |syms: &Syms| syms.current.as_ref().map(|(s, k, _)| (*s, Arc::as_ptr(k)));
        assert_eq!(addr(syms.get((1, 0), &k1)), first);
        assert_eq!(id(&syms), Some(((1, 0), Arc::as_ptr(&k1))));
        // A reset of the cookie table: a new one.
        syms.get((1, 1), &k1);
        assert_eq!(id(&syms), Some(((1, 1), Arc::as_ptr(&k1))));
        syms.get((2, 0), &k1);
        assert_eq!(id(&syms), Some(((2, 0), Arc::as_ptr(&k1))));
        syms.get((2, 0), &k2);
        assert_eq!(id(&syms), Some(((2, 0), Arc::as_ptr(&k2))));
    }

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

    /// A module for the daemon's tests.  Each session configured takes
    /// the next of `streams` (its chunks: one per pump, the rest at the
    /// STOP); the next `fail_configure` configurations and then the next
    /// `fail_start` STARTs fail; the next RESET_COOKIES fail with the
    /// errnos of `reset_errno`, one each, then succeed (the test puts
    /// their RESET records in the stream); `log` is what the daemon
    /// asked, in order.
    #[derive(Default)]
    struct Fake {
        streams: std::cell::RefCell<std::collections::VecDeque<Vec<Vec<u8>>>>,
        fail_configure: std::cell::Cell<u32>,
        fail_start: std::cell::Cell<u32>,
        reset_errno: std::cell::RefCell<std::collections::VecDeque<i32>>,
        log: std::cell::RefCell<Vec<&'static str>>,
    }

    /// A session of [`Fake`]: the chunks of its stream not read yet.
    struct FakeSession<'f> {
        module: &'f Fake,
        chunks: std::collections::VecDeque<Vec<u8>>,
    }

    impl Fake {
        fn with_streams(streams: Vec<Vec<Vec<u8>>>) -> Self {
            let f = Fake::default();
            f.streams.replace(streams.into());
            f
        }

        fn note(&self, what: &'static str) {
            self.log.borrow_mut().push(what);
        }

        fn log(&self) -> Vec<&'static str> {
            self.log.borrow().clone()
        }

        /// How many sessions the daemon tried to configure.
        fn tries(&self) -> usize {
            self.log
                .borrow()
                .iter()
                .filter(|w| **w == "configure")
                .count()
        }

        /// Fails if `counter` says so (and counts it down).
        fn fails(counter: &std::cell::Cell<u32>, name: &'static str) -> Result<(), Error> {
            if counter.get() == 0 {
                return Ok(());
            }
            counter.set(counter.get() - 1);
            Err(Error::Ioctl {
                name,
                source: std::io::Error::from_raw_os_error(libc::EBUSY),
            })
        }
    }

    impl<'f> Module for &'f Fake {
        type Session = FakeSession<'f>;

        fn configure(&self, _: &rprof_abi::rprof_config) -> Result<FakeSession<'f>, Error> {
            self.note("configure");
            Fake::fails(&self.fail_configure, "RPROF_IOC_SET_CONFIG")?;
            let chunks = self.streams.borrow_mut().pop_front().unwrap_or_default();
            Ok(FakeSession {
                module: self,
                chunks: chunks.into(),
            })
        }
    }

    impl Running for FakeSession<'_> {
        fn start(&mut self) -> Result<(), Error> {
            self.module.note("start");
            Fake::fails(&self.module.fail_start, "RPROF_IOC_START")
        }

        fn pump(&mut self, _: Duration, sink: &mut dyn Sink) -> Result<usize, Error> {
            self.module.note("pump");
            let Some(chunk) = self.chunks.pop_front() else {
                return Ok(0);
            };
            sink.feed(&chunk)?;
            Ok(chunk.len())
        }

        fn flush(&self) -> Result<(), Error> {
            Ok(())
        }

        fn reset_cookies(&mut self) -> Result<(), Error> {
            self.module.note("reset");
            match self.module.reset_errno.borrow_mut().pop_front() {
                Some(errno) => Err(Error::Ioctl {
                    name: "RPROF_IOC_RESET_COOKIES",
                    source: std::io::Error::from_raw_os_error(errno),
                }),
                None => Ok(()),
            }
        }

        fn stop_and_drain(&mut self, sink: &mut dyn Sink) -> Result<bool, Error> {
            self.module.note("stop");
            for chunk in self.chunks.drain(..) {
                sink.feed(&chunk)?;
            }
            Ok(sink.saw_stop())
        }
    }

    /// Daemon options for a test, profiles into a fresh `dir`.
    fn test_args(dir: &Path) -> DaemonArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            d: DaemonArgs,
        }
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        Cli::parse_from(["d", "--dir", dir.to_str().unwrap(), "--interval", "1"]).d
    }

    /// What a test daemon needs around it: a directory of its own,
    /// options and a configuration for it, and the writer's tally.
    struct Setup {
        dir: PathBuf,
        args: DaemonArgs,
        config: rprof_abi::rprof_config,
        tally: Tally,
    }

    impl Setup {
        fn new(name: &str) -> Self {
            let dir = test_dir(name);
            let args = test_args(&dir);
            let config = args.sampling.config(None).unwrap();
            Setup {
                dir,
                args,
                config,
                tally: Tally::default(),
            }
        }

        /// A daemon on `m` with no session yet, and the other end of its
        /// writer's queue.
        fn daemon<'a>(&'a self, m: &'a Fake) -> (Daemon<'a, &'a Fake>, Receiver<Job>) {
            let (tx, rx) = std::sync::mpsc::sync_channel(WRITER_BACKLOG);
            (
                Daemon::new(m, &self.args, &self.config, tx, &self.tally),
                rx,
            )
        }
    }

    /// A fresh directory for a test.
    fn test_dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rprof-daemon-{}-{name}", std::process::id()))
    }

    /// The stream of a session configured with `config` that STARTed at
    /// `start`, with a kernel sample at each of `samples`.
    fn stream(config: rprof_abi::rprof_config, start: u64, samples: &[u64]) -> Vec<u8> {
        use rprof_decode::Record;
        let mut r = vec![
            Record::Start {
                time_ns: start,
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
        r.extend(samples.iter().map(|&t| Record::Sample {
            flags: 0,
            time_ns: t,
            offset: 0xffffffff81000000,
            period: 1,
            stack: None,
        }));
        let mut bytes = Vec::new();
        for rec in &r {
            rec.encode(&mut bytes);
        }
        bytes
    }

    /// The samples of each profile in `dir`, in the order of their names.
    fn profile_samples(dir: &Path) -> Vec<i64> {
        let mut names = names_in(dir, |n| n.ends_with(SUFFIX)).unwrap();
        names.sort();
        names
            .iter()
            .map(|n| {
                let p = rprof_report::pprof::read(&std::fs::read(dir.join(n)).unwrap()).unwrap();
                p.sample.iter().map(|x| x.value[0]).sum()
            })
            .collect()
    }

    /// The daemon's reaction to a malformed record: the session ends at
    /// once (STOP and drain; nothing after the bad record counts), its
    /// samples so far go to the writer as an ended session, numbered
    /// before the next, and are written in its profile, the stream's
    /// error kept for the exit status; a new session starts and is read
    /// from then on.
    #[test]
    fn a_malformed_record_renews_the_session() {
        let setup = Setup::new("malformed");
        let (dir, args, config, tally) = (&setup.dir, &setup.args, setup.config, &setup.tally);
        let s = 1_000_000_000u64;
        let mut first = stream(config, 10 * s, &[10 * s + 1, 10 * s + 2, 10 * s + 3]);
        // A header whose size is not a multiple of 8.
        first.extend_from_slice(&[1, 0, 0, 0, 13, 0, 0, 0]);
        // Records after it are not read: the framing is lost.
        let after = stream(config, 11 * s, &[11 * s + 1]);
        let second = stream(config, 20 * s, &[20 * s + 1]);
        let m = Fake::with_streams(vec![vec![first, after], vec![second]]);
        let (mut d, rx) = setup.daemon(&m);
        d.start().unwrap();
        d.pump(Duration::ZERO).unwrap();
        assert_eq!(
            m.log(),
            ["configure", "start", "pump", "stop", "configure", "start"]
        );
        assert_eq!((d.renewals, d.session_no), (1, 2));
        assert!(d.session.is_some());
        assert_eq!(d.sink.malformed(), None, "the new session has a new sink");
        // The ended session's one profile is number 0; the new one's
        // start at 1.
        assert_eq!((d.out.first, d.out.seq), (1, 1));
        assert_eq!(tally.sent.load(Ordering::Relaxed), 1);
        // The new session is read.
        d.pump(Duration::ZERO).unwrap();
        assert_eq!((d.sink.agg.samples, d.renewals), (1, 1));
        assert_eq!(d.sink.agg.span.start_ns, Some(20 * s));
        // The writer writes what the ended session counted.
        drop(d);
        writer(rx, args, &config, tally);
        assert_eq!(profile_samples(dir), [3]);
        assert_eq!(tally.written.load(Ordering::Relaxed), 1);
        assert_eq!(tally.skipped.load(Ordering::Relaxed), 0);
        let e = tally
            .take_stream_error()
            .expect("the stream's error is kept");
        assert!(e.to_string().contains("malformed record"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A malformed session written on the daemon's own thread (the
    /// writer thread gone) keeps its stream error, and with it exit
    /// status 1 (it was dropped there).
    #[test]
    fn a_malformed_stream_written_without_the_writer_still_fails() {
        let setup = Setup::new("lost-error");
        let (dir, config, tally) = (&setup.dir, setup.config, &setup.tally);
        let s = 1_000_000_000u64;
        let mut first = stream(config, 10 * s, &[10 * s + 1]);
        first.extend_from_slice(&[1, 0, 0, 0, 13, 0, 0, 0]);
        let second = stream(config, 20 * s, &[20 * s + 1]);
        let m = Fake::with_streams(vec![vec![first], vec![second]]);
        let (mut d, rx) = setup.daemon(&m);
        drop(rx); // the writer thread is gone
        d.start().unwrap();
        d.pump(Duration::ZERO).unwrap();
        assert_eq!(d.renewals, 1);
        assert_eq!(d.out.written, 1, "written on the daemon thread");
        assert!(tally.take_stream_error().is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// If the writer thread dies outside a job, what it wrote before
    /// still counts in the last line; what it was handed and never wrote
    /// counts as skipped, and the line says it died.  A job after its
    /// death is written by the daemon's own thread.
    #[test]
    fn the_writers_counts_survive_its_death() {
        let mut setup = Setup::new("writer-dies");
        setup.tally.die_after = Some(2);
        let m = Fake::default();
        let (mut d, rx) = setup.daemon(&m);
        let (dir, args, config, tally) = (&setup.dir, &setup.args, setup.config, &setup.tally);
        let job = |seq: u64, d: &Daemon<'_, &Fake>| {
            Job::Interval(Live {
                agg: rprof_report::Aggregate::new(),
                interval: Interval {
                    seq,
                    start: Duration::from_secs(1_000 + seq),
                    length: Duration::from_secs(1),
                },
                session: (1, 0),
                kallsyms: d.kallsyms.clone(),
            })
        };
        for seq in 0..3 {
            let j = job(seq, &d);
            d.send(j);
        }
        let died = std::thread::scope(|scope| {
            let (args, config, tally) = (&args, &config, &tally);
            let w = scope.spawn(move || writer(rx, args, config, tally));
            w.join().is_err()
        });
        assert!(died);
        let j = job(3, &d);
        d.send(j);
        assert_eq!(profile_samples(dir).len(), 3);
        assert_eq!(
            last_line(true, &d.out, tally, died, 1),
            "rprof daemon: stopped; 3 profiles written, 1 skipped \
             (the thread writing profiles died: 1 of them lost with it), 1 sessions"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// COOKIE records of `cookies`, then a sample in each, encoded.
    fn files(cookies: std::ops::Range<u64>, time_ns: u64) -> Vec<u8> {
        use rprof_decode::Record;
        let mut bytes = Vec::new();
        for c in cookies {
            Record::Cookie {
                cookie: c,
                flags: 0,
                dev: 1,
                ino: c,
                path: format!("/bin/p{c}"),
            }
            .encode(&mut bytes);
            Record::Switch { cookie: c }.encode(&mut bytes);
            Record::Sample {
                flags: 1,
                time_ns,
                offset: 0x10,
                period: 1,
                stack: None,
            }
            .encode(&mut bytes);
        }
        bytes
    }

    /// A RESET record at `time_ns` retiring cookies below `next_cookie`.
    fn reset_record(time_ns: u64, next_cookie: u64) -> Vec<u8> {
        rprof_decode::Record::Reset {
            time_ns,
            next_cookie,
            next_stack: 1,
        }
        .to_bytes()
    }

    /// A session's first chunk for the reset tests: START at a time that
    /// leaves every interval open during a test, a sample, and three
    /// named files (the trigger, `renew_at`, is 3); and that START time.
    fn three_files(config: rprof_abi::rprof_config) -> (u64, Vec<u8>) {
        let t0 = u64::MAX / 4;
        let mut first = stream(config, t0, &[t0 + 1]);
        first.extend(files(16..19, t0 + 2));
        (t0, first)
    }

    /// Starts `d`, with a trigger of 3 files, and steps it until it asks
    /// the module to reset the table (the first chunk read, then the
    /// reset).
    fn step_to_the_first_reset(d: &mut Daemon<'_, &Fake>, m: &Fake) {
        d.renew_at = 3;
        d.start().unwrap();
        d.step().unwrap();
        d.step().unwrap();
        assert_eq!(m.log(), ["configure", "start", "pump", "reset"]);
    }

    /// Once a quarter of the module's cookie table is used, the daemon
    /// has the module reset it, and sampling goes on in the same session
    /// (before, it stopped the session and started another: nothing was
    /// sampled in between).  It asks once: not again until the RESET
    /// record is read, and then only once the files named since reach
    /// the trigger again.
    #[test]
    fn a_quarter_full_cookie_table_is_reset_in_the_same_session() {
        let setup = Setup::new("reset");
        let (t0, first) = three_files(setup.config);
        let mut second = reset_record(t0 + 3, 19);
        second.extend(files(19..20, t0 + 4));
        let third = files(20..22, t0 + 5);
        let m = Fake::with_streams(vec![vec![first, Vec::new(), second, third]]);
        let (mut d, _rx) = setup.daemon(&m);
        step_to_the_first_reset(&mut d, &m);
        assert_eq!((d.resets, d.renewals, d.session_no), (1, 0, 1));
        // Not again before the RESET record (the table still reads as 3
        // named files until then).
        d.step().unwrap();
        assert_eq!(m.log().last(), Some(&"pump"));
        d.step().unwrap();
        assert_eq!((d.sink.resets, named(&d.sink)), (1, 1));
        d.step().unwrap();
        assert_eq!(named(&d.sink), 3);
        assert_eq!(m.log().iter().filter(|w| **w == "reset").count(), 1);
        // Three named since the reset: the next one.
        d.step().unwrap();
        assert_eq!(m.log().iter().filter(|w| **w == "reset").count(), 2);
        assert!(!m.log().contains(&"stop"));
        assert_eq!(d.sink.agg.samples, 7);
        std::fs::remove_dir_all(&setup.dir).unwrap();
    }

    /// A reset that does not fit the buffer now (EAGAIN) is tried again
    /// POLL_INTERVAL later, not at once; a module without the ioctl
    /// (ENOTTY) gets a renewal instead, then and from then on.
    #[test]
    fn a_refused_reset_is_retried_or_replaced_by_a_renewal() {
        let setup = Setup::new("reset-refused");
        let (t0, first) = three_files(setup.config);
        let next = stream(setup.config, t0 + 10, &[t0 + 11]);
        let m = Fake::with_streams(vec![vec![first], vec![next]]);
        m.reset_errno
            .borrow_mut()
            .extend([libc::EAGAIN, libc::ENOTTY]);
        let (mut d, _rx) = setup.daemon(&m);
        step_to_the_first_reset(&mut d, &m);
        assert_eq!(d.resets, 0);
        // Not before POLL_INTERVAL.
        d.step().unwrap();
        assert_eq!(m.log().last(), Some(&"pump"));
        std::thread::sleep(POLL_INTERVAL);
        d.step().unwrap();
        assert_eq!(
            m.log()[4..],
            ["pump", "reset", "stop", "configure", "start"]
        );
        assert_eq!((d.resets, d.renewals, d.can_reset), (0, 1, false));
        std::fs::remove_dir_all(&setup.dir).unwrap();
    }

    /// A session that cannot start (SET_CONFIG or START refused) is
    /// tried again after RETRY_FIRST, then twice as long each time up to
    /// RETRY_MAX; one that starts makes the next wait RETRY_FIRST again.
    /// Only sessions that started count in the last line.
    #[test]
    fn failed_starts_back_off_up_to_a_minute() {
        let setup = Setup::new("backoff");
        let (dir, tally) = (&setup.dir, &setup.tally);
        let m = Fake::default();
        m.fail_configure.set(5);
        m.fail_start.set(3);
        let (mut d, _rx) = setup.daemon(&m);
        let mut waits = Vec::new();
        for _ in 0..8 {
            let before = Instant::now();
            d.try_start();
            assert!(d.session.is_none());
            waits.push((d.retry.0 - before).as_secs());
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(m.tries(), 8);
        assert_eq!(d.session_no, 0);
        d.try_start();
        assert!(d.session.is_some());
        assert_eq!((d.retry.1, d.session_no), (RETRY_FIRST, 1));
        // The next failure waits RETRY_FIRST again.
        d.session = None;
        m.fail_start.set(1);
        let before = Instant::now();
        d.try_start();
        assert_eq!((d.retry.0 - before).as_secs(), 1);
        assert_eq!(d.retry.1, 2 * RETRY_FIRST);
        assert!(last_line(true, &d.out, tally, false, d.session_no).ends_with(" 1 sessions"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Without a session, the daemon tries again once the retry time has
    /// come, not before, or at once on SIGHUP.
    #[test]
    fn a_retry_comes_at_its_time_or_on_sighup() {
        let setup = Setup::new("retry");
        let dir = &setup.dir;
        signal::install_renew_handler().unwrap();
        let m = Fake::default();
        m.fail_start.set(2);
        let (mut d, _rx) = setup.daemon(&m);
        // At its time: RETRY_FIRST after the failure.
        d.try_start();
        let failed = Instant::now();
        while m.tries() == 1 {
            assert!(failed.elapsed() < 10 * RETRY_FIRST, "never tried again");
            d.step().unwrap();
        }
        assert!(failed.elapsed() >= RETRY_FIRST - POLL_INTERVAL);
        assert!(d.session.is_none(), "the second START fails");
        // On SIGHUP: long before its time.
        d.retry.0 = Instant::now() + Duration::from_secs(3600);
        for _ in 0..3 {
            d.step().unwrap();
        }
        assert_eq!(m.tries(), 2, "tried before its time");
        // SAFETY: kill() of our own process with a signal whose handler
        // is installed (above).
        let hup = unsafe { libc::kill(libc::getpid(), libc::SIGHUP) };
        assert_eq!(hup, 0);
        let sent = Instant::now();
        while d.session.is_none() {
            assert!(sent.elapsed() < Duration::from_secs(10), "SIGHUP ignored");
            d.step().unwrap();
        }
        assert_eq!(m.tries(), 3);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Without a session (a start failed; the next try up to a minute
    /// away), the end of the process of `--pid` stops the daemon at once.
    #[test]
    fn without_a_session_the_end_of_the_pid_is_seen() {
        let setup = Setup::new("target");
        let dir = &setup.dir;
        let m = Fake::default();
        m.fail_start.set(1);
        let (mut d, _rx) = setup.daemon(&m);
        d.try_start();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let watch = Watch::new(child.id() as i32).unwrap();
        child.wait().unwrap();
        d.target = Some(watch);
        d.step().unwrap();
        assert!(d.target_gone);
        assert_eq!(m.tries(), 1);
        std::fs::remove_dir_all(dir).unwrap();
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
        agg.late = 3;
        assert!(summary(Path::new("/d/p"), &agg).ends_with("other 4), 3 of them late"));
        agg.throttles = 2;
        assert!(summary(Path::new("/d/p"), &agg).ends_with(", 3 of them late, throttled 2 times"));
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

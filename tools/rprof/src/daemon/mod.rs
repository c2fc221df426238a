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
//!
//! With `--listen ADDR` the daemon also serves HTTP ([`http`], tiny_http
//! on threads of its own): `GET /debug/pprof/profile?seconds=N` (30 by
//! default, 1 to 3600; `&pid=P` for one process) answers, as Go's
//! net/http/pprof does, a gzip'd pprof of the CPU samples taken in the
//! next N seconds of the stream's clock, built as the interval profiles
//! are.  The reader takes each scrape ([`pull`]) between reads: it
//! forks the session's aggregate (the stream's state, no counts) with
//! the window as its filter and feeds it every record after the
//! session's own, so that scrapes at once each count their own window
//! from the one module session; [`GRACE`](schedule::GRACE) past the
//! window's end it flushes the rings, reads, and hands the counts to the
//! scrape's thread, which symbolizes and encodes them: the reader never
//! waits for a client.  A session that ends (a renewal, the stop) ends
//! its scrapes with it, cut short (their profile says so).  At most
//! [`MAX_SCRAPES`](scrape::MAX_SCRAPES) scrapes and
//! [`MAX_REQUESTS`](http::MAX_REQUESTS) requests at once; more get 503.
//! `GET /metrics` ([`metrics`]) shows, in Prometheus' text format, the
//! module's statistics (samples taken, delivered and lost by cause, per
//! CPU), the reader's lag, the cookie table's fill, the profiles written
//! and the scrapes served, as the reader publishes them every second,
//! and the daemon's CPU time, measured by getrusage when asked.
//! `--dir` stays required with `--listen`: the files are what is left of
//! the times no one scraped, and a scrape only sees what comes after it.

mod args;
mod http;
#[cfg(test)]
mod http_tests;
mod metrics;
mod module;
mod profile;
mod pull;
mod reader;
mod renewal;
mod schedule;
mod scrape;
mod tally;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;
mod writer;

pub use args::{parse_listen, parse_seconds, DaemonArgs};
pub use profile::{remove_temporaries, rotate, write_profile, Interval};

use crate::pidfd::Watch;
use crate::{signal, Device, Error};
use http::{Context, Listener};
use metrics::Shared;
use reader::{module_list, Daemon};
use renewal::max_cookies;
use rprof_symbols::Kallsyms;
use schedule::Profiles;
use scrape::Pull;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tally::Tally;
use writer::{writer, Job, WRITER_BACKLOG};

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

/// Runs the daemon until SIGTERM/SIGINT (or, with `--pid`, until that
/// process is gone).
///
/// Interval k holds the samples taken from the session's START plus k
/// intervals to the next such time, in the stream's clock
/// (CLOCK_MONOTONIC, which also schedules the writes:
/// [`StreamClock`](schedule::StreamClock)), whenever the daemon reads
/// them: a sample read early waits for its own
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
    let mut config = args.sampling.config(args.pid)?;
    let mode = args.sampling.call_graph.mode()?;
    // The device first: a missing module or capability is the error to
    // report, before anything is created.
    let dev = Device::open(device)?;
    // The process of --pid by its pidfd, opened before the module's
    // filter takes its number (a pid that names no process is reported
    // by SET_CONFIG).
    let watched = args.pid.map(|pid| (pid, Watch::new(pid)));
    // With unwind tables where asked and the module takes them (`config`
    // is left as it took it, for every renewal), and their uploader.
    let (first, uploader) = crate::unwind::configure(&dev, &mut config, false, mode)?;
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
    // The listener before the first session: an address that cannot be
    // had stops the daemon before it samples.
    let (asks_to_reader, asks) = std::sync::mpsc::channel();
    let shared = Arc::new(Shared::default());
    let listener = match args.listen {
        Some(addr) => Some(Listener::start(
            addr,
            Context {
                asks: asks_to_reader,
                shared: shared.clone(),
                config,
            },
        )?),
        None => None,
    };
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
    d.tables = uploader.as_ref().map(|u| u.watch());
    if listener.is_some() {
        d.pull = Some(Pull::new(asks, shared, max_cookies()));
    }
    d.begin(first)?;
    eprintln!(
        "rprof daemon: profiling into {} every {:?}, keeping {}",
        args.dir.display(),
        args.interval,
        args.keep
    );
    if let Some(l) = &listener {
        eprintln!(
            "rprof daemon: serving http://{}/debug/pprof/profile and /metrics",
            l.addr
        );
    }
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
        // Scrapes still waiting for the reader are answered 503; the
        // listener waits for the answers being sent.
        d.pull = None;
        drop(listener);
        let Daemon {
            out,
            session_no,
            to_writer,
            ..
        } = d;
        drop(to_writer);
        // What the writer did is in `tally`, even if it died.
        let writer_died = writer.join().is_err();
        if let Some(u) = uploader {
            let (counts, notes, _) = u.finish(Duration::from_secs(1));
            for n in notes {
                eprintln!("rprof daemon: {n}");
            }
            eprintln!("rprof daemon: unwind tables: {counts}");
        }
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

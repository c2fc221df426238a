//! Tests of the daemon's loop (reader.rs, renewal.rs) with its writer
//! thread, against a fake module; the other files test their own parts.

use super::args::DaemonArgs;
use super::last_line;
use super::module::{Module, Running};
use super::profile::{names_in, Interval, SUFFIX};
use super::reader::{named, Daemon};
use super::schedule::{POLL_INTERVAL, RETRY_FIRST};
use super::tally::Tally;
use super::testutil::{stream, test_args};
use super::writer::{writer, Job, Live, WRITER_BACKLOG};
use crate::pidfd::Watch;
use crate::session::Sink;
use crate::{signal, Error};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

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
        let args = test_args(&dir, "1");
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

/// With unwind tables, each session's sink tells the uploader what the
/// stream names, and a new session (a renewal) first tells it that the
/// tables are gone (SET_CONFIG dropped them), so that the files the new
/// session names are uploaded again.
#[test]
fn each_session_has_the_uploader_start_over() {
    use crate::unwind::worker::Job as Upload;
    use crate::unwind::FileKey;
    let setup = Setup::new("tables");
    let config = setup.config;
    let t0 = u64::MAX / 4;
    let mut first = stream(config, t0, &[t0 + 1]);
    first.extend(files(16..18, t0 + 2));
    // A malformed record: the daemon renews the session.
    first.extend_from_slice(&[1, 0, 0, 0, 13, 0, 0, 0]);
    let mut second = stream(config, t0 + 10, &[t0 + 11]);
    second.extend(files(16..17, t0 + 12));
    let m = Fake::with_streams(vec![vec![first], vec![second]]);
    let (mut d, _rx) = setup.daemon(&m);
    let (tx, uploads) = std::sync::mpsc::channel();
    d.tables = Some(crate::unwind::Watch::new(tx));
    d.start().unwrap();
    d.pump(Duration::ZERO).unwrap();
    assert_eq!(d.renewals, 1);
    d.pump(Duration::ZERO).unwrap();
    let cookie = |ino: u64| Upload::Cookie {
        key: FileKey { dev: 1, ino },
        path: format!("/bin/p{ino}"),
        pid: None,
    };
    let jobs: Vec<Upload> = uploads.try_iter().collect();
    assert_eq!(
        jobs,
        [
            Upload::Reset,
            cookie(16),
            cookie(17),
            Upload::Reset,
            cookie(16)
        ]
    );
    std::fs::remove_dir_all(&setup.dir).ok();
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

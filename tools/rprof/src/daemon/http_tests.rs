//! The listener's tests, end to end on the host: the daemon's reader
//! over a fake module whose stream is a clock (a sample every
//! millisecond of the stream's clock, so that any window of N seconds
//! holds exactly 1000 N of them, a quarter of them of process 100), a
//! listener on 127.0.0.1:0, real clients (ureq, and `go tool pprof`
//! fetching by itself), and what they get read by independent readers:
//! `go tool pprof -raw` (Debian's golang-go, as `tests/consumers.rs`)
//! and the prometheus-parse crate.

use super::http::{Context, Listener};
use super::metrics::{cpu_time, Shared};
use super::module::{Module, ModuleStats, Running};
use super::reader::{named, Daemon};
use super::scrape::{Ask, Pull};
use super::tally::Tally;
use super::testutil::test_args;
use super::writer::WRITER_BACKLOG;
use crate::session::Sink;
use crate::Error;
use rprof_decode::Record;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

/// The fake session's START time, in the stream's clock.
const START_NS: u64 = 1_000_000_000_000;
/// A sample every millisecond.
const STEP_NS: u64 = 1_000_000;

/// The process of sample `k`: 100 for one in four, 200 otherwise.
fn pid_of(k: u64) -> u32 {
    if k % 4 == 0 {
        100
    } else {
        200
    }
}

/// A module whose sessions are [`Ticking`].
struct Clocked;

/// A session whose stream has sample `k` (k >= 1) at `START_NS + k
/// STEP_NS`, handed out once that time has come by its own clock
/// (which starts before the daemon's: everything of a window is out
/// when the daemon thinks the window is over).  It names one file.
struct Ticking {
    config: rprof_abi::rprof_config,
    started: Option<Instant>,
    /// The next sample to hand out.
    next: u64,
}

impl Module for Clocked {
    type Session = Ticking;

    fn configure(&self, config: &rprof_abi::rprof_config) -> Result<Ticking, Error> {
        Ok(Ticking {
            config: *config,
            started: None,
            next: 0,
        })
    }
}

impl Running for Ticking {
    fn start(&mut self) -> Result<(), Error> {
        self.started = Some(Instant::now());
        Ok(())
    }

    fn pump(&mut self, wait: Duration, sink: &mut dyn Sink) -> Result<usize, Error> {
        std::thread::sleep(wait.min(Duration::from_millis(5)));
        let Some(started) = self.started else {
            return Ok(0);
        };
        let mut bytes = Vec::new();
        if self.next == 0 {
            Record::Start {
                time_ns: START_NS,
                config: self.config,
            }
            .encode(&mut bytes);
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 1,
                ino: 16,
                path: "/bin/clock".into(),
            }
            .encode(&mut bytes);
            self.next = 1;
        }
        let now = START_NS + u64::try_from(started.elapsed().as_nanos()).unwrap();
        while START_NS + self.next * STEP_NS <= now {
            let k = self.next;
            let pid = pid_of(k);
            Record::Task {
                cpu: (k % 2) as u32,
                pid,
                tid: pid,
                exe_cookie: 0,
                comm: format!("p{pid}"),
            }
            .encode(&mut bytes);
            Record::Sample {
                flags: 0,
                time_ns: START_NS + k * STEP_NS,
                offset: 0xffffffff81000000,
                period: 1,
                stack: None,
            }
            .encode(&mut bytes);
            self.next += 1;
        }
        if !bytes.is_empty() {
            sink.feed(&bytes)?;
        }
        Ok(bytes.len())
    }

    fn flush(&self) -> Result<(), Error> {
        Ok(())
    }

    fn reset_cookies(&mut self) -> Result<(), Error> {
        Ok(())
    }

    fn stop_and_drain(&mut self, _: &mut dyn Sink) -> Result<bool, Error> {
        Ok(false)
    }

    fn stats(&self) -> Result<ModuleStats, Error> {
        let mut stats = rprof_abi::rprof_stats::new();
        stats.nr_cpus = 2;
        stats.lost_mm_busy = 4;
        let mut cpus = vec![rprof_abi::rprof_cpu_stats::default(); 2];
        cpus[0].samples = 10;
        cpus[0].delivered = 7;
        cpus[0].lost_ring = 1;
        cpus[0].lost_buffer = 2;
        cpus[0].ring_high_water = 5;
        cpus[1].samples = 20;
        cpus[1].delivered = 17;
        cpus[1].lost_no_mapping = 3;
        Ok((stats, cpus))
    }

    fn buffer(&self) -> (u64, u64) {
        (123, 4096)
    }
}

/// A directory for a test (`test_args` makes it afresh).
fn test_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rprof-http-{}-{name}", std::process::id()))
}

/// `go tool pprof ARGS`: its stdout (`PPROF_TMPDIR`, where it keeps a
/// copy of what it fetched, in `dir`).
fn go_pprof(args: &[&str], dir: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .env("PPROF_TMPDIR", dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("go tool pprof: {e} (scripts/deps.sh installs Debian's golang-go)")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The sum of the first sample type (`samples/count`) over the
/// samples of `go tool pprof -raw`'s output: each sample's line is its
/// values, the last followed by `:`, then its locations.
fn raw_samples(raw: &str) -> i64 {
    raw.lines()
        .skip_while(|l| !l.starts_with("samples/count"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let mut t = l.split_whitespace();
            let n: i64 = t.next()?.parse().ok()?;
            t.next()?.ends_with(':').then_some(n)
        })
        .sum()
}

/// A GET's status, Content-Type and body.
type Got = (u16, String, Vec<u8>);

fn get(agent: &ureq::Agent, url: &str) -> Got {
    let mut r = agent.get(url).call().unwrap();
    let ctype = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = r.body_mut().read_to_vec().unwrap();
    (r.status().as_u16(), ctype, body)
}

/// The value of the series `name` whose labels include `labels`.
fn series(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let s = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no {name}{labels:?} in /metrics"));
    match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => panic!("{name}: not a single value"),
    }
}

/// The user and system CPU time of this process by /proc/self/stat
/// (clock ticks of 1/100 s), for a bound on getrusage's.
fn proc_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // After the comm's closing parenthesis: state is field 3; utime and
    // stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// Reads the daemon `d` (its scrapes and its stream, as its loop does)
/// until every one of `clients` is done.
fn read_until_done<T>(d: &mut Daemon<'_, Clocked>, clients: &[&ScopedJoinHandle<'_, T>]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !clients.iter().all(|c| c.is_finished()) {
        assert!(Instant::now() < deadline, "the clients never finished");
        d.pull().unwrap();
        d.pump(Duration::from_millis(10)).unwrap();
    }
}

/// Scrapes at once each get their own window of the one session
/// (1 s: 1000 samples; 2 s: 2000; 1 s of pid 100: 250), as gzip'd pprof
/// that `go tool pprof` reads, fetched by ureq and by go tool pprof
/// itself; bad parameters get 400 with a message, unknown paths 404;
/// `/metrics` shows the module's statistics, the reader's lag, the
/// cookie table, the scrapes and the daemon's own CPU time.
#[test]
fn scrapes_and_metrics_over_http() {
    let dir = test_dir("scrapes");
    let args = test_args(&dir, "60");
    let config = args.sampling.config(None).unwrap();
    let tally = Tally::default();
    let (to_writer, _from_daemon) = std::sync::mpsc::sync_channel(WRITER_BACKLOG);
    let mut d = Daemon::new(Clocked, &args, &config, to_writer, &tally);
    let (asks_to_reader, asks) = std::sync::mpsc::channel();
    let shared = Arc::new(Shared::default());
    let listener = Listener::start(
        "127.0.0.1:0".parse().unwrap(),
        Context {
            asks: asks_to_reader,
            shared: shared.clone(),
            config,
        },
    )
    .unwrap();
    d.pull = Some(Pull::new(asks, shared, 4096));
    d.start().unwrap();
    let base = format!("http://{}", listener.addr);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let profile = |q: &str| get(&agent, &format!("{base}/debug/pprof/profile?{q}"));
    let (one, two, pid, by_go) = std::thread::scope(|s| {
        let one = s.spawn(|| profile("seconds=1"));
        let two = s.spawn(|| profile("seconds=2"));
        let pid = s.spawn(|| profile("seconds=1&pid=100"));
        let by_go = s.spawn(|| {
            let url = format!("{base}/debug/pprof/profile");
            go_pprof(&["-raw", "-symbolize=none", "-seconds", "1", &url], &dir)
        });
        read_until_done(&mut d, &[&one, &two, &pid]);
        read_until_done(&mut d, &[&by_go]);
        (
            one.join().unwrap(),
            two.join().unwrap(),
            pid.join().unwrap(),
            by_go.join().unwrap(),
        )
    });
    for (name, got, samples, seconds) in [
        ("one", &one, 1000, 1),
        ("two", &two, 2000, 2),
        ("pid", &pid, 250, 1),
    ] {
        let (status, ctype, body) = got;
        assert_eq!(
            (*status, ctype.as_str()),
            (200, "application/octet-stream"),
            "{name}: {}",
            String::from_utf8_lossy(body)
        );
        assert!(body.starts_with(&[0x1f, 0x8b]), "{name}: not gzip'd");
        let file = dir.join(format!("{name}.pb.gz"));
        std::fs::write(&file, body).unwrap();
        let raw = go_pprof(&["-raw", file.to_str().unwrap()], &dir);
        assert_eq!(raw_samples(&raw), samples, "{name}: {raw}");
        let p = rprof_report::pprof::read(body).unwrap();
        assert_eq!(p.duration_nanos, seconds * 1_000_000_000, "{name}");
    }
    assert_eq!(raw_samples(&by_go), 1000, "{by_go}");

    // Bad requests, then the metrics (after them: they count them).
    let cpu_before = proc_cpu_seconds();
    let (bad, metrics) = std::thread::scope(|s| {
        let bad = s.spawn(|| {
            let mut got = Vec::new();
            for q in [
                "seconds=0",
                "seconds=1000000000",
                "seconds=abc",
                "container=abc",
                "cgroup=/system.slice",
            ] {
                got.push(profile(q));
            }
            got.push(get(&agent, &format!("{base}/nope")));
            (got, get(&agent, &format!("{base}/metrics")))
        });
        read_until_done(&mut d, &[&bad]);
        bad.join().unwrap()
    });
    let cpu_after = proc_cpu_seconds();
    let statuses: Vec<u16> = bad.iter().map(|g| g.0).collect();
    assert_eq!(statuses, [400, 400, 400, 400, 400, 404]);
    let text = |g: &Got| String::from_utf8_lossy(&g.2).into_owned();
    assert!(
        text(&bad[0]).contains("from 1 to 3600"),
        "{}",
        text(&bad[0])
    );
    assert!(
        text(&bad[3]).contains("not supported yet"),
        "{}",
        text(&bad[3])
    );
    assert!(
        text(&bad[4]).contains("not supported yet"),
        "{}",
        text(&bad[4])
    );

    let (status, ctype, body) = metrics;
    assert_eq!(status, 200);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let body = String::from_utf8(body).unwrap();
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let v = |name: &str, labels: &[(&str, &str)]| series(&scrape, name, labels);
    assert_eq!(v("rprof_samples_total", &[("cpu", "0")]), 10.0, "{body}");
    assert_eq!(v("rprof_samples_total", &[("cpu", "1")]), 20.0);
    assert_eq!(v("rprof_samples_delivered_total", &[("cpu", "1")]), 17.0);
    let lost = |cpu: &str, cause: &str| {
        v(
            "rprof_samples_lost_total",
            &[("cpu", cpu), ("cause", cause)],
        )
    };
    assert_eq!(lost("0", "ring"), 1.0);
    assert_eq!(lost("0", "buffer"), 2.0);
    assert_eq!(lost("1", "no_mapping"), 3.0);
    assert_eq!(lost("1", "ring"), 0.0);
    assert_eq!(v("rprof_samples_lost_mm_busy_total", &[]), 4.0);
    assert_eq!(v("rprof_ring_high_water_slots", &[("cpu", "0")]), 5.0);
    assert_eq!(v("rprof_buffer_unread_bytes", &[]), 123.0);
    assert_eq!(v("rprof_buffer_size_bytes", &[]), 4096.0);
    let entries = v("rprof_cookie_table_entries", &[]);
    assert!(
        entries >= 1.0 && entries == named(&d.sink) as f64,
        "{entries}"
    );
    assert_eq!(v("rprof_cookie_table_capacity", &[]), 4096.0);
    assert_eq!(v("rprof_scrapes_served_total", &[]), 4.0);
    assert_eq!(v("rprof_scrapes_refused_total", &[]), 5.0);
    assert_eq!(v("rprof_profiles_written_total", &[]), 0.0);
    assert_eq!(v("rprof_sessions_total", &[]), 1.0);
    assert_eq!(v("rprof_session_running", &[]), 1.0);
    assert!(v("rprof_stats_age_seconds", &[]) < 60.0);
    // Measured: between /proc's account before and after the request,
    // and the same as the two modes added up.  /proc gives user and
    // system time each cut down to a tick (1/100 s), so its sum is up to
    // two ticks below the same account in getrusage's microseconds.
    let cpu = v("process_cpu_seconds_total", &[]);
    assert!(
        cpu_before - 0.011 <= cpu && cpu <= cpu_after + 0.021,
        "{cpu_before} <= {cpu} <= {cpu_after}"
    );
    let modes = v("rprof_daemon_cpu_seconds_total", &[("mode", "user")])
        + v("rprof_daemon_cpu_seconds_total", &[("mode", "system")]);
    assert!((modes - cpu).abs() < 1e-6, "{modes} {cpu}");
    assert!(cpu_time().is_some());
    drop(listener);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session that ends (a renewal here) ends its scrapes with it: each
/// gets what it counted, its window cut short there, and says why; its
/// tap leaves the sink.
#[test]
fn a_renewal_cuts_a_scrape_short() {
    let dir = test_dir("cut");
    let args = test_args(&dir, "60");
    let config = args.sampling.config(None).unwrap();
    let tally = Tally::default();
    let (to_writer, _from_daemon) = std::sync::mpsc::sync_channel(WRITER_BACKLOG);
    let mut d = Daemon::new(Clocked, &args, &config, to_writer, &tally);
    let (asks_to_reader, asks) = std::sync::mpsc::channel();
    d.pull = Some(Pull::new(asks, Arc::new(Shared::default()), 4096));
    d.start().unwrap();
    d.pump(Duration::ZERO).unwrap();
    let (reply, answer) = std::sync::mpsc::channel();
    asks_to_reader
        .send(Ask {
            seconds: 3600,
            reply,
        })
        .unwrap();
    d.pull().unwrap();
    assert_eq!(d.sink.taps.len(), 1);
    std::thread::sleep(Duration::from_millis(50));
    d.pump(Duration::ZERO).unwrap();
    d.renew("a test").unwrap();
    let s = answer.try_recv().unwrap().unwrap();
    assert_eq!(s.cut, Some("the module session ended first"));
    let ms = u64::try_from(s.length.as_millis()).unwrap();
    assert!((50..10_000).contains(&ms), "{ms} ms");
    assert!(
        (40..=ms + 5).contains(&s.agg.samples),
        "{} samples in {ms} ms",
        s.agg.samples
    );
    assert!(d.sink.taps.is_empty());
    assert_eq!(d.session_no, 2, "the new session");
    std::fs::remove_dir_all(&dir).unwrap();
}

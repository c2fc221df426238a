//! The listener (`--listen ADDR`): `GET /debug/pprof/profile` (a CPU
//! profile of the next N seconds, gzip'd pprof, as Go's net/http/pprof
//! answers it) and `GET /metrics` (Prometheus' text format), over HTTP
//! (tiny_http), on threads of its own.
//!
//! One thread takes the requests; each is answered on a thread of its
//! own (at most [`MAX_REQUESTS`] at once: more get 503 at once).  A
//! scrape is handed to the reader thread ([`super::pull`]), which counts
//! its window beside the session and sends it back; its thread then
//! symbolizes, encodes and compresses it, so the reader never waits for
//! a client.  `/metrics` reads what the reader last published.  Signals
//! are blocked on these threads (and on tiny_http's, which inherit the
//! mask): SIGTERM and SIGHUP go to the reader.

use super::metrics::{self, Shared};
use super::profile::{build_profile, Interval};
use super::scrape::{Ask, Scraped};
use crate::{signal, Error};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The path of CPU profiles, as Go's net/http/pprof serves them.
pub(super) const PROFILE_PATH: &str = "/debug/pprof/profile";
/// The path of the metrics.
pub(super) const METRICS_PATH: &str = "/metrics";
/// Seconds of a profile when the request does not say, as Go's.
pub(super) const DEFAULT_SECONDS: u64 = 30;
/// The longest profile a request may ask for.
pub(super) const MAX_SECONDS: u64 = 3600;
/// Requests answered at once; more get 503 at once.
pub(super) const MAX_REQUESTS: usize = 32;
/// The longest request line taken (a longer one gets 414).
const MAX_URL: usize = 4096;
/// How long past its window a scrape waits for the reader before it
/// gives up (503): the reader may wait for the writer, or for a new
/// session to start.
const REPLY_SLACK: Duration = Duration::from_secs(60);

/// What the request threads need: where scrapes go, what `/metrics`
/// shows, and the session's configuration (the profiles' sample types).
pub(super) struct Context {
    pub(super) asks: Sender<Ask>,
    pub(super) shared: Arc<Shared>,
    pub(super) config: rprof_abi::rprof_config,
}

/// The listener, serving until it is dropped.
pub(super) struct Listener {
    /// Where it listens (the port chosen, for port 0).
    pub(super) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Binds `addr` (an error here is the daemon's: it does not start)
    /// and serves it from a thread of its own.
    pub(super) fn start(addr: SocketAddr, ctx: Context) -> Result<Listener, Error> {
        let tcp = TcpListener::bind(addr).map_err(|e| Error::io("listening on --listen", e))?;
        let addr = tcp
            .local_addr()
            .map_err(|e| Error::io("listening on --listen", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rprofd-http".into())
            .spawn(move || {
                // Before tiny_http starts its threads: they inherit it.
                signal::block_in_this_thread();
                match tiny_http::Server::from_listener(tcp, None) {
                    Ok(server) => serve(&server, &ctx, &stopping),
                    Err(e) => eprintln!("rprof daemon: the listener failed: {e}"),
                }
            })
            .map_err(|e| Error::io("starting the listener's thread", e))?;
        Ok(Listener {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    /// Stops taking requests and waits for those being answered (a
    /// scrape whose reader is gone is answered 503 at once).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Takes requests until `stop`, each answered on a thread of its own.
fn serve(server: &tiny_http::Server, ctx: &Context, stop: &AtomicBool) {
    let busy = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        while !stop.load(Ordering::Relaxed) {
            let rq = match server.recv_timeout(Duration::from_millis(100)) {
                Ok(Some(rq)) => rq,
                Ok(None) => continue,
                Err(e) => {
                    eprintln!("rprof daemon: the listener: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            if busy.load(Ordering::Relaxed) >= MAX_REQUESTS {
                respond(rq, text(503, "too many requests at once; try again later"));
                continue;
            }
            busy.fetch_add(1, Ordering::Relaxed);
            let busy = &busy;
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let reply = answer(rq.method(), rq.url(), ctx);
                respond(rq, reply);
                busy.fetch_sub(1, Ordering::Relaxed);
            });
            if spawned.is_err() {
                // The request went with the closure: its client sees the
                // connection close.
                busy.fetch_sub(1, Ordering::Relaxed);
                eprintln!("rprof daemon: the listener could not start a thread for a request");
            }
        }
    });
}

/// An answer: status, Content-Type, body.
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) content_type: &'static str,
    pub(super) body: Vec<u8>,
}

/// A plain-text answer.
fn text(status: u16, message: &str) -> Reply {
    Reply {
        status,
        content_type: "text/plain; charset=utf-8",
        body: format!("{message}\n").into_bytes(),
    }
}

/// Sends `reply` (a client that went away is not an error of ours).
fn respond(rq: tiny_http::Request, reply: Reply) {
    let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).ok();
    let mut r = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    for h in [
        header("Content-Type", reply.content_type),
        header("X-Content-Type-Options", "nosniff"),
    ]
    .into_iter()
    .flatten()
    {
        r.add_header(h);
    }
    if reply.content_type == "application/octet-stream" {
        if let Some(h) = header("Content-Disposition", "attachment; filename=\"profile\"") {
            r.add_header(h);
        }
    }
    let _ = rq.respond(r);
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// A CPU profile of the next `seconds`, of process `pid` only if set.
    Profile {
        seconds: u64,
        pid: Option<u32>,
    },
    Metrics,
}

/// The route of `method` `url`, or the error to answer.
pub(super) fn route(method: &tiny_http::Method, url: &str) -> Result<Route, Reply> {
    if url.len() > MAX_URL {
        return Err(text(414, "the request's URL is too long"));
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    if path != PROFILE_PATH && path != METRICS_PATH {
        return Err(text(
            404,
            &format!("no such path: this daemon serves {PROFILE_PATH} and {METRICS_PATH}"),
        ));
    }
    if *method != tiny_http::Method::Get {
        return Err(text(405, "only GET is served"));
    }
    if path == METRICS_PATH {
        return Ok(Route::Metrics);
    }
    profile_query(query)
        .map(|(seconds, pid)| Route::Profile { seconds, pid })
        .map_err(|m| text(400, &m))
}

/// The parameters of a profile: `seconds` (1 to [`MAX_SECONDS`],
/// [`DEFAULT_SECONDS`] if absent) and `pid`; anything else, or either
/// twice, is an error.
fn profile_query(query: &str) -> Result<(u64, Option<u32>), String> {
    let mut seconds = None;
    let mut pid = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "seconds" if seconds.is_none() => {
                seconds = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|s| (1..=MAX_SECONDS).contains(s))
                        .ok_or_else(|| {
                            format!(
                                "bad seconds={value:.32}: a whole number of seconds from 1 to {MAX_SECONDS}"
                            )
                        })?,
                );
            }
            "pid" if pid.is_none() => {
                pid = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|p| (1..=i32::MAX as u32).contains(p))
                        .ok_or_else(|| format!("bad pid={value:.32}: a process id"))?,
                );
            }
            "seconds" | "pid" => return Err(format!("{key} is given twice")),
            "container" | "cgroup" => {
                return Err(format!(
                    "{key}= is not supported yet: samples carry no cgroup yet (issue 32)"
                ))
            }
            _ => {
                return Err(format!(
                    "unknown parameter {key:.32}: this endpoint takes seconds and pid"
                ))
            }
        }
    }
    Ok((seconds.unwrap_or(DEFAULT_SECONDS), pid))
}

/// The answer to `method` `url`.
fn answer(method: &tiny_http::Method, url: &str, ctx: &Context) -> Reply {
    match route(method, url) {
        Ok(Route::Metrics) => match ctx.shared.render() {
            Ok(body) => Reply {
                status: 200,
                content_type: metrics::CONTENT_TYPE,
                body: body.into_bytes(),
            },
            Err(e) => text(500, &format!("the metrics could not be encoded: {e}")),
        },
        Ok(Route::Profile { seconds, pid }) => {
            let reply = profile(seconds, pid, ctx);
            let counter = if reply.status == 200 {
                &ctx.shared.served
            } else {
                &ctx.shared.refused
            };
            counter.fetch_add(1, Ordering::Relaxed);
            reply
        }
        Err(reply) => {
            if url.starts_with(PROFILE_PATH) {
                ctx.shared.refused.fetch_add(1, Ordering::Relaxed);
            }
            reply
        }
    }
}

/// A profile of the next `seconds`: asked of the reader, then built
/// here, as the daemon's interval profiles are.
fn profile(seconds: u64, pid: Option<u32>, ctx: &Context) -> Reply {
    let (tx, rx) = std::sync::mpsc::channel();
    if ctx.asks.send(Ask { seconds, reply: tx }).is_err() {
        return text(503, "the daemon is stopping");
    }
    let wait = Duration::from_secs(seconds) + REPLY_SLACK;
    let scraped = match rx.recv_timeout(wait) {
        Ok(Ok(s)) => s,
        Ok(Err(why)) => return text(503, &why),
        Err(RecvTimeoutError::Timeout) => {
            return text(
                503,
                "no profile in time: the daemon has no module session now, or is behind",
            )
        }
        Err(RecvTimeoutError::Disconnected) => return text(503, "the daemon is stopping"),
    };
    match encode(&scraped, pid, &ctx.config) {
        Ok(body) => Reply {
            status: 200,
            content_type: "application/octet-stream",
            body,
        },
        Err(e) => text(500, &format!("the profile could not be encoded: {e}")),
    }
}

/// The gzip'd pprof of what a scrape counted (of process `pid` only if
/// set), symbolized against the running system.
fn encode(
    s: &Scraped,
    pid: Option<u32>,
    config: &rprof_abi::rprof_config,
) -> std::io::Result<Vec<u8>> {
    let mut sym = rprof_report::Symbolizer::with_kallsyms(s.kallsyms.clone(), &[], None);
    let filter = rprof_report::Filter {
        pid,
        ..rprof_report::Filter::default()
    };
    let mut notes = Vec::new();
    if let Some(p) = pid {
        notes.push(format!("rprof daemon: process {p} only"));
    }
    if let Some(why) = s.cut {
        notes.push(format!(
            "rprof daemon: cut short after {:.3} s: {why}",
            s.length.as_secs_f64()
        ));
    }
    let window = Interval {
        seq: 0,
        start: s.start,
        length: s.length,
    };
    let profile = build_profile(window, &s.agg, config, &mut sym, &filter, notes);
    let mut body = Vec::new();
    rprof_report::pprof::write_gz(&mut body, &profile)?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiny_http::Method;

    fn status(url: &str) -> u16 {
        match route(&Method::Get, url) {
            Ok(_) => 200,
            Err(r) => r.status,
        }
    }

    fn message(url: &str) -> String {
        match route(&Method::Get, url) {
            Ok(r) => format!("{r:?}"),
            Err(r) => String::from_utf8(r.body).unwrap(),
        }
    }

    #[test]
    fn routes_and_their_parameters() {
        let ok = |url: &str| route(&Method::Get, url).ok();
        assert_eq!(
            ok("/debug/pprof/profile"),
            Some(Route::Profile {
                seconds: 30,
                pid: None
            })
        );
        assert_eq!(
            ok("/debug/pprof/profile?seconds=5&pid=42"),
            Some(Route::Profile {
                seconds: 5,
                pid: Some(42)
            })
        );
        assert_eq!(ok("/metrics"), Some(Route::Metrics));
        assert_eq!(ok("/metrics?x=1"), Some(Route::Metrics));
        for bad in [
            "seconds=0",
            "seconds=3601",
            "seconds=1000000000",
            "seconds=-1",
            "seconds=1.5",
            "seconds=",
            "seconds=abc",
            "seconds=1&seconds=2",
            "pid=0",
            "pid=x",
            "pid=4294967295",
            "debug=1",
        ] {
            assert_eq!(status(&format!("/debug/pprof/profile?{bad}")), 400, "{bad}");
        }
        assert!(message("/debug/pprof/profile?seconds=0").contains("from 1 to 3600"));
        for unsupported in ["container=abc", "cgroup=/sys.slice"] {
            let url = format!("/debug/pprof/profile?{unsupported}");
            assert_eq!(status(&url), 400);
            assert!(message(&url).contains("not supported yet"), "{unsupported}");
        }
        assert_eq!(status("/"), 404);
        assert_eq!(status("/debug/pprof/heap"), 404);
        assert_eq!(
            route(&Method::Post, "/metrics").err().map(|r| r.status),
            Some(405)
        );
        let long = format!("/debug/pprof/profile?seconds=1&{}", "x".repeat(MAX_URL));
        assert_eq!(status(&long), 414);
    }
}

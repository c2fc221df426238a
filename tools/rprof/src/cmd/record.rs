//! `rprof record`: sample into an `rprof.data` file.
//!
//! The whole system by default (`-a`), one process with `-p PID` (the
//! module's pid filter; with `--children`, every process below it too),
//! or a command and every process it starts (`-- CMD ARGS`: a reaper is
//! forked first and starts CMD once sampling runs, with the module's
//! filter on its pid and descendants; it is a subreaper, so that what CMD
//! leaves running stays in the tree while CMD runs (see
//! [`rprof::launch`]); `-a -- CMD` samples the whole system while CMD
//! runs).  Ends after `-d SECONDS`, when the command (or PID)
//! exits, or on SIGINT/SIGTERM; then STOP, the rest of the stream up to
//! the STOP record, the snapshot (kallsyms, modules, build-ids), and the
//! figures on stderr.
//!
//! The file is written as `FILE.partial` and renamed to `FILE` once it is
//! complete (see [`rprof::output`]): an existing `FILE` is replaced only
//! by a whole recording, and an interrupted one stays readable as
//! `FILE.partial` (kallsyms and the module list are written before the
//! stream for that).

use clap::Args;
use rprof::launch::{Launch, Running};
use rprof::output::PendingFile;
use rprof::pidfd::Watch;
use rprof::sampling::SamplingArgs;
use rprof::scan::Scan;
use rprof::session::{Session, Sink};
use rprof::unwind::Worker;
use rprof::{signal, snapshot, Device, Error};
use rprof_data::{meta, Writer};
use rprof_decode::LostTotals;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of `rprof record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Sample the whole system (the default without CMD; with CMD, the
    /// whole system while CMD runs instead of CMD and its descendants).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    pub all: bool,

    /// Only sample the thread group (process) PID (the module's filter);
    /// the recording ends when PID does.
    #[arg(short = 'p', long = "pid", value_name = "PID",
          value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    /// With -p: also every process below PID (its children, theirs, ...,
    /// those already running and those started later), and those left
    /// running when their parent ends (which the kernel re-parents out of
    /// PID's tree; the module follows up to 64 of them, and counts any
    /// more in `orphans_lost`).
    #[arg(long, requires = "pid")]
    pub children: bool,

    /// Where to write the recording.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "rprof.data"
    )]
    pub output: PathBuf,

    /// Stop after this many seconds (fractions allowed); without it, when
    /// CMD exits or on Ctrl-C.
    #[arg(short = 'd', long = "duration", value_name = "SECONDS",
          value_parser = rprof::daemon::parse_seconds)]
    pub duration: Option<Duration>,

    /// Read records with read() instead of the mmap'ed buffer.
    #[arg(long)]
    pub read: bool,

    #[command(flatten)]
    /// What to sample.
    pub sampling: SamplingArgs,

    /// The command to run while sampling (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The longest wait in `poll()` while a command runs that cannot be
/// waited for with a pidfd (kernels before 5.3).  Otherwise record sleeps
/// until the module wakes it (the buffer past its watermark, or the end),
/// the command ends, the duration is up or a signal comes: a reader that
/// wakes up to ask costs the profiled system time for nothing.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A wait with no end in sight (poll's -1).
const FOREVER: Duration = Duration::from_secs(u32::MAX as u64);

/// Writes the stream to the file and counts it.
struct RecordSink {
    writer: Writer<BufWriter<File>>,
    counts: Scan,
}

impl Sink for RecordSink {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.writer
            .write_stream(bytes)
            .map_err(|e| Error::io("writing the recording", e))?;
        self.counts.feed(bytes);
        Ok(())
    }

    fn saw_stop(&self) -> bool {
        self.counts.stops() > 0
    }
}

fn uname() -> (String, String) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease"),
    )
}

/// Runs `rprof record`; the exit status: CMD's (as a shell gives it)
/// with `-- CMD`, else 0.
pub fn run(device: &Path, args: &RecordArgs) -> Result<u8, Error> {
    if args.pid.is_some() && !args.command.is_empty() {
        return Err(Error::Usage(
            "-p PID and a command cannot be combined: a command is recorded with its descendants (or with -a, system-wide)".into(),
        ));
    }
    // Without a command, SIGINT/SIGTERM from here on end the recording
    // cleanly (one that comes before START ends it at once): setting up
    // takes a while on a slow machine, and a signal then must not kill
    // rprof half-way.  With a command, only once it is forked (below):
    // the command keeps the dispositions rprof was started with.
    if args.command.is_empty() {
        install_stop_handler()?;
    }
    // Options first (a usage error runs nothing), then the device: a
    // missing module or capability is the error to report, before any
    // command runs or file is created.
    args.sampling.config(args.pid)?;
    let dev = Device::open(device)?;
    // The command waits, forked, until sampling runs; the filter follows
    // it and whatever it starts.
    let launch = match args.command.is_empty() {
        true => None,
        false => Some(Launch::fork(&args.command)?),
    };
    let (pid, descendants) = match &launch {
        Some(l) if !args.all => (Some(l.pid()), true),
        _ => (args.pid, args.children),
    };
    let mut config = args.sampling.config_with(pid, descendants)?;
    let mode = args.sampling.call_graph.mode()?;
    // -p PID ends when PID does, as perf's does; watched by its pidfd,
    // opened before the module's filter takes the pid number, so that a
    // new process given the same pid (before or after) is never taken
    // for it.
    // (A pid that names no process is reported by SET_CONFIG, below.)
    let watched = args.pid.map(|pid| (pid, Watch::new(pid)));
    // With unwind tables (if asked for and the module takes them), their
    // uploader starts now: it compiles what runs while the rest is set up.
    let (mut session, uploader) = rprof::unwind::configure(&dev, &mut config, args.read, mode)?;
    let target = watched
        .map(|(pid, w)| rprof::pidfd::confirm(pid, w))
        .transpose()?;
    if !args.command.is_empty() {
        install_stop_handler()?;
    }
    let (pending, file) = PendingFile::create(&args.output).map_err(|e| Error::Open {
        path: rprof::output::partial_path(&args.output),
        source: e,
    })?;
    record(
        args,
        &dev,
        &mut session,
        &config,
        file,
        pending,
        Ends {
            launch,
            target,
            uploader,
        },
    )
}

/// SIGINT and SIGTERM end the recording (see [`signal`]).
fn install_stop_handler() -> Result<(), Error> {
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGINT handler", e))
}

/// The error `e`, saying where the recording so far is.
fn kept(e: Error, partial: &Path) -> Error {
    let msg = e.to_string();
    let msg = msg.strip_prefix("rprof: ").unwrap_or(&msg);
    let p = partial.display();
    Error::Protocol(format!(
        "{msg}; the recording so far is in {p} (rprof report -i {p})"
    ))
}

/// What a recording ends with besides a signal or `-d`: the command it
/// starts (`-- CMD`) or the process it follows (`-p`).
struct Ends {
    launch: Option<Launch>,
    target: Option<Watch>,
    /// And the unwind tables' uploader, which ends with it.
    uploader: Option<Worker>,
}

/// The longest wait in `poll()` while unwind tables are uploaded: the
/// COOKIE of a new program is read this late at most (the module's
/// watermark may take seconds to reach).
const UPLOADER_POLL: Duration = Duration::from_millis(200);

/// How long the command waits for its tables (`Worker::preload`).
const PRELOAD_WAIT: Duration = Duration::from_secs(10);

/// How long the end of a recording waits for a compile under way.
const UPLOADER_WAIT: Duration = Duration::from_secs(2);

/// Prints the uploader's notes, each once.
fn say(notes: Vec<String>) {
    for n in notes {
        eprintln!("rprof: {n}");
    }
}

/// Samples into `sink` until the end, then completes the file.
fn record(
    args: &RecordArgs,
    dev: &Device,
    session: &mut Session<'_>,
    config: &rprof_abi::rprof_config,
    file: File,
    pending: PendingFile,
    ends: Ends,
) -> Result<u8, Error> {
    let Ends {
        launch,
        target,
        uploader,
    } = ends;
    let start_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let started = Instant::now();
    let partial_file = pending.partial().to_path_buf();
    if let Err(e) = session.start() {
        pending.discard();
        return Err(e);
    }
    // Kernel symbols before the stream, so that an interrupted recording
    // keeps them (modules loaded while recording come with the snapshot
    // at the end).  Taken once sampling runs: reading and compressing
    // kallsyms takes a while on a slow machine, and the module buffers
    // what is sampled meanwhile, so `-p PID` misses nothing of a short
    // process.
    let kallsyms = snapshot::read_kallsyms();
    let modules = snapshot::read_modules();
    let writer = match Writer::new(BufWriter::new(file), config, &kallsyms, &modules) {
        Ok(w) => w,
        Err(e) => {
            let _ = session.stop();
            pending.discard();
            return Err(Error::io("writing the recording", e));
        }
    };
    drop((kallsyms, modules));
    let mut sink = RecordSink {
        writer,
        counts: Scan::new(),
    };
    if let Some(u) = &uploader {
        sink.counts.watch(u.watch());
    }

    let mut child: Option<Running> = None;
    let mut child_status = None;
    let mut wait_failed = false;
    if let (Some(u), Some(_)) = (&uploader, &launch) {
        // The command's own tables, and those of what it loads at start,
        // before it runs: its first samples walk through them too.
        if let Some(exe) = rprof::unwind::program_path(&args.command[0]) {
            let ld_path = std::env::var("LD_LIBRARY_PATH").ok();
            let files = rprof_unwind::deps::closure(
                &exe,
                ld_path.as_deref(),
                256,
                &mut rprof_unwind::deps::read_elf,
            );
            if !u.preload(files, PRELOAD_WAIT) {
                eprintln!("rprof: the command's unwind tables are not all uploaded yet: its first samples may have shorter chains");
            }
        }
    }
    if let Some(l) = launch {
        match l.release() {
            Ok(c) => child = Some(c),
            Err(e) => {
                let _ = session.stop();
                pending.discard();
                return Err(e);
            }
        }
    }
    let target_pid = child.as_ref().map(|c| c.command_pid()).or(args.pid);
    let deadline = args.duration.map(|d| started + d);
    let exit_fd = child.as_ref().and_then(|c| c.exit_fd());
    let mut wake: Vec<BorrowedFd<'_>> = signal::stop_fd().into_iter().collect();
    wake.extend(exit_fd.as_ref().map(|fd| fd.as_fd()));
    wake.extend(target.as_ref().and_then(|w| w.fd()).map(|fd| fd.as_fd()));
    // Without a pidfd the command's (or PID's) end is noticed by asking;
    // without the signal's pipe (never: installed above), the signal's
    // arrival.
    // With unwind tables, too: a program that starts gets its table once
    // its COOKIE has been read, and until then its chains are shallow.
    let longest = if (child.is_some() && exit_fd.is_none())
        || target.as_ref().is_some_and(|w| w.fd().is_none())
        || signal::stop_fd().is_none()
    {
        POLL_INTERVAL
    } else if uploader.is_some() {
        UPLOADER_POLL
    } else {
        FOREVER
    };
    loop {
        if signal::stop_requested() {
            break;
        }
        if let Some(c) = &mut child {
            match c.try_wait() {
                Ok(Some(status)) => {
                    child_status = Some(status);
                    break;
                }
                Ok(None) => {}
                Err(e) => {
                    eprintln!(
                        "rprof: cannot wait for {}: {e}; stopping (how it ended is unknown)",
                        args.command[0]
                    );
                    wait_failed = true;
                    break;
                }
            }
        }
        if let (Some(w), Some(pid)) = (&target, args.pid) {
            if w.ended() {
                eprintln!("rprof: process {pid} has ended");
                break;
            }
        }
        let now = Instant::now();
        let wait = match deadline {
            Some(d) if now >= d => break,
            Some(d) => (d - now).min(longest),
            None => longest,
        };
        session
            .pump_with(wait, &wake, &mut sink)
            .map_err(|e| kept(e, &partial_file))?;
        if let Some(u) = &uploader {
            say(u.take_notes());
        }
    }
    let stopped = session
        .stop_and_drain(&mut sink)
        .map_err(|e| kept(e, &partial_file))?;
    let uploads = uploader.map(|u| u.finish(UPLOADER_WAIT));
    let elapsed = started.elapsed();
    let (stats, _) = dev.stats(false).map_err(|e| kept(e, &partial_file))?;
    if !stopped {
        eprintln!("rprof: warning: the session ended without a STOP record");
    }

    let mut m = BTreeMap::new();
    let (host, release) = uname();
    m.insert(meta::RPROF_VERSION.into(), env!("CARGO_PKG_VERSION").into());
    m.insert(meta::HOSTNAME.into(), host);
    m.insert(meta::KERNEL.into(), release);
    m.insert(meta::START_UNIX.into(), start_unix.to_string());
    m.insert(meta::DURATION_NS.into(), elapsed.as_nanos().to_string());
    if !args.command.is_empty() {
        m.insert(meta::COMMAND.into(), args.command.join(" "));
    }
    if let Some(p) = target_pid {
        m.insert(meta::TARGET_PID.into(), p.to_string());
    }
    let snap = snapshot::take(
        sink.counts.resolver().names(),
        Some(snapshot::stats_of(&stats)),
    );
    let bytes = sink.writer.stream_len();
    let write_error = |e| kept(Error::io("writing the recording", e), &partial_file);
    let file = sink
        .writer
        .finish(&m, &snap)
        .map_err(write_error)?
        .into_inner()
        .map_err(|e| write_error(e.into_error()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    pending
        .commit(file)
        .map_err(|e| kept(Error::io("completing the recording", e), &partial_file))?;

    let scan = &sink.counts;
    eprintln!(
        "rprof: recorded {} samples in {:.2} s into {} ({} KiB, {} bytes of stream, {} files)",
        scan.samples,
        elapsed.as_secs_f64(),
        args.output.display(),
        size.div_ceil(1024),
        bytes,
        snap.files.len()
    );
    let lost = LostTotals::of_stats(&stats);
    eprintln!(
        "rprof: module: samples {}, delivered {}, lost {} ({lost}); stream: lost {}",
        stats.total.samples,
        stats.total.delivered,
        lost.total(),
        scan.lost
    );
    if stats.chains.chains > 0 {
        eprintln!("rprof: {}", rprof::format::chain_line(&stats.chains));
    }
    if let Some((counts, notes, pending)) = uploads {
        say(notes);
        let left = match pending {
            0 => String::new(),
            n => format!(", {n} files not done at the end"),
        };
        eprintln!("rprof: unwind tables: {counts}{left}");
    }
    let mut status = 0;
    if let Some(s) = child_status {
        if !s.success() {
            eprintln!("rprof: {} exited with {s}", args.command[0]);
        }
        status = rprof::error::shell_status(s);
    } else if wait_failed {
        status = 1;
    } else if child.is_some() {
        eprintln!("rprof: {} is still running", args.command[0]);
    }
    sink.counts.finish()?;
    Ok(status)
}

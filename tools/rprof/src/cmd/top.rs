//! `rprof top`: the hottest functions of the whole system, refreshed.
//!
//! Every `-d` seconds the screen is redrawn (plain ANSI: home, clear) with
//! the functions of the samples of the last interval.  On a terminal the
//! input is switched to non-canonical mode (termios, restored on exit) so
//! that `q` quits at once; Ctrl-C (SIGINT) and SIGTERM quit too.  With
//! `-n N` it stops after N screens, which also works without a terminal.
//!
//! When standard output is not a terminal (a pipe, a file), nothing but
//! text is written: each refresh appends a plain snapshot, its header
//! line, the table and an empty line, as `perf top --stdio` does, and the
//! table has 20 lines unless `--lines` says otherwise.
//!
//! With several events (`-e cycles -e cpu-clock`), each has its own table
//! and its own percentages: samples of different events are never added
//! together.

use clap::Args;
use rprof::live::{self, AggregateSink};
use rprof::sampling::SamplingArgs;
use rprof::{signal, Device, Error};
use rprof_report::{table, Filter};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Options of `rprof top`.
#[derive(Debug, Clone, Args)]
pub struct TopArgs {
    /// Seconds between refreshes (fractions allowed).
    #[arg(short = 'd', long = "delay", value_name = "SECS", default_value = "1",
          value_parser = rprof::daemon::parse_seconds)]
    pub delay: Duration,

    /// Stop after this many refreshes.
    #[arg(short = 'n', long = "iterations", value_name = "N")]
    pub iterations: Option<u64>,

    /// Lines of the table (default: what fits the terminal, or 20).
    #[arg(long, value_name = "N")]
    pub lines: Option<usize>,

    /// Group by these columns, comma-separated: comm, pid, tid, dso, sym.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "comm,dso,sym"
    )]
    pub sort: table::SortKeys,

    #[command(flatten)]
    /// What to sample.
    pub sampling: SamplingArgs,
}

/// Standard input in non-canonical, no-echo mode while it lives.
struct RawInput {
    saved: libc::termios,
}

impl RawInput {
    /// Switches a terminal on stdin to non-canonical mode; `None` if stdin
    /// is not a terminal.
    fn new() -> Option<RawInput> {
        // SAFETY: isatty has no memory-safety preconditions.
        if unsafe { libc::isatty(0) } != 1 {
            return None;
        }
        // SAFETY: an all-zero termios is a valid value to be filled in.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid termios for tcgetattr to write.
        if unsafe { libc::tcgetattr(0, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        // Keep ISIG: Ctrl-C still raises SIGINT, which ends cleanly.
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 0;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is a valid termios read by tcsetattr.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(RawInput { saved })
    }

    /// Whether `q` was typed since the last call.
    fn quit_requested(&self) -> bool {
        let mut buf = [0u8; 16];
        // SAFETY: reads at most `buf.len()` bytes into `buf`; VMIN = 0 and
        // VTIME = 0 make it return at once.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        n > 0 && buf[..n as usize].iter().any(|&c| c == b'q' || c == b'Q')
    }
}

impl Drop for RawInput {
    fn drop(&mut self) {
        // SAFETY: restores the termios saved by `new`, a valid value.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}

/// Rows of the terminal, if stdout is one and says.
fn terminal_rows() -> Option<usize> {
    // SAFETY: an all-zero winsize is valid; TIOCGWINSZ writes one.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes a struct winsize through its argument,
    // which points at `ws`.
    let ret = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
    (ret == 0 && ws.ws_row > 0).then_some(ws.ws_row as usize)
}

/// Whether standard output is a terminal.
fn stdout_is_terminal() -> bool {
    // SAFETY: isatty has no memory-safety preconditions.
    unsafe { libc::isatty(1) == 1 }
}

/// Draws one screen: on a terminal (`terminal_rows` is its height) over
/// the last one, else as a plain snapshot after it.
#[allow(clippy::too_many_arguments)]
fn draw(
    out: &mut dyn Write,
    sym: &mut rprof_report::Symbolizer,
    sink: &AggregateSink,
    config: &rprof_abi::rprof_config,
    args: &TopArgs,
    interval: Duration,
    screen: u64,
    terminal_rows: Option<usize>,
) -> io::Result<()> {
    // One table per configured event (every event, with samples or not:
    // the screen keeps its layout).
    let events = config.nr_events.max(1);
    let height = args
        .lines
        .or_else(|| {
            terminal_rows.map(|r| r.saturating_sub(6 + 4 * events as usize) / events as usize)
        })
        .unwrap_or(20)
        .max(1);
    let mut tables = Vec::new();
    for event in 0..events {
        let filter = Filter {
            event: Some(event),
            ..Filter::default()
        };
        let rows = rprof_report::rows(&sink.agg, sym, &filter);
        let total: u64 = rows.iter().map(|r| r.samples).sum();
        let period = rows.iter().fold(0u64, |s, r| s.saturating_add(r.period));
        let shown: Vec<table::Line> = table::group(&rows, &args.sort.0)
            .into_iter()
            .take(height)
            .collect();
        tables.push((event, total, period, shown));
    }
    let total: u64 = tables.iter().map(|t| t.1).sum();
    let quit = if terminal_rows.is_some() {
        // Home and clear.
        write!(out, "\x1b[H\x1b[2J")?;
        "q or Ctrl-C quits"
    } else {
        "Ctrl-C quits"
    };
    writeln!(
        out,
        "rprof top: {total} samples in the last {:.1} s (screen {}), lost {}; {quit}",
        interval.as_secs_f64(),
        screen + 1,
        sink.agg.lost_line()
    )?;
    for (event, total, period, shown) in &tables {
        if events > 1 {
            writeln!(
                out,
                "\n# event {}: {total} samples",
                rprof_report::event_label(config, *event)
            )?;
        }
        table::write(out, shown, &args.sort.0, *period, 0.0)?;
    }
    if terminal_rows.is_none() {
        writeln!(out)?;
    }
    out.flush()
}

/// Runs `rprof top`.
pub fn run(device: &Path, args: &TopArgs) -> Result<(), Error> {
    let mut config = args.sampling.config(None)?;
    let mode = args.sampling.call_graph.mode()?;
    let dev = Device::open(device)?;
    let (mut session, uploader) = rprof::unwind::configure(&dev, &mut config, false, mode)?;
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGINT handler", e))?;
    // kallsyms once: parsing it every second would cost more than the
    // rest of a refresh.  Files are cached per cookie of this session.
    let mut sym = live::symbolizer();
    let input = RawInput::new();
    let mut sink = AggregateSink::new();
    sink.watch = uploader.as_ref().map(|u| u.watch());
    // Threads apart only when a column shows them.
    sink.agg
        .count_threads(args.sort.0.contains(&table::SortKey::Tid));
    session.start()?;
    let mut out = io::stdout().lock();
    let mut screen = 0;
    let mut last = Instant::now();
    let mut next = last + args.delay;
    loop {
        if signal::stop_requested() || input.as_ref().is_some_and(RawInput::quit_requested) {
            break;
        }
        let now = Instant::now();
        if now >= next {
            let rows = if stdout_is_terminal() {
                Some(terminal_rows().unwrap_or(28))
            } else {
                None
            };
            draw(
                &mut out,
                &mut sym,
                &sink,
                &config,
                args,
                now - last,
                screen,
                rows,
            )
            .map_err(|e| Error::io("writing to standard output", e))?;
            sink.agg.clear_counts();
            screen += 1;
            if args.iterations.is_some_and(|n| screen >= n) {
                break;
            }
            last = now;
            next = now + args.delay;
            continue;
        }
        session.pump((next - now).min(Duration::from_millis(100)), &mut sink)?;
    }
    drop(input);
    session.stop_and_drain(&mut sink)?;
    if let Some(u) = uploader {
        // Said at the end: the screen is top's while it runs.
        let (counts, notes, _) = u.finish(Duration::from_secs(1));
        for n in notes {
            eprintln!("rprof: {n}");
        }
        eprintln!("rprof: unwind tables: {counts}");
    }
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        top: TopArgs,
    }

    /// Into a pipe or a file, screens are plain text one after the other:
    /// no escape sequence, each with its header.
    #[test]
    fn screens_without_a_terminal_are_plain_snapshots() {
        let args = Cli::parse_from(["top"]).top;
        let config = args.sampling.config(None).unwrap();
        let mut sym = rprof_report::Symbolizer::new("", &[], None);
        let mut sink = AggregateSink::new();
        let mut stream = Vec::new();
        for r in [
            rprof_decode::Record::Task {
                cpu: 0,
                pid: 0,
                tid: 0,
                exe_cookie: 0,
                comm: "swapper/0".into(),
            },
            rprof_decode::Record::Sample {
                flags: 0,
                time_ns: 1,
                offset: 0xffffffff81000000,
                period: 1,
                stack: None,
            },
        ] {
            r.encode(&mut stream);
        }
        rprof::session::Sink::feed(&mut sink, &stream).unwrap();
        let mut out = Vec::new();
        for screen in 0..2 {
            draw(
                &mut out,
                &mut sym,
                &sink,
                &config,
                &args,
                Duration::from_secs(1),
                screen,
                None,
            )
            .unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('\x1b'), "{text:?}");
        assert_eq!(text.matches("rprof top: 1 samples").count(), 2, "{text}");
        assert!(text.contains("(screen 2)"), "{text}");
        assert!(text.ends_with("\n\n"), "{text:?}");
        // On a terminal: home and clear first.
        let mut out = Vec::new();
        draw(
            &mut out,
            &mut sym,
            &sink,
            &config,
            &args,
            Duration::from_secs(1),
            0,
            Some(30),
        )
        .unwrap();
        assert!(out.starts_with(b"\x1b[H\x1b[2J"));
    }

    /// Two events: a table each, with its own total and percentages; the
    /// samples are never added together.
    #[test]
    fn one_table_per_event() {
        let args = Cli::parse_from(["top", "-e", "cpu-clock@99", "-e", "task-clock@99"]).top;
        let config = args.sampling.config(None).unwrap();
        let mut sym = rprof_report::Symbolizer::new("", &[], None);
        let mut sink = AggregateSink::new();
        let mut stream = Vec::new();
        let sample = |event: u16, offset| rprof_decode::Record::Sample {
            flags: event << rprof_abi::RPROF_SAMPLE_EVENT_SHIFT,
            time_ns: 1,
            offset,
            period: 1,
            stack: None,
        };
        let task = rprof_decode::Record::Task {
            cpu: 0,
            pid: 0,
            tid: 0,
            exe_cookie: 0,
            comm: "swapper/0".into(),
        };
        task.encode(&mut stream);
        for r in [
            sample(0, 0x10),
            sample(0, 0x10),
            sample(0, 0x20),
            sample(1, 0x30),
        ] {
            r.encode(&mut stream);
        }
        rprof::session::Sink::feed(&mut sink, &stream).unwrap();
        let mut out = Vec::new();
        draw(
            &mut out,
            &mut sym,
            &sink,
            &config,
            &args,
            Duration::from_secs(1),
            0,
            None,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# event cpu-clock@99: 3 samples"), "{text}");
        assert!(text.contains("# event task-clock@99: 1 samples"), "{text}");
        // The second table's one row is all of its event.
        let second = text.split("# event task-clock@99").nth(1).unwrap();
        assert!(second.contains("100.00%"), "{text}");
        assert!(!second.contains("0x10"), "{text}");
    }
}

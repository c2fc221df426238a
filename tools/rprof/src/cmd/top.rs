//! `rprof top`: the hottest functions of the whole system, refreshed.
//!
//! Every `-d` seconds the screen is redrawn (plain ANSI: home, clear) with
//! the functions of the samples of the last interval.  On a terminal the
//! input is switched to non-canonical mode (termios, restored on exit) so
//! that `q` quits at once; Ctrl-C (SIGINT) and SIGTERM quit too.  With
//! `-n N` it stops after N screens, which also works without a terminal.

use clap::Args;
use rprof::live::{self, AggregateSink};
use rprof::sampling::SamplingArgs;
use rprof::session::Session;
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

    /// Group by these columns, comma-separated: comm, pid, dso, sym.
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

/// Rows of the terminal, if stdout is one.
fn terminal_rows() -> Option<usize> {
    // SAFETY: an all-zero winsize is valid; TIOCGWINSZ writes one.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes a struct winsize through its argument,
    // which points at `ws`.
    let ret = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
    (ret == 0 && ws.ws_row > 0).then_some(ws.ws_row as usize)
}

fn draw(
    out: &mut dyn Write,
    sym: &mut rprof_report::Symbolizer,
    sink: &AggregateSink,
    args: &TopArgs,
    interval: Duration,
    screen: u64,
) -> io::Result<()> {
    let rows = rprof_report::rows(&sink.agg, sym, &Filter::default());
    let total: u64 = rows.iter().map(|r| r.samples).sum();
    let lines = table::group(&rows, &args.sort.0);
    let height = args
        .lines
        .or_else(|| terminal_rows().map(|r| r.saturating_sub(8)))
        .unwrap_or(20)
        .max(1);
    let shown: Vec<table::Line> = lines.into_iter().take(height).collect();
    // Home and clear.
    write!(out, "\x1b[H\x1b[2J")?;
    writeln!(
        out,
        "rprof top: {total} samples in the last {:.1} s (screen {}), lost {}; q or Ctrl-C quits",
        interval.as_secs_f64(),
        screen + 1,
        sink.agg.lost_line()
    )?;
    table::write(out, &shown, &args.sort.0, total, 0.0)?;
    out.flush()
}

/// Runs `rprof top`.
pub fn run(device: &Path, args: &TopArgs) -> Result<(), Error> {
    let config = args.sampling.config(None)?;
    let dev = Device::open(device)?;
    let mut session = Session::new(&dev, &config, false)?;
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGINT handler", e))?;
    // kallsyms once: parsing it every second would cost more than the
    // rest of a refresh.  Files are cached per cookie of this session.
    let mut sym = live::symbolizer();
    let input = RawInput::new();
    let mut sink = AggregateSink::new();
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
            draw(&mut out, &mut sym, &sink, args, now - last, screen)
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
    sink.finish()
}

//! A progress line on standard error while `rprof report`, `annotate` and
//! `export` decode and symbolize a large recording:
//!
//! ```text
//! [===========>                  ] 40% decoding
//! ```
//!
//! Only when standard error is a terminal and the raw stream is larger
//! than [`MIN_STREAM`]; redrawn at most every [`MIN_REDRAW`], erased at
//! the end.  The clock and the writer are parameters, for the tests.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

/// Streams up to this size load fast enough without a progress line.
pub const MIN_STREAM: usize = 4 << 20;
/// At most 10 redraws a second.
pub const MIN_REDRAW: Duration = Duration::from_millis(100);
/// Characters between the brackets.
const BAR: usize = 30;

/// `[=====>    ] 45% PHASE`: `done` of `total` (clamped; 0 of 0 is done).
pub fn render(phase: &str, done: u64, total: u64) -> String {
    let (done, total) = if total == 0 {
        (1, 1)
    } else {
        (done.min(total), total)
    };
    let percent = (u128::from(done) * 100 / u128::from(total)) as usize;
    let filled = (u128::from(done) * BAR as u128 / u128::from(total)) as usize;
    let bar = if filled >= BAR {
        "=".repeat(BAR)
    } else {
        format!("{}>{}", "=".repeat(filled), " ".repeat(BAR - filled - 1))
    };
    format!("[{bar}] {percent:3}% {phase}")
}

/// A rate-limited progress line on `out`; `clock` says how much time has
/// passed since some fixed instant.
pub struct Progress<W: Write, C: FnMut() -> Duration> {
    out: W,
    clock: C,
    /// When the line was last drawn.
    drawn_at: Option<Duration>,
    /// What is on the line now.
    line: String,
}

impl<W: Write, C: FnMut() -> Duration> Progress<W, C> {
    /// A progress line on `out`; nothing is written before
    /// [`update`](Self::update).
    pub fn new(out: W, clock: C) -> Self {
        Progress {
            out,
            clock,
            drawn_at: None,
            line: String::new(),
        }
    }

    /// Redraws the line if the last drawing is at least [`MIN_REDRAW`]
    /// old and the line changed.
    pub fn update(&mut self, phase: &str, done: u64, total: u64) {
        let now = (self.clock)();
        if self
            .drawn_at
            .is_some_and(|t| now.saturating_sub(t) < MIN_REDRAW)
        {
            return;
        }
        let line = render(phase, done, total);
        if line == self.line {
            return;
        }
        // Pad to cover a longer previous line (another phase's name).
        let pad = self.line.len().saturating_sub(line.len());
        // A failed write to stderr is not worth failing the report for.
        let _ = write!(self.out, "\r{line}{}", " ".repeat(pad)).and_then(|()| self.out.flush());
        self.line = line;
        self.drawn_at = Some(now);
    }

    /// Erases the line, if one was drawn; returns the writer.
    pub fn finish(mut self) -> W {
        if !self.line.is_empty() {
            let blank = " ".repeat(self.line.len());
            let _ = write!(self.out, "\r{blank}\r").and_then(|()| self.out.flush());
        }
        self.out
    }
}

/// A progress line on standard error for a stream of `stream_len` bytes,
/// if standard error is a terminal (`isatty(2)`) and the stream is larger
/// than [`MIN_STREAM`].
pub fn for_stderr(stream_len: usize) -> Option<Progress<io::Stderr, impl FnMut() -> Duration>> {
    if stream_len <= MIN_STREAM || !io::stderr().is_terminal() {
        return None;
    }
    let start = Instant::now();
    Some(Progress::new(io::stderr(), move || start.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn rendering() {
        assert_eq!(
            render("decoding", 0, 100),
            format!("[>{}]   0% decoding", " ".repeat(29))
        );
        assert_eq!(
            render("decoding", 45, 100),
            format!("[{}>{}]  45% decoding", "=".repeat(13), " ".repeat(16))
        );
        assert_eq!(
            render("symbolizing", 7, 7),
            format!("[{}] 100% symbolizing", "=".repeat(30))
        );
        // Past the end and an empty total are both "done".
        assert_eq!(render("x", 9, 7), render("x", 1, 1));
        assert_eq!(render("x", 0, 0), render("x", 1, 1));
        // No overflow near u64::MAX.
        assert!(render("x", u64::MAX / 2, u64::MAX).contains(" 49% x"));
    }

    #[test]
    fn rate_limited_and_cleared() {
        let now = Rc::new(Cell::new(Duration::ZERO));
        let clock = {
            let now = now.clone();
            move || now.get()
        };
        let mut p = Progress::new(Vec::new(), clock);
        let at = |ms: u64| now.set(Duration::from_millis(ms));

        let mut expected = String::new();
        at(0);
        p.update("decoding", 10, 100); // first: drawn
        expected += &format!("\r{}", render("decoding", 10, 100));
        at(50);
        p.update("decoding", 20, 100); // 50 ms later: skipped
        at(99);
        p.update("decoding", 30, 100); // 99 ms: skipped
        at(100);
        p.update("decoding", 40, 100); // 100 ms: drawn
        expected += &format!("\r{}", render("decoding", 40, 100));
        at(250);
        p.update("decoding", 40, 100); // the same line: not redrawn
        at(260);
        p.update("symbolizing", 1, 2); // 160 ms after the last drawing
        expected += &format!("\r{}", render("symbolizing", 1, 2));
        at(300);
        p.update("decoding", 0, 1); // 40 ms: skipped
        at(400);
        p.update("decoding", 0, 1); // shorter than the line it replaces
        let line = render("decoding", 0, 1);
        expected += &format!("\r{line}{}", " ".repeat(3));
        expected += &format!("\r{}\r", " ".repeat(line.len()));
        let out = String::from_utf8(p.finish()).unwrap();
        assert_eq!(out, expected);
    }

    #[test]
    fn nothing_drawn_nothing_cleared() {
        let p = Progress::new(Vec::new(), || Duration::ZERO);
        assert!(p.finish().is_empty());
    }

    #[test]
    fn ten_redraws_a_second_at_most() {
        let now = Rc::new(Cell::new(Duration::ZERO));
        let clock = {
            let now = now.clone();
            move || now.get()
        };
        let mut p = Progress::new(Vec::new(), clock);
        // One update a millisecond for a second, each a new percentage
        // every 10 ms.
        for ms in 0..1000u64 {
            now.set(Duration::from_millis(ms));
            p.update("decoding", ms, 1000);
        }
        let out = String::from_utf8(p.finish()).unwrap();
        // 10 drawings plus the final clearing.
        assert_eq!(out.matches('\r').count(), 10 + 2, "{out:?}");
    }
}

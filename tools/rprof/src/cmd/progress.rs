//! A progress bar on standard error while `rprof report`, `annotate` and
//! `export` decode and symbolize a large recording:
//!
//! ```text
//! [===========>                  ]  40% decoding
//! ```
//!
//! Drawn by `indicatif`, only when standard error is a terminal and the
//! raw stream is larger than [`MIN_STREAM`]; at most [`REDRAW_HZ`] times a
//! second, and erased at the end.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal};

/// Streams up to this size load fast enough without a progress bar.
pub const MIN_STREAM: usize = 4 << 20;
/// Redraws a second, at most.
pub const REDRAW_HZ: u8 = 10;
/// The bar: 30 characters, the percentage, the phase.
const TEMPLATE: &str = "[{bar:30}] {percent:>3}% {msg}";

/// A progress bar over phases ("decoding", "symbolizing"), each with its
/// own total.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar drawn on `target`.
    pub fn new(target: ProgressDrawTarget) -> Self {
        let style = ProgressStyle::with_template(TEMPLATE)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        Progress {
            bar: ProgressBar::with_draw_target(Some(0), target).with_style(style),
        }
    }

    /// `done` of `total` in `phase` (a new phase starts its own bar).
    pub fn update(&mut self, phase: &str, done: u64, total: u64) {
        if self.bar.message() != phase {
            self.bar.set_message(phase.to_string());
        }
        self.bar.set_length(total);
        self.bar.set_position(done.min(total));
    }

    /// Erases the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }

    /// Where the bar is: (phase, done, total).
    #[cfg(test)]
    fn state(&self) -> (String, u64, u64) {
        (
            self.bar.message(),
            self.bar.position(),
            self.bar.length().unwrap_or(0),
        )
    }
}

/// A progress bar on standard error for a stream of `stream_len` bytes,
/// if standard error is a terminal and the stream is larger than
/// [`MIN_STREAM`].
pub fn for_stderr(stream_len: usize) -> Option<Progress> {
    if stream_len <= MIN_STREAM || !io::stderr().is_terminal() {
        return None;
    }
    Some(Progress::new(ProgressDrawTarget::stderr_with_hz(REDRAW_HZ)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_and_positions() {
        let mut p = Progress::new(ProgressDrawTarget::hidden());
        p.update("decoding", 45, 100);
        assert_eq!(p.state(), ("decoding".to_string(), 45, 100));
        // Past the end is the end.
        p.update("decoding", 200, 100);
        assert_eq!(p.state().1, 100);
        p.update("symbolizing", 1, 7);
        assert_eq!(p.state(), ("symbolizing".to_string(), 1, 7));
        p.finish();
    }

    #[test]
    fn not_on_a_pipe_or_for_a_small_stream() {
        assert!(for_stderr(MIN_STREAM).is_none());
        // cargo test's stderr is a pipe or a file.
        if !io::stderr().is_terminal() {
            assert!(for_stderr(MIN_STREAM + 1).is_none());
        }
    }
}

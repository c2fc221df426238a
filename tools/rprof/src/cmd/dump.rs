//! `rprof dump`: run a session and print every record.
//!
//! Configure, map the event buffer (unless `--read`), START, then until the
//! duration has passed: `poll()` with a 100 ms timeout and take what the
//! module published.  Then STOP, FLUSH, take the rest, and print the
//! summary and the module's statistics.  SIGINT/SIGTERM end the sampling
//! early but still take the records and print the summary; an error after
//! START still issues STOP.
//!
//! With `--stall` nothing is consumed while the session runs (the reader
//! only sleeps until the duration has passed), so that a small event
//! buffer overflows and the module must count and report what it drops;
//! everything is taken after STOP.
//!
//! With `--raw FILE` the bytes of the stream are also written to FILE
//! exactly as they were read, for tools that resolve samples later.

use rprof::format::{write_stats, RecordLine};
use rprof::session::{self, Framer, Session};
use rprof::summary::Summary;
use rprof::{signal, Device, Error};
use rprof_abi::rprof_config;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest wait in `poll()` between two looks at the buffer.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How `rprof dump` reads and prints.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long to sample.
    pub duration: Duration,
    /// Use `read()` rather than the mmap'ed buffer.
    pub use_read: bool,
    /// Print no record lines.
    pub quiet: bool,
    /// Print the summary as JSON.
    pub summary_json: bool,
    /// Consume nothing until the session is stopped.
    pub stall: bool,
    /// Also write the raw stream to this file.
    pub raw: Option<PathBuf>,
}

/// Decodes the stream as it arrives, printing and counting records.
///
/// Chunks need not end on record boundaries: an incomplete last record
/// waits for the next chunk.  A malformed record loses the framing; the
/// rest of the stream is then only drained, and the error is reported at
/// the end.
struct Sink<W: Write> {
    framer: Framer,
    summary: Summary,
    out: W,
    quiet: bool,
    /// Where the raw bytes go, with `--raw`.
    raw: Option<Box<dyn Write>>,
}

impl<W: Write> Sink<W> {
    fn new(out: W, quiet: bool) -> Self {
        Sink {
            framer: Framer::new(),
            summary: Summary::default(),
            out,
            quiet,
            raw: None,
        }
    }

    /// Takes the next bytes of the stream.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if let Some(raw) = &mut self.raw {
            // Every byte as read, even after a malformed record.
            raw.write_all(bytes)
                .map_err(|e| Error::io("writing the raw stream (--raw)", e))?;
        }
        let (summary, out, quiet) = (&mut self.summary, &mut self.out, self.quiet);
        self.framer.feed(bytes, |record| {
            summary.add(record);
            if !quiet {
                writeln!(out, "{}", RecordLine(record))
                    .map_err(|e| Error::io("writing to standard output", e))?;
            }
            Ok(())
        })
    }

    /// Flushes the raw stream file, if any.
    fn flush_raw(&mut self) -> Result<(), Error> {
        match &mut self.raw {
            Some(raw) => raw
                .flush()
                .map_err(|e| Error::io("writing the raw stream (--raw)", e)),
            None => Ok(()),
        }
    }

    /// The stream has ended: reports a malformed or incomplete record.
    fn finish(&self) -> Result<(), Error> {
        self.framer.finish()
    }
}

impl<W: Write> session::Sink for Sink<W> {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        Sink::feed(self, bytes)
    }

    fn saw_stop(&self) -> bool {
        self.summary.span.stops > 0
    }
}

/// Runs `rprof dump` on the device at `path` with `config`.
pub fn run(path: &Path, config: &rprof_config, opts: &Options) -> Result<(), Error> {
    let dev = Device::open(path)?;
    let mut session = Session::new(&dev, config, opts.use_read)?;
    signal::install_stop_handler().map_err(|e| Error::io("installing a SIGINT handler", e))?;
    let mut sink = Sink::new(BufWriter::new(io::stdout().lock()), opts.quiet);
    if let Some(path) = &opts.raw {
        let file = File::create(path).map_err(|e| Error::io("creating the --raw file", e))?;
        sink.raw = Some(Box::new(BufWriter::new(file)));
    }

    session.start()?;
    let deadline = Instant::now() + opts.duration;
    loop {
        let now = Instant::now();
        if now >= deadline || signal::stop_requested() {
            break;
        }
        let wait = (deadline - now).min(POLL_INTERVAL);
        if opts.stall {
            // Leave the buffer alone; wake up now and then for signals.
            std::thread::sleep(wait);
            continue;
        }
        session.pump(wait, &mut sink)?;
    }
    if !session.stop_and_drain(&mut sink)? {
        eprintln!("rprof: warning: the session ended without a STOP record");
    }

    sink.flush_raw()?;
    let (stats, cpus) = dev.stats(true)?;
    let out = &mut sink.out;
    let written = if opts.summary_json {
        writeln!(out, "{}", sink.summary.to_json(Some((&stats, &cpus))))
    } else {
        writeln!(out, "{}", sink.summary.line()).and_then(|()| write_stats(out, &stats, &cpus))
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing to standard output", e))?;
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_decode::Record;

    fn sample(n: u64) -> Record {
        Record::Sample {
            flags: 0,
            time_ns: n,
            offset: 0xffff_ffff_8100_0000 + n,
            period: 1,
            stack: None,
        }
    }

    fn task(cpu: u32) -> Record {
        Record::Task {
            cpu,
            pid: 0,
            tid: 0,
            exe_cookie: 0,
            comm: "swapper/0".into(),
        }
    }

    /// A `Write` whose bytes stay readable after the sink took it.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn sink_reassembles_records_split_across_chunks() {
        let mut stream = Vec::new();
        for n in 0..10 {
            task((n % 2) as u32).encode(&mut stream);
            sample(n).encode(&mut stream);
        }
        let raw = Shared::default();
        let mut sink = Sink::new(Vec::new(), false);
        sink.raw = Some(Box::new(raw.clone()));
        for chunk in stream.chunks(13) {
            sink.feed(chunk).unwrap();
        }
        sink.flush_raw().unwrap();
        sink.finish().unwrap();
        assert_eq!(sink.summary.samples, 10);
        assert_eq!(sink.summary.samples_per_cpu, [5, 5]);
        let text = String::from_utf8(sink.out).unwrap();
        assert_eq!(text.lines().count(), 20);
        assert!(
            text.starts_with(
                "TASK cpu=0 pid=0 tid=0 comm=swapper/0 exe=0\nSAMPLE t=0 kernel ev=0 "
            ),
            "{text}"
        );
        assert_eq!(*raw.0.borrow(), stream, "--raw must get the bytes as read");
    }

    #[test]
    fn sink_reports_incomplete_and_malformed_streams() {
        let bytes = sample(1).to_bytes();
        let mut sink = Sink::new(Vec::new(), true);
        sink.feed(&bytes[..24]).unwrap();
        assert!(
            sink.finish().is_err(),
            "an incomplete record must be reported"
        );
        assert!(sink.out.is_empty());

        let raw = Shared::default();
        let mut sink = Sink::new(Vec::new(), true);
        sink.raw = Some(Box::new(raw.clone()));
        sink.feed(&bytes).unwrap();
        sink.feed(&[1, 0, 0, 0, 12, 0, 0, 0]).unwrap();
        sink.feed(&bytes).unwrap();
        assert_eq!(raw.0.borrow().len(), 2 * 32 + 8, "raw bytes after an error");
        match sink.finish() {
            Err(Error::Protocol(msg)) => assert!(msg.contains("offset 32"), "got {msg}"),
            other => panic!("expected a malformed-record error, got {other:?}"),
        }
        assert_eq!(
            sink.summary.samples, 1,
            "records after the error were counted"
        );
    }
}

//! One session on `/dev/rprof`, as every command that samples runs it.
//!
//! [`Session::new`] checks the ABI version, configures, and maps the event
//! buffer (or prepares `read()`); [`Session::start`] starts sampling;
//! [`Session::pump`] waits up to a timeout for data and hands what the
//! module published to a [`Sink`]; [`Session::stop_and_drain`] stops and
//! takes everything up to the STOP record.  A session dropped while
//! running (an error path) is stopped.
//!
//! [`Framer`] cuts the chunks a sink receives into records: chunks need
//! not end on record boundaries.

use crate::memlock::Refusal;
use crate::{Device, Error, MmapReader};
use rprof_abi::rprof_config;
use rprof_decode::{Decoder, Record};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// The buffer size of `read()` in read mode.
const READ_SIZE: usize = 256 * 1024;

/// How long SET_CONFIG's EBUSY is waited out.  A session belongs to the
/// file that configured it until the kernel lets go of that file, which a
/// mapping of its buffer holds too: after its owner was SIGKILLed, the
/// last mapping goes with the owner's address space, which the module's
/// own unresolved samples keep alive until the next drain (50 ms), and a
/// forked child's copy until that child exits.  A tool started right after
/// `kill -9` must see that session end, not fail; one started beside a
/// live owner must be refused soon (`30-sampling`'s second configurer).
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// SET_CONFIG, retried while it gives EBUSY, for at most [`RELEASE_WAIT`].
fn set_config_waiting(dev: &Device, config: &rprof_config) -> Result<(), Error> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        match dev.set_config(config) {
            Err(Error::Ioctl { source, .. })
                if source.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// What SET_CONFIG made of a request for unwind tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    /// The configuration did not ask for them.
    NotAsked,
    /// The module took `RPROF_CONFIG_UNWIND_TABLES`.
    On,
    /// The module refused the flag (EINVAL) and took the same
    /// configuration without it: an older module, frame pointers only.
    Refused,
}

/// SET_CONFIG of `config`; if it asks for unwind tables and `set` refuses
/// it with EINVAL, once more without them: a module older than
/// `RPROF_CONFIG_UNWIND_TABLES` refuses the unknown flag so.  `config` is
/// left as the module took it.  An error of the second try is the one
/// returned (it is about the rest of the configuration).
pub fn set_config_probing(
    config: &mut rprof_config,
    mut set: impl FnMut(&rprof_config) -> Result<(), Error>,
) -> Result<Tables, Error> {
    use rprof_abi::RPROF_CONFIG_UNWIND_TABLES;
    if config.flags & RPROF_CONFIG_UNWIND_TABLES == 0 {
        return set(config).map(|()| Tables::NotAsked);
    }
    match set(config) {
        Ok(()) => Ok(Tables::On),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let mut plain = *config;
            plain.flags &= !RPROF_CONFIG_UNWIND_TABLES;
            set(&plain)?;
            *config = plain;
            Ok(Tables::Refused)
        }
        Err(e) => Err(e),
    }
}

/// Where the bytes of the stream go.
pub trait Sink {
    /// Takes the next bytes of the stream, exactly as read.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error>;
    /// Whether a STOP record has gone by.
    fn saw_stop(&self) -> bool;
}

/// Where the records come from.
enum Source<'dev> {
    Mmap { reader: MmapReader<'dev> },
    Read { buf: Vec<u8> },
}

/// A configured session on an open device.
pub struct Session<'dev> {
    dev: &'dev Device,
    source: Source<'dev>,
    running: bool,
}

impl<'dev> Session<'dev> {
    /// Checks the module's ABI version, configures the session and maps
    /// the event buffer (unless `use_read`: then records come by `read()`).
    ///
    /// A session whose buffers pass the caller's locked-memory limit
    /// (SET_CONFIG's EPERM) is [`Error::LockedMemory`], which says how
    /// large it was and what to change.
    pub fn new(dev: &'dev Device, config: &rprof_config, use_read: bool) -> Result<Self, Error> {
        dev.check_version()?;
        let result = set_config_waiting(dev, config);
        Self::configured(dev, config, use_read, result)
    }

    /// [`Session::new`] of a configuration that may ask for unwind tables
    /// (`RPROF_CONFIG_UNWIND_TABLES`): a module that refuses them gets the
    /// same configuration without (see [`set_config_probing`]), and
    /// `config` is what it took.
    pub fn new_probing(
        dev: &'dev Device,
        config: &mut rprof_config,
        use_read: bool,
    ) -> Result<(Self, Tables), Error> {
        dev.check_version()?;
        let mut tables = Tables::NotAsked;
        let result = set_config_probing(config, |c| set_config_waiting(dev, c)).map(|t| {
            tables = t;
        });
        Ok((Self::configured(dev, config, use_read, result)?, tables))
    }

    /// The session once SET_CONFIG of `config` gave `result`: its error
    /// said the way a person can act on, or the buffer mapped.
    fn configured(
        dev: &'dev Device,
        config: &rprof_config,
        use_read: bool,
        result: Result<(), Error>,
    ) -> Result<Self, Error> {
        match result {
            Err(Error::Ioctl { source, .. })
                if config.buffer_pages != 0 && source.raw_os_error() == Some(libc::EINVAL) =>
            {
                return Err(Error::Usage(format!(
                    "the module refused the configuration with an event buffer of {} pages: \
                     it takes at most 16 times its buffer_pages parameter, and a module older \
                     than these tools takes none (see dmesg; -m sets the size)",
                    config.buffer_pages
                )))
            }
            Err(Error::Ioctl { source, .. }) if source.raw_os_error() == Some(libc::EPERM) => {
                // The capability was checked at open(): EPERM here is
                // the locked-memory limit (crate::memlock).
                return Err(Error::LockedMemory(Refusal::now(config)));
            }
            r => r?,
        }
        let source = if use_read {
            Source::Read {
                buf: vec![0; READ_SIZE],
            }
        } else {
            Source::Mmap {
                reader: MmapReader::new(dev)?,
            }
        };
        Ok(Session {
            dev,
            source,
            running: false,
        })
    }

    /// Bytes of stream the module has written that this session has not
    /// taken yet (the reader's lag; 0 when records come by `read()`,
    /// which does not tell).
    pub fn unread(&self) -> u64 {
        match &self.source {
            Source::Mmap { reader } => reader.pending(),
            Source::Read { .. } => 0,
        }
    }

    /// The size of the mapped event buffer in bytes (0 when records come
    /// by `read()`).
    pub fn buffer_size(&self) -> u64 {
        match &self.source {
            Source::Mmap { reader } => reader.data_size() as u64,
            Source::Read { .. } => 0,
        }
    }

    /// The device.
    pub fn device(&self) -> &'dev Device {
        self.dev
    }

    /// START.
    pub fn start(&mut self) -> Result<(), Error> {
        self.dev.start()?;
        self.running = true;
        Ok(())
    }

    /// STOP (without draining).
    pub fn stop(&mut self) -> Result<(), Error> {
        self.running = false;
        self.dev.stop()
    }

    /// Moves what is available into `sink`; returns the bytes moved.
    /// `readable` is what `poll()` said (read() is only tried then).
    fn take(&mut self, readable: bool, sink: &mut dyn Sink) -> Result<usize, Error> {
        match &mut self.source {
            // Straight from the mapping: no copy on the way.
            Source::Mmap { reader } => reader.consume_available(&mut |b| sink.feed(b)),
            Source::Read { buf } => {
                if !readable {
                    return Ok(0);
                }
                match self.dev.read(buf) {
                    Ok(n) => {
                        sink.feed(&buf[..n])?;
                        Ok(n)
                    }
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => Ok(0),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits at most `wait` for data (a signal ends the wait early), then
    /// hands what is there to `sink`; returns the bytes handed.
    pub fn pump(&mut self, wait: Duration, sink: &mut dyn Sink) -> Result<usize, Error> {
        self.pump_with(wait, &[], sink)
    }

    /// [`Session::pump`] whose wait also ends when `also` polls readable.
    pub fn pump_with(
        &mut self,
        wait: Duration,
        also: &[BorrowedFd<'_>],
        sink: &mut dyn Sink,
    ) -> Result<usize, Error> {
        let readable = self.dev.poll_with(wait, also)?;
        self.take(readable, sink)
    }

    /// STOPs (if running) and takes everything up to the STOP record.
    ///
    /// When the buffer was full at STOP, the module still owes LOST
    /// records and STOP itself; each FLUSH after freeing space lets it
    /// write more.  Gives up only when a FLUSH brought nothing twice in a
    /// row.  Returns whether the STOP record came.
    pub fn stop_and_drain(&mut self, sink: &mut dyn Sink) -> Result<bool, Error> {
        if self.running {
            self.stop()?;
        }
        let mut idle_flushes = 0;
        while !sink.saw_stop() && idle_flushes < 2 {
            let readable = self.dev.poll(Duration::ZERO)?;
            if self.take(readable, sink)? == 0 {
                self.dev.flush()?;
                idle_flushes += 1;
            } else {
                idle_flushes = 0;
            }
        }
        Ok(sink.saw_stop())
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.running {
            // Already on an error path: that error is the one to report.
            let _ = self.dev.stop();
        }
    }
}

/// Cuts a stream that arrives in chunks into records.
///
/// An incomplete last record waits for the next chunk.  A malformed record
/// loses the framing: the rest of the stream is ignored and the error is
/// reported by [`Framer::finish`] (and [`Framer::error`]).
#[derive(Debug, Default)]
pub struct Framer {
    pending: Vec<u8>,
    /// Stream offset of `pending[0]`.
    offset: usize,
    error: Option<String>,
    stops: u64,
}

impl Framer {
    /// A framer at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next bytes; calls `each` for every complete record.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&Record) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.error.is_some() || bytes.is_empty() {
            return Ok(());
        }
        self.pending.extend_from_slice(bytes);
        let mut decoder = Decoder::new(&self.pending);
        let mut result = Ok(());
        for item in decoder.by_ref() {
            match item {
                Ok(record) => {
                    if matches!(record, Record::Stop { .. }) {
                        self.stops += 1;
                    }
                    if let Err(e) = each(&record) {
                        result = Err(e);
                        break;
                    }
                }
                Err(e) if e.kind.is_truncation() => break,
                Err(e) => {
                    self.error = Some(format!(
                        "malformed record at stream offset {}: {}",
                        self.offset + e.offset,
                        e.kind
                    ));
                    break;
                }
            }
        }
        let used = decoder.position();
        self.pending.drain(..used);
        self.offset += used;
        result
    }

    /// STOP records seen.
    pub fn stops(&self) -> u64 {
        self.stops
    }

    /// The framing error, if a record was malformed.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The stream has ended: reports a malformed or incomplete record.
    pub fn finish(&self) -> Result<(), Error> {
        if let Some(e) = &self.error {
            return Err(Error::Protocol(e.clone()));
        }
        if !self.pending.is_empty() {
            return Err(Error::Protocol(format!(
                "the event stream ended inside a record ({} bytes at stream offset {})",
                self.pending.len(),
                self.offset
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-g` on an older module: EINVAL with the flag, accepted without.
    #[test]
    fn probing_falls_back_only_for_the_flag() {
        use rprof_abi::{RPROF_CONFIG_CALLCHAIN, RPROF_CONFIG_UNWIND_TABLES};
        let einval = || {
            Error::ioctl(
                "RPROF_IOC_SET_CONFIG",
                std::io::Error::from_raw_os_error(libc::EINVAL),
            )
        };
        let mut asked = rprof_config::new();
        asked.flags = RPROF_CONFIG_CALLCHAIN | RPROF_CONFIG_UNWIND_TABLES;
        // An older module: refuses the flag, takes the rest.
        let mut c = asked;
        let mut tries = Vec::new();
        let old_module = |c: &rprof_config| {
            tries.push(c.flags);
            if c.flags & RPROF_CONFIG_UNWIND_TABLES != 0 {
                Err(einval())
            } else {
                Ok(())
            }
        };
        assert_eq!(
            set_config_probing(&mut c, old_module).unwrap(),
            Tables::Refused
        );
        assert_eq!(c.flags, RPROF_CONFIG_CALLCHAIN, "the configuration taken");
        assert_eq!(tries, [asked.flags, RPROF_CONFIG_CALLCHAIN]);
        // A new module takes it at once.
        let mut c = asked;
        assert_eq!(set_config_probing(&mut c, |_| Ok(())).unwrap(), Tables::On);
        assert_eq!(c.flags, asked.flags);
        // EINVAL for the rest too: the second error, nothing changed.
        let mut c = asked;
        let e = set_config_probing(&mut c, |_| Err(einval())).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        assert_eq!(c.flags, asked.flags);
        // Another error is not a refusal of the flag: no second try.
        let mut c = asked;
        let mut n = 0;
        let busy = |_: &rprof_config| {
            n += 1;
            Err(Error::ioctl(
                "RPROF_IOC_SET_CONFIG",
                std::io::Error::from_raw_os_error(libc::EBUSY),
            ))
        };
        assert!(set_config_probing(&mut c, busy).is_err());
        assert_eq!(n, 1);
        // Not asked: one try, whatever it says.
        let mut c = rprof_config::new();
        assert_eq!(
            set_config_probing(&mut c, |_| Ok(())).unwrap(),
            Tables::NotAsked
        );
        assert!(set_config_probing(&mut c, |_| Err(einval())).is_err());
    }

    #[test]
    fn framer_reassembles_and_counts_stops() {
        let config = rprof_config::new();
        let mut stream = Vec::new();
        for n in 0..5 {
            Record::Sample {
                flags: 0,
                time_ns: n,
                offset: n,
                period: 1,
                stack: None,
            }
            .encode(&mut stream);
        }
        Record::Stop { time_ns: 9, config }.encode(&mut stream);
        let mut f = Framer::new();
        let mut seen = 0;
        for chunk in stream.chunks(5) {
            f.feed(chunk, |_| {
                seen += 1;
                Ok(())
            })
            .unwrap();
        }
        assert_eq!((seen, f.stops()), (6, 1));
        f.finish().unwrap();
        f.feed(&stream[..8], |_| Ok(())).unwrap();
        assert!(f.finish().is_err(), "an incomplete record is reported");
        let mut f = Framer::new();
        f.feed(&[1, 0, 0, 0, 12, 0, 0, 0], |_| Ok(())).unwrap();
        assert!(f.error().unwrap().contains("offset 0"));
    }
}

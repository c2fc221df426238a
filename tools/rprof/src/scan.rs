//! What `rprof record` needs to know of the stream while it copies it to
//! the file, at a small fraction of the cost of decoding it.
//!
//! `record` writes the stream as it comes and reports it later; all it
//! must see on the way is the framing (so that a malformed stream is
//! noticed), the names of cookies (for the file's snapshot of the files
//! it sampled), LOST and STOP records, and how many samples went by.
//! [`Scan`] walks record headers in place and decodes only the records
//! that carry those: COOKIE, MODULE, LOST, START, STOP and THROTTLE.
//! SAMPLE, TASK, SWITCH and STACK records, nearly all of the stream, are
//! counted or skipped by their header alone.  (The cost of `record`'s
//! reading is part of what a profiler costs the profiled system:
//! `make bench` measures it as "rprof's reader".)

use crate::session::Sink;
use crate::unwind::Watch;
use crate::Error;
use rprof_abi::*;
use rprof_decode::{decode_record, Record, Resolver};
use std::mem::size_of;

/// `sizeof(struct rprof_record_header)`.
const HEADER: usize = size_of::<rprof_record_header>();

/// A [`Sink`] half: frames records and keeps the few facts `record`
/// needs.
///
/// # Invariants
///
/// `carry` holds the start of a record that the last chunk cut short,
/// fewer bytes than that record's size (or than a header), and is empty
/// once `error` is set.
#[derive(Debug, Default)]
pub struct Scan {
    carry: Vec<u8>,
    /// Stream offset of the next byte to frame (of `carry[0]` when the
    /// carry is not empty).
    offset: u64,
    error: Option<String>,
    stops: u64,
    /// SAMPLE records seen.
    pub samples: u64,
    /// Records reported lost by LOST records, saturating.
    pub lost: u64,
    resolver: Resolver,
    /// The unwind-table uploader's eyes on the stream: TASK, COOKIE and
    /// RESET records (see [`Scan::watch`]).
    watch: Option<Watch>,
}

/// The size a record header at the start of `b` (at least [`HEADER`]
/// bytes) gives, if it is well-formed: at least a header, a multiple of 8.
fn record_size(b: &[u8]) -> Result<usize, String> {
    let size = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    if (size as usize) < HEADER || size % 8 != 0 {
        return Err(format!(
            "record size {size} is not a multiple of 8 of at least {HEADER}"
        ));
    }
    usize::try_from(size).map_err(|_| format!("record size {size} does not fit in memory"))
}

/// The header of a SAMPLE record without a stack (its flags masked out:
/// the type in the low 16 bits, the size in the high 32, little-endian).
const PLAIN_SAMPLE: u64 = (size_of::<rprof_sample>() as u64) << 32 | RPROF_RECORD_SAMPLE as u64;
const TYPE_AND_SIZE: u64 = 0xffff_ffff_0000_ffff;

/// How many plain SAMPLE records `b` starts with (whole ones).
fn skip_samples(b: &[u8]) -> usize {
    b.chunks_exact(size_of::<rprof_sample>())
        .take_while(|r| {
            let header = u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
            header & TYPE_AND_SIZE == PLAIN_SAMPLE
        })
        .count()
}

impl Scan {
    /// A scan at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Has `watch` see the stream's TASK, COOKIE and RESET records (the
    /// TASK's pid read in place, RESET by its type alone).
    pub fn watch(&mut self, watch: Watch) {
        self.watch = Some(watch);
    }

    /// Takes the next bytes of the stream.  A malformed record ends the
    /// scan (the bytes are still the caller's to write); [`Scan::finish`]
    /// reports it.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if !self.carry.is_empty() {
            // Complete the header first, then the record.
            if self.carry.len() < HEADER {
                let n = (HEADER - self.carry.len()).min(bytes.len());
                self.carry.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                if self.carry.len() < HEADER {
                    return;
                }
            }
            let size = match record_size(&self.carry) {
                Ok(s) => s,
                Err(e) => return self.fail(e),
            };
            let n = (size - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.carry.len() < size {
                return;
            }
            let record = std::mem::take(&mut self.carry);
            if let Err(e) = self.one(&record) {
                return self.fail(e);
            }
            self.offset += size as u64;
        }
        while !bytes.is_empty() {
            // Nearly all of the stream: runs of plain SAMPLE records,
            // counted by their headers alone, eight bytes at a time.
            let plain = skip_samples(bytes);
            if plain > 0 {
                self.samples += plain as u64;
                let n = plain * size_of::<rprof_sample>();
                self.offset += n as u64;
                bytes = &bytes[n..];
                continue;
            }
            if bytes.len() < HEADER {
                self.carry.extend_from_slice(bytes);
                return;
            }
            let size = match record_size(bytes) {
                Ok(s) => s,
                Err(e) => return self.fail(e),
            };
            if size > bytes.len() {
                self.carry.extend_from_slice(bytes);
                return;
            }
            if let Err(e) = self.one(&bytes[..size]) {
                return self.fail(e);
            }
            self.offset += size as u64;
            bytes = &bytes[size..];
        }
    }

    /// One whole, framed record.
    fn one(&mut self, r: &[u8]) -> Result<(), String> {
        let record_type = u32::from(u16::from_le_bytes([r[0], r[1]]));
        match record_type {
            RPROF_RECORD_SAMPLE => {
                if r.len() < size_of::<rprof_sample>() {
                    return Err(format!("SAMPLE record of {} bytes", r.len()));
                }
                self.samples += 1;
                Ok(())
            }
            // Context a report needs, not `record`; and types this
            // program does not know, which readers skip by their size.
            RPROF_RECORD_TASK => {
                if let Some(w) = &mut self.watch {
                    let at = std::mem::offset_of!(rprof_task, pid);
                    let pid = r.get(at..at + 4).ok_or("TASK record too short")?;
                    w.task(u32::from_le_bytes([pid[0], pid[1], pid[2], pid[3]]));
                }
                Ok(())
            }
            RPROF_RECORD_RESET => {
                if let Some(w) = &mut self.watch {
                    w.reset();
                }
                Ok(())
            }
            RPROF_RECORD_SWITCH | RPROF_RECORD_UNTHROTTLE => Ok(()),
            RPROF_RECORD_COOKIE
            | RPROF_RECORD_MODULE
            | RPROF_RECORD_LOST
            | RPROF_RECORD_START
            | RPROF_RECORD_STOP
            | RPROF_RECORD_THROTTLE => {
                let (record, _) = decode_record(r).map_err(|e| e.to_string())?;
                match &record {
                    Record::Stop { .. } => self.stops += 1,
                    Record::Lost { count, .. } => self.lost = self.lost.saturating_add(*count),
                    Record::Cookie { dev, ino, path, .. } => {
                        if let Some(w) = &mut self.watch {
                            w.cookie(*dev, *ino, path);
                        }
                    }
                    _ => {}
                }
                self.resolver.feed(&record);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn fail(&mut self, why: String) {
        self.error = Some(format!(
            "malformed record at stream offset {}: {why}",
            self.offset
        ));
        // INVARIANT: no carry once failed.
        self.carry = Vec::new();
    }

    /// STOP records seen.
    pub fn stops(&self) -> u64 {
        self.stops
    }

    /// The cookies named so far, as a [`Resolver`] keeps them.
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// The stream has ended: reports a malformed or incomplete record.
    pub fn finish(&self) -> Result<(), Error> {
        if let Some(e) = &self.error {
            return Err(Error::Protocol(e.clone()));
        }
        if !self.carry.is_empty() {
            return Err(Error::Protocol(format!(
                "the event stream ended inside a record ({} bytes at stream offset {})",
                self.carry.len(),
                self.offset
            )));
        }
        Ok(())
    }
}

impl Sink for Scan {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        Scan::feed(self, bytes);
        Ok(())
    }

    fn saw_stop(&self) -> bool {
        self.stops > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::AggregateSink;
    use rprof_decode::Record;

    /// A stream of every kind of record `record` meets, with cookies,
    /// losses and a STOP.
    fn stream() -> Vec<u8> {
        let config = rprof_config::new();
        let records = vec![
            Record::Start { time_ns: 1, config },
            Record::Task {
                cpu: 1,
                pid: 7,
                tid: 8,
                exe_cookie: 16,
                comm: "work".into(),
            },
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 3,
                ino: 4,
                path: "/bin/work".into(),
            },
            Record::Switch { cookie: 16 },
            Record::Sample {
                flags: 1,
                time_ns: 2,
                offset: 0x40,
                period: 1,
                stack: None,
            },
            Record::Lost {
                stage: RPROF_LOST_RING,
                cpu: 1,
                count: 5,
            },
            Record::Sample {
                flags: 1,
                time_ns: 3,
                offset: 0x48,
                period: 1,
                stack: None,
            },
            // A run, and a sample naming a stack (a larger record).
            Record::Sample {
                flags: 1,
                time_ns: 3,
                offset: 0x50,
                period: 1,
                stack: None,
            },
            Record::Sample {
                flags: 0x101,
                time_ns: 3,
                offset: 0x58,
                period: 1,
                stack: None,
            },
            Record::Sample {
                flags: 1,
                time_ns: 3,
                offset: 0x60,
                period: 1,
                stack: Some(7),
            },
            Record::Stop { time_ns: 4, config },
        ];
        let mut b = Vec::new();
        for r in &records {
            b.extend_from_slice(&r.to_bytes());
        }
        b
    }

    /// The uploader sees TASK's pid, COOKIE's file and RESET, chunks cut
    /// anywhere.
    #[test]
    fn the_watch_sees_tasks_cookies_and_resets() {
        use crate::unwind::worker::Job;
        use crate::unwind::FileKey;
        let mut b = stream();
        Record::Reset {
            time_ns: 5,
            next_cookie: 17,
            next_stack: 8,
        }
        .encode(&mut b);
        for chunk in [1, 7, 64, b.len()] {
            let (tx, rx) = std::sync::mpsc::channel();
            let mut scan = Scan::new();
            scan.watch(crate::unwind::Watch::new(tx));
            for c in b.chunks(chunk) {
                scan.feed(c);
            }
            scan.finish().unwrap();
            let jobs: Vec<Job> = rx.try_iter().collect();
            assert_eq!(
                jobs,
                [
                    Job::Cookie {
                        key: FileKey { dev: 3, ino: 4 },
                        path: "/bin/work".into(),
                        pid: Some(7)
                    },
                    Job::Reset
                ],
                "chunks of {chunk}"
            );
        }
    }

    /// Cut into chunks of every size from 1 byte up, the scan agrees with
    /// the full decoder on what `record` reports.
    #[test]
    fn agrees_with_the_decoder_in_any_chunking() {
        let s = stream();
        let mut full = AggregateSink::new();
        full.feed(&s).unwrap();
        for chunk in 1..=s.len() {
            let mut scan = Scan::new();
            for c in s.chunks(chunk) {
                scan.feed(c);
            }
            scan.finish().unwrap();
            assert_eq!(scan.samples, full.agg.samples, "chunk {chunk}");
            assert_eq!(scan.lost, full.agg.lost_total(), "chunk {chunk}");
            assert_eq!(scan.stops(), 1, "chunk {chunk}");
            assert_eq!(
                scan.resolver().names(),
                full.agg.resolver().names(),
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_cut_stream_is_reported() {
        let s = stream();
        let mut scan = Scan::new();
        scan.feed(&s[..s.len() - 4]);
        let e = scan.finish().unwrap_err().to_string();
        assert!(e.contains("ended inside a record"), "{e}");
    }

    #[test]
    fn malformed_sizes_stop_the_scan() {
        for size in [0u32, 4, 12] {
            let mut s = stream();
            // The second record (TASK) gets a bad size.
            let at = u32::from_le_bytes([s[4], s[5], s[6], s[7]]) as usize;
            s[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
            let mut scan = Scan::new();
            scan.feed(&s);
            let e = scan.finish().unwrap_err().to_string();
            assert!(e.contains(&format!("stream offset {at}")), "{e}");
            assert_eq!(scan.samples, 0);
        }
    }

    #[test]
    fn a_short_sample_is_malformed() {
        let mut b = Record::Sample {
            flags: 0,
            time_ns: 0,
            offset: 0,
            period: 0,
            stack: None,
        }
        .to_bytes();
        b.truncate(24);
        b[4..8].copy_from_slice(&24u32.to_le_bytes());
        let mut scan = Scan::new();
        scan.feed(&b);
        assert!(scan.finish().is_err());
    }

    /// The run of plain samples is skipped with the offsets kept: a bad
    /// record right after it is reported where it is.
    #[test]
    fn a_bad_record_after_a_run_of_samples_is_placed() {
        let sample = |offset| Record::Sample {
            flags: 1,
            time_ns: 0,
            offset,
            period: 1,
            stack: None,
        };
        let mut b = Vec::new();
        for i in 0..5 {
            b.extend_from_slice(&sample(i).to_bytes());
        }
        let at = b.len();
        let mut bad = sample(9).to_bytes();
        bad[4..8].copy_from_slice(&12u32.to_le_bytes());
        b.extend_from_slice(&bad);
        let mut scan = Scan::new();
        scan.feed(&b);
        let e = scan.finish().unwrap_err().to_string();
        assert!(e.contains(&format!("stream offset {at}")), "{e}");
        assert_eq!(scan.samples, 5);
    }
}

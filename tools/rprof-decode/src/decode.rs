//! Byte stream to [`Record`]s.

use crate::config::decode_config;
use crate::error::{DecodeError, DecodeErrorKind};
use crate::fields::*;
use crate::record::Record;
use core::mem::{offset_of, size_of};
use rprof_abi::*;

/// `sizeof(struct rprof_record_header)`.
const HEADER_SIZE: usize = size_of::<rprof_record_header>();

/// `sizeof(rprof_task.comm)`.
pub(crate) const TASK_COMM_LEN: usize = 16;
/// `sizeof(rprof_module.name)`.
pub(crate) const MODULE_NAME_LEN: usize = 56;

// The lengths above are those of the generated structures.
const _: () = assert!(size_of::<rprof_task>() == offset_of!(rprof_task, comm) + TASK_COMM_LEN);
const _: () =
    assert!(size_of::<rprof_module>() == offset_of!(rprof_module, name) + MODULE_NAME_LEN);

/// The C string at the start of `b`: the bytes before the first NUL (all of
/// `b` if there is none), as UTF-8 with invalid sequences replaced.
pub(crate) fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Decodes the record at the start of `bytes`.
///
/// Returns the record and its size (the bytes it takes, including any
/// trailing bytes of a newer, larger layout), or what is wrong with it.
pub fn decode_record(bytes: &[u8]) -> Result<(Record, usize), DecodeErrorKind> {
    if bytes.len() < HEADER_SIZE {
        return Err(DecodeErrorKind::TruncatedHeader {
            remaining: bytes.len(),
        });
    }
    let record_type = u16_at(bytes, offset_of!(rprof_record_header, type_));
    let flags = u16_at(bytes, offset_of!(rprof_record_header, flags));
    let size = u32_at(bytes, offset_of!(rprof_record_header, size));
    if (size as usize) < HEADER_SIZE {
        return Err(DecodeErrorKind::SizeTooSmall { size });
    }
    if size % 8 != 0 {
        return Err(DecodeErrorKind::SizeNotAligned { size });
    }
    let len = match usize::try_from(size) {
        Ok(len) if len <= bytes.len() => len,
        _ => {
            return Err(DecodeErrorKind::Truncated {
                size,
                remaining: bytes.len(),
            })
        }
    };
    let r = &bytes[..len];
    // Checks that the record holds structure `T`; after this, every field
    // offset of `T` is in bounds of `r`.
    let need = |min: usize| -> Result<(), DecodeErrorKind> {
        if len < min {
            Err(DecodeErrorKind::TooSmallForType {
                record_type,
                size,
                // Structures are a few hundred bytes at most.
                min: min as u32,
            })
        } else {
            Ok(())
        }
    };

    let record = match u32::from(record_type) {
        RPROF_RECORD_SAMPLE => {
            let with_stack = u32::from(flags) & RPROF_SAMPLE_STACK != 0;
            need(if with_stack {
                size_of::<rprof_sample_stack>()
            } else {
                size_of::<rprof_sample>()
            })?;
            Record::Sample {
                flags,
                time_ns: u64_at(r, offset_of!(rprof_sample, time_ns)),
                offset: u64_at(r, offset_of!(rprof_sample, offset)),
                period: u64_at(r, offset_of!(rprof_sample, period)),
                stack: with_stack.then(|| u64_at(r, offset_of!(rprof_sample_stack, stack))),
            }
        }
        RPROF_RECORD_STACK => {
            need(size_of::<rprof_stack>())?;
            let nr_kernel = u16_at(r, offset_of!(rprof_stack, nr_kernel));
            let nr_user = u16_at(r, offset_of!(rprof_stack, nr_user));
            let n = usize::from(nr_kernel) + usize::from(nr_user);
            // At most 2 x 65535 frames of 16 bytes: no overflow.
            need(size_of::<rprof_stack>() + n * size_of::<rprof_frame>())?;
            let frames = (0..n)
                .map(|i| {
                    let at = size_of::<rprof_stack>() + i * size_of::<rprof_frame>();
                    (u64_at(r, at), u64_at(r, at + 8))
                })
                .collect();
            Record::Stack {
                id: u64_at(r, offset_of!(rprof_stack, id)),
                flags,
                nr_kernel,
                frames,
            }
        }
        RPROF_RECORD_TASK => {
            need(size_of::<rprof_task>())?;
            let comm = offset_of!(rprof_task, comm);
            Record::Task {
                cpu: u32_at(r, offset_of!(rprof_task, cpu)),
                pid: u32_at(r, offset_of!(rprof_task, pid)),
                tid: u32_at(r, offset_of!(rprof_task, tid)),
                exe_cookie: u64_at(r, offset_of!(rprof_task, exe_cookie)),
                comm: c_string(&r[comm..comm + TASK_COMM_LEN]),
            }
        }
        RPROF_RECORD_SWITCH => {
            need(size_of::<rprof_switch>())?;
            Record::Switch {
                cookie: u64_at(r, offset_of!(rprof_switch, cookie)),
            }
        }
        RPROF_RECORD_COOKIE => {
            // The fixed part; the path runs to the record's end.
            need(size_of::<rprof_cookie_record>())?;
            Record::Cookie {
                cookie: u64_at(r, offset_of!(rprof_cookie_record, cookie)),
                flags,
                dev: u64_at(r, offset_of!(rprof_cookie_record, dev)),
                ino: u64_at(r, offset_of!(rprof_cookie_record, ino)),
                path: c_string(&r[offset_of!(rprof_cookie_record, path)..]),
            }
        }
        RPROF_RECORD_MODULE => {
            need(size_of::<rprof_module>())?;
            let name = offset_of!(rprof_module, name);
            Record::Module {
                cookie: u64_at(r, offset_of!(rprof_module, cookie)),
                flags,
                base: u64_at(r, offset_of!(rprof_module, base)),
                size: u64_at(r, offset_of!(rprof_module, size)),
                name: c_string(&r[name..name + MODULE_NAME_LEN]),
            }
        }
        RPROF_RECORD_RESET => {
            need(size_of::<rprof_reset>())?;
            Record::Reset {
                time_ns: u64_at(r, offset_of!(rprof_reset, time_ns)),
                next_cookie: u64_at(r, offset_of!(rprof_reset, next_cookie)),
                next_stack: u64_at(r, offset_of!(rprof_reset, next_stack)),
            }
        }
        RPROF_RECORD_LOST => {
            need(size_of::<rprof_lost>())?;
            Record::Lost {
                stage: u32_at(r, offset_of!(rprof_lost, stage)),
                cpu: u32_at(r, offset_of!(rprof_lost, cpu)),
                count: u64_at(r, offset_of!(rprof_lost, count)),
            }
        }
        t @ (RPROF_RECORD_START | RPROF_RECORD_STOP) => {
            // A module of the first ABI writes the first published size of
            // the configuration; fields it lacks read as zero.
            let min = offset_of!(rprof_session, config) + RPROF_CONFIG_SIZE_VER0 as usize;
            need(min)?;
            let time_ns = u64_at(r, offset_of!(rprof_session, time_ns));
            let config_bytes = &r[offset_of!(rprof_session, config)..];
            // `need` guarantees the first published size; the fallback is
            // unreachable but keeps this function panic-free by construction.
            let config = decode_config(config_bytes).ok_or(DecodeErrorKind::TooSmallForType {
                record_type,
                size,
                min: min as u32,
            })?;
            if t == RPROF_RECORD_START {
                Record::Start { time_ns, config }
            } else {
                Record::Stop { time_ns, config }
            }
        }
        t @ (RPROF_RECORD_THROTTLE | RPROF_RECORD_UNTHROTTLE) => {
            need(size_of::<rprof_throttle>())?;
            let time_ns = u64_at(r, offset_of!(rprof_throttle, time_ns));
            let cpu = u32_at(r, offset_of!(rprof_throttle, cpu));
            let event = u32_at(r, offset_of!(rprof_throttle, event));
            if t == RPROF_RECORD_THROTTLE {
                Record::Throttle {
                    time_ns,
                    cpu,
                    event,
                }
            } else {
                Record::Unthrottle {
                    time_ns,
                    cpu,
                    event,
                }
            }
        }
        _ => Record::Unknown {
            record_type,
            flags,
            bytes: r[HEADER_SIZE..].to_vec(),
        },
    };
    Ok((record, len))
}

/// Iterator over the records of a byte slice.
///
/// Yields `Ok(record)` for every well-formed record, then `Err` for the
/// first malformed one (if any), after which it yields nothing: once a
/// record's size cannot be trusted the stream has lost its framing.
/// [`Decoder::position`] tells how far it got, so a reader of a stream in
/// chunks can keep an incomplete last record (an error with
/// [`DecodeErrorKind::is_truncation`]) for the next chunk.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Decoder<'a> {
    /// Returns a decoder of the records in `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Decoder {
            bytes,
            pos: 0,
            failed: false,
        }
    }

    /// Offset of the next record to decode: the bytes decoded so far, or
    /// after an error, the offset of the malformed record.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not decoded yet (from [`Decoder::position`] on).
    pub fn remaining(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        match decode_record(&self.bytes[self.pos..]) {
            Ok((record, len)) => {
                self.pos += len;
                Some(Ok(record))
            }
            Err(kind) => {
                self.failed = true;
                Some(Err(DecodeError {
                    offset: self.pos,
                    kind,
                }))
            }
        }
    }
}

/// Decodes every record of `bytes`, or returns the first error.
pub fn decode_all(bytes: &[u8]) -> Result<Vec<Record>, DecodeError> {
    Decoder::new(bytes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{one_of_each, XorShift};

    /// A header with the given type and size, followed by `size - 8` zeros
    /// (or nothing, if `size` < 8).
    fn raw(record_type: u16, size: u32, total: usize) -> Vec<u8> {
        let mut b = vec![0u8; total];
        b[0..2].copy_from_slice(&record_type.to_le_bytes());
        b[4..8].copy_from_slice(&size.to_le_bytes());
        b
    }

    fn stream() -> Vec<u8> {
        let mut b = Vec::new();
        for r in one_of_each() {
            r.encode(&mut b);
        }
        b
    }

    fn expect_err(bytes: &[u8], offset: usize, kind: DecodeErrorKind) {
        let got = Decoder::new(bytes).find_map(Result::err);
        assert_eq!(
            got,
            Some(DecodeError { offset, kind }),
            "expected error {kind} at offset {offset}"
        );
    }

    #[test]
    fn empty_input_has_no_records() {
        assert_eq!(decode_all(&[]), Ok(vec![]));
    }

    #[test]
    fn size_smaller_than_header() {
        for size in 0..8 {
            expect_err(&raw(1, size, 8), 0, DecodeErrorKind::SizeTooSmall { size });
        }
    }

    #[test]
    fn size_not_multiple_of_eight() {
        expect_err(
            &raw(2, 28, 32),
            0,
            DecodeErrorKind::SizeNotAligned { size: 28 },
        );
        expect_err(
            &raw(99, 9, 16),
            0,
            DecodeErrorKind::SizeNotAligned { size: 9 },
        );
    }

    #[test]
    fn size_larger_than_input() {
        expect_err(
            &raw(1, 48, 40),
            0,
            DecodeErrorKind::Truncated {
                size: 48,
                remaining: 40,
            },
        );
        expect_err(
            &raw(1, !7u32, 48),
            0,
            DecodeErrorKind::Truncated {
                size: !7u32,
                remaining: 48,
            },
        );
    }

    #[test]
    fn known_type_smaller_than_its_structure() {
        let cases = [
            (RPROF_RECORD_SAMPLE, 24, 32),
            (RPROF_RECORD_LOST, 16, 24),
            (RPROF_RECORD_TASK, 40, 48),
            (RPROF_RECORD_SWITCH, 8, 16),
            (RPROF_RECORD_COOKIE, 24, 32),
            (RPROF_RECORD_MODULE, 80, 88),
            (RPROF_RECORD_START, 168, 176),
            (RPROF_RECORD_STOP, 8, 176),
            (RPROF_RECORD_THROTTLE, 16, 24),
            (RPROF_RECORD_UNTHROTTLE, 8, 24),
        ];
        for (ty, size, min) in cases {
            let ty = ty as u16;
            expect_err(
                &raw(ty, size, 256),
                0,
                DecodeErrorKind::TooSmallForType {
                    record_type: ty,
                    size,
                    min,
                },
            );
        }
    }

    #[test]
    fn larger_records_are_accepted() {
        // A future, larger sample: 16 extra bytes, not zero, ignored.
        let sample = one_of_each().remove(0);
        let mut b = sample.to_bytes();
        b.extend_from_slice(&[0xee; 16]);
        let size = b.len() as u32;
        b[4..8].copy_from_slice(&size.to_le_bytes());
        let next = Record::Lost {
            stage: 1,
            cpu: 0,
            count: 1,
        };
        next.encode(&mut b);
        assert_eq!(decode_all(&b), Ok(vec![sample, next]));
    }

    #[test]
    fn strings_end_at_their_nul_or_field() {
        // A cookie path without a NUL runs to the record's end; bytes after
        // a NUL are ignored; invalid UTF-8 is replaced.
        let mut b = raw(RPROF_RECORD_COOKIE as u16, 48, 48);
        b[32..48].copy_from_slice(b"/no/nul/at/all/x");
        let mut c = raw(RPROF_RECORD_COOKIE as u16, 48, 48);
        c[32..38].copy_from_slice(b"/a\xffb\0z");
        // A comm of 16 bytes without a NUL, a module name of 56.
        let mut t = raw(RPROF_RECORD_TASK as u16, 48, 48);
        t[32..48].copy_from_slice(b"0123456789abcdef");
        let mut m = raw(RPROF_RECORD_MODULE as u16, 88, 88);
        m[32..88].fill(b'n');
        let mut stream = b;
        stream.extend_from_slice(&c);
        stream.extend_from_slice(&t);
        stream.extend_from_slice(&m);
        let records = decode_all(&stream).unwrap();
        let strings: Vec<String> = records
            .iter()
            .map(|r| match r {
                Record::Cookie { path, .. } => path.clone(),
                Record::Task { comm, .. } => comm.clone(),
                Record::Module { name, .. } => name.clone(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            strings,
            [
                "/no/nul/at/all/x".to_string(),
                "/a\u{fffd}b".to_string(),
                "0123456789abcdef".to_string(),
                "n".repeat(56)
            ]
        );
        // A cookie record of just its fixed part has an empty path.
        assert_eq!(
            decode_all(&raw(RPROF_RECORD_COOKIE as u16, 32, 32)),
            Ok(vec![Record::Cookie {
                cookie: 0,
                flags: 0,
                dev: 0,
                ino: 0,
                path: String::new()
            }])
        );
    }

    #[test]
    fn unknown_type_is_skipped_by_size() {
        let mut b = raw(1000, 16, 16);
        one_of_each()[2].encode(&mut b);
        let records = decode_all(&b);
        assert_eq!(
            records,
            Ok(vec![
                Record::Unknown {
                    record_type: 1000,
                    flags: 0,
                    bytes: vec![0; 8]
                },
                one_of_each()[2].clone()
            ])
        );
    }

    #[test]
    fn truncated_streams() {
        let full = stream();
        let records = one_of_each();
        // Cut the stream at every byte: the records before the cut decode,
        // then comes a truncation error at the start of the cut record.
        let mut boundaries = vec![0];
        for r in &records {
            boundaries.push(boundaries[boundaries.len() - 1] + r.encoded_len());
        }
        for cut in 0..full.len() {
            let whole = boundaries.iter().filter(|&&b| b <= cut).count() - 1;
            let start = boundaries[whole];
            let mut d = Decoder::new(&full[..cut]);
            for (i, expected) in records.iter().take(whole).enumerate() {
                assert_eq!(
                    d.next(),
                    Some(Ok(expected.clone())),
                    "cut {cut}: record {i}"
                );
            }
            if cut == start {
                assert_eq!(d.next(), None, "cut {cut}: expected the end");
                continue;
            }
            match d.next() {
                Some(Err(e)) => {
                    assert_eq!(e.offset, start, "cut {cut}: error offset");
                    assert!(
                        e.kind.is_truncation(),
                        "cut {cut}: expected a truncation, got {e}"
                    );
                }
                other => panic!("cut {cut}: expected a truncation error, got {other:?}"),
            }
            assert_eq!(
                d.next(),
                None,
                "cut {cut}: decoder continued after an error"
            );
            assert_eq!(d.position(), start, "cut {cut}: position");
            assert_eq!(d.remaining(), &full[start..cut]);
        }
    }

    #[test]
    fn error_after_good_records_has_the_right_offset() {
        let mut b = stream();
        let at = b.len();
        b.extend_from_slice(&raw(1, 12, 16));
        let mut d = Decoder::new(&b);
        let n = d.by_ref().take_while(Result::is_ok).count();
        assert_eq!(n, one_of_each().len());
        assert_eq!(d.position(), at);
        expect_err(&b, at, DecodeErrorKind::SizeNotAligned { size: 12 });
    }

    /// Random streams never panic the decoder, and every error names an
    /// offset inside the input at which a record starts.
    #[test]
    fn random_streams_never_panic() {
        let mut rng = XorShift::new(0x5eed_1234_abcd_ef01);
        let valid = stream();
        let (mut records, mut errors) = (0, 0);
        for iteration in 0..20_000 {
            let bytes: Vec<u8> = match rng.below(3) {
                // Pure noise, with sizes often small enough to parse.
                0 => {
                    let len = rng.below(300) as usize;
                    let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    let mut at = 0;
                    while at + 8 <= b.len() {
                        let size = (rng.below(64) as u32) * if rng.below(4) == 0 { 1 } else { 8 };
                        b[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
                        b[at] = rng.below(12) as u8;
                        b[at + 1] = 0;
                        at += size.max(8) as usize;
                    }
                    b
                }
                // A valid stream with a few bytes changed.
                1 => {
                    let mut b = valid.clone();
                    for _ in 0..=rng.below(4) {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] = rng.next() as u8;
                    }
                    b
                }
                // A valid stream cut anywhere, and maybe changed.
                _ => {
                    let cut = rng.below(valid.len() as u64 + 1) as usize;
                    let mut b = valid[..cut].to_vec();
                    if !b.is_empty() && rng.below(2) == 0 {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] ^= 1 << rng.below(8);
                    }
                    b
                }
            };
            let mut d = Decoder::new(&bytes);
            let mut consumed = 0;
            while let Some(item) = d.next() {
                match item {
                    Ok(r) => {
                        records += 1;
                        // A record decoded from a valid frame re-encodes to
                        // at most its frame (larger frames carry extra
                        // bytes), unless a path had invalid UTF-8, whose
                        // replacement characters take more bytes, or it
                        // is a START or STOP of the first ABI, whose
                        // shorter configuration re-encodes at full size.
                        let lossy = matches!(&r, Record::Cookie { path, .. } if path.contains('\u{fffd}'))
                            || matches!(&r, Record::Start { .. } | Record::Stop { .. });
                        assert!(
                            lossy || r.encoded_len() <= bytes.len() - consumed,
                            "iteration {iteration}: record larger than its input"
                        );
                    }
                    Err(e) => {
                        errors += 1;
                        assert!(
                            e.offset < bytes.len(),
                            "iteration {iteration}: error offset {} outside input of {} bytes",
                            e.offset,
                            bytes.len()
                        );
                        assert_eq!(e.offset, consumed, "iteration {iteration}: error offset");
                    }
                }
                consumed = d.position();
            }
            assert!(
                d.position() <= bytes.len(),
                "iteration {iteration}: position"
            );
        }
        // The streams exercise both paths, not just one.
        assert!(records > 20_000, "only {records} records decoded");
        assert!(errors > 5_000, "only {errors} errors seen");
    }
}

//! [`Record`]s to bytes.

use crate::config::encode_config;
use crate::decode::{MODULE_NAME_LEN, TASK_COMM_LEN};
use crate::fields::*;
use crate::record::Record;
use core::mem::{offset_of, size_of};
use rprof_abi::*;

/// `sizeof(struct rprof_record_header)`.
const HEADER_SIZE: usize = size_of::<rprof_record_header>();

/// The fixed part of `struct rprof_cookie_record`, before `path[]`.
const COOKIE_FIXED: usize = offset_of!(rprof_cookie_record, path);

/// Writes `s` at `off` as a NUL-terminated C string in a field of `len`
/// bytes (already zero): at most `len - 1` bytes of it.
fn put_c_string(b: &mut [u8], off: usize, len: usize, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(len - 1)];
    b[off..off + bytes.len()].copy_from_slice(bytes);
}

impl Record {
    /// The size of this record once encoded: the size of its structure, or
    /// for [`Record::Unknown`] the header plus its bytes rounded up to 8.
    pub fn encoded_len(&self) -> usize {
        match self {
            Record::Sample { stack: None, .. } => size_of::<rprof_sample>(),
            Record::Sample { stack: Some(_), .. } => size_of::<rprof_sample_stack>(),
            Record::Stack { frames, .. } => {
                size_of::<rprof_stack>() + frames.len() * size_of::<rprof_frame>()
            }
            Record::Lost { .. } => size_of::<rprof_lost>(),
            Record::Start { .. } | Record::Stop { .. } => size_of::<rprof_session>(),
            Record::Throttle { .. } | Record::Unthrottle { .. } => size_of::<rprof_throttle>(),
            Record::Task { .. } => size_of::<rprof_task>(),
            Record::Switch { .. } => size_of::<rprof_switch>(),
            // The path, its NUL, and padding to a multiple of 8.
            Record::Cookie { path, .. } => COOKIE_FIXED + (path.len() + 1).next_multiple_of(8),
            Record::Module { .. } => size_of::<rprof_module>(),
            Record::Reset { .. } => size_of::<rprof_reset>(),
            Record::Unknown { bytes, .. } => HEADER_SIZE + bytes.len().next_multiple_of(8),
        }
    }

    /// Appends this record to `out` in the layout of the header: the
    /// record's structure with reserved fields zero, little-endian.
    ///
    /// [`Record::Unknown`] bytes are padded with zeros to a multiple of 8, so
    /// decoding gives back an equal record when their length already is one
    /// (as it always is for a decoded record).  Strings are written as C
    /// strings: a TASK's `comm` cut to 15 bytes, a MODULE's `name` to 55, a
    /// COOKIE's `path` whole; each decodes back to an equal string unless it
    /// was cut, has a NUL, or is cut inside a UTF-8 sequence.
    ///
    /// # Panics
    ///
    /// Panics if an unknown record's bytes or a cookie's path do not fit a
    /// `u32` size.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let len = self.encoded_len();
        let start = out.len();
        out.resize(start + len, 0);
        let b = &mut out[start..];
        let flags = match self {
            Record::Sample {
                flags,
                stack: Some(_),
                ..
            } => *flags | RPROF_SAMPLE_STACK as u16,
            Record::Sample {
                flags, stack: None, ..
            } => *flags & !(RPROF_SAMPLE_STACK as u16),
            Record::Stack { flags, .. }
            | Record::Cookie { flags, .. }
            | Record::Module { flags, .. }
            | Record::Unknown { flags, .. } => *flags,
            _ => 0,
        };
        let size = u32::try_from(len).unwrap_or_else(|_| panic!("record of {len} bytes"));
        put_u16(
            b,
            offset_of!(rprof_record_header, type_),
            self.record_type(),
        );
        put_u16(b, offset_of!(rprof_record_header, flags), flags);
        put_u32(b, offset_of!(rprof_record_header, size), size);
        match self {
            Record::Sample {
                flags: _,
                time_ns,
                offset,
                period,
                stack,
            } => {
                put_u64(b, offset_of!(rprof_sample, time_ns), *time_ns);
                put_u64(b, offset_of!(rprof_sample, offset), *offset);
                put_u64(b, offset_of!(rprof_sample, period), *period);
                if let Some(id) = stack {
                    put_u64(b, offset_of!(rprof_sample_stack, stack), *id);
                }
            }
            Record::Stack {
                id,
                flags: _,
                nr_kernel,
                frames,
            } => {
                let nr_user = frames.len().saturating_sub(usize::from(*nr_kernel));
                put_u64(b, offset_of!(rprof_stack, id), *id);
                put_u16(b, offset_of!(rprof_stack, nr_kernel), *nr_kernel);
                put_u16(b, offset_of!(rprof_stack, nr_user), nr_user as u16);
                let mut at = size_of::<rprof_stack>();
                for (cookie, offset) in frames {
                    put_u64(b, at, *cookie);
                    put_u64(b, at + 8, *offset);
                    at += size_of::<rprof_frame>();
                }
            }
            Record::Task {
                cpu,
                pid,
                tid,
                exe_cookie,
                comm,
            } => {
                put_u32(b, offset_of!(rprof_task, cpu), *cpu);
                put_u32(b, offset_of!(rprof_task, pid), *pid);
                put_u32(b, offset_of!(rprof_task, tid), *tid);
                put_u64(b, offset_of!(rprof_task, exe_cookie), *exe_cookie);
                put_c_string(b, offset_of!(rprof_task, comm), TASK_COMM_LEN, comm);
            }
            Record::Switch { cookie } => {
                put_u64(b, offset_of!(rprof_switch, cookie), *cookie);
            }
            Record::Cookie {
                cookie,
                flags: _,
                dev,
                ino,
                path,
            } => {
                put_u64(b, offset_of!(rprof_cookie_record, cookie), *cookie);
                put_u64(b, offset_of!(rprof_cookie_record, dev), *dev);
                put_u64(b, offset_of!(rprof_cookie_record, ino), *ino);
                put_c_string(b, COOKIE_FIXED, len - COOKIE_FIXED, path);
            }
            Record::Module {
                cookie,
                flags: _,
                base,
                size,
                name,
            } => {
                put_u64(b, offset_of!(rprof_module, cookie), *cookie);
                put_u64(b, offset_of!(rprof_module, base), *base);
                put_u64(b, offset_of!(rprof_module, size), *size);
                put_c_string(b, offset_of!(rprof_module, name), MODULE_NAME_LEN, name);
            }
            Record::Lost { stage, cpu, count } => {
                put_u32(b, offset_of!(rprof_lost, stage), *stage);
                put_u32(b, offset_of!(rprof_lost, cpu), *cpu);
                put_u64(b, offset_of!(rprof_lost, count), *count);
            }
            Record::Start { time_ns, config } | Record::Stop { time_ns, config } => {
                put_u64(b, offset_of!(rprof_session, time_ns), *time_ns);
                let mut c = Vec::with_capacity(size_of::<rprof_config>());
                encode_config(config, &mut c);
                let at = offset_of!(rprof_session, config);
                b[at..at + c.len()].copy_from_slice(&c);
            }
            Record::Throttle {
                time_ns,
                cpu,
                event,
            }
            | Record::Unthrottle {
                time_ns,
                cpu,
                event,
            } => {
                put_u64(b, offset_of!(rprof_throttle, time_ns), *time_ns);
                put_u32(b, offset_of!(rprof_throttle, cpu), *cpu);
                put_u32(b, offset_of!(rprof_throttle, event), *event);
            }
            Record::Reset {
                time_ns,
                next_cookie,
                next_stack,
            } => {
                put_u64(b, offset_of!(rprof_reset, time_ns), *time_ns);
                put_u64(b, offset_of!(rprof_reset, next_cookie), *next_cookie);
                put_u64(b, offset_of!(rprof_reset, next_stack), *next_stack);
            }
            Record::Unknown { bytes, .. } => {
                b[HEADER_SIZE..HEADER_SIZE + bytes.len()].copy_from_slice(bytes);
            }
        }
    }

    /// This record encoded, as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{one_of_each, random_record, XorShift};
    use crate::{decode_all, decode_record};

    #[test]
    fn round_trip_every_type() {
        for record in one_of_each() {
            let bytes = record.to_bytes();
            assert_eq!(bytes.len(), record.encoded_len(), "{record:?}: length");
            assert_eq!(bytes.len() % 8, 0, "{record:?}: length not a multiple of 8");
            match decode_record(&bytes) {
                Ok((decoded, len)) => {
                    assert_eq!(decoded, record, "decoded record differs");
                    assert_eq!(len, bytes.len(), "{record:?}: consumed length");
                }
                Err(e) => panic!("{record:?}: expected a round trip, got error {e}"),
            }
        }
    }

    #[test]
    fn round_trip_stream() {
        let records = one_of_each();
        let mut bytes = Vec::new();
        for r in &records {
            r.encode(&mut bytes);
        }
        assert_eq!(decode_all(&bytes), Ok(records));
    }

    #[test]
    fn header_and_sizes_match_the_abi() {
        let expected = [
            (RPROF_RECORD_SAMPLE, 32),
            (RPROF_RECORD_SAMPLE, 32),
            (RPROF_RECORD_LOST, 24),
            (RPROF_RECORD_LOST, 24),
            (RPROF_RECORD_LOST, 24),
            (RPROF_RECORD_START, 184),
            (RPROF_RECORD_STOP, 184),
            (RPROF_RECORD_THROTTLE, 24),
            (RPROF_RECORD_UNTHROTTLE, 24),
            // 32 + "/bin/busybox\0" (13) padded to 16.
            (RPROF_RECORD_COOKIE, 48),
            // 32 + "/x\0" padded to 8.
            (RPROF_RECORD_COOKIE, 40),
            // 32 + "" + NUL padded to 8.
            (RPROF_RECORD_COOKIE, 40),
            (RPROF_RECORD_TASK, 48),
            (RPROF_RECORD_SWITCH, 16),
            (RPROF_RECORD_MODULE, 88),
            (RPROF_RECORD_MODULE, 88),
            (RPROF_RECORD_RESET, 32),
            (0x7777, 32),
            (0, 8),
        ];
        let records = one_of_each();
        assert_eq!(records.len(), expected.len());
        for (record, (ty, size)) in records.iter().zip(expected) {
            let b = record.to_bytes();
            assert_eq!(
                u16::from_le_bytes([b[0], b[1]]),
                ty as u16,
                "{record:?}: type"
            );
            assert_eq!(
                u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                size,
                "{record:?}: size"
            );
        }
    }

    #[test]
    fn sample_layout() {
        let b = one_of_each()[0].to_bytes();
        // flags at 2 (user, event 1), time_ns at 8, offset at 16, period at 24.
        assert_eq!(b[2..4], 0x101u16.to_le_bytes());
        assert_eq!(b[8..16], 0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(b[16..24], 0x1234u64.to_le_bytes());
        assert_eq!(b[24..32], 1_000_000u64.to_le_bytes());
    }

    #[test]
    fn context_record_layouts() {
        let task = Record::Task {
            cpu: 3,
            pid: 100,
            tid: 101,
            exe_cookie: 17,
            comm: "attr_main".into(),
        };
        let b = task.to_bytes();
        assert_eq!(b[8..12], 3u32.to_le_bytes());
        assert_eq!(b[12..16], 100u32.to_le_bytes());
        assert_eq!(b[16..20], 101u32.to_le_bytes());
        assert_eq!(b[20..24], [0; 4], "reserved");
        assert_eq!(b[24..32], 17u64.to_le_bytes());
        assert_eq!(&b[32..48], b"attr_main\0\0\0\0\0\0\0");

        let b = Record::Switch { cookie: 0x1234 }.to_bytes();
        assert_eq!(b[8..16], 0x1234u64.to_le_bytes());

        let cookie = Record::Cookie {
            cookie: 17,
            flags: RPROF_COOKIE_DELETED as u16,
            dev: 0x801,
            ino: 4242,
            path: "/tests/bin/short".into(),
        };
        let b = cookie.to_bytes();
        // 16 bytes of path need a 17th for the NUL: 24 with padding.
        assert_eq!(b.len(), 32 + 24);
        assert_eq!(b[2..4], 1u16.to_le_bytes());
        assert_eq!(b[8..16], 17u64.to_le_bytes());
        assert_eq!(b[16..24], 0x801u64.to_le_bytes());
        assert_eq!(b[24..32], 4242u64.to_le_bytes());
        assert_eq!(&b[32..48], b"/tests/bin/short");
        assert_eq!(b[48..], [0; 8]);

        let module = Record::Module {
            cookie: 18,
            flags: RPROF_MODULE_UNLOAD as u16,
            base: 0xffff_ffff_c000_0000,
            size: 4096,
            name: "rprof_busy".into(),
        };
        let b = module.to_bytes();
        assert_eq!(b[2..4], 1u16.to_le_bytes());
        assert_eq!(b[8..16], 18u64.to_le_bytes());
        assert_eq!(b[16..24], 0xffff_ffff_c000_0000u64.to_le_bytes());
        assert_eq!(b[24..32], 4096u64.to_le_bytes());
        assert_eq!(&b[32..43], b"rprof_busy\0");
        assert!(module.is_module_unload());
        assert!(!module.is_module_init());
        let init = Record::Module {
            cookie: 19,
            flags: (RPROF_MODULE_INIT | RPROF_MODULE_UNLOAD) as u16,
            base: 0,
            size: 1,
            name: "rprof_busy".into(),
        };
        assert!(init.is_module_init() && init.is_module_unload());
        assert!(!cookie.is_module_init() && !cookie.is_module_unload());
    }

    #[test]
    fn long_strings_are_cut_to_their_fields() {
        let task = Record::Task {
            cpu: 0,
            pid: 1,
            tid: 1,
            exe_cookie: 0,
            comm: "a-very-long-command-name".into(),
        };
        match decode_record(&task.to_bytes()) {
            Ok((Record::Task { comm, .. }, 48)) => assert_eq!(comm, "a-very-long-com"),
            other => panic!("expected a TASK, got {other:?}"),
        }
        let long = "m".repeat(100);
        let module = Record::Module {
            cookie: 20,
            flags: 0,
            base: 0,
            size: 0,
            name: long.clone(),
        };
        match decode_record(&module.to_bytes()) {
            Ok((Record::Module { name, .. }, 88)) => assert_eq!(name, long[..55]),
            other => panic!("expected a MODULE, got {other:?}"),
        }
        // A path has no limit but the record size.
        let path = format!("/{}", "p".repeat(5000));
        let cookie = Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: 0,
            ino: 0,
            path: path.clone(),
        };
        assert_eq!(decode_all(&cookie.to_bytes()), Ok(vec![cookie]));
    }

    /// Random records of every type survive encode and decode unchanged.
    #[test]
    fn random_records_round_trip() {
        let mut rng = XorShift::new(0x0dd_ba11_cafe);
        let mut stream = Vec::new();
        let mut records = Vec::new();
        for i in 0..20_000 {
            let r = random_record(&mut rng);
            let b = r.to_bytes();
            assert_eq!(b.len(), r.encoded_len(), "{i}: {r:?}");
            assert_eq!(b.len() % 8, 0, "{i}: {r:?}");
            match decode_record(&b) {
                Ok((d, len)) => {
                    assert_eq!(d, r, "record {i}");
                    assert_eq!(len, b.len(), "record {i}");
                }
                Err(e) => panic!("record {i} {r:?}: {e}"),
            }
            stream.extend_from_slice(&b);
            records.push(r);
        }
        assert_eq!(decode_all(&stream), Ok(records));
    }

    #[test]
    fn unknown_bytes_are_padded() {
        let r = Record::Unknown {
            record_type: 9,
            flags: 0,
            bytes: vec![1, 2, 3],
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(b[8..], [1, 2, 3, 0, 0, 0, 0, 0]);
    }
}

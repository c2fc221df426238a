//! [`Record`]s to bytes.

use crate::config::encode_config;
use crate::fields::*;
use crate::record::Record;
use core::mem::{offset_of, size_of};
use rprof_abi::*;

/// `sizeof(struct rprof_record_header)`.
const HEADER_SIZE: usize = size_of::<rprof_record_header>();

impl Record {
    /// The size of this record once encoded: the size of its structure, or
    /// for [`Record::Unknown`] the header plus its bytes rounded up to 8.
    pub fn encoded_len(&self) -> usize {
        match self {
            Record::Sample { .. } => size_of::<rprof_sample>(),
            Record::Lost { .. } => size_of::<rprof_lost>(),
            Record::Start { .. } | Record::Stop { .. } => size_of::<rprof_session>(),
            Record::Throttle { .. } | Record::Unthrottle { .. } => size_of::<rprof_throttle>(),
            Record::Unknown { bytes, .. } => HEADER_SIZE + bytes.len().next_multiple_of(8),
        }
    }

    /// Appends this record to `out` in the layout of the header: the
    /// record's structure with reserved fields zero, little-endian.
    ///
    /// [`Record::Unknown`] bytes are padded with zeros to a multiple of 8, so
    /// decoding gives back an equal record when their length already is one
    /// (as it always is for a decoded record).
    ///
    /// # Panics
    ///
    /// Panics if an unknown record's bytes do not fit a `u32` size.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let len = self.encoded_len();
        let start = out.len();
        out.resize(start + len, 0);
        let b = &mut out[start..];
        let flags = match self {
            Record::Sample { flags, .. } | Record::Unknown { flags, .. } => *flags,
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
                ip,
                pid,
                tid,
                cpu,
                event,
                period,
            } => {
                put_u64(b, offset_of!(rprof_sample, time_ns), *time_ns);
                put_u64(b, offset_of!(rprof_sample, ip), *ip);
                put_u32(b, offset_of!(rprof_sample, pid), *pid);
                put_u32(b, offset_of!(rprof_sample, tid), *tid);
                put_u32(b, offset_of!(rprof_sample, cpu), *cpu);
                put_u16(b, offset_of!(rprof_sample, event), *event);
                put_u64(b, offset_of!(rprof_sample, period), *period);
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
    use crate::testutil::one_of_each;
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
            (RPROF_RECORD_SAMPLE, 48),
            (RPROF_RECORD_SAMPLE, 48),
            (RPROF_RECORD_LOST, 24),
            (RPROF_RECORD_LOST, 24),
            (RPROF_RECORD_START, 176),
            (RPROF_RECORD_STOP, 176),
            (RPROF_RECORD_THROTTLE, 24),
            (RPROF_RECORD_UNTHROTTLE, 24),
            (0x7777, 32),
            (0, 8),
        ];
        for (record, (ty, size)) in one_of_each().iter().zip(expected) {
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
        // flags at 2, time_ns at 8, ip at 16, pid/tid/cpu at 24/28/32,
        // event at 36, reserved at 38, period at 40.
        assert_eq!(b[2..4], 1u16.to_le_bytes());
        assert_eq!(b[8..16], 0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(b[24..28], 100u32.to_le_bytes());
        assert_eq!(b[32..36], 1u32.to_le_bytes());
        assert_eq!(b[36..38], 1u16.to_le_bytes());
        assert_eq!(b[38..40], [0, 0]);
        assert_eq!(b[40..48], 1_000_000u64.to_le_bytes());
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

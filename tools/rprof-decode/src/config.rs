//! `struct rprof_config` to and from bytes.
//!
//! The configuration travels inside the START and STOP records, and tools
//! that test the kernel's size handling build raw configurations as bytes.

use crate::fields::*;
use core::mem::{offset_of, size_of};
use rprof_abi::{rprof_config, rprof_event_config};

/// `sizeof(struct rprof_config)`.
const CONFIG_SIZE: usize = size_of::<rprof_config>();
/// `sizeof(struct rprof_event_config)`.
const EVENT_SIZE: usize = size_of::<rprof_event_config>();

/// Offset of `events[i].kind`, `.flags` and `.period` in a configuration.
fn event_offsets(i: usize) -> (usize, usize, usize) {
    let base = offset_of!(rprof_config, events) + i * EVENT_SIZE;
    (
        base + offset_of!(rprof_event_config, kind),
        base + offset_of!(rprof_event_config, flags),
        base + offset_of!(rprof_event_config, period),
    )
}

/// Appends `config` to `out` in the layout of `struct rprof_config`
/// (`sizeof(struct rprof_config)` bytes, little-endian), `size` field as is.
pub fn encode_config(config: &rprof_config, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + CONFIG_SIZE, 0);
    let b = &mut out[start..];
    put_u32(b, offset_of!(rprof_config, size), config.size);
    put_u32(b, offset_of!(rprof_config, flags), config.flags);
    put_u32(b, offset_of!(rprof_config, nr_events), config.nr_events);
    put_i32(b, offset_of!(rprof_config, pid), config.pid);
    put_u32(
        b,
        offset_of!(rprof_config, ring_records),
        config.ring_records,
    );
    put_u32(
        b,
        offset_of!(rprof_config, drain_interval_ms),
        config.drain_interval_ms,
    );
    put_u32(
        b,
        offset_of!(rprof_config, wakeup_bytes),
        config.wakeup_bytes,
    );
    put_u32(
        b,
        offset_of!(rprof_config, buffer_pages),
        config.buffer_pages,
    );
    put_u16(
        b,
        offset_of!(rprof_config, max_kernel_frames),
        config.max_kernel_frames,
    );
    put_u16(
        b,
        offset_of!(rprof_config, max_user_frames),
        config.max_user_frames,
    );
    put_u32(b, offset_of!(rprof_config, reserved1), config.reserved1);
    for (i, e) in config.events.iter().enumerate() {
        let (kind, flags, period) = event_offsets(i);
        put_u32(b, kind, e.kind);
        put_u32(b, flags, e.flags);
        put_u64(b, period, e.period);
    }
}

/// Reads a `struct rprof_config` from the start of `b`; `None` if `b` is
/// shorter than the first published size (`RPROF_CONFIG_SIZE_VER0`).
/// Fields a shorter (older) structure lacks read as zero, as the kernel
/// reads them; bytes after the structure are ignored.
pub fn decode_config(b: &[u8]) -> Option<rprof_config> {
    if b.len() < rprof_abi::RPROF_CONFIG_SIZE_VER0 as usize {
        return None;
    }
    let mut full = [0u8; CONFIG_SIZE];
    let n = b.len().min(CONFIG_SIZE);
    full[..n].copy_from_slice(&b[..n]);
    let b = &full[..];
    let mut c = rprof_config {
        size: u32_at(b, offset_of!(rprof_config, size)),
        flags: u32_at(b, offset_of!(rprof_config, flags)),
        nr_events: u32_at(b, offset_of!(rprof_config, nr_events)),
        pid: i32_at(b, offset_of!(rprof_config, pid)),
        ring_records: u32_at(b, offset_of!(rprof_config, ring_records)),
        drain_interval_ms: u32_at(b, offset_of!(rprof_config, drain_interval_ms)),
        wakeup_bytes: u32_at(b, offset_of!(rprof_config, wakeup_bytes)),
        buffer_pages: u32_at(b, offset_of!(rprof_config, buffer_pages)),
        max_kernel_frames: u16_at(b, offset_of!(rprof_config, max_kernel_frames)),
        max_user_frames: u16_at(b, offset_of!(rprof_config, max_user_frames)),
        reserved1: u32_at(b, offset_of!(rprof_config, reserved1)),
        ..Default::default()
    };
    for (i, e) in c.events.iter_mut().enumerate() {
        let (kind, flags, period) = event_offsets(i);
        e.kind = u32_at(b, kind);
        e.flags = u32_at(b, flags);
        e.period = u64_at(b, period);
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_abi::*;

    fn sample_config() -> rprof_config {
        let mut c = rprof_config::new();
        c.flags = RPROF_CONFIG_PID_FILTER | RPROF_CONFIG_EXCLUDE_KERNEL;
        c.nr_events = 2;
        c.pid = -7;
        c.ring_records = 1024;
        c.drain_interval_ms = 5;
        c.wakeup_bytes = 4096;
        c.max_kernel_frames = 3;
        c.max_user_frames = 127;
        c.events[0] = rprof_event_config {
            kind: RPROF_EVENT_CPU_CLOCK,
            flags: RPROF_EVENT_FREQ,
            period: 1000,
        };
        c.events[1] = rprof_event_config {
            kind: RPROF_EVENT_CYCLES,
            flags: 0,
            period: u64::MAX - 1,
        };
        c.events[7].period = 77;
        c
    }

    #[test]
    fn first_published_size_reads_with_zero_chain_fields() {
        let mut c = sample_config();
        c.max_kernel_frames = 0;
        c.max_user_frames = 0;
        let mut b = Vec::new();
        encode_config(&c, &mut b);
        b.truncate(RPROF_CONFIG_SIZE_VER0 as usize);
        assert_eq!(decode_config(&b), Some(c));
        b.pop();
        assert_eq!(decode_config(&b), None);
    }

    #[test]
    fn round_trip() {
        let c = sample_config();
        let mut b = Vec::new();
        encode_config(&c, &mut b);
        assert_eq!(b.len(), RPROF_CONFIG_SIZE_VER1 as usize);
        assert_eq!(decode_config(&b), Some(c));
    }

    #[test]
    fn layout_matches_header() {
        let mut b = Vec::new();
        encode_config(&sample_config(), &mut b);
        // size, flags, nr_events, pid at 0, 4, 8, 12; events[] at 32.
        assert_eq!(b[0..4], 168u32.to_le_bytes());
        assert_eq!(b[160..162], 3u16.to_le_bytes());
        assert_eq!(b[162..164], 127u16.to_le_bytes());
        assert_eq!(b[8..12], 2u32.to_le_bytes());
        assert_eq!(b[12..16], (-7i32).to_le_bytes());
        assert_eq!(b[32..36], RPROF_EVENT_CPU_CLOCK.to_le_bytes());
        assert_eq!(b[40..48], 1000u64.to_le_bytes());
        assert_eq!(b[152..160], 77u64.to_le_bytes());
    }

    #[test]
    fn short_input() {
        assert_eq!(decode_config(&[0u8; 159]), None);
        assert_eq!(decode_config(&[]), None);
    }
}

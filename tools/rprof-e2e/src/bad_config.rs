//! `bad-config KIND`: SET_CONFIG with a configuration that is wrong in one
//! way, which the module must refuse with the right errno (or, for
//! `big-zero`, accept); then a good session must still work on the file.
//!
//! The configuration is sent as raw bytes, so that it can be larger than
//! `struct rprof_config`, with the request number a newer header would
//! give (its `_IOC_SIZE` is the larger size); the module reads
//! `config.size` bytes from the structure itself (as perf_event_open does
//! with perf_event_attr.size).

use crate::checks::{expect_errno, good_config, open, run_session, Outcome};
use rprof::errno::errno_name;
use rprof::Device;
use rprof_abi::*;
use std::io;

/// What is wrong with the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `size` = 7, smaller than any published size: EINVAL or E2BIG.
    WrongSize,
    /// `size` = sizeof + 8 with nonzero trailing bytes: E2BIG.
    BigNonzero,
    /// `size` = sizeof + 8 with zero trailing bytes: accepted, and the
    /// session starts and stops.
    BigZero,
    /// An unknown bit in `flags`: EINVAL.
    ReservedBits,
    /// An unknown bit in `events[0].flags`: EINVAL.
    EventReservedBits,
    /// `buffer_pages` = 3, not a power of two: EINVAL.
    BufferNotPow2,
    /// `buffer_pages` = 8192, above 16 times the module's (loaded with
    /// its default, 256; the buffer is not charged to a cgroup, so the
    /// administrator's parameter bounds it): EINVAL.
    BufferTooBig,
    /// `wakeup_bytes` = 8192 with a one-page buffer (less than the
    /// module's default buffer): EINVAL.
    WakeupAboveBuffer,
    /// `events[0].period` = 0: EINVAL.
    ZeroPeriod,
    /// `events[0].kind` = 99: EINVAL.
    UnknownEvent,
    /// `nr_events` = 0: EINVAL.
    NoEvents,
    /// `nr_events` = 9 (RPROF_MAX_EVENTS + 1): EINVAL.
    TooManyEvents,
    /// `ring_records` = 1000, not a power of two: EINVAL.
    BadRing,
    /// A period with bit 63 set (negative to perf): EINVAL, as
    /// perf_event_open refuses it.
    NegativePeriod,
    /// A frequency of 100001 Hz, above the 100 kHz limit: EINVAL.
    FreqTooHigh,
    /// `events[1]` set while `nr_events` = 1: EINVAL.
    UnusedSlotSet,
    /// The pid filter flag without a pid: EINVAL.
    PidFilterNoPid,
    /// A pid without the pid filter flag: EINVAL.
    PidWithoutFilter,
    /// Descendants without the pid filter flag: EINVAL.
    DescendantsWithoutFilter,
    /// Excluding both user and kernel: EINVAL.
    ExcludeBoth,
    /// `drain_interval_ms` = 1001: EINVAL.
    DrainTooLong,
    /// `wakeup_bytes` larger than the event buffer: EINVAL.
    WakeupTooBig,
    /// Call chains with both depths 0: EINVAL.
    ChainNoDepth,
    /// A chain depth of 128, above RPROF_MAX_FRAMES: EINVAL.
    ChainTooDeep,
    /// A depth without RPROF_CONFIG_CALLCHAIN: EINVAL.
    DepthWithoutChain,
    /// `reserved1` = 1: EINVAL.
    Reserved1,
    /// The first published size (160 bytes, before the chain fields):
    /// accepted, and the session starts and stops.
    FirstSize,
    /// Call chains, 4 kernel and 16 user frames: accepted, and the session
    /// starts and stops.
    ChainGood,
    /// `buffer_pages` = 2 (8 KiB): accepted, the mapped data area is that
    /// size, and the session starts and stops.
    BufferGood,
}

impl Kind {
    /// The name on the command line.
    fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_else(|| format!("{self:?}"))
    }

    /// The configuration bytes to send and the errnos expected (empty:
    /// success expected).
    fn config_bytes(self) -> (Vec<u8>, &'static [i32]) {
        let mut c = good_config();
        let mut extra: &[u8] = &[];
        let expected: &'static [i32] = match self {
            Kind::WrongSize => {
                c.size = 7;
                &[libc::EINVAL, libc::E2BIG]
            }
            Kind::BigNonzero => {
                c.size = RPROF_CONFIG_SIZE + 8;
                extra = &[0, 0, 0, 1, 0, 0, 0, 0];
                &[libc::E2BIG]
            }
            Kind::BigZero => {
                c.size = RPROF_CONFIG_SIZE + 8;
                extra = &[0; 8];
                &[]
            }
            Kind::ReservedBits => {
                c.flags |= 1 << 31;
                &[libc::EINVAL]
            }
            Kind::EventReservedBits => {
                c.events[0].flags |= 1 << 31;
                &[libc::EINVAL]
            }
            Kind::BufferNotPow2 => {
                c.buffer_pages = 3;
                &[libc::EINVAL]
            }
            Kind::BufferTooBig => {
                c.buffer_pages = 8192;
                &[libc::EINVAL]
            }
            Kind::WakeupAboveBuffer => {
                c.buffer_pages = 1;
                c.wakeup_bytes = 8192;
                &[libc::EINVAL]
            }
            Kind::ZeroPeriod => {
                c.events[0].period = 0;
                &[libc::EINVAL]
            }
            Kind::UnknownEvent => {
                c.events[0].kind = 99;
                &[libc::EINVAL]
            }
            Kind::NoEvents => {
                c.nr_events = 0;
                &[libc::EINVAL]
            }
            Kind::TooManyEvents => {
                c.nr_events = RPROF_MAX_EVENTS + 1;
                &[libc::EINVAL]
            }
            Kind::BadRing => {
                c.ring_records = 1000;
                &[libc::EINVAL]
            }
            Kind::NegativePeriod => {
                c.events[0].flags &= !RPROF_EVENT_FREQ;
                c.events[0].period = 1 << 63 | 1_000_000;
                &[libc::EINVAL]
            }
            Kind::FreqTooHigh => {
                c.events[0].flags |= RPROF_EVENT_FREQ;
                c.events[0].period = 100_001;
                &[libc::EINVAL]
            }
            Kind::UnusedSlotSet => {
                c.nr_events = 1;
                c.events[1] = c.events[0];
                &[libc::EINVAL]
            }
            Kind::PidFilterNoPid => {
                c.flags |= RPROF_CONFIG_PID_FILTER;
                c.pid = 0;
                &[libc::EINVAL]
            }
            Kind::PidWithoutFilter => {
                c.flags &= !RPROF_CONFIG_PID_FILTER;
                c.pid = 1;
                &[libc::EINVAL]
            }
            Kind::DescendantsWithoutFilter => {
                c.flags |= RPROF_CONFIG_PID_DESCENDANTS;
                c.flags &= !RPROF_CONFIG_PID_FILTER;
                &[libc::EINVAL]
            }
            Kind::ExcludeBoth => {
                c.flags |= RPROF_CONFIG_EXCLUDE_USER | RPROF_CONFIG_EXCLUDE_KERNEL;
                &[libc::EINVAL]
            }
            Kind::DrainTooLong => {
                c.drain_interval_ms = 1001;
                &[libc::EINVAL]
            }
            Kind::WakeupTooBig => {
                // Larger than any buffer the module accepts (2^16 pages).
                c.wakeup_bytes = u32::MAX;
                &[libc::EINVAL]
            }
            Kind::ChainNoDepth => {
                c.flags |= RPROF_CONFIG_CALLCHAIN;
                &[libc::EINVAL]
            }
            Kind::ChainTooDeep => {
                c.flags |= RPROF_CONFIG_CALLCHAIN;
                c.max_kernel_frames = 1;
                c.max_user_frames = RPROF_MAX_FRAMES as u16 + 1;
                &[libc::EINVAL]
            }
            Kind::DepthWithoutChain => {
                c.max_user_frames = 8;
                &[libc::EINVAL]
            }
            Kind::Reserved1 => {
                c.reserved1 = 1;
                &[libc::EINVAL]
            }
            Kind::FirstSize => {
                c.size = RPROF_CONFIG_SIZE_VER0;
                &[]
            }
            Kind::ChainGood => {
                c.flags |= RPROF_CONFIG_CALLCHAIN;
                c.max_kernel_frames = 4;
                c.max_user_frames = 16;
                &[]
            }
            Kind::BufferGood => {
                c.buffer_pages = 2;
                &[]
            }
        };
        let mut bytes = Vec::new();
        rprof_decode::encode_config(&c, &mut bytes);
        if self == Kind::FirstSize {
            bytes.truncate(RPROF_CONFIG_SIZE_VER0 as usize);
        }
        bytes.extend_from_slice(extra);
        (bytes, expected)
    }
}

/// RPROF_IOC_SET_CONFIG with `bytes` as the configuration.
fn set_config_bytes(dev: &Device, bytes: &[u8]) -> io::Result<i32> {
    // The module reads `size` bytes (the first u32) or at least the
    // request's size: give it a buffer with both, zero-padded, 8-aligned.
    let size = bytes
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .unwrap_or(0);
    let len = bytes.len().max(size).max(RPROF_CONFIG_SIZE as usize);
    let mut buf = vec![0u64; len.div_ceil(8)];
    for (i, b) in bytes.iter().enumerate() {
        buf[i / 8] |= u64::from(*b) << (8 * (i % 8));
    }
    // A caller built against a header with a larger structure uses a
    // request number whose _IOC_SIZE says so (14 bits).
    let req = if size > RPROF_CONFIG_SIZE as usize {
        const MASK: u32 = (1 << 14) - 1;
        (RPROF_IOC_SET_CONFIG & !(MASK << 16)) | ((size as u32).min(MASK) << 16)
    } else {
        RPROF_IOC_SET_CONFIG
    };
    // SAFETY: SET_CONFIG reads at most max(config.size, the request's
    // size) bytes at its argument, and `buf` holds at least that many; it
    // writes nothing.
    unsafe { dev.ioctl_raw(req, buf.as_mut_ptr().cast()) }
}

/// The page size.
fn page_size() -> usize {
    // SAFETY: sysconf() has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// Runs `bad-config KIND`.
pub fn run(kind: Kind) -> Outcome {
    let name = kind.name();
    let dev = open()?;
    let (bytes, expected) = kind.config_bytes();
    let result = set_config_bytes(&dev, &bytes);
    let what = if expected.is_empty() {
        match result {
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "bad-config {name}: expected SET_CONFIG to accept it, got {}",
                    e.raw_os_error().map_or_else(|| e.to_string(), errno_name)
                ))
            }
        }
        if kind == Kind::BufferGood {
            // The session's buffer, not the module's, is what a reader maps.
            let reader = rprof::mmap::MmapReader::new(&dev)
                .map_err(|e| format!("bad-config {name}: accepted, but mmap failed: {e}"))?;
            let want = 2 * page_size();
            if reader.data_size() != want {
                return Err(format!(
                    "bad-config {name}: the data area is {} bytes, not {want}",
                    reader.data_size()
                ));
            }
        }
        // The accepted configuration must work.
        dev.start()
            .map_err(|e| format!("bad-config {name}: accepted, but START failed: {e}"))?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        dev.stop()
            .map_err(|e| format!("bad-config {name}: accepted, but STOP failed: {e}"))?;
        "accepted; START and STOP worked".to_string()
    } else {
        let errno = expect_errno(&format!("bad-config {name}"), result, expected)?;
        format!("rejected with {}", errno_name(errno))
    };
    run_session(&dev, &good_config())
        .map_err(|e| format!("bad-config {name}: {what}, but then {e}"))?;
    Ok(format!(
        "bad-config {name}: {what}; the device is still usable"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn bytes_per_kind() {
        for kind in Kind::value_variants() {
            let (bytes, expected) = kind.config_bytes();
            let size = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let decoded = rprof_decode::decode_config(&bytes).unwrap();
            match kind {
                Kind::WrongSize => assert_eq!(size, 7),
                Kind::BigNonzero | Kind::BigZero => {
                    assert_eq!(size, 176);
                    assert_eq!(bytes.len(), 176);
                    assert_eq!(bytes[171] != 0, *kind == Kind::BigNonzero);
                }
                Kind::TooManyEvents => assert_eq!(decoded.nr_events, 9),
                Kind::BadRing => assert_eq!(decoded.ring_records, 1000),
                Kind::BufferNotPow2 => assert_eq!(decoded.buffer_pages, 3),
                Kind::BufferGood => assert_eq!(decoded.buffer_pages, 2),
                Kind::FirstSize => {
                    assert_eq!(size, 160);
                    assert_eq!(bytes.len(), 160);
                }
                _ => assert_eq!(size, 168),
            }
            assert_eq!(
                expected.is_empty(),
                matches!(
                    kind,
                    Kind::BigZero | Kind::FirstSize | Kind::ChainGood | Kind::BufferGood
                ),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn names_are_the_cli_names() {
        assert_eq!(Kind::WrongSize.name(), "wrong-size");
        assert_eq!(Kind::TooManyEvents.name(), "too-many-events");
    }
}

// SPDX-License-Identifier: GPL-2.0

//! `RPROF_IOC_SET_CONFIG`: reading and checking a session configuration.
//!
//! The structure carries its own size, as `perf_event_attr` does: a caller
//! built against an older header passes a smaller size and gets zeros for
//! the fields it does not know; a newer one passes a larger size, accepted
//! only when every byte this module does not know is zero (`E2BIG`
//! otherwise).  Every error has one errno and one reason in dmesg at debug
//! level, and changes nothing.

use crate::kapi::helpers;
use crate::device::params::{buffer_pages_valid, ring_records_valid, Params};
use crate::kapi::sized;
use crate::uapi::*;
use core::mem::size_of;
use kernel::bindings;
use kernel::prelude::*;

/// The fastest frequency an event may ask for, in Hz.
pub(crate) const FREQ_MAX: u64 = 100_000;
/// Default and bounds of the periodic drain, in milliseconds.
const DRAIN_MS_DEFAULT: u32 = 50;
const DRAIN_MS_MAX: u32 = 1000;

/// A checked configuration, with defaults filled in.
///
/// # Invariants
///
/// `raw` passed [`Config::check`]: 1..=`RPROF_MAX_EVENTS` events of known
/// kinds with non-zero periods, no reserved bits or fields set.
/// `ring_records` is a valid ring size; `buffer_pages` a valid event
/// buffer size (a power of two up to `BUFFER_PAGES_MAX`); `drain_ms` is
/// in 1..=1000; `wakeup_bytes` is in 1..=the event buffer size.  `filter_tgid` is
/// negative without `RPROF_CONFIG_PID_FILTER`, and with it the initial pid
/// namespace's number of the thread group `raw.pid` named in the caller's
/// (the number the overflow handler compares; `raw.pid` itself is kept as
/// given, for the START and STOP records), and `filter_start` that thread
/// group's start time (its leader's `start_time`), which the handler
/// compares too: the number alone would name a later process that got it.
#[derive(Clone, Copy)]
pub(crate) struct Config {
    pub(crate) raw: rprof_config,
    pub(crate) ring_records: u32,
    pub(crate) buffer_pages: u32,
    pub(crate) drain_ms: u32,
    pub(crate) wakeup_bytes: u64,
    pub(crate) filter_tgid: i32,
    pub(crate) filter_start: u64,
}

impl Config {
    /// Reads a configuration from userspace at `arg`.
    pub(crate) fn from_user(arg: usize, params: &Params) -> Result<Self> {
        let known = size_of::<rprof_config>();
        let size = sized::read_size(arg, RPROF_CONFIG_SIZE_VER0 as usize).inspect_err(|_| {
            pr_debug!("SET_CONFIG: size not in [{}, {}]\n", RPROF_CONFIG_SIZE_VER0, sized::SIZE_MAX);
        })?;
        let mut raw = rprof_config::default();
        // SAFETY: `rprof_config` is plain old data without padding; any
        // bytes form a valid value.
        let bytes = unsafe {
            core::slice::from_raw_parts_mut(&mut raw as *mut rprof_config as *mut u8, known)
        };
        crate::kapi::compat::user_slice(arg, size).reader().read_slice(&mut bytes[..size.min(known)])?;
        sized::check_unknown_zero(arg, known, size).inspect_err(|_| {
            pr_debug!("SET_CONFIG: non-zero bytes past the known size {}\n", known);
        })?;
        let mut config = Self::check(raw, params)?;
        if config.filter_tgid >= 0 {
            // SAFETY: Process context (the SET_CONFIG ioctl, whose caller's
            // pid namespace gives `raw.pid` its meaning).
            let nr = unsafe { helpers::rprof_global_tgid(raw.pid, &mut config.filter_start) };
            if nr < 0 {
                pr_debug!("SET_CONFIG: pid {} names no process in the caller's pid namespace\n", raw.pid);
                return Err(ESRCH);
            }
            config.filter_tgid = nr;
        }
        Ok(config)
    }

    /// Checks `raw` and fills in defaults.
    pub(crate) fn check(raw: rprof_config, params: &Params) -> Result<Self> {
        let bad = |why: &str| {
            pr_debug!("SET_CONFIG: {}\n", why);
            Err(EINVAL)
        };
        if raw.flags & !RPROF_CONFIG_FLAGS_ALL != 0 || raw.reserved1 != 0 {
            return bad("reserved flags or fields set");
        }
        if raw.flags & RPROF_CONFIG_CALLCHAIN != 0 {
            if raw.max_kernel_frames == 0 && raw.max_user_frames == 0 {
                return bad("call chains with both depths 0");
            }
            if raw.max_kernel_frames > RPROF_MAX_FRAMES as u16 || raw.max_user_frames > RPROF_MAX_FRAMES as u16 {
                return bad("call chain depth above RPROF_MAX_FRAMES");
            }
        } else if raw.max_kernel_frames != 0 || raw.max_user_frames != 0 {
            return bad("chain depths without RPROF_CONFIG_CALLCHAIN");
        }
        if raw.flags & RPROF_CONFIG_UNWIND_TABLES != 0 && raw.max_user_frames == 0 {
            return bad("unwind tables without user call chains");
        }
        let n = raw.nr_events as usize;
        if n == 0 || n > RPROF_MAX_EVENTS as usize {
            return bad("nr_events out of range");
        }
        for (i, ev) in raw.events.iter().enumerate() {
            if i >= n {
                if ev.kind != 0 || ev.flags != 0 || ev.period != 0 {
                    return bad("unused event slots must be zero");
                }
                continue;
            }
            if !(RPROF_EVENT_CPU_CLOCK..=RPROF_EVENT_BRANCH_MISSES).contains(&ev.kind) {
                return bad("unknown event kind");
            }
            if ev.flags & !RPROF_EVENT_FLAGS_ALL != 0 {
                return bad("reserved event flags set");
            }
            if ev.period == 0 {
                return bad("zero period or frequency");
            }
            // The limits perf_event_open() applies.  Its frequency limit is
            // the sysctl perf_event_max_sample_rate, which 6.12 does not
            // export to modules; FREQ_MAX is that sysctl's default, and
            // perf's throttling (max_samples_per_tick, derived from the
            // sysctl's current value) applies to kernel counters too.
            if ev.flags & RPROF_EVENT_FREQ != 0 && ev.period > FREQ_MAX {
                return bad("frequency above 100 kHz");
            }
            if ev.flags & RPROF_EVENT_FREQ == 0 && ev.period & (1 << 63) != 0 {
                return bad("period with bit 63 set (negative to perf)");
            }
        }
        if raw.flags & RPROF_CONFIG_PID_FILTER != 0 && raw.pid <= 0 {
            return bad("pid filter without a pid");
        }
        if raw.flags & RPROF_CONFIG_PID_FILTER == 0 && raw.pid != 0 {
            return bad("pid set without the pid filter flag");
        }
        if raw.flags & RPROF_CONFIG_PID_DESCENDANTS != 0 && raw.flags & RPROF_CONFIG_PID_FILTER == 0 {
            return bad("descendants without the pid filter flag");
        }
        let both = RPROF_CONFIG_EXCLUDE_USER | RPROF_CONFIG_EXCLUDE_KERNEL;
        if raw.flags & both == both {
            return bad("excluding both user and kernel leaves nothing");
        }
        let ring_records = match raw.ring_records {
            0 => params.ring_records,
            r if ring_records_valid(r) => r,
            _ => return bad("ring_records is not a power of 2 in range"),
        };
        let buffer_pages = match raw.buffer_pages {
            0 => params.buffer_pages,
            p if buffer_pages_valid(p) && p <= params.max_session_buffer_pages() => p,
            _ => return bad("buffer_pages is not a power of 2 up to 16 times the module's buffer_pages"),
        };
        let buffer_bytes = buffer_pages as u64 * bindings::PAGE_SIZE as u64;
        let drain_ms = match raw.drain_interval_ms {
            0 => DRAIN_MS_DEFAULT,
            ms if ms <= DRAIN_MS_MAX => ms,
            _ => return bad("drain interval above 1000 ms"),
        };
        let wakeup_bytes = match raw.wakeup_bytes as u64 {
            0 => (buffer_bytes / 4).max(1),
            b if b <= buffer_bytes => b,
            _ => return bad("wakeup_bytes larger than the event buffer"),
        };
        // Translated by `from_user`, which knows the caller.
        let filter_tgid = if raw.flags & RPROF_CONFIG_PID_FILTER != 0 { raw.pid } else { -1 };
        // INVARIANT: all checked above.
        Ok(Self { raw, ring_records, buffer_pages, drain_ms, wakeup_bytes, filter_tgid, filter_start: 0 })
    }

    /// The configured events.
    pub(crate) fn events(&self) -> &[rprof_event_config] {
        &self.raw.events[..self.raw.nr_events as usize]
    }
}

//! The locked memory a session charges to its owner, and what to say when
//! the module refuses a session for it.
//!
//! The module charges a session's event buffer and rings to the locked
//! memory of the process that configures it, as perf charges its ring
//! buffers (`perf_mmap()`): first to a per-user allowance of the module
//! parameter `mlock_kb` (2048 KiB by default) per online CPU, then to the
//! caller's `RLIMIT_MEMLOCK`, unless the caller has CAP_IPC_LOCK.  Past
//! both, `RPROF_IOC_SET_CONFIG` fails with EPERM, and [`Refusal`] says
//! how large the session was, what the limit is, and what to change.

use crate::events::{module_param, online_cpus, DEFAULT_BUFFER_PAGES, DEFAULT_RING_RECORDS};
use rprof_abi::rprof_config;
use std::fmt;

/// Bytes of one slot of a CPU's ring in the module: a `RingRecord` (the
/// raw sample, 56 bytes; event, chain counts and flags, 4; the address
/// space's sequence, 4; its pointer, 8) and the slot's sequence word, 8:
/// `size_of::<Slot<RingSlot>>()` of `src/device/rings.rs` (`ring_bytes`) and
/// `src/sampling/ring.rs`.
pub const RING_SLOT_BYTES: u64 = 80;

/// The module's `mlock_kb` default: KiB per online CPU a user may lock
/// before `RLIMIT_MEMLOCK` counts.
pub const DEFAULT_MLOCK_KB: u32 = 2048;

/// What one session's buffers take, computed as the module charges them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionMemory {
    /// The event buffer: its control page and `buffer_pages` data pages.
    pub buffer_bytes: u64,
    /// One CPU's ring, rounded up to whole pages.
    pub ring_bytes: u64,
    /// Rings: one per possible CPU.
    pub cpus: u64,
}

impl SessionMemory {
    /// The memory of a session configured with `config`: a `buffer_pages`
    /// or `ring_records` of 0 is the module's default, given in
    /// `default_buffer_pages` and `default_ring_records`; `page` is the
    /// page size and `cpus` the CPUs the system can have.
    pub fn of(
        config: &rprof_config,
        default_buffer_pages: u32,
        default_ring_records: u32,
        page: u64,
        cpus: u64,
    ) -> SessionMemory {
        let or = |v: u32, default: u32| u64::from(if v == 0 { default } else { v });
        let data_pages = or(config.buffer_pages, default_buffer_pages);
        let ring = or(config.ring_records, default_ring_records).saturating_mul(RING_SLOT_BYTES);
        SessionMemory {
            buffer_bytes: data_pages.saturating_add(1).saturating_mul(page),
            ring_bytes: ring.div_ceil(page.max(1)).saturating_mul(page),
            cpus,
        }
    }

    /// [`SessionMemory::of`] on this system: the module's parameters,
    /// the page size and the possible CPUs.
    pub fn on_this_system(config: &rprof_config) -> SessionMemory {
        SessionMemory::of(
            config,
            module_param("buffer_pages", DEFAULT_BUFFER_PAGES),
            module_param("ring_records", DEFAULT_RING_RECORDS),
            page_size(),
            possible_cpus(),
        )
    }

    /// Every CPU's ring together.
    pub fn rings_bytes(&self) -> u64 {
        self.ring_bytes.saturating_mul(self.cpus)
    }

    /// The event buffer and the rings.
    pub fn total(&self) -> u64 {
        self.buffer_bytes.saturating_add(self.rings_bytes())
    }
}

/// Why `RPROF_IOC_SET_CONFIG` said EPERM: the session's memory and the
/// limits it passed.  Its `Display` is the message, without `rprof: `.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The session asked for.
    pub memory: SessionMemory,
    /// The caller's `RLIMIT_MEMLOCK` soft limit in bytes; `None` for
    /// unlimited.
    pub rlimit: Option<u64>,
    /// The module's `mlock_kb`.
    pub mlock_kb: u32,
}

impl Refusal {
    /// The refusal of a session configured with `config`, with this
    /// system's figures.
    pub fn now(config: &rprof_config) -> Refusal {
        Refusal {
            memory: SessionMemory::on_this_system(config),
            rlimit: memlock_rlimit(),
            mlock_kb: mlock_kb(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kib = |bytes: u64| bytes / 1024;
        let m = &self.memory;
        write!(
            f,
            "the session's buffers ({} KiB: event buffer {} KiB, rings {} KiB for {} CPUs) \
             pass your locked-memory limit (RLIMIT_MEMLOCK ",
            kib(m.total()),
            kib(m.buffer_bytes),
            kib(m.rings_bytes()),
            m.cpus
        )?;
        match self.rlimit {
            Some(limit) => write!(f, "{} KiB", kib(limit))?,
            None => f.write_str("unlimited")?,
        }
        write!(
            f,
            ", beyond the module's mlock_kb allowance of {} KiB per online CPU): \
             lower -m/--mmap-pages or --ring-records, raise it (ulimit -l), \
             or run with CAP_IPC_LOCK",
            self.mlock_kb
        )
    }
}

/// The module's `mlock_kb` parameter (its default where it cannot be
/// read).
pub fn mlock_kb() -> u32 {
    module_param("mlock_kb", DEFAULT_MLOCK_KB)
}

/// What a user may lock in sessions before `RLIMIT_MEMLOCK` counts:
/// `mlock_kb` KiB per online CPU, in bytes.
pub fn user_allowance() -> u64 {
    u64::from(mlock_kb())
        .saturating_mul(1024)
        .saturating_mul(online_cpus())
}

/// The page size (4096 if `sysconf` cannot say).
fn page_size() -> u64 {
    // Not crate::mmap's: that module is above this one (its errors are
    // crate::error's, which name a refusal of this module's).
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .unwrap_or(4096)
}

/// The number of CPUs in a kernel CPU list such as
/// `/sys/devices/system/cpu/possible` (`0-3`, `0,2-5`, `0`), or `None`
/// if `list` is not one.
pub fn cpu_list_len(list: &str) -> Option<u64> {
    let mut n = 0u64;
    for part in list.trim().split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?),
            None => {
                let cpu = part.parse::<u64>().ok()?;
                (cpu, cpu)
            }
        };
        n = n.checked_add(last.checked_sub(first)?.checked_add(1)?)?;
    }
    Some(n)
}

/// The CPUs this system can have (`/sys/devices/system/cpu/possible`):
/// the module makes a ring for each, online or not.  Falls back on the
/// CPUs configured, then on 1.
pub fn possible_cpus() -> u64 {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| cpu_list_len(&s))
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            // SAFETY: sysconf() has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
            u64::try_from(n).unwrap_or(1).max(1)
        })
}

/// This process's `RLIMIT_MEMLOCK` soft limit in bytes, `None` for
/// unlimited (or if it cannot be read).
pub fn memlock_rlimit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit() writes one struct rlimit through its pointer,
    // which points at `r`.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) };
    if ret != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's figures: the buffer is its data pages and the control
    /// page; each ring is its slots times 80 bytes, in whole pages.
    #[test]
    fn session_memory_as_the_module_charges_it() {
        let mut c = rprof_config::new();
        // Defaults: 256 data pages, 4096 slots (320 KiB, 80 pages).
        let m = SessionMemory::of(&c, 256, 4096, 4096, 4);
        assert_eq!(
            m,
            SessionMemory {
                buffer_bytes: 257 * 4096,
                ring_bytes: 80 * 4096,
                cpus: 4,
            }
        );
        assert_eq!(m.rings_bytes(), 4 * 80 * 4096);
        assert_eq!(m.total(), (257 + 320) * 4096);
        // Explicit sizes; a ring that is not whole pages is rounded up.
        c.buffer_pages = 1024;
        c.ring_records = 64;
        let m = SessionMemory::of(&c, 256, 4096, 4096, 2);
        assert_eq!(m.buffer_bytes, 1025 * 4096);
        assert_eq!(m.ring_bytes, 8192, "64 * 80 = 5120 bytes: two pages");
        assert_eq!(m.total(), 1025 * 4096 + 2 * 8192);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0\n"), Some(1));
        assert_eq!(cpu_list_len("0-3"), Some(4));
        assert_eq!(cpu_list_len("0,2-5,7\n"), Some(6));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("a-b"), None);
        assert!(possible_cpus() >= 1);
    }

    #[test]
    fn refusal_message() {
        let mut c = rprof_config::new();
        c.buffer_pages = 1024;
        let r = Refusal {
            memory: SessionMemory::of(&c, 256, 4096, 4096, 2),
            rlimit: Some(8 << 20),
            mlock_kb: 2048,
        };
        assert_eq!(
            r.to_string(),
            "the session's buffers (4740 KiB: event buffer 4100 KiB, rings 640 KiB for 2 CPUs) \
             pass your locked-memory limit (RLIMIT_MEMLOCK 8192 KiB, beyond the module's \
             mlock_kb allowance of 2048 KiB per online CPU): lower -m/--mmap-pages or \
             --ring-records, raise it (ulimit -l), or run with CAP_IPC_LOCK"
        );
        let r = Refusal { rlimit: None, ..r };
        assert!(
            r.to_string().contains("(RLIMIT_MEMLOCK unlimited, beyond"),
            "{r}"
        );
    }
}

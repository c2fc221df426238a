// SPDX-License-Identifier: GPL-2.0

//! Address spaces for the drain: a sampled process's `mmap_lock` taken
//! without ever blocking on it, and the VMA of an address under it,
//! believed only if it has not changed since the sample.  Process
//! context.  C glue: `mm.c` (one kernel call each).
//!
//! # Never blocking
//!
//! A sampled process may hold its `mmap_lock` for seconds (a fault on a
//! slow file, a long `mlock()` or `MAP_POPULATE`) or queue a writer behind
//! such a holder, and the drain's lock is waited for by STOP, close,
//! GET_STATS and the module notifier.  So the drain try-locks, and tries
//! again after sleeps of 50 to 100 us for up to [`MM_WAIT_NS`] of the clock
//! for one lookup and no longer than the pass's budget allows: that covers
//! the short write sections of `mmap()`, `mprotect()` and exec that a busy
//! program takes all the time, and bounds what a held lock costs a pass.
//! A lock still busy makes the lookup [`RESOLVE_BUSY`] (counted as
//! `RPROF_LOST_MM_BUSY`).
//!
//! # The munmap race
//!
//! A VMA created, split, merged or changed after the sample carries a
//! `vm_lock_seq` at or after the sample's sequence (`vma_start_write()`
//! stamps it with the odd sequence of the write section): it may not be
//! the one the sample hit, so it resolves to nothing rather than to a
//! wrong file.  Hence `CONFIG_PER_VMA_LOCK` (`mm.c` refuses to build
//! without it).

use crate::kapi::helpers::{self, MmStruct, VmaInfo, VmaRange};
use core::ffi::c_int;
use kernel::bindings;

/// What a lookup found: a file (`path` referenced, `offset` in it).
pub(crate) const RESOLVE_FILE: c_int = 0;
/// Anonymous memory (`offset` is the address).
pub(crate) const RESOLVE_ANON: c_int = 1;
/// No mapping, or one changed since the sample.
pub(crate) const RESOLVE_NONE: c_int = 2;
/// The lock stayed busy: not looked up.
pub(crate) const RESOLVE_BUSY: c_int = 3;

/// The longest one lookup waits for a busy `mmap_lock`, in ns.
pub(crate) const MM_WAIT_NS: u64 = 1_000_000;

/// What one frame of a chain resolved to ([`MmRead::resolve`]'s outputs).
pub(crate) struct FrameRes {
    pub(crate) path: bindings::path,
    pub(crate) offset: u64,
    pub(crate) range: VmaRange,
    pub(crate) how: c_int,
}

impl FrameRes {
    pub(crate) fn new() -> Self {
        // SAFETY: All-zero is a valid (empty) `struct path`.
        Self { path: unsafe { core::mem::zeroed() }, offset: 0, range: VmaRange::default(), how: RESOLVE_NONE }
    }
}

/// `mm`'s `mmap_lock`, held for reading until this is dropped.
///
/// # Invariants
///
/// This value holds `mm`'s `mmap_lock` for reading, and `mm` is alive
/// (its address space referenced, `mm_users`) for as long as it lives.
pub(crate) struct MmRead {
    mm: *mut MmStruct,
}

impl MmRead {
    /// Takes `mm`'s `mmap_lock` for reading without blocking on its
    /// holders (see the module doc): `None` if it stayed busy for
    /// [`MM_WAIT_NS`] or for the rest of `budget`, the pass's ns, which
    /// the time spent here reduces.  Sleeps.
    ///
    /// # Safety
    ///
    /// `mm`'s address space is referenced (`mm_users`) for as long as the
    /// returned value lives; process context, no spinlock held.
    pub(crate) unsafe fn lock(mm: *mut MmStruct, budget: &mut u64) -> Option<Self> {
        // SAFETY: Reads the clock; any context.
        let clock = || unsafe { helpers::rprof_clock() };
        let start = clock();
        let limit = (*budget).min(MM_WAIT_NS);
        loop {
            // SAFETY: `mm` is referenced (contract); a try-lock never
            // sleeps.
            let locked = unsafe { helpers::rprof_mmap_read_trylock(mm) };
            let spent = clock().saturating_sub(start);
            if locked || spent >= limit {
                *budget -= spent.min(*budget);
                // Not `locked.then_some(Self { mm })`: that makes the
                // guard either way, and dropping the one not taken would
                // release a lock this never held.
                // INVARIANT: made only when held; `mm` referenced (contract).
                return if locked { Some(Self { mm }) } else { None };
            }
            // SAFETY: Process context, no spinlock held (contract).
            unsafe { helpers::rprof_usleep_range(50, 100) };
        }
    }

    /// The VMA of `ip`, if it was not write-locked since the sample whose
    /// address-space sequence is `seq` (the munmap race): [`RESOLVE_FILE`]
    /// with `path` referenced (the path the process sees: an overlayfs
    /// mapping by its overlay path) and `offset` in the file,
    /// [`RESOLVE_ANON`] with `offset` = `ip`, or [`RESOLVE_NONE`].  `range`
    /// is the VMA's, with the sequence under the lock (for the mapping
    /// cache).
    pub(crate) fn resolve(&self, ip: u64, seq: u32, path: &mut bindings::path, offset: &mut u64, range: &mut VmaRange) -> c_int {
        let mut v = VmaInfo::default();
        // SAFETY: We hold the lock for reading (type invariant).
        if !unsafe { helpers::rprof_vma_lookup_locked(self.mm, ip, &mut v) } {
            return RESOLVE_NONE;
        }
        if changed_since(v.lock_seq, seq) {
            return RESOLVE_NONE;
        }
        *range = v.range;
        if v.file.is_null() {
            *offset = ip;
            return RESOLVE_ANON;
        }
        // SAFETY: The VMA holds a reference on its file while we hold the
        // lock (type invariant); process context.  The helper takes a
        // reference on the path for the caller.
        unsafe { helpers::rprof_file_path(v.file, path) };
        *offset = crate::resolve::file_offset(v.range.pgoff_bytes, v.range.start, ip);
        RESOLVE_FILE
    }
}

/// Whether a VMA whose `vm_lock_seq` is `lock_seq` was write-locked at or
/// after the sample whose address-space sequence is `seq` (then it may not
/// be the VMA the sample hit).  Sequences wrap: compared by their
/// difference, as the kernel compares them.
pub(crate) fn changed_since(lock_seq: u32, seq: u32) -> bool {
    lock_seq.wrapping_sub(seq) as i32 >= 0
}

impl Drop for MmRead {
    fn drop(&mut self) {
        // SAFETY: Held, on a live `mm` (type invariant).
        unsafe { helpers::rprof_mmap_read_unlock(self.mm) };
    }
}

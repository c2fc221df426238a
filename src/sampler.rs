// SPDX-License-Identifier: GPL-2.0

//! The sampling side: what the perf overflow handler does.
//!
//! **NMI context**: everything reachable from [`rprof_on_sample`] may run in
//! NMI context (PMU counters) or hard IRQ context (the hrtimer of software
//! clocks), nested over task, softirq or hardirq code on the same CPU.  It
//! takes no lock, never sleeps and never allocates: it copies one
//! fixed-size record into this CPU's [`Ring`] (taking a counted reference
//! on the sampled address space, an atomic increment) and, past a watermark, kicks
//! the drain with an irq_work (the kernel's NMI-safe way out).

use crate::helpers::{self, RawSample};
use crate::ring::{Push, Ring, Slot};
use core::ffi::c_void;
use kernel::prelude::*;

/// A counted reference on an address space (`mm_users`), or null, taken
/// by the handler and dropped by the drain (`rprof_mm_put`).
#[derive(Clone, Copy)]
pub(crate) struct MmRef(pub(crate) *mut helpers::MmStruct);

// SAFETY: The reference moves from the handler's CPU to the drain; the
// address space may be released from any process context.
unsafe impl Send for MmRef {}

/// A per-CPU ring record: the raw sample, which configured event took it,
/// and the sampled task's address space with its write-lock sequence then.
#[derive(Clone, Copy)]
pub(crate) struct RingRecord {
    pub(crate) sample: RawSample,
    pub(crate) event: u16,
    pub(crate) mm_seq: u32,
    pub(crate) mm: MmRef,
}

impl RingRecord {
    /// A record without an address space (tests and the benchmark).
    #[cfg(any(rprof_kunit, rprof_bench))]
    pub(crate) fn new(sample: RawSample, event: u16) -> Self {
        Self { sample, event, mm_seq: 0, mm: MmRef(core::ptr::null_mut()) }
    }
}

/// The per-CPU ring type.
pub(crate) type SampleRing = Ring<RingRecord, KVVec<Slot<RingRecord>>>;

/// Bytes one ring of `records` slots takes.
pub(crate) fn ring_bytes(records: u32) -> u64 {
    records as u64 * core::mem::size_of::<Slot<RingRecord>>() as u64
}

/// Allocates a ring of `records` slots (a power of two), charged to the
/// calling task's memory cgroup.
pub(crate) fn new_ring(records: u32) -> Result<SampleRing> {
    let mut slots = KVVec::with_capacity(records as usize, GFP_KERNEL_ACCOUNT)?;
    for i in 0..records {
        // Cannot fail: the capacity is there.
        slots.push(Slot::new(), GFP_KERNEL_ACCOUNT)?;
        if i % 4096 == 4095 {
            // Up to 2^20 slots: let others run.
            // SAFETY: Process context (SET_CONFIG, START, the hotplug
            // callback, tests).
            unsafe { helpers::rprof_cond_resched() };
        }
    }
    Ring::new(slots).map_err(|_| EINVAL)
}

/// What one counter's overflow handler needs, at a stable address for the
/// counter's lifetime.
///
/// # Invariants
///
/// `ring` and `kicker` point to objects of the session that outlive the
/// counter: the session releases its counters (after which perf runs no
/// more handlers for them) before it frees rings and kicker.
pub(crate) struct HandlerCtx {
    pub(crate) ring: *const SampleRing,
    pub(crate) kicker: *mut helpers::RprofKicker,
    pub(crate) event: u16,
    /// Only samples of this thread group, or all if negative.
    pub(crate) pid: i32,
    /// Kick the drain when the ring holds at least this many records.
    pub(crate) kick_at: u64,
}

/// The overflow handler's Rust half, called by `rprof_overflow()` in
/// `src/helpers.c`.  NMI context: see the module doc.
///
/// # Safety
///
/// `ctx` must be the `HandlerCtx` the counter was created with, and
/// `sample` a valid sample.
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_on_sample(ctx: *mut c_void, sample: *const RawSample) {
    // SAFETY: The caller passes the context registered with the counter,
    // which is alive while the counter exists (`HandlerCtx` invariant).
    let ctx = unsafe { &*(ctx as *const HandlerCtx) };
    // SAFETY: The C caller passes a sample on its stack.
    let sample = unsafe { *sample };
    if ctx.pid >= 0 && sample.pid != ctx.pid as u32 {
        return;
    }
    // SAFETY: `ring` outlives the counter (`HandlerCtx` invariant).
    let ring = unsafe { &*ctx.ring };
    // The address-space reference is taken only once a slot is reserved,
    // so a full ring never has to give one back (which NMI context could
    // not do).
    let make = || {
        let mut mm_seq = 0;
        // SAFETY: NMI-safe: an atomic increment on current's mm, if any.
        let mm = unsafe { helpers::rprof_current_mm_get(&mut mm_seq) };
        RingRecord { sample, event: ctx.event, mm_seq, mm: MmRef(mm) }
    };
    let kick = match ring.push_with(make) {
        Push::Stored(fill) => fill >= ctx.kick_at,
        Push::Full => true,
    };
    if kick {
        // SAFETY: The kicker outlives the counter; `irq_work_queue()` is
        // NMI-safe and a no-op when the work is already pending.
        unsafe { helpers::rprof_kicker_kick(ctx.kicker) };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The per-CPU rings' memory: what one takes, and its allocation, charged
//! to the caller's memory cgroup.  Process context (SET_CONFIG, tests, the
//! benchmark); the rings themselves are `crate::sampling::ring`, their
//! records `crate::sampling::sampler`'s, their reader
//! `crate::resolve::reader`.

use crate::kapi::helpers;
use crate::sampling::ring::{Ring, Slot};
use crate::sampling::sampler::{RingSlot, SampleRing};
use kernel::prelude::*;

/// Bytes one ring of `records` slots takes.
pub(crate) fn ring_bytes(records: u32) -> u64 {
    records as u64 * core::mem::size_of::<Slot<RingSlot>>() as u64
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
            // SAFETY: Process context (SET_CONFIG, tests, the benchmark;
            // never the hotplug callback, which allocates nothing).
            unsafe { helpers::rprof_cond_resched() };
        }
    }
    Ring::new(slots).map_err(|_| EINVAL)
}

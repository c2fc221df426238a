// SPDX-License-Identifier: GPL-2.0

//! `make bench`: the cost of one record write in rprof's per-CPU ring and
//! in the kernel's own ftrace ring buffer (reserve + copy + commit), side by
//! side in one boot.  Built into bench builds only (`cfg(rprof_bench)`);
//! runs at insmod and prints its figures to the kernel log.
//!
//! Both sides write the same payload (a ring record) from task context on one CPU,
//! in batches that fit their buffer, and only the writes are timed: the
//! buffers are emptied between batches, untimed.

use crate::helpers::{self, RawSample};
use crate::sampler::{self, HandlerCtx, RingRecord, SampleRing};
use core::ffi::c_void;
use kernel::prelude::*;

const RECORDS: u64 = 1 << 18;
const BATCH: u64 = 4096;

fn clock() -> u64 {
    // SAFETY: `local_clock()` may be called from any context.
    unsafe { helpers::rprof_local_clock() }
}

/// Nanoseconds spent in `write` for `RECORDS` records, in batches that
/// fit `ring`, which is emptied between batches (untimed; address-space
/// references the handler took are dropped).
fn timed_batches(ring: &SampleRing, mut write: impl FnMut(RawSample)) -> u64 {
    let mut ns = 0;
    let mut n = 0;
    while n < RECORDS {
        let t0 = clock();
        for i in 0..BATCH {
            write(RawSample { time_ns: i, ip: n + i, ..Default::default() });
        }
        ns += clock() - t0;
        // SAFETY: The only consumer.
        while let Some(rec) = unsafe { ring.pop() } {
            if !rec.mm.0.is_null() {
                // SAFETY: The handler took this reference on insmod's
                // address space; process context.
                unsafe { helpers::rprof_mm_put(rec.mm.0) };
            }
        }
        n += BATCH;
    }
    ns
}

/// Nanoseconds for `RECORDS` pushes of rprof's ring.
fn rprof_ring() -> Result<u64> {
    let ring = sampler::new_ring(BATCH as u32)?;
    Ok(timed_batches(&ring, |sample| {
        let _ = ring.push(RingRecord::new(sample, 0));
    }))
}

/// Nanoseconds for `RECORDS` calls of the whole overflow handler body
/// (`rprof_on_sample`: filter, address-space reference, ring write,
/// watermark check).
fn rprof_handler() -> Result<u64> {
    let ring = sampler::new_ring(BATCH as u32)?;
    let ctx = HandlerCtx { ring: &ring, kicker: core::ptr::null_mut(), event: 0, pid: -1, kick_at: u64::MAX };
    Ok(timed_batches(&ring, |sample| {
        // SAFETY: `ctx` and its ring live across the call; the ring never
        // fills (emptied every batch), so the null kicker is never kicked.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample) };
    }))
}

fn per_record(ns: u64) -> (u64, u64) {
    // Hundredths of a nanosecond, for two decimals without floats.
    let centi = ns * 100 / RECORDS;
    (centi / 100, centi % 100)
}

/// Runs the benchmark and prints the figures.
pub(crate) fn run() {
    let rs = core::mem::size_of::<RingRecord>() as u32;
    let mut ftrace_dropped = 0u64;
    let results = (|| -> Result<(u64, u64, u64)> {
        let ring = rprof_ring()?;
        let handler = rprof_handler()?;
        // SAFETY: Runs the C loop; `ftrace_dropped` outlives the call.
        let ftrace = unsafe { helpers::rprof_bench_ftrace(RECORDS, BATCH, rs, &mut ftrace_dropped) };
        if ftrace == 0 {
            return Err(ENOMEM);
        }
        Ok((ring, handler, ftrace))
    })();
    match results {
        Ok((ring, handler, ftrace)) => {
            let (a, b) = per_record(ring);
            let (c, d) = per_record(handler);
            let (e, f) = per_record(ftrace);
            pr_info!("bench: {} records of {} bytes per run, task context, one CPU\n", RECORDS, rs);
            pr_info!("bench: rprof ring push:            {}.{:02} ns/record\n", a, b);
            pr_info!("bench: rprof handler body:         {}.{:02} ns/record\n", c, d);
            pr_info!("bench: ftrace ring_buffer write:   {}.{:02} ns/record ({} dropped)\n", e, f, ftrace_dropped);
            let ratio = ring * 1000 / ftrace;
            pr_info!("bench: ratio rprof ring / ftrace ring_buffer = {}.{:03}\n", ratio / 1000, ratio % 1000);
        }
        Err(e) => pr_err!("bench: failed: error {}\n", e.to_errno()),
    }
}

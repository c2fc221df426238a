// SPDX-License-Identifier: GPL-2.0

//! `make bench`, inside the module (bench builds only, `cfg(rprof_bench)`).
//!
//! Two things:
//!
//! - At insmod, [`run`]: the cost of one record write in rprof's per-CPU
//!   ring and in the kernel's own ftrace ring buffer (reserve + copy +
//!   commit), side by side in one boot.  Both sides write the same payload
//!   (a ring record) from task context on one CPU, in batches that fit
//!   their buffer, and only the writes are timed: the buffers are emptied
//!   between batches, untimed.  Figures go to the kernel log.
//! - While sessions run, the per-stage cost model of issue 16: the
//!   overflow handler, the drain per record (resolution and per-user and
//!   per-kernel sample lookup split out), each new file cookie, and each
//!   drain pass, timed with `local_clock()` where they run and summed
//!   ([`crate::resolve::stage`], which the data path owns so that it
//!   never imports this module).  The timing adds two clock reads to each
//!   timed stage; [`run`] prints what a pair costs.

use crate::resolve::drain::Drain;
use crate::resolve::stage::{self, clock};
use crate::buffer::evbuf::EventBuffer;
use crate::kapi::helpers::{self, RawSample};
use crate::sampling::maps::MapSlots;
use crate::sampling::sampler::{self, HandlerCtx, RingRecord, SampleRing};
use core::ffi::c_void;
use kernel::prelude::*;

const RECORDS: u64 = 1 << 18;
const BATCH: u64 = 4096;

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
        unsafe { crate::resolve::replay::give_back(ring) };
        n += BATCH;
    }
    ns
}

/// Nanoseconds for `RECORDS` pushes of rprof's ring.
fn rprof_ring() -> Result<u64> {
    let ring = crate::device::rings::new_ring(BATCH as u32)?;
    Ok(timed_batches(&ring, |sample| {
        let _ = ring.push(RingRecord::new(sample, 0).into());
    }))
}

/// Nanoseconds for `RECORDS` calls of the whole overflow handler body
/// (`rprof_on_sample`: filter, address-space reference, ring write,
/// watermark check) on samples like `sample` (their time and, for kernel
/// samples, their ip vary).  A user sample (`RAW_USER`, insmod's own user
/// ip) names its mapping too: the first one looks it up and gives it a
/// slot, the others find it there, as a sampled loop's samples do.
fn rprof_handler(sample: RawSample) -> Result<u64> {
    // Room for a batch and the mapping entry of its first record: a full
    // ring would kick the drain, and `plain`'s kicker is null.
    let ring = crate::device::rings::new_ring(2 * BATCH as u32)?;
    let maps = MapSlots::new();
    let ctx = HandlerCtx::plain(&ring, &maps);
    let user = sample.flags & helpers::RAW_USER != 0;
    let ns = timed_batches(&ring, |s| {
        let s = if user { RawSample { time_ns: s.time_ns, ..sample } } else { s };
        // SAFETY: `ctx` and its ring live across the call; the ring never
        // fills (above: emptied every batch), so the null kicker is never
        // kicked.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &s, core::ptr::null_mut()) };
    });
    Ok(ns)
}

/// A user sample as the handler would see it for insmod's system call
/// (its user ip, in a file-backed mapping).
fn insmod_sample() -> RawSample {
    let (mut pid, mut tid) = (0u32, 0u32);
    // SAFETY: Process context (insmod); writes the two ids.
    let ip = unsafe { helpers::rprof_bench_user_ip(&mut pid, &mut tid) };
    let mut comm = [0u8; 16];
    comm[..6].copy_from_slice(b"insmod");
    RawSample { ip, period: 1, pid, tid, flags: helpers::RAW_USER, comm, ..Default::default() }
}

/// Nanoseconds for `RECORDS` user samples through the drain
/// (`Drain::take`: the ring pop, the resolution, the context records, the
/// SAMPLE record and the address-space reference dropped), and the
/// records it wrote.  The samples are what the handler would push for
/// insmod's system call (its user ip, a file-backed mapping, with a
/// reference on its address space), `BATCH` at a time; only the drain is
/// timed, and the event buffer is emptied between batches, untimed.
fn rprof_drain() -> Result<(u64, u64)> {
    // Room for a batch and the mapping entries its first records carry:
    // a full ring would kick the drain, and `plain`'s kicker is null.
    let ring = crate::device::rings::new_ring(2 * BATCH as u32)?;
    // A batch of SAMPLE records (32 bytes) and their context fits.
    let buf = EventBuffer::new(64, crate::buffer::charge::Charge::new(EventBuffer::bytes(64).ok_or(EINVAL)? as u64)?)?;
    let mut drain = Drain::new(buf.producer(), 1, 64, false)?;
    let maps = MapSlots::new();
    let ctx = HandlerCtx::plain(&ring, &maps);
    let user = insmod_sample();
    let (mut ns, mut n) = (0, 0);
    while n < RECORDS {
        for i in 0..BATCH {
            let sample = RawSample { time_ns: n + i, ..user };
            // SAFETY: `ctx` and its ring live across the call; the ring
            // holds a batch, so the null kicker is never kicked.
            unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
        }
        let t0 = clock();
        // SAFETY: The ring's only consumer.
        while unsafe { drain.take(&buf, 0, &ring, 0) } {}
        drain.put_mms();
        ns += clock() - t0;
        buf.publish(&drain.producer);
        buf.discard_published();
        n += BATCH;
    }
    Ok((ns, drain.cpu_counts(0).0))
}

/// Nanoseconds for `RECORDS` back-to-back pairs of clock reads: what a
/// [`stage::Timer`] adds to the stage it times.
fn clock_pairs() -> u64 {
    let mut sum = 0;
    let t0 = clock();
    for _ in 0..RECORDS {
        let a = clock();
        sum += clock() - a;
    }
    let total = clock() - t0;
    // `sum` is what the pairs saw; `total` what they cost, loop included.
    core::hint::black_box(sum);
    total
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
    let clocks = clock_pairs();
    let results = (|| -> Result<(u64, u64, u64, u64)> {
        let ring = rprof_ring()?;
        let handler = rprof_handler(RawSample::default())?;
        let handler_user = rprof_handler(insmod_sample())?;
        // SAFETY: Runs the C loop; `ftrace_dropped` outlives the call.
        let ftrace = unsafe { helpers::rprof_bench_ftrace(RECORDS, BATCH, rs, &mut ftrace_dropped) };
        if ftrace == 0 {
            return Err(ENOMEM);
        }
        Ok((ring, handler, handler_user, ftrace))
    })();
    match results {
        Ok((ring, handler, handler_user, ftrace)) => {
            let (a, b) = per_record(ring);
            let (c, d) = per_record(handler);
            let (e, f) = per_record(ftrace);
            let (g, h) = per_record(clocks);
            pr_info!("bench: {} records of {} bytes per run, task context, one CPU\n", RECORDS, rs);
            pr_info!("bench: rprof ring push:            {}.{:02} ns/record\n", a, b);
            pr_info!("bench: rprof handler body:         {}.{:02} ns/record\n", c, d);
            let (c, d) = per_record(handler_user);
            pr_info!("bench: rprof handler body, user:   {}.{:02} ns/record\n", c, d);
            pr_info!("bench: ftrace ring_buffer write:   {}.{:02} ns/record ({} dropped)\n", e, f, ftrace_dropped);
            pr_info!("bench: local_clock pair:           {}.{:02} ns\n", g, h);
            stage::set_timing(false);
            let drained = rprof_drain();
            stage::set_timing(true);
            match drained {
                Ok((ns, delivered)) => {
                    let (i, j) = per_record(ns);
                    pr_info!("bench: rprof drain, user sample:   {}.{:02} ns/record ({} delivered)\n", i, j, delivered);
                }
                Err(e) => pr_err!("bench: drain run failed: error {}\n", e.to_errno()),
            }
            let ratio = ring * 1000 / ftrace;
            pr_info!("bench: ratio rprof ring / ftrace ring_buffer = {}.{:03}\n", ratio / 1000, ratio % 1000);
        }
        Err(e) => pr_err!("bench: failed: error {}\n", e.to_errno()),
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The stage timers of `make bench` (bench builds only, `cfg(rprof_bench)`).
//!
//! The data path times its own stages where they run: the overflow
//! handler (its C side calls [`rprof_bench_stage`]), the drain per record
//! and per resolution, each new cookie, each drain pass.  Each call site
//! is `#[cfg(rprof_bench)]`, so the release and KUnit modules contain no
//! timer at all.  The sums live here, beside the drain that owns most of
//! the stages, so that the data path never imports the benchmark
//! ([`crate::bench`] reads the clock and switches timing off from here);
//! [`report_stages`] prints them at STOP and starts afresh.
//!
//! Any context, NMI included: a [`Timer`] reads the clock twice and adds
//! to two atomics.

use crate::kapi::helpers;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;

/// `local_clock()`: what every stage is timed with.
pub(crate) fn clock() -> u64 {
    // SAFETY: `local_clock()` may be called from any context.
    unsafe { helpers::rprof_local_clock() }
}

/// The stages of rprof's data path that bench builds time.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Stage {
    /// The whole overflow handler, `rprof_overflow()` (C and Rust), per
    /// sample; stage 0 is what `src/bench/bench.c` passes.
    Handler = 0,
    /// One ring record through the drain (`Drain::process`: resolution,
    /// context and SAMPLE records, the address-space reference dropped).
    Record = 1,
    /// The resolution of a user sample (VMA lookup, cookie lookup).
    ResolveUser = 2,
    /// The resolution of a kernel sample (module list walk).
    ResolveKernel = 3,
    /// A file seen for the first time: its name, device and inode.
    NewCookie = 4,
    /// One drain pass (`Core::drain_now`), records included.
    Pass = 5,
    /// A chain's frames resolved to cookie+offset (`Drain::stack_with`).
    ChainResolve = 6,
    /// A resolved chain looked up in the stack table (hash and compare).
    ChainIntern = 7,
}

// `RPROF_BENCH_STAGE_HANDLER` in `include/rprof_helpers.h`.
const _: () = assert!(Stage::Handler as u32 == 0);

const NR_STAGES: usize = 8;
const STAGE_NAMES: [&str; NR_STAGES] = ["handler", "drain_record", "resolve_user", "resolve_kernel", "new_cookie", "drain_pass", "chain_resolve", "chain_intern"];

/// Per stage: (nanoseconds, count).  Global atomics: the handlers of all
/// CPUs add to them, which costs a shared cache line, outside the timed
/// region.
static STAGES: [(AtomicU64, AtomicU64); NR_STAGES] = [const { (AtomicU64::new(0), AtomicU64::new(0)) }; NR_STAGES];

fn add(stage: u32, ns: u64) {
    if let Some((sum, n)) = STAGES.get(stage as usize) {
        sum.fetch_add(ns, Ordering::Relaxed);
        n.fetch_add(1, Ordering::Relaxed);
    }
}

/// Adds one timed run of `stage` (a [`Stage`] as a number); the C side of
/// the overflow handler calls this.  Any context, NMI included: two
/// atomic additions.
#[no_mangle]
pub(crate) extern "C" fn rprof_bench_stage(stage: u32, ns: u64) {
    add(stage, ns);
}

/// Times the rest of its scope as one run of a stage.
pub(crate) struct Timer {
    stage: Stage,
    t0: u64,
}

/// Whether [`Timer`]s time their stage: off while the benchmark times
/// the drain as a whole, which their clock reads would inflate.
static TIMING: AtomicBool = AtomicBool::new(true);

/// Switches the [`Timer`]s on or off (see [`TIMING`]).
pub(crate) fn set_timing(on: bool) {
    TIMING.store(on, Ordering::Relaxed);
}

impl Timer {
    pub(crate) fn start(stage: Stage) -> Self {
        let t0 = if TIMING.load(Ordering::Relaxed) { clock() } else { 0 };
        Self { stage, t0 }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if self.t0 != 0 {
            // The drain's worker is unbound: it may move to another CPU
            // within a pass, whose local clock may be a little behind.
            add(self.stage as u32, clock().saturating_sub(self.t0));
        }
    }
}

/// Prints the sums since the last report (one line per stage that ran:
/// `bench: stage NAME: N runs, NS ns, NS/N ns each`) and clears them.
/// Process context (STOP).
pub(crate) fn report_stages() {
    for (name, (sum, n)) in STAGE_NAMES.iter().zip(STAGES.iter()) {
        let ns = sum.swap(0, Ordering::Relaxed);
        let runs = n.swap(0, Ordering::Relaxed);
        if runs > 0 {
            let centi = ns * 100 / runs;
            pr_info!("bench: stage {}: {} runs, {} ns, {}.{:02} ns each\n", name, runs, ns, centi / 100, centi % 100);
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! A perf_event kernel counter with rprof's overflow handler.
//!
//! C header: [`include/linux/perf_event.h`](srctree/include/linux/perf_event.h)
//!
//! Created with `perf_event_create_kernel_counter()` (not in
//! `kernel::bindings`, hence the C glue) on one CPU; released with
//! `perf_event_release_kernel()`, after which perf runs no more overflow
//! handlers for it, so the handler's context may be freed.

use crate::kapi::helpers::{self, CounterAttr};
use crate::sampling::sampler::HandlerCtx;
use core::ffi::c_void;
use kernel::bindings;
use kernel::prelude::*;

/// One sampling counter on one CPU.
///
/// # Invariants
///
/// `event` is a live kernel counter created with `ctx` as its overflow
/// handler context; `ctx` is boxed so its address is stable until `Drop`
/// has released the counter.
pub(crate) struct Counter {
    event: *mut bindings::perf_event,
    _ctx: KBox<HandlerCtx>,
}

// SAFETY: A kernel counter may be released from any process context.
unsafe impl Send for Counter {}
// SAFETY: `&Counter` exposes nothing.
unsafe impl Sync for Counter {}

impl Counter {
    /// Creates a disabled counter on `cpu`.  Errors are perf's (for
    /// example `ENOENT` or `EOPNOTSUPP` when there is no PMU).
    pub(crate) fn new(cpu: u32, attr: &CounterAttr, ctx: HandlerCtx) -> Result<Self> {
        let ctx = KBox::new(ctx, GFP_KERNEL)?;
        let ctx_ptr = &*ctx as *const HandlerCtx as *mut c_void;
        // SAFETY: `attr` is valid for the call; `ctx_ptr` stays valid until
        // the counter is released (it is boxed inside the result).
        let event = unsafe { helpers::rprof_counter_create(cpu as i32, attr, ctx_ptr) };
        // SAFETY: Only inspects the pointer value.
        let err = unsafe { helpers::rprof_ptr_err(event as *const c_void) };
        if err != 0 {
            return Err(Error::from_errno(err as i32));
        }
        // INVARIANT: created above with `ctx`.
        Ok(Self { event, _ctx: ctx })
    }

    /// Starts counting (and sampling).
    pub(crate) fn enable(&self) {
        // SAFETY: `event` is live (type invariant).
        unsafe { helpers::rprof_counter_enable(self.event) };
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: `event` is live and ours; after this returns no handler
        // runs with `ctx`, which is freed right after.
        unsafe { helpers::rprof_counter_release(self.event) };
    }
}

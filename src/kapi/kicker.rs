// SPDX-License-Identifier: GPL-2.0

//! Deferred work that can be kicked from NMI context.
//!
//! C header: [`include/linux/irq_work.h`](srctree/include/linux/irq_work.h),
//! [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)
//!
//! A [`Kicker`] is an irq_work that queues a delayed work on the unbound
//! system workqueue with no delay.  [`Kicker::kick`] is NMI-safe (irq_work is the
//! kernel's way out of NMI context); [`Kicker::schedule`] arms the work to
//! run after a delay, for periodic work, from process context.  The work
//! calls the function given to [`Kicker::new`] with the bound context.

use crate::kapi::helpers;
use core::ffi::{c_uint, c_void};
use kernel::prelude::*;

/// An irq_work plus a delayed work.
///
/// # Invariants
///
/// `ptr` is a live `struct rprof_kicker` owned by this object.
pub(crate) struct Kicker {
    ptr: *mut helpers::RprofKicker,
}

// SAFETY: The C object is designed for use from any context and CPU.
unsafe impl Send for Kicker {}
// SAFETY: As above; `kick` and `schedule` are safe to call concurrently.
unsafe impl Sync for Kicker {}

impl Kicker {
    /// Creates a kicker running `f` in process context.  `f` receives the
    /// context set by [`Kicker::bind`] (null before) and returns the delay
    /// in milliseconds after which it wants to run again (0: only when
    /// kicked or scheduled).
    pub(crate) fn new(f: unsafe extern "C" fn(*mut c_void) -> c_uint) -> Result<Self> {
        // SAFETY: `f` is a valid function for the kicker's lifetime.
        let ptr = unsafe { helpers::rprof_kicker_create(f) };
        if ptr.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: freshly created and owned.
        Ok(Self { ptr })
    }

    /// Sets the context the work function receives.
    ///
    /// # Safety
    ///
    /// Must be called before any [`kick`](Self::kick) or
    /// [`schedule`](Self::schedule), and `ctx` must stay valid for `f` until
    /// the kicker is dropped.
    pub(crate) unsafe fn bind(&self, ctx: *mut c_void) {
        // SAFETY: `ptr` is live (type invariant); no work runs yet.
        unsafe { helpers::rprof_kicker_bind(self.ptr, ctx) };
    }

    /// Runs the work soon.  NMI-safe.
    pub(crate) fn kick(&self) {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { helpers::rprof_kicker_kick(self.ptr) };
    }

    /// The raw pointer, for [`crate::sampling::sampler::HandlerCtx`].
    pub(crate) fn as_ptr(&self) -> *mut helpers::RprofKicker {
        self.ptr
    }

    /// Runs the work now, in the worker, and returns when it has run.
    /// Process context; the caller must hold no lock the work takes.
    pub(crate) fn run_now(&self) {
        // SAFETY: `ptr` is live (type invariant); we may sleep.
        unsafe { helpers::rprof_kicker_run_now(self.ptr) };
    }

    /// Runs the work after `delay_ms`, unless it is already pending.
    pub(crate) fn schedule(&self, delay_ms: u32) {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { helpers::rprof_kicker_schedule(self.ptr, delay_ms) };
    }
}

impl Drop for Kicker {
    fn drop(&mut self) {
        // SAFETY: `ptr` is live and ours; `rprof_kicker_destroy` waits for a
        // pending irq_work and cancels the work (even one that re-queues
        // itself) before freeing it.
        unsafe { helpers::rprof_kicker_destroy(self.ptr) };
    }
}

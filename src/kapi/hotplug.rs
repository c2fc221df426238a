// SPDX-License-Identifier: GPL-2.0

//! CPU hotplug: counters follow CPUs going offline and online.
//!
//! C header: [`include/linux/cpuhotplug.h`](srctree/include/linux/cpuhotplug.h)
//!
//! One dynamic `CPUHP_AP_ONLINE_DYN` state.  Its callbacks run in the
//! hotplug thread of the CPU concerned, in process context, with the CPU
//! hotplug lock held for writing, so the owner's own locks come after the
//! hotplug lock; [`CpusReadGuard`] takes it for reading where code needs a
//! stable set of online CPUs (starting a session).  The owner (the device)
//! hands itself in as a [`CpuEvents`]: this file knows nothing of it.

use crate::kapi::ctx::ArcCtx;
use crate::kapi::helpers;
use core::ffi::{c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

/// What the owner of a [`Registration`] does when a CPU comes or goes.
/// Both run in the CPU's hotplug thread, with the hotplug lock held for
/// writing.
pub(crate) trait CpuEvents: Send + Sync {
    /// `cpu` came online.  Profiling must never stop a CPU from coming
    /// up: errors are the implementation's to log.
    fn cpu_up(&self, cpu: u32);

    /// `cpu` is going offline (it still runs).
    fn cpu_down(&self, cpu: u32);
}

/// The registered hotplug state.  Only one may exist: the C glue keeps a
/// single context pointer.
///
/// # Invariants
///
/// The state is registered with `ctx` and this type's callbacks until
/// `Drop`.
pub(crate) struct Registration<T: CpuEvents> {
    _ctx: ArcCtx<T>,
}

impl<T: CpuEvents> Registration<T> {
    /// Registers the state; no callback runs for CPUs already online.
    pub(crate) fn register(owner: Arc<T>) -> Result<Self> {
        let ctx = ArcCtx::new(owner);
        // SAFETY: `ctx` stays alive until `Drop` unregisters the state, and
        // the callbacks take it as an `ArcCtx<T>`.
        let ret = unsafe { helpers::rprof_hotplug_register(ctx.as_ptr(), cpu_up::<T>, cpu_down::<T>) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered with `ctx`.
        Ok(Self { _ctx: ctx })
    }
}

impl<T: CpuEvents> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); after this no callback runs,
        // and `_ctx` is dropped after this body.
        unsafe { helpers::rprof_hotplug_unregister() };
    }
}

/// `cpu` came online.  Called by the C glue.
///
/// # Safety
///
/// `ctx` is the context of the live [`Registration<T>`].
unsafe extern "C" fn cpu_up<T: CpuEvents>(ctx: *mut c_void, cpu: c_uint) -> c_int {
    // SAFETY: Alive while registered (the caller's contract).
    let owner = unsafe { ArcCtx::<T>::borrow(ctx) };
    owner.cpu_up(cpu);
    0
}

/// `cpu` is going offline (it still runs).  Called by the C glue.
///
/// # Safety
///
/// As [`cpu_up`].
unsafe extern "C" fn cpu_down<T: CpuEvents>(ctx: *mut c_void, cpu: c_uint) -> c_int {
    // SAFETY: Alive while registered (the caller's contract).
    let owner = unsafe { ArcCtx::<T>::borrow(ctx) };
    owner.cpu_down(cpu);
    0
}

/// Holds the CPU hotplug lock for reading: no CPU comes or goes meanwhile.
pub(crate) struct CpusReadGuard(());

impl CpusReadGuard {
    pub(crate) fn new() -> Self {
        // SAFETY: Process context; released in `Drop`.
        unsafe { helpers::rprof_cpus_read_lock() };
        Self(())
    }
}

impl Drop for CpusReadGuard {
    fn drop(&mut self) {
        // SAFETY: Taken in `new`.
        unsafe { helpers::rprof_cpus_read_unlock() };
    }
}

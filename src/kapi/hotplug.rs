// SPDX-License-Identifier: GPL-2.0

//! CPU hotplug: counters follow CPUs going offline and online.
//!
//! C header: [`include/linux/cpuhotplug.h`](srctree/include/linux/cpuhotplug.h)
//!
//! One dynamic `CPUHP_AP_ONLINE_DYN` state.  Its callbacks run in the
//! hotplug thread of the CPU concerned, in process context, with the CPU
//! hotplug lock held for writing, so the device's own locks come after the
//! hotplug lock; [`CpusReadGuard`] takes it for reading where code needs a
//! stable set of online CPUs (starting a session).

use crate::kapi::ctx::ArcCtx;
use crate::device::fops::Rprof;
use crate::kapi::helpers;
use core::ffi::{c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The registered hotplug state.  Only one may exist: the C glue keeps a
/// single context pointer.
///
/// # Invariants
///
/// The state is registered with `ctx` until `Drop`.
pub(crate) struct Registration {
    _ctx: ArcCtx<Rprof>,
}

impl Registration {
    /// Registers the state; no callback runs for CPUs already online.
    pub(crate) fn register(dev: Arc<Rprof>) -> Result<Self> {
        let ctx = ArcCtx::new(dev);
        // SAFETY: `ctx` stays alive until `Drop` unregisters the state.
        let ret = unsafe { helpers::rprof_hotplug_register(ctx.as_ptr()) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered with `ctx`.
        Ok(Self { _ctx: ctx })
    }
}

impl Drop for Registration {
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
/// `ctx` is the context of the live [`Registration`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_cpu_up(ctx: *mut c_void, cpu: c_uint) -> c_int {
    // SAFETY: Alive while registered (the caller's contract).
    let dev = unsafe { ArcCtx::<Rprof>::borrow(ctx) };
    // Profiling must never stop a CPU from coming up: errors are logged.
    dev.cpu_up(cpu);
    0
}

/// `cpu` is going offline (it still runs).  Called by the C glue.
///
/// # Safety
///
/// As [`rprof_cpu_up`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_cpu_down(ctx: *mut c_void, cpu: c_uint) -> c_int {
    // SAFETY: Alive while registered (the caller's contract).
    let dev = unsafe { ArcCtx::<Rprof>::borrow(ctx) };
    dev.cpu_down(cpu);
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

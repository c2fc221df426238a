// SPDX-License-Identifier: GPL-2.0

//! The module notifier: samples in a module are resolved before it goes.
//!
//! C header: [`include/linux/module.h`](srctree/include/linux/module.h)
//!
//! On `MODULE_STATE_GOING` the running session drains every ring while the
//! module's text and name are still there, then writes a MODULE record with
//! the UNLOAD flag for each of its cookies.  New modules need no hook: the
//! drain names a module's text the first time a sample falls into it.

use crate::kapi::ctx::ArcCtx;
use crate::device::fops::Rprof;
use crate::kapi::helpers;
use core::ffi::c_void;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The registered notifier.
///
/// # Invariants
///
/// Registered with `ctx` until `Drop`.
pub(crate) struct Registration {
    _ctx: ArcCtx<Rprof>,
}

impl Registration {
    pub(crate) fn register(dev: Arc<Rprof>) -> Result<Self> {
        let ctx = ArcCtx::new(dev);
        // SAFETY: `ctx` stays alive until `Drop` unregisters.
        let ret = unsafe { helpers::rprof_module_notifier_register(ctx.as_ptr()) };
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
        unsafe { helpers::rprof_module_notifier_unregister() };
    }
}

/// `MODULE_STATE_GOING` of the module `id`.  Called by the C glue.
///
/// # Safety
///
/// `ctx` is the context of the live [`Registration`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_module_going(ctx: *mut c_void, id: *const c_void) {
    // SAFETY: Alive while registered (the caller's contract).
    let dev = unsafe { ArcCtx::<Rprof>::borrow(ctx) };
    dev.module_going(id as usize);
}

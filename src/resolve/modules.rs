// SPDX-License-Identifier: GPL-2.0

//! The module notifier: samples in a module are resolved before it goes.
//!
//! C header: [`include/linux/module.h`](srctree/include/linux/module.h)
//!
//! On `MODULE_STATE_GOING` the owner (the device, handed in as a
//! [`ModuleEvents`]) has the running session drain every ring while the
//! module's text and name are still there, then write a MODULE record with
//! the UNLOAD flag for each of its cookies.  New modules need no hook: the
//! drain names a module's text the first time a sample falls into it.

use crate::kapi::ctx::ArcCtx;
use crate::kapi::helpers;
use core::ffi::c_void;
use kernel::prelude::*;
use kernel::sync::Arc;

/// What the owner of a [`Registration`] does when a module goes.
pub(crate) trait ModuleEvents: Send + Sync {
    /// `MODULE_STATE_GOING` of the module `id` (its `struct module`, as
    /// [`crate::kapi::helpers::ModInfo::id`] names it), while its text
    /// and name are still there.  Process context.
    fn module_going(&self, id: usize);
}

/// The registered notifier.
///
/// # Invariants
///
/// Registered with `ctx` and this type's callback until `Drop`.
pub(crate) struct Registration<T: ModuleEvents> {
    _ctx: ArcCtx<T>,
}

impl<T: ModuleEvents> Registration<T> {
    pub(crate) fn register(owner: Arc<T>) -> Result<Self> {
        let ctx = ArcCtx::new(owner);
        // SAFETY: `ctx` stays alive until `Drop` unregisters, and the
        // callback takes it as an `ArcCtx<T>`.
        let ret = unsafe { helpers::rprof_module_notifier_register(ctx.as_ptr(), module_going::<T>) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered with `ctx`.
        Ok(Self { _ctx: ctx })
    }
}

impl<T: ModuleEvents> Drop for Registration<T> {
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
/// `ctx` is the context of the live [`Registration<T>`].
unsafe extern "C" fn module_going<T: ModuleEvents>(ctx: *mut c_void, id: *const c_void) {
    // SAFETY: Alive while registered (the caller's contract).
    let owner = unsafe { ArcCtx::<T>::borrow(ctx) };
    owner.module_going(id as usize);
}

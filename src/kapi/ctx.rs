// SPDX-License-Identifier: GPL-2.0

//! [`ArcCtx`]: an [`Arc`] lent to C as a `void *` context.
//!
//! The C glue's registrations (misc device, CPU hotplug, module notifier)
//! keep one context pointer each and hand it back to Rust callbacks.  An
//! `ArcCtx` is that pointer: it owns one reference for as long as the
//! registration lives, and gives it back when dropped, which the owner does
//! only after unregistering, when no callback can run any more.

use core::ffi::c_void;
use kernel::sync::Arc;

/// One reference on `T`, held in raw form for C.
///
/// # Invariants
///
/// `ptr` came from [`Arc::into_raw`] and owns that reference until `Drop`.
pub(crate) struct ArcCtx<T> {
    ptr: *const T,
}

// SAFETY: It is an `Arc<T>` in another form.
unsafe impl<T: Send + Sync> Send for ArcCtx<T> {}
// SAFETY: As above.
unsafe impl<T: Send + Sync> Sync for ArcCtx<T> {}

impl<T> ArcCtx<T> {
    pub(crate) fn new(arc: Arc<T>) -> Self {
        // INVARIANT: the reference moves into `ptr`.
        Self { ptr: Arc::into_raw(arc) }
    }

    /// The pointer to register with C.
    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.ptr as *mut c_void
    }

    /// The object behind a pointer a C callback got back.
    ///
    /// # Safety
    ///
    /// `ptr` must be [`ArcCtx::as_ptr`] of an `ArcCtx<T>` that is alive for
    /// `'a`.
    pub(crate) unsafe fn borrow<'a>(ptr: *mut c_void) -> &'a T {
        // SAFETY: The caller guarantees an `ArcCtx` holds a reference.
        unsafe { &*(ptr as *const T) }
    }
}

impl<T> Drop for ArcCtx<T> {
    fn drop(&mut self) {
        // SAFETY: The reference `ptr` owned (type invariant).
        drop(unsafe { Arc::from_raw(self.ptr) });
    }
}

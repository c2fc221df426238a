// SPDX-License-Identifier: GPL-2.0

//! A wait queue for `read()` and `poll()`.
//!
//! C header: [`include/linux/wait.h`](srctree/include/linux/wait.h)
//!
//! 6.12's `CondVar` cannot be handed to `poll_wait()`, so this wraps a bare
//! `wait_queue_head_t` owned by the C glue.

use crate::kapi::helpers;
use crate::kapi::miscdev::File;
use core::ffi::c_void;
use kernel::bindings;
use kernel::prelude::*;

/// A wait queue head.
///
/// # Invariants
///
/// `ptr` is a live `struct rprof_waitq` owned by this object.
pub(crate) struct WaitQueue {
    ptr: *mut helpers::RprofWaitq,
}

// SAFETY: Wait queues are used from any context and CPU.
unsafe impl Send for WaitQueue {}
// SAFETY: As above.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: Plain allocation.
        let ptr = unsafe { helpers::rprof_waitq_create() };
        if ptr.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: freshly created and owned.
        Ok(Self { ptr })
    }

    /// Wakes every waiter (readers and pollers).
    pub(crate) fn wake(&self) {
        // SAFETY: `ptr` is live (type invariant).
        unsafe { helpers::rprof_waitq_wake(self.ptr) };
    }

    /// Sleeps until `cond()` holds; `ERESTARTSYS` if a signal came first.
    pub(crate) fn wait_until<F: Fn() -> bool>(&self, cond: F) -> Result {
        unsafe extern "C" fn trampoline<F: Fn() -> bool>(ctx: *mut c_void) -> bool {
            // SAFETY: `ctx` is the `&F` passed below, alive during the wait.
            let f = unsafe { &*(ctx as *const F) };
            f()
        }
        // SAFETY: `ptr` is live; `cond` outlives the call.
        let ret = unsafe {
            helpers::rprof_waitq_wait(self.ptr, trampoline::<F>, &cond as *const F as *mut c_void)
        };
        if ret == 0 {
            Ok(())
        } else {
            Err(Error::from_errno(ret))
        }
    }

    /// Registers `file`'s poll table on this queue.  The queue must outlive
    /// `file` (see the SAFETY argument inside).
    pub(crate) fn poll_wait(&self, file: &File<'_>, pt: *mut bindings::poll_table_struct) {
        // SAFETY: `file` and `pt` come from the running `poll()`; `ptr` is
        // live.  The caller keeps `self` alive until `file` is released
        // (poll and epoll registrations end before that): the device owns
        // its queue, and every open file holds the device.
        unsafe { helpers::rprof_poll_wait(file.as_ptr(), self.ptr, pt) };
    }
}

impl Drop for WaitQueue {
    fn drop(&mut self) {
        // SAFETY: `ptr` is ours.  Nobody waits any more: sleepers in
        // `wait_until` borrow `self`, and poll registrations end when their
        // files are released, each of which held a reference to the owner
        // of this queue (the device).
        unsafe { helpers::rprof_waitq_destroy(self.ptr) };
    }
}

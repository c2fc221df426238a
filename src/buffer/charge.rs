// SPDX-License-Identifier: GPL-2.0

//! The locked-memory charge of a session's rings and event buffer.
//!
//! One [`Charge`] is made at SET_CONFIG for every byte the session will
//! allocate (its event buffer and a ring for each possible CPU), before
//! anything is allocated, and refused past the owner's limits:
//! `perf_mmap()`'s rule, in `memlock.c` beside it.  It is a counted reference:
//! the session's rings, the event buffer and every mapping of the buffer
//! each hold one, so the memory stays charged until the last of them
//! lets go of it (a replaced session's buffer lives on in its mappings).
//! Process context only.

use crate::kapi::helpers;
use core::ffi::{c_int, c_void};
use core::ptr::NonNull;
use kernel::bindings;
use kernel::prelude::*;

/// One reference on a charge of `bytes`.
///
/// # Invariants
///
/// `ptr` is a live `struct rprof_charge` on which this value holds one
/// reference.
pub(crate) struct Charge {
    ptr: NonNull<c_void>,
    bytes: u64,
}

// SAFETY: The charge is a refcounted C object whose counters are atomics;
// any thread may take or drop a reference.
unsafe impl Send for Charge {}
// SAFETY: `&Charge` only reads `ptr` and `bytes`.
unsafe impl Sync for Charge {}

impl Charge {
    /// Charges `bytes` (rounded up to pages) to the caller: `EPERM` past
    /// its locked-memory limits (without `CAP_IPC_LOCK`), `ENOMEM`.
    pub(crate) fn new(bytes: u64) -> Result<Self> {
        let page = bindings::PAGE_SIZE as u64;
        let pages = bytes.div_ceil(page);
        let pages = usize::try_from(pages).map_err(|_| ENOMEM)?;
        // SAFETY: Reads a module parameter.
        let allowance_kb = unsafe { helpers::rprof_param_mlock_kb() } as usize;
        let mut err: c_int = 0;
        // SAFETY: Process context (SET_CONFIG, or a test's thread).
        let ptr = unsafe { helpers::rprof_charge_new(pages, allowance_kb, &mut err) };
        match NonNull::new(ptr) {
            // INVARIANT: a new charge comes with one reference.
            Some(ptr) => Ok(Self { ptr, bytes: pages as u64 * page }),
            None => {
                // A user may retry in a loop: rate-limited.
                // SAFETY: printk_ratelimit() may be called anywhere.
                if err == -(bindings::EPERM as c_int) && unsafe { helpers::rprof_printk_ratelimit() } {
                    pr_info!(
                        "{} KiB of buffers or unwind tables pass the caller's locked-memory limit (RLIMIT_MEMLOCK beyond mlock_kb={} per CPU; CAP_IPC_LOCK lifts it)\n",
                        pages as u64 * page / 1024,
                        allowance_kb
                    );
                }
                Err(Error::from_errno(err))
            }
        }
    }

    /// The bytes charged (whole pages).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The C object, for a mapping to take its own reference on.
    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}

impl Clone for Charge {
    fn clone(&self) -> Self {
        // SAFETY: `ptr` is live (type invariant): one more reference.
        unsafe { helpers::rprof_charge_get(self.ptr.as_ptr()) };
        // INVARIANT: the reference just taken.
        Self { ptr: self.ptr, bytes: self.bytes }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // SAFETY: Our reference (type invariant), given back once.
        unsafe { helpers::rprof_charge_put(self.ptr.as_ptr()) };
    }
}

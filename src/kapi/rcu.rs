// SPDX-License-Identifier: GPL-2.0

//! The RCU read side as a guard: [`read_lock`] enters it, dropping the
//! [`Guard`] leaves it.
//!
//! C header: [`include/linux/rcupdate.h`](srctree/include/linux/rcupdate.h)
//!
//! Any context, NMI included (`rcu_read_lock()` may be used in NMI
//! handlers): it neither sleeps nor spins.  Sections nest.  6.12's kernel
//! crate has no binding of it; the C glue is `rprof_rcu_read_lock()` and
//! `rprof_rcu_read_unlock()` (`src/kapi/mem.c`).

use crate::kapi::helpers;
use core::marker::PhantomData;

/// An RCU read-side critical section, held while this lives: what RCU
/// protects and was reached under it stays valid until it is dropped.
///
/// # Invariants
///
/// `rcu_read_lock()` was called on this CPU by this task, and
/// `rcu_read_unlock()` is called once, by `Drop`.  It is neither `Send` nor
/// `Sync`, so it ends where it began.
pub(crate) struct Guard {
    _not_send: PhantomData<*mut ()>,
}

/// Enters an RCU read-side critical section until the guard is dropped.
#[inline]
pub(crate) fn read_lock() -> Guard {
    // SAFETY: Any context; paired with the unlock in `Drop`.
    unsafe { helpers::rprof_rcu_read_lock() };
    // INVARIANT: the section is entered here and left in `Drop`.
    Guard { _not_send: PhantomData }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: This guard entered the section, on this CPU and task (type
        // invariant).
        unsafe { helpers::rprof_rcu_read_unlock() };
    }
}

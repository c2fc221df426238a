// SPDX-License-Identifier: GPL-2.0

//! Tasks reached under RCU, and the fields of theirs that the followed set
//! reads (`src/sampling/followed.rs`, `src/resolve/follow.rs`).
//!
//! C header: [`include/linux/sched.h`](srctree/include/linux/sched.h)
//!
//! A [`Task`] borrows the RCU read-side section it was reached under
//! ([`rcu::Guard`]), and stays valid for as long as that lasts: a
//! `task_struct` is freed only after a grace period
//! (`delayed_put_task_struct()`), even if the task exits meanwhile.  The C
//! glue (`task.c`) reads what Rust cannot: `current`, pointers that need
//! `rcu_dereference()`, a bit-field, the `for_each_process()` and
//! `for_each_thread()` steps.
//!
//! **NMI context**: [`Task::current`], [`Task::group`],
//! [`Task::real_parent`] and [`Task::pid`] run in the overflow handler's
//! membership test: one read each, no lock, no sleep, no allocation.  The
//! rest serves the exit probe (under `rcu_read_lock()`, never in NMI).

use crate::kapi::helpers::{self, TaskStruct};
use crate::kapi::rcu;
use core::marker::PhantomData;

/// A task, valid while the RCU read-side section `'a` lasts.
///
/// # Invariants
///
/// `ptr` points to a `task_struct` that stays allocated for `'a`: current,
/// or a task reached under the section that `'a` borrows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Task<'a> {
    ptr: *mut TaskStruct,
    _rcu: PhantomData<&'a rcu::Guard>,
}

impl<'a> Task<'a> {
    /// The running task.  Any context.
    #[inline]
    pub(crate) fn current(_rcu: &'a rcu::Guard) -> Self {
        // SAFETY: Reads current, never null.
        let ptr = unsafe { helpers::rprof_current_task() };
        // INVARIANT: current outlives the section, which ends in this task.
        Self { ptr, _rcu: PhantomData }
    }

    /// The task at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a task that stays allocated while `rcu` lives (the
    /// task a tracepoint passes, for the probe's duration, or one reached
    /// under `rcu`).
    #[inline]
    pub(crate) unsafe fn from_raw(_rcu: &'a rcu::Guard, ptr: *mut TaskStruct) -> Self {
        // INVARIANT: the caller's contract.
        Self { ptr, _rcu: PhantomData }
    }

    /// The process after `prev` on the list of all processes (`prev`
    /// `None`: the first), `None` after the last: `for_each_process()`.
    /// Process context.
    #[inline]
    pub(crate) fn next_process(_rcu: &'a rcu::Guard, prev: Option<Self>) -> Option<Self> {
        let prev = prev.map_or(core::ptr::null_mut(), |t| t.ptr);
        // SAFETY: Under the RCU read lock (`_rcu`); `prev` is null or a
        // task valid under it (type invariant).
        let ptr = unsafe { helpers::rprof_next_process(prev) };
        // INVARIANT: a task on the RCU-safe list, reached under `'a`.
        (!ptr.is_null()).then_some(Self { ptr, _rcu: PhantomData })
    }

    /// This task's thread group: its number (`task_tgid_nr()`, the initial
    /// namespace's) and its leader's start time.  NMI-safe.
    #[inline]
    pub(crate) fn group(self) -> (i32, u64) {
        let mut start = 0;
        // SAFETY: `ptr` is valid for `'a` (type invariant), under RCU, which
        // keeps the group leader too.
        let tgid = unsafe { helpers::rprof_task_group(self.ptr, &mut start) };
        (tgid, start)
    }

    /// This task's real parent.  NMI-safe.
    #[inline]
    pub(crate) fn real_parent(self) -> Self {
        // SAFETY: `ptr` is valid for `'a` (type invariant); the section
        // `'a` is an RCU read side.
        let ptr = unsafe { helpers::rprof_task_real_parent(self.ptr) };
        // INVARIANT: reached with `rcu_dereference()` under `'a`.
        Self { ptr, _rcu: PhantomData }
    }

    /// This task's pid: 0 for the idle tasks.  NMI-safe.
    #[inline]
    pub(crate) fn pid(self) -> i32 {
        // SAFETY: `ptr` is valid for `'a` (type invariant).
        unsafe { helpers::rprof_task_pid(self.ptr) }
    }

    /// Whether this task has children: a racy peek (the list is
    /// `tasklist_lock`'s, which modules cannot take).
    #[inline]
    pub(crate) fn has_children(self) -> bool {
        // SAFETY: `ptr` is valid for `'a` (type invariant).
        unsafe { helpers::rprof_task_has_children(self.ptr) }
    }

    /// Whether a thread of this task's group is not exiting (`PF_EXITING`
    /// clear): `for_each_thread()`.
    #[inline]
    pub(crate) fn group_has_live_thread(self) -> bool {
        // SAFETY: `ptr` is valid for `'a` (type invariant), under RCU, as
        // `for_each_thread()` needs.
        unsafe { helpers::rprof_group_has_live_thread(self.ptr) }
    }

    /// Whether this task is a child subreaper (a racy peek at a bit-field).
    #[inline]
    pub(crate) fn is_subreaper(self) -> bool {
        // SAFETY: `ptr` is valid for `'a` (type invariant), and so is its
        // `signal_struct`, freed with it.
        unsafe { helpers::rprof_task_subreaper(self.ptr) }
    }

    /// Whether this task has exited (a zombie, or dead).
    #[inline]
    pub(crate) fn exited(self) -> bool {
        // SAFETY: `ptr` is valid for `'a` (type invariant).
        unsafe { helpers::rprof_task_exited(self.ptr) }
    }
}

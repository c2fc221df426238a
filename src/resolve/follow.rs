// SPDX-License-Identifier: GPL-2.0

//! The processes a descendants filter follows (`RPROF_CONFIG_PID_DESCENDANTS`):
//! the filter's thread group, every process below it by `real_parent`, and
//! the orphans those leave when they exit.  A process whose parent exits is
//! re-parented to init or a subreaper and is no longer below the target by
//! `real_parent`, though the target started it: a `sched_process_exit` probe
//! (C, `src/resolve/follow.c`) records the children of every followed process that
//! exits, before they are re-parented.  The table holds a bounded number of
//! orphans; those that find it full are counted (`rprof_stats`), not
//! followed.
//!
//! The probe serves the set of the session that STARTed last (one session
//! runs at a time, [`Follow::publish`]); it is registered with the first
//! set and removed when the module goes ([`ExitProbe`]).

use crate::kapi::helpers::{self, RprofFollow};
use kernel::prelude::*;

/// A followed set, which exits update from its session's START until the
/// next START publishes another.
///
/// # Invariants
///
/// `ptr` is a live `struct rprof_follow` from `rprof_follow_create`, owned
/// by this object.
pub(crate) struct Follow {
    ptr: *mut RprofFollow,
}

// SAFETY: The C object is read lock-free (NMI) and written under its own
// lock; it may be created and destroyed in any sleepable process context.
unsafe impl Send for Follow {}
// SAFETY: As above: shared access is what the C side is built for.
unsafe impl Sync for Follow {}

impl Follow {
    /// Follows thread group `tgid` (the initial namespace's number), once
    /// [`publish`](Self::publish)ed.  Sleepable process context.
    pub(crate) fn new(tgid: i32, start: u64) -> Result<Self> {
        // SAFETY: Sleepable process context (the caller's); it may take the
        // CPU hotplug lock (the probe's registration), which the callers
        // (SET_CONFIG, KUnit) do not hold.
        let ptr = unsafe { helpers::rprof_follow_create(tgid, start) };
        // SAFETY: Reads the pointer's error value only.
        let err = unsafe { helpers::rprof_ptr_err(ptr as *const core::ffi::c_void) };
        if err != 0 {
            return Err(Error::from_errno(err as i32));
        }
        // INVARIANT: a live object, now ours.
        Ok(Self { ptr })
    }

    /// The pointer for a [`crate::sampling::sampler::HandlerCtx`]: valid while this
    /// object lives (the session drops it only after its counters).
    pub(crate) fn as_ptr(&self) -> *mut RprofFollow {
        self.ptr
    }

    /// Has exits update this set from now on, in place of any other (the
    /// session's START).  Takes no lock.
    pub(crate) fn publish(&self) {
        // SAFETY: `ptr` is live (type invariant); publishing is an atomic
        // store.
        unsafe { helpers::rprof_follow_publish(self.ptr) };
    }

    /// Exits no longer update this set once this returns (the session's
    /// STOP): a stopped session's figures stay as they are.  Sleeps (waits
    /// for a grace period).
    pub(crate) fn retract(&self) {
        // SAFETY: `ptr` is live (type invariant); sleepable process
        // context (STOP, or a test's).
        unsafe { helpers::rprof_follow_retract(self.ptr) };
    }

    /// Orphans followed, and those the table had no room for.
    pub(crate) fn orphans(&self) -> (u64, u64) {
        let mut lost = 0;
        // SAFETY: `ptr` is live (type invariant).
        let n = unsafe { helpers::rprof_follow_orphans(self.ptr, &mut lost) };
        (n, lost)
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        // SAFETY: `ptr` is live and ours (type invariant); the session drops
        // this only after its counters, so no overflow handler uses it, and
        // destroy frees it only after the exit probes reading it are done.
        unsafe { helpers::rprof_follow_destroy(self.ptr) };
    }
}

/// The exit probe's registration, for the module's lifetime: `Drop`
/// removes it (if a set was ever made) and waits for running calls.
pub(crate) struct ExitProbe;

impl Drop for ExitProbe {
    fn drop(&mut self) {
        // SAFETY: Module exit, process context: every session, and every
        // set with it, is gone (the device went first).
        unsafe { helpers::rprof_follow_unregister() };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The processes a descendants filter follows (`RPROF_CONFIG_PID_DESCENDANTS`):
//! the filter's thread group, every process below it by `real_parent`, and
//! the orphans those leave when they exit.  A process whose parent exits is
//! re-parented to init or a subreaper and is no longer below the target by
//! `real_parent`, though the target started it: a `sched_process_exit` probe
//! ([`rprof_follow_exit`]) records the children of every followed process
//! that exits, before they are re-parented.  The table holds a bounded
//! number of orphans; those that find it full are counted (`rprof_stats`),
//! not followed.
//!
//! The set and its membership test, which the overflow handler runs, are
//! [`FollowSet`] (`src/sampling/followed.rs`, NMI-safe); this file has its
//! life, its writers and the probe, in process context.  The probe serves
//! the set of the session that STARTed last (one session runs at a time,
//! [`Follow::publish`]); it is registered with the first set and removed
//! when the module goes ([`ExitProbe`]).  C glue: `follow.c` (the probe's
//! registration, whose type depends on the kernel version), the set's raw
//! spinlock and `kfree_rcu()` (`crate::sampling::followed`'s
//! `followed.c`), and the task fields of [`crate::kapi::task`].

use crate::kapi::helpers::{self, TaskStruct};
use crate::kapi::rcu;
use crate::kapi::task::Task;
use crate::sampling::followed::{FollowSet, Group, Tasks};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::alloc::flags::__GFP_ZERO;
use kernel::prelude::*;

/// Processes the exit probe looks at for one exit, at most: the walk runs in
/// the exiting task under `rcu_read_lock()` (preemption off on kernels
/// without preemptible RCU), so its time is bounded; a walk cut there counts
/// as one orphan lost.  The default `pid_max` is 32768.
pub(crate) const EXIT_WALK_MAX: usize = 32768;

/// The set the exit probe updates: the one the session that STARTed last
/// published ([`Follow::publish`]), or null.  The probe reads it under
/// `rcu_read_lock()`, so a set is freed only after a grace period
/// (`kfree_rcu()`).  It is written with single atomic operations (a set
/// clears it only if it is still its own), so publishing takes no lock
/// (START holds the CPU hotplug lock, which the probe's registration takes
/// inside its own mutex).
static FOLLOWED: AtomicPtr<FollowSet> = AtomicPtr::new(core::ptr::null_mut());

/// What the exit probe reads of tasks, besides what the membership test
/// does: [`Task`]s under `rcu_read_lock()`, or a KUnit case's made-up
/// processes.
pub(crate) trait ExitTasks: Tasks {
    /// Whether `t` has children (a racy peek).
    fn has_children(self, t: Self::Task) -> bool;
    /// Whether a thread of `t`'s group is not exiting.
    fn group_has_live_thread(self, t: Self::Task) -> bool;
    /// Whether `t` is a child subreaper.
    fn is_subreaper(self, t: Self::Task) -> bool;
    /// Whether `t` has exited (a zombie, or dead).
    fn exited(self, t: Self::Task) -> bool;
    /// The process after `prev` (`None`: the first), `None` after the last.
    fn next_process(self, prev: Option<Self::Task>) -> Option<Self::Task>;
}

impl<'a> ExitTasks for &'a rcu::Guard {
    fn has_children(self, t: Task<'a>) -> bool {
        t.has_children()
    }

    fn group_has_live_thread(self, t: Task<'a>) -> bool {
        t.group_has_live_thread()
    }

    fn is_subreaper(self, t: Task<'a>) -> bool {
        t.is_subreaper()
    }

    fn exited(self, t: Task<'a>) -> bool {
        t.exited()
    }

    fn next_process(self, prev: Option<Task<'a>>) -> Option<Task<'a>> {
        Task::next_process(self, prev)
    }
}

/// Puts thread group `g` in `set`'s orphan table, or counts it lost when
/// the table is full.  Process or IRQ context, never NMI: takes the set's
/// raw spinlock with interrupts off.
pub(crate) fn insert(set: &FollowSet, g: Group) {
    // SAFETY: The lock was initialised before the set was shared
    // (`FollowSet` invariant); not NMI (this function's contract).
    let flags = unsafe { helpers::rprof_follow_lock(set.lock_ptr()) };
    // SAFETY: Under the lock, just taken.
    unsafe { set.add_locked(g) };
    // SAFETY: Taken above with these flags.
    unsafe { helpers::rprof_follow_unlock(set.lock_ptr(), flags) };
}

/// Where `exit_notify()` will send `p`'s children, as `find_new_reaper()`
/// picks: a thread of `p` that is not exiting keeps them (true), and so
/// does the nearest subreaper above `p` if it is followed itself (true);
/// otherwise they leave the followed tree (false).  Under
/// `rcu_read_lock()`; racy, as the re-parenting has not happened yet: a
/// miss adds an entry that costs a slot, or leaves out an orphan of two
/// threads exiting at once.
pub(crate) fn children_stay<T: ExitTasks>(set: &FollowSet, tasks: T, p: T::Task) -> bool {
    if tasks.group_has_live_thread(p) {
        return true;
    }
    let mut r = p;
    for _ in 0..crate::sampling::followed::MAX_ANCESTORS {
        let t = tasks.real_parent(r);
        if t == r || tasks.pid(t) == 0 {
            break;
        }
        // A racy peek at a bit-field.
        if tasks.is_subreaper(t) {
            return set.follows(tasks, t);
        }
        r = t;
    }
    false
}

/// `sched_process_exit`, before `exit_notify()` re-parents `p`'s children:
/// a followed task whose children would leave the followed tree (its thread
/// group is dying and no followed subreaper takes them) hands the live ones
/// (processes, never threads, which have their creator's parent; not
/// zombies) to the orphan table.  The children list is `tasklist_lock`'s,
/// which modules cannot take: the children are found on the RCU-safe list
/// of all processes instead (`for_each_process()`), by their `real_parent`,
/// which `exit_notify()` has not changed yet.  Only a task with children
/// pays for that walk; the `list_empty()` peek is racy, and a child cloned
/// with `CLONE_PARENT` by a grandchild in this window is missed.  At most
/// [`EXIT_WALK_MAX`] processes are looked at.  Under `rcu_read_lock()`.
pub(crate) fn exit<T: ExitTasks>(set: &FollowSet, tasks: T, p: T::Task) {
    if !tasks.has_children(p) {
        return;
    }
    if !set.follows(tasks, p) || children_stay(set, tasks, p) {
        return;
    }
    let mut seen = 0;
    let mut t = tasks.next_process(None);
    while let Some(c) = t {
        seen += 1;
        if seen > EXIT_WALK_MAX {
            // Children past the bound are not looked for.
            set.count_lost();
            break;
        }
        if tasks.real_parent(c) == p && !tasks.exited(c) {
            insert(set, tasks.group(c));
        }
        t = tasks.next_process(Some(c));
    }
}

/// The exit probe's body, called by `rprof_exit_probe()` (`follow.c`) for
/// every exiting task `p` while the probe is registered: [`exit`] on the
/// published set, if any.  The probe holds its own `rcu_read_lock()` (on
/// 7.2 tracepoints run under SRCU, preemptible).
///
/// # Safety
///
/// `p` is the exiting task, valid for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_follow_exit(p: *mut TaskStruct) {
    let rcu = rcu::read_lock();
    // SAFETY: A published set is freed only after a grace period that
    // begins once it is no longer published (`retract`, `Drop`), and this
    // read side began before; null is `None`.
    let Some(set) = (unsafe { FOLLOWED.load(Ordering::Acquire).as_ref() }) else {
        return;
    };
    // SAFETY: The tracepoint's task is valid for the whole probe, inside
    // which `rcu` lives.
    let p = unsafe { Task::from_raw(&rcu, p) };
    exit(set, &rcu, p);
}

/// A followed set, which exits update from its session's START until the
/// next START publishes another.
///
/// # Invariants
///
/// `set` is a live, initialised [`FollowSet`] allocated by [`Follow::new`]
/// (kmalloc) and owned by this object; it is freed after a grace period
/// once it is no longer published (`Drop`).
pub(crate) struct Follow {
    set: NonNull<FollowSet>,
}

// SAFETY: The set is read lock-free (NMI) and written under its own lock
// (`FollowSet` is `Sync`); it may be freed from any sleepable process
// context.
unsafe impl Send for Follow {}
// SAFETY: As above: shared access is what the set is built for.
unsafe impl Sync for Follow {}

impl Follow {
    /// Follows thread group `tgid` (the initial namespace's number) that
    /// started at `start`, once [`publish`](Self::publish)ed: the set is not
    /// updated by exits until then.  Sleepable process context (SET_CONFIG,
    /// KUnit): it may register the exit probe, which takes the CPU hotplug
    /// lock.
    pub(crate) fn new(tgid: i32, start: u64) -> Result<Self> {
        let slot = KBox::<FollowSet>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        // A `MaybeUninit<FollowSet>` has the layout of a `FollowSet`.
        let set = NonNull::from(KBox::leak(slot)).cast::<FollowSet>();
        // SAFETY: Just allocated, all zero (`__GFP_ZERO`), not shared.
        unsafe { FollowSet::init(set.as_ptr(), Group { tgid, start }) };
        // SAFETY: Sleepable process context (the caller's), which does not
        // hold the CPU hotplug lock.
        let ret = unsafe { helpers::rprof_exit_probe_register() };
        if ret != 0 {
            // SAFETY: The box leaked above, initialised and never shared.
            drop(unsafe { KBox::from_raw(set.as_ptr()) });
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: a live, initialised set, now ours.
        Ok(Self { set })
    }

    /// The set.
    pub(crate) fn set(&self) -> &FollowSet {
        // SAFETY: Live while `self` is (type invariant).
        unsafe { self.set.as_ref() }
    }

    /// The pointer for a [`crate::sampling::sampler::HandlerCtx`]: valid
    /// while this object lives (the session drops it only after its
    /// counters).
    pub(crate) fn as_ptr(&self) -> *const FollowSet {
        self.set.as_ptr()
    }

    /// Has exits update this set from now on, in place of any other (the
    /// session's START).  Takes no lock.
    pub(crate) fn publish(&self) {
        FOLLOWED.store(self.set.as_ptr(), Ordering::Release);
    }

    /// Whether exits update this set (it is the published one).
    #[cfg(rprof_kunit)]
    pub(crate) fn published(&self) -> bool {
        FOLLOWED.load(Ordering::Relaxed) == self.set.as_ptr()
    }

    /// Exits no longer update this set once this returns (the session's
    /// STOP), so the orphan counts of a stopped session stay as they were:
    /// a probe that still read the set finishes within the grace period
    /// waited for (the probe holds `rcu_read_lock()` while it uses the
    /// set).  Sleeps.
    pub(crate) fn retract(&self) {
        let own = self.set.as_ptr();
        if FOLLOWED.compare_exchange(own, core::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            // SAFETY: Sleepable process context (STOP, or a test's).
            unsafe { helpers::rprof_synchronize_rcu() };
        }
    }

    /// Orphans followed, and those the table had no room for.
    pub(crate) fn orphans(&self) -> (u64, u64) {
        self.set().orphans()
    }
}

impl Drop for Follow {
    /// Frees the set once no exit probe can still be reading it (after a
    /// grace period).  The session drops this only after its counters, so
    /// no overflow handler reaches the set any more.  Process context.
    fn drop(&mut self) {
        let own = self.set.as_ptr();
        // Only if it is still ours: a later START's set stays.
        let _ = FOLLOWED.compare_exchange(own, core::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst);
        // SAFETY: Ours (type invariant) and no longer published; a probe
        // that read it before holds the RCU read lock, so kfree_rcu() frees
        // it after that probe is done.  Allocated by kmalloc (`KBox`), and
        // nothing in it needs dropping.
        unsafe { helpers::rprof_kfree_rcu(own.cast(), self.set().rcu_head()) };
    }
}

/// The exit probe's registration, for the module's lifetime: `Drop`
/// removes it (if a set was ever made) and waits for running calls.
pub(crate) struct ExitProbe;

impl Drop for ExitProbe {
    fn drop(&mut self) {
        // SAFETY: Module exit, process context: every session, and every
        // set with it, is gone (the device went first).
        unsafe { helpers::rprof_exit_probe_unregister() };
    }
}

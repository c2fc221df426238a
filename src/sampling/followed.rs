// SPDX-License-Identifier: GPL-2.0

//! The set of processes a descendants filter follows
//! (`RPROF_CONFIG_PID_DESCENDANTS`), and the test of whether a task is in
//! it.
//!
//! **NMI context**: [`FollowSet::follows_current`] and
//! [`current_group_started`] run in the overflow handler (NMI, or hard IRQ
//! for an hrtimer counter), nested over anything on the CPU.  Nothing here
//! sleeps, locks or allocates: the table is read lock-free (acquire and
//! relaxed loads), and tasks are reached under RCU only
//! ([`crate::kapi::task`]).  The writer of the table
//! ([`FollowSet::add_locked`]) runs under the set's raw spinlock, which the
//! exit probe takes ([`crate::resolve::follow`]), never in NMI; the set's
//! life (allocation, publishing, freeing) is there too.
//!
//! The set holds the filter's thread group, every process below it by
//! `real_parent`, and the orphans, the children a followed process left when
//! it exited (re-parented to init or a subreaper, they are no longer below
//! it by `real_parent`; their own children are, through them).  The filter's
//! process and each orphan are named by thread group number and start time
//! ([`Group`]), so a later process that gets the same number is not taken
//! for them.

use crate::kapi::helpers;
use crate::kapi::rcu;
use crate::kapi::task::Task;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use kernel::bindings;
use kernel::types::Opaque;

/// Parents walked at most: a bound on the walk's time in NMI context.  A
/// task more than this many generations below the filter's process is not
/// kept (a fork chain that deep is built on purpose, not by a build or a
/// shell script).
pub(crate) const MAX_ANCESTORS: usize = 128;

/// Orphans a set holds; those that find it full are counted lost.
pub(crate) const ORPHANS: usize = 64;

/// A process: its thread group number (the initial namespace's) and its
/// leader's start time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Group {
    pub(crate) tgid: i32,
    pub(crate) start: u64,
}

/// The task fields the walks read: [`Task`]s under an RCU read-side
/// section (`&rcu::Guard`), or a KUnit case's made-up tree.
pub(crate) trait Tasks: Copy {
    /// A task.
    type Task: Copy + PartialEq;
    /// `t`'s thread group.
    fn group(self, t: Self::Task) -> Group;
    /// `t`'s real parent.
    fn real_parent(self, t: Self::Task) -> Self::Task;
    /// `t`'s pid: 0 for the idle tasks.
    fn pid(self, t: Self::Task) -> i32;
}

impl<'a> Tasks for &'a rcu::Guard {
    type Task = Task<'a>;

    #[inline]
    fn group(self, t: Task<'a>) -> Group {
        let (tgid, start) = t.group();
        Group { tgid, start }
    }

    #[inline]
    fn real_parent(self, t: Task<'a>) -> Task<'a> {
        t.real_parent()
    }

    #[inline]
    fn pid(self, t: Task<'a>) -> i32 {
        t.pid()
    }
}

/// One orphan's entry.
struct Orphan {
    tgid: AtomicI32,
    start: AtomicU64,
}

/// A followed set: the filter's process and a table of orphans.
///
/// # Invariants
///
/// Entries `[0, n)` of `orphans` are written once, before `n` covers them
/// (a release store), and never change; `n` only grows, to at most
/// [`ORPHANS`]; writers hold `lock`, which is initialised before the set
/// is shared ([`FollowSet::init`]).  `lost` counts the orphans that found
/// the table full (and the exit walks cut short).  `rcu` is used only to
/// free the set.
pub(crate) struct FollowSet {
    target: Group,
    n: AtomicU32,
    orphans: [Orphan; ORPHANS],
    lost: AtomicU64,
    lock: Opaque<bindings::raw_spinlock>,
    rcu: Opaque<bindings::callback_head>,
}

// SAFETY: The table is atomics, read lock-free and written under `lock`
// (type invariant); `lock` and `rcu` are touched only through the C glue,
// whose raw spinlock and kfree_rcu() serve any CPU.
unsafe impl Sync for FollowSet {}
// SAFETY: As above: nothing in it belongs to one task or CPU.
unsafe impl Send for FollowSet {}

impl FollowSet {
    /// Makes `slot` the set of `target`, with an empty table.
    ///
    /// # Safety
    ///
    /// `slot` is valid for writes, all zero (a valid empty table: atomics
    /// and opaque C objects) and not shared yet.
    pub(crate) unsafe fn init(slot: *mut Self, target: Group) {
        // SAFETY: `slot` is valid for writes and not shared (the caller's
        // contract).
        unsafe { core::ptr::addr_of_mut!((*slot).target).write(target) };
        // SAFETY: As above, and any bytes are a valid `Opaque`; the lock is
        // initialised before anyone can take it.
        unsafe { helpers::rprof_follow_lock_init((*slot).lock.get()) };
        // INVARIANT: the table is empty (`n` is 0) and the lock ready.
    }

    /// The raw spinlock the writers hold.
    pub(crate) fn lock_ptr(&self) -> *mut bindings::raw_spinlock {
        self.lock.get()
    }

    /// The `rcu_head` with which the set is freed.
    pub(crate) fn rcu_head(&self) -> *mut bindings::callback_head {
        self.rcu.get()
    }

    fn has_n(&self, n: usize, g: Group) -> bool {
        self.orphans[..n]
            .iter()
            .any(|o| o.tgid.load(Ordering::Relaxed) == g.tgid && o.start.load(Ordering::Relaxed) == g.start)
    }

    /// The entries published so far: an acquire load, which makes them
    /// visible (type invariant).
    fn published(&self) -> usize {
        (self.n.load(Ordering::Acquire) as usize).min(ORPHANS)
    }

    /// Whether `g` is in the orphan table.
    pub(crate) fn has(&self, g: Group) -> bool {
        self.has_n(self.published(), g)
    }

    /// Puts `g` in the orphan table, or counts it lost when the table is
    /// full; nothing if it is there already.
    ///
    /// # Safety
    ///
    /// The caller holds [`FollowSet::lock_ptr`] (never in NMI).
    pub(crate) unsafe fn add_locked(&self, g: Group) {
        if self.has(g) {
            // already there
        } else if self.published() == ORPHANS {
            self.lost.fetch_add(1, Ordering::Relaxed);
        } else {
            // Only writers change `n`, and the caller holds their lock.
            let n = self.published();
            self.orphans[n].tgid.store(g.tgid, Ordering::Relaxed);
            self.orphans[n].start.store(g.start, Ordering::Relaxed);
            // INVARIANT: the entry is written before `n` covers it.
            self.n.store(n as u32 + 1, Ordering::Release);
        }
    }

    /// Counts one orphan lost (an exit walk cut short).
    pub(crate) fn count_lost(&self) {
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// Orphans followed, and those the table had no room for.
    pub(crate) fn orphans(&self) -> (u64, u64) {
        (self.published() as u64, self.lost.load(Ordering::Relaxed))
    }

    /// Whether `t` is followed: it, or one of its `MAX_ANCESTORS - 1`
    /// nearest ancestors by `real_parent`, is the filter's process or an
    /// orphan.  `tasks` holds the RCU read side (so every parent reached
    /// stays valid until it ends, even if it exits meanwhile), or is a
    /// test's.  Takes no lock, calls nothing that sleeps: NMI-safe.
    pub(crate) fn follows<T: Tasks>(&self, tasks: T, mut t: T::Task) -> bool {
        let n = self.published();
        for _ in 0..MAX_ANCESTORS {
            let g = tasks.group(t);
            if g == self.target || self.has_n(n, g) {
                return true;
            }
            let p = tasks.real_parent(t);
            // init_task is its own parent; the idle tasks are pid 0.
            if p == t || tasks.pid(p) == 0 {
                break;
            }
            t = p;
        }
        false
    }

    /// Whether current is followed (the overflow handler's pid filter).
    /// NMI context: an RCU walk up current's parents, no lock.
    pub(crate) fn follows_current(&self) -> bool {
        let rcu = rcu::read_lock();
        self.follows(&rcu, Task::current(&rcu))
    }
}

/// Current's thread group.  Any context.
pub(crate) fn current_group() -> Group {
    let rcu = rcu::read_lock();
    (&rcu).group(Task::current(&rcu))
}

/// Whether current's thread group was started at `start`, i.e. is the
/// process the filter named and not a later one that got its number.  NMI
/// context (the pid filter).
pub(crate) fn current_group_started(start: u64) -> bool {
    current_group().start == start
}

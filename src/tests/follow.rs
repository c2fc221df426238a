// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rprof-follow`: the followed set's logic
//! (`src/sampling/followed.rs`, `src/resolve/follow.rs`) on made-up task
//! trees: the ancestor bound, the orphan table filling up, and the exit
//! probe's decision and bounded walk.  The pid filter through the handler,
//! on real tasks, is in `rprof-pipeline`.

use crate::kapi::kunit::{kassert, kassert_eq, kunit_suite, Test};
use crate::resolve::follow::{self, ExitTasks, Follow, EXIT_WALK_MAX};
use crate::sampling::followed::{Group, Tasks, MAX_ANCESTORS, ORPHANS};

/// Made-up task `i`'s thread group: number `i`, started at `10 * i`.
fn group(i: usize) -> Group {
    Group { tgid: i as i32, start: 10 * i as u64 }
}

/// A set following made-up process 1 (not published: real exits leave it
/// alone).
fn set_of_one(t: &mut Test) -> Option<Follow> {
    let g = group(1);
    let follow = Follow::new(g.tgid, g.start).ok();
    if follow.is_none() {
        t.fail(crate::kapi::kunit::file_cstr!(), core::line!(), format_args!("no followed set"));
    }
    follow
}

/// A chain of made-up tasks: task `i` (pid `i`) is the child of task
/// `i - 1`, and task 0 is an idle task (pid 0, its own parent).
#[derive(Clone, Copy)]
struct Chain;

impl Tasks for Chain {
    type Task = usize;

    fn group(self, t: usize) -> Group {
        group(t)
    }

    fn real_parent(self, t: usize) -> usize {
        t.saturating_sub(1)
    }

    fn pid(self, t: usize) -> i32 {
        t as i32
    }
}

/// The walk up the parents looks at a task and its `MAX_ANCESTORS - 1`
/// nearest ancestors, from the filter's process and from each orphan, and
/// never at an idle task above them.
fn follow_ancestor_bound(t: &mut Test) {
    let Some(follow) = set_of_one(t) else { return };
    let set = follow.set();
    let deepest = MAX_ANCESTORS; // 127 generations below process 1
    kassert!(t, set.follows(Chain, 1), "the filter's process itself");
    kassert!(t, set.follows(Chain, deepest), "task {} is {} generations below", deepest, deepest - 1);
    kassert!(t, !set.follows(Chain, deepest + 1), "task {} is past the bound", deepest + 1);
    // An orphan starts a walk's target of its own.
    follow::insert(set, group(500));
    kassert!(t, set.follows(Chain, 500 + deepest - 1));
    kassert!(t, !set.follows(Chain, 500 + deepest));
    // A process of the orphan's number that started at another time is
    // another process.
    follow::insert(set, Group { tgid: 1000, start: 1 });
    kassert!(t, !set.follows(Chain, 1000));
    // The idle task (pid 0) ends the walk before it is looked at.
    let Ok(idle) = Follow::new(0, 0) else {
        kassert!(t, false, "no followed set");
        return;
    };
    kassert!(t, !idle.set().follows(Chain, 5), "the idle task is no one's ancestor");
}

/// The orphan table holds `ORPHANS` thread groups; one already there
/// takes no slot, and each one past a full table counts as lost.
fn follow_full_table_counts_lost(t: &mut Test) {
    let Some(follow) = set_of_one(t) else { return };
    let set = follow.set();
    follow::insert(set, group(100));
    follow::insert(set, group(100));
    kassert_eq!(t, follow.orphans(), (1, 0));
    for i in 1..ORPHANS {
        follow::insert(set, group(100 + i));
    }
    kassert_eq!(t, follow.orphans(), (ORPHANS as u64, 0));
    follow::insert(set, group(100));
    kassert_eq!(t, follow.orphans(), (ORPHANS as u64, 0));
    follow::insert(set, group(100 + ORPHANS));
    follow::insert(set, group(101 + ORPHANS));
    kassert_eq!(t, follow.orphans(), (ORPHANS as u64, 2));
    kassert!(t, set.has(group(100 + ORPHANS - 1)));
    kassert!(t, !set.has(group(100 + ORPHANS)), "a lost orphan is not followed");
}

/// Made-up processes `1..=n`, in that order on the list of all processes.
/// Process 1 is the filter's, whose parent is the idle task 0; process 2
/// exits, with children `children` (process `zombie` among them has
/// exited already); the others are children of process 1.  With `reaper`,
/// process 2's parent is process 3, a subreaper, whose parent is process 1
/// if `reaper_followed`, else the idle task.
#[derive(Clone, Copy)]
struct Procs {
    n: usize,
    children: (usize, usize),
    zombie: usize,
    live_thread: bool,
    reaper: bool,
    reaper_followed: bool,
}

const EXITING: usize = 2;

impl Procs {
    fn new(n: usize, children: (usize, usize)) -> Self {
        Self { n, children, zombie: 0, live_thread: false, reaper: false, reaper_followed: false }
    }
}

impl Tasks for Procs {
    type Task = usize;

    fn group(self, t: usize) -> Group {
        group(t)
    }

    fn real_parent(self, t: usize) -> usize {
        match t {
            0 | 1 => 0,
            EXITING if self.reaper => 3,
            3 if self.reaper && !self.reaper_followed => 0,
            c if c >= self.children.0 && c < self.children.1 => EXITING,
            _ => 1,
        }
    }

    fn pid(self, t: usize) -> i32 {
        t as i32
    }
}

impl ExitTasks for Procs {
    fn has_children(self, t: usize) -> bool {
        t == EXITING && self.children.0 < self.children.1
    }

    fn group_has_live_thread(self, t: usize) -> bool {
        t == EXITING && self.live_thread
    }

    fn is_subreaper(self, t: usize) -> bool {
        t == 3 && self.reaper
    }

    fn exited(self, t: usize) -> bool {
        t == self.zombie
    }

    fn next_process(self, prev: Option<usize>) -> Option<usize> {
        let next = prev.map_or(1, |p| p + 1);
        (next <= self.n).then_some(next)
    }
}

/// The orphans (followed, lost) an exit of process 2 among `procs` leaves
/// in a fresh set of process 1, after `orphans` were put in it.
fn exit_orphans(t: &mut Test, procs: Procs, orphans: &[usize]) -> Option<(u64, u64)> {
    let follow = set_of_one(t)?;
    for &o in orphans {
        follow::insert(follow.set(), group(o));
    }
    follow::exit(follow.set(), procs, EXITING);
    Some(follow.orphans())
}

/// The exit probe's decision: a followed process's live children become
/// orphans (zombies do not) only when they would leave the followed tree:
/// not while a thread of its group lives on, nor when a followed subreaper
/// takes them; a process that is not followed leaves nothing.
fn follow_exit_decision(t: &mut Test) {
    let plain = Procs { zombie: 12, ..Procs::new(20, (10, 15)) };
    kassert_eq!(t, exit_orphans(t, plain, &[]), Some((4, 0)));
    kassert_eq!(t, exit_orphans(t, Procs { live_thread: true, ..plain }, &[]), Some((0, 0)));
    let reaper = Procs { reaper: true, reaper_followed: true, ..plain };
    kassert_eq!(t, exit_orphans(t, reaper, &[]), Some((0, 0)));
    // Under a subreaper that is not followed, process 2 is followed only
    // as an orphan itself; its children leave the tree with it.
    let outside = Procs { reaper_followed: false, ..reaper };
    kassert_eq!(t, exit_orphans(t, outside, &[]), Some((0, 0)));
    kassert_eq!(t, exit_orphans(t, outside, &[EXITING]), Some((1 + 4, 0)));
    // More children than the table holds: the rest are lost.
    kassert_eq!(t, exit_orphans(t, Procs::new(200, (10, 110)), &[]), Some((ORPHANS as u64, 100 - ORPHANS as u64)));
}

/// The walk over all processes looks at `EXIT_WALK_MAX` of them at most;
/// a walk cut short counts one orphan lost.
fn follow_exit_walk_bound(t: &mut Test) {
    let max = EXIT_WALK_MAX;
    // Children at the list's places max - 1, max (found) and max + 1 (not).
    let cut = Procs::new(max + 10, (max - 1, max + 2));
    kassert_eq!(t, exit_orphans(t, cut, &[]), Some((2, 1)));
    // A list that ends within the bound is walked whole.
    let whole = Procs::new(max, (max - 1, max + 1));
    kassert_eq!(t, exit_orphans(t, whole, &[]), Some((2, 0)));
}

kunit_suite!(
    FOLLOW_SUITE,
    "rprof-follow",
    [follow_ancestor_bound, follow_full_table_counts_lost, follow_exit_decision, follow_exit_walk_bound]
);

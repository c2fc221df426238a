// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: task fields for src/kapi/task.rs, which Rust cannot read: pointers
 * that need rcu_dereference(), a bit-field, the static inlines and macros
 * that step over processes and threads (for_each_process,
 * for_each_thread), and current.  Each helper is one read or one step;
 * its context is stated beside it.  The followed set's logic (the walks
 * that use them) is Rust: src/sampling/followed.rs, src/resolve/follow.rs.
 */
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include "rprof_helpers.h"

/*
 * Process context (SET_CONFIG).  The initial namespace's number of the
 * thread group that @vnr names in the caller's pid namespace, or -ESRCH if
 * it names none there (no such process, or a thread that does not lead its
 * group), and in *@start its leader's start time.  The filter compares
 * task_tgid_nr(), which is the initial namespace's (a caller inside a
 * container passes its own numbers), and the start time: a number names a
 * process only until it exits, and a later process may get it.
 */
int rprof_global_tgid(pid_t vnr, u64 *start)
{
	struct task_struct *leader;
	struct pid *pid;
	int nr = -ESRCH;

	rcu_read_lock();
	pid = find_vpid(vnr);
	leader = pid ? pid_task(pid, PIDTYPE_TGID) : NULL;
	if (leader) {
		nr = pid_nr(pid);
		*start = leader->start_time;
	}
	rcu_read_unlock();
	return nr;
}

/* NMI-safe, any context: current (a per-CPU read). */
struct task_struct *rprof_current_task(void)
{
	return current;
}

/*
 * NMI-safe, under rcu_read_lock() or in the overflow handler: @t's thread
 * group, its number (task_tgid_nr(), the initial namespace's) and in
 * *@start its leader's start time.  The leader is freed only after a grace
 * period, like every task_struct.
 */
pid_t rprof_task_group(struct task_struct *t, u64 *start)
{
	*start = READ_ONCE(t->group_leader)->start_time;
	return task_tgid_nr(t);
}

/* NMI-safe, under rcu_read_lock() or in the overflow handler: @t's real
 * parent. */
struct task_struct *rprof_task_real_parent(struct task_struct *t)
{
	return rcu_dereference(t->real_parent);
}

/* NMI-safe, any context: @t's pid (0 for the idle tasks). */
pid_t rprof_task_pid(struct task_struct *t)
{
	return t->pid;
}

/* Any context: whether @t has children, a racy peek at a list that
 * tasklist_lock guards (which modules cannot take). */
bool rprof_task_has_children(struct task_struct *t)
{
	return !list_empty(&t->children);
}

/* Under rcu_read_lock(): whether a thread of @p's group is not exiting
 * (PF_EXITING clear).  for_each_thread() is RCU-safe. */
bool rprof_group_has_live_thread(struct task_struct *p)
{
	struct task_struct *t;

	for_each_thread(p, t)
		if (!(READ_ONCE(t->flags) & PF_EXITING))
			return true;
	return false;
}

/* Under rcu_read_lock(): whether @t is a child subreaper, a racy peek at a
 * bit-field of its signal_struct (freed with the task_struct). */
bool rprof_task_subreaper(struct task_struct *t)
{
	return t->signal->is_child_subreaper;
}

/* Under rcu_read_lock(): whether @t has exited (exit_state set: a zombie,
 * or dead). */
bool rprof_task_exited(struct task_struct *t)
{
	return READ_ONCE(t->exit_state) != 0;
}

/*
 * Under rcu_read_lock(): one step of for_each_process(), on the RCU-safe
 * list of all processes: the process after @t (@t NULL: the first), NULL
 * after the last.  init_task (pid 0) is the list's head, never returned.
 */
struct task_struct *rprof_next_process(struct task_struct *t)
{
	t = next_task(t ? t : &init_task);
	return t == &init_task ? NULL : t;
}

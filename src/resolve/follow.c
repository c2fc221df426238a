// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the processes a descendants filter follows
 * (RPROF_CONFIG_PID_DESCENDANTS): the set, its orphans and the
 * sched_process_exit probe that records them.  The membership test runs
 * in the overflow handler (NMI-safe, RCU only); the rest in process context.
 * The Rust side is src/resolve/follow.rs.
 */
#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/tracepoint.h>
#include <linux/version.h>
#include <trace/events/sched.h>
#include "rprof_helpers.h"
#include "follow.h"

/* Parents walked at most: a bound on the walk's time in NMI context.  A
 * task more than this many generations below the filter's process is
 * not kept (a fork chain that deep is built on purpose, not by a build or
 * a shell script). */
#define RPROF_MAX_ANCESTORS 128

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

/* NMI context (the pid filter): whether current's thread group was started
 * at @start, i.e. is the process the filter named and not a later one that
 * got its number. */
bool rprof_current_group_started(u64 start)
{
	return READ_ONCE(current->group_leader)->start_time == start;
}

/*
 * The processes a session with RPROF_CONFIG_PID_DESCENDANTS follows: the
 * filter's thread group, every process below it by real_parent, and the
 * orphans, the children a followed process left when it exited (re-parented
 * to init or a subreaper, they are no longer below it by real_parent; their
 * own children are, through them).  The filter's process and each orphan
 * are named by thread group number and start time, so a later process that
 * gets the same number is not taken for them.
 *
 * Invariants: entries [0, n) are written once, before n covers them
 * (smp_store_release), and never change; n only grows, to at most
 * RPROF_FOLLOW_ORPHANS; writers hold lock.  lost counts the orphans that
 * found the table full.
 */
#define RPROF_FOLLOW_ORPHANS 64

struct rprof_follow {
	pid_t tgid;
	u64 start;
	unsigned int n;
	raw_spinlock_t lock;
	struct rcu_head rcu;
	atomic64_t lost;
	struct {
		pid_t tgid;
		u64 start;
	} orphans[RPROF_FOLLOW_ORPHANS];
};

static bool rprof_follow_has_n(struct rprof_follow *f, unsigned int n,
			       pid_t tgid, u64 start)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (f->orphans[i].tgid == tgid && f->orphans[i].start == start)
			return true;
	return false;
}

static bool rprof_follow_has(struct rprof_follow *f, pid_t tgid, u64 start)
{
	return rprof_follow_has_n(f, smp_load_acquire(&f->n), tgid, start);
}

/* @t's thread group: its number and its leader's start time. */
pid_t rprof_group_of(struct task_struct *t, u64 *start)
{
	*start = READ_ONCE(t->group_leader)->start_time;
	return task_tgid_nr(t);
}

/*
 * Whether @t is followed: it, or one of its parents, is the filter's
 * thread group or an orphan of it.  Called under rcu_read_lock(): a
 * task_struct is freed only after a grace period (delayed_put_task_struct),
 * so every parent reached through rcu_dereference() stays valid until
 * rcu_read_unlock(), even if it exits meanwhile.  Takes no lock, calls
 * nothing that sleeps: NMI-safe.
 */
static bool rprof_follows(struct rprof_follow *f, struct task_struct *t)
{
	unsigned int n = smp_load_acquire(&f->n);
	struct task_struct *p;
	u64 start;
	pid_t tgid;
	int i;

	for (i = 0; i < RPROF_MAX_ANCESTORS; i++) {
		tgid = rprof_group_of(t, &start);
		if ((tgid == f->tgid && start == f->start) ||
		    rprof_follow_has_n(f, n, tgid, start))
			return true;
		p = rcu_dereference(t->real_parent);
		/* init_task is its own parent; the idle tasks are pid 0. */
		if (p == t || !p->pid)
			break;
		t = p;
	}
	return false;
}

/* NMI context (the overflow handler's pid filter): see rprof_follows(). */
bool rprof_current_followed(struct rprof_follow *f)
{
	bool found;

	rcu_read_lock();
	found = rprof_follows(f, current);
	rcu_read_unlock();
	return found;
}

/* Puts thread group (@tgid, @start) in @f's orphan table, or counts it
 * lost when the table is full. */
void rprof_follow_insert(struct rprof_follow *f, pid_t tgid, u64 start)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&f->lock, flags);
	if (rprof_follow_has(f, tgid, start)) {
		/* already there */
	} else if (f->n == RPROF_FOLLOW_ORPHANS) {
		atomic64_inc(&f->lost);
	} else {
		f->orphans[f->n].tgid = tgid;
		f->orphans[f->n].start = start;
		smp_store_release(&f->n, f->n + 1);
	}
	raw_spin_unlock_irqrestore(&f->lock, flags);
}

static void rprof_follow_add(struct rprof_follow *f, struct task_struct *c)
{
	u64 start;
	pid_t tgid = rprof_group_of(c, &start);

	rprof_follow_insert(f, tgid, start);
}

/*
 * Where exit_notify() will send @p's children, as find_new_reaper() picks:
 * a thread of @p that is not exiting keeps them (true), and so does the
 * nearest subreaper above @p if it is followed itself (true); otherwise
 * they leave the followed tree (false).  Under rcu_read_lock(); racy, as
 * the re-parenting has not happened yet: a miss adds an entry that costs
 * a slot, or leaves out an orphan of two threads exiting at once.
 */
static bool rprof_children_stay(struct rprof_follow *f, struct task_struct *p)
{
	struct task_struct *t, *r = p;
	int i;

	for_each_thread(p, t)
		if (!(READ_ONCE(t->flags) & PF_EXITING))
			return true;
	for (i = 0; i < RPROF_MAX_ANCESTORS; i++) {
		t = rcu_dereference(r->real_parent);
		if (t == r || !t->pid)
			break;
		if (t->signal->is_child_subreaper) /* a racy peek at a bit-field */
			return rprof_follows(f, t);
		r = t;
	}
	return false;
}

/*
 * Processes the exit probe looks at for one exit, at most: the walk runs in
 * the exiting task under rcu_read_lock() (preemption off on kernels without
 * preemptible RCU), so its time is bounded; a walk cut there counts as one
 * orphan lost.  The default pid_max is 32768.
 */
#define RPROF_EXIT_WALK_MAX 32768

/*
 * sched_process_exit, before exit_notify() re-parents @p's children: a
 * followed task whose children would leave the followed tree (its thread
 * group is dying and no followed subreaper takes them) hands the live ones
 * (processes, never threads, which have their creator's parent; not
 * zombies) to the orphan table.  The children list is tasklist_lock's,
 * which modules cannot take: the children are found on the RCU-safe list
 * of all processes instead (for_each_process), by their real_parent, which
 * exit_notify() has not changed yet.  Only a task with children pays for
 * that walk; the list_empty() peek is racy, and a child cloned with
 * CLONE_PARENT by a grandchild in this window is missed.  The probe holds
 * its own rcu_read_lock() (on 7.2 tracepoints run under SRCU, preemptible).
 */
static void rprof_follow_exit(struct rprof_follow *f, struct task_struct *p)
{
	struct task_struct *t;
	unsigned int seen = 0;

	if (list_empty(&p->children))
		return;
	rcu_read_lock();
	if (rprof_follows(f, p) && !rprof_children_stay(f, p)) {
		for_each_process(t) {
			if (++seen > RPROF_EXIT_WALK_MAX) {
				/* Children past the bound are not looked for. */
				atomic64_inc(&f->lost);
				break;
			}
			if (rcu_dereference(t->real_parent) == p && !READ_ONCE(t->exit_state))
				rprof_follow_add(f, t);
		}
	}
	rcu_read_unlock();
}

/*
 * The exit probe is registered once, at the first followed set, and stays
 * until the module goes (rprof_follow_unregister()): unregistering costs a
 * tracepoint_synchronize_unregister(), too slow for every SET_CONFIG.  It
 * serves the set of the session that STARTed last (rprof_followed,
 * published by rprof_follow_publish(); only one session runs at a time),
 * read under rcu_read_lock(), so a set is freed after a grace period
 * (kfree_rcu).  The pointer is written with single atomic operations (a
 * set clears it only if it is still its own), so publishing takes no lock
 * (START holds the CPU hotplug lock, which registration takes inside
 * rprof_follow_mutex).
 */
static DEFINE_MUTEX(rprof_follow_mutex);
static struct tracepoint *rprof_follow_tp;
static struct rprof_follow __rcu *rprof_followed;

/* The tracepoint gained group_dead in 6.16; rprof does not need it. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
static void rprof_follow_exit_probe(void *data, struct task_struct *p, bool group_dead)
#else
static void rprof_follow_exit_probe(void *data, struct task_struct *p)
#endif
{
	struct rprof_follow *f;

	rcu_read_lock();
	f = rcu_dereference(rprof_followed);
	if (f)
		rprof_follow_exit(f, p);
	rcu_read_unlock();
}

static void rprof_find_exit_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exit"))
		*(struct tracepoint **)priv = tp;
}

/* Under rprof_follow_mutex: registers the exit probe if it is not. */
static int rprof_follow_register(void)
{
	struct tracepoint *tp = NULL;
	int ret;

	/* The probe's type is the tracepoint's (a build error otherwise). */
	check_trace_callback_type_sched_process_exit(rprof_follow_exit_probe);
	if (rprof_follow_tp)
		return 0;
	for_each_kernel_tracepoint(rprof_find_exit_tp, &tp);
	if (!tp)
		return -ENOSYS;
	ret = tracepoint_probe_register(tp, rprof_follow_exit_probe, NULL);
	if (!ret)
		rprof_follow_tp = tp;
	return ret;
}

/*
 * Sleepable process context (SET_CONFIG; may take the CPU hotplug lock to
 * register the probe): the followed set of thread group @tgid (the initial
 * namespace's number), not yet updated by exits (rprof_follow_publish()).
 * ERR_PTR on failure.
 */
struct rprof_follow *rprof_follow_create(pid_t tgid, u64 start)
{
	struct rprof_follow *f = kzalloc(sizeof(*f), GFP_KERNEL);
	int ret;

	if (!f)
		return ERR_PTR(-ENOMEM);
	f->tgid = tgid;
	f->start = start;
	raw_spin_lock_init(&f->lock);
	mutex_lock(&rprof_follow_mutex);
	ret = rprof_follow_register();
	mutex_unlock(&rprof_follow_mutex);
	if (ret) {
		kfree(f);
		return ERR_PTR(ret);
	}
	return f;
}

/* START: exits update @f from now on, in place of the set before.  Takes
 * no lock. */
void rprof_follow_publish(struct rprof_follow *f)
{
	rcu_assign_pointer(rprof_followed, f);
}

bool rprof_follow_published(struct rprof_follow *f)
{
	return rcu_access_pointer(rprof_followed) == f;
}

/*
 * STOP (sleepable process context): exits no longer update @f once this
 * returns, so the orphan counts of a stopped session stay as they were
 * (a probe that still read @f finishes within the grace period waited
 * for; the probe holds rcu_read_lock() while it uses the set).
 */
void rprof_follow_retract(struct rprof_follow *f)
{
	if (cmpxchg((struct rprof_follow **)&rprof_followed, f, NULL) == f)
		synchronize_rcu();
}

/*
 * Process context.  Frees @f once no exit probe can still be reading it
 * (after a grace period); the caller guarantees no overflow handler can
 * reach it any more (its counters are released).
 */
void rprof_follow_destroy(struct rprof_follow *f)
{
	/* Only if it is still ours: a later START's set stays. */
	cmpxchg((struct rprof_follow **)&rprof_followed, f, NULL);
	kfree_rcu(f, rcu);
}

/* Module exit, after every session: the exit probe goes, and no call of it
 * is still running when this returns. */
void rprof_follow_unregister(void)
{
	mutex_lock(&rprof_follow_mutex);
	if (rprof_follow_tp) {
		tracepoint_probe_unregister(rprof_follow_tp, rprof_follow_exit_probe, NULL);
		tracepoint_synchronize_unregister();
		rprof_follow_tp = NULL;
	}
	mutex_unlock(&rprof_follow_mutex);
}

/* Orphans followed, and (*lost) those the table had no room for. */
u64 rprof_follow_orphans(struct rprof_follow *f, u64 *lost)
{
	*lost = atomic64_read(&f->lost);
	return smp_load_acquire(&f->n);
}

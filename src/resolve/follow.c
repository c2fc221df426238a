// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C glue of the followed set (its logic is Rust:
 * src/resolve/follow.rs, and src/sampling/followed.rs for the membership
 * test): the sched_process_exit probe's registration, whose type depends
 * on the kernel version (the set's lock is src/sampling/followed.c).
 * Each helper's context is stated beside it.
 */
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/version.h>
#include <trace/events/sched.h>
#include "rprof_helpers.h"

/*
 * The exit probe is registered once, at the first followed set, and stays
 * until the module goes (rprof_exit_probe_unregister()): unregistering
 * costs a tracepoint_synchronize_unregister(), too slow for every
 * SET_CONFIG.  Registration takes the CPU hotplug lock inside
 * rprof_exit_mutex.
 */
static DEFINE_MUTEX(rprof_exit_mutex);
static struct tracepoint *rprof_exit_tp;

/* The tracepoint gained group_dead in 6.16; rprof does not need it. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
static void rprof_exit_probe(void *data, struct task_struct *p, bool group_dead)
#else
static void rprof_exit_probe(void *data, struct task_struct *p)
#endif
{
	rprof_follow_exit(p);
}

static void rprof_find_exit_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exit"))
		*(struct tracepoint **)priv = tp;
}

/* Sleepable process context (takes rprof_exit_mutex and the CPU hotplug
 * lock): registers the exit probe if it is not; 0 or -errno. */
int rprof_exit_probe_register(void)
{
	struct tracepoint *tp = NULL;
	int ret = 0;

	/* The probe's type is the tracepoint's (a build error otherwise). */
	check_trace_callback_type_sched_process_exit(rprof_exit_probe);
	mutex_lock(&rprof_exit_mutex);
	if (!rprof_exit_tp) {
		for_each_kernel_tracepoint(rprof_find_exit_tp, &tp);
		ret = tp ? tracepoint_probe_register(tp, rprof_exit_probe, NULL) : -ENOSYS;
		if (!ret)
			rprof_exit_tp = tp;
	}
	mutex_unlock(&rprof_exit_mutex);
	return ret;
}

/* Module exit (sleepable), after every session: the exit probe goes, and
 * no call of it is still running when this returns. */
void rprof_exit_probe_unregister(void)
{
	mutex_lock(&rprof_exit_mutex);
	if (rprof_exit_tp) {
		tracepoint_probe_unregister(rprof_exit_tp, rprof_exit_probe, NULL);
		tracepoint_synchronize_unregister();
		rprof_exit_tp = NULL;
	}
	mutex_unlock(&rprof_exit_mutex);
}


// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the locked-memory charge of a session's event buffer and rings.
 *
 * A user who may open /dev/rprof can make the module allocate memory that
 * no reclaim can take back: each session's rings and event buffer, and a
 * replaced session's buffer lives on for as long as a process maps it.  So
 * every such page is charged as perf_mmap() charges perf's buffers: first
 * to the user's perf_mlock allowance (the module parameter mlock_kb per
 * online CPU, perf's perf_event_mlock_kb in spirit), the rest to the
 * owner's mm->pinned_vm against RLIMIT_MEMLOCK, refused with -EPERM past
 * it unless the caller has CAP_IPC_LOCK.  The charge is a counted object:
 * the session (rings), the event buffer and every mapping of the buffer
 * hold a reference, and the last one gives the pages back.  The pages
 * themselves are also charged to the caller's memory cgroup
 * (GFP_KERNEL_ACCOUNT).
 *
 * Process context only.
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/refcount.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>

#include "rprof_helpers.h"

/*
 * @user holds @user_pages of perf_mlock and a reference (get_uid); @mm,
 * if not NULL, holds @mm_pages of pinned_vm and an mm_count reference.
 * Both are given back when @refs drops to zero.
 */
struct rprof_charge {
	refcount_t refs;
	struct user_struct *user;
	struct mm_struct *mm;
	unsigned long user_pages;
	unsigned long mm_pages;
};

void *rprof_charge_new(unsigned long pages, unsigned long allowance_kb, int *err)
{
	unsigned long limit = (allowance_kb >> (PAGE_SHIFT - 10)) * num_online_cpus();
	struct user_struct *user = current_user();
	unsigned long used, mm_pages = 0;
	struct rprof_charge *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	/* The allowance first (perf_mmap()'s rule: what others put past a
	 * smaller limit counts as the limit), the rest to pinned_vm. */
	used = min_t(unsigned long, atomic_long_read(&user->perf_mlock), limit);
	if (used + pages > limit)
		mm_pages = min(pages, used + pages - limit);
	if (mm_pages) {
		struct mm_struct *mm = current->mm;
		unsigned long lock_limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
		bool over = !mm || atomic64_read(&mm->pinned_vm) + mm_pages > lock_limit;

		if (over && !capable(CAP_IPC_LOCK)) {
			kfree(c);
			*err = -EPERM;
			return NULL;
		}
		if (mm) {
			mmgrab(mm);
			atomic64_add(mm_pages, &mm->pinned_vm);
			c->mm = mm;
			c->mm_pages = mm_pages;
		}
	}
	c->user_pages = pages - mm_pages;
	atomic_long_add(c->user_pages, &user->perf_mlock);
	c->user = get_uid(user);
	refcount_set(&c->refs, 1);
	*err = 0;
	return c;
}

void rprof_charge_get(void *charge)
{
	struct rprof_charge *c = charge;

	refcount_inc(&c->refs);
}

void rprof_charge_put(void *charge)
{
	struct rprof_charge *c = charge;

	if (!refcount_dec_and_test(&c->refs))
		return;
	atomic_long_sub(c->user_pages, &c->user->perf_mlock);
	free_uid(c->user);
	if (c->mm) {
		atomic64_sub(c->mm_pages, &c->mm->pinned_vm);
		mmdrop(c->mm);
	}
	kfree(c);
}


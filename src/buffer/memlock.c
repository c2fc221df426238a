// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the kernel calls behind the locked-memory charge of a session's
 * event buffer, rings and unwind tables.  The policy (perf_mmap()'s rule)
 * and the counted charge object are Rust, in src/buffer/charge.rs; each
 * helper here is one access Rust cannot make: current's credentials and
 * mm, the atomics in user_struct and mm_struct, rlimit() and capable()
 * behind macros and static inlines.  Process context only.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "rprof_helpers.h"

/* A reference (get_uid) on the caller's user_struct. */
struct user_struct *rprof_memlock_user(void)
{
	return get_uid(current_user());
}

void rprof_memlock_user_put(struct user_struct *user)
{
	free_uid(user);
}

/* The pages of the user's perf_mlock allowance in use (perf's own
 * counter: perf buffers and rprof's share it, as they share the limit). */
long rprof_memlock_user_pages(struct user_struct *user)
{
	return atomic_long_read(&user->perf_mlock);
}

void rprof_memlock_user_add(struct user_struct *user, long pages)
{
	atomic_long_add(pages, &user->perf_mlock);
}

/* The caller's address space with an mm_count reference (mmgrab), or NULL
 * for a kernel thread. */
struct mm_struct *rprof_memlock_mm(void)
{
	struct mm_struct *mm = current->mm;

	if (mm)
		mmgrab(mm);
	return mm;
}

s64 rprof_memlock_mm_pages(struct mm_struct *mm)
{
	return atomic64_read(&mm->pinned_vm);
}

void rprof_memlock_mm_add(struct mm_struct *mm, s64 pages)
{
	atomic64_add(pages, &mm->pinned_vm);
}

/* RLIMIT_MEMLOCK, in pages. */
unsigned long rprof_memlock_rlimit_pages(void)
{
	return rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
}

/* The caller may lock memory past its limits. */
bool rprof_memlock_capable(void)
{
	return capable(CAP_IPC_LOCK);
}

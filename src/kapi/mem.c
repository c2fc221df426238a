// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: memory, file, address-space and RCU calls that Rust for Linux
 * 6.12 does not bind (static inlines and macros), for every folder: each
 * function one kernel call.  Each says its context.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include "rprof_helpers.h"

void rprof_file_put(void *file)
{
	fput(file);
}

/* Process context.  Memory for tables, charged to the caller's cgroup. */
void *rprof_kvmalloc_account(size_t bytes)
{
	return kvmalloc(bytes, GFP_KERNEL_ACCOUNT);
}

void rprof_kvfree(void *p)
{
	kvfree(p);
}

/* Frees p (kvmalloc'd) once every RCU reader that may hold it is done;
 * may sleep. */
void rprof_kvfree_rcu(void *p)
{
	kvfree_rcu_mightsleep(p);
}

void rprof_synchronize_rcu(void)
{
	synchronize_rcu();
}

void rprof_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rprof_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

/*
 * An mm_users reference for a lookup, if the address space still has a
 * user (a sampled process that exited has none: its mappings are gone).
 * The caller holds an mm_count reference, so the mm_struct is there.
 */
bool rprof_mm_get_live(struct mm_struct *mm)
{
	return mmget_not_zero(mm);
}

/*
 * mmput_async(): the drain runs under its mutex, and the last reference to
 * a dead process's address space must not tear it down there (exit_mmap()
 * takes mmap_lock and can run long); mmput_async() leaves that to a work
 * item and is otherwise the same atomic decrement.
 */
void rprof_mm_put(struct mm_struct *mm)
{
	mmput_async(mm);
}

/*
 * Drops n >= 1 mm_count references on mm at once: the first n - 1 cannot
 * be the last (the caller still holds one more), the last goes through
 * mmdrop(), which frees the mm_struct if it was the last (process
 * context).
 */
void rprof_mm_drop_many(struct mm_struct *mm, u64 n)
{
	while (n > 1) {
		int k = n - 1 > INT_MAX ? INT_MAX : (int)(n - 1);

		atomic_sub(k, &mm->mm_count);
		n -= k;
	}
	mmdrop(mm);
}

/* Any context, NMI included: an mm_count reference (the mm_struct stays,
 * its address space does not). */
void rprof_mm_grab(struct mm_struct *mm)
{
	mmgrab(mm);
}

void rprof_mm_drop(struct mm_struct *mm)
{
	mmdrop(mm);
}

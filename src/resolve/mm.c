// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: address spaces for the drain: references, and VMA lookups under
 * mmap_lock that refuse mappings newer than the sample.  Process context.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/path.h>
#include <linux/sched/mm.h>
#include <linux/timekeeping.h>
#include "rprof_helpers.h"

/*
 * The munmap race check (rprof_resolve_user) compares VMA and mm write-lock
 * sequences, which exist only with per-VMA locks; without them it would
 * silently trust a VMA that replaced the sampled one.  Kconfig says
 * "depends on PER_VMA_LOCK"; out of tree, this says it.
 */
#ifndef CONFIG_PER_VMA_LOCK
#error "rprof needs CONFIG_PER_VMA_LOCK (its munmap race check reads VMA lock sequences)"
#endif

/*
 * The VMA of ip, if it has not been write-locked since the sample: a VMA
 * created, split, merged or changed after the sample carries a vm_lock_seq
 * at or after the sample's seq (vma_start_write() stamps it with the odd
 * sequence of the write section).  Such a VMA may not be the one the
 * sample hit, so it resolves to nothing rather than to a wrong file.
 */
/* rprof_resolve_user() with mmap_lock held for reading. */
static int rprof_resolve_locked(struct mm_struct *mm, u64 ip, u32 seq,
				struct path *path, u64 *offset,
				struct rprof_vma_range *range)
{
	struct vm_area_struct *vma = vma_lookup(mm, ip);

	if (!vma)
		return RPROF_RESOLVE_NONE;
	if ((int)(READ_ONCE(vma->vm_lock_seq) - seq) >= 0)
		return RPROF_RESOLVE_NONE;
	/* Under mmap_lock no write section is open: the sequence is even. */
	range->mm_seq = READ_ONCE(mm->mm_lock_seq.sequence);
	range->start = vma->vm_start;
	range->end = vma->vm_end;
	range->pgoff_bytes = (u64)vma->vm_pgoff << PAGE_SHIFT;
	if (vma->vm_file) {
		/* The path the process sees: an overlayfs mapping's file is
		 * the layer's (a backing file), named as /proc/PID/maps names
		 * it. */
		*path = *file_user_path(vma->vm_file);
		path_get(path);
		*offset = ((u64)vma->vm_pgoff << PAGE_SHIFT) + ip - vma->vm_start;
		return RPROF_RESOLVE_FILE;
	}
	*offset = ip;
	return RPROF_RESOLVE_ANON;
}

/*
 * The drain never blocks on a sampled process's mmap_lock: that process
 * may hold it for seconds (a fault on a slow file, a long mlock() or
 * MAP_POPULATE) or queue a writer behind such a holder, and the drain's
 * lock is waited for by STOP, close, GET_STATS and the module notifier.
 * It try-locks, and tries again after sleeps of 50 to 100 us for up to
 * RPROF_MM_WAIT_NS of the clock for one lookup, and no longer than *@wait_ns
 * allows (the drain's budget for its pass, reduced here by the time spent):
 * that covers the short write sections of mmap(), mprotect() and exec that
 * a busy program takes all the time, and bounds what a held lock costs a
 * pass.  A lock still busy makes the lookup RPROF_RESOLVE_BUSY (counted).
 */
#define RPROF_MM_WAIT_NS (1000 * NSEC_PER_USEC)

static bool rprof_mmap_read_trylock_wait(struct mm_struct *mm, u64 *wait_ns)
{
	u64 start = ktime_get_mono_fast_ns();
	u64 limit = min_t(u64, *wait_ns, RPROF_MM_WAIT_NS);
	bool locked;

	for (;;) {
		u64 spent;

		locked = mmap_read_trylock(mm);
		spent = ktime_get_mono_fast_ns() - start;
		if (locked || spent >= limit) {
			*wait_ns -= min(spent, *wait_ns);
			return locked;
		}
		usleep_range(50, 100);
	}
}

int rprof_resolve_user(struct mm_struct *mm, u64 ip, u32 seq,
		       struct path *path, u64 *offset,
		       struct rprof_vma_range *range, u64 *wait_ns)
{
	int ret;

	if (!rprof_mmap_read_trylock_wait(mm, wait_ns))
		return RPROF_RESOLVE_BUSY;
	ret = rprof_resolve_locked(mm, ip, seq, path, offset, range);
	mmap_read_unlock(mm);
	return ret;
}

void rprof_resolve_user_frames(struct mm_struct *mm, u32 seq, const u64 *ips,
			       u32 n, struct rprof_frame_res *out, u64 *wait_ns)
{
	u32 i;

	if (!rprof_mmap_read_trylock_wait(mm, wait_ns)) {
		for (i = 0; i < n; i++)
			out[i].how = RPROF_RESOLVE_BUSY;
		return;
	}
	for (i = 0; i < n; i++)
		out[i].how = rprof_resolve_locked(mm, ips[i], seq, &out[i].path,
						  &out[i].offset, &out[i].range);
	mmap_read_unlock(mm);
}

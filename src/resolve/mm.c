// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: address spaces for the drain: mmap_lock taken without blocking
 * and the VMA of an address under it (the policy, how long to try and
 * which VMA to believe, is src/resolve/mm.rs').  Process context.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched/mm.h>
#include "rprof_helpers.h"

/*
 * The munmap race check (src/resolve/mm.rs) compares VMA and mm write-lock
 * sequences, which exist only with per-VMA locks; without them it would
 * silently trust a VMA that replaced the sampled one.  Kconfig says
 * "depends on PER_VMA_LOCK"; out of tree, this says it.
 */
#ifndef CONFIG_PER_VMA_LOCK
#error "rprof needs CONFIG_PER_VMA_LOCK (its munmap race check reads VMA lock sequences)"
#endif

/*
 * The VMA of @ip in @mm, whose mmap_lock the caller holds for reading
 * (src/resolve/mm.rs: MmRead): its range, file offset, file (no reference:
 * the VMA holds one while the lock is held) and write-lock sequence, and
 * the mm's sequence (even: no write section is open under the lock).
 * Whether the VMA is the one the sample hit is the caller's decision
 * (mm.rs: the munmap race check).  False: no VMA holds @ip.
 */
bool rprof_vma_lookup_locked(struct mm_struct *mm, u64 ip, struct rprof_vma_info *out)
{
	struct vm_area_struct *vma = vma_lookup(mm, ip);

	if (!vma)
		return false;
	out->lock_seq = READ_ONCE(vma->vm_lock_seq);
	out->range.mm_seq = READ_ONCE(mm->mm_lock_seq.sequence);
	out->range.start = vma->vm_start;
	out->range.end = vma->vm_end;
	out->range.pgoff_bytes = (u64)vma->vm_pgoff << PAGE_SHIFT;
	out->file = vma->vm_file;
	return true;
}

bool rprof_mmap_read_trylock(struct mm_struct *mm)
{
	return mmap_read_trylock(mm);
}

void rprof_mmap_read_unlock(struct mm_struct *mm)
{
	mmap_read_unlock(mm);
}

void rprof_usleep_range(u32 min_us, u32 max_us)
{
	usleep_range(min_us, max_us);
}

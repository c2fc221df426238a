// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: address spaces for the drain: references, and VMA lookups under
 * mmap_lock that refuse mappings newer than the sample.  Process context.
 */
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/path.h>
#include <linux/sched/mm.h>
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
 * Drops n >= 1 references on mm at once: the first n - 1 cannot be the
 * last (the caller still holds one more), the last goes through
 * mmput_async() as above.
 */
void rprof_mm_put_many(struct mm_struct *mm, u64 n)
{
	while (n > 1) {
		int k = n - 1 > INT_MAX ? INT_MAX : (int)(n - 1);

		atomic_sub(k, &mm->mm_users);
		n -= k;
	}
	mmput_async(mm);
}

void rprof_mm_grab(struct mm_struct *mm)
{
	mmgrab(mm);
}

void rprof_mm_drop(struct mm_struct *mm)
{
	mmdrop(mm);
}

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
		*path = vma->vm_file->f_path;
		path_get(path);
		*offset = ((u64)vma->vm_pgoff << PAGE_SHIFT) + ip - vma->vm_start;
		return RPROF_RESOLVE_FILE;
	}
	*offset = ip;
	return RPROF_RESOLVE_ANON;
}

int rprof_resolve_user(struct mm_struct *mm, u64 ip, u32 seq,
		       struct path *path, u64 *offset,
		       struct rprof_vma_range *range)
{
	int ret;

	mmap_read_lock(mm);
	ret = rprof_resolve_locked(mm, ip, seq, path, offset, range);
	mmap_read_unlock(mm);
	return ret;
}

void rprof_resolve_user_frames(struct mm_struct *mm, u32 seq, const u64 *ips,
			       u32 n, struct rprof_frame_res *out)
{
	u32 i;

	mmap_read_lock(mm);
	for (i = 0; i < n; i++)
		out[i].how = rprof_resolve_locked(mm, ips[i], seq, &out[i].path,
						  &out[i].offset, &out[i].range);
	mmap_read_unlock(mm);
}

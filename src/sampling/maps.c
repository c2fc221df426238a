// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the mappings of user addresses, seen from the sampling handler
 * (src/sampling/maps.rs): a VMA found without mmap_lock, and a counted
 * reference on its file, so that a sample resolves after its process is
 * gone without the handler pinning the process's address space.
 * NMI context: nothing here sleeps, locks or allocates.
 */
#include <linux/fs.h>
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/seqlock.h>
#include <linux/version.h>
#include "rprof_helpers.h"

/* NMI context: current's address space, without a reference, or NULL,
 * and its write-lock sequence now in *seq (0 without one).  The handler
 * reads both once, before it looks anything up, and references the
 * address space for the record with rprof_mm_grab() once the ring has
 * room for it. */
struct mm_struct *rprof_current_mm(__u32 *seq)
{
	struct mm_struct *mm = current->mm;

	*seq = mm ? READ_ONCE(mm->mm_lock_seq.sequence) : 0;
	return mm;
}

/*
 * NMI context: an mm_users reference on current's address space (its
 * mappings stay until the drain lets go: rprof_mm_put()), or NULL.  Only
 * for records whose mappings the handler cannot name (maps.rs: backing
 * files on 6.12).
 */
struct mm_struct *rprof_current_mm_pin(void)
{
	struct mm_struct *mm = current->mm;

	return mm && mmget_not_zero(mm) ? mm : NULL;
}

/* 6.12 frees backing files with kfree() (rprof_nmi_file_get()). */
static bool rprof_backing_unsafe(struct file *file)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(7, 0, 0)
	fmode_t mode;

	/* Without faulting: believed by the caller only if the sequence
	 * holds after the read. */
	return copy_from_kernel_nofault(&mode, &file->f_mode, sizeof(mode)) || (mode & FMODE_BACKING);
#else
	return false;
#endif
}

/*
 * NMI context.  The VMA that holds @addr in @mm (current's), found by a
 * lockless maple-tree walk under RCU and believed only if @mm's mmap_lock
 * sequence is still @seq (even: no write section was open when the caller
 * read it, and none has begun since): then the VMA is the one mapped at
 * @seq, and its file is alive (the VMA holds a reference; taking it out
 * of the tree needs the write lock).  No reference is taken: see
 * rprof_nmi_file_get().  The table walk's lookups (rprof_nmi_exec_vma())
 * are this one too.
 */
bool rprof_nmi_map(struct mm_struct *mm, __u32 seq, __u64 addr,
		   struct rprof_nmi_map *out)
{
	struct vm_area_struct *vma;
	bool ok = false;

	if (seq & 1)
		return false;
	rcu_read_lock();
	/* The tree is read after the sequence (as raw_read_seqcount()). */
	smp_rmb();
	vma = mtree_load(&mm->mm_mt, addr);
	if (vma && READ_ONCE(vma->vm_mm) == mm) {
		out->start = READ_ONCE(vma->vm_start);
		out->end = READ_ONCE(vma->vm_end);
		out->pgoff_bytes = (__u64)READ_ONCE(vma->vm_pgoff) << PAGE_SHIFT;
		out->file = READ_ONCE(vma->vm_file);
		/* Compared, never dereferenced: a TASK record names the
		 * executable through this mapping once the process is gone. */
		out->flags = out->file && out->file == rcu_access_pointer(mm->exe_file) ?
			     RPROF_NMI_MAP_EXE : 0;
		if (out->file && rprof_backing_unsafe(out->file))
			out->flags |= RPROF_NMI_MAP_BACKING;
		if (READ_ONCE(vma->vm_flags) & VM_EXEC)
			out->flags |= RPROF_NMI_MAP_EXEC;
		ok = out->start <= addr && addr < out->end;
	}
	rcu_read_unlock();
	return ok && !read_seqcount_retry(&mm->mm_lock_seq, seq);
}

/*
 * NMI context.  A counted reference on @file, the file of a VMA that
 * rprof_nmi_map() found in @mm under @seq:
 *   RPROF_NMI_REF_OK     taken, on that file (the sequence held throughout);
 *   RPROF_NMI_REF_STALE  taken, but on what may be another file (the
 *                        mappings changed meanwhile): give it back
 *                        (rprof_file_put(), process context), use nothing;
 *   RPROF_NMI_REF_NONE   none taken.
 *
 * Why the increment is safe although the VMA may be unmapped at any
 * moment on another CPU: a file is freed only after its last reference
 * goes, and the VMA holds one until it is out of the tree, which takes a
 * write section of mmap_lock.  While the sequence is @seq, then, the file
 * is alive.  The increment itself may come just after a write section
 * began; it is made on memory that is still a struct file for as long as
 * this RCU read section lasts, because files come from a SLAB_TYPESAFE_BY_RCU
 * cache and this file was alive inside the section (checked below, before
 * the increment): at worst the file was freed and its memory reused by
 * another file, whose count the increment then raises (STALE: the
 * reference is real and is given back).  A freed file's count is zero and
 * inc-not-zero leaves it so.
 *
 * 6.12 frees overlayfs and FUSE-passthrough backing files with kfree(),
 * not through the RCU-typesafe cache: an increment racing their free
 * would write to freed memory.  They are refused there (NONE; the drain
 * then resolves the sample through the address space, if it still has
 * one).  f_mode is believed only if the sequence shows the file alive
 * after it was read (it is read without faulting: the file may be freed
 * meanwhile), so what it says is the file's own.  7.x keeps backing files
 * in a cache of their own, also SLAB_TYPESAFE_BY_RCU.
 */
int rprof_nmi_file_get(struct mm_struct *mm, __u32 seq, struct file *file)
{
	int ret = RPROF_NMI_REF_NONE;
	bool got;

	rcu_read_lock();
	if (read_seqcount_retry(&mm->mm_lock_seq, seq))
		goto out;
#if LINUX_VERSION_CODE < KERNEL_VERSION(7, 0, 0)
	{
		fmode_t mode;

		/* Without faulting: the file may go (and a backing file be
		 * kfree()d) between the check above and this read, which is
		 * believed only if the sequence still holds after it. */
		if (copy_from_kernel_nofault(&mode, &file->f_mode, sizeof(mode)) ||
		    (mode & FMODE_BACKING))
			goto out;
		if (read_seqcount_retry(&mm->mm_lock_seq, seq))
			goto out;
	}
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	got = file_ref_get(&file->f_ref);
#else
	got = atomic_long_inc_not_zero(&file->f_count);
#endif
	if (got)
		ret = read_seqcount_retry(&mm->mm_lock_seq, seq) ? RPROF_NMI_REF_STALE : RPROF_NMI_REF_OK;
out:
	rcu_read_unlock();
	return ret;
}


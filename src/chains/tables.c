// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: what the table-driven user walk (unwind.rs, tables.rs) needs from
 * the kernel: the executable file mapping of a user address and a word of
 * user memory, both from the sampling handler (NMI context: no lock, no
 * sleep, no page faulted in), and for uploads (process context) the file
 * behind a descriptor and memory for tables.
 */
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/barrier.h>
#include "rprof_helpers.h"

/*
 * NMI context.  The executable file mapping that holds ip in current's
 * address space, found without mmap_lock: a lockless maple-tree walk under
 * RCU, believed only if no write section of mmap_lock was open when it
 * began nor opened until it ended (the lock's sequence was even and did
 * not change), the speculation the kernel's own lockless VMA lookups make.
 *
 * The VMA is RCU-freed (6.12, with per-VMA locks) or type-safe by RCU
 * (7.x): its fields may be read under rcu_read_lock().  Its file may not
 * be: an overlayfs or FUSE-passthrough mapping's file is a backing file,
 * which 6.12 frees with kfree() after the last fput(), not after a grace
 * period.  So the file's inode is read with copy_from_kernel_nofault(),
 * which neither faults nor is instrumented (KASAN), and believed only if
 * the sequence did not change: a file freed meanwhile had its VMA taken
 * out of the tree under the write lock first, which changes it.  The inode
 * is returned as a key only, never dereferenced.
 */
bool rprof_nmi_exec_vma(__u64 ip, struct rprof_nmi_vma *out)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct inode *inode = NULL;
	struct file *file;
	unsigned int seq;
	bool ok = false;

	if (!mm || (current->flags & (PF_KTHREAD | PF_USER_WORKER)))
		return false;
	seq = raw_read_seqcount(&mm->mm_lock_seq);
	if (seq & 1)
		return false;
	rcu_read_lock();
	vma = mtree_load(&mm->mm_mt, ip);
	if (vma && READ_ONCE(vma->vm_mm) == mm && (READ_ONCE(vma->vm_flags) & VM_EXEC)) {
		out->start = READ_ONCE(vma->vm_start);
		out->end = READ_ONCE(vma->vm_end);
		out->pgoff_bytes = (__u64)READ_ONCE(vma->vm_pgoff) << PAGE_SHIFT;
		file = READ_ONCE(vma->vm_file);
		ok = file && out->start <= ip && ip < out->end &&
		     !copy_from_kernel_nofault(&inode, &file->f_inode, sizeof(inode)) && inode;
		out->inode = (unsigned long)inode;
	}
	rcu_read_unlock();
	return ok && !read_seqcount_retry(&mm->mm_lock_seq, seq);
}

/*
 * NMI context.  The 8 bytes of current's user memory at addr, without
 * faulting: copy_from_user_nmi() also checks that current's address space
 * is the one loaded (it is not, for a moment, while a CPU switches).
 */
bool rprof_user_read_nmi(__u64 addr, __u64 *val)
{
	/* The address came from user memory (a stack word plus a table's
	 * offset) and passed only access_ok()'s branch: no speculative load
	 * through it (Spectre v1), as walk.c's frame reads. */
	barrier_nospec();
	return !copy_from_user_nmi(val, (const void __user *)addr, sizeof(*val));
}

/*
 * NMI context.  The 8 bytes of current's user memory at addr, without
 * faulting, for a walk that already read current's memory with
 * rprof_user_read_nmi() in this same handler: that read proved the
 * address space loaded on this CPU is current's, which cannot change
 * before the handler returns, so this one skips the check (and the call
 * into copy_from_user_nmi()): one bounds check, the Spectre barrier and
 * the load, with the user access open for that load alone.
 */
bool rprof_user_read_loaded(__u64 addr, __u64 *val)
{
	const u64 __user *p = (const u64 __user *)addr;
	bool ok = false;

	pagefault_disable();
	/* user_access_begin(): access_ok(), then STAC and barrier_nospec(). */
	if (user_access_begin(p, sizeof(*p))) {
		unsafe_get_user(*val, p, fault);
		ok = true;
fault:
		user_access_end();
	}
	pagefault_enable();
	return ok;
}

/*
 * Process context.  The regular file behind fd, with a reference, and in
 * *key the inode its mappings' files have: the real inode under overlayfs
 * (a mapping of an overlay file maps the file beneath, whose inode
 * d_real_inode() names).  The reference on the file keeps its mount busy
 * (an inode reference alone would not: umount would free the superblock
 * under it) and the key's inode alive.  NULL with *err -EBADF for no
 * file, -EINVAL for one that is not a regular file (a pipe, a socket, the
 * device itself).
 */
void *rprof_fd_file_get(int fd, unsigned long *key, int *err)
{
	struct file *file = fget(fd);

	if (!file) {
		*err = -EBADF;
		return NULL;
	}
	if (!S_ISREG(file_inode(file)->i_mode)) {
		fput(file);
		*err = -EINVAL;
		return NULL;
	}
	*key = (unsigned long)d_real_inode(file->f_path.dentry);
	return file;
}

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

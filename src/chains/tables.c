// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: what the table-driven user walk (unwind.rs, tables.rs) needs from
 * the kernel: the executable file mapping of a user address and a word of
 * user memory, both from the sampling handler (NMI context: no lock, no
 * sleep, no page faulted in), and for uploads (process context) the file
 * behind a descriptor and memory for tables.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/maple_tree.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seqlock.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "rprof_helpers.h"

/*
 * NMI context.  The executable file mapping that holds ip in current's
 * address space, found without mmap_lock: a lockless maple-tree walk under
 * RCU, believed only if no write section of mmap_lock was open when it
 * began nor opened until it ended (the lock's sequence was even and did
 * not change), the speculation the kernel's own lockless VMA lookups make.
 * The VMA and its file are read under RCU, which keeps their memory (a
 * freed VMA or file may have been reused, which the sequence then tells).
 * The inode is returned as a key only, never dereferenced.
 */
bool rprof_nmi_exec_vma(__u64 ip, struct rprof_nmi_vma *out)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
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
		out->inode = file ? (unsigned long)READ_ONCE(file->f_inode) : 0;
		ok = file && out->start <= ip && ip < out->end;
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
	return !copy_from_user_nmi(val, (const void __user *)addr, sizeof(*val));
}

/* Process context.  The inode of the regular file behind fd, with a
 * reference (ihold); NULL with *err -EBADF for no file, -EINVAL for one
 * that is not a regular file (a pipe, a socket, the device itself). */
void *rprof_fd_inode_get(int fd, int *err)
{
	struct file *file = fget(fd);
	struct inode *inode;

	if (!file) {
		*err = -EBADF;
		return NULL;
	}
	inode = file_inode(file);
	if (!S_ISREG(inode->i_mode)) {
		fput(file);
		*err = -EINVAL;
		return NULL;
	}
	ihold(inode);
	fput(file);
	return inode;
}

void rprof_inode_put(void *inode)
{
	iput(inode);
}

/* Process context.  Memory for tables, charged to the caller's cgroup. */
void *rprof_kvzalloc_account(size_t bytes)
{
	return kvzalloc(bytes, GFP_KERNEL_ACCOUNT);
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

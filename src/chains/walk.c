// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: call chains, taken by the overflow handler: the kernel side with
 * the kernel's unwinder, the user side with a frame-pointer walk of the
 * interrupted task's stack (64-bit and compat), into per-CPU scratch
 * buffers; and what the table-driven user walk (userwalk.rs) needs: the
 * executable mapping of an address and single words of user memory.  NMI context: nothing here sleeps, locks or allocates, and no
 * user page is ever faulted in.
 */
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>
#include <asm/barrier.h>
#include <asm/segment.h>
#include <asm/unwind.h>
#include <asm/uaccess.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"
#include "walk.h"

/* Task, softirq, hardirq, NMI: interrupt_context_level()'s range. */
#define RPROF_CHAIN_LEVELS 4

/* A struct, not an array type: __percpu is a named address space on
 * newer kernels and cannot qualify a pointer to an array declarator. */
struct rprof_chain_buf {
	u64 words[RPROF_CHAIN_LEVELS][RPROF_CHAIN_WORDS];
};

static struct rprof_chain_buf __percpu *rprof_chain_bufs;

int rprof_chain_alloc(void)
{
	rprof_chain_bufs = alloc_percpu(struct rprof_chain_buf);
	return rprof_chain_bufs ? 0 : -ENOMEM;
}

void rprof_chain_free(void)
{
	free_percpu(rprof_chain_bufs);
	rprof_chain_bufs = NULL;
}

u64 *rprof_chain_scratch(void)
{
	return this_cpu_ptr(rprof_chain_bufs)->words[interrupt_context_level()];
}

/*
 * One frame of current's user stack, inside rprof_walk_user()'s
 * user_access_begin() section with page faults disabled: a read that
 * faults fails instead of faulting a page in.  Calls nothing (objtool's
 * uaccess rule).
 */
static __always_inline bool rprof_get_user_frame(void *ctx, u64 addr, u64 frame[2])
{
	const u64 __user *p = (const u64 __user *)addr;

	/* The address came from user memory and passed only a branch on
	 * its bounds: no speculative load through it (Spectre v1), as
	 * __get_user()'s own barrier gives perf_callchain_user(). */
	barrier_nospec();
	unsafe_get_user(frame[0], p, fault);
	unsafe_get_user(frame[1], p + 1, fault);
	return true;
fault:
	return false;
}

/* The same for a 32-bit task's frame: two 32-bit words, zero-extended. */
static __always_inline bool rprof_get_user_frame32(void *ctx, u64 addr, u64 frame[2])
{
	const u32 __user *p = (const u32 __user *)addr;
	u32 next, ret;

	barrier_nospec();
	unsafe_get_user(next, p, fault);
	unsafe_get_user(ret, p + 1, fault);
	frame[0] = next;
	frame[1] = ret;
	return true;
fault:
	return false;
}

/*
 * The user side of a chain, NMI-safe, as perf_callchain_user() but with
 * one user-access section for the whole walk.  The walk reads only frame
 * records between the stack pointer and top (its bounds: TASK_SIZE_MAX,
 * or 4 GiB for a 32-bit task), the range user_access_begin() checks.  A
 * first read through copy_from_user_nmi() also checks nmi_uaccess_okay()
 * (current's address space is the one loaded on this CPU), which modules
 * cannot call; that cannot change before the handler returns (no mm
 * switch runs under it).
 */
static __always_inline u32 rprof_walk_user(u64 fp, u64 *ips, u32 max, u32 *n,
					   u64 sp, u64 top, u32 word)
{
	u64 probe[2];
	u32 flags;

	*n = 0;
	if (sp >= top)
		return RPROF_STACK_USER_BAD_FP;
	if (fp && !(fp & (word - 1)) && fp >= sp && fp <= top - 2 * word &&
	    copy_from_user_nmi(probe, (const void __user *)fp, 2 * word))
		return RPROF_STACK_USER_FAULT;
	pagefault_disable();
	if (!user_access_begin((const void __user *)sp, top - sp)) {
		pagefault_enable();
		return RPROF_STACK_USER_FAULT;
	}
	if (word == 4)
		flags = rprof_walk_fp_with(fp, ips, max, n, rprof_get_user_frame32,
					   NULL, sp, top, 4);
	else
		flags = rprof_walk_fp_with(fp, ips, max, n, rprof_get_user_frame,
					   NULL, sp, top, 8);
	user_access_end();
	pagefault_enable();
	return flags;
}

/*
 * Which walk a task's user registers take: 8 for 64-bit code, 4 for
 * 32-bit code in the flat segments every 32-bit Linux program runs in
 * (__USER32_CS and __USER_DS, base 0, so a stack word is an address), 0
 * for anything else (32-bit code in other segments, such as the task's own
 * LDT or a TLS stack segment, whose bases perf adds and modules cannot
 * read; 32-bit code on a kernel without IA32 emulation; VM86, which x86-64
 * never runs).
 */
static u32 rprof_user_word(struct pt_regs *uregs)
{
	if (uregs->flags & X86_VM_MASK)
		return 0;
	if (user_64bit_mode(uregs))
		return 8;
#ifdef CONFIG_IA32_EMULATION
	if (uregs->cs == __USER32_CS && uregs->ss == __USER_DS)
		return 4;
#endif
	return 0;
}

static u32 rprof_kernel_chain(struct pt_regs *regs, u64 *ips, u32 max, u32 *n)
{
	struct unwind_state state;
	unsigned long addr;
	u32 i = 0, flags = 0;

	/* As perf_callchain_kernel(): real interrupt registers, or where the
	 * stack was when a software event fetched them. */
	if (regs->flags & X86_EFLAGS_FIXED)
		unwind_start(&state, current, regs, NULL);
	else
		unwind_start(&state, current, NULL, (void *)regs->sp);
	for (; !unwind_done(&state); unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		if (i == max) {
			flags = RPROF_STACK_KERNEL_TRUNCATED;
			break;
		}
		ips[i++] = addr;
	}
	if (unwind_error(&state))
		flags |= RPROF_STACK_KERNEL_ERROR;
	*n = i;
	return flags;
}

u32 rprof_callchain(struct pt_regs *regs, u64 *ips, u32 max_k, u32 max_u,
		    u32 *nk, u32 *nu)
{
	return rprof_callchain_regs(regs, ips, max_k, max_u, nk, nu, NULL);
}

u32 rprof_callchain_regs(struct pt_regs *regs, u64 *ips, u32 max_k, u32 max_u,
			 u32 *nk, u32 *nu, struct rprof_user_regs *ur)
{
	struct pt_regs *uregs = NULL;
	u32 flags = 0, k = 0, u = 0, w = 0, word;
	u64 fp, sp, top;
	bool want_u = max_u;

	max_k = min_t(u32, max_k, RPROF_MAX_FRAMES);
	max_u = min_t(u32, max_u, RPROF_MAX_FRAMES);
	if (!user_mode(regs)) {
		if (max_k)
			flags |= rprof_kernel_chain(regs, ips, max_k, &k);
		/* On behalf of a user task: the user side from its entry. */
		/* Not for kernel threads, nor for io_uring or vhost workers
		 * (PF_USER_WORKER): their user registers were never user code's
		 * (ip 0, a creator's stale frame pointer). */
		if (current->mm && !(current->flags & (PF_KTHREAD | PF_USER_WORKER)))
			uregs = task_pt_regs(current);
		if (uregs && max_u) {
			ips[k + u++] = uregs->ip;
			max_u--;
		}
	} else {
		uregs = regs;
	}
	if (uregs && want_u) {
		word = rprof_user_word(uregs);
		/* A 32-bit task's frame and stack pointers are the low halves
		 * of its registers, and its frames lie below 4 GiB. */
		fp = word == 4 ? (u32)uregs->bp : uregs->bp;
		sp = word == 4 ? (u32)uregs->sp : uregs->sp;
		top = word == 4 ? min_t(u64, TASK_SIZE_MAX, 1ULL << 32) : TASK_SIZE_MAX;
		if (!word)
			flags |= RPROF_STACK_USER_SKIPPED;
		else if (!max_u)
			flags |= fp ? RPROF_STACK_USER_TRUNCATED : 0;
		else if (ur && word == 8) {
			ur->ip = uregs->ip;
			ur->sp = sp;
			ur->bp = fp;
			ur->valid = 1;
		} else
			flags |= rprof_walk_user(fp, ips + k + u, max_u, &w, sp, top, word);
	}
	*nk = k;
	*nu = u + w;
	return flags;
}

/*
 * NMI context.  The executable file mapping that holds ip in current's
 * address space, found without mmap_lock: rprof_nmi_map()'s lockless
 * maple-tree walk, believed only if no write section of mmap_lock was open
 * when it began nor opened until it ended.
 *
 * The file's inode is read with copy_from_kernel_nofault(), which neither
 * faults nor is instrumented (KASAN): an overlayfs or FUSE-passthrough
 * mapping's file is a backing file, which 6.12 frees with kfree() after
 * the last fput(), not after a grace period.  It is believed only if the
 * sequence still holds after the read: a file freed meanwhile had its VMA
 * taken out of the tree under the write lock first, which changes it.
 * The inode is returned as a key only, never dereferenced.
 */
bool rprof_nmi_exec_vma(__u64 ip, struct rprof_nmi_vma *out)
{
	struct mm_struct *mm = current->mm;
	struct rprof_nmi_map map;
	struct inode *inode = NULL;
	unsigned int seq;

	if (!mm || (current->flags & (PF_KTHREAD | PF_USER_WORKER)))
		return false;
	seq = raw_read_seqcount(&mm->mm_lock_seq);
	if (!rprof_nmi_map(mm, seq, ip, &map) || !map.file || !(map.flags & RPROF_NMI_MAP_EXEC))
		return false;
	if (copy_from_kernel_nofault(&inode, &map.file->f_inode, sizeof(inode)) || !inode)
		return false;
	if (read_seqcount_retry(&mm->mm_lock_seq, seq))
		return false;
	out->start = map.start;
	out->end = map.end;
	out->pgoff_bytes = map.pgoff_bytes;
	out->inode = (unsigned long)inode;
	return true;
}

/*
 * NMI context.  The 8 bytes of current's user memory at addr, without
 * faulting: copy_from_user_nmi() also checks that current's address space
 * is the one loaded (it is not, for a moment, while a CPU switches).
 */
bool rprof_user_read_nmi(__u64 addr, __u64 *val)
{
	const void __user *p = (const void __user *)addr;

	/*
	 * The address came from user memory (a stack word plus a table's
	 * offset): no speculative load through it past the bounds check
	 * (Spectre v1), so the check is made here, before the barrier;
	 * copy_from_user_nmi() has none after its own.
	 */
	if (!access_ok(p, sizeof(*val)))
		return false;
	barrier_nospec();
	return !copy_from_user_nmi(val, p, sizeof(*val));
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

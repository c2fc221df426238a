// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: C glue for what Rust for Linux 6.12 cannot reach.
 *
 * Why each piece is C and not a binding, per case:
 *  - Module parameters: module_param() is a macro emitting section data, and
 *    6.12's module! macro takes no parameters.
 *  - The misc device, irq_work and delayed_work: their structures are not in
 *    kernel::bindings and their initialisers are macros (INIT_DELAYED_WORK,
 *    init_irq_work with lockdep keys); C owns them, Rust holds opaque
 *    pointers and the safe wrappers in src/ release them in Drop.
 *  - The overflow handler's view of the registers: user_mode() and
 *    instruction_pointer() are static inlines on struct pt_regs.
 *  - vmalloc_user() is a macro over vmalloc_user_noprof() in 6.12
 *    (allocation tagging); poll_wait() and wait_event_interruptible() are a
 *    static inline and a macro.
 * Nothing here holds rprof's logic: each helper does one kernel call.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/irq_work.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/poll.h>
#include <linux/ring_buffer.h>
#include <linux/dcache.h>
#include <linux/mmap_lock.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/kallsyms.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <asm/apic.h>
#include <asm/unwind.h>
#include <asm/uaccess.h>
#include <asm/nmi.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/tracepoint.h>
#include <linux/version.h>
#include <trace/events/sched.h>
#include <kunit/test.h>

#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"

static_assert(sizeof(struct rprof_config) == RPROF_CONFIG_SIZE_VER1);
static_assert(sizeof(struct rprof_stats) == RPROF_STATS_SIZE_VER1);
static_assert(sizeof(struct rprof_mmap_page) <= PAGE_SIZE);
static_assert(sizeof(struct rprof_reset) == 32);


/*
 * The munmap race check (rprof_resolve_user) compares VMA and mm write-lock
 * sequences, which exist only with per-VMA locks; without them it would
 * silently trust a VMA that replaced the sampled one.  Kconfig says
 * "depends on PER_VMA_LOCK"; out of tree, this says it.
 */
#ifndef CONFIG_PER_VMA_LOCK
#error "rprof needs CONFIG_PER_VMA_LOCK (its munmap race check reads VMA lock sequences)"
#endif
#ifndef CONFIG_X86_64
#error "rprof is x86-64 only for now (its overflow handler and tests assume x86-64 registers)"
#endif
/* ---- module parameters -------------------------------------------------- */

static unsigned int ring_records = 4096;
module_param(ring_records, uint, 0444);
MODULE_PARM_DESC(ring_records,
		 "Default slots of each per-CPU ring, a power of 2 in [64, 1048576] (4096)");

static unsigned int buffer_pages = 256;
module_param(buffer_pages, uint, 0444);
MODULE_PARM_DESC(buffer_pages,
		 "Data pages of the event buffer, a power of 2 in [1, 65536] (256)");

unsigned int rprof_param_ring_records(void)
{
	return ring_records;
}

unsigned int rprof_param_buffer_pages(void)
{
	return buffer_pages;
}

static unsigned int max_cookies = 4096;
module_param(max_cookies, uint, 0444);
MODULE_PARM_DESC(max_cookies,
		 "Files and module regions named per session, in [16, 1048576] (4096)");

unsigned int rprof_param_max_cookies(void)
{
	return max_cookies;
}

/* ---- misc device -------------------------------------------------------- */

struct rprof_misc {
	struct miscdevice misc;
	void *ctx;
};

/*
 * The ioctl numbers bindgen sees (spelled out in the header's enum, turned
 * into numbers by src/uapi.rs) must be the ones the header's macros define.
 * BUILD_BUG_ON rather than static_assert: clang does not take _IOR() as an
 * integer constant expression (its type check names an extern).
 */
static void rprof_check_ioctl_numbers(void)
{
	BUILD_BUG_ON(RPROF_IOC_GET_VERSION !=
		     _IOC(_IOC_READ, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_VERSION, sizeof(__u32)));
	BUILD_BUG_ON(RPROF_IOC_SET_CONFIG !=
		     _IOC(_IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_SET_CONFIG,
			  sizeof(struct rprof_config)));
	BUILD_BUG_ON(RPROF_IOC_GET_STATS !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_STATS,
			  sizeof(struct rprof_stats)));
	BUILD_BUG_ON(RPROF_IOC_LOOKUP_COOKIE !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_LOOKUP_COOKIE,
			  sizeof(struct rprof_cookie_lookup)));
	BUILD_BUG_ON(RPROF_IOC_START != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_START));
	BUILD_BUG_ON(RPROF_IOC_STOP != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_STOP));
	BUILD_BUG_ON(RPROF_IOC_FLUSH != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_FLUSH));
	BUILD_BUG_ON(RPROF_IOC_RESET_COOKIES != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_RESET_COOKIES));
}

struct rprof_misc *rprof_misc_register(const char *name,
				       const struct file_operations *fops,
				       void *ctx)
{
	struct rprof_misc *m;
	int ret;

	rprof_check_ioctl_numbers();
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.fops = fops;
	m->misc.mode = 0600;
	m->ctx = ctx;
	ret = misc_register(&m->misc);
	if (ret) {
		kfree(m);
		return ERR_PTR(ret);
	}
	return m;
}

/*
 * The ioctl structures have the same layout for 32-bit callers (fixed-width
 * fields, pointers in __u64), so compat_ptr_ioctl() serves them; it exists
 * only with CONFIG_COMPAT, hence C.
 */
long (*rprof_compat_ioctl(void))(struct file *, unsigned int, unsigned long)
{
#ifdef CONFIG_COMPAT
	return compat_ptr_ioctl;
#else
	return NULL;
#endif
}

bool rprof_printk_ratelimit(void)
{
	return printk_ratelimit();
}

void rprof_misc_deregister(struct rprof_misc *m)
{
	misc_deregister(&m->misc);
	kfree(m);
}

/* In open(): misc_open() left the miscdevice in private_data. */
void *rprof_misc_ctx(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct rprof_misc, misc)->ctx;
}

void *rprof_file_private(struct file *file)
{
	return file->private_data;
}

void rprof_file_set_private(struct file *file, void *data)
{
	file->private_data = data;
}

unsigned int rprof_file_flags(struct file *file)
{
	return file->f_flags;
}

bool rprof_perfmon_capable(void)
{
	return perfmon_capable();
}

/*
 * What perf_event_open() asks before it lets a caller see kernel data:
 * perf_event_paranoid (level 2 and above need CAP_PERFMON, which open()
 * already required) and the LSM's perf_event_open hook.  perf_allow_cpu()
 * would be the exact match for CPU-wide counters, but it is a static
 * inline over symbols 6.12 does not export; perf_allow_kernel() is
 * exported, and the stricter of the two on the paranoid level.
 */
int rprof_perf_allowed(void)
{
	/* Not stricter on the LSM side: the hook is asked about
	 * PERF_SECURITY_KERNEL, not PERF_SECURITY_CPU (docs/design.md). */
	return perf_allow_kernel();
}

/* ---- perf counters -------------------------------------------------------- */

/*
 * The overflow handler.  Runs in NMI context for PMU counters and in hard
 * IRQ context (hrtimer) for software clocks: it reads the registers and
 * current, then hands over to Rust, and calls nothing that sleeps, locks or
 * allocates.
 */
static void rprof_overflow(struct perf_event *event,
			   struct perf_sample_data *data, struct pt_regs *regs)
{
	struct rprof_raw_sample s;
#ifdef RPROF_BENCH
	u64 t0 = local_clock();
#endif

	/*
	 * CLOCK_MONOTONIC, one clock for every CPU and the one userspace
	 * reads: ktime_get_mono_fast_ns() is NMI-safe (a latched copy of the
	 * timekeeper).  local_clock() is per CPU and drifts from it.
	 */
	s.time_ns = ktime_get_mono_fast_ns();
	s.ip = instruction_pointer(regs);
	s.period = data->period;
	s.pid = task_tgid_nr(current);
	s.tid = task_pid_nr(current);
	s.cpu = smp_processor_id();
	s.flags = user_mode(regs) ? RPROF_RAW_USER : 0;
	/*
	 * When perf throttles a counter it sets hw.interrupts to its private
	 * MAX_INTERRUPTS, (~0ULL) in kernel/events/core.c, before calling us.
	 */
	if (event->hw.interrupts == ~0ULL)
		s.flags |= RPROF_RAW_THROTTLED;
	/* A racy copy, as perf's own NMI path takes it: good enough for a name. */
	memcpy(s.comm, current->comm, sizeof(s.comm));
	s.comm[sizeof(s.comm) - 1] = 0;
	rprof_on_sample(event->overflow_handler_context, &s, regs);
#ifdef RPROF_BENCH
	rprof_bench_stage(RPROF_BENCH_STAGE_HANDLER, local_clock() - t0);
#endif
}

/* ---- call chains (NMI context) ----------------------------------------- */

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
 * The frame-pointer walk, with the reader inlined where it is a constant:
 * the user walk below reads each frame with two unsafe_get_user() loads
 * inside one user-access section with page faults disabled, instead of
 * a copy_from_user_nmi() (and its checks) per frame.  word is the size of
 * the frame's two words: 8, or 4 for a 32-bit (compat) task, whose frame
 * records are two 32-bit words (saved %ebp, return address).
 */
static __always_inline u32 rprof_walk_fp_with(u64 fp, u64 *ips, u32 max, u32 *n,
					      rprof_read_frame_fn read, void *ctx,
					      u64 lo, u64 hi, u32 word)
{
	u64 frame[2], prev = 0;
	u32 i = 0, flags = 0;

	while (fp) {
		/* A frame record lies above the stack pointer, and each
		 * caller's above its callee's: anything else is not a chain. */
		if ((fp & (word - 1)) || fp < lo || hi < 2 * word ||
		    fp > hi - 2 * word || (prev && fp <= prev)) {
			flags = RPROF_STACK_USER_BAD_FP;
			break;
		}
		if (i == max) {
			flags = RPROF_STACK_USER_TRUNCATED;
			break;
		}
		if (!read(ctx, fp, frame)) {
			flags = RPROF_STACK_USER_FAULT;
			break;
		}
		if (!frame[1])
			break;
		ips[i++] = frame[1];
		prev = fp;
		fp = frame[0];
	}
	*n = i;
	return flags;
}

u32 rprof_walk_fp(u64 fp, u64 *ips, u32 max, u32 *n,
		  rprof_read_frame_fn read, void *ctx, u64 lo, u64 hi, u32 word)
{
	if (word == 4)
		return rprof_walk_fp_with(fp, ips, max, n, read, ctx, lo, hi, 4);
	return rprof_walk_fp_with(fp, ips, max, n, read, ctx, lo, hi, 8);
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
		else
			flags |= rprof_walk_user(fp, ips + k + u, max_u, &w, sp, top, word);
	}
	*nk = k;
	*nu = u + w;
	return flags;
}

/* rprof's event kinds (uapi) to perf's type and config. */
static int rprof_perf_event(u32 kind, u32 *type, u64 *config)
{
	switch (kind) {
	case RPROF_EVENT_CPU_CLOCK:
		*type = PERF_TYPE_SOFTWARE;
		*config = PERF_COUNT_SW_CPU_CLOCK;
		return 0;
	case RPROF_EVENT_TASK_CLOCK:
		*type = PERF_TYPE_SOFTWARE;
		*config = PERF_COUNT_SW_TASK_CLOCK;
		return 0;
	case RPROF_EVENT_CYCLES:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_CPU_CYCLES;
		return 0;
	case RPROF_EVENT_INSTRUCTIONS:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_INSTRUCTIONS;
		return 0;
	case RPROF_EVENT_CACHE_MISSES:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_CACHE_MISSES;
		return 0;
	case RPROF_EVENT_BRANCH_MISSES:
		*type = PERF_TYPE_HARDWARE;
		*config = PERF_COUNT_HW_BRANCH_MISSES;
		return 0;
	}
	return -EINVAL;
}

struct perf_event *rprof_counter_create(int cpu,
					const struct rprof_counter_attr *a,
					void *ctx)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.sample_period = a->period,
		.freq = !!a->freq,
		.exclude_user = !!a->exclude_user,
		.exclude_kernel = !!a->exclude_kernel,
		.exclude_hv = 1,
		.pinned = 1,
		.disabled = 1, /* rprof_counter_enable() once all exist */
	};
	int ret = rprof_perf_event(a->kind, &attr.type, &attr.config);

	if (ret)
		return ERR_PTR(ret);
	return perf_event_create_kernel_counter(&attr, cpu, NULL,
						rprof_overflow, ctx);
}

void rprof_counter_enable(struct perf_event *event)
{
	perf_event_enable(event);
}

void rprof_counter_release(struct perf_event *event)
{
	perf_event_release_kernel(event);
}

long rprof_ptr_err(const void *ptr)
{
	return IS_ERR(ptr) ? PTR_ERR(ptr) : 0;
}

/* ---- address spaces and files -------------------------------------------- */

/*
 * NMI context: mmget_not_zero() is an atomic increment that fails once the
 * address space is being torn down.  The sequence is the mm's write-lock
 * seqcount (per-VMA locking): rprof_resolve_user() uses it to refuse VMAs
 * created or changed after the sample.
 */
/* current's address-space write-lock sequence now (0 without one).  NMI
 * context: the chain path reads it at the sample, before the walk. */
u32 rprof_current_mm_seq(void)
{
	struct mm_struct *mm = current->mm;

	return mm ? READ_ONCE(mm->mm_lock_seq.sequence) : 0;
}

/* Parents walked at most: a bound on the walk's time in NMI context.  A
 * task more than this many generations below the filter's process is
 * not kept (a fork chain that deep is built on purpose, not by a build or
 * a shell script). */
#define RPROF_MAX_ANCESTORS 128

/*
 * Process context (SET_CONFIG).  The initial namespace's number of the
 * thread group that @vnr names in the caller's pid namespace, or -ESRCH if
 * it names none there (no such process, or a thread that does not lead its
 * group).  The filter compares task_tgid_nr(), which is the initial
 * namespace's: a caller inside a container passes its own numbers.
 */
int rprof_global_tgid(pid_t vnr)
{
	struct pid *pid;
	int nr = -ESRCH;

	rcu_read_lock();
	pid = find_vpid(vnr);
	if (pid && pid_task(pid, PIDTYPE_TGID))
		nr = pid_nr(pid);
	rcu_read_unlock();
	return nr;
}

/*
 * The processes a session with RPROF_CONFIG_PID_DESCENDANTS follows: the
 * filter's thread group, every process below it by real_parent, and the
 * orphans, the children a followed process left when it exited (re-parented
 * to init or a subreaper, they are no longer below it by real_parent; their
 * own children are, through them).  An orphan is named by its thread
 * group's number and start time, so a later process that gets the same
 * number is not taken for it.
 *
 * Invariants: entries [0, n) are written once, before n covers them
 * (smp_store_release), and never change; n only grows, to at most
 * RPROF_FOLLOW_ORPHANS; writers hold lock.  lost counts the orphans that
 * found the table full.
 */
#define RPROF_FOLLOW_ORPHANS 64

struct rprof_follow {
	pid_t tgid;
	unsigned int n;
	raw_spinlock_t lock;
	struct rcu_head rcu;
	atomic64_t lost;
	struct {
		pid_t tgid;
		u64 start;
	} orphans[RPROF_FOLLOW_ORPHANS];
};

static bool rprof_follow_has_n(struct rprof_follow *f, unsigned int n,
			       pid_t tgid, u64 start)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (f->orphans[i].tgid == tgid && f->orphans[i].start == start)
			return true;
	return false;
}

static bool rprof_follow_has(struct rprof_follow *f, pid_t tgid, u64 start)
{
	return rprof_follow_has_n(f, smp_load_acquire(&f->n), tgid, start);
}

/* @t's thread group: its number and its leader's start time. */
static pid_t rprof_group_of(struct task_struct *t, u64 *start)
{
	*start = READ_ONCE(t->group_leader)->start_time;
	return task_tgid_nr(t);
}

/*
 * Whether @t is followed: it, or one of its parents, is the filter's
 * thread group or an orphan of it.  Called under rcu_read_lock(): a
 * task_struct is freed only after a grace period (delayed_put_task_struct),
 * so every parent reached through rcu_dereference() stays valid until
 * rcu_read_unlock(), even if it exits meanwhile.  Takes no lock, calls
 * nothing that sleeps: NMI-safe.
 */
static bool rprof_follows(struct rprof_follow *f, struct task_struct *t)
{
	unsigned int n = smp_load_acquire(&f->n);
	struct task_struct *p;
	u64 start;
	pid_t tgid;
	int i;

	for (i = 0; i < RPROF_MAX_ANCESTORS; i++) {
		tgid = rprof_group_of(t, &start);
		if (tgid == f->tgid || rprof_follow_has_n(f, n, tgid, start))
			return true;
		p = rcu_dereference(t->real_parent);
		/* init_task is its own parent; the idle tasks are pid 0. */
		if (p == t || !p->pid)
			break;
		t = p;
	}
	return false;
}

/* NMI context (the overflow handler's pid filter): see rprof_follows(). */
bool rprof_current_followed(struct rprof_follow *f)
{
	bool found;

	rcu_read_lock();
	found = rprof_follows(f, current);
	rcu_read_unlock();
	return found;
}

/* Puts thread group (@tgid, @start) in @f's orphan table, or counts it
 * lost when the table is full. */
static void rprof_follow_insert(struct rprof_follow *f, pid_t tgid, u64 start)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&f->lock, flags);
	if (rprof_follow_has(f, tgid, start)) {
		/* already there */
	} else if (f->n == RPROF_FOLLOW_ORPHANS) {
		atomic64_inc(&f->lost);
	} else {
		f->orphans[f->n].tgid = tgid;
		f->orphans[f->n].start = start;
		smp_store_release(&f->n, f->n + 1);
	}
	raw_spin_unlock_irqrestore(&f->lock, flags);
}

static void rprof_follow_add(struct rprof_follow *f, struct task_struct *c)
{
	u64 start;
	pid_t tgid = rprof_group_of(c, &start);

	rprof_follow_insert(f, tgid, start);
}

/*
 * Where exit_notify() will send @p's children, as find_new_reaper() picks:
 * a thread of @p that is not exiting keeps them (true), and so does the
 * nearest subreaper above @p if it is followed itself (true); otherwise
 * they leave the followed tree (false).  Under rcu_read_lock(); racy, as
 * the re-parenting has not happened yet: a miss adds an entry that costs
 * a slot, or leaves out an orphan of two threads exiting at once.
 */
static bool rprof_children_stay(struct rprof_follow *f, struct task_struct *p)
{
	struct task_struct *t, *r = p;
	int i;

	for_each_thread(p, t)
		if (!(READ_ONCE(t->flags) & PF_EXITING))
			return true;
	for (i = 0; i < RPROF_MAX_ANCESTORS; i++) {
		t = rcu_dereference(r->real_parent);
		if (t == r || !t->pid)
			break;
		if (t->signal->is_child_subreaper) /* a racy peek at a bit-field */
			return rprof_follows(f, t);
		r = t;
	}
	return false;
}

/*
 * sched_process_exit, before exit_notify() re-parents @p's children: a
 * followed task whose children would leave the followed tree (its thread
 * group is dying and no followed subreaper takes them) hands the live ones
 * (processes, never threads, which have their creator's parent; not
 * zombies) to the orphan table.  The children list is tasklist_lock's,
 * which modules cannot take: the children are found on the RCU-safe list
 * of all processes instead (for_each_process), by their real_parent, which
 * exit_notify() has not changed yet.  Only a task with children pays for
 * that walk; the list_empty() peek is racy, and a child cloned with
 * CLONE_PARENT by a grandchild in this window is missed.  The probe holds
 * its own rcu_read_lock() (on 7.2 tracepoints run under SRCU, preemptible).
 */
static void rprof_follow_exit(struct rprof_follow *f, struct task_struct *p)
{
	struct task_struct *t;

	if (list_empty(&p->children))
		return;
	rcu_read_lock();
	if (rprof_follows(f, p) && !rprof_children_stay(f, p)) {
		for_each_process(t)
			if (rcu_dereference(t->real_parent) == p && !READ_ONCE(t->exit_state))
				rprof_follow_add(f, t);
	}
	rcu_read_unlock();
}

/*
 * The exit probe is registered once, at the first followed set, and stays
 * until the module goes (rprof_follow_unregister()): unregistering costs a
 * tracepoint_synchronize_unregister(), too slow for every SET_CONFIG.  It
 * serves the set of the session that STARTed last (rprof_followed,
 * published by rprof_follow_publish(); only one session runs at a time),
 * read under rcu_read_lock(), so a set is freed after a grace period
 * (kfree_rcu).  The pointer is written with single atomic operations (a
 * set clears it only if it is still its own), so publishing takes no lock
 * (START holds the CPU hotplug lock, which registration takes inside
 * rprof_follow_mutex).
 */
static DEFINE_MUTEX(rprof_follow_mutex);
static struct tracepoint *rprof_follow_tp;
static struct rprof_follow __rcu *rprof_followed;

/* The tracepoint gained group_dead in 6.16; rprof does not need it. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
static void rprof_follow_exit_probe(void *data, struct task_struct *p, bool group_dead)
#else
static void rprof_follow_exit_probe(void *data, struct task_struct *p)
#endif
{
	struct rprof_follow *f;

	rcu_read_lock();
	f = rcu_dereference(rprof_followed);
	if (f)
		rprof_follow_exit(f, p);
	rcu_read_unlock();
}

static void rprof_find_exit_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exit"))
		*(struct tracepoint **)priv = tp;
}

/* Under rprof_follow_mutex: registers the exit probe if it is not. */
static int rprof_follow_register(void)
{
	struct tracepoint *tp = NULL;
	int ret;

	/* The probe's type is the tracepoint's (a build error otherwise). */
	check_trace_callback_type_sched_process_exit(rprof_follow_exit_probe);
	if (rprof_follow_tp)
		return 0;
	for_each_kernel_tracepoint(rprof_find_exit_tp, &tp);
	if (!tp)
		return -ENOSYS;
	ret = tracepoint_probe_register(tp, rprof_follow_exit_probe, NULL);
	if (!ret)
		rprof_follow_tp = tp;
	return ret;
}

/*
 * Sleepable process context (SET_CONFIG; may take the CPU hotplug lock to
 * register the probe): the followed set of thread group @tgid (the initial
 * namespace's number), not yet updated by exits (rprof_follow_publish()).
 * ERR_PTR on failure.
 */
struct rprof_follow *rprof_follow_create(pid_t tgid)
{
	struct rprof_follow *f = kzalloc(sizeof(*f), GFP_KERNEL);
	int ret;

	if (!f)
		return ERR_PTR(-ENOMEM);
	f->tgid = tgid;
	raw_spin_lock_init(&f->lock);
	mutex_lock(&rprof_follow_mutex);
	ret = rprof_follow_register();
	mutex_unlock(&rprof_follow_mutex);
	if (ret) {
		kfree(f);
		return ERR_PTR(ret);
	}
	return f;
}

/* START: exits update @f from now on, in place of the set before.  Takes
 * no lock. */
void rprof_follow_publish(struct rprof_follow *f)
{
	rcu_assign_pointer(rprof_followed, f);
}

/*
 * Process context.  Frees @f once no exit probe can still be reading it
 * (after a grace period); the caller guarantees no overflow handler can
 * reach it any more (its counters are released).
 */
void rprof_follow_destroy(struct rprof_follow *f)
{
	/* Only if it is still ours: a later START's set stays. */
	cmpxchg((struct rprof_follow **)&rprof_followed, f, NULL);
	kfree_rcu(f, rcu);
}

/* Module exit, after every session: the exit probe goes, and no call of it
 * is still running when this returns. */
void rprof_follow_unregister(void)
{
	mutex_lock(&rprof_follow_mutex);
	if (rprof_follow_tp) {
		tracepoint_probe_unregister(rprof_follow_tp, rprof_follow_exit_probe, NULL);
		tracepoint_synchronize_unregister();
		rprof_follow_tp = NULL;
	}
	mutex_unlock(&rprof_follow_mutex);
}

/* Orphans followed, and (*lost) those the table had no room for. */
u64 rprof_follow_orphans(struct rprof_follow *f, u64 *lost)
{
	*lost = atomic64_read(&f->lost);
	return smp_load_acquire(&f->n);
}

struct mm_struct *rprof_current_mm_get(u32 *seq)
{
	struct mm_struct *mm = current->mm;

	if (!mm || !mmget_not_zero(mm))
		return NULL;
	*seq = READ_ONCE(mm->mm_lock_seq.sequence);
	return mm;
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

void rprof_cond_resched(void)
{
	cond_resched();
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

bool rprof_mm_exe_path(struct mm_struct *mm, struct path *path)
{
	struct file *exe;

	rcu_read_lock();
	exe = get_file_rcu(&mm->exe_file);
	rcu_read_unlock();
	if (!exe)
		return false;
	*path = exe->f_path;
	path_get(path);
	fput(exe);
	return true;
}

void rprof_current_root(struct path *root)
{
	get_fs_root(current->fs, root);
}

int rprof_path_info(const struct path *path, const struct path *root,
		    char *buf, int len, u64 *dev, u64 *ino, u32 *flags)
{
	struct inode *inode = d_inode(path->dentry);
	char *p;
	int n;

	*flags = 0;
	*dev = inode ? new_encode_dev(inode->i_sb->s_dev) : 0;
	*ino = inode ? inode->i_ino : 0;
	if (d_unlinked(path->dentry))
		*flags |= RPROF_COOKIE_DELETED;
	if (!path_is_under((struct path *)path, (struct path *)root))
		*flags |= RPROF_COOKIE_UNREACHABLE;
	p = d_path(path, buf, len);
	if (IS_ERR(p)) {
		/* Too long, or no path: fall back to the file's own name. */
		*flags |= PTR_ERR(p) == -ENAMETOOLONG ? RPROF_COOKIE_TRUNCATED :
							  RPROF_COOKIE_NO_PATH;
		n = snprintf(buf, len, "%pd", path->dentry);
		return min(n, len - 1);
	}
	n = strlen(p);
	memmove(buf, p, n + 1);
	return n;
}

void rprof_path_put(struct path *path)
{
	path_put(path);
}

/* ---- kernel modules ------------------------------------------------------ */

/*
 * 6.12 exports no way to map an address to its module: __module_address()
 * and __module_text_address() are not exported, nor is the module list
 * (checked in kernel/module/main.c of 6.12.117).  But every
 * module is on that list, including this one, and the list is walked
 * under RCU by the kernel's own lockless readers (modules are removed with
 * list_del_rcu() and freed after a grace period).  Walking from our own
 * entry meets the list head once: it is the one node that is not inside a
 * module, found at load time by asking kallsyms what it is.
 */
static const struct list_head *rprof_modules_head;

static void rprof_find_modules_head(void)
{
	const struct list_head *node;
	char sym[KSYM_SYMBOL_LEN];

	rcu_read_lock();
	for (node = rcu_dereference(list_next_rcu(&THIS_MODULE->list));
	     node != &THIS_MODULE->list;
	     node = rcu_dereference(list_next_rcu((struct list_head *)node))) {
		sprint_symbol(sym, (unsigned long)node);
		if (!strncmp(sym, "modules+0x0/", 12)) {
			rprof_modules_head = node;
			break;
		}
	}
	rcu_read_unlock();
}

static bool rprof_module_match(struct module *mod, u64 ip,
			       struct rprof_modinfo *out)
{
	static const enum mod_mem_type types[] = { MOD_TEXT, MOD_INIT_TEXT };
	unsigned int i;

	/*
	 * UNFORMED modules are skipped, as __module_address() does: their
	 * memory is not set up yet.  GOING modules are not: the GOING notifier
	 * (rprof_module_event) drains the rings to resolve the module's last
	 * samples, and the state is GOING by then.  No sample lands in a GOING
	 * module after that drain: delete_module() ran its exit function
	 * before announcing GOING, and a failed init has returned, so none of
	 * its code runs between our notifier and the module being freed.
	 */
	if (mod->state == MODULE_STATE_UNFORMED)
		return false;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		struct module_memory *mem = &mod->mem[types[i]];

		if (mem->size && ip >= (unsigned long)mem->base &&
		    ip < (unsigned long)mem->base + mem->size) {
			out->id = mod;
			out->base = (unsigned long)mem->base;
			out->size = mem->size;
			out->init = types[i] == MOD_INIT_TEXT;
			strscpy(out->name, mod->name, sizeof(out->name));
			return true;
		}
	}
	return false;
}

bool rprof_module_lookup(u64 ip, struct rprof_modinfo *out)
{
	struct module *mod;
	bool found = false;

	if (!rprof_modules_head)
		return false;
	/*
	 * Module text (and everything else execmem hands out) lies in the
	 * module area; the core kernel's text does not.  Most kernel samples
	 * are in the core kernel: they skip the walk.
	 */
	if (ip < MODULES_VADDR || ip >= MODULES_END)
		return false;
	rcu_read_lock();
	if (rprof_module_match(THIS_MODULE, ip, out)) {
		found = true;
		goto out;
	}
	list_for_each_entry_rcu(mod, &THIS_MODULE->list, list) {
		if (&mod->list == rprof_modules_head)
			continue;
		if (rprof_module_match(mod, ip, out)) {
			found = true;
			break;
		}
	}
out:
	rcu_read_unlock();
	return found;
}

static void *rprof_modnotify_ctx;
static void (*rprof_modnotify_going)(void *ctx, const void *id);

/* Module loads and unloads so far: what kernel addresses resolve to may
 * have changed since a caller last looked (the drain's raw-chain table). */
static atomic_t rprof_module_changes = ATOMIC_INIT(0);

u32 rprof_module_generation(void)
{
	return atomic_read(&rprof_module_changes);
}

static int rprof_module_event(struct notifier_block *nb, unsigned long action,
			      void *data)
{
	if (action == MODULE_STATE_COMING || action == MODULE_STATE_GOING)
		atomic_inc(&rprof_module_changes);
	if (action == MODULE_STATE_GOING)
		rprof_modnotify_going(rprof_modnotify_ctx, data);
	return NOTIFY_OK;
}

static struct notifier_block rprof_module_nb = {
	.notifier_call = rprof_module_event,
};

int rprof_module_notifier_register(void *ctx,
				   void (*going)(void *ctx, const void *id))
{
	rprof_find_modules_head();
	if (!rprof_modules_head)
		pr_warn("rprof: module list not found; module samples resolve to the kernel\n");
	rprof_modnotify_ctx = ctx;
	rprof_modnotify_going = going;
	return register_module_notifier(&rprof_module_nb);
}

void rprof_module_notifier_unregister(void)
{
	unregister_module_notifier(&rprof_module_nb);
}

/* ---- deferred work -------------------------------------------------------- */

/*
 * The work runs on the unbound system workqueue.  A drain pass moves every
 * CPU's ring (up to 2^20 records each), so it is long, CPU-bound work that
 * the workqueue documentation sends to unbound pools: on the per-CPU
 * system_wq it waits for the CPU that queued it, and with every CPU busy
 * with the profiled program, that wait reached the 0.4 s a 16384-slot ring
 * holds at 40 kHz (make bench, 4 busy vCPUs: 6462 to 57572 samples lost in
 * each of 3 runs, none in 3 runs on system_unbound_wq, and no difference in
 * the cost per sample at 1 and 4 kHz).
 */
#define RPROF_WQ system_unbound_wq

struct rprof_kicker {
	struct irq_work irq_work;
	struct delayed_work work;
	unsigned int (*fn)(void *ctx);
	void *ctx;
};

static void rprof_kicker_irq_work(struct irq_work *iw)
{
	struct rprof_kicker *k = container_of(iw, struct rprof_kicker, irq_work);

	mod_delayed_work(RPROF_WQ, &k->work, 0);
}

static void rprof_kicker_work(struct work_struct *w)
{
	struct rprof_kicker *k =
		container_of(to_delayed_work(w), struct rprof_kicker, work);

	unsigned int again_ms = k->fn(k->ctx);

	/* Periodic work re-arms here rather than in Rust, so that the Rust
	 * side never touches the kicker from inside its own work. */
	if (again_ms)
		queue_delayed_work(RPROF_WQ, &k->work, msecs_to_jiffies(again_ms));
}

struct rprof_kicker *rprof_kicker_create(unsigned int (*fn)(void *ctx))
{
	struct rprof_kicker *k = kzalloc(sizeof(*k), GFP_KERNEL);

	if (!k)
		return NULL;
	init_irq_work(&k->irq_work, rprof_kicker_irq_work);
	INIT_DELAYED_WORK(&k->work, rprof_kicker_work);
	k->fn = fn;
	return k;
}

/* Before the first kick or schedule: the context fn gets. */
void rprof_kicker_bind(struct rprof_kicker *k, void *ctx)
{
	k->ctx = ctx;
}

/* NMI-safe: irq_work_queue() is the kernel's way out of NMI context. */
void rprof_kicker_kick(struct rprof_kicker *k)
{
	irq_work_queue(&k->irq_work);
}

void rprof_kicker_schedule(struct rprof_kicker *k, unsigned int delay_ms)
{
	queue_delayed_work(RPROF_WQ, &k->work, msecs_to_jiffies(delay_ms));
}

void rprof_kicker_run_now(struct rprof_kicker *k)
{
	mod_delayed_work(RPROF_WQ, &k->work, 0);
	flush_delayed_work(&k->work);
}

/* Caller guarantees nothing kicks or schedules k any more. */
void rprof_kicker_destroy(struct rprof_kicker *k)
{
	irq_work_sync(&k->irq_work);
	cancel_delayed_work_sync(&k->work);
	kfree(k);
}

/* ---- wait queue ----------------------------------------------------------- */

struct rprof_waitq {
	wait_queue_head_t head;
};

struct rprof_waitq *rprof_waitq_create(void)
{
	struct rprof_waitq *wq = kzalloc(sizeof(*wq), GFP_KERNEL);

	if (wq)
		init_waitqueue_head(&wq->head);
	return wq;
}

void rprof_waitq_destroy(struct rprof_waitq *wq)
{
	kfree(wq);
}

void rprof_waitq_wake(struct rprof_waitq *wq)
{
	wake_up_interruptible_poll(&wq->head, EPOLLIN | EPOLLRDNORM);
}

int rprof_waitq_wait(struct rprof_waitq *wq, bool (*cond)(void *ctx), void *ctx)
{
	return wait_event_interruptible(wq->head, cond(ctx));
}

void rprof_poll_wait(struct file *file, struct rprof_waitq *wq,
		     struct poll_table_struct *pt)
{
	poll_wait(file, &wq->head, pt);
}

unsigned int rprof_poll_mask(bool readable, bool error)
{
	return (readable ? EPOLLIN | EPOLLRDNORM : 0) | (error ? EPOLLERR : 0);
}

/* ---- event buffer memory ------------------------------------------------- */

void *rprof_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void rprof_vfree(void *addr)
{
	vfree(addr);
}

/*
 * The buffer is one control page followed by buf_pages - 1 data pages.
 * data_area false: offset 0, exactly the control page, any protection but
 * exec (the kernel writes data_head there for the reader and trusts nothing
 * it reads back: src/evbuf.rs).  data_area true: offset
 * PAGE_SIZE, exactly the data pages, read-only for good: no VM_WRITE, and
 * VM_MAYWRITE/VM_MAYEXEC cleared so mprotect() cannot add them later.
 * Both refuse to grow (VM_DONTEXPAND) and are not dumped.
 */
int rprof_mmap_buffer(struct vm_area_struct *vma, void *buf,
		      unsigned long buf_pages, bool data_area)
{
	unsigned long pgoff = data_area ? 1 : 0;
	unsigned long pages = data_area ? buf_pages - 1 : 1;

	if (vma->vm_pgoff != pgoff || vma_pages(vma) != pages)
		return -EINVAL;
	/* A private mapping would copy the control page on the reader's
	 * first write to data_tail, which the kernel would then never see. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (data_area) {
		if (vma->vm_flags & (VM_WRITE | VM_EXEC))
			return -EPERM;
		vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	} else {
		if (vma->vm_flags & VM_EXEC)
			return -EPERM;
		vm_flags_clear(vma, VM_MAYEXEC);
	}
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return remap_vmalloc_range(vma, buf, pgoff);
}

/* ---- CPU hotplug ---------------------------------------------------------- */

/*
 * One dynamic AP_ONLINE state.  Its callbacks run in the CPU's hotplug
 * thread (process context) with the hotplug lock held for writing: they
 * call the Rust callbacks given at registration (src/kapi/hotplug.rs).
 * cpuhp_setup_state_nocalls() is a static inline, hence C.
 */
static enum cpuhp_state rprof_hp_state;
static void *rprof_hp_ctx;
static int (*rprof_hp_up)(void *ctx, unsigned int cpu);
static int (*rprof_hp_down)(void *ctx, unsigned int cpu);

static int rprof_hp_online(unsigned int cpu)
{
	return rprof_hp_up(rprof_hp_ctx, cpu);
}

static int rprof_hp_offline(unsigned int cpu)
{
	return rprof_hp_down(rprof_hp_ctx, cpu);
}

int rprof_hotplug_register(void *ctx, int (*up)(void *ctx, unsigned int cpu),
			   int (*down)(void *ctx, unsigned int cpu))
{
	int ret;

	rprof_hp_ctx = ctx;
	rprof_hp_up = up;
	rprof_hp_down = down;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "rprof:online",
					rprof_hp_online, rprof_hp_offline);
	if (ret < 0)
		return ret;
	rprof_hp_state = ret;
	return 0;
}

void rprof_hotplug_unregister(void)
{
	cpuhp_remove_state_nocalls(rprof_hp_state);
}

void rprof_cpus_read_lock(void)
{
	cpus_read_lock();
}

void rprof_cpus_read_unlock(void)
{
	cpus_read_unlock();
}

/* ---- CPUs and time ------------------------------------------------------- */

unsigned int rprof_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

unsigned int rprof_num_online_cpus(void)
{
	return num_online_cpus();
}

bool rprof_cpu_online(unsigned int cpu)
{
	return cpu_online(cpu);
}

u64 rprof_local_clock(void)
{
	return local_clock();
}

u64 rprof_clock(void)
{
	return ktime_get_mono_fast_ns();
}

/* ---- KUnit --------------------------------------------------------------- */

#ifdef RPROF_KUNIT
void rprof_kunit_fail(struct kunit *test, const char *file, unsigned int line,
		      const void *fmt_args)
{
	KUNIT_FAIL(test, "at %s:%u: %pA", file, line, fmt_args);
}

/*
 * Writers in every context for the stress tests: a pinned hard-IRQ hrtimer
 * and an irq_work per CPU, and a kthread bound to each CPU.  Test builds
 * only.
 */
struct rprof_test_cpu {
	atomic_t nmi_expected;
	struct hrtimer timer;
	struct irq_work irq_work;
	struct task_struct *thread;
	struct completion done;
	struct rprof_test *t;
	unsigned int cpu;
};

struct rprof_test {
	void (*fn)(void *ctx, unsigned int cpu, unsigned int src);
	void *ctx;
	u64 period_ns;
	bool stopping;
	struct rprof_test_cpu cpus[];
};

/*
 * The NMI writer: an NMI_LOCAL handler that writes when its CPU's timer
 * asked for an NMI (other NMIs are not ours: NMI_DONE).
 */
static struct rprof_test *rprof_test_nmi_owner;

/* Call chains the NMI writer took with rprof_callchain(), as the overflow
 * handler of a PMU counter does in NMI context: how many, their kernel
 * frames, and the first one, kept for the test to check in process
 * context (nothing that names a symbol is NMI-safe). */
#define RPROF_TEST_CHAIN 16
static atomic64_t rprof_test_nmi_chains, rprof_test_nmi_frames;
static atomic_t rprof_test_nmi_kept;
static u64 rprof_test_nmi_first[RPROF_TEST_CHAIN];
static u32 rprof_test_nmi_first_n;

/* The counts, and the first chain's frames into ips (RPROF_TEST_CHAIN
 * words); returns how many.  After rprof_test_stop(). */
u32 rprof_test_nmi_chain_counts(u64 *chains, u64 *frames, u64 *ips)
{
	*chains = atomic64_read(&rprof_test_nmi_chains);
	*frames = atomic64_read(&rprof_test_nmi_frames);
	if (atomic_read(&rprof_test_nmi_kept) != 2)
		return 0;
	memcpy(ips, rprof_test_nmi_first, sizeof(rprof_test_nmi_first));
	return rprof_test_nmi_first_n;
}

/* Whether ip is in a function the kernel's symbol table names. */
bool rprof_test_kernel_symbol(u64 ip)
{
	char buf[KSYM_SYMBOL_LEN];

	sprint_symbol(buf, ip);
	pr_info("rprof: NMI chain frame %pS\n", (void *)ip);
	return !(buf[0] == '0' && buf[1] == 'x');
}

static int rprof_test_nmi(unsigned int type, struct pt_regs *regs)
{
	struct rprof_test *t = READ_ONCE(rprof_test_nmi_owner);
	unsigned int cpu = smp_processor_id();
	u64 ips[2 * RPROF_TEST_CHAIN];
	u32 nk, nu;

	if (!t || !atomic_xchg(&t->cpus[cpu].nmi_expected, 0))
		return NMI_DONE;
	WARN_ON_ONCE(!in_nmi());
	t->fn(t->ctx, cpu, RPROF_TEST_SRC_NMI);
	/* The NMI interrupted the timer's hard IRQ: a kernel chain through
	 * the IRQ stack, walked by the kernel's unwinder in NMI context. */
	rprof_callchain(regs, ips, RPROF_TEST_CHAIN, RPROF_TEST_CHAIN, &nk, &nu);
	atomic64_inc(&rprof_test_nmi_chains);
	atomic64_add(nk, &rprof_test_nmi_frames);
	/* 0 -> 1: this NMI keeps its chain; 2: kept, readable. */
	if (!atomic_cmpxchg(&rprof_test_nmi_kept, 0, 1)) {
		memcpy(rprof_test_nmi_first, ips, sizeof(rprof_test_nmi_first));
		rprof_test_nmi_first_n = min_t(u32, nk, RPROF_TEST_CHAIN);
		atomic_set_release(&rprof_test_nmi_kept, 2);
	}
	return NMI_HANDLED;
}

static enum hrtimer_restart rprof_test_timer_fn(struct hrtimer *timer)
{
	struct rprof_test_cpu *c = container_of(timer, struct rprof_test_cpu, timer);

	c->t->fn(c->t->ctx, c->cpu, RPROF_TEST_SRC_TIMER);
	irq_work_queue(&c->irq_work);
	/* An NMI nested in this hard IRQ, which may have interrupted the
	 * task writer: all four contexts on one CPU. */
	if (READ_ONCE(rprof_test_nmi_owner) == c->t &&
	    !atomic_xchg(&c->nmi_expected, 1))
		__apic_send_IPI_self(NMI_VECTOR);
	if (READ_ONCE(c->t->stopping))
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, ns_to_ktime(c->t->period_ns));
	return HRTIMER_RESTART;
}

static void rprof_test_irq_work_fn(struct irq_work *iw)
{
	struct rprof_test_cpu *c = container_of(iw, struct rprof_test_cpu, irq_work);

	c->t->fn(c->t->ctx, c->cpu, RPROF_TEST_SRC_IRQ_WORK);
}

static int rprof_test_thread_fn(void *data)
{
	struct rprof_test_cpu *c = data;

	c->t->fn(c->t->ctx, c->cpu, RPROF_TEST_SRC_TASK);
	complete(&c->done);
	return 0;
}

static void rprof_test_start_timer(void *data)
{
	struct rprof_test_cpu *c = data;

	hrtimer_start(&c->timer, ns_to_ktime(c->t->period_ns),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

struct rprof_test *rprof_test_start(void (*fn)(void *, unsigned int, unsigned int),
				    void *ctx, u64 period_ns)
{
	struct rprof_test *t;
	unsigned int cpu;

	t = kzalloc(struct_size(t, cpus, nr_cpu_ids), GFP_KERNEL);
	if (!t)
		return NULL;
	t->fn = fn;
	t->ctx = ctx;
	t->period_ns = period_ns;
	atomic64_set(&rprof_test_nmi_chains, 0);
	atomic64_set(&rprof_test_nmi_frames, 0);
	atomic_set(&rprof_test_nmi_kept, 0);
	/* One test at a time owns the NMI handler (KUnit runs cases one by one). */
	if (!register_nmi_handler(NMI_LOCAL, rprof_test_nmi, 0, "rprof_test"))
		WRITE_ONCE(rprof_test_nmi_owner, t);
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct rprof_test_cpu *c = &t->cpus[cpu];

		c->t = t;
		c->cpu = cpu;
		init_completion(&c->done);
		init_irq_work(&c->irq_work, rprof_test_irq_work_fn);
		hrtimer_init(&c->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		c->timer.function = rprof_test_timer_fn;
		smp_call_function_single(cpu, rprof_test_start_timer, c, 1);
		c->thread = kthread_create_on_cpu(rprof_test_thread_fn, c, cpu, "rprof_test/%u");
		if (IS_ERR(c->thread))
			c->thread = NULL;
		else
			wake_up_process(c->thread);
	}
	cpus_read_unlock();
	return t;
}

/* Waits for the threads, stops the timers, flushes the irq_works. */
void rprof_test_stop(struct rprof_test *t)
{
	unsigned int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		if (t->cpus[cpu].thread)
			wait_for_completion(&t->cpus[cpu].done);
	WRITE_ONCE(t->stopping, true);
	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		if (!t->cpus[cpu].t)
			continue;
		hrtimer_cancel(&t->cpus[cpu].timer);
		irq_work_sync(&t->cpus[cpu].irq_work);
	}
	if (READ_ONCE(rprof_test_nmi_owner) == t) {
		/* Waits for running handlers (synchronize_rcu). */
		unregister_nmi_handler(NMI_LOCAL, "rprof_test");
		WRITE_ONCE(rprof_test_nmi_owner, NULL);
	}
	kfree(t);
}

/* Runs fn(ctx) in a kthread (any CPU) and returns its completion handle. */
struct rprof_test_thread {
	struct completion done;
	void (*fn)(void *ctx);
	void *ctx;
};

static int rprof_test_bg_fn(void *data)
{
	struct rprof_test_thread *th = data;

	th->fn(th->ctx);
	complete(&th->done);
	return 0;
}

struct rprof_test_thread *rprof_test_spawn(void (*fn)(void *ctx), void *ctx)
{
	struct rprof_test_thread *th = kzalloc(sizeof(*th), GFP_KERNEL);
	struct task_struct *task;

	if (!th)
		return NULL;
	init_completion(&th->done);
	th->fn = fn;
	th->ctx = ctx;
	task = kthread_run(rprof_test_bg_fn, th, "rprof_test_bg");
	if (IS_ERR(task)) {
		kfree(th);
		return NULL;
	}
	return th;
}

void rprof_test_join(struct rprof_test_thread *th)
{
	wait_for_completion(&th->done);
	kfree(th);
}

void rprof_test_cpu_relax(void)
{
	cond_resched();
	cpu_relax();
}

/* A referenced path for a name, for the cookie tests. */
int rprof_test_kern_path(const char *name, struct path *path)
{
	return kern_path(name, LOOKUP_FOLLOW, path);
}

/* References on path's dentry, to check that the cookie table drops its. */
unsigned int rprof_test_dentry_count(const struct path *path)
{
	return d_count(path->dentry);
}

/*
 * A user address space for tests, which run in kthreads (no mm of their
 * own): init's, with an mm_users reference (rprof_mm_put() drops it).
 */
int rprof_test_current_tgid(void)
{
	return task_tgid_nr(current);
}

int rprof_test_mm_users(struct mm_struct *mm)
{
	return atomic_read(&mm->mm_users);
}

struct mm_struct *rprof_test_user_mm(void)
{
	struct pid *pid = find_get_pid(1);
	struct task_struct *init;
	struct mm_struct *mm;

	init = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!init)
		return NULL;
	mm = get_task_mm(init);
	put_task_struct(init);
	return mm;
}

/*
 * A user mapping of @len bytes for the calling test: KUnit gives the test's
 * kthread an address space of its own (kthread_use_mm) and unmaps it when
 * the test ends.  0 on failure.
 */
u64 rprof_test_user_map(struct kunit *test, u64 len, u64 hint)
{
	unsigned long addr = kunit_vm_mmap(test, NULL, hint, len,
					   PROT_READ | PROT_WRITE,
					   MAP_ANONYMOUS | MAP_PRIVATE, 0);

	return IS_ERR_VALUE(addr) ? 0 : addr;
}

/* copy_to_user() for tests: faults the pages in, as a user store would. */
bool rprof_test_user_write(u64 addr, const void *src, u64 len)
{
	return !copy_to_user((void __user *)addr, src, len);
}

/*
 * Registers of a user task interrupted at @ip with @sp and @bp, as the
 * overflow handler would get them from a sample taken in user mode: in
 * 64-bit code (RPROF_TEST_CS_64), 32-bit code (RPROF_TEST_CS_32) or code
 * of a segment of the task's LDT (RPROF_TEST_CS_LDT).
 */
void rprof_test_user_regs(struct pt_regs *regs, u64 ip, u64 sp, u64 bp, u32 cs)
{
	memset(regs, 0, sizeof(*regs));
	regs->ip = ip;
	regs->sp = sp;
	regs->bp = bp;
	switch (cs) {
	case RPROF_TEST_CS_32:
		regs->cs = __USER32_CS;
		break;
	case RPROF_TEST_CS_LDT:
		regs->cs = SEGMENT_LDT | 3; /* LDT entry 0, ring 3 */
		break;
	default:
		regs->cs = __USER_CS;
	}
	regs->ss = __USER_DS;
	regs->flags = X86_EFLAGS_FIXED | X86_EFLAGS_IF;
}

u64 rprof_test_pt_regs_size(void)
{
	return sizeof(struct pt_regs);
}

/* Puts current's thread group in @f's orphan table, with its start time
 * moved by @skew (a different process of the same number if not 0). */
void rprof_test_follow_add_current(struct rprof_follow *f, u64 skew)
{
	u64 start;
	pid_t tgid = rprof_group_of(current, &start);

	rprof_follow_insert(f, tgid, start + skew);
}

/* Whether 32-bit tasks can run (and their stacks are walked). */
bool rprof_test_ia32_emulation(void)
{
	return IS_ENABLED(CONFIG_IA32_EMULATION);
}
#endif

#ifdef RPROF_INJECT_WARN
/* A trial run's deliberate kernel warning: `make check` must fail on it. */
void rprof_inject_warn(void)
{
	WARN(1, "rprof: injected warning (RPROF_INJECT=warn)");
}
#endif

/* ---- benchmark ----------------------------------------------------------- */

#ifdef RPROF_BENCH
/*
 * The reference side of `make bench`: records written through the ftrace
 * ring buffer (ring_buffer_lock_reserve + copy + ring_buffer_unlock_commit)
 * in batches, the buffer reset between batches (untimed).  Returns the
 * nanoseconds spent writing, 0 if the buffer could not be allocated.
 */
u64 rprof_bench_ftrace(u64 records, u64 batch, u32 size, u64 *dropped)
{
	struct trace_buffer *rb;
	u64 payload[16] = { 0 };
	u64 ns = 0, n, i;

	if (size > sizeof(payload))
		return 0;
	/* Non-overwriting, so a full buffer drops like rprof's ring. */
	rb = ring_buffer_alloc(2 * batch * (size + 16), 0);
	if (!rb)
		return 0;
	for (n = 0; n < records; n += batch) {
		u64 t0 = local_clock();

		for (i = 0; i < batch; i++) {
			struct ring_buffer_event *ev = ring_buffer_lock_reserve(rb, size);

			if (!ev) {
				(*dropped)++;
				continue;
			}
			payload[0] = i;
			payload[1] = n + i;
			memcpy(ring_buffer_event_data(ev), payload, size);
			ring_buffer_unlock_commit(rb);
		}
		ns += local_clock() - t0;
		ring_buffer_reset(rb);
	}
	ring_buffer_free(rb);
	return ns;
}

/* The user ip current entered the kernel from (insmod's system call, in a
 * file-backed mapping), its thread group and thread ids. */
u64 rprof_bench_user_ip(u32 *pid, u32 *tid)
{
	*pid = task_tgid_nr(current);
	*tid = task_pid_nr(current);
	return instruction_pointer(task_pt_regs(current));
}
#endif

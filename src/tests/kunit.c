// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the KUnit suites' C glue (src/tests/mod.rs): failure reports,
 * writers in every context (task, hrtimer, irq_work, NMI), user mappings
 * and registers for the chain tests.  KUnit builds only (Kbuild).
 */
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/kthread.h>
#include <linux/mman.h>
#include <linux/namei.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/apic.h>
#include <asm/nmi.h>
#include <asm/segment.h>
#include <kunit/test.h>
#include "rprof_test_helpers.h"
#include "../chains/walk.h"

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

int rprof_test_mm_count(struct mm_struct *mm)
{
	return atomic_read(&mm->mm_count);
}

/* munmap() of a mapping of the calling test's (rprof_test_user_map()). */
int rprof_test_user_unmap(u64 addr, u64 len)
{
	return vm_munmap(addr, len);
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

/*
 * A private read-only mapping of @len bytes of the file at @path for the
 * calling test (unmapped with the test's address space), or 0.
 */
u64 rprof_test_user_map_file(struct kunit *test, const char *path, u64 len)
{
	struct file *f = filp_open(path, O_RDONLY, 0);
	unsigned long addr;

	if (IS_ERR(f))
		return 0;
	addr = kunit_vm_mmap(test, f, 0, len, PROT_READ, MAP_PRIVATE, 0);
	fput(f);
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

/* Takes @cpu offline or brings it back (0 or -errno). */
int rprof_test_cpu_set(unsigned int cpu, bool online)
{
	return online ? add_cpu(cpu) : remove_cpu(cpu);
}

/* Whether 32-bit tasks can run (and their stacks are walked). */
bool rprof_test_ia32_emulation(void)
{
	return IS_ENABLED(CONFIG_IA32_EMULATION);
}

/* The shipping frame-pointer loop (walk.h) with the caller's reader. */
u32 rprof_walk_fp(u64 fp, u64 *ips, u32 max, u32 *n,
		  rprof_read_frame_fn read, void *ctx, u64 lo, u64 hi, u32 word)
{
	if (word == 4)
		return rprof_walk_fp_with(fp, ips, max, n, read, ctx, lo, hi, 4);
	return rprof_walk_fp_with(fp, ips, max, n, read, ctx, lo, hi, 8);
}

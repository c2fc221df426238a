// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C half of the perf overflow handler, and the address-space
 * primitives it calls.  NMI context (PMU) or hard IRQ (hrtimer): nothing
 * here sleeps, locks or allocates.  The Rust half is src/sampling/sampler.rs.
 */
#include <linux/mm_types.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <asm/ptrace.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"
#include "overflow.h"

#ifndef CONFIG_X86_64
#error "rprof is x86-64 only for now (its overflow handler and tests assume x86-64 registers)"
#endif

/*
 * The overflow handler.  Runs in NMI context for PMU counters and in hard
 * IRQ context (hrtimer) for software clocks: it reads the registers and
 * current, then hands over to Rust, and calls nothing that sleeps, locks or
 * allocates.  Bench builds time it (src/bench/bench.c).
 */
void rprof_overflow(struct perf_event *event, struct perf_sample_data *data,
		    struct pt_regs *regs)
{
	struct rprof_raw_sample s;

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
}

/*
 * NMI context: mmgrab() is an atomic increment of mm_count, which keeps
 * the mm_struct but not the address space: the sampled process exits and
 * execs as if it were not sampled (perf holds no reference on it either).
 * Samples resolve through the mappings the handler captured (maps.c), or
 * through the address space while it lives (rprof_mm_get_live()).  The
 * sequence is the mm's write-lock seqcount (per-VMA locking): resolution
 * uses it to refuse VMAs created or changed after the sample.
 */
struct mm_struct *rprof_current_mm_grab(u32 *seq)
{
	struct mm_struct *mm = current->mm;

	if (!mm)
		return NULL;
	mmgrab(mm);
	*seq = READ_ONCE(mm->mm_lock_seq.sequence);
	return mm;
}

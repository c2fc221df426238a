// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C glue of `make bench` (bench builds only, Kbuild): the
 * timed overflow handler, ftrace's ring buffer as the reference, and
 * insmod's own user ip.
 */
#include <linux/moduleparam.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/task_stack.h>
#include <linux/string.h>
#include <asm/ptrace.h>
#include "rprof_test_helpers.h"
#include "../sampling/overflow.h"

/*
 * pin_mm=1: every record holds its address space (mm_users) until the
 * drain, as rprof's handler did before it named mappings (issue 29, item
 * 3), so that `make bench` measures what that cost exits and execs beside
 * what the handler does now, in one boot.
 */
bool rprof_bench_pin_mm;
module_param_named(pin_mm, rprof_bench_pin_mm, bool, 0644);
MODULE_PARM_DESC(pin_mm, "Bench builds: every record holds its address space until the drain (as before issue 29)");

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

/*
 * The whole overflow handler (C and Rust) timed as stage
 * RPROF_BENCH_STAGE_HANDLER: perf calls this in bench builds (overflow.h).
 */
static void rprof_bench_overflow(struct perf_event *event,
				 struct perf_sample_data *data, struct pt_regs *regs)
{
	u64 t0 = local_clock();

	rprof_overflow(event, data, regs);
	rprof_bench_stage(RPROF_BENCH_STAGE_HANDLER, local_clock() - t0);
}

const perf_overflow_handler_t rprof_overflow_handler = rprof_bench_overflow;

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: perf counters, opened with rprof's overflow handler
 * (src/sampling/counter.rs).  Process context.
 */
#include <linux/err.h>
#include <linux/perf_event.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"
#include "overflow.h"

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
						rprof_overflow_handler, ctx);
}

void rprof_counter_enable(struct perf_event *event)
{
	perf_event_enable(event);
}

void rprof_counter_release(struct perf_event *event)
{
	perf_event_release_kernel(event);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof_floor: the floor of `make bench`.
 *
 * Opens the counters a system-wide sampler opens, one software cpu-clock
 * per online CPU at freq Hz, with the attributes rprof uses (pinned,
 * exclude_hv, frequency mode), and an overflow handler that only counts:
 * the hrtimer interrupt, perf's overflow path (throttling, frequency
 * bookkeeping) and an indirect call, which every perf_event-based
 * profiler pays before it records anything.  The counts are printed at
 * unload ("rprof_floor: N samples ...").
 *
 * Benchmark-only: CPUs that come online after the load get no counter.
 */
#include <linux/cpu.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/slab.h>

static unsigned int freq = 1000;
module_param(freq, uint, 0444);
MODULE_PARM_DESC(freq, "Samples per second and CPU (1000)");

static DEFINE_PER_CPU(u64, floor_samples);
static struct perf_event **floor_events;

static void floor_overflow(struct perf_event *event, struct perf_sample_data *data,
			   struct pt_regs *regs)
{
	this_cpu_inc(floor_samples);
}

static void floor_release(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		if (floor_events[cpu])
			perf_event_release_kernel(floor_events[cpu]);
	}
	kfree(floor_events);
}

static int __init floor_init(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.exclude_hv = 1,
		.pinned = 1,
		.disabled = 1,
	};
	unsigned int cpu;
	int ret = 0;

	if (!freq || freq > 100000)
		return -EINVAL;
	attr.sample_freq = freq;
	floor_events = kcalloc(nr_cpu_ids, sizeof(*floor_events), GFP_KERNEL);
	if (!floor_events)
		return -ENOMEM;
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct perf_event *ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
									 floor_overflow, NULL);

		if (IS_ERR(ev)) {
			ret = PTR_ERR(ev);
			pr_err("rprof_floor: cpu-clock on CPU %u: error %d\n", cpu, ret);
			break;
		}
		floor_events[cpu] = ev;
	}
	cpus_read_unlock();
	if (ret) {
		floor_release();
		return ret;
	}
	/* Enabled together once all exist, as rprof does. */
	for_each_possible_cpu(cpu) {
		if (floor_events[cpu])
			perf_event_enable(floor_events[cpu]);
	}
	return 0;
}

static void __exit floor_exit(void)
{
	unsigned int cpu;
	u64 total = 0;

	floor_release();
	for_each_possible_cpu(cpu)
		total += per_cpu(floor_samples, cpu);
	pr_info("rprof_floor: %llu samples at %u Hz\n", total, freq);
}

module_init(floor_init);
module_exit(floor_exit);
MODULE_DESCRIPTION("rprof benchmark floor: cpu-clock counters that only count");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: small kernel primitives the Rust side needs and 6.12 does not
 * bind (static inlines and macros): CPUs, clocks, error pointers,
 * cond_resched().
 */
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include "rprof_helpers.h"

long rprof_ptr_err(const void *ptr)
{
	return IS_ERR(ptr) ? PTR_ERR(ptr) : 0;
}

void rprof_cond_resched(void)
{
	cond_resched();
}

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

bool rprof_cpu_possible(unsigned int cpu)
{
	return cpu_possible(cpu);
}

u64 rprof_clock(void)
{
	return ktime_get_mono_fast_ns();
}

bool rprof_printk_ratelimit(void)
{
	return printk_ratelimit();
}

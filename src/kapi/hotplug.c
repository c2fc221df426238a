// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the CPU hotplug state and lock; the Rust side is
 * src/kapi/hotplug.rs.  Process context.
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include "rprof_helpers.h"

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

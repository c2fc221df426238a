// SPDX-License-Identifier: GPL-2.0
/*
 * rprof_busy: a module whose init keeps a CPU busy in the module's own
 * text for about spin_ms (default 300) milliseconds, so that rprof's
 * module attribution test finds samples in it.  rprof_busy_spin is in
 * .text (not __init), so its samples belong to the module's core text;
 * the module exit does nothing.
 */
#include <linux/init.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/processor.h>

static unsigned int spin_ms = 300;
module_param(spin_ms, uint, 0444);
MODULE_PARM_DESC(spin_ms, "how long module_init spins, in ms");

static noinline void rprof_busy_spin(unsigned int ms)
{
	ktime_t end = ktime_add_ms(ktime_get(), ms);
	unsigned int i;

	while (ktime_before(ktime_get(), end))
		for (i = 0; i < 1000; i++)
			cpu_relax();
}

static int __init rprof_busy_init(void)
{
	rprof_busy_spin(spin_ms);
	return 0;
}

static void __exit rprof_busy_exit(void)
{
}

module_init(rprof_busy_init);
module_exit(rprof_busy_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rprof test workload: spins in module_init");

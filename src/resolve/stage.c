// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the clock of the stage timers (src/resolve/stage.rs): local_clock()
 * is a static inline on some configurations.  Bench builds only (Kbuild);
 * any context, NMI included.
 */
#include <linux/sched/clock.h>
#include "rprof_test_helpers.h"

u64 rprof_local_clock(void)
{
	return local_clock();
}

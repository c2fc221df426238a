// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the module parameters (module_param() is a macro emitting section
 * data, and 6.12's module! macro takes no parameters); src/device/params.rs
 * checks them at load.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include "rprof_helpers.h"

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

/* perf_event_mlock_kb's counterpart (src/memlock.c); may change at any time. */
static unsigned int mlock_kb = 2048;
module_param(mlock_kb, uint, 0644);
MODULE_PARM_DESC(mlock_kb,
		 "Locked memory per online CPU a user's sessions may take beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK, in KiB (2048)");

unsigned int rprof_param_mlock_kb(void)
{
	return READ_ONCE(mlock_kb);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: what /dev/rprof's file operations (src/device/fops.rs) ask of the
 * kernel: the capability and perf_event_paranoid checks of open().  (The
 * misc device itself is src/kapi/miscdev.c.)  Process context.
 *
 * The ABI checks are here, in a file every build compiles: the uapi
 * structures' sizes and the ioctl numbers against the header's macros.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"

static_assert(sizeof(struct rprof_config) == RPROF_CONFIG_SIZE_VER1);
static_assert(sizeof(struct rprof_stats) == RPROF_STATS_SIZE_VER2);
static_assert(sizeof(struct rprof_mmap_page) <= PAGE_SIZE);
static_assert(sizeof(struct rprof_reset) == 32);
static_assert(sizeof(struct rprof_unwind_row) == 12);
static_assert(sizeof(struct rprof_unwind_table_header) == 40);
static_assert(sizeof(struct rprof_unwind_add) == 24);

/*
 * The ioctl numbers bindgen sees (spelled out in the header's enum, turned
 * into numbers by src/uapi.rs) must be the ones the header's macros define.
 * BUILD_BUG_ON rather than static_assert: clang does not take _IOR() as an
 * integer constant expression (its type check names an extern).  Called
 * by no one: a function with external linkage is compiled whatever calls
 * it, and the checks fire at compile time.
 */
void rprof_check_ioctl_numbers(void)
{
	BUILD_BUG_ON(RPROF_IOC_GET_VERSION !=
		     _IOC(_IOC_READ, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_VERSION, sizeof(__u32)));
	BUILD_BUG_ON(RPROF_IOC_SET_CONFIG !=
		     _IOC(_IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_SET_CONFIG,
			  sizeof(struct rprof_config)));
	BUILD_BUG_ON(RPROF_IOC_GET_STATS !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_STATS,
			  sizeof(struct rprof_stats)));
	BUILD_BUG_ON(RPROF_IOC_LOOKUP_COOKIE !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_LOOKUP_COOKIE,
			  sizeof(struct rprof_cookie_lookup)));
	BUILD_BUG_ON(RPROF_IOC_START != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_START));
	BUILD_BUG_ON(RPROF_IOC_STOP != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_STOP));
	BUILD_BUG_ON(RPROF_IOC_FLUSH != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_FLUSH));
	BUILD_BUG_ON(RPROF_IOC_RESET_COOKIES != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_RESET_COOKIES));
	BUILD_BUG_ON(RPROF_IOC_ADD_UNWIND != _IOW(RPROF_IOC_MAGIC, RPROF_IOC_NR_ADD_UNWIND, struct rprof_unwind_add));
}

bool rprof_perfmon_capable(void)
{
	return perfmon_capable();
}

/*
 * What perf_event_open() asks before it lets a caller see kernel data:
 * perf_event_paranoid (level 2 and above need CAP_PERFMON, which open()
 * already required) and the LSM's perf_event_open hook.  perf_allow_cpu()
 * would be the exact match for CPU-wide counters, but it is a static
 * inline over symbols 6.12 does not export; perf_allow_kernel() is
 * exported, and the stricter of the two on the paranoid level.
 */
int rprof_perf_allowed(void)
{
	/* Not stricter on the LSM side: the hook is asked about
	 * PERF_SECURITY_KERNEL, not PERF_SECURITY_CPU (docs/design.md). */
	return perf_allow_kernel();
}

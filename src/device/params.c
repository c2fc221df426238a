// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the module parameters (module_param() is a macro emitting section
 * data, and 6.12's module! macro takes no parameters); src/device/params.rs
 * checks them at load.
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include "rprof_helpers.h"

/*
 * An unsigned parameter @name with its default, permissions and
 * description, and its getter rprof_param_@name() for the Rust side (a
 * parameter with write permission may change at any time: read once).
 */
#define RPROF_PARAM(name, def, perm, desc)                 \
	static unsigned int name = def;                    \
	module_param(name, uint, perm);                    \
	MODULE_PARM_DESC(name, desc);                      \
	unsigned int rprof_param_##name(void)              \
	{                                                  \
		return READ_ONCE(name);                    \
	}

RPROF_PARAM(ring_records, 4096, 0444,
	    "Default slots of each per-CPU ring, a power of 2 in [64, 1048576] (4096)")
RPROF_PARAM(buffer_pages, 256, 0444,
	    "Data pages of the event buffer, a power of 2 in [1, 65536] (256)")
RPROF_PARAM(max_cookies, 4096, 0444,
	    "Files and module regions named per session, in [16, 1048576] (4096)")
/* perf_event_mlock_kb's counterpart (src/buffer/charge.rs). */
RPROF_PARAM(mlock_kb, 2048, 0644,
	    "Locked memory per online CPU a user's sessions may take beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK, in KiB (2048)")
/* The unwind tables of one session (RPROF_IOC_ADD_UNWIND, issue 31). */
RPROF_PARAM(unwind_kb, 65536, 0644,
	    "Unwind-table memory one session may hold, in KiB (65536); also charged as locked memory")

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: trial builds' deliberate failures (RPROF_INJECT, see README).
 */
#include <linux/bug.h>
#include "rprof_helpers.h"

#ifdef RPROF_INJECT_WARN
/* A trial run's deliberate kernel warning: `make check` must fail on it. */
void rprof_inject_warn(void)
{
	WARN(1, "rprof: injected warning (RPROF_INJECT=warn)");
}
#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: trial builds' deliberate failures (RPROF_INJECT=warn only, see
 * README and Kbuild).
 */
#include <linux/bug.h>
#include "rprof_test_helpers.h"

/* A trial run's deliberate kernel warning: `make check` must fail on it. */
void rprof_inject_warn(void)
{
	WARN(1, "rprof: injected warning (RPROF_INJECT=warn)");
}

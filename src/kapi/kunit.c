// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C side of the KUnit wrapper (src/kapi/kunit.rs): KUNIT_FAIL
 * is a macro.  KUnit builds only (Kbuild); process context.
 */
#include <kunit/test.h>
#include "rprof_test_helpers.h"

void rprof_kunit_fail(struct kunit *test, const char *file, unsigned int line,
		      const void *fmt_args)
{
	KUNIT_FAIL(test, "at %s:%u: %pA", file, line, fmt_args);
}


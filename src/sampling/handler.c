// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the overflow handler of release and KUnit builds is
 * rprof_overflow itself (see overflow.h; bench builds have their own).
 */
#include "overflow.h"

const perf_overflow_handler_t rprof_overflow_handler = rprof_overflow;

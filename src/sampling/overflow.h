/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof: the overflow handler (overflow.c) and the one perf is given.
 */
#ifndef RPROF_OVERFLOW_H
#define RPROF_OVERFLOW_H

#include <linux/perf_event.h>

/* NMI or hard IRQ context: reads the sample, calls rprof_on_sample(). */
void rprof_overflow(struct perf_event *event, struct perf_sample_data *data,
		    struct pt_regs *regs);

/*
 * What rprof_counter_create() hands to perf: rprof_overflow itself
 * (handler.c, release and KUnit builds), or in bench builds a wrapper that
 * times it (src/bench/bench.c).  Kbuild compiles exactly one of the two.
 */
extern const perf_overflow_handler_t rprof_overflow_handler;

#endif /* RPROF_OVERFLOW_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * short: a short-lived process for rprof's resolution tests.
 *
 *   short        CALLS_DEFAULT calls of short_hot(), then exits: a fixed
 *                amount of work, about 20 ms in the test guest
 *   short MS     calls short_hot() for MS milliseconds of the clock
 *   short -c N   exactly N calls
 *   short -m MS  as `short MS`, and prints how many calls that was
 *
 * The default is counted, not timed: the share of a run spent in the
 * dynamic loader (a fixed amount of work too) must not depend on how
 * fast the host runs the guest.  The clock is read between calls, never
 * inside the hot function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Calls in about 20 ms in the test guest (TCG, KASAN kernel): measured
 * with `short -m 20` on a quiet host: 400 to 560. */
#define CALLS_DEFAULT 500

volatile unsigned long short_sink;

__attribute__((noinline)) unsigned long short_hot(unsigned long n)
{
	volatile unsigned long acc = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		acc = acc * 31 + i;
	return acc;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long sink = 0;
	long long calls = 0;

	if (argc > 2 && !strcmp(argv[1], "-c")) {
		long long n = atoll(argv[2]);

		for (; calls < n; calls++)
			sink += short_hot(10000);
	} else if (argc > 1) {
		int print = argc > 2 && !strcmp(argv[1], "-m");
		long long ms = atoll(argv[print ? 2 : 1]);
		long long end = now_ns() + ms * 1000000LL;

		do {
			sink += short_hot(10000);
			calls++;
		} while (now_ns() < end);
		if (print)
			printf("%lld\n", calls);
	} else {
		for (; calls < CALLS_DEFAULT; calls++)
			sink += short_hot(10000);
	}
	short_sink = sink;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * short: a short-lived process for rprof's resolution test.  Busy for
 * about 20 ms (or argv[1] ms) in short_hot, then exits.  The clock is read
 * between calls, never inside the hot function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
	long long ms = argc > 1 ? atoll(argv[1]) : 20;
	long long end = now_ns() + ms * 1000000LL;
	unsigned long sink = 0;

	do
		sink += short_hot(10000);
	while (now_ns() < end);
	short_sink = sink;
	return 0;
}

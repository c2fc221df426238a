// SPDX-License-Identifier: GPL-2.0
/*
 * Exit latency of sampled processes (issue 29, item 3): with IDLE idle
 * processes alive (a machine with many tasks), ROUNDS times a child
 * spins SPIN_MS (so that a profiler samples it) and exits; the parent
 * reaps it.  Prints the time from the child's exit() to the parent's
 * waitpid() returning, median and 90th percentile, in microseconds:
 *
 *   exitlat IDLE ROUNDS SPIN_MS
 *   exitlat idle=N rounds=R spin_ms=S median_us=M p90_us=P
 *
 * A profiler that holds a reference on the child's address space makes
 * its exit slower: the address space outlives the exit, and the exiting
 * owner looks through every process for a new mm->owner (CONFIG_MEMCG).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int idle = argc > 1 ? atoi(argv[1]) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 50;
	int spin_ms = argc > 3 ? atoi(argv[3]) : 20;
	volatile uint64_t *shared;
	uint64_t *lat;
	pid_t *idlers;
	int i;

	if (idle < 0 || rounds < 1 || spin_ms < 0)
		return 2;
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lat = calloc(rounds, sizeof(*lat));
	idlers = calloc(idle ? idle : 1, sizeof(*idlers));
	if (shared == MAP_FAILED || !lat || !idlers)
		return 1;
	for (i = 0; i < idle; i++) {
		idlers[i] = fork();
		if (idlers[i] == 0) {
			pause();
			_exit(0);
		}
		if (idlers[i] < 0) {
			idle = i;
			break;
		}
	}
	for (i = 0; i < rounds; i++) {
		pid_t c = fork();

		if (c == 0) {
			uint64_t end = now_ns() + (uint64_t)spin_ms * 1000000u;
			volatile uint64_t x = 1;

			while (now_ns() < end)
				x = x * 6364136223846793005u + 1;
			shared[0] = now_ns();
			_exit(0);
		}
		if (c < 0)
			return 1;
		waitpid(c, NULL, 0);
		lat[i] = now_ns() - shared[0];
	}
	for (i = 0; i < idle; i++)
		kill(idlers[i], SIGKILL);
	for (i = 0; i < idle; i++)
		waitpid(idlers[i], NULL, 0);
	qsort(lat, rounds, sizeof(*lat), cmp);
	printf("exitlat idle=%d rounds=%d spin_ms=%d median_us=%.1f p90_us=%.1f\n", idle, rounds, spin_ms,
	       lat[rounds / 2] / 1000.0, lat[rounds * 9 / 10] / 1000.0);
	return 0;
}

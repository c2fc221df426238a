// SPDX-License-Identifier: GPL-2.0
/*
 * Exits of sampled processes (issue 29, item 3): with IDLE idle
 * processes alive (a machine with many tasks), ROUNDS times a child
 * touches MB MiB, spins SPIN_MS (so that a profiler samples it) and
 * exits; the parent reaps it.  Prints, median and 90th percentile in
 * microseconds, the time from the child's exit() to the parent's
 * waitpid() returning, and to the child's memory being free again (the
 * machine's free memory back within MB/8 of what it was before the fork;
 * given up after 2 s, counted in `late`).  A round starts once the
 * previous child's memory is back (or 2 s passed): while a holder keeps
 * it, the round's own "before" would be low and its child's memory would
 * seem free at once:
 *
 *   exitlat IDLE ROUNDS SPIN_MS [MB [exec]]
 *   exitlat idle=N rounds=R spin_ms=S mb=B median_us=M p90_us=P
 *           freed_median_us=F freed_p90_us=G late=L
 *
 * With `exec`, the child execs (this program again, which only reads the
 * clock) instead of exiting, and the line is `execlat ...`: the time from
 * the child's execve() call to the new image's first clock read, which
 * is when the old address space has been let go of (exec_mmap()), and
 * the memory figures are those of the old address space.
 *
 * A profiler that holds a reference on the child's address space keeps
 * it past the exit (its memory, files and tmpfs space with it) until the
 * profiler lets go, and on CONFIG_MEMCG kernels the exiting owner looks
 * through every process for a new mm->owner.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t free_bytes(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return 0;
	return (uint64_t)si.freeram * si.mem_unit;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int exec_mode = argc > 5 && !strcmp(argv[5], "exec");
	int idle = argc > 1 ? atoi(argv[1]) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 50;
	int spin_ms = argc > 3 ? atoi(argv[3]) : 20;
	int mb = argc > 4 ? atoi(argv[4]) : 0;
	volatile uint64_t *shared;
	uint64_t *lat, *freed, before;
	int late = 0;
	pid_t *idlers;
	int i;

	if (argc == 2 && !strcmp(argv[1], "--execd")) {
		/* The exec'd image: the time it starts, into the file the
		 * parent shares with it as fd 3 (the MAP_SHARED page does not
		 * survive the exec). */
		uint64_t t = now_ns();

		_exit(pwrite(3, &t, sizeof(t), 8) == sizeof(t) ? 0 : 1);
	}
	if (idle < 0 || rounds < 1 || spin_ms < 0 || mb < 0)
		return 2;
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lat = calloc(rounds, sizeof(*lat));
	freed = calloc(rounds, sizeof(*freed));
	idlers = calloc(idle ? idle : 1, sizeof(*idlers));
	if (shared == MAP_FAILED || !lat || !freed || !idlers)
		return 1;
	if (exec_mode) {
		int fd = memfd_create("exitlat", 0);

		if (fd < 0 || dup2(fd, 3) != 3)
			return 1;
	}
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
	before = free_bytes();
	for (i = 0; i < rounds; i++) {
		uint64_t slack = ((uint64_t)mb << 20) / 8, t = now_ns();

		/* The previous child's memory back (the wait's own end). */
		while (mb && free_bytes() + slack < before && now_ns() - t < 2000000000u)
			usleep(100);
		before = free_bytes();
		pid_t c = fork();

		if (c == 0) {
			uint64_t end = now_ns() + (uint64_t)spin_ms * 1000000u;
			volatile uint64_t x = 1;

			if (mb) {
				char *m = mmap(NULL, (size_t)mb << 20, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				if (m == MAP_FAILED)
					_exit(1);
				memset(m, 1, (size_t)mb << 20);
			}
			while (now_ns() < end)
				x = x * 6364136223846793005u + 1;
			if (exec_mode) {
				uint64_t t0 = now_ns();

				if (pwrite(3, &t0, sizeof(t0), 0) != sizeof(t0))
					_exit(1);
				execl("/proc/self/exe", "exitlat", "--execd", (char *)NULL);
				_exit(1);
			}
			shared[0] = now_ns();
			_exit(0);
		}
		if (c < 0)
			return 1;
		waitpid(c, NULL, 0);
		t = now_ns();
		if (exec_mode) {
			uint64_t ts[2];

			if (pread(3, ts, sizeof(ts), 0) != sizeof(ts) || ts[1] < ts[0])
				return 1;
			/* From the execve() call on. */
			shared[0] = ts[0];
			lat[i] = ts[1] - ts[0];
		} else {
			lat[i] = t - shared[0];
		}
		while (mb && free_bytes() + slack < before && now_ns() - t < 2000000000u)
			usleep(100);
		if (mb && free_bytes() + slack < before)
			late++;
		freed[i] = now_ns() - shared[0];
	}
	for (i = 0; i < idle; i++)
		kill(idlers[i], SIGKILL);
	for (i = 0; i < idle; i++)
		waitpid(idlers[i], NULL, 0);
	qsort(lat, rounds, sizeof(*lat), cmp);
	qsort(freed, rounds, sizeof(*freed), cmp);
	printf("%s idle=%d rounds=%d spin_ms=%d mb=%d median_us=%.1f p90_us=%.1f freed_median_us=%.1f freed_p90_us=%.1f late=%d\n",
	       exec_mode ? "execlat" : "exitlat", idle, rounds, spin_ms, mb, lat[rounds / 2] / 1000.0, lat[rounds * 9 / 10] / 1000.0,
	       freed[rounds / 2] / 1000.0, freed[rounds * 9 / 10] / 1000.0, late);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * storm: runs a program N times in a row, each with vfork() and execv(),
 * waiting for each before the next: a fork+exec storm that costs the
 * spawner nothing (no page tables to copy, unlike a shell's fork).
 *
 *   storm [-t SECONDS] N PROG [ARG...]
 *
 * With -t it stops early once SECONDS have passed.  Prints how many runs
 * it made; exits 0 if every run exited 0, 1 otherwise, 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One run of argv[0]; its exit status, or -1. */
static int run_once(char **argv)
{
	pid_t pid = vfork();
	int status;

	if (pid < 0) {
		perror("storm: vfork");
		return -1;
	}
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n, i, failed = 0;
	double limit = 0, start = now();
	char *end;

	if (argc > 2 && !strcmp(argv[1], "-t")) {
		limit = strtod(argv[2], &end);
		if (*end || limit <= 0)
			argc = 0;
		argv += 2;
		argc -= 2;
	}
	if (argc < 3 || (n = strtol(argv[1], &end, 10)) < 0 || *end) {
		fprintf(stderr, "usage: storm [-t SECONDS] N PROG [ARG...]\n");
		return 2;
	}
	for (i = 0; i < n && !(limit && now() - start > limit); i++)
		if (run_once(argv + 2))
			failed++;
	printf("%ld\n", i);
	if (failed)
		fprintf(stderr, "storm: %ld of %ld runs of %s failed\n", failed, i, argv[2]);
	return failed ? 1 : 0;
}

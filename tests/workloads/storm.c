// SPDX-License-Identifier: GPL-2.0
/*
 * storm: runs a program N times in a row, each with vfork() and execv(),
 * waiting for each before the next: a fork+exec storm that costs the
 * spawner nothing (no page tables to copy, unlike a shell's fork).
 *
 *   storm N PROG [ARG...]
 *
 * Exits 0 if every run exited 0, 1 otherwise (after all N), 2 on a usage
 * error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
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

int main(int argc, char **argv)
{
	long n, i, failed = 0;
	char *end;

	if (argc < 3 || (n = strtol(argv[1], &end, 10)) < 0 || *end) {
		fprintf(stderr, "usage: storm N PROG [ARG...]\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		if (run_once(argv + 2))
			failed++;
	if (failed)
		fprintf(stderr, "storm: %ld of %ld runs of %s failed\n", failed, n, argv[2]);
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * maxrss CMD [ARG...]: runs CMD, waits for it, and prints on standard
 * error "maxrss_kb=N": the largest resident set of CMD and of every
 * descendant CMD waited for (getrusage(RUSAGE_CHILDREN).ru_maxrss), in
 * KiB.  `make bench` wraps the profilers in it: their workload is a small
 * static program, so the figure is the profiler's own peak.  Exits with
 * CMD's status (128 + N for a signal N).
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	pid_t pid;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: maxrss CMD [ARG...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("maxrss: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror("maxrss: exec");
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("maxrss: waitpid");
		return 1;
	}
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		fprintf(stderr, "maxrss_kb=%ld\n", ru.ru_maxrss);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

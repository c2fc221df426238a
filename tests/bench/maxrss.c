// SPDX-License-Identifier: GPL-2.0
/*
 * maxrss CMD [ARG...]: runs CMD, waits for it, and prints on standard
 * error "maxrss_kb=N": the largest resident set of CMD and of every
 * descendant CMD waited for (getrusage(RUSAGE_CHILDREN).ru_maxrss), in
 * KiB.  `make bench` wraps the profilers in it: their workload is a small
 * static program, so the figure is the profiler's own peak.  Exits with
 * CMD's status (128 + N for a signal N).  SIGTERM and SIGINT are passed
 * on to CMD (the way to stop a daemon under it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void pass_on(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t block, old;
	struct rusage ru;
	pid_t pid;
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: maxrss CMD [ARG...]\n");
		return 2;
	}
	/* Blocked until the child's pid is known: a signal that comes
	 * meanwhile waits, and is then passed on. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pass_on;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pid = fork();
	if (pid < 0) {
		perror("maxrss: fork");
		return 1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[1], argv + 1);
		perror("maxrss: exec");
		_exit(127);
	}
	child = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno == EINTR)
			continue;
		perror("maxrss: waitpid");
		return 1;
	}
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		fprintf(stderr, "maxrss_kb=%ld\n", ru.ru_maxrss);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

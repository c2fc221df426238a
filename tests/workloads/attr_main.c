// SPDX-License-Identifier: GPL-2.0
/*
 * attr_main: a workload for rprof's attribution test.
 *
 *   attr_main [SECONDS [LIBRARY [ITERATIONS]]]
 *
 * dlopen()s LIBRARY (default: libattr_lib.so next to this program, found
 * through /proc/self/exe), looks up lib_hot, then for about SECONDS
 * (default 3) runs rounds of 3 calls of its own main_hot(ITERATIONS) and 1
 * call of lib_hot(ITERATIONS).  Both are the same loop of arithmetic on a
 * volatile accumulator, so about 3/4 of the time is spent in main_hot and
 * 1/4 in lib_hot; the balance comes from the call counts, the clock is
 * read only between rounds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ITERATIONS 100000UL

/* The sampled function of the executable: keep in step with lib_hot. */
__attribute__((noinline)) unsigned long main_hot(unsigned long n)
{
	volatile unsigned long acc = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		acc = acc * 31 + i;
	return acc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* LIBRARY's default: libattr_lib.so in the directory of this program. */
static int default_library(char *out, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n < 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if ((size_t)snprintf(out, size, "%s/libattr_lib.so", exe) >= size)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	unsigned long iterations = argc > 3 ? strtoul(argv[3], NULL, 0) : DEFAULT_ITERATIONS;
	unsigned long (*lib_hot)(unsigned long);
	char library[PATH_MAX];
	unsigned long rounds = 0, sink = 0;
	double end;
	void *handle;

	if (argc > 2) {
		snprintf(library, sizeof(library), "%s", argv[2]);
	} else if (default_library(library, sizeof(library)) != 0) {
		fprintf(stderr, "attr_main: cannot find the directory of /proc/self/exe\n");
		return 1;
	}
	if (seconds <= 0 || iterations == 0) {
		fprintf(stderr, "usage: attr_main [SECONDS [LIBRARY [ITERATIONS]]]\n");
		return 2;
	}
	handle = dlopen(library, RTLD_NOW);
	if (!handle) {
		fprintf(stderr, "attr_main: dlopen %s: %s\n", library, dlerror());
		return 1;
	}
	*(void **)&lib_hot = dlsym(handle, "lib_hot");
	if (!lib_hot) {
		fprintf(stderr, "attr_main: dlsym lib_hot: %s\n", dlerror());
		return 1;
	}

	end = now() + seconds;
	do {
		sink += main_hot(iterations);
		sink += main_hot(iterations);
		sink += main_hot(iterations);
		sink += lib_hot(iterations);
		rounds++;
	} while (now() < end);

	printf("attr_main: %lu rounds of 3 x main_hot(%lu) + 1 x lib_hot(%lu) (%lx)\n",
	       rounds, iterations, iterations, sink & 0xf);
	return 0;
}

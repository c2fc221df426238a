/*
 * nofp MODE SECONDS: known call chains without frame pointers, for
 * 48-unwind.sh (built -O2 -fomit-frame-pointer: %rbp is an ordinary
 * register, only the unwind tables know the frames).  noipa keeps every
 * function whole, under its own name (no inlining, no clones, no sibling
 * calls).
 *
 *   split  main -> a -> b -> hot and main -> x -> hot, hot burning 3 units
 *          of work under a for every unit under x (a 3:1 split);
 *   qsort  main -> sort_round -> qsort (libc) -> ... -> cmp, cmp burning
 *          its time in a loop: a callback whose callers are libc's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOIPA __attribute__((noipa))

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

volatile unsigned long sink;

/* The hot loop; a leaf, which needs no frame (the tables know that). */
NOIPA unsigned long hot(unsigned long n)
{
	uint64_t x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned long)x;
}

NOIPA unsigned long b(unsigned long n)
{
	return hot(n) + 1;
}

NOIPA unsigned long a(unsigned long n)
{
	return b(n) + 1;
}

NOIPA unsigned long x(unsigned long n)
{
	return hot(n) + 2;
}

/* A comparison that takes a while: the callback's samples are most of
 * the qsort mode's. */
NOIPA int cmp(const void *p, const void *q)
{
	uint64_t u = *(const uint64_t *)p, v = *(const uint64_t *)q;
	uint64_t h = u ^ v;

	for (int i = 0; i < 200; i++)
		h = h * 6364136223846793005ULL + 1;
	sink += h & 1;
	return (u > v) - (u < v);
}

#define N 512

NOIPA void sort_round(uint64_t *v, const uint64_t *from)
{
	memcpy(v, from, N * sizeof(*v));
	qsort(v, N, sizeof(*v), cmp);
	sink += v[0];
}

int main(int argc, char **argv)
{
	const unsigned long unit = 200000;
	static uint64_t from[N], v[N];
	unsigned long rounds = 0;
	double end;

	if (argc != 3) {
		fprintf(stderr, "usage: nofp split|qsort SECONDS\n");
		return 2;
	}
	for (int i = 0; i < N; i++)
		from[i] = (uint64_t)i * 0x9e3779b97f4a7c15ULL;
	end = now() + atof(argv[2]);
	while (now() < end) {
		if (!strcmp(argv[1], "split")) {
			sink += a(3 * unit);
			sink += x(unit);
		} else if (!strcmp(argv[1], "qsort")) {
			sort_round(v, from);
		} else {
			fprintf(stderr, "nofp: unknown mode %s\n", argv[1]);
			return 2;
		}
		rounds++;
	}
	printf("%lu\n", rounds);
	return 0;
}

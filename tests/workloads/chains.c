/*
 * chains MODE SECONDS: known call chains for 47-chains.sh, built with
 * frame pointers (-fno-omit-frame-pointer -fno-shrink-wrap: the frame is
 * set up at entry, before the hot loop), no inlining, no sibling calls.
 *
 *   split  main -> a -> b -> hot and main -> x -> hot, hot burning 3 units
 *          of work under a for every unit under x (a 3:1 split);
 *   deep   main -> deep -> deep -> ... 200 levels -> hot: deeper than
 *          rprof's 127-frame limit, so every user chain is cut there;
 *   badfp  spins with its frame pointer register pointing at unmapped
 *          memory, at a kernel address, at itself and misaligned, in
 *          turn, so the user walk of each sample ends on a bad frame
 *          (64-bit builds only).
 *
 * It is built twice: 64-bit (chains) and 32-bit (chains32, -m32 -static),
 * whose samples exercise the module's walk of a compat task's stack.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

volatile unsigned long sink;

__attribute__((noinline)) void keep(unsigned long v)
{
	sink = v;
}

/*
 * The hot loop.  It calls keep() so that it is not a leaf: gcc 12 gives a
 * leaf function no frame even with -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer, and a chain taken in a frameless leaf
 * loses the leaf's caller (as under perf).
 */
__attribute__((noinline)) unsigned long hot(unsigned long n)
{
	uint64_t x = n;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	keep((unsigned long)x);
	return (unsigned long)x;
}

__attribute__((noinline)) unsigned long b(unsigned long n)
{
	return hot(n) + 1;
}

__attribute__((noinline)) unsigned long a(unsigned long n)
{
	return b(n) + 1;
}

__attribute__((noinline)) unsigned long x(unsigned long n)
{
	return hot(n) + 2;
}

__attribute__((noinline)) unsigned long deep(int level, unsigned long n)
{
	if (level == 0)
		return hot(n);
	return deep(level - 1, n) + 1;
}

#ifdef __x86_64__
/* Spins n rounds with %rbp = fp, restoring it after. */
__attribute__((noinline)) void spin_with_fp(unsigned long fp, unsigned long n)
{
	__asm__ volatile("mov %%rbp, %%r12\n\t"
			 "mov %0, %%rbp\n\t"
			 "mov %1, %%rcx\n"
			 "1:\n\t"
			 "dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "mov %%r12, %%rbp\n\t"
			 :
			 : "r"(fp), "r"(n)
			 : "rcx", "r12", "memory", "cc");
}
#endif

int main(int argc, char **argv)
{
	const unsigned long unit = 200000;
	double end;
	unsigned long rounds = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: chains split|deep|badfp SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	while (now() < end) {
		if (!strcmp(argv[1], "split")) {
			sink += a(3 * unit);
			sink += x(unit);
		} else if (!strcmp(argv[1], "deep")) {
			sink += deep(200, unit);
#ifdef __x86_64__
		} else if (!strcmp(argv[1], "badfp")) {
			unsigned long self;

			spin_with_fp(0x1000, unit);		/* unmapped */
			spin_with_fp(0xffffffff81000000UL, unit); /* kernel */
			self = (unsigned long)&self;
			spin_with_fp(self, unit);		/* itself-ish */
			spin_with_fp(self + 4, unit);		/* misaligned */
#endif
		} else {
			fprintf(stderr, "chains: unknown mode %s\n", argv[1]);
			return 2;
		}
		rounds++;
	}
	printf("%lu\n", rounds);
	return 0;
}

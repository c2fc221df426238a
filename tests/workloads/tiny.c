// SPDX-License-Identifier: GPL-2.0
/*
 * tiny: the smallest process worth sampling, for fork+exec storms.  No C
 * library (x86-64 only, like rprof): _start spins a fixed number of
 * rounds in tiny_hot and exits with the exit system call.  Starting it
 * maps two segments and faults in a few pages, so a storm spends its time
 * in fork, exec and exit, and every user sample is in this file.
 */

#define ROUNDS 200000UL

volatile unsigned long tiny_sink;

__attribute__((noinline)) unsigned long tiny_hot(unsigned long n)
{
	volatile unsigned long acc = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		acc = acc * 31 + i;
	return acc;
}

__attribute__((noreturn, used)) static void tiny_main(void)
{
	tiny_sink = tiny_hot(ROUNDS);
	__asm__ volatile("syscall" : : "a"(60), "D"(0) : "rcx", "r11", "memory");
	__builtin_unreachable();
}

/* The entry point: align the stack as a call expects, then tiny_main. */
__asm__(".globl _start\n"
	"_start:\n"
	"\tand $-16, %rsp\n"
	"\tcall tiny_main\n");

// SPDX-License-Identifier: GPL-2.0
/*
 * libattr_lib.so: the shared library half of attr_main.  lib_hot is the
 * same loop as attr_main's main_hot, so equal call counts cost equal time.
 */

__attribute__((noinline)) unsigned long lib_hot(unsigned long n)
{
	volatile unsigned long acc = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		acc = acc * 31 + i;
	return acc;
}

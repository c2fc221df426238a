/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof: the frame-pointer walk's loop (src/chains/walk.c), inlined into
 * the shipping walker with its user-access reads and into KUnit's
 * (src/tests/kunit.c) with reads of synthetic stacks.  NMI context: no
 * sleep, no lock, no allocation.
 */
#ifndef RPROF_CHAINS_WALK_H
#define RPROF_CHAINS_WALK_H

#include <linux/types.h>
#include <uapi/linux/rprof.h>

typedef bool (*rprof_read_frame_fn)(void *ctx, __u64 addr, __u64 frame[2]);

/*
 * The frame-pointer walk, with the reader inlined where it is a constant:
 * walk.c's user walk reads each frame with two unsafe_get_user() loads
 * inside one user-access section with page faults disabled, instead of
 * a copy_from_user_nmi() (and its checks) per frame.  word is the size of
 * the frame's two words: 8, or 4 for a 32-bit (compat) task, whose frame
 * records are two 32-bit words (saved %ebp, return address).
 */
static __always_inline u32 rprof_walk_fp_with(u64 fp, u64 *ips, u32 max, u32 *n,
					      rprof_read_frame_fn read, void *ctx,
					      u64 lo, u64 hi, u32 word)
{
	u64 frame[2], prev = 0;
	u32 i = 0, flags = 0;

	while (fp) {
		/* A frame record lies above the stack pointer, and each
		 * caller's above its callee's: anything else is not a chain. */
		if ((fp & (word - 1)) || fp < lo || hi < 2 * word ||
		    fp > hi - 2 * word || (prev && fp <= prev)) {
			flags = RPROF_STACK_USER_BAD_FP;
			break;
		}
		if (i == max) {
			flags = RPROF_STACK_USER_TRUNCATED;
			break;
		}
		if (!read(ctx, fp, frame)) {
			flags = RPROF_STACK_USER_FAULT;
			break;
		}
		if (!frame[1])
			break;
		ips[i++] = frame[1];
		prev = fp;
		fp = frame[0];
	}
	*n = i;
	return flags;
}

#endif /* RPROF_CHAINS_WALK_H */

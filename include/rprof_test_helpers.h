/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof: the C glue of test and benchmark builds only (src/tests/kunit.c,
 * src/tests/inject.c, src/bench/bench.c), declared apart from the shipping
 * glue (rprof_helpers.h) so that a release build sees none of it.
 */
#ifndef RPROF_TEST_HELPERS_H
#define RPROF_TEST_HELPERS_H

#include "rprof_helpers.h"

struct kunit;
struct path;
struct pt_regs;

/*
 * The frame-pointer walk of rprof_callchain's user side (src/chains/walk.h),
 * on any memory: read(ctx, addr, frame) reads the two words at addr (saved
 * frame pointer, return address) or fails; word is their size (8, or 4 for
 * a 32-bit task).  Frame pointers must lie in [lo, hi - 2 * word], be
 * word-aligned and grow strictly.  KUnit builds.
 */
typedef bool (*rprof_read_frame_fn)(void *ctx, __u64 addr, __u64 frame[2]);
__u32 rprof_walk_fp(__u64 fp, __u64 *ips, __u32 max, __u32 *n,
		    rprof_read_frame_fn read, void *ctx, __u64 lo, __u64 hi,
		    __u32 word);

/* sched_clock-based time for the stage timers (bench builds). */
__u64 rprof_local_clock(void);

/* KUnit: record a failure of the current case with its Rust location. */
void rprof_kunit_fail(struct kunit *test, const char *file, unsigned int line,
		      const void *fmt_args);

/* Stress-test writers (test builds only): a kthread per CPU (task), a
 * pinned hard-IRQ hrtimer, an irq_work it queues and a self-NMI it sends,
 * so that the four contexts nest on every CPU. */
#define RPROF_TEST_SRC_TASK 0
#define RPROF_TEST_SRC_TIMER 1
#define RPROF_TEST_SRC_IRQ_WORK 2
#define RPROF_TEST_SRC_NMI 3
struct rprof_test;
struct rprof_test *rprof_test_start(void (*fn)(void *ctx, unsigned int cpu, unsigned int src),
				    void *ctx, __u64 period_ns);
void rprof_test_stop(struct rprof_test *t);
struct rprof_test_thread;
struct rprof_test_thread *rprof_test_spawn(void (*fn)(void *ctx), void *ctx);
void rprof_test_join(struct rprof_test_thread *th);
int rprof_test_current_tgid(void);
__u32 rprof_test_nmi_chain_counts(__u64 *chains, __u64 *frames, __u64 *ips);
bool rprof_test_kernel_symbol(__u64 ip);
struct mm_struct *rprof_test_user_mm(void);
int rprof_test_mm_users(struct mm_struct *mm);
int rprof_test_mm_count(struct mm_struct *mm);
int rprof_test_user_unmap(__u64 addr, __u64 len);
__u64 rprof_test_user_map_file(struct kunit *test, const char *path, __u64 len);
struct kunit;
/* At hint if that range is free, else anywhere. */
__u64 rprof_test_user_map(struct kunit *test, __u64 len, __u64 hint);
bool rprof_test_user_write(__u64 addr, const void *src, __u64 len);
enum { RPROF_TEST_CS_64, RPROF_TEST_CS_32, RPROF_TEST_CS_LDT };
void rprof_test_user_regs(struct pt_regs *regs, __u64 ip, __u64 sp, __u64 bp,
			  __u32 cs);
bool rprof_test_ia32_emulation(void);
int rprof_test_cpu_set(unsigned int cpu, bool online);
__u64 rprof_test_pt_regs_size(void);
void rprof_test_cpu_relax(void);
int rprof_test_kern_path(const char *name, struct path *path);
unsigned int rprof_test_dentry_count(const struct path *path);

/* RPROF_INJECT=warn trial builds only. */
void rprof_inject_warn(void);

/* Benchmark reference: the ftrace ring buffer (bench builds only). */
__u64 rprof_bench_ftrace(__u64 records, __u64 batch, __u32 size, __u64 *dropped);
/* The pin_mm parameter (bench builds only), read by the handler: a
 * variable, so that reading it costs the timed handler no call. */
extern bool rprof_bench_pin_mm;
/* current's user ip at kernel entry, pid and tid (bench builds only). */
__u64 rprof_bench_user_ip(__u32 *pid, __u32 *tid);
/* Adds ns to a stage's sum (bench builds only; src/resolve/stage.rs, any context). */
#define RPROF_BENCH_STAGE_HANDLER 0
void rprof_bench_stage(__u32 stage, __u64 ns);

#endif /* RPROF_TEST_HELPERS_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof: what the KUnit glue (src/tests/kunit.c) reaches inside the
 * followed set (follow.c).
 */
#ifndef RPROF_FOLLOW_H
#define RPROF_FOLLOW_H

#include <linux/types.h>

struct rprof_follow;
struct task_struct;

/* @t's thread group: its number and its leader's start time. */
pid_t rprof_group_of(struct task_struct *t, u64 *start);
/* Puts thread group (@tgid, @start) in @f's orphan table, or counts it
 * lost when the table is full. */
void rprof_follow_insert(struct rprof_follow *f, pid_t tgid, u64 start);
/* Whether exits update @f (it is the published set). */
bool rprof_follow_published(struct rprof_follow *f);

#endif /* RPROF_FOLLOW_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the wait queue of read() and poll() (wait_event_interruptible()
 * and poll_wait() are a macro and a static inline); the Rust side is
 * src/kapi/waitq.rs.  Process context.
 */
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include "rprof_helpers.h"

struct rprof_waitq {
	wait_queue_head_t head;
};

struct rprof_waitq *rprof_waitq_create(void)
{
	struct rprof_waitq *wq = kzalloc(sizeof(*wq), GFP_KERNEL);

	if (wq)
		init_waitqueue_head(&wq->head);
	return wq;
}

void rprof_waitq_destroy(struct rprof_waitq *wq)
{
	kfree(wq);
}

void rprof_waitq_wake(struct rprof_waitq *wq)
{
	wake_up_interruptible_poll(&wq->head, EPOLLIN | EPOLLRDNORM);
}

int rprof_waitq_wait(struct rprof_waitq *wq, bool (*cond)(void *ctx), void *ctx)
{
	return wait_event_interruptible(wq->head, cond(ctx));
}

void rprof_poll_wait(struct file *file, struct rprof_waitq *wq,
		     struct poll_table_struct *pt)
{
	poll_wait(file, &wq->head, pt);
}

unsigned int rprof_poll_mask(bool readable, bool error)
{
	return (readable ? EPOLLIN | EPOLLRDNORM : 0) | (error ? EPOLLERR : 0);
}

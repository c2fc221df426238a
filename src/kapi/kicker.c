// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: deferred work that can be kicked from NMI context (irq_work and
 * delayed_work: their structures are not in kernel::bindings, and their
 * initialisers are macros); the Rust side is src/kapi/kicker.rs.
 */
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "rprof_helpers.h"

/*
 * The work runs on the unbound system workqueue.  A drain pass moves every
 * CPU's ring (up to 2^20 records each), so it is long, CPU-bound work that
 * the workqueue documentation sends to unbound pools: on the per-CPU
 * system_wq it waits for the CPU that queued it, and with every CPU busy
 * with the profiled program, that wait reached the 0.4 s a 16384-slot ring
 * holds at 40 kHz (make bench, 4 busy vCPUs: 6462 to 57572 samples lost in
 * each of 3 runs, none in 3 runs on system_unbound_wq, and no difference in
 * the cost per sample at 1 and 4 kHz).
 */
#define RPROF_WQ system_unbound_wq

struct rprof_kicker {
	struct irq_work irq_work;
	struct delayed_work work;
	unsigned int (*fn)(void *ctx);
	void *ctx;
};

static void rprof_kicker_irq_work(struct irq_work *iw)
{
	struct rprof_kicker *k = container_of(iw, struct rprof_kicker, irq_work);

	mod_delayed_work(RPROF_WQ, &k->work, 0);
}

static void rprof_kicker_work(struct work_struct *w)
{
	struct rprof_kicker *k =
		container_of(to_delayed_work(w), struct rprof_kicker, work);

	unsigned int again_ms = k->fn(k->ctx);

	/* Periodic work re-arms here rather than in Rust, so that the Rust
	 * side never touches the kicker from inside its own work. */
	if (again_ms)
		queue_delayed_work(RPROF_WQ, &k->work, msecs_to_jiffies(again_ms));
}

struct rprof_kicker *rprof_kicker_create(unsigned int (*fn)(void *ctx))
{
	struct rprof_kicker *k = kzalloc(sizeof(*k), GFP_KERNEL);

	if (!k)
		return NULL;
	init_irq_work(&k->irq_work, rprof_kicker_irq_work);
	INIT_DELAYED_WORK(&k->work, rprof_kicker_work);
	k->fn = fn;
	return k;
}

/* Before the first kick or schedule: the context fn gets. */
void rprof_kicker_bind(struct rprof_kicker *k, void *ctx)
{
	k->ctx = ctx;
}

/* NMI-safe: irq_work_queue() is the kernel's way out of NMI context. */
void rprof_kicker_kick(struct rprof_kicker *k)
{
	irq_work_queue(&k->irq_work);
}

void rprof_kicker_schedule(struct rprof_kicker *k, unsigned int delay_ms)
{
	queue_delayed_work(RPROF_WQ, &k->work, msecs_to_jiffies(delay_ms));
}

void rprof_kicker_run_now(struct rprof_kicker *k)
{
	mod_delayed_work(RPROF_WQ, &k->work, 0);
	flush_delayed_work(&k->work);
}

/* Caller guarantees nothing kicks or schedules k any more. */
void rprof_kicker_destroy(struct rprof_kicker *k)
{
	irq_work_sync(&k->irq_work);
	cancel_delayed_work_sync(&k->work);
	kfree(k);
}

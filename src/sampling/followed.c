// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the followed set's lock and its RCU frees (src/sampling/followed.rs),
 * which Rust for Linux 6.12 does not bind (raw spinlocks, kvfree_call_rcu).
 * The handler reads the set under RCU without the lock; its writers (the
 * exit probe, SET_CONFIG) take it.  Each function says its context.
 */
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include "rprof_helpers.h"

/* Any context, before the set is shared: raw_spin_lock_init() (one lockdep
 * class for every followed set). */
void rprof_follow_lock_init(raw_spinlock_t *lock)
{
	raw_spin_lock_init(lock);
}

/* Process or IRQ context, never NMI: raw_spin_lock_irqsave(); returns the
 * flags for rprof_follow_unlock(). */
unsigned long rprof_follow_lock(raw_spinlock_t *lock)
{
	unsigned long flags;

	raw_spin_lock_irqsave(lock, flags);
	return flags;
}

/* raw_spin_unlock_irqrestore() of rprof_follow_lock(). */
void rprof_follow_unlock(raw_spinlock_t *lock, unsigned long flags)
{
	raw_spin_unlock_irqrestore(lock, flags);
}

/* Any context but NMI, never sleeps: kfree_rcu() of @obj (kmalloc'd), whose
 * rcu_head is @head, after a grace period. */
void rprof_kfree_rcu(void *obj, struct rcu_head *head)
{
	kvfree_call_rcu(head, obj);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: kernel modules for the drain: which module's text an address is
 * in, and the notifier that drains the rings before a module goes
 * (src/resolve/modules.rs).  Process context.
 */
#include <linux/atomic.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/pgtable.h>
#include <linux/printk.h>
#include <linux/rculist.h>
#include <linux/string.h>
#include "rprof_helpers.h"

/*
 * 6.12 exports no way to map an address to its module: __module_address()
 * and __module_text_address() are not exported, nor is the module list
 * (checked in kernel/module/main.c of 6.12.117).  But every
 * module is on that list, including this one, and the list is walked
 * under RCU by the kernel's own lockless readers (modules are removed with
 * list_del_rcu() and freed after a grace period).  Walking from our own
 * entry meets the list head once: it is the one node that is not inside a
 * module, found at load time by asking kallsyms what it is.
 */
static const struct list_head *rprof_modules_head;

static void rprof_find_modules_head(void)
{
	const struct list_head *node;
	char sym[KSYM_SYMBOL_LEN];

	rcu_read_lock();
	for (node = rcu_dereference(list_next_rcu(&THIS_MODULE->list));
	     node != &THIS_MODULE->list;
	     node = rcu_dereference(list_next_rcu((struct list_head *)node))) {
		sprint_symbol(sym, (unsigned long)node);
		if (!strncmp(sym, "modules+0x0/", 12)) {
			rprof_modules_head = node;
			break;
		}
	}
	rcu_read_unlock();
}

static bool rprof_module_match(struct module *mod, u64 ip,
			       struct rprof_modinfo *out)
{
	static const enum mod_mem_type types[] = { MOD_TEXT, MOD_INIT_TEXT };
	unsigned int i;

	/*
	 * UNFORMED modules are skipped, as __module_address() does: their
	 * memory is not set up yet.  GOING modules are not: the GOING notifier
	 * (rprof_module_event) drains the rings to resolve the module's last
	 * samples, and the state is GOING by then.  No sample lands in a GOING
	 * module after that drain: delete_module() ran its exit function
	 * before announcing GOING, and a failed init has returned, so none of
	 * its code runs between our notifier and the module being freed.
	 */
	if (mod->state == MODULE_STATE_UNFORMED)
		return false;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		struct module_memory *mem = &mod->mem[types[i]];

		if (mem->size && ip >= (unsigned long)mem->base &&
		    ip < (unsigned long)mem->base + mem->size) {
			out->id = mod;
			out->base = (unsigned long)mem->base;
			out->size = mem->size;
			out->init = types[i] == MOD_INIT_TEXT;
			strscpy(out->name, mod->name, sizeof(out->name));
			return true;
		}
	}
	return false;
}

bool rprof_module_lookup(u64 ip, struct rprof_modinfo *out)
{
	struct module *mod;
	bool found = false;

	if (!rprof_modules_head)
		return false;
	/*
	 * Module text (and everything else execmem hands out) lies in the
	 * module area; the core kernel's text does not.  Most kernel samples
	 * are in the core kernel: they skip the walk.
	 */
	if (ip < MODULES_VADDR || ip >= MODULES_END)
		return false;
	rcu_read_lock();
	if (rprof_module_match(THIS_MODULE, ip, out)) {
		found = true;
		goto out;
	}
	list_for_each_entry_rcu(mod, &THIS_MODULE->list, list) {
		if (&mod->list == rprof_modules_head)
			continue;
		if (rprof_module_match(mod, ip, out)) {
			found = true;
			break;
		}
	}
out:
	rcu_read_unlock();
	return found;
}

static void *rprof_modnotify_ctx;
static void (*rprof_modnotify_going)(void *ctx, const void *id);

/* Module loads and unloads so far: what kernel addresses resolve to may
 * have changed since a caller last looked (the drain's raw-chain table). */
static atomic_t rprof_module_changes = ATOMIC_INIT(0);

u32 rprof_module_generation(void)
{
	return atomic_read(&rprof_module_changes);
}

static int rprof_module_event(struct notifier_block *nb, unsigned long action,
			      void *data)
{
	if (action == MODULE_STATE_COMING || action == MODULE_STATE_GOING)
		atomic_inc(&rprof_module_changes);
	if (action == MODULE_STATE_GOING)
		rprof_modnotify_going(rprof_modnotify_ctx, data);
	return NOTIFY_OK;
}

static struct notifier_block rprof_module_nb = {
	.notifier_call = rprof_module_event,
};

int rprof_module_notifier_register(void *ctx,
				   void (*going)(void *ctx, const void *id))
{
	rprof_find_modules_head();
	if (!rprof_modules_head)
		pr_warn("rprof: module list not found; module samples resolve to the kernel\n");
	rprof_modnotify_ctx = ctx;
	rprof_modnotify_going = going;
	return register_module_notifier(&rprof_module_nb);
}

void rprof_module_notifier_unregister(void)
{
	unregister_module_notifier(&rprof_module_nb);
}

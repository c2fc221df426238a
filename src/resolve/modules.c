// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C glue of src/resolve/modules.rs, which holds the logic (the
 * lookup of the module whose text holds an address, the notifier's
 * decisions, the search for the list's head): THIS_MODULE, the module
 * area's bounds (macros), one step on the module list (rcu_dereference),
 * the fields of a module the lookup reads, what kallsyms calls a node,
 * and the notifier's registration.  Process context.
 */
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/pgtable.h>
#include <linux/rculist.h>
#include <linux/string.h>
#include "rprof_helpers.h"

/*
 * Under rcu_read_lock(), process context: @node is the module list's
 * head (kallsyms' lookups take no sleeping lock).  6.12 exports neither
 * the list nor a lookup on it (src/resolve/modules.rs); the head is the
 * one node on the list that is not inside a module, and kallsyms names
 * it.
 */
bool rprof_module_is_list_head(const struct list_head *node)
{
	char sym[KSYM_SYMBOL_LEN];

	sprint_symbol(sym, (unsigned long)node);
	return !strncmp(sym, "modules+0x0/", 12);
}

/* Any context: the module area, [MODULES_VADDR, MODULES_END). */
void rprof_module_area(u64 *start, u64 *end)
{
	*start = MODULES_VADDR;
	*end = MODULES_END;
}

/* Any context: THIS_MODULE's node on the module list. */
const struct list_head *rprof_module_self(void)
{
	return &THIS_MODULE->list;
}

/* Under rcu_read_lock(): the node after @node on the module list. */
const struct list_head *rprof_module_next(const struct list_head *node)
{
	return rcu_dereference(list_next_rcu((struct list_head *)node));
}

/* Under rcu_read_lock(): what the lookup reads of the module whose list
 * node @node is (never the list head): its state, name and text ranges. */
void rprof_module_text(const struct list_head *node, struct rprof_modtext *out)
{
	const struct module *mod = list_entry(node, struct module, list);
	static const enum mod_mem_type types[] = { MOD_TEXT, MOD_INIT_TEXT };
	unsigned int i;

	out->id = mod;
	out->name = mod->name;
	out->state = mod->state;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		out->base[i] = (unsigned long)mod->mem[types[i]].base;
		out->size[i] = mod->mem[types[i]].size;
	}
}

static void *rprof_modnotify_ctx;
static void (*rprof_modnotify_event)(void *ctx, unsigned long action, const void *id);

static int rprof_module_event(struct notifier_block *nb, unsigned long action,
			      void *data)
{
	rprof_modnotify_event(rprof_modnotify_ctx, action, data);
	return NOTIFY_OK;
}

static struct notifier_block rprof_module_nb = {
	.notifier_call = rprof_module_event,
};

/* Process context: every module notification calls event(ctx, action,
 * module) from now on. */
int rprof_module_notifier_register(void *ctx,
				   void (*event)(void *ctx, unsigned long action, const void *id))
{
	rprof_modnotify_ctx = ctx;
	rprof_modnotify_event = event;
	return register_module_notifier(&rprof_module_nb);
}

/* Process context: no notification calls event once this returns. */
void rprof_module_notifier_unregister(void)
{
	unregister_module_notifier(&rprof_module_nb);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the misc device /dev/rprof and what its file operations ask of the
 * kernel (struct miscdevice is not in kernel::bindings); the Rust side is
 * src/kapi/miscdev.rs and src/device/fops.rs.  Process context.
 *
 * The ABI checks are here, in a file every build compiles: the uapi
 * structures' sizes and the ioctl numbers against the header's macros.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"

static_assert(sizeof(struct rprof_config) == RPROF_CONFIG_SIZE_VER1);
static_assert(sizeof(struct rprof_stats) == RPROF_STATS_SIZE_VER2);
static_assert(sizeof(struct rprof_mmap_page) <= PAGE_SIZE);
static_assert(sizeof(struct rprof_reset) == 32);
static_assert(sizeof(struct rprof_unwind_row) == 12);
static_assert(sizeof(struct rprof_unwind_table_header) == 40);
static_assert(sizeof(struct rprof_unwind_add) == 24);

struct rprof_misc {
	struct miscdevice misc;
	void *ctx;
};

/*
 * The ioctl numbers bindgen sees (spelled out in the header's enum, turned
 * into numbers by src/uapi.rs) must be the ones the header's macros define.
 * BUILD_BUG_ON rather than static_assert: clang does not take _IOR() as an
 * integer constant expression (its type check names an extern).
 */
static void rprof_check_ioctl_numbers(void)
{
	BUILD_BUG_ON(RPROF_IOC_GET_VERSION !=
		     _IOC(_IOC_READ, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_VERSION, sizeof(__u32)));
	BUILD_BUG_ON(RPROF_IOC_SET_CONFIG !=
		     _IOC(_IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_SET_CONFIG,
			  sizeof(struct rprof_config)));
	BUILD_BUG_ON(RPROF_IOC_GET_STATS !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_STATS,
			  sizeof(struct rprof_stats)));
	BUILD_BUG_ON(RPROF_IOC_LOOKUP_COOKIE !=
		     _IOC(_IOC_READ | _IOC_WRITE, RPROF_IOC_MAGIC, RPROF_IOC_NR_LOOKUP_COOKIE,
			  sizeof(struct rprof_cookie_lookup)));
	BUILD_BUG_ON(RPROF_IOC_START != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_START));
	BUILD_BUG_ON(RPROF_IOC_STOP != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_STOP));
	BUILD_BUG_ON(RPROF_IOC_FLUSH != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_FLUSH));
	BUILD_BUG_ON(RPROF_IOC_RESET_COOKIES != _IO(RPROF_IOC_MAGIC, RPROF_IOC_NR_RESET_COOKIES));
	BUILD_BUG_ON(RPROF_IOC_ADD_UNWIND != _IOW(RPROF_IOC_MAGIC, RPROF_IOC_NR_ADD_UNWIND, struct rprof_unwind_add));
}

struct rprof_misc *rprof_misc_register(const char *name,
				       const struct file_operations *fops,
				       void *ctx)
{
	struct rprof_misc *m;
	int ret;

	rprof_check_ioctl_numbers();
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.fops = fops;
	m->misc.mode = 0600;
	m->ctx = ctx;
	ret = misc_register(&m->misc);
	if (ret) {
		kfree(m);
		return ERR_PTR(ret);
	}
	return m;
}

/*
 * The ioctl structures have the same layout for 32-bit callers (fixed-width
 * fields, pointers in __u64), so compat_ptr_ioctl() serves them; it exists
 * only with CONFIG_COMPAT, hence C.
 */
long (*rprof_compat_ioctl(void))(struct file *, unsigned int, unsigned long)
{
#ifdef CONFIG_COMPAT
	return compat_ptr_ioctl;
#else
	return NULL;
#endif
}

bool rprof_printk_ratelimit(void)
{
	return printk_ratelimit();
}

void rprof_misc_deregister(struct rprof_misc *m)
{
	misc_deregister(&m->misc);
	kfree(m);
}

/* In open(): misc_open() left the miscdevice in private_data. */
void *rprof_misc_ctx(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct rprof_misc, misc)->ctx;
}

void *rprof_file_private(struct file *file)
{
	return file->private_data;
}

void rprof_file_set_private(struct file *file, void *data)
{
	file->private_data = data;
}

unsigned int rprof_file_flags(struct file *file)
{
	return file->f_flags;
}

bool rprof_perfmon_capable(void)
{
	return perfmon_capable();
}

/*
 * What perf_event_open() asks before it lets a caller see kernel data:
 * perf_event_paranoid (level 2 and above need CAP_PERFMON, which open()
 * already required) and the LSM's perf_event_open hook.  perf_allow_cpu()
 * would be the exact match for CPU-wide counters, but it is a static
 * inline over symbols 6.12 does not export; perf_allow_kernel() is
 * exported, and the stricter of the two on the paranoid level.
 */
int rprof_perf_allowed(void)
{
	/* Not stricter on the LSM side: the hook is asked about
	 * PERF_SECURITY_KERNEL, not PERF_SECURITY_CPU (docs/design.md). */
	return perf_allow_kernel();
}

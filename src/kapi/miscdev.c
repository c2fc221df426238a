// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the C side of the misc-device wrapper (src/kapi/miscdev.rs):
 * struct miscdevice is not in kernel::bindings 6.12, and a file's private
 * data and flags are plain fields.  Process context.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include "rprof_helpers.h"

struct rprof_misc {
	struct miscdevice misc;
	void *ctx;
};

struct rprof_misc *rprof_misc_register(const char *name,
				       const struct file_operations *fops,
				       void *ctx)
{
	struct rprof_misc *m;
	int ret;

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

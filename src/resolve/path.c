// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: files for the cookie table (src/resolve/cookies.rs): an address
 * space's executable, the reader's root, a path's name, device and inode.
 * Process context.
 */
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/kdev_t.h>
#include <linux/mm_types.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <uapi/linux/rprof.h>
#include "rprof_helpers.h"

bool rprof_mm_exe_path(struct mm_struct *mm, struct path *path)
{
	struct file *exe;

	rcu_read_lock();
	exe = get_file_rcu(&mm->exe_file);
	rcu_read_unlock();
	if (!exe)
		return false;
	*path = exe->f_path;
	path_get(path);
	fput(exe);
	return true;
}

void rprof_current_root(struct path *root)
{
	get_fs_root(current->fs, root);
}

int rprof_path_info(const struct path *path, const struct path *root,
		    char *buf, int len, u64 *dev, u64 *ino, u32 *flags)
{
	struct inode *inode = d_inode(path->dentry);
	char *p;
	int n;

	*flags = 0;
	*dev = inode ? new_encode_dev(inode->i_sb->s_dev) : 0;
	*ino = inode ? inode->i_ino : 0;
	if (d_unlinked(path->dentry))
		*flags |= RPROF_COOKIE_DELETED;
	if (!path_is_under((struct path *)path, (struct path *)root))
		*flags |= RPROF_COOKIE_UNREACHABLE;
	p = d_path(path, buf, len);
	if (IS_ERR(p)) {
		/* Too long, or no path: fall back to the file's own name. */
		*flags |= PTR_ERR(p) == -ENAMETOOLONG ? RPROF_COOKIE_TRUNCATED :
							  RPROF_COOKIE_NO_PATH;
		n = snprintf(buf, len, "%pd", path->dentry);
		return min(n, len - 1);
	}
	n = strlen(p);
	memmove(buf, p, n + 1);
	return n;
}

void rprof_path_put(struct path *path)
{
	path_put(path);
}

/* Process context: the path of a file the caller holds a reference on,
 * with a reference of its own: the one the process sees (an overlayfs
 * mapping's backing file is named by its overlay path, as
 * /proc/PID/maps names it). */
void rprof_file_path(struct file *file, struct path *path)
{
	*path = *file_user_path(file);
	path_get(path);
}

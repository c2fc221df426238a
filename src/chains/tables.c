// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: what an unwind-table upload (tables.rs, process context) needs
 * from the kernel: the file behind a descriptor.  (The handler's side of
 * the table walk is walk.c's.)
 */
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include "rprof_helpers.h"

/*
 * Process context.  The regular file behind fd, with a reference, and in
 * *key the inode its mappings' files have: the real inode under overlayfs
 * (a mapping of an overlay file maps the file beneath, whose inode
 * d_real_inode() names).  The reference on the file keeps its mount busy
 * (an inode reference alone would not: umount would free the superblock
 * under it) and the key's inode alive.  NULL with *err -EBADF for no
 * file, -EINVAL for one that is not a regular file (a pipe, a socket, the
 * device itself).
 */
void *rprof_fd_file_get(int fd, unsigned long *key, int *err)
{
	struct file *file = fget(fd);

	if (!file) {
		*err = -EBADF;
		return NULL;
	}
	if (!S_ISREG(file_inode(file)->i_mode)) {
		fput(file);
		*err = -EINVAL;
		return NULL;
	}
	*key = (unsigned long)d_real_inode(file->f_path.dentry);
	return file;
}


// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the event buffer's memory and its mapping into the reader; the
 * Rust side is src/buffer/evbuf.rs.  Process context.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include "rprof_helpers.h"

void rprof_vfree(void *addr)
{
	vfree(addr);
}

/* Zeroed, charged to the caller's memory cgroup, mapped by
 * rprof_mmap_buffer() page by page (no VM_USERMAP: that needs vmalloc_user(),
 * which cannot charge the cgroup). */
void *rprof_vmalloc_account(unsigned long size)
{
	return __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
}

/* Each mapping of the buffer holds the charge, so that a replaced session's
 * pages stay charged until the last process unmaps them.  A VMA copied by
 * fork(), split by a partial munmap() or moved by mremap() gets ->open(),
 * every VMA that goes gets ->close(): one reference each. */
static void rprof_vm_open(struct vm_area_struct *vma)
{
	rprof_charge_get(vma->vm_private_data);
}

static void rprof_vm_close(struct vm_area_struct *vma)
{
	rprof_charge_put(vma->vm_private_data);
}

static const struct vm_operations_struct rprof_vm_ops = {
	.open = rprof_vm_open,
	.close = rprof_vm_close,
};

/*
 * The buffer is one control page followed by buf_pages - 1 data pages.
 * data_area false: offset 0, exactly the control page, any protection but
 * exec (the kernel writes data_head there for the reader and trusts nothing
 * it reads back: src/buffer/evbuf.rs).  data_area true: offset
 * PAGE_SIZE, exactly the data pages, read-only for good: no VM_WRITE, and
 * VM_MAYWRITE/VM_MAYEXEC cleared so mprotect() cannot add them later.
 * Both refuse to grow (VM_DONTEXPAND) and are not dumped.
 */
int rprof_mmap_buffer(struct vm_area_struct *vma, void *buf,
		      unsigned long buf_pages, bool data_area, void *charge)
{
	unsigned long pgoff = data_area ? 1 : 0;
	unsigned long pages = data_area ? buf_pages - 1 : 1;
	unsigned long i;
	int ret;

	if (vma->vm_pgoff != pgoff || vma_pages(vma) != pages)
		return -EINVAL;
	/* A private mapping would copy the control page on the reader's
	 * first write to data_tail, which the kernel would then never see. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (data_area) {
		if (vma->vm_flags & (VM_WRITE | VM_EXEC))
			return -EPERM;
		vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	} else {
		if (vma->vm_flags & VM_EXEC)
			return -EPERM;
		vm_flags_clear(vma, VM_MAYEXEC);
	}
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (i = 0; i < pages; i++) {
		void *kaddr = buf + ((pgoff + i) << PAGE_SHIFT);

		ret = vm_insert_page(vma, vma->vm_start + (i << PAGE_SHIFT),
				     vmalloc_to_page(kaddr));
		if (ret)
			return ret;
	}
	/* Only now: a failed mmap() is torn down without ->close(). */
	vma->vm_private_data = charge;
	vma->vm_ops = &rprof_vm_ops;
	rprof_charge_get(charge);
	return 0;
}

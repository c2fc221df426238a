// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the event buffer's memory and its mapping into the reader
 * (vmalloc_user() is a macro in 6.12); the Rust side is
 * src/buffer/evbuf.rs.  Process context.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include "rprof_helpers.h"

void *rprof_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void rprof_vfree(void *addr)
{
	vfree(addr);
}

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
		      unsigned long buf_pages, bool data_area)
{
	unsigned long pgoff = data_area ? 1 : 0;
	unsigned long pages = data_area ? buf_pages - 1 : 1;

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
	return remap_vmalloc_range(vma, buf, pgoff);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * rprof: the kernel calls behind the event buffer's memory and its mapping
 * into the reader.  What a mapping may be (its offset, size and
 * protection) is decided in src/buffer/evbuf.rs; each helper here is one
 * access Rust cannot make (vm_flags setters, vm_operations_struct, static
 * inlines).  Process context.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include "rprof_helpers.h"

void rprof_vfree(void *addr)
{
	vfree(addr);
}

/* Zeroed, charged to the caller's memory cgroup, mapped page by page by
 * rprof_vma_insert() (no VM_USERMAP: that needs vmalloc_user(), which
 * cannot charge the cgroup). */
void *rprof_vmalloc_account(unsigned long size)
{
	return __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
}

void rprof_vma_req(const struct vm_area_struct *vma, struct rprof_vma_req *out)
{
	out->pgoff = vma->vm_pgoff;
	out->pages = (vma->vm_end - vma->vm_start) >> PAGE_SHIFT;
	out->shared = vma->vm_flags & VM_SHARED;
	out->write = vma->vm_flags & VM_WRITE;
	out->exec = vma->vm_flags & VM_EXEC;
}

void rprof_vma_seal(struct vm_area_struct *vma, bool writable)
{
	vm_flags_clear(vma, VM_MAYEXEC | (writable ? 0 : VM_MAYWRITE));
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
}

int rprof_vma_insert(struct vm_area_struct *vma, unsigned long index, void *kaddr)
{
	return vm_insert_page(vma, vma->vm_start + (index << PAGE_SHIFT),
			      vmalloc_to_page(kaddr));
}

/* A VMA copied by fork(), split by a partial munmap() or moved by mremap()
 * gets ->open(), every VMA that goes gets ->close(): one reference each. */
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

void rprof_vma_hold(struct vm_area_struct *vma, void *charge)
{
	vma->vm_private_data = charge;
	vma->vm_ops = &rprof_vm_ops;
}

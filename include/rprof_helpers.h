/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof: the C glue's interface (the .c files in each folder of src/, beside
 * the Rust they serve: docs/design.md lists them).
 *
 * Only what Rust for Linux 6.12 cannot reach lives in C: module parameters
 * (module_param is a macro and 6.12's module! takes none), structures that
 * kernel::bindings lacks (miscdevice, irq_work, delayed_work) and static
 * inline functions or macros (user_mode(), instruction_pointer(),
 * vmalloc_user(), poll_wait(), wait_event_interruptible(), current,
 * rcu_dereference(), for_each_process(), raw_spin_lock_irqsave(),
 * kfree_rcu(), THIS_MODULE), bit-fields, and tracepoint probes, whose type
 * the kernel's version decides.  Every object
 * is opaque to Rust.  src/kapi/helpers.rs declares the same functions for
 * Rust; keep the two in step.  Each helper makes one kernel call or is one
 * NMI-safe primitive.
 */
#ifndef RPROF_HELPERS_H
#define RPROF_HELPERS_H

#include <linux/types.h>
#include <linux/path.h>

struct file;
struct path;
struct file_operations;
struct perf_event;
struct poll_table_struct;
struct vm_area_struct;
struct kunit;

/* Module parameters, as loaded (validated by Rust at init). */
unsigned int rprof_param_ring_records(void);
unsigned int rprof_param_buffer_pages(void);
unsigned int rprof_param_max_cookies(void);
unsigned int rprof_param_mlock_kb(void);
unsigned int rprof_param_unwind_kb(void);

/* Misc device: registered with a context pointer Rust gets back in open(). */
struct rprof_misc;
struct rprof_misc *rprof_misc_register(const char *name,
				       const struct file_operations *fops,
				       void *ctx);
void rprof_misc_deregister(struct rprof_misc *misc);
void *rprof_misc_ctx(struct file *file);
void *rprof_file_private(struct file *file);
void rprof_file_set_private(struct file *file, void *data);
unsigned int rprof_file_flags(struct file *file);
/* Compile-time checks of the ioctl numbers (src/device/misc.c); never called. */
void rprof_check_ioctl_numbers(void);
bool rprof_perfmon_capable(void);
int rprof_perf_allowed(void);
long (*rprof_compat_ioctl(void))(struct file *, unsigned int, unsigned long);
bool rprof_printk_ratelimit(void);

/*
 * A sample as the overflow handler hands it to Rust.  Filled in NMI or IRQ
 * context from the interrupted registers and current.
 */
struct rprof_raw_sample {
	__u64 time_ns;
	__u64 ip;
	__u64 period;
	__u32 pid;
	__u32 tid;
	__u16 cpu;
	__u8 map;    /* Rust's own: the mappings the record carries (maps.rs) */
	__u8 pinned; /* Rust's own: the record holds mm_users too (maps.rs) */
	__u32 flags; /* RPROF_RAW_* */
	char comm[16];
};
#define RPROF_RAW_USER (1U << 0)
#define RPROF_RAW_THROTTLED (1U << 1)
/* Bits 2 and up are Rust's own (helpers.rs: RAW_TABLE and its counts). */

/*
 * NMI-safe: an mm_count reference on current's address space (the
 * mm_struct stays until rprof_mm_drop_many; its mappings do not), and the
 * mm's write-lock sequence now, or NULL for tasks without one.
 */
struct mm_struct *rprof_current_mm_grab(__u32 *seq);
/* n >= 1 mm_count references on mm dropped at once; process context (the
 * last frees the mm_struct). */
void rprof_mm_drop_many(struct mm_struct *mm, __u64 n);
/* Process context: an mm_users reference if the address space is still
 * there (false once its last user is gone), and its release. */
bool rprof_mm_get_live(struct mm_struct *mm);
void rprof_mm_put(struct mm_struct *mm);

/* The mappings of user addresses from the sampling handler (maps.c). */
struct rprof_nmi_map {
	__u64 start, end, pgoff_bytes;
	struct file *file; /* NULL: anonymous memory */
	__u64 flags;       /* RPROF_NMI_MAP_* */
};
/* The file is the address space's executable (mm->exe_file). */
#define RPROF_NMI_MAP_EXE 1
/* A backing file (overlayfs, FUSE passthrough) the handler may not
 * reference on this kernel (rprof_nmi_file_get()). */
#define RPROF_NMI_MAP_BACKING 2
/* The mapping is executable (VM_EXEC). */
#define RPROF_NMI_MAP_EXEC 4
#define RPROF_NMI_REF_NONE 0
#define RPROF_NMI_REF_OK 1
#define RPROF_NMI_REF_STALE 2
struct mm_struct *rprof_current_mm(__u32 *seq);
struct mm_struct *rprof_current_mm_pin(void);
bool rprof_nmi_map(struct mm_struct *mm, __u32 seq, __u64 addr,
		   struct rprof_nmi_map *out);
int rprof_nmi_file_get(struct mm_struct *mm, __u32 seq, struct file *file);
void rprof_file_path(struct file *file, struct path *path);
void rprof_cond_resched(void);

/* Resolution of a user ip, process context. */
/*
 * Where the VMA that the drain found under mmap_lock lies, and the mm's
 * write-lock sequence read under mmap_lock (so even: no writer).  The drain
 * resolves later samples of the same mm and sequence in [start, end)
 * without the lock (src/resolve/mapcache.rs).
 */
struct rprof_vma_range {
	__u64 start;
	__u64 end;
	__u64 pgoff_bytes; /* file offset of start */
	__u32 mm_seq;
	__u32 reserved;
};
/* Under mmap_lock held for reading (src/resolve/mm.c, mm.rs). */
struct rprof_vma_info {
	struct rprof_vma_range range;
	struct file *file;  /* no reference: the VMA's, while the lock is held */
	__u32 lock_seq;     /* vma->vm_lock_seq */
	__u32 reserved;
};
bool rprof_vma_lookup_locked(struct mm_struct *mm, __u64 ip, struct rprof_vma_info *out);
bool rprof_mmap_read_trylock(struct mm_struct *mm);
void rprof_mmap_read_unlock(struct mm_struct *mm);
void rprof_usleep_range(__u32 min_us, __u32 max_us);
/*
 * Tasks (src/kapi/task.c), for the followed set (src/sampling/followed.rs,
 * src/resolve/follow.rs).  rprof_global_tgid: the initial namespace's id
 * of the thread group vnr names in the caller's pid namespace, or -ESRCH
 * (process context).  current, a task's group, real parent and pid:
 * NMI-safe, under RCU (or in the overflow handler).  The rest: under
 * rcu_read_lock(), never in NMI.
 */
struct task_struct;
int rprof_global_tgid(pid_t vnr, __u64 *start);
struct task_struct *rprof_current_task(void);
pid_t rprof_task_group(struct task_struct *t, __u64 *start);
struct task_struct *rprof_task_real_parent(struct task_struct *t);
pid_t rprof_task_pid(struct task_struct *t);
bool rprof_task_has_children(struct task_struct *t);
bool rprof_group_has_live_thread(struct task_struct *p);
bool rprof_task_subreaper(struct task_struct *t);
bool rprof_task_exited(struct task_struct *t);
struct task_struct *rprof_next_process(struct task_struct *t);
/*
 * The followed set's glue.  The sched_process_exit probe
 * (src/resolve/follow.c), registered by the first set (sleepable process
 * context) and removed at module exit, calls rprof_follow_exit(),
 * implemented in Rust (src/resolve/follow.rs).  The set's raw spinlock
 * (never taken in NMI) and its kfree_rcu() (src/sampling/followed.c).
 */
int rprof_exit_probe_register(void);
void rprof_exit_probe_unregister(void);
void rprof_follow_exit(struct task_struct *p);
struct raw_spinlock;
struct callback_head;
void rprof_follow_lock_init(struct raw_spinlock *lock);
unsigned long rprof_follow_lock(struct raw_spinlock *lock);
void rprof_follow_unlock(struct raw_spinlock *lock, unsigned long flags);
void rprof_kfree_rcu(void *obj, struct callback_head *head);
void rprof_mm_grab(struct mm_struct *mm);
void rprof_mm_drop(struct mm_struct *mm);
/* The executable of mm, with a reference; false if none. */
bool rprof_mm_exe_path(struct mm_struct *mm, struct path *path);
/* d_path() of path into buf (NUL-terminated, moved to buf's start);
 * returns the length without NUL and sets dev, ino, RPROF_COOKIE_* flags. */
int rprof_path_info(const struct path *path, const struct path *root,
		    char *buf, int len, __u64 *dev, __u64 *ino, __u32 *flags);
/* The caller's root directory, with a reference. */
void rprof_current_root(struct path *root);
void rprof_path_put(struct path *path);

/*
 * Kernel modules (src/resolve/modules.c): the lookup's steps and the
 * notifier, for src/resolve/modules.rs.  The list head, the module area
 * and THIS_MODULE's node: process context.  rprof_module_next() and
 * rprof_module_text(): under rcu_read_lock(); node is a module's, never the
 * head.
 */
struct list_head;
struct rprof_modtext {
	const void *id;    /* identity while loaded: the struct module */
	const char *name;  /* NUL-terminated, valid under the RCU read lock */
	__u64 base[2];     /* text and init text (MOD_TEXT, MOD_INIT_TEXT) */
	__u64 size[2];
	__u32 state;       /* enum module_state */
	__u32 reserved;
};
bool rprof_module_is_list_head(const struct list_head *node);
void rprof_module_area(__u64 *start, __u64 *end);
const struct list_head *rprof_module_self(void);
const struct list_head *rprof_module_next(const struct list_head *node);
void rprof_module_text(const struct list_head *node, struct rprof_modtext *out);
/* Every notification calls event(ctx, action, module). */
int rprof_module_notifier_register(void *ctx,
				   void (*event)(void *ctx, unsigned long action, const void *id));
void rprof_module_notifier_unregister(void);

/* Called by the overflow handler; implemented in Rust (src/sampling/sampler.rs).
 * regs: the sampled registers, for call chains (rprof_callchain). */
void rprof_on_sample(void *ctx, const struct rprof_raw_sample *sample,
		     struct pt_regs *regs);

/*
 * Call chains (issue 10).  NMI context: nothing here sleeps, locks,
 * allocates or faults a page in.
 *
 * rprof_chain_scratch() is this CPU's buffer of RPROF_CHAIN_WORDS words for
 * the context level the caller runs at (task, softirq, hardirq, NMI): an
 * overflow handler cannot be interrupted by another one of the same level
 * on its CPU, so each level's buffer has one user at a time, as perf's
 * callchain buffers.  rprof_chain_alloc() makes the buffers (module load),
 * rprof_chain_free() frees them.
 *
 * rprof_callchain() stores the kernel return addresses above the sampled
 * ip (at most max_k) and then the user frames (at most max_u: the user ip
 * at kernel entry for a sample taken in the kernel, then return
 * addresses) into ips, says how many of each in *nk and *nu, and returns
 * RPROF_STACK_* flags saying why each side ended.
 */
#define RPROF_CHAIN_WORDS 256
int rprof_chain_alloc(void);
void rprof_chain_free(void);
__u64 *rprof_chain_scratch(void);
__u32 rprof_callchain(struct pt_regs *regs, __u64 *ips, __u32 max_k,
		      __u32 max_u, __u32 *nk, __u32 *nu);
/*
 * The table-driven user walk (src/chains/walk.c; the upload's file,
 * src/chains/tables.c).  rprof_callchain_regs()
 * is rprof_callchain() that, when ur is not NULL and the user side is
 * 64-bit code to be walked, leaves that walk to the caller: it fills
 * *ur with the user registers to start from (ur->valid = 1) and stores
 * no user frame beyond the entry ip of a kernel sample.
 */
struct rprof_user_regs {
	__u64 ip, sp, bp;
	__u32 valid;
	__u32 reserved;
};
__u32 rprof_callchain_regs(struct pt_regs *regs, __u64 *ips, __u32 max_k,
			   __u32 max_u, __u32 *nk, __u32 *nu,
			   struct rprof_user_regs *ur);
struct rprof_nmi_vma {
	__u64 start, end, pgoff_bytes;
	unsigned long inode; /* a key, never dereferenced */
};
bool rprof_nmi_exec_vma(__u64 ip, struct rprof_nmi_vma *out);
bool rprof_user_read_nmi(__u64 addr, __u64 *val);
bool rprof_user_read_loaded(__u64 addr, __u64 *val);
void *rprof_fd_file_get(int fd, unsigned long *key, int *err);
void rprof_file_put(void *file);
void *rprof_kvmalloc_account(size_t bytes);
void rprof_kvfree(void *p);
void rprof_kvfree_rcu(void *p);
void rprof_synchronize_rcu(void);
void rprof_rcu_read_lock(void);
void rprof_rcu_read_unlock(void);

/* perf_event kernel counters. */
struct rprof_counter_attr {
	__u32 kind;   /* enum rprof_event_kind */
	__u32 freq;   /* period is a frequency */
	__u64 period;
	__u32 exclude_user;
	__u32 exclude_kernel;
};
/* Returns a disabled counter, or an ERR_PTR (see rprof_ptr_err). */
struct perf_event *rprof_counter_create(int cpu,
					const struct rprof_counter_attr *attr,
					void *ctx);
void rprof_counter_enable(struct perf_event *event);
void rprof_counter_release(struct perf_event *event);
long rprof_ptr_err(const void *ptr);

/* Deferred work: an irq_work (NMI-safe kick) feeding a delayed work. */
struct rprof_kicker;
/* fn returns the delay in ms after which the work runs again, 0 for never. */
struct rprof_kicker *rprof_kicker_create(unsigned int (*fn)(void *ctx));
void rprof_kicker_bind(struct rprof_kicker *k, void *ctx);
void rprof_kicker_kick(struct rprof_kicker *k);
void rprof_kicker_schedule(struct rprof_kicker *k, unsigned int delay_ms);
/* Runs the work now, in the worker, and waits for it; process context. */
void rprof_kicker_run_now(struct rprof_kicker *k);
void rprof_kicker_destroy(struct rprof_kicker *k);

/* Wait queue for read() and poll(). */
struct rprof_waitq;
struct rprof_waitq *rprof_waitq_create(void);
void rprof_waitq_destroy(struct rprof_waitq *wq);
void rprof_waitq_wake(struct rprof_waitq *wq);
/* Waits until cond(ctx) is true; -ERESTARTSYS on a signal. */
int rprof_waitq_wait(struct rprof_waitq *wq, bool (*cond)(void *ctx), void *ctx);
void rprof_poll_wait(struct file *file, struct rprof_waitq *wq,
		     struct poll_table_struct *pt);
unsigned int rprof_poll_mask(bool readable, bool error);

/* Event buffer memory and its mapping (src/buffer/evbuf.c). */
void *rprof_vmalloc_account(unsigned long size);
void rprof_vfree(void *addr);
/* What a new mapping asks for: its offset and length in pages, and its
 * flags, which src/buffer/evbuf.rs judges. */
struct rprof_vma_req {
	__u64 pgoff;
	__u64 pages;
	bool shared;
	bool write;
	bool exec;
};
void rprof_vma_req(const struct vm_area_struct *vma, struct rprof_vma_req *out);
/* Seals a mapping the caller accepted: mprotect() can never add exec (nor
 * write unless writable), it never grows, it is not dumped. */
void rprof_vma_seal(struct vm_area_struct *vma, bool writable);
/* Inserts the vmalloc page at kaddr as the mapping's page index. */
int rprof_vma_insert(struct vm_area_struct *vma, unsigned long index, void *kaddr);
/* The mapping takes over the reference on charge the caller hands it and
 * gives it back as it goes; every copy or split of it takes one of its own
 * (rprof_charge_get()/_put(), src/buffer/charge.rs). */
void rprof_vma_hold(struct vm_area_struct *vma, void *charge);
void rprof_charge_get(void *charge);
void rprof_charge_put(void *charge);

/* The locked-memory charge (src/buffer/memlock.c): the kernel calls the
 * policy in src/buffer/charge.rs makes.  Process context. */
struct user_struct;
struct user_struct *rprof_memlock_user(void);
void rprof_memlock_user_put(struct user_struct *user);
long rprof_memlock_user_pages(struct user_struct *user);
void rprof_memlock_user_add(struct user_struct *user, long pages);
struct mm_struct *rprof_memlock_mm(void);
__s64 rprof_memlock_mm_pages(struct mm_struct *mm);
void rprof_memlock_mm_add(struct mm_struct *mm, __s64 pages);
unsigned long rprof_memlock_rlimit_pages(void);
bool rprof_memlock_capable(void);

/* CPU hotplug: one registration; callbacks implemented in Rust
 * (src/kapi/hotplug.rs). */
int rprof_hotplug_register(void *ctx, int (*up)(void *ctx, unsigned int cpu),
			   int (*down)(void *ctx, unsigned int cpu));
void rprof_hotplug_unregister(void);
void rprof_cpus_read_lock(void);
void rprof_cpus_read_unlock(void);

/* CPUs and time. */
unsigned int rprof_nr_cpu_ids(void);
unsigned int rprof_num_online_cpus(void);
bool rprof_cpu_online(unsigned int cpu);
bool rprof_cpu_possible(unsigned int cpu);
/* The stream's clock: CLOCK_MONOTONIC (ktime_get_mono_fast_ns), any context. */
__u64 rprof_clock(void);

#endif /* RPROF_HELPERS_H */

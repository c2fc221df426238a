// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C glue: the `.c` files beside the Rust that calls
//! them, in every folder of `src/`.
//!
//! C header: [`include/rprof_helpers.h`](../include/rprof_helpers.h), which
//! says why each helper is C.  Every object behind these pointers is opaque
//! to Rust; the safe wrappers (`miscdev`, `counter`, `kicker`, `waitq`,
//! `evbuf`) own them and release them in `Drop`.  Nothing outside those
//! wrappers calls into this module, except the sampling entry point.

use kernel::ffi::{c_char, c_int, c_long, c_uint, c_void};
use kernel::bindings;

/// Opaque `struct rprof_misc`.
#[repr(C)]
pub(crate) struct RprofMisc {
    _private: [u8; 0],
}

/// Opaque `struct rprof_kicker`.
#[repr(C)]
pub(crate) struct RprofKicker {
    _private: [u8; 0],
}

/// Opaque `struct rprof_waitq`.
#[repr(C)]
pub(crate) struct RprofWaitq {
    _private: [u8; 0],
}

/// `struct rprof_raw_sample`: what the overflow handler saw.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct RawSample {
    pub(crate) time_ns: u64,
    pub(crate) ip: u64,
    pub(crate) period: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u16,
    /// Rust's own: the mappings the record carries
    /// ([`crate::sampling::maps`]).
    pub(crate) map: u8,
    /// Rust's own: the record holds an `mm_users` reference too.
    pub(crate) pinned: u8,
    pub(crate) flags: u32,
    pub(crate) comm: [u8; 16],
}

/// `RPROF_RAW_USER`: the interrupted context was user mode.
pub(crate) const RAW_USER: u32 = 1 << 0;
/// `RPROF_RAW_THROTTLED`: perf throttled the counter with this sample.
pub(crate) const RAW_THROTTLED: u32 = 1 << 1;

/// Rust's own `RawSample::flags` (the C side sets only the two above): the
/// user side was walked by unwind tables, with this many frames found by a
/// table (bits 8-15) and by the frame pointer (bits 16-23).
pub(crate) const RAW_TABLE: u32 = 1 << 2;
const RAW_TABLE_FRAMES_SHIFT: u32 = 8;
const RAW_FP_FRAMES_SHIFT: u32 = 16;

/// The `RawSample::flags` of a table walk that found `table` and `fp`
/// frames (at most `RPROF_MAX_FRAMES` each, so each fits 8 bits).
pub(crate) fn raw_table_flags(table: u64, fp: u64) -> u32 {
    RAW_TABLE | (table.min(255) as u32) << RAW_TABLE_FRAMES_SHIFT | (fp.min(255) as u32) << RAW_FP_FRAMES_SHIFT
}

/// The frames a table walk found by table and by frame pointer, from a
/// record's `RawSample::flags`.
pub(crate) fn raw_table_counts(flags: u32) -> (u64, u64) {
    (u64::from(flags >> RAW_TABLE_FRAMES_SHIFT & 0xff), u64::from(flags >> RAW_FP_FRAMES_SHIFT & 0xff))
}

/// `struct rprof_user_regs` (`rprof_callchain_regs`).
#[repr(C)]
#[derive(Default)]
pub(crate) struct UserRegs {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    pub(crate) valid: u32,
    pub(crate) reserved: u32,
}

/// `struct rprof_nmi_vma` (`rprof_nmi_exec_vma`).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct NmiVma {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pgoff_bytes: u64,
    /// A key, never dereferenced.
    pub(crate) inode: usize,
}

/// `struct rprof_nmi_map` (`rprof_nmi_map`).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct NmiMap {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pgoff_bytes: u64,
    /// `struct file *`, null for anonymous memory.
    pub(crate) file: *mut c_void,
    /// `RPROF_NMI_MAP_*`.
    pub(crate) flags: u64,
}

/// `RPROF_NMI_MAP_EXE`: the file is the address space's executable.
pub(crate) const NMI_MAP_EXE: u64 = 1;
/// `RPROF_NMI_MAP_BACKING`: a backing file the handler may not reference.
pub(crate) const NMI_MAP_BACKING: u64 = 2;

impl Default for NmiMap {
    fn default() -> Self {
        Self { start: 0, end: 0, pgoff_bytes: 0, file: core::ptr::null_mut(), flags: 0 }
    }
}

/// `rprof_nmi_file_get`'s answers (`RPROF_NMI_REF_NONE`, 0, is the
/// third: no reference).
pub(crate) const NMI_REF_OK: c_int = 1;
pub(crate) const NMI_REF_STALE: c_int = 2;

/// `RPROF_CHAIN_WORDS`: words of a chain scratch buffer.
pub(crate) const CHAIN_WORDS: usize = 256;

/// Opaque `struct mm_struct`.
#[repr(C)]
pub(crate) struct MmStruct {
    _private: [u8; 0],
}

/// Opaque `struct user_struct`.
#[repr(C)]
pub(crate) struct UserStruct {
    _private: [u8; 0],
}

/// `struct rprof_vma_req`: what a new mapping asks for.
#[repr(C)]
#[derive(Default)]
pub(crate) struct VmaReq {
    pub(crate) pgoff: u64,
    pub(crate) pages: u64,
    pub(crate) shared: bool,
    pub(crate) write: bool,
    pub(crate) exec: bool,
}

/// Opaque `struct task_struct` (read through [`crate::kapi::task`]).
#[repr(C)]
pub(crate) struct TaskStruct {
    _private: [u8; 0],
}

/// Opaque `struct list_head`: a node of the module list.
#[repr(C)]
pub(crate) struct ListHead {
    _private: [u8; 0],
}

/// `struct rprof_vma_range`: where a VMA found under `mmap_lock` lies,
/// and the mm's write-lock sequence under the lock.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct VmaRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pgoff_bytes: u64,
    pub(crate) mm_seq: u32,
    pub(crate) reserved: u32,
}

/// `struct rprof_vma_info`: a VMA found under `mmap_lock`
/// (`rprof_vma_lookup_locked`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct VmaInfo {
    pub(crate) range: VmaRange,
    /// The VMA's file, not referenced (null: anonymous).
    pub(crate) file: *mut c_void,
    pub(crate) lock_seq: u32,
    pub(crate) reserved: u32,
}

impl Default for VmaInfo {
    fn default() -> Self {
        Self { range: VmaRange::default(), file: core::ptr::null_mut(), lock_seq: 0, reserved: 0 }
    }
}

/// `struct rprof_modtext` (`rprof_module_text`): what the module lookup
/// reads of one module.
#[repr(C)]
pub(crate) struct ModText {
    /// The `struct module`.
    pub(crate) id: *const c_void,
    /// Its name, NUL-terminated, valid under the RCU read lock.
    pub(crate) name: *const c_char,
    /// Text and init text (`MOD_TEXT`, `MOD_INIT_TEXT`).
    pub(crate) base: [u64; 2],
    pub(crate) size: [u64; 2],
    /// `enum module_state`.
    pub(crate) state: u32,
    pub(crate) reserved: u32,
}

/// `struct rprof_counter_attr`.
#[repr(C)]
pub(crate) struct CounterAttr {
    pub(crate) kind: u32,
    pub(crate) freq: u32,
    pub(crate) period: u64,
    pub(crate) exclude_user: u32,
    pub(crate) exclude_kernel: u32,
}

// Pointers to kernel structures are opaque handles here; rustc cannot tell
// that some of them contain zero-sized fields.
#[allow(improper_ctypes)]
extern "C" {
    pub(crate) fn rprof_param_ring_records() -> c_uint;
    pub(crate) fn rprof_param_buffer_pages() -> c_uint;
    pub(crate) fn rprof_param_max_cookies() -> c_uint;
    pub(crate) fn rprof_param_mlock_kb() -> c_uint;
    pub(crate) fn rprof_param_unwind_kb() -> c_uint;

    pub(crate) fn rprof_misc_register(
        name: *const c_char,
        fops: *const bindings::file_operations,
        ctx: *mut c_void,
    ) -> *mut RprofMisc;
    pub(crate) fn rprof_misc_deregister(misc: *mut RprofMisc);
    pub(crate) fn rprof_misc_ctx(file: *mut bindings::file) -> *mut c_void;
    pub(crate) fn rprof_file_private(file: *mut bindings::file) -> *mut c_void;
    pub(crate) fn rprof_file_set_private(file: *mut bindings::file, data: *mut c_void);
    pub(crate) fn rprof_file_flags(file: *mut bindings::file) -> c_uint;
    pub(crate) fn rprof_perfmon_capable() -> bool;
    pub(crate) fn rprof_perf_allowed() -> c_int;
    pub(crate) fn rprof_compat_ioctl()
        -> Option<unsafe extern "C" fn(*mut bindings::file, c_uint, kernel::ffi::c_ulong) -> c_long>;
    pub(crate) fn rprof_printk_ratelimit() -> bool;

    pub(crate) fn rprof_counter_create(
        cpu: c_int,
        attr: *const CounterAttr,
        ctx: *mut c_void,
    ) -> *mut bindings::perf_event;
    pub(crate) fn rprof_counter_enable(event: *mut bindings::perf_event);
    pub(crate) fn rprof_counter_release(event: *mut bindings::perf_event);
    pub(crate) fn rprof_ptr_err(ptr: *const c_void) -> c_long;

    pub(crate) fn rprof_kicker_create(f: unsafe extern "C" fn(ctx: *mut c_void) -> c_uint) -> *mut RprofKicker;
    pub(crate) fn rprof_kicker_bind(k: *mut RprofKicker, ctx: *mut c_void);
    pub(crate) fn rprof_kicker_kick(k: *mut RprofKicker);
    pub(crate) fn rprof_kicker_schedule(k: *mut RprofKicker, delay_ms: c_uint);
    pub(crate) fn rprof_kicker_run_now(k: *mut RprofKicker);
    pub(crate) fn rprof_kicker_destroy(k: *mut RprofKicker);

    pub(crate) fn rprof_waitq_create() -> *mut RprofWaitq;
    pub(crate) fn rprof_waitq_destroy(wq: *mut RprofWaitq);
    pub(crate) fn rprof_waitq_wake(wq: *mut RprofWaitq);
    pub(crate) fn rprof_waitq_wait(
        wq: *mut RprofWaitq,
        cond: unsafe extern "C" fn(ctx: *mut c_void) -> bool,
        ctx: *mut c_void,
    ) -> c_int;
    pub(crate) fn rprof_poll_wait(
        file: *mut bindings::file,
        wq: *mut RprofWaitq,
        pt: *mut bindings::poll_table_struct,
    );
    pub(crate) fn rprof_poll_mask(readable: bool, error: bool) -> c_uint;

    pub(crate) fn rprof_vmalloc_account(size: usize) -> *mut c_void;
    pub(crate) fn rprof_vfree(addr: *mut c_void);
    pub(crate) fn rprof_vma_req(vma: *const bindings::vm_area_struct, out: *mut VmaReq);
    pub(crate) fn rprof_vma_seal(vma: *mut bindings::vm_area_struct, writable: bool);
    pub(crate) fn rprof_vma_insert(vma: *mut bindings::vm_area_struct, index: usize, kaddr: *mut c_void) -> c_int;
    pub(crate) fn rprof_vma_hold(vma: *mut bindings::vm_area_struct, charge: *mut c_void);

    pub(crate) fn rprof_memlock_user() -> *mut UserStruct;
    pub(crate) fn rprof_memlock_user_put(user: *mut UserStruct);
    pub(crate) fn rprof_memlock_user_pages(user: *mut UserStruct) -> c_long;
    pub(crate) fn rprof_memlock_user_add(user: *mut UserStruct, pages: c_long);
    pub(crate) fn rprof_memlock_mm() -> *mut MmStruct;
    pub(crate) fn rprof_memlock_mm_pages(mm: *mut MmStruct) -> i64;
    pub(crate) fn rprof_memlock_mm_add(mm: *mut MmStruct, pages: i64);
    pub(crate) fn rprof_memlock_rlimit_pages() -> usize;
    pub(crate) fn rprof_memlock_capable() -> bool;

    pub(crate) fn rprof_current_mm_grab(seq: *mut u32) -> *mut MmStruct;
    /// NMI context (`src/sampling/maps.c`): current's address space
    /// (no reference), a VMA found under a lock sequence, a reference on
    /// its file, an mm_count reference.
    pub(crate) fn rprof_current_mm(seq: *mut u32) -> *mut MmStruct;
    pub(crate) fn rprof_current_mm_pin() -> *mut MmStruct;
    pub(crate) fn rprof_nmi_map(mm: *mut MmStruct, seq: u32, addr: u64, out: *mut NmiMap) -> bool;
    pub(crate) fn rprof_nmi_file_get(mm: *mut MmStruct, seq: u32, file: *mut c_void) -> c_int;
    /// Process context: the path of a file held, with its own reference.
    pub(crate) fn rprof_file_path(file: *mut c_void, path: *mut bindings::path);
    // Tasks (`src/kapi/task.c`, wrapped by `kapi::task`).
    pub(crate) fn rprof_global_tgid(vnr: i32, start: *mut u64) -> i32;
    pub(crate) fn rprof_current_task() -> *mut TaskStruct;
    pub(crate) fn rprof_task_group(t: *mut TaskStruct, start: *mut u64) -> i32;
    pub(crate) fn rprof_task_real_parent(t: *mut TaskStruct) -> *mut TaskStruct;
    pub(crate) fn rprof_task_pid(t: *mut TaskStruct) -> i32;
    pub(crate) fn rprof_task_has_children(t: *mut TaskStruct) -> bool;
    pub(crate) fn rprof_group_has_live_thread(p: *mut TaskStruct) -> bool;
    pub(crate) fn rprof_task_subreaper(t: *mut TaskStruct) -> bool;
    pub(crate) fn rprof_task_exited(t: *mut TaskStruct) -> bool;
    pub(crate) fn rprof_next_process(t: *mut TaskStruct) -> *mut TaskStruct;
    // The followed set's glue (`src/resolve/follow.c`: the probe;
    // `src/sampling/followed.c`: the lock and RCU frees).
    pub(crate) fn rprof_exit_probe_register() -> c_int;
    pub(crate) fn rprof_exit_probe_unregister();
    pub(crate) fn rprof_follow_lock_init(lock: *mut bindings::raw_spinlock);
    pub(crate) fn rprof_follow_lock(lock: *mut bindings::raw_spinlock) -> kernel::ffi::c_ulong;
    pub(crate) fn rprof_follow_unlock(lock: *mut bindings::raw_spinlock, flags: kernel::ffi::c_ulong);
    pub(crate) fn rprof_kfree_rcu(obj: *mut c_void, head: *mut bindings::callback_head);
    pub(crate) fn rprof_chain_alloc() -> c_int;
    pub(crate) fn rprof_chain_free();
    pub(crate) fn rprof_chain_scratch() -> *mut u64;
    pub(crate) fn rprof_callchain(regs: *mut c_void, ips: *mut u64, max_k: u32, max_u: u32, nk: *mut u32, nu: *mut u32)
        -> u32;

    pub(crate) fn rprof_callchain_regs(
        regs: *mut c_void,
        ips: *mut u64,
        max_k: u32,
        max_u: u32,
        nk: *mut u32,
        nu: *mut u32,
        ur: *mut UserRegs,
    ) -> u32;
    /// NMI context: the executable file mapping of `ip` in current's
    /// address space, found without mmap_lock (`src/chains/walk.c`).
    pub(crate) fn rprof_nmi_exec_vma(ip: u64, out: *mut NmiVma) -> bool;
    /// NMI context: 8 bytes of current's user memory, never faulting.
    pub(crate) fn rprof_user_read_nmi(addr: u64, val: *mut u64) -> bool;
    /// NMI context: as `rprof_user_read_nmi`, once a read by it succeeded
    /// in the same handler (which proved current's address space loaded).
    pub(crate) fn rprof_user_read_loaded(addr: u64, val: *mut u64) -> bool;
    pub(crate) fn rprof_fd_file_get(fd: c_int, key: *mut usize, err: *mut c_int) -> *mut c_void;
    pub(crate) fn rprof_file_put(file: *mut c_void);
    pub(crate) fn rprof_kvmalloc_account(bytes: usize) -> *mut c_void;
    pub(crate) fn rprof_kvfree(p: *mut c_void);
    pub(crate) fn rprof_kvfree_rcu(p: *mut c_void);
    pub(crate) fn rprof_synchronize_rcu();
    pub(crate) fn rprof_rcu_read_lock();
    pub(crate) fn rprof_rcu_read_unlock();

    pub(crate) fn rprof_mm_get_live(mm: *mut MmStruct) -> bool;
    pub(crate) fn rprof_mm_put(mm: *mut MmStruct);
    pub(crate) fn rprof_mm_drop_many(mm: *mut MmStruct, n: u64);
    pub(crate) fn rprof_cond_resched();
    /// Process context (`src/resolve/mm.c`, wrapped by `resolve::mm`).
    pub(crate) fn rprof_vma_lookup_locked(mm: *mut MmStruct, ip: u64, out: *mut VmaInfo) -> bool;
    pub(crate) fn rprof_mmap_read_trylock(mm: *mut MmStruct) -> bool;
    pub(crate) fn rprof_mmap_read_unlock(mm: *mut MmStruct);
    pub(crate) fn rprof_usleep_range(min_us: u32, max_us: u32);
    /// Any context, NMI included: an mm_count reference.
    pub(crate) fn rprof_mm_grab(mm: *mut MmStruct);
    pub(crate) fn rprof_mm_drop(mm: *mut MmStruct);
    pub(crate) fn rprof_mm_exe_path(mm: *mut MmStruct, path: *mut bindings::path) -> bool;
    pub(crate) fn rprof_current_root(root: *mut bindings::path);
    pub(crate) fn rprof_path_info(
        path: *const bindings::path,
        root: *const bindings::path,
        buf: *mut c_char,
        len: c_int,
        dev: *mut u64,
        ino: *mut u64,
        flags: *mut u32,
    ) -> c_int;
    pub(crate) fn rprof_path_put(path: *mut bindings::path);
    // Kernel modules (`src/resolve/modules.c`, for `resolve::modules`).
    pub(crate) fn rprof_module_is_list_head(node: *const ListHead) -> bool;
    pub(crate) fn rprof_module_area(start: *mut u64, end: *mut u64);
    pub(crate) fn rprof_module_self() -> *const ListHead;
    pub(crate) fn rprof_module_next(node: *const ListHead) -> *const ListHead;
    pub(crate) fn rprof_module_text(node: *const ListHead, out: *mut ModText);
    pub(crate) fn rprof_module_notifier_register(
        ctx: *mut c_void,
        event: unsafe extern "C" fn(ctx: *mut c_void, action: kernel::ffi::c_ulong, id: *const c_void),
    ) -> c_int;
    pub(crate) fn rprof_module_notifier_unregister();

    pub(crate) fn rprof_hotplug_register(
        ctx: *mut c_void,
        up: unsafe extern "C" fn(ctx: *mut c_void, cpu: c_uint) -> c_int,
        down: unsafe extern "C" fn(ctx: *mut c_void, cpu: c_uint) -> c_int,
    ) -> c_int;
    pub(crate) fn rprof_hotplug_unregister();
    pub(crate) fn rprof_cpus_read_lock();
    pub(crate) fn rprof_cpus_read_unlock();

    pub(crate) fn rprof_nr_cpu_ids() -> c_uint;
    pub(crate) fn rprof_num_online_cpus() -> c_uint;
    pub(crate) fn rprof_cpu_online(cpu: c_uint) -> bool;
    pub(crate) fn rprof_cpu_possible(cpu: c_uint) -> bool;
    /// Only the benchmark module (`make bench`) times with it.
    #[cfg(rprof_bench)]
    pub(crate) fn rprof_local_clock() -> u64;
    pub(crate) fn rprof_clock() -> u64;
}

#[cfg(rprof_kunit)]
#[allow(improper_ctypes)]
extern "C" {
    pub(crate) fn rprof_kunit_fail(
        test: *mut bindings::kunit,
        file: *const c_char,
        line: c_uint,
        fmt_args: *const c_void,
    );
    pub(crate) fn rprof_test_start(
        f: unsafe extern "C" fn(ctx: *mut c_void, cpu: c_uint, src: c_uint),
        ctx: *mut c_void,
        period_ns: u64,
    ) -> *mut c_void;
    pub(crate) fn rprof_test_stop(t: *mut c_void);
    pub(crate) fn rprof_test_spawn(f: unsafe extern "C" fn(ctx: *mut c_void), ctx: *mut c_void) -> *mut c_void;
    pub(crate) fn rprof_test_join(th: *mut c_void);
    pub(crate) fn rprof_test_user_mm() -> *mut MmStruct;
    pub(crate) fn rprof_test_mm_users(mm: *mut MmStruct) -> i32;
    pub(crate) fn rprof_test_mm_count(mm: *mut MmStruct) -> i32;
    pub(crate) fn rprof_test_user_unmap(addr: u64, len: u64) -> c_int;
    pub(crate) fn rprof_test_user_map_file(test: *mut bindings::kunit, path: *const c_char, len: u64) -> u64;
    pub(crate) fn rprof_test_current_tgid() -> i32;
    pub(crate) fn rprof_test_nmi_chain_counts(chains: *mut u64, frames: *mut u64, ips: *mut u64) -> u32;
    pub(crate) fn rprof_test_kernel_symbol(ip: u64) -> bool;
    pub(crate) fn rprof_walk_fp(
        fp: u64,
        ips: *mut u64,
        max: u32,
        n: *mut u32,
        read: unsafe extern "C" fn(ctx: *mut c_void, addr: u64, frame: *mut u64) -> bool,
        ctx: *mut c_void,
        lo: u64,
        hi: u64,
        word: u32,
    ) -> u32;
    pub(crate) fn rprof_test_cpu_relax();
    pub(crate) fn rprof_test_user_map(test: *mut bindings::kunit, len: u64, hint: u64) -> u64;
    pub(crate) fn rprof_test_user_write(addr: u64, src: *const c_void, len: u64) -> bool;
    pub(crate) fn rprof_test_user_regs(regs: *mut c_void, ip: u64, sp: u64, bp: u64, cs: u32);
    pub(crate) fn rprof_test_pt_regs_size() -> u64;
    pub(crate) fn rprof_test_ia32_emulation() -> bool;
    pub(crate) fn rprof_test_cpu_set(cpu: c_uint, online: bool) -> c_int;
    pub(crate) fn rprof_test_kern_path(name: *const c_char, path: *mut bindings::path) -> c_int;
    pub(crate) fn rprof_test_dentry_count(path: *const bindings::path) -> c_uint;
}

/// `RPROF_TEST_CS_*`: the code segment of `rprof_test_user_regs`.
#[cfg(rprof_kunit)]
pub(crate) const TEST_CS_64: u32 = 0;
#[cfg(rprof_kunit)]
pub(crate) const TEST_CS_32: u32 = 1;
#[cfg(rprof_kunit)]
pub(crate) const TEST_CS_LDT: u32 = 2;

/// `RPROF_TEST_SRC_*`: which context a stress-test writer runs in.
#[cfg(rprof_kunit)]
pub(crate) const TEST_SRC_TASK: u32 = 0;
#[cfg(rprof_kunit)]
pub(crate) const TEST_SRC_TIMER: u32 = 1;
#[cfg(rprof_kunit)]
pub(crate) const TEST_SRC_IRQ_WORK: u32 = 2;
#[cfg(rprof_kunit)]
pub(crate) const TEST_SRC_NMI: u32 = 3;

#[cfg(rprof_bench)]
extern "C" {
    pub(crate) fn rprof_bench_ftrace(records: u64, batch: u64, size: u32, dropped: *mut u64) -> u64;
    pub(crate) fn rprof_bench_user_ip(pid: *mut u32, tid: *mut u32) -> u64;
    /// The bench module's `pin_mm` parameter, which sysfs writes at any
    /// time: an atomic for Rust (a `bool`'s layout).
    pub(crate) static rprof_bench_pin_mm: core::sync::atomic::AtomicBool;
}

#[cfg(rprof_inject_warn)]
extern "C" {
    pub(crate) fn rprof_inject_warn();
}

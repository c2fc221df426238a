// SPDX-License-Identifier: GPL-2.0

//! Kernel modules for the drain: which module's text an address is in
//! ([`lookup`]), how often modules came and went ([`generation`]), and the
//! notifier by which samples in a module are resolved before it goes.
//!
//! C header: [`include/linux/module.h`](srctree/include/linux/module.h)
//!
//! On `MODULE_STATE_GOING` the owner (the device, handed in as a
//! [`ModuleEvents`]) has the running session drain every ring while the
//! module's text and name are still there, then write a MODULE record with
//! the UNLOAD flag for each of its cookies.  New modules need no hook: the
//! drain names a module's text the first time a sample falls into it.
//! Process context.  C glue: `modules.c` (`THIS_MODULE`, the module area,
//! list steps with `rcu_dereference()`, a module's fields, the notifier).
//!
//! 6.12 exports no way to map an address to its module:
//! `__module_address()` and `__module_text_address()` are not exported, nor
//! is the module list (checked in `kernel/module/main.c` of 6.12.117).  But
//! every module is on that list, including this one, and the list is walked
//! under RCU by the kernel's own lockless readers (modules are removed with
//! `list_del_rcu()` and freed after a grace period).  Walking from our own
//! entry meets the list head once: it is the one node that is not inside a
//! module, found at load time by asking kallsyms what it is
//! ([`list_head`]).

use crate::kapi::ctx::ArcCtx;
use crate::kapi::helpers::{self, ListHead, ModText};
use crate::kapi::rcu;
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use kernel::bindings;
use kernel::ffi::c_ulong;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Bytes of a module's name as [`ModInfo`] keeps it (`MODULE_NAME_LEN`
/// on 64-bit kernels), NUL included.
pub(crate) const MODULE_NAME_LEN: usize = 56;

/// The module text region an address is in.
pub(crate) struct ModInfo {
    /// Identity while loaded: the `struct module`.
    pub(crate) id: usize,
    /// The text region containing the address.
    pub(crate) base: u64,
    pub(crate) size: u64,
    /// The region is the module's init text.
    pub(crate) init: bool,
    /// The module's name, NUL-terminated.
    pub(crate) name: [u8; MODULE_NAME_LEN],
}

/// The module list's head, or null if it was not found (module samples
/// then resolve to the kernel).  Written once, at registration, before
/// any lookup.
static HEAD: AtomicPtr<ListHead> = AtomicPtr::new(core::ptr::null_mut());

/// Module loads and unloads so far (COMING and GOING notifications).
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// Module loads and unloads so far: what kernel addresses resolve to may
/// have changed since a caller last looked (the drain's raw-chain table).
pub(crate) fn generation() -> u32 {
    GENERATION.load(Ordering::Relaxed)
}

/// The module whose text holds `ip`, or `None` for the core kernel (and
/// when the module list was not found).  Process context.
pub(crate) fn lookup(ip: u64) -> Option<ModInfo> {
    let head = HEAD.load(Ordering::Relaxed).cast_const();
    if head.is_null() {
        return None;
    }
    // Module text (and everything else execmem hands out) lies in the
    // module area; the core kernel's text does not.  Most kernel samples
    // are in the core kernel: they skip the walk.
    let (mut start, mut end) = (0, 0);
    // SAFETY: Reads two constants.
    unsafe { helpers::rprof_module_area(&mut start, &mut end) };
    if ip < start || ip >= end {
        return None;
    }
    let rcu = rcu::read_lock();
    // SAFETY: Reads THIS_MODULE's address.
    let own = unsafe { helpers::rprof_module_self() };
    // SAFETY: Our own node, under the RCU read lock.
    if let Some(info) = unsafe { module_match(&rcu, own, ip) } {
        return Some(info);
    }
    // SAFETY: A node of the list, under the RCU read lock: a module is
    // freed only after a grace period that begins once it is unlinked.
    let mut node = unsafe { helpers::rprof_module_next(own) };
    while node != own {
        if node != head {
            // SAFETY: A module's node (not the head), under the RCU read lock.
            if let Some(info) = unsafe { module_match(&rcu, node, ip) } {
                return Some(info);
            }
        }
        // SAFETY: As above.
        node = unsafe { helpers::rprof_module_next(node) };
    }
    None
}

/// The module list's head, or null if it was not found: the first node,
/// from our own entry on, that kallsyms calls `modules`.  Process context.
fn list_head() -> *const ListHead {
    let _rcu = rcu::read_lock();
    // SAFETY: Reads THIS_MODULE's address.
    let own = unsafe { helpers::rprof_module_self() };
    // SAFETY: A node of the list, under the RCU read lock (as in `lookup`).
    let mut node = unsafe { helpers::rprof_module_next(own) };
    while node != own {
        // SAFETY: A live node (as above); kallsyms' lookups do not sleep
        // (RCU and preemption-off sections only).
        if unsafe { helpers::rprof_module_is_list_head(node) } {
            return node;
        }
        // SAFETY: As above.
        node = unsafe { helpers::rprof_module_next(node) };
    }
    core::ptr::null()
}

/// The text region of the module at list node `node` that holds `ip`, if
/// any.
///
/// # Safety
///
/// `node` is a module's node on the module list (not the head), reached
/// under `_rcu`.
unsafe fn module_match(_rcu: &rcu::Guard, node: *const ListHead, ip: u64) -> Option<ModInfo> {
    let mut text = ModText {
        id: core::ptr::null(),
        name: core::ptr::null(),
        base: [0; 2],
        size: [0; 2],
        state: 0,
        reserved: 0,
    };
    // SAFETY: A module's node under the RCU read lock (the caller's
    // contract); `text` is writable.
    unsafe { helpers::rprof_module_text(node, &mut text) };
    // UNFORMED modules are skipped, as __module_address() does: their
    // memory is not set up yet.  GOING modules are not: the GOING notifier
    // (`module_event`) drains the rings to resolve the module's last
    // samples, and the state is GOING by then.  No sample lands in a GOING
    // module after that drain: delete_module() ran its exit function
    // before announcing GOING, and a failed init has returned, so none of
    // its code runs between our notifier and the module being freed.
    if text.state == bindings::module_state_MODULE_STATE_UNFORMED as u32 {
        return None;
    }
    // Text, then init text.
    for i in 0..2 {
        let (base, size) = (text.base[i], text.size[i]);
        if size != 0 && ip >= base && ip < base.wrapping_add(size) {
            let mut name = [0u8; MODULE_NAME_LEN];
            for (k, b) in name.iter_mut().take(MODULE_NAME_LEN - 1).enumerate() {
                // SAFETY: The module's name is NUL-terminated within
                // `MODULE_NAME_LEN` bytes, and the module stays under the
                // RCU read lock; the loop stops at the NUL.
                let c = unsafe { *text.name.add(k) } as u8;
                if c == 0 {
                    break;
                }
                *b = c;
            }
            return Some(ModInfo { id: text.id as usize, base, size, init: i == 1, name });
        }
    }
    None
}

/// What the owner of a [`Registration`] does when a module goes.
pub(crate) trait ModuleEvents: Send + Sync {
    /// `MODULE_STATE_GOING` of the module `id` (its `struct module`, as
    /// [`ModInfo::id`] names it), while its text and name are still
    /// there.  Process context.
    fn module_going(&self, id: usize);
}

/// The registered notifier.
///
/// # Invariants
///
/// Registered with `ctx` and this type's callback until `Drop`.
pub(crate) struct Registration<T: ModuleEvents> {
    _ctx: ArcCtx<T>,
}

impl<T: ModuleEvents> Registration<T> {
    /// Finds the module list (for [`lookup`]) and registers the notifier.
    /// Module init, process context.
    pub(crate) fn register(owner: Arc<T>) -> Result<Self> {
        let head = list_head();
        if head.is_null() {
            pr_warn!("module list not found; module samples resolve to the kernel\n");
        }
        HEAD.store(head.cast_mut(), Ordering::Relaxed);
        let ctx = ArcCtx::new(owner);
        // SAFETY: `ctx` stays alive until `Drop` unregisters, and the
        // callback takes it as an `ArcCtx<T>`.
        let ret = unsafe { helpers::rprof_module_notifier_register(ctx.as_ptr(), module_event::<T>) };
        if ret < 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered with `ctx`.
        Ok(Self { _ctx: ctx })
    }
}

impl<T: ModuleEvents> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); after this no callback runs,
        // and `_ctx` is dropped after this body.
        unsafe { helpers::rprof_module_notifier_unregister() };
    }
}

/// A module notification: `action` of the module `id`.  COMING and GOING
/// count in [`generation`]; GOING calls the owner.  Called by the C glue,
/// process context.
///
/// # Safety
///
/// `ctx` is the context of the live [`Registration<T>`].
unsafe extern "C" fn module_event<T: ModuleEvents>(ctx: *mut c_void, action: c_ulong, id: *const c_void) {
    let coming = action == bindings::module_state_MODULE_STATE_COMING as c_ulong;
    let going = action == bindings::module_state_MODULE_STATE_GOING as c_ulong;
    if coming || going {
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }
    if going {
        // SAFETY: Alive while registered (the caller's contract).
        let owner = unsafe { ArcCtx::<T>::borrow(ctx) };
        owner.module_going(id as usize);
    }
}

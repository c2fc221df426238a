// SPDX-License-Identifier: GPL-2.0

//! The locked-memory charge of a session's rings, event buffer and unwind
//! tables.
//!
//! A user who may open `/dev/rprof` can make the module allocate memory
//! that no reclaim can take back, and a replaced session's buffer lives on
//! for as long as a process maps it.  So every such page is charged as
//! `perf_mmap()` charges perf's buffers: first to the user's `perf_mlock`
//! allowance (the module parameter `mlock_kb` per online CPU, perf's
//! `perf_event_mlock_kb` in spirit, and the counter perf's own buffers
//! use), the rest to the owner's `mm->pinned_vm` against `RLIMIT_MEMLOCK`,
//! refused with `EPERM` past it unless the caller has `CAP_IPC_LOCK`.  The
//! pages themselves are also charged to the caller's memory cgroup
//! (`GFP_KERNEL_ACCOUNT`).
//!
//! One [`Charge`] is made for every byte an allocation will take, before
//! anything is allocated.  It is a counted reference: the session's rings,
//! the event buffer and every mapping of the buffer (a raw reference from
//! [`Charge::into_raw_ref`], copied by [`rprof_charge_get`] and given back
//! by [`rprof_charge_put`], which `evbuf.c`'s VMA callbacks call) each
//! hold one, and the last one gives the pages back.  C glue: `memlock.c`
//! (the kernel calls).  Process context only.

use crate::kapi::helpers::{self, MmStruct, UserStruct};
use core::ffi::c_void;
use core::ptr::NonNull;
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, UniqueArc};

/// How many of `pages` go past the allowance, to `pinned_vm`, when `used`
/// pages of an allowance of `limit` are taken already: `perf_mmap()`'s
/// rule, in which what others put past a smaller limit counts as the
/// limit (a lowered `mlock_kb` does not make newcomers pay for the past).
pub(crate) fn past_allowance(pages: usize, used: usize, limit: usize) -> usize {
    // What is left of the allowance; the rest of `pages` goes past it.
    pages.saturating_sub(limit - used.min(limit))
}

/// What one charge took, given back when the last reference goes.
///
/// # Invariants
///
/// `user` holds a `get_uid()` reference and `user_pages` of its
/// `perf_mlock`; `mm`, if not null, holds an `mm_count` reference and
/// `mm_pages` of its `pinned_vm`.
struct Held {
    user: NonNull<UserStruct>,
    user_pages: usize,
    mm: *mut MmStruct,
    mm_pages: usize,
}

// SAFETY: What `Held` points at is reference-counted kernel objects whose
// counters are atomics; any thread may give them back.
unsafe impl Send for Held {}
// SAFETY: `&Held` only reads its fields.
unsafe impl Sync for Held {}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: Our pages and reference on `user` (type invariant), given
        // back once; the page count fits a long (it was added as one).
        unsafe {
            helpers::rprof_memlock_user_add(self.user.as_ptr(), (self.user_pages as i64).wrapping_neg() as _);
            helpers::rprof_memlock_user_put(self.user.as_ptr());
        }
        if !self.mm.is_null() {
            // SAFETY: Our pages and mm_count reference (type invariant),
            // given back once, in process context (the last reference is
            // dropped by a session, an event buffer or a VMA's `close`).
            unsafe {
                helpers::rprof_memlock_mm_add(self.mm, (self.mm_pages as i64).wrapping_neg());
                helpers::rprof_mm_drop(self.mm);
            }
        }
    }
}

/// One reference on a charge of `bytes`.
pub(crate) struct Charge {
    held: Arc<Held>,
    bytes: u64,
}

impl Charge {
    /// Charges `bytes` (rounded up to pages) to the caller: `EPERM` past
    /// its locked-memory limits (without `CAP_IPC_LOCK`), `ENOMEM`.
    pub(crate) fn new(bytes: u64) -> Result<Self> {
        let page = bindings::PAGE_SIZE as u64;
        let pages = usize::try_from(bytes.div_ceil(page)).map_err(|_| ENOMEM)?;
        // The bytes charged, whole pages; both fit the signed counters.
        let charged = (pages as u64).checked_mul(page).ok_or(ENOMEM)?;
        if pages > i64::MAX as usize {
            return Err(ENOMEM);
        }
        // The object first, so that failing for memory changes no counter
        // (and says ENOMEM, not EPERM).
        let slot = UniqueArc::<Held>::new_uninit(GFP_KERNEL_ACCOUNT)?;
        // SAFETY: Reads a module parameter.
        let allowance_kb = unsafe { helpers::rprof_param_mlock_kb() } as usize;
        // SAFETY: Reads the online CPUs' count.
        let cpus = unsafe { helpers::rprof_num_online_cpus() } as usize;
        let limit = (allowance_kb >> (bindings::PAGE_SHIFT - 10)).saturating_mul(cpus);
        // SAFETY: Process context: current's credentials.  `get_uid()`
        // never returns null; the check only spares an `unwrap`.
        let user = NonNull::new(unsafe { helpers::rprof_memlock_user() }).ok_or(EINVAL)?;
        // SAFETY: `user` is live (our reference).  A negative count (a
        // counter some other code broke) reads as the whole allowance in
        // use, as the C it replaces read it (as a huge unsigned).
        let used = usize::try_from(unsafe { helpers::rprof_memlock_user_pages(user.as_ptr()) }).unwrap_or(limit);
        let mm_pages = past_allowance(pages, used, limit);
        let mut mm = core::ptr::null_mut();
        if mm_pages > 0 {
            // SAFETY: Process context: current's mm, grabbed, or null.
            mm = unsafe { helpers::rprof_memlock_mm() };
            // SAFETY: Process context; `mm` is live if not null (grabbed).
            // A negative count (broken elsewhere) is over, as in the C it
            // replaces; the sum cannot overflow (both below 2^63).
            let over = mm.is_null()
                || u64::try_from(unsafe { helpers::rprof_memlock_mm_pages(mm) })
                    .map_or(true, |pinned| pinned + mm_pages as u64 > unsafe { helpers::rprof_memlock_rlimit_pages() } as u64);
            // SAFETY: Process context: current's capabilities.
            if over && !unsafe { helpers::rprof_memlock_capable() } {
                // SAFETY: The references just taken, given back once.
                unsafe {
                    if !mm.is_null() {
                        helpers::rprof_mm_drop(mm);
                    }
                    helpers::rprof_memlock_user_put(user.as_ptr());
                }
                // A user may retry in a loop: rate-limited.
                // SAFETY: printk_ratelimit() may be called anywhere.
                if unsafe { helpers::rprof_printk_ratelimit() } {
                    pr_info!(
                        "{} KiB of buffers or unwind tables pass the caller's locked-memory limit (RLIMIT_MEMLOCK beyond mlock_kb={} per CPU; CAP_IPC_LOCK lifts it)\n",
                        charged / 1024,
                        allowance_kb
                    );
                }
                return Err(EPERM);
            }
        }
        // Without an mm (a kernel thread, which passed only by
        // `CAP_IPC_LOCK`) the part past the allowance is charged nowhere.
        let user_pages = pages - mm_pages;
        // SAFETY: `user` and `mm` are live (our references); the counts fit
        // a long (`pages` was checked above).
        unsafe {
            helpers::rprof_memlock_user_add(user.as_ptr(), user_pages as _);
            if !mm.is_null() {
                helpers::rprof_memlock_mm_add(mm, mm_pages as i64);
            }
        }
        // INVARIANT: the references and pages just taken.
        let held = slot.write(Held { user, user_pages, mm, mm_pages }).into();
        Ok(Self { held, bytes: charged })
    }

    /// The bytes charged (whole pages).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// A new reference on the charge object, as a raw pointer, for a
    /// mapping to own (`rprof_vma_hold()`), given back through
    /// [`rprof_charge_put`] (or leaked if never handed over).
    pub(crate) fn into_raw_ref(&self) -> *mut c_void {
        Arc::into_raw(self.held.clone()).cast_mut().cast()
    }
}

impl Clone for Charge {
    fn clone(&self) -> Self {
        Self { held: self.held.clone(), bytes: self.bytes }
    }
}

/// One more reference on the charge object `charge`, for a copy of a
/// mapping of the event buffer (`evbuf.c`: the VMA's `open`).
///
/// # Safety
///
/// `charge` came from [`Charge::into_raw_ref`] and the caller holds that
/// reference (the mapping copied from) for the whole call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_charge_get(charge: *mut c_void) {
    // SAFETY: `charge` came from `Arc::into_raw` and its reference
    // outlives the borrow (the caller's contract).
    let held = unsafe { ArcBorrow::from_raw(charge.cast_const().cast::<Held>()) };
    // The new reference, the copy's own.
    let _ = Arc::into_raw(Arc::from(held));
}

/// Gives back one reference on `charge` (a mapping's, as it goes).
///
/// # Safety
///
/// The caller owns a reference on `charge` that came from
/// [`Charge::into_raw_ref`] or [`rprof_charge_get`], given back once.
/// Process context (the last reference frees).
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_charge_put(charge: *mut c_void) {
    // SAFETY: The caller's reference, as `Arc::into_raw` made it.
    drop(unsafe { Arc::from_raw(charge.cast_const().cast::<Held>()) });
}

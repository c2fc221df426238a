// SPDX-License-Identifier: GPL-2.0

//! A small misc device abstraction for Linux 6.12, which has none in Rust.
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h)
//!
//! [`Registration`] owns the `struct miscdevice` (allocated by the C glue,
//! since `kernel::bindings` lacks it) and the `file_operations` table built
//! from a [`FileOps`] implementation.  Every callback turns `private_data`
//! back into the typed per-file object in exactly one place
//! ([`file_state`]).
//!
//! Lifetimes: `misc_open()` calls our `open` under `misc_mtx`, which
//! `misc_deregister()` also takes, so the device context is alive for every
//! `open`.  Each open file holds a reference on the module (`fops.owner`),
//! so the module, and with it the [`Registration`], outlives every open
//! file; per-file objects additionally hold an [`Arc`] of the context.

use crate::kapi::ctx::ArcCtx;
use crate::kapi::helpers;
use kernel::ffi::{c_int, c_long, c_uint, c_ulong, c_void};
use core::marker::PhantomData;
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceWriter;

/// A borrowed `struct file` inside a file operation.
///
/// # Invariants
///
/// `ptr` points to a `struct file` that is valid for the duration of the
/// callback that created this object.
pub(crate) struct File<'a> {
    ptr: *mut bindings::file,
    _lifetime: PhantomData<&'a bindings::file>,
}

impl File<'_> {
    /// Whether the file was opened with `O_NONBLOCK`.
    pub(crate) fn nonblock(&self) -> bool {
        // SAFETY: `ptr` is a valid file by the type invariant.
        let flags = unsafe { helpers::rprof_file_flags(self.ptr) };
        flags & bindings::O_NONBLOCK != 0
    }

    /// An identity of this open file, stable while it is open.
    pub(crate) fn id(&self) -> usize {
        self.ptr as usize
    }

    /// The raw pointer, for the C glue of `poll()` and `mmap()`.
    pub(crate) fn as_ptr(&self) -> *mut bindings::file {
        self.ptr
    }
}

/// The operations of a misc device.  One object of `Self` exists per open
/// file and lives in `file->private_data` from `open` to `release`.
pub(crate) trait FileOps: Sized + Send + Sync {
    /// The device-wide context shared by all open files.
    type Context: Send + Sync;

    /// Opens a file.  An error is returned to `open(2)`.
    fn open(ctx: &Arc<Self::Context>, file: &File<'_>) -> Result<Self>;

    /// Called when the last reference to the file goes away, just before
    /// `self` is dropped.
    fn release(&self, _file: &File<'_>) {}

    /// `read(2)`: fills `out`, returns the bytes written.
    fn read(&self, _file: &File<'_>, _out: UserSliceWriter) -> Result<usize> {
        Err(EINVAL)
    }

    /// `poll(2)`: registers on wait queues and returns the ready mask.
    fn poll(&self, _file: &File<'_>, _pt: *mut bindings::poll_table_struct) -> u32 {
        0
    }

    /// `ioctl(2)`: an unknown command must return `ENOTTY`.
    fn ioctl(&self, _file: &File<'_>, _cmd: u32, _arg: usize) -> Result<isize> {
        Err(ENOTTY)
    }

    /// `mmap(2)`.
    fn mmap(&self, _file: &File<'_>, _vma: *mut bindings::vm_area_struct) -> Result {
        Err(ENODEV)
    }
}

/// A registered misc device.
///
/// # Invariants
///
/// `misc` is a registered `struct rprof_misc` whose `fops` is `*fops` and
/// whose context pointer is `ctx`; both stay in place until `Drop` has
/// deregistered the device (fields drop after `drop()`).
pub(crate) struct Registration<T: FileOps> {
    misc: *mut helpers::RprofMisc,
    _fops: Pin<KBox<bindings::file_operations>>,
    _ctx: ArcCtx<T::Context>,
}

// SAFETY: The registration is only created and dropped; the raw pointer is
// never used concurrently from Rust, and the C side serialises with
// `misc_mtx`.
unsafe impl<T: FileOps> Send for Registration<T> {}
// SAFETY: `&Registration` exposes only the `Sync` context.
unsafe impl<T: FileOps> Sync for Registration<T> {}

impl<T: FileOps> Registration<T> {
    /// Registers `/dev/<name>` with mode 0600, owned by `module`.
    pub(crate) fn register(
        name: &'static CStr,
        module: &'static ThisModule,
        ctx: Arc<T::Context>,
    ) -> Result<Self> {
        let mut fops = Self::fops_table();
        fops.owner = module.as_ptr();
        let fops = KBox::pin(fops, GFP_KERNEL)?;
        let ctx = ArcCtx::new(ctx);
        // SAFETY: `name` is a static C string; `fops` and the context are
        // kept alive and in place by the returned object until `Drop`.
        let misc = unsafe { helpers::rprof_misc_register(name.as_char_ptr(), &*fops, ctx.as_ptr()) };
        // SAFETY: `rprof_ptr_err` only inspects the pointer value.
        let err = unsafe { helpers::rprof_ptr_err(misc as *const c_void) };
        if err != 0 {
            return Err(Error::from_errno(err as c_int));
        }
        // INVARIANT: registered with `fops` and `ctx` as above.
        Ok(Self { misc, _fops: fops, _ctx: ctx })
    }

    fn fops_table() -> bindings::file_operations {
        bindings::file_operations {
            open: Some(open_callback::<T>),
            release: Some(release_callback::<T>),
            read: Some(read_callback::<T>),
            poll: Some(poll_callback::<T>),
            unlocked_ioctl: Some(ioctl_callback::<T>),
            // SAFETY: Returns a kernel function or null; no side effects.
            compat_ioctl: unsafe { helpers::rprof_compat_ioctl() },
            mmap: Some(mmap_callback::<T>),
            llseek: Some(bindings::noop_llseek),
            // SAFETY: All-zero is a valid `file_operations` (no callbacks).
            ..unsafe { core::mem::zeroed() }
        }
    }
}

impl<T: FileOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: `misc` is registered by the type invariant; after this no
        // new file can be opened, and open files pin the module.
        unsafe { helpers::rprof_misc_deregister(self.misc) };
        // `_ctx` is dropped after this: the device is gone, so `open` can no
        // longer borrow it.
    }
}

/// Returns the per-file object of `file`.
///
/// # Safety
///
/// `file` must be a file of a [`Registration<T>`] whose `open` succeeded and
/// whose `release` has not run yet.
unsafe fn file_state<'a, T: FileOps>(file: *mut bindings::file) -> &'a T {
    // SAFETY: `open_callback` stored a `KBox<T>` leaked with `into_raw`,
    // which lives until `release_callback`; the caller guarantees we are in
    // between.
    unsafe { &*(helpers::rprof_file_private(file) as *const T) }
}

fn file_ref<'a>(file: *mut bindings::file) -> File<'a> {
    // INVARIANT: callers pass the file of the callback they run in.
    File { ptr: file, _lifetime: PhantomData }
}

unsafe extern "C" fn open_callback<T: FileOps>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `misc_open()` put our miscdevice into `private_data`, and the
    // registration (hence the context) is alive while `misc_mtx` is held.
    let ctx_ptr = unsafe { helpers::rprof_misc_ctx(file) } as *const T::Context;
    // SAFETY: `ctx_ptr` is the registration's `ArcCtx`, whose reference is
    // held until after `misc_deregister()`.
    let ctx = unsafe { kernel::sync::ArcBorrow::from_raw(ctx_ptr) };
    let ctx: Arc<T::Context> = ctx.into();
    let f = file_ref(file);
    match T::open(&ctx, &f).and_then(|state| Ok(KBox::new(state, GFP_KERNEL)?)) {
        Ok(state) => {
            // SAFETY: `file` is valid; the box is reclaimed in `release`.
            unsafe { helpers::rprof_file_set_private(file, KBox::into_raw(state) as *mut c_void) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

unsafe extern "C" fn release_callback<T: FileOps>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `release` runs once, after a successful `open`, with no other
    // file operation of this file running or to come.
    let state = unsafe { KBox::from_raw(helpers::rprof_file_private(file) as *mut T) };
    state.release(&file_ref(file));
    drop(state);
    0
}

unsafe extern "C" fn read_callback<T: FileOps>(
    file: *mut bindings::file,
    buf: *mut kernel::ffi::c_char,
    len: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: We are inside a file operation of an open file.
    let state = unsafe { file_state::<T>(file) };
    let out = crate::kapi::compat::user_slice(buf as usize, len).writer();
    match state.read(&file_ref(file), out) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

unsafe extern "C" fn poll_callback<T: FileOps>(
    file: *mut bindings::file,
    pt: *mut bindings::poll_table_struct,
) -> c_uint {
    // SAFETY: We are inside a file operation of an open file.
    let state = unsafe { file_state::<T>(file) };
    state.poll(&file_ref(file), pt)
}

unsafe extern "C" fn ioctl_callback<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: We are inside a file operation of an open file.
    let state = unsafe { file_state::<T>(file) };
    match state.ioctl(&file_ref(file), cmd, arg as usize) {
        Ok(v) => v as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

unsafe extern "C" fn mmap_callback<T: FileOps>(
    file: *mut bindings::file,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: We are inside a file operation of an open file.
    let state = unsafe { file_state::<T>(file) };
    match state.mmap(&file_ref(file), vma) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

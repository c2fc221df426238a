// SPDX-License-Identifier: GPL-2.0

//! Where the kernel crate's API differs between the kernels rprof builds
//! for, one name for both: Linux 6.12 (`cfg(rprof_kapi_6_12)`, set by
//! `Kbuild` from the target's version) and the 7.x kernels distributions
//! ship (Debian sid's 7.2).  Everything else in the module is written once.
//!
//! | what | 6.12 | 7.x |
//! |---|---|---|
//! | plain-data marker traits | `kernel::types::{FromBytes, AsBytes}` | `kernel::transmute::{FromBytes, AsBytes}` |
//! | `module!`'s author key | `author: "..."` | `authors: ["..."]` |
//! | user pointers | `UserPtr = usize` | `UserPtr` a type of its own |
//! | emptying a `Vec` | `set_len(0)` (no `clear`) | `clear()` (no `set_len`) |
//!
//! Pinned initialisers: from 7.x, `pin_init!` binds each field it has
//! initialised to a local of the field's name, so the values fed to later
//! fields must not be locals named like earlier fields, and no field may
//! be called `slot`, the name of the macro's own pointer (`device/fops.rs`).

/// `module!` with the key for the author that the target's macro takes.
#[cfg(rprof_kapi_6_12)]
macro_rules! module_with_author {
    (type: $t:ident, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! {
            type: $t,
            name: $n,
            author: $a,
            description: $d,
            license: $l,
        }
    };
}

/// `module!` with the key for the author that the target's macro takes.
#[cfg(not(rprof_kapi_6_12))]
macro_rules! module_with_author {
    (type: $t:ident, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! {
            type: $t,
            name: $n,
            authors: [$a],
            description: $d,
            license: $l,
        }
    };
}
pub(crate) use module_with_author;

#[cfg(rprof_kapi_6_12)]
pub(crate) use kernel::types::{AsBytes, FromBytes};

#[cfg(not(rprof_kapi_6_12))]
pub(crate) use kernel::transmute::{AsBytes, FromBytes};

use kernel::alloc::{Allocator, Vec};
use kernel::uaccess::UserSlice;

/// The user memory of `len` bytes at user address `addr`.
#[inline]
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(rprof_kapi_6_12)]
    let ptr = addr;
    #[cfg(not(rprof_kapi_6_12))]
    let ptr = kernel::uaccess::UserPtr::from_addr(addr);
    UserSlice::new(ptr, len)
}

/// Empties `v`, keeping its capacity.
#[inline]
pub(crate) fn clear_vec<T: Copy, A: Allocator>(v: &mut Vec<T, A>) {
    #[cfg(rprof_kapi_6_12)]
    // SAFETY: 0 is within the capacity, and `T: Copy` has no destructor
    // that dropping the elements would have to run.
    unsafe {
        v.set_len(0)
    };
    #[cfg(not(rprof_kapi_6_12))]
    v.clear();
}

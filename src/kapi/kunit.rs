// SPDX-License-Identifier: GPL-2.0

//! Declaring KUnit suites in a Rust module on Linux 6.12.
//!
//! C header: [`include/kunit/test.h`](srctree/include/kunit/test.h)
//!
//! 6.12 has no `#[kunit_tests]` (it came in 6.15).  What KUnit needs from a
//! module is simple, though: a `struct kunit_suite` whose `test_cases`
//! points to a zero-terminated array of `struct kunit_case`, and a pointer to
//! the suite in the `.kunit_test_suites` section, which the module loader
//! hands to KUnit so that the suite runs at insmod.  [`kunit_suite!`] builds
//! all three from a list of plain functions `fn(&mut Test)`.
//!
//! # Examples
//!
//! ```ignore
//! fn adds(t: &mut Test) {
//!     kassert_eq!(t, 1 + 1, 2);
//! }
//! kunit_suite!(MATH, "rprof-math", [adds]);
//! ```
//!
//! A failed [`kassert!`] or [`kassert_eq!`] records the failure with the Rust
//! file and line (KUnit prints it in the KTAP diagnostics) and returns from
//! the test function.
//!
//! This module exists only in test builds (`cfg(rprof_kunit)`).

use crate::kapi::helpers;
use core::ffi::c_void;
use core::fmt;
use kernel::bindings;

/// The running KUnit case.
///
/// # Invariants
///
/// `ptr` is the `struct kunit` of the case being run, valid for as long as
/// the test function runs.
pub(crate) struct Test {
    ptr: *mut bindings::kunit,
}

impl Test {
    /// Wraps the `struct kunit` KUnit passed to a case.
    ///
    /// # Safety
    ///
    /// `ptr` must be the valid `struct kunit` of the running case.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::kunit) -> Self {
        // INVARIANT: the caller guarantees it.
        Self { ptr }
    }

    /// The running case's `struct kunit`, for KUnit's resource helpers
    /// (valid while the case runs: type invariant).
    pub(crate) fn raw(&self) -> *mut bindings::kunit {
        self.ptr
    }

    /// Marks the case failed with a message naming `file:line`.
    pub(crate) fn fail(&mut self, file: &'static core::ffi::CStr, line: u32, args: fmt::Arguments<'_>) {
        // SAFETY: `ptr` is the running case (type invariant); `file` is a C
        // string; `%pA` in the C helper formats the `fmt::Arguments` we pass.
        unsafe {
            helpers::rprof_kunit_fail(
                self.ptr,
                file.as_ptr().cast(),
                line,
                &args as *const fmt::Arguments<'_> as *const c_void,
            )
        };
    }
}

/// Fails the case and returns from it unless `cond` holds.
macro_rules! kassert {
    ($t:expr, $cond:expr $(,)?) => {
        if !$cond {
            $t.fail(
                $crate::kapi::kunit::file_cstr!(),
                core::line!(),
                format_args!("expected {} to be true", core::stringify!($cond)),
            );
            return;
        }
    };
    ($t:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $t.fail(
                $crate::kapi::kunit::file_cstr!(),
                core::line!(),
                format_args!("expected {}: {}", core::stringify!($cond), format_args!($($fmt)+)),
            );
            return;
        }
    };
}

/// Fails the case and returns from it unless `left == right`, printing both.
macro_rules! kassert_eq {
    ($t:expr, $left:expr, $right:expr $(,)?) => {
        match (&$left, &$right) {
            (l, r) => {
                if *l != *r {
                    $t.fail(
                        $crate::kapi::kunit::file_cstr!(),
                        core::line!(),
                        format_args!(
                            "expected {} == {}, got {:?} != {:?}",
                            core::stringify!($left),
                            core::stringify!($right),
                            l,
                            r
                        ),
                    );
                    return;
                }
            }
        }
    };
}

/// The current source file as a `&'static CStr`.
macro_rules! file_cstr {
    () => {
        match core::ffi::CStr::from_bytes_with_nul(core::concat!(core::file!(), "\0").as_bytes()) {
            Ok(s) => s,
            Err(_) => c"?",
        }
    };
}

pub(crate) use {file_cstr, kassert, kassert_eq};

/// Copies `name` into a `kunit_suite.name` array at compile time.
pub(crate) const fn suite_name(name: &str) -> [kernel::ffi::c_char; 256] {
    let bytes = name.as_bytes();
    assert!(bytes.len() < 256, "KUnit suite names have at most 255 bytes");
    let mut out = [0 as kernel::ffi::c_char; 256];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i] as kernel::ffi::c_char;
        i += 1;
    }
    out
}

/// A pointer to a suite, as the `.kunit_test_suites` section holds them.
#[repr(transparent)]
pub(crate) struct SuitePtr(pub(crate) *mut bindings::kunit_suite);

// SAFETY: The pointer is only read, by the module loader and KUnit, which
// serialise their use of the suite.
unsafe impl Sync for SuitePtr {}

/// Declares a KUnit suite `$name` running the functions in the list, in
/// order.  `$id` names the generated statics.
macro_rules! kunit_suite {
    ($id:ident, $name:literal, [$($case:ident),+ $(,)?]) => {
        #[allow(non_snake_case)]
        mod $id {
            use kernel::bindings;

            $(
                unsafe extern "C" fn $case(test: *mut bindings::kunit) {
                    // SAFETY: KUnit passes the running case's `struct kunit`.
                    let mut t = unsafe { $crate::kapi::kunit::Test::from_raw(test) };
                    super::$case(&mut t);
                }
            )+

            const fn case(
                run: unsafe extern "C" fn(*mut bindings::kunit),
                name: &'static core::ffi::CStr,
            ) -> bindings::kunit_case {
                bindings::kunit_case {
                    run_case: Some(run),
                    name: name.as_ptr().cast(),
                    // SAFETY: All-zero is a valid tail for a case (KUnit
                    // fills status and log itself).
                    ..unsafe { core::mem::zeroed() }
                }
            }

            // KUnit writes each case's status and log, hence `static mut`;
            // only KUnit touches it, through the suite pointer.
            static mut CASES: [bindings::kunit_case; [$(stringify!($case)),+].len() + 1] = [
                $(case($case, match core::ffi::CStr::from_bytes_with_nul(
                    core::concat!(stringify!($case), "\0").as_bytes()) {
                    Ok(s) => s,
                    Err(_) => c"?",
                }),)+
                // SAFETY: The all-zero case terminates the array.
                unsafe { core::mem::zeroed() },
            ];

            static mut SUITE: bindings::kunit_suite = bindings::kunit_suite {
                name: $crate::kapi::kunit::suite_name($name),
                test_cases: &raw mut CASES as *mut bindings::kunit_case,
                // SAFETY: All-zero is a valid rest of a suite (no init or
                // exit hooks; KUnit fills the status fields).
                ..unsafe { core::mem::zeroed() }
            };

            #[used]
            #[link_section = ".kunit_test_suites"]
            static SUITE_PTR: $crate::kapi::kunit::SuitePtr = $crate::kapi::kunit::SuitePtr(&raw mut SUITE);
        }
    };
}

pub(crate) use kunit_suite;

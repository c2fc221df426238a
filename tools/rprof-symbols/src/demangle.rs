//! Symbol names as people read them: Rust (legacy and v0 mangling) and
//! C++ (the Itanium ABI's `_Z` names), demangled.
//!
//! - Rust v0, `_R...` (the kernel's own Rust code is built with it):
//!   `_RNvMNtCs1234_10rprof_main4ringNtB2_4Ring4push` reads
//!   `<rprof_main::ring::Ring>::push`, without crate disambiguators.
//! - Rust legacy, `_ZN...17h<16 hex digits>E`: the path without its hash.
//! - C++, other `_Z...` names: with parameter types, as `perf report`
//!   shows them (`ns::Vec<int>::push(int const&)`).
//!
//! Anything else (C names, `foo.isra.0`, names that do not demangle) is
//! shown as it is.  Names longer than [`MAX_MANGLED`] are not demangled:
//! a file's symbol table is outside input.

use std::borrow::Cow;

/// The longest name that is demangled.
pub const MAX_MANGLED: usize = 4096;

/// Whether `name` looks like a legacy Rust name: `_ZN`, path components,
/// a `17h` + 16 hex digit hash component, `E`, and maybe a `.suffix`.
/// (A path component may hold `..` itself, as `_$LT$a..B$u20$as$u20$..`:
/// the suffix is what follows the hash's `E`, not the first dot.)
fn is_rust_legacy(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_ZN") else {
        return false;
    };
    let b = rest.as_bytes();
    rest.match_indices("17h").any(|(i, _)| {
        b.len() >= i + 20
            && b[i + 3..i + 19].iter().all(u8::is_ascii_hexdigit)
            && b[i + 19] == b'E'
            && (b.len() == i + 20 || b[i + 20] == b'.')
    })
}

/// `name` demangled, or `name` itself if it is not a mangled Rust or C++
/// name.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if name.len() > MAX_MANGLED {
        return Cow::Borrowed(name);
    }
    if name.starts_with("_R") || is_rust_legacy(name) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            // `{:#}`: without the hash (legacy) or the crate
            // disambiguators (v0).
            return Cow::Owned(format!("{d:#}"));
        }
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle() {
                return Cow::Owned(d);
            }
        }
    }
    Cow::Borrowed(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_v0() {
        assert_eq!(
            demangle("_RNvMNtCs1234_10rprof_main4ringNtB2_4Ring4push"),
            "<rprof_main::ring::Ring>::push"
        );
        assert_eq!(
            demangle("_RNvNtCs2DxGA1hvVcO_4core5ascii14escape_default"),
            "core::ascii::escape_default"
        );
        // A generic with an LLVM suffix.
        assert_eq!(
            demangle("_RINvNtCs2DxGA1hvVcO_4core5slice20copy_from_slice_implhEB4_.llvm.123"),
            "core::slice::copy_from_slice_impl::<u8>"
        );
    }

    /// A trait method's legacy name: its first component holds `..`.
    #[test]
    fn rust_legacy_trait_impl() {
        assert_eq!(
            demangle("_ZN45_$LT$rustw..Square$u20$as$u20$rustw..Work$GT$4work17h14904c203c3d73d2E"),
            "<rustw::Square as rustw::Work>::work"
        );
        assert_eq!(
            demangle("_ZN45_$LT$rustw..Square$u20$as$u20$rustw..Work$GT$4work17h14904c203c3d73d2E.llvm.42"),
            "<rustw::Square as rustw::Work>::work"
        );
    }

    #[test]
    fn rust_legacy() {
        assert_eq!(
            demangle("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE"),
            "core::fmt::Formatter::pad"
        );
        assert_eq!(
            demangle("_ZN3std2rt10lang_start17h0123456789abcdefE.llvm.42"),
            "std::rt::lang_start"
        );
    }

    #[test]
    fn cpp() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
        assert_eq!(demangle("_Z4workii"), "work(int, int)");
        // A legacy-looking name without a hash is C++.
        assert_eq!(demangle("_ZN3foo3barE"), "foo::bar");
    }

    #[test]
    fn everything_else_is_left_alone() {
        for name in [
            "main_hot",
            "cpu_idle_poll.isra.0",
            "_Z",
            "_R",
            "_ZN",
            "_Rfoo",
            "__x64_sys_getpid",
            "_ZN3foo17hzzzzzzzzzzzzzzzzE",
        ] {
            let d = demangle(name);
            assert!(
                matches!(d, Cow::Borrowed(_)) || !d.is_empty(),
                "{name}: {d}"
            );
        }
        assert!(matches!(demangle("main_hot"), Cow::Borrowed("main_hot")));
        let long = format!("_Z{}", "N3foo".repeat(MAX_MANGLED));
        assert!(matches!(demangle(&long), Cow::Borrowed(_)));
    }
}

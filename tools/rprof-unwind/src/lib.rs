//! rprof's unwind-table compiler (issue 31): an ELF file's CFI as the rows the module walks.
//!
//! Most binaries are built without frame pointers; the module's sampling
//! handler finds callers there through a compiled table instead, one per
//! file, uploaded from userspace.  This crate makes those tables:
//!
//! - [`compile`]: `.eh_frame` (and `.debug_frame`) of an x86-64 ELF file,
//!   evaluated with gimli, into rows keyed by *file offset*, with the
//!   compile's [`Stats`].
//! - [`table`]: the table, its file format (`struct
//!   rprof_unwind_table_header` and `struct rprof_unwind_row` of
//!   `include/uapi/linux/rprof.h`), [`validate`] (the module's checks at
//!   upload) and the lookup [`UnwindTable::row_for`].
//! - [`rules`]: what one CFI row becomes (CFA from RSP, RBP or the PLT's
//!   expression; RBP saved, kept or undefined; frame pointers or stop for
//!   the rest).
//! - [`cache`]: compiled tables on disk by build-id.
//! - [`deps`]: the files a program loads at start (interpreter and
//!   DT_NEEDED closure), whose tables go up before it runs.
//!
//! Nothing here panics on a malformed file: a file that cannot be read is
//! an error value; CFI that does not parse is counted and left out.

#![forbid(unsafe_code)]

pub mod cache;
pub mod compile;
pub mod deps;
pub mod rules;
pub mod table;

pub use compile::{compile, compile_file, CompileError, Compiled, Stats};
pub use table::{validate, FormatError, Row, RowDisplay, UnwindTable};

/// xorshift64*: the deterministic stream of the hostile-input tests.
#[cfg(test)]
pub(crate) mod testrng {
    pub(crate) struct XorShift(pub(crate) u64);

    impl XorShift {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }
}

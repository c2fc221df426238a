//! rprof's symbolizer: names for the (cookie, offset) pairs of the stream.
//!
//! - [`elf`]: an ELF file's function symbols (`.symtab`, else `.dynsym`),
//!   looked up by *file offset* through the PT_LOAD segments, as the
//!   module reports user samples; the GNU build-id of a file.
//! - [`kallsyms`]: `/proc/kallsyms` text, looked up by address (kernel
//!   samples) or by module and address (module samples).
//! - [`dwarf`]: source lines and inlined functions of addresses from
//!   DWARF, compressed sections included.
//! - [`debuginfo`]: a stripped file's separate debug file, found the way
//!   distributions ship them (build-id directory, `.gnu_debuglink`).
//! - [`perfmap`]: `/tmp/perf-PID.map`, JIT-compiled code's symbols.
//! - [`root`]: where recorded paths are opened (the host, or a `--symfs`
//!   that cannot be escaped); regular files only.
//! - [`demangle`]: Rust (legacy and v0) and C++ names as people read them.
//! - [`dev`]: the kernel's `new_encode_dev()` device numbers against
//!   `stat()`'s.
//!
//! Nothing here panics on a malformed file: a file that cannot be parsed is
//! an error value, and lookups that find nothing return `None`.

// One module, `root`, makes one system call (openat2) that std does not
// have; everything else is safe code.
#![cfg_attr(not(test), deny(unsafe_code))]

pub mod debuginfo;
pub mod demangle;
pub mod dev;
pub mod dwarf;
pub mod elf;
mod hit;
pub mod kallsyms;
pub mod perfmap;
pub mod root;
#[doc(hidden)]
pub mod testprog;
#[cfg(test)]
mod testutil;

pub use demangle::demangle;
pub use elf::{read_build_id, ElfImage};
pub use hit::Hit;
pub use kallsyms::Kallsyms;
pub use root::Root;

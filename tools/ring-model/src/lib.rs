//! The kernel module's per-CPU ring, compiled from the very same file
//! (`src/sampling/ring.rs` of the module) against loom's atomics and cells, so that
//! the tests in `tests/` can explore every interleaving of concurrent
//! writers and a reader.
//!
//! Concurrent writers on different threads are a superset of writers that
//! nest on one CPU (an interrupt runs a complete `push` between two steps
//! of the interrupted one; loom also explores every such point), so a ring
//! correct here is correct under task -> softirq -> hardirq -> NMI nesting.

// The module's `Ring::len` has no `is_empty` (the kernel needs none):
// clippy's API lint is not a reason to change the module's code.
#[allow(clippy::len_without_is_empty)]
#[path = "../../../src/sampling/ring.rs"]
pub mod ring;

// SPDX-License-Identifier: GPL-2.0

//! Resolution: ring records in, named records out.
//!
//! Process context, may sleep: the [`drain`] runs in a workqueue item
//! under its session's drain mutex, takes `mmap_lock` to look up VMAs
//! without ever blocking on it ([`mm`]; [`mapcache`] saves most of those
//! lookups) and names files and module
//! text with [`cookies`].  [`modules`] finds the module an address is in
//! and drains the rings before a kernel module goes, calling its owner
//! through [`modules::ModuleEvents`].  [`reader`] takes records from the
//! per-CPU rings, [`replay`] keeps the drain's copy of the handlers'
//! mapping slots, [`stacks`] the chains already written.  [`follow`] keeps a descendants
//! filter's set up to date as processes exit (the `sched_process_exit`
//! probe); the set itself, with the membership test the overflow handler
//! runs, is `crate::sampling::followed` (NMI-safe, RCU only).  C glue:
//! `mm.c` (`mmap_lock` and a VMA's fields), `path.c` (file names),
//! `modules.c` (module list steps and fields, the notifier's
//! registration), `follow.c` (the exit probe's registration, whose type
//! depends on the kernel's version); the task fields are
//! `crate::kapi::task`'s, address-space references `crate::kapi`'s
//! `mem.c`.  `stage` holds the bench build's stage timers the data path
//! calls (their clock, `stage.c`, is compiled into bench builds only).

/// The offset in its file of `addr`, in a mapping that starts at `start`
/// with file offset `pgoff_bytes`.  Wrapping: a user may map a file at an
/// offset near the top of the range (`/dev/zero` at page offset 2^52 - 2,
/// then grown with `mremap`), and an overflow must not panic the drain
/// (`CONFIG_RUST_OVERFLOW_CHECKS`); such an offset names nothing real
/// either way.
#[inline(always)]
pub(crate) fn file_offset(pgoff_bytes: u64, start: u64, addr: u64) -> u64 {
    pgoff_bytes.wrapping_add(addr.wrapping_sub(start))
}

pub(crate) mod cookies;
pub(crate) mod drain;
pub(crate) mod follow;
pub(crate) mod mapcache;
pub(crate) mod mm;
pub(crate) mod modules;
pub(crate) mod reader;
pub(crate) mod replay;
pub(crate) mod stacks;
#[cfg(rprof_bench)]
pub(crate) mod stage;

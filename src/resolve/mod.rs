// SPDX-License-Identifier: GPL-2.0

//! Resolution: ring records in, named records out.
//!
//! Process context, may sleep: the [`drain`] runs in a workqueue item
//! under its session's drain mutex, takes `mmap_lock` to look up VMAs
//! ([`mapcache`] saves most of those lookups) and names files and module
//! text with [`cookies`].  The [`follow`] set's C side also answers the
//! overflow handler's pid filter (NMI-safe, RCU only); [`modules`] drains
//! the rings before a kernel module goes, calling its owner through
//! [`modules::ModuleEvents`].  C glue: `mm.c` (address spaces, VMA
//! lookups), `path.c` (file names), `modules.c`, `follow.c`.  Bench builds
//! add `stage`, the stage timers the data path calls.

pub(crate) mod cookies;
pub(crate) mod drain;
pub(crate) mod follow;
pub(crate) mod mapcache;
pub(crate) mod modules;
pub(crate) mod replay;
#[cfg(rprof_bench)]
pub(crate) mod stage;

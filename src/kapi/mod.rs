// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the kernel facilities that Rust for Linux 6.12 lacks.
//!
//! Each wrapper owns its C object (allocated by the glue beside it) and
//! releases it in `Drop`; outside this folder no code holds a raw binding
//! of these facilities.  [`helpers`] declares the C glue of every folder;
//! this folder's own is `kicker.c`, `waitq.c`, `hotplug.c`, `miscdev.c`,
//! `task.c` (task fields), `core.c` (CPUs, clocks, error pointers),
//! `mem.c` (allocations, files, `mm_struct` references, RCU) and, in
//! KUnit builds, `kunit.c`.  No file here uses another folder, nor calls
//! another folder's C: the CPU hotplug state calls its owner through
//! [`hotplug::CpuEvents`].
//!
//! Contexts: [`kicker::Kicker::kick`], [`rcu`] and the task reads the
//! overflow handler makes ([`task`]) are NMI-safe; everything else is
//! process context.

pub(crate) mod compat;
pub(crate) mod ctx;
pub(crate) mod helpers;
pub(crate) mod hotplug;
pub(crate) mod kicker;
#[cfg(rprof_kunit)]
pub(crate) mod kunit;
pub(crate) mod miscdev;
pub(crate) mod rcu;
pub(crate) mod sized;
pub(crate) mod task;
pub(crate) mod waitq;

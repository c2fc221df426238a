// SPDX-License-Identifier: GPL-2.0

//! `/dev/rprof` and its sessions: the file operations ([`fops`]), the
//! configuration ([`config`], [`params`]), a session's lifecycle
//! ([`session`]: counters, rings, drain, event buffer) and its per-CPU
//! rings' memory ([`rings`]).
//!
//! Process context, may sleep (ioctls, `read()`, `mmap()`, `poll()`, the
//! CPU hotplug callbacks).  The lock order is written in [`fops`].  C glue:
//! `misc.c` (capability checks, the ABI's static assertions; the misc
//! device is `crate::kapi::miscdev`'s) and `params.c` (`module_param()`).

pub(crate) mod config;
pub(crate) mod fops;
pub(crate) mod params;
pub(crate) mod rings;
pub(crate) mod session;

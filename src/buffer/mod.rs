// SPDX-License-Identifier: GPL-2.0

//! The event buffer userspace maps: the drain produces, the reader of
//! `/dev/rprof` consumes (process context on both sides), and the
//! locked-memory charge of a session's buffers.  The decisions are Rust;
//! the C glue is only what Rust cannot reach: `evbuf.c` (vmalloc, the
//! VMA's fields and flags, page insertion, the VMA callbacks that hold
//! the charge), `memlock.c` (the user's and the mm's locked-page counters,
//! `RLIMIT_MEMLOCK`, `CAP_IPC_LOCK`).

pub(crate) mod charge;
pub(crate) mod evbuf;

// SPDX-License-Identifier: GPL-2.0

//! The event buffer userspace maps: the drain produces, the reader of
//! `/dev/rprof` consumes (process context on both sides), and the
//! locked-memory charge of a session's buffers.  C glue: `evbuf.c` (the buffer's memory, its two mappings),
//! `memlock.c` (the charge).

pub(crate) mod charge;
pub(crate) mod evbuf;

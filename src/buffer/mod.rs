// SPDX-License-Identifier: GPL-2.0

//! The event buffer userspace maps: the drain produces, the reader of
//! `/dev/rprof` consumes (process context on both sides).  C glue:
//! `evbuf.c` (`vmalloc_user()`, the two mappings).

pub(crate) mod evbuf;

// SPDX-License-Identifier: GPL-2.0

//! Call chains: the stack walks (C glue in `walk.c`, NMI context, called
//! by the sampler) into the per-CPU [`scratch`] buffers, and the drain's
//! table of the chains already written ([`stacks`], process context), and
//! the table-driven user walk ([`unwind`], NMI context).

pub(crate) mod scratch;
pub(crate) mod stacks;
// The sampling handler does not take it yet (issue 31: tables are not
// uploaded yet); its KUnit suite does.
#[cfg_attr(not(rprof_kunit), allow(dead_code))]
pub(crate) mod unwind;

// SPDX-License-Identifier: GPL-2.0

//! Call chains: the stack walks (C glue in `walk.c`, NMI context, called
//! by the sampler) into the per-CPU [`scratch`] buffers, and the drain's
//! table of the chains already written ([`stacks`], process context), and
//! the table-driven user walk ([`unwind`], NMI context) over a session's
//! uploaded tables ([`tables`]).

pub(crate) mod scratch;
pub(crate) mod stacks;
pub(crate) mod tables;
pub(crate) mod unwind;

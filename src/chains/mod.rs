// SPDX-License-Identifier: GPL-2.0

//! Call chains: the stack walks (C glue, NMI context, called by the
//! sampler) and the drain's table of chains already written ([`stacks`],
//! process context).

pub(crate) mod stacks;

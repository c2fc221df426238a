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

/// A ring record's `chain` byte (`crate::sampling::sampler::RingRecord`):
/// the session takes chains and this sample has one (perhaps empty, or
/// cut for space: `RPROF_STACK_CUT`).
pub(crate) const CHAIN_TAKEN: u8 = 1 << 7;

/// A ring record's `chain` byte: the `RPROF_STACK_*` flags of the chain.
pub(crate) const CHAIN_FLAGS: u8 = 0x7f;

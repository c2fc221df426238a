// SPDX-License-Identifier: GPL-2.0

//! Call chains.  NMI context (the sampler calls them): the stack walks
//! (C glue in `walk.c`, `walk.h`) into the per-CPU [`scratch`] buffers,
//! and the table-driven user walk ([`userwalk`], over the pure walker
//! [`unwind`]).  Process context: a session's uploaded tables ([`tables`]:
//! upload and publication; the handler reads them through
//! `Published::read`).  The drain's table of the chains already written
//! is `crate::resolve::stacks`.

pub(crate) mod scratch;
pub(crate) mod tables;
pub(crate) mod unwind;
pub(crate) mod userwalk;

/// A ring record's `chain` byte (`crate::sampling::sampler::RingRecord`):
/// the session takes chains and this sample has one (perhaps empty, or
/// cut for space: `RPROF_STACK_CUT`).
pub(crate) const CHAIN_TAKEN: u8 = 1 << 7;

/// A ring record's `chain` byte: the `RPROF_STACK_*` flags of the chain.
pub(crate) const CHAIN_FLAGS: u8 = 0x7f;

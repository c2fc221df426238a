// SPDX-License-Identifier: GPL-2.0

//! Sampling: everything that runs in the perf overflow handler.
//!
//! NMI context (a PMU counter) or hard IRQ (the hrtimer of a software
//! counter), nested over anything on the CPU: nothing in [`sampler`],
//! [`ring`], [`followed`] (the pid filter's followed set), [`maps`] (and
//! `maps.c`, which name the mappings of a sample's user addresses) and the
//! C half of the handler (`overflow.c`) sleeps, locks or allocates.
//! [`counter`] (and `counter.c`) opens and releases the
//! counters in process context and gives perf the handler (`handler.c`,
//! or the bench build's timed one).
//!
//! Data path: overflow handler ([`sampler`]) -> per-CPU [`ring`] -> the
//! drain ([`crate::resolve`]).

pub(crate) mod counter;
pub(crate) mod followed;
pub(crate) mod maps;
pub(crate) mod ring;
pub(crate) mod sampler;

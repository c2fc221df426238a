// SPDX-License-Identifier: GPL-2.0

//! Sampling: everything that runs in the perf overflow handler.
//!
//! NMI context (a PMU counter) or hard IRQ (the hrtimer of a software
//! counter), nested over anything on the CPU: nothing in [`sampler`] and
//! [`ring`] sleeps, locks or allocates.  [`counter`] opens and releases the
//! counters (process context) and names the handler.
//!
//! Data path: overflow handler ([`sampler`]) -> per-CPU [`ring`] -> the
//! drain ([`crate::resolve`]).

pub(crate) mod counter;
pub(crate) mod ring;
pub(crate) mod sampler;

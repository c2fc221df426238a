// SPDX-License-Identifier: GPL-2.0

//! The reading side of the per-CPU rings: a record with its continuation
//! words (its chain's frames, the mappings it carries), as the writer in
//! `crate::sampling::sampler` laid them out.
//!
//! Process context: the drain (under its lock), the teardown of a ring's
//! leftovers (`crate::resolve::replay::give_back`), tests.

use crate::sampling::sampler::{RingRecord, SampleRing, SLOT_WORDS};

/// Takes the oldest record of `ring`: `f(record, words)` gets it where it
/// lies in the ring (no copy) and its continuation words, copied into
/// `frames` (kernel frames first, then user frames, then the mappings'
/// tail: `RingRecord::words()` of them, at most `frames.len()`); its
/// result is returned.  The record's slots go back to the writers once
/// `f` returns.
///
/// # Safety
///
/// The caller is the ring's only reader (the drain lock, or a test's own
/// ring), and `f` takes nothing from this ring (the record is released
/// only once `f` returns).
#[inline(always)]
pub(crate) unsafe fn pop_with<R>(ring: &SampleRing, frames: &mut [u64], f: impl FnOnce(&RingRecord, &[u64]) -> R) -> Option<R> {
    // SAFETY: The caller is the only reader; every record's first slot
    // holds `rec` (`RingSlot` invariant), and its writer reserved
    // `extra_slots()` continuation slots (`push_frames`).
    unsafe {
        ring.pop_multi(
            |first| first.rec.extra_slots(),
            |first, rest| {
                let rec = &first.rec;
                let n = rec.words().min(frames.len());
                for (i, chunk) in frames[..n].chunks_mut(SLOT_WORDS).enumerate() {
                    let words = rest(i as u64).words;
                    for (f, w) in chunk.iter_mut().zip(words.iter()) {
                        *f = *w;
                    }
                }
                f(rec, &frames[..n])
            },
        )
    }
}

/// [`pop_with`] that copies the record out.
///
/// # Safety
///
/// As for [`pop_with`].
#[inline(always)]
pub(crate) unsafe fn pop(ring: &SampleRing, frames: &mut [u64]) -> Option<RingRecord> {
    // SAFETY: The caller's contract.
    unsafe { pop_with(ring, frames, |rec, _| *rec) }
}

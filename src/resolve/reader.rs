// SPDX-License-Identifier: GPL-2.0

//! The reading side of the per-CPU rings: a record with its continuation
//! words (its chain's frames, the mappings it carries), as the writer in
//! `crate::sampling::sampler` laid them out.
//!
//! Process context: the drain (under its lock), the teardown of a ring's
//! leftovers (`crate::resolve::replay::give_back`), tests.

use crate::sampling::sampler::{RingRecord, SampleRing, SLOT_WORDS};

/// Takes the oldest record of `ring` and hands it to `f(record, words)`
/// with its continuation words, copied into `frames` (kernel frames first,
/// then user frames, then the mappings' tail: `RingRecord::words()` of
/// them, at most `frames.len()`); `f`'s result is returned.
///
/// A record of one slot is handed over where it lies (no copy), and its
/// slot goes back to the writers once `f` returns.  A record with
/// continuation slots (a chain's, up to half of a small ring) is copied
/// out and all its slots go back before `f` runs: `f` may wait (for an
/// `mmap_lock`, up to a millisecond) and the handler must not lose samples
/// meanwhile for want of slots the reader already has what it needs from.
///
/// # Safety
///
/// The caller is the ring's only reader (the drain lock, or a test's own
/// ring), and `f` takes nothing from this ring (a one-slot record is
/// released only once `f` returns).
#[inline(always)]
pub(crate) unsafe fn pop_with<R>(ring: &SampleRing, frames: &mut [u64], f: impl FnOnce(&RingRecord, &[u64]) -> R) -> Option<R> {
    /// What the ring's reader did with the record.
    enum Taken<R> {
        /// `f` ran on the record in place.
        Done(R),
        /// Copied out with its first `n` words, `f` still to run.
        Copied(RingRecord, usize),
    }
    let mut f = Some(f);
    // SAFETY: The caller is the only reader and `f` pops nothing; every
    // record's first slot holds `rec` (`RingSlot` invariant), and its
    // writer reserved `extra_slots()` continuation slots (`push_frames`).
    let taken = unsafe {
        ring.pop_multi(
            |first| first.rec.extra_slots(),
            |first, rest| {
                let rec = &first.rec;
                if rec.extra_slots() == 0 {
                    // No continuation words: `words()` is 0.
                    if let Some(f) = f.take() {
                        return Taken::Done(f(rec, &[]));
                    }
                }
                let n = rec.words().min(frames.len());
                for (i, chunk) in frames[..n].chunks_mut(SLOT_WORDS).enumerate() {
                    let words = rest(i as u64).words;
                    for (f, w) in chunk.iter_mut().zip(words.iter()) {
                        *f = *w;
                    }
                }
                Taken::Copied(*rec, n)
            },
        )
    }?;
    match taken {
        Taken::Done(r) => Some(r),
        Taken::Copied(rec, n) => f.map(|f| f(&rec, &frames[..n])),
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

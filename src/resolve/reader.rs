// SPDX-License-Identifier: GPL-2.0

//! The reading side of the per-CPU rings: a record with its continuation
//! words (its chain's frames, the mappings it carries), as the writer in
//! `crate::sampling::sampler` laid them out.
//!
//! Process context: the drain (under its lock), the teardown of a ring's
//! leftovers (`crate::resolve::replay::give_back`), tests.

use crate::sampling::sampler::{RingRecord, SampleRing, SLOT_WORDS};

/// What [`pop_with`] did with the record it took.
pub(crate) enum Popped<R> {
    /// A one-slot record, handed to `f` where it lay: `f`'s result.
    Done(R),
    /// A record with continuation slots (a chain's), copied out into
    /// `copy`, with its continuation words into `frames`; its slots are
    /// free again.
    Copied,
}

/// Takes the oldest record of `ring`.
///
/// A record of one slot (most records) is handed to `f` where it lies (no
/// copy; copying cost the drain as much as resolving the record), and its
/// slot goes back to the writers once `f` returns.  A record with
/// continuation slots (a chain's, up to half of a small ring) is copied
/// out into `copy`, with its continuation words into `frames` (kernel
/// frames first, then user frames, then the mappings' tail:
/// `RingRecord::words()` of them, at most `frames.len()`), and all its
/// slots go back at once: its consumer may wait (for an `mmap_lock`, up to
/// a millisecond) and the handler must not lose samples meanwhile for want
/// of slots the reader no longer needs.
///
/// Two outcomes rather than one consumer called on both paths, and the
/// copy in the caller's place rather than in the result: the drain's
/// consumer is its whole record path, inlined; called from two places it
/// was compiled out of line, and a result that carried the record was
/// moved through every return.  Each cost the drain's pass tens of ns a
/// record (drain microbenchmark 383 ns before; 479 and 428 ns with them).
///
/// # Safety
///
/// The caller is the ring's only reader (the drain lock, or a test's own
/// ring), and `f` takes nothing from this ring (the record is released
/// only once `f` returns).
#[inline(always)]
pub(crate) unsafe fn pop_with<R>(
    ring: &SampleRing,
    frames: &mut [u64],
    copy: &mut Option<RingRecord>,
    f: impl FnOnce(&RingRecord) -> R,
) -> Option<Popped<R>> {
    // SAFETY: The caller is the only reader and `f` pops nothing; every
    // record's first slot holds `rec` (`RingSlot` invariant), and its
    // writer reserved `extra_slots()` continuation slots (`push_frames`).
    unsafe {
        ring.pop_multi(
            |first| first.rec.extra_slots(),
            |first, rest| {
                let rec = &first.rec;
                if rec.extra_slots() == 0 {
                    // No continuation words: `words()` is 0.
                    return Popped::Done(f(rec));
                }
                let n = copied_words(rec, frames.len());
                for (i, chunk) in frames[..n].chunks_mut(SLOT_WORDS).enumerate() {
                    let words = rest(i as u64).words;
                    for (f, w) in chunk.iter_mut().zip(words.iter()) {
                        *f = *w;
                    }
                }
                *copy = Some(*rec);
                Popped::Copied
            },
        )
    }
}

/// The continuation words of `rec` that [`pop_with`] copied into a buffer
/// of `frames` words.
pub(crate) fn copied_words(rec: &RingRecord, frames: usize) -> usize {
    rec.words().min(frames)
}

/// [`pop_with`] that copies every record out, with its continuation words
/// in `frames`.
///
/// # Safety
///
/// As for [`pop_with`].
#[inline(always)]
pub(crate) unsafe fn pop(ring: &SampleRing, frames: &mut [u64]) -> Option<RingRecord> {
    let mut copy = None;
    // SAFETY: The caller's contract.
    match unsafe { pop_with(ring, frames, &mut copy, |rec| *rec) }? {
        Popped::Done(rec) => Some(rec),
        Popped::Copied => copy,
    }
}

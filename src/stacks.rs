// SPDX-License-Identifier: GPL-2.0

//! Interned call chains: a STACK record once per distinct chain, then an
//! id in each sample (`RPROF_SAMPLE_STACK`).
//!
//! A profile repeats the same few chains thousands of times; writing each
//! in full (16 bytes a frame, often 10 to 30 frames) would make the stream
//! ten times larger than the samples.  The drain keeps a table of the
//! chains it has written in this session, keyed by the resolved frames and
//! the end flags, and writes a STACK record only for a chain not in it.
//!
//! The table is bounded: when it or its frame arena is full it is
//! cleared, and chains seen again are written again under new ids.  Ids
//! only grow, so a reader never sees one id name two chains.  A chain
//! enters the table only once its STACK record is in the event buffer, so
//! a sample never names a chain the reader cannot have.
//!
//! Process context (the drain); allocates only at session setup.

use crate::uapi::rprof_frame;
use kernel::prelude::*;

/// Slots of the hash table (a power of two); at most 3/4 are used.
const SLOTS: usize = 8192;
/// Frames of all chains in the table together.
const ARENA: usize = 128 * 1024;

/// One table slot.  `id == 0`: empty.
#[derive(Clone, Copy, Default)]
struct Entry {
    hash: u64,
    id: u64,
    start: u32,
    len: u16,
    flags: u16,
}

/// The chains written in this session.
///
/// # Invariants
///
/// `slots.len() == SLOTS`; `used` slots have a non-zero id; each used
/// slot's frames are `arena[start..start + len]`; `arena.len() <= ARENA`;
/// `next_id` is above every id ever handed out.
pub(crate) struct Stacks {
    slots: KVec<Entry>,
    arena: KVec<rprof_frame>,
    used: usize,
    next_id: u64,
}

/// Empties `v` (6.12's `KVec` has no `clear`), keeping its capacity.
pub(crate) fn clear_copy<T: Copy>(v: &mut KVec<T>) {
    // SAFETY: 0 is within the capacity, and `T: Copy` has no destructor
    // that dropping the elements would have to run.
    unsafe { v.set_len(0) };
}

/// FNV-1a over the frames and the flags.
pub(crate) fn hash(frames: &[rprof_frame], flags: u16) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(flags);
    for f in frames {
        for w in [f.cookie, f.offset] {
            h ^= w;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

impl Stacks {
    /// An empty table.  Process context.
    pub(crate) fn new() -> Result<Self> {
        let mut slots = KVec::new();
        slots.extend_with(SLOTS, Entry::default(), GFP_KERNEL)?;
        let arena = KVec::with_capacity(ARENA, GFP_KERNEL)?;
        // INVARIANT: all slots empty, arena empty, ids start at 1.
        Ok(Self { slots, arena, used: 0, next_id: 1 })
    }

    /// The id of the chain `frames` with `flags`, if it is in the table.
    pub(crate) fn find(&self, h: u64, frames: &[rprof_frame], flags: u16) -> Option<u64> {
        let mask = SLOTS - 1;
        let mut i = h as usize & mask;
        loop {
            let e = &self.slots[i];
            if e.id == 0 {
                return None;
            }
            if e.hash == h && e.flags == flags && e.len as usize == frames.len() {
                let stored = &self.arena[e.start as usize..e.start as usize + e.len as usize];
                if stored.iter().zip(frames).all(|(a, b)| a.cookie == b.cookie && a.offset == b.offset) {
                    return Some(e.id);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The id the next [`Stacks::insert`] hands out.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Enters a chain (whose STACK record is written) under the next id,
    /// and returns that id; the table is cleared first if it is full.
    pub(crate) fn insert(&mut self, h: u64, frames: &[rprof_frame], flags: u16) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if frames.len() > ARENA {
            return id;
        }
        if self.used >= SLOTS / 4 * 3 || self.arena.len() + frames.len() > ARENA {
            self.clear();
        }
        let start = self.arena.len();
        // Cannot fail: the capacity is ARENA and the check above keeps
        // the arena within it.
        if self.arena.extend_from_slice(frames, GFP_ATOMIC).is_err() {
            return id;
        }
        let mask = SLOTS - 1;
        let mut i = h as usize & mask;
        while self.slots[i].id != 0 {
            i = (i + 1) & mask;
        }
        // INVARIANT: a free slot (3/4 at most used), frames in the arena.
        self.slots[i] = Entry { hash: h, id, start: start as u32, len: frames.len() as u16, flags };
        self.used += 1;
        id
    }

    /// Forgets every chain; ids keep growing.
    fn clear(&mut self) {
        for e in self.slots.iter_mut() {
            *e = Entry::default();
        }
        clear_copy(&mut self.arena);
        self.used = 0;
    }
}

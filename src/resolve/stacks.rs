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
//! A second table, [`RawChains`], maps the raw chain of a sample (its
//! return addresses as the handler took them) to the id of its resolved
//! chain, so that a chain seen before costs a hash and a comparison of its
//! raw words, not a resolution of every frame.  Its key is the raw words,
//! their end flags and kernel-frame count, and the address space with its
//! write-lock sequence at the sample: the same addresses in the same
//! unchanged address space resolve to the same files and offsets, the rule
//! of the mapping cache (src/resolve/mapcache.rs).  The address space is named by
//! a generation handed out when the table takes an `mm_count` reference on
//! it (at most [`RAW_MMS`] at a time), so that an `mm_struct` freed and
//! reallocated at the same address can never match an old key.  The table
//! is cleared when a module comes or goes, which changes what kernel
//! addresses resolve to.
//!
//! Process context (the drain); allocates only at session setup.

use crate::kapi::helpers::{self, MmStruct};
use crate::uapi::rprof_frame;
use kernel::prelude::*;

/// Slots of each hash table (a power of two); at most 3/4 are used.
const SLOTS: usize = 8192;
/// Frames of all chains in the resolved table together.
const ARENA: usize = 128 * 1024;
/// Raw words of all chains in the raw table together.
const RAW_ARENA: usize = 64 * 1024;
/// Address spaces the raw table holds at a time.
pub(crate) const RAW_MMS: usize = 8;

/// One table slot.  `value == 0`: empty.
#[derive(Clone, Copy, Default)]
struct Entry {
    hash: u64,
    value: u64,
    tag: u64,
    start: u32,
    len: u16,
    flags: u16,
}

/// An element of a chain, compared word for word.
trait Word: Copy {
    fn same(&self, other: &Self) -> bool;
}

impl Word for u64 {
    #[inline(always)]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl Word for rprof_frame {
    #[inline(always)]
    fn same(&self, other: &Self) -> bool {
        self.cookie == other.cookie && self.offset == other.offset
    }
}

/// A bounded hash table from (tag, flags, chain of `T`) to a non-zero
/// value, with the chains in one arena.
///
/// # Invariants
///
/// `slots.len() == SLOTS`; `used` slots have a non-zero value; each used
/// slot's chain is `arena[start..start + len]`; `arena.len() <= cap`.
struct Table<T: Word> {
    /// 8192 entries: vmalloc'd if need be (`KVVec`), not one high-order
    /// kmalloc that a fragmented machine may refuse.
    slots: KVVec<Entry>,
    arena: KVVec<T>,
    cap: usize,
    used: usize,
}

impl<T: Word> Table<T> {
    fn new(cap: usize) -> Result<Self> {
        let mut slots = KVVec::new();
        slots.extend_with(SLOTS, Entry::default(), GFP_KERNEL)?;
        let arena = KVVec::with_capacity(cap, GFP_KERNEL)?;
        // INVARIANT: all slots empty, arena empty.
        Ok(Self { slots, arena, cap, used: 0 })
    }

    /// The value of `chain` with `tag` and `flags`, if it is in the table.
    #[inline]
    fn find(&self, h: u64, tag: u64, flags: u16, chain: &[T]) -> Option<u64> {
        let mask = SLOTS - 1;
        let mut i = h as usize & mask;
        loop {
            let e = &self.slots[i];
            if e.value == 0 {
                return None;
            }
            if e.hash == h && e.tag == tag && e.flags == flags && e.len as usize == chain.len() {
                let start = e.start as usize;
                let stored = self.arena.get(start..start + chain.len()).unwrap_or(&[]);
                if stored.len() == chain.len() && stored.iter().zip(chain).all(|(a, b)| a.same(b)) {
                    return Some(e.value);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Enters `chain` with `value` (non-zero); the table is cleared first
    /// if it is full.  A chain longer than the arena is not entered.
    fn insert(&mut self, h: u64, tag: u64, flags: u16, chain: &[T], value: u64) {
        if chain.len() > self.cap || chain.len() > u16::MAX as usize || value == 0 {
            return;
        }
        if self.used >= SLOTS / 4 * 3 || self.arena.len() + chain.len() > self.cap {
            self.clear();
        }
        let start = self.arena.len();
        // Cannot fail: the capacity is `cap` and the check above keeps the
        // arena within it.
        if self.arena.extend_from_slice(chain, GFP_ATOMIC).is_err() {
            return;
        }
        let mask = SLOTS - 1;
        let mut i = h as usize & mask;
        while self.slots[i].value != 0 {
            i = (i + 1) & mask;
        }
        // INVARIANT: a free slot (3/4 at most used), the chain in the arena.
        self.slots[i] = Entry { hash: h, value, tag, start: start as u32, len: chain.len() as u16, flags };
        self.used += 1;
    }

    /// Forgets every chain.
    fn clear(&mut self) {
        for e in self.slots.iter_mut() {
            *e = Entry::default();
        }
        crate::kapi::compat::clear_vec(&mut self.arena);
        self.used = 0;
    }
}

/// The chains written in this session.
///
/// # Invariants
///
/// Each value in `table` is the id of a chain whose STACK record was
/// written; `next_id` is above every id ever handed out.
pub(crate) struct Stacks {
    table: Table<rprof_frame>,
    next_id: u64,
}

/// Empties `v` (6.12's `KVec` has no `clear`), keeping its capacity.
pub(crate) fn clear_copy<T: Copy>(v: &mut KVec<T>) {
    crate::kapi::compat::clear_vec(v);
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

/// FNV-1a over raw words, a tag and flags.
#[inline]
pub(crate) fn hash_raw(words: &[u64], tag: u64, flags: u16) -> u64 {
    let mut h: u64 = (0xcbf2_9ce4_8422_2325 ^ tag).wrapping_mul(0x0000_0100_0000_01b3) ^ u64::from(flags);
    for &w in words {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Stacks {
    /// An empty table.  Process context.
    pub(crate) fn new() -> Result<Self> {
        // INVARIANT: nothing entered, ids start at 1.
        Ok(Self { table: Table::new(ARENA)?, next_id: 1 })
    }

    /// The id of the chain `frames` with `flags`, if it is in the table.
    pub(crate) fn find(&self, h: u64, frames: &[rprof_frame], flags: u16) -> Option<u64> {
        self.table.find(h, 0, flags, frames)
    }

    /// Forgets every chain; ids go on from `next_id` (none is reused).
    pub(crate) fn forget(&mut self) {
        self.table.clear();
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
        self.table.insert(h, 0, flags, frames, id);
        id
    }
}

/// Raw chains seen in this session, to the ids of their resolved chains
/// (module doc).
///
/// # Invariants
///
/// Each non-null `mms[i].0` holds an `mm_count` reference this value
/// drops, and `mms[i].1` is the generation it was given, never given to
/// another address space; each key's tag holds the generation of the
/// address space of its sample (0: none) and the sequence at the sample.
pub(crate) struct RawChains {
    table: Table<u64>,
    /// The module generation (`resolve::modules::generation()`) when the
    /// table was last checked.
    modules: u32,
    mms: [(*mut MmStruct, u32); RAW_MMS],
    next_mm: usize,
    next_gen: u32,
}

// SAFETY: The `mm_count` references may be dropped from any process
// context; the drain lock serialises every access.
unsafe impl Send for RawChains {}

/// The flags part of a raw chain's key: the chain's end flags
/// (`RPROF_STACK_*`, `CHAIN_FLAGS` of `RingRecord::chain`), the sample's
/// mode, the count of kernel frames and whether an unwind table gave a
/// user frame (the STACK record's `RPROF_STACK_USER_TABLE`).  The mode belongs in the key: a
/// kernel sample's first user frame is the user ip at kernel entry, a user
/// sample's is a return address resolved one byte back, so the same words
/// resolve to different frames.
#[inline]
pub(crate) fn raw_key_flags(chain: u8, user_mode: bool, nk: usize, table: bool) -> u16 {
    // nk <= RPROF_MAX_FRAMES (127): bits 8-14.
    u16::from(chain & crate::chains::CHAIN_FLAGS)
        | u16::from(user_mode) << 7
        | (nk as u16) << 8
        | u16::from(table) << 15
}

/// A stack id and the count of its unresolved user frames, as the raw
/// table keeps them.
const UNRESOLVED_SHIFT: u32 = 48;

impl RawChains {
    /// An empty table; `modules` is the module generation now.
    pub(crate) fn new(modules: u32) -> Result<Self> {
        // INVARIANT: no address space held, generations from 1.
        Ok(Self { table: Table::new(RAW_ARENA)?, modules, mms: [(core::ptr::null_mut(), 0); RAW_MMS], next_mm: 0, next_gen: 1 })
    }

    /// The key tag of a sample of `mm` (null: none) with sequence `seq`,
    /// holding `mm` from now on if it is not held yet.  `modules` is the
    /// module generation now: the table empties when it changed.
    ///
    /// # Safety
    ///
    /// `mm` is null or a live address space the caller holds a reference
    /// on (the ring record's); process context.
    pub(crate) unsafe fn tag(&mut self, mm: *mut MmStruct, seq: u32, modules: u32) -> u64 {
        if modules != self.modules {
            // A module came or went: kernel frames may resolve otherwise.
            self.modules = modules;
            self.table.clear();
        }
        if mm.is_null() {
            return u64::from(seq);
        }
        let gen = match self.mms.iter().find(|(m, _)| *m == mm) {
            Some(&(_, gen)) => gen,
            None => {
                if self.next_gen == u32::MAX {
                    // Generations would repeat: start over.
                    self.release();
                    self.table.clear();
                    self.next_gen = 1;
                }
                let slot = &mut self.mms[self.next_mm];
                if !slot.0.is_null() {
                    // SAFETY: Our reference (type invariant); process
                    // context.  Keys of its generation can no longer match:
                    // the generation is not given again.
                    unsafe { helpers::rprof_mm_drop(slot.0) };
                }
                // SAFETY: The caller holds a reference on `mm`, so it is
                // live and we may take an `mm_count` one.
                unsafe { helpers::rprof_mm_grab(mm) };
                // INVARIANT: referenced, under a fresh generation.
                *slot = (mm, self.next_gen);
                self.next_gen += 1;
                self.next_mm = (self.next_mm + 1) % RAW_MMS;
                slot.1
            }
        };
        u64::from(gen) << 32 | u64::from(seq)
    }

    /// The stack id and unresolved-frame count of a raw chain.
    #[inline]
    pub(crate) fn find(&self, h: u64, tag: u64, flags: u16, raw: &[u64]) -> Option<(u64, u64)> {
        let v = self.table.find(h, tag, flags, raw)?;
        Some((v & ((1 << UNRESOLVED_SHIFT) - 1), v >> UNRESOLVED_SHIFT))
    }

    /// Remembers that `raw` resolved to the chain of `id` (written) with
    /// `unresolved` user frames left unresolved.
    pub(crate) fn insert(&mut self, h: u64, tag: u64, flags: u16, raw: &[u64], id: u64, unresolved: u64) {
        if id >= 1 << UNRESOLVED_SHIFT {
            return;
        }
        self.table.insert(h, tag, flags, raw, id | unresolved.min(0xffff) << UNRESOLVED_SHIFT);
    }

    /// Forgets every raw chain (their stack ids are forgotten too).
    pub(crate) fn forget(&mut self) {
        self.table.clear();
    }

    fn release(&mut self) {
        for (mm, _) in self.mms.iter_mut() {
            if !mm.is_null() {
                // SAFETY: Our reference (type invariant); process context.
                unsafe { helpers::rprof_mm_drop(*mm) };
                *mm = core::ptr::null_mut();
            }
        }
    }
}

impl Drop for RawChains {
    fn drop(&mut self) {
        self.release();
    }
}

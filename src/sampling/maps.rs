// SPDX-License-Identifier: GPL-2.0

//! The mappings the sampling handler captures, so that a sample resolves
//! after its process exited or exec'd without the handler pinning the
//! process's address space.
//!
//! **NMI context**: [`MapSlots`] and [`Plan`] are the handler's; they take
//! no lock, never sleep and never allocate.  The drain's half is
//! [`crate::resolve::replay`].
//!
//! # Why
//!
//! A ring record holds the sampled task's `mm_struct` by `mm_count` only
//! (`rprof_current_mm_grab`), which does not keep the address space: a
//! process that exits or execs before the drain reads its samples takes
//! its mappings with it.  Holding `mm_users` instead, as rprof once did,
//! delays every sampled exit (the address space is torn down by the
//! drain's last put, and the exiting owner scans the task list for a new
//! `mm->owner` first).  So the handler names the mapping itself.
//!
//! # Protocol
//!
//! Each CPU's handler keeps [`SLOTS`] mappings: address space, range, page
//! offset, file, and the address space's write-lock sequence under which
//! they were true.  An address (the sampled ip, each user frame of the
//! chain) that lies in a slot under the current sequence names the slot:
//! the record's `map` byte for the ip ([`MAP_LEAF`]), a nibble per user
//! frame ([`MAP_NIBBLES`]).  An address in no slot is looked up
//! (`rprof_nmi_map`: lockless, believed under the sequence) and put in a
//! slot this record names nothing else in; the record then carries it as
//! an *entry* ([`ENTRY_WORDS`] words, at most [`NEW_MAX`] a record) with a
//! reference on the file (`rprof_nmi_file_get`) and one on the
//! `mm_struct`.  The drain keeps a copy of each CPU's slots and applies a
//! record's entries before it reads the record, in ring order.
//!
//! # Invariants
//!
//! - The drain's copy of CPU c's slots, when it reads a record of c's
//!   ring, is what c's slots were when the handler wrote that record: the
//!   references are taken only once the ring has room for the record
//!   ([`Plan::take_refs`], from the ring's continuation-slot writer), and
//!   the handler's slots change only once the record is in the ring
//!   ([`Plan::commit`]).  A handler that finds the slots in use (an NMI
//!   over the hrtimer's handler on the same CPU) leaves them alone and
//!   names none.
//! - A slot's file and `mm_struct` are alive while the slot names them:
//!   the entry that put them there holds a reference on each, which the
//!   drain's copy keeps until a later entry replaces the slot.  So
//!   pointer equality with a slot means the same file and address space.

use crate::kapi::helpers::{self, MmStruct, NmiMap};
use crate::uapi::RPROF_MAX_FRAMES;
use core::cell::UnsafeCell;
use core::sync::atomic::{compiler_fence, AtomicBool, Ordering};

/// Mappings a CPU's handler keeps.
pub(crate) const SLOTS: usize = 8;
/// New mappings one record carries at most.
pub(crate) const NEW_MAX: usize = 4;
/// Words of one entry: file (or 0), start with the slot and flags in its
/// low bits, end, page offset in bytes.
pub(crate) const ENTRY_WORDS: usize = 4;
/// User frames' slot nibbles per word.
const NIBBLES_PER_WORD: usize = 16;
/// Words of the nibbles of a chain's user frames, at most.
pub(crate) const NIBBLE_WORDS: usize = (RPROF_MAX_FRAMES as usize).div_ceil(NIBBLES_PER_WORD);
/// Words a record may carry after its frames.
pub(crate) const TAIL_WORDS: usize = NEW_MAX * ENTRY_WORDS + NIBBLE_WORDS;

/// `RawSample::map`: slot + 1 of the sampled ip, 0 for none.
pub(crate) const MAP_LEAF: u8 = 0x0f;
/// `RawSample::map`: the record's entries, in bits 4-6.
const MAP_ENTRIES_SHIFT: u32 = 4;
const MAP_ENTRIES: u8 = 0x70;
/// `RawSample::map`: a nibble per user frame follows the entries.
pub(crate) const MAP_NIBBLES: u8 = 0x80;

/// An entry's second word: the slot (bits 0-3) and what the first word
/// holds, in the low bits of the page-aligned start.
pub(crate) const ENTRY_SLOT: u64 = 0x0f;
/// The entry names its slot's new mapping (else it empties the slot).
pub(crate) const ENTRY_VALID: u64 = 1 << 4;
/// The first word holds a file reference (to keep if valid, else to give
/// back).
pub(crate) const ENTRY_REF: u64 = 1 << 5;
/// The file is the address space's executable.
pub(crate) const ENTRY_EXE: u64 = 1 << 6;
const ENTRY_FLAGS: u64 = 0xfff;

/// Entries of a record's `map` byte.
pub(crate) fn map_entries(map: u8) -> usize {
    ((map & MAP_ENTRIES) >> MAP_ENTRIES_SHIFT) as usize
}

/// Words a record with `nu` user frames and `map` carries after its
/// frames.
pub(crate) fn tail_words(map: u8, nu: usize) -> usize {
    map_entries(map) * ENTRY_WORDS + if map & MAP_NIBBLES != 0 { nu.div_ceil(NIBBLES_PER_WORD) } else { 0 }
}

/// The slot + 1 of user frame `i` in `nibbles` (0: none).
pub(crate) fn nibble(nibbles: &[u64], i: usize) -> u8 {
    nibbles.get(i / NIBBLES_PER_WORD).map_or(0, |w| (w >> (4 * (i % NIBBLES_PER_WORD)) & 0xf) as u8)
}

/// One slot of the handler's.
#[derive(Clone, Copy)]
struct Slot {
    /// Null: empty.
    mm: *mut MmStruct,
    seq: u32,
    map: NmiMap,
}

const EMPTY: Slot = Slot {
    mm: core::ptr::null_mut(),
    seq: 0,
    map: NmiMap { start: 0, end: 0, pgoff_bytes: 0, file: core::ptr::null_mut(), flags: 0 },
};

struct State {
    slots: [Slot; SLOTS],
    /// The next slot to replace, round robin.
    next: usize,
    /// The slot that named the last address looked up: a CPU's samples
    /// mostly fall in one mapping (a loop's), so it is tried first.
    hint: usize,
    /// The record being planned ([`Plan`], which holds `busy`): its new
    /// mappings (the first `Plan::ne` are its own) and its frames' slot
    /// nibbles (its own once `Plan::has_nibbles`).  Here rather than in
    /// the plan so that a sample pays for no zeroed arrays (a handler
    /// that cannot take `busy` names nothing and needs neither).
    new: [New; NEW_MAX],
    nibbles: [u64; NIBBLE_WORDS],
}

/// A CPU's mappings (see the module doc).  Cache-line aligned: the
/// handler writes it on every user sample, and a session keeps one per CPU
/// side by side (a `KVec`), so neighbouring CPUs would otherwise share a
/// line at their boundary.  The allocator honours the alignment: Rust's
/// `Kmalloc` pads the size to a multiple of it, and kmalloc aligns an
/// object to the largest power of two dividing its size.
///
/// # Invariants
///
/// `state` is touched only by the holder of `busy`: a handler on this
/// object's CPU, which takes it when it finds it clear ([`MapSlots::take`])
/// and gives it back before it returns.
#[repr(align(64))]
pub(crate) struct MapSlots {
    busy: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is reached only by the holder of `busy` (type
// invariant), which only code on one CPU takes, strictly nested
// ([`Plan::new`]'s contract): one plan at a time.
unsafe impl Sync for MapSlots {}
// SAFETY: It holds no reference (the drain's copy does); the pointers are
// compared, never dereferenced.
unsafe impl Send for MapSlots {}

impl MapSlots {
    /// Takes `busy` if it is clear.  NMI context, on this object's CPU.
    ///
    /// A load and a store, not a locked swap (as perf's recursion
    /// counters): only code on this object's CPU takes it, and code that
    /// interrupts another between its load and its store runs to
    /// completion, giving `busy` back clear, before the interrupted one
    /// goes on, so each sees the flag as if it ran alone.  The compiler
    /// fences keep the state's accesses inside the section; no other CPU
    /// looks.  That is [`Plan::new`]'s contract, which its callers keep.
    #[inline(always)]
    fn take(&self) -> bool {
        if self.busy.load(Ordering::Relaxed) {
            return false;
        }
        self.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        true
    }

    /// Gives `busy` back (after [`MapSlots::take`]).
    #[inline(always)]
    fn give_back(&self) {
        compiler_fence(Ordering::SeqCst);
        self.busy.store(false, Ordering::Relaxed);
    }

    pub(crate) const fn new() -> Self {
        Self { busy: AtomicBool::new(false), state: UnsafeCell::new(State {
                slots: [EMPTY; SLOTS],
                next: 0,
                hint: 0,
                new: [NEW_NONE; NEW_MAX],
                nibbles: [0; NIBBLE_WORDS],
            }),
        }
    }
}

/// A new mapping a record carries.
#[derive(Clone, Copy, Default)]
struct New {
    slot: usize,
    map: NmiMap,
}

const NEW_NONE: New = New { slot: 0, map: EMPTY.map };

/// What one record names and carries.  NMI context.
///
/// # Invariants
///
/// `slots` is `Some` only while this plan holds the slots' `busy` (taken
/// in [`Plan::new`], given back in `Drop`).
pub(crate) struct Plan<'a> {
    slots: Option<&'a MapSlots>,
    mm: *mut MmStruct,
    seq: u32,
    /// Slots this record names.
    used: u32,
    leaf: u8,
    /// New mappings this record gives slots (in the state's `new`).
    ne: usize,
    /// The state's `nibbles` are this record's.
    has_nibbles: bool,
    /// After [`Plan::take_refs`]: which entries name their slot (else the
    /// slot is emptied).
    valid: [bool; NEW_MAX],
    /// The range and slot + 1 of the last address named (0: a mapping
    /// that cannot be named).
    last: Option<(u64, u64, u8)>,
    /// An address lies in a mapping that cannot be named, or may (no
    /// room for it): the record holds its address space (`mm_users`)
    /// instead, as rprof did before it named mappings, so that the drain
    /// can look it up after the process exited.  Not for an address in no
    /// mapping at all.
    pin: bool,
    /// No address can be named (see [`Plan::new`]): any pins.
    pin_all: bool,
}

impl<'a> Plan<'a> {
    /// A plan that names nothing (a record without user addresses).
    pub(crate) fn none() -> Self {
        // SAFETY: Without slots there is nothing to take.
        unsafe { Self::new(None, core::ptr::null_mut(), 0) }
    }

    /// A plan for current's address space `mm` (not referenced; null for
    /// none) at write-lock sequence `seq`, on `slots`, or one that names
    /// nothing (no slots, no address space, a write section open, or the
    /// slots in use by the handler this one interrupted).
    ///
    /// # Safety
    ///
    /// Every plan on `slots` is made on one CPU, and plans on it nest: a
    /// plan made while another lives is dropped before that one is used
    /// again (an overflow handler interrupting another on the CPU whose
    /// slots these are, preemption off; or one thread's plans on slots
    /// of its own).  `busy` is taken without a locked instruction
    /// ([`MapSlots::take`]), which two CPUs could both win.
    pub(crate) unsafe fn new(slots: Option<&'a MapSlots>, mm: *mut MmStruct, seq: u32) -> Self {
        let wanted = slots.is_some() && !mm.is_null();
        let slots = match slots {
            Some(s) if !mm.is_null() && seq & 1 == 0 && s.take() => Some(s),
            _ => None,
        };
        // INVARIANT: `Some` only when `take()` took `busy`.
        Self {
            slots,
            mm,
            seq,
            used: 0,
            leaf: 0,
            ne: 0,
            has_nibbles: false,
            valid: [false; NEW_MAX],
            last: None,
            // Slots in use by the handler this one interrupted, or a write
            // section open: nothing can be named.
            pin_all: wanted && slots.is_none(),
            pin: false,
        }
    }

    /// The state: its per-record arrays are this plan's.  `None` without
    /// slots (then `ne` is 0 and `has_nibbles` false: nothing to read).
    fn state(&mut self) -> Option<&mut State> {
        // SAFETY: We hold `busy` (`Plan` invariant), so no one else
        // touches the state until `Drop`; the reference borrows the plan
        // mutably, so the plan cannot make a second one while it lives.
        self.slots.map(|s| unsafe { &mut *s.state.get() })
    }

    /// This record's new mappings.
    fn new_entries(&mut self) -> &[New] {
        let ne = self.ne;
        match self.state() {
            Some(st) => &st.new[..ne],
            None => &[],
        }
    }

    /// The slot + 1 that names `addr` in this record, a new one if need
    /// be, or 0.
    #[inline(always)]
    fn slot_of(&mut self, addr: u64) -> u8 {
        let Some(slots) = self.slots else {
            self.pin |= self.pin_all;
            return 0;
        };
        // The frames of a chain mostly run through one mapping: the slot
        // of the last address first.
        if let Some((start, end, s)) = self.last {
            if start <= addr && addr < end {
                return s;
            }
        }
        // Then the slot that named the CPU's last address, if this record
        // replaces no slot (else `find_slot` knows which it may not name).
        if self.ne == 0 {
            // SAFETY: We hold `busy` (`Plan` invariant), so no one else
            // touches the state until `Drop`; this shared borrow ends
            // before any of the plan's methods takes a mutable one.
            let st = unsafe { &*slots.state.get() };
            let j = st.hint % SLOTS;
            let s = &st.slots[j];
            if s.mm == self.mm && s.seq == self.seq && s.map.start <= addr && addr < s.map.end {
                self.used |= 1 << j;
                self.last = Some((s.map.start, s.map.end, j as u8 + 1));
                return j as u8 + 1;
            }
        }
        let (s, range) = self.find_slot(slots, addr);
        self.last = range.map(|(start, end)| (start, end, s));
        s
    }

    /// [`Plan::slot_of`] without its shortcuts: the slot + 1 that names
    /// `addr` (0: none), and the range of the mapping it found, which
    /// names every other address in it alike.
    #[inline(never)]
    fn find_slot(&mut self, slots: &MapSlots, addr: u64) -> (u8, Option<(u64, u64)>) {
        let named = |j: usize, m: &NmiMap| (j as u8 + 1, Some((m.start, m.end)));
        // SAFETY: We hold `busy` (`Plan` invariant), so no one else
        // touches the state until `Drop`.
        let st = unsafe { &mut *slots.state.get() };
        if let Some(n) = st.new[..self.ne].iter().find(|n| n.map.start <= addr && addr < n.map.end) {
            return named(n.slot, &n.map);
        }
        // A slot this record gives a new mapping names the new one from
        // the drain's point of view: its old mapping is not to be named.
        let replaced = st.new[..self.ne].iter().fold(0u32, |m, n| m | 1 << n.slot);
        let mm = self.mm;
        let within = |j: usize, s: &Slot| replaced & (1 << j) == 0 && s.mm == mm && s.map.start <= addr && addr < s.map.end;
        let current = |j: usize| within(j, &st.slots[j]) && st.slots[j].seq == self.seq;
        let hint = st.hint % SLOTS;
        if let Some(j) = core::iter::once(hint).chain(0..SLOTS).find(|&j| current(j)) {
            st.hint = j;
            self.used |= 1 << j;
            return named(j, &st.slots[j].map);
        }
        // Looked up only if a slot may name it after all (one from before
        // the sequence changed) or a new one may.
        let stale = (0..SLOTS).any(|j| within(j, &st.slots[j]));
        let free = (0..SLOTS).any(|j| self.used & (1 << j) == 0);
        if !stale && (self.ne == NEW_MAX || !free) {
            self.pin = true;
            return (0, None);
        }
        let mut map = NmiMap::default();
        // SAFETY: NMI-safe; `mm` is current's (the caller's).
        if !unsafe { helpers::rprof_nmi_map(self.mm, self.seq, addr, &mut map) } {
            return (0, None);
        }
        if map.flags & helpers::NMI_MAP_BACKING != 0 {
            // 6.12's backing files: no reference from here (`maps.c`);
            // the rest of this mapping is not looked up again.
            self.pin = true;
            return (0, Some((map.start, map.end)));
        }
        // A slot from before the sequence changed: the same mapping (most
        // address-space changes are elsewhere) is good under the new one.
        if let Some(j) = (0..SLOTS).find(|&j| within(j, &st.slots[j]) && st.slots[j].map == map) {
            st.slots[j].seq = self.seq;
            st.hint = j;
            self.used |= 1 << j;
            return named(j, &map);
        }
        if self.ne == NEW_MAX {
            self.pin = true;
            return (0, None);
        }
        let Some(j) = (0..SLOTS).map(|k| (st.next + k) % SLOTS).find(|&j| self.used & (1 << j) == 0) else {
            self.pin = true;
            return (0, None);
        };
        st.next = (j + 1) % SLOTS;
        st.hint = j;
        self.used |= 1 << j;
        st.new[self.ne] = New { slot: j, map };
        self.ne += 1;
        named(j, &map)
    }

    /// Names the sampled ip.
    #[inline(always)]
    pub(crate) fn leaf(&mut self, ip: u64) {
        self.leaf = self.slot_of(ip);
    }

    /// Names user frame `i` of the chain, looked up at `addr`.
    pub(crate) fn frame(&mut self, i: usize, addr: u64) {
        let s = self.slot_of(addr);
        if s != 0 && i < NIBBLE_WORDS * NIBBLES_PER_WORD {
            let first = !self.has_nibbles;
            // A slot was named: there are slots.
            let Some(st) = self.state() else { return };
            if first {
                st.nibbles = [0; NIBBLE_WORDS];
            }
            st.nibbles[i / NIBBLES_PER_WORD] |= u64::from(s) << (4 * (i % NIBBLES_PER_WORD));
            self.has_nibbles = true;
        }
    }

    /// Whether the record carries nothing after its frames and changes no
    /// slot: no new mapping, no frame nibbles.  Such a record needs no
    /// [`Plan::take_refs`] and no [`Plan::commit`].
    pub(crate) fn is_plain(&self) -> bool {
        self.ne == 0 && !self.has_nibbles
    }

    /// Whether the record must hold its address space (`mm_users`): an
    /// address of it lies in a mapping that cannot be named.
    pub(crate) fn pin(&self) -> bool {
        self.pin
    }

    /// The record's `map` byte.
    pub(crate) fn map_byte(&self) -> u8 {
        self.leaf | (self.ne as u8) << MAP_ENTRIES_SHIFT | if self.has_nibbles { MAP_NIBBLES } else { 0 }
    }

    /// The `map` byte of the record without its continuation (a chain cut
    /// for space): the sampled ip's slot if it needs no entry.
    pub(crate) fn cut_map_byte(&mut self) -> u8 {
        let leaf = self.leaf;
        let new = self.new_entries().iter().any(|n| n.slot as u8 + 1 == leaf);
        if new {
            0
        } else {
            self.leaf
        }
    }

    /// Words this record carries after `nu` user frames.
    pub(crate) fn tail_len(&self, nu: usize) -> usize {
        tail_words(self.map_byte(), nu)
    }

    /// Takes the entries' references and writes the record's tail (at
    /// least [`Plan::tail_len`] words) into `out`.  Called once, after the
    /// ring reserved room for the record.  NMI context.
    pub(crate) fn take_refs(&mut self, out: &mut [u64], nu: usize) {
        let mut w = 0;
        for k in 0..self.ne {
            let n = self.new_entries()[k];
            let mut flags = n.slot as u64;
            let mut file = 0u64;
            if n.map.file.is_null() {
                // Anonymous memory: nothing to hold.
                flags |= ENTRY_VALID;
                self.valid[k] = true;
            } else {
                // SAFETY: NMI-safe; `file` is the file of a VMA
                // `rprof_nmi_map` found in `mm` under `seq`.
                match unsafe { helpers::rprof_nmi_file_get(self.mm, self.seq, n.map.file) } {
                    helpers::NMI_REF_OK => {
                        flags |= ENTRY_VALID | ENTRY_REF;
                        if n.map.flags & helpers::NMI_MAP_EXE != 0 {
                            flags |= ENTRY_EXE;
                        }
                        file = n.map.file as u64;
                        self.valid[k] = true;
                    }
                    helpers::NMI_REF_STALE => {
                        flags |= ENTRY_REF;
                        file = n.map.file as u64;
                    }
                    _ => {}
                }
            }
            // SAFETY: NMI-safe: an atomic increment on current's mm, which
            // its task holds.
            unsafe { helpers::rprof_mm_grab(self.mm) };
            let words = [file, n.map.start & !ENTRY_FLAGS | flags, n.map.end, n.map.pgoff_bytes];
            for (dst, src) in out.iter_mut().skip(w).zip(words) {
                *dst = src;
            }
            w += ENTRY_WORDS;
        }
        let has_nibbles = self.has_nibbles;
        if let (true, Some(st)) = (has_nibbles, self.state()) {
            let from = w.min(out.len());
            let n = nu.div_ceil(NIBBLES_PER_WORD).min(NIBBLE_WORDS);
            for (dst, src) in out[from..].iter_mut().zip(&st.nibbles[..n]) {
                *dst = *src;
            }
        }
    }

    /// The record is in the ring: the slots become what its entries say.
    /// Not called when the record did not fit (then no reference was
    /// taken, and the slots stay as they were).
    pub(crate) fn commit(&mut self) {
        let Some(slots) = self.slots else { return };
        // SAFETY: We hold `busy` (`Plan` invariant).
        let st = unsafe { &mut *slots.state.get() };
        for k in 0..self.ne {
            let n = st.new[k];
            st.slots[n.slot] = if self.valid[k] { Slot { mm: self.mm, seq: self.seq, map: n.map } } else { EMPTY };
        }
    }
}

impl Drop for Plan<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.slots {
            slots.give_back();
        }
    }
}

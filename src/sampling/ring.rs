// SPDX-License-Identifier: GPL-2.0

//! The per-CPU sample ring: lock-free, fixed-size slots, drop when full.
//!
//! **NMI context**: [`Ring::push`] runs in the perf overflow handler, which
//! may be an NMI.  It takes no lock, never sleeps, never allocates and
//! never loops unboundedly except to retry a compare-and-swap that an
//! interrupting writer made fail (each retry means a nested writer
//! completed a reservation, and nesting is bounded by the context levels).
//!
//! This file depends only on `core` (or on `loom` when built with
//! `cfg(loom)`), so that the host crate `tools/ring-model` compiles this very
//! file and model-checks it with concurrent writers and a reader.
//!
//! # Design
//!
//! The ring has `capacity` slots, a power of two, and three counters that
//! only grow: `head` (slots reserved by writers), `tail` (slots consumed by
//! the reader) and `lost` (records dropped because the ring was full).
//! Position `p` lives in slot `p % capacity`.  Each slot carries a sequence
//! word `seq`; a writer that has filled position `p` publishes it by storing
//! `seq = p + 1` with release ordering.
//!
//! ```text
//!   writer (this CPU: task, softirq, hardirq, NMI, nested in any order)
//!     1. h = head; t = tail (acquire)
//!     2. if h - t == capacity: lost += 1, return Full
//!     3. CAS head: h -> h + 1, else go to 1 (an interrupting writer won)
//!     4. write the value into slot h % capacity
//!     5. slot.seq = h + 1 (release)             -- commit
//!
//!   reader (the drain, any CPU, one at a time)
//!     1. t = tail (only the reader writes it)
//!     2. if slot(t).seq (acquire) != t + 1: nothing complete at t, stop
//!     3. read the value in slot t % capacity (in place, or a copy)
//!     4. tail = t + 1 (release)                 -- frees the slot
//! ```
//!
//! Why this is correct under nesting: a writer interrupted between 3 and 5
//! leaves its slot uncommitted; a nested writer reserves the next position,
//! fills and commits it, and returns.  The reader stops at the first
//! uncommitted position, so it never sees a partial record, and it sees the
//! nested record only after the outer one commits, in position order.
//! Records are never overwritten: a writer reserves position `h` only when
//! `h - tail < capacity`, and the tail it read was released by the reader
//! after it finished reading position `h - capacity` in that slot.  The
//! `seq` of a slot for position `p` is `p + 1`, and a stale slot still holds
//! `p + 1 - capacity`, so the reader cannot mistake an old lap for a new one.
//!
//! # Records of several slots
//!
//! A record may take `1 + extra` consecutive positions (a sample with its
//! call chain): [`Ring::push_multi_with`] reserves them all with the one
//! compare-and-swap (`head -> head + 1 + extra`, only if all fit), writes
//! the continuation slots, then the first slot, and publishes the first
//! slot's `seq` last.  The reader checks only the first slot's `seq`; the
//! release/acquire pair on it makes the continuation slots' values
//! visible too, and [`Ring::pop_multi`] consumes all the positions at
//! once (the caller says how many from the first value).  Continuation
//! slots keep whatever `seq` they had: the reader never looks at a
//! position that is not a record's first, because it always steps from
//! one first position to the next, and a stale `seq` there is an older
//! lap's (`p + 1 - k * capacity`), never `p + 1`.  Positions wrap around
//! the slot array like single ones (`p % capacity`).
//!
//! Counters are `u64`: at 10^9 records a second they wrap after 584 years.
//! The compare-and-swap is a locked instruction on x86 (about 6 ns); all
//! writers of a ring are on one CPU, so a `local_t`-style unlocked one would
//! do, but `core` has none, and the model checker needs the atomic one.

// The items are `pub` for the host crate that model-checks this file.
#![allow(unreachable_pub)]

#[cfg(loom)]
use loom::{cell::UnsafeCell, sync::atomic::AtomicU64};

#[cfg(not(loom))]
use core::{cell::UnsafeCell, sync::atomic::AtomicU64};

use core::mem::MaybeUninit;
use core::ops::Deref;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// One slot of a ring.
///
/// # Invariants
///
/// `value` is initialised whenever `seq == p + 1` for a position `p` that
/// maps to this slot and the reader has not yet consumed `p`.
pub struct Slot<T> {
    seq: AtomicU64,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: The fields are private to this file, and only `Ring` touches a
// slot's value, following the protocol in the module doc, which orders
// every access after the previous one (release/acquire on `seq` and
// `tail`).  `T: Send` because values move from writer to reader.
unsafe impl<T: Send> Sync for Slot<T> {}

impl<T> Slot<T> {
    /// An empty slot.
    pub fn new() -> Self {
        Self {
            seq: AtomicU64::new(0),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`Ring::push`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// Stored; the ring now holds this many records (including it).
    Stored(u64),
    /// The ring was full; the record was dropped and counted in `lost`.
    Full,
}

/// A ring of `T` over the slot storage `S` (a slice of [`Slot`]).
///
/// # Invariants
///
/// - `slots.len()` is a power of two, at least 2, and `mask == len - 1`.
/// - `tail <= head <= tail + capacity` at all times.
/// - Only one reader runs at a time (callers of [`Ring::pop`] promise it).
pub struct Ring<T: Copy, S: Deref<Target = [Slot<T>]>> {
    head: AtomicU64,
    tail: AtomicU64,
    lost: AtomicU64,
    /// Continuation slots reserved so far (`head - continued` records).
    continued: AtomicU64,
    high_water: AtomicU64,
    mask: u64,
    slots: S,
}

// SAFETY: Slots are handed between writers and the reader through the
// `seq`/`tail` protocol described in the module doc, which gives every
// access to a slot's value a happens-before edge with the previous one.
// `T: Send` because values move from the writer's context to the reader's.
unsafe impl<T: Copy + Send, S: Deref<Target = [Slot<T>]> + Sync> Sync for Ring<T, S> {}
// SAFETY: As above; moving the ring moves owned storage.
unsafe impl<T: Copy + Send, S: Deref<Target = [Slot<T>]> + Send> Send for Ring<T, S> {}

impl<T: Copy, S: Deref<Target = [Slot<T>]>> Ring<T, S> {
    /// Makes a ring over `slots`, whose length must be a power of two of at
    /// least 2; otherwise the storage is given back.
    pub fn new(slots: S) -> Result<Self, S> {
        let n = slots.len();
        if n < 2 || !n.is_power_of_two() {
            return Err(slots);
        }
        // INVARIANT: length checked; all counters start at 0.
        Ok(Self {
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            continued: AtomicU64::new(0),
            high_water: AtomicU64::new(0),
            mask: n as u64 - 1,
            slots,
        })
    }

    /// The number of slots.
    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Appends `value`, or drops it and counts it when the ring is full.
    ///
    /// NMI-safe; may nest with itself on one CPU and may even run
    /// concurrently on several CPUs.  (The module's handler uses
    /// [`Ring::push_with`]; tests, the benchmark and the model use this.)
    #[allow(dead_code)]
    pub fn push(&self, value: T) -> Push {
        self.push_with(|| value)
    }

    /// Like [`Ring::push`], but makes the value only once a slot is
    /// reserved, so that `make` may take references (an address space,
    /// say) that a dropped record would have to give back, which NMI
    /// context could not do.  `make` runs with the slot reserved and
    /// unpublished; it must be NMI-safe too if the caller is.
    #[inline(always)]
    pub fn push_with<F: FnOnce() -> T>(&self, make: F) -> Push {
        // No continuation: `None` of a function type, which the compiler
        // removes with everything that depends on it.
        self.push_n::<F, fn(u64) -> T>(0, make, None, true)
    }

    /// Like [`Ring::push_with`], for a record of `1 + extra` slots: the
    /// first made by `make`, continuation slot `i` (0-based) by `rest(i)`.
    /// All of them are stored, or none (then the record counts once in
    /// `lost`).  `extra` must be below the capacity; a larger one never
    /// fits.  NMI-safe as [`Ring::push_with`], with `make` and `rest`.
    #[allow(dead_code)]
    pub fn push_multi_with<F: FnOnce() -> T, G: FnMut(u64) -> T>(
        &self,
        extra: u64,
        make: F,
        rest: G,
    ) -> Push {
        self.push_n(extra, make, Some(rest), true)
    }

    /// [`Ring::push_multi_with`] that does not count a record that did not
    /// fit: the caller tries something smaller, or counts it with
    /// [`Ring::count_lost`].
    pub fn try_push_multi_with<F: FnOnce() -> T, G: FnMut(u64) -> T>(
        &self,
        extra: u64,
        make: F,
        rest: G,
    ) -> Push {
        self.push_n(extra, make, Some(rest), false)
    }

    /// Counts one record dropped for want of room (after a
    /// [`Ring::try_push_multi_with`] that found none; the handler instead
    /// falls back to a one-slot push, which counts).  NMI-safe.
    #[allow(dead_code)]
    pub fn count_lost(&self) {
        self.lost.fetch_add(1, Relaxed);
    }

    /// Reserves `1 + extra` positions and writes them (`rest` makes the
    /// continuation slots; `None` only with `extra == 0`).
    #[inline(always)]
    fn push_n<F: FnOnce() -> T, G: FnMut(u64) -> T>(
        &self,
        extra: u64,
        make: F,
        rest: Option<G>,
        count_lost: bool,
    ) -> Push {
        let extra = if rest.is_some() { extra } else { 0 };
        let n = extra.saturating_add(1);
        // The tail is loaded before the head, so that `tail <= head` here:
        // the reader released position `tail - 1` only after it saw that
        // position's `seq` (acquire), which its writer stored after
        // reserving it, so the reservation happens-before our load of
        // `head`, which therefore sees it (coherence).  Loaded the other
        // way round, a stale `head` below a fresh `tail` would look like a
        // full ring and drop a sample for nothing.
        let mut tail = self.tail.load(Acquire);
        let mut head = self.head.load(Relaxed);
        loop {
            // `tail` may be older than `head` (loaded first, see above),
            // so `used` may exceed the capacity: full then, as it was when
            // `tail` was loaded.
            let used = head.wrapping_sub(tail);
            if used >= self.capacity() || self.capacity() - used < n {
                if count_lost {
                    self.lost.fetch_add(1, Relaxed);
                }
                return Push::Full;
            }
            match self
                .head
                .compare_exchange_weak(head, head + n, Relaxed, Relaxed)
            {
                Ok(_) => break,
                Err(_) => {
                    tail = self.tail.load(Acquire);
                    head = self.head.load(Relaxed);
                }
            }
        }
        if extra > 0 {
            // Only multi-slot records pay for this: `stored()` counts
            // records, not positions.
            self.continued.fetch_add(extra, Relaxed);
        }
        if let Some(mut rest) = rest {
            for i in 0..extra {
                // SAFETY: Positions `head + 1 ..= head + extra` are ours,
                // as `head` is (below).
                unsafe { self.write(head + 1 + i, rest(i)) };
            }
        }
        // SAFETY: Positions `head .. head + n` are ours alone: we reserved
        // them with the CAS, and the reader finished with the slots'
        // previous positions (`p - capacity`) before releasing the tail we
        // checked.
        unsafe { self.write(head, make()) };
        // Publishes the whole record (module doc).
        self.slots[(head & self.mask) as usize]
            .seq
            .store(head + 1, Release);

        let end = head + n;
        let fill = end - self.tail.load(Relaxed).min(end);
        if fill > self.high_water.load(Relaxed) {
            self.high_water.fetch_max(fill, Relaxed);
        }
        Push::Stored(fill)
    }

    /// Writes `value` into the slot of position `pos`.
    ///
    /// # Safety
    ///
    /// The caller reserved `pos` and has not published it.
    #[inline(always)]
    unsafe fn write(&self, pos: u64, value: T) {
        let slot = &self.slots[(pos & self.mask) as usize];
        #[cfg(not(loom))]
        // SAFETY: The caller owns the position (contract).
        unsafe {
            (*slot.value.get()).write(value)
        };
        #[cfg(loom)]
        // SAFETY: As above.
        slot.value.with_mut(|v| unsafe { (*v).write(value) });
    }

    /// Reads the value of position `pos`.
    ///
    /// # Safety
    ///
    /// `pos` belongs to a record the reader has seen published and not yet
    /// consumed.
    #[inline(always)]
    unsafe fn read(&self, pos: u64) -> T {
        let slot = &self.slots[(pos & self.mask) as usize];
        #[cfg(not(loom))]
        // SAFETY: Published and not consumed: initialised, and no writer
        // touches it until the reader releases the tail (contract).
        let value = unsafe { (*slot.value.get()).assume_init() };
        #[cfg(loom)]
        // SAFETY: As above.
        let value = slot.value.with(|v| unsafe { (*v).assume_init() });
        value
    }

    /// Removes the oldest complete record of several slots, if any:
    /// `extra(first)` says how many continuation slots follow the first
    /// value (as its writer passed to [`Ring::push_multi_with`]), and
    /// `take(first, rest)` gets the first value where it lies (no copy)
    /// and a reader of continuation slot `i`; its result is returned.  The
    /// record's slots are released to writers only after `take` returns.
    ///
    /// # Safety
    ///
    /// No other `pop`, `pop_with` or `pop_multi` on this ring may run
    /// concurrently, nor from inside `extra` or `take` (the tail moves only
    /// once `take` returns: a nested pop would take the same record
    /// again), and `extra(first)` must be what the record's writer passed
    /// (for a record from [`Ring::push_with`], 0).
    #[inline(always)]
    pub unsafe fn pop_multi<R>(
        &self,
        extra: impl FnOnce(&T) -> u64,
        take: impl FnOnce(&T, &mut dyn FnMut(u64) -> T) -> R,
    ) -> Option<R> {
        let tail = self.tail.load(Relaxed);
        let slot = &self.slots[(tail & self.mask) as usize];
        if slot.seq.load(Acquire) != tail + 1 {
            return None;
        }
        let with_first = |first: &T| {
            // Its writer reserved `1 + extra` positions, fewer than the
            // capacity; the bound keeps a broken caller inside the ring.
            let n = extra(first).min(self.capacity() - 1);
            let result = take(first, &mut |i| {
                if i >= n {
                    // Not part of the record: never read past it.
                    return *first;
                }
                // SAFETY: Continuation slot `i < n` of the published
                // record, which no writer touches before the tail moves.
                unsafe { self.read(tail + 1 + i) }
            });
            (n, result)
        };
        // SAFETY: `seq == tail + 1` (acquire): the record at `tail` is
        // published, its continuation slots with it (module doc), and no
        // writer touches them until we release the tail, after `take` is
        // done with the reference.
        #[cfg(not(loom))]
        let (n, result) = with_first(unsafe { (*slot.value.get()).assume_init_ref() });
        #[cfg(loom)]
        // SAFETY: As above.
        let (n, result) = slot.value.with(|v| with_first(unsafe { (*v).assume_init_ref() }));
        self.tail.store(tail + 1 + n, Release);
        Some(result)
    }

    /// Removes the oldest record, if any, handing `f` a reference to it
    /// where it lies (no copy); returns `f`'s result.  The slot is
    /// released to writers only after `f` returns.
    ///
    /// # Safety
    ///
    /// No other `pop`, `pop_with` or `pop_multi` on this ring may run
    /// concurrently, and the record must be a single slot (from
    /// [`Ring::push_with`]).
    #[allow(dead_code)]
    #[inline(always)]
    pub unsafe fn pop_with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        // SAFETY: The caller's contract; a single slot has no
        // continuation.
        unsafe { self.pop_multi(|_| 0, |first, _| f(first)) }
    }

    /// Removes the oldest complete record, if any.
    ///
    /// # Safety
    ///
    /// No other `pop` on this ring may run concurrently.
    #[allow(dead_code)]
    pub unsafe fn pop(&self) -> Option<T> {
        let tail = self.tail.load(Relaxed);
        let slot = &self.slots[(tail & self.mask) as usize];
        if slot.seq.load(Acquire) != tail + 1 {
            return None;
        }
        // SAFETY: `seq == tail + 1` (acquire) means the writer of position
        // `tail` initialised the value and published it (slot invariant);
        // no writer touches the slot again until we release the tail.
        #[cfg(not(loom))]
        let value = unsafe { (*slot.value.get()).assume_init() };
        #[cfg(loom)]
        // SAFETY: As above.
        let value = slot.value.with(|v| unsafe { (*v).assume_init() });
        self.tail.store(tail + 1, Release);
        Some(value)
    }

    /// Records dropped because the ring was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(Relaxed)
    }

    /// Records stored so far (consumed or not): positions reserved, less
    /// the continuation slots of multi-slot records.  Exact once the
    /// writers are quiet (STOP); a snapshot while they run.
    pub fn stored(&self) -> u64 {
        let continued = self.continued.load(Relaxed);
        self.head.load(Relaxed).saturating_sub(continued)
    }

    /// The highest fill seen by a writer, in records.
    pub fn high_water(&self) -> u64 {
        self.high_water.load(Relaxed)
    }

    /// Records reserved but not yet consumed (a snapshot).  For tests.
    #[allow(dead_code)]
    pub fn len(&self) -> u64 {
        let tail = self.tail.load(Acquire);
        self.head.load(Acquire).saturating_sub(tail)
    }
}

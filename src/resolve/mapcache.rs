// SPDX-License-Identifier: GPL-2.0

//! The last user mappings the drain resolved (up to [`ENTRIES`] of one
//! address space), so that the samples and call-chain frames after them in
//! the same mappings resolve without `mmap_lock`.
//!
//! Resolving a user sample takes the sampled address space's `mmap_lock`,
//! looks the VMA up and finds the file's cookie: most of what the drain
//! costs per sample (`make bench`, issue 16).  Yet nearly every sample of
//! a busy program falls in the mapping of the sample before it.  This
//! remembers that mapping, with the address space's write-lock sequence
//! under which it was looked up, and reuses it for a sample only when
//! nothing can have changed in between.
//!
//! # Why a hit gives the answer the lookup would
//!
//! `mm->mm_lock_seq` is a sequence count that every `mmap_lock` write
//! section makes odd on entry and even again on exit, so it changes with
//! every change to the mappings.  The handler reads it when it takes the
//! sample (`RingRecord::mm_seq`); [`MmRead::resolve`] reads it under
//! the read lock, where it is even.  The cache is filled only when the
//! two are equal: then no write section was open when the sample was
//! taken, and none began between the sample and the lookup.  A later
//! record hits only with the same address space and the same sequence: it
//! was taken while the mappings were exactly those of the lookup, so its
//! ip in the cached VMA's range means that VMA, as the lookup under the
//! lock would have found.  (A 32-bit sequence would have to go round,
//! 2^31 write sections, between two samples of one drain pass to fool
//! this.)
//!
//! The address space is compared by pointer.  The cache holds an
//! `mm_count` reference (`mmgrab`) on it, so the `mm_struct` cannot be
//! freed and its address reused by another process while cached.
//!
//! [`MmRead::resolve`]: crate::resolve::mm::MmRead::resolve

use crate::kapi::helpers::{self, MmStruct, VmaRange};

/// What a cached mapping resolves to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Target {
    /// A file: the offset is `pgoff_bytes + ip - start` in cookie's file.
    File(u64),
    /// Anonymous executable memory: the offset is the ip.
    Anon,
}

/// Mappings kept: a call chain typically runs through the program, the C
/// library and the dynamic loader.
pub(crate) const ENTRIES: usize = 4;

/// The last user mappings resolved, all of one address space and
/// sequence.
///
/// # Invariants
///
/// `mm` is null, or holds an `mm_count` reference taken with
/// `rprof_mm_grab` that this value drops; each of the first `len` entries
/// is a range and target that `MmRead::resolve` found in `mm` while its
/// sequence was `seq`.
pub(crate) struct MapCache {
    mm: *mut MmStruct,
    seq: u32,
    entries: [(VmaRange, Target); ENTRIES],
    len: usize,
    /// The entry the next new mapping replaces once all are used.
    next: usize,
    /// The entry of the last hit, tried first (below `ENTRIES`; an entry
    /// at or past `len` has an empty range and matches nothing).
    hot: usize,
}

// SAFETY: The `mm_count` reference may be dropped from any process
// context; the cache moves with the drain between workers.
unsafe impl Send for MapCache {}

impl MapCache {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        const EMPTY: (VmaRange, Target) =
            (VmaRange { start: 0, end: 0, pgoff_bytes: 0, mm_seq: 0, reserved: 0 }, Target::Anon);
        Self { mm: core::ptr::null_mut(), seq: 0, entries: [EMPTY; ENTRIES], len: 0, next: 0, hot: 0 }
    }

    /// The cookie and offset of a sample of `mm` at `ip` with sequence
    /// `seq`, if the cached mapping answers for it (see the module doc).
    #[inline(always)]
    pub(crate) fn get(&mut self, mm: *mut MmStruct, seq: u32, ip: u64) -> Option<(Target, u64)> {
        if mm.is_null() || mm != self.mm || seq != self.seq {
            return None;
        }
        // The entry of the last hit answers most samples: tried inline,
        // the others out of line.  `hot` is below ENTRIES (invariant).
        let (r, target) = &self.entries[self.hot % ENTRIES];
        if ip >= r.start && ip < r.end {
            return Some(Self::answer(r, target, ip));
        }
        self.get_other(ip)
    }

    /// [`MapCache::get`] past the entry of the last hit.
    #[inline(never)]
    fn get_other(&mut self, ip: u64) -> Option<(Target, u64)> {
        let len = self.len.min(ENTRIES);
        self.hot = self.entries[..len].iter().position(|(r, _)| ip >= r.start && ip < r.end)?;
        let (r, target) = &self.entries[self.hot];
        Some(Self::answer(r, target, ip))
    }

    #[inline(always)]
    fn answer(r: &VmaRange, target: &Target, ip: u64) -> (Target, u64) {
        match *target {
            Target::File(cookie) => (Target::File(cookie), crate::resolve::file_offset(r.pgoff_bytes, r.start, ip)),
            Target::Anon => (Target::Anon, ip),
        }
    }

    /// Remembers what a lookup for a sample with sequence `seq` found, if
    /// the lookup's sequence is the sample's (see the module doc).
    ///
    /// # Safety
    ///
    /// `mm` must be a live address space the caller holds a reference on
    /// (the ring record's), and process context.
    pub(crate) unsafe fn fill(&mut self, mm: *mut MmStruct, seq: u32, range: &VmaRange, target: Target) {
        if range.mm_seq != seq || range.start >= range.end || mm.is_null() {
            return;
        }
        if mm != self.mm {
            // SAFETY: The caller holds a reference on `mm`, so it is live
            // and we may take an `mm_count` one.
            unsafe { helpers::rprof_mm_grab(mm) };
            self.clear();
            self.mm = mm;
        }
        if seq != self.seq {
            self.forget_entries();
            self.seq = seq;
        }
        // INVARIANT: `mm` is grabbed; every entry comes from its lookups
        // at sequence `seq`.
        if self.len < ENTRIES {
            self.entries[self.len] = (*range, target);
            self.len += 1;
        } else {
            self.entries[self.next] = (*range, target);
            self.next = (self.next + 1) % ENTRIES;
        }
    }

    /// Forgets the cached mapping (and drops the reference on its mm).
    pub(crate) fn clear(&mut self) {
        if !self.mm.is_null() {
            // SAFETY: `mm` holds our `mm_count` reference (invariant);
            // process context (the drain, or the session's teardown).
            unsafe { helpers::rprof_mm_drop(self.mm) };
            self.mm = core::ptr::null_mut();
        }
        self.forget_entries();
    }
}

impl MapCache {
    /// Empties every entry (empty ranges match nothing, `hot` included).
    fn forget_entries(&mut self) {
        const EMPTY: (VmaRange, Target) =
            (VmaRange { start: 0, end: 0, pgoff_bytes: 0, mm_seq: 0, reserved: 0 }, Target::Anon);
        self.entries = [EMPTY; ENTRIES];
        self.len = 0;
        self.next = 0;
        self.hot = 0;
    }
}

impl Drop for MapCache {
    fn drop(&mut self) {
        self.clear();
    }
}

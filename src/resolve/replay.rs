// SPDX-License-Identifier: GPL-2.0

//! The drain's copy of each CPU's mapping slots
//! ([`crate::sampling::maps`]): kept current from the entries the records
//! carry, in ring order, so that a record's user addresses resolve
//! through the slots its handler named, after the process is gone too.
//!
//! Process context, under the drain lock.

use crate::kapi::helpers::{self, MmStruct};
use crate::resolve::mapcache::Target;
use crate::sampling::maps::{self, ENTRY_EXE, ENTRY_REF, ENTRY_SLOT, ENTRY_VALID, ENTRY_WORDS, SLOTS};
use crate::sampling::sampler::{self, SampleRing};
use core::ffi::c_void;
use kernel::prelude::*;

/// One slot of the copy.
///
/// # Invariants
///
/// `file` (if not null) holds a file reference and `mm` (if not null) an
/// `mm_count` reference, both taken by the handler for the entry that
/// filled the slot and owned by this slot; `live` says the slot names a
/// mapping (`file` null then means anonymous memory).
struct Slot {
    live: bool,
    file: *mut c_void,
    mm: *mut MmStruct,
    start: u64,
    end: u64,
    pgoff_bytes: u64,
    /// The mapping's cookie once the drain named it (until a RESET).
    target: Option<Target>,
    /// The file is its address space's executable.
    exe: bool,
}

impl Slot {
    const EMPTY: Slot = Slot {
        live: false,
        file: core::ptr::null_mut(),
        mm: core::ptr::null_mut(),
        start: 0,
        end: 0,
        pgoff_bytes: 0,
        target: None,
        exe: false,
    };

    /// Gives back the slot's references and empties it.
    fn clear(&mut self) {
        put_refs(self.file, self.mm);
        *self = Slot::EMPTY;
    }
}

fn put_refs(file: *mut c_void, mm: *mut MmStruct) {
    if !file.is_null() {
        // SAFETY: A reference the handler took for us (the callers';
        // process context).
        unsafe { helpers::rprof_file_put(file) };
    }
    if !mm.is_null() {
        // SAFETY: As above: an `mm_count` reference.
        unsafe { helpers::rprof_mm_drop(mm) };
    }
}

/// What a slot resolves an address to.
pub(crate) struct Found {
    /// The mapped file, referenced by the slot (null: anonymous memory).
    pub(crate) file: *mut c_void,
    /// Its cookie, if named already.
    pub(crate) target: Option<Target>,
    /// The address's offset in the file.
    pub(crate) offset: u64,
}

/// The copies of every CPU's slots.
pub(crate) struct Replay {
    cpus: KVec<[Slot; SLOTS]>,
}

// SAFETY: The references may be dropped from any process context; the
// copy moves with the drain between workers, under the drain lock.
unsafe impl Send for Replay {}

impl Replay {
    pub(crate) fn new(nr_cpus: usize) -> Result<Self> {
        let mut cpus = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        for _ in 0..nr_cpus {
            cpus.push(core::array::from_fn(|_| Slot::EMPTY), GFP_KERNEL)?;
        }
        Ok(Self { cpus })
    }

    /// Applies `entries` (whole entries of [`ENTRY_WORDS`] words) of a
    /// record of `cpu` whose address space is `mm`: each takes its slot,
    /// with the references the handler took for it, or empties it.
    pub(crate) fn apply(&mut self, cpu: usize, entries: &[u64], mm: *mut MmStruct) {
        let Some(slots) = self.cpus.get_mut(cpu) else {
            // No such CPU: give the references back.
            put_entries(entries, mm);
            return;
        };
        for e in entries.chunks_exact(ENTRY_WORDS) {
            let (w0, w1) = (e[0], e[1]);
            let file = if w1 & ENTRY_REF != 0 { w0 as *mut c_void } else { core::ptr::null_mut() };
            let slot = &mut slots[(w1 & ENTRY_SLOT) as usize % SLOTS];
            slot.clear();
            if w1 & ENTRY_VALID == 0 {
                // The handler could not hold the file: the slot is empty,
                // and what it took goes back.
                put_refs(file, mm);
                continue;
            }
            // INVARIANT: the entry's references, now the slot's.
            *slot = Slot {
                live: true,
                file,
                mm,
                start: w1 & !0xfff,
                end: e[2],
                pgoff_bytes: e[3],
                target: None,
                exe: w1 & ENTRY_EXE != 0,
            };
        }
    }

    /// What slot `slot` + 1 (`nibble`: 0 is none) of `cpu` says of `addr`
    /// in address space `mm`.
    pub(crate) fn find(&self, cpu: usize, nibble: u8, mm: *mut MmStruct, addr: u64) -> Option<Found> {
        let s = self.cpus.get(cpu)?.get((nibble as usize).checked_sub(1)?)?;
        if !s.live || s.mm != mm || addr < s.start || addr >= s.end {
            return None;
        }
        Some(Found { file: s.file, target: s.target, offset: crate::resolve::file_offset(s.pgoff_bytes, s.start, addr) })
    }

    /// The executable file of address space `mm` among `cpu`'s slots (the
    /// handler marks it), held by the slot.
    pub(crate) fn exe(&self, cpu: usize, mm: *mut MmStruct) -> Option<*mut c_void> {
        self.cpus.get(cpu)?.iter().find(|s| s.live && s.exe && s.mm == mm && !s.file.is_null()).map(|s| s.file)
    }

    /// Remembers the cookie of slot `nibble` of `cpu`.
    pub(crate) fn name(&mut self, cpu: usize, nibble: u8, target: Target) {
        if let Some(s) = self.cpus.get_mut(cpu).and_then(|c| c.get_mut((nibble as usize).wrapping_sub(1))) {
            s.target = Some(target);
        }
    }

    /// A RESET: the cookies are forgotten (the mappings are not).
    pub(crate) fn forget_targets(&mut self) {
        for s in self.cpus.iter_mut().flat_map(|c| c.iter_mut()) {
            s.target = None;
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        for s in self.cpus.iter_mut().flat_map(|c| c.iter_mut()) {
            s.clear();
        }
    }
}

/// Gives back the references a record's `entries` hold (a record dropped
/// unread, with its session).  Process context.
pub(crate) fn put_entries(entries: &[u64], mm: *mut MmStruct) {
    for e in entries.chunks_exact(ENTRY_WORDS) {
        put_refs(if e[1] & ENTRY_REF != 0 { e[0] as *mut c_void } else { core::ptr::null_mut() }, mm);
    }
}

/// Gives back the references the records left in `ring` hold: the
/// address space's and those of the mappings they carry.  Process
/// context.
///
/// # Safety
///
/// The caller is the ring's only consumer.
#[inline(never)]
pub(crate) unsafe fn give_back(ring: &SampleRing) {
    let mut words = [0u64; sampler::RECORD_WORDS];
    // SAFETY: The only consumer (the caller's contract).
    while let Some(rec) = unsafe { crate::resolve::reader::pop(ring, &mut words) } {
        let n = (rec.nk as usize + rec.nu as usize).min(words.len());
        let ne = maps::map_entries(rec.sample.map);
        put_entries(&words[n..(n + ne * ENTRY_WORDS).min(words.len())], rec.mm.0);
        if rec.sample.pinned != 0 && !rec.mm.0.is_null() {
            // SAFETY: The handler's `mm_users` reference (`Plan::pin`).
            unsafe { helpers::rprof_mm_put(rec.mm.0) };
        }
        if !rec.mm.0.is_null() {
            // SAFETY: The handler's `mm_count` reference; process context.
            unsafe { helpers::rprof_mm_drop(rec.mm.0) };
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The drain: per-CPU ring records in, resolved records out.
//!
//! Process context, under the session's drain lock (the one consumer of
//! the rings and producer of the event buffer).  OProfile's buffer_sync.c
//! is the model: samples leave the rings as raw instruction pointers and
//! enter the event buffer as (cookie, offset) pairs that stay meaningful
//! after the process, the mapping or the module is gone.
//!
//! # Why samples are resolved in time
//!
//! The overflow handler names the mapping of each user address it
//! records (the sampled ip, the chain's user frames) and sends the drain
//! each new one with a reference on its file ([`crate::sampling::maps`]);
//! the drain keeps a copy of every CPU's mappings ([`Replay`]), which the
//! records' entries update in ring order.  So a sample resolves to what
//! was mapped when it was taken, after its process exited, exec'd or
//! unmapped the file, and the handler pins no address space: a record
//! holds its `mm_struct` by `mm_count` only (dropped here, a run of one
//! address space's at once at the end of the pass: `Drain::put_mms`).
//!
//! An address the handler could not name (its slots were in use by the
//! handler it interrupted, a write section of `mmap_lock` was open, the
//! record had no room for more mappings) is looked up in the address
//! space, if it still has one (`rprof_mm_get_live`), under `mmap_lock`;
//! the record holds the address space's write-lock sequence at sampling
//! time, and a VMA created or changed since (its `vm_lock_seq` is not
//! older) is not trusted: the sample counts as lost with no mapping
//! instead of being attributed to whatever is mapped there now, and so
//! does one whose process is gone.  Module samples are resolved before
//! the module goes: the module notifier drains first
//! (`Session::module_going`).
//!
//! # Output
//!
//! TASK when the CPU or task differs from the last TASK in the stream (or
//! the task exec'd or renamed itself: its address space or comm changed),
//! SWITCH when the cookie differs from the last SWITCH, a COOKIE or MODULE
//! record before a cookie's first SWITCH, then the compact SAMPLE.  The
//! context is updated only by records that were actually written.
//!
//! # Call chains
//!
//! A sample of a session with chains carries its frames in the ring.  Its
//! user frames resolve as its ip does, with the same rules: the mapping
//! cache first, then one `mmap_lock` round for all the frames it missed
//! (`resolve::mm::MmRead`); kernel frames to the kernel or a module.
//! Return addresses are looked up one byte back, at the call, so that a
//! call at the very end of a mapping resolves to it; their offsets stay the
//! return addresses.  A frame that does not resolve stays in the chain as
//! `RPROF_COOKIE_UNRESOLVED` with its raw address.  The chain is written
//! once as a STACK record (src/resolve/stacks.rs), COOKIE and MODULE records for
//! its frames before it, and the sample names it.

use crate::resolve::cookies::{CookieTable, Forgotten, Object, PathRef};
use crate::buffer::evbuf::{EventBuffer, Producer, Record};
use crate::kapi::helpers::{
    self, MmStruct, VmaRange, RAW_TABLE, RAW_THROTTLED, RAW_USER,
};
use crate::resolve::mapcache::{MapCache, Target};
use crate::resolve::mm::{FrameRes, MmRead, RESOLVE_ANON, RESOLVE_BUSY, RESOLVE_FILE};
use crate::resolve::modules;
use crate::resolve::reader;
use crate::resolve::replay::Replay;
use crate::sampling::maps::{self, ENTRY_WORDS, MAP_LEAF};
use crate::sampling::sampler::{CHAIN_FLAGS, CHAIN_TAKEN};
use crate::resolve::stacks::{self, RawChains, Stacks};
use crate::sampling::sampler::{self, MmRef, RingRecord, SampleRing};
use crate::uapi::*;
use core::mem::size_of;
use kernel::bindings;
use kernel::prelude::*;

// SAFETY: All are `#[repr(C)]` uapi records of fixed-width fields laid out
// without padding (the header's rule; sizes are asserted in device/misc.c and
// by the userspace ABI tests), starting with `rprof_record_header`.
unsafe impl Record for rprof_sample {}
// SAFETY: As above.
unsafe impl Record for rprof_lost {}
// SAFETY: As above.
unsafe impl Record for rprof_session {}
// SAFETY: As above.
unsafe impl Record for rprof_throttle {}
// SAFETY: As above.
unsafe impl Record for rprof_task {}
// SAFETY: As above.
unsafe impl Record for rprof_switch {}
// SAFETY: As above.
unsafe impl Record for rprof_module {}
// SAFETY: As above.
unsafe impl Record for rprof_sample_stack {}
// SAFETY: As above.
unsafe impl Record for rprof_reset {}

// `miss_res` holds raw `struct path`s only between the call of
// the lookups under one `MmRead` and the loop after them in `Drain::stack_with`,
// which moves each reference into a `PathRef`; the rest is plain data.
// The drain lock keeps every access on one thread at a time.
// SAFETY: So the buffers may move between the workers that take the lock.
unsafe impl Send for Chains {}

impl Chains {
    fn new() -> Result<Self> {
        let mut miss_res = KVec::with_capacity(RPROF_MAX_FRAMES as usize, GFP_KERNEL)?;
        for _ in 0..RPROF_MAX_FRAMES {
            miss_res.push(FrameRes::new(), GFP_KERNEL)?;
        }
        Ok(Self {
            stacks: Stacks::new()?,
            raw: RawChains::new(modules::generation())?,
            resolved: KVec::with_capacity(helpers::CHAIN_WORDS, GFP_KERNEL)?,
            miss_ips: KVec::with_capacity(RPROF_MAX_FRAMES as usize, GFP_KERNEL)?,
            miss_at: KVec::with_capacity(RPROF_MAX_FRAMES as usize, GFP_KERNEL)?,
            miss_res,
        })
    }
}

/// Loss causes the drain counts itself, in `CpuDrain::lost` order; ring
/// drops are counted by the ring.
const STAGES: [u32; 5] =
    [RPROF_LOST_BUFFER, RPROF_LOST_NO_MM, RPROF_LOST_NO_MAPPING, RPROF_LOST_NO_COOKIE, RPROF_LOST_MM_BUSY];
const BUFFER: usize = 0;
const NO_MM: usize = 1;
const NO_MAPPING: usize = 2;
const NO_COOKIE: usize = 3;
const MM_BUSY: usize = 4;

/// The time one pass may spend waiting for sampled processes'
/// `mmap_lock`s (at most 1 ms for one lookup, in the helper): 5 ms, a
/// tenth of the default 50 ms drain interval, however long a process
/// holds its lock (one sleep of 50 to 100 us may go past it).
const LOCK_WAIT_NS: u64 = 5_000_000;

/// The drain's bookkeeping of one CPU.
#[derive(Default, Clone, Copy)]
pub(crate) struct CpuDrain {
    /// `ring.lost()` already reported in LOST records.
    ring_lost_reported: u64,
    /// Samples lost per cause (`STAGES`), all told and not yet reported.
    lost: [u64; 5],
    pending: [u64; 5],
    delivered: u64,
    throttled: u64,
    /// Events (bit = index) whose last sample on this CPU was throttled.
    throttled_events: u8,
}

/// State owned by whoever holds the drain lock.
pub(crate) struct Drain {
    pub(crate) producer: Producer,
    pub(crate) cpus: KVec<CpuDrain>,
    /// START (with the time sampling began) still to be written.
    pub(crate) start_pending: Option<u64>,
    /// STOP (with the time sampling ended) still to be written.
    pub(crate) stop_pending: Option<u64>,
    /// Cookies of modules gone during the run whose UNLOAD record did not
    /// fit yet, oldest first, from `unloads_done` on (the ones before it
    /// are written): written before the next samples, and STOP waits for
    /// them.
    unloads: KVec<u64>,
    unloads_done: usize,
    pub(crate) drains: u64,
    pub(crate) wakeups: u64,
    /// Nanoseconds this pass may still spend waiting for sampled
    /// processes' `mmap_lock`s (`resolve::mm::MmRead::lock`).
    lock_wait_ns: u64,
    /// RESET records written, those of [`Drain::auto_reset`] too.
    pub(crate) resets: u64,
    /// What the last automatic RESET forgot, until the drain lock is let go.
    forgotten: Option<Forgotten>,
    /// Whether a frame of the chain being resolved found its address
    /// space's `mmap_lock` taken.
    chain_busy: bool,
    pub(crate) cookies: CookieTable,
    /// The last TASK written.
    task: Option<TaskKey>,
    /// The last SWITCH written.
    cookie: u64,
    /// Scratch for variable-size records.
    scratch: KVec<u8>,
    /// The last user mapping resolved.  Dropped where the cookie table
    /// is (its `mmdrop` may free an `mm_struct`, process context, as the
    /// table's `path_put`s need).
    maps: MapCache,
    /// The handlers' mappings, per CPU.
    replay: Replay,
    /// Call chains, when the session takes them.
    chains: Option<KBox<Chains>>,
    /// The continuation words of the record being processed
    /// (`sampler::RECORD_WORDS`: its chain's frames and its mappings).
    /// Taken out while a record is processed (`Drain::take`), which an
    /// `Option` allows without making and dropping an empty vector each
    /// record (the drop of even an empty `KVec` calls the allocator).
    frames: Option<KVec<u64>>,
    /// Chain counters (GET_STATS).
    pub(crate) chain_stats: rprof_chain_stats,
    /// Address-space references of processed records not yet dropped: an
    /// address space and how many (`Drain::put_mms`; null and 0 when
    /// none).  They keep it alive a little longer than the records did,
    /// until the end of the drain pass.
    put: (MmRef, u64),
}

impl Drop for Drain {
    fn drop(&mut self) {
        // Process context: a session is dropped by the file or device
        // that held it.
        self.put_mms();
    }
}

/// What the drain needs for call chains, allocated once per session.
struct Chains {
    stacks: Stacks,
    /// Raw chains seen, to their stack ids.
    raw: RawChains,
    /// The resolved frames of the chain being processed.
    resolved: KVec<rprof_frame>,
    /// the lookups' input and output (`MmRead::resolve`).
    miss_ips: KVec<u64>,
    miss_at: KVec<usize>,
    miss_res: KVec<FrameRes>,
}

/// What a TASK record says, to tell when another is due: the CPU, the
/// task, and what exec and prctl(PR_SET_NAME) change (the address space,
/// compared by address only, and the comm).
#[derive(Clone, Copy, PartialEq, Eq)]
struct TaskKey {
    cpu: u32,
    pid: u32,
    tid: u32,
    mm: usize,
    comm: [u8; 16],
}

/// A record taken from `cpu`'s ring: its chain's `frames` and the slot
/// nibbles of their user side (`crate::sampling::maps`).
#[derive(Clone, Copy)]
struct Taken<'a> {
    cpu: usize,
    rec: &'a RingRecord,
    frames: &'a [u64],
    nibbles: &'a [u64],
}

/// What `resolve` found for a sample.
struct Where {
    cookie: u64,
    offset: u64,
}

/// Whether an unwind table gave at least one of `rec`'s user frames.
fn table_walked(rec: &RingRecord) -> bool {
    rec.sample.flags & RAW_TABLE != 0
        && u32::from(rec.chain) & RPROF_STACK_CUT == 0
        && helpers::raw_table_counts(rec.sample.flags).0 > 0
}

fn lost_record(stage: u32, cpu: usize, count: u64) -> rprof_lost {
    rprof_lost { header: rprof_lost::header(RPROF_RECORD_LOST, 0), stage, cpu: cpu as u32, count }
}

fn c_name<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(N - 1);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

impl Drain {
    pub(crate) fn new(producer: Producer, nr_cpus: usize, max_cookies: usize, chains: bool) -> Result<Self> {
        let mut cpus = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        for _ in 0..nr_cpus {
            cpus.push(CpuDrain::default(), GFP_KERNEL)?;
        }
        let mut scratch = KVec::new();
        scratch.extend_with(size_of::<rprof_cookie_record>() + 4096 + 8, 0u8, GFP_KERNEL)?;
        Ok(Self {
            producer,
            cpus,
            start_pending: None,
            stop_pending: None,
            unloads: KVec::new(),
            unloads_done: 0,
            drains: 0,
            wakeups: 0,
            resets: 0,
            lock_wait_ns: LOCK_WAIT_NS,
            forgotten: None,
            chain_busy: false,
            cookies: CookieTable::new(max_cookies)?,
            task: None,
            cookie: RPROF_COOKIE_NONE as u64,
            scratch,
            maps: MapCache::new(),
            replay: Replay::new(nr_cpus)?,
            chains: if chains { Some(KBox::new(Chains::new()?, GFP_KERNEL)?) } else { None },
            frames: {
                let mut f = KVec::new();
                f.extend_with(sampler::RECORD_WORDS, 0u64, GFP_KERNEL)?;
                Some(f)
            },
            chain_stats: rprof_chain_stats::default(),
            put: (MmRef(core::ptr::null_mut()), 0),
        })
    }

    /// Whether a LOST record is owed for any CPU (`ring_lost` per CPU).
    pub(crate) fn owes_lost(&self, ring_lost: impl Fn(usize) -> u64) -> bool {
        self.cpus
            .iter()
            .enumerate()
            .any(|(cpu, st)| st.pending.iter().any(|&n| n > 0) || ring_lost(cpu) > st.ring_lost_reported)
    }

    /// A new pass: a new budget of time for busy `mmap_lock`s.
    pub(crate) fn begin_pass(&mut self) {
        self.drains += 1;
        self.lock_wait_ns = LOCK_WAIT_NS;
    }

    /// Writes the LOST records owed for `cpu`, as far as they fit.
    pub(crate) fn report_lost(&mut self, buf: &EventBuffer, cpu: usize, ring: &SampleRing) {
        let st = &mut self.cpus[cpu];
        let lost = ring.lost();
        if lost > st.ring_lost_reported
            && buf.write(&mut self.producer, &lost_record(RPROF_LOST_RING, cpu, lost - st.ring_lost_reported), 0)
        {
            st.ring_lost_reported = lost;
        }
        for (i, &stage) in STAGES.iter().enumerate() {
            if st.pending[i] > 0 && buf.write(&mut self.producer, &lost_record(stage, cpu, st.pending[i]), 0) {
                st.pending[i] = 0;
            }
        }
    }

    fn count_lost(&mut self, cpu: usize, cause: usize) {
        self.cpus[cpu].lost[cause] += 1;
        self.cpus[cpu].pending[cause] += 1;
    }

    /// Takes the oldest record of `cpu`'s `ring` and processes it; false
    /// if the ring had none.
    ///
    /// # Safety
    ///
    /// The caller is the ring's only reader (holds the drain lock).
    #[inline(always)]
    pub(crate) unsafe fn take(&mut self, buf: &EventBuffer, cpu: usize, ring: &SampleRing, reserve: u64) -> bool {
        let Some(mut frames) = self.frames.take() else {
            // Only while a record is processed, which never takes another
            // (a caller would read `false` as an empty ring).
            // SAFETY: printk_ratelimit() may be called anywhere.
            if unsafe { helpers::rprof_printk_ratelimit() } {
                pr_warn!("drain: a record taken while another is processed\n");
            }
            return false;
        };
        // A one-slot record is processed where it lies in the ring, a
        // chain's once copied out and its slots freed (`pop_with`).
        let mut copy = None;
        // SAFETY: The only reader (contract).
        let took = unsafe {
            crate::resolve::reader::pop_with(ring, &mut frames, &mut copy, |rec| self.process(buf, cpu, rec, &[], reserve))
        };
        if let Some(rec) = &copy {
            let n = reader::copied_words(rec, frames.len());
            self.process_with_chain(buf, cpu, rec, &frames[..n], reserve);
        }
        self.frames = Some(frames);
        took.is_some()
    }

    /// [`Drain::process`] out of line, for records with chains: the
    /// chainless path gets the inlined copy.
    #[inline(never)]
    fn process_with_chain(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, frames: &[u64], reserve: u64) {
        self.process(buf, cpu, rec, frames, reserve)
    }

    /// Resolves, writes (or counts as lost) one ring record of `cpu` with
    /// its continuation `words` (its chain's frames, then the mappings it
    /// carries), and drops the address-space reference it held.
    #[inline(always)]
    pub(crate) fn process(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, words: &[u64], reserve: u64) {
        #[cfg(rprof_bench)]
        let _timer = crate::resolve::stage::Timer::start(crate::resolve::stage::Stage::Record);
        let n = (rec.nk as usize + rec.nu as usize).min(words.len());
        let (frames, tail) = words.split_at(n);
        // The record's new mappings take their slots first, whatever
        // becomes of the sample: the copy follows the handler's slots in
        // ring order.
        let ne = maps::map_entries(rec.sample.map).min(tail.len() / ENTRY_WORDS);
        let (entries, nibbles) = tail.split_at(ne * ENTRY_WORDS);
        if ne > 0 {
            self.replay.apply(cpu, entries, rec.mm.0);
        }
        let nibbles = if rec.sample.map & maps::MAP_NIBBLES != 0 { nibbles } else { &[] };
        let ok = if self.start_pending.is_some() {
            // Nothing goes before START.
            Err(BUFFER)
        } else {
            self.deliver(buf, &Taken { cpu, rec, frames, nibbles }, reserve)
        };
        match ok {
            Ok(()) => self.cpus[cpu].delivered += 1,
            Err(cause) => self.count_lost(cpu, cause),
        }
        self.throttle_records(buf, cpu, rec, reserve);
        if rec.sample.pinned != 0 && !rec.mm.0.is_null() {
            // SAFETY: The handler's `mm_users` reference for this record
            // (`Plan::pin`); process context.
            unsafe { helpers::rprof_mm_put(rec.mm.0) };
        }
        if !rec.mm.0.is_null() {
            if self.put.0 .0 == rec.mm.0 {
                self.put.1 += 1;
            } else {
                self.put_mms();
                self.put = (rec.mm, 1);
            }
        }
    }

    /// Drops the address-space references of the records processed since
    /// the last call, which the drain keeps (`Drain::put`) to drop a run of
    /// samples of one address space at once.  Process context; the drain
    /// calls it at the end of every pass.
    pub(crate) fn put_mms(&mut self) {
        let (mm, n) = core::mem::replace(&mut self.put, (MmRef(core::ptr::null_mut()), 0));
        if n > 0 {
            // SAFETY: The handler took these `n` `mm_count` references for
            // us (one per record, moved here by `process`); process context.
            unsafe { helpers::rprof_mm_drop_many(mm.0, n) };
        }
    }

    /// Resolves `rec` (and its chain) and writes its records; the loss
    /// cause if it could not.
    #[inline(always)]
    fn deliver(&mut self, buf: &EventBuffer, t: &Taken<'_>, reserve: u64) -> Result<(), usize> {
        let Taken { cpu, rec, .. } = *t;
        let w = match self.resolve(cpu, rec) {
            // The table is full (not out of memory): forget it all (RESET
            // in the stream) and name the sample's file anew, rather than
            // lose it.
            Err(NO_COOKIE) if self.cookies.is_full() && self.auto_reset(buf, reserve) => self.resolve(cpu, rec)?,
            r => r?,
        };
        let stack = if rec.chain & CHAIN_TAKEN != 0 && self.chains.is_some() {
            Some(self.stack(buf, t, reserve)?)
        } else {
            None
        };
        if !self.emit(buf, cpu, rec, &w, stack.map(|s| s.0), reserve) {
            return Err(BUFFER);
        }
        // Counted only for a sample that made it into the buffer.
        if let Some((_, unresolved)) = stack {
            self.count_chain(rec);
            self.chain_stats.unresolved += unresolved;
        }
        Ok(())
    }

    /// The cookie and offset of user address `addr` (`ip` less `back`)
    /// through the handler's slot `nibble` of `cpu`, if it names one; the
    /// offset is `ip`'s.
    fn resolve_slot(
        &mut self,
        cpu: usize,
        nibble: u8,
        mm: *mut MmStruct,
        addr: u64,
        back: u64,
    ) -> Option<Result<(u64, u64), usize>> {
        let found = self.replay.find(cpu, nibble, mm, addr)?;
        let target = match found.target {
            // Named already (most samples): nothing to remember.
            Some(t) => return Some(Ok(Self::slot_where(t, found.offset, addr, back))),
            None if found.file.is_null() => Target::Anon,
            None => {
                // SAFETY: All-zero is a valid (empty) `struct path` to fill.
                let mut path: bindings::path = unsafe { core::mem::zeroed() };
                // SAFETY: The slot holds a reference on the file; process
                // context.
                unsafe { helpers::rprof_file_path(found.file, &mut path) };
                // SAFETY: The helper took a reference on `path` for us.
                let path = unsafe { PathRef::from_raw(path) };
                match self.cookies.file(path) {
                    Ok(cookie) => Target::File(cookie),
                    Err(_) => return Some(Err(NO_COOKIE)),
                }
            }
        };
        self.replay.name(cpu, nibble, target);
        Some(Ok(Self::slot_where(target, found.offset, addr, back)))
    }

    /// The cookie and offset of `addr` (`ip` less `back`) in a slot's
    /// `target`, at `offset` in its file; the offset is `ip`'s.
    #[inline(always)]
    fn slot_where(target: Target, offset: u64, addr: u64, back: u64) -> (u64, u64) {
        match target {
            // Wrapping: `offset` is user-controlled (`resolve::file_offset`).
            Target::File(cookie) => (cookie, offset.wrapping_add(back)),
            // The raw address, as the lookup under the lock gives it.
            Target::Anon => (RPROF_COOKIE_ANON as u64, addr.wrapping_add(back)),
        }
    }

    #[inline(always)]
    fn resolve(&mut self, cpu: usize, rec: &RingRecord) -> Result<Where, usize> {
        #[cfg(rprof_bench)]
        let _timer = crate::resolve::stage::Timer::start(if rec.sample.flags & RAW_USER != 0 {
            crate::resolve::stage::Stage::ResolveUser
        } else {
            crate::resolve::stage::Stage::ResolveKernel
        });
        let ip = rec.sample.ip;
        if rec.sample.flags & RAW_USER != 0 {
            if rec.mm.0.is_null() {
                return Err(NO_MM);
            }
            if let Some(r) = self.resolve_slot(cpu, rec.sample.map & MAP_LEAF, rec.mm.0, ip, 0) {
                let (cookie, offset) = r?;
                return Ok(Where { cookie, offset });
            }
            if let Some((target, offset)) = self.maps.get(rec.mm.0, rec.mm_seq, ip) {
                let cookie = match target {
                    Target::File(cookie) => cookie,
                    Target::Anon => RPROF_COOKIE_ANON as u64,
                };
                return Ok(Where { cookie, offset });
            }
            // SAFETY: All-zero is a valid (empty) `struct path` to fill.
            let mut path: bindings::path = unsafe { core::mem::zeroed() };
            let mut offset = 0u64;
            let mut range = VmaRange::default();
            // The address space, if it still has one: a process gone before
            // its mapping was named took it with it.
            // SAFETY: The record holds an `mm_count` reference on `mm`.
            if !unsafe { helpers::rprof_mm_get_live(rec.mm.0) } {
                return Err(NO_MAPPING);
            }
            // SAFETY: `mm` is referenced (`mm_users`, just taken) until
            // the guard is dropped below; process context, no spinlock.
            let how = match unsafe { MmRead::lock(rec.mm.0, &mut self.lock_wait_ns) } {
                Some(locked) => locked.resolve(ip, rec.mm_seq, &mut path, &mut offset, &mut range),
                None => RESOLVE_BUSY,
            };
            // SAFETY: The reference taken above, the lock given back;
            // process context.
            unsafe { helpers::rprof_mm_put(rec.mm.0) };
            let target = match how {
                RESOLVE_FILE => {
                    // SAFETY: The helper took a reference on `path` for us.
                    let path = unsafe { PathRef::from_raw(path) };
                    Target::File(self.cookies.file(path).map_err(|_| NO_COOKIE)?)
                }
                RESOLVE_ANON => Target::Anon,
                RESOLVE_BUSY => return Err(MM_BUSY),
                _ => return Err(NO_MAPPING),
            };
            // SAFETY: The record holds an `mm_count` reference on `mm`;
            // process context.
            unsafe { self.maps.fill(rec.mm.0, rec.mm_seq, &range, target) };
            let cookie = match target {
                Target::File(cookie) => cookie,
                Target::Anon => RPROF_COOKIE_ANON as u64,
            };
            Ok(Where { cookie, offset })
        } else {
            if let Some(info) = modules::lookup(ip) {
                let cookie = self.cookies.module(&info).map_err(|_| NO_COOKIE)?;
                Ok(Where { cookie, offset: ip - info.base })
            } else {
                Ok(Where { cookie: RPROF_COOKIE_KERNEL as u64, offset: ip })
            }
        }
    }

    /// The cookie of the sampled task's executable, or NONE.
    fn exe_cookie(&mut self, cpu: usize, rec: &RingRecord) -> u64 {
        if rec.mm.0.is_null() {
            return RPROF_COOKIE_NONE as u64;
        }
        // SAFETY: All-zero is a valid (empty) `struct path` to fill.
        let mut path: bindings::path = unsafe { core::mem::zeroed() };
        // SAFETY: The record holds an `mm_count` reference on `mm`.
        if !unsafe { helpers::rprof_mm_exe_path(rec.mm.0, &mut path) } {
            // Its executable went with its address space: the handler's
            // mapping of it, if it named one.
            let Some(file) = self.replay.exe(cpu, rec.mm.0) else {
                return RPROF_COOKIE_NONE as u64;
            };
            // SAFETY: The slot holds a reference on the file; process
            // context.
            unsafe { helpers::rprof_file_path(file, &mut path) };
        }
        // SAFETY: The helper took a reference on `path` for us.
        let path = unsafe { PathRef::from_raw(path) };
        self.cookies.file(path).unwrap_or(RPROF_COOKIE_NONE as u64)
    }

    /// Writes the COOKIE or MODULE record naming `cookie` unless it is in
    /// the stream already.
    fn announce(&mut self, buf: &EventBuffer, cookie: u64, reserve: u64) -> bool {
        let Some(entry) = self.cookies.get(cookie) else {
            return true; // A fixed cookie.
        };
        if entry.announced {
            return true;
        }
        let written = match &entry.object {
            Object::File { dev, ino, flags, name, .. } => {
                let size = (size_of::<rprof_cookie_record>() + name.len() + 1).next_multiple_of(8);
                let head = rprof_cookie_record {
                    header: rprof_record_header { type_: RPROF_RECORD_COOKIE as u16, flags: *flags as u16, size: size as u32 },
                    cookie,
                    dev: *dev,
                    ino: *ino,
                    path: Default::default(),
                };
                let out = &mut self.scratch[..size];
                out.fill(0);
                // SAFETY: `rprof_cookie_record` is plain data without
                // padding; we copy its bytes.
                let head_bytes = unsafe {
                    core::slice::from_raw_parts(&head as *const _ as *const u8, size_of::<rprof_cookie_record>())
                };
                out[..head_bytes.len()].copy_from_slice(head_bytes);
                out[head_bytes.len()..head_bytes.len() + name.len()].copy_from_slice(name);
                buf.write_bytes(&mut self.producer, out, reserve)
            }
            Object::Module { base, size, init, name } => {
                let m = rprof_module {
                    header: rprof_module::header(RPROF_RECORD_MODULE, if *init { RPROF_MODULE_INIT as u16 } else { 0 }),
                    cookie,
                    base: *base,
                    size: *size,
                    name: c_name::<56>(name).map(|b| b as _),
                };
                buf.write(&mut self.producer, &m, reserve)
            }
        };
        if written {
            if let Some(e) = self.cookies.get_mut(cookie) {
                e.announced = true;
            }
        }
        written
    }

    /// Counts a delivered sample's chain.
    fn count_chain(&mut self, rec: &RingRecord) {
        let s = &mut self.chain_stats;
        let f = u32::from(rec.chain);
        s.chains += 1;
        s.kernel_frames += u64::from(rec.nk);
        s.user_frames += u64::from(rec.nu);
        if f & (RPROF_STACK_KERNEL_TRUNCATED | RPROF_STACK_USER_TRUNCATED) != 0 {
            s.truncated += 1;
        }
        if f & RPROF_STACK_USER_FAULT != 0 {
            s.user_fault += 1;
        }
        if f & RPROF_STACK_USER_BAD_FP != 0 {
            s.user_bad_fp += 1;
        }
        if f & RPROF_STACK_CUT != 0 {
            s.cut_space += 1;
        }
        if f & RPROF_STACK_USER_SKIPPED != 0 {
            s.user_skipped += 1;
        }
        // A chain cut for space has no frames: the walk's counts are not
        // its.
        if rec.sample.flags & RAW_TABLE != 0 && f & RPROF_STACK_CUT == 0 {
            let (table, fp) = helpers::raw_table_counts(rec.sample.flags);
            s.user_table_frames += table;
            s.user_no_table += fp;
        }
    }

    /// The kernel or module (cookie, offset) of kernel address `ip`.
    fn resolve_kernel(&mut self, ip: u64) -> Result<(u64, u64), usize> {
        if let Some(info) = modules::lookup(ip) {
            let cookie = self.cookies.module(&info).map_err(|_| NO_COOKIE)?;
            Ok((cookie, ip - info.base))
        } else {
            Ok((RPROF_COOKIE_KERNEL as u64, ip))
        }
    }

    /// Resolves `rec`'s chain (`frames`: kernel then user addresses),
    /// writes its STACK record (and the COOKIE and MODULE records of its
    /// frames) unless the chain is in the table, and returns its id and
    /// its count of unresolved user frames.  `Err(BUFFER)` when a record
    /// does not fit: the sample is then lost, and the chain not entered.
    fn stack(&mut self, buf: &EventBuffer, t: &Taken<'_>, reserve: u64) -> Result<(u64, u64), usize> {
        let Some(mut ch) = self.chains.take() else { return Err(BUFFER) };
        let r = self.stack_with(&mut ch, buf, t, reserve);
        self.chains = Some(ch);
        r
    }

    fn stack_with(&mut self, ch: &mut Chains, buf: &EventBuffer, t: &Taken<'_>, reserve: u64) -> Result<(u64, u64), usize> {
        let Taken { rec, frames, .. } = *t;
        let nk = (rec.nk as usize).min(frames.len());
        // A raw chain seen before in the same unchanged address space:
        // its id, without resolving a frame (src/resolve/stacks.rs).
        #[cfg(rprof_bench)]
        let intern_timer = crate::resolve::stage::Timer::start(crate::resolve::stage::Stage::ChainIntern);
        // SAFETY: The record holds a reference on `mm` (or it is null);
        // process context.
        let tag = unsafe { ch.raw.tag(rec.mm.0, rec.mm_seq, modules::generation()) };
        let raw_flags = stacks::raw_key_flags(rec.chain, rec.sample.flags & RAW_USER != 0, nk, table_walked(rec));
        let raw_hash = stacks::hash_raw(frames, tag, raw_flags);
        if let Some(found) = ch.raw.find(raw_hash, tag, raw_flags, frames) {
            return Ok(found);
        }
        #[cfg(rprof_bench)]
        drop(intern_timer);
        self.chain_busy = false;
        let id = self.resolve_chain(ch, buf, t, nk, reserve)?;
        // A chain whose frames found the mmap_lock taken is not the chain
        // of its address space for good: the next sample of it resolves
        // afresh rather than from this table.
        if !self.chain_busy {
            ch.raw.insert(raw_hash, tag, raw_flags, frames, id.0, id.1);
        }
        Ok(id)
    }

    /// Resolves `rec`'s chain and returns its id (writing its STACK record
    /// unless the resolved chain is in the table) and its count of
    /// unresolved user frames.
    fn resolve_chain(
        &mut self,
        ch: &mut Chains,
        buf: &EventBuffer,
        t: &Taken<'_>,
        nk: usize,
        reserve: u64,
    ) -> Result<(u64, u64), usize> {
        let Taken { cpu, rec, frames, nibbles } = *t;
        #[cfg(rprof_bench)]
        let resolve_timer = crate::resolve::stage::Timer::start(crate::resolve::stage::Stage::ChainResolve);
        stacks::clear_copy(&mut ch.resolved);
        stacks::clear_copy(&mut ch.miss_ips);
        stacks::clear_copy(&mut ch.miss_at);
        let unresolved = |ip: u64| rprof_frame { cookie: RPROF_COOKIE_UNRESOLVED as u64, offset: ip };
        for &ip in &frames[..nk] {
            // A return address: look up the call, one byte back.
            let f = match self.resolve_kernel(ip.wrapping_sub(1)) {
                Ok((cookie, offset)) => rprof_frame { cookie, offset: offset + 1 },
                Err(_) => unresolved(ip),
            };
            // Cannot fail: the capacity is CHAIN_WORDS.
            let _ = ch.resolved.push(f, GFP_ATOMIC);
        }
        // The first user frame of a kernel sample is the user ip at kernel
        // entry, not a return address.
        let entry_first = rec.sample.flags & RAW_USER == 0;
        for (j, &ip) in frames[nk..].iter().enumerate() {
            let back = u64::from(!(entry_first && j == 0));
            let at = ip.wrapping_sub(back);
            match self.resolve_slot(cpu, maps::nibble(nibbles, j), rec.mm.0, at, back) {
                Some(Ok((cookie, offset))) => {
                    let _ = ch.resolved.push(rprof_frame { cookie, offset }, GFP_ATOMIC);
                    continue;
                }
                Some(Err(_)) => {
                    // Not the chain's answer for good (no cookie now).
                    self.chain_busy = true;
                    let _ = ch.resolved.push(unresolved(ip), GFP_ATOMIC);
                    continue;
                }
                None => {}
            }
            let f = match self.maps.get(rec.mm.0, rec.mm_seq, at) {
                Some((Target::File(cookie), offset)) => rprof_frame { cookie, offset: offset.wrapping_add(back) },
                Some((Target::Anon, _)) => rprof_frame { cookie: RPROF_COOKIE_ANON as u64, offset: ip },
                None => {
                    let _ = ch.miss_ips.push(at, GFP_ATOMIC);
                    let _ = ch.miss_at.push(ch.resolved.len(), GFP_ATOMIC);
                    unresolved(ip)
                }
            };
            let _ = ch.resolved.push(f, GFP_ATOMIC);
        }
        // The frames the handler did not name, through the address space
        // if it still has one.  Without one, they stay unresolved in this
        // sample's chain only: another sample of the same raw chain may
        // have them named (the raw-chain table keeps no such answer).
        // SAFETY: The record holds an `mm_count` reference on `mm`.
        let live = !ch.miss_ips.is_empty() && !rec.mm.0.is_null() && unsafe { helpers::rprof_mm_get_live(rec.mm.0) };
        self.chain_busy |= !ch.miss_ips.is_empty() && !live;
        if live {
            let n = ch.miss_ips.len().min(ch.miss_res.len());
            // One lock round for all of them.
            // SAFETY: `mm` is referenced (`mm_users`, just taken) until
            // the guard is dropped below; process context, no spinlock.
            let locked = unsafe { MmRead::lock(rec.mm.0, &mut self.lock_wait_ns) };
            for (res, &ip) in ch.miss_res.iter_mut().zip(ch.miss_ips.iter()).take(n) {
                res.how = match &locked {
                    Some(l) => l.resolve(ip, rec.mm_seq, &mut res.path, &mut res.offset, &mut res.range),
                    None => RESOLVE_BUSY,
                };
            }
            drop(locked);
            // SAFETY: The reference taken above, the lock given back;
            // process context.
            unsafe { helpers::rprof_mm_put(rec.mm.0) };
            for k in 0..n {
                let res = &mut ch.miss_res[k];
                let at = ch.miss_at[k];
                let back = ch.miss_ips[k] != ch.resolved[at].offset;
                self.chain_busy |= res.how == RESOLVE_BUSY;
                let target = match res.how {
                    RESOLVE_FILE => {
                        // SAFETY: The helper took a reference on `path` for
                        // us; we take it out of the result.
                        let path = unsafe { PathRef::from_raw(core::mem::replace(&mut res.path, core::mem::zeroed())) };
                        match self.cookies.file(path) {
                            Ok(cookie) => Some(Target::File(cookie)),
                            Err(_) => None,
                        }
                    }
                    RESOLVE_ANON => Some(Target::Anon),
                    _ => None,
                };
                let Some(target) = target else { continue };
                // SAFETY: The record holds an `mm_count` reference on `mm`.
                unsafe { self.maps.fill(rec.mm.0, rec.mm_seq, &res.range, target) };
                ch.resolved[at] = match target {
                    Target::File(cookie) => rprof_frame { cookie, offset: res.offset.wrapping_add(u64::from(back)) },
                    // The raw address, as for an anonymous leaf.
                    Target::Anon => rprof_frame { cookie: RPROF_COOKIE_ANON as u64, offset: ch.resolved[at].offset },
                };
            }
        }
        #[cfg(rprof_bench)]
        drop(resolve_timer);
        let unresolved_now = ch.resolved[nk..].iter().filter(|f| f.cookie == RPROF_COOKIE_UNRESOLVED as u64).count();
        let flags = u16::from(rec.chain & CHAIN_FLAGS) | if table_walked(rec) { RPROF_STACK_USER_TABLE as u16 } else { 0 };
        let h = stacks::hash(&ch.resolved, flags);
        if let Some(id) = ch.stacks.find(h, &ch.resolved, flags) {
            return Ok((id, unresolved_now as u64));
        }
        for f in ch.resolved.iter() {
            if !self.announce(buf, f.cookie, reserve) {
                return Err(BUFFER);
            }
        }
        let id = ch.stacks.next_id();
        let n = ch.resolved.len();
        let size = size_of::<rprof_stack>() + n * size_of::<rprof_frame>();
        let head = rprof_stack {
            header: rprof_record_header { type_: RPROF_RECORD_STACK as u16, flags, size: size as u32 },
            id,
            nr_kernel: nk as u16,
            nr_user: (n - nk) as u16,
            reserved: 0,
            frames: Default::default(),
        };
        let out = &mut self.scratch[..size];
        // SAFETY: `rprof_stack` and `rprof_frame` are plain data without
        // padding; we copy their bytes.
        let (head_bytes, frame_bytes) = unsafe {
            (
                core::slice::from_raw_parts(&head as *const _ as *const u8, size_of::<rprof_stack>()),
                core::slice::from_raw_parts(ch.resolved.as_ptr() as *const u8, n * size_of::<rprof_frame>()),
            )
        };
        out[..head_bytes.len()].copy_from_slice(head_bytes);
        out[head_bytes.len()..].copy_from_slice(frame_bytes);
        if !buf.write_bytes(&mut self.producer, out, reserve) {
            return Err(BUFFER);
        }
        ch.stacks.insert(h, &ch.resolved, flags);
        self.chain_stats.stacks += 1;
        Ok((id, unresolved_now as u64))
    }

    /// Writes the context records `rec` needs, then its SAMPLE (naming
    /// `stack`, if any).
    #[inline(always)]
    fn emit(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, w: &Where, stack: Option<u64>, reserve: u64) -> bool {
        let s = &rec.sample;
        let task = TaskKey { cpu: cpu as u32, pid: s.pid, tid: s.tid, mm: rec.mm.0 as usize, comm: s.comm };
        if self.task != Some(task) {
            let exe = self.exe_cookie(cpu, rec);
            if !self.announce(buf, exe, reserve) {
                return false;
            }
            let t = rprof_task {
                header: rprof_task::header(RPROF_RECORD_TASK, 0),
                cpu: cpu as u32,
                pid: s.pid,
                tid: s.tid,
                reserved: 0,
                exe_cookie: exe,
                comm: c_name::<16>(&s.comm).map(|b| b as _),
            };
            if !buf.write(&mut self.producer, &t, reserve) {
                return false;
            }
            self.task = Some(task);
        }
        if self.cookie != w.cookie {
            if !self.announce(buf, w.cookie, reserve) {
                return false;
            }
            let sw = rprof_switch { header: rprof_switch::header(RPROF_RECORD_SWITCH, 0), cookie: w.cookie };
            if !buf.write(&mut self.producer, &sw, reserve) {
                return false;
            }
            self.cookie = w.cookie;
        }
        let mut flags = ((rec.event as u32) << RPROF_SAMPLE_EVENT_SHIFT) & RPROF_SAMPLE_EVENT_MASK;
        if s.flags & RAW_USER != 0 {
            flags |= RPROF_SAMPLE_USER;
        }
        let sample = rprof_sample {
            header: rprof_sample::header(RPROF_RECORD_SAMPLE, flags as u16),
            time_ns: s.time_ns,
            offset: w.offset,
            period: s.period,
        };
        let Some(id) = stack else {
            return buf.write(&mut self.producer, &sample, reserve);
        };
        let mut flags = flags | RPROF_SAMPLE_STACK;
        if u32::from(rec.chain) & RPROF_STACK_CUT != 0 {
            flags |= RPROF_SAMPLE_CHAIN_CUT;
        }
        let with = rprof_sample_stack {
            sample: rprof_sample { header: rprof_sample_stack::header(RPROF_RECORD_SAMPLE, flags as u16), ..sample },
            stack: id,
        };
        buf.write(&mut self.producer, &with, reserve)
    }

    /// THROTTLE with a throttled sample, UNTHROTTLE with the first sample
    /// after one: perf resumes a counter silently on a tick.  Both are
    /// informational and left out when space is short.
    #[inline(always)]
    fn throttle_records(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, reserve: u64) {
        // Nearly every sample: not throttled, after one that was not.
        if rec.sample.flags & RAW_THROTTLED == 0 && self.cpus[cpu].throttled_events == 0 {
            return;
        }
        self.throttle_changes(buf, cpu, rec, reserve);
    }

    #[inline(never)]
    fn throttle_changes(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, reserve: u64) {
        let st = &mut self.cpus[cpu];
        let bit = 1u8 << (rec.event & 7);
        let mut changes = [None, None];
        if st.throttled_events & bit != 0 {
            st.throttled_events &= !bit;
            changes[0] = Some(RPROF_RECORD_UNTHROTTLE);
        }
        if rec.sample.flags & RAW_THROTTLED != 0 {
            st.throttled += 1;
            st.throttled_events |= bit;
            changes[1] = Some(RPROF_RECORD_THROTTLE);
        }
        for type_ in changes.into_iter().flatten() {
            let t = rprof_throttle {
                header: rprof_throttle::header(type_, 0),
                time_ns: rec.sample.time_ns,
                cpu: cpu as u32,
                event: rec.event as u32,
            };
            buf.write(&mut self.producer, &t, reserve);
        }
    }

    /// A module is going: its cookies leave the index; announced ones get
    /// a MODULE record with the UNLOAD flag if `in_run` (the stream is
    /// between a run's START and its STOP; between runs nothing may be
    /// written, and a later run names a module loaded in its place by new
    /// cookies anyway).  A record that does not fit now (`reserve` kept
    /// free, as for samples) is owed: [`Drain::write_unloads`].
    pub(crate) fn module_going(&mut self, buf: &EventBuffer, id: usize, in_run: bool, reserve: u64) {
        for cookie in self.cookies.forget_module(id).into_iter().flatten() {
            let announced = self.cookies.get(cookie).is_some_and(|e| e.announced);
            if !announced || !in_run {
                continue;
            }
            if self.owes_unloads() || !self.write_unload(buf, cookie, reserve) {
                if self.unloads.push(cookie, GFP_KERNEL).is_err() {
                    pr_warn!("no memory to keep the UNLOAD record of cookie {}\n", cookie);
                }
            }
        }
    }

    /// Writes the owed UNLOAD records, oldest first, as far as they fit.
    pub(crate) fn write_unloads(&mut self, buf: &EventBuffer, reserve: u64) {
        while self.owes_unloads() && self.write_unload(buf, self.unloads[self.unloads_done], reserve) {
            self.unloads_done += 1;
        }
        if self.unloads_done > 0 && !self.owes_unloads() {
            crate::kapi::compat::clear_vec(&mut self.unloads);
            self.unloads_done = 0;
        }
    }

    /// Whether UNLOAD records are owed.
    pub(crate) fn owes_unloads(&self) -> bool {
        self.unloads_done < self.unloads.len()
    }

    /// The MODULE record with UNLOAD of module `cookie`, if it fits.
    fn write_unload(&mut self, buf: &EventBuffer, cookie: u64, reserve: u64) -> bool {
        let Some(Object::Module { base, size, init, name }) = self.cookies.get(cookie).map(|e| &e.object) else {
            // Not a module's cookie: nothing to write.
            return true;
        };
        let mut flags = RPROF_MODULE_UNLOAD;
        if *init {
            flags |= RPROF_MODULE_INIT;
        }
        let m = rprof_module {
            header: rprof_module::header(RPROF_RECORD_MODULE, flags as u16),
            cookie,
            base: *base,
            size: *size,
            name: c_name::<56>(name).map(|b| b as _),
        };
        buf.write(&mut self.producer, &m, reserve)
    }

    /// Writes RESET (taken at `time_ns`) and forgets every cookie and
    /// stack, with what refers to them: the mapping cache, the raw-chain
    /// table, the last TASK and SWITCH written (the next sample has both
    /// again, naming its cookies anew).  The owed UNLOAD records go first:
    /// they name cookies that are about to be forgotten.  `EAGAIN` if they
    /// or RESET do not fit (`reserve` kept free, as for samples); nothing
    /// is forgotten then.  The caller is between START and STOP, and drops
    /// what the table forgot (its file references) once it released the
    /// drain lock.
    pub(crate) fn reset(&mut self, buf: &EventBuffer, time_ns: u64, reserve: u64) -> Result<Forgotten> {
        self.reset_flagged(buf, time_ns, reserve, 0)
    }

    /// [`Drain::reset`] with the RESET record's `flags`.
    fn reset_flagged(&mut self, buf: &EventBuffer, time_ns: u64, reserve: u64, flags: u16) -> Result<Forgotten> {
        self.write_unloads(buf, reserve);
        if self.owes_unloads() {
            return Err(EAGAIN);
        }
        let r = rprof_reset {
            header: rprof_reset::header(RPROF_RECORD_RESET, flags),
            time_ns,
            next_cookie: self.cookies.next(),
            next_stack: self.chains.as_ref().map_or(1, |c| c.stacks.next_id()),
        };
        if !buf.write(&mut self.producer, &r, reserve) {
            return Err(EAGAIN);
        }
        let forgotten = self.cookies.forget_all();
        self.maps.clear();
        self.replay.forget_targets();
        if let Some(ch) = self.chains.as_mut() {
            ch.stacks.forget();
            ch.raw.forget();
        }
        self.task = None;
        self.cookie = RPROF_COOKIE_NONE as u64;
        self.resets += 1;
        Ok(forgotten)
    }

    /// A RESET of the module's own (`RPROF_RESET_AUTO`), for a full cookie
    /// table: at most one a pass (what it forgot waits in `forgotten`
    /// until the pass lets go of the drain lock), none before START.
    fn auto_reset(&mut self, buf: &EventBuffer, reserve: u64) -> bool {
        if self.forgotten.is_some() || self.start_pending.is_some() {
            return false;
        }
        // SAFETY: `ktime_get_mono_fast_ns()` may be called from any context.
        let now = unsafe { helpers::rprof_clock() };
        match self.reset_flagged(buf, now, reserve, RPROF_RESET_AUTO as u16) {
            Ok(forgotten) => {
                self.forgotten = Some(forgotten);
                true
            }
            Err(_) => false,
        }
    }

    /// What an automatic RESET forgot, for the caller to drop once it
    /// released the drain lock (the last reference to a deleted file may
    /// free it, which can take long).
    pub(crate) fn take_forgotten(&mut self) -> Option<Forgotten> {
        self.forgotten.take()
    }

    /// This CPU's counters: (delivered, lost per `STAGES`, throttled).
    pub(crate) fn cpu_counts(&self, cpu: usize) -> (u64, [u64; 5], u64) {
        let st = &self.cpus[cpu];
        (st.delivered, st.lost, st.throttled)
    }
}

/// Indexes into `cpu_counts`' loss array.
pub(crate) mod lost {
    pub(crate) const BUFFER: usize = super::BUFFER;
    pub(crate) const NO_MM: usize = super::NO_MM;
    pub(crate) const NO_MAPPING: usize = super::NO_MAPPING;
    pub(crate) const NO_COOKIE: usize = super::NO_COOKIE;
    pub(crate) const MM_BUSY: usize = super::MM_BUSY;
}

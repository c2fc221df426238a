// SPDX-License-Identifier: GPL-2.0

//! The sampling side: what the perf overflow handler does.
//!
//! **NMI context**: everything reachable from [`rprof_on_sample`] may run in
//! NMI context (PMU counters) or hard IRQ context (the hrtimer of software
//! clocks), nested over task, softirq or hardirq code on the same CPU.  It
//! takes no lock, never sleeps and never allocates: it copies one
//! fixed-size record into this CPU's [`Ring`] (taking an `mm_count`
//! reference on the sampled address space, an atomic increment, and
//! naming the mappings of its user addresses: [`crate::sampling::maps`])
//! and, past a watermark, kicks the drain with an irq_work (the kernel's
//! NMI-safe way out).

use crate::kapi::helpers::{self, RawSample};
use crate::sampling::followed::{self, FollowSet};
use crate::sampling::maps::{self, MapSlots, Plan};
use crate::sampling::ring::{Push, Ring, Slot};
use crate::uapi;
use core::ffi::c_void;
use kernel::prelude::*;

/// An `mm_count` reference on an address space (the `mm_struct`, not its
/// mappings), or null, taken by the handler and dropped by the drain
/// (`Drain::put_mms`).
#[derive(Clone, Copy)]
pub(crate) struct MmRef(pub(crate) *mut helpers::MmStruct);

// SAFETY: The reference moves from the handler's CPU to the drain; the
// address space may be released from any process context.
unsafe impl Send for MmRef {}

/// A per-CPU ring record: the raw sample, which configured event took it,
/// the sampled task's address space with its write-lock sequence then,
/// and how many call-chain frames follow it in the ring.
#[derive(Clone, Copy)]
pub(crate) struct RingRecord {
    pub(crate) sample: RawSample,
    pub(crate) event: u8,
    /// Kernel frames of the chain (continuation slots, first).
    pub(crate) nk: u8,
    /// User frames of the chain (continuation slots, after the kernel's).
    pub(crate) nu: u8,
    /// `CHAIN_TAKEN`, `RPROF_STACK_*` (`CHAIN_FLAGS`).
    pub(crate) chain: u8,
    pub(crate) mm_seq: u32,
    pub(crate) mm: MmRef,
}

/// `RingRecord::chain`'s bits, which the chains' code reads too: the
/// session takes chains and this sample has one, and the chain's
/// `RPROF_STACK_*` flags.
pub(crate) use crate::chains::{CHAIN_FLAGS, CHAIN_TAKEN};

// Every `RPROF_STACK_*` flag the walks return fits `CHAIN_FLAGS`, apart
// from `CHAIN_TAKEN` (and, in `stacks::raw_key_flags`, apart from the mode
// bit above them): a new flag must find room here first.
// `RPROF_STACK_USER_TABLE` (bit 7) is not one of them: it travels in the
// sample's `RAW_TABLE` bits (`helpers::raw_table_flags`) and only the
// drain sets it, in the STACK record's 16-bit flags.
const _: () = assert!(
    (uapi::RPROF_STACK_KERNEL_TRUNCATED
        | uapi::RPROF_STACK_USER_TRUNCATED
        | uapi::RPROF_STACK_USER_FAULT
        | uapi::RPROF_STACK_USER_BAD_FP
        | uapi::RPROF_STACK_KERNEL_ERROR
        | uapi::RPROF_STACK_CUT
        | uapi::RPROF_STACK_USER_SKIPPED)
        & !(CHAIN_FLAGS as u32)
        == 0
        && CHAIN_TAKEN & CHAIN_FLAGS == 0
);

impl RingRecord {
    /// A record without an address space (tests and the benchmark).
    #[cfg(any(rprof_kunit, rprof_bench))]
    pub(crate) fn new(sample: RawSample, event: u16) -> Self {
        Self { sample, event: event as u8, nk: 0, nu: 0, chain: 0, mm_seq: 0, mm: MmRef(core::ptr::null_mut()) }
    }

    /// Continuation slots after this record: its chain's frames, then
    /// the mappings it carries (`maps::tail_words`).
    pub(crate) fn extra_slots(&self) -> u64 {
        self.words().div_ceil(SLOT_WORDS) as u64
    }

    /// Words of its continuation slots in use.
    pub(crate) fn words(&self) -> usize {
        self.nk as usize + self.nu as usize + maps::tail_words(self.sample.map, self.nu as usize)
    }
}

/// Frames (u64 words) in one continuation slot.
pub(crate) const SLOT_WORDS: usize = core::mem::size_of::<RingRecord>() / 8;

/// One ring slot: a record, or `SLOT_WORDS` frames of the chain of the
/// record before it (see `Ring::push_multi_with`).
///
/// # Invariants
///
/// A slot at a record's first position holds `rec`; the `extra_slots()`
/// slots after it hold `words`.  Both are plain data: every bit pattern
/// of `words` is valid, and `rec` is read only where it was written.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) union RingSlot {
    pub(crate) rec: RingRecord,
    pub(crate) words: [u64; SLOT_WORDS],
}

const _: () = assert!(core::mem::size_of::<RingSlot>() == core::mem::size_of::<RingRecord>());
const _: () = assert!(SLOT_WORDS * 8 == core::mem::size_of::<RingRecord>());

impl From<RingRecord> for RingSlot {
    fn from(rec: RingRecord) -> Self {
        Self { rec }
    }
}

/// The per-CPU ring type.
pub(crate) type SampleRing = Ring<RingSlot, KVVec<Slot<RingSlot>>>;

/// Words a record's continuation may hold: a whole chain and its tail.
pub(crate) const RECORD_WORDS: usize = 2 * uapi::RPROF_MAX_FRAMES as usize + maps::TAIL_WORDS;

/// What one counter's overflow handler needs, at a stable address for the
/// counter's lifetime.
///
/// # Invariants
///
/// `ring`, `kicker`, `follow`, `tables` and `maps` (if not null) point to
/// objects of the session that outlive the counter: the session releases
/// its counters (after which perf runs no more handlers for them) before
/// it frees rings, mappings, kicker, tables and followed set.  `maps` is
/// the slots of the counter's CPU, which only that CPU's handlers use.
pub(crate) struct HandlerCtx {
    pub(crate) ring: *const SampleRing,
    pub(crate) kicker: *mut helpers::RprofKicker,
    pub(crate) event: u16,
    /// Call-chain depths (`rprof_config.max_*_frames`); both 0: no chains.
    pub(crate) max_kernel: u16,
    pub(crate) max_user: u16,
    /// Only samples of this thread group, or all if negative.
    pub(crate) pid: i32,
    /// With `pid`: its thread group's start time.
    pub(crate) pid_start: u64,
    /// With `pid`, or null: the processes it follows, whose samples are
    /// kept too (its descendants and their orphans, [`followed`]).
    pub(crate) follow: *const FollowSet,
    /// Kick the drain when the ring holds at least this many records.
    pub(crate) kick_at: u64,
    /// With `RPROF_CONFIG_UNWIND_TABLES`, the session's published tables
    /// (the user side is walked by them); else null.
    pub(crate) tables: *const crate::chains::tables::Published,
    /// This CPU's mappings (`maps`), or null (tests: the drain then
    /// resolves through the address space).
    pub(crate) maps: *const MapSlots,
}

impl HandlerCtx {
    /// A context on `ring` and `maps` (null for none) as a session without
    /// filter, chains or tables makes it, which never kicks: for tests and
    /// the benchmark, which empty the ring themselves (the null kicker must
    /// never be kicked).
    #[cfg(any(rprof_kunit, rprof_bench))]
    pub(crate) fn plain(ring: &SampleRing, maps: *const MapSlots) -> Self {
        HandlerCtx {
            ring,
            kicker: core::ptr::null_mut(),
            event: 0,
            max_kernel: 0,
            max_user: 0,
            pid: -1,
            pid_start: 0,
            follow: core::ptr::null(),
            kick_at: u64::MAX,
            tables: core::ptr::null(),
            maps,
        }
    }
}

/// The overflow handler's Rust half, called by `rprof_overflow()` in
/// `src/sampling/overflow.c`.  NMI context: see the module doc.
///
/// # Safety
///
/// `ctx` must be the `HandlerCtx` the counter was created with, `sample` a
/// valid sample, and `regs` the sampled registers or null (no chain).
#[no_mangle]
pub(crate) unsafe extern "C" fn rprof_on_sample(ctx: *mut c_void, sample: *const RawSample, regs: *mut c_void) {
    // SAFETY: The caller passes the context registered with the counter,
    // which is alive while the counter exists (`HandlerCtx` invariant).
    let ctx = unsafe { &*(ctx as *const HandlerCtx) };
    // SAFETY: The C caller passes a sample on its stack.
    let sample = unsafe { *sample };
    // The filter's process is named by number and start time: a later
    // process that got the number is not it.
    if ctx.pid >= 0 && !(sample.pid == ctx.pid as u32 && followed::current_group_started(ctx.pid_start)) {
        // SAFETY: `follow` is null or outlives the counter (`HandlerCtx`
        // invariant).
        let follow = unsafe { ctx.follow.as_ref() };
        // NMI-safe: an RCU walk up current's parents.
        if !follow.is_some_and(FollowSet::follows_current) {
            return;
        }
    }
    // SAFETY: `ring` outlives the counter (`HandlerCtx` invariant).
    let ring = unsafe { &*ctx.ring };
    // References (address space, files) are taken only once the ring has
    // room for the record, so a full ring never has to give one back
    // (which NMI context could not do).
    let pushed = if (ctx.max_kernel | ctx.max_user) == 0 || regs.is_null() {
        if sample.flags & helpers::RAW_USER == 0 {
            // A kernel ip: one slot, nothing to name.
            ring.push_with(|| record(ctx, &sample, 0, 0, 0, 0, false, None))
        } else {
            // A user ip: one slot, and the ip's new mapping if it has one.
            let (mm, seq) = current_mm();
            let mut plan = plan(ctx, mm, seq);
            plan.leaf(sample.ip);
            let pin = plan.pin();
            let at = Some((mm, seq));
            if plan.is_plain() {
                // Named by a slot it already has (or by none): nothing to
                // carry, nothing to commit.
                let map = plan.map_byte();
                ring.push_with(|| record(ctx, &sample, 0, 0, 0, map, pin, at))
            } else {
                push_frames(ring, &[], 0, None, &mut plan, |_, _, _, map| record(ctx, &sample, 0, 0, 0, map, pin, at))
            }
        }
    } else {
        // SAFETY: `regs` are the sampled registers (caller); NMI context.
        unsafe { push_chain(ring, ctx, &sample, regs) }
    };
    let kick = match pushed {
        Push::Stored(fill) => fill >= ctx.kick_at,
        Push::Full => true,
    };
    if kick {
        // SAFETY: The kicker outlives the counter; `irq_work_queue()` is
        // NMI-safe and a no-op when the work is already pending.
        unsafe { helpers::rprof_kicker_kick(ctx.kicker) };
    }
}

/// Current's address space (not referenced; null for none) and its
/// write-lock sequence now.  NMI context.
#[inline(always)]
fn current_mm() -> (*mut helpers::MmStruct, u32) {
    let mut seq = 0;
    // SAFETY: NMI-safe: reads current's mm and its sequence.
    let mm = unsafe { helpers::rprof_current_mm(&mut seq) };
    (mm, seq)
}

/// A plan of the mappings for a record of current's address space `mm`
/// at write-lock sequence `seq` (`current_mm()`).  NMI context.
#[inline(always)]
fn plan(ctx: &HandlerCtx, mm: *mut helpers::MmStruct, seq: u32) -> Plan<'_> {
    // SAFETY: `maps` outlives the counter and is this CPU's (`HandlerCtx`
    // invariant): only this CPU's overflow handlers make plans on it, with
    // preemption off, and one that interrupts another returns first.
    unsafe { Plan::new(ctx.maps.as_ref(), mm, seq) }
}

/// The ring record of `sample` with `map` (its mappings), and an
/// `mm_count` reference on current's address space: `at`'s (current's
/// and its sequence, read at the sample by `current_mm()`: a chain walk
/// takes microseconds, and the drain accepts only mappings older than the
/// sequence the record carries), or read now if `None`.  With `pin`, the
/// record holds the address space too (`mm_users`), for mappings the
/// handler could not name (`Plan::pin`).  NMI context: called only once a
/// slot is reserved.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn record(
    ctx: &HandlerCtx,
    sample: &RawSample,
    nk: u32,
    nu: u32,
    chain: u8,
    map: u8,
    pin: bool,
    at: Option<(*mut helpers::MmStruct, u32)>,
) -> RingSlot {
    let (mm, mm_seq) = match at {
        Some((mm, seq)) => {
            if !mm.is_null() {
                // SAFETY: NMI-safe: an atomic increment on current's mm
                // (`current->mm` cannot change while the handler runs).
                unsafe { helpers::rprof_mm_grab(mm) };
            }
            (mm, seq)
        }
        None => {
            let mut seq = 0;
            // SAFETY: NMI-safe: an atomic increment on current's mm, if any.
            (unsafe { helpers::rprof_current_mm_grab(&mut seq) }, seq)
        }
    };
    // Bench builds may hold every address space, as rprof did before it
    // named mappings (`pin_mm`), to measure what that cost.
    // SAFETY: A module parameter that lives as long as the module; sysfs
    // stores 0 or 1 into it whole.
    #[cfg(rprof_bench)]
    let pin = pin || unsafe { helpers::rprof_bench_pin_mm.load(core::sync::atomic::Ordering::Relaxed) };
    // SAFETY: NMI-safe: an atomic increment-not-zero on current's mm.
    let pinned = pin && !mm.is_null() && !unsafe { helpers::rprof_current_mm_pin() }.is_null();
    RingSlot {
        rec: RingRecord {
            sample: RawSample { map, pinned: pinned as u8, ..*sample },
            event: ctx.event as u8,
            nk: nk as u8,
            nu: nu as u8,
            chain,
            mm_seq,
            mm: MmRef(mm),
        },
    }
}

/// Takes the sample's call chain and pushes the record with it.  NMI
/// context.
///
/// # Safety
///
/// `regs` are the sampled registers; the caller is the overflow handler.
#[inline(never)]
unsafe fn push_chain(ring: &SampleRing, ctx: &HandlerCtx, sample: &RawSample, regs: *mut c_void) -> Push {
    let walk = |ips: *mut u64, nk: &mut u32, nu: &mut u32| {
        if ctx.tables.is_null() {
            // SAFETY: `ips` holds CHAIN_WORDS words, more than the 2 x 127
            // frames rprof_callchain stores; `regs` are the sampled
            // registers (caller).
            let flags = unsafe { helpers::rprof_callchain(regs, ips, ctx.max_kernel.into(), ctx.max_user.into(), nk, nu) };
            return (flags, 0);
        }
        let mut ur = helpers::UserRegs::default();
        // SAFETY: As above; the user walk of 64-bit code is left to us.
        let flags = unsafe {
            helpers::rprof_callchain_regs(regs, ips, ctx.max_kernel.into(), ctx.max_user.into(), nk, nu, &mut ur)
        };
        if ur.valid == 0 {
            return (flags, 0);
        }
        let max_u = u32::from(ctx.max_user).min(uapi::RPROF_MAX_FRAMES);
        let room = max_u.saturating_sub(*nu) as usize;
        // SAFETY: `ips` holds CHAIN_WORDS words, ours (caller); the C side
        // stored `nk + nu` and the user walk may add `room`: at most 2 x
        // RPROF_MAX_FRAMES in all.
        let out = unsafe { core::slice::from_raw_parts_mut(ips.add((*nk + *nu) as usize), room) };
        // SAFETY: `tables` outlives the counter (`HandlerCtx` invariant).
        let published = unsafe { &*ctx.tables };
        let regs = crate::chains::unwind::Regs { ip: ur.ip, sp: ur.sp, bp: ur.bp };
        let (n, end, stats) = crate::chains::userwalk::walk_user(published, regs, out);
        *nu += n as u32;
        (flags | end, helpers::raw_table_flags(stats.table_frames, stats.fp_frames))
    };
    // SAFETY: This CPU's scratch of our context level: no other handler
    // uses it until we return (`rprof_chain_scratch`'s contract; the
    // overflow handler neither sleeps nor migrates).
    let ips = unsafe { helpers::rprof_chain_scratch() };
    // SAFETY: `ips` holds CHAIN_WORDS words, ours until we return; `walk`
    // stores at most that many (above).
    unsafe { push_chain_with(ring, ctx, sample, ips, walk) }
}

/// [`push_chain`] with the walk and its buffer given: `walk(ips, nk, nu)`
/// stores the chain at `ips`, its counts in `nk`/`nu`, and returns its
/// `RPROF_STACK_*` flags and `RAW_*` flags for the record's sample (a
/// table walk's counts, [`helpers::raw_table_flags`]).  The address-space sequence the record carries
/// is read *before* the walk: a mapping changed while the chain is walked
/// (another thread's munmap and mmap) then has a newer sequence than the
/// record's, and the drain refuses it instead of resolving a frame read
/// from the old mapping through the new one.  KUnit's
/// `chain_sequence_is_read_before_the_walk` changes the address space from
/// inside `walk`.  NMI or hard-IRQ context in the handler.
///
/// # Safety
///
/// `ips` points to CHAIN_WORDS words that nothing else uses until this
/// returns, and `walk` stores at most that many there; the caller is the
/// overflow handler, or a test standing in for it on a ring of its own.
#[inline(always)]
pub(crate) unsafe fn push_chain_with(
    ring: &SampleRing,
    ctx: &HandlerCtx,
    sample: &RawSample,
    ips: *mut u64,
    walk: impl FnOnce(*mut u64, &mut u32, &mut u32) -> (u32, u32),
) -> Push {
    let (mm, seq) = current_mm();
    let (mut nk, mut nu) = (0u32, 0u32);
    let (flags, raw) = walk(ips, &mut nk, &mut nu);
    let sample = &RawSample { flags: sample.flags | raw, ..*sample };
    let total = (nk as usize + nu as usize).min(helpers::CHAIN_WORDS);
    // SAFETY: `walk` wrote `total` words at `ips`, ours until we return
    // (the caller's contract).
    let words = unsafe { core::slice::from_raw_parts(ips, total) };
    let user = sample.flags & helpers::RAW_USER != 0;
    // Nothing to name without a user address: the slots are not taken.
    let mut plan = if user || words.len() > nk as usize {
        plan(ctx, mm, seq)
    } else {
        Plan::none()
    };
    if user {
        plan.leaf(sample.ip);
    }
    name_user_frames(&mut plan, words, nk, !user);
    let pin = plan.pin();
    push_frames(ring, words, nk, Some(flags), &mut plan, |nk, nu, chain, map| {
        record(ctx, sample, nk, nu, chain, map, pin, Some((mm, seq)))
    })
}

/// Names the mappings of the user frames of `words` (those after the
/// first `nk`) in `plan`, at the addresses the drain looks them up at:
/// a return address one byte back, at its call; the first user frame of
/// a kernel sample (`kernel_sample`) is the user ip at kernel entry, not
/// a return address.  NMI context.
#[inline(always)]
pub(crate) fn name_user_frames(plan: &mut Plan<'_>, words: &[u64], nk: u32, kernel_sample: bool) {
    let user = words.get((nk as usize).min(words.len())..).unwrap_or(&[]);
    for (j, &ip) in user.iter().take(uapi::RPROF_MAX_FRAMES as usize).enumerate() {
        let back = u64::from(!(kernel_sample && j == 0));
        plan.frame(j, ip.wrapping_sub(back));
    }
}

/// Pushes a sample with its chain `words` (the first `nk` kernel frames,
/// the rest user frames, ended as `flags` say; `None`: the session takes
/// no chains) and the new mappings `plan` names, as one record; or
/// without the chain and the mappings (flagged `RPROF_STACK_CUT`) when
/// the ring has no room for them but has for the sample.  Only a ring
/// without room for the sample loses it, counted once.  `make(nk, nu,
/// chain, map)` builds the first slot and runs only once the record's
/// slots are reserved, as do the references `plan` takes.  NMI context.
#[inline(always)]
pub(crate) fn push_frames(
    ring: &SampleRing,
    words: &[u64],
    nk: u32,
    flags: Option<u32>,
    plan: &mut Plan<'_>,
    make: impl Fn(u32, u32, u8, u8) -> RingSlot,
) -> Push {
    // The counts the record carries are the words the ring holds: the
    // reader consumes `extra_slots()` continuation slots (`resolve::reader`), and
    // both counts must fit the record's u8 fields.
    // At most RPROF_MAX_FRAMES of each side (a tail's frame nibbles cover
    // no more): more kernel frames than that cut the user side off.
    let max = uapi::RPROF_MAX_FRAMES as usize;
    let k = (nk as usize).min(words.len());
    let u = if k > max { 0 } else { (words.len() - k).min(max) };
    let k = k.min(max);
    let words = &words[..k + u];
    let (nk, nu) = (k as u32, u as u32);
    let total = words.len();
    let (chain, cut) = match flags {
        Some(f) => (
            CHAIN_TAKEN | (f as u8 & CHAIN_FLAGS),
            CHAIN_TAKEN | (uapi::RPROF_STACK_CUT | f & uapi::RPROF_STACK_USER_SKIPPED) as u8,
        ),
        None => (0, 0),
    };
    let map = plan.map_byte();
    let all = total + plan.tail_len(nu as usize);
    let extra = all.div_ceil(SLOT_WORDS) as u64;
    if extra == 0 {
        // One slot (most samples): the plain push, which counts a record
        // that does not fit.  The record carries no entry, but a slot the
        // plan marked used stays as it is either way.
        let pushed = ring.push_with(|| make(nk, nu, chain, map));
        if !matches!(pushed, Push::Full) {
            plan.commit();
        }
        return pushed;
    }
    // Zeroed and filled only for a record that has a tail (a chain alone
    // has none: no reference to take, nothing after its frames).
    let mut tail: Option<[u64; maps::TAIL_WORDS]> = None;
    let has_tail = all > total;
    let pushed = ring.try_push_multi_with(
        extra,
        || make(nk, nu, chain, map),
        |i| {
            // The first continuation slot: the ring has room for the whole
            // record, so the references may be taken.
            if has_tail && tail.is_none() {
                let mut t = [0u64; maps::TAIL_WORDS];
                plan.take_refs(&mut t, nu as usize);
                tail = Some(t);
            }
            let mut w = [0u64; SLOT_WORDS];
            for (k, dst) in w.iter_mut().enumerate() {
                let at = i as usize * SLOT_WORDS + k;
                *dst = match at {
                    _ if at < total => words[at],
                    // Past the tail's words (which `take_refs` wrote, the
                    // rest zero), nothing: the reader skips them.
                    _ => tail.as_ref().and_then(|t| t.get(at - total)).copied().unwrap_or(0),
                };
            }
            RingSlot { words: w }
        },
    );
    match pushed {
        Push::Full => {
            let cut_map = plan.cut_map_byte();
            ring.push_with(|| make(0, 0, cut, cut_map))
        }
        stored => {
            plan.commit();
            stored
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of rprof (test builds only, see `src/kapi/kunit.rs`).

use crate::device::config::Config;
use crate::resolve::drain::Drain;
use crate::resolve::cookies::{CookieTable, NoCookie, Object, PathRef};
use crate::buffer::evbuf::EventBuffer;
use crate::resolve::follow::{insert, Follow};
use crate::resolve::modules;
use crate::sampling::followed::{current_group, Group};
use crate::kapi::helpers::{self, RawSample, VmaRange, TEST_SRC_IRQ_WORK, TEST_SRC_NMI, TEST_SRC_TASK, TEST_SRC_TIMER};
use crate::resolve::mapcache::{MapCache, Target};
use crate::kapi::kicker::Kicker;
use crate::kapi::kunit::{kassert, kassert_eq, kunit_suite, Test};
use crate::device::params::{self, Params};
use crate::sampling::maps::{MapSlots, Plan};
use crate::sampling::ring::{Push, Ring, Slot};
use crate::sampling::sampler::{self, HandlerCtx, RingRecord, SampleRing};
use crate::device::session::Session;
use crate::resolve::stacks::{self, RawChains};
use crate::uapi::*;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

mod follow;
mod unwind;

// ---- parameters ----------------------------------------------------------

fn params_accept_powers_of_two(t: &mut Test) {
    kassert!(t, Params::new(4096, 256).is_ok());
    kassert!(t, Params::new(params::RING_RECORDS_MIN, 1).is_ok());
    kassert!(t, Params::new(params::RING_RECORDS_MAX, params::BUFFER_PAGES_MAX).is_ok());
}

fn params_reject_bad_values(t: &mut Test) {
    kassert_eq!(t, Params::new(1000, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(32, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(params::RING_RECORDS_MAX * 2, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, 0).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, 3).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, params::BUFFER_PAGES_MAX * 2).err(), Some(EINVAL));
}

/// A session's event buffer: the module's size by default, its own if
/// the configuration names a valid one up to 16 times the module's (not
/// charged to a cgroup: the administrator's bound), and `wakeup_bytes` checked
/// against the session's size, not the module's.
fn config_buffer_pages(t: &mut Test) {
    let Ok(params) = Params::new(4096, 256) else {
        kassert!(t, false);
        return;
    };
    let pages = |p: u32| Config::check(test_raw_config(0, p), &params).map(|c| c.buffer_pages);
    kassert_eq!(t, pages(0), Ok(256));
    kassert_eq!(t, pages(1), Ok(1));
    kassert_eq!(t, pages(1024), Ok(1024));
    // At most 16 times the module's (the buffer is not charged).
    kassert_eq!(t, pages(4096), Ok(4096));
    for bad in [3u32, 1000, 8192, params::BUFFER_PAGES_MAX, params::BUFFER_PAGES_MAX * 2, u32::MAX, 1 << 31] {
        kassert!(t, pages(bad) == Err(EINVAL), "buffer_pages {} accepted", bad);
    }
    // 8 KiB to wake the reader: more than a one-page session buffer holds,
    // less than the module's default.
    let mut raw = test_raw_config(0, 1);
    raw.wakeup_bytes = 8192;
    kassert_eq!(t, Config::check(raw, &params).err(), Some(EINVAL));
    raw.buffer_pages = 2;
    kassert!(t, Config::check(raw, &params).is_ok());
}

/// `perf_mmap()`'s rule: the allowance first, the rest to `pinned_vm`;
/// what others took past a smaller limit counts as the limit; nothing
/// overflows on absurd counts.
fn charge_past_allowance(t: &mut Test) {
    use crate::buffer::charge::past_allowance;
    kassert_eq!(t, past_allowance(10, 0, 100), 0);
    kassert_eq!(t, past_allowance(10, 95, 100), 5);
    kassert_eq!(t, past_allowance(10, 100, 100), 10);
    kassert_eq!(t, past_allowance(10, 500, 100), 10);
    kassert_eq!(t, past_allowance(10, 0, 0), 10);
    kassert_eq!(t, past_allowance(0, 500, 100), 0);
    kassert_eq!(t, past_allowance(usize::MAX, usize::MAX, 1), usize::MAX);
    kassert_eq!(t, past_allowance(usize::MAX, 0, usize::MAX), 0);
}

/// What `mmap()` of the event buffer accepts: the control page at offset
/// 0 (writable, never exec), the data area at offset 1 (exactly its size,
/// never writable), both shared; the rest is refused with the errno the
/// e2e test and the tools expect.
fn mmap_shapes(t: &mut Test) {
    use crate::buffer::evbuf::mapping_for;
    use crate::kapi::helpers::VmaReq;
    let req = |pgoff, pages, shared, write, exec| VmaReq { pgoff, pages, shared, write, exec };
    kassert_eq!(t, mapping_for(&req(0, 1, true, true, false), 8), Ok((0, 1, true)));
    kassert_eq!(t, mapping_for(&req(1, 8, true, false, false), 8), Ok((1, 8, false)));
    kassert_eq!(t, mapping_for(&req(0, 2, true, true, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(1, 7, true, false, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(1, 9, true, false, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(2, 7, true, false, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(0, 1, false, true, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(1, 8, false, false, false), 8).err(), Some(EINVAL));
    kassert_eq!(t, mapping_for(&req(1, 8, true, true, false), 8).err(), Some(EPERM));
    kassert_eq!(t, mapping_for(&req(1, 8, true, false, true), 8).err(), Some(EPERM));
    kassert_eq!(t, mapping_for(&req(0, 1, true, false, true), 8).err(), Some(EPERM));
    kassert_eq!(t, mapping_for(&req(u64::MAX, 1, true, false, false), 8).err(), Some(EINVAL));
}

kunit_suite!(
    PARAMS_SUITE,
    "rprof-params",
    [params_accept_powers_of_two, params_reject_bad_values, config_buffer_pages, charge_past_allowance, mmap_shapes]
);

// ---- the ring, single-threaded -------------------------------------------

fn slots(n: usize) -> KVec<Slot<u64>> {
    let mut v = KVec::new();
    for _ in 0..n {
        if v.push(Slot::new(), GFP_KERNEL).is_err() {
            break;
        }
    }
    v
}

fn ring_rejects_odd_sizes(t: &mut Test) {
    for n in [0usize, 1, 3, 6, 100] {
        kassert!(t, Ring::<u64, _>::new(slots(n)).is_err(), "size {} accepted", n);
    }
    for n in [2usize, 4, 64] {
        kassert!(t, Ring::<u64, _>::new(slots(n)).is_ok(), "size {} refused", n);
    }
}

fn ring_exact_fit_then_full(t: &mut Test) {
    let Ok(r) = Ring::new(slots(8)) else {
        kassert!(t, false);
        return;
    };
    for i in 0..8u64 {
        kassert_eq!(t, r.push(100 + i), Push::Stored(i + 1));
    }
    kassert_eq!(t, r.push(999), Push::Full);
    kassert_eq!(t, r.push(999), Push::Full);
    kassert_eq!(t, r.lost(), 2);
    kassert_eq!(t, r.high_water(), 8);
    for i in 0..8u64 {
        // SAFETY: This test is the only consumer.
        kassert_eq!(t, unsafe { r.pop() }, Some(100 + i));
    }
    // SAFETY: As above.
    kassert_eq!(t, unsafe { r.pop() }, None);
    // Room again after consuming: nothing was overwritten, nothing lost.
    kassert_eq!(t, r.push(7), Push::Stored(1));
    kassert_eq!(t, r.stored(), 9);
    kassert_eq!(t, r.lost(), 2);
}

fn ring_wraps_around(t: &mut Test) {
    let Ok(r) = Ring::new(slots(4)) else {
        kassert!(t, false);
        return;
    };
    let mut next_in = 0u64;
    let mut next_out = 0u64;
    // Batches of 3 on a ring of 4 cross the end on most laps.
    for _ in 0..50 {
        for _ in 0..3 {
            kassert!(t, matches!(r.push(next_in), Push::Stored(_)));
            next_in += 1;
        }
        // SAFETY: Only consumer.
        while let Some(v) = unsafe { r.pop() } {
            kassert_eq!(t, v, next_out);
            next_out += 1;
        }
    }
    kassert_eq!(t, next_out, 150);
    kassert_eq!(t, r.lost(), 0);
    kassert_eq!(t, r.len(), 0);
}

kunit_suite!(RING_SUITE, "rprof-ring", [ring_rejects_odd_sizes, ring_exact_fit_then_full, ring_wraps_around]);

// ---- stress: writers in task, hrtimer and irq_work context ---------------

const SOURCES: usize = 4;
const TASK_RECORDS: u64 = 200_000;

fn checksum(cpu: u32, src: u32, seq: u64) -> u64 {
    seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((cpu as u64) << 40) ^ ((src as u64) << 32) ^ 0x5a5a
}

/// Shared state of a stress run; writers use only atomics and the rings.
struct Stress {
    /// What the handler path writes into: a session's rings, or bare rings.
    session: Option<Arc<Session>>,
    ctxs: KVec<HandlerCtx>,
    rings: KVec<SampleRing>,
    /// Next sequence number per (cpu, source); one writer each.
    seq: KVec<[AtomicU64; SOURCES]>,
    attempts: AtomicU64,
    writers_done: AtomicBool,
}

// SAFETY: Shared between the test, its kthreads and interrupt handlers;
// every mutable field is atomic, and `HandlerCtx` pointers are only used
// through `rprof_on_sample`'s own contract.
unsafe impl Sync for Stress {}

impl Stress {
    fn write(&self, cpu: u32, src: u32) {
        let seq = self.seq[cpu as usize][src as usize].fetch_add(1, Ordering::Relaxed);
        let sample = RawSample {
            time_ns: seq,
            ip: checksum(cpu, src, seq),
            period: src as u64,
            pid: cpu,
            tid: src,
            cpu: cpu as u16,
            flags: 0,
            comm: *b"rprof_stress\0\0\0\0",
            ..Default::default()
        };
        self.attempts.fetch_add(1, Ordering::Relaxed);
        if self.session.is_some() {
            // SAFETY: The context belongs to the live session; the sample
            // is on our stack.
            unsafe {
                sampler::rprof_on_sample(
                    &self.ctxs[cpu as usize] as *const HandlerCtx as *mut c_void,
                    &sample,
                    core::ptr::null_mut(),
                )
            };
        } else {
            // Bare rings get records of 1 to 4 slots (0 to 22 frames,
            // each derived from the record's checksum), so that nested
            // multi-slot reservations race in every context.
            let mut rec = RingRecord::new(sample, src as u16);
            let frames = seq % 23;
            rec.nk = frames as u8;
            let extra = frames.div_ceil(sampler::SLOT_WORDS as u64);
            let _ = self.rings[cpu as usize].push_multi_with(extra, || rec.into(), |i| {
                let mut w = [0u64; sampler::SLOT_WORDS];
                for (j, x) in w.iter_mut().enumerate() {
                    *x = frame_word(sample.ip, i * sampler::SLOT_WORDS as u64 + j as u64);
                }
                sampler::RingSlot { words: w }
            });
        }
    }
}

/// Frame `k` of a stress record whose checksum is `sum`.
fn frame_word(sum: u64, k: u64) -> u64 {
    sum.rotate_left(k as u32 + 1) ^ k
}

unsafe extern "C" fn stress_writer(ctx: *mut c_void, cpu: u32, src: u32) {
    // SAFETY: `ctx` is the `Stress` of the running test, alive until
    // `rprof_test_stop` returned.
    let s = unsafe { &*(ctx as *const Stress) };
    if src == TEST_SRC_TASK {
        for _ in 0..TASK_RECORDS {
            s.write(cpu, src);
            if s.seq[cpu as usize][0].load(Ordering::Relaxed) % 512 == 0 {
                // SAFETY: Process context.
                unsafe { helpers::rprof_test_cpu_relax() };
            }
        }
    } else {
        // The C side queues this CPU's irq_work after each timer write.
        s.write(cpu, src);
    }
}

/// What a checking consumer saw.
#[derive(Default)]
struct Seen {
    records: u64,
    lost: u64,
    bad_payload: u64,
    out_of_order: u64,
    head_backwards: u64,
    tail_past_head: u64,
    start: u64,
    stop: u64,
    last: KVec<[u64; SOURCES]>,
    /// The stream's context: (pid, tid) of the last TASK, the last SWITCH.
    task: (u32, u32),
    cookie: u64,
    /// MODULE records with the UNLOAD flag.
    unloads: u64,
}

impl Seen {
    fn new(nr: usize) -> Self {
        let mut s = Seen::default();
        let _ = s.last.extend_with(nr, [0; SOURCES], GFP_KERNEL);
        s
    }

    fn check(&mut self, cpu: u32, src: u32, seq: u64, sum: u64) {
        self.records += 1;
        if cpu as usize >= self.last.len() || src as usize >= SOURCES || sum != checksum(cpu, src, seq) {
            self.bad_payload += 1;
            return;
        }
        // Sequence numbers start at 0; store seq + 1 so 0 means "none yet".
        let last = &mut self.last[cpu as usize][src as usize];
        if seq + 1 <= *last {
            self.out_of_order += 1;
        }
        *last = seq + 1;
    }

    /// Parses one record of the event stream.  Samples of the stress runs
    /// are kernel samples written with pid = CPU and tid = source, so they
    /// come after a TASK naming those and a SWITCH to the kernel cookie,
    /// with time = sequence and offset = ip = checksum.
    fn record(&mut self, bytes: &[u8]) {
        let word = |off: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[off..off + 8]);
            u64::from_ne_bytes(b)
        };
        let half = |off: usize| -> u32 { u32::from_ne_bytes([bytes[off], bytes[off + 1], bytes[off + 2], bytes[off + 3]]) };
        let ty = u16::from_ne_bytes([bytes[0], bytes[1]]) as u32;
        match ty {
            RPROF_RECORD_SAMPLE if bytes.len() >= 32 => {
                if self.cookie != RPROF_COOKIE_KERNEL as u64 {
                    self.bad_payload += 1;
                    return;
                }
                let (cpu, src) = self.task;
                self.check(cpu, src, word(8), word(16));
            }
            RPROF_RECORD_TASK if bytes.len() >= 48 => self.task = (half(12), half(16)),
            RPROF_RECORD_SWITCH if bytes.len() >= 16 => self.cookie = word(8),
            RPROF_RECORD_LOST => self.lost += word(16),
            RPROF_RECORD_START => self.start += 1,
            RPROF_RECORD_STOP => self.stop += 1,
            RPROF_RECORD_MODULE if u16::from_ne_bytes([bytes[2], bytes[3]]) as u32 & RPROF_MODULE_UNLOAD != 0 => self.unloads += 1,
            RPROF_RECORD_COOKIE | RPROF_RECORD_MODULE | RPROF_RECORD_THROTTLE | RPROF_RECORD_UNTHROTTLE => {}
            _ => self.bad_payload += 1,
        }
    }
}

fn new_stress(session: Option<Arc<Session>>, ring_records: u32) -> Result<KBox<Stress>> {
    // SAFETY: Reads a boot-time constant.
    let nr = unsafe { helpers::rprof_nr_cpu_ids() } as usize;
    let mut ctxs = KVec::new();
    let mut rings = KVec::new();
    let mut seq = KVec::new();
    for cpu in 0..nr {
        match &session {
            Some(s) => ctxs.push(s.handler_ctx(cpu)?, GFP_KERNEL)?,
            None => rings.push(crate::device::rings::new_ring(ring_records)?, GFP_KERNEL)?,
        }
        seq.push([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)], GFP_KERNEL)?;
    }
    Ok(KBox::new(
        Stress {
            session,
            ctxs,
            rings,
            seq,
            attempts: AtomicU64::new(0),
            writers_done: AtomicBool::new(false),
        },
        GFP_KERNEL,
    )?)
}

/// The ring consumer of the bare-ring stress run, in its own kthread.
struct RingDrain<'a> {
    stress: &'a Stress,
    seen: Seen,
}

unsafe extern "C" fn ring_drain_thread(ctx: *mut c_void) {
    // SAFETY: `ctx` is the test's `RingDrain`, alive until joined.
    let d = unsafe { &mut *(ctx as *mut RingDrain<'_>) };
    loop {
        let done = d.stress.writers_done.load(Ordering::Acquire);
        let mut frames = [0u64; 32];
        for r in d.stress.rings.iter() {
            // SAFETY: This thread is the only consumer.
            while let Some(rec) = unsafe { crate::resolve::reader::pop(r, &mut frames) } {
                d.seen.check(rec.sample.cpu.into(), rec.sample.tid, rec.sample.time_ns, rec.sample.ip);
                let n = rec.nk as u64;
                if n != rec.sample.time_ns % 23 || (0..n).any(|k| frames[k as usize] != frame_word(rec.sample.ip, k)) {
                    d.seen.bad_payload += 1;
                }
            }
        }
        if done {
            break;
        }
        // SAFETY: Process context.
        unsafe { helpers::rprof_test_cpu_relax() };
    }
}

/// Runs the writers of every context on every CPU until the task writers
/// are done, then stops the timers and irq_works.
fn run_writers(stress: &Stress, period_ns: u64) -> bool {
    let ptr = stress as *const Stress as *mut c_void;
    // SAFETY: `stress` outlives the writers (stopped below).
    let test = unsafe { helpers::rprof_test_start(stress_writer, ptr, period_ns) };
    let started = !test.is_null();
    if started {
        // SAFETY: `test` came from `rprof_test_start`; waits for the
        // threads, cancels the timers and flushes the irq_works.
        unsafe { helpers::rprof_test_stop(test) };
    }
    stress.writers_done.store(true, Ordering::Release);
    started
}

fn ring_stress_all_contexts(t: &mut Test) {
    let Ok(stress) = new_stress(None, 256) else {
        kassert!(t, false, "allocation failed");
        return;
    };
    // SAFETY: Reads a boot-time constant.
    let nr = unsafe { helpers::rprof_nr_cpu_ids() } as usize;
    let mut drain = RingDrain { stress: &stress, seen: Seen::new(nr) };
    // SAFETY: `drain` is alive until the join below; it only reads
    // `stress` through atomics and the rings' consumer side.
    let th = unsafe { helpers::rprof_test_spawn(ring_drain_thread, &mut drain as *mut RingDrain<'_> as *mut c_void) };
    kassert!(t, !th.is_null());
    let started = run_writers(&stress, 20_000);
    // SAFETY: `th` came from `rprof_test_spawn`.
    unsafe { helpers::rprof_test_join(th) };
    kassert!(t, started);

    let attempts = stress.attempts.load(Ordering::Relaxed);
    let lost: u64 = stress.rings.iter().map(|r| r.lost()).sum();
    let seen = &drain.seen;
    pr_info!("ring stress: {} written, {} read, {} dropped\n", attempts, seen.records, lost);
    kassert_eq!(t, attempts, seen.records + lost);
    // Records of 1 to 4 slots: the rings count records, not slots.
    kassert_eq!(t, stress.rings.iter().map(|r| r.stored()).sum::<u64>(), seen.records);
    kassert_eq!(t, seen.bad_payload, 0);
    kassert_eq!(t, seen.out_of_order, 0);
    // Every context wrote: the task writers alone wrote TASK_RECORDS each.
    let timer: u64 = stress.seq.iter().map(|s| s[TEST_SRC_TIMER as usize].load(Ordering::Relaxed)).sum();
    let irq_work: u64 = stress.seq.iter().map(|s| s[TEST_SRC_IRQ_WORK as usize].load(Ordering::Relaxed)).sum();
    let nmi: u64 = stress.seq.iter().map(|s| s[TEST_SRC_NMI as usize].load(Ordering::Relaxed)).sum();
    pr_info!("ring stress: timer {} irq_work {} nmi {} writes\n", timer, irq_work, nmi);
    kassert!(t, timer > 0 && irq_work > 0 && nmi > 0, "timer {} irq_work {} nmi {}", timer, irq_work, nmi);
    kassert!(t, attempts >= TASK_RECORDS);
    // The NMI writer also took a call chain each time, with the kernel's
    // unwinder from NMI context (through the timer's hard IRQ): at least
    // two frames each, every frame of the first one a kernel function.
    let (mut chains, mut frames, mut ips) = (0u64, 0u64, [0u64; 16]);
    // SAFETY: Two locals and 16 words to write.
    let n = unsafe { helpers::rprof_test_nmi_chain_counts(&mut chains, &mut frames, ips.as_mut_ptr()) } as usize;
    pr_info!("ring stress: {} chains in NMI context, {} kernel frames\n", chains, frames);
    kassert!(t, chains > 0 && frames >= 2 * chains, "{} chains of {} frames in NMI context", chains, frames);
    kassert!(t, n >= 2, "the first NMI chain has {} frames", n);
    for &ip in &ips[..n.min(16)] {
        // SAFETY: Process context; any value may be looked up.
        kassert!(t, unsafe { helpers::rprof_test_kernel_symbol(ip) }, "NMI chain frame {:#x} is no kernel symbol", ip);
    }
}

// ---- the whole path: handler -> rings -> drain -> event buffer -> reader ---

/// Module parameters under which a test session may have any buffer
/// size (up to 16 times 4096 pages).
fn test_params() -> Result<Params> {
    Params::new(4096, 4096)
}

fn test_raw_config(ring_records: u32, buffer_pages: u32) -> rprof_config {
    let mut raw = rprof_config::default();
    raw.size = core::mem::size_of::<rprof_config>() as u32;
    raw.nr_events = 1;
    raw.ring_records = ring_records;
    raw.buffer_pages = buffer_pages;
    raw.events[0] = rprof_event_config { kind: RPROF_EVENT_CPU_CLOCK, flags: 0, period: 1_000_000 };
    raw
}

fn test_session(ring_records: u32, buffer_pages: u32) -> Result<Arc<Session>> {
    let config = Config::check(test_raw_config(ring_records, buffer_pages), &test_params()?)?;
    let waitq = Arc::new(crate::kapi::waitq::WaitQueue::new()?, GFP_KERNEL)?;
    let s = Session::new(config, 64, waitq)?;
    s.test_start();
    Ok(s)
}

/// The reader of the pipeline stress run: consumes the event buffer on
/// another CPU as hard as it can, checking head and tail as it goes.
struct Reader<'a> {
    session: &'a Session,
    seen: Seen,
}

unsafe extern "C" fn reader_thread(ctx: *mut c_void) {
    // SAFETY: `ctx` is the test's `Reader`, alive until joined.
    let r = unsafe { &mut *(ctx as *mut Reader<'_>) };
    let mut last_head = 0;
    let mut idle_after_stop = 0;
    loop {
        let mut seen = core::mem::take(&mut r.seen);
        let (head, tail) = r.session.evbuf().consume_with(|rec| seen.record(rec));
        r.seen = seen;
        if head < last_head {
            r.seen.head_backwards += 1;
        }
        if tail > head {
            r.seen.tail_past_head += 1;
        }
        last_head = head;
        if r.seen.stop > 0 {
            break;
        }
        if r.session.test_finished() {
            idle_after_stop += 1;
            if idle_after_stop > 1000 {
                break;
            }
        }
        // Space came free: let the drain write what it owes.
        r.session.drain_now();
        // SAFETY: Process context.
        unsafe { helpers::rprof_test_cpu_relax() };
    }
}

fn pipeline_stress_exact_counts(t: &mut Test) {
    // A small ring and a 2-page buffer: both stages drop under load.
    let Ok(session) = test_session(64, 2) else {
        kassert!(t, false, "session allocation failed");
        return;
    };
    let Ok(stress) = new_stress(Some(session.clone()), 64) else {
        kassert!(t, false, "allocation failed");
        return;
    };
    // SAFETY: Reads a boot-time constant.
    let nr = unsafe { helpers::rprof_nr_cpu_ids() } as usize;
    let mut reader = Reader { session: &session, seen: Seen::new(nr) };
    // SAFETY: `reader` lives until the join below.
    let th = unsafe { helpers::rprof_test_spawn(reader_thread, &mut reader as *mut Reader<'_> as *mut c_void) };
    kassert!(t, !th.is_null());
    let started = run_writers(&stress, 50_000);
    session.finish();
    // SAFETY: `th` came from `rprof_test_spawn`.
    unsafe { helpers::rprof_test_join(th) };
    kassert!(t, started);

    let seen = &reader.seen;
    let attempts = stress.attempts.load(Ordering::Relaxed);
    let mut cpus = KVec::new();
    let _ = cpus.extend_with(nr, rprof_cpu_stats::default(), GFP_KERNEL);
    let (total, drains, _, _) = session.stats(&mut cpus);
    pr_info!(
        "pipeline stress: {} written, {} delivered, {} lost in ring, {} lost in buffer, {} drains\n",
        attempts,
        total.delivered,
        total.lost_ring,
        total.lost_buffer,
        drains
    );
    let nmi: u64 = stress.seq.iter().map(|s| s[TEST_SRC_NMI as usize].load(Ordering::Relaxed)).sum();
    kassert!(t, nmi > 0, "no write from NMI context");
    // Exactness is the point only where records were dropped: both stages
    // must have dropped some (a 64-slot ring and a 2-page buffer against
    // writers on every CPU in every context; runs so far dropped 1% to
    // 90% at each stage).
    kassert!(t, total.lost_ring > 0, "the rings never overflowed");
    kassert!(t, total.lost_buffer > 0, "the buffer never overflowed");
    kassert!(t, total.delivered > 0, "nothing was delivered");
    kassert_eq!(t, seen.start, 1);
    kassert_eq!(t, seen.stop, 1);
    kassert_eq!(t, seen.head_backwards, 0);
    kassert_eq!(t, seen.tail_past_head, 0);
    kassert_eq!(t, seen.bad_payload, 0);
    kassert_eq!(t, seen.out_of_order, 0);
    kassert_eq!(t, total.samples, attempts);
    kassert_eq!(t, total.samples, total.delivered + total.lost_ring + total.lost_buffer);
    kassert_eq!(t, seen.records, total.delivered);
    kassert_eq!(t, seen.lost, total.lost_ring + total.lost_buffer);
    for (cpu, c) in cpus.iter().enumerate() {
        kassert!(t, c.samples == c.delivered + c.lost_ring + c.lost_buffer, "cpu {}", cpu);
    }
}

/// Drives `n` samples through the handler's write path on CPU 0, draining
/// every `batch`, then stops; returns what a reader consuming only at the
/// end sees, and the stats.
fn write_then_read(session: &Session, n: u64, batch: u64) -> (Seen, rprof_cpu_stats) {
    // Without a context the caller's counts come out zero and fail.
    let (Ok(mut ctx), Ok(idle)) = (session.handler_ctx(0), Kicker::new(idle_work)) else {
        return (Seen::new(1), rprof_cpu_stats::default());
    };
    // Only this test drains: a full ring kicks the drain, whose worker
    // (unbound) would run at once on another CPU and make the counts
    // depend on timing.
    ctx.kicker = idle.as_ptr();
    for i in 0..n {
        let sample = RawSample { time_ns: i, ip: checksum(0, 0, i), cpu: 0, ..Default::default() };
        // SAFETY: The context's ring belongs to the live session, and its
        // kicker `idle` lives until this function returns.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
        if (i + 1) % batch == 0 {
            session.drain_now();
        }
    }
    let seen = finish_and_read(session);
    let (total, _, _, _) = session.stats(&mut []);
    (seen, total)
}

/// The work of a kicker that drains nothing.
unsafe extern "C" fn idle_work(_: *mut c_void) -> core::ffi::c_uint {
    0
}

/// Stops `session`, then consumes its buffer (letting the drain write
/// what it owes) until STOP; what a reader consuming only at the end sees.
fn finish_and_read(session: &Session) -> Seen {
    session.finish();
    let mut seen = Seen::new(1);
    for _ in 0..100 {
        let mut s = core::mem::take(&mut seen);
        session.evbuf().consume_with(|rec| s.record(rec));
        seen = s;
        if seen.stop > 0 {
            break;
        }
        session.drain_now();
    }
    seen
}

fn exact_count_no_loss(t: &mut Test) {
    let Ok(session) = test_session(4096, 16) else {
        kassert!(t, false);
        return;
    };
    let (seen, total) = write_then_read(&session, 1000, 100);
    kassert_eq!(t, seen.records, 1000);
    kassert_eq!(t, seen.lost, 0);
    kassert_eq!(t, seen.stop, 1);
    kassert_eq!(t, total.delivered, 1000);
}

fn exact_count_one_page_buffer(t: &mut Test) {
    // 4096 bytes hold at most 85 samples of 48 bytes: most of the 1000
    // are lost, and the LOST records must say exactly how many.
    let Ok(session) = test_session(4096, 1) else {
        kassert!(t, false);
        return;
    };
    let (seen, total) = write_then_read(&session, 1000, 50);
    kassert!(t, seen.records < 128, "{} records in one page", seen.records);
    kassert_eq!(t, seen.records + seen.lost, 1000);
    kassert_eq!(t, seen.lost, total.lost_buffer);
    kassert_eq!(t, total.lost_ring, 0);
    kassert_eq!(t, seen.stop, 1);
}

fn exact_count_small_ring(t: &mut Test) {
    // A 64-slot ring drained every 1000 samples: the ring drops, exactly.
    let Ok(session) = test_session(64, 64) else {
        kassert!(t, false);
        return;
    };
    let (seen, total) = write_then_read(&session, 1000, 1000);
    kassert_eq!(t, seen.records, 64);
    kassert_eq!(t, seen.lost, 1000 - 64);
    kassert_eq!(t, total.lost_ring, 1000 - 64);
}

/// A drain pass that moves more than the reader's watermark publishes
/// and wakes the reader as it goes, not only at its end: 4000 samples
/// (about 125 KiB of stream) wait in a 4096-slot ring, and one pass moves
/// them into a 256 KiB buffer whose watermark is a quarter of it.  The
/// pass wakes the reader once on the way (64 KiB) and once at its end;
/// without the mid-pass wake, once.  Nothing is lost, in order.
fn long_pass_wakes_the_reader_on_the_way(t: &mut Test) {
    let Ok(session) = test_session(4096, 64) else {
        kassert!(t, false);
        return;
    };
    let Ok(ctx) = session.handler_ctx(0) else {
        kassert!(t, false, "no handler context");
        return;
    };
    let n = 4000u64;
    for i in 0..n {
        let sample = RawSample { time_ns: i, ip: checksum(0, 0, i), cpu: 0, ..Default::default() };
        // SAFETY: The context belongs to the live session.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
    }
    let (_, _, before, _) = session.stats(&mut []);
    session.drain_now();
    let (total, _, after, _) = session.stats(&mut []);
    kassert_eq!(t, total.delivered, n);
    kassert_eq!(t, after - before, 2);
    let seen = finish_and_read(&session);
    kassert_eq!(t, seen.records, n);
    kassert_eq!(t, seen.lost, 0);
    kassert_eq!(t, seen.out_of_order, 0);
    kassert_eq!(t, seen.stop, 1);
}

/// A running session whose samples fall in this module's text (the
/// module named is this one; its cookies may be forgotten, nothing is
/// unloaded).
struct InThisModule {
    session: Arc<Session>,
    ctx: HandlerCtx,
    /// Where the samples are: a function of this module.
    ip: u64,
    /// The module, as the module notifier names it.
    id: usize,
}

impl InThisModule {
    fn new(t: &mut Test, buffer_pages: u32) -> Option<Self> {
        let mut fail = |why: &str| {
            t.fail(crate::kapi::kunit::file_cstr!(), core::line!(), format_args!("{}", why));
            None
        };
        let Ok(session) = test_session(4096, buffer_pages) else {
            return fail("session allocation failed");
        };
        let ip = helpers::rprof_test_cpu_relax as unsafe extern "C" fn() as usize as u64;
        let Ok(ctx) = session.handler_ctx(0) else {
            return fail("no handler context");
        };
        let Some(info) = modules::lookup(ip) else {
            return fail("this module's text not found");
        };
        Some(Self { session, ctx, ip, id: info.id })
    }

    /// Samples at `ip` on CPU 0 with the times in `times`.
    fn samples(&self, times: core::ops::Range<u64>) {
        for i in times {
            let sample = RawSample { time_ns: i, ip: self.ip, cpu: 0, ..Default::default() };
            // SAFETY: The context belongs to the live session; the tests
            // take fewer samples than its 4096-slot ring holds, so a full
            // ring never kicks the drain behind their back.
            unsafe { sampler::rprof_on_sample(&self.ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
        }
    }
}

/// STOP is the last record of a run: a module that goes after it adds
/// nothing to the stream, one that goes during the run gets its MODULE
/// record with UNLOAD there.
fn module_going_after_stop_writes_nothing(t: &mut Test) {
    let Some(m) = InThisModule::new(t, 16) else { return };
    let session = &m.session;
    m.samples(0..10);
    session.module_going(m.id);
    // A new cookie for the same text (the module is still there).
    m.samples(10..20);
    let seen = finish_and_read(session);
    kassert_eq!(t, seen.stop, 1);
    kassert_eq!(t, seen.unloads, 1);
    session.module_going(m.id);
    let mut after = 0u64;
    session.evbuf().consume_with(|_| after += 1);
    kassert_eq!(t, after, 0);
    let (total, _, _, _) = session.stats(&mut []);
    kassert_eq!(t, total.delivered, 20);
}

/// An UNLOAD record keeps the room samples leave for LOST and STOP, and
/// one that does not fit waits, as LOST does, instead of being dropped:
/// with the buffer filled to that reserve by samples, a module going
/// writes nothing then, and its record comes once the reader made room,
/// before STOP.  (Before, it took the reserve, and was dropped unseen
/// once that was gone.)
fn module_unload_waits_for_room(t: &mut Test) {
    let Some(m) = InThisModule::new(t, 1) else { return };
    let session = &m.session;
    // 200 samples do not fit in a page: the buffer fills to its reserve.
    m.samples(0..200);
    session.drain_now();
    // Its LOST record too.
    session.drain_now();
    let (total, _, _, _) = session.stats(&mut []);
    kassert!(t, total.lost_buffer > 0, "the buffer did not fill");
    let before = session.evbuf().available();
    session.module_going(m.id);
    kassert_eq!(t, session.evbuf().available(), before);
    let seen = finish_and_read(session);
    kassert_eq!(t, seen.stop, 1);
    kassert_eq!(t, seen.unloads, 1);
}

/// A session, the context its handler on CPU 0 would get, and this
/// test's thread group id (a kthread's): what the pid filter tests start
/// from.
fn filter_session() -> Result<(Arc<Session>, HandlerCtx, i32)> {
    let session = test_session(4096, 16)?;
    let ctx = session.handler_ctx(0)?;
    // SAFETY: Reads current's thread group id.
    let own = unsafe { helpers::rprof_test_current_tgid() };
    Ok((session, ctx, own))
}

/// The pid filter with descendants, through the handler: a sample of
/// another thread group is kept only when the sampled task (this test's
/// kthread, whose parent is kthreadd, pid 2) is followed: it descends from
/// the filter's pid (or is its thread group) and the session asked for
/// descendants.  Init (pid 1) is no ancestor of a kthread.
fn pid_filter_follows_descendants(t: &mut Test) {
    let Ok((session, mut ctx, own)) = filter_session() else {
        kassert!(t, false, "no session or handler context");
        return;
    };
    let cases = [(2, true, 1u64), (2, false, 0), (1, true, 0), (own, true, 1)];
    for (i, &(pid, descendants, kept)) in cases.iter().enumerate() {
        let follow = if descendants {
            match Follow::new(pid, group_start(pid)) {
                Ok(f) => Some(f),
                Err(_) => {
                    kassert!(t, false, "no followed set");
                    return;
                }
            }
        } else {
            None
        };
        ctx.pid = pid;
        ctx.follow = follow.as_ref().map_or(core::ptr::null(), Follow::as_ptr);
        let (before, _, _, _) = session.stats(&mut []);
        // Not the filter's own thread group: only descent can keep it.
        let sample = RawSample { time_ns: i as u64, ip: checksum(0, 0, i as u64), pid: 0x7fff_fff0, cpu: 0, ..Default::default() };
        // SAFETY: The context belongs to the live session.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
        let (after, _, _, _) = session.stats(&mut []);
        let got = after.samples - before.samples;
        kassert!(t, got == kept, "pid {} descendants {}: {} samples kept, expected {}", pid, descendants, got, kept);
    }
    // The orphan table: with init's group as the filter (no ancestor of
    // a kthread), this kthread is followed once its thread group is in
    // the table, and not while only another process of its number (other
    // start time) is.
    let Ok(follow) = Follow::new(1, group_start(1)) else {
        kassert!(t, false, "no followed set");
        return;
    };
    ctx.pid = 1;
    ctx.follow = follow.as_ptr();
    for (i, (skew, kept)) in [(None, 0u64), (Some(1u64), 0), (Some(0), 1)].into_iter().enumerate() {
        if let Some(skew) = skew {
            // This kthread's thread group, or another process of its number.
            let own = current_group();
            insert(follow.set(), Group { start: own.start + skew, ..own });
        }
        let (before, _, _, _) = session.stats(&mut []);
        let sample = RawSample { time_ns: 10 + i as u64, ip: checksum(0, 0, i as u64), pid: 0x7fff_fff0, cpu: 0, ..Default::default() };
        // SAFETY: The context belongs to the live session; `follow` lives
        // across the call.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
        let (after, _, _, _) = session.stats(&mut []);
        kassert_eq!(t, after.samples - before.samples, kept);
    }
    kassert_eq!(t, follow.orphans(), (2, 0));
    session.finish();
}

/// The start time of thread group `tgid` (this kthread's pid namespace is
/// the initial one), or 0 if there is none.
fn group_start(tgid: i32) -> u64 {
    let mut start = 0;
    // SAFETY: Process context.
    unsafe { helpers::rprof_global_tgid(tgid, &mut start) };
    start
}

/// Samples through the handler with `ctx`, with the sampled task's thread
/// group `pid`: how many the session kept.
fn kept_samples(session: &Session, ctx: &HandlerCtx, pid: u32) -> u64 {
    let (before, _, _, _) = session.stats(&mut []);
    let sample = RawSample { time_ns: 1, ip: checksum(0, 0, 1), pid, cpu: 0, ..Default::default() };
    // SAFETY: The context belongs to the live session.
    unsafe { sampler::rprof_on_sample(ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
    let (after, _, _, _) = session.stats(&mut []);
    after.samples - before.samples
}

/// The pid filter names a process, not a number (issue 29, item 4): the
/// sampled task (this kthread) has the filter's number, but a filter made
/// for a process of that number that started at another time (an earlier
/// process, gone, whose number was given again) keeps none of its samples,
/// neither as the filter's process nor through the descendants' set.
fn pid_filter_names_a_process(t: &mut Test) {
    let Ok((session, mut ctx, own)) = filter_session() else {
        kassert!(t, false, "no session or handler context");
        return;
    };
    let start = group_start(own);
    kassert!(t, start != 0, "no start time for thread group {}", own);
    ctx.pid = own;
    for (skew, kept) in [(0u64, 1u64), (1, 0)] {
        ctx.pid_start = start + skew;
        let got = kept_samples(&session, &ctx, own as u32);
        kassert!(t, got == kept, "filter ({}, start {:+}): {} kept, expected {}", own, skew, got, kept);
        let Ok(follow) = Follow::new(own, start + skew) else {
            kassert!(t, false, "no followed set");
            return;
        };
        ctx.follow = follow.as_ptr();
        // Another thread group's number in the sample: only the set can
        // keep it, as the filter's process (start time and all).
        let got = kept_samples(&session, &ctx, 0x7fff_fff0);
        kassert!(t, got == kept, "descendants of ({}, start {:+}): {} kept, expected {}", own, skew, got, kept);
        ctx.follow = core::ptr::null();
    }
    session.finish();
}

/// STOP retracts the followed set (issue 29, item 5): exits no longer
/// update a stopped session's orphans.  Through the session's own STOP
/// path (`Session::finish`), on a session that follows init's
/// descendants.
fn stop_retracts_the_followed_set(t: &mut Test) {
    let mut raw = test_raw_config(4096, 16);
    raw.flags = RPROF_CONFIG_PID_FILTER | RPROF_CONFIG_PID_DESCENDANTS;
    raw.pid = 1;
    let session = (|| {
        let config = Config::check(raw, &test_params()?)?;
        let waitq = Arc::new(crate::kapi::waitq::WaitQueue::new()?, GFP_KERNEL)?;
        Session::new(config, 64, waitq)
    })();
    let Ok(session) = session else {
        kassert!(t, false, "session allocation failed");
        return;
    };
    kassert_eq!(t, session.test_follow_published(), Some(false));
    session.test_start();
    kassert_eq!(t, session.test_follow_published(), Some(true));
    session.finish();
    kassert_eq!(t, session.test_follow_published(), Some(false));
}

/// Rings are made at SET_CONFIG for every possible CPU (issue 29, item
/// 6): a CPU that was offline then finds its ring when it comes online,
/// and the hotplug callback, under the hotplug lock, allocates nothing.
fn rings_for_cpus_not_yet_online(t: &mut Test) {
    let cpu = 1u32;
    // SAFETY: Reads the possible and online masks.
    if !unsafe { helpers::rprof_cpu_possible(cpu) } {
        kassert!(t, false, "needs a second possible CPU (the guest has -smp 2)");
        return;
    }
    // SAFETY: As above.
    let was_online = unsafe { helpers::rprof_cpu_online(cpu) };
    // SAFETY: Process context, no lock held; the CPU comes back below.
    if was_online && unsafe { helpers::rprof_test_cpu_set(cpu, false) } != 0 {
        kassert!(t, false, "could not take CPU {} offline", cpu);
        return;
    }
    let session = test_session(4096, 16);
    // SAFETY: As above.
    let back = if was_online { unsafe { helpers::rprof_test_cpu_set(cpu, true) } } else { 0 };
    kassert_eq!(t, back, 0);
    let Ok(session) = session else {
        kassert!(t, false, "session allocation failed");
        return;
    };
    kassert!(t, session.test_has_ring(cpu as usize), "no ring for CPU {}, offline at SET_CONFIG", cpu);
    // Opening its counters takes the ring made then, allocating none.
    kassert!(t, session.open_cpu(cpu as usize).is_ok(), "no counters on CPU {}", cpu);
    session.finish();
}

kunit_suite!(
    PIPELINE_SUITE,
    "rprof-pipeline",
    [
        pid_filter_follows_descendants,
        pid_filter_names_a_process,
        stop_retracts_the_followed_set,
        rings_for_cpus_not_yet_online,
        ring_stress_all_contexts,
        pipeline_stress_exact_counts,
        exact_count_no_loss,
        exact_count_one_page_buffer,
        exact_count_small_ring,
        long_pass_wakes_the_reader_on_the_way,
        module_going_after_stop_writes_nothing,
        module_unload_waits_for_room
    ]
);

// ---- cookies ---------------------------------------------------------------

fn kern_path(name: &core::ffi::CStr) -> Option<PathRef> {
    // SAFETY: All-zero is a valid (empty) `struct path` to fill.
    let mut path: kernel::bindings::path = unsafe { core::mem::zeroed() };
    // SAFETY: `name` is a C string; on success `path` holds a reference.
    if unsafe { helpers::rprof_test_kern_path(name.as_ptr().cast(), &mut path) } != 0 {
        return None;
    }
    // SAFETY: The reference is ours.
    Some(unsafe { PathRef::from_raw(path) })
}

fn dentry_count(p: &PathRef) -> u32 {
    // SAFETY: `p` holds a reference on the path.
    unsafe { helpers::rprof_test_dentry_count(p.as_ptr()) }
}

fn cookie_same_file_same_cookie(t: &mut Test) {
    let (Some(probe), Some(a1), Some(a2), Some(b)) =
        (kern_path(c"/init"), kern_path(c"/init"), kern_path(c"/init"), kern_path(c"/bin/busybox"))
    else {
        kassert!(t, false, "guest files missing");
        return;
    };
    drop((a1, a2));
    let base = dentry_count(&probe);
    let Ok(mut table) = CookieTable::new(8) else {
        kassert!(t, false);
        return;
    };
    let (Some(a1), Some(a2)) = (kern_path(c"/init"), kern_path(c"/init")) else {
        kassert!(t, false);
        return;
    };
    let c1 = table.file(a1);
    let c2 = table.file(a2);
    let c3 = table.file(b);
    kassert!(t, c1.is_ok() && c3.is_ok());
    kassert_eq!(t, c1, c2);
    kassert!(t, c1 != c3);
    kassert!(t, c1.unwrap_or(0) >= RPROF_COOKIE_FIRST as u64);
    kassert_eq!(t, table.len(), 2);
    // One reference kept for the file, the duplicate's dropped.
    kassert_eq!(t, dentry_count(&probe), base + 1);
    match table.get(c1.unwrap_or(0)).map(|e| &e.object) {
        Some(Object::File { name, .. }) => kassert_eq!(t, &name[..], b"/init"),
        _ => kassert!(t, false, "no file entry"),
    }
    drop(table);
    kassert_eq!(t, dentry_count(&probe), base);
}

fn cookie_table_is_bounded(t: &mut Test) {
    let Ok(mut table) = CookieTable::new(2) else {
        kassert!(t, false);
        return;
    };
    let names = [c"/init", c"/bin/busybox", c"/lib/rprof.ko"];
    let mut got = [Ok(0), Ok(0), Ok(0)];
    for (i, n) in names.iter().enumerate() {
        let Some(p) = kern_path(n) else {
            kassert!(t, false, "guest file missing");
            return;
        };
        got[i] = table.file(p);
    }
    kassert!(t, got[0].is_ok() && got[1].is_ok());
    kassert_eq!(t, got[2], Err(NoCookie::Full));
    kassert_eq!(t, table.len(), 2);
    // Known files still resolve when the table is full.
    if let Some(p) = kern_path(c"/init") {
        kassert_eq!(t, table.file(p), got[0]);
    }
}

/// What the reset tests read: the stream's records in order, each with
/// the cookie or id it names: MODULE and SWITCH their cookie, RESET its
/// `next_cookie`, STACK its id, a SAMPLE its stack's id (0: none).
fn stream_of(session: &Session) -> KVec<(u32, u64)> {
    let mut out = KVec::new();
    for _ in 0..100 {
        let mut stop = false;
        session.evbuf().consume_with(|b| {
            let word = |off: usize| b.get(off..off + 8).map_or(0, |w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])));
            let ty = u16::from_ne_bytes([b[0], b[1]]) as u32;
            let arg = match ty {
                RPROF_RECORD_MODULE | RPROF_RECORD_SWITCH | RPROF_RECORD_STACK => word(8),
                RPROF_RECORD_RESET => word(16),
                RPROF_RECORD_SAMPLE => word(32),
                _ => 0,
            };
            stop |= ty == RPROF_RECORD_STOP;
            let _ = out.push((ty, arg), GFP_KERNEL);
        });
        if stop {
            break;
        }
        session.drain_now();
    }
    out
}

/// RESET_COOKIES on a running session: the files its cookies pinned are
/// let go at once; RESET comes between the samples taken before and
/// after it; the module text sampled on both sides gets a new cookie, at
/// RESET's `next_cookie` (none is reused), named again, with a TASK
/// before the next sample; a stopped session refuses it.
fn reset_forgets_cookies_and_their_files(t: &mut Test) {
    let Some(m) = InThisModule::new(t, 16) else { return };
    let session = &m.session;
    let Some(probe) = kern_path(c"/init") else {
        kassert!(t, false, "guest files missing");
        return;
    };
    let base = dentry_count(&probe);
    // The table keeps this reference.
    let file = kern_path(c"/init").and_then(|p| session.test_file_cookie(p));
    kassert_eq!(t, dentry_count(&probe), base + 1);
    m.samples(0..10);
    kassert!(t, session.reset_cookies().is_ok(), "RESET_COOKIES failed");
    kassert_eq!(t, dentry_count(&probe), base);
    m.samples(10..20);
    session.finish();
    kassert!(t, session.reset_cookies() == Err(EINVAL), "a stopped session took RESET_COOKIES");
    let stream = stream_of(session);
    let Some(at) = stream.iter().position(|&(ty, _)| ty == RPROF_RECORD_RESET) else {
        kassert!(t, false, "no RESET record");
        return;
    };
    let (before, after) = (&stream[..at], &stream[at + 1..]);
    let count = |part: &[(u32, u64)], ty: u32| part.iter().filter(|r| r.0 == ty).count();
    kassert_eq!(t, (count(before, RPROF_RECORD_SAMPLE), count(after, RPROF_RECORD_SAMPLE)), (10, 10));
    kassert_eq!(t, count(after, RPROF_RECORD_RESET), 0);
    let module = |part: &[(u32, u64)]| part.iter().find(|r| r.0 == RPROF_RECORD_MODULE).map(|r| r.1);
    let (Some(old), Some(new)) = (module(before), module(after)) else {
        kassert!(t, false, "the module is not named on both sides of RESET");
        return;
    };
    let next = stream[at].1;
    kassert!(t, file.is_some_and(|f| f < old), "file cookie {:?}, module cookie {}", file, old);
    kassert_eq!(t, next, old + 1);
    kassert_eq!(t, new, next);
    // Context first: TASK and SWITCH (to the new cookie) before the first
    // sample after RESET.
    let first = after.iter().position(|r| r.0 == RPROF_RECORD_SAMPLE).unwrap_or(0);
    kassert!(t, after[..first].iter().any(|r| r.0 == RPROF_RECORD_TASK), "no TASK after RESET");
    kassert!(t, after[..first].contains(&(RPROF_RECORD_SWITCH, new)), "no SWITCH to the new cookie after RESET");
}

/// The drain's mapping cache answers only for the address space and
/// write-lock sequence it was filled with, inside the cached range, and is
/// filled only when the lookup's sequence is the sample's.
fn map_cache_hits_only_same_mm_and_seq(t: &mut Test) {
    // SAFETY: Process context; a counted reference on init's mm.
    let mm = unsafe { helpers::rprof_test_user_mm() };
    if mm.is_null() {
        kassert!(t, false, "init has no address space");
        return;
    }
    // Any value: the cache compares sequences, it does not read them.
    let seq = 0x1234u32;
    let range = VmaRange { start: 0x10000, end: 0x30000, pgoff_bytes: 0x5000, mm_seq: seq, reserved: 0 };
    let mut cache = MapCache::new();
    kassert_eq!(t, cache.get(mm, seq, 0x18000), None);
    // A lookup whose sequence is not the sample's is not kept.
    // SAFETY: We hold a reference on `mm`; process context.
    unsafe { cache.fill(mm, seq.wrapping_add(2), &range, Target::File(42)) };
    kassert_eq!(t, cache.get(mm, seq.wrapping_add(2), 0x18000), None);
    // SAFETY: As above.
    unsafe { cache.fill(mm, seq, &range, Target::File(42)) };
    kassert_eq!(t, cache.get(mm, seq, 0x18000), Some((Target::File(42), 0x5000 + 0x8000)));
    kassert_eq!(t, cache.get(mm, seq, 0x10000), Some((Target::File(42), 0x5000)));
    kassert_eq!(t, cache.get(mm, seq, 0x30000), None);
    kassert_eq!(t, cache.get(mm, seq, 0xffff), None);
    kassert_eq!(t, cache.get(mm, seq.wrapping_add(2), 0x18000), None);
    kassert_eq!(t, cache.get(core::ptr::null_mut(), seq, 0x18000), None);
    kassert_eq!(t, cache.get(mm.wrapping_byte_add(64), seq, 0x18000), None);
    let anon = VmaRange { start: 0x40000, end: 0x41000, ..range };
    // SAFETY: As above.
    unsafe { cache.fill(mm, seq, &anon, Target::Anon) };
    kassert_eq!(t, cache.get(mm, seq, 0x40008), Some((Target::Anon, 0x40008)));
    // Both mappings are kept; a fill under a newer sequence forgets them.
    kassert_eq!(t, cache.get(mm, seq, 0x18000), Some((Target::File(42), 0x5000 + 0x8000)));
    let newer = VmaRange { mm_seq: seq + 2, ..anon };
    // SAFETY: As above.
    unsafe { cache.fill(mm, seq + 2, &newer, Target::Anon) };
    kassert_eq!(t, cache.get(mm, seq, 0x18000), None);
    kassert_eq!(t, cache.get(mm, seq + 2, 0x18000), None);
    kassert_eq!(t, cache.get(mm, seq + 2, 0x40008), Some((Target::Anon, 0x40008)));
    cache.clear();
    kassert_eq!(t, cache.get(mm, seq, 0x40008), None);
    drop(cache);
    // SAFETY: The reference taken above; process context.
    unsafe { helpers::rprof_mm_put(mm) };
}

kunit_suite!(
    COOKIE_SUITE,
    "rprof-cookies",
    [
        cookie_same_file_same_cookie,
        cookie_table_is_bounded,
        map_cache_hits_only_same_mm_and_seq,
        reset_forgets_cookies_and_their_files
    ]
);

// ---- call chains ---------------------------------------------------------

/// A fabricated stack: `words` at the fake address `base`, read by
/// [`read_fake_frame`].
struct FakeStack {
    base: u64,
    words: [u64; 16],
}

/// Reads two words of a [`FakeStack`]; fails outside it (an unmapped
/// page, to the walker).
unsafe extern "C" fn read_fake_frame(ctx: *mut c_void, addr: u64, frame: *mut u64) -> bool {
    // SAFETY: The test passes its `FakeStack`, alive across the walk.
    let s = unsafe { &*(ctx as *const FakeStack) };
    let Some(off) = addr.checked_sub(s.base) else { return false };
    let i = (off / 8) as usize;
    if off % 8 != 0 || i + 1 >= s.words.len() {
        return false;
    }
    // SAFETY: The walker passes room for two words.
    unsafe {
        *frame = s.words[i];
        *frame.add(1) = s.words[i + 1];
    }
    true
}

/// Walks `stack` from `fp` with at most `max` frames and user bounds
/// `[lo, hi]`; the flags and the frames.
fn walk(stack: &mut FakeStack, fp: u64, max: u32, lo: u64, hi: u64) -> (u32, KVec<u64>) {
    let mut ips = [0u64; 16];
    let mut n = 0u32;
    // SAFETY: `ips` has room for `max` (<= 16) frames; the context is the
    // stack, alive across the call.
    let flags = unsafe {
        helpers::rprof_walk_fp(
            fp,
            ips.as_mut_ptr(),
            max.min(16),
            &mut n,
            read_fake_frame,
            stack as *mut FakeStack as *mut c_void,
            lo,
            hi,
            8,
        )
    };
    let mut out = KVec::new();
    let _ = out.extend_from_slice(&ips[..n as usize], GFP_KERNEL);
    (flags, out)
}

/// The frame-pointer walker on fabricated stacks: a good chain, the depth
/// limit, a cycle, a frame pointer that goes down, a misaligned one, one
/// into unmapped memory and one at a kernel address.
fn chain_walker_fabricated_stacks(t: &mut Test) {
    const BASE: u64 = 0x7fff_0000_0000;
    const HI: u64 = 0x7fff_ffff_f000;
    let at = |i: u64| BASE + 8 * i;
    // Frames at words 0, 4 and 8: (next fp, return address).
    let mut s = FakeStack { base: BASE, words: [0; 16] };
    s.words[0] = at(4);
    s.words[1] = 0x401111;
    s.words[4] = at(8);
    s.words[5] = 0x402222;
    s.words[8] = 0;
    s.words[9] = 0x403333;
    let (flags, ips) = walk(&mut s, at(0), 16, BASE, HI);
    kassert_eq!(t, flags, 0);
    kassert_eq!(t, &ips[..], &[0x401111u64, 0x402222, 0x403333][..]);

    let (flags, ips) = walk(&mut s, at(0), 2, BASE, HI);
    kassert_eq!(t, flags, RPROF_STACK_USER_TRUNCATED);
    kassert_eq!(t, ips.len(), 2);

    // A frame that points at itself: one frame, then BAD_FP.
    s.words[4] = at(4);
    let (flags, ips) = walk(&mut s, at(0), 16, BASE, HI);
    kassert_eq!(t, flags, RPROF_STACK_USER_BAD_FP);
    kassert_eq!(t, ips.len(), 2);
    // One that points back down the stack.
    s.words[4] = at(0);
    kassert_eq!(t, walk(&mut s, at(0), 16, BASE, HI).0, RPROF_STACK_USER_BAD_FP);
    // Misaligned.
    s.words[4] = at(8) + 4;
    kassert_eq!(t, walk(&mut s, at(0), 16, BASE, HI).0, RPROF_STACK_USER_BAD_FP);
    // Into memory that cannot be read (past the fabricated stack, still
    // inside the user range): FAULT, with the frames before it.
    s.words[4] = BASE + 0x10000;
    let (flags, ips) = walk(&mut s, at(0), 16, BASE, HI);
    kassert_eq!(t, flags, RPROF_STACK_USER_FAULT);
    kassert_eq!(t, ips.len(), 2);
    // At a kernel address: outside the user range, never read.
    s.words[4] = 0xffff_ffff_8100_0000;
    kassert_eq!(t, walk(&mut s, at(0), 16, BASE, HI).0, RPROF_STACK_USER_BAD_FP);
    // Below the stack pointer.
    kassert_eq!(t, walk(&mut s, at(0), 16, BASE + 8, HI).0, RPROF_STACK_USER_BAD_FP);
    // A null frame pointer: an empty chain that ended normally.
    let (flags, ips) = walk(&mut s, 0, 16, BASE, HI);
    kassert_eq!(t, (flags, ips.len()), (0, 0));
}

/// Multi-slot records through the handler's ring type: a chain's frames
/// come out whole and in order, wrap-around included, and a record that
/// does not fit is dropped whole and counted once.
fn ring_multi_slot_records(t: &mut Test) {
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let mut frames = [0u64; 256];
    let record = |i: u64, nk: u8, nu: u8| {
        let mut r = RingRecord::new(RawSample { time_ns: i, ..Default::default() }, 0);
        r.nk = nk;
        r.nu = nu;
        r.chain = sampler::CHAIN_TAKEN;
        r
    };
    let word = |i: u64, k: u64| i << 32 | k;
    for round in 0..40u64 {
        // 1 + 3 slots (20 frames) each: laps the 64-slot ring many times.
        let (nk, nu) = (5u8, 15u8);
        let total = (nk + nu) as u64;
        let extra = total.div_ceil(sampler::SLOT_WORDS as u64);
        let pushed = ring.push_multi_with(extra, || record(round, nk, nu).into(), |s| {
            let mut w = [0u64; sampler::SLOT_WORDS];
            for (j, x) in w.iter_mut().enumerate() {
                let k = s * sampler::SLOT_WORDS as u64 + j as u64;
                *x = if k < total { word(round, k) } else { 0 };
            }
            sampler::RingSlot { words: w }
        });
        kassert!(t, matches!(pushed, Push::Stored(_)), "round {}", round);
        // SAFETY: The only reader of this ring.
        let Some(rec) = (unsafe { crate::resolve::reader::pop(&ring, &mut frames) }) else {
            kassert!(t, false, "round {}: nothing popped", round);
            return;
        };
        kassert_eq!(t, rec.sample.time_ns, round);
        kassert_eq!(t, (rec.nk, rec.nu), (nk, nu));
        let ok = (0..total).all(|k| frames[k as usize] == word(round, k));
        kassert!(t, ok, "round {}: frames torn or out of order", round);
    }
    // 60 single slots in, then a 5-slot record cannot fit (4 free): it is
    // dropped whole and counted once; a single record still fits.
    for i in 0..60 {
        let _ = ring.push(record(1000 + i, 0, 0).into());
    }
    let lost = ring.lost();
    let big = ring.push_multi_with(4, || record(2000, 30, 0).into(), |_| sampler::RingSlot { words: [7; sampler::SLOT_WORDS] });
    kassert_eq!(t, big, Push::Full);
    kassert_eq!(t, ring.lost(), lost + 1);
    kassert!(t, matches!(ring.push(record(3000, 0, 0).into()), Push::Stored(61)));
    let mut seen = 0;
    // SAFETY: The only reader.
    while let Some(rec) = unsafe { crate::resolve::reader::pop(&ring, &mut frames) } {
        kassert!(t, rec.sample.time_ns != 2000, "the dropped record came out");
        seen += 1;
    }
    kassert_eq!(t, seen, 61);
    // Records, not slots: 40 chains of 4 slots, 61 single ones.
    kassert_eq!(t, ring.stored(), 40 + 61);
}

/// `push_frames`' record maker for a test sample stamped `i`.
fn chain_record(i: u64) -> impl Fn(u32, u32, u8, u8) -> sampler::RingSlot {
    chain_record_at(i, 0)
}

/// [`chain_record`] of a sample at `ip`.
fn chain_record_at(i: u64, ip: u64) -> impl Fn(u32, u32, u8, u8) -> sampler::RingSlot {
    move |nk, nu, chain, map| {
        let mut r = RingRecord::new(RawSample { time_ns: i, ip, map, ..Default::default() }, 0);
        r.nk = nk as u8;
        r.nu = nu as u8;
        r.chain = chain;
        r.into()
    }
}

/// `push_frames` of a chain that names no mapping (no slots).
fn push_chain_words(
    ring: &SampleRing,
    words: &[u64],
    nk: u32,
    flags: u32,
    make: impl Fn(u32, u32, u8, u8) -> sampler::RingSlot,
) -> Push {
    let mut plan = Plan::none();
    sampler::push_frames(ring, words, nk, Some(flags), &mut plan, make)
}

/// A chain that does not fit keeps its sample, flagged CUT and without
/// frames; only a ring without room for the sample loses it, counted once.
fn chain_cut_keeps_the_sample(t: &mut Test) {
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let make = chain_record;
    let words = [0x1234u64; 40];
    // A chain that fits: 40 frames in continuation slots.
    let pushed = push_chain_words(&ring, &words, 10, 0, make(1));
    kassert!(t, matches!(pushed, Push::Stored(_)));
    let extra = words.len().div_ceil(sampler::SLOT_WORDS);
    // Leave one free slot: the next chain cannot fit, its sample can.
    for i in 0..(64 - (1 + extra) - 1) as u64 {
        let _ = ring.push(RingRecord::new(RawSample { time_ns: 100 + i, ..Default::default() }, 0).into());
    }
    let lost = ring.lost();
    let pushed = push_chain_words(&ring, &words, 10, RPROF_STACK_USER_TRUNCATED, make(2));
    kassert!(t, matches!(pushed, Push::Stored(64)), "{:?}", pushed);
    kassert_eq!(t, ring.lost(), lost);
    // Now full: the next sample is lost whole and counted once, with or
    // without frames.
    kassert_eq!(t, push_chain_words(&ring, &words, 10, 0, make(3)), Push::Full);
    kassert_eq!(t, push_chain_words(&ring, &[], 0, 0, make(4)), Push::Full);
    kassert_eq!(t, ring.lost(), lost + 2);
    let mut frames = [0u64; 256];
    let (mut first, mut cut, mut seen) = (false, false, 0);
    // SAFETY: The only reader of this ring.
    while let Some(rec) = unsafe { crate::resolve::reader::pop(&ring, &mut frames) } {
        seen += 1;
        match rec.sample.time_ns {
            1 => {
                first = (rec.nk, rec.nu) == (10, 30) && frames[..40].iter().all(|&w| w == 0x1234);
            }
            2 => {
                cut = (rec.nk, rec.nu) == (0, 0)
                    && rec.chain == sampler::CHAIN_TAKEN | RPROF_STACK_CUT as u8;
            }
            3 | 4 => kassert!(t, false, "a lost sample came out"),
            _ => {}
        }
    }
    kassert!(t, first, "the chain that fit came out wrong");
    kassert!(t, cut, "the cut sample is missing or not flagged CUT without frames");
    kassert_eq!(t, seen, 1 + (64 - (1 + extra) - 1) + 1);
}

/// The reader hands a chain's record to its consumer only once all its
/// slots are free again (the drain may then wait for an `mmap_lock` with
/// no slot of the ring held), and a one-slot record where it lies; both
/// with the record and words their writer stored.
fn reader_frees_a_chain_before_processing(t: &mut Test) {
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let words = [0x5678u64; 40];
    kassert!(t, matches!(push_chain_words(&ring, &words, 10, 0, chain_record(1)), Push::Stored(_)));
    kassert!(t, matches!(ring.push(RingRecord::new(RawSample { time_ns: 2, ..Default::default() }, 0).into()), Push::Stored(_)));
    let held = ring.len();
    kassert_eq!(t, held, 1 + words.len().div_ceil(sampler::SLOT_WORDS) as u64 + 1);
    let mut frames = [0u64; 256];
    let other = [0x9abcu64; 40];
    let mut during = 0;
    let mut copy = None;
    // SAFETY: The only reader of this ring; the closure pops nothing.
    let chain = unsafe { crate::resolve::reader::pop_with(&ring, &mut frames, &mut copy, |_| during = ring.len()) };
    // Copied out, its slots free: a writer may fill them again (as the
    // handler may while the drain processes), and the copy must not care.
    let held_after = ring.len();
    let again = matches!(push_chain_words(&ring, &other, 10, 0, chain_record(3)), Push::Stored(_));
    let copied = match (chain, copy) {
        (Some(crate::resolve::reader::Popped::Copied), Some(rec)) => {
            let n = crate::resolve::reader::copied_words(&rec, frames.len());
            rec.sample.time_ns == 1 && (rec.nk, rec.nu) == (10, 30) && n == 40 && frames[..n].iter().all(|&x| x == 0x5678)
        }
        _ => false,
    };
    kassert!(t, copied, "the chain was not copied out whole");
    kassert_eq!(t, (during, held_after, again), (0, 1, true));
    let mut copy = None;
    // SAFETY: As above.
    let single = unsafe { crate::resolve::reader::pop_with(&ring, &mut frames, &mut copy, |rec| (ring.len(), rec.sample.time_ns)) };
    // In place: its slot and the chain written meanwhile are held.
    kassert!(t, matches!(single, Some(crate::resolve::reader::Popped::Done(x)) if x == (held, 2)) && copy.is_none());
    // SAFETY: As above.
    let third = unsafe { crate::resolve::reader::pop(&ring, &mut frames) };
    kassert!(t, matches!(third, Some(r) if r.sample.time_ns == 3 && frames[..40].iter().all(|&x| x == 0x9abc)));
    kassert_eq!(t, ring.len(), 0);
}

/// The chain `rprof_callchain` takes from registers of current
/// interrupted in user mode at `ip`, with `sp`, `bp` and code segment `cs`
/// (`TEST_CS_*`), with at most `max_u` user frames: its flags, its count of
/// kernel frames and its frames.  All flags set and no frame if this
/// kernel's `pt_regs` does not fit the room kept for it.
fn user_chain(ip: u64, sp: u64, bp: u64, cs: u32, max_u: u32) -> (u32, u32, KVec<u64>) {
    let mut regs = [0u64; 32];
    // SAFETY: No arguments; a size.
    if unsafe { helpers::rprof_test_pt_regs_size() } as usize > core::mem::size_of_val(&regs) {
        return (u32::MAX, 0, KVec::new());
    }
    // SAFETY: `regs` has room for a `pt_regs` (checked).
    unsafe { helpers::rprof_test_user_regs(regs.as_mut_ptr() as *mut c_void, ip, sp, bp, cs) };
    let mut ips = [0u64; helpers::CHAIN_WORDS];
    let (mut nk, mut nu) = (0u32, 0u32);
    // SAFETY: `ips` holds CHAIN_WORDS words; `regs` are user registers of
    // current, whose address space is the test's.
    let flags = unsafe {
        helpers::rprof_callchain(regs.as_mut_ptr() as *mut c_void, ips.as_mut_ptr(), 127, max_u, &mut nk, &mut nu)
    };
    let mut v = KVec::new();
    let _ = v.extend_from_slice(&ips[..(nk + nu) as usize], GFP_KERNEL);
    (flags, nk, v)
}

/// The user side of `rprof_callchain` on a real user stack: a kthread
/// with an address space of its own (KUnit's `kunit_vm_mmap`), read with
/// `copy_from_user_nmi` as in the overflow handler.  A frame pointer into
/// a mapped page never touched ends the chain with FAULT (the walk never
/// faults a page in), one at a kernel address with BAD_FP.
fn chain_user_walk_real_stack(t: &mut Test) {
    const PAGE: u64 = 4096;
    // SAFETY: `raw()` is the running case.
    let base = unsafe { helpers::rprof_test_user_map(t.raw(), 2 * PAGE, 0) };
    kassert!(t, base != 0, "kunit_vm_mmap failed");
    if base == 0 {
        return;
    }
    let at = |i: u64| base + 8 * i;
    // Frames at words 2, 6 and 10 of the first page: (next fp, return).
    let mut words = [0u64; 16];
    words[2] = at(6);
    words[3] = 0x40_1111;
    words[6] = at(10);
    words[7] = 0x40_2222;
    words[10] = 0;
    words[11] = 0x40_3333;
    // SAFETY: `words` is ours; the destination is our user mapping.
    let ok = unsafe { helpers::rprof_test_user_write(base, words.as_ptr() as *const c_void, 128) };
    kassert!(t, ok, "copy_to_user failed");
    let chain = |bp: u64, max_u: u32| user_chain(0x40_0000, base, bp, helpers::TEST_CS_64, max_u);
    let (flags, nk, ips) = chain(at(2), 127);
    kassert_eq!(t, (flags, nk), (0, 0));
    kassert_eq!(t, &ips[..], &[0x40_1111u64, 0x40_2222, 0x40_3333][..]);
    let (flags, _, ips) = chain(at(2), 2);
    kassert_eq!(t, flags, RPROF_STACK_USER_TRUNCATED);
    kassert_eq!(t, ips.len(), 2);
    // The second frame's caller is in the second page, mapped but never
    // touched.
    words[6] = base + PAGE;
    // SAFETY: As above.
    let ok = unsafe { helpers::rprof_test_user_write(base, words.as_ptr() as *const c_void, 128) };
    kassert!(t, ok);
    let (flags, _, ips) = chain(at(2), 127);
    kassert_eq!(t, flags, RPROF_STACK_USER_FAULT);
    kassert_eq!(t, &ips[..], &[0x40_1111u64, 0x40_2222][..]);
    words[6] = 0xffff_ffff_8100_0000;
    // SAFETY: As above.
    let ok = unsafe { helpers::rprof_test_user_write(base, words.as_ptr() as *const c_void, 128) };
    kassert!(t, ok);
    let (flags, _, ips) = chain(at(2), 127);
    kassert_eq!(t, flags, RPROF_STACK_USER_BAD_FP);
    kassert_eq!(t, ips.len(), 2);
    // Past the mapping: unmapped user memory faults cleanly.
    let (flags, _, ips) = chain(base + 4 * PAGE, 127);
    kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_FAULT, 0));
}

/// The user side of `rprof_callchain` for a 32-bit task: frame records
/// of two 32-bit words below 4 GiB, read from a real user mapping.  The
/// same memory read as 64-bit frames would give other addresses; 32-bit
/// code in a segment of the task's LDT is not walked and says so.
fn chain_user_walk_compat(t: &mut Test) {
    const PAGE: u64 = 4096;
    // SAFETY: `raw()` is the running case.
    let base = unsafe { helpers::rprof_test_user_map(t.raw(), PAGE, 0x1000_0000) };
    kassert!(t, base != 0 && base < 1 << 32, "no mapping below 4 GiB: {:#x}", base);
    let at = |i: u64| (base + 4 * i) as u32;
    // Frames at words 3, 7 and 11 (4 mod 8: aligned for 32-bit frames,
    // not for 64-bit ones): (next fp, return address), 32 bits each.
    let mut words = [0u32; 16];
    words[3] = at(7);
    words[4] = 0x0804_1111;
    words[7] = at(11);
    words[8] = 0x0804_2222;
    words[11] = 0;
    words[12] = 0x0804_3333;
    // SAFETY: `words` is ours; the destination is our user mapping.
    let ok = unsafe { helpers::rprof_test_user_write(base, words.as_ptr() as *const c_void, 64) };
    kassert!(t, ok, "copy_to_user failed");
    let chain = |bp: u64, max_u: u32, cs: u32| {
        let (flags, _, ips) = user_chain(0x0804_0000, base, bp, cs, max_u);
        (flags, ips)
    };
    let fp = u64::from(at(3));
    // SAFETY: Reads a build-time constant.
    if !unsafe { helpers::rprof_test_ia32_emulation() } {
        // No 32-bit tasks run here; 32-bit registers are not walked.
        let (flags, ips) = chain(fp, 127, helpers::TEST_CS_32);
        kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_SKIPPED, 0));
        return;
    }
    let (flags, ips) = chain(fp, 127, helpers::TEST_CS_32);
    kassert_eq!(t, flags, 0);
    kassert_eq!(t, &ips[..], &[0x0804_1111u64, 0x0804_2222, 0x0804_3333][..]);
    // Only the low half of a 32-bit task's %rbp is its frame pointer.
    let (flags, ips) = chain(0xdead_0000_0000 | fp, 127, helpers::TEST_CS_32);
    kassert_eq!(t, (flags, ips.len()), (0, 3));
    let (flags, ips) = chain(fp, 2, helpers::TEST_CS_32);
    kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_TRUNCATED, 2));
    // 2-aligned is not aligned for 32-bit frames.
    let (flags, ips) = chain(fp + 2, 127, helpers::TEST_CS_32);
    kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_BAD_FP, 0));
    // The same frame pointer in 64-bit code: misaligned for 64-bit frames.
    let (flags, ips) = chain(fp, 127, helpers::TEST_CS_64);
    kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_BAD_FP, 0));
    // Code of the task's own LDT: not walked, and flagged.
    let (flags, ips) = chain(fp, 127, helpers::TEST_CS_LDT);
    kassert_eq!(t, (flags, ips.len()), (RPROF_STACK_USER_SKIPPED, 0));
    // A user side that is off is not "skipped".
    let (flags, _) = chain(fp, 0, helpers::TEST_CS_LDT);
    kassert_eq!(t, flags, 0);
}

/// The handler reads the address-space sequence a chain's record carries
/// *before* it walks the chain: a mapping made while the walk runs (here
/// from inside the walk, as another thread's mmap on another CPU would)
/// leaves the record with the older sequence, so the drain never resolves
/// the walked frames through the new mapping.  Read after the walk, the
/// record would carry the new sequence and this test fails.
fn chain_sequence_is_read_before_the_walk(t: &mut Test) {
    const PAGE: u64 = 4096;
    let raw = t.raw();
    // SAFETY: `raw` is the running case; the first mapping gives this
    // kthread an address space (KUnit's kthread_use_mm).
    let base = unsafe { helpers::rprof_test_user_map(raw, PAGE, 0) };
    kassert!(t, base != 0, "kunit_vm_mmap failed");
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let ctx = HandlerCtx { max_user: 127, ..HandlerCtx::plain(&ring, core::ptr::null()) };
    // Current has an mm (above).
    let before = current_mm_seq().1;
    let mut mapped = 0;
    let walk = |_ips: *mut u64, nk: &mut u32, nu: &mut u32| {
        // SAFETY: As above: the running case.
        mapped = unsafe { helpers::rprof_test_user_map(raw, PAGE, 0) };
        (*nk, *nu) = (0, 0);
        (0, 0)
    };
    // The test's own buffer, not the per-CPU scratch: this walk sleeps.
    let mut ips = [0u64; helpers::CHAIN_WORDS];
    // SAFETY: `ips` is ours and CHAIN_WORDS long; the walk stores no word;
    // this call stands in for the handler on a ring of its own.
    let pushed = unsafe { sampler::push_chain_with(&ring, &ctx, &RawSample::default(), ips.as_mut_ptr(), walk) };
    let after = current_mm_seq().1;
    let mut frames = [0u64; 8];
    // SAFETY: This test is the ring's only reader.
    let rec = unsafe { crate::resolve::reader::pop(&ring, &mut frames) };
    let Some(rec) = rec else {
        kassert!(t, false, "no record");
        return;
    };
    if !rec.mm.0.is_null() {
        // SAFETY: The record holds one `mm_count` reference on the mm
        // (`sampler::record`).
        unsafe { helpers::rprof_mm_drop(rec.mm.0) };
    }
    kassert!(t, matches!(pushed, Push::Stored(_)));
    kassert!(t, mapped != 0, "the mapping during the walk failed");
    kassert!(t, after != before, "a mapping did not move the sequence ({})", before);
    kassert!(t, !rec.mm.0.is_null(), "the record has no address space");
    kassert_eq!(t, rec.mm_seq, before);
}

/// The raw-chain table: a raw chain maps to its stack id only in the
/// same address space at the same sequence, with the same end flags and
/// kernel-frame count, and word for word.
fn raw_chains_match_only_same_space_and_words(t: &mut Test) {
    // SAFETY: Process context; a counted reference on init's mm.
    let mm = unsafe { helpers::rprof_test_user_mm() };
    if mm.is_null() {
        kassert!(t, false, "init has no address space");
        return;
    }
    let Ok(mut raw) = RawChains::new(modules::generation()) else {
        kassert!(t, false, "allocation failed");
        // SAFETY: The reference rprof_test_user_mm took.
        unsafe { helpers::rprof_mm_put(mm) };
        return;
    };
    // SAFETY: We hold a reference on `mm`; process context.
    let gen = modules::generation();
    // SAFETY: As above.
    let (tag, again, later) = unsafe { (raw.tag(mm, 7, gen), raw.tag(mm, 7, gen), raw.tag(mm, 8, gen)) };
    kassert_eq!(t, tag, again);
    kassert!(t, tag != later, "a new sequence kept the tag");
    // SAFETY: Null: no address space.
    let none = unsafe { raw.tag(core::ptr::null_mut(), 7, gen) };
    kassert!(t, none != tag, "no address space and init's share a tag");
    let chain = [0x40_1000u64, 0x40_2000, 0x40_3000];
    let h = stacks::hash_raw(&chain, tag, 0x100);
    kassert_eq!(t, raw.find(h, tag, 0x100, &chain), None);
    raw.insert(h, tag, 0x100, &chain, 42, 2);
    kassert_eq!(t, raw.find(h, tag, 0x100, &chain), Some((42, 2)));
    kassert_eq!(t, raw.find(stacks::hash_raw(&chain, later, 0x100), later, 0x100, &chain), None);
    kassert_eq!(t, raw.find(stacks::hash_raw(&chain, tag, 0x101), tag, 0x101, &chain), None);
    kassert_eq!(t, raw.find(stacks::hash_raw(&chain[..2], tag, 0x100), tag, 0x100, &chain[..2]), None);
    let other = [0x40_1000u64, 0x40_2000, 0x40_3008];
    kassert_eq!(t, raw.find(stacks::hash_raw(&other, tag, 0x100), tag, 0x100, &other), None);
    // The same hash with other words (a collision) does not match either.
    kassert_eq!(t, raw.find(h, tag, 0x100, &other), None);
    drop(raw);
    // SAFETY: The reference rprof_test_user_mm took (the table dropped its
    // own `mm_count` one).
    unsafe { helpers::rprof_mm_put(mm) };
}

/// The drain drops the address-space references of a run of records of
/// one mm at once, at the end of the pass (`Drain::put_mms`), and a drain
/// dropped with some still pending gives them back: none is lost, none
/// dropped twice, and none before the pass ends.
fn drain_drops_references_per_pass(t: &mut Test) {
    // SAFETY: Process context; a counted reference on init's mm, ours.
    let mm = unsafe { helpers::rprof_test_user_mm() };
    if mm.is_null() {
        kassert!(t, false, "init has no address space");
        return;
    }
    // SAFETY: We hold a reference on `mm`.
    let users = || unsafe { helpers::rprof_test_mm_count(mm) };
    let before = users();
    let made = test_evbuf(4).and_then(|b| Ok((Drain::new(b.producer(), 1, 16, false)?, b)));
    let Ok((mut d, buf)) = made else {
        kassert!(t, false, "allocation failed");
        // SAFETY: Our reference.
        unsafe { helpers::rprof_mm_put(mm) };
        return;
    };
    // Kernel samples of init with its address space, one without, as the
    // handler hands them over: each with a reference of its own.
    let run = |d: &mut Drain, with: &[bool]| {
        for (i, &has_mm) in with.iter().enumerate() {
            let mut rec = RingRecord::new(RawSample { time_ns: i as u64, ip: 0xffff_ffff_8100_0000, pid: 1, tid: 1, ..Default::default() }, 0);
            if has_mm {
                // SAFETY: We hold a reference on `mm`; the record carries
                // the `mm_count` one taken here, as the handler's do.
                unsafe { helpers::rprof_mm_grab(mm) };
                rec.mm = sampler::MmRef(mm);
            }
            d.process(&buf, 0, &rec, &[], 0);
        }
    };
    run(&mut d, &[true, true, false, true, true, true]);
    kassert_eq!(t, users(), before + 5);
    d.put_mms();
    kassert_eq!(t, users(), before);
    d.put_mms();
    kassert_eq!(t, users(), before);
    run(&mut d, &[true, true]);
    kassert_eq!(t, users(), before + 2);
    drop(d);
    kassert_eq!(t, users(), before);
    // SAFETY: Our reference.
    unsafe { helpers::rprof_mm_put(mm) };
}

/// The raw key tells apart what resolves differently from the same words:
/// the sample's mode, its end flags and its count of kernel frames (a
/// kernel sample took for a user sample's chain would lose the entry
/// frame's byte), and whether a table walked it (its STACK says so).  The
/// chain-taken bit is not part of it.
fn raw_key_flags_tell_modes_apart(t: &mut Test) {
    let mut keys = KVec::new();
    for table in [false, true] {
        for user in [false, true] {
            for chain in [0u8, RPROF_STACK_USER_FAULT as u8, RPROF_STACK_USER_TRUNCATED as u8, sampler::CHAIN_FLAGS] {
                for nk in [0usize, 1, RPROF_MAX_FRAMES as usize] {
                    let k = stacks::raw_key_flags(chain | sampler::CHAIN_TAKEN, user, nk, table);
                    kassert_eq!(t, k, stacks::raw_key_flags(chain, user, nk, table));
                    kassert!(t, !keys.contains(&k), "user {} chain {:#x} nk {}: key {:#x} taken", user, chain, nk, k);
                    let _ = keys.push(k, GFP_KERNEL);
                }
            }
        }
    }
    kassert_eq!(t, keys.len(), 48);
}

/// Counts that disagree with the words given cannot make a record whose
/// continuation slots the reader would miscount: `push_frames` derives
/// them from the words (a kernel count above them is cut to them).
fn chain_counts_follow_the_words(t: &mut Test) {
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let make = chain_record;
    // Nine words (one continuation slot), but 20 kernel frames claimed.
    kassert!(t, matches!(push_chain_words(&ring, &[5; 9], 20, 0, make(1)), Push::Stored(_)));
    // More words than any chain has: cut to RPROF_MAX_FRAMES a side (the
    // frame nibbles of a record's tail cover no more user frames).
    let many = [6u64; 300];
    kassert!(t, matches!(push_chain_words(&ring, &many, 1, 0, make(2)), Push::Stored(_)));
    kassert!(t, matches!(ring.push(RingRecord::new(RawSample { time_ns: 3, ..Default::default() }, 0).into()), Push::Stored(_)));
    let mut frames = [0u64; 256];
    let mut seen = KVec::new();
    // SAFETY: The only reader of this ring.
    while let Some(rec) = unsafe { crate::resolve::reader::pop(&ring, &mut frames) } {
        let _ = seen.push((rec.sample.time_ns, rec.nk, rec.nu), GFP_KERNEL);
    }
    let max = RPROF_MAX_FRAMES as u8;
    kassert_eq!(t, &seen[..], &[(1u64, 9u8, 0u8), (2, 1, max), (3, 0, 0)][..]);
    kassert_eq!(t, ring.stored(), 3);
}

/// A running session with call chains, without counters.
fn test_chain_session(ring_records: u32, buffer_pages: u32) -> Result<Arc<Session>> {
    let mut raw = test_raw_config(ring_records, buffer_pages);
    raw.flags = RPROF_CONFIG_CALLCHAIN;
    raw.max_kernel_frames = 8;
    raw.max_user_frames = 8;
    let config = Config::check(raw, &test_params()?)?;
    let waitq = Arc::new(crate::kapi::waitq::WaitQueue::new()?, GFP_KERNEL)?;
    let s = Session::new(config, 64, waitq)?;
    s.test_start();
    Ok(s)
}

/// A running session with call chains (`buffer_pages`) and its handler
/// context on CPU 0; `None` (the test failed) if either cannot be had.
fn chain_session_on_cpu0(t: &mut Test, buffer_pages: u32) -> Option<(Arc<Session>, HandlerCtx)> {
    let Ok(session) = test_chain_session(4096, buffer_pages) else {
        t.fail(crate::kapi::kunit::file_cstr!(), core::line!(), format_args!("session allocation failed"));
        return None;
    };
    let Ok(ctx) = session.handler_ctx(0) else {
        t.fail(crate::kapi::kunit::file_cstr!(), core::line!(), format_args!("no handler context"));
        return None;
    };
    Some((session, ctx))
}

/// The unresolved-frame count covers the chains of delivered samples
/// only: with a one-page buffer and no reader most samples are lost, a
/// chain already written costs nothing to find again, and those lost
/// samples' frames must not count.
fn unresolved_counts_only_delivered_chains(t: &mut Test) {
    let Some((session, ctx)) = chain_session_on_cpu0(t, 1) else { return };
    // SAFETY: The session's ring for CPU 0, alive as long as the session.
    let ring = unsafe { &*ctx.ring };
    // A kernel sample on behalf of a user task: a kernel frame (this
    // module's code), then three user frames no address space resolves.
    let kip = helpers::rprof_test_cpu_relax as unsafe extern "C" fn() as usize as u64;
    let words = [kip, 0x1000, 0x2000, 0x3000];
    for i in 0..400u64 {
        let _ = push_chain_words(ring, &words, 1, 0, chain_record_at(i, kip));
        if i % 16 == 15 {
            session.drain_now();
        }
    }
    session.finish();
    session.drain_now();
    let (total, _, _, _) = session.stats(&mut []);
    let (c, _) = session.chain_stats();
    pr_info!("unresolved: {} delivered, {} lost, {} chains, {} unresolved\n", total.delivered, total.lost_buffer, c.chains, c.unresolved);
    kassert!(t, total.lost_buffer > 0, "nothing was lost");
    kassert!(t, total.delivered > 0, "nothing was delivered");
    kassert_eq!(t, c.chains, total.delivered);
    kassert_eq!(t, c.unresolved, 3 * c.chains);
}

/// RESET_COOKIES with call chains: the chain written before it is
/// written again after it, under a new id (RESET's `next_stack`: none is
/// reused), with its frame's module named again, and samples after it
/// name the new id only (the stack and raw-chain tables were emptied);
/// the leaf's cookie did not change (the kernel) yet a SWITCH to it comes
/// again before the first sample after RESET.
fn reset_forgets_stacks(t: &mut Test) {
    let Some((session, ctx)) = chain_session_on_cpu0(t, 16) else { return };
    // SAFETY: The session's ring for CPU 0, alive as long as the session.
    let ring = unsafe { &*ctx.ring };
    // A kernel sample (in no module: the kernel cookie) called from this
    // module's code.
    let kip = helpers::rprof_test_cpu_relax as unsafe extern "C" fn() as usize as u64;
    let push = |times: core::ops::Range<u64>| {
        for i in times {
            let _ = push_chain_words(ring, &[kip], 1, 0, chain_record_at(i, 0xffff_ffff_8100_0000));
        }
    };
    push(0..5);
    session.drain_now();
    kassert!(t, session.reset_cookies().is_ok(), "RESET_COOKIES failed");
    push(5..10);
    session.finish();
    let stream = stream_of(&session);
    let Some(at) = stream.iter().position(|&(ty, _)| ty == RPROF_RECORD_RESET) else {
        kassert!(t, false, "no RESET record");
        return;
    };
    let (before, after) = (&stream[..at], &stream[at + 1..]);
    let ids = |part: &[(u32, u64)], ty: u32| {
        let mut v = KVec::new();
        for r in part.iter().filter(|r| r.0 == ty) {
            let _ = v.push(r.1, GFP_KERNEL);
        }
        v
    };
    kassert_eq!(t, &ids(before, RPROF_RECORD_STACK)[..], &[1u64][..]);
    kassert_eq!(t, &ids(before, RPROF_RECORD_SAMPLE)[..], &[1u64; 5][..]);
    kassert_eq!(t, &ids(after, RPROF_RECORD_STACK)[..], &[2u64][..]);
    kassert_eq!(t, &ids(after, RPROF_RECORD_SAMPLE)[..], &[2u64; 5][..]);
    kassert_eq!(t, (ids(before, RPROF_RECORD_MODULE).len(), ids(after, RPROF_RECORD_MODULE).len()), (1, 1));
    let first = after.iter().position(|r| r.0 == RPROF_RECORD_SAMPLE).unwrap_or(0);
    kassert!(t, after[..first].contains(&(RPROF_RECORD_SWITCH, RPROF_COOKIE_KERNEL as u64)), "no SWITCH to the kernel after RESET");
}

kunit_suite!(
    CHAIN_SUITE,
    "rprof-chains",
    [
        unresolved_counts_only_delivered_chains,
        chain_walker_fabricated_stacks,
        ring_multi_slot_records,
        chain_cut_keeps_the_sample,
        reader_frees_a_chain_before_processing,
        chain_user_walk_real_stack,
        chain_user_walk_compat,
        chain_sequence_is_read_before_the_walk,
        raw_chains_match_only_same_space_and_words,
        drain_drops_references_per_pass,
        raw_key_flags_tell_modes_apart,
        chain_counts_follow_the_words,
        reset_forgets_stacks
    ]
);

/// The handler pins no address space: a user sample takes an `mm_count`
/// reference, not `mm_users` (which delayed every sampled exit until the
/// drain: issue 29, item 3), and names its mapping, file and all, so that
/// the drain resolves it after the mapping is gone; every reference comes
/// back with the records and the drain.
fn handler_pins_no_address_space(t: &mut Test) {
    const PAGE: u64 = 4096;
    let raw = t.raw();
    // SAFETY: `raw` is the running case; the first mapping gives this
    // kthread an address space of its own (KUnit's kthread_use_mm).
    let anon = unsafe { helpers::rprof_test_user_map(raw, 4 * PAGE, 0) };
    // SAFETY: As above; a NUL-terminated path.
    let file = unsafe { helpers::rprof_test_user_map_file(raw, c"/init".as_ptr().cast(), PAGE) };
    kassert!(t, anon != 0 && file != 0, "mappings failed: anon {:#x}, /init {:#x}", anon, file);
    let Ok(ring) = crate::device::rings::new_ring(64) else {
        kassert!(t, false, "ring allocation failed");
        return;
    };
    let maps = MapSlots::new();
    let ctx = HandlerCtx::plain(&ring, &maps);
    // Current's mm, which the test holds (kthread_use_mm).
    let mm = current_mm_seq().0;
    // SAFETY: `mm` is current's, alive for the test.
    let (users, count) = unsafe { (helpers::rprof_test_mm_users(mm), helpers::rprof_test_mm_count(mm)) };
    for (i, ip) in [anon + 8, anon + 3 * PAGE, file + 16, file + 32].into_iter().enumerate() {
        let sample = RawSample { time_ns: i as u64, ip, pid: 1, tid: 1, flags: helpers::RAW_USER, ..Default::default() };
        // SAFETY: `ctx` and what it points to live across the call; the
        // ring never fills, so the null kicker is never kicked.
        unsafe { sampler::rprof_on_sample(&ctx as *const HandlerCtx as *mut c_void, &sample, core::ptr::null_mut()) };
    }
    // SAFETY: As above.
    let (users_now, count_now) = unsafe { (helpers::rprof_test_mm_users(mm), helpers::rprof_test_mm_count(mm)) };
    kassert_eq!(t, users_now, users);
    // One per record, and one per mapping named (the anonymous one and
    // /init's: the second sample of each names the slot of the first).
    kassert_eq!(t, count_now, count + 4 + 2);
    // Records, not slots (two carry an entry in a continuation slot).
    kassert_eq!(t, ring.stored(), 4);
    // Both mappings go before the drain reads the samples.
    // SAFETY: The test's own mappings.
    kassert_eq!(t, unsafe { helpers::rprof_test_user_unmap(anon, 4 * PAGE) }, 0);
    // SAFETY: As above.
    kassert_eq!(t, unsafe { helpers::rprof_test_user_unmap(file, PAGE) }, 0);
    let made = test_evbuf(4).and_then(|b| Ok((Drain::new(b.producer(), 1, 16, false)?, b)));
    let Ok((mut d, buf)) = made else {
        kassert!(t, false, "allocation failed");
        // SAFETY: The ring's only consumer.
        unsafe { crate::resolve::replay::give_back(&ring) };
        return;
    };
    // SAFETY: The ring's only consumer.
    while unsafe { d.take(&buf, 0, &ring, 0) } {}
    d.put_mms();
    let (delivered, lost, _) = d.cpu_counts(0);
    kassert_eq!(t, delivered, 4);
    kassert_eq!(t, lost, [0; 5]);
    // /init got a cookie: the samples in it were named by its file.
    kassert_eq!(t, d.cookies.len(), 1);
    drop(d);
    // SAFETY: As above.
    kassert_eq!(t, unsafe { helpers::rprof_test_mm_count(mm) }, count);
}

const MAP_PAGE: u64 = 4096;

/// `n` one-page mappings of the running case's, a page apart (every other
/// page of one mapping unmapped, so that none merges with the next): the
/// first's address (mapping `k` at `2 * k` pages from it), or `None` if a
/// mapping or unmapping failed.
fn mappings_a_page_apart(t: &mut Test, n: u64) -> Option<u64> {
    // SAFETY: `t.raw()` is the running case; the first mapping gives this
    // kthread an address space of its own (KUnit's kthread_use_mm).
    let base = unsafe { helpers::rprof_test_user_map(t.raw(), 2 * n * MAP_PAGE, 0) };
    // SAFETY: The test's own mapping.
    let split = |k: u64| unsafe { helpers::rprof_test_user_unmap(base + (2 * k + 1) * MAP_PAGE, MAP_PAGE) } == 0;
    (base != 0 && (0..n).all(split)).then_some(base)
}

/// A record names each mapping once: the sampled ip and the frames in one
/// mapping share a slot, at most `NEW_MAX` new mappings a record, later
/// records name the slots without new entries, and a new mapping never
/// takes a slot the same record names.
fn slots_name_each_mapping_once(t: &mut Test) {
    let Some(base) = mappings_a_page_apart(t, 6) else {
        kassert!(t, false, "6 mappings a page apart: kunit_vm_mmap or munmap failed");
        return;
    };
    let at = |k: u64| base + 2 * k * MAP_PAGE + 64;
    let maps = MapSlots::new();
    let (mm, seq) = current_mm_seq();
    let mut out = [0u64; crate::sampling::maps::TAIL_WORDS];
    // SAFETY: This test's own slots, only its thread makes plans on them,
    // each nested plan dropped before the outer one is used again.
    let mut plan = unsafe { Plan::new(Some(&maps), mm, seq) };
    plan.leaf(at(0));
    for k in 0..6 {
        plan.frame(k as usize, at(k));
    }
    plan.frame(6, at(0) + 8);
    let map = plan.map_byte();
    kassert_eq!(t, map & crate::sampling::maps::MAP_LEAF, 1);
    kassert_eq!(t, crate::sampling::maps::map_entries(map), crate::sampling::maps::NEW_MAX);
    plan.take_refs(&mut out, 7);
    plan.commit();
    drop(plan);
    // The references the entries took (anonymous memory: none on a file,
    // one on the address space each), given back before any check can
    // return.
    crate::resolve::replay::put_entries(&out[..crate::sampling::maps::NEW_MAX * crate::sampling::maps::ENTRY_WORDS], mm);
    let tail = crate::sampling::maps::tail_words(map, 7);
    let nibbles = &out[crate::sampling::maps::NEW_MAX * crate::sampling::maps::ENTRY_WORDS..tail];
    let slots: [u8; 7] = core::array::from_fn(|i| crate::sampling::maps::nibble(nibbles, i));
    // Frames 0-3 in new slots 1-4 (frame 0 shares the ip's), 4 and 5 in
    // none (four new mappings a record), 6 in frame 0's.
    kassert_eq!(t, &slots[..], &[1u8, 2, 3, 4, 0, 0, 1][..]);
    // The next record names the four without entries; the fifth mapping
    // gets a slot this record does not name.
    let mut out2 = [0u64; crate::sampling::maps::TAIL_WORDS];
    // SAFETY: This test's own slots, only its thread makes plans on them,
    // each nested plan dropped before the outer one is used again.
    let mut plan = unsafe { Plan::new(Some(&maps), mm, seq) };
    for k in 0..5 {
        plan.frame(k as usize, at(k));
    }
    let map2 = plan.map_byte();
    kassert_eq!(t, crate::sampling::maps::map_entries(map2), 1);
    plan.take_refs(&mut out2, 5);
    drop(plan);
    crate::resolve::replay::put_entries(&out2[..crate::sampling::maps::ENTRY_WORDS], mm);
    let slot5 = (out2[1] & crate::sampling::maps::ENTRY_SLOT) as u8 + 1;
    kassert!(t, slot5 > 4, "the fifth mapping took slot {} of this record's", slot5);
    // Its nibbles are its own: nothing of the first record's (frame 6's
    // slot) is left past its five frames.
    let nibbles2 = &out2[crate::sampling::maps::ENTRY_WORDS..crate::sampling::maps::tail_words(map2, 5)];
    let slots2: [u8; 8] = core::array::from_fn(|i| crate::sampling::maps::nibble(nibbles2, i));
    kassert_eq!(t, &slots2[..], &[1u8, 2, 3, 4, slot5, 0, 0, 0][..]);
}

/// A handler that interrupts another while it names mappings (an NMI
/// over the hrtimer's handler, on one CPU) finds the slots taken: it
/// names nothing and holds the address space instead, and leaves the
/// slots to the one it interrupted, which gives them back when done.
fn a_nested_handler_leaves_the_slots_alone(t: &mut Test) {
    use crate::sampling::maps::MAP_LEAF;
    let Some(base) = mappings_a_page_apart(t, 2) else {
        kassert!(t, false, "2 mappings a page apart: kunit_vm_mmap or munmap failed");
        return;
    };
    let maps = MapSlots::new();
    let (mm, seq) = current_mm_seq();
    // SAFETY: This test's own slots, only its thread makes plans on them,
    // each nested plan dropped before the outer one is used again.
    let mut outer = unsafe { Plan::new(Some(&maps), mm, seq) };
    outer.leaf(base + 64);
    for _ in 0..2 {
        // Twice: the first nested plan's end must not free the slots.
        // SAFETY: This test's own slots, only its thread makes plans on them,
        // each nested plan dropped before the outer one is used again.
        let mut nested = unsafe { Plan::new(Some(&maps), mm, seq) };
        nested.leaf(base + 2 * MAP_PAGE + 64);
        kassert_eq!(t, nested.map_byte(), 0);
        kassert!(t, nested.pin(), "a nested handler's sample does not hold its address space");
    }
    outer.frame(0, base + 2 * MAP_PAGE + 64);
    kassert_eq!(t, outer.map_byte() & MAP_LEAF, 1);
    kassert!(t, !outer.pin(), "the outer handler could not name its mappings");
    let mut out = [0u64; crate::sampling::maps::TAIL_WORDS];
    let map = outer.map_byte();
    outer.take_refs(&mut out, 1);
    outer.commit();
    drop(outer);
    // The references the entries took (anonymous memory: one on the
    // address space each), given back before any check can return.
    let ne = crate::sampling::maps::map_entries(map);
    crate::resolve::replay::put_entries(&out[..ne * crate::sampling::maps::ENTRY_WORDS], mm);
    // Given back: the next plan names the ip through the slot, no entry.
    // SAFETY: This test's own slots, only its thread makes plans on them,
    // each nested plan dropped before the outer one is used again.
    let mut next = unsafe { Plan::new(Some(&maps), mm, seq) };
    next.leaf(base + 64 + 8);
    kassert_eq!(t, next.map_byte(), 1);
    kassert!(t, next.is_plain(), "a named mapping was carried again");
}

/// A mapping at a file offset near the top of the range (a user may map
/// `/dev/zero` at page offset 2^52 - 2 and grow it with `mremap`) gives
/// its addresses offsets that wrap, not an overflow that would panic the
/// drain (review s19b, finding 1).
fn replay_offsets_wrap(t: &mut Test) {
    use crate::sampling::maps::{ENTRY_VALID, ENTRY_WORDS};
    if mappings_a_page_apart(t, 1).is_none() {
        kassert!(t, false, "a mapping: kunit_vm_mmap failed");
        return;
    }
    let (mm, _) = current_mm_seq();
    let Ok(mut replay) = crate::resolve::replay::Replay::new(1) else {
        kassert!(t, false, "allocation failed");
        return;
    };
    let (start, end, pgoff) = (0x10_0000u64, 0x30_0000u64, u64::MAX - 0xfff);
    // The entry's reference on the address space, which the slot keeps
    // (and the replay gives back when it goes).
    // SAFETY: `mm` is this thread's (kthread_use_mm), alive.
    unsafe { helpers::rprof_mm_grab(mm) };
    let entry: [u64; ENTRY_WORDS] = [0, start | ENTRY_VALID, end, pgoff];
    replay.apply(0, &entry, mm);
    let found = replay.find(0, 1, mm, start + 0x2000);
    kassert!(t, found.is_some(), "the slot names its mapping");
    if let Some(f) = found {
        kassert_eq!(t, f.offset, pgoff.wrapping_add(0x2000));
    }
}

/// The munmap race check: a VMA write-locked at or after the sample's
/// sequence is not believed, across the sequence's wrap too.
fn munmap_race_check_compares_sequences(t: &mut Test) {
    use crate::resolve::mm::changed_since;
    // (vm_lock_seq, the sample's sequence, changed since).
    let cases = [(9u32, 10u32, false), (10, 10, true), (11, 10, true), (2, 0xffff_fffe, true), (0xffff_fffe, 2, false)];
    for (lock_seq, seq, changed) in cases {
        kassert!(t, changed_since(lock_seq, seq) == changed, "vm_lock_seq {:#x}, sample {:#x}", lock_seq, seq);
    }
}

/// A slot a record gives a new mapping is never named in the same record
/// for the mapping it held before: the drain applies the record's entries
/// first, so that name would reach the new mapping (review finding).
fn a_replaced_slot_keeps_no_old_name(t: &mut Test) {
    use crate::sampling::maps::{self as m, ENTRY_SLOT, ENTRY_WORDS, NEW_MAX, TAIL_WORDS};
    let Some(base) = mappings_a_page_apart(t, 9) else {
        kassert!(t, false, "9 mappings a page apart: kunit_vm_mmap or munmap failed");
        return;
    };
    let at = |k: u64| base + 2 * k * MAP_PAGE + 64;
    let maps = MapSlots::new();
    let (mm, seq) = current_mm_seq();
    let mut taken = [[0u64; TAIL_WORDS]; 3];
    // Two records fill the eight slots with mappings 0-7.
    for (r, out) in taken.iter_mut().take(2).enumerate() {
        // SAFETY: This test's own slots, only its thread makes plans on them,
        // each nested plan dropped before the outer one is used again.
        let mut plan = unsafe { Plan::new(Some(&maps), mm, seq) };
        for k in 0..4 {
            plan.frame(k, at((4 * r + k) as u64));
        }
        plan.take_refs(out, 4);
        plan.commit();
    }
    // The third: mapping 8 takes the next slot round (mapping 0's); then
    // a frame in mapping 0 must not name that slot.
    // SAFETY: This test's own slots, only its thread makes plans on them,
    // each nested plan dropped before the outer one is used again.
    let mut plan = unsafe { Plan::new(Some(&maps), mm, seq) };
    plan.frame(0, at(8));
    plan.frame(1, at(0));
    let map = plan.map_byte();
    plan.take_refs(&mut taken[2], 2);
    drop(plan);
    let ne = m::map_entries(map);
    let entries = &taken[2][..ne * ENTRY_WORDS];
    let nibbles = &taken[2][ne * ENTRY_WORDS..m::tail_words(map, 2)];
    let first = (entries[1] & ENTRY_SLOT) as u8 + 1;
    let second = m::nibble(nibbles, 1);
    kassert_eq!(t, m::nibble(nibbles, 0), first);
    kassert!(t, second != first, "mapping 0 named by the slot mapping 8 took ({})", first);
    // Named anew if at all: by an entry of this record for mapping 0.
    kassert!(
        t,
        second == 0 || entries.chunks_exact(ENTRY_WORDS).any(|e| (e[1] & ENTRY_SLOT) as u8 + 1 == second && e[1] & !0xfff <= at(0) && at(0) < e[2]),
        "mapping 0 named by slot {} without an entry",
        second
    );
    for (r, out) in taken.iter().enumerate() {
        let n = if r < 2 { NEW_MAX } else { ne };
        crate::resolve::replay::put_entries(&out[..n * ENTRY_WORDS], mm);
    }
}

kunit_suite!(
    MAPS_SUITE,
    "rprof-maps",
    [
        handler_pins_no_address_space,
        slots_name_each_mapping_once,
        a_nested_handler_leaves_the_slots_alone,
        a_replaced_slot_keeps_no_old_name,
        replay_offsets_wrap,
        munmap_race_check_compares_sequences
    ]
);

#[cfg(rprof_inject_kunit_fail)]
fn injected_failure(t: &mut Test) {
    kassert_eq!(t, 1 + 1, 3);
}

#[cfg(rprof_inject_kunit_fail)]
kunit_suite!(INJECT_SUITE, "rprof-injected", [injected_failure]);

/// An event buffer of `data_pages` for a test, charged to the test's
/// thread as a session's would be.
fn test_evbuf(data_pages: usize) -> Result<EventBuffer> {
    let bytes = EventBuffer::bytes(data_pages).ok_or(EINVAL)? as u64;
    EventBuffer::new(data_pages, crate::buffer::charge::Charge::new(bytes)?)
}

/// Current's address space (no reference) and its write-lock sequence now.
fn current_mm_seq() -> (*mut helpers::MmStruct, u32) {
    let mut seq = 0;
    // SAFETY: Reads current's mm and its sequence; any context.
    let mm = unsafe { helpers::rprof_current_mm(&mut seq) };
    (mm, seq)
}

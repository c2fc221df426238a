// SPDX-License-Identifier: GPL-2.0

//! A profiling session: per-CPU rings, the drain, the event buffer.
//!
//! ```text
//!  overflow handler (NMI/IRQ) --push--> ring[cpu] --pop (drain)--> event buffer --> reader
//!                     \--kick past the watermark--> irq_work --> work: drain()
//!  periodic: the drain re-arms itself every drain_ms while running
//! ```
//!
//! Locks, and why none touches the sampling path: the handler only pushes
//! to its CPU's lock-free ring and queues an irq_work.  `producer` (a mutex)
//! serialises the drain, FLUSH and STOP's final drain, and makes the drain
//! the rings' only consumer and the event buffer's only producer.
//! `consumer` serialises `read()` calls.  The device's session slot lock
//! (`device.rs`) is taken before `producer` when both are held.
//!
//! Loss accounting is exact.  For each CPU at any quiescent point:
//! `samples == delivered + lost_ring + lost_buffer + (records still in the
//! ring)`, and after STOP's final drain the rings are empty.  Drops are
//! reported in-band as LOST records, written as soon as the buffer has room
//! for them; a reserve kept free by samples makes room for those and for
//! STOP in the common case, and what still does not fit stays pending
//! until the reader frees space (the next drain, FLUSH or `read()`).

use crate::config::Config;
use crate::counter::Counter;
use crate::evbuf::{EventBuffer, Producer, Record};
use crate::helpers::{self, CounterAttr, RAW_THROTTLED, RAW_USER};
use crate::kicker::Kicker;
use crate::sampler::{self, HandlerCtx, RingRecord, SampleRing};
use crate::uapi::*;
use crate::waitq::WaitQueue;
use core::ffi::c_void;
use core::mem::size_of;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

// SAFETY: All are `#[repr(C)]` uapi records of fixed-width fields laid out
// without padding (the header's rule; sizes are asserted in helpers.c and
// by the userspace ABI tests), starting with `rprof_record_header`.
unsafe impl Record for rprof_sample {}
// SAFETY: As above.
unsafe impl Record for rprof_lost {}
// SAFETY: As above.
unsafe impl Record for rprof_session {}
// SAFETY: As above.
unsafe impl Record for rprof_throttle {}

/// Where a session is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Phase {
    Configured = 0,
    Running = 1,
    Stopped = 2,
}

/// The drain's bookkeeping of one CPU.
#[derive(Default, Clone, Copy)]
struct CpuDrain {
    /// `ring.lost()` already reported in LOST records.
    ring_lost_reported: u64,
    /// Samples dropped for lack of buffer space, not yet reported.
    buffer_lost_pending: u64,
    lost_buffer: u64,
    delivered: u64,
    throttled: u64,
    /// Events (bit = index) whose last sample on this CPU was throttled.
    throttled_events: u8,
}

/// State owned by whoever holds the producer lock.
struct Drain {
    producer: Producer,
    cpus: KVec<CpuDrain>,
    /// START (with the time sampling began) still to be written.
    start_pending: Option<u64>,
    /// STOP (with the time sampling ended) still to be written.
    stop_pending: Option<u64>,
    drains: u64,
    wakeups: u64,
}

/// One session.  Lives in an [`Arc`]; its address is the drain work's
/// context.
///
/// Drop order matters and is the field order: the kicker goes first, since
/// its work uses every other field; its `Drop` waits for a running work.
/// Counters are not here: the device releases them before it drops the
/// session (so no overflow handler can touch `rings` any more).
#[pin_data]
pub(crate) struct Session {
    kicker: Kicker,
    pub(crate) config: Config,
    rings: KVec<SampleRing>,
    evbuf: EventBuffer,
    #[pin]
    drain: Mutex<Drain>,
    #[pin]
    consumer: Mutex<()>,
    waitq: WaitQueue,
    phase: AtomicU8,
    /// A LOST, STOP or START record waits for space.
    pending: AtomicBool,
    /// Bytes samples leave free for LOST and STOP records.
    reserve: u64,
}

fn now() -> u64 {
    // SAFETY: `local_clock()` may be called from any context.
    unsafe { helpers::rprof_local_clock() }
}

fn nr_cpu_ids() -> usize {
    // SAFETY: Reads a boot-time constant.
    unsafe { helpers::rprof_nr_cpu_ids() as usize }
}

/// The drain work: runs in process context on the system workqueue.
unsafe extern "C" fn drain_work(ctx: *mut c_void) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: `ctx` is the session bound in `Session::new`; the session's
    // `Drop` destroys the kicker (waiting for this work) before anything
    // else, so the session is alive here.
    let s = unsafe { &*(ctx as *const Session) };
    s.drain_now();
    if s.phase() == Phase::Running {
        s.kicker.schedule(s.config.drain_ms);
    }
}

impl Session {
    /// Allocates a session: one ring per possible CPU id, the event buffer of
    /// `buffer_pages` data pages, the drain work.  Nothing runs yet.
    pub(crate) fn new(config: Config, buffer_pages: u32) -> Result<Arc<Self>> {
        let nr = nr_cpu_ids();
        let mut rings = KVec::with_capacity(nr, GFP_KERNEL)?;
        let mut cpus = KVec::with_capacity(nr, GFP_KERNEL)?;
        for _ in 0..nr {
            rings.push(sampler::new_ring(config.ring_records)?, GFP_KERNEL)?;
            cpus.push(CpuDrain::default(), GFP_KERNEL)?;
        }
        let evbuf = EventBuffer::new(buffer_pages as usize)?;
        let producer = evbuf.producer();
        let reserve = (2 * nr * size_of::<rprof_lost>() + size_of::<rprof_session>()) as u64;
        let kicker = Kicker::new(drain_work)?;
        let waitq = WaitQueue::new()?;
        let drain = Drain { producer, cpus, start_pending: None, stop_pending: None, drains: 0, wakeups: 0 };
        let session = Arc::pin_init(
            pin_init!(Self {
                kicker,
                config,
                rings,
                evbuf,
                drain <- new_mutex!(drain),
                consumer <- new_mutex!(()),
                waitq,
                phase: AtomicU8::new(Phase::Configured as u8),
                pending: AtomicBool::new(false),
                reserve,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: Nothing kicked yet; the session outlives its kicker (drop
        // order, see the type's doc).
        unsafe { session.kicker.bind(&*session as *const Self as *mut c_void) };
        Ok(session)
    }

    pub(crate) fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Configured,
            1 => Phase::Running,
            _ => Phase::Stopped,
        }
    }

    fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Release);
    }

    /// Creates this session's counters on `cpu`, one per configured event,
    /// disabled.  On error the ones made are released (they never ran) and
    /// dmesg names the event.
    pub(crate) fn open_cpu(&self, cpu: usize) -> Result<KVec<Counter>> {
        let events = self.config.events();
        let ring = self.rings.get(cpu).ok_or(EINVAL)?;
        let mut counters = KVec::with_capacity(events.len(), GFP_KERNEL)?;
        let flags = self.config.raw.flags;
        let pid = if flags & RPROF_CONFIG_PID_FILTER != 0 { self.config.raw.pid } else { -1 };
        for (i, ev) in events.iter().enumerate() {
            let attr = CounterAttr {
                kind: ev.kind,
                freq: (ev.flags & RPROF_EVENT_FREQ != 0) as u32,
                period: ev.period,
                exclude_user: (flags & RPROF_CONFIG_EXCLUDE_USER != 0) as u32,
                exclude_kernel: (flags & RPROF_CONFIG_EXCLUDE_KERNEL != 0) as u32,
            };
            // INVARIANT (HandlerCtx): the ring and kicker live in this
            // session, which the device drops only after the counters.
            let ctx = HandlerCtx {
                ring: ring as *const SampleRing,
                kicker: self.kicker.as_ptr(),
                event: i as u16,
                pid,
                kick_at: ring.capacity() / 2,
            };
            match Counter::new(cpu as u32, &attr, ctx) {
                Ok(c) => counters.push(c, GFP_KERNEL)?,
                Err(e) => {
                    pr_err!("cannot open event {} ({}) on CPU {}: error {}\n", i, event_name(ev.kind), cpu, e.to_errno());
                    return Err(e);
                }
            }
        }
        Ok(counters)
    }

    /// Opens counters on every online CPU (indexed by CPU id), then
    /// enables them all and starts the periodic drain.  On error nothing is
    /// left running.  The caller holds the CPU hotplug lock for reading.
    pub(crate) fn start(&self) -> Result<KVec<KVec<Counter>>> {
        let mut all = KVec::with_capacity(self.rings.len(), GFP_KERNEL)?;
        for cpu in 0..self.rings.len() {
            // SAFETY: Reads the online mask (stable: hotplug lock held).
            let online = unsafe { helpers::rprof_cpu_online(cpu as u32) };
            all.push(if online { self.open_cpu(cpu)? } else { KVec::new() }, GFP_KERNEL)?;
        }
        {
            let mut d = self.drain.lock();
            d.start_pending = Some(now());
            self.pending.store(true, Ordering::Relaxed);
        }
        self.set_phase(Phase::Running);
        for c in all.iter().flat_map(|v| v.iter()) {
            c.enable();
        }
        self.kicker.schedule(self.config.drain_ms);
        Ok(all)
    }

    /// Ends sampling: the caller has released the counters (no handler runs
    /// any more); drains everything and writes STOP.
    pub(crate) fn finish(&self) {
        self.set_phase(Phase::Stopped);
        {
            let mut d = self.drain.lock();
            d.stop_pending = Some(now());
            self.pending.store(true, Ordering::Relaxed);
        }
        self.drain_now();
    }

    fn session_record(&self, type_: u32, time_ns: u64) -> rprof_session {
        rprof_session {
            header: rprof_session::header(type_, 0),
            time_ns,
            config: self.config.raw,
        }
    }

    /// Moves every complete record from the rings into the event buffer,
    /// with LOST records for what was dropped, and wakes readers past the
    /// watermark.  Process context.
    pub(crate) fn drain_now(&self) {
        let mut guard = self.drain.lock();
        let d = &mut *guard;
        let buf = &self.evbuf;
        let reserve = self.reserve;
        d.drains += 1;

        if let Some(t) = d.start_pending {
            if buf.write(&mut d.producer, &self.session_record(RPROF_RECORD_START, t), 0) {
                d.start_pending = None;
            }
        }
        for (cpu, ring) in self.rings.iter().enumerate() {
            let st = &mut d.cpus[cpu];
            let lost = ring.lost();
            if lost > st.ring_lost_reported
                && buf.write(&mut d.producer, &lost_record(RPROF_LOST_RING, cpu, lost - st.ring_lost_reported), 0)
            {
                st.ring_lost_reported = lost;
            }
            if st.buffer_lost_pending > 0
                && buf.write(&mut d.producer, &lost_record(RPROF_LOST_BUFFER, cpu, st.buffer_lost_pending), 0)
            {
                st.buffer_lost_pending = 0;
            }
            // SAFETY: We hold the drain lock, which makes us the only
            // consumer of every ring.
            while let Some(rec) = unsafe { ring.pop() } {
                let ok = d.start_pending.is_none() && buf.write(&mut d.producer, &sample_record(&rec), reserve);
                if ok {
                    st.delivered += 1;
                } else {
                    st.lost_buffer += 1;
                    st.buffer_lost_pending += 1;
                }
                // perf throttled the counter with this sample; it
                // unthrottles silently on a later tick, which the next
                // sample of that event shows.  Both are informational and
                // not written when space is short.
                let bit = 1u8 << (rec.event & 7);
                let mut changes = [None, None];
                if st.throttled_events & bit != 0 {
                    // A sample after a throttle: perf resumed the counter.
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
                    buf.write(&mut d.producer, &t, reserve);
                }
            }
        }
        // STOP goes last, once nothing else is owed before it.
        let owed = d.start_pending.is_some()
            || d.cpus.iter().enumerate().any(|(cpu, st)| {
                st.buffer_lost_pending > 0 || self.rings[cpu].lost() > st.ring_lost_reported
            });
        if let Some(t) = d.stop_pending {
            if !owed && buf.write(&mut d.producer, &self.session_record(RPROF_RECORD_STOP, t), 0) {
                d.stop_pending = None;
            }
        }
        self.pending.store(owed || d.stop_pending.is_some(), Ordering::Relaxed);
        buf.publish(&d.producer);

        let avail = buf.available();
        if avail >= self.config.wakeup_bytes || (self.phase() == Phase::Stopped && d.stop_pending.is_none()) {
            d.wakeups += 1;
            self.waitq.wake();
        }
    }

    /// Whether the session stopped and everything, STOP included, is in the
    /// buffer.
    fn finished(&self) -> bool {
        self.phase() == Phase::Stopped && !self.pending.load(Ordering::Relaxed)
    }

    /// Asks the drain to write what is pending, now that space may be free.
    fn kick_if_pending(&self) {
        if self.pending.load(Ordering::Relaxed) {
            self.kicker.kick();
        }
    }

    /// `read()`: whole records; blocks for data unless `nonblock`; `Ok(0)`
    /// at the end of a stopped session.
    pub(crate) fn read(&self, out: &mut kernel::uaccess::UserSliceWriter, nonblock: bool) -> Result<usize> {
        loop {
            let n = {
                let _c = self.consumer.lock();
                self.evbuf.read_to_user(out)?
            };
            self.kick_if_pending();
            if n > 0 {
                return Ok(n);
            }
            if self.finished() {
                return Ok(0);
            }
            if nonblock {
                return Err(EAGAIN);
            }
            self.waitq.wait_until(|| self.evbuf.available() > 0 || self.finished())?;
        }
    }

    /// `poll()`'s readiness: data past the watermark, or the end.
    pub(crate) fn readable(&self) -> bool {
        self.kick_if_pending();
        self.evbuf.available() >= self.config.wakeup_bytes || self.phase() == Phase::Stopped
    }

    pub(crate) fn waitq(&self) -> &WaitQueue {
        &self.waitq
    }

    pub(crate) fn evbuf(&self) -> &EventBuffer {
        &self.evbuf
    }

    /// Fills `cpus` (as many as fit) and returns the totals, drains and
    /// wakeups.
    pub(crate) fn stats(&self, cpus: &mut [rprof_cpu_stats]) -> (rprof_cpu_stats, u64, u64) {
        let d = self.drain.lock();
        let mut total = rprof_cpu_stats::default();
        for (cpu, ring) in self.rings.iter().enumerate() {
            let st = &d.cpus[cpu];
            let s = rprof_cpu_stats {
                samples: ring.stored() + ring.lost(),
                lost_ring: ring.lost(),
                lost_buffer: st.lost_buffer,
                delivered: st.delivered,
                ring_high_water: ring.high_water(),
                throttled: st.throttled,
            };
            total.samples += s.samples;
            total.lost_ring += s.lost_ring;
            total.lost_buffer += s.lost_buffer;
            total.delivered += s.delivered;
            total.ring_high_water = total.ring_high_water.max(s.ring_high_water);
            total.throttled += s.throttled;
            if let Some(out) = cpus.get_mut(cpu) {
                *out = s;
            }
        }
        (total, d.drains, d.wakeups)
    }
}

#[cfg(rprof_kunit)]
impl Session {
    /// The context an overflow handler on `cpu` would get, for tests that
    /// drive the handler's write path directly.
    pub(crate) fn handler_ctx(&self, cpu: usize) -> HandlerCtx {
        HandlerCtx {
            ring: &self.rings[cpu] as *const SampleRing,
            kicker: self.kicker.as_ptr(),
            event: 0,
            pid: -1,
            kick_at: u64::MAX,
        }
    }

    /// Pretends the session runs, without counters.
    pub(crate) fn test_start(&self) {
        self.drain.lock().start_pending = Some(now());
        self.pending.store(true, Ordering::Relaxed);
        self.set_phase(Phase::Running);
    }

    /// Whether STOP has been written.
    pub(crate) fn test_finished(&self) -> bool {
        self.finished()
    }
}

fn lost_record(stage: u32, cpu: usize, count: u64) -> rprof_lost {
    rprof_lost { header: rprof_lost::header(RPROF_RECORD_LOST, 0), stage, cpu: cpu as u32, count }
}

fn sample_record(rec: &RingRecord) -> rprof_sample {
    let s = &rec.sample;
    let flags = if s.flags & RAW_USER != 0 { RPROF_SAMPLE_USER as u16 } else { 0 };
    rprof_sample {
        header: rprof_sample::header(RPROF_RECORD_SAMPLE, flags),
        time_ns: s.time_ns,
        ip: s.ip,
        pid: s.pid,
        tid: s.tid,
        cpu: s.cpu,
        event: rec.event,
        reserved: 0,
        period: s.period,
    }
}

/// A name for dmesg.
pub(crate) fn event_name(kind: u32) -> &'static str {
    match kind {
        RPROF_EVENT_CPU_CLOCK => "cpu-clock",
        RPROF_EVENT_TASK_CLOCK => "task-clock",
        RPROF_EVENT_CYCLES => "cycles",
        RPROF_EVENT_INSTRUCTIONS => "instructions",
        RPROF_EVENT_CACHE_MISSES => "cache-misses",
        RPROF_EVENT_BRANCH_MISSES => "branch-misses",
        _ => "unknown",
    }
}

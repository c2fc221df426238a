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
//! to its CPU's lock-free ring and queues an irq_work.  `drain` (a mutex)
//! serialises the drain work, FLUSH, STOP's final drain and the module
//! notifier, and makes the drain the rings' only consumer and the event
//! buffer's only producer; it is taken before `mmap_lock` (resolution), so
//! the device never takes it under its slot lock (see `device/fops.rs`).
//! `consumer` serialises `read()` calls.
//!
//! Loss accounting is exact.  For each CPU at any quiescent point:
//! `samples == delivered + lost (ring, buffer, no mm, no mapping, no
//! cookie) + (records still in the ring)`, and after STOP's final drain the
//! rings are empty.  Losses are reported in-band as LOST records, written
//! as soon as the buffer has room for them; a reserve kept free by samples
//! makes room for those and for STOP in the common case, and what still
//! does not fit stays pending until the reader frees space (the next
//! drain, FLUSH or `read()`).

use crate::buffer::charge::Charge;
use crate::device::config::Config;
use crate::sampling::counter::Counter;
use crate::resolve::drain::{lost, Drain};
use crate::buffer::evbuf::{EventBuffer, Record};
use crate::resolve::follow::Follow;
use crate::kapi::helpers::{self, CounterAttr};
use crate::kapi::kicker::Kicker;
use crate::sampling::maps::MapSlots;
use crate::sampling::sampler::{HandlerCtx, SampleRing};
use crate::resolve::replay;
use crate::uapi::*;
use crate::kapi::waitq::WaitQueue;
use crate::chains::tables::{Published, Store, Table};
use core::ffi::{c_uint, c_void};
use core::mem::size_of;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// Where a session is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Phase {
    Configured = 0,
    Running = 1,
    Stopped = 2,
}

/// One session.  Lives in an [`Arc`].
///
/// It is split in two so that the drain work never overlaps with the
/// session's destruction: the work gets a reference to [`Core`] only, and
/// the kicker, the first field, is dropped first; its `Drop` cancels the
/// work and waits for a running one.  So when `core` is dropped no work
/// runs, and while the work runs nothing but the kicker is being dropped,
/// which the work never touches (the C side re-arms the periodic work).
/// Counters are not here: the device releases them before it drops the
/// session (so no overflow handler can touch the rings any more).
#[pin_data]
pub(crate) struct Session {
    kicker: Kicker,
    #[pin]
    core: Core,
}

/// Everything of a session but its kicker: what the drain work uses.
#[pin_data]
pub(crate) struct Core {
    pub(crate) config: Config,
    rings: Rings,
    /// The locked-memory charge of the rings.  The event buffer holds its
    /// own (and so do its mappings, which may outlive the session).
    ring_charge: Charge,
    /// With a descendants filter, the processes it follows.
    follow: Option<Follow>,
    evbuf: Arc<EventBuffer>,
    #[pin]
    drain: Mutex<Drain>,
    #[pin]
    consumer: Mutex<()>,
    /// With `RPROF_CONFIG_UNWIND_TABLES`: the unwind tables uploaded
    /// (process context) and their snapshot the handlers read.
    #[pin]
    unwind: Mutex<Store>,
    unwind_published: Published,
    /// The device's queue (see `device/fops.rs`): it outlives the session.
    waitq: Arc<WaitQueue>,
    phase: AtomicU8,
    /// The device replaced this session or its owner closed it: readers
    /// still waiting on it must look again.
    retired: AtomicBool,
    /// The time START asked for, until the drain takes it (0: none).  An
    /// atomic, so that START (under the device's slot lock) never takes
    /// the drain lock, which is ordered before mmap_lock.
    start_request: AtomicU64,
    /// A LOST, STOP or START record waits for space.
    pending: AtomicBool,
    /// Bytes samples leave free for LOST and STOP records.
    reserve: u64,
    /// Wake readers at this many unread bytes: the configured watermark,
    /// but at most half of what samples can fill (the buffer less the
    /// reserve), so that a watermark near the buffer size still wakes.
    wakeup: u64,
}

impl core::ops::Deref for Session {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// The per-CPU rings, indexed by CPU id, made at SET_CONFIG for every
/// possible CPU (up to [`RING_BYTES_MAX`]): a CPU that comes online later
/// finds its ring made, so the hotplug callback, which runs with the
/// hotplug lock held for writing, allocates nothing of rprof's.
///
/// # Invariants
///
/// Each entry is null or a pointer from `KBox::into_raw` of a ring of
/// `records` slots, owned by this object; an entry, once set, never
/// changes until `Drop`.  So `&SampleRing`s handed out live as long as
/// `self`.
///
/// Records still in a ring when the session goes hold references (an
/// address space's `mm_count`, the files and `mm_count`s of the mappings
/// they carry; a session that never stopped cleanly, or a test's): `Drop`
/// gives them back.  No drain runs then (the kicker went first, see
/// [`Session`]) and `&mut self` excludes every other consumer.
struct Rings {
    slots: KVec<AtomicPtr<SampleRing>>,
    /// Each CPU's mappings, which its handlers name
    /// ([`crate::sampling::maps`]).
    maps: KVec<MapSlots>,
    records: u32,
    /// Rings made so far, and the most that fit in [`RING_BYTES_MAX`].
    made: AtomicUsize,
    max: usize,
}

impl Rings {
    fn new(nr: usize, records: u32) -> Result<Self> {
        let mut slots = KVec::with_capacity(nr, GFP_KERNEL)?;
        let mut maps = KVec::with_capacity(nr, GFP_KERNEL_ACCOUNT)?;
        for _ in 0..nr {
            slots.push(AtomicPtr::new(core::ptr::null_mut()), GFP_KERNEL)?;
            maps.push(MapSlots::new(), GFP_KERNEL_ACCOUNT)?;
        }
        let max = (RING_BYTES_MAX / crate::device::rings::ring_bytes(records).max(1)) as usize;
        Ok(Self { slots, maps, records, made: AtomicUsize::new(0), max })
    }

    /// The number of CPU ids.
    fn len(&self) -> usize {
        self.slots.len()
    }

    /// The ring of `cpu`, if it has one.
    fn get(&self, cpu: usize) -> Option<&SampleRing> {
        let p = self.slots.get(cpu)?.load(Ordering::Acquire);
        // SAFETY: Null or a live ring owned by `self`, never replaced
        // (type invariant); published with release below.
        unsafe { p.as_ref() }
    }

    /// The ring of `cpu`, made if it has none.  Process context.
    fn ensure(&self, cpu: usize) -> Result<&SampleRing> {
        if let Some(r) = self.get(cpu) {
            return Ok(r);
        }
        let slot = self.slots.get(cpu).ok_or(EINVAL)?;
        // The cap counts every ring, also those of CPUs that came online
        // after SET_CONFIG checked it.
        if self.made.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.made.fetch_sub(1, Ordering::Relaxed);
            pr_info!("CPU {}: no ring, the session's rings would pass {} MiB\n", cpu, RING_BYTES_MAX >> 20);
            return Err(ENOMEM);
        }
        let new = match crate::device::rings::new_ring(self.records).and_then(|r| Ok(KBox::new(r, GFP_KERNEL_ACCOUNT)?)) {
            Ok(b) => KBox::into_raw(b),
            Err(e) => {
                self.made.fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        // INVARIANT: set once, from null; a racing `ensure` keeps its own.
        if let Err(_other) = slot.compare_exchange(core::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
            self.made.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: `new` came from `KBox::into_raw` above and was not
            // published.
            drop(unsafe { KBox::from_raw(new) });
        }
        self.get(cpu).ok_or(EINVAL)
    }

    /// `(cpu, ring)` for every CPU that has a ring.
    fn iter(&self) -> impl Iterator<Item = (usize, &SampleRing)> {
        (0..self.len()).filter_map(|cpu| self.get(cpu).map(|r| (cpu, r)))
    }

    /// The mappings of `cpu`'s handlers.
    fn maps(&self, cpu: usize) -> *const MapSlots {
        self.maps.get(cpu).map_or(core::ptr::null(), |m| m as *const MapSlots)
    }

    /// Records the ring of `cpu` dropped (0 without a ring).
    fn lost(&self, cpu: usize) -> u64 {
        self.get(cpu).map_or(0, |r| r.lost())
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        for slot in self.slots.iter() {
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: Ours (type invariant); nothing else uses it any more
            // (`&mut self`, and see the type's doc).
            let ring = unsafe { KBox::from_raw(p) };
            // SAFETY: `&mut self`: we are the only consumer.
            unsafe { replay::give_back(&ring) };
        }
    }
}

/// The most memory one session's rings may take, all CPUs together.
const RING_BYTES_MAX: u64 = 256 << 20;

/// The stream's clock, CLOCK_MONOTONIC in ns (as the samples').
fn now() -> u64 {
    // SAFETY: `ktime_get_mono_fast_ns()` may be called from any context.
    unsafe { helpers::rprof_clock() }
}

fn nr_cpu_ids() -> usize {
    // SAFETY: Reads a boot-time constant.
    unsafe { helpers::rprof_nr_cpu_ids() as usize }
}

/// The drain work: runs in process context on the unbound system
/// workqueue (`src/kapi/kicker.c` says why).
/// Returns the delay after which it runs again (0: not while stopped).
unsafe extern "C" fn drain_work(ctx: *mut c_void) -> c_uint {
    if ctx.is_null() {
        return 0;
    }
    // SAFETY: `ctx` is the `Core` bound in `Session::new`, pinned in the
    // session's allocation; the session's kicker, dropped before `core`,
    // cancels this work and waits for it, so `core` is alive here, and
    // nothing holds a mutable reference to it.
    let s = unsafe { &*(ctx as *const Core) };
    s.drain_now();
    if s.phase() == Phase::Running {
        s.config.drain_ms
    } else {
        0
    }
}

impl Session {
    /// Allocates a session: a ring for each online CPU, the event buffer
    /// of the configuration's `buffer_pages` data pages, the drain work.  Nothing runs yet.
    pub(crate) fn new(config: Config, max_cookies: u32, waitq: Arc<WaitQueue>) -> Result<Arc<Self>> {
        let nr = nr_cpu_ids();
        // One ring per possible CPU, made now: those of the online CPUs
        // must fit under the cap, the others are made as far as they fit
        // (a CPU that comes online without one is not sampled; dmesg says
        // so).  Rings are charged to the memory cgroup of the task that
        // makes them (`new_ring`), and with the event buffer to its
        // locked memory ([`Charge`]), before anything is allocated.
        // SAFETY: Reads the online count; a snapshot is enough here.
        let online = unsafe { helpers::rprof_num_online_cpus() } as u64;
        let one_ring = crate::device::rings::ring_bytes(config.ring_records).max(1);
        let ring_total = one_ring.saturating_mul(online);
        if ring_total > RING_BYTES_MAX {
            pr_info!(
                "SET_CONFIG: {} rings of {} records need {} MiB, more than the {} MiB allowed\n",
                online,
                config.ring_records,
                ring_total >> 20,
                RING_BYTES_MAX >> 20
            );
            return Err(ENOMEM);
        }
        // SAFETY: Reads the possible mask, fixed at boot.
        let possible = (0..nr).filter(|&cpu| unsafe { helpers::rprof_cpu_possible(cpu as u32) }).count() as u64;
        let nr_rings = possible.min(RING_BYTES_MAX / one_ring).max(online);
        let page = bindings::PAGE_SIZE as u64;
        let buf_bytes = EventBuffer::bytes(config.buffer_pages as usize).ok_or(EINVAL)? as u64;
        // Two charges: a replaced session's buffer that is still mapped
        // keeps its own charge, not its rings'.
        let ring_charge = Charge::new(nr_rings * one_ring.div_ceil(page) * page)?;
        let buf_charge = Charge::new(buf_bytes)?;
        let rings = Rings::new(nr, config.ring_records)?;
        for cpu in 0..nr {
            // SAFETY: Reads the online mask; a CPU that goes online
            // between here and the loop below still gets its ring there.
            if unsafe { helpers::rprof_cpu_online(cpu as u32) } {
                rings.ensure(cpu)?;
            }
        }
        for cpu in 0..nr {
            // SAFETY: Reads the possible mask, fixed at boot.
            if unsafe { helpers::rprof_cpu_possible(cpu as u32) } && rings.ensure(cpu).is_err() {
                break;
            }
        }
        let follow = if config.raw.flags & RPROF_CONFIG_PID_DESCENDANTS != 0 {
            Some(Follow::new(config.filter_tgid, config.filter_start)?)
        } else {
            None
        };
        let evbuf = Arc::new(EventBuffer::new(config.buffer_pages as usize, buf_charge)?, GFP_KERNEL)?;
        let chains = config.raw.flags & RPROF_CONFIG_CALLCHAIN != 0;
        let drain = Drain::new(evbuf.producer(), nr, max_cookies as usize, chains)?;
        // Room for every LOST record a drain may owe (ring and five other
        // causes per CPU) and STOP, but never more than a quarter of the
        // buffer: with many CPU ids and a small buffer the full reserve
        // would leave no room for samples at all.  LOST and STOP records
        // that do not fit wait (`pending`) until the reader frees space.
        let reserve = ((6 * nr * size_of::<rprof_lost>() + size_of::<rprof_session>()) as u64)
            .min(evbuf.size() / 4);
        let wakeup = config.wakeup_bytes.min((evbuf.size() - reserve) / 2).max(8);
        let kicker = Kicker::new(drain_work)?;
        let session = Arc::pin_init(
            pin_init!(Self {
                kicker,
                core <- pin_init!(Core {
                    config,
                    rings,
                    ring_charge,
                    follow,
                    evbuf,
                    drain <- new_mutex!(drain),
                    consumer <- new_mutex!(()),
                    unwind <- new_mutex!(Store::new(
                        // SAFETY: Reads a module parameter.
                        u64::from(unsafe { helpers::rprof_param_unwind_kb() }) * 1024
                    )),
                    unwind_published: Published::new(),
                    waitq,
                    phase: AtomicU8::new(Phase::Configured as u8),
                    retired: AtomicBool::new(false),
                    start_request: AtomicU64::new(0),
                    pending: AtomicBool::new(false),
                    reserve,
                    wakeup,
                }),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: Nothing kicked yet; `core` outlives the kicker's work
        // (drop order, see the type's doc) and never moves (pinned in the
        // `Arc`).
        unsafe { session.kicker.bind(&session.core as *const Core as *mut c_void) };
        Ok(session)
    }
}

impl Core {
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

    fn session_record(&self, type_: u32, time_ns: u64) -> rprof_session {
        rprof_session {
            header: rprof_session::header(type_, 0),
            time_ns,
            config: self.config.raw,
        }
    }

    /// Moves every complete record from the rings into the event buffer,
    /// resolved, with LOST records for what was dropped, and wakes readers
    /// past the watermark.  Process context.
    pub(crate) fn drain_now(&self) {
        #[cfg(rprof_bench)]
        let _timer = crate::resolve::stage::Timer::start(crate::resolve::stage::Stage::Pass);
        let mut guard = self.drain.lock();
        self.drain_locked(&mut guard);
        let forgotten = guard.take_forgotten();
        drop(guard);
        // The files an automatic RESET let go of, outside the drain lock.
        drop(forgotten);
    }

    fn drain_locked(&self, d: &mut Drain) {
        let buf = &self.evbuf;
        d.begin_pass();
        let requested = self.start_request.swap(0, Ordering::AcqRel);
        if requested != 0 {
            d.start_pending = Some(requested);
        }
        if let Some(t) = d.start_pending {
            if buf.write(&mut d.producer, &self.session_record(RPROF_RECORD_START, t), 0) {
                d.start_pending = None;
            }
        }
        if d.start_pending.is_none() {
            // Before the samples that follow them.
            d.write_unloads(buf, self.reserve);
        }
        let mut taken = 0u64;
        for (cpu, ring) in self.rings.iter() {
            d.report_lost(buf, cpu, ring);
            // At most one ring's worth per pass: writers on a busy CPU may
            // refill the ring as fast as we empty it, and the drain must
            // end (the work runs again in `drain_ms` while sampling; after
            // STOP nothing is written any more, so one pass empties it).
            for n in 1..=ring.capacity() {
                // SAFETY: We hold the drain lock, which makes us the only
                // consumer of every ring.
                if !unsafe { d.take(buf, cpu, ring, self.reserve) } {
                    break;
                }
                taken += 1;
                if taken % 64 == 0 && buf.unpublished(&d.producer) >= self.wakeup {
                    // A long pass (rings that filled while the drain
                    // waited for a CPU can hold more than the buffer):
                    // once a watermark's worth is written, the reader sees
                    // it (whole records, this ring's losses so far
                    // reported first) and is woken, so that it empties
                    // the buffer while this pass fills it.
                    d.report_lost(buf, cpu, ring);
                    buf.publish(&d.producer);
                    d.wakeups += 1;
                    self.waitq.wake();
                }
                if n % 256 == 0 {
                    // A ring holds up to 2^20 records: let others run (the
                    // drain lock is a mutex; sleeping under it is allowed).
                    // SAFETY: Process context (this function's contract).
                    unsafe { helpers::rprof_cond_resched() };
                }
            }
        }
        d.put_mms();
        // STOP goes last, once nothing else is owed before it.
        let owed = d.start_pending.is_some() || d.owes_unloads() || d.owes_lost(|cpu| self.rings.lost(cpu));
        if let Some(t) = d.stop_pending {
            if !owed && buf.write(&mut d.producer, &self.session_record(RPROF_RECORD_STOP, t), 0) {
                d.stop_pending = None;
            }
        }
        // Publish before `pending` may fall: a reader that sees the session
        // finished (acquire) must also see everything, STOP included.
        buf.publish(&d.producer);
        self.pending.store(owed || d.stop_pending.is_some(), Ordering::Release);

        let avail = buf.available();
        if avail >= self.wakeup || (self.phase() == Phase::Stopped && d.stop_pending.is_none()) {
            d.wakeups += 1;
            self.waitq.wake();
        }
    }

    /// Whether the session stopped and everything, STOP included, is in the
    /// buffer.
    pub(crate) fn finished(&self) -> bool {
        self.phase() == Phase::Stopped && !self.pending.load(Ordering::Acquire)
    }
}

impl Session {
    /// Creates this session's counters on `cpu`, one per configured event,
    /// disabled.  On error the ones made are released (they never ran) and
    /// dmesg names the event.
    pub(crate) fn open_cpu(&self, cpu: usize) -> Result<KVec<Counter>> {
        let events = self.config.events();
        // Made at SET_CONFIG, or never: nothing is allocated here (the
        // hotplug callback calls this under the hotplug lock).
        let ring = self.rings.get(cpu).ok_or(ENOMEM)?;
        let mut counters = KVec::with_capacity(events.len(), GFP_KERNEL)?;
        let flags = self.config.raw.flags;
        let pid = self.config.filter_tgid;
        let pid_start = self.config.filter_start;
        for (i, ev) in events.iter().enumerate() {
            let attr = CounterAttr {
                kind: ev.kind,
                freq: (ev.flags & RPROF_EVENT_FREQ != 0) as u32,
                period: ev.period,
                exclude_user: (flags & RPROF_CONFIG_EXCLUDE_USER != 0) as u32,
                exclude_kernel: (flags & RPROF_CONFIG_EXCLUDE_KERNEL != 0) as u32,
            };
            // INVARIANT (HandlerCtx): the ring, kicker and followed set
            // live in this session, which the device drops only after the
            // counters.
            let ctx = HandlerCtx {
                ring: ring as *const SampleRing,
                kicker: self.kicker.as_ptr(),
                event: i as u16,
                max_kernel: self.config.raw.max_kernel_frames,
                max_user: self.config.raw.max_user_frames,
                pid,
                pid_start,
                follow: self.follow.as_ref().map_or(core::ptr::null(), Follow::as_ptr),
                kick_at: ring.capacity() / 2,
                tables: if flags & RPROF_CONFIG_UNWIND_TABLES != 0 {
                    &self.unwind_published
                } else {
                    core::ptr::null()
                },
                maps: self.rings.maps(cpu),
            };
            match Counter::new(cpu as u32, &attr, ctx) {
                Ok(c) => counters.push(c, GFP_KERNEL)?,
                Err(e) => {
                    // A user may retry START in a loop: rate-limited.
                    // SAFETY: printk_ratelimit() may be called anywhere.
                    if unsafe { helpers::rprof_printk_ratelimit() } {
                        pr_err!("cannot open event {} ({}) on CPU {}: error {}\n", i, event_name(ev.kind), cpu, e.to_errno());
                    }
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
        if let Some(f) = &self.follow {
            f.publish();
        }
        self.start_request.store(now(), Ordering::Release);
        self.pending.store(true, Ordering::Release);
        self.set_phase(Phase::Running);
        for c in all.iter().flat_map(|v| v.iter()) {
            c.enable();
        }
        self.kicker.schedule(self.config.drain_ms);
        Ok(all)
    }

    /// Ends sampling: the caller has released the counters (no handler runs
    /// any more); drains everything and writes STOP.  Process context, no
    /// lock held.
    pub(crate) fn finish(&self) {
        // Exits of the followed processes no longer change the stopped
        // session's set (nor cost the exiting tasks a walk for it).
        if let Some(f) = &self.follow {
            f.retract();
        }
        {
            // Under the drain lock, and `pending` before the phase: no
            // reader may see Stopped without STOP pending (it would take
            // the session for finished and return end-of-file early), and
            // no drain pass may end between the two.
            let mut d = self.drain.lock();
            d.stop_pending = Some(now());
            self.pending.store(true, Ordering::Release);
            self.set_phase(Phase::Stopped);
        }
        self.drain_in_worker();
        #[cfg(rprof_bench)]
        crate::resolve::stage::report_stages();
    }

    /// FLUSH, STOP and the module notifier drain through the worker rather
    /// than in their caller's context: `d_path()` names files as the
    /// draining task's root sees them, and a chrooted owner must not get
    /// other names than the worker gives.  Returns once the drain ran.
    /// Process context; the caller holds no drain lock.
    pub(crate) fn drain_in_worker(&self) {
        self.kicker.run_now();
    }




    /// A kernel module is going away: resolve what the rings hold while its
    /// text is still there, then mark its cookies unloaded.  A sample taken
    /// in the module between the two is resolved by a later drain against
    /// the unloaded cookie, as one taken after the notifier would be.
    pub(crate) fn module_going(&self, id: usize) {
        self.drain_in_worker();
        let mut guard = self.drain.lock();
        // Inside a run: its START is written and its STOP is not (STOP is
        // the last record of a run, and a stopped session's stream ends
        // there until the next START).  Under the drain lock, which
        // `finish` holds to set the phase and `stop_pending` together and
        // every pass holds to turn `start_request` into START.  `start`
        // stores `start_request` before the phase (release), so a Running
        // phase read here (acquire) comes with its request in sight.
        let running = self.phase() == Phase::Running;
        let started = self.start_request.load(Ordering::Acquire) == 0 && guard.start_pending.is_none();
        let in_run = started && (running || guard.stop_pending.is_some());
        guard.module_going(&self.evbuf, id, in_run, self.reserve);
        self.evbuf.publish(&guard.producer);
    }

    /// `RESET_COOKIES`: drains the rings (so that what they hold is named
    /// by the cookies it was taken under), then, in the same run, writes
    /// RESET and forgets every cookie and stack (`Drain::reset`).  The
    /// files the cookies pinned are let go here.  `EINVAL` unless the
    /// session runs; `EAGAIN` if RESET cannot be written now.
    pub(crate) fn reset_cookies(&self) -> Result {
        self.drain_in_worker();
        // The unwind tables go with the cookies, under the store's lock
        // from before the RESET record to after they are gone: an upload
        // waits, and so is either dropped before RESET (the reader uploads
        // again as the files come back) or kept after it, never dropped
        // after it was accepted past RESET.  Lock order: the store's, then
        // the drain's.
        let mut store = self.unwind.lock();
        let forgotten = {
            let mut d = self.drain.lock();
            // Under the drain lock, which `finish` holds to set the phase
            // and `stop_pending` together: Running here means that STOP is
            // not requested, so RESET goes before it.
            if self.phase() != Phase::Running {
                return Err(EINVAL);
            }
            // START first: a pass turns `start_request` into START under
            // this lock (see `module_going`).
            if self.start_request.load(Ordering::Acquire) != 0 || d.start_pending.is_some() {
                return Err(EAGAIN);
            }
            let r = d.reset(&self.evbuf, now(), self.reserve);
            self.evbuf.publish(&d.producer);
            r?
        };
        // The files' references (up to `max_cookies` of them, any of which
        // may be a deleted file's last), outside the drain lock: the
        // drain goes on meanwhile.
        store.clear(&self.unwind_published);
        drop(store);
        drop(forgotten);
        Ok(())
    }

    /// `ADD_UNWIND`: the table at user address `table` for the file behind
    /// `fd`.  `EINVAL` unless the session walks by tables.
    pub(crate) fn add_unwind(&self, fd: i32, table: usize, bytes: u64) -> Result {
        if self.config.raw.flags & RPROF_CONFIG_UNWIND_TABLES == 0 {
            return Err(EINVAL);
        }
        // A store past its limit takes nothing: say so before the copy.
        if self.unwind.lock().full_for(bytes) {
            return Err(ENOSPC);
        }
        // Copied and checked without the lock: a slow user buffer (a
        // fault on a network file, userfaultfd) holds up only its caller.
        let t = Table::from_user(fd, table, bytes)?;
        self.unwind.lock().insert(&self.unwind_published, t)
    }


    /// `LOOKUP_COOKIE`: a copy of what `cookie` names.
    pub(crate) fn lookup_cookie(&self, cookie: u64) -> Result<(KVec<u8>, u32, u64, u64)> {
        let d = self.drain.lock();
        match d.cookies.get(cookie).map(|e| &e.object) {
            Some(crate::resolve::cookies::Object::File { name, flags, dev, ino, .. }) => {
                let mut copy = KVec::new();
                copy.extend_from_slice(name, GFP_KERNEL)?;
                Ok((copy, *flags, *dev, *ino))
            }
            Some(crate::resolve::cookies::Object::Module { name, .. }) => {
                let n = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                let mut copy = KVec::new();
                copy.extend_from_slice(&name[..n], GFP_KERNEL)?;
                Ok((copy, 0, 0, 0))
            }
            None => Err(ENOENT),
        }
    }


    /// Asks the drain to write what is pending, now that space may be free.
    fn kick_if_pending(&self) {
        if self.pending.load(Ordering::Relaxed) {
            self.kicker.kick();
        }
    }

    /// `read()`: whole records, `Ok(Some(0))` at the end of a stopped
    /// session, `EAGAIN` if there is nothing yet and `nonblock`; `Ok(None)`
    /// if the caller should wait (on the device's queue, until
    /// [`Self::read_ready`]) and look again.
    pub(crate) fn read(&self, out: &mut kernel::uaccess::UserSliceWriter, nonblock: bool) -> Result<Option<usize>> {
        // Whether the session was finished *before* looking for data: if
        // so, everything is published and what the read finds is all there
        // is (`drain_locked` publishes before it clears `pending`).
        let finished = self.finished();
        let n = {
            let _c = self.consumer.lock();
            self.evbuf.read_to_user(out)?
        };
        self.kick_if_pending();
        if n > 0 {
            return Ok(Some(n));
        }
        if finished {
            return Ok(Some(0));
        }
        if nonblock {
            return Err(EAGAIN);
        }
        Ok(None)
    }

    /// Whether a blocked `read()` should look again.
    pub(crate) fn read_ready(&self) -> bool {
        self.evbuf.available() > 0 || self.finished() || self.retired.load(Ordering::Acquire)
    }

    /// The device no longer serves this session: wakes its waiters.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Release);
        self.waitq.wake();
    }

    /// `poll()`'s readiness: data past the watermark, or the end.
    pub(crate) fn readable(&self) -> bool {
        self.kick_if_pending();
        self.evbuf.available() >= self.wakeup || self.finished()
    }

    /// The event buffer, for tests that consume it directly.
    #[cfg(rprof_kunit)]
    pub(crate) fn evbuf(&self) -> &EventBuffer {
        &self.evbuf
    }

    /// The event buffer, for a mapping: a file operation that runs under
    /// `mmap_lock` must not hold the session (it might end up dropping
    /// the last reference there).
    pub(crate) fn evbuf_arc(&self) -> Arc<EventBuffer> {
        self.evbuf.clone()
    }

    /// The call-chain counters (zero without chains), and the RESET
    /// records written.
    pub(crate) fn chain_stats(&self) -> (rprof_chain_stats, u64) {
        let d = self.drain.lock();
        (d.chain_stats, d.resets)
    }

    /// The bytes of rings and event buffer charged to the owner.
    pub(crate) fn locked_bytes(&self) -> u64 {
        self.ring_charge.bytes() + self.evbuf.charged_bytes() + self.unwind_published.charged()
    }

    /// Orphans the descendants filter follows, and those it had no room
    /// for (both 0 without one).
    pub(crate) fn orphans(&self) -> (u64, u64) {
        self.follow.as_ref().map_or((0, 0), Follow::orphans)
    }

    /// Fills `cpus` (as many as fit) and returns the totals, drains,
    /// wakeups and samples lost for a busy `mmap_lock` (which
    /// `rprof_cpu_stats` has no field for).
    pub(crate) fn stats(&self, cpus: &mut [rprof_cpu_stats]) -> (rprof_cpu_stats, u64, u64, u64) {
        let d = self.drain.lock();
        let mut total = rprof_cpu_stats::default();
        let mut mm_busy = 0;
        for (cpu, ring) in self.rings.iter() {
            let (delivered, lost, throttled) = d.cpu_counts(cpu);
            let s = rprof_cpu_stats {
                samples: ring.stored() + ring.lost(),
                lost_ring: ring.lost(),
                lost_buffer: lost[lost::BUFFER],
                delivered,
                ring_high_water: ring.high_water(),
                throttled,
                lost_no_mm: lost[lost::NO_MM],
                lost_no_mapping: lost[lost::NO_MAPPING],
                lost_no_cookie: lost[lost::NO_COOKIE],
            };
            total.samples += s.samples;
            total.lost_ring += s.lost_ring;
            total.lost_buffer += s.lost_buffer;
            total.delivered += s.delivered;
            total.ring_high_water = total.ring_high_water.max(s.ring_high_water);
            total.throttled += s.throttled;
            total.lost_no_mm += s.lost_no_mm;
            total.lost_no_mapping += s.lost_no_mapping;
            total.lost_no_cookie += s.lost_no_cookie;
            mm_busy += lost[lost::MM_BUSY];
            if let Some(out) = cpus.get_mut(cpu) {
                *out = s;
            }
        }
        (total, d.drains, d.wakeups, mm_busy)
    }
}

#[cfg(rprof_kunit)]
impl Session {
    /// The context an overflow handler on `cpu` would get, for tests that
    /// drive the handler's write path directly (the ring is made if the
    /// CPU has none).
    pub(crate) fn handler_ctx(&self, cpu: usize) -> Result<HandlerCtx> {
        Ok(HandlerCtx {
            ring: self.rings.ensure(cpu)? as *const SampleRing,
            kicker: self.kicker.as_ptr(),
            event: 0,
            max_kernel: self.config.raw.max_kernel_frames,
            max_user: self.config.raw.max_user_frames,
            pid: -1,
            pid_start: 0,
            follow: core::ptr::null(),
            kick_at: u64::MAX,
            tables: core::ptr::null(),
            maps: core::ptr::null(),
        })
    }

    /// The cookie of the file at `path` in the session's table, as the
    /// drain would make it.
    pub(crate) fn test_file_cookie(&self, path: crate::resolve::cookies::PathRef) -> Option<u64> {
        self.drain.lock().cookies.file(path).ok()
    }

    /// Pretends the session runs, without counters.
    pub(crate) fn test_start(&self) {
        if let Some(f) = &self.follow {
            f.publish();
        }
        self.start_request.store(now(), Ordering::Release);
        self.pending.store(true, Ordering::Relaxed);
        self.set_phase(Phase::Running);
    }

    /// Whether `cpu` has a ring.
    pub(crate) fn test_has_ring(&self, cpu: usize) -> bool {
        self.rings.get(cpu).is_some()
    }

    /// Whether exits update the session's followed set (`None`: it has
    /// none).
    pub(crate) fn test_follow_published(&self) -> Option<bool> {
        self.follow.as_ref().map(Follow::published)
    }

    /// Whether STOP has been written.
    pub(crate) fn test_finished(&self) -> bool {
        self.finished()
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

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
//! A user sample's ring record holds a counted reference on the sampled
//! task's address space (`mm_users`, taken in the overflow handler with an
//! NMI-safe atomic increment, dropped here).  So the VMAs of a task that
//! exits, or execs a new program, survive until the drain has resolved its
//! samples; no exit or exec hook is needed for that.  `munmap()` is
//! different: it removes a VMA from a live address space, and a new mapping
//! may take its place.  The record therefore also holds the address
//! space's write-lock sequence at sampling time, and a VMA that was created
//! or changed since (its `vm_lock_seq` is not older) is not trusted: the
//! sample counts as lost with no mapping instead of being attributed to
//! whatever is mapped there now.  Module samples are resolved before the
//! module goes: the module notifier drains first (`Session::module_going`).
//!
//! # Output
//!
//! TASK when the CPU or task differs from the last TASK in the stream (or
//! the task exec'd or renamed itself: its address space or comm changed),
//! SWITCH when the cookie differs from the last SWITCH, a COOKIE or MODULE
//! record before a cookie's first SWITCH, then the compact SAMPLE.  The
//! context is updated only by records that were actually written.

use crate::cookies::{CookieTable, Object, PathRef};
use crate::evbuf::{EventBuffer, Producer, Record};
use crate::helpers::{self, ModInfo, VmaRange, RESOLVE_ANON, RESOLVE_FILE, RAW_THROTTLED, RAW_USER};
use crate::mapcache::{MapCache, Target};
use crate::sampler::{RingRecord, SampleRing};
use crate::uapi::*;
use core::mem::size_of;
use kernel::bindings;
use kernel::prelude::*;

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
// SAFETY: As above.
unsafe impl Record for rprof_task {}
// SAFETY: As above.
unsafe impl Record for rprof_switch {}
// SAFETY: As above.
unsafe impl Record for rprof_module {}

/// Loss causes the drain counts itself, in `CpuDrain::lost` order; ring
/// drops are counted by the ring.
const STAGES: [u32; 4] = [RPROF_LOST_BUFFER, RPROF_LOST_NO_MM, RPROF_LOST_NO_MAPPING, RPROF_LOST_NO_COOKIE];
const BUFFER: usize = 0;
const NO_MM: usize = 1;
const NO_MAPPING: usize = 2;
const NO_COOKIE: usize = 3;

/// The drain's bookkeeping of one CPU.
#[derive(Default, Clone, Copy)]
pub(crate) struct CpuDrain {
    /// `ring.lost()` already reported in LOST records.
    ring_lost_reported: u64,
    /// Samples lost per cause (`STAGES`), all told and not yet reported.
    lost: [u64; 4],
    pending: [u64; 4],
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
    pub(crate) drains: u64,
    pub(crate) wakeups: u64,
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

/// What `resolve` found for a sample.
struct Where {
    cookie: u64,
    offset: u64,
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
    pub(crate) fn new(producer: Producer, nr_cpus: usize, max_cookies: usize) -> Result<Self> {
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
            drains: 0,
            wakeups: 0,
            cookies: CookieTable::new(max_cookies)?,
            task: None,
            cookie: RPROF_COOKIE_NONE as u64,
            scratch,
            maps: MapCache::new(),
        })
    }

    /// Whether a LOST record is owed for any CPU (`ring_lost` per CPU).
    pub(crate) fn owes_lost(&self, ring_lost: impl Fn(usize) -> u64) -> bool {
        self.cpus
            .iter()
            .enumerate()
            .any(|(cpu, st)| st.pending.iter().any(|&n| n > 0) || ring_lost(cpu) > st.ring_lost_reported)
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

    /// Resolves, writes (or counts as lost) one ring record of `cpu`, and
    /// drops the address-space reference it held.
    pub(crate) fn process(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, reserve: u64) {
        #[cfg(rprof_bench)]
        let _timer = crate::bench::Timer::start(crate::bench::Stage::Record);
        let ok = if self.start_pending.is_some() {
            // Nothing goes before START.
            Err(BUFFER)
        } else {
            self.resolve(rec).and_then(|w| if self.emit(buf, cpu, rec, &w, reserve) { Ok(()) } else { Err(BUFFER) })
        };
        match ok {
            Ok(()) => self.cpus[cpu].delivered += 1,
            Err(cause) => self.count_lost(cpu, cause),
        }
        self.throttle_records(buf, cpu, rec, reserve);
        if !rec.mm.0.is_null() {
            // SAFETY: The handler took this reference for us; process
            // context.
            unsafe { helpers::rprof_mm_put(rec.mm.0) };
        }
    }

    fn resolve(&mut self, rec: &RingRecord) -> Result<Where, usize> {
        #[cfg(rprof_bench)]
        let _timer = crate::bench::Timer::start(if rec.sample.flags & RAW_USER != 0 {
            crate::bench::Stage::ResolveUser
        } else {
            crate::bench::Stage::ResolveKernel
        });
        let ip = rec.sample.ip;
        if rec.sample.flags & RAW_USER != 0 {
            if rec.mm.0.is_null() {
                return Err(NO_MM);
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
            // SAFETY: `mm` is referenced by the record; process context.
            let how =
                unsafe { helpers::rprof_resolve_user(rec.mm.0, ip, rec.mm_seq, &mut path, &mut offset, &mut range) };
            let target = match how {
                RESOLVE_FILE => {
                    // SAFETY: The helper took a reference on `path` for us.
                    let path = unsafe { PathRef::from_raw(path) };
                    Target::File(self.cookies.file(path).map_err(|_| NO_COOKIE)?)
                }
                RESOLVE_ANON => Target::Anon,
                _ => return Err(NO_MAPPING),
            };
            // SAFETY: The record holds a reference on `mm`; process context.
            unsafe { self.maps.fill(rec.mm.0, rec.mm_seq, &range, target) };
            let cookie = match target {
                Target::File(cookie) => cookie,
                Target::Anon => RPROF_COOKIE_ANON as u64,
            };
            Ok(Where { cookie, offset })
        } else {
            // SAFETY: All-zero is a valid `ModInfo` to fill.
            let mut info: ModInfo = unsafe { core::mem::zeroed() };
            // SAFETY: Walks the module list under RCU; fills `info`.
            if unsafe { helpers::rprof_module_lookup(ip, &mut info) } {
                let cookie = self.cookies.module(&info).map_err(|_| NO_COOKIE)?;
                Ok(Where { cookie, offset: ip - info.base })
            } else {
                Ok(Where { cookie: RPROF_COOKIE_KERNEL as u64, offset: ip })
            }
        }
    }

    /// The cookie of the sampled task's executable, or NONE.
    fn exe_cookie(&mut self, rec: &RingRecord) -> u64 {
        if rec.mm.0.is_null() {
            return RPROF_COOKIE_NONE as u64;
        }
        // SAFETY: All-zero is a valid (empty) `struct path` to fill.
        let mut path: bindings::path = unsafe { core::mem::zeroed() };
        // SAFETY: `mm` is referenced by the record.
        if !unsafe { helpers::rprof_mm_exe_path(rec.mm.0, &mut path) } {
            return RPROF_COOKIE_NONE as u64;
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

    /// Writes the context records `rec` needs, then its SAMPLE.
    fn emit(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, w: &Where, reserve: u64) -> bool {
        let s = &rec.sample;
        let task = TaskKey { cpu: cpu as u32, pid: s.pid, tid: s.tid, mm: rec.mm.0 as usize, comm: s.comm };
        if self.task != Some(task) {
            let exe = self.exe_cookie(rec);
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
        buf.write(&mut self.producer, &sample, reserve)
    }

    /// THROTTLE with a throttled sample, UNTHROTTLE with the first sample
    /// after one: perf resumes a counter silently on a tick.  Both are
    /// informational and left out when space is short.
    fn throttle_records(&mut self, buf: &EventBuffer, cpu: usize, rec: &RingRecord, reserve: u64) {
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
    /// a MODULE record with the UNLOAD flag.
    pub(crate) fn module_going(&mut self, buf: &EventBuffer, id: usize) {
        for cookie in self.cookies.forget_module(id).into_iter().flatten() {
            let Some(entry) = self.cookies.get(cookie) else { continue };
            if !entry.announced {
                continue;
            }
            if let Object::Module { base, size, init, name } = &entry.object {
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
                buf.write(&mut self.producer, &m, 0);
            }
        }
    }

    /// This CPU's counters: (delivered, lost per `STAGES`, throttled).
    pub(crate) fn cpu_counts(&self, cpu: usize) -> (u64, [u64; 4], u64) {
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
}

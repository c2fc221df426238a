// SPDX-License-Identifier: GPL-2.0

//! `/dev/rprof`: the file operations and the one-session-at-a-time rule.
//!
//! Only privileged users may open the device (`CAP_PERFMON` or
//! `CAP_SYS_ADMIN`, as `perfmon_capable()` says).  Each open file is an
//! [`RprofFile`]; the device-wide state is one [`Rprof`].
//!
//! The file that configures a session owns it: only that file may start,
//! stop, flush, read or map it; another configurer gets `EBUSY`.  Closing
//! the owner stops the session and frees everything.  Any open file may read
//! the statistics.

use crate::device::config::Config;
use crate::buffer::evbuf::EventBuffer;
use crate::sampling::counter::Counter;
use crate::kapi::hotplug::{CpuEvents, CpusReadGuard};
use crate::kapi::miscdev::{File, FileOps};
use crate::resolve::modules::ModuleEvents;
use crate::device::params::Params;
use crate::device::session::{Phase, Session};
use crate::kapi::sized;
use crate::kapi::helpers;
use crate::uapi;
use core::mem::size_of;
use kernel::bindings;
use crate::kapi::waitq::WaitQueue;
use kernel::{new_mutex, new_spinlock};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLock};
use kernel::uaccess::UserSliceWriter;

/// Which file owns which session: what every file operation asks first.
///
/// A spinlock that is a leaf of the lock order: nothing is taken, called
/// or freed under it but an `Arc` clone, so it may be taken anywhere,
/// under `mmap_lock` (in `mmap()`) and under [`Slot`] alike.  The last
/// reference to a session is never dropped under it (dropping a session
/// sleeps).
///
/// # Invariants
///
/// `owner` is non-zero exactly when `session` is `Some`.
struct Current {
    owner: usize,
    session: Option<Arc<Session>>,
}

impl Current {
    /// The session `file` owns: `EINVAL` if there is none, `EBUSY` if
    /// another file owns it.
    fn session_of(&self, file: usize) -> Result<Arc<Session>> {
        match &self.session {
            Some(s) if self.owner == file => Ok(s.clone()),
            Some(_) => Err(EBUSY),
            None => Err(EINVAL),
        }
    }
}

/// The session's life cycle: configure, start, stop, release.
///
/// # Lock order
///
/// ```text
///   cpu_hotplug_lock (START, STOP, the hotplug callbacks)
///     -> Slot (this mutex)
///       -> perf's ctx->mutex (perf_event_create_kernel_counter)
///         -> mmap_lock (perf copies to userspace under ctx->mutex)
///       -> Current (leaf)
///     -> perf's ctx->mutex (perf_event_release_kernel: STOP and
///        cpu_down drop counters under the hotplug lock, outside Slot)
///   mmap_lock (mmap()) -> Current (leaf)
///   a session's drain lock -> mmap_lock (resolution)
/// ```
///
/// So: no file operation that may run under `mmap_lock` takes `Slot`
/// (they use [`Current`]); nothing copies to or from userspace under
/// `Slot`; the drain lock is never taken under `Slot` (it is ordered before
/// `mmap_lock`, which perf orders after its `ctx->mutex`).
///
/// # Invariants
///
/// `counters` (one list per CPU id) is non-empty only while the session in
/// [`Current`] is running; while `stopping`, a STOP is finishing outside
/// the lock and the session must not change.  Only code holding `Slot`
/// changes [`Current`].
struct Slot {
    counters: KVec<KVec<Counter>>,
    stopping: bool,
    /// Statistics of the last session, kept when its owner closed it, so
    /// that `rprof stat` can show them afterwards.
    last: Option<Stats>,
}

/// A copy of a session's statistics.
struct Stats {
    total: uapi::rprof_cpu_stats,
    cpus: KVec<uapi::rprof_cpu_stats>,
    drains: u64,
    wakeups: u64,
    chains: uapi::rprof_chain_stats,
    /// Orphans followed and not followed (`rprof_stats.orphans*`).
    orphans: (u64, u64),
    /// RESET records written.
    resets: u64,
    /// Samples not resolved for a busy `mmap_lock`.
    lost_mm_busy: u64,
    /// Bytes of the event buffer and rings, charged to the owner.
    locked_bytes: u64,
}

impl Stats {
    /// Takes `session`'s statistics, for CPUs up to `nr`.
    fn of(session: &Session, nr: usize) -> Result<Self> {
        let mut cpus = KVec::new();
        cpus.extend_with(nr, uapi::rprof_cpu_stats::default(), GFP_KERNEL)?;
        let (total, drains, wakeups, lost_mm_busy) = session.stats(&mut cpus);
        let (chains, resets) = session.chain_stats();
        Ok(Self {
            total,
            cpus,
            drains,
            wakeups,
            chains,
            orphans: session.orphans(),
            resets,
            lost_mm_busy,
            locked_bytes: session.locked_bytes(),
        })
    }

    /// A copy of the figures of `self`, for CPUs up to `nr`.
    fn copy(&self, nr: usize) -> Result<Self> {
        let mut cpus = KVec::new();
        cpus.extend_from_slice(&self.cpus[..nr.min(self.cpus.len())], GFP_KERNEL)?;
        Ok(Self {
            total: self.total,
            cpus,
            drains: self.drains,
            wakeups: self.wakeups,
            chains: self.chains,
            orphans: self.orphans,
            resets: self.resets,
            lost_mm_busy: self.lost_mm_busy,
            locked_bytes: self.locked_bytes,
        })
    }
}

/// Device-wide state.
///
/// The wait queue is the device's, not a session's: a file may be polled
/// (epoll keeps its registration until the file is closed) across any
/// number of sessions, and every open file holds an `Arc<Rprof>`, so the
/// queue outlives every registration on it.  Sessions wake it.
#[pin_data]
pub(crate) struct Rprof {
    params: Params,
    waitq: Arc<WaitQueue>,
    #[pin]
    sessions: Mutex<Slot>,
    #[pin]
    current: SpinLock<Current>,
}

impl Rprof {
    pub(crate) fn new(params: Params) -> Result<Arc<Self>> {
        // Not named like the fields: 7.x's pin_init! binds initialised
        // fields to locals of their names (src/kapi/compat.rs).
        let first_slot = Slot { counters: KVec::new(), stopping: false, last: None };
        let no_session = Current { owner: 0, session: None };
        let waitq = Arc::new(WaitQueue::new()?, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self { params, waitq, sessions <- new_mutex!(first_slot), current <- new_spinlock!(no_session) }),
            GFP_KERNEL,
        )
    }

    /// The current session, if any.
    fn session(&self) -> Option<Arc<Session>> {
        self.current.lock().session.clone()
    }

    /// Makes `session` (owned by `owner`) current and returns the one it
    /// replaces, retired: its readers wake up and look again.  The caller
    /// holds `Slot` and drops the old session after unlocking it.
    fn replace(&self, _slot: &mut Slot, owner: usize, session: Option<Arc<Session>>) -> Option<Arc<Session>> {
        let old = {
            let mut cur = self.current.lock();
            // INVARIANT: `owner` is non-zero exactly with a session.
            cur.owner = if session.is_some() { owner } else { 0 };
            core::mem::replace(&mut cur.session, session)
        };
        if let Some(s) = &old {
            s.retire();
        }
        old
    }

    /// The session `file` owns.
    fn owned(&self, file: usize) -> Result<Arc<Session>> {
        self.current.lock().session_of(file)
    }

    /// The event buffer of the session `file` owns, without a reference
    /// to the session: for `mmap()`, which runs under `mmap_lock`.
    fn owned_evbuf(&self, file: usize) -> Result<Arc<EventBuffer>> {
        let cur = self.current.lock();
        match &cur.session {
            Some(s) if cur.owner == file => Ok(s.evbuf_arc()),
            Some(_) => Err(EBUSY),
            None => Err(EINVAL),
        }
    }

    /// Whether `file` may configure a session now: `EBUSY` if another file
    /// owns the current one, or it runs or is stopping.  Under `slot`.
    fn may_configure(&self, slot: &Slot, file: usize) -> Result {
        if let Some(s) = self.session() {
            if self.owned(file).is_err() || slot.stopping || s.phase() == Phase::Running {
                return Err(EBUSY);
            }
        }
        Ok(())
    }

    fn set_config(&self, file: usize, arg: usize) -> Result {
        // Copy from userspace before taking `slot` (lock order).
        let config = Config::from_user(arg, &self.params)?;
        self.may_configure(&self.sessions.lock(), file)?;
        // Allocated without `slot` (up to 256 MiB of rings and as much
        // event buffer): a CPU hotplug
        // callback waiting for `slot` holds the hotplug lock for writing,
        // which would stall every cpus_read_lock() in the system meanwhile.
        let session = Session::new(config, self.params.max_cookies, self.waitq.clone())?;
        let (old, new) = {
            let mut slot = self.sessions.lock();
            match self.may_configure(&slot, file) {
                // The state changed while we allocated: drop ours below.
                Err(e) => (Err(e), Some(session)),
                Ok(()) => (Ok(self.replace(&mut slot, file, Some(session))), None),
            }
        };
        // Sessions are dropped unlocked: their kickers may wait for work.
        drop(new);
        drop(old?);
        Ok(())
    }

    fn start(&self, file: usize) -> Result {
        // Lock order: the CPU hotplug lock, then `slot` (as in `cpu_up`).
        let _cpus = CpusReadGuard::new();
        let mut slot = self.sessions.lock();
        let session = self.owned(file)?;
        // Not while running or stopping, nor while the previous run's STOP
        // is still waiting for room in the buffer: its records must not
        // interleave with a new run's.
        if slot.stopping || session.phase() == Phase::Running || (session.phase() == Phase::Stopped && !session.finished()) {
            return Err(EBUSY);
        }
        slot.counters = session.start()?;
        Ok(())
    }

    fn stop(&self, file: usize) -> Result {
        let session = {
            // The CPU hotplug lock, as START: no CPU goes down or comes up
            // (and so no hotplug callback opens or releases a counter)
            // while the counters are taken down, so when they are gone no
            // handler can push to any ring, and the final drain below
            // finds everything that was ever pushed.
            let _cpus = CpusReadGuard::new();
            let counters;
            let session = {
                let mut slot = self.sessions.lock();
                let session = self.owned(file)?;
                if slot.stopping || session.phase() != Phase::Running {
                    return Err(EINVAL);
                }
                slot.stopping = true;
                counters = core::mem::take(&mut slot.counters);
                session
            };
            // Releasing a counter waits until its handler cannot run any
            // more.  Outside `slot`, so that GET_STATS and other files are
            // not held up; `stopping` keeps START and SET_CONFIG out.
            drop(counters);
            session
        };
        // The drain lock is not ordered against the hotplug lock: drain
        // without it.
        session.finish();
        self.sessions.lock().stopping = false;
        Ok(())
    }

    fn stats(&self, arg: usize) -> Result {
        // The size convention (`sized.rs`): a caller of an older header
        // has a smaller structure (at least the first published size), and
        // exactly `min(size, known)` bytes of it are read and written.
        let known = size_of::<uapi::rprof_stats>();
        let size = sized::read_size(arg, uapi::RPROF_STATS_SIZE_VER0 as usize)?;
        sized::check_unknown_zero(arg, known, size)?;
        let len = size.min(known);
        let mut req = uapi::rprof_stats::default();
        // SAFETY: `rprof_stats` is plain old data without padding: any
        // bytes form a valid value, and every byte is initialised.
        let req_bytes =
            unsafe { core::slice::from_raw_parts_mut(&mut req as *mut uapi::rprof_stats as *mut u8, known) };
        crate::kapi::compat::user_slice(arg, len).reader().read_slice(&mut req_bytes[..len])?;
        if req.reserved.iter().any(|&r| r != 0) {
            return Err(EINVAL);
        }
        // SAFETY: Reads a boot-time constant.
        let nr = unsafe { helpers::rprof_nr_cpu_ids() };
        let want = if req.cpus != 0 { req.nr_cpus.min(nr) as usize } else { 0 };
        // The current session's figures, else the last one's.  The
        // session's are taken outside `slot` (its drain lock is ordered
        // before mmap_lock, which perf orders after what `slot` covers),
        // and nothing is copied to userspace under either.
        let stats = match self.session() {
            Some(s) => Some(Stats::of(&s, want)?),
            None => match &self.sessions.lock().last {
                Some(last) => Some(last.copy(want)?),
                None => None,
            },
        };
        req.nr_cpus = nr;
        if let Some(st) = stats {
            let mut w = crate::kapi::compat::user_slice(req.cpus as usize, want * size_of::<uapi::rprof_cpu_stats>()).writer();
            for c in st.cpus.iter() {
                w.write(c)?;
            }
            req.drains = st.drains;
            req.wakeups = st.wakeups;
            req.total = st.total;
            req.chains = st.chains;
            (req.orphans, req.orphans_lost) = st.orphans;
            req.resets = st.resets;
            req.lost_mm_busy = st.lost_mm_busy;
            req.locked_bytes = st.locked_bytes;
        } else {
            req.drains = 0;
            req.wakeups = 0;
            req.total = Default::default();
            req.chains = Default::default();
            (req.orphans, req.orphans_lost) = (0, 0);
            req.resets = 0;
            req.lost_mm_busy = 0;
            req.locked_bytes = 0;
        }
        // The size filled in: what the caller has, up to what we know.
        req.size = len as u32;
        // SAFETY: As above.
        let req_bytes =
            unsafe { core::slice::from_raw_parts(&req as *const uapi::rprof_stats as *const u8, known) };
        crate::kapi::compat::user_slice(arg, len).writer().write_slice(&req_bytes[..len])?;
        Ok(())
    }

    /// `LOOKUP_COOKIE`: the name of a cookie of `file`'s session.
    fn lookup_cookie(&self, file: usize, arg: usize) -> Result {
        let size = size_of::<uapi::rprof_cookie_lookup>();
        let mut req: uapi::rprof_cookie_lookup = crate::kapi::compat::user_slice(arg, size).reader().read()?;
        let session = self.owned(file)?;
        let (name, flags, dev, ino) = session.lookup_cookie(req.cookie)?;
        let need = name.len() + 1;
        let fits = need <= req.path_len as usize;
        req.path_len = need as u32;
        req.flags = flags;
        req.dev = dev;
        req.ino = ino;
        if fits {
            let mut w = crate::kapi::compat::user_slice(req.path as usize, need).writer();
            w.write_slice(&name)?;
            w.write_slice(&[0])?;
        }
        crate::kapi::compat::user_slice(arg, size).writer().write(&req)?;
        if fits {
            Ok(())
        } else {
            Err(Error::from_errno(-(bindings::ENAMETOOLONG as i32)))
        }
    }

}

impl ModuleEvents for Rprof {
    /// A kernel module is going: the session resolves its samples first.
    fn module_going(&self, id: usize) {
        if let Some(s) = self.session() {
            s.module_going(id);
        }
    }

}

impl CpuEvents for Rprof {
    /// A CPU came online: a running session samples it too.
    fn cpu_up(&self, cpu: u32) {
        let mut slot = self.sessions.lock();
        let Some(session) = self.session() else { return };
        if slot.stopping || session.phase() != Phase::Running {
            return;
        }
        let Some(list) = slot.counters.get_mut(cpu as usize) else { return };
        if !list.is_empty() {
            return;
        }
        match session.open_cpu(cpu as usize) {
            Ok(counters) => {
                for c in counters.iter() {
                    c.enable();
                }
                *list = counters;
            }
            Err(e) => pr_warn!("CPU {} came online but cannot be sampled: error {}\n", cpu, e.to_errno()),
        }
    }

    /// A CPU is going offline: release its counters.  Its ring keeps what
    /// it holds until the next drain; the session's counts stay exact.
    fn cpu_down(&self, cpu: u32) {
        let counters = {
            let mut slot = self.sessions.lock();
            match slot.counters.get_mut(cpu as usize) {
                Some(list) => core::mem::take(list),
                None => return,
            }
        };
        drop(counters);
    }
}

impl Rprof {
    /// The owner is gone: stop and free its session.
    fn release(&self, file: usize) {
        let running = self.owned(file).is_ok_and(|s| s.phase() == Phase::Running);
        if running {
            // Only the owner stops, and the owner is in release: no race.
            let _ = self.stop(file);
        }
        let old = {
            let mut slot = self.sessions.lock();
            if self.owned(file).is_err() {
                return;
            }
            self.replace(&mut slot, 0, None)
        };
        if let Some(s) = old {
            // Outside `slot`: taking the statistics takes the drain lock.
            // SAFETY: Reads a boot-time constant.
            let nr = unsafe { helpers::rprof_nr_cpu_ids() } as usize;
            let last = Stats::of(&s, nr).ok();
            self.sessions.lock().last = last;
            drop(s);
        }
    }
}

/// `cmd` with its size field (`_IOC_SIZE`) cleared.
const fn without_size(cmd: u32) -> u32 {
    cmd & !(((1 << bindings::_IOC_SIZEBITS) - 1) << bindings::_IOC_SIZESHIFT)
}

/// One open file of `/dev/rprof`.
pub(crate) struct RprofFile {
    dev: Arc<Rprof>,
}

impl FileOps for RprofFile {
    type Context = Rprof;

    fn open(ctx: &Arc<Rprof>, _file: &File<'_>) -> Result<Self> {
        // SAFETY: `perfmon_capable()` reads the caller's credentials.
        if !unsafe { helpers::rprof_perfmon_capable() } {
            return Err(EPERM);
        }
        // The checks perf_event_open() makes for kernel data: the
        // perf_event_paranoid level and the LSM hook (docs/design.md,
        // "Security model").
        // SAFETY: Reads the caller's credentials and sysctls.
        let ret = unsafe { helpers::rprof_perf_allowed() };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(Self { dev: ctx.clone() })
    }

    fn release(&self, file: &File<'_>) {
        self.dev.release(file.id());
    }

    fn read(&self, file: &File<'_>, mut out: UserSliceWriter) -> Result<usize> {
        loop {
            // Looked up on every pass: a second SET_CONFIG (from another
            // thread) may retire the session this read was waiting on.
            let session = self.dev.owned(file.id())?;
            if let Some(n) = session.read(&mut out, file.nonblock())? {
                return Ok(n);
            }
            self.dev.waitq.wait_until(|| session.read_ready())?;
        }
    }

    fn poll(&self, file: &File<'_>, pt: *mut bindings::poll_table_struct) -> u32 {
        // The device's queue, whatever the session: it outlives the file.
        self.dev.waitq.poll_wait(file, pt);
        let (readable, error) = match self.dev.owned(file.id()) {
            Ok(s) => (s.readable(), false),
            Err(_) => (false, true),
        };
        // SAFETY: Pure function.
        unsafe { helpers::rprof_poll_mask(readable, error) }
    }

    fn ioctl(&self, file: &File<'_>, cmd: u32, arg: usize) -> Result<isize> {
        let me = file.id();
        // SET_CONFIG and GET_STATS carry their own size (`sized.rs`): their
        // request numbers match whatever size the caller's header had.
        let cmd = match without_size(cmd) {
            c if c == without_size(uapi::IOC_SET_CONFIG) => uapi::IOC_SET_CONFIG,
            c if c == without_size(uapi::IOC_GET_STATS) => uapi::IOC_GET_STATS,
            _ => cmd,
        };
        match cmd {
            uapi::IOC_GET_VERSION => {
                let mut w = crate::kapi::compat::user_slice(arg, size_of::<u32>()).writer();
                w.write(&uapi::RPROF_ABI_VERSION)?;
            }
            uapi::IOC_SET_CONFIG => self.dev.set_config(me, arg)?,
            uapi::IOC_START => self.dev.start(me)?,
            uapi::IOC_STOP => self.dev.stop(me)?,
            uapi::IOC_FLUSH => self.dev.owned(me)?.drain_in_worker(),
            uapi::IOC_GET_STATS => self.dev.stats(arg)?,
            uapi::IOC_LOOKUP_COOKIE => self.dev.lookup_cookie(me, arg)?,
            uapi::IOC_RESET_COOKIES => self.dev.owned(me)?.reset_cookies()?,
            uapi::IOC_ADD_UNWIND => {
                let req: uapi::rprof_unwind_add =
                    crate::kapi::compat::user_slice(arg, size_of::<uapi::rprof_unwind_add>()).reader().read()?;
                if req.size as usize != size_of::<uapi::rprof_unwind_add>() {
                    return Err(EINVAL);
                }
                self.dev.owned(me)?.add_unwind(req.fd, req.table as usize, req.table_bytes)?
            }
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }

    fn mmap(&self, file: &File<'_>, vma: *mut bindings::vm_area_struct) -> Result {
        // Runs under mmap_lock: take only the event buffer, never the
        // session, whose last reference must not be dropped here.
        self.dev.owned_evbuf(file.id())?.mmap(file, vma)
    }
}

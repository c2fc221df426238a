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

use crate::config::Config;
use crate::counter::Counter;
use crate::hotplug::CpusReadGuard;
use crate::miscdev::{File, FileOps};
use crate::params::Params;
use crate::session::{Phase, Session};
use crate::{helpers, uapi};
use core::mem::size_of;
use kernel::bindings;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::{UserSlice, UserSliceWriter};

/// The session slot.
///
/// Lock order: `slot` is taken under `mmap_lock` (in `mmap()`), and a
/// session's drain lock is taken before `mmap_lock` (the drain resolves
/// user addresses).  So under `slot`: no copy to or from userspace (a fault
/// takes `mmap_lock`) and no session drain lock.
///
/// # Invariants
///
/// `owner` is non-zero exactly when `session` is `Some`; `counters` (one
/// list per CPU id) is non-empty only while the session is running; while
/// `stopping`, a STOP is releasing counters outside the lock and the
/// session must not change.
struct Slot {
    owner: usize,
    session: Option<Arc<Session>>,
    counters: KVec<KVec<Counter>>,
    stopping: bool,
    /// Statistics of the last session, kept when its owner closed it, so
    /// that `rprof stat` can show them afterwards.
    last: Option<Stats>,
}

impl Slot {
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

/// A copy of a session's statistics.
struct Stats {
    total: uapi::rprof_cpu_stats,
    cpus: KVec<uapi::rprof_cpu_stats>,
    drains: u64,
    wakeups: u64,
}

impl Stats {
    /// Takes `session`'s statistics, for CPUs up to `nr`.
    fn of(session: &Session, nr: usize) -> Result<Self> {
        let mut cpus = KVec::new();
        cpus.extend_with(nr, uapi::rprof_cpu_stats::default(), GFP_KERNEL)?;
        let (total, drains, wakeups) = session.stats(&mut cpus);
        Ok(Self { total, cpus, drains, wakeups })
    }

    /// A copy of the figures of `self`, for CPUs up to `nr`.
    fn copy(&self, nr: usize) -> Result<Self> {
        let mut cpus = KVec::new();
        cpus.extend_from_slice(&self.cpus[..nr.min(self.cpus.len())], GFP_KERNEL)?;
        Ok(Self { total: self.total, cpus, drains: self.drains, wakeups: self.wakeups })
    }
}

/// Device-wide state.
#[pin_data]
pub(crate) struct Rprof {
    params: Params,
    #[pin]
    slot: Mutex<Slot>,
}

impl Rprof {
    pub(crate) fn new(params: Params) -> Result<Arc<Self>> {
        let slot = Slot { owner: 0, session: None, counters: KVec::new(), stopping: false, last: None };
        Arc::pin_init(pin_init!(Self { params, slot <- new_mutex!(slot) }), GFP_KERNEL)
    }

    fn buffer_bytes(&self) -> u64 {
        self.params.buffer_pages as u64 * bindings::PAGE_SIZE as u64
    }

    /// The session `file` owns.
    fn owned(&self, file: usize) -> Result<Arc<Session>> {
        self.slot.lock().session_of(file)
    }

    fn set_config(&self, file: usize, arg: usize) -> Result {
        // Copy from userspace before taking `slot`: a fault takes mmap_lock,
        // and mmap() takes `slot` under mmap_lock.
        let config = Config::from_user(arg, &self.params, self.buffer_bytes())?;
        let old;
        {
            let mut slot = self.slot.lock();
            if slot.owner != 0 && slot.owner != file {
                return Err(EBUSY);
            }
            if slot.stopping || slot.session.as_ref().is_some_and(|s| s.phase() == Phase::Running) {
                return Err(EBUSY);
            }
            let session = Session::new(config, self.params.buffer_pages, self.params.max_cookies)?;
            old = slot.session.replace(session);
            slot.owner = file;
        }
        // The old session's kicker may wait for its work: drop it unlocked.
        drop(old);
        Ok(())
    }

    fn start(&self, file: usize) -> Result {
        // Lock order: the CPU hotplug lock, then `slot` (as in `cpu_up`).
        let _cpus = CpusReadGuard::new();
        let mut slot = self.slot.lock();
        let session = slot.session_of(file)?;
        if slot.stopping || session.phase() == Phase::Running {
            return Err(EBUSY);
        }
        slot.counters = session.start()?;
        Ok(())
    }

    fn stop(&self, file: usize) -> Result {
        let (session, counters) = {
            let mut slot = self.slot.lock();
            let session = slot.session_of(file)?;
            if slot.stopping || session.phase() != Phase::Running {
                return Err(EINVAL);
            }
            slot.stopping = true;
            (session, core::mem::take(&mut slot.counters))
        };
        // Releasing a counter waits until its handler cannot run any more.
        drop(counters);
        session.finish();
        self.slot.lock().stopping = false;
        Ok(())
    }

    fn stats(&self, arg: usize) -> Result {
        let mut hdr = UserSlice::new(arg, size_of::<uapi::rprof_stats>()).reader();
        let size: u32 = UserSlice::new(arg, 4).reader().read()?;
        if (size as usize) < uapi::RPROF_STATS_SIZE_VER0 as usize {
            return Err(EINVAL);
        }
        let mut req: uapi::rprof_stats = hdr.read()?;
        if req.reserved.iter().any(|&r| r != 0) {
            return Err(EINVAL);
        }
        // SAFETY: Reads a boot-time constant.
        let nr = unsafe { helpers::rprof_nr_cpu_ids() };
        let want = if req.cpus != 0 { req.nr_cpus.min(nr) as usize } else { 0 };
        // The current session's figures, else the last one's.  The
        // session's are taken outside `slot` (its drain lock is ordered
        // before mmap_lock, which is ordered before `slot`), and nothing is
        // copied to userspace under either.
        let (session, last) = {
            let slot = self.slot.lock();
            let last = match (&slot.session, &slot.last) {
                (None, Some(last)) => Some(last.copy(want)?),
                _ => None,
            };
            (slot.session.clone(), last)
        };
        let stats = match session {
            Some(s) => Some(Stats::of(&s, want)?),
            None => last,
        };
        req.size = size_of::<uapi::rprof_stats>() as u32;
        req.nr_cpus = nr;
        if let Some(st) = stats {
            let mut w = UserSlice::new(req.cpus as usize, want * size_of::<uapi::rprof_cpu_stats>()).writer();
            for c in st.cpus.iter() {
                w.write(c)?;
            }
            req.drains = st.drains;
            req.wakeups = st.wakeups;
            req.total = st.total;
        } else {
            req.drains = 0;
            req.wakeups = 0;
            req.total = Default::default();
        }
        UserSlice::new(arg, size_of::<uapi::rprof_stats>()).writer().write(&req)?;
        Ok(())
    }

    /// `LOOKUP_COOKIE`: the name of a cookie of `file`'s session.
    fn lookup_cookie(&self, file: usize, arg: usize) -> Result {
        let size = size_of::<uapi::rprof_cookie_lookup>();
        let mut req: uapi::rprof_cookie_lookup = UserSlice::new(arg, size).reader().read()?;
        let session = self.owned(file)?;
        let (name, flags, dev, ino) = session.lookup_cookie(req.cookie)?;
        let need = name.len() + 1;
        let fits = need <= req.path_len as usize;
        req.path_len = need as u32;
        req.flags = flags;
        req.dev = dev;
        req.ino = ino;
        if fits {
            let mut w = UserSlice::new(req.path as usize, need).writer();
            w.write_slice(&name)?;
            w.write_slice(&[0])?;
        }
        UserSlice::new(arg, size).writer().write(&req)?;
        if fits {
            Ok(())
        } else {
            Err(Error::from_errno(-(bindings::ENAMETOOLONG as i32)))
        }
    }

    /// A kernel module is going: the session resolves its samples first.
    pub(crate) fn module_going(&self, id: usize) {
        let session = self.slot.lock().session.clone();
        if let Some(s) = session {
            s.module_going(id);
        }
    }

    /// A CPU came online: a running session samples it too.
    pub(crate) fn cpu_up(&self, cpu: u32) {
        let mut slot = self.slot.lock();
        let Some(session) = slot.session.clone() else { return };
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
    pub(crate) fn cpu_down(&self, cpu: u32) {
        let counters = {
            let mut slot = self.slot.lock();
            match slot.counters.get_mut(cpu as usize) {
                Some(list) => core::mem::take(list),
                None => return,
            }
        };
        drop(counters);
    }

    /// The owner is gone: stop and free its session.
    fn release(&self, file: usize) {
        let running = {
            let slot = self.slot.lock();
            slot.owner == file && slot.session.as_ref().is_some_and(|s| s.phase() == Phase::Running)
        };
        if running {
            // Only the owner stops, and the owner is in release: no race.
            let _ = self.stop(file);
        }
        let old = {
            let mut slot = self.slot.lock();
            if slot.owner != file {
                return;
            }
            slot.owner = 0;
            slot.session.take()
        };
        if let Some(s) = old {
            // Outside `slot`: taking the statistics takes the drain lock.
            // SAFETY: Reads a boot-time constant.
            let nr = unsafe { helpers::rprof_nr_cpu_ids() } as usize;
            let last = Stats::of(&s, nr).ok();
            self.slot.lock().last = last;
            drop(s);
        }
    }
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
        Ok(Self { dev: ctx.clone() })
    }

    fn release(&self, file: &File<'_>) {
        self.dev.release(file.id());
    }

    fn read(&self, file: &File<'_>, mut out: UserSliceWriter) -> Result<usize> {
        let session = self.dev.owned(file.id())?;
        session.read(&mut out, file.nonblock())
    }

    fn poll(&self, file: &File<'_>, pt: *mut bindings::poll_table_struct) -> u32 {
        let (readable, error) = match self.dev.owned(file.id()) {
            Ok(s) => {
                s.waitq().poll_wait(file, pt);
                (s.readable(), false)
            }
            Err(_) => (false, true),
        };
        // SAFETY: Pure function.
        unsafe { helpers::rprof_poll_mask(readable, error) }
    }

    fn ioctl(&self, file: &File<'_>, cmd: u32, arg: usize) -> Result<isize> {
        let me = file.id();
        match cmd {
            uapi::IOC_GET_VERSION => {
                let mut w = UserSlice::new(arg, size_of::<u32>()).writer();
                w.write(&uapi::RPROF_ABI_VERSION)?;
            }
            uapi::IOC_SET_CONFIG => self.dev.set_config(me, arg)?,
            uapi::IOC_START => self.dev.start(me)?,
            uapi::IOC_STOP => self.dev.stop(me)?,
            uapi::IOC_FLUSH => self.dev.owned(me)?.drain_now(),
            uapi::IOC_GET_STATS => self.dev.stats(arg)?,
            uapi::IOC_LOOKUP_COOKIE => self.dev.lookup_cookie(me, arg)?,
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }

    fn mmap(&self, file: &File<'_>, vma: *mut bindings::vm_area_struct) -> Result {
        self.dev.owned(file.id())?.evbuf().mmap(file, vma)
    }
}

//! Regression checks for what a hostile but privileged user did to the
//! module (issue 9): each reproduces one crash or lock inversion of the
//! past, and must end with the module still serving a normal session.
//! The guest's console is checked by the harness, so an oops, a KASAN
//! report or a lockdep splat fails the run even when the check itself
//! would have said `ok`.
//!
//! - `hostile-tail`: `read()` after userspace wrote nonsense to
//!   `data_tail` and `data_head` on the control page (was: a page fault in
//!   `RprofFile::read`).
//! - `epoll-reconfig`: epoll and `poll()`/`read()` sleepers across a second
//!   SET_CONFIG (was: a use-after-free of the session's wait queue).
//! - `stats-size`: GET_STATS's size convention (unknown trailing bytes must
//!   be zero, as SET_CONFIG's).
//! - `perf-beside`: a perf_event user and an rprof session side by side
//!   (was: the lock cycle `mmap_lock` -> rprof's slot -> perf's
//!   `ctx->mutex` -> `mmap_lock`, reported by lockdep).

use crate::checks::{error_name, good_config, open, run_session, set_nonblocking, Outcome};
use crate::mapping::{page_size, Map, DATA_HEAD, DATA_TAIL};
use crate::same_stream::{busy_for, map_buffer};
use rprof::Device;
use rprof_abi::{RPROF_IOC_GET_STATS, RPROF_STATS_SIZE, RPROF_STATS_SIZE_VER0};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A session with some records in the buffer, stopped and flushed: the
/// control page and data area mapped.
fn session_with_data(dev: &Device) -> Result<(Map, Map, usize), String> {
    dev.set_config(&good_config())
        .map_err(|e| format!("SET_CONFIG failed with {}", error_name(&e)))?;
    let maps = map_buffer(dev)?;
    dev.start()
        .map_err(|e| format!("START failed with {}", error_name(&e)))?;
    busy_for(Duration::from_millis(100));
    dev.stop()
        .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;
    Ok(maps)
}

/// `read()` with a buffer of `len` bytes: the byte count or the errno.
fn read_errno(dev: &Device, len: usize) -> Result<usize, i32> {
    let mut buf = vec![0u8; len];
    dev.read(&mut buf)
        .map_err(|e| e.raw_os_error().unwrap_or(-1))
}

/// Runs `hostile-tail`.
pub fn hostile_tail() -> Outcome {
    let dev = open()?;
    set_nonblocking(&dev)?;
    let (ctrl, data, size) = session_with_data(&dev)?;
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let head = ctrl.load_u64(DATA_HEAD).map_err(|e| io("data_head", e))?;
    let tail = ctrl.load_u64(DATA_TAIL).map_err(|e| io("data_tail", e))?;
    if head == tail || head < 64 {
        return Err(format!(
            "expected a session with records, got data_head {head}, data_tail {tail}"
        ));
    }
    let size = size as u64;
    // Tails the kernel must refuse: the one that oopsed, unaligned, ahead
    // of the head, more than a buffer behind it.
    let bad = [
        ("0xfffffffffffffffc", 0xffff_ffff_ffff_fffc_u64),
        // Aligned, and `head - tail` wraps to at most the buffer size: the
        // one that passed a wrapping check and overflowed later.
        ("0xfffffffffffffff8", 0xffff_ffff_ffff_fff8_u64),
        ("unaligned", tail + 4),
        ("ahead of data_head", head + 8),
        ("u64::MAX", u64::MAX),
        ("more than a buffer behind", head.wrapping_sub(size + 8)),
    ];
    for (name, t) in bad {
        ctrl.store_u64(DATA_TAIL, t)
            .map_err(|e| io("writing data_tail", e))?;
        match read_errno(&dev, 4096) {
            Err(libc::EINVAL) => {}
            other => {
                return Err(format!(
                    "data_tail {name} ({t:#x}): expected read() to fail with EINVAL, got {other:?}"
                ))
            }
        }
    }
    // data_head is the kernel's to write: a reader's scribbles on it must
    // change nothing the kernel does.
    ctrl.store_u64(DATA_TAIL, tail)
        .map_err(|e| io("writing data_tail", e))?;
    ctrl.store_u64(DATA_HEAD, u64::MAX - 7)
        .map_err(|e| io("writing data_head", e))?;
    let mut total = 0u64;
    loop {
        match read_errno(&dev, 65536) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(libc::EAGAIN) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => {
                return Err(format!(
                    "after restoring data_tail and scribbling on data_head: expected \
                     read() to return the stream, got errno {e} after {total} bytes"
                ))
            }
        }
    }
    let end = ctrl.load_u64(DATA_TAIL).map_err(|e| io("data_tail", e))?;
    if total < head - tail || end < head {
        return Err(format!(
            "expected read() to return at least the {} bytes published before, got {total} \
             (data_tail now {end})",
            head - tail
        ));
    }
    // The mappings hold the file open: unmap first, so that closing it
    // releases the session.
    drop((ctrl, data));
    drop(dev);
    run_session(&open()?, &good_config()).map_err(|e| format!("afterwards, {e}"))?;
    Ok(format!(
        "6 hostile data_tail values refused with EINVAL, a scribbled data_head ignored, \
         {total} bytes read afterwards, a new session works"
    ))
}

/// An epoll instance.
struct Epoll(i32);

impl Epoll {
    fn new() -> Result<Self, String> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "epoll_create1: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Self(fd))
    }

    fn ctl(&self, op: i32, fd: i32) -> Result<(), String> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: 0,
        };
        // SAFETY: `ev` is a valid epoll_event for the call.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) } != 0 {
            return Err(format!(
                "epoll_ctl({op}): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Waits up to `ms`; the number of ready events.
    fn wait(&self, ms: i32) -> i32 {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: `ev` has room for 4 events.
        unsafe { libc::epoll_wait(self.0, ev.as_mut_ptr(), 4, ms) }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: our own fd.
        unsafe { libc::close(self.0) };
    }
}

/// Runs `epoll-reconfig`.
pub fn epoll_reconfig() -> Outcome {
    let set = |dev: &Device, what: &str| {
        dev.set_config(&good_config())
            .map_err(|e| format!("{what}: SET_CONFIG failed with {}", error_name(&e)))
    };
    // 1. The sequence that freed the wait queue under epoll's feet.
    let dev = open()?;
    let ep = Epoll::new()?;
    set(&dev, "first")?;
    ep.ctl(libc::EPOLL_CTL_ADD, dev.as_raw_fd())?;
    set(&dev, "second")?;
    ep.wait(10);
    ep.ctl(libc::EPOLL_CTL_DEL, dev.as_raw_fd())?;
    // And with the registration left in place until close.
    ep.ctl(libc::EPOLL_CTL_ADD, dev.as_raw_fd())?;
    set(&dev, "third")?;
    drop(dev);
    ep.wait(10);
    drop(ep);

    // 2. poll() and a blocking read() asleep in other threads while the
    // owner replaces the session; the read must then serve the new one.
    let dev = Arc::new(open()?);
    set(&dev, "before the sleepers")?;
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (dev, stop) = (dev.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = dev.poll(Duration::from_millis(200));
            }
        })
    };
    let reader = {
        let dev = dev.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            dev.read(&mut buf).map_err(|e| error_name(&e))
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..5 {
        set(&dev, &format!("replacement {i} under the sleepers"))?;
        std::thread::sleep(Duration::from_millis(50));
    }
    if reader.is_finished() {
        return Err(
            "expected the blocked read() to keep waiting across SET_CONFIG, it returned".into(),
        );
    }
    // The read sleeps on the newest session: data there must wake it.
    dev.start()
        .map_err(|e| format!("START failed with {}", error_name(&e)))?;
    busy_for(Duration::from_millis(100));
    dev.stop()
        .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !reader.is_finished() {
        return Err("expected the blocked read() to return the new session's records, it still sleeps after 10 s".into());
    }
    let got = reader
        .join()
        .map_err(|_| "the reader thread panicked".to_string())?
        .map_err(|e| format!("expected the blocked read() to return records, got {e}"))?;
    stop.store(true, Ordering::Relaxed);
    poller
        .join()
        .map_err(|_| "the poller thread panicked".to_string())?;
    drop(dev);
    run_session(&open()?, &good_config()).map_err(|e| format!("afterwards, {e}"))?;
    Ok(format!(
        "epoll ADD/SET_CONFIG/DEL and ADD/SET_CONFIG/close; poll and read asleep across 5 \
         SET_CONFIGs, the read then got {got} bytes of the new session; a new session works"
    ))
}

/// The first published layout of `struct perf_event_attr`
/// (`PERF_ATTR_SIZE_VER0`, 64 bytes); the libc crate has none.
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) type_: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    /// `sample_period`, or `sample_freq` with the `freq` flag.
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_events: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
}

pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;

/// `perf_event_open` of a CPU-wide software cpu-clock counter on CPU 0, as
/// `perf record -a` opens them: its context is the CPU's, whose mutex
/// (lockdep class `cpuctx_mutex`) is the one rprof's counters take too.
fn perf_open() -> Result<i32, String> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 100_000,
        sample_type: PERF_SAMPLE_IP | PERF_SAMPLE_TID,
        ..Default::default()
    };
    // SAFETY: a valid VER0 attr for the syscall: every task, CPU 0.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1,
            0,
            -1,
            0,
        )
    };
    if fd < 0 {
        return Err(format!(
            "perf_event_open: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(fd as i32)
}

/// One round of a perf_event user: open, mmap its ring, PERF_EVENT_IOC_ID
/// into a fresh page (perf copies to userspace under its `ctx->mutex`),
/// read the count, close.
fn perf_round() -> Result<(), String> {
    const PERF_EVENT_IOC_ID: libc::c_ulong = 0x8008_2407;
    let fd = perf_open()?;
    let page = page_size()?;
    let ring = Map::new(fd, 2 * page, libc::PROT_READ | libc::PROT_WRITE, 0)
        .map_err(|e| format!("mmap of the perf ring: {e}"))?;
    // SAFETY: a fresh private anonymous page, never touched: the ioctl's
    // copy to it faults it in.
    let fresh = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if fresh == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fresh` is 8 writable bytes (a page).
    let ret = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ID, fresh) };
    let mut count = [0u8; 8];
    // SAFETY: `count` has 8 bytes.
    let n = unsafe { libc::read(fd, count.as_mut_ptr().cast(), 8) };
    // SAFETY: our own mapping and fd.
    unsafe {
        libc::munmap(fresh, page);
        libc::close(fd);
    }
    drop(ring);
    if ret != 0 || n != 8 {
        return Err(format!(
            "perf ioctl/read: {ret}/{n}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Runs `perf-beside`: `rounds` of rprof sessions (SET_CONFIG, mmap, START,
/// STOP, read) while another thread uses perf_event the same way.
pub fn perf_beside(rounds: u32) -> Outcome {
    perf_round()?;
    let stop = Arc::new(AtomicBool::new(false));
    let perf = {
        let stop = stop.clone();
        std::thread::spawn(move || -> Result<u32, String> {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                perf_round()?;
                n += 1;
            }
            Ok(n)
        })
    };
    let mut bytes = 0usize;
    for _ in 0..rounds {
        let dev = open()?;
        let _maps = session_with_data(&dev)?;
        dev.flush()
            .map_err(|e| format!("FLUSH failed with {}", error_name(&e)))?;
        let mut buf = vec![0u8; 65536];
        set_nonblocking(&dev)?;
        bytes += dev.read(&mut buf).unwrap_or(0);
    }
    stop.store(true, Ordering::Relaxed);
    let n = perf
        .join()
        .map_err(|_| "the perf thread panicked".to_string())??;
    Ok(format!(
        "{rounds} rprof sessions (mmap, START, STOP, read {bytes} bytes) beside {n} rounds of a \
         perf_event user (mmap, PERF_EVENT_IOC_ID, read)"
    ))
}

/// GET_STATS with the structure's `size` set to `size` and `tail` written
/// after the known structure; the errno, or 0.
fn stats_with_size(dev: &Device, size: u32, tail: u8) -> i32 {
    // 4 KiB + 8 of zeroed u64s: room for any size tried below.
    let mut buf = vec![0u64; 4096 / 8 + 2];
    let known = RPROF_STATS_SIZE as usize;
    // SAFETY: `buf` is 4112 bytes, 8-aligned; viewed as bytes only here.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len() * 8) };
    bytes[..4].copy_from_slice(&size.to_ne_bytes());
    bytes[known] = tail;
    // The request number a caller built against a header with a
    // `size`-byte structure would use: _IOC_SIZE is part of it.
    let req = with_ioc_size(RPROF_IOC_GET_STATS, size);
    // SAFETY: GET_STATS reads and writes at most max(size, sizeof) bytes
    // at its argument (cpus = 0: no per-CPU array), fewer than `buf` has.
    match unsafe { dev.ioctl_raw(req, buf.as_mut_ptr().cast()) } {
        Ok(_) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

/// Runs `stats-size`: the size convention of GET_STATS.
pub fn stats_size() -> Outcome {
    let dev = open()?;
    let known = RPROF_STATS_SIZE;
    let cases = [
        ("the known size", known, 0, 0),
        ("8 more bytes, zero", known + 8, 0, 0),
        ("8 more bytes, not zero", known + 8, 1, libc::E2BIG),
        ("4097 bytes", 4097, 0, libc::E2BIG),
        (
            "smaller than the first published size",
            RPROF_STATS_SIZE_VER0 - 8,
            0,
            libc::EINVAL,
        ),
    ];
    for (what, size, tail, want) in cases {
        let got = stats_with_size(&dev, size, tail);
        if got != want {
            return Err(format!(
                "GET_STATS with {what} (size {size}): expected {}, got {}",
                errno_name_or_ok(want),
                errno_name_or_ok(got)
            ));
        }
    }
    Ok(
        "GET_STATS (request numbers of each size): known and larger zero-padded sizes \
        accepted; non-zero unknown bytes and sizes above 4096 E2BIG; sizes below the first \
        published one EINVAL"
            .into(),
    )
}

/// Runs `eof-after-stop`: in `rounds` sessions, a reader blocked in
/// `read()` while the owner stops must see every record, STOP last,
/// before end-of-file.
pub fn eof_after_stop(rounds: u32) -> Outcome {
    use rprof_abi::{RPROF_RECORD_START, RPROF_RECORD_STOP};
    let mut total = 0u64;
    for round in 0..rounds {
        let dev = Arc::new(open()?);
        dev.set_config(&good_config())
            .map_err(|e| format!("SET_CONFIG failed with {}", error_name(&e)))?;
        let reader = {
            let dev = dev.clone();
            std::thread::spawn(move || -> Result<(u64, u16, u64), String> {
                let mut buf = vec![0u8; 1 << 16];
                let (mut bytes, mut last, mut starts) = (0u64, 0u16, 0u64);
                loop {
                    let n = dev.read(&mut buf).map_err(|e| error_name(&e))?;
                    if n == 0 {
                        return Ok((bytes, last, starts));
                    }
                    let mut off = 0;
                    while off + 8 <= n {
                        let ty = u16::from_ne_bytes([buf[off], buf[off + 1]]);
                        let size = u32::from_ne_bytes([
                            buf[off + 4],
                            buf[off + 5],
                            buf[off + 6],
                            buf[off + 7],
                        ]) as usize;
                        if size < 8 {
                            return Err(format!(
                                "record of size {size} at byte {}",
                                bytes + off as u64
                            ));
                        }
                        starts += u64::from(u32::from(ty) == RPROF_RECORD_START);
                        last = ty;
                        off += size;
                    }
                    bytes += n as u64;
                }
            })
        };
        dev.start()
            .map_err(|e| format!("START failed with {}", error_name(&e)))?;
        busy_for(Duration::from_millis(20 + 10 * u64::from(round % 5)));
        dev.stop()
            .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;
        let (bytes, last, starts) = reader
            .join()
            .map_err(|_| "the reader thread panicked".to_string())?
            .map_err(|e| format!("round {round}: the reader failed: {e}"))?;
        if u32::from(last) != RPROF_RECORD_STOP || starts != 1 {
            return Err(format!(
                "round {round}: expected end-of-file right after the STOP record of the one run, \
                 got it after a record of type {last} ({starts} START records, {bytes} bytes)"
            ));
        }
        total += bytes;
    }
    Ok(format!(
        "{rounds} sessions: a blocked reader got every record, STOP last, before end-of-file \
         ({total} bytes in all)"
    ))
}

/// `req` with its `_IOC_SIZE` field set to `size` (14 bits; larger sizes
/// keep the field's maximum).
fn with_ioc_size(req: u32, size: u32) -> u32 {
    const MASK: u32 = (1 << 14) - 1;
    (req & !(MASK << 16)) | (size.min(MASK) << 16)
}

fn errno_name_or_ok(e: i32) -> String {
    if e == 0 {
        "success".into()
    } else {
        rprof::errno::errno_name(e)
    }
}

//! `mmap-hardening`: the mapping rules of the event buffer.
//!
//! The control page (offset 0, exactly one page) may be mapped read-write
//! but never executable; the data area (offset one page, exactly
//! `data_size` bytes) only read-only, and can never be made writable or
//! executable later (the module clears VM_MAYWRITE and VM_MAYEXEC) nor
//! grown (VM_DONTEXPAND).  Each rule is checked on a configured session and
//! again once it has run and stopped, together with the control page's
//! fixed fields, a partial munmap, a fork and closing the file under live
//! mappings.  The first violation is reported.  Finally a new file runs a
//! good session: the module survived all of it and released the old one.

use crate::checks::{
    error_name, expect_errno, good_config, open, run_session, wait_child, wait_status_text, Outcome,
};
use crate::mapping::{page_size, Map, DATA_HEAD};
use crate::same_stream::{busy_session, map_buffer};
use rprof::errno::{errno_name, io_error_name};
use rprof::Device;
use rprof_abi::{rprof_mmap_page, RPROF_ABI_VERSION, RPROF_RECORD_START};
use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

const R: i32 = libc::PROT_READ;
const RW: i32 = libc::PROT_READ | libc::PROT_WRITE;
const RX: i32 = libc::PROT_READ | libc::PROT_EXEC;

/// What the checks of one phase of the session need.
struct Ctx {
    fd: RawFd,
    page: usize,
    data_size: usize,
    /// `configured` or `stopped`, for the messages.
    phase: &'static str,
}

impl Ctx {
    fn map(&self, len: usize, prot: i32, offset: usize) -> std::io::Result<Map> {
        Map::new(self.fd, len, prot, offset)
    }

    /// `what` (a mapping attempt) failed with one of `expected`.
    fn refused(&self, what: &str, result: std::io::Result<Map>, expected: &[i32]) -> Outcome {
        // A mapping that unexpectedly succeeded is dropped (unmapped) here.
        let errno = expect_errno(&format!("{}: {what}", self.phase), result, expected)?;
        Ok(errno_name(errno))
    }

    /// A mapping that must succeed.
    fn mapped(&self, what: &str, len: usize, prot: i32, offset: usize) -> Result<Map, String> {
        self.map(len, prot, offset).map_err(|e| {
            format!(
                "{}: {what}: expected the mapping to succeed, got {}",
                self.phase,
                io_error_name(&e)
            )
        })
    }

    fn data_ro(&self) -> Result<Map, String> {
        self.mapped("data area read-only", self.data_size, R, self.page)
    }

    fn ctrl_rw(&self) -> Result<Map, String> {
        self.mapped("control page read-write", self.page, RW, 0)
    }

    /// An access to a mapping that must work.
    fn io<T>(&self, what: &str, r: std::io::Result<T>) -> Result<T, String> {
        r.map_err(|e| {
            format!(
                "{}: {what}: expected success, got {}",
                self.phase,
                io_error_name(&e)
            )
        })
    }
}

/// The protections and geometries that must be refused.
fn check_refusals(c: &Ctx) -> Result<(), String> {
    let (page, size) = (c.page, c.data_size);
    c.refused(
        "data area mapped PROT_READ|PROT_WRITE",
        c.map(size, RW, page),
        &[libc::EPERM],
    )?;
    c.refused(
        "data area mapped PROT_READ|PROT_EXEC",
        c.map(size, RX, page),
        &[libc::EPERM],
    )?;
    c.refused(
        "control page mapped PROT_READ|PROT_EXEC",
        c.map(page, RX, 0),
        &[libc::EPERM],
    )?;
    c.refused(
        "data area mapped with length data_size + one page",
        c.map(size + page, R, page),
        &[libc::EINVAL],
    )?;
    c.refused(
        "data area mapped at offset 2 pages",
        c.map(size, R, 2 * page),
        &[libc::EINVAL],
    )?;
    c.refused(
        "control page mapped with length 2 pages",
        c.map(2 * page, RW, 0),
        &[libc::EINVAL],
    )?;
    // A private copy of the control page would swallow data_tail.
    c.refused(
        "control page mapped MAP_PRIVATE",
        Map::with_flags(c.fd, page, RW, libc::MAP_PRIVATE, 0),
        &[libc::EINVAL],
    )?;
    c.refused(
        "data area mapped MAP_PRIVATE",
        Map::with_flags(c.fd, size, R, libc::MAP_PRIVATE, page),
        &[libc::EINVAL],
    )?;
    Ok(())
}

/// mprotect and mremap of a read-only data mapping.
fn check_mprotect_mremap(c: &Ctx) -> Result<String, String> {
    let mut data = c.data_ro()?;
    expect_errno(
        &format!(
            "{}: mprotect(PROT_READ|PROT_WRITE) of the data area",
            c.phase
        ),
        data.mprotect(RW),
        &[libc::EACCES],
    )?;
    expect_errno(
        &format!(
            "{}: mprotect(PROT_READ|PROT_EXEC) of the data area",
            c.phase
        ),
        data.mprotect(RX),
        &[libc::EACCES],
    )?;
    c.io(
        "reading the data area after the refused mprotects",
        data.read_bytes(0, 8),
    )?;
    let mremap = match data.mremap(c.data_size + c.page) {
        Ok(()) => {
            return Err(format!(
                "{}: mremap of the data area to data_size + one page (MREMAP_MAYMOVE): \
                 expected failure, got success",
                c.phase
            ))
        }
        Err(e) => io_error_name(&e),
    };
    c.io(
        "reading the data area after the refused mremap",
        data.read_bytes(0, 8),
    )?;
    c.io("munmap of the data area", data.unmap())?;
    Ok(mremap)
}

/// munmap of the data mapping's last page keeps the first readable.
fn check_partial_munmap(c: &Ctx, expect_start: bool) -> Result<String, String> {
    if c.data_size < 2 * c.page {
        return Ok("partial munmap skipped (one data page)".into());
    }
    let mut data = c.data_ro()?;
    c.io(
        "munmap of the last page of the data area",
        data.unmap_tail(c.page),
    )?;
    let first = c.io(
        "reading the first page after munmap of the last",
        data.read_bytes(0, c.page),
    )?;
    if expect_start {
        // Nothing consumed the stream: it starts at offset 0 with START.
        let ty = u16::from_ne_bytes([first[0], first[1]]);
        if u32::from(ty) != RPROF_RECORD_START {
            return Err(format!(
                "{}: expected the first record in the data area to be START \
                 ({RPROF_RECORD_START}), got type {ty}",
                c.phase
            ));
        }
    }
    c.io("munmap of the rest of the data area", data.unmap())?;
    Ok("partial munmap ok".into())
}

/// The control page's fixed fields and reserved space.
fn check_control_page(c: &Ctx) -> Result<(), String> {
    let ctrl = c.ctrl_rw()?;
    let bytes = c.io("reading the control page", ctrl.read_bytes(0, c.page))?;
    let u64_at = |off: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[off..off + 8]);
        u64::from_ne_bytes(b)
    };
    let version = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let fail = |what: String| Err(format!("{}: control page: expected {what}", c.phase));
    if version != RPROF_ABI_VERSION {
        return fail(format!("version {RPROF_ABI_VERSION}, got {version}"));
    }
    let data_offset = u64_at(offset_of!(rprof_mmap_page, data_offset));
    if data_offset != c.page as u64 {
        return fail(format!(
            "data_offset {} (the page size), got {data_offset}",
            c.page
        ));
    }
    let data_size = u64_at(offset_of!(rprof_mmap_page, data_size));
    if !data_size.is_power_of_two() || data_size != c.data_size as u64 {
        return fail(format!(
            "data_size a power of two equal to {}, got {data_size}",
            c.data_size
        ));
    }
    let reserved = [
        ("reserved0", offset_of!(rprof_mmap_page, reserved0), 4),
        ("reserved1", offset_of!(rprof_mmap_page, reserved1), 13 * 8),
        ("reserved2", offset_of!(rprof_mmap_page, reserved2), 7 * 8),
        ("reserved3", offset_of!(rprof_mmap_page, reserved3), 7 * 8),
        (
            "the rest of the page",
            size_of::<rprof_mmap_page>(),
            c.page - size_of::<rprof_mmap_page>(),
        ),
    ];
    for (name, off, len) in reserved {
        if let Some(i) = bytes[off..off + len].iter().position(|&b| b != 0) {
            return fail(format!(
                "{name} to read zero, got {:#04x} at byte {} of the page",
                bytes[off + i],
                off + i
            ));
        }
    }
    c.io("munmap of the control page", ctrl.unmap())
}

/// A forked child reads the mappings it inherited.
fn check_fork(c: &Ctx) -> Result<(), String> {
    let ctrl = c.ctrl_rw()?;
    let data = c.data_ro()?;
    let head = c.io("reading data_head", ctrl.load_u64(DATA_HEAD))?;
    let first = c.io("reading the data area", data.load_u64(0))?;
    // SAFETY: rprof-e2e starts no threads, so the child is a full copy of
    // a single-threaded process; it only loads from memory it inherited
    // (no allocation, no locks) and leaves with _exit, skipping the
    // parent's destructors and atexit handlers.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!(
            "{}: fork failed with {}",
            c.phase,
            io_error_name(&std::io::Error::last_os_error())
        ));
    }
    if pid == 0 {
        let code = match (ctrl.load_u64(DATA_HEAD), data.load_u64(0)) {
            (Ok(h), Ok(f)) if h == head && f == first => 0,
            (Ok(_), Ok(_)) => 2,
            _ => 3,
        };
        // SAFETY: _exit ends the child at once; it has no preconditions.
        unsafe { libc::_exit(code) };
    }
    let status = wait_child(pid)
        .map_err(|e| format!("{}: waitpid failed with {}", c.phase, io_error_name(&e)))?;
    let got = match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => return Ok(()),
        (true, 2) => "exit status 2 (it read other values than the parent)".to_string(),
        _ => wait_status_text(status),
    };
    Err(format!(
        "{}: expected a forked child to read data_head {head} and the data area through \
         the inherited mappings and exit 0, got {got}",
        c.phase
    ))
}

/// All the checks of one phase.
fn check_phase(c: &Ctx, expect_start: bool) -> Result<String, String> {
    check_refusals(c)?;
    let mremap = check_mprotect_mremap(c)?;
    let partial = check_partial_munmap(c, expect_start)?;
    check_control_page(c)?;
    check_fork(c)?;
    Ok(format!("mremap refused with {mremap}, {partial}"))
}

/// Closes the file under live mappings; they must stay readable and unmap
/// cleanly.
fn check_close(dev: Device) -> Result<(), String> {
    let (ctrl, data, _) = map_buffer(&dev)?;
    let io = |what: &str, e: std::io::Error| {
        format!(
            "after close: {what}: expected success, got {}",
            io_error_name(&e)
        )
    };
    let head = ctrl
        .load_u64(DATA_HEAD)
        .map_err(|e| io("reading data_head", e))?;
    drop(dev);
    let again = ctrl
        .load_u64(DATA_HEAD)
        .map_err(|e| io("reading data_head with the file closed", e))?;
    if again != head {
        return Err(format!(
            "expected data_head {head} to stay after closing the file, got {again}"
        ));
    }
    data.read_bytes(0, 8)
        .map_err(|e| io("reading the data area with the file closed", e))?;
    ctrl.unmap()
        .map_err(|e| io("munmap of the control page", e))?;
    data.unmap().map_err(|e| io("munmap of the data area", e))?;
    Ok(())
}

/// Runs `mmap-hardening`.
pub fn run() -> Outcome {
    let page = page_size()?;
    let dev = open()?;
    expect_errno(
        "mmap of the control page before SET_CONFIG",
        Map::new(dev.as_raw_fd(), page, RW, 0),
        &[libc::EINVAL],
    )?;
    dev.set_config(&good_config())
        .map_err(|e| format!("expected SET_CONFIG to succeed, got {}", error_name(&e)))?;
    {
        let other = open()?;
        expect_errno(
            "mmap of the control page by a file that does not own the session",
            Map::new(other.as_raw_fd(), page, RW, 0),
            &[libc::EBUSY],
        )?;
    }
    let data_size = {
        let (_ctrl, _data, size) = map_buffer(&dev)?;
        size
    };
    let mut ctx = Ctx {
        fd: dev.as_raw_fd(),
        page,
        data_size,
        phase: "configured",
    };
    let configured = check_phase(&ctx, false)?;

    busy_session(&dev, Duration::from_millis(50))?;
    ctx.phase = "stopped";
    check_phase(&ctx, true)?;

    check_close(dev)?;
    // The closed file's session went with its last mapping: a new file
    // can configure one.
    let dev = open()?;
    run_session(&dev, &good_config())
        .map_err(|e| format!("after the mmap checks and closing the file, {e}"))?;
    Ok(format!(
        "data area {data_size} bytes: RW/RX maps EPERM, control RX EPERM, bad lengths, \
         offsets and MAP_PRIVATE EINVAL, mprotect to W/X EACCES, {configured}, control page fields ok, \
         fork child reads the mappings, configured and stopped; mappings outlive close; \
         a new session works"
    ))
}

//! The checks other than `bad-config`, and helpers shared by all.
//!
//! A check returns `Ok(message)` when the module behaved as expected and
//! `Err(message)` saying what was expected and what happened otherwise.

use rprof::device::DEFAULT_PATH;
use rprof::errno::{errno_name, io_error_name};
use rprof::events::{EventDisplay, EventSpec, SessionOptions};
use rprof::{Device, Error};
use rprof_abi::*;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::Duration;

/// What a check reports.
pub type Outcome = Result<String, String>;

/// `a / b`, or `None` for `b` = 0.
pub fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// Opens the device, or says why not.
pub fn open() -> Result<Device, String> {
    Device::open(DEFAULT_PATH).map_err(|e| e.to_string())
}

/// The errno of `e`, named.
pub fn error_name(e: &Error) -> String {
    match e.raw_os_error() {
        Some(errno) => errno_name(errno),
        None => e.to_string(),
    }
}

/// A configuration the module must accept: cpu-clock at 1000 Hz.
pub fn good_config() -> rprof_config {
    SessionOptions::default()
        .to_config()
        .unwrap_or_else(|e| unreachable!("the default configuration is valid: {e}"))
}

/// SET_CONFIG with `config`, START, a short wait, STOP; says which step
/// failed and how.
pub fn run_session(dev: &Device, config: &rprof_config) -> Result<(), String> {
    dev.set_config(config).map_err(|e| {
        format!(
            "SET_CONFIG of a good configuration failed with {}",
            error_name(&e)
        )
    })?;
    dev.start()
        .map_err(|e| format!("START failed with {}", error_name(&e)))?;
    std::thread::sleep(Duration::from_millis(50));
    dev.stop()
        .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;
    Ok(())
}

/// Puts the device file in non-blocking mode (`O_NONBLOCK`).
pub fn set_nonblocking(dev: &Device) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let fd = dev.as_raw_fd();
    // SAFETY: fcntl on our own open descriptor with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: As above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err("fcntl(O_NONBLOCK) failed".into());
    }
    Ok(())
}

/// Checks that `result` failed with one of `expected`; returns its errno.
pub fn expect_errno<T>(what: &str, result: io::Result<T>, expected: &[i32]) -> Result<i32, String> {
    let names: Vec<String> = expected.iter().map(|&e| errno_name(e)).collect();
    let names = names.join(" or ");
    match result {
        Ok(_) => Err(format!("{what}: expected {names}, got success")),
        Err(e) => match e.raw_os_error() {
            Some(errno) if expected.contains(&errno) => Ok(errno),
            _ => Err(format!(
                "{what}: expected {names}, got {}",
                io_error_name(&e)
            )),
        },
    }
}

/// Waits for child `pid` (retrying on EINTR) and returns its wait status.
pub fn wait_child(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid c_int.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// A wait status that is not `exit 0`, in words: `exit status 3`, `death
/// by signal 9`.
pub fn wait_status_text(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("death by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

/// `open-as-uid`: drops root, then opens the device.
pub fn open_as_uid(uid: u32, expect_ok: bool) -> Outcome {
    become_uid(uid)?;
    match (Device::open(DEFAULT_PATH), expect_ok) {
        (Err(e), false) if e.raw_os_error() == Some(libc::EPERM) => {
            Ok(format!("open as uid {uid} refused with EPERM"))
        }
        (Err(e), false) => Err(format!("expected EPERM, got {} ({e})", error_name(&e))),
        (Ok(_), false) => Err(format!(
            "expected EPERM, got a successful open as uid {uid}"
        )),
        (Ok(_), true) => Ok(format!("open as uid {uid} succeeded")),
        (Err(e), true) => Err(format!(
            "expected open as uid {uid} to succeed, got {} ({e})",
            error_name(&e)
        )),
    }
}

/// Drops root: no supplementary groups, gid and uid `uid`, which leaves no
/// capabilities.
fn become_uid(uid: u32) -> Result<(), String> {
    // SAFETY: setgroups with a count of 0 reads no memory.
    if unsafe { libc::setgroups(0, std::ptr::null()) } != 0 {
        return Err(format!(
            "setgroups(0) failed with {} (run as root)",
            io_error_name(&io::Error::last_os_error())
        ));
    }
    // SAFETY: setgid/setuid take plain integers.  The process is single
    // threaded, and glibc applies them to every thread anyway.
    if unsafe { libc::setgid(uid) } != 0 || unsafe { libc::setuid(uid) } != 0 {
        return Err(format!(
            "setgid/setuid({uid}) failed with {} (run as root)",
            io_error_name(&io::Error::last_os_error())
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != uid {
        return Err(format!("expected euid {uid} after setuid, got {euid}"));
    }
    Ok(())
}

/// `run-as-uid`: drops to `uid` and executes `cmd`; returns only on error.
pub fn run_as_uid(uid: u32, cmd: &[String]) -> Outcome {
    use std::os::unix::process::CommandExt;
    let Some((prog, args)) = cmd.split_first() else {
        return Err("run-as-uid needs a command".into());
    };
    become_uid(uid)?;
    let err = std::process::Command::new(prog).args(args).exec();
    Err(format!("cannot execute {prog}: {err}"))
}

/// `version`: GET_VERSION returns RPROF_ABI_VERSION.
pub fn version() -> Outcome {
    let dev = open()?;
    match dev.version() {
        Ok(v) if v == RPROF_ABI_VERSION => Ok(format!("GET_VERSION returned {v}")),
        Ok(v) => Err(format!("expected GET_VERSION {RPROF_ABI_VERSION}, got {v}")),
        Err(e) => Err(format!(
            "expected GET_VERSION {RPROF_ABI_VERSION}, got error {}",
            error_name(&e)
        )),
    }
}

/// `ioctl-unknown`: unknown request numbers give ENOTTY.
pub fn ioctl_unknown() -> Outcome {
    let dev = open()?;
    // An unused number under rprof's magic.
    let unknown_nr = io(RPROF_IOC_MAGIC, 0x1f);
    expect_errno(
        &format!("ioctl {unknown_nr:#x} (_IO(RPROF_IOC_MAGIC, 0x1f))"),
        dev.ioctl_no_arg(unknown_nr),
        &[libc::ENOTTY],
    )?;
    // GET_VERSION's shape under a foreign magic: a module that looked only
    // at the number would answer it (through a valid pointer, so that it
    // could not hide behind EFAULT).
    let foreign_magic = 0xb8;
    let foreign = ior(foreign_magic, RPROF_IOC_NR_GET_VERSION, 4);
    let mut out: u32 = 0xdead_beef;
    // SAFETY: whatever the module makes of the request, the argument is a
    // valid, writable u32, and the size in the request is 4.
    let result = unsafe { dev.ioctl_raw(foreign, (&raw mut out).cast()) };
    expect_errno(
        &format!("ioctl {foreign:#x} (_IOR({foreign_magic:#x}, 0x00, __u32))"),
        result,
        &[libc::ENOTTY],
    )?;
    Ok(format!(
        "ioctls {unknown_nr:#x} and {foreign:#x} (foreign magic) gave ENOTTY"
    ))
}

/// `start-fails EVENT`: START of `event` fails; cpu-clock works after.
pub fn start_fails(event: EventSpec) -> Outcome {
    let dev = open()?;
    let options = SessionOptions {
        events: vec![event],
        ..Default::default()
    };
    let config = options
        .to_config()
        .map_err(|e| format!("cannot build the configuration: {e}"))?;
    let name = EventDisplay(&config.events[0]).to_string();
    dev.set_config(&config).map_err(|e| {
        format!(
            "expected SET_CONFIG of {name} to succeed and START to fail, got SET_CONFIG error {}",
            error_name(&e)
        )
    })?;
    let errno = match dev.start() {
        Ok(()) => {
            let _ = dev.stop();
            return Err(format!("expected START of {name} to fail, got success"));
        }
        Err(e) => error_name(&e),
    };
    run_session(&dev, &good_config())
        .map_err(|e| format!("START of {name} failed with {errno} as expected, but then {e}"))?;
    Ok(format!(
        "START of {name} failed with {errno}; a cpu-clock session works afterwards"
    ))
}

/// `hold SECONDS`: keeps the device open.
///
/// Prints its `ok:` line as soon as the device is open (a script waits for
/// it before trying `rmmod`), and prints nothing more unless the device no
/// longer answers GET_VERSION at the end; so unlike the other checks it
/// prints by itself.
pub fn hold(seconds: u64) -> ExitCode {
    let dev = match open() {
        Ok(dev) => dev,
        Err(e) => {
            println!("FAIL: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("ok: holding {DEFAULT_PATH} for {seconds} s");
    // The line tells a script the device is open; it must not sit in a
    // buffer.  A failed flush only loses that signal.
    let _ = io::stdout().flush();
    std::thread::sleep(Duration::from_secs(seconds));
    let got = match dev.version() {
        Ok(v) if v == RPROF_ABI_VERSION => return ExitCode::SUCCESS,
        Ok(v) => v.to_string(),
        Err(e) => format!("error {}", error_name(&e)),
    };
    println!("FAIL: expected GET_VERSION {RPROF_ABI_VERSION} after holding the device, got {got}");
    ExitCode::FAILURE
}

/// `read-semantics`: read() on the owner's file.  A running session with
/// nothing buffered gives EAGAIN under O_NONBLOCK; a buffer smaller than
/// the next record gives EINVAL and loses nothing; a file that does not own
/// the session gets EBUSY; after STOP, reads end with 0 (end of stream)
/// once everything up to STOP was read.
pub fn read_semantics() -> Outcome {
    let dev = open()?;
    let mut config = good_config();
    // A long drain interval and a high wakeup mark keep the buffer empty
    // right after START.
    config.drain_interval_ms = 1000;
    dev.set_config(&config)
        .map_err(|e| format!("SET_CONFIG failed with {}", error_name(&e)))?;
    set_nonblocking(&dev)?;
    let mut big = vec![0u8; 1 << 16];
    let before_start = dev
        .read(&mut big)
        .map_err(|e| e.raw_os_error().unwrap_or(0));
    if before_start != Err(libc::EAGAIN) {
        return Err(format!(
            "read before START: expected EAGAIN, got {before_start:?}"
        ));
    }
    dev.start()
        .map_err(|e| format!("START failed with {}", error_name(&e)))?;
    std::thread::sleep(Duration::from_millis(300));
    dev.stop()
        .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;

    let other = open()?;
    match other.read(&mut big) {
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
        other => {
            return Err(format!(
                "read by a non-owner: expected EBUSY, got {other:?}"
            ))
        }
    }
    let mut small = [0u8; 8];
    match dev.read(&mut small) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
        other => return Err(format!("read into 8 bytes: expected EINVAL, got {other:?}")),
    }
    // Nothing was lost by the refused read: the stream still starts with
    // START and runs to STOP.
    let mut stream = Vec::new();
    loop {
        match dev.read(&mut big) {
            Ok(0) => break,
            Ok(n) => stream.extend_from_slice(&big[..n]),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                dev.flush()
                    .map_err(|e| format!("FLUSH failed with {}", error_name(&e)))?;
            }
            Err(e) => return Err(format!("read after STOP failed with {}", error_name(&e))),
        }
    }
    let records: Result<Vec<_>, _> = rprof_decode::Decoder::new(&stream).collect();
    let records = records.map_err(|e| format!("the stream does not decode: {e}"))?;
    let first = records.first().map(|r| r.name());
    let last = records.last().map(|r| r.name());
    if first != Some("START") || last != Some("STOP") {
        return Err(format!(
            "expected START ... STOP, got {first:?} ... {last:?}"
        ));
    }
    Ok(format!(
        "EAGAIN before START, EBUSY for a non-owner, EINVAL for 8 bytes, then {} records START..STOP and end of stream",
        records.len()
    ))
}

/// `tick [USEC]`: the kernel's tick length, set first if asked.
pub fn tick(usec: Option<i64>) -> Outcome {
    // SAFETY: An all-zero timex is a valid argument (modes 0: read only).
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    if let Some(u) = usec {
        tx.modes = libc::ADJ_TICK;
        tx.tick = u;
    }
    // SAFETY: `tx` is a valid timex the call reads and fills in.
    let rc = unsafe { libc::syscall(libc::SYS_adjtimex, &mut tx as *mut libc::timex) };
    if rc < 0 {
        return Err(format!("adjtimex: {}", std::io::Error::last_os_error()));
    }
    Ok(format!("tick {} us", tx.tick))
}

/// `orphan MILLIS`: leaves a running session behind as a SIGKILLed owner
/// can: configures, maps and starts one, then forks a child that keeps only
/// a copy of the mapping (which holds the file, and so the session) for
/// MILLIS ms, and returns without STOP or waiting for it.  The module
/// releases the session when the child's mapping goes; a tool started
/// meanwhile must wait for that rather than fail with EBUSY.
pub fn orphan(millis: u64) -> Outcome {
    let dev = open()?;
    dev.set_config(&good_config())
        .map_err(|e| format!("SET_CONFIG failed with {}", error_name(&e)))?;
    let reader = rprof::mmap::MmapReader::new(&dev).map_err(|e| e.to_string())?;
    dev.start().map_err(|e| format!("START failed with {}", error_name(&e)))?;
    let fd = dev.as_raw_fd();
    // SAFETY: rprof-e2e starts no threads; the child only closes, sleeps
    // and leaves with _exit, never returning into this code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork failed: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: `fd` is the child's copy of the device's descriptor, not
        // used again (the child leaves through _exit below); the mapping
        // the child inherited stays.
        unsafe { libc::close(fd) };
        std::thread::sleep(Duration::from_millis(millis));
        // SAFETY: _exit ends the child at once; it has no preconditions.
        unsafe { libc::_exit(0) };
    }
    drop(reader);
    drop(dev);
    Ok(format!("left a running session mapped by child {pid} for {millis} ms"))
}

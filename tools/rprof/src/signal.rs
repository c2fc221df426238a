//! SIGINT and SIGTERM as a request to end the session cleanly; SIGHUP as
//! the daemon's request to renew its session.
//!
//! `rprof dump` installs [`install_stop_handler`] and checks
//! [`stop_requested`] in its read loop, so Ctrl-C stops sampling, drains
//! the buffer and prints the summary instead of killing the process
//! mid-session.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// The self-pipe: the handler writes a byte to `WAKE_WRITE`, and a reader
/// that polls `WAKE_READ` ([`stop_fd`]) wakes even when the signal came
/// between its check of [`stop_requested`] and its `poll()`.  -1 until
/// [`install_stop_handler`] made them; never closed after.
static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The signal handler: an atomic store and a write(2) to a non-blocking
/// pipe, both async-signal-safe; errno is left as it was.
extern "C" fn on_signal(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
    let fd = WAKE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: errno is thread-local; the pointer is valid for this
        // thread.  One byte from a static to our own open pipe (a full
        // pipe already wakes the reader: the error is ignored).
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, [1u8].as_ptr().cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// Makes SIGINT and SIGTERM set the flag read by [`stop_requested`] and
/// wake [`stop_fd`].
///
/// Without `SA_RESTART`, so that a blocking `poll()` returns early.
pub fn install_stop_handler() -> io::Result<()> {
    if WAKE_READ.load(Ordering::Relaxed) < 0 {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2() writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        WAKE_WRITE.store(fds[1], Ordering::Relaxed);
        WAKE_READ.store(fds[0], Ordering::Relaxed);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        install(signal, on_signal)?;
    }
    Ok(())
}

/// Makes `handler` the handler of `signal`, without `SA_RESTART`.  The
/// handlers of this module (the only callers) do nothing but
/// async-signal-safe work: atomic stores and a write(2) to a pipe, with
/// errno saved.
fn install(signal: libc::c_int, handler: extern "C" fn(libc::c_int)) -> io::Result<()> {
    // SAFETY: an all-zero sigaction is a valid value (empty mask, no
    // flags) that we then fill in.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as libc::sighandler_t;
    // SAFETY: `action` is a valid sigaction whose handler is
    // async-signal-safe (see above); the old action is not wanted.
    if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

static RENEW: AtomicBool = AtomicBool::new(false);

/// The SIGHUP handler: an atomic store (async-signal-safe).  It leaves the
/// self-pipe alone: nothing empties that pipe, which would then wake every
/// later `poll()` at once; the signal itself interrupts a `poll()` in
/// progress (no `SA_RESTART`) when it is delivered to the polling thread,
/// which helper threads ensure with [`block_in_this_thread`] (otherwise
/// the flag is seen at the next check, within the poll's timeout).
extern "C" fn on_hangup(_signal: libc::c_int) {
    RENEW.store(true, Ordering::Relaxed);
}

/// Makes SIGHUP a request that [`renew_requested`] reports once (the
/// daemon's "start a new session now").
pub fn install_renew_handler() -> io::Result<()> {
    install(libc::SIGHUP, on_hangup)
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so that the
/// kernel delivers them to a thread that has them unblocked (the one that
/// polls and checks the flags: its `poll()` is interrupted at once).  For
/// helper threads; a failure leaves the mask as it was (the flags are
/// still seen, at the next check).
pub fn block_in_this_thread() {
    // SAFETY: an all-zero sigset_t is a valid value for sigemptyset to
    // initialize; sigaddset/pthread_sigmask take pointers to locals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether SIGHUP arrived since the last call (or since
/// [`install_renew_handler`]).
pub fn renew_requested() -> bool {
    RENEW.swap(false, Ordering::Relaxed)
}

/// Whether SIGINT or SIGTERM arrived since [`install_stop_handler`].
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// A descriptor that polls readable once SIGINT or SIGTERM came (after
/// [`install_stop_handler`]; `None` before).
pub fn stop_fd() -> Option<BorrowedFd<'static>> {
    let fd = WAKE_READ.load(Ordering::Relaxed);
    // SAFETY: Once made, the pipe's read end stays open for the life of
    // the process (it is never closed).
    (fd >= 0).then(|| unsafe { BorrowedFd::borrow_raw(fd) })
}

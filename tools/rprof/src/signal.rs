//! SIGINT and SIGTERM as a request to end the session cleanly.
//!
//! `rprof dump` installs [`install_stop_handler`] and checks
//! [`stop_requested`] in its read loop, so Ctrl-C stops sampling, drains
//! the buffer and prints the summary instead of killing the process
//! mid-session.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// The signal handler: only an atomic store, which is async-signal-safe.
extern "C" fn on_signal(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Makes SIGINT and SIGTERM set the flag read by [`stop_requested`].
///
/// Without `SA_RESTART`, so that a blocking `poll()` returns early.
pub fn install_stop_handler() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no
        // flags) that we then fill in.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `action` is a valid sigaction whose handler only performs
        // an async-signal-safe atomic store; the old action is not wanted.
        let ret = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived since [`install_stop_handler`].
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

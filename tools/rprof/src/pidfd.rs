//! Watching a process end through a pidfd (`pidfd_open(2)`, Linux 5.3),
//! which names the process itself rather than its number: once it has
//! ended, a new process that gets the same pid is not it.  `record -p`
//! and `rprof daemon --pid` stop when their process ends; `record --
//! CMD` sleeps on the launched child's.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A pidfd for `pid`: it polls readable once that process has ended.
pub fn open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) with a pid and no flags; it returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: A descriptor pidfd_open() just opened for us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the process of `pidfd` has ended (without waiting).
pub fn ended(pidfd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) of one live pollfd, without waiting.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

/// The end of a process given by pid: its pidfd where the kernel has
/// them, else whether `/proc/PID` exists (which a reused pid fools).
pub struct Watch {
    pid: i32,
    fd: Option<OwnedFd>,
}

impl Watch {
    /// Watches `pid`, which must name a live process now; an error if
    /// there is none (ESRCH).
    pub fn new(pid: i32) -> io::Result<Self> {
        match open(pid) {
            Ok(fd) => Ok(Self { pid, fd: Some(fd) }),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Err(e),
            // No pidfds here (ENOSYS) or not allowed: fall back to /proc.
            Err(_) => Ok(Self { pid, fd: None }),
        }
    }

    /// The pidfd, to poll on with other descriptors (none without).
    pub fn fd(&self) -> Option<&OwnedFd> {
        self.fd.as_ref()
    }

    /// Whether the process has ended.
    pub fn ended(&self) -> bool {
        match &self.fd {
            Some(fd) => ended(fd),
            None => proc_ended(self.pid),
        }
    }
}

/// Whether `/proc` says that `pid` has ended: gone, or a zombie (ended,
/// not yet reaped), as a pidfd would say.
fn proc_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses
        // and may hold anything, so after the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// The watch on process `pid` that [`Watch::new`] `opened` before the
/// module's filter took the pid's number, checked now: an error if it
/// could not be opened, or if the process has ended since (the filter
/// may then name a new process given that pid).
pub fn confirm(pid: i32, opened: io::Result<Watch>) -> Result<Watch, crate::Error> {
    match opened {
        Ok(w) if w.ended() => Err(crate::Error::Protocol(format!("process {pid} has ended"))),
        Ok(w) => Ok(w),
        Err(e) => Err(crate::Error::Protocol(format!(
            "cannot watch process {pid}: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_watch_sees_its_process_end_and_not_a_new_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let w = Watch::new(child.id() as i32).unwrap();
        assert!(w.fd().is_some(), "pidfd_open failed on this kernel");
        assert!(!w.ended());
        child.wait().unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        while !w.ended() {
            assert!(Instant::now() < end, "the end was not seen");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Without pidfds, /proc: a zombie has ended too.
    #[test]
    fn proc_sees_a_zombie_as_ended() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let end = Instant::now() + Duration::from_secs(5);
        // Not reaped yet: a zombie once it has exited.
        while !proc_ended(pid) {
            assert!(Instant::now() < end, "the zombie was not seen as ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        child.wait().unwrap();
        assert!(proc_ended(pid));
        assert!(!proc_ended(std::process::id() as i32));
    }

    #[test]
    fn a_watch_of_no_process_is_an_error() {
        // Pids above pid_max name no process.
        let e = Watch::new(i32::MAX).err().expect("a watch of no process");
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }
}

//! Starting the command of `rprof record -- CMD` so that its pid is known
//! before the session is configured: fork, let the caller configure the
//! module's pid filter with the child's pid and start sampling, then let
//! the child start CMD.  Sampling so sees CMD from its first instruction,
//! and the module's filter (with its descendants) sees every process CMD
//! starts.  `std::process::Command` cannot do this: its `spawn` returns
//! only once the child has exec'd.
//!
//! The child is not CMD itself but a reaper that runs it: the module's
//! filter follows descendants by walking `real_parent`, and a process
//! whose parent ends is re-parented to the nearest *subreaper* above it,
//! init when there is none.  Without one of our own, a daemon that CMD
//! starts (`cmd &` in a script that then exits, a double fork) would leave
//! the filtered tree while it runs.  The child makes itself a subreaper
//! (`PR_SET_CHILD_SUBREAPER`), forks CMD, reaps whatever is re-parented to
//! it, and once CMD has ended passes CMD's wait status up and exits.
//! Orphans still running then leave the tree with it, as `perf record`
//! stops with its command.
//!
//! The child waits for one byte on a pipe (`go`), then starts CMD; if the
//! exec (or the fork) fails, the errno goes to a close-on-exec pipe
//! (`err`) and CMD's exit status is 127.  The parent reads `err` after
//! releasing the child: end of file means the exec happened.  CMD's raw
//! wait status comes back on a third pipe (`status`).

use crate::Error;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// A forked child waiting to start its command.
///
/// # Invariants
///
/// `pid` is our child, not yet reaped; `go` is the write end of the pipe
/// it waits on, `err` the read end of its exec-error pipe, `status` the
/// read end of the pipe it writes CMD's wait status to.  Dropping a
/// `Launch` kills and reaps the child (it never ran the command).
pub struct Launch {
    pid: libc::pid_t,
    go: Option<OwnedFd>,
    err: Option<OwnedFd>,
    status: Option<OwnedFd>,
    program: String,
}

/// A child that started its command, reaped by [`Running::try_wait`].
///
/// # Invariants
///
/// `pid` is our child (the reaper) until `reaped`; `status` is the read
/// end of its status pipe, whose write end only the reaper holds.
pub struct Running {
    pid: libc::pid_t,
    reaped: bool,
    status: Option<OwnedFd>,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2() writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2() succeeded: both are open descriptors that nothing
    // else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads into `buf` until it is full, end of file or an error; returns
/// how many bytes it got.
fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: Reads into the rest of `buf`, from an open descriptor.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    got
}

/// The child's ends of its three pipes.
struct ChildFds {
    go: libc::c_int,
    err: libc::c_int,
    status: libc::c_int,
}

/// Writes all of `bytes` to `fd`, or as much as it takes (async-signal-safe).
///
/// # Safety
///
/// `fd` is an open descriptor.
unsafe fn write_all_raw(fd: libc::c_int, bytes: &[u8]) {
    // SAFETY: write(2) from a live slice, to the caller's descriptor.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// The forked child: waits for the go, becomes a subreaper, forks and
/// execs CMD, reaps until CMD has ended, passes its wait status up and
/// exits.  Never returns.
///
/// # Safety
///
/// Called in the child of a fork() of a possibly multi-threaded process,
/// so it calls only async-signal-safe functions (close, signal,
/// sigprocmask, read, write, prctl, fork, execvp, waitpid, _exit) and
/// allocates nothing; `argv` is a NULL-terminated array of C strings
/// made before the fork, `fds` the child's open pipe ends.
unsafe fn reap_and_run(fds: &ChildFds, argv: &[*const libc::c_char]) -> ! {
    // SAFETY: Async-signal-safe calls on our descriptors and on memory
    // made before fork(), as the function's contract says.
    unsafe {
        // As std::process::Command does: the Rust runtime ignores
        // SIGPIPE, and an ignored signal stays ignored across exec; CMD
        // gets the default, and no blocked signals.  SIGCHLD at its
        // default, so that waitpid() sees the children.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let mut b = 0u8;
        let n = loop {
            let n = libc::read(fds.go, (&mut b as *mut u8).cast(), 1);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if n != 1 {
            // Not released: the recording did not start.
            libc::_exit(126);
        }
        let fail = |errno: i32| -> ! {
            write_all_raw(fds.err, &errno.to_ne_bytes());
            libc::_exit(127)
        };
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 {
            fail(*libc::__errno_location());
        }
        let cmd = libc::fork();
        if cmd < 0 {
            fail(*libc::__errno_location());
        }
        if cmd == 0 {
            libc::close(fds.status);
            libc::execvp(argv[0], argv.as_ptr());
            fail(*libc::__errno_location());
        }
        // The parent reads end of file on `err` once CMD has exec'd.
        libc::close(fds.err);
        loop {
            let mut status = 0;
            let r = libc::waitpid(-1, &mut status, 0);
            if r == cmd {
                write_all_raw(fds.status, &status.to_ne_bytes());
                libc::_exit(0);
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                // Never (CMD is our child until we reap it): no status
                // goes up, the parent sees this exit's.
                libc::_exit(125);
            }
        }
    }
}

impl Launch {
    /// Forks a child that will run `argv` (searched in `PATH`) once
    /// [`Launch::release`] says so.
    pub fn fork(argv: &[String]) -> Result<Self, Error> {
        let program = argv.first().cloned().unwrap_or_default();
        let c_args: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| Error::Usage(format!("{program}: an argument holds a NUL byte")))?;
        if c_args.is_empty() {
            return Err(Error::Usage("no command given after --".into()));
        }
        // Everything the child touches is made before fork(): between fork
        // and exec it may call only async-signal-safe functions.
        let mut c_argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        c_argv.push(std::ptr::null());
        let io_err = |e| Error::io("starting the command", e);
        let (go_r, go_w) = pipe().map_err(io_err)?;
        let (err_r, err_w) = pipe().map_err(io_err)?;
        let (status_r, status_w) = pipe().map_err(io_err)?;
        // SAFETY: fork() itself; the child below calls only
        // async-signal-safe functions (see `reap_and_run`).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // Without our copies of these ends, a parent that dies gives
            // end of file instead of a wait for ever.
            // SAFETY: In the child: closes descriptors it owns a copy of.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                libc::close(status_r.as_raw_fd());
            }
            let fds = ChildFds {
                go: go_r.as_raw_fd(),
                err: err_w.as_raw_fd(),
                status: status_w.as_raw_fd(),
            };
            // SAFETY: In the child of fork(), with `c_argv` a
            // NULL-terminated array of C strings made before the fork.
            unsafe { reap_and_run(&fds, &c_argv) }
        }
        drop((go_r, err_w, status_w));
        // INVARIANT: our unreaped child, with its three pipes.
        Ok(Self {
            pid,
            go: Some(go_w),
            err: Some(err_r),
            status: Some(status_r),
            program,
        })
    }

    /// The child's pid: the process the module's filter follows, the
    /// command's parent once released.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec its command; an error if the exec failed (the
    /// child is reaped then).
    pub fn release(mut self) -> Result<Running, Error> {
        let go = self
            .go
            .take()
            .expect("a Launch holds its pipe until released");
        let err = self
            .err
            .take()
            .expect("a Launch holds its pipe until released");
        // SAFETY: One byte from a live local to our open pipe.
        let wrote = unsafe { libc::write(go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(go);
        let mut errno = [0u8; 4];
        let got = read_full(&err, &mut errno);
        let pid = self.pid;
        let program = std::mem::take(&mut self.program);
        let status = self.status.take();
        // The child is the caller's now: no kill on drop.
        std::mem::forget(self);
        let mut running = Running {
            pid,
            reaped: false,
            status,
        };
        if wrote != 1 || got == 4 {
            let e = if got == 4 {
                io::Error::from_raw_os_error(i32::from_ne_bytes(errno))
            } else {
                io::Error::other("the child did not take the go")
            };
            running.kill_and_reap();
            return Err(Error::Protocol(format!(
                "cannot run {program}: {e} (is it a program in PATH?)"
            )));
        }
        Ok(running)
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        // Never released: the child still waits (or gets end of file when
        // `go` closes and exits 126); make sure and reap it.
        let mut r = Running {
            pid: self.pid,
            reaped: false,
            status: None,
        };
        r.kill_and_reap();
    }
}

impl Running {
    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// A descriptor that polls readable once the command has ended (a
    /// pidfd, Linux 5.3 and later), so that a reader can sleep until then
    /// instead of waking up to ask; `None` where the kernel has none.
    pub fn exit_fd(&self) -> Option<OwnedFd> {
        // SAFETY: pidfd_open(2) with a pid and no flags; it returns a new
        // descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: A descriptor pidfd_open() just opened for us alone.
        Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// The command's exit status if it has ended (it is reaped then).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.reaped {
            return Ok(None);
        }
        let mut status = 0;
        // SAFETY: Waits for our own child without blocking.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if r == 0 {
            return Ok(None);
        }
        self.reaped = true;
        // The command's status, as the reaper passed it up; the reaper's
        // own if it died before it could (killed, say).
        let own = ExitStatus::from_raw(status);
        let Some(pipe) = self.status.take() else {
            return Ok(Some(own));
        };
        let mut raw = [0u8; 4];
        Ok(Some(match read_full(&pipe, &mut raw) {
            4 => ExitStatus::from_raw(i32::from_ne_bytes(raw)),
            _ => own,
        }))
    }

    fn kill_and_reap(&mut self) {
        if self.reaped {
            return;
        }
        let mut status = 0;
        // SAFETY: Signals and waits for our own unreaped child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            while libc::waitpid(self.pid, &mut status, 0) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
        }
        self.reaped = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn wait(r: &mut Running) -> ExitStatus {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = r.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < end, "the child did not end");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn runs_only_once_released() {
        let dir = std::env::temp_dir().join(format!("rprof-launch-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let script = format!("echo ran > {}; exit 3", dir.display());
        let l = Launch::fork(&["sh".into(), "-c".into(), script]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!dir.exists(), "the command ran before its release");
        let mut r = l.release().unwrap();
        assert_eq!(wait(&mut r).code(), Some(3));
        assert_eq!(std::fs::read_to_string(&dir).unwrap(), "ran\n");
        let _ = std::fs::remove_file(&dir);
    }

    /// The command does not inherit the Rust runtime's ignored SIGPIPE
    /// (a `yes | head` in it must end by the signal).
    #[test]
    fn the_command_gets_the_default_sigpipe() {
        let out = std::env::temp_dir().join(format!("rprof-launch-sig-{}", std::process::id()));
        let script = format!("grep SigIgn /proc/$$/status > {}", out.display());
        let l = Launch::fork(&["sh".into(), "-c".into(), script]).unwrap();
        let mut r = l.release().unwrap();
        assert!(wait(&mut r).success());
        let line = std::fs::read_to_string(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(mask & 1 << (libc::SIGPIPE - 1), 0, "{line}");
    }

    /// CMD's own status comes back, not the reaper's: here its death by
    /// a signal.
    #[test]
    fn the_command_s_death_by_a_signal_is_its_status() {
        let l = Launch::fork(&["sh".into(), "-c".into(), "kill -TERM $$".into()]).unwrap();
        let mut r = l.release().unwrap();
        assert_eq!(wait(&mut r).signal(), Some(libc::SIGTERM));
    }

    /// A process that CMD starts and leaves behind (`cmd &` in a shell
    /// that then exits) stays in the tree under the launched child, whose
    /// pid the module's filter follows, instead of going to init.
    #[test]
    fn an_orphan_of_the_command_stays_under_the_launched_child() {
        let out = std::env::temp_dir().join(format!("rprof-launch-orphan-{}", std::process::id()));
        let _ = std::fs::remove_file(&out);
        // The script ends once the test has removed the pid's file.
        let script = format!(
            "sh -c 'sleep 5 & echo $! > {0}.tmp; mv {0}.tmp {0}'; \
             while [ -e {0} ]; do sleep 0.01; done",
            out.display()
        );
        let l = Launch::fork(&["sh".into(), "-c".into(), script]).unwrap();
        let launched = l.pid();
        let mut r = l.release().unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        let orphan: i32 = loop {
            if let Ok(s) = std::fs::read_to_string(&out) {
                break s.trim().parse().unwrap();
            }
            assert!(Instant::now() < end, "the script wrote no pid");
            std::thread::sleep(Duration::from_millis(10));
        };
        // Its parent, the inner shell, exits at once; then the orphan's
        // parent is the launched child.
        let ppid = || -> Option<i32> {
            let status = std::fs::read_to_string(format!("/proc/{orphan}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("PPid:"))?;
            line[5..].trim().parse().ok()
        };
        let mut seen = ppid();
        while seen != Some(launched) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
            seen = ppid();
        }
        // SAFETY: kill(2) of the orphan, a `sleep 5` not yet reaped by
        // whoever is its parent (it cannot have ended).
        unsafe { libc::kill(orphan, libc::SIGKILL) };
        let _ = std::fs::remove_file(&out);
        assert!(wait(&mut r).success());
        assert_eq!(seen, Some(launched), "the orphan's parent");
    }

    #[test]
    fn a_missing_program_is_an_error_at_release() {
        let l = Launch::fork(&["/nonexistent/rprof-no-such-program".into()]).unwrap();
        let e = l
            .release()
            .err()
            .expect("exec of a missing program succeeded");
        let msg = e.to_string();
        assert!(
            msg.contains("cannot run /nonexistent/rprof-no-such-program")
                && msg.contains("No such file"),
            "{msg}"
        );
    }

    #[test]
    fn a_launch_dropped_unreleased_never_runs() {
        let dir = std::env::temp_dir().join(format!("rprof-launch-drop-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let l = Launch::fork(&[
            "sh".into(),
            "-c".into(),
            format!("echo ran > {}", dir.display()),
        ])
        .unwrap();
        let pid = l.pid();
        drop(l);
        // Reaped: the pid is no child of ours any more.
        // SAFETY: A non-blocking wait on a pid that must not be our child.
        let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1);
        assert!(!dir.exists(), "an unreleased command ran");
    }
}

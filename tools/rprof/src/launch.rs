//! Starting the command of `rprof record -- CMD` so that its pid is known
//! before the session is configured: fork, let the caller configure the
//! module's pid filter with the child's pid and start sampling, then let
//! the child exec CMD.  Sampling so sees CMD from its first instruction,
//! and the module's filter (with its descendants) sees every process CMD
//! starts.  `std::process::Command` cannot do this: its `spawn` returns
//! only once the child has exec'd.
//!
//! The child waits for one byte on a pipe (`go`), then execs; if the exec
//! fails it writes its errno to a second, close-on-exec pipe (`err`) and
//! exits 127.  The parent reads `err` after releasing the child: end of
//! file means the exec happened.

use crate::Error;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// A forked child waiting to exec its command.
///
/// # Invariants
///
/// `pid` is our child, not yet reaped; `go` is the write end of the pipe
/// it waits on, `err` the read end of its exec-error pipe.  Dropping a
/// `Launch` kills and reaps the child (it never ran the command).
pub struct Launch {
    pid: libc::pid_t,
    go: Option<OwnedFd>,
    err: Option<OwnedFd>,
    program: String,
}

/// A child that exec'd its command, reaped by [`Running::try_wait`].
pub struct Running {
    pid: libc::pid_t,
    reaped: bool,
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
        // SAFETY: fork() itself; the child below calls only
        // async-signal-safe functions (close, signal, sigprocmask, read,
        // execvp, write, _exit).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: In the child: async-signal-safe calls on descriptors
            // and memory made before fork().
            unsafe {
                // Without our copy of the write end, a parent that dies
                // gives end of file instead of a wait for ever.
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                // As std::process::Command does: the Rust runtime ignores
                // SIGPIPE, and an ignored signal stays ignored across
                // exec; CMD gets the default, and no blocked signals.
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                let mut b = 0u8;
                let n = loop {
                    let n = libc::read(go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
                    if n >= 0 || *libc::__errno_location() != libc::EINTR {
                        break n;
                    }
                };
                if n != 1 {
                    // Not released: the recording did not start.
                    libc::_exit(126);
                }
                libc::execvp(c_argv[0], c_argv.as_ptr());
                let errno = *libc::__errno_location();
                libc::write(err_w.as_raw_fd(), (&errno as *const i32).cast(), 4);
                libc::_exit(127);
            }
        }
        drop((go_r, err_w));
        // INVARIANT: our unreaped child, with its two pipes.
        Ok(Self {
            pid,
            go: Some(go_w),
            err: Some(err_r),
            program,
        })
    }

    /// The child's pid (the command's, once it exec'd).
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
        let mut got = 0;
        while got < 4 {
            // SAFETY: Reads into the rest of `errno`, from our open pipe.
            let n =
                unsafe { libc::read(err.as_raw_fd(), errno[got..].as_mut_ptr().cast(), 4 - got) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        let pid = self.pid;
        let program = std::mem::take(&mut self.program);
        // The child is the caller's now: no kill on drop.
        std::mem::forget(self);
        let mut running = Running { pid, reaped: false };
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
        Ok(Some(ExitStatus::from_raw(status)))
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

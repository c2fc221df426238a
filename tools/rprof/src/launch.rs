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
//! The child waits for one byte on a pipe (`go`), then starts CMD; if a
//! step fails (becoming a subreaper, the fork, the exec), which one and
//! its errno go to a close-on-exec pipe (`err`) and the child exits 127.
//! The parent reads `err` after releasing the child: end of file means
//! the exec happened.  CMD's raw wait status comes back on a third pipe
//! (`status`).
//!
//! rprof must be able to wait for its child: a SIGCHLD that rprof was
//! started with ignored (an ignored disposition survives exec) would
//! have the kernel reap the child unseen, so [`Launch::fork`] sets it
//! back to the default.

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
    /// CMD's own pid (the reaper's child).
    command: libc::pid_t,
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

/// Which step of starting CMD failed, as the child reports it on `err`
/// (with the errno after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
enum Step {
    Exec = 0,
    Subreaper = 1,
    Fork = 2,
}

impl Step {
    fn from_raw(raw: u32) -> Self {
        match raw {
            1 => Step::Subreaper,
            2 => Step::Fork,
            _ => Step::Exec,
        }
    }
}

/// The error for a command that could not be started: which step failed
/// and why, with a hint only where one helps (a program not found).
fn start_error(program: &str, step: Step, errno: i32) -> Error {
    let e = io::Error::from_raw_os_error(errno);
    Error::Protocol(match step {
        Step::Exec if errno == libc::ENOENT => {
            format!("cannot run {program}: {e} (is it a program in PATH?)")
        }
        Step::Exec => format!("cannot run {program}: {e}"),
        Step::Subreaper => format!(
            "cannot run {program}: the process that starts it cannot become a subreaper (prctl PR_SET_CHILD_SUBREAPER): {e}"
        ),
        Step::Fork => format!("cannot run {program}: cannot fork a process for it: {e}"),
    })
}

/// Sets SIGCHLD back to its default if it is ignored (or its handler
/// asks the kernel not to keep children's statuses): rprof waits for
/// the child it forks.  rprof installs no SIGCHLD handler of its own.
fn default_sigchld() -> io::Result<()> {
    // SAFETY: sigaction(2) reads the current disposition into a zeroed
    // struct of the right type, and sets one with no handler function.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut old) < 0 {
            return Err(io::Error::last_os_error());
        }
        if old.sa_sigaction == libc::SIG_IGN || old.sa_flags & libc::SA_NOCLDWAIT != 0 {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            if libc::sigaction(libc::SIGCHLD, &dfl, std::ptr::null_mut()) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The child's ends of its three pipes, and the highest descriptor the
/// parent had open when it forked.
struct ChildFds {
    go: libc::c_int,
    err: libc::c_int,
    status: libc::c_int,
    max_fd: libc::c_int,
}

/// The highest descriptor open in this process (read before a fork, so
/// that the child knows how far to look), 1023 if /proc cannot say.
fn highest_fd() -> libc::c_int {
    std::fs::read_dir("/proc/self/fd")
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::c_int>().ok())
                .max()
        })
        .unwrap_or(1023)
}

/// One write(2) of `bytes` to `fd` (async-signal-safe): enough for the
/// messages of at most 8 bytes on a pipe here, which a pipe takes whole.
///
/// # Safety
///
/// `fd` is an open descriptor.
unsafe fn write_raw(fd: libc::c_int, bytes: &[u8]) {
    // SAFETY: write(2) from a live slice, to the caller's descriptor.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// The forked child: closes what would not survive an exec, waits for
/// the go, becomes a subreaper, forks and execs CMD, sends CMD's pid up,
/// reaps until CMD has ended, sends its wait status up and exits.  Never
/// returns.
///
/// # Safety
///
/// Called in the child of a fork() of a possibly multi-threaded process:
/// it allocates nothing and calls only thin system-call wrappers (close,
/// fcntl, signal, sigprocmask, read, write, prctl, waitpid, _exit), plus
/// fork and execvp.  Those two are not on POSIX's async-signal-safe list;
/// they are sound here because this child has one thread, glibc's fork
/// re-initialises its own locks in the child, and execvp's PATH search
/// only reads the environment.  `argv` is a NULL-terminated array of C
/// strings made before the fork, its first entry `prog`; `fds` holds the
/// child's open pipe ends.
unsafe fn reap_and_run(
    fds: &ChildFds,
    prog: *const libc::c_char,
    argv: *const *const libc::c_char,
) -> ! {
    // SAFETY: The calls the function's contract allows, on our
    // descriptors and on memory made before fork().
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
        // What an exec would close, this child closes now: it never
        // execs, and must not hold the parent's descriptors (the module's
        // device above all: its session lives until the last one closes)
        // for as long as CMD runs.  Descriptors without close-on-exec are
        // CMD's to inherit, as they would be without the reaper.  The
        // parent's ends of the three pipes go too (close-on-exec all): a
        // parent that dies so gives end of file on `go`, not a wait for
        // ever.
        for fd in 3..=fds.max_fd {
            if fd != fds.go && fd != fds.err && fd != fds.status {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                    libc::close(fd);
                }
            }
        }
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
        libc::close(fds.go);
        let fail = |step: Step| -> ! {
            let errno = *libc::__errno_location();
            let mut msg = [0u8; 8];
            msg[..4].copy_from_slice(&(step as u32).to_ne_bytes());
            msg[4..].copy_from_slice(&errno.to_ne_bytes());
            write_raw(fds.err, &msg);
            libc::_exit(127)
        };
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 {
            fail(Step::Subreaper);
        }
        let cmd = libc::fork();
        if cmd < 0 {
            fail(Step::Fork);
        }
        if cmd == 0 {
            libc::close(fds.status);
            libc::execvp(prog, argv);
            fail(Step::Exec);
        }
        // CMD's pid first (the parent reads it once `err` says CMD has
        // exec'd), then, below, its status.
        write_raw(fds.status, &cmd.to_ne_bytes());
        // The parent reads end of file on `err` once CMD has exec'd.
        libc::close(fds.err);
        // CMD has the default dispositions; the reaper itself outlives a
        // signal meant for the whole group (Ctrl-C, `timeout`, `kill
        // -PGID`) as system(3) does, so that it still reaps CMD and passes
        // its status up, and a status write to a parent gone is an EPIPE,
        // not a death.
        for sig in [
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        loop {
            let mut status = 0;
            let r = libc::waitpid(-1, &mut status, 0);
            if r == cmd {
                write_raw(fds.status, &status.to_ne_bytes());
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
        default_sigchld().map_err(io_err)?;
        let (go_r, go_w) = pipe().map_err(io_err)?;
        let (err_r, err_w) = pipe().map_err(io_err)?;
        let (status_r, status_w) = pipe().map_err(io_err)?;
        let fds = ChildFds {
            go: go_r.as_raw_fd(),
            err: err_w.as_raw_fd(),
            status: status_w.as_raw_fd(),
            max_fd: highest_fd(),
        };
        let prog = c_argv[0];
        // SAFETY: fork() itself; the child below does only what
        // `reap_and_run`'s contract allows.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: In the child of fork(), with `c_argv` a
            // NULL-terminated array of C strings made before the fork,
            // `prog` its first, and `fds` the child's pipe ends.
            unsafe { reap_and_run(&fds, prog, c_argv.as_ptr()) }
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
        // Both are there: only `release`, which takes `self`, takes them.
        let (Some(go), Some(err)) = (self.go.take(), self.err.take()) else {
            return Err(Error::Protocol("a command was released twice".into()));
        };
        // SAFETY: One byte from a live local to our open pipe.
        let wrote = unsafe { libc::write(go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(go);
        let mut failed = [0u8; 8];
        let got = read_full(&err, &mut failed);
        let pid = self.pid;
        let program = std::mem::take(&mut self.program);
        let status = self.status.take();
        // The child is the caller's now: no kill on drop.
        std::mem::forget(self);
        // CMD's pid, which the reaper wrote before `err` said anything.
        let mut cmd = [0u8; 4];
        let command = match (&status, wrote == 1 && got == 0) {
            (Some(st), true) if read_full(st, &mut cmd) == 4 => i32::from_ne_bytes(cmd),
            _ => pid,
        };
        let mut running = Running {
            pid,
            command,
            reaped: false,
            status,
        };
        if wrote != 1 {
            running.reap(true);
            return Err(Error::Protocol(format!(
                "cannot run {program}: the child that starts it ended before its start"
            )));
        }
        if got == failed.len() {
            // The reaper reaps CMD's failed child and exits by itself.
            running.reap(false);
            let [s0, s1, s2, s3, e0, e1, e2, e3] = failed;
            let step = Step::from_raw(u32::from_ne_bytes([s0, s1, s2, s3]));
            return Err(start_error(
                &program,
                step,
                i32::from_ne_bytes([e0, e1, e2, e3]),
            ));
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
            command: self.pid,
            reaped: false,
            status: None,
        };
        r.reap(true);
    }
}

impl Running {
    /// The child's pid: the reaper's, which the module's filter follows.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The command's own pid.
    pub fn command_pid(&self) -> i32 {
        self.command
    }

    /// A descriptor that polls readable once the command has ended (a
    /// pidfd, Linux 5.3 and later), so that a reader can sleep until then
    /// instead of waking up to ask; `None` where the kernel has none.
    pub fn exit_fd(&self) -> Option<OwnedFd> {
        crate::pidfd::open(self.pid).ok()
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
            let e = io::Error::last_os_error();
            // The child was reaped unseen (SIGCHLD ignored after all,
            // despite `default_sigchld`): it has ended, and the status
            // pipe still says how CMD did.
            if e.raw_os_error() != Some(libc::ECHILD) {
                return Err(e);
            }
            self.reaped = true;
            return self.passed_status().map(Some).ok_or(e);
        }
        if r == 0 {
            return Ok(None);
        }
        self.reaped = true;
        // The command's status, as the reaper passed it up; the reaper's
        // own if it died before it could (killed, say).
        let own = ExitStatus::from_raw(status);
        Ok(Some(self.passed_status().unwrap_or(own)))
    }

    /// CMD's wait status as the reaper passed it up on the status pipe
    /// (taken: read once), if it did.
    fn passed_status(&mut self) -> Option<ExitStatus> {
        let pipe = self.status.take()?;
        let mut raw = [0u8; 4];
        (read_full(&pipe, &mut raw) == raw.len())
            .then(|| ExitStatus::from_raw(i32::from_ne_bytes(raw)))
    }

    /// Waits for the child (SIGKILLed first with `kill`) and reaps it.
    fn reap(&mut self, kill: bool) {
        if self.reaped {
            return;
        }
        let mut status = 0;
        // SAFETY: Signals and waits for our own unreaped child.
        unsafe {
            if kill {
                libc::kill(self.pid, libc::SIGKILL);
            }
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
        // The orphan's pid still names it (a `sleep` alone could have
        // ended and its pid be reused by now on a loaded machine).
        let comm = std::fs::read_to_string(format!("/proc/{orphan}/comm")).unwrap_or_default();
        if comm.trim() == "sleep" {
            // SAFETY: kill(2) of a pid that names a `sleep` (the orphan).
            unsafe { libc::kill(orphan, libc::SIGKILL) };
        }
        let _ = std::fs::remove_file(&out);
        assert!(wait(&mut r).success());
        assert_eq!(seen, Some(launched), "the orphan's parent");
    }

    /// The reaper holds none of rprof's close-on-exec descriptors (the
    /// module's device among them) while CMD runs, and `command_pid` is
    /// CMD's pid.
    #[test]
    fn the_reaper_holds_none_of_our_descriptors() {
        let marker = std::env::temp_dir().join(format!("rprof-launch-fd-{}", std::process::id()));
        let out = std::env::temp_dir().join(format!("rprof-launch-fds-{}", std::process::id()));
        let held = std::fs::File::create(&marker).unwrap();
        let script = format!(
            "echo $$ > {0}.pid; ls -l /proc/$PPID/fd > {0}",
            out.display()
        );
        let l = Launch::fork(&["sh".into(), "-c".into(), script]).unwrap();
        let mut r = l.release().unwrap();
        assert!(wait(&mut r).success());
        drop(held);
        let fds = std::fs::read_to_string(&out).unwrap();
        let pid = std::fs::read_to_string(format!("{}.pid", out.display())).unwrap();
        let _ = std::fs::remove_file(&marker);
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(format!("{}.pid", out.display()));
        assert!(!fds.contains(marker.to_str().unwrap()), "{fds}");
        assert_eq!(pid.trim().parse::<i32>().unwrap(), r.command_pid());
        assert_ne!(r.command_pid(), r.pid());
    }

    /// With SIGCHLD ignored when rprof starts (an ignored disposition
    /// survives exec), the kernel would reap the child unseen and
    /// `record` would spin on ECHILD: the command's status must still
    /// come back.  The disposition is the whole process's, so the check
    /// runs in a process of its own: this test binary again, running
    /// only this test, with a variable set.
    #[test]
    fn an_ignored_sigchld_does_not_lose_the_command_s_status() {
        const INNER: &str = "RPROF_TEST_SIGCHLD_IGNORED";
        if std::env::var_os(INNER).is_some() {
            // SAFETY: signal(2) with SIG_IGN; this process runs only this
            // test (one thread of the harness's).
            unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
            let l = Launch::fork(&["sh".into(), "-c".into(), "exit 3".into()]).unwrap();
            // SAFETY: signal(2) to read the disposition back, restored.
            let now = unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
            assert_eq!(now, libc::SIG_DFL, "SIGCHLD is still ignored");
            let mut r = l.release().unwrap();
            assert_eq!(wait(&mut r).code(), Some(3));
            return;
        }
        let name = "launch::tests::an_ignored_sigchld_does_not_lose_the_command_s_status";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(INNER, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
    }

    /// A failed start names the step that failed; the PATH hint only for
    /// a program that was not found.
    #[test]
    fn a_failed_start_names_its_step() {
        let msg = |step, errno| start_error("prog", step, errno).to_string();
        assert!(msg(Step::Exec, libc::ENOENT).contains("is it a program in PATH?"));
        let denied = msg(Step::Exec, libc::EACCES);
        assert!(
            denied.contains("cannot run prog: Permission denied") && !denied.contains("PATH"),
            "{denied}"
        );
        let fork = msg(Step::Fork, libc::EAGAIN);
        assert!(
            fork.contains("cannot fork") && !fork.contains("PATH"),
            "{fork}"
        );
        let reaper = msg(Step::Subreaper, libc::EINVAL);
        assert!(
            reaper.contains("subreaper") && !reaper.contains("PATH"),
            "{reaper}"
        );
        assert_eq!(Step::from_raw(Step::Fork as u32), Step::Fork);
        assert_eq!(Step::from_raw(Step::Subreaper as u32), Step::Subreaper);
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

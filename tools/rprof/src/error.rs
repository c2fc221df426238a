//! Errors of the device layer, worded for the person running `rprof`.

use crate::errno::errno_name;
use crate::memlock::Refusal;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

/// An error of `/dev/rprof` or of a session on it.
///
/// `Display` gives a complete one-line message prefixed with `rprof: `,
/// ready to print.
#[derive(Debug)]
pub enum Error {
    /// The device node does not exist: the module is not loaded.
    NoDevice {
        /// The device node.
        path: PathBuf,
    },
    /// The node exists but has no driver behind it (ENXIO/ENODEV).
    NoDriver {
        /// The device node.
        path: PathBuf,
        /// The error of `open()`.
        source: io::Error,
    },
    /// Opening was refused: the caller lacks CAP_PERFMON/CAP_SYS_ADMIN.
    PermissionDenied {
        /// The device node.
        path: PathBuf,
        /// The error of `open()`, EPERM or EACCES.
        source: io::Error,
    },
    /// Opening failed for another reason.
    Open {
        /// The device node.
        path: PathBuf,
        /// The error of `open()`.
        source: io::Error,
    },
    /// An ioctl failed.
    Ioctl {
        /// The C name of the request (`RPROF_IOC_START`).
        name: &'static str,
        /// Its error.
        source: io::Error,
    },
    /// Another system call (`mmap`, `read`, `poll`...) or output failed.
    Io {
        /// What was being done, e.g. "mmap of the control page".
        what: &'static str,
        /// Its error.
        source: io::Error,
    },
    /// `RPROF_IOC_SET_CONFIG` said EPERM: the session's buffers pass the
    /// caller's locked-memory limit.
    LockedMemory(Refusal),
    /// The module speaks another ABI version.
    VersionMismatch {
        /// `RPROF_IOC_GET_VERSION` of the module.
        module: u32,
        /// `RPROF_ABI_VERSION` this program was built with.
        expected: u32,
    },
    /// The module broke the protocol of the header (e.g. an impossible
    /// `data_head`), or the program was asked for something impossible.
    Protocol(String),
    /// The command line makes no sense (exit status 2, as clap's own
    /// usage errors).
    Usage(String),
}

impl Error {
    /// An [`Error::Ioctl`] for request `name`.
    pub fn ioctl(name: &'static str, source: io::Error) -> Self {
        Error::Ioctl { name, source }
    }

    /// An [`Error::Io`] for `what`.
    pub fn io(what: &'static str, source: io::Error) -> Self {
        Error::Io { what, source }
    }

    /// The errno of the underlying system call, if there was one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::NoDevice { .. } => Some(libc::ENOENT),
            Error::NoDriver { source, .. }
            | Error::PermissionDenied { source, .. }
            | Error::Open { source, .. }
            | Error::Ioctl { source, .. }
            | Error::Io { source, .. } => source.raw_os_error(),
            Error::LockedMemory(_) => Some(libc::EPERM),
            Error::VersionMismatch { .. } | Error::Protocol(_) | Error::Usage(_) => None,
        }
    }

    /// A hint for an ioctl error whose cause is likely known.
    fn ioctl_hint(name: &str, errno: Option<i32>) -> Option<&'static str> {
        match (name, errno?) {
            ("RPROF_IOC_SET_CONFIG", libc::EBUSY) => {
                Some("another process owns the rprof session, or it is running")
            }
            ("RPROF_IOC_SET_CONFIG", libc::EINVAL) => Some("the module rejected the configuration"),
            ("RPROF_IOC_SET_CONFIG", libc::ESRCH) => {
                Some("the pid to follow names no process (in this pid namespace)")
            }
            ("RPROF_IOC_SET_CONFIG", libc::EPERM) => Some(
                "the session's buffers pass your locked-memory limit (ulimit -l), \
                 beyond the module's mlock_kb allowance; CAP_IPC_LOCK lifts it",
            ),
            ("RPROF_IOC_SET_CONFIG", libc::E2BIG) => {
                Some("the configuration has fields this module does not know")
            }
            ("RPROF_IOC_START", libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => {
                Some("an event is not supported here (hardware events need a PMU; try cpu-clock)")
            }
            ("RPROF_IOC_START", libc::EBUSY) => Some("the session is already running"),
            ("RPROF_IOC_START" | "RPROF_IOC_STOP" | "RPROF_IOC_FLUSH", libc::EINVAL) => {
                Some("no session is configured on this file")
            }
            ("RPROF_IOC_ADD_UNWIND", libc::ENOTTY) => {
                Some("the module takes no unwind tables (older than these tools)")
            }
            ("RPROF_IOC_ADD_UNWIND", libc::EINVAL) => {
                Some("the module refused the table (or this file has no session)")
            }
            ("RPROF_IOC_ADD_UNWIND", libc::ENOSPC) => {
                Some("the session's unwind tables fill the module's unwind_kb parameter")
            }
            ("RPROF_IOC_ADD_UNWIND", libc::EPERM) => {
                Some("the tables pass your locked-memory limit (ulimit -l); CAP_IPC_LOCK lifts it")
            }
            ("RPROF_IOC_ADD_UNWIND", libc::EBADF) => Some("the file's descriptor is not open"),
            ("RPROF_IOC_ADD_UNWIND", libc::EBUSY) => Some("the session belongs to another file"),
            ("RPROF_IOC_LOOKUP_COOKIE", libc::ENOENT) => Some("the session has no such cookie"),
            ("RPROF_IOC_LOOKUP_COOKIE", libc::EINVAL) => Some("no session is configured"),
            ("RPROF_IOC_LOOKUP_COOKIE", libc::EBUSY) => Some("the session belongs to another file"),
            _ => None,
        }
    }
}

/// `ENOENT (No such file or directory)`, or the plain message.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(errno) => {
            // io::Error's text ends with " (os error N)": keep only strerror.
            let text = e.to_string();
            let suffix = format!(" (os error {errno})");
            let text = text.strip_suffix(&suffix).unwrap_or(&text);
            format!("{} ({text})", errno_name(errno))
        }
        None => e.to_string(),
    }
}

/// Exit status of a usage error.
pub const EXIT_USAGE: u8 = 2;

/// The exit status of a command that ended with `result`: 0, or after
/// printing the error (one `rprof: ...` line) on stderr, 2 for a usage
/// error and 1 for any other.
pub fn exit_code(result: Result<(), Error>) -> ExitCode {
    exit_status(result.map(|()| 0))
}

/// [`exit_code`] for a command whose success has a status of its own
/// (`rprof record -- CMD` exits with CMD's).
pub fn exit_status(result: Result<u8, Error>) -> ExitCode {
    match result {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(match e {
                Error::Usage(_) => EXIT_USAGE,
                _ => 1,
            })
        }
    }
}

/// The status a shell gives a child that ended with `status`: its exit
/// code, or 128 + the signal that killed it.
pub fn shell_status(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        (None, None) => 1,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDevice { path } => write!(
                f,
                "rprof: {} does not exist: is the rprof module loaded? (insmod rprof.ko)",
                path.display()
            ),
            Error::NoDriver { path, source } => write!(
                f,
                "rprof: {} has no driver behind it ({}): is the rprof module loaded? (insmod rprof.ko)",
                path.display(),
                describe(source)
            ),
            Error::PermissionDenied { .. } => write!(
                f,
                "rprof: permission denied: rprof needs CAP_PERFMON or CAP_SYS_ADMIN (run as root)"
            ),
            Error::Open { path, source } => {
                write!(f, "rprof: cannot open {}: {}", path.display(), describe(source))
            }
            Error::Ioctl { name, source } => {
                write!(f, "rprof: {name} failed: {}", describe(source))?;
                if let Some(hint) = Self::ioctl_hint(name, source.raw_os_error()) {
                    write!(f, ": {hint}")?;
                }
                Ok(())
            }
            Error::Io { what, source } => write!(f, "rprof: {what} failed: {}", describe(source)),
            Error::LockedMemory(refusal) => write!(f, "rprof: {refusal}"),
            Error::VersionMismatch { module, expected } => write!(
                f,
                "rprof: ABI version mismatch: module has {module}, this rprof expects {expected}"
            ),
            Error::Protocol(msg) => write!(f, "rprof: {msg}"),
            Error::Usage(msg) => write!(f, "rprof: {msg} (see --help)"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NoDriver { source, .. }
            | Error::PermissionDenied { source, .. }
            | Error::Open { source, .. }
            | Error::Ioctl { source, .. }
            | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let e = Error::NoDevice {
            path: "/dev/rprof".into(),
        };
        assert_eq!(
            e.to_string(),
            "rprof: /dev/rprof does not exist: is the rprof module loaded? (insmod rprof.ko)"
        );
        let e = Error::PermissionDenied {
            path: "/dev/rprof".into(),
            source: io::Error::from_raw_os_error(libc::EPERM),
        };
        assert_eq!(
            e.to_string(),
            "rprof: permission denied: rprof needs CAP_PERFMON or CAP_SYS_ADMIN (run as root)"
        );
        let e = Error::VersionMismatch {
            module: 2,
            expected: 1,
        };
        assert_eq!(
            e.to_string(),
            "rprof: ABI version mismatch: module has 2, this rprof expects 1"
        );
        let e = Error::ioctl(
            "RPROF_IOC_SET_CONFIG",
            io::Error::from_raw_os_error(libc::EBUSY),
        );
        assert!(
            e.to_string()
                .starts_with("rprof: RPROF_IOC_SET_CONFIG failed: EBUSY ("),
            "got {e}"
        );
        assert_eq!(e.raw_os_error(), Some(libc::EBUSY));
        // A bare SET_CONFIG (not through a Session) still says why.
        let e = Error::ioctl(
            "RPROF_IOC_SET_CONFIG",
            io::Error::from_raw_os_error(libc::EPERM),
        );
        assert!(
            e.to_string().ends_with(
                "EPERM (Operation not permitted): the session's buffers pass your \
                 locked-memory limit (ulimit -l), beyond the module's mlock_kb allowance; \
                 CAP_IPC_LOCK lifts it"
            ),
            "got {e}"
        );
        // EPERM at SET_CONFIG is the locked-memory limit, not the
        // capability (that is EPERM at open).
        let refusal = crate::memlock::Refusal {
            memory: crate::memlock::SessionMemory {
                buffer_bytes: 1025 * 4096,
                ring_bytes: 80 * 4096,
                cpus: 2,
            },
            rlimit: Some(4 << 20),
            mlock_kb: 2048,
        };
        let e = Error::LockedMemory(refusal);
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        let text = e.to_string();
        assert!(
            text.starts_with(
                "rprof: the session's buffers (4740 KiB: event buffer 4100 KiB, rings 640 KiB \
                 for 2 CPUs) pass your locked-memory limit (RLIMIT_MEMLOCK 4096 KiB,"
            ) && text.ends_with("or run with CAP_IPC_LOCK")
                && !text.contains('\n'),
            "got {text}"
        );
        let e = Error::ioctl(
            "RPROF_IOC_ADD_UNWIND",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(
            e.to_string()
                .ends_with("fill the module's unwind_kb parameter"),
            "got {e}"
        );
        let e = Error::Usage("-p PID and a command cannot be combined".into());
        assert_eq!(
            e.to_string(),
            "rprof: -p PID and a command cannot be combined (see --help)"
        );
    }

    #[test]
    fn child_statuses_as_a_shell_gives_them() {
        use std::os::unix::process::ExitStatusExt;
        use std::process::ExitStatus;
        assert_eq!(shell_status(ExitStatus::from_raw(0)), 0);
        assert_eq!(shell_status(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(shell_status(ExitStatus::from_raw(libc::SIGKILL)), 137);
        assert_eq!(shell_status(ExitStatus::from_raw(libc::SIGSEGV)), 139);
    }
}

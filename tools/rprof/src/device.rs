//! `/dev/rprof`: the device file and its ioctls.
//!
//! [`Device`] owns an open file of the misc device described by
//! `include/uapi/linux/rprof.h` and offers one safe method per ioctl.  The
//! raw `ioctl(2)` is available as [`Device::ioctl_raw`] for tests that must
//! send what the safe methods never would.
//!
//! A session is: [`Device::set_config`], then [`Device::start`], reading the
//! event stream with [`Device::read`] or a [`MmapReader`](crate::MmapReader),
//! [`Device::stop`], [`Device::flush`] and a last read.  Closing the file
//! ends whatever the module still has of the session.

use crate::error::Error;
use rprof_abi::*;
use std::ffi::c_void;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the module's misc device appears.
pub const DEFAULT_PATH: &str = "/dev/rprof";

/// What `RPROF_IOC_LOOKUP_COOKIE` tells about a file cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieInfo {
    /// The path, without its NUL.
    pub path: Vec<u8>,
    /// `RPROF_COOKIE_DELETED`, `_TRUNCATED`, `_NO_PATH`.
    pub flags: u32,
    /// `new_encode_dev()` of the file's device.
    pub dev: u64,
    /// The file's inode number.
    pub ino: u64,
}

/// The first buffer [`Device::lookup_cookie`] tries.
const LOOKUP_FIRST_SIZE: usize = 256;
/// The largest buffer [`Device::lookup_cookie`] offers (PATH_MAX is 4096;
/// the module never needs more, but leave room).
const LOOKUP_MAX_SIZE: usize = 1 << 16;

/// An open `/dev/rprof`.
#[derive(Debug)]
pub struct Device {
    file: File,
    path: PathBuf,
}

/// Checks that a module's ABI version (`RPROF_IOC_GET_VERSION`) is
/// [`RPROF_ABI_VERSION`]: [`Error::VersionMismatch`] otherwise.
pub fn check_abi_version(module: u32) -> Result<(), Error> {
    if module != RPROF_ABI_VERSION {
        return Err(Error::VersionMismatch {
            module,
            expected: RPROF_ABI_VERSION,
        });
    }
    Ok(())
}

impl Device {
    /// Opens the device at `path` (normally [`DEFAULT_PATH`]) for reading
    /// and writing.
    ///
    /// The errors say what to do: a missing node means the module is not
    /// loaded, EPERM/EACCES that the caller lacks CAP_PERFMON or
    /// CAP_SYS_ADMIN.
    pub fn open(path: impl AsRef<Path>) -> Result<Device, Error> {
        let path = path.as_ref().to_path_buf();
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => Ok(Device { file, path }),
            Err(source) => Err(match source.raw_os_error() {
                Some(libc::ENOENT) => Error::NoDevice { path },
                Some(libc::ENXIO | libc::ENODEV) => Error::NoDriver { path, source },
                Some(libc::EPERM | libc::EACCES) => Error::PermissionDenied { path, source },
                _ => Error::Open { path, source },
            }),
        }
    }

    /// The path this device was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `ioctl(fd, req, arg)`; returns its non-negative result or the
    /// errno as an [`io::Error`].
    ///
    /// # Safety
    ///
    /// `arg` must be valid for what request `req` makes the module read or
    /// write through it: for the rprof requests, a structure of the size in
    /// `req` (or, for `RPROF_IOC_SET_CONFIG` and `RPROF_IOC_GET_STATS`, of
    /// the size in the structure's own `size` field, and for GET_STATS also
    /// `nr_cpus` entries at `cpus`).  A null `arg` is always sound: the
    /// kernel fails any access through it with EFAULT.
    pub unsafe fn ioctl_raw(&self, req: u32, arg: *mut c_void) -> io::Result<i32> {
        // SAFETY: the fd is open for the lifetime of `self`; what the kernel
        // does with `arg` is the caller's contract above.  `req as _` is the
        // C ABI's `unsigned long` (glibc) or `int` (musl) request parameter.
        let ret = unsafe { libc::ioctl(self.file.as_raw_fd(), req as _, arg) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    }

    /// Calls an ioctl that takes no argument (`_IO()`), passing 0.
    pub fn ioctl_no_arg(&self, req: u32) -> io::Result<i32> {
        // SAFETY: a null argument cannot make the kernel touch our memory.
        unsafe { self.ioctl_raw(req, std::ptr::null_mut()) }
    }

    /// `RPROF_IOC_GET_VERSION`: the ABI version of the module.
    pub fn version(&self) -> Result<u32, Error> {
        let mut version: u32 = 0;
        // SAFETY: GET_VERSION writes one __u32 through its argument, which
        // points at `version`.
        unsafe { self.ioctl_raw(RPROF_IOC_GET_VERSION, (&raw mut version).cast()) }
            .map_err(|e| Error::ioctl("RPROF_IOC_GET_VERSION", e))?;
        Ok(version)
    }

    /// Checks that the module speaks [`RPROF_ABI_VERSION`].
    pub fn check_version(&self) -> Result<(), Error> {
        check_abi_version(self.version()?)
    }

    /// `RPROF_IOC_SET_CONFIG`: configures a session owned by this file.
    ///
    /// `config.size` is passed as is (normally [`RPROF_CONFIG_SIZE`], see
    /// `rprof_config::new()`); a size larger than the structure is refused
    /// here, since the module would read past it.
    pub fn set_config(&self, config: &rprof_config) -> Result<(), Error> {
        if config.size as usize > size_of::<rprof_config>() {
            return Err(Error::Protocol(format!(
                "config.size {} is larger than struct rprof_config ({})",
                config.size,
                size_of::<rprof_config>()
            )));
        }
        let arg = std::ptr::from_ref(config).cast_mut().cast();
        // SAFETY: SET_CONFIG only reads `config.size` bytes at its argument,
        // at most the whole of `*config` as checked above.
        unsafe { self.ioctl_raw(RPROF_IOC_SET_CONFIG, arg) }
            .map_err(|e| Error::ioctl("RPROF_IOC_SET_CONFIG", e))?;
        Ok(())
    }

    /// `RPROF_IOC_START`: starts sampling the configured session.
    pub fn start(&self) -> Result<(), Error> {
        self.ioctl_no_arg(RPROF_IOC_START)
            .map_err(|e| Error::ioctl("RPROF_IOC_START", e))?;
        Ok(())
    }

    /// `RPROF_IOC_STOP`: stops sampling.
    pub fn stop(&self) -> Result<(), Error> {
        self.ioctl_no_arg(RPROF_IOC_STOP)
            .map_err(|e| Error::ioctl("RPROF_IOC_STOP", e))?;
        Ok(())
    }

    /// `RPROF_IOC_FLUSH`: drains every CPU's ring into the event buffer.
    pub fn flush(&self) -> Result<(), Error> {
        self.ioctl_no_arg(RPROF_IOC_FLUSH)
            .map_err(|e| Error::ioctl("RPROF_IOC_FLUSH", e))?;
        Ok(())
    }

    /// `RPROF_IOC_RESET_COOKIES`: the running session forgets its cookies
    /// and stacks (and lets go of the files they pin), with a RESET record
    /// in the stream; sampling goes on.
    pub fn reset_cookies(&self) -> Result<(), Error> {
        self.ioctl_no_arg(RPROF_IOC_RESET_COOKIES)
            .map_err(|e| Error::ioctl("RPROF_IOC_RESET_COOKIES", e))?;
        Ok(())
    }

    /// `RPROF_IOC_ADD_UNWIND`: gives this file's session the compiled
    /// unwind table of the file open as `file` (a `struct
    /// rprof_unwind_table_header` and its rows, as `rprof-unwind` writes
    /// them).
    ///
    /// The session may already have a table for that file (EEXIST): it is
    /// the same file, so that is done too and returns `Ok`.  The other
    /// errors say why the module took none (see the header): EINVAL a
    /// table it refuses, ENOSPC its `unwind_kb` is used up, EPERM the
    /// locked-memory limit, EBADF a bad descriptor, EBUSY another file's
    /// session, and ENOTTY a module without unwind tables.
    pub fn add_unwind(&self, file: BorrowedFd<'_>, table: &[u8]) -> Result<(), Error> {
        let mut arg =
            rprof_unwind_add::new(file.as_raw_fd(), table.as_ptr() as u64, table.len() as u64);
        // SAFETY: ADD_UNWIND reads the one structure at its argument,
        // `arg`, and at most `table_bytes` bytes at `table`, which are the
        // `table.len()` bytes of `table`, borrowed for the call; it writes
        // nothing.  `file` is open for the call (borrowed).
        match unsafe { self.ioctl_raw(RPROF_IOC_ADD_UNWIND, (&raw mut arg).cast()) } {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            Err(e) => Err(Error::ioctl("RPROF_IOC_ADD_UNWIND", e)),
        }
    }

    /// Another descriptor of the same open file (`dup`): its ioctls act on
    /// this file's session, so that a second thread can use it.
    pub fn try_clone(&self) -> Result<Device, Error> {
        let file = self
            .file
            .try_clone()
            .map_err(|e| Error::io("dup of /dev/rprof", e))?;
        Ok(Device {
            file,
            path: self.path.clone(),
        })
    }

    /// One `RPROF_IOC_GET_STATS` with `nr_cpus` entries at `cpus`.
    fn get_stats(&self, cpus: &mut [rprof_cpu_stats]) -> Result<rprof_stats, Error> {
        let mut stats = rprof_stats::new();
        if !cpus.is_empty() {
            stats.nr_cpus = u32::try_from(cpus.len())
                .map_err(|_| Error::Protocol(format!("{} CPUs", cpus.len())))?;
            stats.cpus = cpus.as_mut_ptr() as u64;
        }
        // SAFETY: GET_STATS reads and writes `stats.size` bytes at its
        // argument, the whole of `stats`, and writes at most `nr_cpus`
        // entries at `cpus`, which is `cpus.len()` entries of `cpus` (or
        // nothing: `cpus` = 0 and `nr_cpus` = 0).
        unsafe { self.ioctl_raw(RPROF_IOC_GET_STATS, (&raw mut stats).cast()) }
            .map_err(|e| Error::ioctl("RPROF_IOC_GET_STATS", e))?;
        // Do not hand out the (soon dangling) address of `cpus`.
        stats.cpus = 0;
        Ok(stats)
    }

    /// `RPROF_IOC_GET_STATS`: the module's statistics, and with `per_cpu`
    /// also every CPU's counters.
    ///
    /// Follows the protocol of the header: a first call with `nr_cpus` = 0
    /// learns how many CPUs the module has, a second passes an array of
    /// that many entries.  The returned `stats.nr_cpus` is the module's CPU
    /// count; the vector has an entry per CPU it filled.
    pub fn stats(&self, per_cpu: bool) -> Result<(rprof_stats, Vec<rprof_cpu_stats>), Error> {
        let mut stats = self.get_stats(&mut [])?;
        if !per_cpu {
            return Ok((stats, Vec::new()));
        }
        // The CPU count can only change under CPU hotplug; retry a few times.
        for _ in 0..4 {
            let n = stats.nr_cpus as usize;
            let mut cpus = vec![rprof_cpu_stats::default(); n];
            stats = self.get_stats(&mut cpus)?;
            if stats.nr_cpus as usize <= n {
                cpus.truncate(stats.nr_cpus as usize);
                return Ok((stats, cpus));
            }
        }
        Err(Error::Protocol(
            "RPROF_IOC_GET_STATS: the CPU count kept changing".to_string(),
        ))
    }

    /// One `RPROF_IOC_LOOKUP_COOKIE` of `cookie` into `buf` (`path_len` =
    /// `buf.len()`, capped to `u32::MAX`).
    ///
    /// Returns the structure as the module left it, whatever the outcome
    /// (after ENAMETOOLONG its `path_len` is the size needed), and the
    /// outcome.  [`Device::lookup_cookie`] is the convenient form.
    pub fn lookup_cookie_into(
        &self,
        cookie: u64,
        buf: &mut [u8],
    ) -> (rprof_cookie_lookup, io::Result<()>) {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let mut arg = rprof_cookie_lookup::new(cookie, buf.as_mut_ptr() as u64, len);
        // SAFETY: LOOKUP_COOKIE reads and writes the one structure at its
        // argument, `arg`, and writes at most `path_len` bytes at `path`,
        // which are `len` <= `buf.len()` bytes of `buf`, borrowed mutably
        // for the call.
        let result = unsafe { self.ioctl_raw(RPROF_IOC_LOOKUP_COOKIE, (&raw mut arg).cast()) };
        // Do not hand out the (soon dangling) address of `buf`.
        arg.path = 0;
        (arg, result.map(|_| ()))
    }

    /// `RPROF_IOC_LOOKUP_COOKIE`: the path, device and inode of a file
    /// cookie of this file's session, with a buffer grown as the module
    /// asks (ENAMETOOLONG).
    ///
    /// The module says ENOENT for a cookie it does not know, EINVAL when
    /// this file has no session, EBUSY when another file owns it.
    pub fn lookup_cookie(&self, cookie: u64) -> Result<CookieInfo, Error> {
        let mut size = LOOKUP_FIRST_SIZE;
        loop {
            let mut buf = vec![0u8; size];
            let (arg, result) = self.lookup_cookie_into(cookie, &mut buf);
            match result {
                Ok(()) => {
                    // path_len counts the NUL; trust only what fits `buf`.
                    let n = (arg.path_len as usize).min(buf.len());
                    let end = buf[..n].iter().position(|&c| c == 0).unwrap_or(n);
                    buf.truncate(end);
                    return Ok(CookieInfo {
                        path: buf,
                        flags: arg.flags,
                        dev: arg.dev,
                        ino: arg.ino,
                    });
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::ENAMETOOLONG) && size < LOOKUP_MAX_SIZE =>
                {
                    let needed = arg.path_len as usize;
                    size = if needed > size { needed } else { size * 2 }.min(LOOKUP_MAX_SIZE);
                }
                Err(e) => return Err(Error::ioctl("RPROF_IOC_LOOKUP_COOKIE", e)),
            }
        }
    }

    /// `read()`: copies records of the event stream into `buf`.
    ///
    /// Returns the bytes read.  If the module has nothing to give, the
    /// error is EAGAIN (non-blocking) or the call waits; use
    /// [`Device::poll`] first.
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Error> {
        (&self.file)
            .read(buf)
            .map_err(|e| Error::io("read of /dev/rprof", e))
    }

    /// `poll()` for input, waiting at most `timeout`.
    ///
    /// Returns whether the device is readable; an interrupted wait (a
    /// signal) returns `false`.
    pub fn poll(&self, timeout: Duration) -> Result<bool, Error> {
        self.poll_with(timeout, &[])
    }

    /// [`Device::poll`] that also ends when one of `also` (other
    /// descriptors: a command's pidfd, the stop signal's pipe; at most
    /// two) polls readable.
    pub fn poll_with(&self, timeout: Duration, also: &[BorrowedFd<'_>]) -> Result<bool, Error> {
        let pollfd = |fd: RawFd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut pfds = [pollfd(self.file.as_raw_fd()), pollfd(-1), pollfd(-1)];
        for (p, fd) in pfds[1..].iter_mut().zip(also) {
            p.fd = fd.as_raw_fd();
        }
        // Rounded up: a wait of 0.3 ms is not a busy loop.
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `pfds` is two valid pollfds (poll ignores a negative fd)
        // and we pass their count.
        let ret = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        let pfd = pfds[0];
        if ret < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(Error::io("poll of /dev/rprof", e));
        }
        if pfd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(Error::Protocol(format!(
                "poll of /dev/rprof reported an error (revents {:#x})",
                pfd.revents
            )));
        }
        Ok(pfd.revents & libc::POLLIN != 0)
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl AsRawFd for Device {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_missing_device_says_module_not_loaded() {
        let path = "/nonexistent/rprof-test/dev/rprof";
        match Device::open(path) {
            Err(e @ Error::NoDevice { .. }) => {
                assert!(
                    e.to_string().contains("is the rprof module loaded?"),
                    "got {e}"
                )
            }
            other => panic!("expected NoDevice, got {other:?}"),
        }
    }

    /// Any file gets an ioctl error from the wrappers (ENOTTY), never a
    /// crash; this exercises the paths without a module.
    #[test]
    fn ioctls_on_a_plain_file_fail_cleanly() {
        let dir = std::env::temp_dir().join(format!("rprof-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("not-a-device");
        std::fs::write(&path, b"").expect("temp file");
        let dev = Device::open(&path).expect("open temp file");
        match dev.version() {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "got {e}"),
            Ok(v) => panic!("expected ENOTTY, got version {v}"),
        }
        assert!(dev.stats(true).is_err());
        match dev.lookup_cookie(17) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "got {e}"),
            Ok(c) => panic!("expected ENOTTY, got {c:?}"),
        }
        let mut small = [0u8; 1];
        let (arg, result) = dev.lookup_cookie_into(17, &mut small);
        assert!(result.is_err());
        assert_eq!((arg.cookie, arg.path, arg.path_len), (17, 0, 1));
        assert!(dev.start().is_err());
        match dev.add_unwind(dev.as_fd(), &[0u8; 48]) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "got {e}"),
            Ok(()) => panic!("ADD_UNWIND on a plain file succeeded"),
        }
        let copy = dev.try_clone().expect("dup");
        assert_eq!(copy.path(), dev.path());
        let mut big = rprof_config::new();
        big.size += 8;
        assert!(matches!(dev.set_config(&big), Err(Error::Protocol(_))));
        assert!(dev.poll(Duration::from_millis(0)).expect("poll"));
        let mut buf = [0u8; 8];
        assert_eq!(dev.read(&mut buf).expect("read"), 0);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}

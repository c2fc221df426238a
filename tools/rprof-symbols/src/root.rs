//! Where a recording's paths are opened: the host's own tree, or a
//! `--symfs` directory that stands for the recorded machine's root.
//!
//! Paths come from recordings and are not trusted.  Under a symfs, a path
//! must not reach outside it: not with `..`, not through a symbolic link
//! (relative or absolute), not through a `/proc` magic link.  The kernel
//! enforces that for us: `openat2(2)` with `RESOLVE_IN_ROOT` resolves the
//! whole path as if the symfs were `/`, so `..` stops at the symfs and an
//! absolute symlink such as `lib64/ld-linux-x86-64.so.2 ->
//! /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`, common in copied sysroots,
//! lands on the copy inside the symfs, which is what the user meant.  On a
//! kernel without `openat2` (before 5.6) a symfs path is refused rather
//! than opened unchecked.
//!
//! Only a regular file is opened for reading (a recording may name a
//! FIFO, a device or a `/proc` file): the path is opened with `O_PATH`
//! first, which opens nothing behind it, and only what `fstat` of that
//! says is a regular file is then opened, through the `O_PATH` descriptor
//! itself (`/proc/self/fd/N`), so that nothing can be swapped in between.

use std::fs::File;
use std::io::{Error, ErrorKind, Read, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The largest file [`Root::read`] reads: 4 GiB.
pub const MAX_FILE: u64 = 1 << 32;

/// The tree recorded paths are opened in.
///
/// Invariant: `dir`, when set, is an open `O_PATH` descriptor of a
/// directory, and `dir_path` is the path it was opened by (for messages).
#[derive(Debug, Default)]
pub struct Root {
    dir: Option<(OwnedFd, PathBuf)>,
}

impl Root {
    /// The host's own root: paths are opened as they are.
    pub fn host() -> Root {
        Root::default()
    }

    /// A symfs: recorded paths are resolved inside `dir` as if it were
    /// `/`.
    pub fn symfs(dir: &Path) -> Result<Root> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(dir)
            .map_err(|e| Error::new(e.kind(), format!("--symfs {}: {e}", dir.display())))?;
        Ok(Root {
            dir: Some((OwnedFd::from(file), dir.to_path_buf())),
        })
    }

    /// Whether this is a symfs.
    pub fn is_symfs(&self) -> bool {
        self.dir.is_some()
    }

    /// The path a recorded `path` stands for here, for messages (a symfs
    /// path is shown under its directory).
    pub fn display(&self, path: &str) -> PathBuf {
        match &self.dir {
            Some((_, dir)) => dir.join(path.trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    }

    /// Opens the recorded `path` for reading if it is a regular file of at
    /// most [`MAX_FILE`] bytes.
    pub fn open(&self, path: &str) -> Result<File> {
        match &self.dir {
            None => open_regular(Path::new(path)),
            Some((dir, _)) => reopen_regular(open_in_root(dir, path)?),
        }
    }

    /// The bytes of the recorded `path` (see [`Root::open`] and
    /// [`read_sized`]).
    pub fn read(&self, path: &str) -> Result<Vec<u8>> {
        read_sized(self.open(path)?, MAX_FILE)
    }
}

/// The bytes of `file`, an open regular file: no more than `fstat` says
/// it holds, and at most `cap`.  Files of /proc and /sys are regular
/// files that say they hold 0 bytes: they give nothing (a recording that
/// names /proc/self/pagemap must not make a report read gigabytes).
pub fn read_sized(file: File, cap: u64) -> Result<Vec<u8>> {
    let len = file.metadata()?.len().min(cap);
    let mut data = Vec::new();
    file.take(len).read_to_end(&mut data)?;
    Ok(data)
}

/// Whether `meta` is of a regular file of at most [`MAX_FILE`] bytes.
fn check_regular(meta: &std::fs::Metadata) -> Result<()> {
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() > MAX_FILE {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("larger than {MAX_FILE} bytes"),
        ));
    }
    Ok(())
}

/// `path` opened for reading if it is a regular file of at most
/// [`MAX_FILE`] bytes; nothing else behind the path is opened.
pub(crate) fn open_regular(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let only_path = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)?;
    reopen_regular(only_path)
}

/// The file `only_path` (an `O_PATH` descriptor) stands for, opened for
/// reading (`O_NONBLOCK | O_NOCTTY | O_CLOEXEC`) if `fstat` says it is a
/// regular file of at most [`MAX_FILE`] bytes.  The open goes through the
/// descriptor's own `/proc/self/fd` link, so it is the same file; without
/// `/proc` it fails rather than open a path that may have changed.
fn reopen_regular(only_path: File) -> Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let meta = only_path.metadata()?;
    check_regular(&meta)?;
    let link = format!("/proc/self/fd/{}", only_path.as_raw_fd());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&link)
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => Error::new(
                e.kind(),
                "/proc is not mounted: files are opened only through /proc/self/fd",
            ),
            _ => e,
        })?;
    // The link names the descriptor's own file; a mismatch would be a
    // /proc that is not the kernel's.
    let opened = file.metadata()?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(Error::other(format!("{link} is not the file it links to")));
    }
    Ok(file)
}

/// Opens `path` below `dir` with `openat2(RESOLVE_IN_ROOT |
/// RESOLVE_NO_MAGICLINKS)`, as an `O_PATH` descriptor.
#[allow(unsafe_code)]
fn open_in_root(dir: &OwnedFd, path: &str) -> Result<File> {
    let rel = path.trim_start_matches('/');
    let rel = if rel.is_empty() { "." } else { rel };
    let c_path = std::ffi::CString::new(rel)
        .map_err(|_| Error::new(ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: `open_how` is a plain C struct of integers; all zeroes is a
    // valid value, and the fields that matter are set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `dir` is an open descriptor (the type's invariant), `c_path`
    // a NUL-terminated string and `how` an initialized `open_how` whose
    // size is passed with it; all three outlive the call, which reads them
    // and returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c_path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let e = Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => Error::new(
                ErrorKind::Unsupported,
                "this kernel has no openat2(2), needed to keep --symfs paths inside the directory",
            ),
            Some(libc::EXDEV) | Some(libc::ELOOP) => Error::new(
                e.kind(),
                format!("{e} (the path leaves the --symfs directory or uses a /proc link)"),
            ),
            _ => e,
        });
    }
    let fd = i32::try_from(fd).map_err(|_| Error::other("openat2 returned a bad descriptor"))?;
    // SAFETY: `fd` was just returned by openat2 and is owned by nobody else.
    Ok(unsafe { File::from(OwnedFd::from_raw_fd(fd)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(name: &str) -> PathBuf {
        crate::testutil::test_dir("root", name)
    }

    /// Nothing outside the symfs is reachable: not by `..`, not by a
    /// relative or absolute symlink, not by /proc's magic links.  An
    /// absolute symlink resolves inside the symfs, as in a sysroot.
    #[test]
    fn symfs_cannot_be_escaped() {
        let base = tmp("escape");
        let outside = base.join("secret");
        std::fs::write(&outside, b"outside").unwrap();
        let fs = base.join("symfs");
        std::fs::create_dir_all(fs.join("lib")).unwrap();
        std::fs::create_dir_all(fs.join(base.strip_prefix("/").unwrap())).unwrap();
        std::fs::write(fs.join("lib/real.so"), b"inside").unwrap();
        // The same absolute path inside the symfs holds other bytes.
        std::fs::write(fs.join(outside.strip_prefix("/").unwrap()), b"copy").unwrap();
        symlink("real.so", fs.join("lib/rel.so")).unwrap();
        symlink("../../secret", fs.join("lib/up.so")).unwrap();
        symlink(&outside, fs.join("lib/abs.so")).unwrap();
        symlink("/proc/self/root/etc/hostname", fs.join("lib/proc.so")).unwrap();
        let root = Root::symfs(&fs).unwrap();
        let read = |p: &str| {
            root.read(p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        assert_eq!(read("/lib/real.so").unwrap(), "inside");
        assert_eq!(read("/lib/rel.so").unwrap(), "inside");
        // `..` stops at the symfs.
        assert_eq!(read("/../../../lib/real.so").unwrap(), "inside");
        assert!(
            read("/lib/up.so").is_err(),
            "a relative symlink left the symfs"
        );
        assert!(
            read(&format!("/../../../../..{}", outside.display())).unwrap() == "copy",
            "`..` left the symfs"
        );
        // An absolute symlink lands on the symfs's own copy.
        assert_eq!(read("/lib/abs.so").unwrap(), "copy");
        assert!(read("/lib/proc.so").is_err(), "a /proc link was followed");
        assert_eq!(root.display("/lib/real.so"), fs.join("lib/real.so"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// A FIFO or a device is refused at once, in a symfs or on the host.
    #[test]
    fn only_regular_files_open() {
        let base = tmp("fifo");
        crate::testutil::mkfifo(&base.join("fifo"));
        let symfs = Root::symfs(&base).unwrap();
        assert!(symfs.read("/fifo").is_err());
        assert!(symfs.read("/").is_err(), "a directory was read");
        let host = Root::host();
        for p in ["/dev/zero", "/dev/null"] {
            assert!(host.read(p).is_err(), "{p}");
        }
        assert!(host.read(&base.join("fifo").to_string_lossy()).is_err());
        assert!(Root::symfs(&base.join("fifo")).is_err(), "a FIFO as symfs");
        std::fs::remove_dir_all(&base).unwrap();
    }
}

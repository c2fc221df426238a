//! Symbolic names of errno values, for messages that tests and people can
//! match (`EPERM` rather than "Operation not permitted").

/// The symbolic name of `errno` (`"EINVAL"`), or `"errno N"` for values
/// this table does not know.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EALREADY => "EALREADY",
        libc::EINPROGRESS => "EINPROGRESS",
        // Kernel-internal codes that should never reach userspace, named so
        // that a leak is recognisable.
        512 => "ERESTARTSYS",
        524 => "ENOTSUPP",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// The symbolic name of the errno in `e`, or its description if it has none.
pub fn io_error_name(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(errno) => errno_name(errno),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(errno_name(libc::EPERM), "EPERM");
        assert_eq!(errno_name(libc::ENOTTY), "ENOTTY");
        assert_eq!(errno_name(libc::E2BIG), "E2BIG");
        assert_eq!(errno_name(libc::ENAMETOOLONG), "ENAMETOOLONG");
        assert_eq!(errno_name(4000), "errno 4000");
        let e = std::io::Error::from_raw_os_error(libc::EBUSY);
        assert_eq!(io_error_name(&e), "EBUSY");
    }
}

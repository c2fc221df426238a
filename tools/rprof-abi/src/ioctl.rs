//! The ioctl request numbers of `/dev/rprof`.
//!
//! bindgen does not evaluate `_IOR()` and friends, so the numbers are built
//! here from `RPROF_IOC_MAGIC`, the `RPROF_IOC_NR_*` constants and the sizes
//! of the generated structures, with the encoding of Linux's generic
//! `include/uapi/asm-generic/ioctl.h` (used by x86_64, arm64, riscv...):
//!
//! ```text
//!  31  30 29          16 15        8 7         0
//! +------+--------------+-----------+-----------+
//! | dir  |     size     |   type    |    nr     |
//! +------+--------------+-----------+-----------+
//! ```

use crate::bindings::*;
use core::mem::size_of;

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: userspace writes, the kernel reads.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes, userspace reads.
pub const IOC_READ: u32 = 2;

const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;

/// `_IOC(dir, type, nr, size)`.
///
/// # Panics
///
/// Panics (at compile time in a `const`) if a field does not fit its bits,
/// where C would silently produce a wrong number.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    assert!(dir < 4, "_IOC: dir out of range");
    assert!(ty < (1 << IOC_TYPEBITS), "_IOC: type out of range");
    assert!(nr < (1 << IOC_NRBITS), "_IOC: nr out of range");
    assert!(size < (1 << IOC_SIZEBITS), "_IOC: size out of range");
    (dir << IOC_DIRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
        | (ty << IOC_TYPESHIFT)
        | (nr << IOC_NRSHIFT)
}

/// `_IO(type, nr)`.
pub const fn io(ty: u32, nr: u32) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}

/// `_IOR(type, nr, T)` with `size` = `sizeof(T)`.
pub const fn ior(ty: u32, nr: u32, size: usize) -> u32 {
    ioc(IOC_READ, ty, nr, size)
}

/// `_IOW(type, nr, T)` with `size` = `sizeof(T)`.
pub const fn iow(ty: u32, nr: u32, size: usize) -> u32 {
    ioc(IOC_WRITE, ty, nr, size)
}

/// `_IOWR(type, nr, T)` with `size` = `sizeof(T)`.
pub const fn iowr(ty: u32, nr: u32, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}

/// `_IOC_NR(req)`.
pub const fn ioc_nr(req: u32) -> u32 {
    (req >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1)
}

/// `_IOC_TYPE(req)`.
pub const fn ioc_type(req: u32) -> u32 {
    (req >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1)
}

/// `_IOC_SIZE(req)`.
pub const fn ioc_size(req: u32) -> u32 {
    (req >> IOC_SIZESHIFT) & ((1 << IOC_SIZEBITS) - 1)
}

/// `_IOC_DIR(req)`.
pub const fn ioc_dir(req: u32) -> u32 {
    req >> IOC_DIRSHIFT
}

/// `RPROF_IOC_GET_VERSION`: `_IOR(RPROF_IOC_MAGIC, 0x00, __u32)`.
pub const RPROF_IOC_GET_VERSION: u32 =
    ior(RPROF_IOC_MAGIC, RPROF_IOC_NR_GET_VERSION, size_of::<u32>());
/// `RPROF_IOC_SET_CONFIG`: `_IOW(RPROF_IOC_MAGIC, 0x01, struct rprof_config)`.
pub const RPROF_IOC_SET_CONFIG: u32 = iow(
    RPROF_IOC_MAGIC,
    RPROF_IOC_NR_SET_CONFIG,
    size_of::<rprof_config>(),
);
/// `RPROF_IOC_START`: `_IO(RPROF_IOC_MAGIC, 0x02)`.
pub const RPROF_IOC_START: u32 = io(RPROF_IOC_MAGIC, RPROF_IOC_NR_START);
/// `RPROF_IOC_STOP`: `_IO(RPROF_IOC_MAGIC, 0x03)`.
pub const RPROF_IOC_STOP: u32 = io(RPROF_IOC_MAGIC, RPROF_IOC_NR_STOP);
/// `RPROF_IOC_FLUSH`: `_IO(RPROF_IOC_MAGIC, 0x04)`.
pub const RPROF_IOC_FLUSH: u32 = io(RPROF_IOC_MAGIC, RPROF_IOC_NR_FLUSH);
/// `RPROF_IOC_GET_STATS`: `_IOWR(RPROF_IOC_MAGIC, 0x05, struct rprof_stats)`.
pub const RPROF_IOC_GET_STATS: u32 = iowr(
    RPROF_IOC_MAGIC,
    RPROF_IOC_NR_GET_STATS,
    size_of::<rprof_stats>(),
);
/// `RPROF_IOC_LOOKUP_COOKIE`:
/// `_IOWR(RPROF_IOC_MAGIC, 0x06, struct rprof_cookie_lookup)`.
pub const RPROF_IOC_LOOKUP_COOKIE: u32 = iowr(
    RPROF_IOC_MAGIC,
    RPROF_IOC_NR_LOOKUP_COOKIE,
    size_of::<rprof_cookie_lookup>(),
);
/// `RPROF_IOC_RESET_COOKIES`: `_IO(RPROF_IOC_MAGIC, 0x07)`.
pub const RPROF_IOC_RESET_COOKIES: u32 = io(RPROF_IOC_MAGIC, RPROF_IOC_NR_RESET_COOKIES);
/// `RPROF_IOC_ADD_UNWIND`:
/// `_IOW(RPROF_IOC_MAGIC, 0x08, struct rprof_unwind_add)`.
pub const RPROF_IOC_ADD_UNWIND: u32 = iow(
    RPROF_IOC_MAGIC,
    RPROF_IOC_NR_ADD_UNWIND,
    size_of::<rprof_unwind_add>(),
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values worked out by hand from the header:
    /// `_IOR(0xB9, 0, __u32)` = 2 << 30 | 4 << 16 | 0xB9 << 8 | 0, and so on.
    #[test]
    fn hand_computed_numbers() {
        let cases = [
            ("RPROF_IOC_GET_VERSION", RPROF_IOC_GET_VERSION, 0x8004_b900),
            ("RPROF_IOC_SET_CONFIG", RPROF_IOC_SET_CONFIG, 0x40a8_b901),
            ("RPROF_IOC_START", RPROF_IOC_START, 0x0000_b902),
            (
                "RPROF_IOC_RESET_COOKIES",
                RPROF_IOC_RESET_COOKIES,
                0x0000_b907,
            ),
            // 3 << 30 | 248 << 16 | 0xB9 << 8 | 5: the size is VER2's (the
            // module matches GET_STATS without its size field).
            ("RPROF_IOC_GET_STATS", RPROF_IOC_GET_STATS, 0xc0f8_b905),
            // 3 << 30 | 40 << 16 | 0xB9 << 8 | 6.
            (
                "RPROF_IOC_LOOKUP_COOKIE",
                RPROF_IOC_LOOKUP_COOKIE,
                0xc028_b906,
            ),
            // 1 << 30 | 24 << 16 | 0xB9 << 8 | 8.
            ("RPROF_IOC_ADD_UNWIND", RPROF_IOC_ADD_UNWIND, 0x4018_b908),
        ];
        for (name, got, expected) in cases {
            assert_eq!(
                got, expected,
                "{name}: expected {expected:#010x}, got {got:#010x}"
            );
        }
    }

    #[test]
    fn fields_decode_back() {
        let all = [
            (RPROF_IOC_GET_VERSION, IOC_READ, RPROF_IOC_NR_GET_VERSION, 4),
            (
                RPROF_IOC_SET_CONFIG,
                IOC_WRITE,
                RPROF_IOC_NR_SET_CONFIG,
                RPROF_CONFIG_SIZE_VER1,
            ),
            (RPROF_IOC_START, IOC_NONE, RPROF_IOC_NR_START, 0),
            (RPROF_IOC_STOP, IOC_NONE, RPROF_IOC_NR_STOP, 0),
            (RPROF_IOC_FLUSH, IOC_NONE, RPROF_IOC_NR_FLUSH, 0),
            (
                RPROF_IOC_RESET_COOKIES,
                IOC_NONE,
                RPROF_IOC_NR_RESET_COOKIES,
                0,
            ),
            (
                RPROF_IOC_GET_STATS,
                IOC_READ | IOC_WRITE,
                RPROF_IOC_NR_GET_STATS,
                RPROF_STATS_SIZE_VER2,
            ),
            (
                RPROF_IOC_LOOKUP_COOKIE,
                IOC_READ | IOC_WRITE,
                RPROF_IOC_NR_LOOKUP_COOKIE,
                40,
            ),
            (RPROF_IOC_ADD_UNWIND, IOC_WRITE, RPROF_IOC_NR_ADD_UNWIND, 24),
        ];
        for (req, dir, nr, size) in all {
            assert_eq!(ioc_type(req), RPROF_IOC_MAGIC, "{req:#x}: type");
            assert_eq!(ioc_dir(req), dir, "{req:#x}: dir");
            assert_eq!(ioc_nr(req), nr, "{req:#x}: nr");
            assert_eq!(ioc_size(req), size, "{req:#x}: size");
        }
    }
}

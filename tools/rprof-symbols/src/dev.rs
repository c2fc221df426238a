//! Device numbers: the kernel's `new_encode_dev()` (what COOKIE records
//! and `RPROF_IOC_LOOKUP_COOKIE` carry) and glibc's `dev_t` (what
//! `stat()` gives), compared as (major, minor).

/// (major, minor) of a `new_encode_dev()` value:
/// `(minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)`.
pub fn new_decode_dev(dev: u64) -> (u32, u32) {
    let dev = dev as u32;
    let major = (dev & 0xfff00) >> 8;
    let minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    (major, minor)
}

/// (major, minor) of a glibc `dev_t` as `stat()` returns it (the layout of
/// `gnu_dev_major`/`gnu_dev_minor`).
pub fn stat_decode_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The `new_encode_dev()` value of a `stat()`'s `st_dev`: what a COOKIE
/// record carries for that device (tests and benchmarks make records).
pub fn new_encode_stat_dev(st_dev: u64) -> u64 {
    let (major, minor) = stat_decode_dev(st_dev);
    let (major, minor) = (u64::from(major), u64::from(minor));
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// Whether a COOKIE record's `dev` and a `stat()`'s `st_dev` name the same
/// device.
pub fn same_device(cookie_dev: u64, st_dev: u64) -> bool {
    new_decode_dev(cookie_dev) == stat_decode_dev(st_dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // `| 0`: the low minor bits, spelled out.
    #[allow(clippy::identity_op)]
    fn encodings_agree() {
        // sda1 (8:1), a tmpfs (0:23), a large minor (259:65536).
        assert_eq!(new_decode_dev(0x801), (8, 1));
        for st in [0x801u64, 23, (259 << 8) | (0x100 << 12) | 0] {
            assert!(same_device(new_encode_stat_dev(st), st), "{st:#x}");
        }
        assert_eq!(stat_decode_dev(0x801), (8, 1));
        assert_eq!(new_decode_dev(0x17), (0, 23));
        // new_encode_dev(259, 65536) = 0 | 259 << 8 | 65536 << 12.
        let kernel = (259u64 << 8) | (65536u64 << 12);
        // makedev(259, 65536) = (259 & 0xfff) << 8 | (65536 & !0xff) << 12.
        let glibc = (259u64 << 8) | (65536u64 << 12);
        assert_eq!(new_decode_dev(kernel), (259, 65536));
        assert_eq!(stat_decode_dev(glibc), (259, 65536));
        assert!(same_device(kernel, glibc));
        assert!(!same_device(0x801, 0x802));
    }
}

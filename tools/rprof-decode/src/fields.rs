//! Little-endian field access at byte offsets.
//!
//! The decoder checks a record's length against the size of its structure
//! before reading any field, so the offsets here are always in bounds.

/// Reads `N` bytes at `off`.  The caller has checked `off + N <= b.len()`.
fn array<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// Reads a little-endian `u16` at `off`.
pub(crate) fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(array(b, off))
}

/// Reads a little-endian `u32` at `off`.
pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(array(b, off))
}

/// Reads a little-endian `i32` at `off`.
pub(crate) fn i32_at(b: &[u8], off: usize) -> i32 {
    i32::from_le_bytes(array(b, off))
}

/// Reads a little-endian `u64` at `off`.
pub(crate) fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(array(b, off))
}

/// Writes `v` little-endian at `off`.  The caller has sized `b`.
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little-endian at `off`.  The caller has sized `b`.
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little-endian at `off`.  The caller has sized `b`.
pub(crate) fn put_i32(b: &mut [u8], off: usize, v: i32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little-endian at `off`.  The caller has sized `b`.
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian() {
        let mut b = [0u8; 16];
        put_u64(&mut b, 0, 0x0102_0304_0506_0708);
        assert_eq!(b[..8], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(u32_at(&b, 0), 0x0506_0708);
        assert_eq!(u16_at(&b, 6), 0x0102);
        put_i32(&mut b, 8, -2);
        assert_eq!(i32_at(&b, 8), -2);
        assert_eq!(u32_at(&b, 8), 0xffff_fffe);
        put_u16(&mut b, 12, 0xbeef);
        let v = u32_at(&b, 12);
        put_u32(&mut b, 12, v);
        assert_eq!(u64_at(&b, 8), 0x0000_beef_ffff_fffe);
    }
}

// SPDX-License-Identifier: GPL-2.0

//! The size convention of extensible ioctl structures.
//!
//! As with `perf_event_attr`, a structure starts with its `__u32 size`: a
//! caller built against an older header passes a smaller size (at least the
//! first published one), a newer one a larger size, accepted only when every
//! byte this module does not know is zero.  The convention is shared by
//! `SET_CONFIG` and `GET_STATS`.

use kernel::prelude::*;

/// The largest structure size accepted at all.
pub(crate) const SIZE_MAX: usize = 4096;

/// Reads the leading `size` of the structure at `arg` and checks it against
/// `[min, SIZE_MAX]` (`EINVAL` below, `E2BIG` above).
pub(crate) fn read_size(arg: usize, min: usize) -> Result<usize> {
    let size: u32 = crate::kapi::compat::user_slice(arg, 4).reader().read()?;
    let size = size as usize;
    if size < min {
        return Err(EINVAL);
    }
    if size > SIZE_MAX {
        return Err(E2BIG);
    }
    Ok(size)
}

/// Checks that the bytes `[known, size)` of the structure at `arg`, those a
/// newer userspace knows and this module does not, are all zero (`E2BIG`
/// otherwise).
pub(crate) fn check_unknown_zero(arg: usize, known: usize, size: usize) -> Result {
    if size <= known {
        return Ok(());
    }
    let mut r = crate::kapi::compat::user_slice(arg.wrapping_add(known), size - known).reader();
    let mut rest = size - known;
    let mut chunk = [0u8; 64];
    while rest > 0 {
        let n = rest.min(chunk.len());
        r.read_slice(&mut chunk[..n])?;
        if chunk[..n].iter().any(|&b| b != 0) {
            return Err(E2BIG);
        }
        rest -= n;
    }
    Ok(())
}

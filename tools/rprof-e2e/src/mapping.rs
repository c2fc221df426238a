//! Raw `mmap()`s of the device for the checks that probe the mapping
//! rules themselves (`rprof::MmapReader` only makes the mappings the ABI
//! allows, and only consumes).
//!
//! A [`Map`] is one mapping, unmapped on drop; it keeps no reference to the
//! device, so a check can close the file while mappings are live.  Every
//! access to the mapped memory goes through a bounds-checked method here.

use rprof_abi::rprof_mmap_page;
use std::io;
use std::mem::offset_of;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Offset of `data_head` in the control page.
pub const DATA_HEAD: usize = offset_of!(rprof_mmap_page, data_head);
/// Offset of `data_tail` in the control page.
pub const DATA_TAIL: usize = offset_of!(rprof_mmap_page, data_tail);

/// One shared mapping of a file.
///
/// # Invariants
///
/// `ptr` is the start of a live mapping made by [`Map::new`] of at least
/// `len` bytes, readable if `readable` and writable if `writable`; `len` > 0
/// and `ptr` is page-aligned.
/// Only this object unmaps it.
#[derive(Debug)]
pub struct Map {
    ptr: NonNull<u8>,
    len: usize,
    readable: bool,
    writable: bool,
}

impl Map {
    /// `mmap(NULL, len, prot, MAP_SHARED, fd, offset)`.
    pub fn new(fd: RawFd, len: usize, prot: i32, offset: usize) -> io::Result<Map> {
        Self::with_flags(fd, len, prot, libc::MAP_SHARED, offset)
    }

    /// `mmap(NULL, len, prot, flags, fd, offset)` (no `MAP_FIXED`).
    pub fn with_flags(
        fd: RawFd,
        len: usize,
        prot: i32,
        flags: i32,
        offset: usize,
    ) -> io::Result<Map> {
        if flags & libc::MAP_FIXED != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        // SAFETY: a new mapping at an address of the kernel's choosing (null
        // hint, no MAP_FIXED, checked above) cannot alias any Rust object.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, off) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        // INVARIANT: a successful mmap of `len` > 0 bytes, page-aligned by
        // mmap's contract, readable when PROT_READ was asked for.
        Ok(Map {
            ptr,
            len,
            readable: prot & libc::PROT_READ != 0,
            writable: prot & libc::PROT_WRITE != 0,
        })
    }

    /// `mprotect()` of the whole mapping.
    ///
    /// A successful call may remove read access: the mapping then counts as
    /// unreadable for the accessors below.
    pub fn mprotect(&mut self, prot: i32) -> io::Result<()> {
        // SAFETY: the range is our own mapping (invariants); changing its
        // protection invalidates no Rust reference, since the accessors
        // hand out copies only.
        let ret = unsafe { libc::mprotect(self.ptr.as_ptr().cast(), self.len, prot) };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: readability and writability follow the new protection.
        self.readable = prot & libc::PROT_READ != 0;
        self.writable = prot & libc::PROT_WRITE != 0;
        Ok(())
    }

    /// `mremap(ptr, len, new_len, MREMAP_MAYMOVE)`.
    ///
    /// On success (which the device should refuse for its mappings) the
    /// mapping is at the new address with the new size and `self` follows
    /// it, so that drop unmaps the right range.
    pub fn mremap(&mut self, new_len: usize) -> io::Result<()> {
        if new_len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: remaps our own mapping (invariants); MREMAP_MAYMOVE
        // without MREMAP_FIXED lets the kernel pick a free range, so the
        // result aliases no Rust object.  No reference into the old range
        // exists (the accessors hand out copies only).
        let ptr = unsafe {
            libc::mremap(
                self.ptr.as_ptr().cast(),
                self.len,
                new_len,
                libc::MREMAP_MAYMOVE,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        match NonNull::new(ptr.cast::<u8>()) {
            Some(p) => {
                // INVARIANT: the mapping moved to `p` with `new_len` bytes
                // and the same protection.
                self.ptr = p;
                self.len = new_len;
                Ok(())
            }
            None => Err(io::Error::other("mremap returned null")),
        }
    }

    /// Unmaps the last `bytes` bytes (a multiple of the page size, less
    /// than the length); the rest stays mapped.
    pub fn unmap_tail(&mut self, bytes: usize) -> io::Result<()> {
        if bytes == 0 || bytes >= self.len {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let keep = self.len - bytes;
        // SAFETY: `[ptr + keep, ptr + len)` is the end of our own mapping
        // (invariants, `keep` < `len`); no reference into it exists.
        let ret = unsafe { libc::munmap(self.ptr.as_ptr().add(keep).cast(), bytes) };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: the first `keep` (> 0) bytes are still mapped.
        self.len = keep;
        Ok(())
    }

    /// Unmaps the whole mapping, reporting munmap's result (drop ignores
    /// it).
    pub fn unmap(self) -> io::Result<()> {
        let (ptr, len) = (self.ptr, self.len);
        std::mem::forget(self);
        // SAFETY: our own mapping (invariants), given up by forgetting
        // `self`, so nothing unmaps it twice or reads it afterwards.
        let ret = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Checks that `[offset, offset + len)` is inside a readable mapping.
    fn check_range(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = offset
            .checked_add(len)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        if !self.readable || end > self.len {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(())
    }

    /// Copies `len` bytes at `offset` out of the mapping, with volatile
    /// byte reads (the memory is shared with the kernel).
    pub fn read_bytes(&self, offset: usize, len: usize) -> io::Result<Vec<u8>> {
        self.check_range(offset, len)?;
        let base = self.ptr.as_ptr();
        Ok((offset..offset + len)
            .map(|i| {
                // SAFETY: `i` < `self.len` (checked above) inside a readable
                // mapping; a volatile read of a byte has no alignment or
                // validity requirement and creates no reference.
                unsafe { base.add(i).read_volatile() }
            })
            .collect())
    }

    /// The 8-byte-aligned `u64` at `offset`, as an atomic.
    fn atomic_u64(&self, offset: usize) -> io::Result<&AtomicU64> {
        self.check_range(offset, 8)?;
        if offset % 8 != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: 8 readable bytes in the mapping (checked), 8-aligned
        // (page-aligned base, offset checked); the mapping outlives the
        // returned borrow of `self`.  The kernel accesses the control
        // page's u64 fields atomically, and so do we through this.
        Ok(unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(offset).cast()) })
    }

    /// `load_acquire` of the `u64` at `offset` (8-aligned).
    pub fn load_u64(&self, offset: usize) -> io::Result<u64> {
        Ok(self.atomic_u64(offset)?.load(Ordering::Acquire))
    }

    /// `store_release` of `value` to the `u64` at `offset` (8-aligned) of a
    /// writable mapping.
    pub fn store_u64(&self, offset: usize, value: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        self.atomic_u64(offset)?.store(value, Ordering::Release);
        Ok(())
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: our own mapping (invariants), unmapped only here or in
        // `unmap`, which forgets `self`; no reference into it outlives
        // `self` (the accessors borrow `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The system's page size.
pub fn page_size() -> Result<usize, String> {
    rprof::mmap::page_size().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    //! A plain file stands in for the device.

    use super::*;
    use std::os::fd::AsRawFd;

    fn temp_file(name: &str, len: usize) -> (std::fs::File, std::path::PathBuf) {
        let path =
            std::env::temp_dir().join(format!("rprof-e2e-map-{name}-{}", std::process::id()));
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("temp file");
        file.set_len(len as u64).expect("set_len");
        (file, path)
    }

    #[test]
    fn accessors_are_bounds_checked() {
        let page = page_size().expect("page size");
        let (file, path) = temp_file("bounds", 2 * page);
        std::fs::write(&path, {
            let mut v = vec![0u8; 2 * page];
            v[DATA_HEAD..DATA_HEAD + 8].copy_from_slice(&42u64.to_ne_bytes());
            v[page] = 7;
            v
        })
        .expect("write");
        let mut m = Map::new(
            file.as_raw_fd(),
            2 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            0,
        )
        .expect("mmap");
        assert_eq!(m.load_u64(DATA_HEAD).expect("head"), 42);
        assert_eq!(m.read_bytes(page, 1).expect("byte"), [7]);
        assert!(m.load_u64(2 * page - 4).is_err(), "past the end");
        assert!(m.load_u64(4).is_err(), "misaligned");
        assert!(m.read_bytes(usize::MAX, 2).is_err(), "overflow");
        m.unmap_tail(page).expect("partial munmap");
        assert_eq!(m.read_bytes(page - 1, 1).expect("last kept byte"), [0]);
        assert!(m.read_bytes(page, 1).is_err(), "unmapped part");
        assert!(m.unmap_tail(page).is_err(), "whole mapping");
        m.mprotect(libc::PROT_NONE).expect("mprotect");
        assert!(m.read_bytes(0, 4).is_err(), "unreadable");
        m.unmap().expect("munmap");
        std::fs::remove_file(&path).expect("cleanup");
    }
}

//! The reader side of the mmap'ed event buffer.
//!
//! The module's event buffer is a power-of-two area of pages behind a
//! control page, `struct rprof_mmap_page` of `include/uapi/linux/rprof.h`.
//! [`MmapReader`] maps both, the control page read-write (only
//! `data_tail` is ever written) and the data read-only, and consumes
//! records with perf's protocol:
//!
//! ```text
//! head = load_acquire(&page->data_head);
//! copy the bytes [data_tail, head) at data[pos % data_size];
//! store_release(&page->data_tail, head);
//! ```
//!
//! The acquire pairs with the module's release of `data_head`, so the
//! records before `head` are visible; the release orders our reads of them
//! before the module may overwrite them.  The module never writes
//! `[data_tail, data_head)`, so the copied bytes do not change under us.

use crate::device::Device;
use crate::error::Error;
use rprof_abi::{rprof_mmap_page, RPROF_ABI_VERSION};
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::ptr::{addr_of, addr_of_mut, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};

/// One `mmap()` of the device, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` at `offset` with protection `prot`, shared.
    fn new(fd: i32, len: usize, prot: i32, offset: usize) -> io::Result<Mapping> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        // SAFETY: a new mapping at an address of the kernel's choosing
        // (null hint, no MAP_FIXED) cannot alias any Rust object.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` is a mapping made by `Mapping::new`, unmapped
        // only here; no reference into it outlives the `Mapping` (the
        // reader hands out copies only).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The system's page size.
pub fn page_size() -> Result<usize, Error> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .ok_or_else(|| Error::Protocol(format!("sysconf(_SC_PAGESIZE) returned {size}")))
}

/// A reader of the mmap'ed event buffer of a [`Device`].
///
/// Map it once the session is configured (the buffer belongs to it).  It
/// borrows the device, so the file outlives the mappings.
///
/// # Invariants
///
/// `ctrl` maps at least `size_of::<rprof_mmap_page>()` bytes of the control
/// page, readable and writable; `data` maps `data_size` (a power of two)
/// bytes of the data area, readable.  Both stay mapped as long as `self`.
pub struct MmapReader<'dev> {
    ctrl: Mapping,
    data: Mapping,
    data_size: usize,
    _device: PhantomData<&'dev Device>,
}

impl<'dev> MmapReader<'dev> {
    /// Maps the control page (offset 0, one page, read-write) and the data
    /// area (offset one page, `data_size` bytes, read-only) of `device`.
    pub fn new(device: &'dev Device) -> Result<Self, Error> {
        let page = page_size()?;
        let fd = device.as_raw_fd();
        let ctrl = Mapping::new(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0)
            .map_err(|e| Error::io("mmap of the rprof control page", e))?;
        let page_ptr = ctrl.ptr.as_ptr().cast::<rprof_mmap_page>();
        // SAFETY: `ctrl` maps a whole page, more than `rprof_mmap_page`, at
        // a page-aligned address; `version` and `data_size` are written by
        // the module before the page can be mapped and never change, so
        // plain (volatile, as the memory is shared) reads are fine.
        let (version, data_size) = unsafe {
            (
                addr_of!((*page_ptr).version).read_volatile(),
                addr_of!((*page_ptr).data_size).read_volatile(),
            )
        };
        if version != RPROF_ABI_VERSION {
            return Err(Error::Protocol(format!(
                "the rprof control page has ABI version {version}, this rprof expects {RPROF_ABI_VERSION}"
            )));
        }
        let data_size = usize::try_from(data_size)
            .ok()
            .filter(|s| s.is_power_of_two() && s % page == 0)
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "the rprof control page has data_size {data_size}, not a power-of-two number of pages"
                ))
            })?;
        let data = Mapping::new(fd, data_size, libc::PROT_READ, page)
            .map_err(|e| Error::io("mmap of the rprof event buffer", e))?;
        // INVARIANT: both mappings are made above with the sizes and
        // protections the type's invariants name.
        Ok(MmapReader {
            ctrl,
            data,
            data_size,
            _device: PhantomData,
        })
    }

    /// The size of the data area in bytes.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// `data_head` as an atomic.
    fn head(&self) -> &AtomicU64 {
        let page = self.ctrl.ptr.as_ptr().cast::<rprof_mmap_page>();
        // SAFETY: by the invariants the control page is mapped while `self`
        // lives; `data_head` is 8-aligned (offset 128 of a page-aligned
        // mapping); the module accesses it only with atomic 64-bit
        // operations (smp_store_release) and we only through this atomic.
        unsafe { AtomicU64::from_ptr(addr_of_mut!((*page).data_head)) }
    }

    /// `data_tail` as an atomic.
    fn tail(&self) -> &AtomicU64 {
        let page = self.ctrl.ptr.as_ptr().cast::<rprof_mmap_page>();
        // SAFETY: as for `head`: mapped, writable, 8-aligned (offset 192),
        // and only accessed atomically (READ_ONCE/smp_load_acquire in the
        // module).
        unsafe { AtomicU64::from_ptr(addr_of_mut!((*page).data_tail)) }
    }

    /// Bytes published by the module and not consumed yet.
    pub fn pending(&self) -> u64 {
        let head = self.head().load(Ordering::Acquire);
        head.wrapping_sub(self.tail().load(Ordering::Relaxed))
    }

    /// Hands every byte the module has published to `each`, straight from
    /// the mapping (one slice, or two when the bytes wrap around the end
    /// of the data area; a record may be split between them), then
    /// releases their space; returns how many bytes were handed.  When
    /// `each` fails, nothing is released and its error is returned.
    ///
    /// An impossible `data_head` (more than `data_size` ahead of
    /// `data_tail`) is an [`Error::Protocol`].
    pub fn consume_available(
        &mut self,
        each: &mut dyn FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<usize, Error> {
        let head = self.head().load(Ordering::Acquire);
        // Only this reader writes data_tail: a relaxed load sees our own
        // last store.
        let tail = self.tail().load(Ordering::Relaxed);
        let len = self.checked_len(head, tail)?;
        if len == 0 {
            return Ok(0);
        }
        let pos = (tail & (self.data_size as u64 - 1)) as usize;
        let first = len.min(self.data_size - pos);
        let base = self.data.ptr.as_ptr();
        // SAFETY: `pos + first` <= `data_size` and `len - first` <
        // `data_size`, so both ranges are inside the data mapping (the
        // invariants); they hold [data_tail, data_head), which the module
        // does not write until we release it below, after the last use of
        // the slices (they do not outlive this block).
        unsafe {
            each(std::slice::from_raw_parts(base.add(pos), first))?;
            if len > first {
                each(std::slice::from_raw_parts(base, len - first))?;
            }
        }
        self.tail().store(head, Ordering::Release);
        Ok(len)
    }

    /// The bytes in [tail, head), checked against the buffer's size.
    fn checked_len(&self, head: u64, tail: u64) -> Result<usize, Error> {
        let len = head.wrapping_sub(tail);
        if len > self.data_size as u64 {
            return Err(Error::Protocol(format!(
                "rprof event buffer: data_head {head} is {len} bytes past data_tail {tail}, \
                 more than the buffer's {} bytes",
                self.data_size
            )));
        }
        // `len` <= `data_size`, which is a usize.
        Ok(len as usize)
    }

    /// Appends every record the module has published to `out` and releases
    /// their space; returns how many bytes were appended.
    ///
    /// Records that wrap around the end of the data area come out whole.
    /// An impossible `data_head` (more than `data_size` ahead of
    /// `data_tail`) is an [`Error::Protocol`].
    pub fn read_available(&mut self, out: &mut Vec<u8>) -> Result<usize, Error> {
        let head = self.head().load(Ordering::Acquire);
        // Only this reader writes data_tail: a relaxed load sees our own
        // last store.
        let tail = self.tail().load(Ordering::Relaxed);
        let len = self.checked_len(head, tail)?;
        if len == 0 {
            return Ok(0);
        }
        let pos = (tail & (self.data_size as u64 - 1)) as usize;
        let first = len.min(self.data_size - pos);
        out.reserve(len);
        let base = self.data.ptr.as_ptr();
        // SAFETY: `pos + first` <= `data_size` and `len - first` <
        // `data_size`, so both ranges are inside the data mapping (the
        // invariants); they hold [data_tail, data_head), which the module
        // does not write until we release it below, so the bytes do not
        // change while these slices exist.  The slices end with this block.
        unsafe {
            out.extend_from_slice(std::slice::from_raw_parts(base.add(pos), first));
            out.extend_from_slice(std::slice::from_raw_parts(base, len - first));
        }
        self.tail().store(head, Ordering::Release);
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    //! The module is played by a plain file: the reader maps it like the
    //! device, the test writes the control page and records with `pwrite`.

    use super::*;
    use rprof_decode::{decode_all, Record};
    use std::fs::File;
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    const HEAD: u64 = 128;
    const TAIL: u64 = 192;

    struct FakeModule {
        file: File,
        path: PathBuf,
        page: u64,
        data_size: u64,
    }

    impl FakeModule {
        fn new(name: &str, data_size: u64, version: u32) -> FakeModule {
            let page = page_size().unwrap() as u64;
            let path =
                std::env::temp_dir().join(format!("rprof-mmap-{name}-{}", std::process::id()));
            let file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            file.set_len(page + data_size).unwrap();
            file.write_all_at(&version.to_le_bytes(), 0).unwrap();
            file.write_all_at(&page.to_le_bytes(), 8).unwrap();
            file.write_all_at(&data_size.to_le_bytes(), 16).unwrap();
            FakeModule {
                file,
                path,
                page,
                data_size,
            }
        }

        fn u64_at(&self, off: u64) -> u64 {
            let mut b = [0u8; 8];
            self.file.read_exact_at(&mut b, off).unwrap();
            u64::from_le_bytes(b)
        }

        fn set(&self, off: u64, v: u64) {
            self.file.write_all_at(&v.to_le_bytes(), off).unwrap();
        }

        /// Writes `bytes` at stream position `pos`, wrapping, and publishes
        /// them by moving data_head past them.
        fn publish(&self, pos: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                let at = self.page + (pos + i as u64) % self.data_size;
                self.file.write_all_at(&[*b], at).unwrap();
            }
            self.set(HEAD, pos + bytes.len() as u64);
        }
    }

    impl Drop for FakeModule {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    fn sample(n: u64) -> Record {
        Record::Sample {
            flags: 1,
            time_ns: n,
            offset: 0x1000 + n,
            period: 1,
            stack: None,
        }
    }

    #[test]
    fn reads_published_records_across_the_wrap() {
        let page = page_size().unwrap() as u64;
        let fake = FakeModule::new("wrap", 2 * page, RPROF_ABI_VERSION);
        // Start 16 bytes before the end: a 32-byte sample wraps in halves.
        let start = 10 * fake.data_size - 16;
        fake.set(HEAD, start);
        fake.set(TAIL, start);
        let dev = Device::open(&fake.path).unwrap();
        let mut reader = MmapReader::new(&dev).unwrap();
        assert_eq!(reader.data_size(), 2 * page as usize);

        let mut out = Vec::new();
        assert_eq!(reader.read_available(&mut out).unwrap(), 0);

        let mut bytes = sample(1).to_bytes();
        sample(2).encode(&mut bytes);
        fake.publish(start, &bytes);
        assert_eq!(reader.pending(), 64);
        assert_eq!(reader.read_available(&mut out).unwrap(), 64);
        assert_eq!(decode_all(&out), Ok(vec![sample(1), sample(2)]));
        assert_eq!(fake.u64_at(TAIL), start + 64, "data_tail not released");
        assert_eq!(reader.pending(), 0);

        // A full buffer's worth, exactly data_size bytes.
        out.clear();
        let n = fake.data_size / 32;
        let mut bytes = Vec::new();
        for i in 0..n {
            sample(i).encode(&mut bytes);
        }
        fake.publish(start + 64, &bytes);
        assert_eq!(reader.read_available(&mut out).unwrap(), bytes.len());
        assert_eq!(out, bytes);
    }

    #[test]
    fn consumes_in_place_across_the_wrap_and_keeps_data_on_error() {
        let page = page_size().unwrap() as u64;
        let fake = FakeModule::new("consume", 2 * page, RPROF_ABI_VERSION);
        let start = 3 * fake.data_size - 16;
        fake.set(HEAD, start);
        fake.set(TAIL, start);
        let dev = Device::open(&fake.path).unwrap();
        let mut reader = MmapReader::new(&dev).unwrap();
        let mut bytes = sample(1).to_bytes();
        sample(2).encode(&mut bytes);
        fake.publish(start, &bytes);

        // A failing consumer releases nothing.
        let failed = reader.consume_available(&mut |_| Err(Error::Protocol("full disk".into())));
        assert!(failed.is_err());
        assert_eq!(
            fake.u64_at(TAIL),
            start,
            "data_tail released after an error"
        );
        assert_eq!(reader.pending(), 64);

        // The wrap gives two slices: 16 bytes, then 48.
        let mut slices = Vec::new();
        let n = reader
            .consume_available(&mut |b| {
                slices.push(b.to_vec());
                Ok(())
            })
            .unwrap();
        assert_eq!(n, 64);
        assert_eq!(slices.iter().map(Vec::len).collect::<Vec<_>>(), [16, 48]);
        assert_eq!(slices.concat(), bytes);
        assert_eq!(fake.u64_at(TAIL), start + 64);
        assert_eq!(
            reader
                .consume_available(&mut |_| panic!("no data"))
                .unwrap(),
            0
        );
    }

    #[test]
    fn impossible_head_is_an_error() {
        let page = page_size().unwrap() as u64;
        let fake = FakeModule::new("bad-head", page, RPROF_ABI_VERSION);
        let dev = Device::open(&fake.path).unwrap();
        let mut reader = MmapReader::new(&dev).unwrap();
        fake.set(HEAD, page + 8);
        let mut out = Vec::new();
        match reader.read_available(&mut out) {
            Err(Error::Protocol(msg)) => assert!(msg.contains("data_head"), "got {msg}"),
            other => panic!("expected a protocol error, got {other:?}"),
        }
        assert!(out.is_empty());
        assert_eq!(fake.u64_at(TAIL), 0, "data_tail moved on an error");
    }

    #[test]
    fn bad_control_page_is_refused() {
        let page = page_size().unwrap() as u64;
        let fake = FakeModule::new("bad-version", page, RPROF_ABI_VERSION + 1);
        let dev = Device::open(&fake.path).unwrap();
        assert!(matches!(MmapReader::new(&dev), Err(Error::Protocol(_))));
        let fake = FakeModule::new("bad-size", page, RPROF_ABI_VERSION);
        fake.set(16, 3 * page);
        let dev = Device::open(&fake.path).unwrap();
        assert!(matches!(MmapReader::new(&dev), Err(Error::Protocol(_))));
    }
}

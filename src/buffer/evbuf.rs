// SPDX-License-Identifier: GPL-2.0

//! The global event buffer: one control page and 2^n data pages of
//! vmalloc memory, charged to its owner, shared with userspace by `mmap()`.
//!
//! # Protocol (as perf's `data_head`/`data_tail`)
//!
//! ```text
//!   producer (the drain, process context, under the session's producer
//!   lock, which owns the `Producer`; the only writer of data and data_head)
//!     t = load_acquire(data_tail)          pairs with the reader's release
//!     free = size - (head - t)             (0 if the reader wrote nonsense)
//!     copy records to data[head % size ...]; head += len
//!     store_release(data_head, head)       publishes the records
//!
//!   consumer (userspace via mmap, or read() in the kernel; one at a time)
//!     h = load_acquire(data_head)
//!     consume [data_tail, h)
//!     store_release(data_tail, h)          returns the space
//! ```
//!
//! The producer never writes bytes the consumer has not released, so unread
//! data is never overwritten; what does not fit is counted by the caller and
//! reported in-band later.
//!
//! # Userspace owns the control page
//!
//! The control page is mapped writable, so every field of it may hold
//! anything at any moment, including between two loads.  The kernel
//! therefore never trusts it: the published head is kept in the kernel
//! ([`EventBuffer::head`]) and only mirrored into `data_head` for the
//! reader; `data_tail` is loaded exactly once per use and checked against
//! the kernel's head ([`EventBuffer::consumer`]): 8-byte aligned, not ahead
//! of the head and at most one buffer size behind it.  A tail that fails
//! the check makes `read()` fail with `EINVAL` and the producer write
//! nothing (its samples are counted as lost), so a hostile or confused
//! reader can hurt only its own session.  A reader that moves `data_tail`
//! backwards, within the rules, may read bytes the producer is rewriting:
//! the kernel then copies torn bytes to that reader, but reads only inside
//! the data area and validates every record size it acts on.  Positions are free-running `u64`s, so `data_head`
//! never goes backwards.  Every record is a multiple of 8 bytes and the data
//! area a power-of-two number of pages, so a record header never straddles
//! the end, though a record body may wrap around it.
//!
//! The memory is freed with `vfree()` when the buffer is dropped; pages
//! still mapped by a process keep their own reference until it unmaps them,
//! and each mapping keeps the buffer's locked-memory [`Charge`] until then.

use crate::buffer::charge::Charge;

use crate::kapi::helpers::{self, VmaReq};
use crate::kapi::miscdev::File;
use crate::uapi::{rprof_mmap_page, rprof_record_header, RPROF_ABI_VERSION};
use core::ffi::c_void;
use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::bindings;
use kernel::prelude::*;
use kernel::uaccess::UserSliceWriter;

const PAGE_SIZE: usize = bindings::PAGE_SIZE;

/// A record type of the uapi header, writable as raw bytes.
///
/// # Safety
///
/// Implementors are `#[repr(C)]` structures without padding bytes, whose
/// size is a multiple of 8 and that start with a `rprof_record_header`.
pub(crate) unsafe trait Record: Sized {
    /// The bytes of the record.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: No padding (trait contract), so every byte is initialised.
        unsafe { core::slice::from_raw_parts(self as *const Self as *const u8, size_of::<Self>()) }
    }

    /// A header for `Self` with `type_` and `flags`.
    fn header(type_: u32, flags: u16) -> rprof_record_header {
        rprof_record_header { type_: type_ as u16, flags, size: size_of::<Self>() as u32 }
    }
}

/// The event buffer.
///
/// # Invariants
///
/// - `base` is a zeroed vmalloc allocation of `(1 + data_pages)` pages;
///   the first is a `rprof_mmap_page`, the rest the data area of
///   `data_pages * PAGE_SIZE` bytes, a power of two.
/// - `charge` covers at least those pages.
///
/// The producer position is not part of this object: it belongs to the
/// single producer ([`Producer`]), so that the consumer side can share the
/// buffer by reference while the producer writes.
pub(crate) struct EventBuffer {
    base: *mut u8,
    data_pages: usize,
    /// The published head: the kernel's own copy of `data_head`, which
    /// only [`Self::publish`] writes.  Everything below it is complete
    /// records.
    head: AtomicU64,
    charge: Charge,
}

/// A consumer position checked against the kernel's head.
///
/// # Invariants
///
/// `tail` is a multiple of 8 and `tail <= head <= tail + size`, with `head`
/// a value of [`EventBuffer::head`] loaded after `tail`; so `[tail, head)`
/// holds published records (unless the reader rewound `data_tail`).
#[derive(Clone, Copy)]
pub(crate) struct Consumer {
    tail: u64,
    head: u64,
}

impl Consumer {
    /// Published bytes the consumer has not released.
    pub(crate) fn unread(&self) -> u64 {
        self.head - self.tail
    }
}

/// The producer's side of an [`EventBuffer`].
///
/// # Invariants
///
/// `head` is the producer position: all bytes in `[data_tail, head)` are
/// complete records, and `head - data_tail <= data size` as long as the
/// consumer follows the protocol.  There is one `Producer` per buffer.
pub(crate) struct Producer {
    head: u64,
}

// SAFETY: The buffer is plain memory; the protocol above orders accesses.
unsafe impl Send for EventBuffer {}
// SAFETY: `&self` methods only read the data area and use atomics on the
// control page.
unsafe impl Sync for EventBuffer {}

impl EventBuffer {
    /// The bytes of a buffer of `data_pages` data pages, control page
    /// included.
    pub(crate) fn bytes(data_pages: usize) -> Option<usize> {
        (1 + data_pages).checked_mul(PAGE_SIZE)
    }

    /// Allocates a zeroed buffer of `data_pages` (a power of two) data
    /// pages, paid for by `charge` (at least [`Self::bytes`]).
    pub(crate) fn new(data_pages: usize, charge: Charge) -> Result<Self> {
        if !data_pages.is_power_of_two() {
            return Err(EINVAL);
        }
        let bytes = Self::bytes(data_pages).ok_or(EINVAL)?;
        if charge.bytes() < bytes as u64 {
            return Err(EINVAL);
        }
        // SAFETY: Plain allocation; the helper zeroes the memory.
        let base = unsafe { helpers::rprof_vmalloc_account(bytes) } as *mut u8;
        if base.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: sized and charged as documented; nothing published.
        let buf = Self { base, data_pages, head: AtomicU64::new(0), charge };
        // SAFETY: The control page is ours and zeroed; nobody maps it yet.
        unsafe {
            let page = base as *mut rprof_mmap_page;
            (*page).version = RPROF_ABI_VERSION;
            (*page).data_offset = PAGE_SIZE as u64;
            (*page).data_size = buf.size();
        }
        Ok(buf)
    }

    /// The bytes charged to the owner's locked memory for this buffer.
    pub(crate) fn charged_bytes(&self) -> u64 {
        self.charge.bytes()
    }

    /// Bytes in the data area.
    pub(crate) fn size(&self) -> u64 {
        (self.data_pages * PAGE_SIZE) as u64
    }

    fn control_u64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is the offset of an 8-byte aligned `__u64` field
        // of the control page, which lives as long as `self`; userspace may
        // write it concurrently, hence atomic accesses only.
        unsafe { &*(self.base.add(offset) as *const AtomicU64) }
    }

    fn data_tail(&self) -> &AtomicU64 {
        self.control_u64(offset_of!(rprof_mmap_page, data_tail))
    }

    fn data_head(&self) -> &AtomicU64 {
        self.control_u64(offset_of!(rprof_mmap_page, data_head))
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: The data area starts one page in (type invariant).
        unsafe { self.base.add(PAGE_SIZE) }
    }

    /// The consumer position, loaded once from the control page and checked
    /// against the kernel's head; `None` if the reader wrote a `data_tail`
    /// that is unaligned, ahead of the head or more than a buffer behind.
    pub(crate) fn consumer(&self) -> Option<Consumer> {
        let tail = self.data_tail().load(Ordering::Acquire);
        let head = self.head.load(Ordering::Acquire);
        // Not `wrapping_sub`: a tail just below 2^64 would wrap to a small
        // `used` and pass the size check.
        let used = head.checked_sub(tail)?;
        // INVARIANT: aligned, and `tail <= head <= tail + size`.
        (tail % 8 == 0 && used <= self.size()).then_some(Consumer { tail, head })
    }

    /// Bytes published and not yet consumed (0 if the consumer is confused).
    pub(crate) fn available(&self) -> u64 {
        self.consumer().map_or(0, |c| c.unread())
    }

    /// The producer of this buffer; call once.
    pub(crate) fn producer(&self) -> Producer {
        // INVARIANT: the buffer starts empty.
        Producer { head: 0 }
    }

    /// Space the producer may fill now.
    pub(crate) fn free(&self, p: &Producer) -> u64 {
        let tail = self.data_tail().load(Ordering::Acquire);
        // A tail unaligned, ahead of head or too far behind: the consumer
        // broke the protocol; write nothing rather than overwrite what it
        // may read.  (`data_tail` is loaded once, as in `consumer()`.)
        match p.head.checked_sub(tail) {
            Some(used) if tail % 8 == 0 => self.size().saturating_sub(used),
            _ => 0,
        }
    }

    /// Appends `rec` if it fits; the caller publishes with [`Self::publish`].
    /// `reserve` bytes must stay free after it.
    #[inline(always)]
    pub(crate) fn write<R: Record>(&self, p: &mut Producer, rec: &R, reserve: u64) -> bool {
        let len = size_of::<R>();
        let start = (p.head & (self.size() - 1)) as usize;
        if start + len > self.size() as usize {
            // Wraps: in two pieces.
            return self.write_bytes(p, rec.as_bytes(), reserve);
        }
        if len as u64 + reserve > self.free(p) {
            return false;
        }
        // SAFETY: `[start, start + len)` lies in the data area (checked
        // above); the consumer released these bytes (`free()`), so nobody
        // reads them while we write.  A copy of a constant size, which the
        // compiler does with a few moves.
        unsafe { core::ptr::copy_nonoverlapping(rec as *const R as *const u8, self.data().add(start), len) };
        p.head += len as u64;
        true
    }

    /// Appends one record given as bytes (a header, then the rest; the
    /// length a multiple of 8) if it fits with `reserve` bytes to spare.
    pub(crate) fn write_bytes(&self, p: &mut Producer, bytes: &[u8], reserve: u64) -> bool {
        let len = bytes.len() as u64;
        if len + reserve > self.free(p) {
            return false;
        }
        let mask = self.size() - 1;
        let start = (p.head & mask) as usize;
        let first = bytes.len().min(self.size() as usize - start);
        // SAFETY: `[start, start + first)` and `[0, len - first)` lie in
        // the data area; the consumer released these bytes (checked with
        // `free()` above), so nobody reads them while we write.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.data().add(start), first);
            core::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), self.data(), bytes.len() - first);
        }
        p.head += len;
        true
    }

    /// Bytes the producer has written and not yet published.
    pub(crate) fn unpublished(&self, p: &Producer) -> u64 {
        // Only `publish`, with the one producer, stores `head`, and never
        // past `p.head`.
        p.head - self.head.load(Ordering::Relaxed)
    }

    /// Makes everything written so far visible to the consumer.
    pub(crate) fn publish(&self, p: &Producer) {
        self.head.store(p.head, Ordering::Release);
        self.data_head().store(p.head, Ordering::Release);
    }

    /// The consumer side of `read()`: copies whole records to `out` and
    /// returns the space.  `EINVAL` if the first record does not fit in
    /// `out` or the consumer position is corrupt (see the module doc);
    /// `Ok(0)` if nothing is there.  The caller excludes concurrent
    /// `read()`s.
    pub(crate) fn read_to_user(&self, out: &mut UserSliceWriter) -> Result<usize> {
        // One load of `data_tail`, checked: from here on only the copy is
        // used, whatever userspace writes to the control page meanwhile.
        let c = self.consumer().ok_or(EINVAL)?;
        let avail = c.unread();
        let mask = self.size() - 1;
        let mut done = 0u64;
        while done < avail {
            // `c.tail + done <= c.head`: no overflow (type invariant).
            let pos = ((c.tail + done) & mask) as usize;
            // SAFETY: `pos` is 8-byte aligned (the tail is, and so is every
            // size added to `done`) and below the data size, a multiple of
            // 8, so the 8-byte header lies inside the data area.  Volatile:
            // a reader that rewound `data_tail` may race with the producer
            // here (module doc); the value is checked before use.
            let hdr = unsafe { core::ptr::read_volatile(self.data().add(pos) as *const rprof_record_header) };
            let size = hdr.size as u64;
            if size < 8 || size % 8 != 0 || size > avail - done {
                // Our producer writes no such record: the reader rewound
                // `data_tail` to the middle of one.
                if done == 0 {
                    return Err(EINVAL);
                }
                break;
            }
            if size as usize > out.len() {
                if done == 0 {
                    return Err(EINVAL);
                }
                break;
            }
            self.copy_out(out, pos, size as usize)?;
            done += size;
        }
        self.data_tail().store(c.tail + done, Ordering::Release);
        Ok(done as usize)
    }

    /// Copies the `len` bytes at data position `pos` (wrapping at the end
    /// of the area; `pos` and `len` at most the data size) to `out`.
    ///
    /// Through a bounce buffer of volatile loads, never a slice of the
    /// data area: a reader that rewound `data_tail` may make us read bytes
    /// the producer is writing (module doc), and a Rust reference to
    /// memory written concurrently would be a data race.  `read()` is the
    /// simple consumer; `mmap()` is the fast one.
    fn copy_out(&self, out: &mut UserSliceWriter, pos: usize, len: usize) -> Result {
        let mask = self.size() as usize - 1;
        let mut bounce = [0u64; 32];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(bounce.len() * 8);
            // Records are multiples of 8 bytes and start 8-aligned, so the
            // area is copied in whole, aligned words.
            for (i, w) in bounce[..n / 8].iter_mut().enumerate() {
                let off = (pos + done + 8 * i) & mask;
                // SAFETY: `off` is 8-aligned and below the data size, a
                // multiple of 8: the word lies in the data area, which
                // lives as long as `self`.
                *w = unsafe { core::ptr::read_volatile(self.data().add(off) as *const u64) };
            }
            // SAFETY: `bounce` is plain initialised memory; its first `n`
            // bytes are the words just copied.
            let bytes = unsafe { core::slice::from_raw_parts(bounce.as_ptr() as *const u8, n) };
            out.write_slice(bytes)?;
            done += n;
        }
        Ok(())
    }

    /// Maps the control page or the data area into `vma`, as
    /// [`mapping_for`] allows.
    pub(crate) fn mmap(&self, _file: &File<'_>, vma: *mut bindings::vm_area_struct) -> Result {
        let mut req = VmaReq::default();
        // SAFETY: `vma` is the area being mapped, in `mmap()` under the
        // mmap lock; `req` is writable.
        unsafe { helpers::rprof_vma_req(vma, &mut req) };
        let (first, pages, writable) = mapping_for(&req, self.data_pages)?;
        // SAFETY: As above: the area is ours to set up until `mmap()`
        // returns.
        unsafe { helpers::rprof_vma_seal(vma, writable) };
        for i in 0..pages {
            // SAFETY: `first + pages <= 1 + data_pages` (`mapping_for`), so
            // the page lies in the vmalloc area `base` covers, live as long
            // as `self`; once inserted, the VMA holds its own reference on
            // the page.  `i < pages`, the VMA's length in pages.
            let ret = unsafe {
                let kaddr = self.base.add((first + i) * bindings::PAGE_SIZE);
                helpers::rprof_vma_insert(vma, i, kaddr as *mut c_void)
            };
            if ret != 0 {
                return Err(Error::from_errno(ret));
            }
        }
        // Only now: a failed mmap() is torn down without `close`.
        // SAFETY: A new reference on the charge, which the mapping owns
        // from here on and gives back as it goes (`close`).
        unsafe { helpers::rprof_vma_hold(vma, self.charge.into_raw_ref()) };
        Ok(())
    }
}

/// The buffer's pages a mapping asking for `req` gets, of a buffer with
/// `data_pages` data pages, as (first page, pages, may ever be writable):
///
/// - offset 0, exactly one page: the control page, any protection but exec
///   (the kernel writes `data_head` there for the reader and trusts
///   nothing it reads back);
/// - offset one page, exactly the data pages: the data area, read-only for
///   good (`mprotect()` cannot add write or exec later).
///
/// Both must be shared: a private mapping would copy the control page on
/// the reader's first write to `data_tail`, which the kernel would then
/// never see.  Anything else is `EINVAL`; asking for write on the data
/// area or exec on either is `EPERM`.
pub(crate) fn mapping_for(req: &VmaReq, data_pages: usize) -> Result<(usize, usize, bool)> {
    let (first, pages, writable) = match req.pgoff {
        0 => (0, 1, true),
        1 => (1, data_pages, false),
        _ => return Err(EINVAL),
    };
    if req.pages != pages as u64 || !req.shared {
        return Err(EINVAL);
    }
    if req.exec || (req.write && !writable) {
        return Err(EPERM);
    }
    Ok((first, pages, writable))
}

#[cfg(rprof_bench)]
impl EventBuffer {
    /// Drops everything published, as a reader that consumed it all would
    /// (the drain benchmark's reader).
    pub(crate) fn discard_published(&self) {
        let head = self.head.load(Ordering::Acquire);
        self.data_tail().store(head, Ordering::Release);
    }
}

#[cfg(rprof_kunit)]
impl EventBuffer {
    /// Test consumer: hands each published record to `f` (at most 256
    /// bytes are copied out; longer records are cut) and releases the
    /// space.  Returns the `(data_head, data_tail)` it saw before
    /// consuming.
    pub(crate) fn consume_with(&self, mut f: impl FnMut(&[u8])) -> (u64, u64) {
        let head = self.data_head().load(Ordering::Acquire);
        let tail = self.data_tail().load(Ordering::Relaxed);
        let mask = self.size() - 1;
        let mut pos = tail;
        let mut rec = [0u8; 256];
        while pos < head {
            let off = (pos & mask) as usize;
            // SAFETY: Published data, 8-byte aligned header (module doc).
            let size = unsafe { (*(self.data().add(off) as *const rprof_record_header)).size } as usize;
            if size < 8 || pos + size as u64 > head {
                break;
            }
            let n = size.min(rec.len());
            for (i, b) in rec[..n].iter_mut().enumerate() {
                // SAFETY: Inside the data area (masked), published.
                *b = unsafe { *self.data().add((off + i) & mask as usize) };
            }
            f(&rec[..n]);
            pos += size as u64;
        }
        self.data_tail().store(pos, Ordering::Release);
        (head, tail)
    }
}

impl Drop for EventBuffer {
    fn drop(&mut self) {
        // SAFETY: `base` came from vmalloc (`rprof_vmalloc_account`);
        // mapped pages keep their own references (and their mappings the
        // charge).
        unsafe { helpers::rprof_vfree(self.base as *mut c_void) };
    }
}

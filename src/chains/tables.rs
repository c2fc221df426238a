// SPDX-License-Identifier: GPL-2.0

//! A session's unwind tables (`RPROF_IOC_ADD_UNWIND`) and the sampling
//! handler's view of them.
//!
//! Uploads, resets and the session's end change the [`Store`] in process
//! context, under the session's mutex; each change publishes a new
//! immutable [`Snapshot`] (sorted by file, the key being the file's inode,
//! which the store holds a reference on so that no other inode can take
//! its address while the key is in use).  The handler (NMI context) reads
//! only the snapshot it loads under `rcu_read_lock()`; a replaced snapshot
//! is freed after a grace period, and tables only after one has passed
//! with no snapshot naming them.

use crate::buffer::charge::Charge;
use crate::chains::unwind::{self, Regs, Rule, UserMem, WalkStats};
use crate::kapi::helpers::{self, NmiVma};
use crate::uapi::*;
use core::ffi::c_void;
use core::mem::size_of;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

/// The most rows one table may have (a table of 16 Mi rows is 192 MiB).
const ROWS_MAX: u32 = 1 << 24;

/// One file's table, owned by the store.
///
/// # Invariants
///
/// `rows` points to `nrows` validated rows (`unwind::validate`) in memory
/// from `rprof_kvzalloc_account`, owned by this value; `inode` is an inode
/// this value holds a reference on.
struct Table {
    inode: *mut c_void,
    rows: *mut rprof_unwind_row,
    nrows: u32,
    end: u32,
    _charge: Charge,
}

// SAFETY: The table's memory and inode reference may be released from any
// process context.
unsafe impl Send for Table {}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: Owned by this value (type invariant); no snapshot names
        // it any more (the store frees tables only after a grace period
        // that followed their last snapshot's replacement).
        unsafe {
            helpers::rprof_kvfree(self.rows.cast());
            helpers::rprof_inode_put(self.inode);
        }
    }
}

/// An entry of a snapshot: a table's key and rows.
#[repr(C)]
#[derive(Clone, Copy)]
struct Entry {
    key: usize,
    rows: *const rprof_unwind_row,
    nrows: u32,
    end: u32,
}

/// What the handler sees: `n` entries sorted by key, in one allocation
/// from `rprof_kvzalloc_account` (a header then the entries).
#[repr(C)]
struct Snapshot {
    n: usize,
    entries: [Entry; 0],
}

impl Snapshot {
    /// The entries of `snap`.
    ///
    /// # Safety
    ///
    /// `snap` is a published snapshot the caller may read (under RCU, or
    /// the store's lock).
    unsafe fn entries<'a>(snap: *const Snapshot) -> &'a [Entry] {
        // SAFETY: A snapshot is allocated with room for its `n` entries
        // right after the header (`Store::publish`).
        unsafe { core::slice::from_raw_parts(core::ptr::addr_of!((*snap).entries).cast::<Entry>(), (*snap).n) }
    }
}

/// A session's tables.  Process context; the session keeps it under a
/// mutex.
pub(crate) struct Store {
    tables: KVec<Table>,
    /// Bytes of rows held, against `limit`.
    bytes: u64,
    /// Bytes charged for them (whole pages per table).
    charged: u64,
    limit: u64,
}

/// The published snapshot, which the handler loads.
pub(crate) struct Published(AtomicPtr<Snapshot>);

impl Published {
    pub(crate) const fn new() -> Self {
        Self(AtomicPtr::new(core::ptr::null_mut()))
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let snap = *self.0.get_mut();
        if !snap.is_null() {
            // SAFETY: The session is dropped after its counters: no handler
            // reads the snapshot any more.  Allocated by
            // rprof_kvzalloc_account.
            unsafe { helpers::rprof_kvfree(snap.cast()) };
        }
    }
}

impl Store {
    /// An empty store that holds at most `limit` bytes of rows.
    pub(crate) fn new(limit: u64) -> Self {
        Self { tables: KVec::new(), bytes: 0, charged: 0, limit }
    }

    /// Adds the table at user address `table` (`bytes` long: a header and
    /// its rows) for the file behind `fd`, and publishes it.
    pub(crate) fn add(&mut self, published: &Published, fd: i32, table: usize, bytes: u64) -> Result {
        let head_size = size_of::<rprof_unwind_table_header>();
        let bytes = usize::try_from(bytes).map_err(|_| EINVAL)?;
        if bytes < head_size {
            return Err(EINVAL);
        }
        let mut reader = crate::kapi::compat::user_slice(table, bytes).reader();
        let header: rprof_unwind_table_header = reader.read()?;
        if header.magic != RPROF_UNWIND_MAGIC || header.version != RPROF_UNWIND_VERSION {
            return Err(EINVAL);
        }
        let nrows = header.nr_rows;
        let rows_bytes = nrows as usize * size_of::<rprof_unwind_row>();
        if nrows == 0 || nrows > ROWS_MAX || bytes != head_size + rows_bytes {
            return Err(EINVAL);
        }
        if self.bytes + rows_bytes as u64 > self.limit {
            return Err(ENOSPC);
        }
        let mut err = 0;
        // SAFETY: Process context.
        let inode = unsafe { helpers::rprof_fd_inode_get(fd, &mut err) };
        if inode.is_null() {
            return Err(Error::from_errno(err));
        }
        if self.tables.iter().any(|t| t.inode == inode) {
            // SAFETY: The reference just taken.
            unsafe { helpers::rprof_inode_put(inode) };
            return Err(EEXIST);
        }
        let charge = match Charge::new(rows_bytes as u64) {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: The reference just taken.
                unsafe { helpers::rprof_inode_put(inode) };
                return Err(e);
            }
        };
        // SAFETY: Process context.
        let rows = unsafe { helpers::rprof_kvzalloc_account(rows_bytes) }.cast::<rprof_unwind_row>();
        if rows.is_null() {
            // SAFETY: The reference just taken.
            unsafe { helpers::rprof_inode_put(inode) };
            return Err(ENOMEM);
        }
        // INVARIANT: rows and inode are ours from here; `Drop` frees them
        // if the rows turn out invalid.
        let charged = charge.bytes();
        let t = Table { inode, rows, nrows, end: header.end, _charge: charge };
        // SAFETY: `rows` holds `rows_bytes` bytes, ours alone.
        let dst = unsafe { core::slice::from_raw_parts_mut(rows.cast::<u8>(), rows_bytes) };
        reader.read_slice(dst)?;
        // SAFETY: The rows just copied, of plain integers.
        let view = unsafe { core::slice::from_raw_parts(rows, nrows as usize) };
        unwind::validate(view, header.end).map_err(|_| EINVAL)?;
        self.tables.reserve(1, GFP_KERNEL)?;
        let snap = self.snapshot_with(&t)?;
        if let Err(e) = self.tables.push(t, GFP_KERNEL) {
            // Not published: ours to free.  (Room was reserved: unreachable.)
            // SAFETY: Allocated by rprof_kvzalloc_account.
            unsafe { helpers::rprof_kvfree(snap.cast()) };
            return Err(e.into());
        }
        self.bytes += rows_bytes as u64;
        self.charged += charged;
        let old = published.0.swap(snap, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Replaced: a handler may still read it until a grace
            // period ends; allocated by rprof_kvzalloc_account.
            unsafe { helpers::rprof_kvfree_rcu(old.cast()) };
        }
        Ok(())
    }

    /// Bytes charged to the owner's locked memory for the tables.
    pub(crate) fn charged(&self) -> u64 {
        self.charged
    }

    /// A snapshot of every table and `new`, not yet published.
    fn snapshot_with(&self, new: &Table) -> Result<*mut Snapshot> {
        let n = self.tables.len() + 1;
        let size = size_of::<Snapshot>() + n * size_of::<Entry>();
        // SAFETY: Process context.
        let snap = unsafe { helpers::rprof_kvzalloc_account(size) }.cast::<Snapshot>();
        if snap.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `snap` has room for the header and `n` entries, ours
        // until published.
        let entries = unsafe {
            (*snap).n = n;
            core::slice::from_raw_parts_mut(core::ptr::addr_of_mut!((*snap).entries).cast::<Entry>(), n)
        };
        for (e, t) in entries.iter_mut().zip(Iterator::chain(self.tables.iter(), core::iter::once(new))) {
            *e = Entry { key: t.inode as usize, rows: t.rows, nrows: t.nrows, end: t.end };
        }
        entries.sort_unstable_by_key(|e| e.key);
        Ok(snap)
    }

    /// Drops every table (RESET_COOKIES, or the session's end): unpublishes
    /// them, waits for handlers that may walk them, frees them.
    pub(crate) fn clear(&mut self, published: &Published) {
        let old = published.0.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if old.is_null() && self.tables.is_empty() {
            return;
        }
        // SAFETY: Process context.  After it no handler holds `old` or any
        // table it names.
        unsafe { helpers::rprof_synchronize_rcu() };
        if !old.is_null() {
            // SAFETY: Unpublished and past a grace period.
            unsafe { helpers::rprof_kvfree(old.cast()) };
        }
        drop(core::mem::replace(&mut self.tables, KVec::new()));
        self.bytes = 0;
        self.charged = 0;
    }
}

/// The user memory of the sampled task, read in NMI context.
struct NmiMem;

impl UserMem for NmiMem {
    fn read(&mut self, addr: u64) -> Option<u64> {
        let mut v = 0;
        // SAFETY: NMI-safe, non-faulting (copy_from_user_nmi).
        unsafe { helpers::rprof_user_read_nmi(addr, &mut v) }.then_some(v)
    }
}

/// Walks current's user stack from `regs` by the published tables (frame
/// pointers where none covers a frame) into `ips`; returns how many
/// frames, the `RPROF_STACK_*` flags of how the walk ended, and the
/// frames found by each method.
///
/// NMI context (the sampling handler): no lock, no allocation; the
/// snapshot is read under `rcu_read_lock()`.
pub(crate) fn walk_user(published: &Published, regs: Regs, ips: &mut [u64]) -> (usize, u32, WalkStats) {
    // SAFETY: NMI-safe.
    unsafe { helpers::rprof_rcu_read_lock() };
    let snap = published.0.load(Ordering::Acquire);
    let entries: &[Entry] = if snap.is_null() {
        &[]
    } else {
        // SAFETY: A published snapshot, under rcu_read_lock(): it is freed
        // only after a grace period that starts after its replacement.
        unsafe { Snapshot::entries(snap) }
    };
    // The last mapping found: consecutive frames are often in one file.
    let mut last: Option<(NmiVma, Option<Entry>)> = None;
    let mut lookup = |ip: u64| -> Rule {
        let hit = matches!(&last, Some((v, _)) if v.start <= ip && ip < v.end);
        if !hit {
            let mut v = NmiVma::default();
            // SAFETY: NMI-safe (a lockless, speculative lookup).
            if !unsafe { helpers::rprof_nmi_exec_vma(ip, &mut v) } {
                last = None;
                return Rule::None;
            }
            let e = entries
                .binary_search_by_key(&(v.inode as usize), |e| e.key)
                .ok()
                .map(|i| entries[i]);
            last = Some((v, e));
        }
        let Some((v, Some(e))) = &last else { return Rule::None };
        // SAFETY: The entry's rows live while the snapshot does (above),
        // and were validated at upload.
        let rows = unsafe { core::slice::from_raw_parts(e.rows, e.nrows as usize) };
        let off = ip.wrapping_sub(v.start).wrapping_add(v.pgoff_bytes);
        unwind::row_for(rows, e.end, off).map_or(Rule::None, Rule::Row)
    };
    let mut stats = WalkStats::default();
    let (n, end) = unwind::walk(regs, &mut lookup, &mut NmiMem, ips, &mut stats);
    // SAFETY: Paired with the lock above.
    unsafe { helpers::rprof_rcu_read_unlock() };
    let flags = match end {
        unwind::End::Outermost => 0,
        unwind::End::Fault => RPROF_STACK_USER_FAULT,
        unwind::End::NotUp | unwind::End::LostRbp => RPROF_STACK_USER_BAD_FP,
        unwind::End::Truncated => RPROF_STACK_USER_TRUNCATED,
    };
    (n, flags, stats)
}

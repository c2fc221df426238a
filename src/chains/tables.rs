// SPDX-License-Identifier: GPL-2.0

//! A session's unwind tables (`RPROF_IOC_ADD_UNWIND`) and the sampling
//! handler's view of them.
//!
//! An upload is copied from userspace and checked without a lock
//! ([`Table::from_user`]: a slow or faulting user buffer holds up no one
//! else), then entered into the session's [`Store`] under its mutex, which
//! publishes a new immutable [`Snapshot`] (entries sorted by key: the inode
//! the file's mappings have, kept alive by the table's reference on the
//! file).  The handler (NMI context) reads only the snapshot it loads under
//! `rcu_read_lock()`; a replaced snapshot is freed after a grace period,
//! and tables only after one has passed with no snapshot naming them.

use crate::buffer::charge::Charge;
use crate::chains::unwind;
use crate::kapi::helpers;
use crate::uapi::*;
use core::ffi::c_void;
use core::mem::size_of;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use kernel::prelude::*;

/// The most rows one table may have (a table of 16 Mi rows is 192 MiB).
const ROWS_MAX: u32 = 1 << 24;

/// One file's table.
///
/// # Invariants
///
/// `rows` points to `nrows` validated rows (`unwind::validate`) in memory
/// from `rprof_kvmalloc_account`, owned by this value, and right after
/// them (in the same allocation) `index`, their index
/// (`unwind::build_index`, `nindex` entries by blocks of `1 << shift`
/// bytes); `file` is a file
/// this value holds a reference on, and `key` the inode its mappings have
/// (`rprof_fd_file_get`), alive while the file is.
pub(crate) struct Table {
    file: *mut c_void,
    key: usize,
    rows: *mut rprof_unwind_row,
    nrows: u32,
    end: u32,
    index: *mut u32,
    nindex: u32,
    shift: u32,
    charge: Charge,
}

// SAFETY: The table's memory and file reference may be released from any
// process context.
unsafe impl Send for Table {}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: Owned by this value (type invariant).  No handler reads
        // the rows any more: a store drops a table only after a grace
        // period that followed the publication of a snapshot without it
        // (`Store::clear`), or with its session, whose counters are gone
        // (no handler runs: see `Published`'s `Drop`).
        unsafe {
            helpers::rprof_kvfree(self.rows.cast());
            helpers::rprof_file_put(self.file);
        }
    }
}

impl Table {
    /// The table at user address `table` (`bytes` long: a header and its
    /// rows) for the regular file behind `fd`, copied, checked and indexed,
    /// charged (rows and index) to the caller's locked memory.  No lock is
    /// held.
    pub(crate) fn from_user(fd: i32, table: usize, bytes: u64) -> Result<Self> {
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
        if nrows == 0 || nrows > ROWS_MAX {
            return Err(EINVAL);
        }
        // At most 2^24 rows of 12 bytes: no overflow.
        let rows_bytes = nrows as usize * size_of::<rprof_unwind_row>();
        if bytes != head_size + rows_bytes {
            return Err(EINVAL);
        }
        let (mut key, mut err) = (0usize, 0);
        // SAFETY: Process context.
        let file = unsafe { helpers::rprof_fd_file_get(fd, &mut key, &mut err) };
        if file.is_null() {
            return Err(Error::from_errno(err));
        }
        let shift = unwind::index_shift(nrows, header.end);
        let nindex = unwind::index_len(nrows, header.end);
        // At most 2^24 + 1 entries (no more blocks than rows): no overflow.
        let all_bytes = rows_bytes + nindex * size_of::<u32>();
        let charge = match Charge::new(all_bytes as u64) {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: The reference just taken.
                unsafe { helpers::rprof_file_put(file) };
                return Err(e);
            }
        };
        // SAFETY: Process context.
        let rows = unsafe { helpers::rprof_kvmalloc_account(all_bytes) }.cast::<rprof_unwind_row>();
        if rows.is_null() {
            // SAFETY: The reference just taken.
            unsafe { helpers::rprof_file_put(file) };
            return Err(ENOMEM);
        }
        // SAFETY: Rows are 12 bytes, 4-aligned: the index after them is
        // aligned for u32, and inside the allocation.
        let index = unsafe { rows.add(nrows as usize) }.cast::<u32>();
        // INVARIANT: the rows are checked and the index built below before
        // the table leaves this function; `Drop` frees rows and file on the
        // way out if not.
        let t = Table { file, key, rows, nrows, end: header.end, index, nindex: nindex as u32, shift, charge };
        // SAFETY: `rows` holds `rows_bytes` bytes, ours alone.
        let dst = unsafe { core::slice::from_raw_parts_mut(rows.cast::<u8>(), rows_bytes) };
        reader.read_slice(dst)?;
        // SAFETY: The rows just copied, of plain integers.
        let view = unsafe { core::slice::from_raw_parts(rows, nrows as usize) };
        unwind::validate(view, header.end).map_err(|_| EINVAL)?;
        // SAFETY: `nindex` u32s after the rows, ours alone (above).
        let index = unsafe { core::slice::from_raw_parts_mut(index, nindex) };
        unwind::build_index(view, shift, index);
        Ok(t)
    }

    /// What the table costs against the session's limit: what it is
    /// charged (whole pages), so that small tables are bounded in number too.
    fn cost(&self) -> u64 {
        self.charge.bytes()
    }
}

/// An entry of a snapshot: a table's key, rows and index.
#[repr(C)]
#[derive(Clone, Copy)]
struct Entry {
    key: usize,
    rows: *const rprof_unwind_row,
    index: *const u32,
    nrows: u32,
    end: u32,
    nindex: u32,
    shift: u32,
}

/// Sorts `entries` by key, in place (a heapsort).  Not the standard
/// library's sort: its ordering-violation check ends in a panic function
/// that 6.12's objtool does not know never returns, which it reports as a
/// fall-through into the next function.
fn sort_by_key(entries: &mut [Entry]) {
    /// Moves `entries[root]` down the heap of the first `len` entries.
    fn sift_down(entries: &mut [Entry], mut root: usize, len: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= len {
                return;
            }
            if child + 1 < len && entries[child + 1].key > entries[child].key {
                child += 1;
            }
            if entries[root].key >= entries[child].key {
                return;
            }
            entries.swap(root, child);
            root = child;
        }
    }
    let len = entries.len();
    for root in (0..len / 2).rev() {
        sift_down(entries, root, len);
    }
    for end in (1..len).rev() {
        entries.swap(0, end);
        sift_down(entries, 0, end);
    }
}

/// [`sort_by_key`] on entries with `keys` (KUnit), which it sorts.
#[cfg(rprof_kunit)]
pub(crate) fn test_sort_keys(keys: &mut [usize]) -> Result {
    let mut entries = KVec::with_capacity(keys.len(), GFP_KERNEL)?;
    for &key in keys.iter() {
        let null = core::ptr::null();
        entries.push(Entry { key, rows: null, index: null.cast(), nrows: 0, end: 0, nindex: 0, shift: 0 }, GFP_KERNEL)?;
    }
    sort_by_key(&mut entries);
    for (k, e) in keys.iter_mut().zip(entries.iter()) {
        *k = e.key;
    }
    Ok(())
}

/// What the handler sees: `n` entries sorted by key, in one allocation
/// from `rprof_kvmalloc_account` (a header then the entries).
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
        // right after the header (`Store::snapshot_with`).
        unsafe { core::slice::from_raw_parts(core::ptr::addr_of!((*snap).entries).cast::<Entry>(), (*snap).n) }
    }
}

/// A session's tables.  Process context; the session keeps it under a
/// mutex.
pub(crate) struct Store {
    tables: KVec<Table>,
    /// What the tables cost ([`Table::cost`]), against `limit`.
    cost: u64,
    limit: u64,
}

/// The lock-free side of a session's tables: the published snapshot, which
/// the handler loads, and the bytes charged, which GET_STATS reads.
pub(crate) struct Published {
    snap: AtomicPtr<Snapshot>,
    charged: AtomicU64,
}

impl Published {
    pub(crate) const fn new() -> Self {
        Self { snap: AtomicPtr::new(core::ptr::null_mut()), charged: AtomicU64::new(0) }
    }

    /// Bytes charged to the owner's locked memory for the tables.
    pub(crate) fn charged(&self) -> u64 {
        self.charged.load(Ordering::Relaxed)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let snap = *self.snap.get_mut();
        if !snap.is_null() {
            // SAFETY: The session is dropped after its counters are
            // released, and releasing a counter waits for its handler on
            // that CPU (perf's cross-CPU call cannot run while the CPU is in
            // the handler): no handler reads the snapshot any more.
            // Allocated by rprof_kvmalloc_account.
            unsafe { helpers::rprof_kvfree(snap.cast()) };
        }
    }
}

impl Store {
    /// An empty store whose tables may cost at most `limit` bytes.
    pub(crate) fn new(limit: u64) -> Self {
        Self { tables: KVec::new(), cost: 0, limit }
    }

    /// Whether a table of `rows_bytes` would pass the limit now (a check
    /// before the copy; `insert` decides).
    pub(crate) fn full_for(&self, rows_bytes: u64) -> bool {
        self.cost.saturating_add(rows_bytes) > self.limit
    }

    /// Enters `t` and publishes it: `EEXIST` if the store has a table for
    /// its file, `ENOSPC` past the limit.
    pub(crate) fn insert(&mut self, published: &Published, t: Table) -> Result {
        if self.tables.iter().any(|o| o.key == t.key) {
            return Err(EEXIST);
        }
        if self.cost.saturating_add(t.cost()) > self.limit {
            return Err(ENOSPC);
        }
        self.tables.reserve(1, GFP_KERNEL)?;
        let snap = self.snapshot_with(&t)?;
        let cost = t.cost();
        if let Err(e) = self.tables.push(t, GFP_KERNEL) {
            // Not published: ours to free.  (Room was reserved: unreachable.)
            // SAFETY: Allocated by rprof_kvmalloc_account.
            unsafe { helpers::rprof_kvfree(snap.cast()) };
            return Err(e.into());
        }
        self.cost += cost;
        published.charged.fetch_add(cost, Ordering::Relaxed);
        let old = published.snap.swap(snap, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Replaced: a handler may still read it until a grace
            // period ends; allocated by rprof_kvmalloc_account.
            unsafe { helpers::rprof_kvfree_rcu(old.cast()) };
        }
        Ok(())
    }

    /// A snapshot of every table and `new`, not yet published: the sorted
    /// entries with `new`'s put in its place.
    fn snapshot_with(&self, new: &Table) -> Result<*mut Snapshot> {
        let n = self.tables.len() + 1;
        let size = size_of::<Snapshot>() + n * size_of::<Entry>();
        // SAFETY: Process context.
        let snap = unsafe { helpers::rprof_kvmalloc_account(size) }.cast::<Snapshot>();
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
            *e = Entry {
                key: t.key,
                rows: t.rows,
                index: t.index,
                nrows: t.nrows,
                end: t.end,
                nindex: t.nindex,
                shift: t.shift,
            };
        }
        sort_by_key(entries);
        Ok(snap)
    }

    /// Drops every table (RESET_COOKIES): unpublishes them, waits for
    /// handlers that may walk them, frees them.
    pub(crate) fn clear(&mut self, published: &Published) {
        let old = published.snap.swap(core::ptr::null_mut(), Ordering::AcqRel);
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
        published.charged.fetch_sub(self.cost.min(published.charged()), Ordering::Relaxed);
        self.cost = 0;
    }
}

/// A file's table as the handler reads it: rows and index, alive while
/// the [`View`] it came from is.
#[derive(Clone, Copy)]
pub(crate) struct FileTable<'a> {
    rows: &'a [rprof_unwind_row],
    index: &'a [u32],
    shift: u32,
    end: u32,
}

impl FileTable<'_> {
    /// The row that covers file offset `off`, if any.  NMI context.
    pub(crate) fn row(&self, off: u64) -> Option<rprof_unwind_row> {
        unwind::row_indexed(self.rows, self.index, self.shift, self.end, off)
    }
}

/// The tables a session had published when a reader loaded them.
pub(crate) struct View<'a> {
    entries: &'a [Entry],
}

impl<'a> View<'a> {
    /// The table of the file whose mappings have inode `key`, if any.
    /// NMI context.
    pub(crate) fn table(&self, key: usize) -> Option<FileTable<'a>> {
        let e = self.entries.binary_search_by_key(&key, |e| e.key).ok().map(|i| self.entries[i])?;
        // SAFETY: The entry's rows and index live while the snapshot does
        // (`Published::read`: under RCU, for `'a`); validated and built
        // at upload.
        let (rows, index) = unsafe {
            (
                core::slice::from_raw_parts(e.rows, e.nrows as usize),
                core::slice::from_raw_parts(e.index, e.nindex as usize),
            )
        };
        Some(FileTable { rows, index, shift: e.shift, end: e.end })
    }
}

impl Published {
    /// Calls `f` with the tables published now, under `rcu_read_lock()`:
    /// what `f` is given cannot outlive the call.  Any context, NMI
    /// included (the sampling handler's walk).
    pub(crate) fn read<R>(&self, f: impl FnOnce(View<'_>) -> R) -> R {
        // SAFETY: NMI-safe.
        unsafe { helpers::rprof_rcu_read_lock() };
        let snap = self.snap.load(Ordering::Acquire);
        let entries: &[Entry] = if snap.is_null() {
            &[]
        } else {
            // SAFETY: A published snapshot, under rcu_read_lock(): it is
            // freed only after a grace period that starts after its
            // replacement (`Store::insert`, `Store::clear`), and the
            // borrow ends with `f`, before the unlock.
            unsafe { Snapshot::entries(snap) }
        };
        let r = f(View { entries });
        // SAFETY: Paired with the lock above.
        unsafe { helpers::rprof_rcu_read_unlock() };
        r
    }
}

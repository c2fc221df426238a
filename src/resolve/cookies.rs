// SPDX-License-Identifier: GPL-2.0

//! Cookies: short names for the files and kernel modules samples are in.
//!
//! C header: [`include/linux/path.h`](srctree/include/linux/path.h)
//!
//! A cookie names one mapped file (its `struct path`: dentry and mount) or
//! one text region of a kernel module, for the life of a session, or until
//! its owner resets the table (`RPROF_IOC_RESET_COOKIES`).  The table
//! holds a reference on every file's path, so the dentry, and with it the
//! name, stays valid as long as its cookie, even after the file is
//! unlinked or its last mapping is gone; dropping the table, or resetting
//! it, drops the references.  Cookie numbers are never handed out twice in
//! a session, resets included.  OProfile's dcookies did the same, in the
//! kernel, until 5.12.
//!
//! Cookies below `RPROF_COOKIE_FIRST` are fixed (none, kernel, anonymous);
//! the table hands out the rest in order.  It is bounded: past `max`
//! entries, new files get no cookie and their samples are counted as lost
//! (`NO_COOKIE`), never attributed to something else.
//!
//! Process context only (the drain, under the session's drain lock).

use crate::kapi::helpers;
use crate::resolve::modules::ModInfo;
use crate::uapi::*;
use core::ffi::c_int;
use kernel::bindings;
use kernel::prelude::*;
use kernel::rbtree::RBTree;

/// A counted reference on a `struct path`.
///
/// # Invariants
///
/// `path` holds a reference (`path_get`) that `Drop` puts.
pub(crate) struct PathRef {
    path: bindings::path,
}

// SAFETY: A path reference may be put from any process context.
unsafe impl Send for PathRef {}

impl PathRef {
    /// Takes over a reference the C glue got for us.
    ///
    /// # Safety
    ///
    /// `path` must hold a reference that nobody else will put.
    pub(crate) unsafe fn from_raw(path: bindings::path) -> Self {
        // INVARIANT: the caller passes the reference to us.
        Self { path }
    }

    pub(crate) fn as_ptr(&self) -> *const bindings::path {
        &self.path
    }

    fn key(&self) -> Key {
        Key::File(self.path.dentry as usize, self.path.mnt as usize)
    }
}

impl Drop for PathRef {
    fn drop(&mut self) {
        // SAFETY: We hold the reference (type invariant).
        unsafe { helpers::rprof_path_put(&mut self.path) };
    }
}

/// What identifies a cookie's object while it exists: the file's dentry
/// and mount (pinned by the entry's reference), or a module's `struct
/// module` and region (removed from the index when the module goes).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    File(usize, usize),
    Module(usize, bool),
}

/// What a cookie names.  A file's `path` reference is what keeps its name
/// valid; it is only ever dropped.
pub(crate) enum Object {
    File {
        #[allow(dead_code)]
        path: PathRef,
        dev: u64,
        ino: u64,
        flags: u32,
        name: KVec<u8>,
    },
    Module { base: u64, size: u64, init: bool, name: [u8; 56] },
}

/// One cookie.
pub(crate) struct Entry {
    pub(crate) object: Object,
    /// Its COOKIE or MODULE record is in the stream.
    pub(crate) announced: bool,
}

/// Why no cookie.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum NoCookie {
    /// The table is full (or memory ran out).
    Full,
}

/// Cookies a table forgot ([`CookieTable::forget_all`]); dropped in
/// process context, it drops the path references of their files.
pub(crate) struct Forgotten {
    _index: RBTree<Key, u64>,
    _entries: RBTree<u64, Entry>,
}

/// The cookie table of one session.
///
/// # Invariants
///
/// Every value of `index` is a key of `entries`; `entries.len() <= max`;
/// cookies are unique and at least `RPROF_COOKIE_FIRST`.
pub(crate) struct CookieTable {
    index: RBTree<Key, u64>,
    entries: RBTree<u64, Entry>,
    len: usize,
    next: u64,
    max: usize,
    /// Scratch for `d_path()`.
    scratch: KVec<u8>,
    /// The session owner's root: files not under it are flagged
    /// `RPROF_COOKIE_UNREACHABLE`.
    root: PathRef,
}

/// Room for a path, as `d_path()` needs.
const PATH_MAX: usize = 4096;

impl CookieTable {
    /// An empty table of at most `max` cookies, for a session owned by
    /// the calling process (whose root directory decides what is
    /// reachable).
    pub(crate) fn new(max: usize) -> Result<Self> {
        let mut scratch = KVec::new();
        scratch.extend_with(PATH_MAX, 0u8, GFP_KERNEL)?;
        // SAFETY: All-zero is a valid (empty) `struct path` to fill.
        let mut root: bindings::path = unsafe { core::mem::zeroed() };
        // SAFETY: Process context; fills `root` with a reference.
        unsafe { helpers::rprof_current_root(&mut root) };
        // SAFETY: The reference is ours.
        let root = unsafe { PathRef::from_raw(root) };
        // INVARIANT: empty.
        Ok(Self {
            index: RBTree::new(),
            entries: RBTree::new(),
            len: 0,
            next: RPROF_COOKIE_FIRST as u64,
            max,
            scratch,
            root,
        })
    }

    /// Forgets every cookie; the next cookie is still `next` (none is
    /// handed out twice in a session).  The entries are returned: dropping
    /// them drops their references (a `path_put` each, which may sleep),
    /// best after the drain lock is released.
    pub(crate) fn forget_all(&mut self) -> Forgotten {
        // INVARIANT: both maps empty, `next` unchanged.
        self.len = 0;
        Forgotten {
            _index: core::mem::replace(&mut self.index, RBTree::new()),
            _entries: core::mem::replace(&mut self.entries, RBTree::new()),
        }
    }

    /// The cookie the next new file or module gets.
    pub(crate) fn next(&self) -> u64 {
        self.next
    }

    /// Cookies in use.
    #[cfg(rprof_kunit)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether every cookie the table may hold is taken.
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.max
    }

    fn insert(&mut self, key: Key, object: Object) -> Result<u64, NoCookie> {
        if self.len >= self.max {
            return Err(NoCookie::Full);
        }
        let cookie = self.next;
        self.entries
            .try_create_and_insert(cookie, Entry { object, announced: false }, GFP_KERNEL)
            .map_err(|_| NoCookie::Full)?;
        if self.index.try_create_and_insert(key, cookie, GFP_KERNEL).is_err() {
            self.entries.remove(&cookie);
            return Err(NoCookie::Full);
        }
        self.next += 1;
        self.len += 1;
        Ok(cookie)
    }

    /// The cookie of the file at `path`, made if new.  Consumes the
    /// reference: the table keeps it for a new cookie, drops it otherwise.
    pub(crate) fn file(&mut self, path: PathRef) -> Result<u64, NoCookie> {
        let key = path.key();
        if let Some(&cookie) = self.index.get(&key) {
            return Ok(cookie);
        }
        #[cfg(rprof_bench)]
        let _timer = crate::resolve::stage::Timer::start(crate::resolve::stage::Stage::NewCookie);
        if self.len >= self.max {
            return Err(NoCookie::Full);
        }
        let (mut dev, mut ino, mut flags) = (0u64, 0u64, 0u32);
        // SAFETY: `path` is referenced; `scratch` has PATH_MAX bytes.
        let n = unsafe {
            helpers::rprof_path_info(
                path.as_ptr(),
                self.root.as_ptr(),
                self.scratch.as_mut_ptr(),
                PATH_MAX as c_int,
                &mut dev,
                &mut ino,
                &mut flags,
            )
        };
        let n = (n.max(0) as usize).min(PATH_MAX - 1);
        let mut name = KVec::new();
        name.extend_from_slice(&self.scratch[..n], GFP_KERNEL).map_err(|_| NoCookie::Full)?;
        self.insert(key, Object::File { path, dev, ino, flags, name })
    }

    /// The cookie of the module text region `info` describes, made if new.
    pub(crate) fn module(&mut self, info: &ModInfo) -> Result<u64, NoCookie> {
        let key = Key::Module(info.id, info.init);
        if let Some(&cookie) = self.index.get(&key) {
            return Ok(cookie);
        }
        let object = Object::Module { base: info.base, size: info.size, init: info.init, name: info.name };
        self.insert(key, object)
    }

    /// The module `id` is going away: its cookies stay (samples already
    /// taken keep their names) but leave the index, so that a module loaded
    /// later at the same address gets new ones.  Returns them.
    pub(crate) fn forget_module(&mut self, id: usize) -> [Option<u64>; 2] {
        [self.index.remove(&Key::Module(id, false)), self.index.remove(&Key::Module(id, true))]
    }

    pub(crate) fn get(&self, cookie: u64) -> Option<&Entry> {
        self.entries.get(&cookie)
    }

    pub(crate) fn get_mut(&mut self, cookie: u64) -> Option<&mut Entry> {
        self.entries.get_mut(&cookie)
    }
}

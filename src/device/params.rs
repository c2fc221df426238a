// SPDX-License-Identifier: GPL-2.0

//! Module parameters (declared with `module_param()` in `params.c`),
//! validated once at load time.

use crate::kapi::helpers;
use kernel::prelude::*;

/// Smallest and largest per-CPU ring, in slots.
pub(crate) const RING_RECORDS_MIN: u32 = 64;
pub(crate) const RING_RECORDS_MAX: u32 = 1 << 20;
/// Largest event buffer, in data pages.
pub(crate) const BUFFER_PAGES_MAX: u32 = 1 << 16;
/// Bounds of the cookie table.
pub(crate) const MAX_COOKIES_MIN: u32 = 16;
pub(crate) const MAX_COOKIES_MAX: u32 = 1 << 20;

/// The validated parameters.
///
/// # Invariants
///
/// `ring_records` is a power of two in
/// [`RING_RECORDS_MIN`, `RING_RECORDS_MAX`]; `buffer_pages` is a power of two
/// in [1, `BUFFER_PAGES_MAX`]; `max_cookies` is in
/// [`MAX_COOKIES_MIN`, `MAX_COOKIES_MAX`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    pub(crate) ring_records: u32,
    pub(crate) buffer_pages: u32,
    pub(crate) max_cookies: u32,
}

/// How many times the module's `buffer_pages` a session may ask for: the
/// event buffer is not charged to a memory cgroup, so the administrator's
/// parameter bounds it (16 MiB with the default).
pub(crate) const SESSION_BUFFER_FACTOR: u32 = 16;

/// Checks a ring size, in slots.
pub(crate) fn ring_records_valid(n: u32) -> bool {
    n.is_power_of_two() && (RING_RECORDS_MIN..=RING_RECORDS_MAX).contains(&n)
}

/// Whether `n` is a valid event buffer size, in data pages.
pub(crate) fn buffer_pages_valid(n: u32) -> bool {
    n.is_power_of_two() && n <= BUFFER_PAGES_MAX
}

impl Params {
    /// The largest event buffer a session may ask for, in pages.
    pub(crate) fn max_session_buffer_pages(&self) -> u32 {
        self.buffer_pages.saturating_mul(SESSION_BUFFER_FACTOR).min(BUFFER_PAGES_MAX)
    }

    /// Reads and checks the parameters given to insmod.  A bad value fails
    /// the load with `EINVAL` and one line naming the parameter.
    pub(crate) fn from_module() -> Result<Self> {
        // SAFETY: Plain reads of integers the C glue owns.
        let (ring_records, buffer_pages, max_cookies) = unsafe {
            (
                helpers::rprof_param_ring_records(),
                helpers::rprof_param_buffer_pages(),
                helpers::rprof_param_max_cookies(),
            )
        };
        let p = Self::new(ring_records, buffer_pages)?;
        if !(MAX_COOKIES_MIN..=MAX_COOKIES_MAX).contains(&max_cookies) {
            pr_err!(
                "max_cookies={} is invalid: need a value in [{}, {}]\n",
                max_cookies,
                MAX_COOKIES_MIN,
                MAX_COOKIES_MAX
            );
            return Err(EINVAL);
        }
        // INVARIANT: checked above and by `new`.
        Ok(Self { max_cookies, ..p })
    }

    /// Checks explicit values (also used by the KUnit suite).
    pub(crate) fn new(ring_records: u32, buffer_pages: u32) -> Result<Self> {
        if !ring_records_valid(ring_records) {
            pr_err!(
                "ring_records={} is invalid: need a power of 2 in [{}, {}]\n",
                ring_records,
                RING_RECORDS_MIN,
                RING_RECORDS_MAX
            );
            return Err(EINVAL);
        }
        if !buffer_pages_valid(buffer_pages) {
            pr_err!(
                "buffer_pages={} is invalid: need a power of 2 in [1, {}]\n",
                buffer_pages,
                BUFFER_PAGES_MAX
            );
            return Err(EINVAL);
        }
        // INVARIANT: both checked above; the default cookie bound.
        Ok(Self { ring_records, buffer_pages, max_cookies: 4096 })
    }
}

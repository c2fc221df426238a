// SPDX-License-Identifier: GPL-2.0

//! Table-driven user unwinding: a frame's caller from its file's compiled
//! unwind table (`struct rprof_unwind_row`, `include/uapi/linux/rprof.h`),
//! or from its frame pointer where the table has no rule for it.
//!
//! NMI context: the walk runs in the sampling handler.  Nothing here
//! sleeps, locks or allocates; user memory is read only through the
//! caller's non-faulting [`UserMem`], and tables are found through the
//! caller's lookup.  A walk ends: every step must move the stack pointer
//! up (a table, however hostile, cannot make it loop), and it takes at
//! most as many steps as the output has room for.

use crate::uapi::*;

/// The registers a step needs, of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Regs {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
}

/// The sampled task's memory, read without faulting a page in.
pub(crate) trait UserMem {
    /// The 8 bytes at `addr`, or `None` where a read would fault.
    fn read(&mut self, addr: u64) -> Option<u64>;
}

/// What a lookup found for an address.
#[derive(Clone, Copy)]
pub(crate) enum Rule {
    /// The row of a table that covers the address.
    Row(rprof_unwind_row),
    /// No table covers it (a file without one yet, anonymous memory, a
    /// JIT, no mapping): the frame pointer's turn.
    None,
}

/// Why a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// A row said this is the outermost frame (`_start`, a thread's
    /// entry, or a signal frame the walk does not cross), or a return
    /// address was 0.
    Outermost,
    /// A read of the stack would have faulted.
    Fault,
    /// A frame address (CFA or frame pointer) not above the stack pointer,
    /// or misaligned: not a chain.
    NotUp,
    /// A rule needed the frame's RBP after an earlier frame lost it.
    LostRbp,
    /// The output was full.
    Truncated,
}

/// Frames found by each method, and walks ended by each reason
/// (`rprof stat`'s per-method counts).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct WalkStats {
    pub(crate) table_frames: u64,
    pub(crate) fp_frames: u64,
}

/// The largest CFA offset a table may give: larger frames are not worth
/// walking (a hostile table's reach is bounded by it too).
pub(crate) const CFA_OFF_MAX: i32 = 1 << 24;

/// Why a table was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Invalid {
    Empty,
    Unsorted,
    PastEnd,
    Rule,
    Offset,
}

/// Checks a table as uploaded: at least one row, starts strictly
/// increasing and below `end`, every rule one the walk knows, offsets in
/// range and those of unused fields zero (one spelling per rule).
pub(crate) fn validate(rows: &[rprof_unwind_row], end: u32) -> Result<(), Invalid> {
    let Some(last) = rows.last() else {
        return Err(Invalid::Empty);
    };
    if last.start >= end {
        return Err(Invalid::PastEnd);
    }
    if rows.windows(2).any(|w| w[0].start >= w[1].start) {
        return Err(Invalid::Unsorted);
    }
    rows.iter().try_for_each(validate_row)
}

fn validate_row(row: &rprof_unwind_row) -> Result<(), Invalid> {
    let cfa = u32::from(row.cfa);
    let rbp = u32::from(row.rbp);
    match cfa {
        RPROF_UNWIND_CFA_RSP | RPROF_UNWIND_CFA_RBP | RPROF_UNWIND_CFA_PLT => {
            // The return address is at CFA - 8: the CFA is at least 8
            // above the register it is computed from.
            if !(8..=CFA_OFF_MAX).contains(&row.cfa_off) {
                return Err(Invalid::Offset);
            }
            match rbp {
                RPROF_UNWIND_RBP_SAME | RPROF_UNWIND_RBP_UNDEF if row.rbp_off == 0 => Ok(()),
                // Saved below the return address, in the frame.
                RPROF_UNWIND_RBP_SAVED if row.rbp_off <= -16 && row.rbp_off % 8 == 0 => Ok(()),
                RPROF_UNWIND_RBP_SAME | RPROF_UNWIND_RBP_UNDEF | RPROF_UNWIND_RBP_SAVED => Err(Invalid::Offset),
                _ => Err(Invalid::Rule),
            }
        }
        RPROF_UNWIND_CFA_NONE | RPROF_UNWIND_CFA_FP | RPROF_UNWIND_CFA_STOP => {
            if rbp != RPROF_UNWIND_RBP_SAME {
                return Err(Invalid::Rule);
            }
            if row.cfa_off != 0 || row.rbp_off != 0 {
                return Err(Invalid::Offset);
            }
            Ok(())
        }
        _ => Err(Invalid::Rule),
    }
}

/// The row of a validated table (`validate`) that covers file offset
/// `off`, if any: the plain search, which KUnit holds [`row_indexed`] to.
#[cfg(rprof_kunit)]
pub(crate) fn row_for(rows: &[rprof_unwind_row], end: u32, off: u64) -> Option<rprof_unwind_row> {
    if off >= u64::from(end) {
        return None;
    }
    // The number of rows starting at or before `off`: the last of them
    // covers it.
    let n = rows.partition_point(|r| u64::from(r.start) <= off);
    n.checked_sub(1).map(|i| rows[i])
}

/// The finest block an index divides a file into (a shift): 256 bytes,
/// a few rows of compiled code.
const INDEX_SHIFT_MIN: u32 = 8;

/// The block size, as a shift, of the index of a table of `nrows` rows
/// that covers `end` bytes of its file: the finest from 256 bytes up that
/// gives no more blocks than rows, so that the index (4 bytes a block)
/// costs at most a third of the rows (12 bytes each).
pub(crate) fn index_shift(nrows: u32, end: u32) -> u32 {
    let mut shift = INDEX_SHIFT_MIN;
    // Ends by 32 at the latest: `end >> 32` is 0, below any `nrows` >= 1.
    while shift < 32 && (u64::from(end) >> shift) >= u64::from(nrows) {
        shift += 1;
    }
    shift
}

/// How many entries the index of such a table has: one a block of
/// `[0, end)`, and one past the last.
pub(crate) fn index_len(nrows: u32, end: u32) -> usize {
    (u64::from(end) >> index_shift(nrows, end)) as usize + 2
}

/// Fills `index` (`index_len` entries) for the sorted `rows`: entry `b`
/// is the number of rows that start before block `b` (`b << shift`), so
/// that the rows starting in block `b` are `rows[index[b]..index[b + 1]]`.
pub(crate) fn build_index(rows: &[rprof_unwind_row], shift: u32, index: &mut [u32]) {
    let mut r = 0;
    for (b, slot) in index.iter_mut().enumerate() {
        let base = (b as u64) << shift;
        while r < rows.len() && u64::from(rows[r].start) < base {
            r += 1;
        }
        // At most 2^24 rows (the upload's limit): fits.
        *slot = r as u32;
    }
}

/// [`row_for`] through the table's index (`build_index`): a search among
/// the few rows that start in `off`'s block, not all of them.  NMI
/// context; `None` also for an index that does not fit `rows` (never, for
/// one `build_index` made: no panic either way).
pub(crate) fn row_indexed(rows: &[rprof_unwind_row], index: &[u32], shift: u32, end: u32, off: u64) -> Option<rprof_unwind_row> {
    if off >= u64::from(end) {
        return None;
    }
    let b = (off >> shift) as usize;
    let lo = *index.get(b)? as usize;
    let hi = *index.get(b + 1)? as usize;
    // Every row before `lo` starts before `off`'s block, and every row
    // from `hi` on after it.
    let n = lo + rows.get(lo..hi)?.partition_point(|r| u64::from(r.start) <= off);
    n.checked_sub(1).and_then(|i| rows.get(i)).copied()
}

/// One step by a table row: the caller's registers.  `bp_known` says
/// whether `r.bp` is the frame's RBP (an earlier UNDEF rule loses it).
fn step_row(row: &rprof_unwind_row, r: Regs, bp_known: &mut bool, mem: &mut impl UserMem) -> Result<Regs, End> {
    let off = row.cfa_off as u64;
    let cfa = match u32::from(row.cfa) {
        RPROF_UNWIND_CFA_RSP => r.sp.checked_add(off),
        RPROF_UNWIND_CFA_RBP if *bp_known => r.bp.checked_add(off),
        RPROF_UNWIND_CFA_RBP => return Err(End::LostRbp),
        // The PLT stubs' rule: the stub's second half has pushed once more.
        RPROF_UNWIND_CFA_PLT => r.sp.checked_add(off + if r.ip & 15 >= 11 { 8 } else { 0 }),
        _ => return Err(End::Outermost),
    };
    let cfa = match cfa {
        Some(cfa) if cfa > r.sp && cfa & 7 == 0 => cfa,
        _ => return Err(End::NotUp),
    };
    let ip = mem.read(cfa - 8).ok_or(End::Fault)?;
    let bp = match u32::from(row.rbp) {
        RPROF_UNWIND_RBP_SAVED => {
            *bp_known = true;
            // `rbp_off` is at most -16 (validate): below the CFA.
            mem.read(cfa.wrapping_add(i64::from(row.rbp_off) as u64)).ok_or(End::Fault)?
        }
        RPROF_UNWIND_RBP_SAME => r.bp,
        _ => {
            *bp_known = false;
            0
        }
    };
    if ip == 0 {
        return Err(End::Outermost);
    }
    Ok(Regs { ip, sp: cfa, bp })
}

/// One step by the frame pointer: `[bp]` is the caller's RBP, `[bp + 8]`
/// the return address, and the caller's stack starts above them.
fn step_fp(r: Regs, bp_known: bool, mem: &mut impl UserMem) -> Result<Regs, End> {
    if !bp_known {
        return Err(End::LostRbp);
    }
    if r.bp & 7 != 0 || r.bp < r.sp || r.bp > u64::MAX - 16 {
        return Err(End::NotUp);
    }
    let bp = mem.read(r.bp).ok_or(End::Fault)?;
    let ip = mem.read(r.bp + 8).ok_or(End::Fault)?;
    if ip == 0 {
        return Err(End::Outermost);
    }
    Ok(Regs { ip, sp: r.bp + 16, bp })
}

/// Walks from the interrupted frame `regs`: writes each caller's return
/// address into `ips` (the sample's own ip not included, innermost first)
/// and returns how many and why the walk ended.
///
/// `lookup` gives the rule for an address: the leaf's own ip, and for a
/// caller its return address less one (the call, which a return address
/// after a `noreturn` call would not be in).
pub(crate) fn walk(
    regs: Regs,
    lookup: &mut impl FnMut(u64) -> Rule,
    mem: &mut impl UserMem,
    ips: &mut [u64],
    stats: &mut WalkStats,
) -> (usize, End) {
    let mut r = regs;
    let mut bp_known = true;
    let mut n = 0;
    loop {
        if n == ips.len() {
            return (n, End::Truncated);
        }
        let at = if n == 0 { r.ip } else { r.ip.wrapping_sub(1) };
        let next = match lookup(at) {
            Rule::Row(row) if matches!(u32::from(row.cfa), RPROF_UNWIND_CFA_NONE | RPROF_UNWIND_CFA_FP) => {
                step_fp(r, bp_known, mem).inspect(|_| stats.fp_frames += 1)
            }
            Rule::Row(row) => step_row(&row, r, &mut bp_known, mem).inspect(|_| stats.table_frames += 1),
            Rule::None => step_fp(r, bp_known, mem).inspect(|_| stats.fp_frames += 1),
        };
        match next {
            Ok(caller) => {
                ips[n] = caller.ip;
                n += 1;
                r = caller;
            }
            Err(end) => return (n, end),
        }
    }
}

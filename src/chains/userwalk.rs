// SPDX-License-Identifier: GPL-2.0

//! The sampling handler's user walk by unwind tables: the sampled task's
//! memory read without faulting, each frame's mapping found without
//! `mmap_lock`, its row in the session's published tables
//! ([`Published::read`]), and the walk itself ([`unwind::walk`]).
//!
//! NMI context, all of it: nothing here sleeps, locks or allocates.

use crate::chains::tables::{FileTable, Published};
use crate::chains::unwind::{self, End, Regs, Rule, UserMem, WalkStats};
use crate::kapi::helpers::{self, NmiVma};
use crate::uapi::*;

/// The user memory of the sampled task, read in NMI context.
///
/// # Invariants
///
/// `loaded`: a read through `rprof_user_read_nmi` succeeded in this
/// handler, so the address space loaded on this CPU is current's (and
/// stays so until the handler returns: the handler switches none).  A
/// value lives only inside one walk of one handler.
struct NmiMem {
    loaded: bool,
}

impl UserMem for NmiMem {
    fn read(&mut self, addr: u64) -> Option<u64> {
        let mut v = 0;
        let ok = if self.loaded {
            // SAFETY: NMI-safe and non-faulting; current's address space
            // is the loaded one (type invariant), the precondition.
            unsafe { helpers::rprof_user_read_loaded(addr, &mut v) }
        } else {
            // SAFETY: NMI-safe, non-faulting (copy_from_user_nmi), and it
            // checks the loaded address space itself.
            let ok = unsafe { helpers::rprof_user_read_nmi(addr, &mut v) };
            // INVARIANT: a read that succeeded proves it.
            self.loaded = ok;
            ok
        };
        ok.then_some(v)
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
    let mut stats = WalkStats::default();
    let (n, end) = published.read(|view| {
        // The last mapping found: consecutive frames are often in one file.
        let mut last: Option<(NmiVma, Option<FileTable<'_>>)> = None;
        let mut lookup = |ip: u64| -> Rule {
            let hit = matches!(&last, Some((v, _)) if v.start <= ip && ip < v.end);
            if !hit {
                let mut v = NmiVma::default();
                // SAFETY: NMI-safe (a lockless, speculative lookup).
                if !unsafe { helpers::rprof_nmi_exec_vma(ip, &mut v) } {
                    last = None;
                    return Rule::None;
                }
                last = Some((v, view.table(v.inode)));
            }
            let Some((v, Some(t))) = &last else { return Rule::None };
            let off = ip.wrapping_sub(v.start).wrapping_add(v.pgoff_bytes);
            t.row(off).map_or(Rule::None, Rule::Row)
        };
        unwind::walk(regs, &mut lookup, &mut NmiMem { loaded: false }, ips, &mut stats)
    });
    let flags = match end {
        End::Outermost => 0,
        End::Fault => RPROF_STACK_USER_FAULT,
        End::NotUp | End::LostRbp => RPROF_STACK_USER_BAD_FP,
        End::Truncated => RPROF_STACK_USER_TRUNCATED,
    };
    (n, flags, stats)
}

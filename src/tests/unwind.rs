// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rprof-unwind`: the table walker (`src/chains/unwind.rs`)
//! on synthetic tables and a synthetic user stack, each rule and each way a
//! walk ends, and the checks a table passes at upload.

use crate::chains::unwind::{self, End, Invalid, Regs, Rule, UserMem, WalkStats};
use crate::kapi::kunit::{kassert, kassert_eq, kunit_suite, Test};
use crate::uapi::*;
use kernel::prelude::*;

/// A user stack of `N` words from `base`: reads outside it, or misaligned,
/// fault.
struct Stack<const N: usize> {
    base: u64,
    words: [u64; N],
}

impl<const N: usize> Stack<N> {
    fn new(base: u64) -> Self {
        Self { base, words: [0; N] }
    }

    fn put(&mut self, addr: u64, value: u64) {
        self.words[((addr - self.base) / 8) as usize] = value;
    }
}

impl<const N: usize> UserMem for Stack<N> {
    fn read(&mut self, addr: u64) -> Option<u64> {
        if addr < self.base || addr & 7 != 0 {
            return None;
        }
        self.words.get(((addr - self.base) / 8) as usize).copied()
    }
}

const fn row(start: u32, cfa: u32, cfa_off: i32, rbp: u32, rbp_off: i16) -> rprof_unwind_row {
    rprof_unwind_row { start, cfa_off, rbp_off, cfa: cfa as u8, rbp: rbp as u8 }
}

const RSP: u32 = RPROF_UNWIND_CFA_RSP;
const RBP: u32 = RPROF_UNWIND_CFA_RBP;
const SAME: u32 = RPROF_UNWIND_RBP_SAME;
const SAVED: u32 = RPROF_UNWIND_RBP_SAVED;

/// Four functions of one file, whose addresses are their file offsets:
/// a frameless leaf, `b` with a frame pointer, `a` frameless with 24 bytes
/// of locals, `main` that saved RBP without making a frame, and `_start`,
/// the outermost.
const TABLE: [rprof_unwind_row; 5] = [
    row(0x1000, RSP, 8, SAME, 0),
    row(0x1100, RBP, 16, SAVED, -16),
    row(0x1200, RSP, 32, SAME, 0),
    row(0x1300, RSP, 16, SAVED, -16),
    row(0x1400, RPROF_UNWIND_CFA_STOP, 0, SAME, 0),
];
const END: u32 = 0x1500;

fn lookup_table(ip: u64) -> Rule {
    match unwind::row_for(&TABLE, END, ip) {
        Some(r) => Rule::Row(r),
        None => Rule::None,
    }
}

const S0: u64 = 0x7000;
const A_BP: u64 = 0xdead_0000;

/// The stack of a sample in the leaf, called by `b`, called by `a`, called
/// by `main`, called by `_start`; and the leaf's registers (RBP still
/// `b`'s frame pointer: the leaf made no frame).
fn leaf_stack() -> (Stack<16>, Regs) {
    let mut s = Stack::new(S0);
    s.put(S0, 0x1150); // leaf's return into b
    s.put(S0 + 8, A_BP); // b's saved RBP (a's, which a does not use)
    s.put(S0 + 16, 0x1250); // b's return into a
    // a's 24 bytes of locals: S0 + 24 .. S0 + 48
    s.put(S0 + 48, 0x1350); // a's return into main
    s.put(S0 + 56, 0); // main's saved RBP
    s.put(S0 + 64, 0x1410); // main's return into _start
    (s, Regs { ip: 0x1010, sp: S0, bp: S0 + 8 })
}

/// The leaf's caller is found (a frame-pointer walk skips it), and so is
/// every frame to the outermost.
fn unwind_frameless_leaf_keeps_its_caller(t: &mut Test) {
    let (mut mem, regs) = leaf_stack();
    let mut ips = [0u64; 8];
    let mut stats = WalkStats::default();
    let (n, end) = unwind::walk(regs, &mut lookup_table, &mut mem, &mut ips, &mut stats);
    kassert_eq!(t, end, End::Outermost);
    kassert_eq!(t, &ips[..n], &[0x1150u64, 0x1250, 0x1350, 0x1410][..]);
    kassert_eq!(t, stats, WalkStats { table_frames: 4, fp_frames: 0 });

    // Frame pointers alone: b's frame record is taken for the leaf's, so
    // b is missing, and a (frameless) ends the walk.
    let (mut mem, regs) = leaf_stack();
    let mut stats = WalkStats::default();
    let (n, end) = unwind::walk(regs, &mut |_| Rule::None, &mut mem, &mut ips, &mut stats);
    kassert!(t, !ips[..n].contains(&0x1150), "{:?}", &ips[..n]);
    kassert_eq!(t, ips[0], 0x1250);
    kassert!(t, end != End::Outermost);
    kassert_eq!(t, stats.table_frames, 0);
}

/// A PLT stub's CFA: 8 more once its second half (ip & 15 >= 11) pushed.
fn unwind_plt_rule(t: &mut Test) {
    let plt = [row(0x100, RPROF_UNWIND_CFA_PLT, 8, SAME, 0), row(0x200, RPROF_UNWIND_CFA_STOP, 0, SAME, 0)];
    let lookup = &mut |ip: u64| unwind::row_for(&plt, 0x300, ip).map_or(Rule::None, Rule::Row);
    let mut mem = Stack::<4>::new(S0);
    mem.put(S0, 0x210);
    mem.put(S0 + 8, 0x220);
    let mut ips = [0u64; 4];
    for (ip, want) in [(0x100u64, 0x210u64), (0x10a, 0x210), (0x10b, 0x220), (0x10f, 0x220), (0x110, 0x210)] {
        let (n, end) = unwind::walk(Regs { ip, sp: S0, bp: 0 }, lookup, &mut mem, &mut ips, &mut WalkStats::default());
        kassert_eq!(t, (n, end, ips[0]), (1, End::Outermost, want));
    }
}

/// No table for a frame: its frame pointer; table and frame-pointer
/// frames mix in one chain, each counted.
fn unwind_mixes_tables_and_frame_pointers(t: &mut Test) {
    // The leaf by the table (frameless), its caller in code without a
    // table but with a frame record, whose caller is outermost.
    let table = [row(0x1000, RSP, 8, SAME, 0), row(0x1100, RPROF_UNWIND_CFA_STOP, 0, SAME, 0)];
    let lookup = &mut |ip: u64| {
        if (0x5000..0x6000).contains(&ip) {
            Rule::None
        } else {
            unwind::row_for(&table, 0x1200, ip).map_or(Rule::None, Rule::Row)
        }
    };
    let mut mem = Stack::<8>::new(S0);
    mem.put(S0, 0x5010); // leaf's return into the frame-pointer code
    mem.put(S0 + 16, 0); // its frame record: saved RBP
    mem.put(S0 + 24, 0x1110); // and return into the outermost
    let mut ips = [0u64; 8];
    let mut stats = WalkStats::default();
    let (n, end) = unwind::walk(Regs { ip: 0x1004, sp: S0, bp: S0 + 16 }, lookup, &mut mem, &mut ips, &mut stats);
    kassert_eq!(t, (n, end), (2, End::Outermost));
    kassert_eq!(t, &ips[..n], &[0x5010u64, 0x1110][..]);
    kassert_eq!(t, stats, WalkStats { table_frames: 1, fp_frames: 1 });
}

/// A frame address must move up the stack: a frame record pointing at
/// itself, an RBP below the stack pointer, a CFA that wraps, all end the
/// walk; no table makes it loop.
fn unwind_never_loops(t: &mut Test) {
    let by_rbp = [row(0x1000, RBP, 16, SAVED, -16)];
    let lookup = &mut |ip: u64| unwind::row_for(&by_rbp, 0x2000, ip).map_or(Rule::None, Rule::Row);
    let mut mem = Stack::<8>::new(S0);
    // [S0] = S0: the saved RBP is the frame's own; the return address
    // stays in the function.
    mem.put(S0, S0);
    mem.put(S0 + 8, 0x1010);
    let mut ips = [0u64; 64];
    let (n, end) = unwind::walk(Regs { ip: 0x1000, sp: S0, bp: S0 }, lookup, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (1, End::NotUp));
    // RBP below the stack pointer.
    let (n, end) = unwind::walk(Regs { ip: 0x1000, sp: S0 + 32, bp: S0 }, lookup, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (0, End::NotUp));
    // A CFA past the top of the address space.
    let (n, end) = unwind::walk(Regs { ip: 0x1000, sp: S0, bp: u64::MAX - 8 }, lookup, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (0, End::NotUp));
    // The same by frame pointers.
    let (n, end) = unwind::walk(Regs { ip: 0x9000, sp: S0, bp: S0 }, &mut |_| Rule::None, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (1, End::NotUp));
}

/// A read that would fault ends the walk (Fault); a full output too
/// (Truncated); a rule that needs an RBP an earlier frame lost, too.
fn unwind_faults_truncation_and_lost_rbp(t: &mut Test) {
    let (mut mem, regs) = leaf_stack();
    let mut two = [0u64; 2];
    let (n, end) = unwind::walk(regs, &mut lookup_table, &mut mem, &mut two, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (2, End::Truncated));
    kassert_eq!(t, two, [0x1150, 0x1250]);

    let mut ips = [0u64; 8];
    let mut far = Stack::<2>::new(S0);
    let (n, end) = unwind::walk(Regs { ip: 0x1200, sp: S0, bp: 0 }, &mut lookup_table, &mut far, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (0, End::Fault));

    let lost = [
        row(0x1000, RSP, 8, RPROF_UNWIND_RBP_UNDEF, 0),
        row(0x2000, RBP, 16, SAVED, -16),
    ];
    let lookup = &mut |ip: u64| unwind::row_for(&lost, 0x3000, ip).map_or(Rule::None, Rule::Row);
    let mut mem = Stack::<4>::new(S0);
    mem.put(S0, 0x2010);
    let (n, end) = unwind::walk(Regs { ip: 0x1000, sp: S0, bp: S0 + 8 }, lookup, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (1, End::LostRbp));
    // Nor may the frame pointer stand in for it.
    let (n, end) = unwind::walk(Regs { ip: 0x1000, sp: S0, bp: S0 + 8 }, &mut |ip| if ip < 0x2000 { lookup(ip) } else { Rule::None }, &mut mem, &mut ips, &mut WalkStats::default());
    kassert_eq!(t, (n, end), (1, End::LostRbp));
}

/// Rows cover from their start to the next one's; nothing before the
/// first or from the end on.
fn unwind_row_lookup(t: &mut Test) {
    let at = |off: u64| unwind::row_for(&TABLE, END, off).map(|r| r.start);
    kassert_eq!(t, at(0), None);
    kassert_eq!(t, at(0xfff), None);
    kassert_eq!(t, at(0x1000), Some(0x1000));
    kassert_eq!(t, at(0x10ff), Some(0x1000));
    kassert_eq!(t, at(0x1100), Some(0x1100));
    kassert_eq!(t, at(0x14ff), Some(0x1400));
    kassert_eq!(t, at(0x1500), None);
    kassert_eq!(t, at(u64::MAX), None);
}

/// The index finds, for every offset, the row the plain search finds: on
/// dense tables (many rows a block), sparse ones (blocks without rows),
/// one row, rows from offset 0 and ends near 4 GiB; and it costs no more
/// entries than rows, plus one.
fn unwind_index_finds_what_the_search_finds(t: &mut Test) {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // (rows, largest gap between starts, first start)
    for (n, gap, first) in [(1u32, 1u32, 0u32), (1, 1, 0x5000), (7, 3, 0), (300, 16, 0x100), (300, 4000, 0), (2000, 40, 0x40_0000), (64, 60_000_000, 1)] {
        let mut rows = KVec::new();
        let mut start = first;
        for _ in 0..n {
            if rows.push(row(start, RSP, 8, SAME, 0), GFP_KERNEL).is_err() {
                kassert!(t, false, "no memory for {} rows", n);
                return;
            }
            start += 1 + (next() % u64::from(gap)) as u32;
        }
        let end = start;
        let shift = unwind::index_shift(n, end);
        let len = unwind::index_len(n, end);
        kassert!(t, len <= n as usize + 1, "{} entries for {} rows to {:#x}", len, n, end);
        let mut index = KVec::new();
        for _ in 0..len {
            if index.push(0u32, GFP_KERNEL).is_err() {
                kassert!(t, false, "no memory for the index");
                return;
            }
        }
        unwind::build_index(&rows, shift, &mut index);
        let mut offs = KVec::new();
        for r in rows.iter() {
            for off in [u64::from(r.start).wrapping_sub(1), u64::from(r.start), u64::from(r.start) + 1] {
                let _ = offs.push(off, GFP_KERNEL);
            }
        }
        for _ in 0..2000 {
            let _ = offs.push(next() % (u64::from(end) + 2), GFP_KERNEL);
        }
        for off in [0, u64::from(end) - 1, u64::from(end), u64::from(end) + 1, u64::MAX] {
            let _ = offs.push(off, GFP_KERNEL);
        }
        let wrong = offs
            .iter()
            .filter(|&&off| unwind::row_indexed(&rows, &index, shift, end, off).map(|r| r.start) != unwind::row_for(&rows, end, off).map(|r| r.start))
            .count();
        kassert!(t, wrong == 0, "{} of {} offsets differ ({} rows to {:#x}, shift {})", wrong, offs.len(), n, end, shift);
    }
}

/// The published tables are sorted by key (the handler's lookup is a
/// binary search): every order of a few keys, duplicates, and a larger
/// pseudo-random set come out sorted, with the same keys.
fn unwind_tables_sort_by_key(t: &mut Test) {
    // (Expected orders written out: the standard library's sort is what
    // the module avoids.)
    for n in 0..3 {
        let mut keys = [2usize, 1, 0];
        let mut want = [2usize, 1, 0];
        // Written out: `n` keys, sorted.
        match n {
            1 => want[0] = 2,
            2 => (want[0], want[1]) = (1, 2),
            _ => {}
        }
        kassert!(t, crate::chains::tables::test_sort_keys(&mut keys[..n]).is_ok(), "allocation failed");
        kassert_eq!(t, &keys[..n], &want[..n]);
    }
    let cases: [([usize; 5], [usize; 5]); 4] = [
        ([5, 4, 3, 2, 1], [1, 2, 3, 4, 5]),
        ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]),
        ([3, 1, 3, 0, 3], [0, 1, 3, 3, 3]),
        ([9, 0, 8, 1, 7], [0, 1, 7, 8, 9]),
    ];
    for (mut keys, want) in cases {
        kassert!(t, crate::chains::tables::test_sort_keys(&mut keys).is_ok(), "allocation failed");
        kassert_eq!(t, keys, want);
    }
    let mut many = [0usize; 257];
    let mut x = 12345u64;
    for k in many.iter_mut() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *k = (x >> 40) as usize % 100;
    }
    let sum: usize = many.iter().sum();
    kassert!(t, crate::chains::tables::test_sort_keys(&mut many).is_ok(), "allocation failed");
    kassert!(t, many.windows(2).all(|w| w[0] <= w[1]), "257 keys not sorted");
    kassert_eq!(t, many.iter().sum::<usize>(), sum);
}

/// What an upload is refused for: each check, alone.
fn unwind_validate_rejects(t: &mut Test) {
    kassert_eq!(t, unwind::validate(&TABLE, END), Ok(()));
    kassert_eq!(t, unwind::validate(&[], END), Err(Invalid::Empty));
    kassert_eq!(t, unwind::validate(&TABLE, 0x1400), Err(Invalid::PastEnd));
    let mut bad = TABLE;
    bad[2].start = bad[1].start;
    kassert_eq!(t, unwind::validate(&bad, END), Err(Invalid::Unsorted));
    bad = TABLE;
    bad.swap(0, 1);
    kassert_eq!(t, unwind::validate(&bad, END), Err(Invalid::Unsorted));
    let one = |r: rprof_unwind_row| unwind::validate(&[r], 0x2000);
    kassert_eq!(t, one(row(0, 6, 0, SAME, 0)), Err(Invalid::Rule));
    kassert_eq!(t, one(row(0, RSP, 8, 3, 0)), Err(Invalid::Rule));
    kassert_eq!(t, one(row(0, RPROF_UNWIND_CFA_STOP, 0, SAVED, -16)), Err(Invalid::Rule));
    for off in [i32::MIN, -8, 0, 7, unwind::CFA_OFF_MAX + 1, i32::MAX] {
        kassert!(t, one(row(0, RSP, off, SAME, 0)) == Err(Invalid::Offset), "cfa_off {}", off);
    }
    kassert_eq!(t, one(row(0, RSP, unwind::CFA_OFF_MAX, SAME, 0)), Ok(()));
    for off in [i16::MIN + 1, -12, -8, 0, 8, 16] {
        kassert!(t, one(row(0, RSP, 16, SAVED, off)) == Err(Invalid::Offset), "rbp_off {}", off);
    }
    kassert_eq!(t, one(row(0, RSP, 16, SAVED, i16::MIN)), Ok(()));
    kassert_eq!(t, one(row(0, RSP, 16, SAME, -16)), Err(Invalid::Offset));
    kassert_eq!(t, one(row(0, RPROF_UNWIND_CFA_NONE, 8, SAME, 0)), Err(Invalid::Offset));
    kassert_eq!(t, one(row(0, RPROF_UNWIND_CFA_FP, 0, SAME, 0)), Ok(()));
}

kunit_suite!(
    UNWIND_SUITE,
    "rprof-unwind",
    [
        unwind_frameless_leaf_keeps_its_caller,
        unwind_plt_rule,
        unwind_mixes_tables_and_frame_pointers,
        unwind_never_loops,
        unwind_faults_truncation_and_lost_rbp,
        unwind_row_lookup,
        unwind_index_finds_what_the_search_finds,
        unwind_validate_rejects,
        unwind_tables_sort_by_key,
    ]
);

//! The compiler: an x86-64 ELF file's `.eh_frame` and `.debug_frame` into one table by file offset.
//!
//! Every FDE's rows (gimli's evaluation of its CIE's and its own
//! instructions) become [`Rule`]s keyed by file offset, through the
//! executable PT_LOAD segment that holds the FDE.  The FDEs are then laid
//! end to end in offset order: a gap between two gets a `CFA_NONE` row,
//! an FDE that starts inside the one before keeps only what lies beyond
//! it (the earlier FDE wins; `.eh_frame` before `.debug_frame` at the same
//! start), and neighbouring rows with the same rule become one.

use crate::rules::{classify_cfa_expression, rule_of, Rule, RA, RBP};
use crate::table::{Row, UnwindTable, BUILD_ID_MAX};
use gimli::{
    BaseAddresses, CallFrameInstruction, CieOrFde, DebugFrame, EhFrame, EndianSlice, LittleEndian,
    UnwindContext, UnwindSection,
};
use object::{Architecture, Object, ObjectSection, ObjectSegment, SegmentFlags};
use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// What a compile found and made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// FDEs read, from both sections.
    pub fdes: usize,
    /// Of these, from `.debug_frame`.
    pub debug_frame_fdes: usize,
    /// FDEs outside every executable PT_LOAD, or beyond a u32 offset.
    pub skipped_fdes: usize,
    /// CIEs or FDEs that did not parse or evaluate (dropped whole).
    pub bad_fdes: usize,
    /// FDEs that start inside an earlier one of the same section, or of
    /// `.debug_frame` over `.eh_frame`'s (see `shadowed_fdes`).
    pub overlapping_fdes: usize,
    /// `.debug_frame` FDEs over ranges that `.eh_frame` already covers
    /// (files that have both describe most functions twice).
    pub shadowed_fdes: usize,
    /// The rows that the FDEs' instructions make, before merging.
    pub cfi_rows: usize,
    /// The table's rows.
    pub rows: usize,
    /// The table's rows by `enum rprof_unwind_cfa`.
    pub rows_by_cfa: [usize; 6],
    /// The table's size in its file format.
    pub bytes: usize,
    /// How long the compile took.
    pub compile_time: Duration,
}

impl fmt::Display for Stats {
    /// One line: `fdes 2345 (debug_frame 0) skipped 0 bad 0 overlapping 0
    /// shadowed 0 cfi-rows 9999 rows 8888 (none 1 rsp 2 rbp 3 plt 4 fp 5
    /// stop 6) bytes 106696 time 12.3ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.rows_by_cfa;
        write!(
            f,
            "fdes {} (debug_frame {}) skipped {} bad {} overlapping {} shadowed {} \
             cfi-rows {} rows {} (none {} rsp {} rbp {} plt {} fp {} stop {}) bytes {} time {:.1}ms",
            self.fdes,
            self.debug_frame_fdes,
            self.skipped_fdes,
            self.bad_fdes,
            self.overlapping_fdes,
            self.shadowed_fdes,
            self.cfi_rows,
            self.rows,
            k[0],
            k[1],
            k[2],
            k[3],
            k[4],
            k[5],
            self.bytes,
            self.compile_time.as_secs_f64() * 1e3
        )
    }
}

/// A table and how it was made.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The table.
    pub table: UnwindTable,
    /// The compile's figures.
    pub stats: Stats,
}

/// Why a file has no table.
#[derive(Debug)]
pub enum CompileError {
    /// The file could not be read.
    Io(std::io::Error),
    /// Not an ELF file object reads.
    NotElf(String),
    /// An ELF file for another machine.
    NotX86_64(Architecture),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Io(e) => write!(f, "{e}"),
            CompileError::NotElf(e) => write!(f, "not an ELF file: {e}"),
            CompileError::NotX86_64(a) => write!(
                f,
                "an ELF file for {a:?}: unwind tables are compiled for x86-64 only"
            ),
        }
    }
}

impl std::error::Error for CompileError {}

/// An executable PT_LOAD segment.
#[derive(Debug, Clone, Copy)]
struct Segment {
    vaddr: u64,
    offset: u64,
    size: u64,
}

/// The file offsets `[start, end)` of the addresses `[addr, addr + len)`,
/// if one executable segment holds them all and they fit a u32.
fn offsets_of(segments: &[Segment], addr: u64, len: u64) -> Option<(u32, u32)> {
    let end = addr.checked_add(len)?;
    let s = segments
        .iter()
        .find(|s| s.vaddr <= addr && end <= s.vaddr.saturating_add(s.size))?;
    let start = (addr - s.vaddr).checked_add(s.offset)?;
    let end = start.checked_add(len)?;
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}

/// Where an FDE comes from; `.eh_frame` sorts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    EhFrame,
    DebugFrame,
}

/// One FDE's rows by file offset.
struct Span {
    start: u32,
    end: u32,
    source: Source,
    /// The FDE's place in its section (a deterministic last tie-break).
    order: usize,
    /// (start, rule), increasing starts, all within `[start, end)`.
    rows: Vec<(u32, Rule)>,
}

/// Where RBP's rule is an explicit `DW_CFA_undefined` within one FDE.
struct RbpUndefined {
    /// (address, state) at each change, in order.
    changes: Vec<(u64, bool)>,
    /// The next change to apply.
    next: usize,
    /// The state so far (at first: the CIE's).
    now: bool,
}

impl RbpUndefined {
    /// Follows RBP through the CIE's and the FDE's instructions (the rule
    /// locations as gimli's table computes them: advances, set_loc,
    /// remember/restore_state, restore).
    fn of<'a, S: UnwindSection<Slice<'a>>>(
        section: &S,
        bases: &BaseAddresses,
        fde: &gimli::FrameDescriptionEntry<Slice<'a>>,
    ) -> gimli::Result<RbpUndefined> {
        let cie = fde.cie();
        let caf = cie.code_alignment_factor();
        // What an instruction does to "RBP is explicitly undefined", if
        // anything (the rest of its effects are gimli's business).
        let effect = |i: &CallFrameInstruction<usize>| -> Option<bool> {
            use CallFrameInstruction::*;
            match *i {
                Undefined { register } if register == RBP => Some(true),
                SameValue { register }
                | Offset { register, .. }
                | OffsetExtendedSf { register, .. }
                | ValOffset { register, .. }
                | ValOffsetSf { register, .. }
                | Expression { register, .. }
                | ValExpression { register, .. }
                    if register == RBP =>
                {
                    Some(false)
                }
                Register { dest_register, .. } if dest_register == RBP => Some(false),
                _ => None,
            }
        };
        let mut initial = false;
        let mut mentioned = false;
        let mut it = cie.instructions(section, bases);
        while let Some(i) = it.next()? {
            if let Some(v) = effect(&i) {
                initial = v;
                mentioned |= v;
            }
        }
        let mut now = initial;
        let mut loc = fde.initial_address();
        let mut stack = Vec::new();
        let mut changes = Vec::new();
        let mut it = fde.instructions(section, bases);
        while let Some(i) = it.next()? {
            let before = now;
            match i {
                CallFrameInstruction::AdvanceLoc { delta } => {
                    loc = loc.wrapping_add(u64::from(delta).wrapping_mul(caf));
                }
                CallFrameInstruction::SetLoc { address } => loc = address,
                CallFrameInstruction::RememberState => stack.push(now),
                CallFrameInstruction::RestoreState => now = stack.pop().unwrap_or(now),
                CallFrameInstruction::Restore { register } if register == RBP => now = initial,
                ref other => {
                    if let Some(v) = effect(other) {
                        now = v;
                        mentioned |= v;
                    }
                }
            }
            if now != before {
                changes.push((loc, now));
            }
        }
        if !mentioned {
            changes.clear();
        }
        Ok(RbpUndefined {
            changes,
            next: 0,
            now: initial,
        })
    }

    /// The state for the row from `addr` (rows come in increasing order).
    fn at(&mut self, addr: u64) -> bool {
        while let Some(&(loc, v)) = self.changes.get(self.next) {
            if loc > addr {
                break;
            }
            self.now = v;
            self.next += 1;
        }
        self.now
    }
}

/// Reads the FDEs of one section into `spans`.
fn read_section<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    source: Source,
    segments: &[Segment],
    spans: &mut Vec<Span>,
    stats: &mut Stats,
) {
    let mut ctx = UnwindContext::<usize>::new();
    let mut entries = section.entries(bases);
    let mut order = 0;
    loop {
        let partial = match entries.next() {
            Ok(Some(CieOrFde::Fde(partial))) => partial,
            Ok(Some(CieOrFde::Cie(_))) => continue,
            Ok(None) => break,
            // A broken entry length: nothing after it can be found.
            Err(_) => {
                stats.bad_fdes += 1;
                break;
            }
        };
        stats.fdes += 1;
        if source == Source::DebugFrame {
            stats.debug_frame_fdes += 1;
        }
        order += 1;
        let Ok(fde) = partial.parse(S::cie_from_offset) else {
            stats.bad_fdes += 1;
            continue;
        };
        if fde.len() == 0 {
            continue;
        }
        let Some((start, end)) = offsets_of(segments, fde.initial_address(), fde.len()) else {
            stats.skipped_fdes += 1;
            continue;
        };
        let rows = if fde.is_signal_trampoline() {
            stats.cfi_rows += 1;
            Ok(vec![(start, Rule::STOP)])
        } else {
            fde_rows(section, bases, &mut ctx, &fde, start, stats)
        };
        match rows {
            Ok(rows) => spans.push(Span {
                start,
                end,
                source,
                order,
                rows,
            }),
            Err(_) => stats.bad_fdes += 1,
        }
    }
}

/// The rows of one FDE, by file offset (`start` is its first address's).
fn fde_rows<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    ctx: &mut UnwindContext<usize>,
    fde: &gimli::FrameDescriptionEntry<Slice<'a>>,
    start: u32,
    stats: &mut Stats,
) -> gimli::Result<Vec<(u32, Rule)>> {
    let base = fde.initial_address();
    let end = fde.end_address();
    let mut undefined = RbpUndefined::of(section, bases, fde)?;
    let mut rows = Vec::new();
    let mut table = fde.rows(section, bases, ctx)?;
    while let Some(row) = table.next_row()? {
        // Empty rows, and rows outside the FDE (gimli keeps set_loc from
        // going back, not from going past the end).
        if row.end_address() <= row.start_address()
            || row.start_address() < base
            || row.start_address() >= end
        {
            continue;
        }
        stats.cfi_rows += 1;
        let cfa_expr = || match row.cfa() {
            gimli::CfaRule::Expression(e) => e
                .get(section)
                .map_or(crate::rules::CfaExpression::Other, classify_cfa_expression),
            gimli::CfaRule::RegisterAndOffset { .. } => crate::rules::CfaExpression::Other,
        };
        let rule = rule_of(
            row.cfa(),
            cfa_expr,
            &row.register(RA),
            &row.register(RBP),
            undefined.at(row.start_address()),
        );
        // Within the FDE's range, so within u32 too.
        let off = row.start_address().wrapping_sub(base);
        rows.push((start.wrapping_add(off as u32), rule));
    }
    Ok(rows)
}

/// Lays the spans end to end (see the module doc) into rows.
fn lay_out(mut spans: Vec<Span>, stats: &mut Stats) -> (Vec<Row>, u32) {
    spans.sort_by_key(|s| (s.start, s.source, s.order));
    let mut rows: Vec<Row> = Vec::new();
    let mut last_rule: Option<Rule> = None;
    let mut push = |rows: &mut Vec<Row>, start: u32, rule: Rule| {
        if last_rule != Some(rule) {
            rows.push(rule.at(start));
            last_rule = Some(rule);
        }
    };
    // The end of what the spans so far cover, and the source of the span
    // that reaches it.
    let mut covered: Option<(u32, Source)> = None;
    for s in spans {
        let mut from = s.start;
        if let Some((end, by)) = covered {
            if s.start < end {
                if s.source == Source::DebugFrame && by == Source::EhFrame {
                    stats.shadowed_fdes += 1;
                } else {
                    stats.overlapping_fdes += 1;
                }
                if s.end <= end {
                    continue;
                }
                from = end;
            } else if s.start > end {
                push(&mut rows, end, Rule::NONE);
            }
        }
        for (i, &(start, rule)) in s.rows.iter().enumerate() {
            let row_end = s.rows.get(i + 1).map_or(s.end, |r| r.0);
            if row_end > from {
                push(&mut rows, start.max(from), rule);
            }
        }
        covered = Some((s.end, s.source));
    }
    (rows, covered.map_or(0, |c| c.0))
}

/// Compiles the unwind table of the ELF file in `data`.
pub fn compile(data: &[u8]) -> Result<Compiled, CompileError> {
    let t0 = Instant::now();
    let file = object::File::parse(data).map_err(|e| CompileError::NotElf(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(CompileError::NotElf(format!("{:?}", file.format())));
    }
    if file.architecture() != Architecture::X86_64 || !file.is_64() {
        return Err(CompileError::NotX86_64(file.architecture()));
    }
    let segments: Vec<Segment> = file
        .segments()
        .filter(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0))
        .map(|s| Segment {
            vaddr: s.address(),
            offset: s.file_range().0,
            size: s.file_range().1,
        })
        .collect();
    let mut build_id = file.build_id().ok().flatten().unwrap_or_default().to_vec();
    build_id.truncate(BUILD_ID_MAX);

    let section_data = |name: &str| -> Option<(u64, Cow<'_, [u8]>)> {
        let s = file.section_by_name(name)?;
        Some((s.address(), s.uncompressed_data().ok()?))
    };
    let address_of = |name: &str| file.section_by_name(name).map(|s| s.address());

    let mut stats = Stats::default();
    let mut spans = Vec::new();
    if let Some((addr, bytes)) = section_data(".eh_frame") {
        let mut bases = BaseAddresses::default().set_eh_frame(addr);
        if let Some(text) = address_of(".text") {
            bases = bases.set_text(text);
        }
        if let Some(got) = address_of(".got") {
            bases = bases.set_got(got);
        }
        let eh = EhFrame::new(&bytes, LittleEndian);
        read_section(
            &eh,
            &bases,
            Source::EhFrame,
            &segments,
            &mut spans,
            &mut stats,
        );
    }
    if let Some((_, bytes)) = section_data(".debug_frame") {
        let mut debug = DebugFrame::new(&bytes, LittleEndian);
        debug.set_address_size(8);
        let bases = BaseAddresses::default();
        read_section(
            &debug,
            &bases,
            Source::DebugFrame,
            &segments,
            &mut spans,
            &mut stats,
        );
    }
    let (rows, end) = lay_out(spans, &mut stats);
    for r in &rows {
        stats.rows_by_cfa[usize::from(r.cfa).min(5)] += 1;
    }
    let table = UnwindTable {
        rows,
        end,
        build_id,
    };
    stats.rows = table.rows.len();
    stats.bytes = table.byte_len();
    stats.compile_time = t0.elapsed();
    Ok(Compiled { table, stats })
}

/// Reads the file at `path` and compiles its table.
pub fn compile_file(path: &Path) -> Result<Compiled, CompileError> {
    let data = std::fs::read(path).map_err(CompileError::Io)?;
    compile(&data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::RowDisplay;

    fn rsp(off: i32) -> Rule {
        Rule {
            cfa_off: off,
            ..Rule::bare(rprof_abi::RPROF_UNWIND_CFA_RSP)
        }
    }

    fn span(start: u32, end: u32, source: Source, order: usize, rows: &[(u32, Rule)]) -> Span {
        Span {
            start,
            end,
            source,
            order,
            rows: rows.to_vec(),
        }
    }

    fn shown(rows: &[Row]) -> Vec<String> {
        rows.iter().map(|r| RowDisplay(r).to_string()).collect()
    }

    #[test]
    fn fdes_laid_end_to_end() {
        use Source::*;
        let mut stats = Stats::default();
        let spans = vec![
            // Out of order on purpose: the layout sorts.
            span(0x40, 0x50, EhFrame, 3, &[(0x40, rsp(8))]),
            span(0x10, 0x20, EhFrame, 1, &[(0x10, rsp(8)), (0x11, rsp(16))]),
            // Touches the one before, same rule: merged into its last row.
            span(0x20, 0x30, EhFrame, 2, &[(0x20, rsp(16)), (0x28, rsp(8))]),
            // .debug_frame over .eh_frame's 0x40..0x50: shadowed, and
            // what lies beyond (0x50..0x58) is kept.
            span(
                0x44,
                0x58,
                DebugFrame,
                1,
                &[(0x44, rsp(24)), (0x52, rsp(32))],
            ),
            // Inside another of the same section: overlapping, dropped.
            span(0x12, 0x18, EhFrame, 4, &[(0x12, rsp(64))]),
        ];
        let (rows, end) = lay_out(spans, &mut stats);
        assert_eq!(
            shown(&rows),
            [
                "0x10 cfa=rsp+8 rbp=same",
                "0x11 cfa=rsp+16 rbp=same",
                "0x28 cfa=rsp+8 rbp=same",
                "0x30 cfa=none",
                "0x40 cfa=rsp+8 rbp=same",
                "0x50 cfa=rsp+24 rbp=same",
                "0x52 cfa=rsp+32 rbp=same",
            ]
        );
        assert_eq!(end, 0x58);
        assert_eq!((stats.overlapping_fdes, stats.shadowed_fdes), (1, 1));
    }

    #[test]
    fn equal_starts_keep_eh_frame_then_the_first() {
        use Source::*;
        let mut stats = Stats::default();
        let spans = vec![
            span(0x10, 0x20, DebugFrame, 1, &[(0x10, rsp(24))]),
            span(0x10, 0x20, EhFrame, 2, &[(0x10, rsp(16))]),
            span(0x10, 0x20, EhFrame, 1, &[(0x10, rsp(8))]),
        ];
        let (rows, end) = lay_out(spans, &mut stats);
        assert_eq!(shown(&rows), ["0x10 cfa=rsp+8 rbp=same"]);
        assert_eq!(end, 0x20);
        assert_eq!((stats.overlapping_fdes, stats.shadowed_fdes), (1, 1));
        assert_eq!(lay_out(Vec::new(), &mut stats), (Vec::new(), 0));
    }

    #[test]
    fn file_offsets_through_executable_segments() {
        let segs = [Segment {
            vaddr: 0x401000,
            offset: 0x1000,
            size: 0x2000,
        }];
        assert_eq!(offsets_of(&segs, 0x401010, 0x20), Some((0x1010, 0x1030)));
        assert_eq!(offsets_of(&segs, 0x402ff0, 0x10), Some((0x2ff0, 0x3000)));
        // Across the segment's end, before it, beyond u32.
        assert_eq!(offsets_of(&segs, 0x402ff0, 0x11), None);
        assert_eq!(offsets_of(&segs, 0x400ff0, 0x10), None);
        assert_eq!(offsets_of(&segs, u64::MAX, 2), None);
        let high = [Segment {
            vaddr: 0,
            offset: 0xffff_fff0,
            size: 0x100,
        }];
        assert_eq!(offsets_of(&high, 0, 0xf), Some((0xffff_fff0, u32::MAX)));
        assert_eq!(offsets_of(&high, 0, 0x10), None);
    }

    /// A 64-byte ELF64 or 52-byte ELF32 header, little endian, without
    /// sections or segments, for machine `machine`.
    fn bare_elf(class64: bool, machine: u16) -> Vec<u8> {
        let mut b = vec![0x7f, b'E', b'L', b'F', if class64 { 2 } else { 1 }, 1, 1];
        b.resize(16, 0);
        b.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        b.extend_from_slice(&machine.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
        let (header, rest) = if class64 {
            (64, 64 - 24)
        } else {
            (52, 52 - 24)
        };
        b.resize(24 + rest, 0);
        // e_ehsize
        let at = if class64 { 52 } else { 40 };
        b[at..at + 2].copy_from_slice(&(header as u16).to_le_bytes());
        b
    }

    #[test]
    fn x86_64_only() {
        const EM_X86_64: u16 = 62;
        let ok = compile(&bare_elf(true, EM_X86_64)).unwrap();
        assert!(ok.table.rows.is_empty());
        assert_eq!(ok.table.end, 0);
        for (class64, machine) in [(true, 183), (false, 3), (false, EM_X86_64)] {
            let e = compile(&bare_elf(class64, machine)).unwrap_err();
            assert!(
                matches!(e, CompileError::NotX86_64(_)),
                "class64 {class64} machine {machine}: {e}"
            );
            assert!(e.to_string().contains("x86-64 only"), "{e}");
        }
        assert!(matches!(compile(b"\x7fELF"), Err(CompileError::NotElf(_))));
        assert!(matches!(compile(b""), Err(CompileError::NotElf(_))));
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    use crate::testrng::XorShift;

    /// /bin/ls with bytes of its `.eh_frame` flipped: every compile ends
    /// (no panic), and every table it makes is one the module accepts.
    #[test]
    fn damaged_eh_frame_never_panics_nor_makes_an_invalid_table() {
        let Ok(data) = std::fs::read("/bin/ls") else {
            println!("skipped: no /bin/ls");
            return;
        };
        let file = object::File::parse(&*data).unwrap();
        let Some((at, len)) = file
            .section_by_name(".eh_frame")
            .and_then(|s| s.file_range())
        else {
            println!("skipped: /bin/ls has no .eh_frame");
            return;
        };
        let (at, len) = (at as usize, len as usize);
        let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
        let (mut ok, mut damaged) = (0, 0);
        for _ in 0..300 {
            let mut d = data.clone();
            for _ in 0..1 + rng.next() % 16 {
                let i = at + (rng.next() as usize) % len;
                d[i] = rng.next() as u8;
            }
            let c = compile(&d).unwrap();
            c.table.to_bytes().unwrap();
            ok += 1;
            if c.stats.bad_fdes + c.stats.skipped_fdes + c.stats.overlapping_fdes > 0 {
                damaged += 1;
            }
        }
        println!("{ok} compiles of a damaged .eh_frame, {damaged} with FDEs dropped");
        assert!(damaged > 0);
    }
}

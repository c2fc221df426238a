//! The compiled tables against independent readings of the same CFI: llvm-dwarfdump's and readelf's interpreted rows.
//!
//! For every row that `llvm-dwarfdump --eh-frame` (every FDE, every rule
//! it knows, expressions spelled out) or `readelf --debug-dump=frames-interp`
//! (binutils' own evaluator) prints, the rule that issue 31's semantics
//! give that row is worked out here from the tool's text alone, and the
//! compiled table's row at the row's first and last byte must say the
//! same.  Addresses become file offsets through `readelf -lW`'s program
//! headers, not through the crate's code.  A tool that is missing skips
//! with a printed reason; so does a compiler.

// The tools' text is parsed with unwrap: output that does not read as
// expected is the test's failure, with the place.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rprof_abi::*;
use rprof_unwind::{compile_file, Row, RowDisplay, UnwindTable};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The rule of issue 31 that one oracle row calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Want {
    cfa: u32,
    cfa_off: i32,
    rbp: Rbp,
}

/// What the oracle says of RBP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rbp {
    Same,
    Saved(i16),
    Undef,
    /// readelf's `u`: never mentioned so far, or DW_CFA_undefined; it
    /// cannot tell which, so either is right.
    SameOrUndef,
}

impl Want {
    const fn bare(cfa: u32) -> Want {
        Want {
            cfa,
            cfa_off: 0,
            rbp: Rbp::Same,
        }
    }

    fn matches(&self, r: &Row) -> bool {
        if u32::from(r.cfa) != self.cfa {
            return false;
        }
        if !matches!(
            self.cfa,
            RPROF_UNWIND_CFA_RSP | RPROF_UNWIND_CFA_RBP | RPROF_UNWIND_CFA_PLT
        ) {
            return true;
        }
        let rbp = match self.rbp {
            Rbp::Same => u32::from(r.rbp) == RPROF_UNWIND_RBP_SAME,
            Rbp::Saved(n) => u32::from(r.rbp) == RPROF_UNWIND_RBP_SAVED && r.rbp_off == n,
            Rbp::Undef => u32::from(r.rbp) == RPROF_UNWIND_RBP_UNDEF,
            Rbp::SameOrUndef => matches!(
                u32::from(r.rbp),
                RPROF_UNWIND_RBP_SAME | RPROF_UNWIND_RBP_UNDEF
            ),
        };
        r.cfa_off == self.cfa_off && rbp
    }
}

/// One interpreted row: `[addr, end)` and the tool's text of its rules.
#[derive(Debug, Clone)]
struct OracleRow {
    addr: u64,
    end: u64,
    /// The CFA as printed (`RSP+8`, `exp`, `DW_OP_breg7 RSP+8, ...`).
    cfa: String,
    /// RBP's rule as printed, `None` if the tool prints none.
    rbp: Option<String>,
    /// The return address's rule as printed, `None` if none.
    ra: Option<String>,
    /// The CIE's augmentation has `S`.
    signal: bool,
    /// The oracle's row shows a CFA expression it does not spell out.
    opaque_expression: bool,
    /// The range of the row's FDE.
    fde: (u64, u64),
    /// llvm-dwarfdump: the row comes after a DW_CFA_restore_state.
    after_restore_state: bool,
}

// ---------------------------------------------------------------------
// The tools.

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(tool: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(tool).args(args).arg(file).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    // readelf 2.40 exits 1 on Debian's libc.so.6 without a word (after a
    // complete table): what it printed counts, a silent failure does not.
    assert!(
        out.status.success() || !stdout.is_empty(),
        "{tool} {args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        println!(
            "{tool} {args:?} {}: {} after {} bytes of output: {}",
            file.display(),
            out.status,
            stdout.len(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    stdout
}

/// An executable PT_LOAD from `readelf -lW`: (vaddr, offset, filesz).
fn exec_loads(file: &Path) -> Vec<(u64, u64, u64)> {
    let tool = if have("readelf") {
        "readelf"
    } else {
        "llvm-readelf"
    };
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    run(tool, &["-lW"], file)
        .lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            // LOAD Offset VirtAddr PhysAddr FileSiz MemSiz Flg... Align
            (t.first() == Some(&"LOAD") && t[6..t.len() - 1].concat().contains('E'))
                .then(|| (hex(t[2]), hex(t[1]), hex(t[4])))
        })
        .collect()
}

fn offset_of(loads: &[(u64, u64, u64)], addr: u64) -> Option<u32> {
    let &(vaddr, off, _) = loads.iter().find(|&&(v, _, s)| v <= addr && addr < v + s)?;
    u32::try_from(addr - vaddr + off).ok()
}

/// `Some(n)` for `+n`/`-n`/empty (0) after a register name.
fn signed(s: &str) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match s.as_bytes()[0] {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => return None,
    };
    let n: i64 = digits.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// One FDE's rows as a tool prints them: each ends where the next starts,
/// the last at the FDE's end.
fn close(fde_rows: &mut Vec<OracleRow>, fde: (u64, u64), into: &mut Vec<OracleRow>) {
    let starts: Vec<u64> = fde_rows.iter().skip(1).map(|r| r.addr).collect();
    for (r, next) in fde_rows.iter_mut().zip(starts.into_iter().chain([fde.1])) {
        r.end = next;
        r.fde = fde;
    }
    into.append(fde_rows);
}

/// `llvm-dwarfdump --eh-frame` (which prints `.debug_frame` too): every
/// FDE's rows, `0x4020: CFA=RSP+16: RBX=[CFA-16], RIP=[CFA-8]`.
fn llvm_rows(file: &Path) -> Vec<OracleRow> {
    let text = run("llvm-dwarfdump", &["--eh-frame"], file);
    let mut section = "";
    let mut cie_at = String::new();
    let mut signal_cies: Vec<(String, String)> = Vec::new();
    // The FDE being read: ((start, end), signal).
    let mut fde: Option<((u64, u64), bool)> = None;
    // Where its instructions are, and where the first restore_state is.
    let mut loc = 0;
    let mut restored_at = u64::MAX;
    let mut fde_rows = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        let t: Vec<&str> = line.split_whitespace().collect();
        let header =
            line.ends_with("contents:") || (t.len() >= 4 && (t[3] == "CIE" || t[3] == "FDE"));
        if header {
            if let Some((range, _)) = fde.take() {
                close(&mut fde_rows, range, &mut rows);
            }
        }
        if line.ends_with("contents:") {
            section = if line.starts_with(".eh_frame") {
                "eh"
            } else {
                "debug"
            };
        } else if t.len() == 4 && t[3] == "CIE" {
            cie_at = t[0].to_string();
        } else if t.first() == Some(&"Augmentation:") && fde.is_none() {
            if t[1].contains('S') {
                signal_cies.push((section.to_string(), cie_at.clone()));
            }
        } else if t.len() >= 6 && t[3] == "FDE" {
            let cie = t[4].trim_start_matches("cie=");
            let (start, end) = t[5].trim_start_matches("pc=").split_once("...").unwrap();
            let signal = signal_cies.iter().any(|(s, c)| s == section && c == cie);
            let hex = |s| u64::from_str_radix(s, 16).unwrap();
            fde = Some(((hex(start), hex(end)), signal));
            loc = hex(start);
            restored_at = u64::MAX;
        } else if let (Some(_), Some(delta)) = (
            fde,
            t.first()
                .filter(|w| w.starts_with("DW_CFA_advance_loc"))
                .and_then(|_| t.get(1)),
        ) {
            // x86-64's code alignment factor is 1.
            loc += delta.parse::<u64>().unwrap();
        } else if fde.is_some() && t.first() == Some(&"DW_CFA_restore_state:") {
            restored_at = restored_at.min(loc);
        } else if let (Some((_, signal)), Some(rest)) = (fde, line.strip_prefix("  0x")) {
            let (addr, rules) = rest.split_once(": ").unwrap();
            let (cfa, regs) = rules.split_once(": ").unwrap_or((rules, ""));
            // `REG=rule, REG=rule`, where a rule may hold `, ` itself.
            let mut list: Vec<String> = Vec::new();
            for piece in regs.split(", ").filter(|p| !p.is_empty()) {
                let is_reg = piece.split_once('=').is_some_and(|(r, _)| {
                    r.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
                });
                match list.last_mut() {
                    Some(last) if !is_reg => {
                        last.push_str(", ");
                        last.push_str(piece);
                    }
                    _ => list.push(piece.to_string()),
                }
            }
            let reg = |name: &str| {
                list.iter()
                    .find_map(|r| r.strip_prefix(name)?.strip_prefix('='))
                    .map(str::to_string)
            };
            fde_rows.push(OracleRow {
                addr: u64::from_str_radix(addr, 16).unwrap(),
                end: 0,
                cfa: cfa.strip_prefix("CFA=").unwrap().to_string(),
                rbp: reg("RBP"),
                ra: reg("RIP"),
                signal,
                opaque_expression: false,
                fde: (0, 0),
                after_restore_state: u64::from_str_radix(addr, 16).unwrap() >= restored_at,
            });
        }
    }
    if let Some((range, _)) = fde {
        close(&mut fde_rows, range, &mut rows);
    }
    rows
}

/// `readelf --debug-dump=frames-interp`: the `LOC CFA rbx rbp ... ra`
/// tables; an FDE whose instructions are all nops prints none and has its
/// CIE's initial row.
fn readelf_rows(file: &Path) -> Vec<OracleRow> {
    /// A CIE: signal, its columns and its initial row.
    type Cie = (bool, Vec<String>, Vec<String>);
    let text = run("readelf", &["--debug-dump=frames-interp"], file);
    let mut section = "";
    let mut cies: BTreeMap<(String, String), Cie> = BTreeMap::new();
    let mut cie_at: Option<(String, String)> = None;
    // The FDE being read: (start, end, its CIE).
    let mut fde: Option<(u64, u64, (String, String))> = None;
    let mut columns: Vec<String> = Vec::new();
    let mut fde_rows = Vec::new();
    let mut rows = Vec::new();
    let mut finish = |fde: &mut Option<(u64, u64, (String, String))>,
                      fde_rows: &mut Vec<OracleRow>,
                      cies: &BTreeMap<(String, String), Cie>| {
        if let Some((start, end, cie)) = fde.take() {
            if fde_rows.is_empty() {
                let (signal, cols, init) = &cies[&cie];
                if !init.is_empty() {
                    fde_rows.push(readelf_row(start, cols, init, *signal));
                }
            }
            close(fde_rows, (start, end), &mut rows);
        }
    };
    for line in text.lines() {
        // A rule "in another register" is two words, `r9 (r9)`: one cell.
        let mut t: Vec<&str> = Vec::new();
        for (at, w) in line
            .split_whitespace()
            .map(|w| (w.as_ptr() as usize - line.as_ptr() as usize, w))
        {
            match t.last_mut() {
                Some(last) if w.starts_with('(') => {
                    let from = last.as_ptr() as usize - line.as_ptr() as usize;
                    *last = &line[from..at + w.len()];
                }
                _ => t.push(w),
            }
        }
        if line.starts_with("Contents of the") {
            finish(&mut fde, &mut fde_rows, &cies);
            cie_at = None;
            section = if line.contains(".eh_frame") {
                "eh"
            } else {
                "debug"
            };
        } else if t.len() >= 4 && t[3] == "CIE" {
            finish(&mut fde, &mut fde_rows, &cies);
            let key = (section.to_string(), t[0].to_string());
            let aug = t.get(4).copied().unwrap_or("");
            cies.insert(key.clone(), (aug.contains('S'), Vec::new(), Vec::new()));
            cie_at = Some(key);
        } else if t.len() >= 6 && t[3] == "FDE" {
            finish(&mut fde, &mut fde_rows, &cies);
            cie_at = None;
            let cie = (
                section.to_string(),
                t[4].trim_start_matches("cie=").to_string(),
            );
            let pc = t.iter().find_map(|w| w.strip_prefix("pc=")).unwrap();
            let (a, b) = pc.split_once("..").unwrap();
            let hex = |s| u64::from_str_radix(s, 16).unwrap();
            fde = Some((hex(a), hex(b), cie));
        } else if t.is_empty() {
            // A table ends with a blank line (and "ZERO terminator" is
            // not a row).
            columns.clear();
        } else if t.first() == Some(&"LOC") {
            columns = t[1..].iter().map(|s| s.to_string()).collect();
        } else if !columns.is_empty() && t.len() == columns.len() + 1 {
            let Ok(loc) = u64::from_str_radix(t[0], 16) else {
                continue;
            };
            let vals: Vec<String> = t[1..].iter().map(|s| s.to_string()).collect();
            if let Some((_, _, cie)) = &fde {
                let signal = cies[cie].0;
                fde_rows.push(readelf_row(loc, &columns, &vals, signal));
            } else if let Some(key) = &cie_at {
                let c = cies.get_mut(key).unwrap();
                c.1 = columns.clone();
                c.2 = vals;
            }
        }
    }
    finish(&mut fde, &mut fde_rows, &cies);
    rows
}

fn readelf_row(addr: u64, cols: &[String], vals: &[String], signal: bool) -> OracleRow {
    let get = |name: &str| cols.iter().position(|c| c == name).map(|i| vals[i].clone());
    let cfa = get("CFA").unwrap_or_default();
    OracleRow {
        addr,
        end: 0,
        opaque_expression: cfa == "exp",
        cfa,
        rbp: get("rbp"),
        ra: get("ra"),
        signal,
        fde: (0, 0),
        after_restore_state: false,
    }
}

// ---------------------------------------------------------------------
// Issue 31's semantics, applied to the tools' text.

const PLT_TAIL: &str =
    ", DW_OP_breg16 RIP+0, DW_OP_lit15, DW_OP_and, DW_OP_lit11, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus";

/// A saved-at-CFA rule, `[CFA-16]` (llvm) or `c-16` (readelf).
fn at_cfa(rule: &str) -> Option<i64> {
    if let Some(inner) = rule.strip_prefix("[CFA").and_then(|r| r.strip_suffix(']')) {
        return signed(inner);
    }
    rule.strip_prefix('c').and_then(signed)
}

fn want(r: &OracleRow, readelf: bool) -> Want {
    if r.signal {
        return Want::bare(RPROF_UNWIND_CFA_STOP);
    }
    match r.ra.as_deref() {
        None | Some("undefined") => return Want::bare(RPROF_UNWIND_CFA_STOP),
        Some("u") if readelf => return Want::bare(RPROF_UNWIND_CFA_STOP),
        Some(ra) if at_cfa(ra) == Some(-8) => {}
        Some(_) => return Want::bare(RPROF_UNWIND_CFA_FP),
    }
    let cfa = r.cfa.as_str();
    let (kind, off) = if let Some(k) = cfa
        .strip_prefix("DW_OP_breg7 RSP")
        .and_then(|s| s.strip_suffix(PLT_TAIL))
        .and_then(signed)
    {
        (RPROF_UNWIND_CFA_PLT, k)
    } else if let Some(off) = cfa
        .strip_prefix("RSP")
        .or(cfa.strip_prefix("rsp"))
        .and_then(signed)
    {
        (RPROF_UNWIND_CFA_RSP, off)
    } else if let Some(off) = cfa
        .strip_prefix("RBP")
        .or(cfa.strip_prefix("rbp"))
        .and_then(signed)
    {
        (RPROF_UNWIND_CFA_RBP, off)
    } else {
        return Want::bare(RPROF_UNWIND_CFA_FP);
    };
    let Ok(cfa_off) = i32::try_from(off) else {
        return Want::bare(RPROF_UNWIND_CFA_FP);
    };
    let rbp = match r.rbp.as_deref() {
        None | Some("same") | Some("s") => Rbp::Same,
        Some("undefined") => Rbp::Undef,
        Some("u") if readelf => Rbp::SameOrUndef,
        Some(rule) => match at_cfa(rule).map(i16::try_from) {
            Some(Ok(n)) if n % 8 == 0 => Rbp::Saved(n),
            _ => return Want::bare(RPROF_UNWIND_CFA_FP),
        },
    };
    Want {
        cfa: kind,
        cfa_off,
        rbp,
    }
}

// ---------------------------------------------------------------------
// The comparison.

#[derive(Default, Debug)]
struct Report {
    rows: usize,
    addresses: usize,
    matched: usize,
    /// Rows by the rule they call for.
    by_kind: BTreeMap<&'static str, usize>,
    /// Mismatches by category, with a few examples.
    mismatches: BTreeMap<String, (usize, Vec<String>)>,
    /// Rows not compared, by reason.
    not_compared: BTreeMap<&'static str, usize>,
    gaps_checked: usize,
}

fn kind_name(k: u32) -> &'static str {
    match k {
        RPROF_UNWIND_CFA_NONE => "none",
        RPROF_UNWIND_CFA_RSP => "rsp",
        RPROF_UNWIND_CFA_RBP => "rbp",
        RPROF_UNWIND_CFA_PLT => "plt",
        RPROF_UNWIND_CFA_FP => "fp",
        RPROF_UNWIND_CFA_STOP => "stop",
        _ => "?",
    }
}

impl Report {
    fn mismatch(&mut self, category: String, example: String) {
        let e = self.mismatches.entry(category).or_default();
        e.0 += 1;
        if e.1.len() < 5 {
            e.1.push(example);
        }
    }

    fn total_mismatches(&self) -> usize {
        self.mismatches.values().map(|m| m.0).sum()
    }
}

fn compare(
    oracle: &str,
    rows: &[OracleRow],
    loads: &[(u64, u64, u64)],
    table: &UnwindTable,
) -> Report {
    let readelf = oracle == "readelf";
    let mut rep = Report::default();
    // Addresses that two FDEs claim: which one wins is the compiler's
    // choice, not the oracle's.
    let mut fdes: Vec<(u64, u64)> = rows.iter().map(|r| r.fde).filter(|f| f.0 < f.1).collect();
    fdes.sort();
    fdes.dedup();
    // FDEs that share an address with another, and the gaps between FDEs.
    let mut contested = std::collections::BTreeSet::new();
    let mut gaps = Vec::new();
    let mut reach: Option<(u64, (u64, u64))> = None; // (max end, its FDE)
    for &f in &fdes {
        match reach {
            Some((end, by)) if f.0 < end => {
                contested.insert(by);
                contested.insert(f);
            }
            Some((end, _)) if f.0 > end => gaps.push(end),
            _ => {}
        }
        if reach.is_none_or(|(end, _)| f.1 > end) {
            reach = Some((f.1, f));
        }
    }
    for r in rows {
        if r.end <= r.addr {
            continue;
        }
        rep.rows += 1;
        if contested.contains(&r.fde) {
            *rep.not_compared.entry("overlapping FDEs").or_default() += 1;
            continue;
        }
        let (Some(first), Some(last)) = (offset_of(loads, r.addr), offset_of(loads, r.end - 1))
        else {
            *rep.not_compared
                .entry("outside an executable PT_LOAD")
                .or_default() += 1;
            continue;
        };
        let mut w = want(r, readelf);
        if r.opaque_expression && !r.signal {
            // readelf prints `exp` for every CFA expression: the PLT's or
            // another, it cannot say which.
            *rep.not_compared
                .entry("readelf's opaque `exp` (plt or fp)")
                .or_default() += 1;
            let got = table.row_for(first).map(|g| u32::from(g.cfa));
            if got != Some(RPROF_UNWIND_CFA_PLT) && got != Some(RPROF_UNWIND_CFA_FP) {
                rep.mismatch(
                    "exp: neither plt nor fp".into(),
                    format!(
                        "{:#x} {:?}",
                        r.addr,
                        table.row_for(first).map(RowDisplay).map(|d| d.to_string())
                    ),
                );
            }
            continue;
        }
        if w.cfa == RPROF_UNWIND_CFA_STOP || w.cfa == RPROF_UNWIND_CFA_FP {
            w.rbp = Rbp::Same;
        }
        *rep.by_kind.entry(kind_name(w.cfa)).or_default() += 1;
        for (addr, off) in [(r.addr, first), (r.end - 1, last)] {
            rep.addresses += 1;
            match table.row_for(off) {
                Some(got) if w.matches(got) => rep.matched += 1,
                Some(g)
                    if r.after_restore_state
                        && (u32::from(g.cfa) != w.cfa || g.cfa_off != w.cfa_off) =>
                {
                    // llvm-dwarfdump before LLVM 16 (Debian 12 has 14)
                    // does not restore the CFA at DW_CFA_restore_state, as
                    // readelf and libgcc's unwinder do; readelf checks
                    // these rows.
                    *rep.not_compared
                        .entry("llvm-dwarfdump's CFA after DW_CFA_restore_state")
                        .or_default() += 1;
                }
                got => {
                    let category = match got {
                        None => format!("{}: no row", kind_name(w.cfa)),
                        Some(g) if u32::from(g.cfa) != w.cfa || g.cfa_off != w.cfa_off => {
                            format!("{} -> {}: cfa", kind_name(w.cfa), kind_name(g.cfa.into()))
                        }
                        Some(_) => format!("{}: rbp", kind_name(w.cfa)),
                    };
                    rep.mismatch(
                        category,
                        format!(
                            "{addr:#x} (offset {off:#x}) cfa={} rbp={:?} ra={:?}: wanted {w:?}, got {}",
                            r.cfa,
                            r.rbp,
                            r.ra,
                            got.map_or("none".to_string(), |g| RowDisplay(g).to_string())
                        ),
                    );
                }
            }
        }
    }
    // Between two FDEs that do not touch: CFA_NONE at the gap's start.
    for end in gaps {
        if let Some(off) = offset_of(loads, end) {
            rep.gaps_checked += 1;
            match table.row_for(off) {
                Some(g) if u32::from(g.cfa) == RPROF_UNWIND_CFA_NONE => {}
                g => rep.mismatch(
                    "gap: not none".into(),
                    format!("{end:#x}: {:?}", g.map(|g| RowDisplay(g).to_string())),
                ),
            }
        }
    }
    rep
}

/// Compiles `file` and compares it with every oracle there is; returns the
/// reports (oracle name, report) and the table.
fn check(file: &Path) -> Vec<(&'static str, Report)> {
    let compiled = compile_file(file).unwrap();
    println!("{}: {}", file.display(), compiled.stats);
    let loads = exec_loads(file);
    let mut reports = Vec::new();
    for oracle in ["llvm-dwarfdump", "readelf"] {
        if !have(oracle) {
            println!(
                "{}: {oracle} not found: not compared with it",
                file.display()
            );
            continue;
        }
        let rows = if oracle == "readelf" {
            readelf_rows(file)
        } else {
            llvm_rows(file)
        };
        let rep = compare(oracle, &rows, &loads, &compiled.table);
        println!(
            "{} vs {oracle}: {} rows, {} addresses, {} match, {} mismatch; by rule {:?}; not compared {:?}; gaps {}",
            file.display(),
            rep.rows,
            rep.addresses,
            rep.matched,
            rep.total_mismatches(),
            rep.by_kind,
            rep.not_compared,
            rep.gaps_checked
        );
        for (cat, (n, examples)) in &rep.mismatches {
            println!("  mismatch {cat}: {n}");
            for e in examples {
                println!("    {e}");
            }
        }
        assert!(
            rep.rows > 0,
            "{oracle} printed no rows for {}",
            file.display()
        );
        reports.push((oracle, rep));
    }
    for (oracle, rep) in &reports {
        assert_eq!(
            rep.total_mismatches(),
            0,
            "{} disagrees with {oracle}: {:?}",
            file.display(),
            rep.mismatches
        );
    }
    reports
}

// ---------------------------------------------------------------------
// The files.

/// The C library that /bin/ls links, from `ldd`.
fn libc_of_ls() -> Option<PathBuf> {
    let out = Command::new("ldd").arg("/bin/ls").output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let (name, rest) = l.trim().split_once(" => ")?;
        name.starts_with("libc.so")
            .then(|| rest.split_whitespace().next().map(PathBuf::from))
            .flatten()
    })
}

fn plt_rows(reports: &[(&str, Report)]) -> usize {
    reports
        .iter()
        .filter(|(o, _)| *o == "llvm-dwarfdump")
        .map(|(_, r)| r.by_kind.get("plt").copied().unwrap_or(0))
        .sum()
}

#[test]
fn bin_ls() {
    let ls = Path::new("/bin/ls");
    if !ls.exists() {
        println!("skipped: no /bin/ls");
        return;
    }
    let reports = check(ls);
    // Debian's ls has a lazy .plt, whose FDE has the expression.
    if reports.iter().any(|(o, _)| *o == "llvm-dwarfdump") {
        assert!(plt_rows(&reports) > 0, "no .plt row compared in /bin/ls");
    }
}

#[test]
fn libc() {
    let Some(libc) = libc_of_ls() else {
        println!("skipped: ldd /bin/ls names no libc");
        return;
    };
    let reports = check(&libc);
    if reports.iter().any(|(o, _)| *o == "llvm-dwarfdump") {
        assert!(
            plt_rows(&reports) > 0,
            "no .plt row compared in {}",
            libc.display()
        );
    }
    // glibc's signal trampoline (__restore_rt) and _start-like frames.
    let table = compile_file(&libc).unwrap().table;
    assert!(table
        .rows
        .iter()
        .any(|r| u32::from(r.cfa) == RPROF_UNWIND_CFA_STOP));
}

#[test]
fn python3() {
    let py = Path::new("/usr/bin/python3");
    if !py.exists() {
        println!("skipped: no /usr/bin/python3");
        return;
    }
    check(&py.canonicalize().unwrap());
}

/// Programs built here: small, but with what real code has (callee-saved
/// registers, a variable-length array that needs a frame pointer, deep
/// recursion, many call sites).
const C_SOURCE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long leaf(unsigned long x) { return x * 2654435761u; }
__attribute__((noinline)) unsigned long vla(int n) {
    char buf[n];
    memset(buf, n, n);
    unsigned long s = 0;
    for (int i = 0; i < n; i++) s += buf[i] * leaf(i);
    return s;
}
__attribute__((noinline)) unsigned long many(unsigned long a, unsigned long b,
                                             unsigned long c, unsigned long d) {
    unsigned long r[6] = {a, b, c, d, a ^ b, c ^ d};
    for (int i = 0; i < 6; i++) r[i] = leaf(r[i]) + r[(i + 1) % 6];
    sink = r[0];
    return r[0] + r[1] + r[2] + r[3] + r[4] + r[5] + vla((int)(a & 63) + 1);
}
__attribute__((noinline)) unsigned long rec(unsigned long n) {
    return n < 2 ? leaf(n) : rec(n - 1) + many(n, n + 1, n + 2, n + 3);
}
int main(int argc, char **argv) {
    printf("%lu\n", rec((unsigned long)argc + 20));
    return 0;
}
"#;

const CXX_SOURCE: &str = r#"
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>
struct Guard { std::string name; ~Guard() { std::puts(name.c_str()); } };
__attribute__((noinline)) int thrower(int n) {
    Guard g{"thrower"};
    if (n > 3) throw std::runtime_error("deep " + std::to_string(n));
    return n;
}
__attribute__((noinline)) int catcher(int n) {
    std::vector<int> v(n, n);
    try { return thrower(n) + v.back(); }
    catch (const std::exception &e) { std::puts(e.what()); return -1; }
}
int main(int argc, char **) { return catcher(argc + 4) < 0 ? 0 : 1; }
"#;

fn build(compiler: &str, source: &str, ext: &str, name: &str, flags: &[&str]) -> Option<PathBuf> {
    if !have(compiler) {
        println!("skipped: {compiler} not found");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("rprof-unwind-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.{ext}"));
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    let out = Command::new(compiler)
        .args(flags)
        .arg("-Wl,--build-id")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{compiler} {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(bin)
}

#[test]
fn gcc_omit_frame_pointer() {
    if let Some(bin) = build(
        "gcc",
        C_SOURCE,
        "c",
        "omit-fp",
        &["-O2", "-fomit-frame-pointer"],
    ) {
        check(&bin);
        // The variable-length array makes even this build use RBP.
        let t = compile_file(&bin).unwrap().table;
        assert!(t
            .rows
            .iter()
            .any(|r| u32::from(r.cfa) == RPROF_UNWIND_CFA_RBP));
    }
}

#[test]
fn gcc_frame_pointer() {
    if let Some(bin) = build(
        "gcc",
        C_SOURCE,
        "c",
        "fp",
        &["-O2", "-fno-omit-frame-pointer"],
    ) {
        check(&bin);
        let t = compile_file(&bin).unwrap().table;
        assert!(t
            .rows
            .iter()
            .any(|r| u32::from(r.cfa) == RPROF_UNWIND_CFA_RBP
                && u32::from(r.rbp) == RPROF_UNWIND_RBP_SAVED
                && r.rbp_off == -16));
    }
}

#[test]
fn gcc_debug_frame_only() {
    // No unwind tables: the program's own functions are described in
    // .debug_frame only (the C runtime's objects still bring .eh_frame).
    if let Some(bin) = build(
        "gcc",
        C_SOURCE,
        "c",
        "debug-frame",
        &[
            "-O2",
            "-g",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    ) {
        let stats = compile_file(&bin).unwrap().stats;
        assert!(stats.debug_frame_fdes > 0, "no .debug_frame FDE: {stats}");
        check(&bin);
    }
}

#[test]
fn gxx_exceptions() {
    if let Some(bin) = build("g++", CXX_SOURCE, "cc", "cxx", &["-O2"]) {
        check(&bin);
    }
}

/// The rules that real compilers rarely write, in assembly: the outermost
/// frame, explicit `undefined rbp` inside remember/restore_state, a
/// signal frame, a return address in a register, RBP as a value rule, a
/// CFA from another register.
const ASM_SOURCE: &str = r#"
	.text
	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl %ebp, %ebp
	call f
	hlt
	.cfi_endproc

	.p2align 4
	.type f, @function
f:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	.cfi_remember_state
	.cfi_undefined rbp
	nop
	.cfi_restore_state
	call g
	popq %rbp
	.cfi_def_cfa rsp, 8
	.cfi_same_value rbp
	ret
	.cfi_endproc

	.type g, @function
g:
	.cfi_startproc
	.cfi_signal_frame
	nop
	ret
	.cfi_endproc

	.type h, @function
h:
	.cfi_startproc
	.cfi_register rip, rax
	nop
	.cfi_offset rip, -8
	.cfi_val_offset rbp, -16
	nop
	.cfi_offset rbp, -24
	.cfi_def_cfa rdi, 8
	nop
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
"#;

#[test]
fn gcc_cfi_corner_cases() {
    let Some(bin) = build("gcc", ASM_SOURCE, "s", "corner", &["-nostdlib", "-static"]) else {
        return;
    };
    check(&bin);
    // The same, written down by hand from the directives above.
    let table = compile_file(&bin).unwrap().table;
    let s = table.rows[0].start;
    let lines: Vec<String> = table
        .rows
        .iter()
        .map(|r| {
            let mut r = *r;
            r.start -= s;
            RowDisplay(&r).to_string()
        })
        .collect();
    let f = 0x10; // _start's 8 bytes, aligned
    let g = f + 12;
    let h = g + 2;
    assert_eq!(
        lines,
        [
            "0x0 cfa=stop".to_string(),
            "0x8 cfa=none".to_string(),
            format!("{f:#x} cfa=rsp+8 rbp=same"),
            format!("{:#x} cfa=rsp+16 rbp=cfa-16", f + 1),
            format!("{:#x} cfa=rbp+16 rbp=undef", f + 4),
            format!("{:#x} cfa=rbp+16 rbp=cfa-16", f + 5),
            format!("{:#x} cfa=rsp+8 rbp=same", f + 11),
            format!("{g:#x} cfa=stop"),
            format!("{h:#x} cfa=fp"),
            format!("{:#x} cfa=rsp+8 rbp=cfa-24", h + 3),
        ]
    );
    assert_eq!(table.end - s, h + 4);
}

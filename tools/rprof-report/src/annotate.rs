//! `rprof annotate`: where inside one function the samples fell.
//!
//! Per sampled instruction address: the offset from the function's start,
//! the address, and the bytes there (from the file, for user code: there
//! is no disassembler, the bytes let one be used).  Per source line when
//! the file has DWARF line tables.  Kernel and module functions get
//! offsets and addresses only.

use crate::symbolize::FrameKind;
use crate::{Aggregate, Filter, Symbolizer};
use rprof_decode::CookieName;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Bytes shown per sampled address.
const BYTES_SHOWN: usize = 8;

/// One sampled instruction address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    /// From the function's start.
    pub offset: u64,
    /// The address (virtual address in the file, or kernel address).
    pub addr: u64,
    /// Up to 8 bytes at the address (empty if unknown).
    pub bytes: Vec<u8>,
    /// Samples at it.
    pub samples: u64,
}

/// The samples of one function of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// The object's path (or `[kernel.kallsyms]`, `[MODULE]`).
    pub path: String,
    /// The function.
    pub symbol: String,
    /// Its address.
    pub addr: u64,
    /// Its build-id, if known.
    pub build_id: Vec<u8>,
    /// All samples in it.
    pub samples: u64,
    /// Per address, ascending.
    pub insns: Vec<Insn>,
    /// Per source line (file, line, samples), most samples first; empty
    /// without line tables.
    pub lines: Vec<(String, u32, u64)>,
    /// Why there are no lines, if there are none.
    pub note: Option<String>,
}

/// The annotations of every function named `name` that has samples
/// passing `filter`, most samples first.
pub fn annotate(
    agg: &Aggregate,
    sym: &mut Symbolizer,
    filter: &Filter,
    name: &str,
) -> Vec<Annotation> {
    // (cookie, frame path) -> offset -> samples.
    let mut per: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new();
    let mut frames = BTreeMap::new();
    for (key, counts) in agg.counts() {
        if !filter.accepts(key) {
            continue;
        }
        let frame = sym.frame_of(key.pid, key.cookie, key.offset, agg.resolver());
        if !frame.resolved || frame.symbol != name {
            continue;
        }
        *per.entry(key.cookie)
            .or_default()
            .entry(key.offset)
            .or_default() += counts.samples;
        frames.insert(key.cookie, frame);
    }
    let mut out = Vec::new();
    for (cookie, offsets) in per {
        let Some(frame) = frames.get(&cookie) else {
            continue;
        };
        let mut a = Annotation {
            path: frame.path.clone(),
            symbol: frame.symbol.clone(),
            addr: frame.addr,
            build_id: frame.build_id.clone(),
            samples: offsets.values().sum(),
            insns: Vec::new(),
            lines: Vec::new(),
            note: None,
        };
        match frame.kind {
            FrameKind::File => {
                let image = sym.image(cookie, agg.resolver());
                let data = match agg.resolver().name(cookie) {
                    Some(CookieName::File { path, .. }) => sym.read(path).unwrap_or_default(),
                    _ => Vec::new(),
                };
                let lines = sym.lines(cookie, agg.resolver());
                if lines.is_none() {
                    a.note = Some("no DWARF line information in the file".into());
                }
                let mut by_line: BTreeMap<(String, u32), u64> = BTreeMap::new();
                for (off, n) in &offsets {
                    let vaddr = image
                        .as_ref()
                        .and_then(|i| i.vaddr_of_offset(*off))
                        .unwrap_or(*off);
                    let start = usize::try_from(*off).unwrap_or(usize::MAX);
                    let bytes = data
                        .get(start..)
                        .map(|b| b[..b.len().min(BYTES_SHOWN)].to_vec())
                        .unwrap_or_default();
                    a.insns.push(Insn {
                        offset: vaddr.wrapping_sub(frame.addr),
                        addr: vaddr,
                        bytes,
                        samples: *n,
                    });
                    if let Some((file, line)) = lines.as_ref().and_then(|l| l.line(vaddr)) {
                        *by_line.entry((file, line)).or_default() += n;
                    }
                }
                a.lines = by_line.into_iter().map(|((f, l), n)| (f, l, n)).collect();
                a.lines.sort_by(|x, y| y.2.cmp(&x.2).then(x.1.cmp(&y.1)));
            }
            _ => {
                let base = match agg.resolver().name(cookie) {
                    Some(CookieName::Module { base, .. }) => *base,
                    _ => 0,
                };
                for (off, n) in &offsets {
                    let addr = base.wrapping_add(*off);
                    a.insns.push(Insn {
                        offset: addr.wrapping_sub(frame.addr),
                        addr,
                        bytes: Vec::new(),
                        samples: *n,
                    });
                }
                a.note = Some("kernel code: no instruction bytes or source lines".into());
            }
        }
        a.insns.sort_by_key(|i| i.addr);
        out.push(a);
    }
    out.sort_by_key(|a| std::cmp::Reverse(a.samples));
    out
}

/// Writes one annotation.
pub fn write(out: &mut dyn Write, a: &Annotation) -> io::Result<()> {
    let pct = |n: u64| 100.0 * n as f64 / a.samples.max(1) as f64;
    write!(out, "# {} in {}", a.symbol, a.path)?;
    if !a.build_id.is_empty() {
        write!(out, " (build-id {})", rprof_symbols::elf::hex(&a.build_id))?;
    }
    writeln!(out, ", {} samples, at {:#x}", a.samples, a.addr)?;
    writeln!(
        out,
        "#\n#  Percent  Samples  Offset    Address             Bytes"
    )?;
    for i in &a.insns {
        let bytes: Vec<String> = i.bytes.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(
            out,
            "  {:>7.2}%  {:>7}  {:<8}  {:<18}  {}",
            pct(i.samples),
            i.samples,
            format!("+{:#x}", i.offset),
            format!("{:#x}", i.addr),
            bytes.join(" ")
        )?;
    }
    if !a.lines.is_empty() {
        writeln!(out, "#\n# By source line:\n#  Percent  Samples  Line")?;
        for (file, line, n) in &a.lines {
            writeln!(out, "  {:>7.2}%  {:>7}  {file}:{line}", pct(*n), n)?;
        }
    } else if let Some(note) = &a.note {
        writeln!(out, "#\n# ({note})")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn annotates_the_hot_function() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let a = annotate(&agg, &mut sym, &Filter::default(), "rprof_report_test_hot");
        assert_eq!(a.len(), 1);
        let a = &a[0];
        assert_eq!(a.samples, 30);
        let offsets: Vec<(u64, u64)> = a.insns.iter().map(|i| (i.offset, i.samples)).collect();
        assert_eq!(offsets, [(0, 8), (1, 8), (2, 7), (3, 7)]);
        // The bytes are the file's at the sampled offset.
        let data = std::fs::read(testdata::exe()).unwrap();
        let off = testdata::hot_offset() as usize;
        assert_eq!(a.insns[0].bytes, data[off..off + 8]);
        let mut out = Vec::new();
        write(&mut out, a).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("rprof_report_test_hot in "), "{text}");
        assert!(text.contains("   26.67%        8  +0x0"), "{text}");

        let k = annotate(&agg, &mut sym, &Filter::default(), "busy_spin");
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].insns[0].offset, 8);
        assert_eq!(k[0].insns[0].addr, 0xffffffffc0001008);
        assert!(annotate(&agg, &mut sym, &Filter::default(), "nothing").is_empty());
    }
}

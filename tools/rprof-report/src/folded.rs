//! Folded stacks for `flamegraph.pl` and friends: one line per stack,
//! `comm;dso;symbol count`.

use crate::Row;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// A frame name made safe for the format: no `;` (the separator) and no
/// line breaks.
fn clean(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

/// A frame of a call chain in folded form: the function, with `_[k]`
/// for kernel and module code (as perf's and inferno's collapsers mark
/// it, and flame graphs colour it).
fn chain_frame(f: &crate::Frame) -> String {
    use crate::symbolize::FrameKind;
    let name = clean(&f.symbol);
    match f.kind {
        FrameKind::Kernel | FrameKind::Module => format!("{name}_[k]"),
        _ => name,
    }
}

/// The folded lines of `rows` (merged across pids), sorted by stack.
/// With a call chain a stack is `comm;outermost;...;caller;leaf`; without
/// one, `comm;dso;symbol`.
pub fn lines(rows: &[Row]) -> Vec<(String, u64)> {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for r in rows {
        let stack = if r.chain {
            let mut s = clean(&r.comm);
            for f in r.callers.iter().rev() {
                s.push(';');
                s.push_str(&chain_frame(f));
            }
            s.push(';');
            s.push_str(&chain_frame(&r.frame));
            s
        } else {
            format!(
                "{};{};{}",
                clean(&r.comm),
                clean(&r.frame.dso),
                clean(&r.frame.symbol)
            )
        };
        *stacks.entry(stack).or_default() += r.samples;
    }
    stacks.into_iter().collect()
}

/// Writes the folded lines of `rows`.
pub fn write(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    for (stack, count) in lines(rows) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, Aggregate, Filter, Symbolizer};

    #[test]
    fn folded_totals_match() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        let mut out = Vec::new();
        write(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        let total: u64 = text
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, testdata::SAMPLES);
        let exe = testdata::exe();
        let name = exe.file_name().unwrap().to_string_lossy();
        assert!(
            text.contains(&format!("attr_main;{name};rprof_report_test_hot 30\n")),
            "{text}"
        );
        assert!(
            text.contains("swapper/1;[kernel.kallsyms];do_idle 6\n"),
            "{text}"
        );
        assert_eq!(clean("a;b\nc"), "a:b c");
    }
}

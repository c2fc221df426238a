//! `rprof report -g`: functions by the samples under them (children) and
//! in them (self), each with the call chains that led to it, as
//! `perf report -g` shows them.
//!
//! A function's *children* are the samples whose stack holds it anywhere
//! (counted once per sample, recursion or not); its *self* samples are
//! those whose leaf it is.  Under each function with self samples come its
//! callers' chains, innermost first, with their share of all samples.
//! Every share is of the events the samples stand for (their periods), as
//! perf's are, and functions carry perf's `[k]` / `[.]` mark.

use crate::Row;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::sync::Arc;

/// A function as the table shows it: (command, shared object, symbol,
/// its mark, [`crate::table::mark`]).
type Entry = (Arc<str>, String, String, char);

/// The figures of one function.
#[derive(Default)]
struct Figures {
    children: u64,
    self_: u64,
    /// Caller chains (innermost first, as symbols) -> periods.
    chains: HashMap<Vec<String>, u64>,
}

/// Writes the call-graph report of `rows` (one event), shares of
/// `total_period` (the events of all its samples): `children` adds the
/// Children column and sorts by it (perf's default), else by self;
/// functions and chains under `percent_limit` percent are left out.
pub fn write(
    out: &mut dyn Write,
    rows: &[Row],
    total_period: u64,
    children: bool,
    percent_limit: f64,
) -> io::Result<()> {
    let mut figs: HashMap<Entry, Figures> = HashMap::new();
    for r in rows {
        let entry = |f: &crate::Frame| -> Entry {
            (
                r.comm.clone(),
                f.dso.clone(),
                f.symbol.clone(),
                crate::table::mark(f.kind),
            )
        };
        let leaf = entry(&r.frame);
        let mut seen: HashSet<Entry> = HashSet::new();
        seen.insert(leaf.clone());
        for f in r.callers.iter() {
            seen.insert(entry(f));
        }
        for e in seen {
            let c = &mut figs.entry(e).or_default().children;
            *c = c.saturating_add(r.period);
        }
        let f = figs.entry(leaf).or_default();
        f.self_ = f.self_.saturating_add(r.period);
        if r.chain {
            let chain: Vec<String> = r.callers.iter().map(|f| f.symbol.clone()).collect();
            let c = f.chains.entry(chain).or_default();
            *c = c.saturating_add(r.period);
        }
    }
    let pct = |n: u64| {
        if total_period == 0 {
            0.0
        } else {
            100.0 * n as f64 / total_period as f64
        }
    };
    let mut order: Vec<(&Entry, &Figures)> = figs.iter().collect();
    order.sort_by(|a, b| {
        let key = |f: &Figures| {
            if children {
                (f.children, f.self_)
            } else {
                (f.self_, f.children)
            }
        };
        key(b.1).cmp(&key(a.1)).then_with(|| a.0.cmp(b.0))
    });
    if children {
        writeln!(
            out,
            "# Children      Self  Command          Shared Object         Symbol"
        )?;
    } else {
        writeln!(
            out,
            "#     Self  Command          Shared Object         Symbol"
        )?;
    }
    for (e, f) in order {
        let shown = if children { f.children } else { f.self_ };
        if shown == 0 || pct(shown) < percent_limit {
            continue;
        }
        if children {
            write!(out, "{:>9.2}% {:>8.2}%", pct(f.children), pct(f.self_))?;
        } else {
            write!(out, "{:>9.2}%", pct(f.self_))?;
        }
        writeln!(out, "  {:<15}  {:<20}  [{}] {}", e.0, e.1, e.3, e.2)?;
        if f.chains.is_empty() {
            continue;
        }
        // The chains, most samples first (then by name, for a stable
        // order), each as perf draws them: the share, then the callers.
        let mut chains: BTreeMap<(std::cmp::Reverse<u64>, &Vec<String>), ()> = BTreeMap::new();
        for (c, n) in &f.chains {
            chains.insert((std::cmp::Reverse(*n), c), ());
        }
        writeln!(out, "            |")?;
        writeln!(out, "            ---{}", e.2)?;
        for ((std::cmp::Reverse(n), chain), ()) in chains {
            if pct(n) < percent_limit {
                continue;
            }
            let head = format!("               |--{:.2}%--", pct(n));
            match chain.split_first() {
                None => writeln!(out, "{head}[no callers]")?,
                Some((first, rest)) => {
                    writeln!(out, "{head}{first}")?;
                    // Under the first caller: `head` less the 16 bytes of
                    // "               |".
                    let pad = " ".repeat(head.len() - 16);
                    for c in rest {
                        writeln!(out, "               |{pad}{c}")?;
                    }
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::{Frame, FrameKind};

    fn frame(sym: &str) -> Arc<Frame> {
        Arc::new(Frame {
            dso: "work".into(),
            path: "/bin/work".into(),
            symbol: sym.into(),
            kind: FrameKind::File,
            resolved: true,
            addr: 0,
            build_id: Vec::new(),
        })
    }

    fn row(leaf: &str, callers: &[&str], samples: u64) -> Row {
        Row {
            event: 0,
            pid: 1,
            tid: 1,
            comm: Arc::from("work"),
            frame: frame(leaf),
            callers: callers.iter().map(|c| frame(c)).collect::<Vec<_>>().into(),
            chain: true,
            samples,
            period: samples,
        }
    }

    #[test]
    fn children_self_and_chains() {
        let rows = [
            row("hot", &["b", "a", "main"], 30),
            row("hot", &["x", "main"], 10),
            row("a", &["main"], 0),
        ];
        let mut out = Vec::new();
        write(&mut out, &rows, 40, true, 0.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = |sym: &str| {
            text.lines()
                .find(|l| {
                    l.ends_with(&format!("  [.] {sym}"))
                        && l.trim_start().starts_with(|c: char| c.is_ascii_digit())
                })
                .unwrap()
                .to_string()
        };
        assert!(line("main").starts_with("   100.00%     0.00%"), "{text}");
        assert!(line("hot").starts_with("   100.00%   100.00%"), "{text}");
        assert!(line("a").starts_with("    75.00%     0.00%"), "{text}");
        assert!(line("x").starts_with("    25.00%     0.00%"), "{text}");
        assert!(text.contains("|--75.00%--b\n"), "{text}");
        assert!(text.contains("|--25.00%--x\n"), "{text}");
        // The callers follow their first, innermost first.
        let b = text.find("|--75.00%--b").unwrap();
        assert!(
            text[b..].find("a\n").unwrap() < text[b..].find("main\n").unwrap(),
            "{text}"
        );

        let mut out = Vec::new();
        write(&mut out, &rows, 40, false, 0.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("#     Self"), "{text}");
        let entries: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(entries.len(), 1, "only functions with self samples: {text}");
        assert!(entries[0].ends_with("  [.] hot"), "{text}");
    }

    /// Shares are of the events (periods), not of the samples: 30 samples
    /// standing for 10 events weigh less than 10 standing for 30.
    #[test]
    fn shares_are_of_the_periods() {
        let mut rows = [
            row("hot", &["b", "main"], 30),
            row("hot", &["x", "main"], 10),
        ];
        rows[0].period = 10;
        rows[1].period = 30;
        let mut out = Vec::new();
        write(&mut out, &rows, 40, true, 0.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("|--75.00%--x\n"), "{text}");
        assert!(text.contains("|--25.00%--b\n"), "{text}");
        assert!(
            text.find("--x").unwrap() < text.find("--b").unwrap(),
            "{text}"
        );
    }
}

//! The `rprof report` table: rows grouped by the sort keys, heaviest
//! first.  As in perf, the overhead is each line's share of the events
//! sampled (the sum of its samples' periods), not of the sample count:
//! the two differ for an event sampled at a frequency, whose period
//! varies from sample to sample.  Symbols carry perf's marker: `[k]` for
//! the kernel and its modules, `[.]` for user space.
//!
//! ```text
//! # Overhead  Samples  Command    Shared Object      Symbol
//!     74.81%     2245  attr_main  attr_main          [.] main_hot
//!     24.99%      750  attr_main  libattr_lib.so     [.] lib_hot
//! ```

use crate::symbolize::FrameKind;
use crate::Row;
use std::collections::HashMap;
use std::io::{self, Write};

/// A column to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// The task's comm.
    Comm,
    /// The thread group id.
    Pid,
    /// The thread id.
    Tid,
    /// The shared object.
    Dso,
    /// The symbol.
    Sym,
}

impl SortKey {
    fn title(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid",
            SortKey::Tid => "Tid",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
        }
    }

    fn value(self, row: &Row) -> String {
        match self {
            SortKey::Comm => row.comm.to_string(),
            SortKey::Pid => row.pid.to_string(),
            SortKey::Tid => row.tid.to_string(),
            SortKey::Dso => row.frame.dso.clone(),
            SortKey::Sym => row.frame.symbol.clone(),
        }
    }
}

/// perf's mark of where a symbol is: `k` the kernel (and its modules),
/// `.` user space.
pub fn mark(kind: FrameKind) -> char {
    match kind {
        FrameKind::Kernel | FrameKind::Module => 'k',
        _ => '.',
    }
}

/// The default `--sort`: as perf's.
pub const DEFAULT_SORT: &str = "comm,dso,sym";

/// Parses `--sort`: comma-separated `comm`, `pid`, `tid`, `dso`, `sym`.
pub fn parse_sort(s: &str) -> Result<Vec<SortKey>, String> {
    let mut keys = Vec::new();
    for part in s.split(',') {
        let key = match part.trim() {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "tid" => SortKey::Tid,
            "dso" => SortKey::Dso,
            "sym" | "symbol" => SortKey::Sym,
            other => {
                return Err(format!(
                    "unknown sort key '{other}' (known: comm, pid, tid, dso, sym)"
                ))
            }
        };
        if keys.contains(&key) {
            return Err(format!("sort key '{}' given twice", part.trim()));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// A parsed `--sort` (for clap: `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKeys(pub Vec<SortKey>);

impl std::str::FromStr for SortKeys {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_sort(s).map(SortKeys)
    }
}

/// A row of the table: the key values and the counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The values of the sort keys, in their order.
    pub values: Vec<String>,
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
    /// perf's mark of the symbol's place ([`mark`]), shown before it.
    pub mark: char,
}

/// Groups `rows` by `keys`; heaviest first (by period, then samples,
/// then the values).  A symbol is told apart by its shared object even
/// when that is not a key, as perf does: the kernel's `memcpy` and a
/// static program's are two lines (with their marks), not one.
pub fn group(rows: &[Row], keys: &[SortKey]) -> Vec<Line> {
    let by_dso = keys.contains(&SortKey::Sym) && !keys.contains(&SortKey::Dso);
    // (values, the shared object when it tells symbols apart) ->
    // (samples, period, mark).
    type Group = (Vec<String>, Option<String>);
    let mut map: HashMap<Group, (u64, u64, char)> = HashMap::new();
    for row in rows {
        let values: Vec<String> = keys.iter().map(|k| k.value(row)).collect();
        let dso = by_dso.then(|| row.frame.dso.clone());
        let e = map
            .entry((values, dso))
            .or_insert((0, 0, mark(row.frame.kind)));
        e.0 = e.0.saturating_add(row.samples);
        e.1 = e.1.saturating_add(row.period);
    }
    let mut lines: Vec<Line> = map
        .into_iter()
        .map(|((values, _), (samples, period, mark))| Line {
            values,
            samples,
            period,
            mark,
        })
        .collect();
    lines.sort_by(|a, b| {
        b.period
            .cmp(&a.period)
            .then_with(|| b.samples.cmp(&a.samples))
            .then_with(|| a.values.cmp(&b.values))
    });
    lines
}

/// Writes the table of `lines`, each line's overhead a percentage of
/// `total_period` (the events of all its samples); lines under
/// `percent_limit` percent are left out (and counted in a last comment).
pub fn write(
    out: &mut dyn Write,
    lines: &[Line],
    keys: &[SortKey],
    total_period: u64,
    percent_limit: f64,
) -> io::Result<()> {
    let pct = |n: u64| {
        if total_period == 0 {
            0.0
        } else {
            100.0 * n as f64 / total_period as f64
        }
    };
    let shown: Vec<&Line> = lines
        .iter()
        .filter(|l| pct(l.period) >= percent_limit)
        .collect();
    // Column widths: the title or the widest value, at most 40 (the last
    // column is not padded).
    let widths: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let extra = if *k == SortKey::Sym { 4 } else { 0 };
            shown
                .iter()
                .map(|l| l.values[i].chars().count() + extra)
                .chain([k.title().len()])
                .max()
                .unwrap_or(0)
                .min(40)
        })
        .collect();
    let samples_w = shown
        .iter()
        .map(|l| l.samples.to_string().len())
        .chain(["Samples".len()])
        .max()
        .unwrap_or(7);
    let cells = |values: &[&str]| -> String {
        let mut s = String::new();
        for (i, v) in values.iter().enumerate() {
            if i + 1 == values.len() {
                s.push_str(v);
            } else {
                s.push_str(&format!("{v:<w$}  ", w = widths[i]));
            }
        }
        s
    };
    let titles: Vec<&str> = keys.iter().map(|k| k.title()).collect();
    writeln!(
        out,
        "# Overhead  {:>samples_w$}  {}",
        "Samples",
        cells(&titles)
    )?;
    writeln!(
        out,
        "# ........  {}  {}",
        ".".repeat(samples_w),
        cells(
            &widths
                .iter()
                .map(|w| ".".repeat(*w))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        )
    )?;
    writeln!(out, "#")?;
    for l in &shown {
        let marked: Vec<String> = keys
            .iter()
            .zip(&l.values)
            .map(|(k, v)| match k {
                SortKey::Sym => format!("[{}] {v}", l.mark),
                _ => v.clone(),
            })
            .collect();
        let values: Vec<&str> = marked.iter().map(String::as_str).collect();
        writeln!(
            out,
            "  {:>7.2}%  {:>samples_w$}  {}",
            pct(l.period),
            l.samples,
            cells(&values)
        )?;
    }
    let hidden = lines.len() - shown.len();
    if hidden > 0 {
        let samples: u64 = lines.iter().map(|l| l.samples).sum::<u64>()
            - shown.iter().map(|l| l.samples).sum::<u64>();
        let period: u64 = lines
            .iter()
            .filter(|l| pct(l.period) < percent_limit)
            .fold(0u64, |s, l| s.saturating_add(l.period));
        writeln!(
            out,
            "#\n# {hidden} more lines under {percent_limit}% ({samples} samples, {:.2}% of the events)",
            pct(period)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, Aggregate, Filter, Symbolizer};
    use rprof_decode::Record;

    #[test]
    fn sort_keys() {
        assert_eq!(
            parse_sort("dso,sym").unwrap(),
            vec![SortKey::Dso, SortKey::Sym]
        );
        assert_eq!(
            parse_sort(DEFAULT_SORT).unwrap(),
            vec![SortKey::Comm, SortKey::Dso, SortKey::Sym]
        );
        assert!(parse_sort("dso,bogus").is_err());
        assert!(parse_sort("sym,sym").is_err());
    }

    #[test]
    fn table_of_the_test_stream() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        assert_eq!(
            rows.iter().map(|r| r.samples).sum::<u64>(),
            testdata::SAMPLES
        );
        let keys = parse_sort(DEFAULT_SORT).unwrap();
        let lines = group(&rows, &keys);
        assert_eq!(lines[0].values[2], "rprof_report_test_hot");
        assert_eq!(lines[0].samples, 30);
        assert_eq!(lines[1].values[2], "rprof_report_test_warm");
        let period: u64 = rows.iter().map(|r| r.period).sum();
        let mut out = Vec::new();
        write(&mut out, &lines, &keys, period, 0.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let first = text.lines().nth(3).unwrap();
        assert!(
            first.starts_with("    60.00%       30  attr_main"),
            "{text}"
        );
        assert!(first.ends_with("  [.] rprof_report_test_hot"), "{text}");
        assert!(text.contains("[k] do_idle"), "{text}");
        assert!(text.contains("[rprof_busy]"), "{text}");
        // --percent-limit 15 keeps 60% and 20%.
        let mut out = Vec::new();
        write(&mut out, &lines, &keys, period, 15.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.starts_with("  ")).count(),
            2,
            "{text}"
        );
        assert!(
            text.contains("2 more lines under 15% (10 samples, 20.00% of the events)"),
            "{text}"
        );
        // By pid, comm.
        let keys = parse_sort("pid,comm").unwrap();
        let lines = group(&rows, &keys);
        assert_eq!(lines[0].values, ["100", "attr_main"]);
        assert_eq!(lines[1].values, ["0", "swapper/1"]);
    }

    /// A row of `samples` samples standing for `period` events, in
    /// `symbol` of the kernel (`kernel`) or of a user file, in thread
    /// `tid` of process 7.
    fn row(symbol: &str, kernel: bool, tid: u32, samples: u64, period: u64) -> Row {
        use crate::symbolize::Frame;
        let kind = if kernel {
            FrameKind::Kernel
        } else {
            FrameKind::File
        };
        Row {
            event: 0,
            pid: 7,
            tid,
            comm: "w".into(),
            frame: std::sync::Arc::new(Frame {
                dso: if kernel { "[kernel.kallsyms]" } else { "w" }.into(),
                path: String::new(),
                symbol: symbol.into(),
                kind,
                resolved: true,
                addr: 0,
                build_id: Vec::new(),
            }),
            callers: Vec::new().into(),
            chain: false,
            samples,
            period,
        }
    }

    /// The overhead is each line's share of the events (periods), as in
    /// perf, not of the samples: a frequency-sampled event's period
    /// varies (few samples while the rate was found, at long periods),
    /// and so the line with fewer samples can weigh more, and comes
    /// first.  Symbols carry perf's `[k]` / `[.]`; `--sort tid` splits
    /// the threads.
    #[test]
    fn overhead_is_by_period_with_perf_markers() {
        let rows = [
            row("many_short", false, 8, 30, 3_000),
            row("few_long", true, 9, 10, 7_000),
        ];
        let keys = parse_sort("sym").unwrap();
        let lines = group(&rows, &keys);
        assert_eq!(lines[0].values, ["few_long"]);
        assert_eq!(lines[1].values, ["many_short"]);
        let mut out = Vec::new();
        write(&mut out, &lines, &keys, 10_000, 50.0).unwrap();
        let text = String::from_utf8(out).unwrap();
        let body: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(body, ["    70.00%       10  [k] few_long"], "{text}");
        assert!(
            text.contains("1 more lines under 50% (30 samples, 30.00% of the events)"),
            "{text}"
        );
        let keys = parse_sort("pid,tid").unwrap();
        let lines = group(&rows, &keys);
        assert_eq!(lines[0].values, ["7", "9"]);
        assert_eq!(lines[1].values, ["7", "8"]);
        // The same name in the kernel and in a program: two lines, each
        // with its mark, though the shared object is no key.
        let same = [
            row("memcpy", true, 8, 5, 500),
            row("memcpy", false, 8, 3, 300),
        ];
        let lines = group(&same, &parse_sort("sym").unwrap());
        assert_eq!(
            lines
                .iter()
                .map(|l| (l.mark, l.samples))
                .collect::<Vec<_>>(),
            [('k', 5), ('.', 3)]
        );
    }

    /// LOST counts and periods are the stream's to choose: huge ones
    /// saturate, they do not wrap or panic.
    #[test]
    fn huge_counts_saturate() {
        let mut agg = Aggregate::new();
        for r in [
            Record::Lost {
                stage: 1,
                cpu: 0,
                count: u64::MAX,
            },
            Record::Lost {
                stage: 1,
                cpu: 0,
                count: 2,
            },
            Record::Lost {
                stage: 99,
                cpu: 0,
                count: u64::MAX,
            },
            Record::Switch { cookie: 1 },
            Record::Sample {
                flags: 0,
                time_ns: 0,
                offset: 0xffffffff81001010,
                period: u64::MAX,
                stack: None,
            },
            Record::Sample {
                flags: 0,
                time_ns: 0,
                offset: 0xffffffff81001011,
                period: u64::MAX,
                stack: None,
            },
        ] {
            agg.feed(&r);
        }
        assert_eq!(agg.lost.ring, u64::MAX);
        assert_eq!(agg.lost_total(), u64::MAX);
        let mut sym = crate::Symbolizer::new(crate::testdata::KALLSYMS, &[], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        assert_eq!((rows.len(), rows[0].period), (1, u64::MAX));
        let lines = crate::table::group(&rows, &[crate::table::SortKey::Dso]);
        assert_eq!(lines[0].period, u64::MAX);
    }
}

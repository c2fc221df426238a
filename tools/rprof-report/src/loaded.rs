//! A recorded `rprof.data`, walked and ready to report.

use crate::{Aggregate, Filter, SymbolOptions, Symbolizer};
use rprof_data::{meta, DataFile};
use std::io::{self, Write};

/// A data file with its stream counted and a symbolizer over its snapshot.
#[derive(Debug)]
pub struct Loaded {
    /// The file.
    pub data: DataFile,
    /// Its samples, counted.
    pub agg: Aggregate,
    /// Names for them.
    pub sym: Symbolizer,
    /// A malformed record ended the stream early (what came before it is
    /// counted).
    pub stream_error: Option<String>,
}

impl Loaded {
    /// Walks `data`'s stream; files are looked up as `symfs` says (a
    /// `--symfs` directory, or none: `Option<PathBuf>` converts).
    pub fn new(data: DataFile, symfs: impl Into<SymbolOptions>) -> Loaded {
        Self::filtered(data, symfs, &Filter::default())
    }

    /// [`new`](Self::new), counting only the samples that pass `filter`'s
    /// per-sample parts (threads, CPUs, time; see [`Filter`]).
    pub fn filtered(data: DataFile, symfs: impl Into<SymbolOptions>, filter: &Filter) -> Loaded {
        Self::filtered_by(data, symfs, filter, true)
    }

    /// [`filtered`](Self::filtered), counting threads apart (each row's
    /// `tid`) only if `threads`: what only a report by thread needs, and
    /// a recording of many threads pays for in time and memory.
    pub fn filtered_by(
        data: DataFile,
        symfs: impl Into<SymbolOptions>,
        filter: &Filter,
        threads: bool,
    ) -> Loaded {
        let mut agg = Aggregate::with_filter(filter);
        agg.count_threads(threads);
        let stream_error = agg.feed_stream(&data.stream).err();
        let sym = Symbolizer::with_options(&data.kallsyms, &data.files, symfs.into());
        Loaded {
            data,
            agg,
            sym,
            stream_error,
        }
    }

    /// [`filtered_by`](Self::filtered_by) for a large file: tells `progress` (phase,
    /// done, total) how far decoding ("decoding", bytes of the stream)
    /// and symbolizing ("symbolizing", keys passing `filter`) are.  Only
    /// samples passing `filter`'s per-sample parts are counted.  The
    /// frames are computed here, once; reports of `filter` (or narrower)
    /// then find them in the symbolizer's cache.
    pub fn with_progress(
        data: DataFile,
        symfs: impl Into<SymbolOptions>,
        filter: &Filter,
        threads: bool,
        progress: &mut dyn FnMut(&str, u64, u64),
    ) -> Loaded {
        let mut agg = Aggregate::with_filter(filter);
        agg.count_threads(threads);
        let total = data.stream.len() as u64;
        let stream_error = agg
            .feed_stream_with_progress(&data.stream, &mut |pos| {
                progress("decoding", pos as u64, total)
            })
            .err();
        let mut sym = Symbolizer::with_options(&data.kallsyms, &data.files, symfs.into());
        let keys = agg.counts().keys().filter(|k| filter.accepts(k));
        let total = keys.clone().count() as u64;
        for (i, key) in keys.enumerate() {
            progress("symbolizing", i as u64, total);
            sym.frame_of(key.pid, key.cookie, key.offset, agg.resolver());
        }
        progress("symbolizing", total, total);
        Loaded {
            data,
            agg,
            sym,
            stream_error,
        }
    }

    /// The event indices that have samples passing `filter`, ascending.
    pub fn events(&self, filter: &Filter) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .agg
            .counts()
            .keys()
            .filter(|k| filter.accepts(k))
            .map(|k| k.event)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// For an incomplete file (an interrupted recording): where it ends
    /// and what was kept of it, on one line.
    pub fn cut_line(&self) -> Option<String> {
        let d = &self.data;
        let cut = d.cut.as_ref()?;
        let mut line = format!(
            "{cut}: kept {} bytes of stream, {} samples",
            d.stream.len(),
            self.agg.samples
        );
        if let Some(ns) = self.agg.span.duration_ns() {
            line.push_str(&format!(" over {:.3} s", ns as f64 / 1e9));
        }
        let mut missing = Vec::new();
        if d.kallsyms.is_empty() {
            missing.push("kernel symbols");
        }
        if d.files.is_empty() {
            missing.push("build-ids");
        }
        if d.stats.is_none() {
            missing.push("module statistics");
        }
        if d.meta.is_empty() {
            missing.push("metadata");
        }
        if !missing.is_empty() {
            line.push_str(&format!("; without {}", missing.join(", ")));
        }
        Some(line)
    }

    /// Writes the `#` header of a report: what was recorded, the totals
    /// and the losses.
    pub fn write_header(
        &self,
        out: &mut dyn Write,
        source: &str,
        filter: &Filter,
    ) -> io::Result<()> {
        let d = &self.data;
        writeln!(out, "# rprof report of {source}")?;
        let events: Vec<String> = (0..d.config.nr_events.min(8))
            .map(|i| crate::label::event_label(&d.config, i))
            .collect();
        write!(out, "# events: {}", events.join(", "))?;
        if let Some(c) = d.meta(meta::COMMAND) {
            write!(out, "; command: {c}")?;
        }
        if let Some(p) = d.meta(meta::TARGET_PID) {
            write!(out, " (pid {p})")?;
        }
        writeln!(out)?;
        if let (Some(h), Some(k)) = (d.meta(meta::HOSTNAME), d.meta(meta::KERNEL)) {
            writeln!(out, "# host: {h}, kernel {k}")?;
        }
        if let Some(ns) = self.agg.span.duration_ns() {
            writeln!(out, "# session: {:.3} s", ns as f64 / 1e9)?;
        }
        writeln!(
            out,
            "# samples: {}",
            self.agg.samples.saturating_add(self.agg.filtered_out)
        )?;
        writeln!(
            out,
            "# lost: {} ({})",
            self.agg.lost_total(),
            self.agg.lost_line()
        )?;
        if let Some(s) = d.stats {
            writeln!(
                out,
                "# module at stop: samples {}, delivered {}, throttled {}",
                s.samples, s.delivered, s.throttled
            )?;
        }
        let parts = filter.describe();
        if !parts.is_empty() {
            writeln!(
                out,
                "# shown: {} samples of {}",
                crate::aggregate::filtered_samples(&self.agg, filter),
                parts
            )?;
        }
        if let Some(line) = self.cut_line() {
            writeln!(out, "# warning: {line}")?;
        }
        if let Some(e) = &self.stream_error {
            writeln!(out, "# warning: {e}; later records were ignored")?;
        }
        if self.agg.span.stops == 0 {
            writeln!(
                out,
                "# warning: the stream has no STOP record (recording cut short?)"
            )?;
        }
        for w in self.sym.warnings() {
            writeln!(out, "# warning: {w}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn header_and_rows_of_a_data_file() {
        let data = DataFile::parse(&testdata::data_file().to_bytes()).unwrap();
        let mut l = Loaded::new(data, None);
        assert_eq!(l.stream_error, None);
        let filter = Filter {
            comm: Some("attr_main".into()),
            ..Filter::default()
        };
        let rows = crate::rows(&l.agg, &mut l.sym, &filter);
        assert_eq!(rows[0].frame.symbol, "rprof_report_test_hot");
        assert_eq!(rows.iter().map(|r| r.samples).sum::<u64>(), 40);
        let mut out = Vec::new();
        l.write_header(&mut out, "t.data", &filter).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("# events: cpu-clock@999 (pid 100)"), "{text}");
        assert!(text.contains("# samples: 50\n"), "{text}");
        assert!(
            text.contains(
                "# lost: 3 (ring 0, buffer 0, no_mm 0, no_mapping 3, no_cookie 0, mm_busy 0)"
            ),
            "{text}"
        );
        assert!(
            text.contains("# shown: 40 samples of comm attr_main"),
            "{text}"
        );
        assert_eq!(l.events(&Filter::default()), [0]);
    }

    #[test]
    fn with_progress_counts_the_same_and_reports_both_phases() {
        let bytes = testdata::data_file().to_bytes();
        let mut plain = Loaded::new(DataFile::parse(&bytes).unwrap(), None);
        let mut calls: Vec<(String, u64, u64)> = Vec::new();
        let mut l = Loaded::with_progress(
            DataFile::parse(&bytes).unwrap(),
            None,
            &Filter::default(),
            true,
            &mut |phase, done, total| calls.push((phase.to_string(), done, total)),
        );
        let f = Filter::default();
        assert_eq!(
            crate::rows(&l.agg, &mut l.sym, &f),
            crate::rows(&plain.agg, &mut plain.sym, &f)
        );
        let len = l.data.stream.len() as u64;
        assert!(
            calls.contains(&("decoding".to_string(), len, len)),
            "{calls:?}"
        );
        let keys = l.agg.counts().len() as u64;
        assert_eq!(calls.last(), Some(&("symbolizing".to_string(), keys, keys)));
        assert!(calls
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || w[0].1 <= w[1].1));
    }
}

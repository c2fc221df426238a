//! The rows of a profile: an aggregate's keys symbolized and merged.

use crate::{Aggregate, Filter, Frame, Symbolizer};
use std::sync::Arc;

/// One line of a profile: samples of one event in one task, in one
/// function of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Index of the event in the session's configuration.
    pub event: u32,
    /// Thread group id.
    pub pid: u32,
    /// Thread id (0 unless the aggregate counted threads apart).
    pub tid: u32,
    /// The task's comm.
    pub comm: Arc<str>,
    /// Where the samples are.
    pub frame: Arc<Frame>,
    /// The callers of `frame`, innermost first (empty without a call
    /// chain): return addresses are symbolized one byte back, at the call.
    pub callers: Arc<[Arc<Frame>]>,
    /// Whether the samples had a call chain (perhaps an empty one).
    pub chain: bool,
    /// How many samples.
    pub samples: u64,
    /// The sum of their periods (events they stand for).
    pub period: u64,
}

/// Symbolizes every key of `agg` and merges keys that name the same
/// (event, pid, tid, comm, frame) into one [`Row`]; rows come sorted by
/// samples, most first.
pub fn rows(agg: &Aggregate, sym: &mut Symbolizer, filter: &Filter) -> Vec<Row> {
    use std::collections::HashMap;
    type RowKey = (
        u32,
        (u32, u32),
        Arc<str>,
        Arc<Frame>,
        Option<Vec<Arc<Frame>>>,
    );
    let mut merged: HashMap<RowKey, (u64, u64)> = HashMap::new();
    for (key, counts) in agg.counts() {
        if !filter.accepts(key) {
            continue;
        }
        let frame = sym.frame_of(key.pid, key.cookie, key.offset, agg.resolver());
        let callers = key
            .stack
            .as_ref()
            .map(|s| caller_frames(s, key.user, key.pid, sym, agg.resolver()));
        let e = merged
            .entry((
                key.event,
                (key.pid, key.tid),
                key.comm.clone(),
                frame,
                callers,
            ))
            .or_default();
        e.0 = e.0.saturating_add(counts.samples);
        e.1 = e.1.saturating_add(counts.period);
    }
    let mut rows: Vec<Row> = merged
        .into_iter()
        .map(
            |((event, (pid, tid), comm, frame, callers), (samples, period))| Row {
                event,
                pid,
                tid,
                comm,
                frame,
                chain: callers.is_some(),
                callers: callers.unwrap_or_default().into(),
                samples,
                period,
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.comm.cmp(&b.comm))
            .then_with(|| a.frame.dso.cmp(&b.frame.dso))
            .then_with(|| a.frame.symbol.cmp(&b.frame.symbol))
            .then_with(|| a.pid.cmp(&b.pid))
    });
    rows
}

/// The frames of a call chain, innermost first, symbolized: a return
/// address one byte back (the call), the user ip at kernel entry as is.
pub fn caller_frames(
    stack: &rprof_decode::Stack,
    user: bool,
    pid: u32,
    sym: &mut Symbolizer,
    names: &rprof_decode::Resolver,
) -> Vec<Arc<Frame>> {
    stack
        .frames
        .iter()
        .enumerate()
        .map(|(i, &(cookie, offset))| {
            let at = if stack.is_return_address(i, user) {
                offset.saturating_sub(1)
            } else {
                offset
            };
            sym.frame_of(pid, cookie, at, names)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, SymbolOptions};
    use std::os::unix::fs::MetadataExt;

    /// Samples in anonymous memory take their names from the process's
    /// `/tmp/perf-PID.map` (JIT code), read in the symfs; another
    /// process's samples at the same addresses, or addresses the map does
    /// not cover, stay `[unknown]`.
    #[test]
    fn jit_code_is_named_by_the_perf_map() {
        use rprof_decode::Record;
        let config = testdata::config();
        let anon = u64::from(rprof_abi::RPROF_COOKIE_ANON);
        let sample = |offset| Record::Sample {
            flags: rprof_abi::RPROF_SAMPLE_USER as u16,
            time_ns: 2,
            offset,
            period: 1,
            stack: None,
        };
        let task = |pid| Record::Task {
            cpu: 0,
            pid,
            tid: pid,
            exe_cookie: 0,
            comm: "node".into(),
        };
        let mut r = vec![
            Record::Start { time_ns: 1, config },
            task(4242),
            Record::Switch { cookie: anon },
        ];
        r.extend((0..5).map(|_| sample(0x7f00_0000_1010)));
        r.extend((0..2).map(|_| sample(0x7f00_0000_5000)));
        r.extend([
            task(4243),
            Record::Switch { cookie: anon },
            sample(0x7f00_0000_1010),
        ]);
        r.push(Record::Stop { time_ns: 3, config });
        let mut stream = Vec::new();
        for rec in &r {
            rec.encode(&mut stream);
        }
        let mut agg = crate::Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let dir = std::env::temp_dir().join(format!("rprof-perfmap-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(
            dir.join("tmp/perf-4242.map"),
            "7f0000001000 40 LazyCompile:~add /app/index.js:3\n7f0000002000 10 other\n",
        )
        .unwrap();
        let mut sym = Symbolizer::new("", &[], Some(dir.clone()));
        let rows = crate::rows(&agg, &mut sym, &crate::Filter::default());
        let find = |pid: u32, symbol: &str| {
            rows.iter()
                .find(|r| r.pid == pid && r.frame.symbol == symbol)
                .map(|r| (r.samples, r.frame.dso.clone(), r.frame.resolved))
        };
        assert_eq!(
            find(4242, "LazyCompile:~add /app/index.js:3"),
            Some((5, "perf-4242.map".to_string(), true)),
            "{rows:?}"
        );
        assert_eq!(
            find(4242, "[unknown] 0x7f0000005000"),
            Some((2, "[anon]".to_string(), false))
        );
        assert_eq!(
            find(4243, "[unknown] 0x7f0000001010"),
            Some((1, "[anon]".to_string(), false))
        );
        // A map another user wrote (owned by nobody, neither root nor us)
        // is not believed, as under perf, unless asked (--force).  Only
        // root can give a file away: as root (`make check` runs as root)
        // the chown must work; otherwise the check says it did not run.
        let map = dir.join("tmp/perf-4242.map");
        // We made the map: it is ours, so its owner says who we are.
        let root = std::fs::metadata(&map).unwrap().uid() == 0;
        if !root {
            eprintln!("SKIP the perf map owner check: only root can chown the map to nobody");
        } else {
            std::os::unix::fs::chown(&map, Some(65534), Some(65534)).unwrap();
            let mut sym = Symbolizer::new("", &[], Some(dir.clone()));
            let rows = crate::rows(&agg, &mut sym, &crate::Filter::default());
            assert!(
                rows.iter()
                    .all(|r| !r.frame.symbol.starts_with("LazyCompile")),
                "{rows:?}"
            );
            assert!(
                sym.warnings()
                    .iter()
                    .any(|w| w.contains("not owned by root or by you")),
                "{:?}",
                sym.warnings()
            );
            let mut sym = Symbolizer::with_options(
                "",
                &[],
                SymbolOptions {
                    symfs: Some(dir.clone()),
                    any_perf_map_owner: true,
                },
            );
            let rows = crate::rows(&agg, &mut sym, &crate::Filter::default());
            assert!(rows
                .iter()
                .any(|r| r.pid == 4242 && r.frame.symbol == "LazyCompile:~add /app/index.js:3"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! speedscope's JSON file format
//! (<https://www.speedscope.app/file-format-schema.json>).
//!
//! One "sampled" profile per (event, thread, comm): speedscope shows one
//! profile at a time and adds up everything in it, so two events (say
//! nanoseconds of cpu-clock and counts of cycles) must never share one,
//! and a profile per thread is what speedscope's profile selector is for
//! (as it does for the per-thread profiles of other profilers).  The comm
//! is part of the key so that a thread that exec'd (or renamed itself)
//! reads as the two programs it was, and the idle tasks, which are all
//! pid 0, stay one per CPU.  A profile is named `comm pid/tid (event)`
//! (`comm pid (event)` when the aggregate did not count threads apart,
//! as live ones do not).
//!
//! A stack is weighted by its samples' period sum, the events they stand
//! for, not by their count: a frequency-driven event's period varies from
//! sample to sample, and only the period adds up to the time or the
//! events spent in a function.  The period of cpu-clock and task-clock is
//! nanoseconds of CPU time, so those profiles have the unit
//! `nanoseconds` (speedscope then shows seconds); other events count
//! events, `none`.  A profile runs from 0 to its total weight, and the
//! profiles come per event in the configuration's order, heaviest first
//! within an event and the idle tasks (pid 0) last, so the file opens on
//! the busiest real thread of the first event.
//!
//! A stack with a call chain is its frames, root first (as speedscope
//! wants), the leaf last; without one it is `[shared object, symbol]`
//! (the profile names the thread already; its comm as a root frame would
//! be the same frame as an executable named alike, which speedscope
//! would draw as a recursion).

use crate::Row;
use rprof_abi::rprof_config;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What one profile holds: the samples of one event in one thread.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ProfileKey {
    event: u32,
    pid: u32,
    tid: u32,
    comm: Arc<str>,
}

/// The speedscope document of `rows`, whose events are those of
/// `config`; `name` titles it.
pub fn document(rows: &[Row], name: &str, config: &rprof_config) -> Value {
    let mut frames: Vec<Value> = Vec::new();
    let mut frame_ids: HashMap<(String, String), usize> = HashMap::new();
    let mut frame = |name: &str, file: &str| -> usize {
        let k = (name.to_string(), file.to_string());
        if let Some(i) = frame_ids.get(&k) {
            return *i;
        }
        let i = frames.len();
        frames.push(if file.is_empty() {
            json!({ "name": name })
        } else {
            json!({ "name": name, "file": file })
        });
        frame_ids.insert(k, i);
        i
    };
    // profile -> stack -> period sum.
    let mut by_profile: BTreeMap<ProfileKey, BTreeMap<Vec<usize>, u64>> = BTreeMap::new();
    for r in rows {
        let stack = if r.chain {
            let mut s: Vec<usize> = r
                .callers
                .iter()
                .rev()
                .map(|f| frame(&f.symbol, &f.path))
                .collect();
            s.push(frame(&r.frame.symbol, &r.frame.path));
            s
        } else {
            vec![
                frame(&r.frame.dso, ""),
                frame(&r.frame.symbol, &r.frame.path),
            ]
        };
        let key = ProfileKey {
            event: r.event,
            pid: r.pid,
            tid: r.tid,
            comm: r.comm.clone(),
        };
        let w = by_profile.entry(key).or_default().entry(stack).or_default();
        *w = w.saturating_add(r.period);
    }
    let mut profiles: Vec<(u32, bool, u64, Value)> = by_profile
        .into_iter()
        .map(|(key, stacks)| {
            let total = stacks.values().fold(0u64, |a, w| a.saturating_add(*w));
            let samples: Vec<Value> = stacks.keys().map(|s| json!(s)).collect();
            let weights: Vec<Value> = stacks.values().map(|w| json!(w)).collect();
            let unit = match config.events.get(key.event as usize) {
                Some(e) if crate::label::period_is_time(e.kind) => "nanoseconds",
                _ => "none",
            };
            (
                key.event,
                key.pid == 0,
                total,
                json!({
                    "type": "sampled",
                    "name": profile_name(&key, config),
                    "unit": unit,
                    "startValue": 0,
                    "endValue": total,
                    "samples": samples,
                    "weights": weights,
                }),
            )
        })
        .collect();
    // Stable: equal weights stay in the key's order.
    profiles.sort_by_key(|p| (p.0, p.1, std::cmp::Reverse(p.2)));
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": name,
        "exporter": concat!("rprof ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles.into_iter().map(|p| p.3).collect::<Vec<_>>(),
    })
}

/// `comm pid/tid (event)`, or `comm pid (event)` for a process whose
/// threads were counted together (tid 0 with a pid that is not the idle
/// tasks').
fn profile_name(key: &ProfileKey, config: &rprof_config) -> String {
    let event = crate::label::event_label(config, key.event);
    if key.tid == 0 && key.pid != 0 {
        format!("{} {} ({event})", key.comm, key.pid)
    } else {
        format!("{} {}/{} ({event})", key.comm, key.pid, key.tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, Aggregate, Filter, Frame, Symbolizer};
    use rprof_abi::*;

    use testdata::two_events;

    /// A row of `samples` samples with a period sum of `period`, without
    /// a call chain, in `symbol` of /bin/prog.
    fn row(event: u32, (pid, tid): (u32, u32), symbol: &str, samples: u64, period: u64) -> Row {
        Row {
            event,
            pid,
            tid,
            comm: "prog".into(),
            frame: Arc::new(Frame {
                dso: "prog".into(),
                path: "/bin/prog".into(),
                symbol: symbol.into(),
                kind: crate::symbolize::FrameKind::File,
                resolved: true,
                addr: 0x1000,
                build_id: Vec::new(),
            }),
            callers: Arc::new([]),
            chain: false,
            samples,
            period,
        }
    }

    /// The document, through its text (as speedscope reads it).
    fn doc_of(rows: &[Row], config: &rprof_config) -> Value {
        let text = serde_json::to_string(&document(rows, "test", config)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Each profile's (name, unit, endValue, {leaf symbol: weight}).
    fn summary(doc: &Value) -> Vec<(String, String, u64, BTreeMap<String, u64>)> {
        let frames = doc["shared"]["frames"].as_array().unwrap();
        doc["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let mut leaves = BTreeMap::new();
                for (s, w) in p["samples"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(p["weights"].as_array().unwrap())
                {
                    let leaf = s.as_array().unwrap().last().unwrap().as_u64().unwrap();
                    let name = frames[leaf as usize]["name"].as_str().unwrap().to_string();
                    *leaves.entry(name).or_default() += w.as_u64().unwrap();
                }
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["unit"].as_str().unwrap().to_string(),
                    p["endValue"].as_u64().unwrap(),
                    leaves,
                )
            })
            .collect()
    }

    /// The test stream: attr_main's profile first (40 samples of
    /// 1.001001 ms), then swapper/1's (10); every profile's stacks name
    /// shared frames, and the weights add up to the stream's periods.
    #[test]
    fn one_profile_per_task_and_totals_match() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        let doc = doc_of(&rows, &testdata::config());
        let profiles = doc["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        assert_eq!(profiles[0]["name"], "attr_main 100 (cpu-clock@999)");
        assert_eq!(profiles[0]["endValue"], 40 * 1_001_001);
        assert_eq!(profiles[1]["name"], "swapper/1 0/0 (cpu-clock@999)");
        let frames = doc["shared"]["frames"].as_array().unwrap();
        let mut total = 0;
        for p in profiles {
            assert_eq!(p["startValue"], 0);
            let samples = p["samples"].as_array().unwrap();
            let weights = p["weights"].as_array().unwrap();
            assert_eq!(samples.len(), weights.len());
            for s in samples {
                for i in s.as_array().unwrap() {
                    assert!((i.as_u64().unwrap() as usize) < frames.len());
                }
            }
            let sum = weights.iter().map(|w| w.as_u64().unwrap()).sum::<u64>();
            assert_eq!(p["endValue"], sum);
            total += sum;
        }
        assert_eq!(total, testdata::SAMPLES * 1_001_001);
    }

    /// A stack weighs its period sum, not its sample count: 3 samples of
    /// a long period outweigh 5 of a short one (a frequency-driven
    /// event's period changes from sample to sample).
    #[test]
    fn weights_are_periods() {
        let rows = [
            row(0, (7, 7), "short", 5, 5_000),
            row(0, (7, 7), "long", 3, 3_000_000),
        ];
        let s = summary(&doc_of(&rows, &testdata::config()));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].2, 3_005_000);
        assert_eq!(
            s[0].3,
            BTreeMap::from([
                ("long".to_string(), 3_000_000),
                ("short".to_string(), 5_000)
            ])
        );
    }

    /// Two threads of one process are two profiles, named by their tids,
    /// the heavier first.
    #[test]
    fn threads_have_their_own_profiles() {
        let rows = [
            row(0, (7, 7), "main_loop", 2, 2_000),
            row(0, (7, 8), "worker", 3, 3_000),
            row(0, (7, 8), "main_loop", 1, 1_000),
        ];
        let s = summary(&doc_of(&rows, &testdata::config()));
        let names: Vec<&str> = s.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            ["prog 7/8 (cpu-clock@999)", "prog 7/7 (cpu-clock@999)"]
        );
        assert_eq!(
            s[0].3,
            BTreeMap::from([
                ("main_loop".to_string(), 1_000),
                ("worker".to_string(), 3_000)
            ])
        );
        assert_eq!(s[1].3, BTreeMap::from([("main_loop".to_string(), 2_000)]));
    }

    /// The idle task (pid 0), however heavy, comes after the real
    /// threads: the file opens on one of them.  A stack without a chain
    /// is the shared object and the symbol (no comm root, which would be
    /// the same frame as an executable named alike: a fake recursion).
    #[test]
    fn the_idle_task_comes_last_and_stacks_have_no_comm_root() {
        let rows = [
            row(0, (0, 0), "do_idle", 9, 9_000),
            row(0, (7, 7), "main_loop", 1, 1_000),
        ];
        let doc = doc_of(&rows, &testdata::config());
        let s = summary(&doc);
        let names: Vec<&str> = s.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            ["prog 7/7 (cpu-clock@999)", "prog 0/0 (cpu-clock@999)"]
        );
        let frames = doc["shared"]["frames"].as_array().unwrap();
        let first = doc["profiles"][0]["samples"][0].as_array().unwrap();
        let names: Vec<&str> = first
            .iter()
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(names, ["prog", "main_loop"]);
    }

    /// Two events of one thread are never one profile, each has its own
    /// unit (cpu-clock's nanoseconds, cycles' plain counts), and the
    /// first event's profiles come first even when lighter.
    #[test]
    fn events_never_share_a_profile() {
        let rows = [
            row(0, (7, 7), "hot", 2, 2_002_002),
            row(1, (7, 7), "hot", 40, 4_000_000),
            row(1, (9, 9), "cold", 1, 100_000),
        ];
        let s = summary(&doc_of(&rows, &two_events()));
        let got: Vec<(&str, &str, u64)> = s
            .iter()
            .map(|p| (p.0.as_str(), p.1.as_str(), p.2))
            .collect();
        assert_eq!(
            got,
            [
                ("prog 7/7 (cpu-clock@999)", "nanoseconds", 2_002_002),
                ("prog 7/7 (cycles:100000)", "none", 4_000_000),
                ("prog 9/9 (cycles:100000)", "none", 100_000),
            ]
        );
    }

    /// task-clock is time too; an event the configuration does not have
    /// (a corrupt recording) is plain counts.
    #[test]
    fn units() {
        let mut config = two_events();
        config.events[0].kind = RPROF_EVENT_TASK_CLOCK;
        let rows = [
            row(0, (7, 7), "a", 1, 10),
            row(1, (7, 7), "a", 1, 10),
            row(5, (7, 7), "a", 1, 10),
        ];
        let units: Vec<String> = summary(&doc_of(&rows, &config))
            .into_iter()
            .map(|p| p.1)
            .collect();
        assert_eq!(units, ["nanoseconds", "none", "none"]);
    }

    /// Weights that would overflow saturate instead of panicking.
    #[test]
    fn huge_periods_saturate() {
        let rows = [
            row(0, (7, 7), "a", 1, u64::MAX),
            row(0, (7, 7), "b", 1, u64::MAX),
        ];
        let s = summary(&doc_of(&rows, &testdata::config()));
        assert_eq!(s[0].2, u64::MAX);
    }
}

//! speedscope's JSON file format
//! (<https://www.speedscope.app/file-format-schema.json>): one "sampled"
//! profile per comm, most samples first.  A stack with a call chain is its
//! frames, root first (as speedscope wants), the leaf last; without one it
//! is `[comm, shared object, symbol]`.  Each is weighted by its sample
//! count.

use crate::Row;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The speedscope document of `rows`; `name` titles it.
pub fn document(rows: &[Row], name: &str) -> Value {
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
    // comm -> stack -> weight.
    let mut by_comm: BTreeMap<&str, BTreeMap<Vec<usize>, u64>> = BTreeMap::new();
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
                frame(&r.comm, ""),
                frame(&r.frame.dso, ""),
                frame(&r.frame.symbol, &r.frame.path),
            ]
        };
        *by_comm
            .entry(&r.comm)
            .or_default()
            .entry(stack)
            .or_default() += r.samples;
    }
    let mut profiles: Vec<(u64, Value)> = by_comm
        .into_iter()
        .map(|(comm, stacks)| {
            let total: u64 = stacks.values().sum();
            let samples: Vec<Value> = stacks.keys().map(|s| json!(s)).collect();
            let weights: Vec<Value> = stacks.values().map(|w| json!(w)).collect();
            (
                total,
                json!({
                    "type": "sampled",
                    "name": comm,
                    "unit": "none",
                    "startValue": 0,
                    "endValue": total,
                    "samples": samples,
                    "weights": weights,
                }),
            )
        })
        .collect();
    profiles.sort_by_key(|p| std::cmp::Reverse(p.0));
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": name,
        "exporter": concat!("rprof ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles.into_iter().map(|p| p.1).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, Aggregate, Filter, Symbolizer};

    #[test]
    fn one_profile_per_comm_and_totals_match() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        let doc = document(&rows, "test");
        let text = serde_json::to_string(&doc).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let profiles = doc["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        assert_eq!(profiles[0]["name"], "attr_main");
        assert_eq!(profiles[0]["endValue"], 40);
        let frames = doc["shared"]["frames"].as_array().unwrap();
        let mut total = 0;
        for p in profiles {
            let samples = p["samples"].as_array().unwrap();
            let weights = p["weights"].as_array().unwrap();
            assert_eq!(samples.len(), weights.len());
            for s in samples {
                for i in s.as_array().unwrap() {
                    assert!((i.as_u64().unwrap() as usize) < frames.len());
                }
            }
            total += weights.iter().map(|w| w.as_u64().unwrap()).sum::<u64>();
        }
        assert_eq!(total, testdata::SAMPLES);
    }
}

use super::*;
use crate::{testdata, Aggregate, Filter, Symbolizer};
use rprof_abi::*;
use rprof_decode::Record;

fn test_profile(agg: &Aggregate, config: &rprof_config, filter: &Filter) -> Profile {
    let (_, info) = testdata::stream();
    let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
    let opts = Options {
        comments: vec!["test".into()],
        ..Options::default()
    };
    let p = build(agg, &mut sym, filter, config, &opts);
    // Through the bytes and back.
    let mut gz = Vec::new();
    write_gz(&mut gz, &p).unwrap();
    let back = read(&gz).unwrap();
    assert_eq!(back, p);
    p
}

fn types(p: &Profile) -> Vec<(String, String)> {
    p.sample_type
        .iter()
        .map(|t| {
            (
                string(p, t.r#type).to_string(),
                string(p, t.unit).to_string(),
            )
        })
        .collect()
}

fn totals(p: &Profile) -> Vec<i64> {
    let mut t = vec![0; p.sample_type.len()];
    for s in &p.sample {
        assert_eq!(s.value.len(), t.len());
        for (a, v) in t.iter_mut().zip(&s.value) {
            *a += v;
        }
    }
    t
}

fn function_name(p: &Profile, id: u64) -> &str {
    let f = p.function.iter().find(|f| f.id == id).unwrap();
    string(p, f.name)
}

#[test]
fn one_event() {
    let (stream, _) = testdata::stream();
    let mut agg = Aggregate::new();
    agg.feed_stream(&stream).unwrap();
    let p = test_profile(&agg, &testdata::config(), &Filter::default());
    assert_eq!(
        types(&p),
        [
            ("samples".to_string(), "count".to_string()),
            ("cpu".to_string(), "nanoseconds".to_string())
        ]
    );
    assert_eq!(
        totals(&p),
        [
            testdata::SAMPLES as i64,
            testdata::SAMPLES as i64 * 1_001_001
        ]
    );
    // Frequency sampling: the samples' mean period, in ns.
    assert_eq!(p.period, 1_001_001);
    assert_eq!(p.default_sample_type, 0);
    let comments: Vec<&str> = p.comment.iter().map(|c| string(&p, *c)).collect();
    assert_eq!(
        comments,
        ["test", "event cpu-clock@999: period 1001001 nanoseconds"]
    );
}

/// Locations are at the sampled addresses, within their mappings, which
/// give the file offset back; function filenames are source files, not
/// the binary.
#[test]
fn locations_mappings_and_functions() {
    let (stream, info) = testdata::stream();
    let mut agg = Aggregate::new();
    agg.feed_stream(&stream).unwrap();
    let p = test_profile(&agg, &testdata::config(), &Filter::default());
    let image = rprof_symbols::ElfImage::load(&testdata::exe()).unwrap();
    let (hot, _) = image.symbols_named("rprof_report_test_hot")[0];
    // 30 samples at hot + 0..4: four locations, at those addresses.
    let hot_locations: Vec<&Location> = p
        .location
        .iter()
        .filter(|l| {
            l.line
                .first()
                .is_some_and(|line| function_name(&p, line.function_id) == "rprof_report_test_hot")
        })
        .collect();
    let mut addrs: Vec<u64> = hot_locations.iter().map(|l| l.address).collect();
    addrs.sort_unstable();
    assert_eq!(addrs, [hot, hot + 1, hot + 2, hot + 3]);
    for l in &p.location {
        if l.mapping_id == 0 {
            continue;
        }
        let m = &p.mapping[l.mapping_id as usize - 1];
        assert_eq!(m.id, l.mapping_id);
        assert!(
            m.memory_start <= l.address && l.address < m.memory_limit,
            "{l:?} outside {m:?}"
        );
    }
    let exe = p.mapping.first().unwrap();
    assert_eq!(string(&p, exe.filename), info.path, "the file comes first");
    assert_eq!(
        string(&p, exe.build_id),
        rprof_symbols::elf::hex(&info.build_id)
    );
    assert!(exe.has_functions);
    assert_eq!(
        hot - exe.memory_start + exe.file_offset,
        testdata::hot_offset()
    );
    // The kernel and the module: at their addresses, symbolized.
    let kernel = p
        .mapping
        .iter()
        .find(|m| string(&p, m.filename) == "[kernel.kallsyms]")
        .unwrap();
    assert_eq!(
        (kernel.memory_start, kernel.memory_limit),
        (0xffffffff81001010, 0xffffffff81001011)
    );
    let module = p
        .mapping
        .iter()
        .find(|m| string(&p, m.filename) == "[rprof_busy]")
        .unwrap();
    assert_eq!(
        (
            module.memory_start,
            module.memory_limit,
            module.has_functions
        ),
        (0xffffffffc0001000, 0xffffffffc0002000, true)
    );
    assert!(!kernel.has_filenames, "no source lines for the kernel");
    // No function is named after the binary it is in.
    for f in &p.function {
        assert_ne!(string(&p, f.filename), info.path, "{f:?}");
    }
}

#[test]
fn unsymbolized_mappings_have_no_functions() {
    let (stream, _) = testdata::stream_with(None, Some("/nonexistent/rprof/prog"));
    let mut agg = Aggregate::new();
    agg.feed_stream(&stream).unwrap();
    let mut sym = Symbolizer::new(testdata::KALLSYMS, &[], None);
    let p = build(
        &agg,
        &mut sym,
        &Filter::default(),
        &testdata::config(),
        &Options::default(),
    );
    let m = p
        .mapping
        .iter()
        .find(|m| string(&p, m.filename) == "/nonexistent/rprof/prog")
        .unwrap();
    assert!(!m.has_functions && !m.has_filenames && !m.has_line_numbers);
    // Addresses are file offsets, and the mapping says so.
    assert_eq!(m.memory_start, m.file_offset);
    let l = p
        .location
        .iter()
        .find(|l| l.mapping_id == m.id && l.address == testdata::hot_offset())
        .unwrap();
    assert!(l.line.is_empty(), "no made-up function: {l:?}");
}

/// Two events: one pair of sample types each, never added together.
#[test]
fn one_sample_type_per_event() {
    let config = testdata::two_events();
    let mut b = Vec::new();
    let records = [
        Record::Task {
            cpu: 0,
            pid: 0,
            tid: 0,
            exe_cookie: 0,
            comm: "swapper/0".into(),
        },
        Record::Switch {
            cookie: u64::from(RPROF_COOKIE_KERNEL),
        },
    ];
    for r in &records {
        r.encode(&mut b);
    }
    for (event, n, period) in [(0u16, 3, 1_000_000u64), (1, 5, 100_000)] {
        for _ in 0..n {
            Record::Sample {
                flags: event << 8,
                time_ns: 1,
                offset: 0xffffffff81001010,
                period,
                stack: None,
            }
            .encode(&mut b);
        }
    }
    let mut agg = Aggregate::new();
    agg.feed_stream(&b).unwrap();
    let p = test_profile(&agg, &config, &Filter::default());
    assert_eq!(
        types(&p),
        [
            ("cpu-clock_samples".to_string(), "count".to_string()),
            ("cpu-clock".to_string(), "nanoseconds".to_string()),
            ("cycles_samples".to_string(), "count".to_string()),
            ("cycles".to_string(), "count".to_string()),
        ]
    );
    assert_eq!(totals(&p), [3, 3_000_000, 5, 500_000]);
    assert_eq!(string(&p, p.default_sample_type), "cpu-clock");
    for s in &p.sample {
        let nonzero = s.value.iter().filter(|v| **v != 0).count();
        assert_eq!(nonzero, 2, "one event per sample: {s:?}");
    }
    // Only the second event.
    let p = test_profile(
        &agg,
        &config,
        &Filter {
            event: Some(1),
            ..Filter::default()
        },
    );
    assert_eq!(types(&p)[1], ("cycles".to_string(), "count".to_string()));
    assert_eq!(totals(&p), [5, 500_000]);
    assert_eq!(p.period, 100_000);
}

/// The same recording gives the same bytes (ids do not follow a hash
/// map's order).
#[test]
fn the_same_recording_gives_the_same_profile() {
    let (stream, _) = testdata::stream();
    let encode = || {
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        test_profile(&agg, &testdata::config(), &Filter::default()).encode_to_vec()
    };
    let first = encode();
    for _ in 0..4 {
        assert_eq!(encode(), first);
    }
}

#[test]
fn read_rejects_garbage() {
    assert!(read(&[0x12, 0x05, 1]).is_err());
    assert!(read(&[0x1f, 0x8b, 0, 0]).is_err());
}

//! Reports and exports of a real recording: tests/fixtures/ holds
//! `rprof record -o r.data -- /tests/bin/attr_main 2` made in the test
//! guest, and the two programs it sampled (see tests/fixtures/README.md).

// Helpers of tests: a panic there is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rprof_data::DataFile;
use rprof_decode::{Decoder, Record};
use rprof_report::{annotate, folded, pprof, speedscope, table, Filter, Loaded};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn data() -> DataFile {
    let path = fixtures().join("attr_main.rprof.data");
    DataFile::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn loaded() -> Loaded {
    Loaded::new(data(), Some(fixtures().join("symfs")))
}

fn attr_main() -> Filter {
    Filter {
        comm: Some("attr_main".into()),
        ..Filter::default()
    }
}

/// SAMPLE records in the stream, counted without the report code.
fn stream_samples(d: &DataFile) -> u64 {
    Decoder::new(&d.stream)
        .map(|r| r.expect("the fixture's stream decodes"))
        .filter(|r| matches!(r, Record::Sample { .. }))
        .count() as u64
}

#[test]
fn the_file_is_a_complete_recording() {
    let d = data();
    assert!(d
        .meta("command")
        .is_some_and(|c| c.starts_with("/tests/bin/attr_main")));
    assert!(d.meta("target-pid").is_some());
    assert!(!d.kallsyms.is_empty() && !d.modules.is_empty());
    let exe = d
        .files
        .iter()
        .find(|f| f.path == "/tests/bin/attr_main")
        .expect("attr_main is a file of the snapshot");
    assert_eq!(exe.build_id.len(), 20, "gcc's default sha1 build-id");
    let stats = d.stats.expect("module statistics");
    assert!(stats.samples > 0 && stats.samples >= stats.delivered);
    let l = loaded();
    assert_eq!(l.stream_error, None);
    assert_eq!(l.agg.span.stops, 1);
    assert_eq!(l.agg.samples, stream_samples(&l.data));
}

#[test]
fn main_hot_and_lib_hot_lead_three_to_one() {
    let mut l = loaded();
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &attr_main());
    let keys = table::parse_sort("dso,sym").unwrap();
    let lines = table::group(&rows, &keys);
    assert_eq!(lines[0].values, ["attr_main", "main_hot"], "{lines:?}");
    assert_eq!(lines[1].values, ["libattr_lib.so", "lib_hot"], "{lines:?}");
    let ratio = lines[0].samples as f64 / lines[1].samples as f64;
    assert!((2.25..=3.75).contains(&ratio), "main_hot:lib_hot = {ratio}");
    assert!(l.sym.warnings().is_empty(), "{:?}", l.sym.warnings());
}

#[test]
fn totals_are_the_sample_count() {
    let mut l = loaded();
    let n = stream_samples(&l.data);
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());
    assert_eq!(rows.iter().map(|r| r.samples).sum::<u64>(), n);
    let lines = table::group(&rows, &table::parse_sort(table::DEFAULT_SORT).unwrap());
    assert_eq!(lines.iter().map(|r| r.samples).sum::<u64>(), n);
    // The table's text: the overheads (shares of the periods) add up to
    // 100.
    let period: u64 = rows.iter().map(|r| r.period).sum();
    let mut out = Vec::new();
    table::write(
        &mut out,
        &lines,
        &table::parse_sort(table::DEFAULT_SORT).unwrap(),
        period,
        0.0,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let pct: f64 = text
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| l.split('%').next().unwrap().trim().parse::<f64>().unwrap())
        .sum();
    assert!((pct - 100.0).abs() < 0.5, "percentages add up to {pct}");
    // Kernel samples are named through the recorded kallsyms.
    assert!(
        rows.iter()
            .any(|r| r.frame.dso == "[kernel.kallsyms]" && r.frame.resolved),
        "no resolved kernel symbol"
    );
}

#[test]
fn pprof_folded_and_speedscope_add_up() {
    let mut l = loaded();
    let n = stream_samples(&l.data);
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());

    let p = pprof::build(
        &l.agg,
        &mut l.sym,
        &Filter::default(),
        &l.data.config,
        &pprof::Options::default(),
    );
    let mut gz = Vec::new();
    pprof::write_gz(&mut gz, &p).unwrap();
    let p = pprof::read(&gz).unwrap();
    let total = |i: usize| p.sample.iter().map(|s| s.value[i]).sum::<i64>();
    assert_eq!(total(0), n as i64);
    assert_eq!(pprof::string(&p, p.sample_type[1].r#type), "cpu");
    assert_eq!(pprof::string(&p, p.sample_type[1].unit), "nanoseconds");
    let period: u64 = rows.iter().map(|r| r.period).sum();
    assert_eq!(total(1), period as i64);
    let function_names: Vec<&str> = p
        .function
        .iter()
        .map(|f| pprof::string(&p, f.name))
        .collect();
    for f in ["main_hot", "lib_hot", "attr_main"] {
        assert!(function_names.contains(&f), "no function {f}");
    }
    assert_eq!(
        pprof::string(&p, p.mapping[0].filename),
        "/tests/bin/attr_main"
    );
    // Functions of the programs name their C source files.
    let main_hot = p
        .function
        .iter()
        .find(|f| pprof::string(&p, f.name) == "main_hot")
        .unwrap();
    assert!(
        pprof::string(&p, main_hot.filename).ends_with("attr_main.c"),
        "{main_hot:?}"
    );
    assert!(main_hot.start_line > 0);

    let folded: u64 = folded::lines(&rows).iter().map(|(_, c)| c).sum();
    assert_eq!(folded, n);
    assert!(folded::lines(&rows)
        .iter()
        .any(|(s, _)| s == "attr_main;attr_main;main_hot"));

    // speedscope: the weights are the periods (nanoseconds of cpu-clock),
    // one profile per thread, each named by its thread and event.
    let doc = speedscope::document(&rows, "fixture", &l.data.config);
    let doc: serde_json::Value = serde_json::from_str(&doc.to_string()).unwrap();
    let profiles = doc["profiles"].as_array().unwrap();
    let total: u64 = profiles
        .iter()
        .flat_map(|p| p["weights"].as_array().unwrap().iter())
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert_eq!(total, period);
    let mut threads: Vec<(u32, u32, &str)> =
        rows.iter().map(|r| (r.pid, r.tid, &*r.comm)).collect();
    threads.sort();
    threads.dedup();
    assert_eq!(profiles.len(), threads.len());
    assert!(profiles.iter().all(|p| p["unit"] == "nanoseconds"));
    let main = rows.iter().find(|r| r.frame.symbol == "main_hot").unwrap();
    assert!(main.tid != 0, "the recording's rows carry their threads");
    assert_eq!(
        profiles[0]["name"],
        format!("attr_main {}/{} (cpu-clock@999)", main.pid, main.tid)
    );
}

#[test]
fn annotate_main_hot_with_source_lines() {
    let mut l = loaded();
    let a = annotate::annotate(&l.agg, &mut l.sym, &attr_main(), "main_hot");
    assert_eq!(a.len(), 1);
    let a = &a[0];
    assert_eq!(a.path, "/tests/bin/attr_main");
    assert_eq!(a.insns.iter().map(|i| i.samples).sum::<u64>(), a.samples);
    assert!(a
        .insns
        .iter()
        .all(|i| i.offset < 0x100 && !i.bytes.is_empty()));
    assert!(
        a.lines.iter().any(|(f, _, _)| f.ends_with("attr_main.c")),
        "{:?}",
        a.lines
    );
}

#[test]
fn other_or_missing_files_are_not_symbolized() {
    // Without --symfs the guest's /tests/bin does not exist here.
    let mut l = Loaded::new(data(), Some(PathBuf::from("/nonexistent/rprof-symfs")));
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &attr_main());
    assert!(
        rows[0]
            .frame
            .symbol
            .starts_with("[unknown] /tests/bin/attr_main+0x"),
        "{:?}",
        rows[0].frame
    );
    // A symfs whose attr_main is another ELF file (the library): the
    // build-id differs, so no symbol of it is shown.
    let dir = std::env::temp_dir().join(format!("rprof-mismatch-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tests/bin")).unwrap();
    let lib = fixtures().join("symfs/tests/bin/libattr_lib.so");
    std::fs::copy(&lib, dir.join("tests/bin/attr_main")).unwrap();
    std::fs::copy(&lib, dir.join("tests/bin/libattr_lib.so")).unwrap();
    let mut l = Loaded::new(data(), Some(dir.clone()));
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &attr_main());
    let lines = table::group(&rows, &table::parse_sort("sym").unwrap());
    assert_eq!(
        lines[0].values,
        ["[mismatch] /tests/bin/attr_main"],
        "{lines:?}"
    );
    assert_eq!(lines[1].values, ["lib_hot"]);
    assert!(l.sym.warnings().iter().any(|w| w.contains("build-id")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The fixture cut at 300 000 bytes, inside its KALLSYMS section (it was
/// written by the old layout, stream first): read up to there, with the
/// whole stream, and saying so.
#[test]
fn a_recording_cut_short_is_read_up_to_its_last_record() {
    let path = fixtures().join("attr_main.rprof.data");
    let bytes = std::fs::read(&path).unwrap();
    let d = DataFile::parse(&bytes[..300_000]).expect("a cut recording is readable");
    let cut = d.cut.clone().expect("the cut is reported");
    assert!(cut.reason.contains("KALLSYMS"), "{cut}");
    assert_eq!(cut.file_len, 300_000);
    let n = stream_samples(&d);
    let mut l = Loaded::new(d, Some(fixtures().join("symfs")));
    assert_eq!(l.agg.samples, n);
    let line = l.cut_line().unwrap();
    assert!(line.contains(&format!("{n} samples")), "{line}");
    assert!(line.contains("without kernel symbols"), "{line}");
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &attr_main());
    assert_eq!(rows[0].frame.symbol, "main_hot");
}

/// A recording whose writer died in the middle of the stream (the file
/// as `rprof record` leaves it on SIGKILL): the records up to the last
/// whole one, and kernel symbols, which come before the stream.
#[test]
fn a_recording_killed_mid_stream_keeps_its_kernel_symbols() {
    let d = data();
    let path = std::env::temp_dir().join(format!("rprof-killed-{}.data", std::process::id()));
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = rprof_data::Writer::new(file, &d.config, &d.kallsyms, &d.modules).unwrap();
        // Half of the stream, cut inside a record.
        let half = d.stream.len() / 2 + 3;
        for chunk in d.stream[..half].chunks(4096) {
            w.write_stream(chunk).unwrap();
        }
        // Dropped without finish(): no length, no META, FILES, END.
    }
    let killed = DataFile::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let cut = killed.cut.clone().unwrap();
    assert_eq!(cut.reason, "the stream was never finished");
    assert!(cut.stream_dropped > 0, "{cut}");
    assert!(d.stream.starts_with(&killed.stream));
    let n = stream_samples(&killed);
    assert!(n > 0 && n < stream_samples(&d), "{n}");
    let mut l = Loaded::new(killed, Some(fixtures().join("symfs")));
    assert!(!l.cut_line().unwrap().contains("kernel symbols"));
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());
    assert_eq!(rows.iter().map(|r| r.samples).sum::<u64>(), n);
    assert!(
        rows.iter()
            .any(|r| r.frame.dso == "[kernel.kallsyms]" && r.frame.resolved),
        "kernel samples are named"
    );
}

/// The idle CPUs' samples are in default_idle, which shares its address
/// with the section marker __cpuidle_text_start: the function is named,
/// never a marker.
#[test]
fn kernel_samples_are_named_by_functions_not_markers() {
    let mut l = loaded();
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());
    let lines = table::group(&rows, &table::parse_sort("dso,sym").unwrap());
    let kernel: Vec<_> = lines
        .iter()
        .filter(|l| l.values[0] == "[kernel.kallsyms]")
        .collect();
    assert_eq!(kernel[0].values[1], "default_idle", "{kernel:?}");
    for l in &kernel {
        assert!(
            !rprof_symbols::kallsyms::is_marker(&l.values[1]),
            "a marker named samples: {l:?}"
        );
    }
}

/// The module's own Rust symbols in the recorded kallsyms read as Rust
/// paths, and the mangled name still finds them.
#[test]
fn the_modules_rust_symbols_are_demangled() {
    let d = data();
    let k = rprof_symbols::Kallsyms::parse(&d.kallsyms);
    let mangled = d
        .kallsyms
        .lines()
        .filter(|l| l.ends_with("[rprof]") && l.split_whitespace().nth(1) == Some("t"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .find(|n| n.starts_with("_RNv") && n.contains("4ring") && n.ends_with("3popB7_"))
        .expect("Ring::pop of rprof_main in the fixture's kallsyms");
    let found = k.symbols_named(mangled);
    assert_eq!(found.len(), 1, "{mangled}");
    let (hit, module) = k.lookup(found[0].0).unwrap();
    assert_eq!(module, Some("rprof"));
    assert!(
        hit.name.starts_with("<rprof_main::ring::Ring<") && hit.name.ends_with(">>::pop"),
        "{mangled} -> {}",
        hit.name
    );
    assert!(!hit.name.starts_with("_R"), "{}", hit.name);
}

/// inferno (the Rust flamegraph.pl) draws the folded export: its root
/// holds every sample, and main_hot's box, under attr_main's, holds the
/// table's count.
#[test]
fn inferno_draws_the_folded_export() {
    let mut l = loaded();
    let n = stream_samples(&l.data);
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());
    let mut text = Vec::new();
    folded::write(&mut text, &rows).unwrap();
    let text = String::from_utf8(text).unwrap();
    let mut svg = Vec::new();
    let mut opts = inferno::flamegraph::Options::default();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    // "<title>NAME (N samples, P%)</title>", N with thousands separators.
    let titles: Vec<(String, u64)> = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| {
            let t = t.split("</title>").next()?;
            let (name, rest) = t.rsplit_once(" (")?;
            let count: String = rest
                .split(' ')
                .next()?
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            Some((name.to_string(), count.parse().ok()?))
        })
        .collect();
    assert!(titles.contains(&("all".to_string(), n)), "{titles:?}");
    let lines = table::group(&rows, &table::parse_sort("comm,dso,sym").unwrap());
    let main_hot = lines
        .iter()
        .find(|l| l.values == ["attr_main", "attr_main", "main_hot"])
        .unwrap();
    assert!(
        titles.contains(&("main_hot".to_string(), main_hot.samples)),
        "{titles:?}"
    );
    let attr_main: u64 = lines
        .iter()
        .filter(|l| l.values[0] == "attr_main")
        .map(|l| l.samples)
        .sum();
    assert!(
        titles.contains(&("attr_main".to_string(), attr_main)),
        "{titles:?}"
    );
}

/// A symfs is the recorded machine's root, and nothing outside it is read:
/// a symlink out of it (relative, or absolute to the real file) does not
/// symbolize, an absolute one is resolved inside it as in a sysroot.  A
/// stripped copy of attr_main gets its functions and lines back from its
/// debug file in the symfs's build-id tree, as a `-dbgsym` package ships
/// it.
#[test]
fn symfs_stays_inside_and_finds_debug_files() {
    use std::os::unix::fs::symlink;
    use std::process::Command;
    let real = fixtures().join("symfs/tests/bin");
    let real = real.canonicalize().unwrap();
    let base = std::env::temp_dir().join(format!("rprof-symfs-esc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let symfs = base.join("symfs");
    std::fs::create_dir_all(symfs.join("tests/bin")).unwrap();
    std::fs::copy(
        real.join("libattr_lib.so"),
        symfs.join("tests/bin/libattr_lib.so"),
    )
    .unwrap();
    let main_hot = |l: &mut Loaded| {
        let rows = rprof_report::rows(&l.agg, &mut l.sym, &attr_main());
        let lines = table::group(&rows, &table::parse_sort("sym").unwrap());
        lines[0].values[0].clone()
    };
    let dots = "../".repeat(real.components().count() + 2);
    for target in [
        // Relative, out of the symfs to the real attr_main.
        PathBuf::from(format!("{dots}{}", real.join("attr_main").display())),
        // Absolute: resolved inside the symfs, where nothing is.
        real.join("attr_main"),
    ] {
        let link = symfs.join("tests/bin/attr_main");
        let _ = std::fs::remove_file(&link);
        symlink(&target, &link).unwrap();
        let mut l = Loaded::new(data(), Some(symfs.clone()));
        let top = main_hot(&mut l);
        assert!(
            top.starts_with("[unknown] /tests/bin/attr_main+0x"),
            "{target:?} gave {top}"
        );
    }
    // An absolute symlink to a path inside the symfs is followed there.
    std::fs::create_dir_all(symfs.join("opt")).unwrap();
    std::fs::copy(real.join("attr_main"), symfs.join("opt/attr_main")).unwrap();
    let link = symfs.join("tests/bin/attr_main");
    std::fs::remove_file(&link).unwrap();
    symlink("/opt/attr_main", &link).unwrap();
    assert_eq!(
        main_hot(&mut Loaded::new(data(), Some(symfs.clone()))),
        "main_hot"
    );

    // Stripped, with the debug file in the build-id tree.
    std::fs::remove_file(&link).unwrap();
    std::fs::copy(real.join("attr_main"), &link).unwrap();
    let id = data()
        .files
        .iter()
        .find(|f| f.path == "/tests/bin/attr_main")
        .unwrap()
        .build_id
        .clone();
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let tree = symfs.join(format!("usr/lib/debug/.build-id/{}", &hex[..2]));
    std::fs::create_dir_all(&tree).unwrap();
    let debug = tree.join(format!("{}.debug", &hex[2..]));
    assert!(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&link)
        .arg(&debug)
        .status()
        .unwrap()
        .success());
    assert!(Command::new("strip")
        .arg("--strip-all")
        .arg(&link)
        .status()
        .unwrap()
        .success());
    std::fs::remove_dir_all(symfs.join("usr/lib/debug")).unwrap();
    let top = main_hot(&mut Loaded::new(data(), Some(symfs.clone())));
    assert!(
        top.starts_with("[unknown] "),
        "stripped attr_main named {top} without its debug file"
    );
    std::fs::create_dir_all(&tree).unwrap();
    assert!(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(real.join("attr_main"))
        .arg(&debug)
        .status()
        .unwrap()
        .success());
    let mut l = Loaded::new(data(), Some(symfs.clone()));
    assert_eq!(main_hot(&mut l), "main_hot");
    let a = annotate::annotate(&l.agg, &mut l.sym, &attr_main(), "main_hot");
    assert!(!a[0].insns.is_empty() && a[0].insns.iter().all(|i| !i.bytes.is_empty()));
    assert!(
        a[0].lines
            .iter()
            .any(|(f, _, _)| f.ends_with("attr_main.c")),
        "{:?}",
        a[0].lines
    );
    std::fs::remove_dir_all(&base).unwrap();
}

/// `--cpu`, `--tid` and `--time` split the recording: the parts add up
/// to the whole, and each part is what the stream says (counted here
/// from the decoded records, not by the report code).
#[test]
fn cpu_tid_and_time_filters_split_the_recording() {
    use rprof_decode::Resolver;
    use rprof_report::TimeRange;
    let d = data();
    let mut per_cpu = std::collections::BTreeMap::<u32, u64>::new();
    let mut per_tid = std::collections::BTreeMap::<u32, u64>::new();
    let mut times = Vec::new();
    let mut resolver = Resolver::new();
    for r in Decoder::new(&d.stream) {
        if let Some(s) = resolver.feed(&r.unwrap()) {
            *per_cpu.entry(s.cpu().unwrap()).or_default() += 1;
            *per_tid.entry(s.tid().unwrap()).or_default() += 1;
            times.push(s.time_ns);
        }
    }
    times.sort_unstable();
    let total = times.len() as u64;
    let counted = |f: Filter| {
        let l = Loaded::filtered(data(), None, &f);
        assert_eq!(l.agg.samples + l.agg.filtered_out, total);
        l.agg.samples
    };
    assert!(per_cpu.len() >= 2, "{per_cpu:?}");
    for (cpu, n) in &per_cpu {
        assert_eq!(
            counted(Filter {
                cpus: vec![*cpu],
                ..Filter::default()
            }),
            *n,
            "cpu {cpu}"
        );
    }
    let (busiest, n) = per_tid
        .iter()
        .filter(|(t, _)| **t != 0)
        .max_by_key(|(_, n)| **n)
        .unwrap();
    assert_eq!(
        counted(Filter {
            tids: vec![*busiest],
            ..Filter::default()
        }),
        *n
    );
    let mid = times[times.len() / 2];
    let before = counted(Filter {
        time: Some(TimeRange {
            start: None,
            end: Some(mid),
        }),
        ..Filter::default()
    });
    let after = counted(Filter {
        time: Some(TimeRange {
            start: Some(mid),
            end: None,
        }),
        ..Filter::default()
    });
    assert_eq!(before + after, total);
    assert_eq!(before, times.iter().filter(|t| **t < mid).count() as u64);
}

//! The exports read by the tools they are for, not by our own decoders:
//! `go tool pprof` (Debian's golang-go, installed by scripts/deps.sh) for
//! pprof, with GNU addr2line (binutils) to check the addresses it shows;
//! speedscope's JSON schema, as its npm package publishes it (installed
//! into the cache by scripts/deps.sh), checked with Debian's
//! python3-jsonschema.

// Helpers of tests: a panic there is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rprof_data::DataFile;
use rprof_decode::{Decoder, Record};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{fixture, rprof, symfs};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rprof-consumers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn export_pprof(data: &Path, out: &Path) {
    rprof(&[
        "export",
        "-f",
        "pprof",
        "-i",
        &data.to_string_lossy(),
        "--symfs",
        &symfs().to_string_lossy(),
        "-o",
        &out.to_string_lossy(),
    ]);
}

/// `go tool pprof ARGS FILE`: its stdout.  Its stderr (notes about
/// binaries it cannot find to symbolize the mappings we left
/// unsymbolized) is not checked.
fn go_pprof(args: &[&str], file: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .output()
        .unwrap_or_else(|e| {
            panic!("go tool pprof: {e} (scripts/deps.sh installs Debian's golang-go)")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A section of `pprof -raw` output: the lines after the one that is
/// `title`, up to the next line that starts in column 0.
fn raw_section<'a>(raw: &'a str, title: &str) -> Vec<&'a str> {
    raw.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect()
}

/// `flat` per function of `pprof -top`.
fn top_flat(top: &str) -> HashMap<String, f64> {
    let mut flat = HashMap::new();
    for line in top.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() >= 6 && parts[1].ends_with('%') {
            let n: String = parts[0]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if let Ok(v) = n.parse::<f64>() {
                flat.insert(parts[5..].join(" "), v);
            }
        }
    }
    flat
}

/// What `pprof -top` says after "Total samples = ".
fn total_samples(top: &str) -> String {
    top.split("Total samples = ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("")
        .to_string()
}

/// The function GNU addr2line names at `vaddr` of the ELF file `elf`.
fn addr2line(elf: &Path, vaddr: u64) -> String {
    let out = Command::new("addr2line")
        .args(["-f", "-e"])
        .arg(elf)
        .arg(format!("{vaddr:#x}"))
        .output()
        .expect("addr2line (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// go tool pprof reads the export: the sample types, the period of a
/// 999 Hz clock, the total, main_hot and lib_hot 3:1; and every address
/// it shows in the two programs' mappings is, by the mapping's start and
/// file offset, an address where binutils finds the function the profile
/// names (and not always the function's first byte).
#[test]
fn go_tool_pprof_reads_the_pprof_export() {
    let pb = tmp("fixture.pb.gz");
    export_pprof(&fixture(), &pb);
    let raw = go_pprof(&["-raw"], &pb);
    assert!(
        raw.contains("PeriodType: cpu nanoseconds\nPeriod: 1001001\n"),
        "{raw}"
    );
    assert!(raw.contains("samples/count cpu/nanoseconds"), "{raw}");

    // Mappings: "1: 0x1000/0x1509/0x1000 /tests/bin/attr_main BUILDID [FN][FL][LN]".
    let mut mappings: HashMap<u64, (u64, u64, u64, String, String)> = HashMap::new();
    for l in raw_section(&raw, "Mappings") {
        let parts: Vec<&str> = l.split_whitespace().collect();
        let id: u64 = parts[0].trim_end_matches(':').parse().unwrap();
        let r: Vec<u64> = parts[1]
            .split('/')
            .map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
            .collect();
        mappings.insert(id, (r[0], r[1], r[2], parts[2].to_string(), l.to_string()));
    }
    let exe = mappings
        .values()
        .find(|m| m.3 == "/tests/bin/attr_main")
        .expect("attr_main mapping");
    assert!(
        exe.4
            .contains("9d0428724358160a3a1cd4a445393f17d5b5f8f5 [FN][FL][LN]"),
        "{}",
        exe.4
    );
    assert_eq!(
        mappings[&1].3, "/tests/bin/attr_main",
        "the main binary is mapping 1"
    );

    // Locations: "77: 0x12b3 M=1 main_hot /path/attr_main.c:33 s=29".
    let mut checked = 0;
    let mut inside = 0;
    for l in raw_section(&raw, "Locations") {
        let parts: Vec<&str> = l.split_whitespace().collect();
        let Some(m) = parts.get(2).and_then(|p| p.strip_prefix("M=")) else {
            continue;
        };
        let (start, limit, offset, path, _) = &mappings[&m.parse::<u64>().unwrap()];
        let addr = u64::from_str_radix(parts[1].trim_start_matches("0x"), 16).unwrap();
        assert!(*start <= addr && addr < *limit, "{l} outside its mapping");
        if !path.starts_with("/tests/bin/") {
            continue;
        }
        let elf = symfs().join(path.trim_start_matches('/'));
        // These PIEs map their text at its file offset's address.
        let vaddr = addr - start + offset;
        let name = parts[3];
        assert_eq!(addr2line(&elf, vaddr), name, "{l}");
        if name == "main_hot" {
            assert!(
                parts[4].contains("attr_main.c:"),
                "source file and line: {l}"
            );
        }
        checked += 1;
        // The byte before is in the same function: not its first byte.
        if addr2line(&elf, vaddr - 1) == name {
            inside += 1;
        }
    }
    assert!(
        checked >= 4,
        "only {checked} locations in the programs\n{raw}"
    );
    assert!(
        inside > 0,
        "every location is at its function's first byte\n{raw}"
    );

    let top = go_pprof(&["-top", "-sample_index=0"], &pb);
    let total = rprof(&["report", "-i", &fixture().to_string_lossy()])
        .lines()
        .find_map(|l| l.strip_prefix("# samples: "))
        .unwrap()
        .to_string();
    assert_eq!(total_samples(&top), total, "{top}");
    let flat = top_flat(&top);
    let ratio = flat["main_hot"] / flat["lib_hot"];
    assert!(
        (2.25..=3.75).contains(&ratio),
        "main_hot:lib_hot = {ratio}\n{top}"
    );
    assert!(flat.contains_key("default_idle"), "{top}");
}

/// The fixture made a two-event recording: every second sample becomes a
/// `cycles:100000` sample.
fn two_event_recording() -> (PathBuf, u64, u64) {
    let path = tmp("two-events.data");
    let (clock, cycles) = common::two_event_recording(&path);
    (path, clock, cycles)
}

/// Two events are two pairs of sample types in pprof, each with its own
/// total; and two tables in `rprof report`, each adding up to 100%.
#[test]
fn events_are_never_added_together() {
    let (data, clock, cycles) = two_event_recording();
    let pb = tmp("two-events.pb.gz");
    export_pprof(&data, &pb);
    let raw = go_pprof(&["-raw"], &pb);
    assert!(
        raw.contains(
            "cpu-clock_samples/count cpu-clock/nanoseconds[dflt] cycles_samples/count cycles/count"
        ),
        "{raw}"
    );
    for (index, expect) in [("cpu-clock_samples", clock), ("cycles_samples", cycles)] {
        let top = go_pprof(&["-top", &format!("-sample_index={index}")], &pb);
        assert_eq!(total_samples(&top), expect.to_string(), "{index}: {top}");
    }
    let top = go_pprof(&["-top", "-sample_index=cycles"], &pb);
    assert!(
        top.contains(&format!("of {} total", cycles * 100_000)),
        "{top}"
    );
    // The default sample type is the first event's.
    let top = go_pprof(&["-top"], &pb);
    assert!(top.contains("Type: cpu-clock\n"), "{top}");

    let report = rprof(&[
        "report",
        "-i",
        &data.to_string_lossy(),
        "--symfs",
        &symfs().to_string_lossy(),
    ]);
    assert!(
        report.contains(&format!("# event cpu-clock@999: {clock} samples\n")),
        "{report}"
    );
    assert!(
        report.contains(&format!("# event cycles:100000: {cycles} samples\n")),
        "{report}"
    );
    // Each table adds up to 100% of its own event.
    let mut sums = Vec::new();
    for table in report.split("# event ").skip(1) {
        let pct: f64 = table
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(|l| l.split('%').next().unwrap().trim().parse::<f64>().unwrap())
            .sum();
        sums.push(pct);
    }
    assert_eq!(sums.len(), 2, "{report}");
    for s in sums {
        assert!((s - 100.0).abs() < 0.5, "a table adds up to {s}%\n{report}");
    }
}

/// The schema of speedscope's file format from its npm package, where
/// scripts/deps.sh installs it (see scripts/common.sh).
fn speedscope_schema() -> PathBuf {
    let cache = match std::env::var_os("RPROF_CACHE") {
        Some(c) => PathBuf::from(c),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(x) => PathBuf::from(x).join("rprof"),
            None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/rprof"),
        },
    };
    let schema = cache
        .join("speedscope-1.25.0/node_modules/speedscope/dist/release/file-format-schema.json");
    assert!(
        schema.is_file(),
        "{} is missing: scripts/deps.sh installs it",
        schema.display()
    );
    schema
}

/// Whether Debian's python3 with jsonschema finds `doc` valid against
/// `schema`; the validator's complaint if not.
fn json_schema_check(doc: &Path, schema: &Path) -> Result<(), String> {
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
        ])
        .arg(doc)
        .arg(schema)
        .output()
        .expect("/usr/bin/python3 (scripts/deps.sh installs python3-jsonschema)");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The speedscope export is valid by speedscope's own published schema
/// (and a broken document is not: the check can fail).
#[test]
fn speedscope_export_matches_the_published_schema() {
    let schema = speedscope_schema();
    let json = tmp("fixture.speedscope.json");
    rprof(&[
        "export",
        "-f",
        "speedscope",
        "-i",
        &fixture().to_string_lossy(),
        "--symfs",
        &symfs().to_string_lossy(),
        "-o",
        &json.to_string_lossy(),
    ]);
    json_schema_check(&json, &schema).unwrap_or_else(|e| panic!("speedscope schema: {e}"));
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    doc["profiles"][0]["unit"] = "furlongs".into();
    let broken = tmp("broken.speedscope.json");
    std::fs::write(&broken, doc.to_string()).unwrap();
    assert!(
        json_schema_check(&broken, &schema).is_err(),
        "the schema check accepts anything"
    );
}

/// The fixture recording with its stream replaced by kernel samples with
/// known call chains, over five real functions of the fixture's kallsyms:
/// 30 samples in `hot` called by main -> a -> b and 10 called by
/// main -> x, as STACK records name them (return addresses 0x10 into each
/// caller).  Returns the file and the five names (hot, b, a, x, main).
fn chain_recording() -> (PathBuf, [String; 5]) {
    let mut d = DataFile::read(&fixture()).unwrap();
    // Five text symbols, each at least 0x40 bytes before the next.
    let mut text: Vec<(u64, String)> = d
        .kallsyms
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?;
            let name = f.next()?;
            (matches!(kind, "T" | "t") && f.next().is_none() && !name.contains('.'))
                .then(|| (addr, name.to_string()))
        })
        .collect();
    text.sort();
    let mut picked: Vec<(u64, String)> = Vec::new();
    for w in text.windows(2) {
        let unique = !picked.iter().any(|(_, n)| *n == w[0].1);
        if w[1].0 >= w[0].0 + 0x40 && unique && w[0].1.len() > 6 {
            picked.push(w[0].clone());
            if picked.len() == 5 {
                break;
            }
        }
    }
    assert_eq!(picked.len(), 5, "five functions in the fixture's kallsyms");
    let at = |i: usize| picked[i].0 + 0x10;
    let kernel = u64::from(rprof_abi::RPROF_COOKIE_KERNEL);
    let config = d.config;
    let mut r = vec![
        Record::Start { time_ns: 1, config },
        Record::Task {
            cpu: 0,
            pid: 7,
            tid: 7,
            exe_cookie: 0,
            comm: "work".into(),
        },
        Record::Switch { cookie: kernel },
        // hot's callers, innermost first: b, a, main; and x, main.
        Record::Stack {
            id: 1,
            flags: 0,
            nr_kernel: 3,
            frames: vec![(kernel, at(1)), (kernel, at(2)), (kernel, at(4))],
        },
        Record::Stack {
            id: 2,
            flags: 0,
            nr_kernel: 2,
            frames: vec![(kernel, at(3)), (kernel, at(4))],
        },
    ];
    for (n, stack) in [(30, 1), (10, 2)] {
        for _ in 0..n {
            r.push(Record::Sample {
                flags: 0,
                time_ns: 2,
                offset: at(0),
                period: 1_001_001,
                stack: Some(stack),
            });
        }
    }
    r.push(Record::Stop { time_ns: 3, config });
    let mut stream = Vec::new();
    for rec in &r {
        rec.encode(&mut stream);
    }
    d.stream = stream;
    // Several tests make it at once: each writes its own copy and
    // renames it into place, so that none reads another's half-written
    // file.
    static COPY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COPY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = tmp("chains.data");
    let part = tmp(&format!("chains.data.{n}"));
    std::fs::write(&part, d.to_bytes()).unwrap();
    std::fs::rename(&part, &path).unwrap();
    let names = [0, 1, 2, 3, 4].map(|i| picked[i].1.clone());
    (path, names)
}

/// Call chains reach pprof as real locations, leaf first: `go tool pprof
/// -traces` shows hot under b, a, main 30 times and under x, main 10
/// times; `-top -cum` gives main all 40 samples.  The folded export has the
/// same two stacks, root first, kernel frames marked.
#[test]
fn chains_in_pprof_and_folded() {
    let (data, [hot, b, a, x, main]) = chain_recording();
    let pb = tmp("chains.pb.gz");
    export_pprof(&data, &pb);
    let traces = go_pprof(&["-traces"], &pb);
    // Blocks between dashed lines: "VALUE LEAF" then one caller a line.
    let mut seen: HashMap<Vec<String>, String> = HashMap::new();
    for block in traces.split("-----------+") {
        // Label lines ("comm:  work") are not frames.
        let frames: Vec<&str> = block
            .lines()
            .filter(|l| {
                !l.split_whitespace()
                    .next()
                    .is_some_and(|w| w.ends_with(':'))
            })
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('-'))
            .collect();
        let names: Vec<String> = frames
            .iter()
            .filter_map(|l| l.split_whitespace().last())
            .map(str::to_string)
            .collect();
        let value = frames
            .first()
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or("")
            .to_string();
        if names.first() == Some(&hot) {
            seen.insert(names, value);
        }
    }
    let path1 = vec![hot.clone(), b.clone(), a.clone(), main.clone()];
    let path2 = vec![hot.clone(), x.clone(), main.clone()];
    assert!(seen.contains_key(&path1), "{path1:?} not in\n{traces}");
    assert!(seen.contains_key(&path2), "{path2:?} not in\n{traces}");
    // 30 and 10 samples of 1.001 ms.
    assert!(seen[&path1].starts_with("30."), "{traces}");
    assert!(seen[&path2].starts_with("10."), "{traces}");
    let top = go_pprof(&["-top", "-cum"], &pb);
    let main_line = top
        .lines()
        .find(|l| l.split_whitespace().last() == Some(main.as_str()))
        .unwrap();
    assert!(
        main_line.contains("100%"),
        "{main} should have every sample cumulatively:\n{top}"
    );

    let folded = tmp("chains.folded");
    rprof(&[
        "export",
        "--format",
        "folded",
        "-i",
        &data.to_string_lossy(),
        "-o",
        &folded.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&folded).unwrap();
    let k = |n: &str| format!("{n}_[k]");
    assert!(
        text.contains(&format!(
            "work;{};{};{};{} 30\n",
            k(&main),
            k(&a),
            k(&b),
            k(&hot)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("work;{};{};{} 10\n", k(&main), k(&x), k(&hot))),
        "{text}"
    );

    // The flame graph (inferno): every function a frame, kernel frames in
    // the Java palette's kernel orange (green = 0, as "rgb(R,G,0)").
    let svg = tmp("chains.svg");
    rprof(&[
        "flamegraph",
        "-i",
        &data.to_string_lossy(),
        "-o",
        &svg.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for n in [&hot, &b, &a, &x, &main] {
        assert!(
            text.contains(&format!("<title>{n} (")),
            "{n} not in the SVG"
        );
    }
    assert!(
        text.contains(",0)\""),
        "no kernel-coloured frame in the SVG"
    );

    // speedscope: valid by the published schema, and the two stacks root
    // first, as speedscope reads them, weighted by their periods
    // (nanoseconds of cpu-clock).
    let json = tmp("chains.speedscope.json");
    rprof(&[
        "export",
        "-f",
        "speedscope",
        "-i",
        &data.to_string_lossy(),
        "-o",
        &json.to_string_lossy(),
    ]);
    json_schema_check(&json, &speedscope_schema())
        .unwrap_or_else(|e| panic!("speedscope schema: {e}"));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let names: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let profile = &doc["profiles"][0];
    assert_eq!(profile["name"], "work 7/7 (cpu-clock@999)");
    assert_eq!(profile["unit"], "nanoseconds");
    let mut stacks: Vec<(Vec<&str>, u64)> = profile["samples"]
        .as_array()
        .unwrap()
        .iter()
        .zip(profile["weights"].as_array().unwrap())
        .map(|(s, w)| {
            let s = s
                .as_array()
                .unwrap()
                .iter()
                .map(|i| names[i.as_u64().unwrap() as usize])
                .collect();
            (s, w.as_u64().unwrap())
        })
        .collect();
    stacks.sort();
    let mut want = vec![
        (
            vec![main.as_str(), a.as_str(), b.as_str(), hot.as_str()],
            30 * 1_001_001,
        ),
        (
            vec![main.as_str(), x.as_str(), hot.as_str()],
            10 * 1_001_001,
        ),
    ];
    want.sort();
    assert_eq!(stacks, want);
}

/// `go tool pprof -tree` on the chain recording: `a`'s block has `main`
/// as its caller and `b` as its callee, `x`'s has `main` and `hot`.
#[test]
fn chains_in_pprof_tree() {
    let (data, [hot, b, a, x, main]) = chain_recording();
    let pb = tmp("chains-tree.pb.gz");
    export_pprof(&data, &pb);
    let tree = go_pprof(&["-tree"], &pb);
    // One block per function between dashed lines: callers ("|   name")
    // above the function's own line ("| name"), callees below.
    let block_of = |f: &str| -> (Vec<String>, Vec<String>) {
        for block in tree.split("+-------------") {
            let lines: Vec<&str> = block.lines().filter(|l| l.contains('|')).collect();
            let name_of = |l: &str| l.rsplit('|').next().unwrap_or("").to_string();
            let Some(own) = lines.iter().position(|l| {
                let n = name_of(l);
                n.starts_with(' ') && !n.starts_with("   ") && n.trim() == f
            }) else {
                continue;
            };
            let names = |ls: &[&str]| {
                ls.iter()
                    .map(|l| name_of(l).trim().to_string())
                    .collect::<Vec<_>>()
            };
            return (names(&lines[..own]), names(&lines[own + 1..]));
        }
        panic!("no block for {f} in\n{tree}");
    };
    assert_eq!(
        block_of(&a),
        (vec![main.clone()], vec![b.clone()]),
        "{tree}"
    );
    assert_eq!(
        block_of(&x),
        (vec![main.clone()], vec![hot.clone()]),
        "{tree}"
    );
    let (callers, callees) = block_of(&hot);
    assert!(
        callers.contains(&b) && callers.contains(&x) && callees.is_empty(),
        "{tree}"
    );
}

/// A program whose hot loop is a function inlined into another: an
/// address inside the inlined body, exported to pprof, is one location
/// with two lines, the inlined function first; `go tool pprof -traces`
/// shows both, `inner` marked inline, at the lines GNU addr2line gives.
#[test]
fn inlined_functions_in_pprof() {
    let dir = tmp("inline-symfs");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("inl.c");
    std::fs::write(
        &src,
        "volatile unsigned long sink;\n\
         static inline __attribute__((always_inline)) void inner(unsigned long n)\n\
         {\n\
         \tfor (unsigned long i = 0; i < n; i++)\n\
         \t\tsink += i * 3;\n\
         }\n\
         __attribute__((noinline)) void outer(unsigned long n)\n\
         {\n\
         \tinner(n);\n\
         \tsink ^= n;\n\
         }\n\
         int main(int argc, char **argv)\n\
         {\n\
         \touter((unsigned long)argc * 1000);\n\
         \treturn 0;\n\
         }\n",
    )
    .unwrap();
    let bin = dir.join("prog");
    let cc = Command::new("cc")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success(), "cc failed");
    // outer's range, from the symbol table.
    let nm = Command::new("nm")
        .args(["-S", "--defined-only"])
        .arg(&bin)
        .output()
        .unwrap();
    let nm = String::from_utf8_lossy(&nm.stdout).into_owned();
    let (start, size) = nm
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[3] == "outer").then(|| {
                (
                    u64::from_str_radix(f[0], 16).unwrap(),
                    u64::from_str_radix(f[1], 16).unwrap(),
                )
            })
        })
        .expect("outer in nm");
    // An address where addr2line -i says inner is inlined into outer.
    let addrs: Vec<String> = (start..start + size).map(|a| format!("{a:#x}")).collect();
    let out = Command::new("addr2line")
        .args(["-a", "-i", "-f", "-e"])
        .arg(&bin)
        .args(&addrs)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut found = None;
    for chunk in out.split("\n0x").skip(1).chain(
        out.strip_prefix("0x")
            .map(|s| s.split("\n0x").next().unwrap()),
    ) {
        let lines: Vec<&str> = chunk.lines().collect();
        // "ADDR", then function / file:line pairs, innermost first.
        if lines.len() == 5 && lines[1] == "inner" && lines[3] == "outer" {
            let line_of = |s: &str| {
                s.rsplit(':')
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_string()
            };
            found = Some((
                u64::from_str_radix(lines[0].trim_start_matches("0x"), 16).unwrap(),
                line_of(lines[2]),
                line_of(lines[4]),
            ));
            break;
        }
    }
    let (vaddr, inner_line, outer_line) =
        found.unwrap_or_else(|| panic!("no inlined address in outer:\n{out}"));
    // The file offset of that address: its PT_LOAD (readelf -lW).
    let re = Command::new("readelf")
        .args(["-lW"])
        .arg(&bin)
        .output()
        .unwrap();
    let re = String::from_utf8_lossy(&re.stdout).into_owned();
    let offset = re
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD"))
        .find_map(|l| {
            let f: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .take(5)
                .map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
                .collect();
            let (off, va, memsz) = (f[0], f[1], f[4]);
            (vaddr >= va && vaddr < va + memsz).then(|| vaddr - va + off)
        })
        .expect("a PT_LOAD holds the address");

    let mut d = DataFile::read(&fixture()).unwrap();
    let config = d.config;
    let mut r = vec![
        Record::Start { time_ns: 1, config },
        Record::Task {
            cpu: 0,
            pid: 9,
            tid: 9,
            exe_cookie: 0,
            comm: "prog".into(),
        },
        Record::Cookie {
            cookie: 77,
            flags: 0,
            dev: 0,
            ino: 0,
            path: "/prog".into(),
        },
        Record::Switch { cookie: 77 },
    ];
    for _ in 0..5 {
        let flags = rprof_abi::RPROF_SAMPLE_USER as u16;
        r.push(Record::Sample {
            flags,
            time_ns: 2,
            offset,
            period: 1_000_000,
            stack: None,
        });
    }
    r.push(Record::Stop { time_ns: 3, config });
    let mut stream = Vec::new();
    for rec in &r {
        rec.encode(&mut stream);
    }
    d.stream = stream;
    let data = tmp("inline.data");
    std::fs::write(&data, d.to_bytes()).unwrap();
    let pb = tmp("inline.pb.gz");
    rprof(&[
        "export",
        "-f",
        "pprof",
        "-i",
        &data.to_string_lossy(),
        "--symfs",
        &dir.to_string_lossy(),
        "-o",
        &pb.to_string_lossy(),
    ]);
    let traces = go_pprof(&["-traces", "-lines"], &pb);
    let inner_at = traces
        .lines()
        .find(|l| l.contains(" inner "))
        .unwrap_or_else(|| panic!("no inner in\n{traces}"));
    assert!(
        inner_at.contains("(inline)"),
        "inner not marked inline:\n{traces}"
    );
    assert!(
        inner_at.contains(&format!("inl.c:{inner_line}")),
        "inner not at line {inner_line}:\n{traces}"
    );
    let below = traces
        .lines()
        .skip_while(|l| !l.contains(" inner "))
        .nth(1)
        .unwrap_or("");
    assert!(
        below.contains(" outer ") && below.contains(&format!("inl.c:{outer_line}")),
        "outer at {outer_line} not under inner:\n{traces}"
    );
    // rprof script shows the inline chain too, as perf script does: the
    // inlined function above the one that holds the code, at the same
    // offset.
    let script = rprof(&[
        "script",
        "-i",
        &data.to_string_lossy(),
        "--symfs",
        &dir.to_string_lossy(),
    ]);
    let block: Vec<&str> = script
        .split("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .skip(1)
        .map(str::trim)
        .collect();
    assert_eq!(
        block,
        [
            format!("{offset:x} inner (inlined)"),
            format!("{offset:x} outer (/prog)")
        ],
        "{script}"
    );
    // --no-inline leaves it out, as perf script's.
    let plain = rprof(&[
        "script",
        "--no-inline",
        "-i",
        &data.to_string_lossy(),
        "--symfs",
        &dir.to_string_lossy(),
    ]);
    assert!(!plain.contains("(inlined)"), "{plain}");
}

/// The daemon's profiles carry the call chains: interval one's samples
/// arrive with their STACK records, interval two's name the same stacks
/// without them (the kernel interns a chain once a session); both
/// profiles, read by `go tool pprof -traces`, have the 4-frame stack 30
/// times and the 3-frame one 10 times.
#[test]
fn daemon_profiles_carry_chains() {
    use rprof::session::Sink;
    let (data, _) = chain_recording();
    let d = DataFile::read(&data).unwrap();
    let mut records = Vec::new();
    Decoder::new(&d.stream).for_each(|r| records.push(r.unwrap()));
    let samples: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r, Record::Sample { .. }))
        .collect();
    let encode = |rs: &[&Record]| {
        let mut out = Vec::new();
        for r in rs {
            r.encode(&mut out);
        }
        out
    };
    let dir = tmp("daemon-chains");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut sink = rprof::live::AggregateSink::new();
    // Interval one: the whole recording but its STOP.
    let first: Vec<&Record> = records
        .iter()
        .filter(|r| !matches!(r, Record::Stop { .. }))
        .collect();
    sink.feed(&encode(&first)).unwrap();
    let interval = |seq| rprof::daemon::Interval {
        seq,
        start: std::time::Duration::from_secs(1 + seq),
        length: std::time::Duration::from_secs(1),
    };
    let mut sym = rprof::live::symbolizer();
    let one = rprof::daemon::write_profile(&dir, interval(0), &sink.agg, &d.config, &mut sym, 10)
        .unwrap();
    sink.agg.clear_counts();
    // Interval two: the same samples again, no STACK, TASK or SWITCH.
    sink.feed(&encode(&samples)).unwrap();
    let two = rprof::daemon::write_profile(&dir, interval(1), &sink.agg, &d.config, &mut sym, 10)
        .unwrap();
    for pb in [one, two] {
        let traces = go_pprof(&["-traces"], &pb);
        let mut depths: Vec<(usize, String)> = traces
            .split("-----------+")
            // The header before the first block is not a trace.
            .skip(1)
            .filter_map(|block| {
                let frames: Vec<&str> = block
                    .lines()
                    .filter(|l| {
                        !l.split_whitespace()
                            .next()
                            .is_some_and(|w| w.ends_with(':'))
                    })
                    .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('-'))
                    .collect();
                let value = frames.first()?.split_whitespace().next()?.to_string();
                Some((frames.len(), value))
            })
            .collect();
        depths.sort();
        assert_eq!(depths.len(), 2, "{}:\n{traces}", pb.display());
        assert!(
            depths[0].0 == 3 && depths[0].1.starts_with("10"),
            "{}:\n{traces}",
            pb.display()
        );
        assert!(
            depths[1].0 == 4 && depths[1].1.starts_with("30"),
            "{}:\n{traces}",
            pb.display()
        );
    }
}

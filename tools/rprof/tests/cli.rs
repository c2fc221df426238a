//! The `rprof` command on the host: report, export and annotate of the
//! recorded fixture (tests/fixtures/), and the errors that need no module.

// Helpers of tests: a panic there is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn rprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rprof"))
        .args(args)
        .output()
        .expect("run rprof")
}

fn data() -> String {
    fixtures()
        .join("attr_main.rprof.data")
        .to_string_lossy()
        .into_owned()
}

fn symfs() -> String {
    fixtures().join("symfs").to_string_lossy().into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rprof-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn report_of_the_fixture() {
    let out = rprof(&[
        "report",
        "-i",
        &data(),
        "--symfs",
        &symfs(),
        "--stdio",
        "--comm",
        "attr_main",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ")).collect();
    let fields = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        fields(rows[0])[2..],
        ["attr_main", "attr_main", "[.]", "main_hot"],
        "{stdout}"
    );
    assert_eq!(
        fields(rows[1])[2..],
        ["attr_main", "libattr_lib.so", "[.]", "lib_hot"],
        "{stdout}"
    );
    assert!(
        stdout.contains("# events: cpu-clock@999; command: /tests/bin/attr_main 2 (pid "),
        "{stdout}"
    );
    assert!(stdout.contains("\n# lost: "), "{stdout}");
    // --sort pid,comm and --percent-limit.
    let out = rprof(&[
        "report",
        "-i",
        &data(),
        "--sort",
        "pid,comm",
        "--percent-limit",
        "10",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("Pid  Command"), "{stdout}");
    assert!(stdout.contains("more lines under 10%"), "{stdout}");
}

/// `rprof script`: one block per sample, as many as the report counts,
/// attr_main's with main_hot among them; `| head` is no error.
#[test]
fn script_of_the_fixture() {
    let report = rprof(&["report", "-i", &data(), "--comm", "attr_main", "--stdio"]);
    let report = text(&report.stdout);
    let samples: u64 = report
        .lines()
        .find_map(|l| l.strip_prefix("# shown: "))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .expect("the report's sample count");
    let out = rprof(&[
        "script",
        "-i",
        &data(),
        "--symfs",
        &symfs(),
        "--comm",
        "attr_main",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let blocks: Vec<&str> = stdout.split("\n\n").filter(|b| !b.is_empty()).collect();
    assert_eq!(blocks.len() as u64, samples, "{report}");
    assert!(blocks
        .iter()
        .all(|b| b.trim_start().starts_with("attr_main ")));
    assert!(
        blocks
            .iter()
            .any(|b| b.contains(" main_hot (/tests/bin/attr_main)")),
        "{}",
        blocks[0]
    );
    // A reader that stops early.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rprof"))
        .args(["script", "-i", &data()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn exports_of_the_fixture() {
    for (format, file) in [
        ("pprof", "p.pb.gz"),
        ("folded", "f.txt"),
        ("speedscope", "s.json"),
    ] {
        let path = tmp(file);
        let p = path.to_string_lossy();
        let out = rprof(&[
            "export",
            "--format",
            format,
            "-i",
            &data(),
            "--symfs",
            &symfs(),
            "-o",
            &p,
        ]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        let bytes = std::fs::read(&path).unwrap();
        match format {
            "pprof" => {
                let p = rprof_report::pprof::read(&bytes).unwrap();
                assert!(p.string_table.iter().any(|f| f == "main_hot"));
            }
            "folded" => assert!(text(&bytes).contains("attr_main;attr_main;main_hot ")),
            _ => {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(v["profiles"][0]["type"], "sampled");
            }
        }
    }
}

#[test]
fn annotate_of_the_fixture() {
    let out = rprof(&["annotate", "main_hot", "-i", &data(), "--symfs", &symfs()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("# main_hot in /tests/bin/attr_main (build-id "),
        "{stdout}"
    );
    assert!(stdout.contains("attr_main.c:"), "{stdout}");
    let out = rprof(&["annotate", "no_such_function", "-i", &data()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).lines().count(), 1);
}

#[test]
fn errors_are_one_line_and_exit_1() {
    let garbage = tmp("garbage");
    std::fs::write(&garbage, b"not a recording at all").unwrap();
    let g = garbage.to_string_lossy();
    let missing = tmp("missing.data");
    let m = missing.to_string_lossy();
    for (argv, expect) in [
        (
            vec!["report", "-i", &*g],
            "not a valid rprof.data file: at byte 0",
        ),
        (vec!["report", "-i", &*m], "No such file"),
        (
            vec!["export", "--format", "folded", "-i", &*g, "-o", "-"],
            "not a valid",
        ),
        (
            vec![
                "--device",
                "/nonexistent/rprof",
                "record",
                "-o",
                &*m,
                "-d",
                "1",
            ],
            "is the rprof module loaded?",
        ),
        (
            vec!["--device", "/nonexistent/rprof", "top", "-n", "1"],
            "is the rprof module loaded?",
        ),
        (
            vec!["--device", "/nonexistent/rprof", "daemon", "--dir", &*m],
            "is the rprof module loaded?",
        ),
    ] {
        let out = rprof(&argv);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{argv:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{argv:?}: {stderr}");
        assert!(
            stderr.starts_with("rprof: ") && stderr.contains(expect),
            "{argv:?}: {stderr}"
        );
    }
    assert!(!missing.exists(), "a failed record must not leave a file");
}

/// An interrupted recording (here: the fixture cut at 300 000 bytes) is
/// reported up to its last complete record, with one warning line on
/// stderr that says so.
#[test]
fn a_recording_cut_short_is_reported() {
    let bytes = std::fs::read(data()).unwrap();
    let cut = tmp("cut.data");
    std::fs::write(&cut, &bytes[..300_000]).unwrap();
    let c = cut.to_string_lossy();
    let out = rprof(&[
        "report",
        "-i",
        &c,
        "--symfs",
        &symfs(),
        "--comm",
        "attr_main",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("rprof: warning: {c}: incomplete recording")),
        "{stderr}"
    );
    assert!(
        stderr.contains("read up to byte 149910 of 300000"),
        "{stderr}"
    );
    assert!(
        stdout.contains("# warning: incomplete recording"),
        "{stdout}"
    );
    assert!(stdout.contains("main_hot"), "{stdout}");
    // A missing file whose .partial exists points at it.
    let gone = tmp("gone.data");
    std::fs::rename(&cut, tmp("gone.data.partial")).unwrap();
    let out = rprof(&["report", "-i", &gone.to_string_lossy()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("gone.data.partial is there, an interrupted recording"),
        "{stderr}"
    );
}

/// Command lines that make no sense exit with 2 and one line, before any
/// device is opened.
#[test]
fn usage_errors_exit_2() {
    let nine: Vec<&str> = ["-e", "cpu-clock"].repeat(9);
    let mut too_many = vec!["--device", "/nonexistent/rprof", "record", "-d", "1"];
    too_many.extend(&nine);
    for argv in [
        vec![
            "--device",
            "/nonexistent/rprof",
            "record",
            "-p",
            "3",
            "--",
            "/bin/true",
        ],
        too_many,
        // perf's modifiers apply to the whole session: they must agree.
        vec![
            "--device",
            "/nonexistent/rprof",
            "record",
            "-e",
            "cycles:u",
            "-e",
            "cpu-clock",
            "-d",
            "1",
        ],
    ] {
        let out = rprof(&argv);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{argv:?}: {stderr}");
        assert!(stderr.starts_with("rprof: "), "{stderr}");
        assert!(stderr.contains("(see --help)"), "{stderr}");
    }
}

#[test]
fn help_everywhere() {
    for sub in [
        "record", "report", "annotate", "script", "export", "top", "daemon", "stat", "dump",
        "version",
    ] {
        let out = rprof(&[sub, "--help"]);
        assert!(out.status.success(), "{sub}");
        assert!(text(&out.stdout).contains("Usage: rprof"), "{sub}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_rprofd"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("--interval"));
    let out = rprof(&["report", "--sort", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}

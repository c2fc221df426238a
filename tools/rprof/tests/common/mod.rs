//! What the integration tests share: the recorded fixture, the `rprof`
//! binary, and a two-event recording made from the fixture.

// Each test file uses its own part of this.
#![allow(dead_code)]

use rprof_data::DataFile;
use rprof_decode::{Decoder, Record};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The recording of `attr_main 2` (tests/fixtures/README.md).
pub fn fixture() -> PathBuf {
    fixtures().join("attr_main.rprof.data")
}

/// The fixture's files (`--symfs`).
pub fn symfs() -> PathBuf {
    fixtures().join("symfs")
}

/// `rprof ARGS`, which must succeed; its stdout.
pub fn rprof(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rprof"))
        .args(args)
        .output()
        .expect("run rprof");
    assert!(
        out.status.success(),
        "rprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The fixture as a two-event recording, written to `path`: every other
/// sample becomes one of cycles every 100000 (event 1).  Returns how many
/// samples each event has: (cpu-clock, cycles).
pub fn two_event_recording(path: &Path) -> (u64, u64) {
    let mut d = DataFile::read(&fixture()).unwrap();
    d.config.nr_events = 2;
    d.config.events[1] = rprof_abi::rprof_event_config {
        kind: rprof_abi::RPROF_EVENT_CYCLES,
        flags: 0,
        period: 100_000,
    };
    let mut stream = Vec::new();
    let (mut clock, mut cycles) = (0, 0);
    for r in Decoder::new(&d.stream) {
        let mut r = r.unwrap();
        if let Record::Sample { flags, period, .. } = &mut r {
            if (clock + cycles) % 2 == 1 {
                *flags |= 1 << rprof_abi::RPROF_SAMPLE_EVENT_SHIFT;
                *period = 100_000;
                cycles += 1;
            } else {
                clock += 1;
            }
        }
        r.encode(&mut stream);
    }
    d.stream = stream;
    std::fs::write(path, d.to_bytes()).unwrap();
    (clock, cycles)
}

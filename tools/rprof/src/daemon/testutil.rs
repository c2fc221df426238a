//! Helpers shared by the daemon's unit tests.

use super::args::DaemonArgs;
use std::path::Path;

/// Daemon options for a test, profiles into `dir` (made afresh), each
/// `interval` seconds long.
pub(super) fn test_args(dir: &Path, interval: &str) -> DaemonArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        d: DaemonArgs,
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    Cli::parse_from(["d", "--dir", dir.to_str().unwrap(), "--interval", interval]).d
}

/// The stream of a session configured with `config` that STARTed at
/// `start`, with a kernel sample at each of `samples`.
pub(super) fn stream(config: rprof_abi::rprof_config, start: u64, samples: &[u64]) -> Vec<u8> {
    use rprof_decode::Record;
    let mut r = vec![
        Record::Start {
            time_ns: start,
            config,
        },
        Record::Task {
            cpu: 0,
            pid: 0,
            tid: 0,
            exe_cookie: 0,
            comm: "swapper/0".into(),
        },
    ];
    r.extend(samples.iter().map(|&t| Record::Sample {
        flags: 0,
        time_ns: t,
        offset: 0xffffffff81000000,
        period: 1,
        stack: None,
    }));
    let mut bytes = Vec::new();
    for rec in &r {
        rec.encode(&mut bytes);
    }
    bytes
}

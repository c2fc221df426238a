//! `rprofd`: rprof's continuous profiler, the same as `rprof daemon`.
//!
//! ```text
//! rprofd --dir /var/lib/rprof [--interval 60] [--keep 10] [-e EVENT]...
//!        [--listen 127.0.0.1:6060]
//! ```
//!
//! `--listen` also serves `/debug/pprof/profile?seconds=N` and
//! `/metrics` over HTTP (see `rprof::daemon`).
//!
//! SIGHUP starts a new module session at once (the files the old one
//! pinned are let go once its profiles are written).
//!
//! Exit status: 0 after a clean stop (SIGTERM/SIGINT, or the end of the
//! process of `--pid`), 1 on a runtime error (one `rprof: ...` line on
//! stderr; what was read is written first), 2 on a usage error.

use clap::Parser;
use rprof::daemon::{self, DaemonArgs};
use std::path::PathBuf;
use std::process::ExitCode;

/// rprofd: continuous system-wide profiling into rotating pprof files.
#[derive(Debug, Parser)]
#[command(name = "rprofd", version)]
struct Cli {
    /// The rprof device node.
    #[arg(long, default_value = rprof::device::DEFAULT_PATH, value_name = "PATH")]
    device: PathBuf,

    #[command(flatten)]
    args: DaemonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    rprof::error::exit_code(daemon::run(&cli.device, &cli.args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "rprofd",
            "--dir",
            "/tmp/p",
            "--interval",
            "2",
            "--keep",
            "3",
        ])
        .unwrap();
        assert_eq!(cli.args.keep, 3);
        assert!(
            Cli::try_parse_from(["rprofd"]).is_err(),
            "--dir is required"
        );
    }
}

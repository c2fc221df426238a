//! `rprof-e2e`: checks of `/dev/rprof` for the end-to-end test scripts.
//!
//! Runs as root inside the busybox test VM.  Every subcommand checks one
//! behaviour of the module and prints one line: `ok: ...` and exit status 0
//! when it saw what it expected, `FAIL: expected ..., got ...` and exit
//! status 1 otherwise (2 is a usage error).
//!
//! ```text
//! rprof-e2e open-as-uid UID [--expect-ok]   open after dropping root
//! rprof-e2e run-as-uid UID CMD...           execute CMD after dropping root
//! rprof-e2e read-semantics                  read(): EAGAIN, EBUSY, EINVAL, EOF
//! rprof-e2e version                         GET_VERSION == RPROF_ABI_VERSION
//! rprof-e2e ioctl-unknown                   unknown requests give ENOTTY
//! rprof-e2e bad-config KIND                 a bad SET_CONFIG is refused
//! rprof-e2e start-fails [EVENT]             START of an unsupported event
//! rprof-e2e hold SECONDS                    keep the device open
//! rprof-e2e same-stream                     mmap peek == read() stream
//! rprof-e2e mmap-hardening                  the mapping rules hold
//! rprof-e2e lost-invariant < SUMMARY.json   loss accounting adds up
//! rprof-e2e json PATH < DOC.json            print one value (no `ok:`)
//! rprof-e2e lookup-cookie                   LOOKUP_COOKIE agrees with the stream
//! rprof-e2e attribution RAW --bin PATH:SYMBOL... [--pid-comm COMM]
//!                                           user samples land in the right functions
//! rprof-e2e resolved-fraction RAW --comm COMM --path PATH
//!                                           COMM's samples resolve to PATH
//! rprof-e2e module-samples RAW --name NAME  a module's samples and its unload
//! rprof-e2e hostile-tail                    read() after nonsense in the control page
//! rprof-e2e epoll-reconfig                  epoll/poll/read sleepers across SET_CONFIG
//! rprof-e2e perf-beside [ROUNDS]            rprof sessions beside a perf_event user
//! rprof-e2e stats-size                      GET_STATS's size convention
//! rprof-e2e eof-after-stop [ROUNDS]         a blocked reader sees STOP before EOF
//! rprof-e2e ref-samples HZ SECONDS          the kernel's own cpu-clock sampler's count
//! rprof-e2e tick [USEC]                     the kernel's tick length (adjtimex ADJ_TICK)
//! rprof-e2e memlock                         buffers count as locked memory (EPERM past it)
//! ```
//!
//! The checks on a raw stream (`rprof dump --raw RAW`) print one JSON line
//! of figures before their `ok:`/`FAIL:` line.

mod attribution;
mod bad_config;
mod checks;
mod elf;
mod hardening;
mod hostile;
mod json;
mod lookup_cookie;
mod lost_invariant;
mod mapping;
mod memlock;
mod module_samples;
mod refrate;
mod resolved_fraction;
mod same_stream;
mod stream;

use clap::{Parser, Subcommand};
use rprof::events::EventSpec;
use std::path::PathBuf;
use std::process::ExitCode;

/// Checks of /dev/rprof for rprof's end-to-end tests (run as root).
#[derive(Debug, Parser)]
#[command(name = "rprof-e2e", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drop to UID (and GID UID, no supplementary groups), then open the
    /// device: expects EPERM.
    OpenAsUid {
        /// The user id to become.
        uid: u32,
        /// Expect the open to succeed instead.
        #[arg(long)]
        expect_ok: bool,
    },
    /// Drop to UID like open-as-uid, then execute CMD (its exit status is
    /// the result).
    RunAsUid {
        /// The user id to become.
        uid: u32,
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, required = true)]
        cmd: Vec<String>,
    },
    /// read(): EAGAIN, EBUSY for a non-owner, EINVAL for a short buffer,
    /// end of stream after STOP.
    ReadSemantics,
    /// Expects RPROF_IOC_GET_VERSION to return RPROF_ABI_VERSION.
    Version,
    /// Expects ENOTTY from an unknown request number under rprof's magic
    /// and from a request under a foreign magic.
    IoctlUnknown,
    /// Expects SET_CONFIG to refuse a bad configuration (or, for big-zero,
    /// to accept it), then checks that a good session still works.
    BadConfig {
        /// What is wrong with the configuration.
        kind: bad_config::Kind,
    },
    /// Configures EVENT (a hardware event), expects START to fail, then
    /// checks that a cpu-clock session still works.
    StartFails {
        /// The event expected not to start.
        #[arg(default_value = "cycles")]
        event: EventSpec,
    },
    /// Opens the device, prints a line, keeps it open for SECONDS (for
    /// `rmmod` while open), then checks that it still answers.
    Hold {
        /// How long to keep the device open.
        seconds: u64,
    },
    /// Leaves a running session that a forked child keeps mapped for
    /// MILLIS ms, as a SIGKILLed daemon can (`checks::orphan`).
    Orphan {
        /// How long the child keeps the mapping, in ms.
        millis: u64,
    },
    /// Runs a cpu-clock session, then expects the bytes seen through the
    /// mapping (without consuming) and those of read() to be the same
    /// records, from START to STOP.
    SameStream,
    /// Expects the mapping rules of the event buffer to hold (protections,
    /// lengths, offsets, mprotect, mremap, partial munmap, the control
    /// page's fields, fork, close under live mappings).
    MmapHardening,
    /// Reads a `rprof dump --quiet --summary-json` line from standard input
    /// and expects the loss accounting to add up, over at least one
    /// sample.
    LostInvariant {
        /// Also expect losses at this stage (ring, buffer, no_mm,
        /// no_mapping, no_cookie, mm_busy), so that exactness is tested where
        /// records were dropped; repeatable.
        #[arg(long = "require-loss", value_name = "STAGE")]
        require_loss: Vec<String>,
    },
    /// Reads one JSON value from standard input and prints the value at
    /// PATH (no `ok:` line; exit status 1 if there is none).
    Json {
        /// Dotted keys and array indices, e.g. `stats.total.samples` or
        /// `samples_per_cpu.1`.
        path: String,
    },
    /// Runs a short session and expects RPROF_IOC_LOOKUP_COOKIE to agree
    /// with the stream's COOKIE records, and its errors (EINVAL without a
    /// session, ENOENT, ENAMETOOLONG with the size needed, EBUSY for a
    /// non-owner).
    LookupCookie,
    /// Decodes a raw stream (rprof dump --raw), maps the user samples to
    /// files and ELF symbols, and expects most of them in the given files
    /// and the two symbols' counts in the given ratio.
    Attribution(attribution::Options),
    /// Decodes a raw stream and expects COMM's user samples to resolve to
    /// file PATH, with few LOST no_mm/no_mapping.
    ResolvedFraction(resolved_fraction::Options),
    /// Decodes a raw stream and expects MODULE records for module NAME,
    /// kernel samples inside its text, and its UNLOAD record.
    ModuleSamples {
        /// The raw stream file.
        raw: PathBuf,
        /// The module's name.
        #[arg(long)]
        name: String,
        /// Least number of samples in the module.
        #[arg(long, value_name = "N", default_value_t = 10)]
        min_samples: u64,
        /// The module's .ko file: with --function, most core-text samples
        /// must fall in that function, located from the file's symbols.
        #[arg(long, requires = "function")]
        ko: Option<PathBuf>,
        /// A function of the module (see --ko).
        #[arg(long, requires = "ko")]
        function: Option<String>,
    },
    /// Writes nonsense to data_tail and data_head of the control page and
    /// expects read() to refuse the bad tails with EINVAL and to ignore
    /// data_head.
    HostileTail,
    /// epoll, poll() and a blocking read() across a second SET_CONFIG: no
    /// use-after-free, and the read serves the new session.
    EpollReconfig,
    /// ROUNDS rprof sessions (with mmap) while a thread uses perf_event
    /// (mmap, an ioctl that copies to userspace, read).
    PerfBeside {
        /// Number of rprof sessions.
        #[arg(default_value_t = 5)]
        rounds: u32,
    },
    /// GET_STATS with sizes below, at and above the known one, with zero
    /// and non-zero unknown bytes.
    StatsSize,
    /// ROUNDS sessions with a reader blocked in read() while the owner
    /// stops: it must get STOP as the last record before end-of-file.
    EofAfterStop {
        /// Number of sessions.
        #[arg(default_value_t = 20)]
        rounds: u32,
    },
    /// Samples of a CPU-wide perf cpu-clock counter at HZ on every CPU over
    /// SECONDS: the yardstick of the sampling-rate checks.
    RefSamples { hz: u64, seconds: f64 },
    /// Prints the kernel's tick length in microseconds (adjtimex); with
    /// USEC, sets it first (9000 to 11000 at USER_HZ 100: CLOCK_MONOTONIC
    /// then runs up to 10% slow or fast against the TSC).  The raw
    /// system call: glibc's adjtimex() is clock_adjtime(), which a kernel
    /// without POSIX timers lacks.
    Tick { usec: Option<i64> },
    /// As uid 65534 with only CAP_PERFMON and RLIMIT_MEMLOCK 4 MiB, pins
    /// 4 MiB buffers (mapped, file closed) until SET_CONFIG says EPERM,
    /// then expects it to succeed once they are unmapped; as root
    /// (CAP_IPC_LOCK), 6 buffers of 2 MiB must all be accepted.
    Memlock,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::OpenAsUid { uid, expect_ok } => checks::open_as_uid(uid, expect_ok),
        Command::RunAsUid { uid, cmd } => checks::run_as_uid(uid, &cmd),
        Command::ReadSemantics => checks::read_semantics(),
        Command::Version => checks::version(),
        Command::IoctlUnknown => checks::ioctl_unknown(),
        Command::BadConfig { kind } => bad_config::run(kind),
        Command::StartFails { event } => checks::start_fails(event),
        Command::Hold { seconds } => return checks::hold(seconds),
        Command::Orphan { millis } => checks::orphan(millis),
        Command::SameStream => same_stream::run(),
        Command::MmapHardening => hardening::run(),
        Command::LostInvariant { require_loss } => lost_invariant::run(&require_loss),
        Command::Json { path } => return json::run(&path),
        Command::LookupCookie => lookup_cookie::run(),
        Command::Attribution(opts) => attribution::run(&opts),
        Command::ResolvedFraction(opts) => resolved_fraction::run(&opts),
        Command::ModuleSamples {
            raw,
            name,
            min_samples,
            ko,
            function,
        } => module_samples::run(
            &raw,
            &name,
            min_samples,
            ko.as_deref().zip(function.as_deref()),
        ),
        Command::HostileTail => hostile::hostile_tail(),
        Command::EpollReconfig => hostile::epoll_reconfig(),
        Command::PerfBeside { rounds } => hostile::perf_beside(rounds),
        Command::StatsSize => hostile::stats_size(),
        Command::EofAfterStop { rounds } => hostile::eof_after_stop(rounds),
        Command::RefSamples { hz, seconds } => refrate::run(hz, seconds),
        Command::Tick { usec } => checks::tick(usec),
        Command::Memlock => memlock::run(),
    };
    match outcome {
        Ok(msg) => {
            println!("ok: {msg}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            println!("FAIL: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses() {
        for argv in [
            &["rprof-e2e", "open-as-uid", "1000"][..],
            &["rprof-e2e", "open-as-uid", "1000", "--expect-ok"],
            &["rprof-e2e", "bad-config", "too-many-events"],
            &["rprof-e2e", "bad-config", "big-zero"],
            &["rprof-e2e", "start-fails"],
            &["rprof-e2e", "start-fails", "instructions"],
            &["rprof-e2e", "hold", "3"],
            &["rprof-e2e", "run-as-uid", "65534", "rprof", "version"],
            &["rprof-e2e", "same-stream"],
            &["rprof-e2e", "mmap-hardening"],
            &["rprof-e2e", "lost-invariant"],
            &["rprof-e2e", "json", "stats.total.samples"],
            &["rprof-e2e", "lookup-cookie"],
            &["rprof-e2e", "hostile-tail"],
            &["rprof-e2e", "epoll-reconfig"],
            &["rprof-e2e", "perf-beside", "3"],
            &["rprof-e2e", "stats-size"],
            &["rprof-e2e", "eof-after-stop", "5"],
            &["rprof-e2e", "memlock"],
            &[
                "rprof-e2e",
                "attribution",
                "/tmp/a.raw",
                "--bin",
                "/tests/bin/attr_main:main_hot",
                "--bin",
                "/tests/bin/libattr_lib.so:lib_hot",
                "--pid-comm",
                "attr_main",
            ],
            &[
                "rprof-e2e",
                "attribution",
                "/tmp/a.raw",
                "--bin",
                "/x:y",
                "--ratio",
                "2.5",
                "--no-check",
            ],
            &[
                "rprof-e2e",
                "resolved-fraction",
                "/tmp/s.raw",
                "--comm",
                "short",
                "--path",
                "/tests/bin/short",
                "--symbol",
                "short_hot",
                "--min-fraction",
                "0.4",
            ],
            &[
                "rprof-e2e",
                "module-samples",
                "/tmp/m.raw",
                "--name",
                "rprof_busy",
            ],
        ] {
            if let Err(e) = Cli::try_parse_from(argv) {
                panic!("{argv:?}: expected to parse, got {e}");
            }
        }
        assert!(Cli::try_parse_from(["rprof-e2e", "bad-config", "nonsense"]).is_err());
        assert!(Cli::try_parse_from(["rprof-e2e", "json"]).is_err());
        // attribution needs a --bin, and PATH:SYMBOL.
        assert!(Cli::try_parse_from(["rprof-e2e", "attribution", "/tmp/a.raw"]).is_err());
        assert!(
            Cli::try_parse_from(["rprof-e2e", "attribution", "/tmp/a.raw", "--bin", "nosym"])
                .is_err()
        );
    }
}

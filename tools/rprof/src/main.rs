//! `rprof`: the command line front end of the rprof system-wide profiler.
//!
//! ```text
//! rprof record [-e EVENT]... [-a | -p PID | -- CMD]   sample into rprof.data
//! rprof report [-i FILE] [--sort KEYS]                the top table of a recording
//! rprof annotate SYMBOL [-i FILE]                     samples inside one function
//! rprof export --format pprof|folded|speedscope -o OUT
//! rprof top [-d SECS]                                 live view of the hottest functions
//! rprof daemon --dir DIR [--interval S] [--keep N]    continuous profiling (also `rprofd`)
//! rprof stat                                          the module's statistics
//! rprof dump [options]                                run a session and print every record
//! rprof version                                       ABI versions of this program and the module
//! ```
//!
//! Exit status: 0 on success, 1 on a runtime error (printed as one
//! `rprof: ...` line on stderr), 2 on a usage error; `rprof record --
//! CMD` exits with CMD's status (128 + the signal if one killed it), as
//! `perf record` does.

mod cmd;

use clap::{Args, Parser, Subcommand};
use rprof::events::EventSpec;
use std::path::PathBuf;
use std::process::ExitCode;

/// rprof: a system-wide statistical profiler (userspace side of /dev/rprof).
#[derive(Debug, Parser)]
#[command(name = "rprof", version)]
struct Cli {
    /// The rprof device node.
    #[arg(long, global = true, default_value = rprof::device::DEFAULT_PATH, value_name = "PATH")]
    device: PathBuf,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sample the system (or one process, or while a command runs) into
    /// an rprof.data file.
    ///
    /// While the recording runs, the module holds a reference on every
    /// file it sampled: a file system whose programs were sampled cannot
    /// be unmounted (EBUSY) and a deleted sampled file keeps its space
    /// until the recording ends (a long-running reader lets go of them
    /// with RPROF_IOC_RESET_COOKIES, as rprofd does).  The event buffer
    /// (-m) and the rings (--ring-records) count against your
    /// locked-memory limit (ulimit -l, beyond the module's mlock_kb)
    /// unless you have CAP_IPC_LOCK.
    ///
    /// Call chains: --call-graph fp walks frame pointers, which code built
    /// with -fomit-frame-pointer (most distributions' libraries) lacks.
    /// --call-graph dwarf compiles the .eh_frame of every program and
    /// library that runs (in the session's scope) into unwind tables,
    /// uploads them to the module (RPROF_IOC_ADD_UNWIND), and the module
    /// walks those, frame pointers elsewhere.  Tables of what runs at the
    /// start are uploaded first; a program started later gets its table
    /// once its first samples have been read, so its first samples (the
    /// first second or so) may have shallower chains.  Compiled tables
    /// are kept by build-id in $RPROF_UNWIND_CACHE, else
    /// $XDG_CACHE_HOME/rprof/unwind, else ~/.cache/rprof/unwind; the
    /// figures of the upload end the run ("rprof: unwind tables: ...")
    /// and show in rprof stat.  -g takes tables when the module does, and
    /// frame pointers (said in one line) from an older module.
    #[command(verbatim_doc_comment)]
    Record(cmd::record::RecordArgs),
    /// Show where the samples of a recording are: overhead per command,
    /// shared object and symbol.
    Report(cmd::report::ReportArgs),
    /// Show the samples inside one function, per instruction and per
    /// source line.
    Annotate(cmd::annotate::AnnotateArgs),
    /// Print every sample, one block each with its call chain, as `perf
    /// script` does (for your own tools).
    Script(cmd::script::ScriptArgs),
    /// Write a recording as pprof, folded stacks, speedscope JSON or a
    /// flame graph SVG.
    Export(cmd::export::ExportArgs),
    /// Draw a recording (with -g call chains) as an interactive flame
    /// graph SVG (as `export --format svg`).
    Flamegraph(cmd::export::FlamegraphArgs),
    /// Show the hottest functions of the whole system, live.
    Top(cmd::top::TopArgs),
    /// Profile continuously into rotating pprof files (as `rprofd`).
    Daemon(rprof::daemon::DaemonArgs),
    /// Print the ABI version of this program and of the loaded module.
    Version,
    /// Print the module's statistics, in total and per CPU.
    Stat,
    /// Sample for a while and print every record of the event stream.
    Dump(DumpArgs),
}

/// Options of `rprof dump`.
#[derive(Debug, Args)]
struct DumpArgs {
    /// Event to sample: cpu-clock, task-clock, cycles, instructions,
    /// cache-misses or branch-misses; `NAME:PERIOD` samples every PERIOD
    /// events, `NAME@HZ` about HZ times a second.  Repeatable (up to 8).
    /// Default: cpu-clock@1000.
    #[arg(short = 'e', long = "event", value_name = "EVENT[:PERIOD|@FREQ]")]
    events: Vec<EventSpec>,

    /// Sampling frequency in Hz of events given without a period or
    /// frequency of their own (default 1000).
    #[arg(short = 'F', long = "freq", value_name = "HZ",
          value_parser = clap::value_parser!(u64).range(1..))]
    freq: Option<u64>,

    /// How long to sample, in seconds (fractions allowed).
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", default_value = "1",
          value_parser = rprof::daemon::parse_seconds)]
    duration: std::time::Duration,

    /// Read records with read() instead of the mmap'ed buffer.
    #[arg(long)]
    read: bool,

    /// Consume nothing while sampling, only after STOP (so that a small
    /// event buffer overflows; for testing the loss accounting).
    #[arg(long)]
    stall: bool,

    /// Do not sample user mode.
    #[arg(long)]
    exclude_user: bool,

    /// Do not sample kernel mode.
    #[arg(long)]
    exclude_kernel: bool,

    /// Only sample the thread group (process) PID.
    #[arg(short = 'p', long = "pid", value_name = "PID",
          value_parser = clap::value_parser!(i32).range(1..))]
    pid: Option<i32>,

    /// Slots of each CPU's ring, a power of two (default: the module's).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    ring_records: u32,

    /// Data pages of the event buffer, one for all CPUs (perf's -m is per
    /// CPU), a power of two (default: the module's, or more at high
    /// rates: 0.5 s of samples of every CPU, up to 16 times the module's
    /// default and 16 MiB).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        value_parser = rprof::events::parse_buffer_pages,
        default_value_t = 0,
        hide_default_value = true
    )]
    buffer_pages: u32,

    /// Period of the module's drain of the rings, in ms (default: the
    /// module's, 10 ms).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 0,
        hide_default_value = true
    )]
    drain_interval_ms: u32,

    /// Wake the reader when this much data is buffered (default: the
    /// module's, a quarter of the buffer).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 0,
        hide_default_value = true
    )]
    wakeup_bytes: u32,

    /// Print only the summary and the statistics, not the records.
    #[arg(short = 'q', long)]
    quiet: bool,

    /// Print the summary and statistics as one JSON object on one line,
    /// instead of as text (with --quiet, the only output).
    #[arg(long)]
    summary_json: bool,

    /// Also write the raw event stream (the bytes exactly as read) to FILE.
    #[arg(long, value_name = "FILE")]
    raw: Option<PathBuf>,

    #[command(flatten)]
    call_graph: rprof::sampling::CallGraphArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Record(args) => {
            return rprof::error::exit_status(cmd::record::run(&cli.device, &args))
        }
        Command::Report(args) => cmd::report::run(&args),
        Command::Annotate(args) => cmd::annotate::run(&args),
        Command::Script(args) => cmd::script::run(&args),
        Command::Export(args) => cmd::export::run(&args),
        Command::Flamegraph(args) => cmd::export::run(&args.export()),
        Command::Top(args) => cmd::top::run(&cli.device, &args),
        Command::Daemon(args) => rprof::daemon::run(&cli.device, &args),
        Command::Version => cmd::version::run(&cli.device),
        Command::Stat => cmd::stat::run(&cli.device),
        Command::Dump(args) => {
            if let Err(e) = args.call_graph.depths() {
                return rprof::error::exit_code(Err(e));
            }
            let options = args.session_options();
            let config = match options.to_config() {
                Ok(c) => c,
                Err(msg) => {
                    use clap::CommandFactory;
                    let mut cli = Cli::command();
                    cli.build();
                    let dump = cli
                        .find_subcommand_mut("dump")
                        .unwrap_or_else(|| unreachable!("the dump subcommand is defined above"));
                    dump.error(clap::error::ErrorKind::TooManyValues, msg)
                        .exit()
                }
            };
            cmd::dump::run(&cli.device, &config, &args.output_options())
        }
    };
    rprof::error::exit_code(result)
}

impl DumpArgs {
    /// The session part of the options.
    fn session_options(&self) -> rprof::events::SessionOptions {
        rprof::events::SessionOptions {
            events: self.events.clone(),
            freq: self.freq,
            period: None,
            exclude_user: self.exclude_user,
            exclude_kernel: self.exclude_kernel,
            pid: self.pid,
            descendants: false,
            ring_records: self.ring_records,
            buffer_pages: self.buffer_pages,
            drain_interval_ms: self.drain_interval_ms,
            wakeup_bytes: self.wakeup_bytes,
            callchain: self.call_graph.depths().ok().flatten(),
            // dump uploads no tables: -g is frame pointers; --call-graph
            // dwarf asks for tables (the module walks none it was not
            // given, and counts its frames in user_no_table).
            unwind_tables: self.call_graph.mode().ok().flatten()
                == Some(rprof::sampling::ChainMode::Tables),
        }
    }

    /// The reading and output part of the options.
    fn output_options(&self) -> cmd::dump::Options {
        cmd::dump::Options {
            duration: self.duration,
            use_read: self.read,
            quiet: self.quiet,
            summary_json: self.summary_json,
            stall: self.stall,
            raw: self.raw.clone(),
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
    fn dump_options_parse() {
        let cli = Cli::try_parse_from([
            "rprof",
            "dump",
            "-e",
            "cpu-clock:100000",
            "-e",
            "cycles",
            "-F",
            "99",
            "-d",
            "0.5",
            "--read",
            "--exclude-user",
            "-p",
            "42",
            "--ring-records",
            "256",
            "--quiet",
            "--summary-json",
            "--stall",
            "--raw",
            "/tmp/a.raw",
        ])
        .unwrap();
        let Command::Dump(args) = cli.command else {
            panic!("expected dump, got {:?}", cli.command)
        };
        let c = args.session_options().to_config().unwrap();
        assert_eq!(c.nr_events, 2);
        assert_eq!(c.events[1].period, 99);
        assert_eq!(c.pid, 42);
        assert_eq!(c.ring_records, 256);
        let o = args.output_options();
        assert_eq!(o.duration, std::time::Duration::from_millis(500));
        assert!(o.use_read && o.quiet && o.summary_json && o.stall);
        assert_eq!(o.raw, Some(PathBuf::from("/tmp/a.raw")));
        let cli = Cli::try_parse_from(["rprof", "dump"]).unwrap();
        let Command::Dump(args) = cli.command else {
            panic!("expected dump, got {:?}", cli.command)
        };
        assert!(!args.output_options().stall);
        assert_eq!(args.output_options().raw, None);
    }

    #[test]
    fn record_options_parse() {
        let cli = Cli::try_parse_from([
            "rprof",
            "record",
            "-e",
            "cpu-clock@99",
            "-o",
            "/tmp/x.data",
            "-d",
            "2",
            "--",
            "/bin/sleep",
            "1",
        ])
        .unwrap();
        let Command::Record(args) = cli.command else {
            panic!("expected record, got {:?}", cli.command)
        };
        assert_eq!(args.command, ["/bin/sleep", "1"]);
        assert_eq!(args.output, PathBuf::from("/tmp/x.data"));
        assert_eq!(args.duration, Some(std::time::Duration::from_secs(2)));
        let c = args.sampling.session_options(args.pid).to_config().unwrap();
        assert_eq!(c.events[0].period, 99);
        // The default: cpu-clock@999, whole system, rprof.data.
        let cli = Cli::try_parse_from(["rprof", "record"]).unwrap();
        let Command::Record(args) = cli.command else {
            panic!("expected record")
        };
        let c = args.sampling.session_options(args.pid).to_config().unwrap();
        assert_eq!((c.nr_events, c.events[0].period, c.flags), (1, 999, 0));
        assert_eq!(args.output, PathBuf::from("rprof.data"));
        let cli = Cli::try_parse_from(["rprof", "record", "-p", "7"]).unwrap();
        let Command::Record(args) = cli.command else {
            panic!("expected record")
        };
        let c = args.sampling.session_options(args.pid).to_config().unwrap();
        assert_eq!((c.pid, c.flags), (7, rprof_abi::RPROF_CONFIG_PID_FILTER));
    }

    /// `--call-graph` as perf spells it: `dwarf` asks for unwind tables,
    /// `fp` is frame pointers exactly as before, `-g` the best the module
    /// offers (tables, probed at SET_CONFIG); the same for record and top.
    #[test]
    fn call_graph_modes() {
        use rprof::sampling::ChainMode;
        use rprof_abi::{RPROF_CONFIG_CALLCHAIN, RPROF_CONFIG_UNWIND_TABLES};
        let chains = RPROF_CONFIG_CALLCHAIN;
        let tables = RPROF_CONFIG_CALLCHAIN | RPROF_CONFIG_UNWIND_TABLES;
        let cases: [(&[&str], Option<ChainMode>, u32); 9] = [
            (&["--call-graph", "dwarf"], Some(ChainMode::Tables), tables),
            (&["--call-graph=dwarf"], Some(ChainMode::Tables), tables),
            (
                &["--call-graph", "dwarf,65528"],
                Some(ChainMode::Tables),
                tables,
            ),
            (
                &["--call-graph", "fp"],
                Some(ChainMode::FramePointers),
                chains,
            ),
            (&["--call-graph=fp"], Some(ChainMode::FramePointers), chains),
            (&["-g"], Some(ChainMode::Best), tables),
            // --call-graph wins over -g, as perf's does.
            (
                &["-g", "--call-graph", "fp"],
                Some(ChainMode::FramePointers),
                chains,
            ),
            // No user side to walk: no tables asked for.
            (&["-g", "--exclude-user"], Some(ChainMode::Best), chains),
            (&[], None, 0),
        ];
        for (command, events) in [("record", &["-e", "cpu-clock"][..]), ("top", &[][..])] {
            for (opts, mode, flags) in &cases {
                let argv: Vec<&str> = ["rprof", command]
                    .iter()
                    .chain(*opts)
                    .chain(events)
                    .copied()
                    .collect();
                let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
                let sampling = match cli.command {
                    Command::Record(a) => a.sampling,
                    Command::Top(a) => a.sampling,
                    c => panic!("{argv:?}: expected {command}, got {c:?}"),
                };
                assert_eq!(sampling.call_graph.mode().unwrap(), *mode, "{argv:?}");
                let c = sampling.config(None).unwrap();
                let expected_flags = flags | (c.flags & rprof_abi::RPROF_CONFIG_EXCLUDE_USER);
                assert_eq!(c.flags, expected_flags, "{argv:?}");
                if mode.is_some() {
                    assert_eq!(
                        (c.max_kernel_frames, c.max_user_frames),
                        (127, 127),
                        "{argv:?}"
                    );
                }
            }
        }
        // dump: -g stays frame pointers (it uploads nothing); dwarf asks.
        for (opt, flags) in [("-g", chains), ("--call-graph=dwarf", tables)] {
            let cli = Cli::try_parse_from(["rprof", "dump", opt]).unwrap();
            let Command::Dump(args) = cli.command else {
                panic!("expected dump")
            };
            assert_eq!(
                args.session_options().to_config().unwrap().flags,
                flags,
                "{opt}"
            );
        }
        // The daemon takes the option.
        Cli::try_parse_from([
            "rprof",
            "daemon",
            "--dir",
            "/tmp/d",
            "--call-graph",
            "dwarf",
        ])
        .unwrap();
        // lbr and unknown modes are usage errors (exit status 2).
        for mode in ["lbr", "frame", ""] {
            let cli = Cli::try_parse_from(["rprof", "record", "--call-graph", mode]).unwrap();
            let Command::Record(args) = cli.command else {
                panic!("expected record")
            };
            let e = args.sampling.config(None).unwrap_err();
            assert!(matches!(e, rprof::Error::Usage(_)), "{mode}: {e}");
        }
        let cli = Cli::try_parse_from(["rprof", "record", "--max-stack", "9"]).unwrap();
        let Command::Record(args) = cli.command else {
            panic!("expected record")
        };
        assert!(
            args.sampling.config(None).is_err(),
            "--max-stack without chains"
        );
    }

    #[test]
    fn call_graph_arguments_are_checked_as_perf_checks_them() {
        use rprof::sampling::ChainMode;
        let mode = |arg: &str| {
            let cli = Cli::try_parse_from(["rprof", "record", "--call-graph", arg]).unwrap();
            let Command::Record(args) = cli.command else {
                panic!("expected record")
            };
            args.sampling.call_graph.mode()
        };
        for ok in ["dwarf,8192", "dwarf,65528", "dwarf,1"] {
            assert_eq!(mode(ok).unwrap(), Some(ChainMode::Tables), "{ok}");
        }
        for bad in [
            "dwarf,garbage",
            "dwarf,",
            "dwarf,0",
            "dwarf,65529",
            "dwarf,8192,1",
            "fp,8192",
            "fp,",
        ] {
            let e = mode(bad).unwrap_err();
            assert!(
                matches!(&e, rprof::Error::Usage(m) if m.contains("--call-graph")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn report_export_annotate_top_daemon_parse() {
        for argv in [
            &[
                "rprof",
                "report",
                "-i",
                "a.data",
                "--sort",
                "dso,sym",
                "--pid",
                "3",
                "--comm",
                "x",
                "--percent-limit",
                "1.5",
                "--stdio",
            ][..],
            &["rprof", "report", "--sort", "pid,comm"],
            &["rprof", "export", "--format", "pprof", "-o", "p.pb.gz"],
            &[
                "rprof", "export", "--format", "folded", "-i", "a", "-o", "-",
            ],
            &[
                "rprof",
                "export",
                "--format",
                "speedscope",
                "-o",
                "s.json",
                "--symfs",
                "/x",
            ],
            &["rprof", "annotate", "main_hot", "-i", "a.data"],
            &["rprof", "top", "-d", "0.5", "-n", "3"],
            &[
                "rprof",
                "daemon",
                "--dir",
                "/tmp/d",
                "--interval",
                "5",
                "--keep",
                "4",
            ],
        ] {
            Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        }
    }

    #[test]
    fn every_command_has_help() {
        for sub in [
            "record", "report", "annotate", "export", "top", "daemon", "stat", "dump", "version",
        ] {
            let err = Cli::try_parse_from(["rprof", sub, "--help"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{sub}");
        }
    }

    #[test]
    fn record_help_says_what_a_session_holds() {
        let err = Cli::try_parse_from(["rprof", "record", "--help"]).unwrap_err();
        let help = err.to_string();
        for what in [
            "EBUSY",
            "RESET_COOKIES",
            "ulimit -l",
            "CAP_IPC_LOCK",
            "--call-graph dwarf",
            "first samples",
            ".cache/rprof/unwind",
        ] {
            assert!(
                help.contains(what),
                "record --help does not say {what}:\n{help}"
            );
        }
    }

    #[test]
    fn usage_errors() {
        for argv in [
            &["rprof", "dump", "-e", "bogus"][..],
            &["rprof", "dump", "-F", "0"],
            &["rprof", "dump", "-d", "-1"],
            &["rprof", "dump", "-d", "nan"],
            &["rprof", "dump", "-p", "0"],
            &["rprof", "frobnicate"],
            &["rprof", "record", "-a", "-p", "3"],
            &["rprof", "report", "--sort", "bogus"],
            &["rprof", "export", "--format", "jpeg", "-o", "x"],
            &["rprof", "flamegraph", "--event", "x"],
            &["rprof", "export", "--format", "pprof"],
            &["rprof", "annotate"],
            &["rprof", "daemon"],
        ] {
            let err = Cli::try_parse_from(argv).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{argv:?}: {err}");
        }
    }
}

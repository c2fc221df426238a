//! `resolved-fraction RAW --comm COMM --path PATH [--symbol SYMBOL]`: how
//! many of COMM's user samples resolve to file PATH (and to function
//! SYMBOL in it), how many to any file, and how many user samples the
//! stream lost because the task had no address space (`no_mm`) or the ip
//! no mapping (`no_mapping`).
//!
//! Prints one JSON line, then checks (unless `--no-check`): at least
//! `--min-samples` user samples of COMM; at least `--min-fraction` of them
//! in PATH and `--min-file-fraction` in some file (not ANON, NONE or a
//! cookie never named); with `--symbol`, at least `--min-symbol-fraction`
//! of PATH's samples inside SYMBOL; and the stream's LOST no_mm +
//! no_mapping below `--max-lost-fraction` of COMM's user samples (the
//! stream's totals, of every task: LOST records name no task).  Samples
//! lost because the sampled process held its `mmap_lock` (`mm_busy`: the
//! drain never waits for it) are printed, not bounded: they say how busy
//! the processes were, not whether resolution works.

use crate::checks::{ratio, Outcome};
use crate::elf::Function;
use crate::stream::Stream;
use rprof_decode::CookieName;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The options of `resolved-fraction` (its command line, too).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The raw stream file.
    pub raw: PathBuf,
    /// The comm of the tasks to look at.
    #[arg(long)]
    pub comm: String,
    /// The file their user samples should resolve to.
    #[arg(long)]
    pub path: String,
    /// A function of PATH that most of PATH's samples should be in.
    #[arg(long)]
    pub symbol: Option<String>,
    /// Least fraction of COMM's user samples in PATH.
    #[arg(long, value_name = "F", default_value_t = 0.75)]
    pub min_fraction: f64,
    /// Least fraction of COMM's user samples in some file (not ANON,
    /// NONE or an unnamed cookie).
    #[arg(long, value_name = "F", default_value_t = 0.95)]
    pub min_file_fraction: f64,
    /// With --symbol: least fraction of PATH's samples inside SYMBOL.
    #[arg(long, value_name = "F", default_value_t = 0.9)]
    pub min_symbol_fraction: f64,
    /// LOST no_mm + no_mapping must stay below this fraction of COMM's
    /// user samples.
    #[arg(long, value_name = "F", default_value_t = 0.05)]
    pub max_lost_fraction: f64,
    /// Least number of COMM's user samples.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub min_samples: u64,
    /// Print the figures, check nothing.
    #[arg(long)]
    pub no_check: bool,
}

/// `a / b`, 0 for `b` = 0.
fn fraction(a: u64, b: u64) -> f64 {
    ratio(a, b).unwrap_or(0.0)
}

/// Runs `resolved-fraction` on a decoded stream; prints the JSON line.
pub fn check(stream: &Stream, opts: &Options) -> Outcome {
    let function = match &opts.symbol {
        Some(name) => Some(Function::load(std::path::Path::new(&opts.path), name)?),
        None => None,
    };
    let r = &stream.resolver;
    let (mut user, mut in_path, mut in_files, mut in_symbol) = (0u64, 0u64, 0u64, 0u64);
    let mut files: BTreeMap<String, u64> = BTreeMap::new();
    for s in stream.user_samples(Some(&opts.comm)) {
        user += 1;
        *files.entry(r.label(s.cookie)).or_default() += 1;
        if let Some(CookieName::File { path, .. }) = r.name(s.cookie) {
            in_files += 1;
            if *path == opts.path {
                in_path += 1;
                if let Some(f) = &function {
                    if f.holds_offset(s.offset) == Some(true) {
                        in_symbol += 1;
                    }
                }
            }
        }
    }
    let path_fraction = fraction(in_path, user);
    let file_fraction = fraction(in_files, user);
    let symbol_fraction = fraction(in_symbol, in_path);
    let lost = stream.lost.no_mm.saturating_add(stream.lost.no_mapping);
    let lost_fraction = fraction(lost, user);
    let tasks = {
        let mut pids: Vec<u32> = stream
            .user_samples(Some(&opts.comm))
            .filter_map(|s| s.pid())
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids.len()
    };
    let report = json!({
        "comm": opts.comm,
        "path": opts.path,
        "symbol": opts.symbol,
        "user_samples": user,
        "path_samples": in_path,
        "file_samples": in_files,
        "symbol_samples": function.as_ref().map(|_| in_symbol),
        "fraction": path_fraction,
        "file_fraction": file_fraction,
        "symbol_fraction": function.as_ref().map(|_| symbol_fraction),
        "processes": tasks,
        "files": files,
        "lost_no_mm": stream.lost.no_mm,
        "lost_no_mapping": stream.lost.no_mapping,
        "lost_no_cookie": stream.lost.no_cookie,
        "lost_mm_busy": stream.lost.mm_busy,
        "lost_no_mm_mapping_fraction": lost_fraction,
        "lost": stream.lost_json(),
    });
    println!("{report}");
    let in_sym = match &opts.symbol {
        Some(name) => format!(" ({in_symbol} in {name})"),
        None => String::new(),
    };
    let summary = format!(
        "{in_path} of {user} user samples of {} ({:.1}%, {tasks} processes) in {}{in_sym}, \
         {:.1}% in files; LOST no_mm {} + no_mapping {} = {:.1}% of them, mm_busy {}",
        opts.comm,
        100.0 * path_fraction,
        opts.path,
        100.0 * file_fraction,
        stream.lost.no_mm,
        stream.lost.no_mapping,
        100.0 * lost_fraction,
        stream.lost.mm_busy
    );
    if opts.no_check {
        return Ok(summary);
    }
    if user < opts.min_samples {
        return Err(format!(
            "expected at least {} user samples of {}, got {summary}",
            opts.min_samples, opts.comm
        ));
    }
    if path_fraction < opts.min_fraction {
        return Err(format!(
            "expected at least {:.0}% of the user samples in {}, got {summary}",
            100.0 * opts.min_fraction,
            opts.path
        ));
    }
    if file_fraction < opts.min_file_fraction {
        return Err(format!(
            "expected at least {:.0}% of the user samples in files, got {summary}",
            100.0 * opts.min_file_fraction
        ));
    }
    if let Some(name) = &opts.symbol {
        if symbol_fraction < opts.min_symbol_fraction {
            return Err(format!(
                "expected at least {:.0}% of the samples in {} inside {name}, got {summary}",
                100.0 * opts.min_symbol_fraction,
                opts.path
            ));
        }
    }
    if lost_fraction >= opts.max_lost_fraction {
        return Err(format!(
            "expected LOST no_mm + no_mapping below {:.1}% of the user samples, got {summary}",
            100.0 * opts.max_lost_fraction
        ));
    }
    Ok(summary)
}

/// Runs `resolved-fraction`.
pub fn run(opts: &Options) -> Outcome {
    let stream = Stream::load(&opts.raw)?;
    check(&stream, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_abi::*;
    use rprof_decode::Record;

    fn stream(short: u64, ld: u64, lost_mm: u64) -> Stream {
        stream_at("/tests/bin/short", 0x1139, short, ld, lost_mm)
    }

    fn stream_at(path: &str, offset: u64, short: u64, ld: u64, lost_mm: u64) -> Stream {
        let mut records = vec![
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 1,
                ino: 1,
                path: path.into(),
            },
            Record::Cookie {
                cookie: 17,
                flags: 0,
                dev: 1,
                ino: 2,
                path: "/lib64/ld-linux-x86-64.so.2".into(),
            },
        ];
        let sample = Record::Sample {
            flags: sample_flags(true, 0),
            time_ns: 0,
            offset,
            period: 1,
            stack: None,
        };
        for pid in 100..100 + short {
            records.push(Record::Task {
                cpu: 0,
                pid: pid as u32,
                tid: pid as u32,
                exe_cookie: 16,
                comm: "short".into(),
            });
            records.push(Record::Switch { cookie: 16 });
            records.push(sample.clone());
        }
        records.push(Record::Switch { cookie: 17 });
        for _ in 0..ld {
            records.push(sample.clone());
        }
        records.push(Record::Lost {
            stage: RPROF_LOST_NO_MM,
            cpu: 0,
            count: lost_mm,
        });
        Stream::of_records(&records)
    }

    fn options() -> Options {
        Options {
            raw: PathBuf::new(),
            comm: "short".into(),
            path: "/tests/bin/short".into(),
            symbol: None,
            min_fraction: 0.75,
            min_file_fraction: 0.95,
            min_symbol_fraction: 0.9,
            max_lost_fraction: 0.05,
            min_samples: 20,
            no_check: false,
        }
    }

    #[test]
    fn fractions() {
        let ok = check(&stream(90, 10, 4), &options()).unwrap();
        assert!(
            ok.contains("90 of 100 user samples of short (90.0%, 90 processes)"),
            "{ok}"
        );
        let e = check(&stream(60, 40, 0), &options()).unwrap_err();
        assert!(e.contains("at least 75%"), "{e}");
        let e = check(&stream(90, 10, 5), &options()).unwrap_err();
        assert!(e.contains("below 5.0%"), "{e}");
        let e = check(&stream(10, 0, 0), &options()).unwrap_err();
        assert!(e.contains("at least 20 user samples"), "{e}");
        let mut o = options();
        o.no_check = true;
        assert!(check(&stream(0, 0, 9), &o).is_ok());

        // LOST mm_busy is said, not held against the fraction.
        let mut records = stream(90, 10, 4).records;
        records.push(Record::Lost {
            stage: RPROF_LOST_MM_BUSY,
            cpu: 1,
            count: 30,
        });
        let ok = check(&Stream::of_records(&records), &options()).unwrap();
        assert!(ok.ends_with("= 4.0% of them, mm_busy 30"), "{ok}");
    }

    #[test]
    fn unresolved_samples_and_symbols() {
        // Samples under the ANON cookie are in no file.
        let mut records = stream(90, 0, 0).records;
        records.push(Record::Switch {
            cookie: u64::from(RPROF_COOKIE_ANON),
        });
        for _ in 0..10 {
            records.push(Record::Sample {
                flags: sample_flags(true, 0),
                time_ns: 0,
                offset: 0x7fff_0000_0000,
                period: 1,
                stack: None,
            });
        }
        let s = Stream::of_records(&records);
        let mut o = options();
        o.min_fraction = 0.5;
        let e = check(&s, &o).unwrap_err();
        assert!(
            e.contains("at least 95% of the user samples in files"),
            "{e}"
        );
        assert!(e.contains("90.0% in files"), "{e}");

        // --symbol: this test binary's marker function.
        let exe = std::env::current_exe().unwrap();
        let path = exe.to_string_lossy().into_owned();
        let Function { image, symbol: sym } = crate::elf::tests::marker_function();
        let inside = image.offset_of_vaddr(sym.addr).unwrap();
        let mut o = options();
        o.path = path.clone();
        o.symbol = Some("rprof_e2e_elf_test_marker".into());
        let ok = check(&stream_at(&path, inside, 50, 0, 0), &o).unwrap();
        assert!(ok.contains("(50 in rprof_e2e_elf_test_marker)"), "{ok}");
        let outside = image.offset_of_vaddr(sym.addr + sym.size).unwrap();
        let e = check(&stream_at(&path, outside, 50, 0, 0), &o).unwrap_err();
        assert!(e.contains("inside rprof_e2e_elf_test_marker"), "{e}");
        o.symbol = Some("no_such_function".into());
        assert!(check(&stream_at(&path, inside, 50, 0, 0), &o).is_err());
    }
}

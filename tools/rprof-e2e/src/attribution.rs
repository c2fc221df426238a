//! `attribution RAW --bin PATH:SYMBOL...`: do user samples land in the
//! functions that ran?
//!
//! Decodes a raw stream (`rprof dump --raw`), resolves its samples, keeps
//! the user samples (of tasks whose comm is `--pid-comm`, if given) and
//! maps each to its file and file offset.  For every `--bin PATH:SYMBOL` it
//! counts the samples in PATH (matched by path, or by device and inode) and
//! those inside SYMBOL, whose address range comes from PATH's ELF symbol
//! table, the offset turned into an address through PATH's PT_LOAD
//! segments.  Prints one JSON line, then checks (unless `--no-check`):
//!
//! - at least `--min-samples` user samples;
//! - at least `--min-fraction` (0.9) of them in the given files;
//! - with two bins: count(SYMBOL 1) / count(SYMBOL 2) within `--tolerance`
//!   (25%) of `--ratio` (3.0).

use crate::checks::{ratio, Outcome};
use crate::elf::Function;
use crate::stream::Stream;
use rprof_decode::{CookieName, Resolver};
use serde_json::json;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// One `--bin PATH:SYMBOL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinSpec {
    /// The ELF file, as the module names it (e.g. `/tests/bin/attr_main`).
    pub path: String,
    /// A function in it.
    pub symbol: String,
}

impl FromStr for BinSpec {
    type Err = String;

    /// `PATH:SYMBOL`, split at the last `:`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.rsplit_once(':') {
            Some((path, symbol)) if !path.is_empty() && !symbol.is_empty() => Ok(BinSpec {
                path: path.to_string(),
                symbol: symbol.to_string(),
            }),
            _ => Err(format!("'{s}' is not PATH:SYMBOL")),
        }
    }
}

/// The options of `attribution` (its command line, too).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The raw stream file.
    pub raw: PathBuf,
    /// An ELF file (as the module names it) and a function in it;
    /// repeatable.  With two, their functions' counts are compared.
    #[arg(long = "bin", value_name = "PATH:SYMBOL", required = true)]
    pub bins: Vec<BinSpec>,
    /// Only user samples of tasks with this comm.
    #[arg(long = "pid-comm", value_name = "COMM")]
    pub comm: Option<String>,
    /// Expected samples(SYMBOL 1) / samples(SYMBOL 2).
    #[arg(long, value_name = "R", default_value_t = 3.0)]
    pub ratio: f64,
    /// Allowed relative distance from R.
    #[arg(long, value_name = "F", default_value_t = 0.25)]
    pub tolerance: f64,
    /// Least fraction of the user samples in the given files.
    #[arg(long, value_name = "F", default_value_t = 0.9)]
    pub min_fraction: f64,
    /// Least number of user samples.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub min_samples: u64,
    /// Print the figures, check nothing.
    #[arg(long)]
    pub no_check: bool,
}

/// A `--bin` with what its file says.
struct Bin {
    spec: BinSpec,
    function: Function,
    /// (dev, ino) of the file here, `dev` as `new_encode_dev()` encodes it
    /// (which is what `stat()` returns on 64-bit Linux).
    id: Option<(u64, u64)>,
    canonical: Option<String>,
    file_samples: u64,
    symbol_samples: u64,
    /// Samples in the file whose offset is in no PT_LOAD segment.
    unmapped: u64,
}

impl Bin {
    fn new(spec: &BinSpec) -> Result<Bin, String> {
        let path = Path::new(&spec.path);
        let function = Function::load(path, &spec.symbol)?;
        let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        let canonical = std::fs::canonicalize(path)
            .ok()
            .map(|p| p.to_string_lossy().into_owned());
        Ok(Bin {
            spec: spec.clone(),
            function,
            id,
            canonical,
            file_samples: 0,
            symbol_samples: 0,
            unmapped: 0,
        })
    }

    /// Whether file cookie `name` is this bin's file: the device and
    /// inode the module reported are those `stat()` gives for the file
    /// here (a path that matches is not enough: the module must name the
    /// very file).  Only a file that cannot be stat'ed here is matched by
    /// its path.
    fn is(&self, name: &CookieName) -> bool {
        let CookieName::File { path, dev, ino, .. } = name else {
            return false;
        };
        match self.id {
            Some(id) => id == (*dev, *ino),
            None => *path == self.spec.path || self.canonical.as_deref() == Some(path.as_str()),
        }
    }
}

/// The figures of one stream; the checks come after.
struct Counts {
    user_samples: u64,
    attributed: u64,
    files: BTreeMap<String, u64>,
}

/// Counts the user samples of `stream` (of `comm`) into `bins`.
fn count(stream: &Stream, comm: Option<&str>, bins: &mut [Bin]) -> Counts {
    let resolver: &Resolver = &stream.resolver;
    // Which bins, if any, each named cookie is (two bins may name two
    // functions of one file).
    let bins_of: BTreeMap<u64, Vec<usize>> = resolver
        .names()
        .iter()
        .map(|(&cookie, name)| {
            let of: Vec<usize> = (0..bins.len()).filter(|&i| bins[i].is(name)).collect();
            (cookie, of)
        })
        .filter(|(_, of)| !of.is_empty())
        .collect();
    let mut counts = Counts {
        user_samples: 0,
        attributed: 0,
        files: BTreeMap::new(),
    };
    for s in stream.user_samples(comm) {
        counts.user_samples += 1;
        *counts.files.entry(resolver.label(s.cookie)).or_default() += 1;
        let Some(of) = bins_of.get(&s.cookie) else {
            continue;
        };
        counts.attributed += 1;
        for &i in of {
            let bin = &mut bins[i];
            bin.file_samples += 1;
            match bin.function.holds_offset(s.offset) {
                Some(true) => bin.symbol_samples += 1,
                Some(false) => {}
                None => bin.unmapped += 1,
            }
        }
    }
    counts
}

/// Runs `attribution` on a decoded stream; prints the JSON line.
pub fn check(stream: &Stream, opts: &Options) -> Outcome {
    let mut bins = opts
        .bins
        .iter()
        .map(Bin::new)
        .collect::<Result<Vec<_>, _>>()?;
    let c = count(stream, opts.comm.as_deref(), &mut bins);
    let fraction = ratio(c.attributed, c.user_samples).unwrap_or(0.0);
    let sym_ratio = match bins.as_slice() {
        [a, b] => ratio(a.symbol_samples, b.symbol_samples),
        _ => None,
    };
    let report = json!({
        "comm": opts.comm,
        "samples": stream.samples.len(),
        "user_samples": c.user_samples,
        "attributed": c.attributed,
        "attributed_fraction": fraction,
        "bins": bins.iter().map(|b| json!({
            "path": b.spec.path,
            "symbol": b.spec.symbol,
            "symbol_addr": format!("{:#x}", b.function.symbol.addr),
            "symbol_file_offset": b.function.image.offset_of_vaddr(b.function.symbol.addr).map(|o| format!("{o:#x}")),
            "symbol_size": b.function.symbol.size,
            "file_samples": b.file_samples,
            "symbol_samples": b.symbol_samples,
            "unmapped_offsets": b.unmapped,
        })).collect::<Vec<_>>(),
        "ratio": sym_ratio,
        "files": c.files,
        "lost": stream.lost_json(),
        "trailing_bytes": stream.trailing,
    });
    println!("{report}");

    let who = opts
        .comm
        .as_deref()
        .map_or("all tasks".to_string(), |c| format!("comm {c}"));
    let summary = format!(
        "{} of {} user samples of {who} ({:.1}%) in the given files{}",
        c.attributed,
        c.user_samples,
        100.0 * fraction,
        sym_ratio.map_or(String::new(), |r| format!(
            "; {} {} / {} {} = {r:.2}",
            bins[0].spec.symbol,
            bins[0].symbol_samples,
            bins[1].spec.symbol,
            bins[1].symbol_samples
        ))
    );
    if opts.no_check {
        return Ok(summary);
    }
    if c.user_samples < opts.min_samples {
        return Err(format!(
            "expected at least {} user samples of {who}, got {}",
            opts.min_samples, c.user_samples
        ));
    }
    if fraction < opts.min_fraction {
        return Err(format!(
            "expected at least {:.0}% of the user samples of {who} in the given files, got {summary}",
            100.0 * opts.min_fraction
        ));
    }
    if bins.len() == 2 {
        let lo = opts.ratio * (1.0 - opts.tolerance);
        let hi = opts.ratio * (1.0 + opts.tolerance);
        match sym_ratio {
            Some(r) if (lo..=hi).contains(&r) => {}
            _ => {
                return Err(format!(
                "expected {} / {} samples within {:.0}% of {} ({lo:.2}..{hi:.2}), got {summary}",
                bins[0].spec.symbol,
                bins[1].spec.symbol,
                100.0 * opts.tolerance,
                opts.ratio
            ))
            }
        }
    }
    Ok(summary)
}

/// Runs `attribution`.
pub fn run(opts: &Options) -> Outcome {
    let stream = Stream::load(&opts.raw)?;
    check(&stream, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::tests::{marker_function, rprof_e2e_elf_test_marker};
    use rprof_abi::sample_flags;
    use rprof_decode::Record;

    #[test]
    fn bin_specs() {
        let b: BinSpec = "/tests/bin/attr_main:main_hot".parse().unwrap();
        assert_eq!(
            b,
            BinSpec {
                path: "/tests/bin/attr_main".into(),
                symbol: "main_hot".into()
            }
        );
        let b: BinSpec = "/a:b/c:sym".parse().unwrap();
        assert_eq!((b.path.as_str(), b.symbol.as_str()), ("/a:b/c", "sym"));
        for bad in ["", "nocolon", ":sym", "/path:"] {
            assert!(bad.parse::<BinSpec>().is_err(), "{bad}");
        }
    }

    /// A stream whose samples fall in this test binary: `inside` in the
    /// marker function, `outside` elsewhere in the file, and `other` in
    /// another file; `noise` samples of another comm and kernel samples.
    fn stream(inside: u64, outside: u64, other: u64) -> (Stream, String) {
        assert_eq!(rprof_e2e_elf_test_marker(0), 7);
        let exe = std::env::current_exe().unwrap();
        let path = exe.to_string_lossy().into_owned();
        let Function { image, symbol: sym } = marker_function();
        let in_off = image.offset_of_vaddr(sym.addr + sym.size / 2).unwrap();
        let out_off = image.offset_of_vaddr(sym.addr + sym.size).unwrap();
        let id = std::fs::metadata(&exe).unwrap();
        let mut records = vec![
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: std::os::unix::fs::MetadataExt::dev(&id),
                ino: std::os::unix::fs::MetadataExt::ino(&id),
                path: path.clone(),
            },
            Record::Cookie {
                cookie: 17,
                flags: 0,
                dev: 0,
                ino: 0,
                path: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            },
            Record::Task {
                cpu: 0,
                pid: 9,
                tid: 9,
                exe_cookie: 16,
                comm: "noise".into(),
            },
            Record::Switch { cookie: 16 },
        ];
        let sample = |offset, user| Record::Sample {
            flags: sample_flags(user, 0),
            time_ns: 0,
            offset,
            period: 1,
            stack: None,
        };
        for _ in 0..50 {
            records.push(sample(in_off, true));
        }
        records.push(Record::Task {
            cpu: 1,
            pid: 10,
            tid: 10,
            exe_cookie: 16,
            comm: "worker".into(),
        });
        for _ in 0..inside {
            records.push(sample(in_off, true));
            records.push(sample(0xffff_ffff_8100_0000, false));
        }
        for _ in 0..outside {
            records.push(sample(out_off, true));
        }
        records.push(Record::Switch { cookie: 17 });
        for _ in 0..other {
            records.push(sample(0x1000, true));
        }
        (Stream::of_records(&records), path)
    }

    fn options(path: &str, comm: Option<&str>) -> Options {
        Options {
            raw: PathBuf::new(),
            bins: vec![BinSpec {
                path: path.to_string(),
                symbol: "rprof_e2e_elf_test_marker".into(),
            }],
            comm: comm.map(String::from),
            ratio: 3.0,
            tolerance: 0.25,
            min_fraction: 0.9,
            min_samples: 10,
            no_check: false,
        }
    }

    #[test]
    fn counts_samples_in_the_symbol() {
        let (s, path) = stream(40, 15, 5);
        let mut bins = vec![Bin::new(&options(&path, None).bins[0]).unwrap()];
        let c = count(&s, Some("worker"), &mut bins);
        assert_eq!(c.user_samples, 60);
        assert_eq!(c.attributed, 55);
        assert_eq!((bins[0].file_samples, bins[0].symbol_samples), (55, 40));
        assert_eq!(c.files.get(&path), Some(&55));
        assert_eq!(c.files.get("/lib/x86_64-linux-gnu/libc.so.6"), Some(&5));
        // Without a comm filter the noise task counts too.
        let mut bins = vec![Bin::new(&options(&path, None).bins[0]).unwrap()];
        let c = count(&s, None, &mut bins);
        assert_eq!((c.user_samples, bins[0].symbol_samples), (110, 90));
    }

    /// A cookie with the right path but another file's device and inode
    /// is not the file: nothing is attributed to it.
    #[test]
    fn the_path_alone_is_not_the_file() {
        let (s, path) = stream(40, 15, 5);
        let mut bins = vec![Bin::new(&options(&path, None).bins[0]).unwrap()];
        let id = bins[0].id.unwrap();
        bins[0].id = Some((id.0, id.1 + 1));
        let c = count(&s, Some("worker"), &mut bins);
        assert_eq!(c.attributed, 0);
        assert_eq!(bins[0].file_samples, 0);
    }

    #[test]
    fn checks_fraction_and_ratio() {
        let (s, path) = stream(40, 15, 5);
        // 55 of 60 = 91.7% attributed: passes with one bin.
        assert!(check(&s, &options(&path, Some("worker"))).is_ok());
        // 10% outside the files fails at 95%.
        let mut o = options(&path, Some("worker"));
        o.min_fraction = 0.95;
        let e = check(&s, &o).unwrap_err();
        assert!(e.contains("at least 95%"), "{e}");
        // Too few samples.
        let mut o = options(&path, Some("nobody"));
        o.min_samples = 1;
        assert!(check(&s, &o)
            .unwrap_err()
            .contains("at least 1 user samples"));
        // --no-check reports without judging.
        o.no_check = true;
        assert!(check(&s, &o).is_ok());
        // Two bins: the same symbol twice has ratio 1.
        let mut o = options(&path, Some("worker"));
        o.bins.push(o.bins[0].clone());
        let e = check(&s, &o).unwrap_err();
        assert!(e.contains("= 1.00"), "{e}");
        o.ratio = 1.1;
        assert!(check(&s, &o).is_ok());
        // A missing symbol or file is an error.
        let mut o = options(&path, None);
        o.bins[0].symbol = "no_such_function".into();
        assert!(check(&s, &o).unwrap_err().contains("no function symbol"));
        let o = options("/nonexistent/file", None);
        assert!(check(&s, &o).is_err());
    }
}

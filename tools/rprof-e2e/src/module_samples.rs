//! `module-samples RAW --name NAME`: a kernel module loaded and unloaded
//! during a session shows up in the stream.
//!
//! Expects a MODULE record naming NAME, at least `--min-samples` kernel
//! samples in that module's cookies (its text, and its init text if the
//! module reports it apart), every one with an offset below the size of its
//! region, and a MODULE record with `RPROF_MODULE_UNLOAD` for each of its
//! core-text cookies that samples used.  Prints one JSON line, then the
//! verdict.

use crate::checks::Outcome;
use crate::stream::Stream;
use rprof_decode::CookieName;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// One cookie of the module, as its MODULE records describe it.
#[derive(Debug, Default, Clone)]
struct Region {
    base: u64,
    size: u64,
    init: bool,
    unloaded: bool,
    samples: u64,
    user_samples: u64,
    max_offset: Option<u64>,
    out_of_range: u64,
    in_function: u64,
}

/// A function of the module, as `[start, end)` offsets in its core text,
/// taken from the `.ko` file ([`crate::elf::module_text_range`]).
#[derive(Debug, Clone)]
pub struct Expected {
    /// The function's name.
    pub function: String,
    /// Its range in the core text.
    pub range: (u64, u64),
}

/// Runs `module-samples` on a decoded stream; prints the JSON line.  With
/// `expected`, most (at least 80%) of the samples in the module's core
/// text must fall inside that function.
pub fn check(
    stream: &Stream,
    name: &str,
    min_samples: u64,
    expected: Option<&Expected>,
) -> Outcome {
    let mut regions: BTreeMap<u64, Region> = BTreeMap::new();
    for r in &stream.records {
        if let Some((
            cookie,
            CookieName::Module {
                name: n,
                base,
                size,
                init,
                unloaded,
            },
        )) = CookieName::of_record(r)
        {
            if n != name {
                continue;
            }
            let region = regions.entry(cookie).or_default();
            region.base = base;
            region.size = size;
            region.init = init;
            region.unloaded |= unloaded;
        }
    }
    for s in &stream.samples {
        let Some(region) = regions.get_mut(&s.cookie) else {
            continue;
        };
        region.samples += 1;
        if s.user {
            region.user_samples += 1;
        }
        region.max_offset = Some(region.max_offset.map_or(s.offset, |m| m.max(s.offset)));
        if s.offset >= region.size {
            region.out_of_range += 1;
        }
        if let Some(e) = expected {
            if !region.init && s.offset >= e.range.0 && s.offset < e.range.1 {
                region.in_function += 1;
            }
        }
    }
    let report = json!({
        "module": name,
        "regions": regions.iter().map(|(cookie, r)| json!({
            "cookie": cookie,
            "base": format!("{:#x}", r.base),
            "size": r.size,
            "init": r.init,
            "unloaded": r.unloaded,
            "samples": r.samples,
            "user_samples": r.user_samples,
            "max_offset": r.max_offset,
            "out_of_range": r.out_of_range,
            "in_function": r.in_function,
        })).collect::<Vec<_>>(),
        "function": expected.map(|e| json!({
            "name": e.function,
            "start": format!("{:#x}", e.range.0),
            "end": format!("{:#x}", e.range.1),
        })),
        "samples": stream.samples.len(),
    });
    println!("{report}");

    if regions.is_empty() {
        return Err(format!("expected a MODULE record named {name}, got none"));
    }
    let total: u64 = regions.values().map(|r| r.samples).sum();
    if total < min_samples {
        return Err(format!(
            "expected at least {min_samples} samples in module {name}, got {total}"
        ));
    }
    for (cookie, r) in &regions {
        if r.out_of_range > 0 {
            return Err(format!(
                "expected every sample of {name} (cookie {cookie}) at an offset below its \
                 text size {}, got {} beyond (largest {:#x})",
                r.size,
                r.out_of_range,
                r.max_offset.unwrap_or(0)
            ));
        }
        if r.user_samples > 0 {
            return Err(format!(
                "expected only kernel samples in module {name} (cookie {cookie}), got {} user samples",
                r.user_samples
            ));
        }
        if r.samples > 0 && !r.init && !r.unloaded {
            return Err(format!(
                "expected an UNLOAD MODULE record for {name} (cookie {cookie}), got none"
            ));
        }
    }
    if !regions.values().any(|r| r.unloaded) {
        return Err(format!(
            "expected an UNLOAD MODULE record for {name}, got none"
        ));
    }
    let mut inside = String::new();
    if let Some(e) = expected {
        let core: u64 = regions
            .values()
            .filter(|r| !r.init)
            .map(|r| r.samples)
            .sum();
        let hits: u64 = regions.values().map(|r| r.in_function).sum();
        if core == 0 || hits * 10 < core * 8 {
            return Err(format!(
                "expected at least 80% of the {core} samples in {name}'s core text inside {} \
                 ({:#x}..{:#x} from its .ko), got {hits}",
                e.function, e.range.0, e.range.1
            ));
        }
        inside = format!(
            "; {hits} of {core} in its core text inside {} (from the .ko)",
            e.function
        );
    }
    Ok(format!(
        "{total} kernel samples in module {name} ({} cookies), all inside its text{inside}; \
         UNLOAD recorded",
        regions.len()
    ))
}

/// Runs `module-samples`; with `ko` and `function`, the function's range
/// comes from the module's file.
pub fn run(raw: &Path, name: &str, min_samples: u64, ko: Option<(&Path, &str)>) -> Outcome {
    let expected = match ko {
        Some((path, function)) => Some(Expected {
            function: function.to_string(),
            range: rprof_symbols::elf::load_with(path, |data| {
                crate::elf::module_text_range(data, function)
            })?,
        }),
        None => None,
    };
    let stream = Stream::load(raw)?;
    check(&stream, name, min_samples, expected.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_abi::*;
    use rprof_decode::Record;

    fn stream(offsets: &[u64], unload: bool, user: bool) -> Stream {
        let module = |flags: u32| Record::Module {
            cookie: 20,
            flags: flags as u16,
            base: 0xffff_ffff_c000_0000,
            size: 0x100,
            name: "rprof_busy".into(),
        };
        let mut records = vec![
            Record::Task {
                cpu: 0,
                pid: 50,
                tid: 50,
                exe_cookie: 0,
                comm: "insmod".into(),
            },
            Record::Module {
                cookie: 21,
                flags: 0,
                base: 0,
                size: 0x10,
                name: "other".into(),
            },
            module(0),
            Record::Switch { cookie: 20 },
        ];
        for &offset in offsets {
            records.push(Record::Sample {
                flags: sample_flags(user, 0),
                time_ns: 0,
                offset,
                period: 1,
                stack: None,
            });
        }
        records.push(Record::Switch { cookie: 21 });
        records.push(Record::Sample {
            flags: 0,
            time_ns: 0,
            offset: 0x5000,
            period: 1,
            stack: None,
        });
        if unload {
            records.push(module(RPROF_MODULE_UNLOAD));
        }
        Stream::of_records(&records)
    }

    #[test]
    fn verdicts() {
        let ok = check(
            &stream(&[0, 0x10, 0xff], true, false),
            "rprof_busy",
            3,
            None,
        )
        .unwrap();
        assert!(ok.starts_with("3 kernel samples"), "{ok}");
        for (s, says) in [
            (
                stream(&[0, 1, 0x100], true, false),
                "below its text size 256",
            ),
            (stream(&[0, 1, 2], false, false), "an UNLOAD MODULE record"),
            (stream(&[0], true, false), "at least 3 samples"),
            (stream(&[0, 1, 2], true, true), "only kernel samples"),
        ] {
            let e = check(&s, "rprof_busy", 3, None).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
        let e = check(&stream(&[0], true, false), "absent", 1, None).unwrap_err();
        assert!(e.contains("a MODULE record named absent"), "{e}");
    }

    #[test]
    fn samples_must_fall_in_the_function() {
        let f = Expected {
            function: "spin".into(),
            range: (0x10, 0x20),
        };
        let ok = check(
            &stream(&[0x10, 0x18, 0x1f, 0x1f, 0x40], true, false),
            "rprof_busy",
            3,
            Some(&f),
        )
        .unwrap();
        assert!(ok.contains("4 of 5 in its core text inside spin"), "{ok}");
        let e = check(
            &stream(&[0x10, 0x18, 0x40, 0x50, 0x60], true, false),
            "rprof_busy",
            3,
            Some(&f),
        )
        .unwrap_err();
        assert!(e.contains("at least 80% of the 5 samples"), "{e}");
    }

    /// The busy module itself, when the workloads are built
    /// (`scripts/workloads.sh build`): rprof_busy_spin is the first
    /// function of .text, 66 bytes long as built by the test kernel's clang.
    #[test]
    fn range_from_the_busy_module() {
        let ko = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../build/workloads/busymod/rprof_busy.ko");
        let Ok(data) = std::fs::read(&ko) else {
            eprintln!("skipped: {} not built", ko.display());
            return;
        };
        let (start, end) = crate::elf::module_text_range(&data, "rprof_busy_spin").unwrap();
        assert_eq!(start, 0);
        assert!(end > start && end < 0x1000, "{start:#x}..{end:#x}");
        let e = crate::elf::module_text_range(&data, "init_module").unwrap_err();
        assert!(e.contains(".init"), "{e}");
    }
}

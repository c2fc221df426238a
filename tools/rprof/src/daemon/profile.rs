//! One interval's profile on disk: its name, its writing (whole or not
//! at all) and the rotation of the profile directory.

use crate::Error;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Profile file names: `rprof-` + seconds + `-` + sequence + `.pb.gz`.
const PREFIX: &str = "rprof-";
pub(super) const SUFFIX: &str = ".pb.gz";

/// One interval of the session: when it began (wall clock) and how
/// long it lasted, as its profile's name and `time_nanos` /
/// `duration_nanos` say.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    /// Sequence number in the daemon's run.
    pub seq: u64,
    /// Its start, since the Unix epoch.
    pub start: Duration,
    /// Its length.
    pub length: Duration,
}

/// Writes one interval's profile (what `agg` counted for it; call chains
/// through the stacks it has seen in the whole session) with `sym`, and
/// rotates; returns its path.  On an error (a full disk, ...) nothing of
/// the profile is left behind.
pub fn write_profile(
    dir: &Path,
    interval: Interval,
    agg: &rprof_report::Aggregate,
    config: &rprof_abi::rprof_config,
    sym: &mut rprof_report::Symbolizer,
    keep: u64,
) -> Result<PathBuf, Error> {
    let filter = rprof_report::Filter::default();
    let profile = build_profile(interval, agg, config, sym, &filter, Vec::new());
    let name = format!(
        "{PREFIX}{:010}-{:06}{SUFFIX}",
        interval.start.as_secs(),
        interval.seq
    );
    let path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let written = std::fs::File::create(&tmp)
        .map_err(|e| Error::io("creating a profile", e))
        .and_then(|f| {
            let mut file = std::io::BufWriter::new(f);
            rprof_report::pprof::write_gz(&mut file, &profile)
                .and_then(|()| std::io::Write::flush(&mut file))
                .and_then(|()| file.get_ref().sync_data())
                .map_err(|e| Error::io("writing a profile", e))
        })
        .and_then(|()| {
            std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming a profile", e))
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The profile is there: a failure to delete old ones is not a skip.
    if let Err(e) = rotate(dir, keep) {
        eprintln!(
            "rprof daemon: {}: old profiles not removed: {e}",
            path.display()
        );
    }
    eprintln!("rprof daemon: wrote {}", summary(&path, agg));
    Ok(path)
}

/// The pprof profile of `interval` (an interval's, or a scrape's
/// window: `seq` is not used), of what `agg` counted that `filter`
/// accepts, symbolized with `sym`; its first comment says how many
/// samples and losses `agg` counted (all of them, whatever `filter`),
/// `notes` follow it.
pub(super) fn build_profile(
    interval: Interval,
    agg: &rprof_report::Aggregate,
    config: &rprof_abi::rprof_config,
    sym: &mut rprof_report::Symbolizer,
    filter: &rprof_report::Filter,
    notes: Vec<String>,
) -> rprof_report::pprof::profile::Profile {
    let mut comment = format!(
        "rprof daemon: {} samples, lost {}",
        agg.samples,
        agg.lost_line()
    );
    if agg.late > 0 {
        comment.push_str(&format!(
            "; {} samples of earlier intervals read too late for them",
            agg.late
        ));
    }
    let mut comments = vec![comment];
    comments.extend(notes);
    let opts = rprof_report::pprof::Options {
        time_nanos: interval.start.as_nanos() as i64,
        duration_nanos: interval.length.as_nanos() as i64,
        comments,
    };
    rprof_report::pprof::build(agg, sym, filter, config, &opts)
}

/// `PATH: N samples, L lost (ring R, buffer B, ...)`: one interval's
/// totals, for the daemon's line on stderr; `, K of them late` follows
/// when K of the N belong to earlier intervals but were read after those
/// were written, and `, throttled T times` when the kernel throttled
/// sampling (perf's limit on samples per tick) in it.
fn summary(path: &Path, agg: &rprof_report::Aggregate) -> String {
    let mut line = format!(
        "{}: {} samples, {} lost ({})",
        path.display(),
        agg.samples,
        agg.lost_total(),
        agg.lost_line()
    );
    if agg.late > 0 {
        line.push_str(&format!(", {} of them late", agg.late));
    }
    if agg.throttles > 0 {
        line.push_str(&format!(", throttled {} times", agg.throttles));
    }
    line
}

/// The names of the files of the profile directory `dir` that `keep`
/// accepts.
pub(super) fn names_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, Error> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| Error::io("listing the profile directory", e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| keep(n))
        .collect())
}

/// Whether `name` is the temporary name of a profile being written.
fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
        .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
}

/// Deletes the temporary files an earlier daemon killed while writing
/// left in `dir`; returns how many.
pub fn remove_temporaries(dir: &Path) -> Result<usize, Error> {
    let names = names_in(dir, is_temporary)?;
    for n in &names {
        let _ = std::fs::remove_file(dir.join(n));
    }
    Ok(names.len())
}

/// Deletes the oldest profiles of `dir` beyond `keep`.
pub fn rotate(dir: &Path, keep: u64) -> Result<(), Error> {
    let mut names = names_in(dir, |n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))?;
    names.sort();
    let excess = names.len().saturating_sub(keep as usize);
    for n in &names[..excess] {
        // Another process may have removed it already.
        let _ = std::fs::remove_file(dir.join(n));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn summary_line() {
        use rprof_decode::Record;
        let mut agg = rprof_report::Aggregate::new();
        for (stage, count) in [(1, 2), (2, 5), (2, 1), (9, 4)] {
            agg.feed(&Record::Lost {
                cpu: 0,
                stage,
                count,
            });
        }
        assert_eq!(
            summary(Path::new("/d/rprof-1-000001.pb.gz"), &agg),
            "/d/rprof-1-000001.pb.gz: 0 samples, 12 lost \
             (ring 2, buffer 6, no_mm 0, no_mapping 0, no_cookie 0, mm_busy 0, other 4)"
        );
        agg.late = 3;
        assert!(summary(Path::new("/d/p"), &agg).ends_with("other 4), 3 of them late"));
        agg.throttles = 2;
        assert!(summary(Path::new("/d/p"), &agg).ends_with(", 3 of them late, throttled 2 times"));
    }

    #[test]
    fn temporaries_of_a_killed_daemon_go() {
        let dir = std::env::temp_dir().join(format!("rprof-tmps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            ".rprof-0000000001-000000.pb.gz.tmp",
            "rprof-0000000001-000000.pb.gz",
            ".other.tmp",
            ".rprof-notes.txt.tmp",
        ];
        for n in names {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        assert_eq!(remove_temporaries(&dir).unwrap(), 1);
        let left = names_in(&dir);
        assert_eq!(
            left,
            [
                ".other.tmp",
                ".rprof-notes.txt.tmp",
                "rprof-0000000001-000000.pb.gz"
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rotation_keeps_the_newest() {
        let dir = std::env::temp_dir().join(format!("rprof-rotate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..5 {
            std::fs::write(
                dir.join(format!("{PREFIX}{:010}-{i:06}{SUFFIX}", 100 + i)),
                b"x",
            )
            .unwrap();
        }
        std::fs::write(dir.join("other.txt"), b"x").unwrap();
        rotate(&dir, 2).unwrap();
        let left = names_in(&dir);
        assert_eq!(
            left,
            [
                "other.txt",
                "rprof-0000000103-000003.pb.gz",
                "rprof-0000000104-000004.pb.gz"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! The uploader's figures: the summary line of `rprof record`, and the status file `rprof stat` reads.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the uploader did in one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tables compiled (not in the cache).
    pub compiled: u64,
    /// Tables read from the cache.
    pub cache_hits: u64,
    /// Tables the module took (EEXIST included).
    pub uploaded: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files without a table in the session, by reason.
    pub failures: BTreeMap<String, u64>,
    /// RESET records (the module dropped the tables).
    pub resets: u64,
    /// Time spent opening, compiling and uploading.
    pub time: Duration,
}

impl Counts {
    /// Counts one failure for `reason`.
    pub fn fail(&mut self, reason: &str) {
        *self.failures.entry(reason.to_string()).or_default() += 1;
    }

    /// All failures.
    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }

    /// The figures as `key value` lines (the status file).
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "compiled {}\ncache_hits {}\nuploaded {}\nbytes {}\nresets {}\ntime_ns {}\n",
            self.compiled,
            self.cache_hits,
            self.uploaded,
            self.bytes,
            self.resets,
            self.time.as_nanos()
        );
        for (reason, n) in &self.failures {
            s.push_str(&format!("failed.{reason} {n}\n"));
        }
        s
    }

    /// The figures of [`Counts::to_text`]'s lines; other lines are left
    /// out.
    pub fn from_text(text: &str) -> Counts {
        let mut c = Counts::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(' ') else {
                continue;
            };
            let Ok(n) = value.trim().parse::<u64>() else {
                continue;
            };
            match key {
                "compiled" => c.compiled = n,
                "cache_hits" => c.cache_hits = n,
                "uploaded" => c.uploaded = n,
                "bytes" => c.bytes = n,
                "resets" => c.resets = n,
                "time_ns" => c.time = Duration::from_nanos(n),
                _ => {
                    if let Some(reason) = key.strip_prefix("failed.") {
                        c.failures.insert(reason.to_string(), n);
                    }
                }
            }
        }
        c
    }
}

/// `uploaded 12 (340 KiB), compiled 3, cache hits 9, failed 2 (no-cfi 1,
/// open 1), 0.42 s`.
impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uploaded {} ({} KiB), compiled {}, cache hits {}, failed {}",
            self.uploaded,
            self.bytes.div_ceil(1024),
            self.compiled,
            self.cache_hits,
            self.failed()
        )?;
        if !self.failures.is_empty() {
            let parts: Vec<String> = self
                .failures
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        if self.resets > 0 {
            write!(f, ", resets {}", self.resets)?;
        }
        write!(f, ", {:.2} s", self.time.as_secs_f64())
    }
}

/// The status file of the last uploader, in the cache directory: what
/// `rprof stat` shows.
pub fn status_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join("uploader.status")
}

/// Writes `counts` of the uploader of process `pid` to `path` (whole, by
/// rename).
pub fn write_status(path: &Path, pid: u32, counts: &Counts) -> std::io::Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other("a status path without a directory"));
    };
    // As the tables: only into a directory of our own (see write_private).
    rprof_unwind::cache::write_private(
        dir,
        &name.to_string_lossy(),
        format!("pid {pid}\n{}", counts.to_text()).as_bytes(),
    )
}

/// The status at `path`: the writer's pid and its figures.
pub fn read_status(path: &Path) -> Option<(u32, Counts)> {
    let text = std::fs::read_to_string(path).ok()?;
    let pid = text
        .lines()
        .find_map(|l| l.strip_prefix("pid "))?
        .trim()
        .parse()
        .ok()?;
    Some((pid, Counts::from_text(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Counts {
        let mut c = Counts {
            compiled: 3,
            cache_hits: 9,
            uploaded: 12,
            bytes: 340 * 1024,
            resets: 0,
            time: Duration::from_millis(420),
            ..Counts::default()
        };
        c.fail("open");
        c.fail("no-cfi");
        c
    }

    #[test]
    fn one_line() {
        assert_eq!(
            sample().to_string(),
            "uploaded 12 (340 KiB), compiled 3, cache hits 9, failed 2 (no-cfi 1, open 1), 0.42 s"
        );
        let c = Counts {
            resets: 2,
            ..Counts::default()
        };
        assert_eq!(
            c.to_string(),
            "uploaded 0 (0 KiB), compiled 0, cache hits 0, failed 0, resets 2, 0.00 s"
        );
    }

    #[test]
    fn status_file_round_trip() {
        let dir = std::env::temp_dir().join(format!("rprof-status-{}", std::process::id()));
        let path = status_path(&dir);
        write_status(&path, 77, &sample()).unwrap();
        assert_eq!(read_status(&path), Some((77, sample())));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read_status(&path), None);
        assert_eq!(Counts::from_text("junk\nuploaded x\n"), Counts::default());
    }
}

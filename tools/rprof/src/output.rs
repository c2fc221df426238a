//! A file that replaces its target only once it is complete.
//!
//! `rprof record -o FILE` writes `FILE.partial` and renames it to `FILE`
//! at the end, after `fsync`: an existing `FILE` stays as it was until the
//! new recording is whole, and a recording that is interrupted (SIGKILL,
//! power loss, a full disk) is left as `FILE.partial`, which `rprof report`
//! reads up to its last complete record.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// `PATH.partial`: where a recording of `path` is written until it is
/// complete.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// A file being written under [`partial_path`] of its target.
#[derive(Debug)]
pub struct PendingFile {
    target: PathBuf,
    partial: PathBuf,
}

impl PendingFile {
    /// Creates (or truncates) the partial file of `target`; `target`
    /// itself is not touched.
    pub fn create(target: &Path) -> io::Result<(PendingFile, File)> {
        let partial = partial_path(target);
        let file = File::create(&partial)?;
        Ok((
            PendingFile {
                target: target.to_path_buf(),
                partial,
            },
            file,
        ))
    }

    /// The file being written.
    pub fn partial(&self) -> &Path {
        &self.partial
    }

    /// The file it becomes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes `file` to the disk and renames it over the target.
    pub fn commit(self, file: File) -> io::Result<()> {
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.partial, &self.target)?;
        // The rename itself is durable once the directory is synced; not
        // every file system lets a directory be opened for that, and the
        // recording is complete either way.
        let dir = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Removes the partial file (nothing worth keeping was written).
    pub fn discard(self) {
        let _ = std::fs::remove_file(&self.partial);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_target_changes_only_at_commit() {
        let dir = std::env::temp_dir().join(format!("rprof-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("r.data");
        std::fs::write(&target, b"the old recording").unwrap();
        let (pending, mut file) = PendingFile::create(&target).unwrap();
        assert_eq!(pending.partial(), dir.join("r.data.partial"));
        file.write_all(b"half of a new one").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"the old recording");
        pending.commit(file).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"half of a new one");
        assert!(!partial_path(&target).exists());
        // Discarded: the target stays, the partial file goes.
        let (pending, file) = PendingFile::create(&target).unwrap();
        drop(file);
        pending.discard();
        assert!(!partial_path(&target).exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"half of a new one");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn partial_names() {
        assert_eq!(
            partial_path(Path::new("rprof.data")),
            Path::new("rprof.data.partial")
        );
        assert_eq!(partial_path(Path::new("/a/b")), Path::new("/a/b.partial"));
    }
}

//! Compiled tables on disk, by build-id, so that a file is compiled once.
//!
//! The cache is a directory of `<build-id in hex>.rpuw` files in the table
//! format: `$RPROF_UNWIND_CACHE`, else `$XDG_CACHE_HOME/rprof/unwind`, else
//! `~/.cache/rprof/unwind`.  A file is written whole to a temporary name
//! and renamed, so a reader sees an old table or a new one, never half of
//! one.  What is read back is validated and its build-id compared: a file
//! that fails either is compiled again and replaced, never trusted.  Files
//! without a build-id are compiled every time (nothing names them).

use crate::compile::{compile, CompileError, Stats};
use crate::table::UnwindTable;
use std::path::{Path, PathBuf};

/// A cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    dir: PathBuf,
}

/// How [`Cache::table_for`] found a table.
#[derive(Debug, Clone)]
pub enum How {
    /// Read from the cache.
    Hit,
    /// Compiled.
    Compiled {
        /// The compile's figures.
        stats: Stats,
        /// Why the cached file was not used, if there was one.
        replaced: Option<String>,
        /// Whether the table is now in the cache, or why not.
        stored: Result<(), String>,
    },
}

/// A table and how it was found.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The table.
    pub table: UnwindTable,
    /// From the cache, or compiled.
    pub how: How,
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Cache {
    /// The cache in `dir` (created when a table is first stored).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The cache the environment names (see the module doc), or `None`
    /// if it names none (no `$HOME` either).
    pub fn from_env() -> Option<Cache> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var("RPROF_UNWIND_CACHE") {
            return Some(Cache::new(dir));
        }
        if let Some(xdg) = var("XDG_CACHE_HOME") {
            return Some(Cache::new(Path::new(&xdg).join("rprof/unwind")));
        }
        var("HOME").map(|home| Cache::new(Path::new(&home).join(".cache/rprof/unwind")))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the table of the file with `build_id` is kept.
    pub fn path_for(&self, build_id: &[u8]) -> PathBuf {
        self.dir.join(format!("{}.rpuw", hex(build_id)))
    }

    /// The table of the ELF file at `path`: from the cache, or compiled
    /// (and stored, if the file has a build-id).
    ///
    /// Only reading or compiling the file can fail; a cache that cannot be
    /// written is reported in [`How::Compiled`]'s `stored`.
    pub fn table_for(&self, path: &Path) -> Result<Lookup, CompileError> {
        let data = std::fs::read(path).map_err(CompileError::Io)?;
        self.table_for_bytes(&data)
    }

    /// [`Cache::table_for`] on the file's bytes.
    pub fn table_for_bytes(&self, data: &[u8]) -> Result<Lookup, CompileError> {
        let build_id = build_id_of(data)?;
        let mut replaced = None;
        if let Some(id) = &build_id {
            match self.read(id) {
                Ok(Some(table)) => {
                    return Ok(Lookup {
                        table,
                        how: How::Hit,
                    })
                }
                Ok(None) => {}
                Err(why) => replaced = Some(why),
            }
        }
        let compiled = compile(data)?;
        let stored = match &build_id {
            Some(id) => self.store(id, &compiled.table),
            None => Err("the file has no build-id".to_string()),
        };
        Ok(Lookup {
            table: compiled.table,
            how: How::Compiled {
                stats: compiled.stats,
                replaced,
                stored,
            },
        })
    }

    /// The cached table for `build_id`: `Ok(None)` if there is none,
    /// `Err` saying why the file there is not a table for it.
    fn read(&self, build_id: &[u8]) -> Result<Option<UnwindTable>, String> {
        let path = self.path_for(build_id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let table =
            UnwindTable::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if table.build_id != build_id {
            return Err(format!(
                "{}: the table is for build-id {}",
                path.display(),
                hex(&table.build_id)
            ));
        }
        Ok(Some(table))
    }

    /// Writes `table` as the cached one for `build_id`: to a temporary
    /// file in the directory, then renamed over the final name.
    fn store(&self, build_id: &[u8], table: &UnwindTable) -> Result<(), String> {
        let bytes = table.to_bytes().map_err(|e| e.to_string())?;
        let name = format!("{}.rpuw", hex(build_id));
        write_private(&self.dir, &name, &bytes).map_err(|e| format!("{}: {e}", self.path_for(build_id).display()))
    }
}

/// Writes `bytes` as `dir/name`, whole (a temporary file renamed over it),
/// only into a directory of our own that no one else may write: rprof runs
/// as root, often under `sudo -E` with a user's `$HOME`, and a directory
/// the user controls would let them point the temporary file's name at any
/// file root can write.  The temporary file is made new
/// (`O_CREAT|O_EXCL|O_NOFOLLOW`, a name no one can guess ahead), so it
/// never follows a link; the rename replaces whatever entry `name` was
/// without following it.
pub fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    std::fs::create_dir_all(dir)?;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{nanos:x}.{seq}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let mut ours = || -> std::io::Result<()> {
        // The directory itself, not a link to one, owned by whoever we
        // are (the file we just made says who) and writable by no one else.
        let d = std::fs::symlink_metadata(dir)?;
        let me = file.metadata()?.uid();
        if !d.is_dir() || d.uid() != me || d.mode() & 0o022 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} is not a directory of uid {me} that only it may write", dir.display()),
            ));
        }
        file.write_all(bytes)?;
        std::fs::rename(&tmp, dir.join(name))
    };
    ours().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The GNU build-id of the ELF file in `data` (at most 20 bytes kept, as
/// the table's header holds), `None` if it has none.
fn build_id_of(data: &[u8]) -> Result<Option<Vec<u8>>, CompileError> {
    use object::Object;
    let file = object::File::parse(data).map_err(|e| CompileError::NotElf(e.to_string()))?;
    Ok(file
        .build_id()
        .ok()
        .flatten()
        .filter(|id| !id.is_empty())
        .map(|id| id[..id.len().min(crate::table::BUILD_ID_MAX)].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn test_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("rprof-unwind-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A program with a build-id: /bin/ls (Debian's has one).
    fn with_build_id() -> Option<PathBuf> {
        let ls = PathBuf::from("/bin/ls");
        let data = std::fs::read(&ls).ok()?;
        build_id_of(&data).ok()?.map(|_| ls)
    }

    fn compiled(how: &How) -> (&Option<String>, &Result<(), String>) {
        match how {
            How::Compiled {
                replaced, stored, ..
            } => (replaced, stored),
            How::Hit => panic!("expected a compile, got a cache hit"),
        }
    }

    #[test]
    fn compiled_once_then_read_back() {
        let Some(bin) = with_build_id() else {
            println!("skipped: no /bin/ls with a build-id");
            return;
        };
        let cache = Cache::new(test_dir("once").join("sub/dir"));
        let first = cache.table_for(&bin).unwrap();
        let (replaced, stored) = compiled(&first.how);
        assert_eq!((replaced, stored), (&None, &Ok(())));
        let path = cache.path_for(&first.table.build_id);
        assert!(path.ends_with(format!("{}.rpuw", hex(&first.table.build_id))));
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 1);

        let second = cache.table_for(&bin).unwrap();
        assert!(matches!(second.how, How::Hit), "{:?}", second.how);
        assert_eq!(second.table, first.table);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    }

    #[test]
    fn a_corrupt_or_foreign_file_is_compiled_again() {
        let Some(bin) = with_build_id() else {
            println!("skipped: no /bin/ls with a build-id");
            return;
        };
        let cache = Cache::new(test_dir("corrupt"));
        let good = cache.table_for(&bin).unwrap().table;
        let path = cache.path_for(&good.build_id);
        let bytes = std::fs::read(&path).unwrap();

        // Cut short, a flipped enum, another file's table under this name.
        let mut flipped = bytes.clone();
        flipped[crate::table::HEADER_SIZE + 10] = 0xee;
        let mut foreign = good.clone();
        foreign.build_id = vec![0x5a; 20];
        let foreign = foreign.to_bytes().unwrap();
        for (what, bad) in [
            ("cut", bytes[..bytes.len() - 5].to_vec()),
            ("row 0's cfa", flipped),
            ("build-id", foreign),
            ("empty", Vec::new()),
        ] {
            std::fs::write(&path, &bad).unwrap();
            let l = cache.table_for(&bin).unwrap();
            let (replaced, stored) = compiled(&l.how);
            assert!(replaced.is_some(), "{what}: not noticed");
            assert_eq!(stored, &Ok(()), "{what}");
            assert_eq!(l.table, good, "{what}");
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}: not replaced");
            assert!(matches!(cache.table_for(&bin).unwrap().how, How::Hit));
        }
    }

    #[test]
    fn a_file_without_build_id_is_compiled_but_not_stored() {
        let dir = test_dir("no-id");
        let src = dir.join("p.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let bin = dir.join("p");
        let built = Command::new("cc")
            .args(["-O2", "-Wl,--build-id=none", "-o"])
            .arg(&bin)
            .arg(&src)
            .status();
        if !built.is_ok_and(|s| s.success()) {
            println!("skipped: cc cannot build a program without a build-id");
            return;
        }
        let cache = Cache::new(dir.join("cache"));
        for _ in 0..2 {
            let l = cache.table_for(&bin).unwrap();
            let (_, stored) = compiled(&l.how);
            assert!(stored.as_ref().is_err_and(|e| e.contains("no build-id")));
            assert!(l.table.build_id.is_empty());
            assert!(!l.table.rows.is_empty());
        }
        assert!(!cache.dir().exists());
    }

    #[test]
    fn an_unwritable_cache_still_gives_the_table() {
        let Some(bin) = with_build_id() else {
            println!("skipped: no /bin/ls with a build-id");
            return;
        };
        let dir = test_dir("unwritable");
        let file = dir.join("not-a-dir");
        std::fs::write(&file, b"").unwrap();
        let cache = Cache::new(&file);
        let l = cache.table_for(&bin).unwrap();
        let (_, stored) = compiled(&l.how);
        assert!(stored.is_err());
        assert!(!l.table.rows.is_empty());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn not_elf_is_an_error() {
        let dir = test_dir("not-elf");
        let cache = Cache::new(&dir);
        let text = dir.join("text");
        std::fs::write(&text, b"#!/bin/sh\n").unwrap();
        assert!(matches!(
            cache.table_for(&text),
            Err(CompileError::NotElf(_))
        ));
        assert!(matches!(
            cache.table_for(&dir.join("missing")),
            Err(CompileError::Io(_))
        ));
    }

    #[test]
    fn the_directory_from_the_environment() {
        // The only test that touches these variables.
        let saved: Vec<_> = ["RPROF_UNWIND_CACHE", "XDG_CACHE_HOME", "HOME"]
            .iter()
            .map(|v| (*v, std::env::var_os(v)))
            .collect();
        std::env::set_var("RPROF_UNWIND_CACHE", "/c");
        std::env::set_var("XDG_CACHE_HOME", "/x");
        std::env::set_var("HOME", "/h");
        assert_eq!(Cache::from_env(), Some(Cache::new("/c")));
        std::env::set_var("RPROF_UNWIND_CACHE", "");
        assert_eq!(Cache::from_env(), Some(Cache::new("/x/rprof/unwind")));
        std::env::remove_var("XDG_CACHE_HOME");
        assert_eq!(
            Cache::from_env(),
            Some(Cache::new("/h/.cache/rprof/unwind"))
        );
        std::env::remove_var("HOME");
        std::env::remove_var("RPROF_UNWIND_CACHE");
        assert_eq!(Cache::from_env(), None);
        for (v, value) in saved {
            match value {
                Some(value) => std::env::set_var(v, value),
                None => std::env::remove_var(v),
            }
        }
    }

    /// Only into a directory of our own that no one else may write; a link
    /// planted at the final name is replaced, never followed.
    #[test]
    fn writes_only_where_no_one_else_can() {
        use std::os::unix::fs::PermissionsExt;
        let d = test_dir("private");
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let shared = d.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = write_private(&shared, "t.rpuw", b"table").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
        assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0, "nothing left behind");

        let mine = d.join("mine");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(&victim, mine.join("t.rpuw")).unwrap();
        write_private(&mine, "t.rpuw", b"table").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(mine.join("t.rpuw")).unwrap(), b"table");
        assert!(!std::fs::symlink_metadata(mine.join("t.rpuw")).unwrap().file_type().is_symlink());
        // A link to a directory is not the directory.
        let link = d.join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        assert!(write_private(&link, "u.rpuw", b"x").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}

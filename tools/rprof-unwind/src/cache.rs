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
        let path = self.path_for(build_id);
        let tmp = self.dir.join(format!(
            ".{}.rpuw.{}.tmp",
            hex(build_id),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            std::fs::write(&tmp, &bytes)?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })
    }
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

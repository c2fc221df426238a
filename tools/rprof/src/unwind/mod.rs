//! Unwind tables for the session (issue 31): the files that run, compiled and uploaded with `RPROF_IOC_ADD_UNWIND`.
//!
//! With `--call-graph dwarf` (or `-g` on a module that takes tables) the
//! module walks the user side of a chain through the unwind table of the
//! file a frame is in, and by frame pointer where it has none.  The tables
//! come from here:
//!
//! - [`maps`]: the executable file mappings of `/proc/PID/maps`, one per
//!   (device, inode), and the processes a session covers.
//! - [`files`]: opening a mapped file (`/proc/PID/map_files/`, else the
//!   process's root), its table from `rprof-unwind`'s cache or compiled,
//!   the upload.
//! - [`state`]: what has been uploaded, what failed for good, and what
//!   the module's answers mean (EEXIST done, ENOSPC: no room for tables as large until a RESET,
//!   ENOTTY no tables at all).
//! - [`worker`]: the thread that does it, fed by the reader's [`Watch`]
//!   with the files COOKIE records name and the RESETs.
//! - [`counts`]: its figures, in `record`'s summary and, through a
//!   status file in the cache directory, in `rprof stat`.
//!
//! The table of a program that starts during the recording is uploaded
//! once its first COOKIE has been read: the first samples of a new
//! program (up to a drain and a compile later) have frame-pointer chains
//! only.  `record -- CMD` uploads CMD's own tables and those of what it
//! loads at start (`rprof_unwind::deps`) before CMD runs.

pub mod counts;
pub mod files;
pub mod maps;
pub mod state;
pub mod worker;

pub use counts::Counts;
pub use maps::{FileKey, Scope};
pub use worker::{Watch, Worker};

/// The cache of compiled tables: `rprof-unwind`'s (`$RPROF_UNWIND_CACHE`,
/// else `$XDG_CACHE_HOME/rprof/unwind`, else `~/.cache/rprof/unwind`).
pub fn cache() -> Option<rprof_unwind::cache::Cache> {
    rprof_unwind::cache::Cache::from_env()
}

/// The file `record -- PROGRAM` runs: PROGRAM if it has a `/`, else the
/// first executable file of that name in `PATH` (as execvp finds it).
pub fn program_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runs = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return runs(&p).then_some(p);
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| runs(p))
}

use crate::sampling::ChainMode;
use crate::session::{Session, Tables};
use crate::{Device, Error};
use rprof_abi::rprof_config;

/// What a session does about unwind tables once SET_CONFIG has answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// None asked for: frame pointers (`--call-graph fp`, no chains).
    None,
    /// The module took them: upload.
    Upload,
    /// `-g` on a module without them: frame pointers, said in one line.
    FallBack,
}

/// The [`Plan`] for chain mode `mode` when SET_CONFIG gave `tables`;
/// `--call-graph dwarf` on a module without tables is an error.
pub fn plan(tables: Tables, mode: Option<ChainMode>) -> Result<Plan, Error> {
    match tables {
        Tables::NotAsked => Ok(Plan::None),
        Tables::On => Ok(Plan::Upload),
        Tables::Refused if mode == Some(ChainMode::Tables) => Err(Error::Protocol(
            "--call-graph dwarf: the module takes no unwind tables (it refused \
             RPROF_CONFIG_UNWIND_TABLES: older than these tools); -g or --call-graph fp \
             walk frame pointers"
                .into(),
        )),
        Tables::Refused => Ok(Plan::FallBack),
    }
}

/// The line `-g` says when it falls back to frame pointers.
pub const FALLBACK_NOTE: &str = "rprof: the module takes no unwind tables (older than these \
     tools): call chains by frame pointers only";

/// Configures the session of `config` on `dev` for chain mode `mode`:
/// with tables (and their uploader, started on a descriptor of its own)
/// if asked and the module takes them, else without.  `config` is left
/// as the module took it.
pub fn configure<'dev>(
    dev: &'dev Device,
    config: &mut rprof_config,
    use_read: bool,
    mode: Option<ChainMode>,
) -> Result<(Session<'dev>, Option<Worker>), Error> {
    let (session, tables) = Session::new_probing(dev, config, use_read)?;
    match plan(tables, mode)? {
        Plan::None => Ok((session, None)),
        Plan::FallBack => {
            eprintln!("{FALLBACK_NOTE}");
            Ok((session, None))
        }
        Plan::Upload => {
            let worker = Worker::spawn(dev.try_clone()?, cache(), Scope::of(config))?;
            Ok((session, Some(worker)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        let (fp, dwarf, best) = (ChainMode::FramePointers, ChainMode::Tables, ChainMode::Best);
        assert_eq!(plan(Tables::NotAsked, None).unwrap(), Plan::None);
        assert_eq!(plan(Tables::NotAsked, Some(fp)).unwrap(), Plan::None);
        assert_eq!(plan(Tables::On, Some(best)).unwrap(), Plan::Upload);
        assert_eq!(plan(Tables::On, Some(dwarf)).unwrap(), Plan::Upload);
        assert_eq!(plan(Tables::Refused, Some(best)).unwrap(), Plan::FallBack);
        let e = plan(Tables::Refused, Some(dwarf)).unwrap_err().to_string();
        assert!(e.contains("--call-graph dwarf") && e.contains("fp"), "{e}");
    }
}

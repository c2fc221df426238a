//! The real [`Backend`]: files opened through `/proc`, tables from the cache or compiled, uploaded to `/dev/rprof`.

use super::maps::{key_of, FileKey};
use super::state::{Backend, Built, Failure};
use crate::Device;
use rprof_unwind::cache::{Cache, How};
use rprof_unwind::{CompileError, UnwindTable};
use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// The largest file compiled: 1 GiB (it is read whole).
pub const MAX_FILE: u64 = 1 << 30;

/// Where a file is opened from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A process's mapping of it: `/proc/PID/map_files/RANGE` (a deleted
    /// file, a file of another mount namespace; root only), else
    /// `/proc/PID/root/PATH`.
    Mapping {
        /// The process.
        pid: i32,
        /// `START-END` of the mapping, as maps spells it.
        range: String,
        /// Its path as maps shows it.
        path: String,
    },
    /// A path a COOKIE record gave: in the root of process `pid` if
    /// known, else in ours.
    Path {
        /// A process that may map it (the TASK before the COOKIE).
        pid: Option<i32>,
        /// The path.
        path: String,
    },
}

/// The paths to try for `source`, in order.
pub fn candidates(source: &Source) -> Vec<PathBuf> {
    // What d_path() adds to the path of an unlinked file; the path may
    // name another file now (the key check finds out).
    let strip = |p: &str| p.strip_suffix(" (deleted)").unwrap_or(p).to_string();
    match source {
        Source::Mapping { pid, range, path } => vec![
            PathBuf::from(format!("/proc/{pid}/map_files/{range}")),
            PathBuf::from(format!("/proc/{pid}/root{}", strip(path))),
        ],
        Source::Path {
            pid: Some(pid),
            path,
        } => vec![
            PathBuf::from(format!("/proc/{pid}/root{}", strip(path))),
            PathBuf::from(strip(path)),
        ],
        Source::Path { pid: None, path } => vec![PathBuf::from(strip(path))],
    }
}

/// Files, the table cache and the device of one session.
#[derive(Debug)]
pub struct DeviceBackend {
    dev: Device,
    cache: Option<Cache>,
}

impl DeviceBackend {
    /// Uploads through `dev` (a descriptor of the session's file), with
    /// tables kept in `cache` if there is one.
    pub fn new(dev: Device, cache: Option<Cache>) -> Self {
        DeviceBackend { dev, cache }
    }
}

/// The failure of a compile.
fn compile_failure(e: &CompileError) -> Failure {
    match e {
        CompileError::Io(_) => Failure::of_moment("read"),
        CompileError::NotElf(_) => Failure::of_file("not-elf"),
        CompileError::NotX86_64(_) => Failure::of_file("not-x86-64"),
    }
}

/// The bytes of the table, or why it makes no upload.
fn table_bytes(table: &UnwindTable) -> Result<Vec<u8>, Failure> {
    if table.rows.is_empty() {
        return Err(Failure::of_file("no-cfi"));
    }
    table.to_bytes().map_err(|_| Failure::of_file("bad-table"))
}

impl Backend for DeviceBackend {
    type Source = Source;
    type File = File;

    fn open(&mut self, key: FileKey, source: &Source) -> Result<File, Failure> {
        let mut failure = Failure::of_moment("open");
        for path in candidates(source) {
            let Ok(file) = File::open(&path) else {
                continue;
            };
            match file.metadata() {
                Ok(m) if !m.is_file() => failure = Failure::of_file("not-a-file"),
                Ok(m) if key_of(&m) == key => return Ok(file),
                // Replaced since it was mapped: another file now.
                Ok(_) => failure = Failure::of_moment("changed"),
                Err(_) => {}
            }
        }
        Err(failure)
    }

    fn build(&mut self, file: &File) -> Result<Built, Failure> {
        let len = file
            .metadata()
            .map_err(|_| Failure::of_moment("read"))?
            .len();
        if len > MAX_FILE {
            return Err(Failure::of_file("too-large"));
        }
        let mut data = Vec::with_capacity(len as usize);
        file.take(MAX_FILE)
            .read_to_end(&mut data)
            .map_err(|_| Failure::of_moment("read"))?;
        let (table, cache_hit) = match &self.cache {
            Some(cache) => {
                let lookup = cache
                    .table_for_bytes(&data)
                    .map_err(|e| compile_failure(&e))?;
                (lookup.table, matches!(lookup.how, How::Hit))
            }
            None => {
                let compiled = rprof_unwind::compile(&data).map_err(|e| compile_failure(&e))?;
                (compiled.table, false)
            }
        };
        Ok(Built {
            bytes: table_bytes(&table)?,
            cache_hit,
        })
    }

    fn upload(&mut self, file: &File, table: &[u8]) -> Result<(), i32> {
        self.dev
            .add_unwind(file.as_fd(), table)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_files_are_looked_for() {
        let m = Source::Mapping {
            pid: 7,
            range: "1000-2000".into(),
            path: "/tmp/a b (deleted)".into(),
        };
        assert_eq!(
            candidates(&m),
            [
                PathBuf::from("/proc/7/map_files/1000-2000"),
                PathBuf::from("/proc/7/root/tmp/a b")
            ]
        );
        let p = Source::Path {
            pid: None,
            path: "/bin/x".into(),
        };
        assert_eq!(candidates(&p), [PathBuf::from("/bin/x")]);
    }

    /// The test program itself, through our own mapping: opened, checked,
    /// compiled (no cache); a wrong key is "changed"; a plain file as the
    /// device refuses the upload with ENOTTY.
    #[test]
    fn own_executable() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe_key = key_of(&std::fs::metadata("/proc/self/exe").unwrap());
        let m = super::super::maps::exec_files(&maps)
            .into_iter()
            .find(|m| m.key == exe_key)
            .unwrap();
        let dir = std::env::temp_dir().join(format!("rprof-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake_dev = dir.join("dev");
        std::fs::write(&fake_dev, b"").unwrap();
        let mut b = DeviceBackend::new(Device::open(&fake_dev).unwrap(), None);
        let source = Source::Mapping {
            pid: std::process::id() as i32,
            range: m.range.clone(),
            path: m.path.clone(),
        };
        let file = b
            .open(exe_key, &source)
            .expect("open through our own mapping");
        let wrong = FileKey {
            ino: exe_key.ino + 1,
            ..exe_key
        };
        assert_eq!(
            b.open(wrong, &source).err(),
            Some(Failure::of_moment("changed"))
        );
        let built = b.build(&file).expect("our own executable compiles");
        assert!(!built.cache_hit && built.bytes.len() > 48);
        assert_eq!(b.upload(&file, &built.bytes), Err(libc::ENOTTY));
        // Not an ELF file.
        let text = File::open(&fake_dev).unwrap();
        assert_eq!(b.build(&text), Err(Failure::of_file("not-elf")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Separate debug files, found the way distributions ship them.
//!
//! A packaged binary is stripped; its `.symtab` and DWARF live in another
//! file (Debian's `-dbgsym` packages, Fedora's `-debuginfo`), found as
//! GDB finds it:
//!
//! 1. by build-id: `/usr/lib/debug/.build-id/XX/YYYY….debug`, where `XX`
//!    is the first byte of the build-id in hex and `YYYY…` the rest; the
//!    file found must carry the same build-id;
//! 2. by `.gnu_debuglink` (a file name and the CRC-32 of that file): in
//!    the binary's directory, in its `.debug/` subdirectory, and under
//!    `/usr/lib/debug` followed by the binary's directory; the file found
//!    must have that CRC.
//!
//! Paths are the recorded ones, opened in a [`Root`], so under `--symfs`
//! the debug files are the symfs's.

use crate::Root;
use object::Object;

/// Where the build-id tree of debug files is.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// A debug file found for a binary.
#[derive(Debug, Clone)]
pub struct DebugFile {
    /// Its path, as looked up in the root.
    pub path: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// The separate debug file of the ELF file whose bytes are `data` and
/// whose recorded path is `path`, if one is found in `root` and matches
/// (see the module's documentation).
pub fn find(root: &Root, path: &str, data: &[u8]) -> Option<DebugFile> {
    let elf = object::File::parse(data).ok()?;
    if let Some(id) = elf.build_id().ok().flatten().filter(|id| id.len() >= 2) {
        let hex = crate::elf::hex(id);
        let candidate = format!("{DEBUG_DIR}/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        if let Ok(debug) = root.read(&candidate) {
            let same = object::File::parse(&*debug)
                .ok()
                .and_then(|d| d.build_id().ok().flatten().map(|b| b == id))
                .unwrap_or(false);
            if same {
                return Some(DebugFile {
                    path: candidate,
                    data: debug,
                });
            }
        }
    }
    let (name, crc) = elf.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    // A debuglink is a file name, never a path.
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    let dir = match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    };
    let candidates = [
        format!("{dir}/{name}"),
        format!("{dir}/.debug/{name}"),
        format!("{DEBUG_DIR}{dir}/{name}"),
    ];
    candidates.into_iter().find_map(|candidate| {
        if candidate == path {
            return None;
        }
        let debug = root.read(&candidate).ok()?;
        (crc32fast::hash(&debug) == crc).then_some(DebugFile {
            path: candidate,
            data: debug,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dwarf::Lines;
    use crate::ElfImage;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn run(cmd: &mut Command) {
        let st = cmd.status().unwrap();
        assert!(st.success(), "{cmd:?} failed");
    }

    /// A C program with a static (local) function, built with `cflags`
    /// into `dir/name`.
    fn build(dir: &Path, name: &str, cflags: &[&str]) -> PathBuf {
        crate::testprog::build_c(dir, "dbg.c", name, "local_hot", true, cflags)
    }

    /// `objcopy --only-keep-debug BIN DEBUG`, then `strip BIN`.
    fn split(bin: &Path, debug: &Path) {
        run(Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(bin)
            .arg(debug));
        run(Command::new("strip").arg("--strip-all").arg(bin));
    }

    /// The symbols and lines of `bin` (recorded as `path`) once its debug
    /// file is looked up in `root`: `local_hot`'s address, and whether a
    /// line is known there.
    fn symbolize(root: &Root, path: &str) -> (Option<String>, Option<u32>) {
        let data = root.read(path).unwrap();
        let mut image = ElfImage::parse(&data).unwrap();
        let debug = find(root, path, &data);
        let lines = match &debug {
            Some(d) => {
                image.add_symbols_of(&ElfImage::parse(&d.data).unwrap());
                Lines::parse(&d.data)
            }
            None => Lines::parse(&data),
        };
        let Some(&(addr, _)) = image.symbols_named("local_hot").first() else {
            return (debug.map(|d| d.path), None);
        };
        let line = lines.and_then(|l| l.line(addr)).map(|(file, line)| {
            assert!(file.ends_with("dbg.c"), "{file}");
            line
        });
        (debug.map(|d| d.path), line)
    }

    fn tmp(name: &str) -> PathBuf {
        crate::test_dir("dbg", name)
    }

    /// A stripped binary's local function and its lines come back from
    /// its debug file in the build-id tree (under a symfs, as a sysroot
    /// has it) and by `.gnu_debuglink` beside it or in `.debug/`; a debug
    /// file of another build or with another CRC is not used.
    #[test]
    fn stripped_binaries_find_their_debug_files() {
        let fs = tmp("symfs");
        std::fs::create_dir_all(fs.join("bin")).unwrap();
        let bin = build(&fs.join("bin"), "prog", &[]);
        let id = ElfImage::load(&bin).unwrap().build_id.unwrap();
        let hex = crate::elf::hex(&id);
        let tree = fs.join(format!("usr/lib/debug/.build-id/{}", &hex[..2]));
        std::fs::create_dir_all(&tree).unwrap();
        split(&bin, &tree.join(format!("{}.debug", &hex[2..])));
        let root = Root::symfs(&fs).unwrap();
        let (found, line) = symbolize(&root, "/bin/prog");
        assert_eq!(
            found.as_deref(),
            Some(&*format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &hex[..2],
                &hex[2..]
            ))
        );
        assert!(line.is_some_and(|l| l > 0), "no line for local_hot");
        // Without the debug file, the stripped binary has no local_hot.
        std::fs::remove_dir_all(fs.join("usr")).unwrap();
        assert_eq!(symbolize(&root, "/bin/prog"), (None, None));

        // .gnu_debuglink, in .debug/ beside the binary (host root).
        let dir = tmp("link");
        let bin = build(&dir, "prog", &[]);
        std::fs::create_dir_all(dir.join(".debug")).unwrap();
        let debug = dir.join(".debug/prog.dbg");
        split(&bin, &debug);
        run(Command::new("objcopy")
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(&bin));
        let path = bin.to_string_lossy().into_owned();
        let (found, line) = symbolize(&Root::host(), &path);
        assert_eq!(found.as_deref(), Some(&*debug.to_string_lossy()));
        assert!(line.is_some_and(|l| l > 0));
        // Another file under that name (a CRC mismatch) is refused.
        let mut bytes = std::fs::read(&debug).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&debug, &bytes).unwrap();
        assert_eq!(symbolize(&Root::host(), &path), (None, None));
        std::fs::remove_dir_all(&fs).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// DWARF compressed in place (`gcc -gz`, zlib) gives the same lines as
    /// uncompressed DWARF.
    #[test]
    fn compressed_dwarf_has_lines() {
        let dir = tmp("gz");
        let plain = build(&dir, "plain", &[]);
        let gz = build(&dir, "gz", &["-gz=zlib"]);
        let sections = Command::new("readelf")
            .arg("-SW")
            .arg(&gz)
            .output()
            .unwrap();
        let sections = String::from_utf8_lossy(&sections.stdout).into_owned();
        let info = sections
            .lines()
            .find(|l| l.contains(".debug_info"))
            .unwrap();
        // readelf's flags column: C for SHF_COMPRESSED.
        assert!(
            info.split_whitespace()
                .any(|f| f.contains('C') && f.len() <= 4),
            "{info}"
        );
        let host = Root::host();
        let a = symbolize(&host, &plain.to_string_lossy());
        let b = symbolize(&host, &gz.to_string_lossy());
        assert!(a.1.is_some_and(|l| l > 0), "{a:?}");
        assert_eq!(a, b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

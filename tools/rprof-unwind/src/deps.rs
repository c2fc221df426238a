//! The files a program loads at start: its interpreter and the DT_NEEDED closure, found as ld.so finds them.
//!
//! `rprof record -- CMD` uploads the tables of these before CMD runs, so
//! that its first samples walk through them too (tables of files that
//! appear later come from the stream's COOKIE records, a drain behind).
//! The search is ld.so's without its cache: DT_RPATH (when there is no
//! DT_RUNPATH), `LD_LIBRARY_PATH`, DT_RUNPATH, then the default
//! directories.  A library it does not find is left out: it is uploaded
//! when its COOKIE comes.

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What an ELF file asks the dynamic loader for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Deps {
    /// PT_INTERP: the loader itself.
    pub interp: Option<String>,
    /// DT_NEEDED, in order.
    pub needed: Vec<String>,
    /// DT_RPATH, a `:`-separated list (ignored when there is a DT_RUNPATH).
    pub rpath: Option<String>,
    /// DT_RUNPATH, a `:`-separated list.
    pub runpath: Option<String>,
}

/// The [`Deps`] of the 64-bit ELF file `data`; `None` for anything else
/// or a file that does not parse.
pub fn deps(data: &[u8]) -> Option<Deps> {
    let header = elf::FileHeader64::<object::Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let mut out = Deps::default();
    for ph in header.program_headers(endian, data).ok()? {
        if let Ok(Some(interp)) = ph.interpreter(endian, data) {
            out.interp = Some(String::from_utf8_lossy(interp).into_owned());
        }
    }
    let sections = header.sections(endian, data).ok()?;
    let Ok(Some((dyns, link))) = sections.dynamic(endian, data) else {
        return Some(out);
    };
    let strings = sections.strings(endian, data, link).ok()?;
    for d in dyns {
        let text = || d.string(endian, strings).ok().map(|s| String::from_utf8_lossy(s).into_owned());
        match d.d_tag(endian) as u32 {
            elf::DT_NEEDED => out.needed.extend(text()),
            elf::DT_RPATH => out.rpath = text(),
            elf::DT_RUNPATH => out.runpath = text(),
            _ => {}
        }
    }
    Some(out)
}

/// The most of a file [`read_elf`] reads: its program and section headers
/// and `.dynamic` are in the first megabytes of any real program; a file
/// cut there parses as far as it goes.
pub const READ_MAX: u64 = 64 << 20;

/// `path`'s bytes for [`closure`], if it is a regular file: at most
/// [`READ_MAX`] of them.
pub fn read_elf(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut data = Vec::new();
    f.take(READ_MAX).read_to_end(&mut data).ok()?;
    Some(data)
}

/// ld.so's default directories on x86-64 Debian (multiarch first).
pub const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// The directories of a DT_RPATH/DT_RUNPATH list, `$ORIGIN` (and
/// `${ORIGIN}`) taken as `origin`.
fn path_list(list: &str, origin: &Path) -> Vec<PathBuf> {
    let o = origin.to_string_lossy();
    list.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d.replace("${ORIGIN}", &o).replace("$ORIGIN", &o)))
        .collect()
}

/// The program `exe` and every file it loads at start, found from the
/// directories named: `exe` first, then its interpreter and libraries,
/// breadth first, each once, regular files only; at most `max` files.
/// `read` reads a file (a test gives its own; [`read_elf`] for real ones).
pub fn closure(
    exe: &Path,
    ld_library_path: Option<&str>,
    max: usize,
    read: &mut dyn FnMut(&Path) -> Option<Vec<u8>>,
) -> Vec<PathBuf> {
    let mut out = vec![exe.to_path_buf()];
    let mut seen: HashSet<PathBuf> = out.iter().cloned().collect();
    let mut i = 0;
    while i < out.len() && out.len() < max {
        let file = out[i].clone();
        i += 1;
        let Some(d) = read(&file).and_then(|data| deps(&data)) else {
            continue;
        };
        let origin = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut dirs = Vec::new();
        if d.runpath.is_none() {
            dirs.extend(d.rpath.as_deref().map(|l| path_list(l, &origin)).unwrap_or_default());
        }
        dirs.extend(ld_library_path.map(|l| path_list(l, &origin)).unwrap_or_default());
        dirs.extend(d.runpath.as_deref().map(|l| path_list(l, &origin)).unwrap_or_default());
        dirs.extend(DEFAULT_DIRS.iter().map(PathBuf::from));
        // Regular files only: a hostile ELF may name /dev/zero or a FIFO,
        // which reading would never finish.
        let mut add = |p: PathBuf| {
            if out.len() < max && p.is_file() && seen.insert(p.clone()) {
                out.push(p);
            }
        };
        if let Some(interp) = &d.interp {
            add(PathBuf::from(interp));
        }
        for name in &d.needed {
            if name.contains('/') {
                add(PathBuf::from(name));
                continue;
            }
            if let Some(p) = dirs.iter().map(|dir| dir.join(name)).find(|p| p.is_file()) {
                add(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle is ldd (the loader itself, in trace mode) on this
    /// machine's own /bin/ls: every library it names is in our closure.
    #[test]
    fn ls_closure_matches_ldd() {
        let Ok(out) = std::process::Command::new("ldd").arg("/bin/ls").output() else {
            eprintln!("skipped: no ldd");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let ours = closure(Path::new("/bin/ls"), None, 64, &mut |p| std::fs::read(p).ok());
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let ours: HashSet<PathBuf> = ours.iter().map(|p| canon(p)).collect();
        let mut n = 0;
        for line in text.lines() {
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
            // "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
            let path = match line.split_whitespace().collect::<Vec<_>>().as_slice() {
                [_, "=>", p, ..] if p.starts_with('/') => *p,
                [p, ..] if p.starts_with('/') => *p,
                _ => continue,
            };
            n += 1;
            assert!(ours.contains(&canon(Path::new(path))), "ldd names {path}, our closure has {ours:?}");
        }
        assert!(n >= 2, "ldd named {n} files: {text}");
    }

    #[test]
    fn origin_and_order() {
        assert_eq!(
            path_list("$ORIGIN/../lib:${ORIGIN}:/opt/x::", Path::new("/a/bin")),
            [PathBuf::from("/a/bin/../lib"), PathBuf::from("/a/bin"), PathBuf::from("/opt/x")]
        );
        // Not ELF, truncated, empty: no deps, no panic; the closure is the
        // file alone.
        assert_eq!(deps(b"#!/bin/sh\n"), None);
        assert_eq!(deps(&[]), None);
        let ls = std::fs::read("/bin/ls").unwrap();
        for cut in [16, 64, 1000, ls.len() / 2] {
            let _ = deps(&ls[..cut]);
        }
        let got = closure(Path::new("/x"), None, 8, &mut |_| Some(b"junk".to_vec()));
        assert_eq!(got, [PathBuf::from("/x")]);
        // No device, FIFO or directory is read.
        assert_eq!(read_elf(Path::new("/dev/zero")), None);
        assert_eq!(read_elf(Path::new("/")), None);
    }

    #[test]
    fn bounded() {
        let got = closure(Path::new("/bin/ls"), None, 2, &mut |p| std::fs::read(p).ok());
        assert_eq!(got.len(), 2);
    }
}

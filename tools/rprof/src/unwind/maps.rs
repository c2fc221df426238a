//! The executable file mappings of processes (`/proc/PID/maps`), and which processes a session covers.

use rprof_symbols::dev::new_encode_stat_dev;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A file as the module names it: `new_encode_dev()` of its device (what a
/// COOKIE record carries) and its inode number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKey {
    /// `new_encode_dev()` of the file's device.
    pub dev: u64,
    /// The inode number.
    pub ino: u64,
}

/// One executable, file-backed mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecMapping {
    /// `START-END` as maps spells it: the name of its entry in
    /// `/proc/PID/map_files/`.
    pub range: String,
    /// The file.
    pub key: FileKey,
    /// The path as maps shows it (` (deleted)` included; newlines come
    /// escaped as `\012`).
    pub path: String,
}

/// `MAJOR:MINOR` of maps (hex) as `new_encode_dev()` gives it.
fn parse_dev(s: &str) -> Option<u64> {
    let (major, minor) = s.split_once(':')?;
    let major = u64::from_str_radix(major, 16).ok()?;
    let minor = u64::from_str_radix(minor, 16).ok()?;
    Some((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12))
}

/// One line of `/proc/PID/maps`, if it is an executable mapping of a file:
///
/// ```text
/// 7f2c1a000000-7f2c1a1b0000 r-xp 00028000 08:01 1837 /usr/lib/x86_64-linux-gnu/libc.so.6
/// ```
///
/// Anonymous executable memory (inode 0: JIT code), the kernel's special
/// mappings (`[vdso]`, `[vsyscall]`: no file) and mappings that cannot
/// run are left out.  The path is everything after the inode and its
/// padding, spaces included.
pub fn parse_line(line: &str) -> Option<ExecMapping> {
    let mut rest = line;
    let mut field = || {
        let s = rest.trim_start_matches(' ');
        let end = s.find(' ').unwrap_or(s.len());
        let (f, r) = s.split_at(end);
        rest = r;
        f
    };
    let range = field();
    let perms = field();
    let _offset = field();
    let dev = field();
    let ino = field();
    let path = rest.trim_start_matches(' ');
    if perms.as_bytes().get(2) != Some(&b'x') || !range.contains('-') {
        return None;
    }
    let ino: u64 = ino.parse().ok()?;
    if ino == 0 || !path.starts_with('/') {
        return None;
    }
    Some(ExecMapping {
        range: range.to_string(),
        key: FileKey {
            dev: parse_dev(dev)?,
            ino,
        },
        path: path.to_string(),
    })
}

/// The executable file mappings of a maps text, one per file (its first
/// mapping: a file mapped twice is one table).
pub fn exec_files(maps: &str) -> Vec<ExecMapping> {
    let mut seen = HashSet::new();
    maps.lines()
        .filter_map(parse_line)
        .filter(|m| seen.insert(m.key))
        .collect()
}

/// The processes a session samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process.
    All,
    /// One process, with or without the processes below it.
    Pid {
        /// The process.
        pid: i32,
        /// Its descendants too.
        descendants: bool,
    },
}

impl Scope {
    /// The scope of a configuration (its pid filter).
    pub fn of(config: &rprof_abi::rprof_config) -> Scope {
        use rprof_abi::{RPROF_CONFIG_PID_DESCENDANTS, RPROF_CONFIG_PID_FILTER};
        if config.flags & RPROF_CONFIG_PID_FILTER == 0 {
            return Scope::All;
        }
        Scope::Pid {
            pid: config.pid,
            descendants: config.flags & RPROF_CONFIG_PID_DESCENDANTS != 0,
        }
    }
}

/// The parent of a process, from its `/proc/PID/stat` text: the fourth
/// field, counted after the command's closing parenthesis (the command
/// may hold spaces and parentheses).
pub fn parent_of(stat: &str) -> Option<i32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// The processes of `scope`, in `proc` (normally `/proc`): every process
/// of the system, or `pid` (if it exists) and with `descendants` every
/// process below it (by their `stat`'s parent).
pub fn processes(proc: &Path, scope: Scope) -> Vec<i32> {
    let all = || -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir(proc) else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    };
    match scope {
        Scope::All => all(),
        Scope::Pid {
            pid,
            descendants: false,
        } => vec![pid],
        Scope::Pid {
            pid,
            descendants: true,
        } => {
            let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
            for p in all() {
                let stat = std::fs::read_to_string(proc.join(p.to_string()).join("stat"));
                if let Some(parent) = stat.ok().as_deref().and_then(parent_of) {
                    children.entry(parent).or_default().push(p);
                }
            }
            descendants_of(pid, &children)
        }
    }
}

/// `pid` and everything below it in `children` (parent -> children).
pub fn descendants_of(pid: i32, children: &HashMap<i32, Vec<i32>>) -> Vec<i32> {
    let mut out = vec![pid];
    let mut seen: HashSet<i32> = out.iter().copied().collect();
    let mut i = 0;
    while i < out.len() {
        for &c in children.get(&out[i]).into_iter().flatten() {
            if seen.insert(c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

/// The `st_dev`/`st_ino` of an open file as a [`FileKey`].
pub fn key_of(meta: &std::fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    FileKey {
        dev: new_encode_stat_dev(meta.dev()),
        ino: meta.ino(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1048601                    /usr/bin/prog
55d0c0a02000-55d0c0a06000 r-xp 00002000 08:01 1048601                    /usr/bin/prog
55d0c0a06000-55d0c0a08000 r--p 00006000 08:01 1048601                    /usr/bin/prog
55d0c1e3b000-55d0c1e5c000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 rwxp 00000000 00:00 0 
7f2c19e28000-7f2c19fbd000 r-xp 00028000 08:01 1837                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f2c1a100000-7f2c1a101000 r-xp 00001000 103:02 524300                    /opt/My App/lib plugin.so
7f2c1a200000-7f2c1a201000 --xp 00001000 00:1a 77                         /memfd:jit (deleted)
7f2c1a300000-7f2c1a301000 r-xp 00001000 08:01 999                        /tmp/old prog (deleted)
7f2c1a400000-7f2c1a401000 r-xp 00003000 08:01 1837                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f2c1a500000-7f2c1a501000 r-xs 00000000 08:01 1234                       /dev/shm/code
7ffd4b5f2000-7ffd4b5f4000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn exec_file_mappings_one_per_file() {
        let files = exec_files(MAPS);
        let got: Vec<(&str, u64, u64, &str)> = files
            .iter()
            .map(|m| (m.range.as_str(), m.key.dev, m.key.ino, m.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("55d0c0a02000-55d0c0a06000", 0x801, 1048601, "/usr/bin/prog"),
                (
                    "7f2c19e28000-7f2c19fbd000",
                    0x801,
                    1837,
                    "/usr/lib/x86_64-linux-gnu/libc.so.6"
                ),
                // 103:02 is new_encode_dev(259, 2).
                (
                    "7f2c1a100000-7f2c1a101000",
                    (259 << 8) | 2,
                    524300,
                    "/opt/My App/lib plugin.so"
                ),
                (
                    "7f2c1a200000-7f2c1a201000",
                    0x1a,
                    77,
                    "/memfd:jit (deleted)"
                ),
                (
                    "7f2c1a300000-7f2c1a301000",
                    0x801,
                    999,
                    "/tmp/old prog (deleted)"
                ),
                ("7f2c1a500000-7f2c1a501000", 0x801, 1234, "/dev/shm/code"),
            ],
            "anonymous, [vdso], [vsyscall] and non-executable mappings are left out, \
             libc's second mapping is the same file"
        );
    }

    #[test]
    fn odd_lines_are_skipped() {
        for line in [
            "",
            "garbage",
            "1000-2000 r-xp 0 08:01",
            "1000-2000 r-xp 0 08:01 x /bin/sh",
            "1000-2000 r-xp 0 zz:01 5 /bin/sh",
            "1000-2000 r-x",
        ] {
            assert_eq!(parse_line(line), None, "{line:?}");
        }
        // A large minor: new_encode_dev puts its high bits at 20.
        let m = parse_line("1000-2000 r-xp 0 103:10002 5 /x").unwrap();
        assert_eq!(m.key.dev, 0x02 | (0x103 << 8) | (0x10000 << 12));
        assert_eq!(
            rprof_symbols::dev::new_decode_dev(m.key.dev),
            (0x103, 0x10002)
        );
    }

    #[test]
    fn parents_and_descendants() {
        assert_eq!(parent_of("42 (a b) c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("42 (x) R"), None);
        let children: HashMap<i32, Vec<i32>> = [
            (1, vec![10, 20]),
            (10, vec![11]),
            (11, vec![12]),
            (30, vec![31]),
        ]
        .into_iter()
        .collect();
        assert_eq!(descendants_of(10, &children), [10, 11, 12]);
        assert_eq!(descendants_of(99, &children), [99]);
        let mut all = descendants_of(1, &children);
        all.sort();
        assert_eq!(all, [1, 10, 11, 12, 20]);
    }

    #[test]
    fn scope_of_a_configuration() {
        use rprof_abi::*;
        let mut c = rprof_config::new();
        assert_eq!(Scope::of(&c), Scope::All);
        c.flags = RPROF_CONFIG_PID_FILTER;
        c.pid = 5;
        assert_eq!(
            Scope::of(&c),
            Scope::Pid {
                pid: 5,
                descendants: false
            }
        );
        c.flags |= RPROF_CONFIG_PID_DESCENDANTS;
        assert_eq!(
            Scope::of(&c),
            Scope::Pid {
                pid: 5,
                descendants: true
            }
        );
    }

    /// This process's own maps: its executable is among its files.
    #[test]
    fn own_maps() {
        let text = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe = std::fs::metadata("/proc/self/exe").unwrap();
        let files = exec_files(&text);
        assert!(
            files.iter().any(|m| m.key == key_of(&exe)),
            "{files:?} lacks the executable's {:?}",
            key_of(&exe)
        );
        let me = std::process::id() as i32;
        let all = processes(Path::new("/proc"), Scope::All);
        assert!(all.contains(&me));
        let tree = processes(
            Path::new("/proc"),
            Scope::Pid {
                pid: me,
                descendants: true,
            },
        );
        assert_eq!(tree.first(), Some(&me));
    }
}

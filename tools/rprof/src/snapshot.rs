//! What `rprof record` keeps of the system for reporting later: kallsyms,
//! the module list, and every file cookie's path, device, inode and
//! build-id (see `rprof-data`).

use rprof_data::{FileInfo, Snapshot, Stats, FILE_MISSING, FILE_NO_BUILD_ID, FILE_REPLACED};
use rprof_decode::CookieName;
use rprof_symbols::dev::same_device;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `/proc/kallsyms`, or "" (with a warning) if it cannot be read.
pub fn read_kallsyms() -> String {
    match std::fs::read_to_string("/proc/kallsyms") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rprof: warning: cannot read /proc/kallsyms ({e}): kernel samples will stay unresolved");
            String::new()
        }
    }
}

/// `/proc/modules`, or "" if it cannot be read.
pub fn read_modules() -> String {
    std::fs::read_to_string("/proc/modules").unwrap_or_default()
}

/// What the snapshot knows of file cookie `cookie`, named `path` with
/// `dev`/`ino` by its COOKIE record.
pub fn file_info(cookie: u64, path: &str, flags: u16, dev: u64, ino: u64) -> FileInfo {
    let mut info = FileInfo {
        cookie,
        dev,
        ino,
        cookie_flags: u32::from(flags),
        path: path.to_string(),
        ..FileInfo::default()
    };
    match std::fs::metadata(Path::new(path)) {
        Err(_) => info.snapshot_flags |= FILE_MISSING,
        Ok(m) if !(same_device(dev, m.dev()) && m.ino() == ino) => {
            info.snapshot_flags |= FILE_REPLACED
        }
        Ok(_) => match rprof_symbols::read_build_id(Path::new(path)) {
            Ok(Some(id)) => info.build_id = id,
            _ => info.snapshot_flags |= FILE_NO_BUILD_ID,
        },
    }
    info
}

/// The snapshot at the end of a recording whose stream named `names`.
pub fn take(names: &BTreeMap<u64, CookieName>, stats: Option<Stats>) -> Snapshot {
    let files = names
        .iter()
        .filter_map(|(cookie, name)| match name {
            CookieName::File {
                path,
                flags,
                dev,
                ino,
            } => Some(file_info(*cookie, path, *flags, *dev, *ino)),
            CookieName::Module { .. } => None,
        })
        .collect();
    Snapshot {
        kallsyms: read_kallsyms(),
        modules: read_modules(),
        files,
        stats,
    }
}

/// The totals of `RPROF_IOC_GET_STATS` as `rprof-data` keeps them.
pub fn stats_of(s: &rprof_abi::rprof_stats) -> Stats {
    let t = &s.total;
    Stats {
        samples: t.samples,
        delivered: t.delivered,
        lost_ring: t.lost_ring,
        lost_buffer: t.lost_buffer,
        lost_no_mm: t.lost_no_mm,
        lost_no_mapping: t.lost_no_mapping,
        lost_no_cookie: t.lost_no_cookie,
        throttled: t.throttled,
        ring_high_water: t.ring_high_water,
        drains: s.drains,
        wakeups: s.wakeups,
        lost_mm_busy: s.lost_mm_busy,
        locked_bytes: s.locked_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_info_of_this_binary_and_of_nothing() {
        let exe = std::env::current_exe().unwrap();
        let m = std::fs::metadata(&exe).unwrap();
        let (maj, min) = rprof_symbols::dev::stat_decode_dev(m.dev());
        let dev = u64::from(min & 0xff) | (u64::from(maj) << 8) | (u64::from(min & !0xff) << 12);
        let path = exe.to_str().unwrap();
        let info = file_info(16, path, 0, dev, m.ino());
        assert_eq!(
            info.snapshot_flags & (FILE_MISSING | FILE_REPLACED),
            0,
            "{info:?}"
        );
        assert_eq!(
            info.build_id.is_empty(),
            info.snapshot_flags & FILE_NO_BUILD_ID != 0
        );
        let other = file_info(16, path, 0, dev, m.ino() + 1);
        assert_eq!(other.snapshot_flags, FILE_REPLACED);
        assert!(other.build_id.is_empty());
        let gone = file_info(17, "/nonexistent/rprof/x", 1, 1, 2);
        assert_eq!(gone.snapshot_flags, FILE_MISSING);
        assert_eq!(gone.cookie_flags, 1);
    }
}

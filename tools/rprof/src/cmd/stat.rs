//! `rprof stat`: the module's statistics, and the figures of the last unwind-table uploader.

use rprof::format::write_stats;
use rprof::unwind::counts::{read_status, status_path};
use rprof::{Device, Error};
use std::io::Write;
use std::path::Path;

/// Prints the statistics table, total and per CPU, then the last
/// uploader's line if its status file is in the table cache.
pub fn run(path: &Path) -> Result<(), Error> {
    let dev = Device::open(path)?;
    dev.check_version()?;
    let (stats, cpus) = dev.stats(true)?;
    let mut out = std::io::stdout().lock();
    write_stats(&mut out, &stats, &cpus)
        .and_then(|()| uploader_line(&mut out))
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing to standard output", e))
}

/// `unwind tables (rprof pid 42, running): uploaded 12 (340 KiB), ...`:
/// the last recording's (or top's) uploader, if there was one.
fn uploader_line(out: &mut impl Write) -> std::io::Result<()> {
    let Some(cache) = rprof::unwind::cache() else {
        return Ok(());
    };
    let Some((pid, counts)) = read_status(&status_path(cache.dir())) else {
        return Ok(());
    };
    let state = if Path::new(&format!("/proc/{pid}")).exists() {
        "running"
    } else {
        "ended"
    };
    writeln!(out, "unwind tables (rprof pid {pid}, {state}): {counts}")
}

//! `rprof stat`: the module's statistics.

use rprof::format::write_stats;
use rprof::{Device, Error};
use std::io::Write;
use std::path::Path;

/// Prints the statistics table, total and per CPU.
pub fn run(path: &Path) -> Result<(), Error> {
    let dev = Device::open(path)?;
    dev.check_version()?;
    let (stats, cpus) = dev.stats(true)?;
    let mut out = std::io::stdout().lock();
    write_stats(&mut out, &stats, &cpus)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing to standard output", e))
}

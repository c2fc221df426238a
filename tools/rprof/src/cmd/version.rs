//! `rprof version`: this program's ABI version and the module's.

use rprof::device::check_abi_version;
use rprof::{Device, Error};
use rprof_abi::RPROF_ABI_VERSION;
use std::path::Path;

/// Prints both versions; a module with another one is an error.
pub fn run(path: &Path) -> Result<(), Error> {
    println!(
        "rprof {} (ABI version {RPROF_ABI_VERSION})",
        env!("CARGO_PKG_VERSION")
    );
    let dev = Device::open(path)?;
    let module = dev.version()?;
    println!("module ABI version {module}");
    check_abi_version(module)
}

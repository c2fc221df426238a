// SPDX-License-Identifier: GPL-2.0

//! rprof: a system-wide statistical profiler.
//!
//! Samples from perf_event counters on every CPU go into lock-free per-CPU
//! rings, a workqueue drains them into one event buffer, and `/dev/rprof`
//! hands the buffer to userspace through `read()`, `mmap()` and `poll()`.
//! See `docs/design.md` for where each piece lives and why.
//!
//! This file holds only the module type and the list of modules.

use kernel::c_str;
use kernel::prelude::*;

// Bottom to top: each uses only those above it in this list.
mod kapi;
mod uapi;
mod sampling;
mod chains;
mod buffer;
mod resolve;
mod device;

#[cfg(rprof_bench)]
mod bench;
#[cfg(rprof_kunit)]
mod tests;

kapi::compat::module_with_author! {
    type: RprofModule,
    name: "rprof",
    author: "rprof developers",
    description: "rprof system-wide statistical profiler",
    license: "GPL",
}

/// The loaded module: the misc device and, through it, everything else,
/// and the CPU hotplug state.  Dropping it deregisters both (fields drop in
/// order); no file can be open by then because every open file holds a
/// reference on the module, so no session exists either.
struct RprofModule {
    _device: kapi::miscdev::Registration<device::fops::RprofFile>,
    _hotplug: kapi::hotplug::Registration<device::fops::Rprof>,
    _modules: resolve::modules::Registration<device::fops::Rprof>,
    // After the device: no session follows processes any more.
    _follow: resolve::follow::ExitProbe,
    // Last: freed after everything that could take a call chain is gone.
    _chains: chains::scratch::ChainBuffers,
}

impl kernel::Module for RprofModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let params = device::params::Params::from_module()?;
        #[cfg(rprof_bench)]
        bench::run();
        // SAFETY: Trial builds only: prints a WARN and returns.
        #[cfg(rprof_inject_warn)]
        unsafe {
            kapi::helpers::rprof_inject_warn()
        };
        let scratch = chains::scratch::ChainBuffers::new()?;
        let ctx = device::fops::Rprof::new(params)?;
        let hotplug = kapi::hotplug::Registration::register(ctx.clone())?;
        let modules = resolve::modules::Registration::register(ctx.clone())?;
        let device = kapi::miscdev::Registration::register(c_str!("rprof"), module, ctx)?;
        pr_info!(
            "/dev/rprof ready (ABI {}, ring_records={}, buffer_pages={})\n",
            uapi::RPROF_ABI_VERSION,
            params.ring_records,
            params.buffer_pages
        );
        Ok(Self { _device: device, _hotplug: hotplug, _modules: modules, _follow: resolve::follow::ExitProbe, _chains: scratch })
    }
}

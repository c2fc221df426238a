// SPDX-License-Identifier: GPL-2.0

//! The per-CPU scratch buffers the overflow handler takes call chains into
//! (C glue: `src/chains/walk.c`), one per context level (task, softirq,
//! hardirq, NMI), allocated at module load: 2 KB of frames would not fit
//! on an NMI stack.

use crate::kapi::helpers;
use kernel::error::to_result;
use kernel::prelude::*;

/// The per-CPU call-chain scratch buffers (`rprof_chain_scratch`), for
/// the module's lifetime.
pub(crate) struct ChainBuffers;

impl ChainBuffers {
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: Module init, process context.
        to_result(unsafe { helpers::rprof_chain_alloc() })?;
        Ok(Self)
    }
}

impl Drop for ChainBuffers {
    fn drop(&mut self) {
        // SAFETY: Module exit: the device, and every session and counter
        // with it, is gone (the fields before this one), so no handler
        // uses the buffers any more.
        unsafe { helpers::rprof_chain_free() };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! `/dev/rprof`: the file operations.
//!
//! Only privileged users may open the device (`CAP_PERFMON` or
//! `CAP_SYS_ADMIN`, as `perfmon_capable()` says).  Each open file is an
//! [`RprofFile`]; the device-wide state is one [`Rprof`].

use crate::miscdev::{File, FileOps};
use crate::params::Params;
use crate::{helpers, uapi};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSlice;

/// Device-wide state.
pub(crate) struct Rprof {
    pub(crate) params: Params,
}

impl Rprof {
    pub(crate) fn new(params: Params) -> Result<Arc<Self>> {
        Ok(Arc::new(Self { params }, GFP_KERNEL)?)
    }
}

/// One open file of `/dev/rprof`.
pub(crate) struct RprofFile {
    _dev: Arc<Rprof>,
}

impl FileOps for RprofFile {
    type Context = Rprof;

    fn open(ctx: &Arc<Rprof>, _file: &File<'_>) -> Result<Self> {
        // SAFETY: `perfmon_capable()` reads the caller's credentials.
        if !unsafe { helpers::rprof_perfmon_capable() } {
            return Err(EPERM);
        }
        Ok(Self { _dev: ctx.clone() })
    }

    fn ioctl(&self, _file: &File<'_>, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            uapi::IOC_GET_VERSION => {
                let mut w = UserSlice::new(arg, core::mem::size_of::<u32>()).writer();
                w.write(&uapi::RPROF_ABI_VERSION)?;
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }
}

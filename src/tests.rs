// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of rprof (test builds only, see `src/kunit.rs`).

use crate::kunit::{kassert, kassert_eq, kunit_suite, Test};
use crate::params::{self, Params};
use kernel::prelude::*;

fn params_accept_powers_of_two(t: &mut Test) {
    let p = Params::new(4096, 256);
    kassert!(t, p.is_ok());
    kassert!(t, Params::new(params::RING_RECORDS_MIN, 1).is_ok());
    kassert!(t, Params::new(params::RING_RECORDS_MAX, params::BUFFER_PAGES_MAX).is_ok());
}

fn params_reject_bad_values(t: &mut Test) {
    kassert_eq!(t, Params::new(1000, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(32, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(params::RING_RECORDS_MAX * 2, 256).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, 0).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, 3).err(), Some(EINVAL));
    kassert_eq!(t, Params::new(4096, params::BUFFER_PAGES_MAX * 2).err(), Some(EINVAL));
}

#[cfg(rprof_inject_kunit_fail)]
fn injected_failure(t: &mut Test) {
    kassert_eq!(t, 1 + 1, 3);
}

kunit_suite!(PARAMS_SUITE, "rprof-params", [params_accept_powers_of_two, params_reject_bad_values]);
#[cfg(rprof_inject_kunit_fail)]
kunit_suite!(INJECT_SUITE, "rprof-injected", [injected_failure]);

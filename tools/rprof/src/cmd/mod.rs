//! The subcommands of `rprof`, one file each.

pub mod dump;
pub mod stat;
pub mod version;

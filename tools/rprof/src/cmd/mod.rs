//! The subcommands of `rprof`, one file each.

pub mod annotate;
pub mod dump;
pub mod export;
pub mod input;
pub mod progress;
pub mod record;
pub mod report;
pub mod script;
pub mod stat;
pub mod top;
pub mod version;

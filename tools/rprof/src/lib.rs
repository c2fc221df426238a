//! rprof's userspace library: the `/dev/rprof` device and what the `rprof`
//! command builds on it.
//!
//! - [`device`]: [`Device`], one safe method per ioctl of
//!   `include/uapi/linux/rprof.h`, `read()` and `poll()`.
//! - [`mmap`]: [`MmapReader`], the reader side of the
//!   mmap'ed event buffer.
//! - [`error`]: errors with the context a user needs (module not loaded,
//!   missing capability, which ioctl failed and why).
//! - [`events`]: event names and the `-e EVENT[:PERIOD|@FREQ]` syntax, and
//!   building a `struct rprof_config` from them.
//! - [`format`](mod@format) and [`summary`]: the text and JSON output of `rprof dump`
//!   and `rprof stat`.
//! - [`memlock`]: the locked memory a session charges to its owner, and
//!   the message when the module refuses a session for it.
//! - [`signal`]: SIGINT/SIGTERM end a session cleanly.
//! - [`session`]: configure, start, pump and drain a session, shared by
//!   every command that samples; [`sampling`]: their common options.
//! - [`snapshot`]: what `rprof record` keeps for reporting later;
//!   [`output`]: its file, renamed into place once complete.
//! - [`unwind`]: the unwind tables of what runs, compiled and uploaded
//!   while `record` and `top` sample with `--call-graph dwarf`.
//! - [`daemon`]: `rprof daemon` / `rprofd`, continuous profiling into
//!   rotating pprof files.
//!
//! [`device`], [`mmap`], [`signal`], [`launch`], [`pidfd`] and [`memlock`]
//! contain the `unsafe` code (system calls).

pub mod daemon;
pub mod device;
pub mod errno;
pub mod error;
pub mod events;
pub mod format;
pub mod launch;
pub mod live;
pub mod memlock;
pub mod mmap;
pub mod output;
pub mod pidfd;
pub mod sampling;
pub mod scan;
pub mod session;
pub mod signal;
pub mod snapshot;
pub mod summary;
pub mod unwind;

pub use device::{CookieInfo, Device};
pub use error::Error;
pub use mmap::MmapReader;

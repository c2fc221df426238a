//! rprof's reports: from a recorded (or live) event stream to tables,
//! annotations and profile files.
//!
//! - [`aggregate`]: walks a stream ([`rprof_decode::Resolver`] keeps its
//!   context) and counts samples per (event, task, cookie, offset), with
//!   the losses and throttles the stream reported.
//! - [`symbolize`]: names each counted (cookie, offset) with a
//!   [`Frame`](symbolize::Frame): the shared object and the function.
//!   User samples go through the ELF file the cookie names (checked
//!   against the build-id and inode recorded in `rprof.data`), kernel and
//!   module samples through the recorded kallsyms.
//! - [`table`]: the `rprof report` table.
//! - [`annotate`]: samples per instruction and per source line of one
//!   function.
//! - [`pprof`], [`folded`], [`speedscope`]: profile files for other tools.
//!
//! Every sample's "stack" is `[comm, shared object, symbol]`: the module
//! records no call chains yet.

#![cfg_attr(not(test), forbid(unsafe_code))]

pub mod aggregate;
pub mod annotate;
pub mod callgraph;
pub mod folded;
mod label;
pub mod loaded;
pub mod pprof;
mod row;
pub mod script;
pub mod speedscope;
pub mod symbolize;
pub mod table;

pub use aggregate::{parse_cpu_list, Aggregate, Filter, Key, TimeRange};
pub use label::{event_label, event_name, period_is_time};
pub use loaded::Loaded;
pub use row::{caller_frames, rows, Row};
pub use symbolize::{Frame, SymbolOptions, Symbolizer};

#[cfg(test)]
pub(crate) mod testdata;

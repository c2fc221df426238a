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
pub mod script;
pub mod speedscope;
pub mod symbolize;
pub mod table;

pub use aggregate::{parse_cpu_list, Aggregate, Filter, Key, TimeRange};
pub use label::{event_label, event_name, period_is_time};
pub use loaded::Loaded;
pub use symbolize::{Frame, SymbolOptions, Symbolizer};

use std::sync::Arc;

/// One line of a profile: samples of one event in one task, in one
/// function of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Index of the event in the session's configuration.
    pub event: u32,
    /// Thread group id.
    pub pid: u32,
    /// Thread id (0 unless the aggregate counted threads apart).
    pub tid: u32,
    /// The task's comm.
    pub comm: Arc<str>,
    /// Where the samples are.
    pub frame: Arc<Frame>,
    /// The callers of `frame`, innermost first (empty without a call
    /// chain): return addresses are symbolized one byte back, at the call.
    pub callers: Arc<[Arc<Frame>]>,
    /// Whether the samples had a call chain (perhaps an empty one).
    pub chain: bool,
    /// How many samples.
    pub samples: u64,
    /// The sum of their periods (events they stand for).
    pub period: u64,
}

/// Symbolizes every key of `agg` and merges keys that name the same
/// (event, pid, tid, comm, frame) into one [`Row`]; rows come sorted by
/// samples, most first.
pub fn rows(agg: &Aggregate, sym: &mut Symbolizer, filter: &Filter) -> Vec<Row> {
    use std::collections::HashMap;
    type RowKey = (
        u32,
        (u32, u32),
        Arc<str>,
        Arc<Frame>,
        Option<Vec<Arc<Frame>>>,
    );
    let mut merged: HashMap<RowKey, (u64, u64)> = HashMap::new();
    for (key, counts) in agg.counts() {
        if !filter.accepts(key) {
            continue;
        }
        let frame = sym.frame_of(key.pid, key.cookie, key.offset, agg.resolver());
        let callers = key
            .stack
            .as_ref()
            .map(|s| caller_frames(s, key.user, key.pid, sym, agg.resolver()));
        let e = merged
            .entry((
                key.event,
                (key.pid, key.tid),
                key.comm.clone(),
                frame,
                callers,
            ))
            .or_default();
        e.0 = e.0.saturating_add(counts.samples);
        e.1 = e.1.saturating_add(counts.period);
    }
    let mut rows: Vec<Row> = merged
        .into_iter()
        .map(
            |((event, (pid, tid), comm, frame, callers), (samples, period))| Row {
                event,
                pid,
                tid,
                comm,
                frame,
                chain: callers.is_some(),
                callers: callers.unwrap_or_default().into(),
                samples,
                period,
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.comm.cmp(&b.comm))
            .then_with(|| a.frame.dso.cmp(&b.frame.dso))
            .then_with(|| a.frame.symbol.cmp(&b.frame.symbol))
            .then_with(|| a.pid.cmp(&b.pid))
    });
    rows
}

/// The frames of a call chain, innermost first, symbolized: a return
/// address one byte back (the call), the user ip at kernel entry as is.
pub fn caller_frames(
    stack: &rprof_decode::Stack,
    user: bool,
    pid: u32,
    sym: &mut Symbolizer,
    names: &rprof_decode::Resolver,
) -> Vec<Arc<Frame>> {
    stack
        .frames
        .iter()
        .enumerate()
        .map(|(i, &(cookie, offset))| {
            let at = if stack.is_return_address(i, user) {
                offset.saturating_sub(1)
            } else {
                offset
            };
            sym.frame_of(pid, cookie, at, names)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod testdata;

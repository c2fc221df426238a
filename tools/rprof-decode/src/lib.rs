//! Decoder and encoder of rprof's event stream.
//!
//! `/dev/rprof` delivers a stream of records (by `read()` or through the
//! mmap'ed event buffer).  Every record starts with
//! `struct rprof_record_header { __u16 type; __u16 flags; __u32 size; }`
//! where `size` covers the whole record and is a multiple of 8, so a reader
//! can step over record types it does not know.  This crate turns such a
//! byte stream into [`Record`]s and back:
//!
//! - [`Decoder`] iterates over the records of a `&[u8]`; malformed input is
//!   never a panic but a [`DecodeError`] naming the byte offset of the
//!   offending record.
//! - [`Record::encode`] writes a record in the layout of the header (used by
//!   tests, and by tools that craft raw ABI structures).
//! - [`Resolver`] keeps the state of the compact stream: samples carry only
//!   time, offset and period; their CPU, task and cookie come from the TASK
//!   and SWITCH records before them, and COOKIE and MODULE records name the
//!   cookies.  It turns samples into [`ResolvedSample`]s for report tools.
//! - [`LostTotals`] and [`SessionSpan`] keep what the LOST, START and STOP
//!   records say, for the tools that count a stream.
//!
//! Fields are read little-endian at the offsets of the structures that
//! bindgen generated from `include/uapi/linux/rprof.h` (`offset_of!` on
//! [`rprof_abi`]'s types), so the layouts here cannot drift from the header.
//! A record larger than the structure this crate knows is accepted and its
//! extra bytes are ignored: that is how the ABI grows.
//!
//! # Examples
//!
//! ```
//! use rprof_decode::{Decoder, Record};
//!
//! let lost = Record::Lost { stage: 1, cpu: 3, count: 5 };
//! let bytes = lost.to_bytes();
//! let records: Vec<_> = Decoder::new(&bytes).collect::<Result<_, _>>().unwrap();
//! assert_eq!(records, vec![lost]);
//! ```

#![forbid(unsafe_code)]

mod config;
mod decode;
mod encode;
mod error;
mod fields;
mod record;
mod resolve;
#[cfg(test)]
mod testutil;
mod totals;

pub use config::{decode_config, encode_config};
pub use decode::{decode_all, decode_record, Decoder};
pub use error::{DecodeError, DecodeErrorKind};
pub use record::{Record, StackFlags, STACK_FLAG_NAMES};
pub use resolve::{resolve_all, CookieName, ResolvedSample, Resolver, Stack, TaskContext};
pub use totals::{lost_stage_name, LostTotals, SessionSpan, LOST_STAGE_NAMES};

/// Re-exported so that users of [`Record::Start`] need not depend on the ABI
/// crate for the configuration type.
pub use rprof_abi::rprof_config;

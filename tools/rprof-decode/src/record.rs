//! The typed records of the event stream.

use rprof_abi::*;

/// One record of the event stream, decoded.
///
/// Each variant mirrors a structure of `include/uapi/linux/rprof.h`; header
/// fields that carry nothing for a type (its `flags`, the `size`) and
/// reserved fields are not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `RPROF_RECORD_SAMPLE`, `struct rprof_sample`.
    Sample {
        /// `header.flags`: `RPROF_SAMPLE_*`.
        flags: u16,
        /// `local_clock()` of the sampling CPU, in ns.
        time_ns: u64,
        /// The sampled instruction pointer.
        ip: u64,
        /// Thread group id (0 for the idle task).
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The sampling CPU.
        cpu: u32,
        /// Index into the session's `rprof_config.events`.
        event: u16,
        /// Events this sample stands for.
        period: u64,
    },
    /// `RPROF_RECORD_LOST`, `struct rprof_lost`: records dropped.
    Lost {
        /// `RPROF_LOST_RING` or `RPROF_LOST_BUFFER`.
        stage: u32,
        /// CPU whose samples were lost.
        cpu: u32,
        /// How many records were lost (exact).
        count: u64,
    },
    /// `RPROF_RECORD_START`, `struct rprof_session`.
    Start {
        /// When the session started, in ns.
        time_ns: u64,
        /// The session's configuration.
        config: rprof_config,
    },
    /// `RPROF_RECORD_STOP`, `struct rprof_session`.
    Stop {
        /// When the session stopped, in ns.
        time_ns: u64,
        /// The session's configuration.
        config: rprof_config,
    },
    /// `RPROF_RECORD_THROTTLE`, `struct rprof_throttle`.
    Throttle {
        /// When perf throttled the counter, in ns.
        time_ns: u64,
        /// The counter's CPU.
        cpu: u32,
        /// Index into the session's `rprof_config.events`.
        event: u32,
    },
    /// `RPROF_RECORD_UNTHROTTLE`, `struct rprof_throttle`.
    Unthrottle {
        /// When perf unthrottled the counter, in ns.
        time_ns: u64,
        /// The counter's CPU.
        cpu: u32,
        /// Index into the session's `rprof_config.events`.
        event: u32,
    },
    /// A record type this crate does not know, skipped by its size.
    Unknown {
        /// `header.type`.
        record_type: u16,
        /// `header.flags`.
        flags: u16,
        /// The record after its 8-byte header.
        bytes: Vec<u8>,
    },
}

impl Record {
    /// The `header.type` of this record.
    pub fn record_type(&self) -> u16 {
        let t = match self {
            Record::Sample { .. } => RPROF_RECORD_SAMPLE,
            Record::Lost { .. } => RPROF_RECORD_LOST,
            Record::Start { .. } => RPROF_RECORD_START,
            Record::Stop { .. } => RPROF_RECORD_STOP,
            Record::Throttle { .. } => RPROF_RECORD_THROTTLE,
            Record::Unthrottle { .. } => RPROF_RECORD_UNTHROTTLE,
            Record::Unknown { record_type, .. } => return *record_type,
        };
        // The enum's values are small; the header field is a __u16.
        t as u16
    }

    /// A short upper-case name of the record type (`SAMPLE`, `LOST`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Record::Sample { .. } => "SAMPLE",
            Record::Lost { .. } => "LOST",
            Record::Start { .. } => "START",
            Record::Stop { .. } => "STOP",
            Record::Throttle { .. } => "THROTTLE",
            Record::Unthrottle { .. } => "UNTHROTTLE",
            Record::Unknown { .. } => "UNKNOWN",
        }
    }

    /// Whether a sample's `ip` is a user address (`RPROF_SAMPLE_USER`).
    /// `false` for every other record.
    pub fn is_user_sample(&self) -> bool {
        matches!(self, Record::Sample { flags, .. } if u32::from(*flags) & RPROF_SAMPLE_USER != 0)
    }
}

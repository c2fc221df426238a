//! The typed records of the event stream.

use rprof_abi::*;

/// One record of the event stream, decoded.
///
/// Each variant mirrors a structure of `include/uapi/linux/rprof.h`; header
/// fields that carry nothing for a type (its `flags`, the `size`) and
/// reserved fields are not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `RPROF_RECORD_SAMPLE`, `struct rprof_sample`: one sample in the
    /// context of the preceding TASK and SWITCH records (see
    /// [`Resolver`](crate::Resolver)).
    Sample {
        /// `header.flags`: `RPROF_SAMPLE_USER` and the event index in bits
        /// 8-10 (see [`Record::sample_event`]).
        flags: u16,
        /// CLOCK_MONOTONIC when the sample was taken, in ns.
        time_ns: u64,
        /// Relative to the current cookie: the offset in the file, from the
        /// module's base, or for the KERNEL and ANON cookies the ip itself.
        offset: u64,
        /// Events this sample stands for.
        period: u64,
        /// With `RPROF_SAMPLE_STACK` (`struct rprof_sample_stack`): the id
        /// of the STACK record naming the sample's callers.  Encoding a
        /// sample with a stack sets the flag.
        stack: Option<u64>,
    },
    /// `RPROF_RECORD_STACK`, `struct rprof_stack`: a call chain, named by
    /// its id in the samples that follow.
    Stack {
        /// The id, unique in the session.
        id: u64,
        /// `header.flags`: `RPROF_STACK_*`, why each side ended.
        flags: u16,
        /// How many of `frames` are kernel frames (they come first).
        nr_kernel: u16,
        /// (cookie, offset) of each frame, innermost first: the kernel
        /// side, then the user side.
        frames: Vec<(u64, u64)>,
    },
    /// `RPROF_RECORD_LOST`, `struct rprof_lost`: records dropped.
    Lost {
        /// `enum rprof_lost_stage`: `RPROF_LOST_RING`, `_BUFFER`, `_NO_MM`,
        /// `_NO_MAPPING`, `_NO_COOKIE` or `_MM_BUSY`.
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
    /// `RPROF_RECORD_COOKIE`, `struct rprof_cookie_record`: names a file
    /// cookie.
    Cookie {
        /// The cookie (`>= RPROF_COOKIE_FIRST`).
        cookie: u64,
        /// `header.flags`: `RPROF_COOKIE_DELETED`, `_TRUNCATED`, `_NO_PATH`.
        flags: u16,
        /// `new_encode_dev()` of the file's device.
        dev: u64,
        /// The file's inode number.
        ino: u64,
        /// The path up to its NUL (or the record's end), as UTF-8 with
        /// invalid bytes replaced.  Encoded NUL-terminated and padded with
        /// NULs to a multiple of 8.
        path: String,
    },
    /// `RPROF_RECORD_TASK`, `struct rprof_task`: the CPU and task of the
    /// following samples.
    Task {
        /// The CPU of the following samples.
        cpu: u32,
        /// Thread group id (0: idle).
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The task's executable, `RPROF_COOKIE_NONE` if none.
        exe_cookie: u64,
        /// The task's `comm` up to its NUL, as UTF-8 with invalid bytes
        /// replaced (encoded as at most 15 bytes and a NUL).
        comm: String,
    },
    /// `RPROF_RECORD_SWITCH`, `struct rprof_switch`: the cookie of the
    /// following samples.
    Switch {
        /// The cookie the following samples' offsets are relative to.
        cookie: u64,
    },
    /// `RPROF_RECORD_MODULE`, `struct rprof_module`: names a kernel
    /// module's cookie, or marks its unload.
    Module {
        /// The module's cookie.
        cookie: u64,
        /// `header.flags`: `RPROF_MODULE_UNLOAD`, `RPROF_MODULE_INIT`.
        flags: u16,
        /// Start of the module's text.
        base: u64,
        /// Bytes of text.
        size: u64,
        /// The module's name up to its NUL (encoded as at most 55 bytes and
        /// a NUL).
        name: String,
    },
    /// `RPROF_RECORD_RESET`, `struct rprof_reset`: the module forgot its
    /// cookies and stacks (`RPROF_IOC_RESET_COOKIES`); no later record
    /// names a cookie below `next_cookie` or a stack below `next_stack`.
    Reset {
        /// When, in ns: the records before it were taken earlier.
        time_ns: u64,
        /// The first cookie that may be named after it.
        next_cookie: u64,
        /// The first stack id that may be named after it.
        next_stack: u64,
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
            Record::Cookie { .. } => RPROF_RECORD_COOKIE,
            Record::Task { .. } => RPROF_RECORD_TASK,
            Record::Switch { .. } => RPROF_RECORD_SWITCH,
            Record::Module { .. } => RPROF_RECORD_MODULE,
            Record::Stack { .. } => RPROF_RECORD_STACK,
            Record::Reset { .. } => RPROF_RECORD_RESET,
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
            Record::Cookie { .. } => "COOKIE",
            Record::Task { .. } => "TASK",
            Record::Switch { .. } => "SWITCH",
            Record::Module { .. } => "MODULE",
            Record::Stack { .. } => "STACK",
            Record::Reset { .. } => "RESET",
            Record::Unknown { .. } => "UNKNOWN",
        }
    }

    /// Whether this is a sample taken in user mode (`RPROF_SAMPLE_USER`).
    /// `false` for every other record.
    pub fn is_user_sample(&self) -> bool {
        matches!(self, Record::Sample { flags, .. } if u32::from(*flags) & RPROF_SAMPLE_USER != 0)
    }

    /// A sample's event index (bits 8-10 of its flags, an index into the
    /// session's `rprof_config.events`); `None` for other records.
    pub fn sample_event(&self) -> Option<u32> {
        match self {
            Record::Sample { flags, .. } => Some(sample_event(*flags)),
            _ => None,
        }
    }

    /// Whether a MODULE record marks its module's unload
    /// (`RPROF_MODULE_UNLOAD`).  `false` for every other record.
    pub fn is_module_unload(&self) -> bool {
        matches!(self, Record::Module { flags, .. } if u32::from(*flags) & RPROF_MODULE_UNLOAD != 0)
    }

    /// Whether a MODULE record's region is the module's init text
    /// (`RPROF_MODULE_INIT`).  `false` for every other record.
    pub fn is_module_init(&self) -> bool {
        matches!(self, Record::Module { flags, .. } if u32::from(*flags) & RPROF_MODULE_INIT != 0)
    }
}

/// The `RPROF_STACK_*` flags of a STACK record's header, by the names
/// `rprof dump` prints: why each side of the chain ended, and how the user
/// side was walked.
pub const STACK_FLAG_NAMES: [(u32, &str); 8] = [
    (RPROF_STACK_KERNEL_TRUNCATED, "kernel-truncated"),
    (RPROF_STACK_USER_TRUNCATED, "user-truncated"),
    (RPROF_STACK_USER_FAULT, "user-fault"),
    (RPROF_STACK_USER_BAD_FP, "user-bad-fp"),
    (RPROF_STACK_KERNEL_ERROR, "kernel-error"),
    (RPROF_STACK_CUT, "cut"),
    (RPROF_STACK_USER_SKIPPED, "user-skipped"),
    (RPROF_STACK_USER_TABLE, "user-table"),
];

/// A STACK record's flags as `user-fault|user-table`, bits without a name
/// in hex after them (`0` for none).
///
/// ```
/// use rprof_abi::*;
/// use rprof_decode::StackFlags;
///
/// let f = (RPROF_STACK_USER_TABLE | RPROF_STACK_USER_BAD_FP) as u16;
/// assert_eq!(StackFlags(f).to_string(), "user-bad-fp|user-table");
/// assert_eq!(StackFlags(0x8004).to_string(), "user-fault|0x8000");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackFlags(pub u16);

impl core::fmt::Display for StackFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let flags = u32::from(self.0);
        let mut known = 0;
        let mut sep = "";
        for (bit, name) in STACK_FLAG_NAMES {
            known |= bit;
            if flags & bit != 0 {
                write!(f, "{sep}{name}")?;
                sep = "|";
            }
        }
        let unknown = flags & !known;
        if unknown != 0 {
            write!(f, "{sep}{unknown:#x}")?;
        } else if sep.is_empty() {
            f.write_str("0")?;
        }
        Ok(())
    }
}

//! Helpers shared by the unit tests: one record of every type and a small
//! deterministic PRNG.

use crate::Record;
use rprof_abi::*;

/// One record of every type, with fields that tell their bytes apart.
pub(crate) fn one_of_each() -> Vec<Record> {
    let mut config = rprof_config::new();
    config.flags = RPROF_CONFIG_EXCLUDE_USER;
    config.nr_events = 2;
    config.pid = 42;
    config.ring_records = 512;
    config.events[0] = rprof_event_config {
        kind: RPROF_EVENT_CPU_CLOCK,
        flags: RPROF_EVENT_FREQ,
        period: 1000,
    };
    config.events[1] = rprof_event_config {
        kind: RPROF_EVENT_INSTRUCTIONS,
        flags: 0,
        period: 1_000_000,
    };
    vec![
        Record::Sample {
            flags: RPROF_SAMPLE_USER as u16,
            time_ns: 0x1122_3344_5566_7788,
            ip: 0x7fff_0000_1234,
            pid: 100,
            tid: 101,
            cpu: 1,
            event: 1,
            period: 1_000_000,
        },
        Record::Sample {
            flags: 0,
            time_ns: 1,
            ip: 0xffff_ffff_8100_0000,
            pid: 0,
            tid: 0,
            cpu: 0,
            event: 0,
            period: 250_000,
        },
        Record::Lost {
            stage: RPROF_LOST_RING,
            cpu: 1,
            count: 5,
        },
        Record::Lost {
            stage: RPROF_LOST_BUFFER,
            cpu: 0,
            count: u64::MAX,
        },
        Record::Start {
            time_ns: 10,
            config,
        },
        Record::Stop {
            time_ns: 20,
            config,
        },
        Record::Throttle {
            time_ns: 11,
            cpu: 1,
            event: 0,
        },
        Record::Unthrottle {
            time_ns: 12,
            cpu: 1,
            event: 0,
        },
        Record::Unknown {
            record_type: 0x7777,
            flags: 0xa5a5,
            bytes: (0..24).collect(),
        },
        Record::Unknown {
            record_type: 0,
            flags: 0,
            bytes: Vec::new(),
        },
    ]
}

/// xorshift64: a few lines of deterministic pseudo-randomness, enough to
/// shake a parser without a crate.
pub(crate) struct XorShift(u64);

impl XorShift {
    /// A generator from a nonzero seed.
    pub(crate) fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

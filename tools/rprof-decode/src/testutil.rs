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
            flags: sample_flags(true, 1),
            time_ns: 0x1122_3344_5566_7788,
            offset: 0x1234,
            period: 1_000_000,
            stack: None,
        },
        Record::Sample {
            flags: 0,
            time_ns: 1,
            offset: 0xffff_ffff_8100_0000,
            period: 250_000,
            stack: None,
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
        Record::Lost {
            stage: RPROF_LOST_NO_MAPPING,
            cpu: 1,
            count: 3,
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
        Record::Cookie {
            cookie: 17,
            flags: 0,
            dev: 0x800_0001,
            ino: 123_456,
            path: "/bin/busybox".into(),
        },
        Record::Cookie {
            cookie: 18,
            flags: (RPROF_COOKIE_DELETED | RPROF_COOKIE_NO_PATH) as u16,
            dev: 0,
            ino: u64::MAX,
            path: "/x".into(),
        },
        Record::Cookie {
            cookie: u64::MAX,
            flags: RPROF_COOKIE_TRUNCATED as u16,
            dev: 1,
            ino: 2,
            path: String::new(),
        },
        Record::Task {
            cpu: 1,
            pid: 100,
            tid: 101,
            exe_cookie: 17,
            comm: "busybox".into(),
        },
        Record::Switch { cookie: 17 },
        Record::Module {
            cookie: 19,
            flags: 0,
            base: 0xffff_ffff_c000_0000,
            size: 0x2000,
            name: "rprof_busy".into(),
        },
        Record::Module {
            cookie: 19,
            flags: RPROF_MODULE_UNLOAD as u16,
            base: 0xffff_ffff_c000_0000,
            size: 0x2000,
            name: "x".repeat(55),
        },
        Record::Reset {
            time_ns: 7_000_000,
            next_cookie: 20,
            next_stack: 5,
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

/// A printable ASCII string of `0..=max` characters, sometimes with a
/// non-ASCII character (still valid UTF-8, and short enough for `max`).
fn random_string(rng: &mut XorShift, max: u64) -> String {
    let len = rng.below(max + 1);
    let mut s: String = (0..len)
        .map(|_| char::from(b' ' + rng.below(95) as u8))
        .collect();
    if len >= 2 && rng.below(4) == 0 {
        s.truncate(s.len() - 2);
        s.push('\u{e9}');
    }
    s
}

/// A random record of a random known type (or an unknown one), with
/// fields that survive encoding: strings fit their fields and have no NUL.
pub(crate) fn random_record(rng: &mut XorShift) -> Record {
    let mut config = rprof_config::new();
    config.nr_events = rng.below(9) as u32;
    config.flags = rng.next() as u32;
    config.pid = rng.next() as i32;
    for e in config.events.iter_mut() {
        e.kind = rng.next() as u32;
        e.flags = rng.next() as u32;
        e.period = rng.next();
    }
    match rng.below(13) {
        0 => {
            let stack = (rng.below(2) == 0).then(|| rng.next());
            let flag = if stack.is_some() {
                RPROF_SAMPLE_STACK as u16
            } else {
                0
            };
            Record::Sample {
                flags: (rng.next() as u16 & !(RPROF_SAMPLE_STACK as u16)) | flag,
                time_ns: rng.next(),
                offset: rng.next(),
                period: rng.next(),
                stack,
            }
        }
        11 => {
            let n = rng.below(6) as usize;
            Record::Stack {
                id: rng.next(),
                flags: rng.next() as u16,
                nr_kernel: rng.below(n as u64 + 1) as u16,
                frames: (0..n).map(|_| (rng.next(), rng.next())).collect(),
            }
        }
        1 => Record::Lost {
            stage: rng.below(7) as u32,
            cpu: rng.next() as u32,
            count: rng.next(),
        },
        2 => Record::Start {
            time_ns: rng.next(),
            config,
        },
        3 => Record::Stop {
            time_ns: rng.next(),
            config,
        },
        4 => Record::Throttle {
            time_ns: rng.next(),
            cpu: rng.next() as u32,
            event: rng.next() as u32,
        },
        5 => Record::Unthrottle {
            time_ns: rng.next(),
            cpu: rng.next() as u32,
            event: rng.next() as u32,
        },
        6 => Record::Cookie {
            cookie: rng.next(),
            flags: rng.next() as u16,
            dev: rng.next(),
            ino: rng.next(),
            path: random_string(rng, 300),
        },
        7 => Record::Task {
            cpu: rng.next() as u32,
            pid: rng.next() as u32,
            tid: rng.next() as u32,
            exe_cookie: rng.next(),
            comm: random_string(rng, 15),
        },
        8 => Record::Switch { cookie: rng.next() },
        9 => Record::Module {
            cookie: rng.next(),
            flags: rng.next() as u16,
            base: rng.next(),
            size: rng.next(),
            name: random_string(rng, 55),
        },
        12 => Record::Reset {
            time_ns: rng.next(),
            next_cookie: rng.next(),
            next_stack: rng.next(),
        },
        _ => Record::Unknown {
            record_type: 13 + rng.below(1000) as u16,
            flags: rng.next() as u16,
            bytes: (0..rng.below(8) * 8).map(|_| rng.next() as u8).collect(),
        },
    }
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

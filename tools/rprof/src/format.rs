//! Text output: one line per record, and the statistics table.

use crate::events::EventDisplay;
use rprof_abi::*;
use rprof_decode::Record;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// The name of a `RPROF_LOST_*` stage: `ring`, `buffer`, or `stageN`.
pub fn lost_stage_name(stage: u32) -> Cow<'static, str> {
    match stage {
        RPROF_LOST_RING => Cow::Borrowed("ring"),
        RPROF_LOST_BUFFER => Cow::Borrowed("buffer"),
        other => Cow::Owned(format!("stage{other}")),
    }
}

/// A session configuration on one line:
/// `events=cpu-clock@1000 flags=exclude-user pid=- ring_records=0 ...`.
pub struct ConfigDisplay<'a>(pub &'a rprof_config);

impl fmt::Display for ConfigDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        f.write_str("events=")?;
        let n = (c.nr_events as usize).min(c.events.len());
        for (i, e) in c.events[..n].iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", EventDisplay(e))?;
        }
        let mut flags = Vec::new();
        for (bit, name) in [
            (RPROF_CONFIG_EXCLUDE_USER, "exclude-user"),
            (RPROF_CONFIG_EXCLUDE_KERNEL, "exclude-kernel"),
            (RPROF_CONFIG_PID_FILTER, "pid-filter"),
        ] {
            if c.flags & bit != 0 {
                flags.push(Cow::Borrowed(name));
            }
        }
        let unknown = c.flags & !RPROF_CONFIG_FLAGS_ALL;
        if unknown != 0 {
            flags.push(Cow::Owned(format!("{unknown:#x}")));
        }
        if flags.is_empty() {
            f.write_str(" flags=0")?;
        } else {
            write!(f, " flags={}", flags.join("|"))?;
        }
        if c.flags & RPROF_CONFIG_PID_FILTER != 0 {
            write!(f, " pid={}", c.pid)?;
        }
        write!(
            f,
            " ring_records={} drain_interval_ms={} wakeup_bytes={}",
            c.ring_records, c.drain_interval_ms, c.wakeup_bytes
        )
    }
}

/// A record as one line of `rprof dump`:
///
/// ```text
/// SAMPLE t=1234 cpu=0 pid=12 tid=13 ip=0xffffffff81000000 kernel ev=0 period=1000000
/// LOST stage=ring cpu=1 count=5
/// START t=1000 events=cpu-clock@1000 flags=0 ring_records=0 drain_interval_ms=0 wakeup_bytes=0
/// THROTTLE t=1500 cpu=1 ev=0
/// UNKNOWN type=9 flags=0x0 size=24
/// ```
pub struct RecordLine<'a>(pub &'a Record);

impl fmt::Display for RecordLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        match r {
            Record::Sample {
                time_ns,
                ip,
                pid,
                tid,
                cpu,
                event,
                period,
                ..
            } => write!(
                f,
                "SAMPLE t={time_ns} cpu={cpu} pid={pid} tid={tid} ip={ip:#x} {} ev={event} period={period}",
                if r.is_user_sample() { "user" } else { "kernel" }
            ),
            Record::Lost { stage, cpu, count } => write!(
                f,
                "LOST stage={} cpu={cpu} count={count}",
                lost_stage_name(*stage)
            ),
            Record::Start { time_ns, config } | Record::Stop { time_ns, config } => {
                write!(f, "{} t={time_ns} {}", r.name(), ConfigDisplay(config))
            }
            Record::Throttle {
                time_ns,
                cpu,
                event,
            }
            | Record::Unthrottle {
                time_ns,
                cpu,
                event,
            } => write!(f, "{} t={time_ns} cpu={cpu} ev={event}", r.name()),
            Record::Unknown {
                record_type,
                flags,
                bytes,
            } => write!(
                f,
                "UNKNOWN type={record_type} flags={flags:#x} size={}",
                bytes.len() + 8
            ),
        }
    }
}

/// Reads one counter of a `struct rprof_cpu_stats`.
pub type Counter = fn(&rprof_cpu_stats) -> u64;

/// The columns of the statistics table (the fields of `struct
/// rprof_cpu_stats`), with their accessors.
pub const STATS_COLUMNS: [(&str, Counter); 6] = [
    ("samples", |s| s.samples),
    ("lost_ring", |s| s.lost_ring),
    ("lost_buffer", |s| s.lost_buffer),
    ("delivered", |s| s.delivered),
    ("ring_high_water", |s| s.ring_high_water),
    ("throttled", |s| s.throttled),
];

/// Writes the module's statistics as a table, total first, then a line
/// per CPU, then the drain and wakeup counts:
///
/// ```text
/// cpu       samples  lost_ring  lost_buffer  delivered  ring_high_water  throttled
/// total        2000          0            0       2000               12          0
/// 0            1000          0            0       1000               12          0
/// drains: 200 wakeups: 10
/// ```
pub fn write_stats(
    w: &mut impl Write,
    stats: &rprof_stats,
    cpus: &[rprof_cpu_stats],
) -> io::Result<()> {
    write!(w, "{:<6}", "cpu")?;
    for (name, _) in STATS_COLUMNS {
        write!(w, " {name:>12}")?;
    }
    writeln!(w)?;
    let row = |w: &mut dyn Write, label: &str, s: &rprof_cpu_stats| -> io::Result<()> {
        write!(w, "{label:<6}")?;
        for (name, get) in STATS_COLUMNS {
            write!(w, " {:>width$}", get(s), width = name.len().max(12))?;
        }
        writeln!(w)
    };
    row(w, "total", &stats.total)?;
    for (i, s) in cpus.iter().enumerate() {
        row(w, &i.to_string(), s)?;
    }
    writeln!(
        w,
        "drains: {} wakeups: {} cpus: {}",
        stats.drains, stats.wakeups, stats.nr_cpus
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines() {
        let s = Record::Sample {
            flags: 0,
            time_ns: 5,
            ip: 0xffff_ffff_8100_0000,
            pid: 12,
            tid: 13,
            cpu: 1,
            event: 0,
            period: 1000,
        };
        assert_eq!(
            RecordLine(&s).to_string(),
            "SAMPLE t=5 cpu=1 pid=12 tid=13 ip=0xffffffff81000000 kernel ev=0 period=1000"
        );
        let l = Record::Lost {
            stage: RPROF_LOST_RING,
            cpu: 1,
            count: 5,
        };
        assert_eq!(RecordLine(&l).to_string(), "LOST stage=ring cpu=1 count=5");
        let l = Record::Lost {
            stage: 9,
            cpu: 0,
            count: 1,
        };
        assert_eq!(
            RecordLine(&l).to_string(),
            "LOST stage=stage9 cpu=0 count=1"
        );
        let mut config = rprof_config::new();
        config.nr_events = 1;
        config.events[0] = rprof_event_config {
            kind: RPROF_EVENT_CPU_CLOCK,
            flags: RPROF_EVENT_FREQ,
            period: 1000,
        };
        config.flags = RPROF_CONFIG_PID_FILTER | RPROF_CONFIG_EXCLUDE_USER;
        config.pid = 42;
        let st = Record::Start { time_ns: 7, config };
        assert_eq!(
            RecordLine(&st).to_string(),
            "START t=7 events=cpu-clock@1000 flags=exclude-user|pid-filter pid=42 \
             ring_records=0 drain_interval_ms=0 wakeup_bytes=0"
        );
        let t = Record::Unthrottle {
            time_ns: 3,
            cpu: 0,
            event: 1,
        };
        assert_eq!(RecordLine(&t).to_string(), "UNTHROTTLE t=3 cpu=0 ev=1");
        let u = Record::Unknown {
            record_type: 9,
            flags: 2,
            bytes: vec![0; 16],
        };
        assert_eq!(
            RecordLine(&u).to_string(),
            "UNKNOWN type=9 flags=0x2 size=24"
        );
    }

    #[test]
    fn stats_table() {
        let mut stats = rprof_stats::new();
        stats.nr_cpus = 2;
        stats.drains = 4;
        stats.total.samples = 30;
        let cpus = [
            rprof_cpu_stats {
                samples: 10,
                ..Default::default()
            },
            rprof_cpu_stats {
                samples: 20,
                lost_ring: 2,
                ..Default::default()
            },
        ];
        let mut out = Vec::new();
        write_stats(&mut out, &stats, &cpus).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with("cpu") && lines[0].contains("ring_high_water"));
        assert_eq!(
            lines[1].split_whitespace().take(2).collect::<Vec<_>>(),
            ["total", "30"]
        );
        assert_eq!(
            lines[3].split_whitespace().take(3).collect::<Vec<_>>(),
            ["1", "20", "2"]
        );
        assert_eq!(lines[4], "drains: 4 wakeups: 0 cpus: 2");
    }
}

//! Text output: one line per record, and the statistics table.

use crate::events::EventDisplay;
use rprof_abi::*;
use rprof_decode::Record;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// The name of a `RPROF_LOST_*` stage: `ring`, `buffer`, `no_mm`,
/// `no_mapping`, `no_cookie`, `mm_busy`, or `stageN`.
pub fn lost_stage_name(stage: u32) -> Cow<'static, str> {
    match rprof_decode::lost_stage_name(stage) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(format!("stage{stage}")),
    }
}

/// A size in bytes for people: `512 B`, `4.0 KiB`, `1.3 MiB`, `2.0 GiB`
/// (binary units, one decimal).
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut unit = 0;
        let mut scaled = self.0 as f64;
        while scaled >= 1024.0 && unit < 4 {
            scaled /= 1024.0;
            unit += 1;
        }
        match unit {
            0 => write!(f, "{} B", self.0),
            _ => write!(f, "{scaled:.1} {}", ["", "KiB", "MiB", "GiB", "TiB"][unit]),
        }
    }
}

/// A string from the stream (a comm, a path, a module name) as one word:
/// whitespace, control characters and backslashes are escaped (`\x20`,
/// `\u{85}`), so that a line still splits into its fields.
pub struct Word<'a>(pub &'a str);

impl fmt::Display for Word<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c == '\\' || c.is_whitespace() || c.is_control() {
                if c.is_ascii() {
                    write!(f, "\\x{:02x}", u32::from(c))?;
                } else {
                    write!(f, "{}", c.escape_unicode())?;
                }
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// The names of the flags of a COOKIE record, each after a space
/// (` deleted truncated no-path`, and the hex value of unknown bits).
fn cookie_flags(flags: u16) -> String {
    let mut out = String::new();
    for (bit, name) in [
        (RPROF_COOKIE_DELETED, "deleted"),
        (RPROF_COOKIE_TRUNCATED, "truncated"),
        (RPROF_COOKIE_UNREACHABLE, "unreachable"),
        (RPROF_COOKIE_NO_PATH, "no-path"),
    ] {
        if u32::from(flags) & bit != 0 {
            out.push(' ');
            out.push_str(name);
        }
    }
    let known = RPROF_COOKIE_DELETED
        | RPROF_COOKIE_TRUNCATED
        | RPROF_COOKIE_NO_PATH
        | RPROF_COOKIE_UNREACHABLE;
    let unknown = u32::from(flags) & !known;
    if unknown != 0 {
        out.push_str(&format!(" flags={unknown:#x}"));
    }
    out
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
            (RPROF_CONFIG_PID_DESCENDANTS, "descendants"),
            (RPROF_CONFIG_CALLCHAIN, "callchain"),
            (RPROF_CONFIG_UNWIND_TABLES, "unwind-tables"),
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
        if c.flags & RPROF_CONFIG_CALLCHAIN != 0 {
            write!(
                f,
                " max_kernel_frames={} max_user_frames={}",
                c.max_kernel_frames, c.max_user_frames
            )?;
        }
        write!(
            f,
            " ring_records={} drain_interval_ms={} wakeup_bytes={} buffer_pages={}",
            c.ring_records, c.drain_interval_ms, c.wakeup_bytes, c.buffer_pages
        )
    }
}

/// A record as one line of `rprof dump`:
///
/// ```text
/// TASK cpu=1 pid=12 tid=13 comm=busybox exe=17
/// COOKIE 17 /bin/busybox dev=0x800001 ino=1234
/// SWITCH 17
/// MODULE 18 rprof_busy base=0xffffffffc0000000 size=4096
/// MODULE 18 rprof_busy base=0xffffffffc0000000 size=4096 unload
/// MODULE 19 rprof_busy base=0xffffffffc0008000 size=512 init
/// SAMPLE t=1234 user ev=0 off=0x1a2b period=1000000
/// LOST stage=ring cpu=1 count=5
/// START t=1000 events=cpu-clock@1000 flags=0 ring_records=0 drain_interval_ms=0 wakeup_bytes=0 buffer_pages=0
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
                offset,
                period,
                stack,
                ..
            } => {
                write!(
                    f,
                    "SAMPLE t={time_ns} {} ev={} off={offset:#x} period={period}",
                    if r.is_user_sample() { "user" } else { "kernel" },
                    r.sample_event().unwrap_or(0)
                )?;
                if let Some(id) = stack {
                    write!(f, " stack={id}")?;
                }
                Ok(())
            }
            Record::Stack {
                id,
                flags,
                nr_kernel,
                frames,
            } => {
                write!(
                    f,
                    "STACK {id} kernel={nr_kernel} user={}",
                    frames.len().saturating_sub(usize::from(*nr_kernel))
                )?;
                if *flags != 0 {
                    write!(f, " flags={}", rprof_decode::StackFlags(*flags))?;
                }
                for (cookie, offset) in frames {
                    write!(f, " {cookie}:{offset:#x}")?;
                }
                Ok(())
            }
            Record::Task {
                cpu,
                pid,
                tid,
                exe_cookie,
                comm,
            } => write!(
                f,
                "TASK cpu={cpu} pid={pid} tid={tid} comm={} exe={exe_cookie}",
                Word(comm)
            ),
            Record::Switch { cookie } => write!(f, "SWITCH {cookie}"),
            Record::Cookie {
                cookie,
                flags,
                dev,
                ino,
                path,
            } => write!(
                f,
                "COOKIE {cookie} {} dev={dev:#x} ino={ino}{}",
                Word(path),
                cookie_flags(*flags)
            ),
            Record::Module {
                cookie,
                flags,
                base,
                size,
                name,
            } => {
                write!(
                    f,
                    "MODULE {cookie} {} base={base:#x} size={size}",
                    Word(name)
                )?;
                if r.is_module_init() {
                    f.write_str(" init")?;
                }
                if r.is_module_unload() {
                    f.write_str(" unload")?;
                }
                let unknown = u32::from(*flags) & !(RPROF_MODULE_UNLOAD | RPROF_MODULE_INIT);
                if unknown != 0 {
                    write!(f, " flags={unknown:#x}")?;
                }
                Ok(())
            }
            Record::Reset {
                time_ns,
                next_cookie,
                next_stack,
            } => write!(
                f,
                "RESET t={time_ns} next_cookie={next_cookie} next_stack={next_stack}"
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
pub const STATS_COLUMNS: [(&str, Counter); 9] = [
    ("samples", |s| s.samples),
    ("lost_ring", |s| s.lost_ring),
    ("lost_buffer", |s| s.lost_buffer),
    ("delivered", |s| s.delivered),
    ("ring_high_water", |s| s.ring_high_water),
    ("throttled", |s| s.throttled),
    ("lost_no_mm", |s| s.lost_no_mm),
    ("lost_no_mapping", |s| s.lost_no_mapping),
    ("lost_no_cookie", |s| s.lost_no_cookie),
];

/// Reads one counter of a `struct rprof_chain_stats`.
pub type ChainCounter = fn(&rprof_chain_stats) -> u64;

/// The call-chain counters (the fields of `struct rprof_chain_stats`):
/// their JSON key, their words in a sentence, their accessor.
///
/// `user_table_frames` and `user_no_table` are 0 unless the session walks
/// unwind tables (`RPROF_CONFIG_UNWIND_TABLES`): the user frames found by
/// a table, and those found by the frame pointer for want of one.
pub const CHAIN_COLUMNS: [(&str, &str, ChainCounter); 12] = [
    ("chains", "chains", |c| c.chains),
    ("kernel_frames", "kernel frames", |c| c.kernel_frames),
    ("user_frames", "user frames", |c| c.user_frames),
    ("truncated", "truncated", |c| c.truncated),
    ("user_fault", "user fault", |c| c.user_fault),
    ("user_bad_fp", "user bad fp", |c| c.user_bad_fp),
    ("user_table_frames", "user frames by table", |c| {
        c.user_table_frames
    }),
    ("user_no_table", "user frames without a table", |c| {
        c.user_no_table
    }),
    ("cut_space", "cut for space", |c| c.cut_space),
    ("unresolved", "unresolved frames", |c| c.unresolved),
    ("stacks", "distinct stacks", |c| c.stacks),
    ("user_skipped", "user sides not walked", |c| c.user_skipped),
];

/// The chain counters as one line, `chains: 10, kernel frames: 40, ...`.
pub fn chain_line(c: &rprof_chain_stats) -> String {
    let parts: Vec<String> = CHAIN_COLUMNS
        .iter()
        .map(|(_, words, get)| format!("{words}: {}", get(c)))
        .collect();
    parts.join(", ")
}

/// Writes the module's statistics as a table, total first, then a line
/// per CPU, then the drain and wakeup counts, the samples lost to a busy
/// `mmap_lock` (a total: no CPU's counters have it) and the memory the
/// session charges to its owner's locked memory, the orphans a
/// descendants filter follows (if any), and the call-chain counters
/// when the session took chains:
///
/// ```text
/// cpu     samples lost_ring lost_buffer delivered ring_high_water throttled lost_no_mm lost_no_mapping lost_no_cookie
/// total      2000         0           0      2000              12         0          0               0              0
/// 0          1000         0           0      1000              12         0          0               0              0
/// drains: 200 wakeups: 10
/// lost_mm_busy: 0 (all CPUs) locked_bytes: 1388544 (1.3 MiB)
/// chains: 2000, kernel frames: 8000, user frames: 12000, ...
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
    )?;
    writeln!(
        w,
        "lost_mm_busy: {} (all CPUs) locked_bytes: {} ({})",
        stats.lost_mm_busy,
        stats.locked_bytes,
        Size(stats.locked_bytes)
    )?;
    if stats.resets > 0 {
        writeln!(w, "cookie table resets: {}", stats.resets)?;
    }
    if stats.orphans > 0 || stats.orphans_lost > 0 {
        writeln!(
            w,
            "orphans followed: {}, not followed (no room): {}",
            stats.orphans, stats.orphans_lost
        )?;
    }
    if stats.chains.chains > 0 || stats.chains.cut_space > 0 {
        writeln!(w, "{}", chain_line(&stats.chains))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines() {
        let s = Record::Sample {
            flags: sample_flags(false, 2),
            time_ns: 5,
            offset: 0xffff_ffff_8100_0000,
            period: 1000,
            stack: None,
        };
        assert_eq!(
            RecordLine(&s).to_string(),
            "SAMPLE t=5 kernel ev=2 off=0xffffffff81000000 period=1000"
        );
        let s = Record::Sample {
            flags: sample_flags(true, 0),
            time_ns: 6,
            offset: 0x1a2b,
            period: 1,
            stack: None,
        };
        assert_eq!(
            RecordLine(&s).to_string(),
            "SAMPLE t=6 user ev=0 off=0x1a2b period=1"
        );
        let t = Record::Task {
            cpu: 1,
            pid: 12,
            tid: 13,
            exe_cookie: 17,
            comm: "kworker/0:1 x".into(),
        };
        assert_eq!(
            RecordLine(&t).to_string(),
            "TASK cpu=1 pid=12 tid=13 comm=kworker/0:1\\x20x exe=17"
        );
        assert_eq!(
            RecordLine(&Record::Switch { cookie: 17 }).to_string(),
            "SWITCH 17"
        );
        let c = Record::Cookie {
            cookie: 17,
            flags: 0,
            dev: 0x80_0001,
            ino: 1234,
            path: "/bin/busybox".into(),
        };
        assert_eq!(
            RecordLine(&c).to_string(),
            "COOKIE 17 /bin/busybox dev=0x800001 ino=1234"
        );
        let c = Record::Cookie {
            cookie: 18,
            flags: (RPROF_COOKIE_DELETED | RPROF_COOKIE_NO_PATH | 0x80) as u16,
            dev: 0,
            ino: 1,
            path: "memfd:x (deleted)".into(),
        };
        assert_eq!(
            RecordLine(&c).to_string(),
            "COOKIE 18 memfd:x\\x20(deleted) dev=0x0 ino=1 deleted no-path flags=0x80"
        );
        let m = Record::Module {
            cookie: 19,
            flags: 0,
            base: 0xffff_ffff_c000_0000,
            size: 4096,
            name: "rprof_busy".into(),
        };
        assert_eq!(
            RecordLine(&m).to_string(),
            "MODULE 19 rprof_busy base=0xffffffffc0000000 size=4096"
        );
        let m = Record::Module {
            cookie: 19,
            flags: RPROF_MODULE_UNLOAD as u16,
            base: 0x10,
            size: 1,
            name: "rprof_busy".into(),
        };
        assert_eq!(
            RecordLine(&m).to_string(),
            "MODULE 19 rprof_busy base=0x10 size=1 unload"
        );
        let m = Record::Module {
            cookie: 20,
            flags: (RPROF_MODULE_UNLOAD | RPROF_MODULE_INIT | 0x40) as u16,
            base: 0x10,
            size: 1,
            name: "m".into(),
        };
        assert_eq!(
            RecordLine(&m).to_string(),
            "MODULE 20 m base=0x10 size=1 init unload flags=0x40"
        );
        for (stage, name) in [
            (RPROF_LOST_NO_MM, "no_mm"),
            (RPROF_LOST_NO_MAPPING, "no_mapping"),
            (RPROF_LOST_NO_COOKIE, "no_cookie"),
            (RPROF_LOST_MM_BUSY, "mm_busy"),
        ] {
            assert_eq!(lost_stage_name(stage), name);
        }
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
             ring_records=0 drain_interval_ms=0 wakeup_bytes=0 buffer_pages=0"
        );
        // Every flag by name, the chain depths, the buffer's size.
        config.flags |= RPROF_CONFIG_PID_DESCENDANTS | RPROF_CONFIG_CALLCHAIN;
        config.max_kernel_frames = 16;
        config.max_user_frames = 127;
        config.buffer_pages = 1024;
        let st = Record::Start { time_ns: 7, config };
        assert_eq!(
            RecordLine(&st).to_string(),
            "START t=7 events=cpu-clock@1000 flags=exclude-user|pid-filter|descendants|callchain pid=42 \
             max_kernel_frames=16 max_user_frames=127 \
             ring_records=0 drain_interval_ms=0 wakeup_bytes=0 buffer_pages=1024"
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
    fn sizes_for_people() {
        for (bytes, text) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (4096 + 512, "4.5 KiB"),
            (1_388_544, "1.3 MiB"),
            (2 << 30, "2.0 GiB"),
            (u64::MAX, "16777216.0 TiB"),
        ] {
            assert_eq!(Size(bytes).to_string(), text, "{bytes} bytes");
        }
    }

    #[test]
    fn stats_table() {
        let mut stats = rprof_stats::new();
        stats.nr_cpus = 2;
        stats.drains = 4;
        stats.total.samples = 30;
        stats.lost_mm_busy = 6;
        stats.locked_bytes = 1_388_544;
        let cpus = [
            rprof_cpu_stats {
                samples: 10,
                ..Default::default()
            },
            rprof_cpu_stats {
                samples: 20,
                lost_ring: 2,
                lost_no_cookie: 4,
                ..Default::default()
            },
        ];
        let mut out = Vec::new();
        write_stats(&mut out, &stats, &cpus).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[0].starts_with("cpu") && lines[0].contains("ring_high_water"));
        assert!(lines[0].ends_with("lost_no_mm lost_no_mapping lost_no_cookie"));
        assert_eq!(lines[3].split_whitespace().last(), Some("4"));
        assert_eq!(
            lines[1].split_whitespace().take(2).collect::<Vec<_>>(),
            ["total", "30"]
        );
        assert_eq!(
            lines[3].split_whitespace().take(3).collect::<Vec<_>>(),
            ["1", "20", "2"]
        );
        assert_eq!(lines[4], "drains: 4 wakeups: 0 cpus: 2");
        assert_eq!(
            lines[5],
            "lost_mm_busy: 6 (all CPUs) locked_bytes: 1388544 (1.3 MiB)"
        );

        // A session with chains adds their counters, each under its name.
        stats.chains.chains = 25;
        stats.chains.user_bad_fp = 3;
        stats.chains.stacks = 7;
        stats.chains.user_skipped = 2;
        stats.chains.user_table_frames = 11;
        stats.chains.user_no_table = 4;
        let mut out = Vec::new();
        write_stats(&mut out, &stats, &cpus).unwrap();
        let text = String::from_utf8(out).unwrap();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("chains: 25, kernel frames: 0,")
                && last.contains(
                    "user bad fp: 3, user frames by table: 11, \
                                  user frames without a table: 4,"
                )
                && last.contains("distinct stacks: 7,")
                && last.ends_with("user sides not walked: 2"),
            "{text}"
        );
    }
}

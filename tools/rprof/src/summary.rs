//! Counting what a session delivered, and the `--summary-json` line.

use crate::format::{CHAIN_COLUMNS, STATS_COLUMNS};
use rprof_abi::*;
use rprof_decode::{LostTotals, Record, SessionSpan};
use std::fmt::Write as _;

/// Counts of the records of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records of any type.
    pub records: u64,
    /// SAMPLE records.
    pub samples: u64,
    /// Samples taken in user mode.
    pub samples_user: u64,
    /// Samples taken in kernel mode.
    pub samples_kernel: u64,
    /// Samples per CPU (the CPU of the TASK record before each), indexed
    /// by CPU number.
    pub samples_per_cpu: Vec<u64>,
    /// Samples before any TASK record (a broken stream: counted in no CPU).
    pub samples_no_task: u64,
    /// Samples per event, indexed by `rprof_config.events` index.
    pub samples_per_event: Vec<u64>,
    /// COOKIE records.
    pub cookies: u64,
    /// TASK records.
    pub tasks: u64,
    /// SWITCH records.
    pub switches: u64,
    /// MODULE records (loads and unloads).
    pub modules: u64,
    /// The CPU of the last TASK record.
    pub current_cpu: Option<u32>,
    /// LOST records.
    pub lost_records: u64,
    /// Sums of `count` of LOST records, by stage.
    pub lost_by_stage: LostTotals,
    /// Sums of `count` of `RPROF_LOST_MM_BUSY` records, indexed by their
    /// CPU: the only per-CPU figure of that stage (the module's per-CPU
    /// counters have no field for it).
    pub lost_mm_busy_per_cpu: Vec<u64>,
    /// START and STOP records.
    pub span: SessionSpan,
    /// THROTTLE records.
    pub throttles: u64,
    /// UNTHROTTLE records.
    pub unthrottles: u64,
    /// Records of unknown types.
    pub unknown: u64,
    /// STACK records.
    pub stacks: u64,
    /// RESET records (the module forgot its cookies and stacks).
    pub resets: u64,
    /// Samples naming a stack (`RPROF_SAMPLE_STACK`).
    pub samples_with_stack: u64,
    /// Samples whose chain did not fit the ring (`RPROF_SAMPLE_CHAIN_CUT`).
    pub samples_chain_cut: u64,
}

/// Adds 1 at `index`, growing `v` as needed (indices come from the module
/// and are small: CPU numbers and event indices).
fn bump(v: &mut Vec<u64>, index: usize) {
    add_at(v, index, 1);
}

/// Adds `n` at `index` (saturating), growing `v` as needed.
fn add_at(v: &mut Vec<u64>, index: usize, n: u64) {
    if index >= v.len() {
        v.resize(index + 1, 0);
    }
    v[index] = v[index].saturating_add(n);
}

/// CPU numbers a corrupt stream may hold are not indices: above this, a
/// count goes into no CPU's entry.
const MAX_CPU: u32 = 65536;

impl Summary {
    /// Counts `record`.
    pub fn add(&mut self, record: &Record) {
        self.records += 1;
        match record {
            Record::Sample { flags, stack, .. } => {
                self.samples += 1;
                self.samples_with_stack += u64::from(stack.is_some());
                self.samples_chain_cut +=
                    u64::from(u32::from(*flags) & RPROF_SAMPLE_CHAIN_CUT != 0);
                if record.is_user_sample() {
                    self.samples_user += 1;
                } else {
                    self.samples_kernel += 1;
                }
                match self.current_cpu {
                    // Guard against absurd CPU numbers of a corrupt stream.
                    Some(cpu) if cpu < MAX_CPU => bump(&mut self.samples_per_cpu, cpu as usize),
                    _ => self.samples_no_task += 1,
                }
                bump(&mut self.samples_per_event, sample_event(*flags) as usize);
            }
            Record::Task { cpu, .. } => {
                self.tasks += 1;
                self.current_cpu = Some(*cpu);
            }
            Record::Switch { .. } => self.switches += 1,
            Record::Cookie { .. } => self.cookies += 1,
            Record::Module { .. } => self.modules += 1,
            Record::Lost { stage, cpu, count } => {
                self.lost_records += 1;
                self.lost_by_stage.add(*stage, *count);
                if *stage == RPROF_LOST_MM_BUSY && *cpu < MAX_CPU {
                    add_at(&mut self.lost_mm_busy_per_cpu, *cpu as usize, *count);
                }
            }
            Record::Start { .. } | Record::Stop { .. } => self.span.add(record),
            Record::Throttle { .. } => self.throttles += 1,
            Record::Unthrottle { .. } => self.unthrottles += 1,
            Record::Unknown { .. } => self.unknown += 1,
            Record::Stack { .. } => self.stacks += 1,
            Record::Reset { .. } => self.resets += 1,
        }
    }

    /// Samples reported lost in-band, all stages.
    pub fn lost(&self) -> u64 {
        self.lost_by_stage.total()
    }

    /// `records: N samples: S lost: L`.
    pub fn line(&self) -> String {
        format!(
            "records: {} samples: {} lost: {}",
            self.records,
            self.samples,
            self.lost()
        )
    }

    /// One JSON object (one line, no trailing newline) with these counts
    /// and, if given, the module's statistics:
    ///
    /// ```json
    /// {"records":N,"samples":S,"lost":L,
    ///  "types":{"sample":S,"lost":..,"start":1,"stop":1,"throttle":0,"unthrottle":0,
    ///           "cookie":C,"task":T,"switch":W,"module":M,"unknown":0},
    ///  "samples_user":U,"samples_kernel":K,
    ///  "samples_per_cpu":[..],"samples_no_task":0,"samples_per_event":[..],
    ///  "lost_by_stage":{"ring":R,"buffer":B,"no_mm":..,"no_mapping":..,"no_cookie":..,
    ///                   "mm_busy":..,"other":0},
    ///  "lost_mm_busy_per_cpu":[..],
    ///  "session_ns":NS,
    ///  "stats":{"nr_cpus":2,"drains":D,"wakeups":W,"orphans":O,"orphans_lost":L,
    ///           "lost_mm_busy":M,"locked_bytes":B,
    ///           "total":{"samples":..,"lost_ring":..,...},
    ///           "per_cpu":[{"samples":..,...},...]}}
    /// ```
    ///
    /// `samples_per_cpu` and `lost_mm_busy_per_cpu` have at least
    /// `stats.nr_cpus` entries.
    pub fn to_json(&self, stats: Option<(&rprof_stats, &[rprof_cpu_stats])>) -> String {
        let mut j = String::new();
        let mut per_cpu = self.samples_per_cpu.clone();
        let mut mm_busy_per_cpu = self.lost_mm_busy_per_cpu.clone();
        if let Some((s, _)) = stats {
            let n = (s.nr_cpus as usize).min(MAX_CPU as usize);
            for v in [&mut per_cpu, &mut mm_busy_per_cpu] {
                if v.len() < n {
                    v.resize(n, 0);
                }
            }
        }
        let lost_by_stage: Vec<String> = self
            .lost_by_stage
            .by_stage()
            .iter()
            .map(|(name, n)| format!("\"{name}\":{n}"))
            .chain([format!("\"other\":{}", self.lost_by_stage.other)])
            .collect();
        let list = |v: &[u64]| {
            let items: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("[{}]", items.join(","))
        };
        // Writing to a String cannot fail.
        let _ = write!(
            j,
            "{{\"records\":{},\"samples\":{},\"lost\":{},\
             \"types\":{{\"sample\":{},\"lost\":{},\"start\":{},\"stop\":{},\
             \"throttle\":{},\"unthrottle\":{},\"cookie\":{},\"task\":{},\
             \"switch\":{},\"module\":{},\"unknown\":{}}},\
             \"samples_user\":{},\"samples_kernel\":{},\
             \"samples_per_cpu\":{},\"samples_no_task\":{},\"samples_per_event\":{},\
             \"lost_by_stage\":{{{}}},\"lost_mm_busy_per_cpu\":{},\
             \"session_ns\":{},\"start_ns\":{},\"stop_ns\":{},\"stacks\":{},\"samples_with_stack\":{},\"samples_chain_cut\":{},\"resets\":{}",
            self.records,
            self.samples,
            self.lost(),
            self.samples,
            self.lost_records,
            self.span.starts,
            self.span.stops,
            self.throttles,
            self.unthrottles,
            self.cookies,
            self.tasks,
            self.switches,
            self.modules,
            self.unknown,
            self.samples_user,
            self.samples_kernel,
            list(&per_cpu),
            self.samples_no_task,
            list(&self.samples_per_event),
            lost_by_stage.join(","),
            list(&mm_busy_per_cpu),
            self.span.duration_ns().unwrap_or(0),
            self.span.start_ns.unwrap_or(0),
            self.span.stop_ns.unwrap_or(0),
            self.stacks,
            self.samples_with_stack,
            self.samples_chain_cut,
            self.resets,
        );
        if let Some((s, cpus)) = stats {
            let counters = |c: &rprof_cpu_stats| {
                let fields: Vec<String> = STATS_COLUMNS
                    .iter()
                    .map(|(name, get)| format!("\"{name}\":{}", get(c)))
                    .collect();
                format!("{{{}}}", fields.join(","))
            };
            let per_cpu: Vec<String> = cpus.iter().map(counters).collect();
            let chains: Vec<String> = CHAIN_COLUMNS
                .iter()
                .map(|(name, _, get)| format!("\"{name}\":{}", get(&s.chains)))
                .collect();
            let chains = format!("{{{}}}", chains.join(","));
            let _ = write!(
                j,
                ",\"stats\":{{\"nr_cpus\":{},\"drains\":{},\"wakeups\":{},\"orphans\":{},\"orphans_lost\":{},\
                 \"lost_mm_busy\":{},\"locked_bytes\":{},\"total\":{},\"per_cpu\":[{}],\"chains\":{}}}",
                s.nr_cpus,
                s.drains,
                s.wakeups,
                s.orphans,
                s.orphans_lost,
                s.lost_mm_busy,
                s.locked_bytes,
                counters(&s.total),
                per_cpu.join(","),
                chains
            );
        }
        j.push('}');
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(cpu: u32) -> Record {
        Record::Task {
            cpu,
            pid: 1,
            tid: 1,
            exe_cookie: 0,
            comm: "t".into(),
        }
    }

    fn sample(event: u32, user: bool) -> Record {
        Record::Sample {
            flags: sample_flags(user, event),
            time_ns: 0,
            offset: 0,
            period: 1,
            stack: None,
        }
    }

    #[test]
    fn counts_and_line() {
        let mut s = Summary::default();
        for r in [
            sample(0, false), // before any TASK
            task(0),
            sample(0, true),
            task(1),
            Record::Switch { cookie: 1 },
            sample(0, false),
            sample(1, false),
            Record::Lost {
                stage: RPROF_LOST_RING,
                cpu: 1,
                count: 5,
            },
            Record::Lost {
                stage: RPROF_LOST_BUFFER,
                cpu: 0,
                count: 2,
            },
            Record::Lost {
                stage: RPROF_LOST_NO_MAPPING,
                cpu: 0,
                count: 3,
            },
            Record::Lost {
                stage: RPROF_LOST_NO_MM,
                cpu: 0,
                count: 4,
            },
            Record::Lost {
                stage: RPROF_LOST_NO_COOKIE,
                cpu: 0,
                count: 6,
            },
            Record::Lost {
                stage: RPROF_LOST_MM_BUSY,
                cpu: 2,
                count: 7,
            },
            Record::Lost {
                stage: RPROF_LOST_MM_BUSY,
                cpu: 2,
                count: 1,
            },
            Record::Lost {
                stage: RPROF_LOST_MM_BUSY,
                cpu: 70000,
                count: 1,
            },
            Record::Start {
                time_ns: 0,
                config: rprof_config::new(),
            },
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 0,
                ino: 0,
                path: "/x".into(),
            },
            Record::Module {
                cookie: 17,
                flags: 0,
                base: 0,
                size: 0,
                name: "m".into(),
            },
        ] {
            s.add(&r);
        }
        assert_eq!(s.line(), "records: 18 samples: 4 lost: 29");
        assert_eq!(s.samples_per_cpu, [1, 2]);
        assert_eq!(s.samples_no_task, 1);
        assert_eq!(s.samples_per_event, [3, 1]);
        assert_eq!((s.samples_user, s.samples_kernel), (1, 3));
        let lost = s.lost_by_stage;
        assert_eq!((lost.ring, lost.buffer, s.span.starts), (5, 2, 1));
        assert_eq!((lost.no_mm, lost.no_mapping, lost.no_cookie), (4, 3, 6));
        assert_eq!(lost.mm_busy, 9);
        // Per CPU, of the CPUs that can be: not the corrupt 70000.
        assert_eq!(s.lost_mm_busy_per_cpu, [0, 0, 8]);
        assert_eq!((s.tasks, s.switches, s.cookies, s.modules), (2, 1, 1, 1));
    }

    #[test]
    fn json() {
        let mut s = Summary::default();
        s.add(&task(1));
        s.add(&sample(0, false));
        let mut stats = rprof_stats::new();
        stats.nr_cpus = 3;
        stats.drains = 9;
        stats.total.samples = 1;
        stats.total.delivered = 1;
        stats.lost_mm_busy = 5;
        stats.locked_bytes = 4096;
        s.add(&Record::Lost {
            stage: RPROF_LOST_MM_BUSY,
            cpu: 1,
            count: 5,
        });
        let cpus = [rprof_cpu_stats::default(); 3];
        let j = s.to_json(Some((&stats, &cpus)));
        assert!(
            j.starts_with("{\"records\":3,\"samples\":1,\"lost\":5,"),
            "{j}"
        );
        assert!(j.contains("\"samples_per_cpu\":[0,1,0]"), "{j}");
        assert!(j.contains("\"types\":{\"sample\":1,\"lost\":1,"), "{j}");
        assert!(
            j.contains(
                "\"lost_by_stage\":{\"ring\":0,\"buffer\":0,\"no_mm\":0,\"no_mapping\":0,\
                 \"no_cookie\":0,\"mm_busy\":5,\"other\":0},\"lost_mm_busy_per_cpu\":[0,5,0],"
            ),
            "{j}"
        );
        assert!(
            j.contains("\"orphans_lost\":0,\"lost_mm_busy\":5,\"locked_bytes\":4096,"),
            "{j}"
        );
        assert!(
            j.contains(
                "\"types\":{\"sample\":1,\"lost\":1,\"start\":0,\"stop\":0,\"throttle\":0,\
                 \"unthrottle\":0,\"cookie\":0,\"task\":1,\"switch\":0,\"module\":0,\"unknown\":0}"
            ),
            "{j}"
        );
        assert!(j.contains("\"samples_no_task\":0"), "{j}");
        assert!(
            j.contains(
                "\"total\":{\"samples\":1,\"lost_ring\":0,\"lost_buffer\":0,\"delivered\":1,\
                 \"ring_high_water\":0,\"throttled\":0,\"lost_no_mm\":0,\"lost_no_mapping\":0,\
                 \"lost_no_cookie\":0}"
            ),
            "{j}"
        );
        assert!(j.contains("\"drains\":9"), "{j}");
        assert!(j.contains("\"session_ns\":0"), "no START/STOP: {j}");
        assert_eq!(j.matches("\"samples\":0").count(), 3, "{j}");
        assert!(!j.contains('\n'));
        // Balanced braces and brackets, as a cheap well-formedness check.
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        assert_eq!(j.matches('[').count(), j.matches(']').count());
        assert!(Summary::default()
            .to_json(None)
            .ends_with("\"session_ns\":0,\"start_ns\":0,\"stop_ns\":0,\"stacks\":0,\"samples_with_stack\":0,\"samples_chain_cut\":0,\"resets\":0}"));
    }

    #[test]
    fn session_time_spans_start_to_stop() {
        let mut s = Summary::default();
        let config = rprof_abi::rprof_config::default();
        s.add(&Record::Start {
            time_ns: 1_000,
            config,
        });
        s.add(&sample(0, true));
        s.add(&Record::Stop {
            time_ns: 5_001_000,
            config,
        });
        assert_eq!(
            (s.span.start_ns, s.span.stop_ns),
            (Some(1_000), Some(5_001_000))
        );
        assert!(s.to_json(None).contains("\"session_ns\":5000000"));
    }
}

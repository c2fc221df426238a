//! Counting what a session delivered, and the `--summary-json` line.

use crate::format::STATS_COLUMNS;
use rprof_abi::*;
use rprof_decode::Record;
use std::fmt::Write as _;

/// Counts of the records of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records of any type.
    pub records: u64,
    /// SAMPLE records.
    pub samples: u64,
    /// Samples with a user `ip`.
    pub samples_user: u64,
    /// Samples with a kernel `ip`.
    pub samples_kernel: u64,
    /// Samples per CPU, indexed by CPU number.
    pub samples_per_cpu: Vec<u64>,
    /// Samples per event, indexed by `rprof_config.events` index.
    pub samples_per_event: Vec<u64>,
    /// LOST records.
    pub lost_records: u64,
    /// Sum of `count` of LOST records with stage `RPROF_LOST_RING`.
    pub lost_ring: u64,
    /// Sum of `count` of LOST records with stage `RPROF_LOST_BUFFER`.
    pub lost_buffer: u64,
    /// Sum of `count` of LOST records with another stage.
    pub lost_other: u64,
    /// START records.
    pub starts: u64,
    /// STOP records.
    pub stops: u64,
    /// THROTTLE records.
    pub throttles: u64,
    /// UNTHROTTLE records.
    pub unthrottles: u64,
    /// Records of unknown types.
    pub unknown: u64,
    /// Time of the first START record, if any.
    pub start_ns: Option<u64>,
    /// Time of the last STOP record, if any.
    pub stop_ns: Option<u64>,
}

/// Adds 1 at `index`, growing `v` as needed (indices come from the module
/// and are small: CPU numbers and event indices).
fn bump(v: &mut Vec<u64>, index: usize) {
    if index >= v.len() {
        v.resize(index + 1, 0);
    }
    v[index] += 1;
}

impl Summary {
    /// Counts `record`.
    pub fn add(&mut self, record: &Record) {
        self.records += 1;
        match record {
            Record::Sample { cpu, event, .. } => {
                self.samples += 1;
                if record.is_user_sample() {
                    self.samples_user += 1;
                } else {
                    self.samples_kernel += 1;
                }
                // Guard against absurd CPU numbers of a corrupt stream.
                if *cpu < 65536 {
                    bump(&mut self.samples_per_cpu, *cpu as usize);
                }
                bump(&mut self.samples_per_event, usize::from(*event));
            }
            Record::Lost { stage, count, .. } => {
                self.lost_records += 1;
                let total = match *stage {
                    RPROF_LOST_RING => &mut self.lost_ring,
                    RPROF_LOST_BUFFER => &mut self.lost_buffer,
                    _ => &mut self.lost_other,
                };
                *total = total.saturating_add(*count);
            }
            Record::Start { time_ns, .. } => {
                self.starts += 1;
                self.start_ns.get_or_insert(*time_ns);
            }
            Record::Stop { time_ns, .. } => {
                self.stops += 1;
                self.stop_ns = Some(*time_ns);
            }
            Record::Throttle { .. } => self.throttles += 1,
            Record::Unthrottle { .. } => self.unthrottles += 1,
            Record::Unknown { .. } => self.unknown += 1,
        }
    }

    /// Samples reported lost in-band, all stages.
    pub fn lost(&self) -> u64 {
        self.lost_ring
            .saturating_add(self.lost_buffer)
            .saturating_add(self.lost_other)
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
    ///  "types":{"sample":S,"lost":..,"start":1,"stop":1,"throttle":0,"unthrottle":0,"unknown":0},
    ///  "samples_user":U,"samples_kernel":K,
    ///  "samples_per_cpu":[..],"samples_per_event":[..],
    ///  "lost_by_stage":{"ring":R,"buffer":B,"other":0},
    ///  "stats":{"nr_cpus":2,"drains":D,"wakeups":W,
    ///           "total":{"samples":..,"lost_ring":..,...},
    ///           "per_cpu":[{"samples":..,...},...]}}
    /// ```
    ///
    /// `samples_per_cpu` has at least `stats.nr_cpus` entries.
    pub fn to_json(&self, stats: Option<(&rprof_stats, &[rprof_cpu_stats])>) -> String {
        let mut j = String::new();
        let mut per_cpu = self.samples_per_cpu.clone();
        if let Some((s, _)) = stats {
            let n = (s.nr_cpus as usize).min(65536);
            if per_cpu.len() < n {
                per_cpu.resize(n, 0);
            }
        }
        let list = |v: &[u64]| {
            let items: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("[{}]", items.join(","))
        };
        // Writing to a String cannot fail.
        let _ = write!(
            j,
            "{{\"records\":{},\"samples\":{},\"lost\":{},\
             \"types\":{{\"sample\":{},\"lost\":{},\"start\":{},\"stop\":{},\
             \"throttle\":{},\"unthrottle\":{},\"unknown\":{}}},\
             \"samples_user\":{},\"samples_kernel\":{},\
             \"samples_per_cpu\":{},\"samples_per_event\":{},\
             \"lost_by_stage\":{{\"ring\":{},\"buffer\":{},\"other\":{}}},\
             \"session_ns\":{}",
            self.records,
            self.samples,
            self.lost(),
            self.samples,
            self.lost_records,
            self.starts,
            self.stops,
            self.throttles,
            self.unthrottles,
            self.unknown,
            self.samples_user,
            self.samples_kernel,
            list(&per_cpu),
            list(&self.samples_per_event),
            self.lost_ring,
            self.lost_buffer,
            self.lost_other,
            match (self.start_ns, self.stop_ns) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
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
            let _ = write!(
                j,
                ",\"stats\":{{\"nr_cpus\":{},\"drains\":{},\"wakeups\":{},\"total\":{},\"per_cpu\":[{}]}}",
                s.nr_cpus,
                s.drains,
                s.wakeups,
                counters(&s.total),
                per_cpu.join(",")
            );
        }
        j.push('}');
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu: u32, event: u16, user: bool) -> Record {
        Record::Sample {
            flags: u16::from(user),
            time_ns: 0,
            ip: 0,
            pid: 1,
            tid: 1,
            cpu,
            event,
            period: 1,
        }
    }

    #[test]
    fn counts_and_line() {
        let mut s = Summary::default();
        for r in [
            sample(0, 0, true),
            sample(1, 0, false),
            sample(1, 1, false),
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
            Record::Start {
                time_ns: 0,
                config: rprof_config::new(),
            },
        ] {
            s.add(&r);
        }
        assert_eq!(s.line(), "records: 6 samples: 3 lost: 7");
        assert_eq!(s.samples_per_cpu, [1, 2]);
        assert_eq!(s.samples_per_event, [2, 1]);
        assert_eq!((s.samples_user, s.samples_kernel), (1, 2));
        assert_eq!((s.lost_ring, s.lost_buffer, s.starts), (5, 2, 1));
    }

    #[test]
    fn json() {
        let mut s = Summary::default();
        s.add(&sample(1, 0, false));
        let mut stats = rprof_stats::new();
        stats.nr_cpus = 3;
        stats.drains = 9;
        stats.total.samples = 1;
        stats.total.delivered = 1;
        let cpus = [rprof_cpu_stats::default(); 3];
        let j = s.to_json(Some((&stats, &cpus)));
        assert!(
            j.starts_with("{\"records\":1,\"samples\":1,\"lost\":0,"),
            "{j}"
        );
        assert!(j.contains("\"samples_per_cpu\":[0,1,0]"), "{j}");
        assert!(j.contains("\"types\":{\"sample\":1,\"lost\":0,"), "{j}");
        assert!(
            j.contains("\"lost_by_stage\":{\"ring\":0,\"buffer\":0,\"other\":0}"),
            "{j}"
        );
        assert!(
            j.contains(
                "\"total\":{\"samples\":1,\"lost_ring\":0,\"lost_buffer\":0,\"delivered\":1,\
                 \"ring_high_water\":0,\"throttled\":0}"
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
        assert!(Summary::default().to_json(None).ends_with("\"other\":0},\"session_ns\":0}"));
    }

    #[test]
    fn session_time_spans_start_to_stop() {
        let mut s = Summary::default();
        let config = rprof_abi::rprof_config::default();
        s.add(&Record::Start { time_ns: 1_000, config });
        s.add(&sample(0, 0, true));
        s.add(&Record::Stop { time_ns: 5_001_000, config });
        assert_eq!((s.start_ns, s.stop_ns), (Some(1_000), Some(5_001_000)));
        assert!(s.to_json(None).contains("\"session_ns\":5000000"));
    }
}

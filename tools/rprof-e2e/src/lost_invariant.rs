//! `lost-invariant`: the loss accounting of a finished session, checked on
//! the `rprof dump --quiet --summary-json` line read from standard input.
//!
//! The header promises, at STOP, for every CPU and in total:
//! `samples == delivered + lost_ring + lost_buffer + lost_no_mm +
//! lost_no_mapping + lost_no_cookie + lost_mm_busy`.  `lost_mm_busy` is a
//! total of `struct rprof_stats` only: a CPU's share is what the stream's
//! LOST records of stage `RPROF_LOST_MM_BUSY` say for that CPU.  The
//! stream must agree with the module's counters: every delivered sample
//! is a SAMPLE record (in total, and per CPU by the TASK record before
//! it), and the LOST records add up to the counters of each stage.  A
//! complete stream has exactly one START and one STOP, and no sample
//! before a TASK record.

use crate::checks::Outcome;
use crate::json::{lookup, parse};
use serde_json::Value;
use std::io::Read;

/// The unsigned integer at `path`.
fn uint(root: &Value, path: &str) -> Result<u64, String> {
    let v = lookup(root, path)?;
    v.as_u64()
        .ok_or_else(|| format!("expected an unsigned integer at '{path}', got {v}"))
}

/// The array at `path`.
fn array<'a>(root: &'a Value, path: &str) -> Result<&'a [Value], String> {
    let v = lookup(root, path)?;
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("expected an array at '{path}', got {v}"))
}

/// Entry `cpu` of the array `list` (at `name`), or 0 past its end.
fn entry(list: &[Value], name: &str, cpu: usize) -> Result<u64, String> {
    match list.get(cpu) {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("expected an unsigned integer at '{name}.{cpu}', got {v}")),
        None => Ok(0),
    }
}

/// One CPU's (or the total) counters of `stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counters {
    samples: u64,
    delivered: u64,
    lost_ring: u64,
    lost_buffer: u64,
    lost_no_mm: u64,
    lost_no_mapping: u64,
    lost_no_cookie: u64,
    /// Not in `struct rprof_cpu_stats`: `stats.lost_mm_busy` in total, the
    /// stream's LOST records on one CPU.
    lost_mm_busy: u64,
}

/// A loss counter: its `lost_by_stage` key in the stream's summary
/// (`STAGE`; the counter is `lost_STAGE`), whether the module's total of
/// it is in `stats.total` (else it is `stats.lost_STAGE`: a counter
/// `struct rprof_cpu_stats` does not have), and its accessor.
struct Loss {
    stage: &'static str,
    in_total: bool,
    get: fn(&Counters) -> u64,
}

impl Loss {
    /// A counter of `struct rprof_cpu_stats`.
    const fn per_cpu(stage: &'static str, get: fn(&Counters) -> u64) -> Loss {
        Loss {
            stage,
            in_total: true,
            get,
        }
    }

    /// A counter the module keeps in total only.
    const fn total_only(stage: &'static str, get: fn(&Counters) -> u64) -> Loss {
        Loss {
            stage,
            in_total: false,
            get,
        }
    }

    /// The counter's name, `lost_STAGE`.
    fn field(&self) -> String {
        format!("lost_{}", self.stage)
    }

    /// Where the summary has the module's total of it.
    fn stats_path(&self) -> String {
        let at = if self.in_total {
            "stats.total"
        } else {
            "stats"
        };
        format!("{at}.{}", self.field())
    }
}

/// The loss counters.
const LOSSES: [Loss; 6] = [
    Loss::per_cpu("ring", |c| c.lost_ring),
    Loss::per_cpu("buffer", |c| c.lost_buffer),
    Loss::per_cpu("no_mm", |c| c.lost_no_mm),
    Loss::per_cpu("no_mapping", |c| c.lost_no_mapping),
    Loss::per_cpu("no_cookie", |c| c.lost_no_cookie),
    Loss::total_only("mm_busy", |c| c.lost_mm_busy),
];

impl Counters {
    /// The counters of `struct rprof_cpu_stats` at `v` (`path` names it),
    /// with `lost_mm_busy` as given.
    fn from_json(v: &Value, path: &str, lost_mm_busy: u64) -> Result<Counters, String> {
        let field = |name: &str| uint(v, name).map_err(|e| format!("{path}: {e}"));
        Ok(Counters {
            samples: field("samples")?,
            delivered: field("delivered")?,
            lost_ring: field("lost_ring")?,
            lost_buffer: field("lost_buffer")?,
            lost_no_mm: field("lost_no_mm")?,
            lost_no_mapping: field("lost_no_mapping")?,
            lost_no_cookie: field("lost_no_cookie")?,
            lost_mm_busy,
        })
    }

    /// The terms of the identity, in its order: `delivered`, then every
    /// loss of [`LOSSES`].
    fn terms(&self) -> [u64; 1 + LOSSES.len()] {
        let mut t = [self.delivered; 1 + LOSSES.len()];
        for (t, loss) in t[1..].iter_mut().zip(&LOSSES) {
            *t = (loss.get)(self);
        }
        t
    }

    /// Adds `other` field by field.
    fn add(&mut self, other: &Counters) {
        for (s, x) in [
            (&mut self.samples, other.samples),
            (&mut self.delivered, other.delivered),
            (&mut self.lost_ring, other.lost_ring),
            (&mut self.lost_buffer, other.lost_buffer),
            (&mut self.lost_no_mm, other.lost_no_mm),
            (&mut self.lost_no_mapping, other.lost_no_mapping),
            (&mut self.lost_no_cookie, other.lost_no_cookie),
            (&mut self.lost_mm_busy, other.lost_mm_busy),
        ] {
            *s = s.saturating_add(x);
        }
    }

    /// Checks `samples == delivered + lost_ring + lost_buffer + lost_no_mm
    /// + lost_no_mapping + lost_no_cookie + lost_mm_busy`.
    fn check(&self, what: &str) -> Result<(), String> {
        let sum = self.terms().iter().try_fold(0u64, |a, &b| a.checked_add(b));
        if sum == Some(self.samples) {
            return Ok(());
        }
        let sum = sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
        let terms: Vec<String> = self.terms().iter().map(u64::to_string).collect();
        Err(format!(
            "expected {what}: samples == delivered + lost_ring + lost_buffer + lost_no_mm + \
             lost_no_mapping + lost_no_cookie + lost_mm_busy, got {} != {} = {sum}",
            self.samples,
            terms.join(" + ")
        ))
    }
}

/// Checks one summary line; says what holds, or the first violation.
/// An empty session proves nothing: at least one sample is required, and
/// losses at each stage of `require_loss` (`ring`, `buffer`, ...).
pub fn check(text: &str, require_loss: &[String]) -> Outcome {
    let root = parse(text)?;
    let total = Counters::from_json(
        lookup(&root, "stats.total")?,
        "stats.total",
        uint(&root, "stats.lost_mm_busy")?,
    )?;
    total.check("in stats.total")?;
    if total.samples == 0 {
        return Err("expected samples > 0 in stats.total: an empty session proves nothing".into());
    }
    for stage in require_loss {
        let Some(loss) = LOSSES.iter().find(|l| l.stage == stage) else {
            let known: Vec<&str> = LOSSES.iter().map(|l| l.stage).collect();
            return Err(format!(
                "unknown loss stage '{stage}' (known: {})",
                known.join(", ")
            ));
        };
        if (loss.get)(&total) == 0 {
            return Err(format!(
                "expected {} > 0: the check is meant to test exactness with \
                 records dropped at that stage, and none were",
                loss.stats_path()
            ));
        }
    }

    let per_cpu = array(&root, "stats.per_cpu")?;
    let stream_per_cpu = array(&root, "samples_per_cpu")?;
    let mm_busy_per_cpu = array(&root, "lost_mm_busy_per_cpu")?;
    let mut sum = Counters::default();
    for (cpu, v) in per_cpu.iter().enumerate() {
        let mm_busy = entry(mm_busy_per_cpu, "lost_mm_busy_per_cpu", cpu)?;
        let c = Counters::from_json(v, &format!("stats.per_cpu.{cpu}"), mm_busy)?;
        c.check(&format!("on CPU {cpu}"))?;
        let stream = entry(stream_per_cpu, "samples_per_cpu", cpu)?;
        if stream != c.delivered {
            return Err(format!(
                "expected the stream's samples on CPU {cpu} == stats.per_cpu.{cpu}.delivered, \
                 got {stream} != {}",
                c.delivered
            ));
        }
        sum.add(&c);
    }
    if sum != total {
        return Err(format!(
            "expected stats.total to be the sum of stats.per_cpu, got total {total:?}, sum {sum:?}"
        ));
    }
    for (what, list, name) in [
        ("samples", stream_per_cpu, "samples_per_cpu"),
        ("LOST mm_busy", mm_busy_per_cpu, "lost_mm_busy_per_cpu"),
    ] {
        if let Some(extra) = list
            .iter()
            .enumerate()
            .skip(per_cpu.len())
            .find(|(_, v)| v.as_u64() != Some(0))
        {
            return Err(format!(
                "expected no {what} from CPUs without statistics ({} CPUs), got {name}.{} = {}",
                per_cpu.len(),
                extra.0,
                extra.1
            ));
        }
    }

    let equal = |stream_path: &str, stats_path: &str| -> Result<u64, String> {
        let (a, b) = (uint(&root, stream_path)?, uint(&root, stats_path)?);
        if a == b {
            Ok(a)
        } else {
            Err(format!(
                "expected the stream's {stream_path} == {stats_path}, got {a} != {b}"
            ))
        }
    };
    let samples = equal("samples", "stats.total.delivered")?;
    let mut lost = Vec::new();
    for loss in &LOSSES {
        let n = equal(&format!("lost_by_stage.{}", loss.stage), &loss.stats_path())?;
        lost.push(format!("{} {n}", loss.stage));
    }
    let no_task = uint(&root, "samples_no_task")?;
    if no_task != 0 {
        return Err(format!(
            "expected every sample after a TASK record, got {no_task} samples before any"
        ));
    }
    for t in ["start", "stop"] {
        let n = uint(&root, &format!("types.{t}"))?;
        if n != 1 {
            return Err(format!(
                "expected exactly one {} record, got {n}",
                t.to_uppercase()
            ));
        }
    }
    let terms: Vec<String> = LOSSES
        .iter()
        .map(|loss| format!("{} {}", loss.field(), (loss.get)(&total)))
        .collect();
    Ok(format!(
        "samples {} = delivered {} + {} (in total and on each of {} CPUs, lost_mm_busy \
         per CPU from the stream's LOST records); \
         the stream has {samples} samples, LOST {}, one START, one STOP",
        total.samples,
        total.delivered,
        terms.join(" + "),
        per_cpu.len(),
        lost.join(", ")
    ))
}

/// Runs `lost-invariant` on standard input.
pub fn run(require_loss: &[String]) -> Outcome {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    check(&text, require_loss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof::summary::Summary;
    use rprof_abi::*;
    use rprof_decode::Record;

    /// A summary line as `rprof dump` prints it: 2 CPUs, CPU 0 lost 2 to
    /// the ring, 1 to NO_MM and 7 to MM_BUSY, CPU 1 lost 3 to the buffer,
    /// 4 to NO_MAPPING and 5 to NO_COOKIE.
    fn good() -> String {
        let mut s = Summary::default();
        s.add(&Record::Start {
            time_ns: 0,
            config: rprof_config::new(),
        });
        for cpu in [0, 0, 1, 1, 1, 1] {
            s.add(&Record::Task {
                cpu,
                pid: 1,
                tid: 1,
                exe_cookie: 0,
                comm: "x".into(),
            });
            s.add(&Record::Sample {
                flags: 0,
                time_ns: 0,
                offset: 0,
                period: 1,
                stack: None,
            });
        }
        for (stage, cpu, count) in [
            (RPROF_LOST_RING, 0, 2),
            (RPROF_LOST_BUFFER, 1, 3),
            (RPROF_LOST_NO_MM, 0, 1),
            (RPROF_LOST_NO_MAPPING, 1, 4),
            (RPROF_LOST_NO_COOKIE, 1, 5),
            (RPROF_LOST_MM_BUSY, 0, 7),
        ] {
            s.add(&Record::Lost { stage, cpu, count });
        }
        s.add(&Record::Stop {
            time_ns: 1,
            config: rprof_config::new(),
        });
        let cpus = [
            rprof_cpu_stats {
                samples: 12,
                lost_ring: 2,
                lost_no_mm: 1,
                delivered: 2,
                ..Default::default()
            },
            rprof_cpu_stats {
                samples: 16,
                lost_buffer: 3,
                lost_no_mapping: 4,
                lost_no_cookie: 5,
                delivered: 4,
                ..Default::default()
            },
        ];
        let mut stats = rprof_stats::new();
        stats.nr_cpus = 2;
        stats.lost_mm_busy = 7;
        stats.total = rprof_cpu_stats {
            samples: 28,
            lost_ring: 2,
            lost_buffer: 3,
            delivered: 6,
            lost_no_mm: 1,
            lost_no_mapping: 4,
            lost_no_cookie: 5,
            ..Default::default()
        };
        s.to_json(Some((&stats, &cpus)))
    }

    #[test]
    fn accepts_consistent_figures() {
        let msg = check(&good(), &[]).unwrap();
        assert!(
            msg.contains(
                "samples 28 = delivered 6 + lost_ring 2 + lost_buffer 3 + lost_no_mm 1 + \
                 lost_no_mapping 4 + lost_no_cookie 5 + lost_mm_busy 7"
            ),
            "{msg}"
        );
        assert!(msg.contains("on each of 2 CPUs"), "{msg}");
        assert!(
            msg.contains("LOST ring 2, buffer 3, no_mm 1, no_mapping 4, no_cookie 5, mm_busy 7"),
            "{msg}"
        );
        // As printed, with a newline.
        assert!(check(&format!("{}\n", good()), &[]).is_ok());
    }

    /// `good()` with the first `from` replaced by `to`, which must exist.
    fn broken(from: &str, to: &str) -> String {
        let g = good();
        assert!(g.contains(from), "{from} not in {g}");
        g.replacen(from, to, 1)
    }

    #[test]
    fn reports_violations() {
        for (from, to, says) in [
            // Total identity.
            (
                "\"total\":{\"samples\":28",
                "\"total\":{\"samples\":29",
                "in stats.total: samples == delivered + lost_ring + lost_buffer + lost_no_mm + \
                 lost_no_mapping + lost_no_cookie + lost_mm_busy, got 29 != 6 + 2 + 3 + 1 + 4 + 5 + 7 = 28",
            ),
            // A CPU's identity (the total still adds up).
            (
                "\"per_cpu\":[{\"samples\":12,\"lost_ring\":2",
                "\"per_cpu\":[{\"samples\":12,\"lost_ring\":1",
                "on CPU 0: samples == delivered + lost_ring + lost_buffer + lost_no_mm + \
                 lost_no_mapping + lost_no_cookie + lost_mm_busy, got 12 != 2 + 1 + 0 + 1 + 0 + 0 + 7 = 11",
            ),
            (
                "\"lost_no_mapping\":4,\"lost_no_cookie\":5}]",
                "\"lost_no_mapping\":3,\"lost_no_cookie\":5}]",
                "on CPU 1: samples == delivered",
            ),
            // Stream vs delivered, per CPU.
            (
                "\"samples_per_cpu\":[2,4]",
                "\"samples_per_cpu\":[3,3]",
                "samples on CPU 0 == stats.per_cpu.0.delivered, got 3 != 2",
            ),
            // Stream total vs delivered.
            (
                "\"samples\":6,",
                "\"samples\":5,",
                "the stream's samples == stats.total.delivered, got 5 != 6",
            ),
            // A CPU's MM_BUSY losses come from the stream: moved to the
            // other CPU, both CPUs' identities break (the totals hold).
            (
                "\"lost_mm_busy_per_cpu\":[7,0]",
                "\"lost_mm_busy_per_cpu\":[0,7]",
                "lost_mm_busy, got 12 != 2 + 2 + 0 + 1 + 0 + 0 + 0 = 5",
            ),
            (
                "\"lost_mm_busy_per_cpu\":[7,0]",
                "\"lost_mm_busy_per_cpu\":[7,0,2]",
                "no LOST mm_busy from CPUs without statistics (2 CPUs), got lost_mm_busy_per_cpu.2 = 2",
            ),
            // The module's total of MM_BUSY vs the stream's.
            (
                "\"lost_mm_busy\":7,",
                "\"lost_mm_busy\":8,",
                "in stats.total: samples == delivered",
            ),
            (
                "\"mm_busy\":7,",
                "\"mm_busy\":6,",
                "lost_by_stage.mm_busy == stats.lost_mm_busy, got 6 != 7",
            ),
            (
                "\"lost_mm_busy_per_cpu\":[7,0]",
                "\"per_cpu_mm_busy\":[7,0]",
                "no 'lost_mm_busy_per_cpu' at the top level",
            ),
            // LOST records vs counters.
            (
                "\"lost_by_stage\":{\"ring\":2",
                "\"lost_by_stage\":{\"ring\":1",
                "lost_by_stage.ring == stats.total.lost_ring, got 1 != 2",
            ),
            (
                "\"buffer\":3,\"no_mm\"",
                "\"buffer\":0,\"no_mm\"",
                "lost_by_stage.buffer == stats.total.lost_buffer, got 0 != 3",
            ),
            (
                "\"no_mm\":1,",
                "\"no_mm\":0,",
                "lost_by_stage.no_mm == stats.total.lost_no_mm, got 0 != 1",
            ),
            (
                "\"no_mapping\":4,",
                "\"no_mapping\":7,",
                "lost_by_stage.no_mapping == stats.total.lost_no_mapping, got 7 != 4",
            ),
            (
                "\"no_cookie\":5,",
                "\"no_cookie\":0,",
                "lost_by_stage.no_cookie == stats.total.lost_no_cookie, got 0 != 5",
            ),
            // Samples without a TASK record before them.
            (
                "\"samples_no_task\":0",
                "\"samples_no_task\":2",
                "got 2 samples before any",
            ),
            // START and STOP.
            (
                "\"start\":1",
                "\"start\":0",
                "exactly one START record, got 0",
            ),
            ("\"stop\":1", "\"stop\":2", "exactly one STOP record, got 2"),
            // Samples from a CPU the statistics do not know.
            (
                "\"samples_per_cpu\":[2,4]",
                "\"samples_per_cpu\":[2,4,1]",
                "no samples from CPUs without statistics (2 CPUs), got samples_per_cpu.2 = 1",
            ),
            // Malformed or missing figures.
            (
                "\"delivered\":6",
                "\"delivered\":-6",
                "expected an unsigned integer at 'delivered', got -6",
            ),
            (
                "\"stats\":",
                "\"statistics\":",
                "no 'stats' at the top level",
            ),
            ("\"types\":", "\"kinds\":", "no 'types' at the top level"),
        ] {
            match check(&broken(from, to), &[]) {
                Err(e) => assert!(e.contains(says), "{from} -> {to}: {e}"),
                Ok(m) => panic!("{from} -> {to}: expected a violation, got ok: {m}"),
            }
        }
    }

    #[test]
    fn total_must_be_the_sum_of_the_cpus() {
        // Both identities hold, but the total is not the sum.
        let j = broken(
            "\"total\":{\"samples\":28,\"lost_ring\":2,\"lost_buffer\":3,\"delivered\":6",
            "\"total\":{\"samples\":29,\"lost_ring\":3,\"lost_buffer\":3,\"delivered\":6",
        );
        let j = j.replacen("\"ring\":2", "\"ring\":3", 1);
        match check(&j, &[]) {
            Err(e) => assert!(e.contains("sum of stats.per_cpu"), "{e}"),
            Ok(m) => panic!("expected a violation, got ok: {m}"),
        }
    }

    /// An empty session satisfies the identity trivially (0 = 0): it
    /// must not pass.
    #[test]
    fn an_empty_session_fails() {
        let mut s = Summary::default();
        for r in [
            Record::Start {
                time_ns: 0,
                config: rprof_config::new(),
            },
            Record::Stop {
                time_ns: 1,
                config: rprof_config::new(),
            },
        ] {
            s.add(&r);
        }
        let stats = rprof_stats::new();
        let cpus = vec![rprof_cpu_stats::default(); 2];
        let e = check(&s.to_json(Some((&stats, &cpus))), &[]).unwrap_err();
        assert!(e.contains("expected samples > 0"), "{e}");
    }

    #[test]
    fn required_losses() {
        let ring = [
            "ring".to_string(),
            "buffer".to_string(),
            "mm_busy".to_string(),
        ];
        assert!(check(&good(), &ring).is_ok());
        let no_ring = broken("\"lost_ring\":2", "\"lost_ring\":0");
        // (The identity breaks too; require_loss must not be what passes.)
        assert!(check(&no_ring, &ring).is_err());
        let e = check(&good(), &["everything".to_string()]).unwrap_err();
        assert!(e.contains("unknown loss stage 'everything'"), "{e}");
    }

    #[test]
    fn not_json_is_an_error() {
        assert!(check("records: 1 samples: 1 lost: 0", &[]).is_err());
        assert!(check("", &[]).is_err());
    }
}

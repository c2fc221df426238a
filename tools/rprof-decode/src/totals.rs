//! Totals over a stream that several tools keep: the LOST records' counts
//! by stage, and the session's START and STOP records.

use crate::Record;
use rprof_abi::*;
use std::fmt;

/// The short names of `enum rprof_lost_stage`, stage 1
/// (`RPROF_LOST_RING`) first: the names tools print and JSON keys use.
pub const LOST_STAGE_NAMES: [&str; 6] = [
    "ring",
    "buffer",
    "no_mm",
    "no_mapping",
    "no_cookie",
    "mm_busy",
];

/// The short name of `RPROF_LOST_*` stage `stage` ([`LOST_STAGE_NAMES`]),
/// or `None` for a stage this crate does not know.
pub fn lost_stage_name(stage: u32) -> Option<&'static str> {
    let index = usize::try_from(stage).ok()?.checked_sub(1)?;
    LOST_STAGE_NAMES.get(index).copied()
}

/// Sums of the `count` of LOST records, by stage; saturating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostTotals {
    /// `RPROF_LOST_RING`.
    pub ring: u64,
    /// `RPROF_LOST_BUFFER`.
    pub buffer: u64,
    /// `RPROF_LOST_NO_MM`.
    pub no_mm: u64,
    /// `RPROF_LOST_NO_MAPPING`.
    pub no_mapping: u64,
    /// `RPROF_LOST_NO_COOKIE`.
    pub no_cookie: u64,
    /// `RPROF_LOST_MM_BUSY`.
    pub mm_busy: u64,
    /// Any other stage.
    pub other: u64,
}

impl LostTotals {
    /// The module's loss counters of `RPROF_IOC_GET_STATS`, by stage:
    /// `total.lost_*` and `lost_mm_busy` (zero from a module older than
    /// `RPROF_STATS_SIZE_VER2`).
    pub fn of_stats(stats: &rprof_stats) -> LostTotals {
        let t = &stats.total;
        LostTotals {
            ring: t.lost_ring,
            buffer: t.lost_buffer,
            no_mm: t.lost_no_mm,
            no_mapping: t.lost_no_mapping,
            no_cookie: t.lost_no_cookie,
            mm_busy: stats.lost_mm_busy,
            other: 0,
        }
    }

    /// Counts one LOST record's `stage` and `count`.
    pub fn add(&mut self, stage: u32, count: u64) {
        let total = match stage {
            RPROF_LOST_RING => &mut self.ring,
            RPROF_LOST_BUFFER => &mut self.buffer,
            RPROF_LOST_NO_MM => &mut self.no_mm,
            RPROF_LOST_NO_MAPPING => &mut self.no_mapping,
            RPROF_LOST_NO_COOKIE => &mut self.no_cookie,
            RPROF_LOST_MM_BUSY => &mut self.mm_busy,
            _ => &mut self.other,
        };
        *total = total.saturating_add(count);
    }

    /// Each known stage's short name ([`LOST_STAGE_NAMES`]) and count, in
    /// the order of the stages (without `other`).
    pub fn by_stage(&self) -> [(&'static str, u64); LOST_STAGE_NAMES.len()] {
        let counts = [
            self.ring,
            self.buffer,
            self.no_mm,
            self.no_mapping,
            self.no_cookie,
            self.mm_busy,
        ];
        let mut out = [("", 0); LOST_STAGE_NAMES.len()];
        for ((o, name), count) in out.iter_mut().zip(LOST_STAGE_NAMES).zip(counts) {
            *o = (name, count);
        }
        out
    }

    /// Every stage together; saturating.
    pub fn total(&self) -> u64 {
        self.by_stage()
            .iter()
            .fold(self.other, |a, &(_, b)| a.saturating_add(b))
    }
}

/// `ring 1, buffer 0, no_mm 0, no_mapping 3, no_cookie 0, mm_busy 2`: every
/// known stage, then `other N` if there were losses at stages this crate
/// does not know.
impl fmt::Display for LostTotals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, count)) in self.by_stage().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name} {count}")?;
        }
        if self.other > 0 {
            write!(f, ", other {}", self.other)?;
        }
        Ok(())
    }
}

/// The session's START and STOP records: how many, and when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSpan {
    /// START records.
    pub starts: u64,
    /// STOP records.
    pub stops: u64,
    /// Time of the first START record, if any.
    pub start_ns: Option<u64>,
    /// Time of the last STOP record, if any.
    pub stop_ns: Option<u64>,
}

impl SessionSpan {
    /// Counts `record` if it is a START or a STOP.
    pub fn add(&mut self, record: &Record) {
        match record {
            Record::Start { time_ns, .. } => {
                self.starts += 1;
                self.start_ns.get_or_insert(*time_ns);
            }
            Record::Stop { time_ns, .. } => {
                self.stops += 1;
                self.stop_ns = Some(*time_ns);
            }
            _ => {}
        }
    }

    /// From the first START to the last STOP, in ns (0 if the STOP came
    /// first); `None` without both.
    pub fn duration_ns(&self) -> Option<u64> {
        match (self.start_ns, self.stop_ns) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_by_stage_saturates() {
        let mut l = LostTotals::default();
        for (stage, count) in [
            (RPROF_LOST_RING, 1),
            (RPROF_LOST_BUFFER, 2),
            (RPROF_LOST_NO_MM, 3),
            (RPROF_LOST_NO_MAPPING, 4),
            (RPROF_LOST_NO_COOKIE, 5),
            (RPROF_LOST_MM_BUSY, 8),
            (99, 6),
            (0, 7),
        ] {
            l.add(stage, count);
        }
        assert_eq!(
            l,
            LostTotals {
                ring: 1,
                buffer: 2,
                no_mm: 3,
                no_mapping: 4,
                no_cookie: 5,
                mm_busy: 8,
                other: 13,
            }
        );
        assert_eq!(l.total(), 36);
        assert_eq!(
            l.to_string(),
            "ring 1, buffer 2, no_mm 3, no_mapping 4, no_cookie 5, mm_busy 8, other 13"
        );
        l.add(RPROF_LOST_RING, u64::MAX);
        assert_eq!((l.ring, l.total()), (u64::MAX, u64::MAX));
        assert_eq!(
            LostTotals::default().to_string(),
            "ring 0, buffer 0, no_mm 0, no_mapping 0, no_cookie 0, mm_busy 0"
        );
    }

    /// Every stage of the header has its name, at its number.
    #[test]
    fn stage_names() {
        for (stage, name) in [
            (RPROF_LOST_RING, "ring"),
            (RPROF_LOST_BUFFER, "buffer"),
            (RPROF_LOST_NO_MM, "no_mm"),
            (RPROF_LOST_NO_MAPPING, "no_mapping"),
            (RPROF_LOST_NO_COOKIE, "no_cookie"),
            (RPROF_LOST_MM_BUSY, "mm_busy"),
        ] {
            assert_eq!(lost_stage_name(stage), Some(name), "stage {stage}");
        }
        assert_eq!(lost_stage_name(0), None);
        assert_eq!(lost_stage_name(RPROF_LOST_MM_BUSY + 1), None);
        assert_eq!(lost_stage_name(u32::MAX), None);
    }

    /// The module's counters, by stage: the VER2 total `lost_mm_busy`
    /// included.
    #[test]
    fn of_stats() {
        let mut stats = rprof_stats::new();
        stats.total = rprof_cpu_stats {
            lost_ring: 1,
            lost_buffer: 2,
            lost_no_mm: 3,
            lost_no_mapping: 4,
            lost_no_cookie: 5,
            samples: 100,
            delivered: 79,
            ..Default::default()
        };
        stats.lost_mm_busy = 6;
        let l = LostTotals::of_stats(&stats);
        assert_eq!(l.mm_busy, 6);
        assert_eq!(l.total(), 21);
        assert_eq!(
            l.to_string(),
            "ring 1, buffer 2, no_mm 3, no_mapping 4, no_cookie 5, mm_busy 6"
        );
    }

    #[test]
    fn span_is_first_start_to_last_stop() {
        let config = rprof_config::new();
        let mut s = SessionSpan::default();
        assert_eq!(s.duration_ns(), None);
        for r in [
            Record::Start {
                time_ns: 10,
                config,
            },
            Record::Switch { cookie: 1 },
            Record::Start {
                time_ns: 20,
                config,
            },
            Record::Stop {
                time_ns: 30,
                config,
            },
        ] {
            s.add(&r);
        }
        assert_eq!(s.duration_ns(), Some(20));
        s.add(&Record::Stop {
            time_ns: 50,
            config,
        });
        assert_eq!(
            s,
            SessionSpan {
                starts: 2,
                stops: 2,
                start_ns: Some(10),
                stop_ns: Some(50),
            }
        );
        assert_eq!(s.duration_ns(), Some(40));
        let backwards = SessionSpan {
            start_ns: Some(9),
            stop_ns: Some(3),
            ..SessionSpan::default()
        };
        assert_eq!(backwards.duration_ns(), Some(0));
    }
}

//! Totals over a stream that several tools keep: the LOST records' counts
//! by stage, and the session's START and STOP records.

use crate::Record;
use rprof_abi::*;

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
    /// Any other stage.
    pub other: u64,
}

impl LostTotals {
    /// Counts one LOST record's `stage` and `count`.
    pub fn add(&mut self, stage: u32, count: u64) {
        let total = match stage {
            RPROF_LOST_RING => &mut self.ring,
            RPROF_LOST_BUFFER => &mut self.buffer,
            RPROF_LOST_NO_MM => &mut self.no_mm,
            RPROF_LOST_NO_MAPPING => &mut self.no_mapping,
            RPROF_LOST_NO_COOKIE => &mut self.no_cookie,
            _ => &mut self.other,
        };
        *total = total.saturating_add(count);
    }

    /// Every stage together; saturating.
    pub fn total(&self) -> u64 {
        [
            self.buffer,
            self.no_mm,
            self.no_mapping,
            self.no_cookie,
            self.other,
        ]
        .iter()
        .fold(self.ring, |a, &b| a.saturating_add(b))
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
                other: 13,
            }
        );
        assert_eq!(l.total(), 28);
        l.add(RPROF_LOST_RING, u64::MAX);
        assert_eq!((l.ring, l.total()), (u64::MAX, u64::MAX));
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

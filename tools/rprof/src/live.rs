//! Live sessions (`rprof top`, `rprof daemon`): the stream goes straight
//! into an [`Aggregate`], and symbols come from the running system.

use crate::session::{Framer, Sink};
use crate::Error;
use rprof_report::Aggregate;

/// A [`Sink`] that counts samples as they arrive.
#[derive(Debug, Default)]
pub struct AggregateSink {
    framer: Framer,
    /// The counts so far.
    pub agg: Aggregate,
    /// Bytes of stream taken.
    pub bytes: u64,
    /// RESET records taken.
    pub resets: u64,
    /// The unwind-table uploader's eyes on the stream, if tables are
    /// uploaded.
    pub watch: Option<crate::unwind::Watch>,
    /// More aggregates fed every record after `agg`, each under its
    /// owner's number: the daemon's scrapes in progress, each counting
    /// its own window ([`Aggregate::fork`]).
    pub taps: Vec<(u64, Aggregate)>,
}

impl AggregateSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports a malformed or incomplete record at the end.
    pub fn finish(&self) -> Result<(), Error> {
        self.framer.finish()
    }

    /// A malformed record seen so far (nothing after it is counted).
    pub fn malformed(&self) -> Option<&str> {
        self.framer.error()
    }
}

impl Sink for AggregateSink {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.bytes += bytes.len() as u64;
        let agg = &mut self.agg;
        let resets = &mut self.resets;
        let watch = &mut self.watch;
        let taps = &mut self.taps;
        self.framer.feed(bytes, |r| {
            *resets += u64::from(matches!(r, rprof_decode::Record::Reset { .. }));
            if let Some(w) = watch {
                w.record(r);
            }
            agg.feed(r);
            for (_, tap) in taps.iter_mut() {
                tap.feed(r);
            }
            Ok(())
        })
    }

    fn saw_stop(&self) -> bool {
        self.framer.stops() > 0
    }
}

/// A symbolizer over the running system: `/proc/kallsyms` now, files at
/// their paths (checked against the COOKIE records' device and inode).
pub fn symbolizer() -> rprof_report::Symbolizer {
    rprof_report::Symbolizer::new(&crate::snapshot::read_kallsyms(), &[], None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_decode::Record;

    /// A malformed record is known as soon as it is read, not only at
    /// the end (the daemon renews its session at once).
    #[test]
    fn a_malformed_record_is_known_at_once() {
        let mut sink = AggregateSink::new();
        let mut stream = Vec::new();
        Record::Switch { cookie: 2 }.encode(&mut stream);
        Sink::feed(&mut sink, &stream).unwrap();
        assert_eq!(sink.malformed(), None);
        // A header whose size is not a multiple of 8.
        let bad = [1u8, 0, 0, 0, 13, 0, 0, 0];
        Sink::feed(&mut sink, &bad).unwrap();
        let e = sink.malformed().expect("the malformed record is not seen");
        assert!(e.contains("stream offset 16"), "{e}");
        assert!(sink.finish().is_err());
    }
}

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
}

impl Sink for AggregateSink {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.bytes += bytes.len() as u64;
        let agg = &mut self.agg;
        self.framer.feed(bytes, |r| {
            agg.feed(r);
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

//! A raw event stream saved by `rprof dump --raw FILE`, decoded and
//! resolved, for the checks that look at where samples landed.

use rprof_decode::{Decoder, LostTotals, Record, ResolvedSample, Resolver};
use std::path::Path;

/// A decoded and resolved stream.
#[derive(Debug)]
pub struct Stream {
    /// Every record, in order.
    pub records: Vec<Record>,
    /// Every sample with its context.
    pub samples: Vec<ResolvedSample>,
    /// The state after the last record: the cookie names.
    pub resolver: Resolver,
    /// The LOST records' totals.
    pub lost: LostTotals,
    /// Bytes at the end that are not a whole record (a stream cut short).
    pub trailing: usize,
}

impl Stream {
    /// Decodes and resolves `bytes`.  A stream that ends inside a record
    /// keeps the records before it (see `trailing`); a malformed record is
    /// an error.
    pub fn decode(bytes: &[u8]) -> Result<Stream, String> {
        let mut decoder = Decoder::new(bytes);
        let mut records = Vec::new();
        for item in decoder.by_ref() {
            match item {
                Ok(r) => records.push(r),
                Err(e) if e.kind.is_truncation() => break,
                Err(e) => return Err(format!("the raw stream does not decode: {e}")),
            }
        }
        let trailing = bytes.len() - decoder.position();
        let mut resolver = Resolver::new();
        let mut lost = LostTotals::default();
        let mut samples = Vec::new();
        for r in &records {
            if let Record::Lost { stage, count, .. } = r {
                lost.add(*stage, *count);
            }
            if let Some(s) = resolver.feed(r) {
                samples.push(s);
            }
        }
        Ok(Stream {
            records,
            samples,
            resolver,
            lost,
            trailing,
        })
    }

    /// Reads, decodes and resolves the raw stream in file `path`.
    pub fn load(path: &Path) -> Result<Stream, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if bytes.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        Self::decode(&bytes)
    }

    /// The LOST records' totals as a JSON object: every stage by its
    /// short name, and `other`.
    pub fn lost_json(&self) -> serde_json::Value {
        let mut m: serde_json::Map<String, serde_json::Value> = self
            .lost
            .by_stage()
            .iter()
            .map(|&(name, n)| (name.to_string(), n.into()))
            .collect();
        m.insert("other".into(), self.lost.other.into());
        serde_json::Value::Object(m)
    }

    /// The user samples of tasks whose comm is `comm` (all user samples if
    /// `None`).
    pub fn user_samples<'a>(
        &'a self,
        comm: Option<&'a str>,
    ) -> impl Iterator<Item = &'a ResolvedSample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.user && comm.is_none_or(|c| s.comm() == Some(c)))
    }
}

#[cfg(test)]
impl Stream {
    /// `records` encoded, then decoded and resolved.
    pub(crate) fn of_records(records: &[Record]) -> Stream {
        let mut bytes = Vec::new();
        for r in records {
            r.encode(&mut bytes);
        }
        Stream::decode(&bytes).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rprof_abi::*;

    #[test]
    fn decodes_resolves_and_totals() {
        let mut b = Vec::new();
        for r in [
            Record::Cookie {
                cookie: 16,
                flags: 0,
                dev: 1,
                ino: 2,
                path: "/bin/x".into(),
            },
            Record::Task {
                cpu: 0,
                pid: 5,
                tid: 5,
                exe_cookie: 16,
                comm: "x".into(),
            },
            Record::Switch { cookie: 16 },
            Record::Sample {
                flags: 1,
                time_ns: 1,
                offset: 0x10,
                period: 1,
                stack: None,
            },
            Record::Lost {
                stage: RPROF_LOST_NO_MM,
                cpu: 0,
                count: 2,
            },
            Record::Lost {
                stage: RPROF_LOST_NO_MAPPING,
                cpu: 1,
                count: 3,
            },
            Record::Lost {
                stage: 77,
                cpu: 1,
                count: 1,
            },
            Record::Lost {
                stage: RPROF_LOST_MM_BUSY,
                cpu: 1,
                count: 4,
            },
            Record::Task {
                cpu: 1,
                pid: 6,
                tid: 6,
                exe_cookie: 16,
                comm: "y".into(),
            },
            Record::Sample {
                flags: 1,
                time_ns: 2,
                offset: 0x20,
                period: 1,
                stack: None,
            },
            Record::Sample {
                flags: 0,
                time_ns: 3,
                offset: 0x30,
                period: 1,
                stack: None,
            },
        ] {
            r.encode(&mut b);
        }
        b.extend_from_slice(&[9, 0, 0, 0, 64, 0, 0, 0]); // a cut record
        let s = Stream::decode(&b).unwrap();
        assert_eq!(s.records.len(), 11);
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.trailing, 8);
        assert_eq!((s.lost.no_mm, s.lost.no_mapping, s.lost.other), (2, 3, 1));
        assert_eq!(s.user_samples(None).count(), 2);
        assert_eq!(s.user_samples(Some("x")).count(), 1);
        assert_eq!(s.user_samples(Some("z")).count(), 0);
        assert_eq!(s.resolver.path(16), Some("/bin/x"));
        assert_eq!(s.lost_json()["no_mapping"], 3);
        assert_eq!(s.lost_json()["mm_busy"], 4);
        assert_eq!(s.lost_json()["other"], 1);

        let mut bad = b[..b.len() - 8].to_vec();
        bad.extend_from_slice(&[1, 0, 0, 0, 12, 0, 0, 0]);
        assert!(Stream::decode(&bad).is_err());
    }
}

//! pprof's `profile.proto`, gzip'd, written by hand (the format is a
//! dozen fields of protobuf).
//!
//! Sample types: `samples/count`, then `cpu/nanoseconds` for the software
//! clocks (whose period is in ns) or `EVENT/count` for hardware events:
//! each sample carries its count and the sum of its periods.  Every sample
//! has the stack `[symbol, shared object, comm]` (leaf first, as pprof
//! wants), labels `comm` and `pid`; a file's symbol location points to a
//! mapping with the file's path and build-id.
//!
//! [`decode`] reads enough of a profile back to check it (tests, e2e).

use crate::symbolize::FrameKind;
use crate::Row;
use flate2::write::GzEncoder;
use std::collections::HashMap;
use std::io::{self, Write};

/// What the profile says about itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The event's name (`cpu-clock`).
    pub event: String,
    /// Whether its period is in nanoseconds.
    pub period_is_time: bool,
    /// The nominal period between samples (ns for the clocks, events
    /// otherwise); 0 if unknown.
    pub period: i64,
    /// Wall-clock start, ns since the epoch.
    pub time_nanos: i64,
    /// Length of the profile, ns.
    pub duration_nanos: i64,
    /// A comment (e.g. the command).
    pub comment: Option<String>,
}

impl Options {
    /// The event part of the options for the event configured as `e`: its
    /// name, whether its period is time, and its nominal period (for a
    /// frequency, the ns between samples).
    pub fn for_event(e: &rprof_abi::rprof_event_config) -> Options {
        let period = if e.flags & rprof_abi::RPROF_EVENT_FREQ != 0 && e.period > 0 {
            (1_000_000_000 / e.period) as i64
        } else {
            e.period as i64
        };
        Options {
            event: crate::event_name(e.kind),
            period_is_time: crate::period_is_time(e.kind),
            period,
            ..Options::default()
        }
    }
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn key(buf: &mut Vec<u8>, field: u32, wire: u8) {
    varint(buf, (u64::from(field) << 3) | u64::from(wire));
}

/// A varint field, left out when 0 (proto3 default).
fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        key(buf, field, 0);
        varint(buf, v);
    }
}

fn bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(buf, field, 2);
    varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

fn packed(buf: &mut Vec<u8>, field: u32, vals: &[u64]) {
    let mut inner = Vec::new();
    for v in vals {
        varint(&mut inner, *v);
    }
    bytes(buf, field, &inner);
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> u64 {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        let i = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, ty: &str, unit: &str) -> Vec<u8> {
    let mut m = Vec::new();
    uint(&mut m, 1, strings.get(ty));
    uint(&mut m, 2, strings.get(unit));
    m
}

/// The profile of `rows` as protobuf bytes (not compressed).
pub fn encode(rows: &[Row], opts: &Options) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut out = Vec::new();
    let (second_type, second_unit) = if opts.period_is_time {
        ("cpu", "nanoseconds")
    } else {
        (opts.event.as_str(), "count")
    };
    let st = value_type(&mut strings, "samples", "count");
    bytes(&mut out, 1, &st);
    let st = value_type(&mut strings, second_type, second_unit);
    bytes(&mut out, 1, &st);

    // Mappings: one per file (and per kernel object), in order of first use.
    let mut mappings: HashMap<String, u64> = HashMap::new();
    let mut mapping_msgs = Vec::new();
    // Functions by (name, file), locations by (kind, function, mapping, address).
    let mut functions: HashMap<(String, String), u64> = HashMap::new();
    let mut function_msgs = Vec::new();
    let mut locations: HashMap<(u64, u64, u64), u64> = HashMap::new();
    let mut location_msgs = Vec::new();
    let mut samples = Vec::new();

    let mut function = |strings: &mut Strings, name: &str, file: &str| -> u64 {
        let k = (name.to_string(), file.to_string());
        if let Some(id) = functions.get(&k) {
            return *id;
        }
        let id = functions.len() as u64 + 1;
        let mut m = Vec::new();
        uint(&mut m, 1, id);
        uint(&mut m, 2, strings.get(name));
        uint(&mut m, 3, strings.get(name));
        uint(&mut m, 4, strings.get(file));
        function_msgs.push(m);
        functions.insert(k, id);
        id
    };
    let mut location = |function_id: u64, mapping_id: u64, address: u64| -> u64 {
        let k = (function_id, mapping_id, address);
        if let Some(id) = locations.get(&k) {
            return *id;
        }
        let id = locations.len() as u64 + 1;
        let mut m = Vec::new();
        uint(&mut m, 1, id);
        uint(&mut m, 2, mapping_id);
        uint(&mut m, 3, address);
        let mut line = Vec::new();
        uint(&mut line, 1, function_id);
        bytes(&mut m, 4, &line);
        location_msgs.push(m);
        locations.insert(k, id);
        id
    };

    for r in rows {
        let f = &r.frame;
        let mapping_id = match mappings.get(&f.path) {
            Some(id) => *id,
            None => {
                let id = mappings.len() as u64 + 1;
                let mut m = Vec::new();
                uint(&mut m, 1, id);
                uint(&mut m, 5, strings.get(&f.path));
                if !f.build_id.is_empty() {
                    let hex = rprof_symbols::elf::hex(&f.build_id);
                    uint(&mut m, 6, strings.get(&hex));
                }
                // has_functions: the symbols are resolved.
                uint(&mut m, 7, 1);
                mapping_msgs.push(m);
                mappings.insert(f.path.clone(), id);
                id
            }
        };
        let sym_fn = function(&mut strings, &f.symbol, &f.path);
        let leaf = location(sym_fn, mapping_id, f.addr);
        let dso_name = if f.kind == FrameKind::File {
            f.path.as_str()
        } else {
            f.dso.as_str()
        };
        let dso_fn = function(&mut strings, dso_name, "");
        let dso_loc = location(dso_fn, 0, 0);
        let comm_fn = function(&mut strings, &r.comm, "");
        let comm_loc = location(comm_fn, 0, 0);

        let mut s = Vec::new();
        packed(&mut s, 1, &[leaf, dso_loc, comm_loc]);
        // int64 values; both are non-negative.
        packed(&mut s, 2, &[r.samples, r.period]);
        let mut label = Vec::new();
        uint(&mut label, 1, strings.get("comm"));
        uint(&mut label, 2, strings.get(&r.comm));
        bytes(&mut s, 3, &label);
        let mut label = Vec::new();
        uint(&mut label, 1, strings.get("pid"));
        uint(&mut label, 3, u64::from(r.pid));
        bytes(&mut s, 3, &label);
        samples.push(s);
    }
    for s in &samples {
        bytes(&mut out, 2, s);
    }
    for m in &mapping_msgs {
        bytes(&mut out, 3, m);
    }
    for m in &location_msgs {
        bytes(&mut out, 4, m);
    }
    for m in &function_msgs {
        bytes(&mut out, 5, m);
    }
    let comment = opts.comment.as_deref().map(|c| strings.get(c));
    let period_type = value_type(&mut strings, second_type, second_unit);
    for s in &strings.table {
        bytes(&mut out, 6, s.as_bytes());
    }
    uint(&mut out, 9, opts.time_nanos as u64);
    uint(&mut out, 10, opts.duration_nanos as u64);
    bytes(&mut out, 11, &period_type);
    uint(&mut out, 12, opts.period as u64);
    if let Some(c) = comment {
        // `repeated int64 comment`, packed.
        packed(&mut out, 13, &[c]);
    }
    out
}

/// Writes the gzip'd profile of `rows`.
pub fn write_gz(out: &mut dyn Write, rows: &[Row], opts: &Options) -> io::Result<()> {
    let mut gz = GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&encode(rows, opts))?;
    gz.finish()?;
    Ok(())
}

/// What [`decode`] reads of a profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// (type, unit) of each value.
    pub sample_types: Vec<(String, String)>,
    /// Per value, the sum over all samples.
    pub totals: Vec<i64>,
    /// Number of sample messages.
    pub samples: usize,
    /// Number of locations.
    pub locations: usize,
    /// Function names.
    pub functions: Vec<String>,
    /// Mapping file names.
    pub mappings: Vec<String>,
}

/// A minimal protobuf reader over one message.
struct Pb<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Pb<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .b
                .get(self.pos)
                .ok_or_else(|| format!("varint past the end at {}", self.pos))?;
            self.pos += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("varint too long at {}", self.pos))
    }

    /// The next (field, wire type, varint value or bytes).
    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, String> {
        if self.pos >= self.b.len() {
            return Ok(None);
        }
        let k = self.varint()?;
        let field = k >> 3;
        match k & 7 {
            0 => Ok(Some((field, Field::Varint(self.varint()?)))),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|e| e.to_string())?;
                let end = self
                    .pos
                    .checked_add(len)
                    .filter(|e| *e <= self.b.len())
                    .ok_or_else(|| format!("field {field} of {len} bytes past the end"))?;
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(Some((field, Field::Bytes(s))))
            }
            1 => {
                self.pos += 8;
                Ok(Some((field, Field::Varint(0))))
            }
            5 => {
                self.pos += 4;
                Ok(Some((field, Field::Varint(0))))
            }
            w => Err(format!("wire type {w} of field {field}")),
        }
    }
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn packed_or_single(f: Field<'_>) -> Result<Vec<u64>, String> {
    match f {
        Field::Varint(v) => Ok(vec![v]),
        Field::Bytes(b) => {
            let mut p = Pb { b, pos: 0 };
            let mut v = Vec::new();
            while p.pos < b.len() {
                v.push(p.varint()?);
            }
            Ok(v)
        }
    }
}

/// Reads a profile (plain protobuf, or gzip'd) far enough to check it.
pub fn decode(data: &[u8]) -> Result<Summary, String> {
    let plain;
    let data = if data.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        io::Read::read_to_end(&mut flate2::read::GzDecoder::new(data), &mut v)
            .map_err(|e| format!("gzip: {e}"))?;
        plain = v;
        &plain[..]
    } else {
        data
    };
    let mut strings = Vec::new();
    let mut types = Vec::new();
    let mut function_names = Vec::new();
    let mut mapping_names = Vec::new();
    let mut s = Summary::default();
    let mut p = Pb { b: data, pos: 0 };
    while let Some((field, value)) = p.next()? {
        match (field, value) {
            (1, Field::Bytes(b)) => {
                let mut q = Pb { b, pos: 0 };
                let (mut t, mut u) = (0, 0);
                while let Some((f, v)) = q.next()? {
                    match (f, v) {
                        (1, Field::Varint(x)) => t = x,
                        (2, Field::Varint(x)) => u = x,
                        _ => {}
                    }
                }
                types.push((t, u));
            }
            (2, Field::Bytes(b)) => {
                s.samples += 1;
                let mut q = Pb { b, pos: 0 };
                while let Some((f, v)) = q.next()? {
                    if f == 2 {
                        for (i, x) in packed_or_single(v)?.into_iter().enumerate() {
                            if s.totals.len() <= i {
                                s.totals.resize(i + 1, 0);
                            }
                            s.totals[i] += x as i64;
                        }
                    }
                }
            }
            (3, Field::Bytes(b)) => {
                let mut q = Pb { b, pos: 0 };
                while let Some((f, v)) = q.next()? {
                    if let (5, Field::Varint(x)) = (f, v) {
                        mapping_names.push(x);
                    }
                }
            }
            (4, Field::Bytes(_)) => s.locations += 1,
            (5, Field::Bytes(b)) => {
                let mut q = Pb { b, pos: 0 };
                while let Some((f, v)) = q.next()? {
                    if let (2, Field::Varint(x)) = (f, v) {
                        function_names.push(x);
                    }
                }
            }
            (6, Field::Bytes(b)) => strings.push(String::from_utf8_lossy(b).into_owned()),
            _ => {}
        }
    }
    let name = |i: u64| -> Result<String, String> {
        strings
            .get(i as usize)
            .cloned()
            .ok_or_else(|| format!("string index {i} past the table of {}", strings.len()))
    };
    if strings.first().is_some_and(|s| !s.is_empty()) || strings.is_empty() {
        return Err("the string table must start with \"\"".into());
    }
    for (t, u) in types {
        s.sample_types.push((name(t)?, name(u)?));
    }
    for f in function_names {
        s.functions.push(name(f)?);
    }
    for m in mapping_names {
        s.mappings.push(name(m)?);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{testdata, Aggregate, Filter, Symbolizer};

    #[test]
    fn event_options() {
        use rprof_abi::*;
        let o = Options::for_event(&rprof_event_config {
            kind: RPROF_EVENT_CPU_CLOCK,
            flags: RPROF_EVENT_FREQ,
            period: 999,
        });
        assert_eq!(
            (o.event.as_str(), o.period_is_time, o.period),
            ("cpu-clock", true, 1_001_001)
        );
        let o = Options::for_event(&rprof_event_config {
            kind: RPROF_EVENT_CYCLES,
            flags: 0,
            period: 100_000,
        });
        assert_eq!(
            (o.event.as_str(), o.period_is_time, o.period),
            ("cycles", false, 100_000)
        );
        let o = Options::for_event(&rprof_event_config {
            kind: RPROF_EVENT_TASK_CLOCK,
            flags: RPROF_EVENT_FREQ,
            period: 0,
        });
        assert_eq!((o.period_is_time, o.period), (true, 0));
        assert_eq!((o.time_nanos, o.duration_nanos, o.comment), (0, 0, None));
    }

    #[test]
    fn varints() {
        let mut b = Vec::new();
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
        let mut p = Pb { b: &b, pos: 0 };
        assert_eq!(p.varint().unwrap(), 300);
        let mut b = Vec::new();
        varint(&mut b, u64::MAX);
        assert_eq!(Pb { b: &b, pos: 0 }.varint().unwrap(), u64::MAX);
    }

    #[test]
    fn profile_round_trip() {
        let (stream, info) = testdata::stream();
        let mut agg = Aggregate::new();
        agg.feed_stream(&stream).unwrap();
        let mut sym = Symbolizer::new(testdata::KALLSYMS, &[info], None);
        let rows = crate::rows(&agg, &mut sym, &Filter::default());
        let opts = Options {
            event: "cpu-clock".into(),
            period_is_time: true,
            period: 1_001_001,
            comment: Some("test".into()),
            ..Options::default()
        };
        let mut gz = Vec::new();
        write_gz(&mut gz, &rows, &opts).unwrap();
        let s = decode(&gz).unwrap();
        assert_eq!(
            s.sample_types,
            [
                ("samples".to_string(), "count".to_string()),
                ("cpu".to_string(), "nanoseconds".to_string())
            ]
        );
        assert_eq!(s.totals[0], testdata::SAMPLES as i64);
        assert_eq!(s.totals[1], testdata::SAMPLES as i64 * 1_001_001);
        assert!(s.functions.iter().any(|f| f == "rprof_report_test_hot"));
        assert!(s.functions.iter().any(|f| f == "attr_main"));
        assert!(s.mappings.iter().any(|m| m == "[kernel.kallsyms]"));
        assert_eq!(decode(&encode(&rows, &opts)).unwrap(), s);
        assert!(decode(&[0x12, 0x05, 1]).is_err());
    }
}

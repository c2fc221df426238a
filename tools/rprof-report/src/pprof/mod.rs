//! pprof's `profile.proto`, gzip'd: the encoder is prost's code for the
//! official schema ([`profile`], generated from `proto/profile.proto` by
//! `tools/pprof-gen`).
//!
//! # What the profile holds
//!
//! - Sample types, per event of the session, so that events are never
//!   added together: with one event `samples/count` and `cpu/nanoseconds`
//!   (the software clocks, whose period is in ns) or `EVENT/count`; with
//!   several, `NAME_samples/count` and `NAME/UNIT` for each (`NAME` is the
//!   event's name, or its `-e` label when two events share a name), the
//!   first event's value being the default.  A sample carries values for
//!   its own event only.
//! - Period: for an event sampled every N events, N; for one sampled at a
//!   frequency, the mean period of its samples (the kernel adapts it), or
//!   for a clock without samples 1e9/HZ ns.  Each event's period is also
//!   in a comment.
//! - Locations at the sampled address: a file's virtual address (its
//!   unrelocated ELF address), a kernel or module address.  Each belongs
//!   to a mapping with `memory_start`, `memory_limit` and `file_offset`:
//!   a file's PT_LOAD segment, a module's text, or else the range of the
//!   sampled addresses (for a file that could not be read, addresses are
//!   then file offsets, and the mapping says so with `file_offset ==
//!   memory_start`).  Mappings carry the recorded build-id.
//! - Symbolized locations have a line naming the function; the function's
//!   `filename` and `start_line` and the line's number come from the
//!   file's DWARF when it has line tables.  A mapping has
//!   `has_functions` only if all its locations were symbolized (others
//!   have no line, so that pprof may symbolize them from the binary), and
//!   `has_filenames`/`has_line_numbers` only if all of them have a source
//!   line.  Where DWARF says functions were inlined at an address, its
//!   location has one line per function, the inlined ones first (pprof's
//!   order), each at its own source line, and the mapping has
//!   `has_inline_frames`.
//! - A sample with a call chain has its real stack, leaf first: one
//!   location per frame, callers at their call sites (return addresses one
//!   byte back).  A sample without one has `[address, shared object,
//!   comm]`, the last two as locations without a mapping.  Every sample
//!   is labelled with `comm` and `pid`.  File mappings come first, most
//!   samples first (pprof takes mapping 0 as the main binary).

#[expect(missing_docs, reason = "prost's generated code")]
pub mod profile;

use crate::symbolize::{FrameKind, MappingKey};
use crate::{Aggregate, Filter, Symbolizer};
use flate2::write::GzEncoder;
use profile::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use prost::Message;
use rprof_abi::rprof_config;
use rprof_symbols::dwarf::InlineFrame;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::sync::Arc;

/// The largest profile [`read`] inflates: 256 MiB.
pub const MAX_INFLATED: u64 = 1 << 28;

/// What the profile says about itself besides the samples.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Wall-clock start, ns since the epoch.
    pub time_nanos: i64,
    /// Length of the profile, ns.
    pub duration_nanos: i64,
    /// Comments (e.g. the command), one string each.
    pub comments: Vec<String>,
}

/// One event's sample types and period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventType {
    /// Index in the session's configuration.
    pub index: u32,
    /// Type of the sample count (`samples`, or `NAME_samples`).
    pub count_type: String,
    /// Type and unit of the summed periods.
    pub value_type: (String, String),
    /// The period between samples (see the module doc).
    pub period: i64,
    /// `cpu-clock@999` style.
    pub label: String,
}

/// The sample types of `events` (indices into `config`), with each
/// event's period from the samples of `agg`.
pub fn event_types(config: &rprof_config, events: &[u32], agg: &Aggregate) -> Vec<EventType> {
    // Samples and period sums per event, over the whole recording.
    let mut sums: HashMap<u32, (u64, u64)> = HashMap::new();
    for (k, c) in agg.counts() {
        let e = sums.entry(k.event).or_default();
        e.0 = e.0.saturating_add(c.samples);
        e.1 = e.1.saturating_add(c.period);
    }
    let name_of = |i: u32| match config.events.get(i as usize) {
        Some(e) if i < config.nr_events => crate::label::event_name(e.kind),
        _ => format!("event{i}"),
    };
    let names: Vec<String> = events.iter().map(|&i| name_of(i)).collect();
    events
        .iter()
        .zip(&names)
        .map(|(&i, name)| {
            let e = config
                .events
                .get(i as usize)
                .filter(|_| i < config.nr_events)
                .copied()
                .unwrap_or_default();
            let time = crate::label::period_is_time(e.kind);
            let unit = if time { "nanoseconds" } else { "count" };
            let label = if i < config.nr_events {
                crate::label::event_label(config, i)
            } else {
                name.clone()
            };
            // Two events of one kind are told apart by their labels.
            let shared = names.iter().filter(|n| *n == name).count() > 1;
            let base = if shared { label.clone() } else { name.clone() };
            let (count_type, value_type) = if events.len() == 1 {
                let v = if time { "cpu" } else { name.as_str() };
                ("samples".to_string(), (v.to_string(), unit.to_string()))
            } else {
                (format!("{base}_samples"), (base, unit.to_string()))
            };
            let freq = e.flags & rprof_abi::RPROF_EVENT_FREQ != 0;
            let period = match sums.get(&i) {
                _ if !freq => e.period,
                Some(&(n, sum)) if n > 0 => {
                    let mean = (u128::from(sum) + u128::from(n / 2)) / u128::from(n);
                    u64::try_from(mean).unwrap_or(u64::MAX)
                }
                _ if time && e.period > 0 => 1_000_000_000 / e.period,
                _ => 0,
            };
            EventType {
                index: i,
                count_type,
                value_type,
                period: i64::try_from(period).unwrap_or(i64::MAX),
                label,
            }
        })
        .collect()
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// One address of a profile: a sampled ip or a caller's call site.
struct Site {
    cookie: u64,
    frame: Arc<crate::Frame>,
    place: crate::symbolize::Place,
}

/// One sampled place: what the profile needs of an aggregate key.
struct Point {
    event: u32,
    pid: u32,
    comm: Arc<str>,
    leaf: Site,
    /// The callers, innermost first (return addresses one byte back, at
    /// the call), if the samples had a chain.
    callers: Option<Vec<Site>>,
    samples: u64,
    period: u64,
}

impl Point {
    /// The leaf, then the callers.
    fn sites(&self) -> impl Iterator<Item = &Site> {
        std::iter::once(&self.leaf).chain(self.callers.iter().flatten())
    }
}

/// The profile of the samples of `agg` that pass `filter`: every event
/// of `config` (or only `filter.event`), symbolized by `sym`.
pub fn build(
    agg: &Aggregate,
    sym: &mut Symbolizer,
    filter: &Filter,
    config: &rprof_config,
    opts: &Options,
) -> Profile {
    let names = agg.resolver();
    // In a fixed order, so that the same recording gives the same ids.
    let mut keys: Vec<_> = agg
        .counts()
        .iter()
        .filter(|(k, _)| filter.accepts(k))
        .collect();
    keys.sort_by(|a, b| {
        let chain = |k: &crate::Key| k.stack.as_ref().map(|s| s.frames.clone());
        (
            a.0.event,
            a.0.pid,
            &a.0.comm,
            a.0.cookie,
            a.0.offset,
            chain(a.0),
        )
            .cmp(&(
                b.0.event,
                b.0.pid,
                &b.0.comm,
                b.0.cookie,
                b.0.offset,
                chain(b.0),
            ))
    });
    let mut points = Vec::new();
    for (key, counts) in keys {
        let mut site = |cookie: u64, offset: u64| Site {
            cookie,
            frame: sym.frame_of(key.pid, cookie, offset, names),
            place: sym.place(cookie, offset, names),
        };
        let leaf = site(key.cookie, key.offset);
        let callers = key.stack.as_ref().map(|s| {
            s.frames
                .iter()
                .enumerate()
                .map(|(i, &(cookie, offset))| {
                    let back = u64::from(s.is_return_address(i, key.user));
                    site(cookie, offset.saturating_sub(back))
                })
                .collect()
        });
        points.push(Point {
            event: key.event,
            pid: key.pid,
            comm: key.comm.clone(),
            leaf,
            callers,
            samples: counts.samples,
            period: counts.period,
        });
    }
    // The events: the filter's, or every configured one and any other
    // that has samples.
    let mut events: Vec<u32> = match filter.event {
        Some(e) => vec![e],
        None => (0..config.nr_events.min(rprof_abi::RPROF_MAX_EVENTS)).collect(),
    };
    events.extend(points.iter().map(|p| p.event));
    events.sort_unstable();
    events.dedup();
    let types = event_types(config, &events, agg);
    let slot: HashMap<u32, usize> = types
        .iter()
        .enumerate()
        .map(|(i, t)| (t.index, i))
        .collect();

    // Source lines of the sampled addresses and of the functions' starts,
    // per file, from its DWARF.
    let mut wanted: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for s in points.iter().flat_map(Point::sites) {
        if s.frame.kind == FrameKind::File && s.frame.resolved {
            let v = wanted.entry(s.cookie).or_default();
            v.push(s.place.address);
            v.push(s.frame.addr);
        }
    }
    // Per address, the functions inlined there, innermost first; the last
    // is the function that holds the code, with the address's line in it.
    let mut source: HashMap<(u64, u64), (String, u32)> = HashMap::new();
    let mut inlined: HashMap<(u64, u64), Vec<InlineFrame>> = HashMap::new();
    for (cookie, mut vaddrs) in wanted {
        vaddrs.sort_unstable();
        vaddrs.dedup();
        for (v, frames) in vaddrs.iter().zip(sym.source_frames(cookie, &vaddrs, names)) {
            if let Some(InlineFrame {
                file: Some(file),
                line,
                ..
            }) = frames.last()
            {
                if *line > 0 {
                    source.insert((cookie, *v), (file.clone(), *line));
                }
            }
            if frames.len() > 1 {
                inlined.insert((cookie, *v), frames);
            }
        }
    }

    let mut strings = Strings::new();
    let mut p = Profile::default();
    for t in &types {
        p.sample_type.push(ValueType {
            r#type: strings.get(&t.count_type),
            unit: strings.get("count"),
        });
        p.sample_type.push(ValueType {
            r#type: strings.get(&t.value_type.0),
            unit: strings.get(&t.value_type.1),
        });
    }

    // Mappings: files first, then by samples.
    let mut per_mapping: HashMap<&MappingKey, (u64, u64, u64)> = HashMap::new();
    for pt in &points {
        for s in pt.sites() {
            let e = per_mapping
                .entry(&s.place.mapping)
                .or_insert((0, u64::MAX, 0));
            e.0 = e.0.saturating_add(pt.samples);
            e.1 = e.1.min(s.place.address);
            e.2 = e.2.max(s.place.address);
        }
    }
    let mut order: Vec<(&MappingKey, (u64, u64, u64))> = per_mapping.into_iter().collect();
    order.sort_by(|a, b| {
        b.0.is_file
            .cmp(&a.0.is_file)
            .then(b.1 .0.cmp(&a.1 .0))
            .then(a.0.cmp(b.0))
    });
    let mut mapping_id: HashMap<MappingKey, u64> = HashMap::new();
    for (i, (key, (_, lo, hi))) in order.iter().enumerate() {
        let id = i as u64 + 1;
        let (start, limit, file_offset) = match key.range {
            Some(r) => r,
            // Files read nowhere: the addresses are file offsets.
            None if key.is_file => (*lo, hi.saturating_add(1), *lo),
            None => (*lo, hi.saturating_add(1), 0),
        };
        let build_id = if key.build_id.is_empty() {
            0
        } else {
            strings.get(&rprof_symbols::elf::hex(&key.build_id))
        };
        p.mapping.push(Mapping {
            id,
            memory_start: start,
            memory_limit: limit,
            file_offset,
            filename: strings.get(&key.path),
            build_id,
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            has_inline_frames: false,
        });
        mapping_id.insert((*key).clone(), id);
    }

    let mut functions: HashMap<(String, String, String), u64> = HashMap::new();
    let mut function = |p: &mut Profile,
                        strings: &mut Strings,
                        name: &str,
                        file: &str,
                        dso: &str,
                        start_line: i64|
     -> u64 {
        let k = (name.to_string(), file.to_string(), dso.to_string());
        if let Some(id) = functions.get(&k) {
            return *id;
        }
        let id = p.function.len() as u64 + 1;
        p.function.push(Function {
            id,
            name: strings.get(name),
            system_name: strings.get(name),
            filename: strings.get(file),
            start_line,
        });
        functions.insert(k, id);
        id
    };
    let mut locations: HashMap<(u64, u64), u64> = HashMap::new();
    let mut pseudo: HashMap<String, u64> = HashMap::new();
    // (event, pid, comm, stack) -> (samples, period).
    type SampleKey = (u32, u32, Arc<str>, Vec<u64>);
    let mut samples: BTreeMap<SampleKey, (u64, u64)> = BTreeMap::new();
    for pt in &points {
        let mut stack = Vec::new();
        for site in pt.sites() {
            let mid = mapping_id.get(&site.place.mapping).copied().unwrap_or(0);
            let key = (mid, site.place.address);
            let loc = match locations.get(&key) {
                Some(id) => *id,
                None => {
                    let id = p.location.len() as u64 + 1;
                    let f = &site.frame;
                    let here = source.get(&(site.cookie, site.place.address));
                    let mut line = Vec::new();
                    if f.resolved {
                        // Inlined functions first, as pprof wants them.
                        let inner = inlined
                            .get(&(site.cookie, site.place.address))
                            .map_or(&[][..], |v| &v[..v.len() - 1]);
                        for i in inner {
                            let name = i.function.as_deref().unwrap_or("[inlined]");
                            let file = i.file.as_deref().unwrap_or("");
                            let fid = function(&mut p, &mut strings, name, file, &f.path, 0);
                            line.push(Line {
                                function_id: fid,
                                line: i64::from(i.line),
                                column: 0,
                            });
                        }
                        let start = source.get(&(site.cookie, f.addr));
                        let file = start.or(here).map_or("", |(file, _)| file.as_str());
                        let start_line = start.map_or(0, |(_, l)| i64::from(*l));
                        let fid =
                            function(&mut p, &mut strings, &f.symbol, file, &f.path, start_line);
                        line.push(Line {
                            function_id: fid,
                            line: here.map_or(0, |(_, l)| i64::from(*l)),
                            column: 0,
                        });
                    }
                    if let Some(m) = mid
                        .checked_sub(1)
                        .and_then(|i| p.mapping.get_mut(i as usize))
                    {
                        m.has_inline_frames |= line.len() > 1;
                        m.has_functions &= f.resolved;
                        m.has_filenames &= f.resolved && here.is_some();
                        m.has_line_numbers &= f.resolved && here.is_some();
                    }
                    p.location.push(Location {
                        id,
                        mapping_id: mid,
                        address: site.place.address,
                        line,
                        is_folded: false,
                    });
                    locations.insert(key, id);
                    id
                }
            };
            stack.push(loc);
        }
        let dso_name = if pt.leaf.frame.kind == FrameKind::File {
            pt.leaf.frame.path.as_str()
        } else {
            pt.leaf.frame.dso.as_str()
        };
        let mut pseudo_location = |p: &mut Profile, strings: &mut Strings, name: &str| -> u64 {
            if let Some(id) = pseudo.get(name) {
                return *id;
            }
            let fid = function(p, strings, name, "", "", 0);
            let id = p.location.len() as u64 + 1;
            p.location.push(Location {
                id,
                line: vec![Line {
                    function_id: fid,
                    line: 0,
                    column: 0,
                }],
                ..Location::default()
            });
            pseudo.insert(name.to_string(), id);
            id
        };
        // Without a chain, the stack is [address, shared object, comm];
        // with one, the real frames, leaf first (comm stays a label).
        if pt.callers.is_none() {
            let dso = pseudo_location(&mut p, &mut strings, dso_name);
            let comm = pseudo_location(&mut p, &mut strings, &pt.comm);
            stack.push(dso);
            stack.push(comm);
        }
        let e = samples
            .entry((pt.event, pt.pid, pt.comm.clone(), stack))
            .or_default();
        e.0 = e.0.saturating_add(pt.samples);
        e.1 = e.1.saturating_add(pt.period);
    }
    for ((event, pid, comm, stack), (n, period)) in samples {
        let mut value = vec![0i64; 2 * types.len()];
        if let Some(&s) = slot.get(&event) {
            value[2 * s] = to_i64(n);
            value[2 * s + 1] = to_i64(period);
        }
        let mut label = vec![Label {
            key: strings.get("comm"),
            str: strings.get(&comm),
            ..Label::default()
        }];
        if pid != 0 {
            label.push(Label {
                key: strings.get("pid"),
                num: i64::from(pid),
                ..Label::default()
            });
        }
        p.sample.push(Sample {
            location_id: stack,
            value,
            label,
        });
    }

    if let Some(first) = types.first() {
        p.period_type = Some(ValueType {
            r#type: strings.get(&first.value_type.0),
            unit: strings.get(&first.value_type.1),
        });
        p.period = first.period;
        if types.len() > 1 {
            p.default_sample_type = strings.get(&first.value_type.0);
        }
    }
    for c in &opts.comments {
        p.comment.push(strings.get(c));
    }
    for t in &types {
        let c = format!("event {}: period {} {}", t.label, t.period, t.value_type.1);
        p.comment.push(strings.get(&c));
    }
    p.time_nanos = opts.time_nanos;
    p.duration_nanos = opts.duration_nanos;
    p.string_table = strings.table;
    p
}

/// Writes `profile`, gzip'd.
pub fn write_gz(out: &mut dyn Write, profile: &Profile) -> io::Result<()> {
    let mut gz = GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&profile.encode_to_vec())?;
    gz.finish()?;
    Ok(())
}

/// Reads a profile, gzip'd (at most [`MAX_INFLATED`] bytes inflated) or
/// not.
pub fn read(data: &[u8]) -> Result<Profile, String> {
    let plain;
    let data = if data.starts_with(&[0x1f, 0x8b]) {
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(data)
            .take(MAX_INFLATED + 1)
            .read_to_end(&mut v)
            .map_err(|e| format!("gzip: {e}"))?;
        if v.len() as u64 > MAX_INFLATED {
            return Err(format!("more than {MAX_INFLATED} bytes once inflated"));
        }
        plain = v;
        &plain[..]
    } else {
        data
    };
    Profile::decode(data).map_err(|e| format!("not a profile: {e}"))
}

/// The string `i` of `p`'s table ("" if out of range).
pub fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests;

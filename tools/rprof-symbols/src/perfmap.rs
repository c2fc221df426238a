//! `/tmp/perf-PID.map`: the symbols of JIT-compiled code.
//!
//! Runtimes that generate code in anonymous memory (V8 and Node with
//! `--perf-basic-prof`, the JVM with perf-map-agent, Python 3.12 with
//! `-X perf`, LuaJIT, .NET) write one line per function they emit, in the
//! format perf reads:
//!
//! ```text
//! START SIZE NAME
//! ```
//!
//! `START` and `SIZE` in hex (with or without `0x`), `NAME` the rest of
//! the line, spaces included.  A runtime may reuse an address for a new
//! function: the later line wins, as it describes the code there last.
//! Lines that do not parse are skipped and counted.

use crate::hit::Hit;

/// Whether a perf map owned by `uid` may be read, by perf's rule: its
/// owner is root or the user who reads it.  Maps live in `/tmp`, where
/// anyone can write one for another user's process and make its report
/// name whatever they like.
#[allow(unsafe_code)]
pub fn owner_trusted(uid: u32) -> bool {
    // SAFETY: geteuid() takes nothing, touches no memory of ours and
    // cannot fail.
    uid == 0 || uid == unsafe { libc::geteuid() }
}

/// The largest map read, in bytes: 256 MiB (a long-running JIT writes a
/// line per compiled function, forever).
pub const MAX_MAP: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    start: u64,
    size: u64,
    name: String,
}

/// One process's perf map.
///
/// Invariant: `entries` are sorted by `start`, do not overlap, and none
/// is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfMap {
    entries: Vec<Entry>,
    /// Lines that did not parse.
    pub bad_lines: usize,
}

impl PerfMap {
    /// Parses a perf map's text.
    pub fn parse(text: &str) -> PerfMap {
        let mut bad_lines = 0;
        // (line number, entry), in file order: later lines win where
        // ranges overlap.
        let mut parsed: Vec<(usize, Entry)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(e) => parsed.push((n, e)),
                None => bad_lines += 1,
            }
        }
        // Newest first, then keep each entry only where no newer one
        // already covers it.  A BTreeMap by start: a JIT writes millions
        // of lines at rising addresses, and inserting into a sorted Vec
        // would be quadratic.
        parsed.reverse();
        let mut by_start: std::collections::BTreeMap<u64, Entry> =
            std::collections::BTreeMap::new();
        for (_, e) in parsed {
            let end = e.start.saturating_add(e.size);
            let hits_prev = by_start
                .range(..=e.start)
                .next_back()
                .is_some_and(|(s, k)| s.saturating_add(k.size) > e.start);
            let hits_next = by_start
                .range(e.start..)
                .next()
                .is_some_and(|(s, _)| *s < end);
            if !hits_prev && !hits_next {
                by_start.insert(e.start, e);
            }
        }
        let kept: Vec<Entry> = by_start.into_values().collect();
        PerfMap {
            entries: kept,
            bad_lines,
        }
    }

    /// The function that holds `ip`.
    pub fn lookup(&self, ip: u64) -> Option<Hit<'_>> {
        let i = self.entries.partition_point(|e| e.start <= ip);
        let e = self.entries.get(i.checked_sub(1)?)?;
        let offset = ip - e.start;
        (offset < e.size).then_some(Hit {
            name: &e.name,
            addr: e.start,
            size: e.size,
            offset,
        })
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map names no function.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn hex(s: &str) -> Option<u64> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    u64::from_str_radix(s, 16).ok()
}

fn parse_line(line: &str) -> Option<Entry> {
    let mut it = line.splitn(3, ' ');
    let start = hex(it.next()?)?;
    let size = hex(it.next()?)?;
    let name = it.next()?.trim();
    (size > 0 && !name.is_empty()).then(|| Entry {
        start,
        size,
        name: crate::demangle(name).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_runtimes_write_them() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~add /app/index.js:3:13\n\
             0x7f0000001040 0x20 py::f:/x.py\n\
             7f0000002000 10 first\n\
             junk line\n\
             7f0000003000 0 empty\n\
             \n\
             7f0000002000 10 second\n",
        );
        assert_eq!(m.bad_lines, 2);
        assert_eq!(m.len(), 3);
        let h = m.lookup(0x7f000000100f).unwrap();
        assert_eq!(
            (h.name, h.addr, h.offset),
            ("LazyCompile:~add /app/index.js:3:13", 0x7f0000001000, 0xf)
        );
        assert_eq!(m.lookup(0x7f0000001040).unwrap().name, "py::f:/x.py");
        assert!(
            m.lookup(0x7f0000001060).is_none(),
            "past the end of the last entry"
        );
        assert!(m.lookup(0x7f0000000fff).is_none());
        // The newer line for a reused address wins.
        assert_eq!(m.lookup(0x7f0000002008).unwrap().name, "second");
        assert!(m.lookup(0x7f0000003000).is_none());
    }

    #[test]
    fn hostile_maps_do_not_panic() {
        for text in [
            "ffffffffffffffff ffffffffffffffff x\n0 1 y",
            "1 1\n",
            "  \n\t",
            "g 1 x",
            "1 g x",
        ] {
            let m = PerfMap::parse(text);
            let _ = m.lookup(u64::MAX);
            let _ = m.lookup(0);
        }
        let m = PerfMap::parse("ffffffffffffff00 ffff big\n");
        assert_eq!(m.lookup(u64::MAX).unwrap().name, "big");
    }

    /// A JIT's map of many functions at rising addresses (each newest line
    /// went to the front of a sorted Vec: quadratic) parses, and every
    /// function is found.
    #[test]
    fn a_long_map_at_rising_addresses() {
        let mut text = String::new();
        for i in 0..200_000u64 {
            text.push_str(&format!("{:x} 10 f{i}\n", 0x7f00_0000_0000u64 + i * 0x10));
        }
        let m = PerfMap::parse(&text);
        assert_eq!(m.len(), 200_000);
        assert_eq!(
            m.lookup(0x7f00_0000_0000 + 199_999 * 0x10 + 3)
                .unwrap()
                .name,
            "f199999"
        );
        assert_eq!(m.lookup(0x7f00_0000_0000 + 5).unwrap().name, "f0");
    }
}

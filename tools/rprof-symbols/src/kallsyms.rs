//! `/proc/kallsyms`: kernel and module text symbols by address.
//!
//! Lines are `ADDRESS TYPE NAME [\t[MODULE]]`.  Only text symbols (types
//! `t`, `T`, `w`, `W`) are kept; an address belongs to the nearest symbol
//! at or below it, up to the next symbol.  Without CAP_SYSLOG (and with
//! `kptr_restrict`) every address reads as 0: [`Kallsyms::restricted`].

use crate::Hit;

/// Past the last symbol, addresses further than this are not its.
const LAST_SYMBOL_SPAN: u64 = 1 << 16;

#[derive(Debug, Clone, PartialEq, Eq)]
struct KSym {
    addr: u64,
    name: String,
    /// The module, for `[name]` entries.
    module: Option<String>,
}

/// Parsed kernel text symbols, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    symbols: Vec<KSym>,
    restricted: bool,
    lines: usize,
}

impl Kallsyms {
    /// Parses the text of `/proc/kallsyms`; lines that do not parse are
    /// skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut symbols = Vec::new();
        let mut lines = 0;
        let mut nonzero = false;
        for line in text.lines() {
            lines += 1;
            let mut parts = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            nonzero |= addr != 0;
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let module = parts
                .next()
                .and_then(|m| m.strip_prefix('['))
                .and_then(|m| m.strip_suffix(']'))
                .map(str::to_string);
            symbols.push(KSym {
                addr,
                name: name.to_string(),
                module,
            });
        }
        symbols.sort_by(|a, b| a.addr.cmp(&b.addr).then_with(|| a.name.cmp(&b.name)));
        symbols.dedup_by(|b, a| a.addr == b.addr);
        Kallsyms {
            symbols,
            restricted: lines > 0 && !nonzero,
            lines,
        }
    }

    /// Whether every address was 0 (kptr_restrict): nothing can be
    /// resolved.
    pub fn restricted(&self) -> bool {
        self.restricted
    }

    /// Number of text symbols kept.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether no text symbol was kept.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    fn find(&self, addr: u64) -> Option<(usize, u64)> {
        if self.restricted {
            return None;
        }
        let i = self.symbols.partition_point(|s| s.addr <= addr);
        let idx = i.checked_sub(1)?;
        let sym = &self.symbols[idx];
        let end = self
            .symbols
            .get(i)
            .map_or(sym.addr.saturating_add(LAST_SYMBOL_SPAN), |n| n.addr);
        (addr < end).then_some((idx, end))
    }

    /// The text symbol holding kernel address `addr`, with the module it
    /// belongs to (`None`: the kernel image).
    pub fn lookup(&self, addr: u64) -> Option<(Hit<'_>, Option<&str>)> {
        let (idx, end) = self.find(addr)?;
        let s = &self.symbols[idx];
        Some((
            Hit {
                name: &s.name,
                addr: s.addr,
                size: end - s.addr,
                offset: addr - s.addr,
            },
            s.module.as_deref(),
        ))
    }

    /// The symbol of module `module` holding `addr`, if kallsyms listed the
    /// module's symbols.
    pub fn lookup_in_module(&self, module: &str, addr: u64) -> Option<Hit<'_>> {
        match self.lookup(addr)? {
            (hit, Some(m)) if m == module => Some(hit),
            _ => None,
        }
    }

    /// Every symbol named `name` (kernel first, then modules): (address,
    /// size up to the next symbol, module).
    pub fn symbols_named(&self, name: &str) -> Vec<(u64, u64, Option<&str>)> {
        self.symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name == name)
            .map(|(i, s)| {
                let end = self
                    .symbols
                    .get(i + 1)
                    .map_or(s.addr.saturating_add(LAST_SYMBOL_SPAN), |n| n.addr);
                (s.addr, end - s.addr, s.module.as_deref())
            })
            .collect()
    }

    /// Lines of the text parsed.
    pub fn lines(&self) -> usize {
        self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81001000 t do_thing
ffffffff81002000 D some_data
ffffffff81003000 W weak_fn
ffffffffc0001000 t busy_spin\t[rprof_busy]
ffffffffc0001100 T init_module\t[rprof_busy]
garbage line
zzzz T bad_address
";

    #[test]
    fn lookups() {
        let k = Kallsyms::parse(TEXT);
        assert!(!k.restricted());
        assert_eq!(k.len(), 5, "one per address, text only");
        assert_eq!(k.lines(), 9);
        let (hit, module) = k.lookup(0xffffffff81001010).unwrap();
        assert_eq!((hit.name, hit.offset, module), ("do_thing", 0x10, None));
        // The data symbol does not end do_thing: only text symbols count.
        let (hit, _) = k.lookup(0xffffffff81002800).unwrap();
        assert_eq!(hit.name, "do_thing");
        assert_eq!(k.lookup(0xffffffff80ffffff), None);
        let (hit, module) = k.lookup(0xffffffffc0001004).unwrap();
        assert_eq!((hit.name, module), ("busy_spin", Some("rprof_busy")));
        assert_eq!(
            k.lookup_in_module("rprof_busy", 0xffffffffc0001104)
                .map(|h| h.name),
            Some("init_module")
        );
        assert_eq!(k.lookup_in_module("other", 0xffffffffc0001104), None);
        assert_eq!(k.lookup(0xffffffffc0001100 + LAST_SYMBOL_SPAN), None);
        assert_eq!(
            k.symbols_named("do_thing"),
            vec![(0xffffffff81001000, 0x2000, None)]
        );
    }

    #[test]
    fn restricted_kallsyms() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t foo\n");
        assert!(k.restricted());
        assert_eq!(k.lookup(0), None);
        assert!(!Kallsyms::parse("").restricted());
    }
}

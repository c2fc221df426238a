//! `/proc/kallsyms`: kernel and module text symbols by address.
//!
//! Lines are `ADDRESS TYPE NAME [\t[MODULE]]`.  Only text symbols (types
//! `t`, `T`, `w`, `W`) are kept; an address belongs to the nearest symbol
//! at or below it, up to the next symbol.  Without CAP_SYSLOG (and with
//! `kptr_restrict`) every address reads as 0: [`Kallsyms::restricted`].
//!
//! # Which name an address gets
//!
//! Several symbols often share an address: a function and the label of
//! the section it opens (`default_idle` and `__cpuidle_text_start`,
//! `startup_64` and `_stext`), a function and its weak aliases
//! (`sys_ni_syscall` and dozens of `compat_sys_*`), a syscall's wrapper
//! and body (`__x64_sys_getpid` and `__do_sys_getpid`).  One name is kept
//! per address, the first by these rules:
//!
//! 1. a function before a marker: section and linker labels such as
//!    `_text`, `_stext`, `_etext`, `_sinittext`, `__*_text_start`,
//!    `__*_text_end`, `__start_*`, `__stop_*`, and the padding and CFI
//!    stubs `__pfx_*` and `__cfi_*`, are never preferred to a function;
//! 2. a strong symbol (`t`, `T`) before a weak one (`w`, `W`);
//! 3. a global symbol (`T`, `W`) before a local one (`t`, `w`);
//! 4. fewer leading underscores first (`memset` before `__memset`);
//! 5. then by name, so that the choice does not depend on the input's
//!    order.
//!
//! Names are shown demangled ([`crate::demangle`]): the kernel's own Rust
//! symbols (`_RNv...`) read as Rust paths.

use crate::hit::Hit;

/// Past the last symbol, addresses further than this are not its.
const LAST_SYMBOL_SPAN: u64 = 1 << 16;

#[derive(Debug, Clone, PartialEq, Eq)]
struct KSym {
    addr: u64,
    /// The name as shown (demangled).
    name: String,
    /// The module, for `[name]` entries.
    module: Option<String>,
    /// Where the symbol stands among others at its address (lower wins;
    /// see the module doc).
    rank: (bool, bool, bool, usize),
    /// The name as kallsyms has it, when demangling changed it.
    raw: Option<String>,
}

/// Whether `name` labels a place (a section's start or end, a padding or
/// CFI stub) rather than naming a function.
pub fn is_marker(name: &str) -> bool {
    matches!(
        name,
        "_text" | "_stext" | "_etext" | "_sinittext" | "_einittext" | "_end"
    ) || name.starts_with("__pfx_")
        || name.starts_with("__cfi_")
        || name.starts_with("__start_")
        || name.starts_with("__stop_")
        || (name.starts_with("__")
            && (name.ends_with("_text_start") || name.ends_with("_text_end")))
}

/// The rank of a symbol of kallsyms type `kind` named `name` (lower wins).
fn rank(kind: &str, name: &str) -> (bool, bool, bool, usize) {
    let weak = matches!(kind, "w" | "W");
    let local = matches!(kind, "t" | "w");
    let underscores = name.bytes().take_while(|&b| b == b'_').count();
    (is_marker(name), weak, local, underscores)
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
                rank: rank(kind, name),
                raw: None,
            });
        }
        symbols.sort_by(|a, b| {
            a.addr
                .cmp(&b.addr)
                .then_with(|| a.rank.cmp(&b.rank))
                .then_with(|| a.name.cmp(&b.name))
        });
        symbols.dedup_by(|b, a| a.addr == b.addr);
        for s in &mut symbols {
            if let std::borrow::Cow::Owned(d) = crate::demangle::demangle(&s.name) {
                s.raw = Some(std::mem::replace(&mut s.name, d));
            }
        }
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

    /// Every symbol named `name`, demangled or as kallsyms has it (kernel
    /// first, then modules): (address, size up to the next symbol,
    /// module).
    pub fn symbols_named(&self, name: &str) -> Vec<(u64, u64, Option<&str>)> {
        self.symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.name == name || s.raw.as_deref() == Some(name))
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

    /// A function wins over the section marker, the weak aliases and the
    /// local body that share its address, whatever the order of the lines.
    #[test]
    fn functions_win_over_markers_and_aliases() {
        let lines = [
            "ffffffff81000000 T _stext",
            "ffffffff81000000 T _text",
            "ffffffff81000000 T startup_64",
            "ffffffff812fb400 T __memset",
            "ffffffff812fb400 T memset",
            "ffffffff812fb4cc T __cpuidle_text_start",
            "ffffffff812fb4cc T default_idle",
            "ffffffff812fb4e5 t mwait_idle",
            "ffffffff81061797 t __do_sys_getpid",
            "ffffffff81061797 T __x64_sys_getpid",
            "ffffffff8106f2f9 W compat_sys_epoll_pwait",
            "ffffffff8106f2f9 T sys_ni_syscall",
            "ffffffff8106f2f9 W compat_sys_ipc",
            "ffffffff81070000 T __pfx_next_fn",
            "ffffffff81070000 t __cfi_next_fn",
            "ffffffff81070010 T next_fn",
        ];
        for reversed in [false, true] {
            let mut l = lines.to_vec();
            if reversed {
                l.reverse();
            }
            let k = Kallsyms::parse(&l.join("\n"));
            let name = |a: u64| k.lookup(a).map(|(h, _)| h.name.to_string());
            assert_eq!(name(0xffffffff812fb4e3).as_deref(), Some("default_idle"));
            assert_eq!(name(0xffffffff81000010).as_deref(), Some("startup_64"));
            assert_eq!(name(0xffffffff812fb410).as_deref(), Some("memset"));
            assert_eq!(
                name(0xffffffff81061797).as_deref(),
                Some("__x64_sys_getpid")
            );
            assert_eq!(name(0xffffffff8106f2f9).as_deref(), Some("sys_ni_syscall"));
            // Two markers: the global one.
            assert_eq!(name(0xffffffff81070004).as_deref(), Some("__pfx_next_fn"));
            assert_eq!(name(0xffffffff81070014).as_deref(), Some("next_fn"));
        }
        assert!(is_marker("__irqentry_text_end") && is_marker("__start___ex_table"));
        assert!(!is_marker("default_idle") && !is_marker("__x64_sys_getpid"));
    }

    #[test]
    fn kernel_rust_symbols_are_demangled() {
        let k = Kallsyms::parse(
            "ffffffffc0001000 t _RNvMNtCs1234_10rprof_main4ringNtB2_4Ring4push\t[rprof]\n\
             ffffffffc0001100 t _RNvNtCs1234_10rprof_main7sampler9on_sample\t[rprof]\n",
        );
        let (hit, module) = k.lookup(0xffffffffc0001004).unwrap();
        assert_eq!(
            (hit.name, module),
            ("<rprof_main::ring::Ring>::push", Some("rprof"))
        );
        assert_eq!(
            k.lookup(0xffffffffc0001104).unwrap().0.name,
            "rprof_main::sampler::on_sample"
        );
        // Found by either name.
        assert_eq!(k.symbols_named("rprof_main::sampler::on_sample").len(), 1);
        assert_eq!(
            k.symbols_named("_RNvNtCs1234_10rprof_main7sampler9on_sample")
                .len(),
            1
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

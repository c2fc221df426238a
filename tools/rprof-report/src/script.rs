//! `rprof script`: every sample of a recording in stream order, one block
//! per sample as `perf script` prints it, for people's own tools:
//!
//! ```text
//! attr_main  1234/1235  [001]  5.102030405:  1001001 cpu-clock@999:
//!         11a9 main_hot (/tests/bin/attr_main)
//!         11f0 main (/tests/bin/attr_main)
//!
//! ```
//!
//! The first line: comm, pid/tid, CPU, the time (CLOCK_MONOTONIC) in
//! seconds, the period (events the sample stands for) and the event.
//! Then the sampled place and, with a call chain, its callers, innermost
//! first: the offset (in the file, from the module's base, or the kernel
//! address), the function, the object.  Kernel and module frames end in
//! `[k]`; frame lines start with a tab, as perf's do.  A blank line ends each
//! sample.  Where a file's DWARF says that functions were inlined at a
//! frame's address, each comes on a line of its own above the function
//! that holds the code, innermost first, as `ADDR NAME (inlined)`, as
//! perf script prints inline frames (unless asked not to: `inline`).

use crate::label::event_label;
use crate::symbolize::FrameKind;
use crate::{caller_frames, Filter, Frame, Key, Symbolizer};
use rprof_abi::rprof_config;
use rprof_decode::{Decoder, Resolver};
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

/// The functions inlined at each file address already looked up, by
/// (cookie, address): innermost first, without the function that holds
/// the code.
type Inlined = HashMap<(u64, u64), Arc<[String]>>;

/// What [`write`] went through.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    /// Samples written.
    pub samples: u64,
    /// A malformed record ended the walk (what came before it is written).
    pub error: Option<String>,
}

/// One frame: its inlined functions (see the module doc), then itself.
/// `cookie` and `at` are where it was looked up (a return address one
/// byte back).
#[allow(clippy::too_many_arguments)]
fn frame_lines(
    out: &mut dyn Write,
    offset: u64,
    f: &Frame,
    cookie: u64,
    at: u64,
    sym: &mut Symbolizer,
    names: &Resolver,
    inlined: Option<&mut Inlined>,
) -> io::Result<()> {
    if let Some(inlined) = inlined.filter(|_| f.kind == FrameKind::File && f.resolved) {
        let names_here = inlined
            .entry((cookie, at))
            .or_insert_with(|| {
                let address = sym.place(cookie, at, names).address;
                let frames = sym.source_frames(cookie, &[address], names);
                let chain = frames.into_iter().next().unwrap_or_default();
                let n = chain.len().saturating_sub(1);
                chain
                    .into_iter()
                    .take(n)
                    .map(|i| i.function.unwrap_or_else(|| "??".to_string()))
                    .collect()
            })
            .clone();
        for name in names_here.iter() {
            writeln!(out, "\t{offset:>16x} {name} (inlined)")?;
        }
    }
    let k = match f.kind {
        FrameKind::Kernel | FrameKind::Module => " [k]",
        _ => "",
    };
    writeln!(out, "\t{offset:>16x} {}{k} ({})", f.symbol, f.path)
}

/// Writes every sample of `stream` that passes `filter`, with the
/// functions inlined at each frame if `inline`.
pub fn write(
    out: &mut dyn Write,
    stream: &[u8],
    config: &rprof_config,
    sym: &mut Symbolizer,
    filter: &Filter,
    inline: bool,
) -> io::Result<Written> {
    let mut resolver = Resolver::new();
    let mut done = Written::default();
    let mut inlined = inline.then(Inlined::new);
    let labels: Vec<String> = (0..config.events.len() as u32)
        .map(|i| event_label(config, i))
        .collect();
    for item in Decoder::new(stream) {
        let record = match item {
            Ok(r) => r,
            Err(e) => {
                done.error = Some(format!(
                    "malformed record at stream offset {}: {}",
                    e.offset, e.kind
                ));
                break;
            }
        };
        let Some(s) = resolver.feed(&record) else {
            continue;
        };
        let key = Key::of(&s, Arc::from(s.comm().unwrap_or("[unknown]")), true);
        if !filter.accepts(&key) || !filter.accepts_sample(&s) {
            continue;
        }
        let event = labels
            .get(s.event as usize)
            .cloned()
            .unwrap_or_else(|| format!("event{}", s.event));
        let cpu = s.cpu().map_or("[---]".to_string(), |c| format!("[{c:03}]"));
        writeln!(
            out,
            "{:>16} {:>7}/{:<7} {cpu} {:>5}.{:09}: {:>10} {event}:",
            key.comm,
            key.pid,
            s.tid().unwrap_or(0),
            s.time_ns / 1_000_000_000,
            s.time_ns % 1_000_000_000,
            s.period,
        )?;
        let leaf = sym.frame_of(s.pid().unwrap_or(0), s.cookie, s.offset, &resolver);
        frame_lines(
            out,
            s.offset,
            &leaf,
            s.cookie,
            s.offset,
            sym,
            &resolver,
            inlined.as_mut(),
        )?;
        if let Some(stack) = &s.stack {
            let frames = caller_frames(stack, s.user, s.pid().unwrap_or(0), sym, &resolver);
            for (i, (f, &(cookie, offset))) in frames.iter().zip(&stack.frames).enumerate() {
                // As caller_frames looked it up.
                let at = if stack.is_return_address(i, s.user) {
                    offset.saturating_sub(1)
                } else {
                    offset
                };
                frame_lines(out, offset, f, cookie, at, sym, &resolver, inlined.as_mut())?;
            }
        }
        writeln!(out)?;
        done.samples += 1;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    #[test]
    fn one_block_per_sample_in_stream_order() {
        let d = testdata::data_file();
        let mut sym = Symbolizer::new(&d.kallsyms, &d.files, None);
        let mut out = Vec::new();
        let w = write(
            &mut out,
            &d.stream,
            &d.config,
            &mut sym,
            &Filter::default(),
            true,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            w,
            Written {
                samples: testdata::SAMPLES,
                error: None
            }
        );
        let blocks: Vec<&str> = text.split("\n\n").filter(|b| !b.is_empty()).collect();
        assert_eq!(blocks.len() as u64, testdata::SAMPLES, "{text}");
        let head: Vec<&str> = blocks[0]
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(
            head,
            [
                "attr_main",
                "100/100",
                "[000]",
                "0.000000001:",
                "1001001",
                "cpu-clock@999:"
            ]
        );
        let leaf = blocks[0].lines().nth(1).unwrap();
        assert!(
            leaf.starts_with('\t') && leaf.contains(" rprof_report_test_hot ("),
            "{leaf}"
        );
        assert!(
            blocks[30].contains(" rprof_report_test_warm ("),
            "{}",
            blocks[30]
        );
        assert!(
            blocks[40].trim_start().starts_with("swapper/1")
                && blocks[40].contains(" do_idle [k] ([kernel.kallsyms])"),
            "{}",
            blocks[40]
        );
        assert!(blocks[49].contains(" busy_spin [k] ("), "{}", blocks[49]);
    }

    #[test]
    fn the_filter_applies() {
        let d = testdata::data_file();
        let mut sym = Symbolizer::new(&d.kallsyms, &d.files, None);
        let mut out = Vec::new();
        let filter = Filter {
            comm: Some("swapper/1".into()),
            ..Filter::default()
        };
        let w = write(&mut out, &d.stream, &d.config, &mut sym, &filter, true).unwrap();
        assert_eq!(w.samples, 10);
        assert!(!String::from_utf8(out).unwrap().contains("attr_main"));
    }

    #[test]
    fn a_cut_stream_says_where() {
        let d = testdata::data_file();
        let mut sym = Symbolizer::new(&d.kallsyms, &d.files, None);
        let mut cut = d.stream.clone();
        // A record header announcing more bytes than are there.
        cut.truncate(cut.len() - 4);
        let w = write(
            &mut Vec::new(),
            &cut,
            &d.config,
            &mut sym,
            &Filter::default(),
            true,
        )
        .unwrap();
        assert!(
            w.error
                .as_deref()
                .is_some_and(|e| e.contains("stream offset")),
            "{w:?}"
        );
        assert_eq!(w.samples, testdata::SAMPLES);
    }
}

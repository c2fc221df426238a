//! How fast `rprof report` names samples at many distinct addresses, for
//! `make bench`.
//!
//! ```text
//! cargo run --release -p rprof-report --example symbolize_rate -- [ELF] [N]
//! ```
//!
//! ELF (default: this program's own binary, a Rust executable of a few MB
//! with its symbol table and thousands of functions, whose names need
//! demangling) is sampled once at each of N (default 200000) distinct
//! offsets spread over its executable segment; the samples go through
//! the symbolizer as a recording's would (`rprof_report::rows`: the file
//! opened and parsed once, then a symbol lookup and a cached frame per
//! address).  Prints one `B host` line of figures
//! (tests/harness/bench_report.py reads it) and a sentence.

use rprof_decode::Record;
use rprof_report::{Aggregate, Filter, Symbolizer};
use rprof_symbols::ElfImage;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let exe = match args.get(1) {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe().map_err(|e| e.to_string())?,
    };
    let n: u64 = args
        .get(2)
        .map_or(Ok(200_000), |s| s.parse())
        .map_err(|e| format!("N: {e}"))?;
    let shown = exe.display().to_string();
    let image = ElfImage::load(&exe).map_err(|e| format!("{shown}: {e}"))?;
    let text = image
        .segments
        .iter()
        .filter(|s| s.exec && s.file_size > 0)
        .max_by_key(|s| s.file_size)
        .ok_or_else(|| format!("{shown}: no executable segment"))?;
    let n = n.clamp(1, text.file_size);
    let meta = std::fs::metadata(&exe).map_err(|e| format!("{shown}: {e}"))?;

    let mut config = rprof_abi::rprof_config::new();
    config.nr_events = 1;
    config.events[0].kind = rprof_abi::RPROF_EVENT_CPU_CLOCK;
    config.events[0].flags = rprof_abi::RPROF_EVENT_FREQ;
    config.events[0].period = 999;
    let mut records = vec![
        Record::Start { time_ns: 1, config },
        Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: rprof_symbols::dev::new_encode_stat_dev(meta.dev()),
            ino: meta.ino(),
            path: shown.clone(),
        },
        Record::Task {
            cpu: 0,
            pid: 100,
            tid: 100,
            exe_cookie: 16,
            comm: "symbolize_rate".into(),
        },
        Record::Switch { cookie: 16 },
    ];
    let step = text.file_size / n;
    records.extend((0..n).map(|i| Record::Sample {
        flags: rprof_abi::RPROF_SAMPLE_USER as u16,
        time_ns: 2,
        offset: text.offset + i * step,
        period: 1,
        stack: None,
    }));
    records.push(Record::Stop { time_ns: 3, config });
    let mut stream = Vec::new();
    for r in &records {
        r.encode(&mut stream);
    }
    let mut agg = Aggregate::new();
    agg.feed_stream(&stream)?;

    let t = Instant::now();
    let mut sym = Symbolizer::new("", &[], None);
    let rows = rprof_report::rows(&agg, &mut sym, &Filter::default());
    let first_s = t.elapsed().as_secs_f64();
    // Again with everything cached: what a second report of the same
    // keys (or rprofd's next interval) pays.
    let t = Instant::now();
    let again = rprof_report::rows(&agg, &mut sym, &Filter::default());
    let cached_s = t.elapsed().as_secs_f64();
    let named = rows
        .iter()
        .filter(|r| r.frame.resolved)
        .map(|r| r.samples)
        .sum::<u64>();
    let functions = rows
        .iter()
        .filter(|r| r.frame.resolved)
        .map(|r| r.frame.symbol.as_str())
        .collect::<std::collections::HashSet<_>>()
        .len();
    if again.len() != rows.len() {
        return Err("the second pass gave other rows".into());
    }
    println!(
        "B host sym_addresses={n} sym_named={named} sym_functions={functions} sym_symbols={} sym_file_mb={:.1} \
         sym_first_s={first_s:.3} sym_cached_s={cached_s:.3}",
        image.symbol_count(),
        meta.len() as f64 / 1e6
    );
    println!(
        "{n} distinct addresses in {shown} ({:.1} MB, {} function symbols): {named} named, in {functions} functions; \
         {:.2} us an address the first time (file loaded, symbols demangled), {:.3} us cached",
        meta.len() as f64 / 1e6,
        image.symbol_count(),
        first_s * 1e6 / n as f64,
        cached_s * 1e6 / n as f64
    );
    Ok(())
}

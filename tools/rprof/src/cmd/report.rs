//! `rprof report`: the top table of a recording.

use super::input::InputArgs;
use clap::Args;
use rprof::Error;
use rprof_report::table;
use std::io::{self, BufWriter, Write};

/// Options of `rprof report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    /// The recording.
    pub input: InputArgs,

    /// Group by these columns, comma-separated: comm, pid, tid, dso, sym.
    /// Lines are ordered by overhead: their share of the events sampled
    /// (the samples' periods), as in perf.
    #[arg(short = 's', long = "sort", value_name = "KEYS", default_value = table::DEFAULT_SORT)]
    pub sort: table::SortKeys,

    /// Leave out lines under this overhead (percent of the events).
    #[arg(long, value_name = "X", default_value_t = 0.0)]
    pub percent_limit: f64,

    /// Plain text on standard output (the only interface there is).
    #[arg(long)]
    pub stdio: bool,

    /// The call graph (a recording made with -g): functions by the samples
    /// under them (Children) and in them (Self), each with the chains of
    /// its callers, as `perf report -g`.
    #[arg(short = 'g', long = "call-graph")]
    pub call_graph: bool,

    /// With -g: no Children column; sort by Self.
    #[arg(long)]
    pub no_children: bool,
}

/// Runs `rprof report`.
pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let mut loaded = args
        .input
        .load_by(args.sort.0.contains(&table::SortKey::Tid))?;
    let filter = args.input.filter();
    let out = io::stdout().lock();
    let mut out = BufWriter::new(out);
    let source = args.input.input.display().to_string();
    let write = |out: &mut dyn Write, loaded: &mut rprof_report::Loaded| -> io::Result<()> {
        // Symbolize first: the header lists files that did not match.
        let events = loaded.events(&filter);
        let mut tables = Vec::new();
        for ev in &events {
            let f = rprof_report::Filter {
                event: Some(*ev),
                ..filter.clone()
            };
            let rows = rprof_report::rows(&loaded.agg, &mut loaded.sym, &f);
            tables.push((*ev, rows));
        }
        loaded.write_header(out, &source, &filter)?;
        if tables.is_empty() {
            writeln!(out, "#\n# no samples")?;
        }
        for (ev, rows) in &tables {
            let samples: u64 = rows.iter().map(|r| r.samples).sum();
            // Overheads are shares of the events sampled, as perf's
            // (its "Event count").
            let period = rows.iter().fold(0u64, |s, r| s.saturating_add(r.period));
            writeln!(
                out,
                "#\n# event {}: {samples} samples\n# Event count: {period}\n#",
                rprof_report::event_label(&loaded.data.config, *ev)
            )?;
            if args.call_graph {
                if !rows.iter().any(|r| r.chain) {
                    writeln!(out, "# no call chains in this recording (record with -g)")?;
                }
                rprof_report::callgraph::write(
                    out,
                    rows,
                    period,
                    !args.no_children,
                    args.percent_limit,
                )?;
            } else {
                let lines = table::group(rows, &args.sort.0);
                table::write(out, &lines, &args.sort.0, period, args.percent_limit)?;
            }
        }
        Ok(())
    };
    write(&mut out, &mut loaded)
        .and_then(|()| out.flush())
        .or_else(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        })
        .map_err(|e| Error::io("writing to standard output", e))
}

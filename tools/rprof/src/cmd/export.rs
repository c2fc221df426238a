//! `rprof export`: a recording as pprof, folded stacks or speedscope.

use super::input::InputArgs;
use clap::{Args, ValueEnum};
use rprof::Error;
use rprof_report::{folded, pprof, speedscope, Filter};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// gzip'd profile.proto, for `go tool pprof` and friends.
    Pprof,
    /// `comm;dso;symbol count` lines, for flamegraph.pl.
    Folded,
    /// speedscope's JSON file format.
    Speedscope,
    /// An interactive flame graph (SVG), drawn by the inferno crate from
    /// the folded stacks; kernel frames (`_[k]`) in their own colour.
    Svg,
}

/// Options of `rprof export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The output format.
    #[arg(short = 'f', long = "format", value_enum)]
    pub format: Format,

    /// Where to write (`-`: standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,

    /// Only this event of the recording (its index among the -e events).
    /// pprof and speedscope hold every event by default (one sample type
    /// each, one profile per event and thread); folded stacks hold one,
    /// the first by default.
    #[arg(long, value_name = "N")]
    pub event: Option<u32>,

    #[command(flatten)]
    /// The recording.
    pub input: InputArgs,
}

/// Options of `rprof flamegraph`.
#[derive(Debug, Clone, Args)]
pub struct FlamegraphArgs {
    /// Where to write the SVG (`-`: standard output).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "OUT",
        default_value = "flamegraph.svg"
    )]
    pub output: PathBuf,

    /// Only this event of the recording (default: the first).
    #[arg(long, value_name = "N")]
    pub event: Option<u32>,

    #[command(flatten)]
    /// The recording.
    pub input: InputArgs,
}

impl FlamegraphArgs {
    /// The same as `rprof export --format svg`.
    pub fn export(&self) -> ExportArgs {
        ExportArgs {
            format: Format::Svg,
            output: self.output.clone(),
            event: self.event,
            input: self.input.clone(),
        }
    }
}

/// Runs `rprof export`.
pub fn run(args: &ExportArgs) -> Result<(), Error> {
    // speedscope has a profile per thread.
    let mut loaded = args
        .input
        .load_by(matches!(args.format, Format::Speedscope))?;
    if let Some(e) = &loaded.stream_error {
        eprintln!("rprof: warning: {e}; later records were ignored");
    }
    // pprof and speedscope hold every event (one sample type each, one
    // profile each) unless one is asked for; folded stacks and the flame
    // graph have one weight: one event.
    let filter = Filter {
        event: match args.format {
            Format::Pprof | Format::Speedscope => args.event,
            _ => Some(args.event.unwrap_or(0)),
        },
        ..args.input.filter()
    };
    let data = &loaded.data;
    let mut out: Box<dyn Write> = if args.output.as_os_str() == "-" {
        Box::new(BufWriter::new(io::stdout().lock()))
    } else {
        Box::new(BufWriter::new(File::create(&args.output).map_err(|e| {
            Error::Open {
                path: args.output.clone(),
                source: e,
            }
        })?))
    };
    let name = args.input.input.display().to_string();
    let (result, samples) = match args.format {
        Format::Folded | Format::Speedscope | Format::Svg => {
            let rows = rprof_report::rows(&loaded.agg, &mut loaded.sym, &filter);
            let samples: u64 = rows.iter().map(|r| r.samples).sum();
            let result = if args.format == Format::Folded {
                folded::write(&mut out, &rows)
            } else if args.format == Format::Svg {
                flamegraph(&mut out, &rows, &name)
            } else {
                serde_json::to_writer(&mut out, &speedscope::document(&rows, &name, &data.config))
                    .map_err(io::Error::other)
                    .and_then(|()| writeln!(out))
            };
            (result, samples)
        }
        Format::Pprof => {
            let start: i64 = data
                .meta(rprof_data::meta::START_UNIX)
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0);
            let duration: i64 = data
                .meta(rprof_data::meta::DURATION_NS)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let opts = pprof::Options {
                time_nanos: start.saturating_mul(1_000_000_000),
                duration_nanos: duration,
                comments: data
                    .meta(rprof_data::meta::COMMAND)
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
            };
            let profile = pprof::build(&loaded.agg, &mut loaded.sym, &filter, &data.config, &opts);
            let samples = rprof_report::aggregate::filtered_samples(&loaded.agg, &filter);
            (pprof::write_gz(&mut out, &profile), samples)
        }
    };
    result
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing the export", e))?;
    eprintln!(
        "rprof: exported {samples} samples to {}",
        args.output.display()
    );
    Ok(())
}

/// Draws `rows` as a flame graph with inferno: its Java palette colours
/// frames ending in `_[k]` (the folded export's kernel frames) apart from
/// user frames; `[unknown]` frames stay in the stacks.
pub fn flamegraph(out: &mut dyn Write, rows: &[rprof_report::Row], name: &str) -> io::Result<()> {
    use inferno::flamegraph::{color::MultiPalette, Options, Palette};
    let lines: Vec<String> = folded::lines(rows)
        .into_iter()
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect();
    let mut opts = Options::default();
    opts.title = format!("rprof: {name}");
    opts.colors = Palette::Multi(MultiPalette::Java);
    opts.count_name = "samples".into();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(io::Error::other)
}

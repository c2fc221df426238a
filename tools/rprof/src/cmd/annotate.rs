//! `rprof annotate`: samples per instruction and source line of one
//! function.

use super::input::InputArgs;
use clap::Args;
use rprof::Error;
use rprof_report::annotate;
use std::io::{self, BufWriter, Write};

/// Options of `rprof annotate`.
#[derive(Debug, Clone, Args)]
pub struct AnnotateArgs {
    /// The function to annotate (as `rprof report` names it).
    #[arg(value_name = "SYMBOL")]
    pub symbol: String,

    #[command(flatten)]
    /// The recording.
    pub input: InputArgs,
}

/// Runs `rprof annotate`.
pub fn run(args: &AnnotateArgs) -> Result<(), Error> {
    let mut loaded = args.input.load()?;
    let filter = args.input.filter();
    let found = annotate::annotate(&loaded.agg, &mut loaded.sym, &filter, &args.symbol);
    if found.is_empty() {
        return Err(Error::Protocol(format!(
            "no samples in a function named '{}' in {}",
            args.symbol,
            args.input.input.display()
        )));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    let mut write = || -> io::Result<()> {
        for (i, a) in found.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            annotate::write(&mut out, a)?;
        }
        out.flush()
    };
    write().map_err(|e| Error::io("writing to standard output", e))
}

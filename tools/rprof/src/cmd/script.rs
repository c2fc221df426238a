//! `rprof script`: every sample of a recording, one block each, as `perf
//! script` prints them (see [`rprof_report::script`]).

use super::input::InputArgs;
use clap::Args;
use rprof::Error;
use rprof_data::DataFile;
use rprof_report::{script, Symbolizer};
use std::io::{self, BufWriter, Write};

/// Options of `rprof script`.
#[derive(Debug, Clone, Args)]
pub struct ScriptArgs {
    #[command(flatten)]
    /// The recording.
    pub input: InputArgs,

    /// Leave out the functions inlined at each frame (as perf script's
    /// --no-inline): faster on a large recording, which then needs no
    /// DWARF.
    #[arg(long)]
    pub no_inline: bool,
}

/// Runs `rprof script`.
pub fn run(args: &ScriptArgs) -> Result<(), Error> {
    let data: DataFile = args.input.read()?;
    if let Some(cut) = &data.cut {
        eprintln!(
            "rprof: warning: {}: {cut}: its samples up to there follow",
            args.input.input.display()
        );
    }
    let mut sym = Symbolizer::with_options(&data.kallsyms, &data.files, args.input.symbols());
    let mut out = BufWriter::new(io::stdout().lock());
    let written = script::write(
        &mut out,
        &data.stream,
        &data.config,
        &mut sym,
        &args.input.filter(),
        !args.no_inline,
    )
    .and_then(|w| out.flush().map(|()| w));
    let written = match written {
        Ok(w) => w,
        // `rprof script | head` is ordinary use.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(Error::io("writing to standard output", e)),
    };
    if let Some(e) = written.error {
        eprintln!("rprof: warning: {}: {e}", args.input.input.display());
    }
    Ok(())
}

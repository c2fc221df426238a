//! `rprof-unwind-dump FILE...`: the unwind table compiled from each file, one row a line, and its figures.

use rprof_unwind::cache::{hex, Cache, How};
use rprof_unwind::{compile_file, RowDisplay, UnwindTable};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "\
usage: rprof-unwind-dump [--stats] [--cache] FILE...

Compiles the .eh_frame and .debug_frame of each x86-64 ELF FILE into the
unwind table that rprof's module walks, and prints it: a line per file
(build-id, rows, end, bytes), then one row a line, keyed by file offset
(`0x1130 cfa=rsp+16 rbp=cfa-16`), then the compile's figures.

  --stats   print the figures only, not the rows
  --cache   go through the cache ($RPROF_UNWIND_CACHE, $XDG_CACHE_HOME/
            rprof/unwind or ~/.cache/rprof/unwind) as rprof does
  --help    this text
";

fn print_table(out: &mut impl Write, table: &UnwindTable, rows: bool) -> std::io::Result<()> {
    let id = if table.build_id.is_empty() {
        "none".to_string()
    } else {
        hex(&table.build_id)
    };
    writeln!(
        out,
        "build-id {id} rows {} end {:#x} bytes {}",
        table.rows.len(),
        table.end,
        table.byte_len()
    )?;
    if rows {
        for r in &table.rows {
            writeln!(out, "{}", RowDisplay(r))?;
        }
    }
    Ok(())
}

fn print_how(out: &mut impl Write, how: How, cache: &Cache) -> std::io::Result<()> {
    match how {
        How::Hit => writeln!(out, "cache: hit {}", cache.dir().display()),
        How::Compiled {
            stats,
            replaced,
            stored,
        } => {
            writeln!(out, "stats: {stats}")?;
            if let Some(why) = replaced {
                writeln!(out, "cache: replaced {why}")?;
            }
            match stored {
                Ok(()) => writeln!(out, "cache: stored in {}", cache.dir().display()),
                Err(why) => writeln!(out, "cache: not stored: {why}"),
            }
        }
    }
}

fn dump(
    out: &mut impl Write,
    path: &Path,
    rows: bool,
    cache: Option<&Cache>,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    writeln!(out, "{}:", path.display()).map_err(io)?;
    match cache {
        None => {
            let c = compile_file(path).map_err(|e| e.to_string())?;
            print_table(out, &c.table, rows).map_err(io)?;
            writeln!(out, "stats: {}", c.stats).map_err(io)
        }
        Some(cache) => {
            let l = cache.table_for(path).map_err(|e| e.to_string())?;
            print_table(out, &l.table, rows).map_err(io)?;
            print_how(out, l.how, cache).map_err(io)
        }
    }
}

fn main() -> ExitCode {
    let mut rows = true;
    let mut use_cache = false;
    let mut files = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.to_str() {
            Some("--stats") => rows = false,
            Some("--cache") => use_cache = true,
            Some("--help" | "-h") => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            Some(s) if s.starts_with('-') && s != "-" => {
                eprint!("rprof-unwind-dump: unknown option {s}\n{USAGE}");
                return ExitCode::from(2);
            }
            _ => files.push(arg),
        }
    }
    if files.is_empty() {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    }
    let cache = if use_cache {
        match Cache::from_env() {
            Some(c) => Some(c),
            None => {
                eprintln!("rprof-unwind-dump: --cache: no cache directory ($RPROF_UNWIND_CACHE, $XDG_CACHE_HOME and $HOME are unset)");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut status = ExitCode::SUCCESS;
    for f in &files {
        if let Err(e) = dump(&mut out, Path::new(f), rows, cache.as_ref()) {
            let _ = out.flush();
            eprintln!("rprof-unwind-dump: {}: {e}", Path::new(f).display());
            status = ExitCode::FAILURE;
        }
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    status
}

//! The input options of `rprof report`, `export` and `annotate`.

use clap::Args;
use rprof::Error;
use rprof_data::{DataFile, ReadError};
use rprof_report::{Filter, Loaded, TimeRange};
use std::io::ErrorKind;
use std::path::PathBuf;

/// Which recording, which of its samples, where its files are.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// The recording to read.
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        default_value = "rprof.data"
    )]
    pub input: PathBuf,

    /// Only samples of thread group (process) P.
    #[arg(long = "pid", value_name = "P")]
    pub pid: Option<u32>,

    /// Only samples of tasks whose comm is C.
    #[arg(long = "comm", value_name = "C")]
    pub comm: Option<String>,

    /// Only samples of these threads (thread ids, comma-separated).
    #[arg(long = "tid", value_name = "TID,...", value_delimiter = ',')]
    pub tid: Vec<u32>,

    /// Only samples taken on these CPUs: CPUs and ranges, as `0,2-3`.
    #[arg(long = "cpu", value_name = "CPUS", value_parser = CpuList::parse)]
    pub cpu: Option<CpuList>,

    /// Only samples taken from START to END, in seconds of the sampling
    /// clock as `rprof script` prints them; either may be left out
    /// (`--time 12.5,` is from 12.5 s on).
    #[arg(long = "time", value_name = "START,END", value_parser = TimeRange::parse)]
    pub time: Option<TimeRange>,

    /// Look files up under DIR (DIR/usr/bin/foo for /usr/bin/foo), e.g.
    /// copies from the recording machine; build-ids are still checked.
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,

    /// Read /tmp/perf-PID.map files (JIT symbols) whoever owns them; by
    /// default only root's and your own, as perf does without -f.
    #[arg(long)]
    pub force: bool,
}

/// `--cpu`'s list (a newtype: clap reads a bare `Vec` as repeated values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

impl CpuList {
    fn parse(spec: &str) -> Result<CpuList, String> {
        rprof_report::parse_cpu_list(spec).map(CpuList)
    }
}

impl InputArgs {
    /// `--symfs` and `--force`, for the symbolizer.
    pub fn symbols(&self) -> rprof_report::SymbolOptions {
        rprof_report::SymbolOptions {
            symfs: self.symfs.clone(),
            any_perf_map_owner: self.force,
        }
    }

    /// Reads and walks the recording, with a progress line on a terminal
    /// for a large one (see [`progress`](super::progress)).
    ///
    /// An incomplete file (an interrupted recording) is read up to its
    /// last complete record, with a warning on stderr.
    pub fn load(&self) -> Result<Loaded, Error> {
        self.load_by(false)
    }

    /// [`load`](Self::load), counting threads apart if `threads` (for a
    /// report by thread; it costs time and memory with many threads).
    pub fn load_by(&self, threads: bool) -> Result<Loaded, Error> {
        let data = self.read()?;
        let loaded = match super::progress::for_stderr(data.stream.len()) {
            None => Loaded::filtered_by(data, self.symbols(), &self.filter(), threads),
            Some(mut progress) => {
                let loaded = Loaded::with_progress(
                    data,
                    self.symbols(),
                    &self.filter(),
                    threads,
                    &mut |phase, done, total| progress.update(phase, done, total),
                );
                progress.finish();
                loaded
            }
        };
        if let Some(line) = loaded.cut_line() {
            eprintln!("rprof: warning: {}: {line}", self.input.display());
        }
        Ok(loaded)
    }

    /// Reads the recording (an incomplete one up to its last complete
    /// record); a missing file whose `.partial` is there says so.
    pub fn read(&self) -> Result<DataFile, Error> {
        DataFile::read(&self.input).map_err(|e| {
            let partial = rprof::output::partial_path(&self.input);
            match e {
                ReadError::Io(e) if e.kind() == ErrorKind::NotFound && partial.exists() => {
                    Error::Protocol(format!(
                        "{}: {e}; {} is there, an interrupted recording: rprof report -i {}",
                        self.input.display(),
                        partial.display(),
                        partial.display()
                    ))
                }
                e => Error::Protocol(format!("{}: {e}", self.input.display())),
            }
        })
    }

    /// The sample filter.
    pub fn filter(&self) -> Filter {
        Filter {
            pid: self.pid,
            comm: self.comm.clone(),
            event: None,
            tids: self.tid.clone(),
            cpus: self.cpu.clone().map(|c| c.0).unwrap_or_default(),
            time: self.time,
        }
    }
}

//! The sampling options shared by `rprof record`, `top` and `daemon`.

use crate::events::{EventSpec, SessionOptions};
use crate::Error;
use clap::Args;
use rprof_abi::rprof_config;

/// The default frequency of `record`, `top` and `daemon`: 999 Hz, not
/// perf's 4000.  At 4 kHz the profiled work pays four times as much
/// (`make bench`: +1.5% against +0.38% at 1 kHz, one CPU busy), and the
/// daemon, which runs for weeks, must cost next to nothing; one default
/// for all three keeps their profiles comparable.  999 rather than 1000,
/// off the 1000 Hz of timer ticks, so that samples do not lock step with
/// periodic work.  `-F 4000` gives perf's rate.
pub const DEFAULT_RECORD_FREQ_HZ: u64 = 999;

/// What to sample and how the session is sized.
#[derive(Debug, Clone, Args, Default)]
pub struct SamplingArgs {
    /// Event to sample: cpu-clock, task-clock, cycles, instructions,
    /// cache-misses or branch-misses; `NAME:PERIOD` samples every PERIOD
    /// events, `NAME@HZ` about HZ times a second; perf's `:u` (user mode
    /// only) or `:k` (kernel mode only) after it, the same for every
    /// event.  Repeatable (up to 8).  Default: cpu-clock@999.
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT[:PERIOD|@FREQ][:u|:k]"
    )]
    pub events: Vec<EventSpec>,

    /// Sampling frequency in Hz of events given without a period or
    /// frequency of their own (default 999).
    #[arg(short = 'F', long = "freq", value_name = "HZ",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub freq: Option<u64>,

    /// Sample every PERIOD events, for events given without a period or
    /// frequency of their own (as perf's -c).
    #[arg(short = 'c', long = "count", value_name = "PERIOD", conflicts_with = "freq",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub period: Option<u64>,

    /// Do not sample user mode.
    #[arg(long)]
    pub exclude_user: bool,

    /// Do not sample kernel mode.
    #[arg(long)]
    pub exclude_kernel: bool,

    /// Slots of each CPU's ring, a power of two (default: the module's,
    /// or more at high frequencies: 0.8 s of samples, up to 4 times it).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub ring_records: u32,

    /// Data pages of the event buffer, one for all CPUs (perf's -m is per
    /// CPU), a power of two (default: the module's, or more at high
    /// rates: 0.5 s of samples of every CPU, up to 16 times the module's
    /// default and 16 MiB).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        value_parser = crate::events::parse_buffer_pages,
        default_value_t = 0,
        hide_default_value = true
    )]
    pub buffer_pages: u32,

    /// Size at which the module wakes the reader, in bytes (default: the
    /// module's, a quarter of the buffer).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub wakeup_bytes: u32,

    #[command(flatten)]
    /// Call chains.
    pub call_graph: CallGraphArgs,
}

/// The call-chain options, as perf spells them.
#[derive(Debug, Clone, Args, Default)]
pub struct CallGraphArgs {
    /// Record call chains, the best way the module offers: through unwind
    /// tables where it takes them (as `--call-graph dwarf`), else by frame
    /// pointers (as `--call-graph fp`, said in one line).
    #[arg(short = 'g')]
    pub g: bool,

    /// Record call chains by MODE: `fp` walks frame pointers only; `dwarf`
    /// compiles the .eh_frame of every program and library that runs into
    /// unwind tables the module walks, frame pointers elsewhere (code
    /// built without them gets whole chains; perf's `dwarf,SIZE` is taken,
    /// SIZE checked as perf checks it, 1-65528, and unused: nothing is
    /// copied from the stack).  `lbr` is refused.
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,

    /// The deepest chain kept, kernel and user side each (1-127, default
    /// 127); deeper chains are cut and flagged.
    #[arg(long = "max-stack", value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=rprof_abi::RPROF_MAX_FRAMES as i64))]
    pub max_stack: Option<u16>,
}

/// How the user side of call chains is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainMode {
    /// `--call-graph fp`: frame pointers only, as before unwind tables.
    FramePointers,
    /// `--call-graph dwarf`: unwind tables (`RPROF_CONFIG_UNWIND_TABLES`),
    /// which the module must take.
    Tables,
    /// `-g`: unwind tables if the module takes them, else frame pointers.
    Best,
}

impl ChainMode {
    /// Whether the session asks for `RPROF_CONFIG_UNWIND_TABLES`.
    pub fn asks_for_tables(self) -> bool {
        self != ChainMode::FramePointers
    }
}

/// The largest stack dump perf's `--call-graph dwarf,SIZE` takes.
const DWARF_DUMP_MAX: u32 = 65528;

impl CallGraphArgs {
    /// The chain mode asked for, if any: `--call-graph` wins over `-g`.
    pub fn mode(&self) -> Result<Option<ChainMode>, Error> {
        let (mode, arg) = match self.call_graph.as_deref() {
            Some(m) => match m.split_once(',') {
                Some((mode, arg)) => (Some(mode), Some(arg)),
                None => (Some(m), None),
            },
            None => (None, None),
        };
        let mode = match (mode, arg) {
            (None, _) if self.g => ChainMode::Best,
            (None, _) => return Ok(None),
            (Some("fp"), None) => ChainMode::FramePointers,
            (Some("fp"), Some(arg)) => {
                return Err(Error::Usage(format!(
                    "--call-graph fp takes no argument (got fp,{arg})"
                )))
            }
            (Some("dwarf"), None) => ChainMode::Tables,
            // perf's dump size: a number of bytes up to 65528 (perf's
            // limit), taken for perf's sake and unused.
            (Some("dwarf"), Some(size)) => match size.parse::<u32>() {
                Ok(n) if (1..=DWARF_DUMP_MAX).contains(&n) => ChainMode::Tables,
                _ => {
                    return Err(Error::Usage(format!(
                        "--call-graph dwarf,SIZE: SIZE must be a number of bytes from 1 to \
                         {DWARF_DUMP_MAX} (got '{size}'); rprof copies no stack, so SIZE is unused"
                    )))
                }
            },
            (Some("lbr"), _) => {
                return Err(Error::Usage(
                    "--call-graph lbr is not supported: rprof walks frame pointers and unwind \
                     tables in the kernel (--call-graph fp|dwarf, or -g)"
                        .into(),
                ))
            }
            (Some(m), _) => {
                return Err(Error::Usage(format!(
                    "unknown --call-graph mode '{m}' (fp or dwarf)"
                )))
            }
        };
        Ok(Some(mode))
    }

    /// The (kernel, user) depths asked for, if any.
    pub fn depths(&self) -> Result<Option<(u16, u16)>, Error> {
        if self.mode()?.is_none() {
            if self.max_stack.is_some() {
                return Err(Error::Usage(
                    "--max-stack needs -g or --call-graph fp|dwarf".into(),
                ));
            }
            return Ok(None);
        }
        let depth = self.max_stack.unwrap_or(rprof_abi::RPROF_MAX_FRAMES as u16);
        Ok(Some((depth, depth)))
    }
}

impl SamplingArgs {
    /// The session options, for the whole system or (`pid`) one process.
    pub fn session_options(&self, pid: Option<i32>) -> SessionOptions {
        // `config()` reports a bad call-graph mode; here it is left out.
        let callchain = self.call_graph.depths().ok().flatten();
        let unwind_tables = self
            .call_graph
            .mode()
            .ok()
            .flatten()
            .is_some_and(ChainMode::asks_for_tables);
        SessionOptions {
            events: self.events.clone(),
            freq: Some(self.freq.unwrap_or(DEFAULT_RECORD_FREQ_HZ)),
            period: self.period,
            exclude_user: self.exclude_user,
            exclude_kernel: self.exclude_kernel,
            pid,
            descendants: false,
            ring_records: self.ring_records,
            buffer_pages: self.buffer_pages,
            drain_interval_ms: 0,
            wakeup_bytes: self.wakeup_bytes,
            callchain,
            unwind_tables,
        }
    }

    /// The session's configuration, for the whole system or (`pid`) one
    /// process; options that make none (too many events, ...) are an
    /// [`Error::Usage`].
    pub fn config(&self, pid: Option<i32>) -> Result<rprof_config, Error> {
        self.config_with(pid, false)
    }

    /// [`SamplingArgs::config`], and with `descendants` the processes
    /// descending from `pid` too.
    pub fn config_with(&self, pid: Option<i32>, descendants: bool) -> Result<rprof_config, Error> {
        self.call_graph.depths()?;
        let mut o = self.session_options(pid);
        o.descendants = descendants && pid.is_some();
        o.to_config().map_err(Error::Usage)
    }
}

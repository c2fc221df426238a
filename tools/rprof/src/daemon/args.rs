//! The options of `rprof daemon` and `rprofd`.

use crate::sampling::SamplingArgs;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `rprof daemon` and `rprofd`.
#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// Directory of the profiles (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// Seconds of samples per profile (fractions allowed).
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_seconds)]
    pub interval: Duration,

    /// How many profiles to keep; older ones are deleted.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: u64,

    /// Have the module forget its cookie table (and let go of the files
    /// it pins) at the end of the first interval this many seconds after
    /// the last time; it is also reset once it has named a quarter of
    /// the module's `max_cookies` since.
    #[arg(long, value_name = "SECS", default_value = "3600", value_parser = parse_seconds)]
    pub renew: Duration,

    /// Only sample the thread group (process) PID; the daemon stops once
    /// it has ended.
    #[arg(short = 'p', long = "pid", value_name = "PID",
          value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Option<i32>,

    /// Also serve, over HTTP on ADDR (IP:PORT, such as 127.0.0.1:6060),
    /// `/debug/pprof/profile?seconds=N` (a CPU profile of the next N
    /// seconds, as Go's net/http/pprof) and `/metrics` (Prometheus).
    /// Profiles show code paths and command names: bind it to loopback
    /// unless the network is trusted.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,

    #[command(flatten)]
    /// What to sample.
    pub sampling: SamplingArgs,
}

/// Parses `--listen`'s IP:PORT.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("'{s}': expected IP:PORT, such as 127.0.0.1:6060 or [::1]:6060"))
}

/// Parses a positive, finite number of seconds.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0 && secs <= 1e9) {
        return Err(format!("'{s}': the duration must be positive"));
    }
    let d = Duration::from_secs_f64(secs);
    if d < Duration::from_micros(1) {
        return Err(format!(
            "'{s}': the duration must be at least a microsecond"
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        // Positive, but nothing as a Duration: intervals would not advance.
        assert!(parse_seconds("1e-12").is_err());
        assert!(parse_seconds("x").is_err());
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("127.0.0.1:6060").map(|a| a.port()), Ok(6060));
        assert!(parse_listen("[::1]:0").is_ok());
        for bad in ["localhost:6060", ":6060", "127.0.0.1", "x"] {
            assert!(parse_listen(bad).unwrap_err().contains("IP:PORT"), "{bad}");
        }
    }
}

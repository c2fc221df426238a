//! How fast a large recording is read, counted, symbolized and exported:
//! the rate of `rprof report` and of `rprofd`'s decoding (the same
//! `Aggregate::feed`), for `make bench`.
//!
//! ```text
//! cargo run --release -p rprof-report --example report_rate -- RECORDING SYMFS [MIB]
//! ```
//!
//! RECORDING is a real `rprof.data` (the test fixture); its stream is
//! repeated (its samples and context records, each file named once) up
//! to MIB MiB (default 64), the file written and read back as `rprof
//! report` would, and each phase timed on the host.  Prints one `B host`
//! line of figures (tests/harness/bench_report.py reads it) and a
//! sentence.

use rprof_data::DataFile;
use rprof_decode::{Decoder, Record};
use rprof_report::{pprof, table, Filter, Loaded};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(symfs)) = (args.get(1), args.get(2)) else {
        return Err("usage: report_rate RECORDING SYMFS [MIB]".into());
    };
    let mib: usize = args
        .get(3)
        .map_or(Ok(64), |s| s.parse())
        .map_err(|e| format!("MIB: {e}"))?;
    let bytes = std::fs::read(input).map_err(|e| format!("{input}: {e}"))?;
    let mut data = DataFile::parse(&bytes).map_err(|e| format!("{input}: {e}"))?;
    // One copy of the stream without START/STOP; naming records (COOKIE,
    // MODULE, STACK) only in the first.
    let records: Vec<Record> = Decoder::new(&data.stream)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{input}: {e:?}"))?;
    let (mut head, mut body, mut tail) = (Vec::new(), Vec::new(), Vec::new());
    for r in &records {
        match r {
            Record::Start { .. } => r.encode(&mut head),
            Record::Stop { .. } => r.encode(&mut tail),
            Record::Cookie { .. } | Record::Module { .. } | Record::Stack { .. } => {
                r.encode(&mut head)
            }
            _ => r.encode(&mut body),
        }
    }
    if body.is_empty() {
        return Err(format!("{input}: no samples"));
    }
    let copies = (mib << 20).div_ceil(body.len()).max(1);
    let mut stream = head;
    stream.reserve(body.len() * copies + tail.len());
    for _ in 0..copies {
        stream.extend_from_slice(&body);
    }
    stream.extend_from_slice(&tail);
    data.stream = stream;
    let file = data.to_bytes();
    let path = std::env::temp_dir().join(format!("rprof-report-rate-{}.data", std::process::id()));
    std::fs::write(&path, &file).map_err(|e| format!("{}: {e}", path.display()))?;

    let t = Instant::now();
    let data = DataFile::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let read_s = t.elapsed().as_secs_f64();
    let stream_bytes = data.stream.len() as f64;
    let config = data.config;
    let t = Instant::now();
    let mut l = Loaded::new(data, Some(PathBuf::from(symfs)));
    let decode_s = t.elapsed().as_secs_f64();
    let samples = l.agg.samples;
    let t = Instant::now();
    let rows = rprof_report::rows(&l.agg, &mut l.sym, &Filter::default());
    let lines = table::group(
        &rows,
        &table::parse_sort(table::DEFAULT_SORT).map_err(|e| e.to_string())?,
    );
    let report_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let p = pprof::build(
        &l.agg,
        &mut l.sym,
        &Filter::default(),
        &config,
        &pprof::Options::default(),
    );
    let mut out = Vec::new();
    pprof::write_gz(&mut out, &p).map_err(|e| e.to_string())?;
    let pprof_s = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let mb = stream_bytes / 1e6;
    println!(
        "B host report_stream_mb={mb:.1} report_file_mb={:.1} report_samples={samples} report_read_s={read_s:.3} \
         report_decode_s={decode_s:.3} report_rows_s={report_s:.3} report_pprof_s={pprof_s:.3} report_lines={}",
        file.len() as f64 / 1e6,
        lines.len()
    );
    println!(
        "{samples} samples, {mb:.1} MB of stream: read {:.0} MB/s, decoded and counted {:.0} MB/s ({:.1} M samples/s), \
         symbolized into {} lines in {report_s:.3} s, pprof in {pprof_s:.3} s",
        file.len() as f64 / 1e6 / read_s,
        mb / decode_s,
        samples as f64 / 1e6 / decode_s,
        lines.len()
    );
    Ok(())
}

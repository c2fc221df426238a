//! `same-stream`: the mapping and `read()` show the same records.
//!
//! One cpu-clock session at 1000 Hz with the module's default sizes: map
//! the control page and the data area, START, keep a CPU busy for 0.5 s,
//! STOP, FLUSH.  Then copy `[data_tail, data_head)` out of the mapping
//! without moving `data_tail` (a peek), and `read()` until it returns 0 at
//! the end of the stopped session.  Both byte streams must be identical,
//! non-empty, and run from a START record to a STOP record.

use crate::checks::{error_name, good_config, open, Outcome};
use crate::mapping::{page_size, Map, DATA_HEAD, DATA_TAIL};
use rprof::errno::io_error_name;
use rprof::Device;
use rprof_abi::rprof_mmap_page;
use rprof_decode::{decode_all, Record};
use std::mem::offset_of;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How long the session samples.
const RUN: Duration = Duration::from_millis(500);

/// The `read()` buffer: far larger than any record.
const READ_SIZE: usize = 64 * 1024;

/// Keeps this CPU busy for `d`, so that samples show user and kernel code.
pub fn busy_for(d: Duration) {
    let end = Instant::now() + d;
    let mut x = 0u64;
    while Instant::now() < end {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    std::hint::black_box(x);
}

/// START, `d` of busy work, STOP and FLUSH, each expected to succeed.
pub fn busy_session(dev: &Device, d: Duration) -> Result<(), String> {
    dev.start()
        .map_err(|e| format!("expected START to succeed, got {}", error_name(&e)))?;
    busy_for(d);
    dev.stop()
        .map_err(|e| format!("expected STOP to succeed, got {}", error_name(&e)))?;
    dev.flush()
        .map_err(|e| format!("expected FLUSH to succeed, got {}", error_name(&e)))?;
    Ok(())
}

/// Maps the control page read-write and the data area read-only.
pub fn map_buffer(dev: &Device) -> Result<(Map, Map, usize), String> {
    let page = page_size()?;
    let fd = dev.as_raw_fd();
    let ctrl = Map::new(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0).map_err(|e| {
        format!(
            "expected the control page to map read-write, got {}",
            io_error_name(&e)
        )
    })?;
    let data_size = ctrl
        .load_u64(offset_of!(rprof_mmap_page, data_size))
        .map_err(|e| format!("cannot read data_size: {}", io_error_name(&e)))?;
    let data_size = usize::try_from(data_size)
        .ok()
        .filter(|s| s.is_power_of_two() && s % page == 0)
        .ok_or_else(|| {
            format!("expected data_size a power-of-two number of pages, got {data_size}")
        })?;
    let data = Map::new(fd, data_size, libc::PROT_READ, page).map_err(|e| {
        format!(
            "expected the {data_size}-byte data area to map read-only, got {}",
            io_error_name(&e)
        )
    })?;
    Ok((ctrl, data, data_size))
}

/// Copies the published, unconsumed bytes `[data_tail, data_head)` out of
/// the mapping without releasing them.
pub fn peek(ctrl: &Map, data: &Map, data_size: usize) -> Result<Vec<u8>, String> {
    let io = |e: std::io::Error| format!("cannot read the mapping: {}", io_error_name(&e));
    let head = ctrl.load_u64(DATA_HEAD).map_err(io)?;
    let tail = ctrl.load_u64(DATA_TAIL).map_err(io)?;
    let len = head.wrapping_sub(tail);
    if len > data_size as u64 {
        return Err(format!(
            "expected data_head - data_tail <= data_size {data_size}, got head {head}, tail {tail}"
        ));
    }
    // `len` <= `data_size`, a usize.
    let len = len as usize;
    let pos = (tail % data_size as u64) as usize;
    let first = len.min(data_size - pos);
    let mut out = data.read_bytes(pos, first).map_err(io)?;
    out.extend(data.read_bytes(0, len - first).map_err(io)?);
    Ok(out)
}

/// Decodes `bytes` and checks that they run from START to STOP; returns the
/// record count.
fn check_records(what: &str, bytes: &[u8]) -> Result<usize, String> {
    let records = decode_all(bytes).map_err(|e| format!("expected {what} to decode, got {e}"))?;
    match (records.first(), records.last()) {
        (Some(Record::Start { .. }), Some(Record::Stop { .. })) => Ok(records.len()),
        (first, last) => Err(format!(
            "expected {what} to run from START to STOP, got {} records from {} to {}",
            records.len(),
            first.map_or("nothing", Record::name),
            last.map_or("nothing", Record::name),
        )),
    }
}

/// Runs `same-stream`.
pub fn run() -> Outcome {
    let dev = open()?;
    dev.set_config(&good_config())
        .map_err(|e| format!("expected SET_CONFIG to succeed, got {}", error_name(&e)))?;
    let (ctrl, data, data_size) = map_buffer(&dev)?;
    busy_session(&dev, RUN)?;

    let mapped = peek(&ctrl, &data, data_size)?;
    let tail_before = ctrl.load_u64(DATA_TAIL).map_err(|e| io_error_name(&e))?;
    if mapped.is_empty() {
        return Err("expected records in the mapping after STOP, got none".into());
    }
    let n = check_records("the mapped bytes", &mapped).map_err(|e| {
        format!(
            "{e} ({} of the buffer's {data_size} bytes in use; a full buffer leaves \
             STOP owed)",
            mapped.len()
        )
    })?;

    // The session is stopped and STOP is in the buffer: read() ends with
    // 0 once everything is consumed.  A read() that brought more than the
    // buffer holds means the module kept writing: stop there.
    let mut read = Vec::new();
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let got = dev.read(&mut buf).map_err(|e| {
            format!(
                "expected read() to return the {} mapped bytes, got {} after {} bytes",
                mapped.len(),
                error_name(&e),
                read.len()
            )
        })?;
        if got == 0 {
            break;
        }
        read.extend_from_slice(buf.get(..got).unwrap_or(&buf));
        if read.len() > data_size + READ_SIZE {
            break;
        }
    }
    if read != mapped {
        let at = read
            .iter()
            .zip(&mapped)
            .position(|(a, b)| a != b)
            .unwrap_or(read.len().min(mapped.len()));
        return Err(format!(
            "expected read() to return the {} bytes seen through the mapping, got {} bytes, \
             the first difference at byte {at}",
            mapped.len(),
            read.len()
        ));
    }
    check_records("the bytes of read()", &read)?;

    // The peek consumed nothing; read() consumed everything.
    let head = ctrl.load_u64(DATA_HEAD).map_err(|e| io_error_name(&e))?;
    let tail = ctrl.load_u64(DATA_TAIL).map_err(|e| io_error_name(&e))?;
    if tail != head || head.wrapping_sub(tail_before) != mapped.len() as u64 {
        return Err(format!(
            "expected read() to move data_tail from {tail_before} to data_head, \
             got data_tail {tail}, data_head {head} ({} bytes were mapped)",
            mapped.len()
        ));
    }
    Ok(format!(
        "{n} records ({} bytes, START to STOP) identical through the mapping and read()",
        mapped.len()
    ))
}

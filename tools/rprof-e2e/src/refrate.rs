//! `rprof-e2e ref-samples HZ SECONDS`: the kernel's own sampler as a
//! yardstick for rprof's sampling rate.
//!
//! Opens, on every online CPU, a CPU-wide software cpu-clock counter at
//! HZ in frequency mode (what rprof opens for `cpu-clock@HZ`), lets it run
//! SECONDS, and counts the PERF_RECORD_SAMPLE records in its ring
//! (`sample_type` 0: each is an 8-byte header; the ring is sized so that
//! it never wraps).  Prints one JSON line, `{"per_cpu":[N,...],
//! "window_ns":T,"lost":L}`, then `ok:`.
//!
//! Under TCG a busy host delays the guest's timers and both samplers lose
//! the same ticks; a rate check that compares rprof with this one, run over
//! the same time, fails for rprof's own losses and not for the host's.

use crate::hostile::{PerfEventAttr, PERF_COUNT_SW_CPU_CLOCK, PERF_TYPE_SOFTWARE};
use crate::mapping::{page_size, Map};
use std::time::{Duration, Instant};

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
/// `perf_event_attr.freq`: `sample_period` is a frequency.
const ATTR_FREQ: u64 = 1 << 10;
/// `struct perf_event_mmap_page`: `data_head`.
const DATA_HEAD: usize = 1024;

struct Counter {
    fd: i32,
    ring: Map,
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: Our descriptor, closed once (the mapping stays valid).
        unsafe { libc::close(self.fd) };
    }
}

fn open(cpu: i32, hz: u64, data_pages: usize) -> Result<Counter, String> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: hz,
        flags: ATTR_FREQ,
        ..Default::default()
    };
    // SAFETY: A valid VER0 attr for the syscall: every task, this CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1,
            cpu,
            -1,
            0,
        )
    };
    if fd < 0 {
        return Err(format!(
            "perf_event_open on CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = fd as i32;
    let page = page_size()?;
    match Map::new(
        fd,
        (1 + data_pages) * page,
        libc::PROT_READ | libc::PROT_WRITE,
        0,
    ) {
        Ok(ring) => Ok(Counter { fd, ring }),
        Err(e) => {
            // SAFETY: Our descriptor, closed once.
            unsafe { libc::close(fd) };
            Err(format!("mmap of the perf ring on CPU {cpu}: {e}"))
        }
    }
}

/// (samples, lost) in a ring that never wrapped.
fn count(c: &Counter, data_bytes: usize) -> Result<(u64, u64), String> {
    let page = page_size()?;
    let head = c.ring.load_u64(DATA_HEAD).map_err(|e| e.to_string())? as usize;
    if head > data_bytes {
        return Err(format!(
            "the reference ring wrapped ({head} bytes in {data_bytes})"
        ));
    }
    let data = c.ring.read_bytes(page, head).map_err(|e| e.to_string())?;
    let (mut samples, mut lost, mut at) = (0, 0, 0);
    while at + 8 <= data.len() {
        let type_ = u32::from_le_bytes(data[at..at + 4].try_into().unwrap_or_default());
        let size = u16::from_le_bytes(data[at + 6..at + 8].try_into().unwrap_or_default()) as usize;
        if size < 8 || at + size > data.len() {
            return Err(format!(
                "a record of {size} bytes at {at} of {}",
                data.len()
            ));
        }
        match type_ {
            PERF_RECORD_SAMPLE => samples += 1,
            PERF_RECORD_LOST if size >= 24 => {
                lost += u64::from_le_bytes(data[at + 16..at + 24].try_into().unwrap_or_default())
            }
            _ => {}
        }
        at += size;
    }
    Ok((samples, lost))
}

pub fn run(hz: u64, seconds: f64) -> Result<String, String> {
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as i32;
    // Eight bytes a sample, twice what HZ for SECONDS gives, a power of two.
    let want = (16.0 * hz as f64 * seconds) as usize;
    let page = page_size()?;
    let data_pages = want.div_ceil(page).max(1).next_power_of_two();
    let t0 = Instant::now();
    let counters = (0..cpus)
        .map(|c| open(c, hz, data_pages))
        .collect::<Result<Vec<_>, _>>()?;
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let mut per_cpu = Vec::new();
    let mut lost = 0;
    for c in &counters {
        // Counted after close would do too; the ring stays mapped.
        let (n, l) = count(c, data_pages * page)?;
        per_cpu.push(n);
        lost += l;
    }
    let window = t0.elapsed().as_nanos();
    drop(counters);
    let list = per_cpu
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    println!("{{\"per_cpu\":[{list}],\"window_ns\":{window},\"lost\":{lost}}}");
    Ok(format!(
        "cpu-clock at {hz} Hz for {seconds} s on {cpus} CPUs: {list} samples, {lost} lost"
    ))
}

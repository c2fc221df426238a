//! A small stream for the unit tests: this test binary plays the sampled
//! program, so its symbols are real.

use rprof_abi::*;
use rprof_data::FileInfo;
use rprof_decode::Record;
use rprof_symbols::ElfImage;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Samples in [`stream`].
pub const SAMPLES: u64 = 50;

/// Kernel symbols of the test stream.
pub const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 T do_idle
ffffffff81002000 T other
ffffffffc0001000 t busy_spin\t[rprof_busy]
";

/// The sampled "program"'s hot function.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rprof_report_test_hot(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(5).wrapping_add(3))
}

/// Its colder sibling.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rprof_report_test_warm(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(7).wrapping_add(1))
}

pub fn exe() -> PathBuf {
    std::env::current_exe().unwrap()
}

fn offset_of(name: &str) -> u64 {
    assert_eq!(rprof_report_test_hot(1) + rprof_report_test_warm(1), 16);
    let image = ElfImage::load(&exe()).unwrap();
    let (addr, _) = image.symbols_named(name)[0];
    image.offset_of_vaddr(addr).unwrap()
}

/// The file offset of `rprof_report_test_hot`.
pub fn hot_offset() -> u64 {
    offset_of("rprof_report_test_hot")
}

/// The file offset of `rprof_report_test_warm`.
pub fn warm_offset() -> u64 {
    offset_of("rprof_report_test_warm")
}

/// The session of [`stream`]: cpu-clock at 999 Hz.
pub fn config() -> rprof_config {
    let mut config = rprof_config::new();
    config.nr_events = 1;
    config.events[0] = rprof_event_config {
        kind: RPROF_EVENT_CPU_CLOCK,
        flags: RPROF_EVENT_FREQ,
        period: 999,
    };
    config
}

/// [`config`] with a second event: cycles every 100000.
pub fn two_events() -> rprof_config {
    let mut config = config();
    config.nr_events = 2;
    config.events[1] = rprof_event_config {
        kind: RPROF_EVENT_CYCLES,
        flags: 0,
        period: 100_000,
    };
    config
}

/// [`stream`] with another inode or path in the COOKIE record.
pub fn stream_with(ino: Option<u64>, path: Option<&str>) -> (Vec<u8>, FileInfo) {
    let exe = exe();
    let meta = std::fs::metadata(&exe).unwrap();
    let path = path.map_or_else(|| exe.to_string_lossy().into_owned(), str::to_string);
    let info = FileInfo {
        cookie: 16,
        dev: rprof_symbols::dev::new_encode_stat_dev(meta.dev()),
        ino: ino.unwrap_or(meta.ino()),
        build_id: rprof_symbols::read_build_id(&exe)
            .unwrap()
            .unwrap_or_default(),
        path: path.clone(),
        ..FileInfo::default()
    };
    let config = config();
    let sample = |offset: u64, user: bool| Record::Sample {
        flags: u16::from(user),
        time_ns: 1,
        offset,
        period: 1_001_001,
        stack: None,
    };
    let mut r = vec![
        Record::Start {
            time_ns: 100,
            config,
        },
        Record::Cookie {
            cookie: 16,
            flags: 0,
            dev: info.dev,
            ino: info.ino,
            path,
        },
        Record::Task {
            cpu: 0,
            pid: 100,
            tid: 100,
            exe_cookie: 16,
            comm: "attr_main".into(),
        },
        Record::Switch { cookie: 16 },
    ];
    let (hot, warm) = (hot_offset(), warm_offset());
    for i in 0..30 {
        r.push(sample(hot + i % 4, true));
    }
    for _ in 0..10 {
        r.push(sample(warm, true));
    }
    r.push(Record::Lost {
        stage: RPROF_LOST_NO_MAPPING,
        cpu: 0,
        count: 3,
    });
    r.push(Record::Task {
        cpu: 1,
        pid: 0,
        tid: 0,
        exe_cookie: 0,
        comm: "swapper/1".into(),
    });
    r.push(Record::Switch {
        cookie: u64::from(RPROF_COOKIE_KERNEL),
    });
    for _ in 0..6 {
        r.push(sample(0xffffffff81001010, false));
    }
    r.push(Record::Module {
        cookie: 40,
        flags: 0,
        base: 0xffffffffc0001000,
        size: 0x1000,
        name: "rprof_busy".into(),
    });
    r.push(Record::Switch { cookie: 40 });
    for _ in 0..4 {
        r.push(sample(0x8, false));
    }
    r.push(Record::Stop {
        time_ns: 2_000_000_100,
        config,
    });
    let mut bytes = Vec::new();
    for rec in &r {
        rec.encode(&mut bytes);
    }
    (bytes, info)
}

/// START, attr_main (pid 100): 30 samples in `rprof_report_test_hot`,
/// 10 in `rprof_report_test_warm`; LOST no_mapping 3; swapper/1 (pid 0):
/// 6 in do_idle, 4 in the module rprof_busy's busy_spin; STOP.
pub fn stream() -> (Vec<u8>, FileInfo) {
    stream_with(None, None)
}

/// [`stream`] as a whole `rprof.data`.
pub fn data_file() -> rprof_data::DataFile {
    let (stream, info) = stream();
    let mut f = rprof_data::DataFile::new(config());
    f.stream = stream;
    f.kallsyms = KALLSYMS.into();
    f.files = vec![info];
    f.meta
        .insert(rprof_data::meta::TARGET_PID.into(), "100".into());
    f
}

//! `memlock`: a session's buffers count as its owner's locked memory.
//!
//! The module charges a session's event buffer and rings to the process
//! that configures it, with perf_mmap()'s rule: a per-user allowance of
//! `mlock_kb` KiB per online CPU, then the caller's `RLIMIT_MEMLOCK`,
//! unless it has CAP_IPC_LOCK; past both, SET_CONFIG fails with EPERM.  A
//! buffer that is still mapped outlives its session (closing the file
//! or replacing the session ends it, not the mapping), and so does its
//! charge.
//!
//! A child becomes uid and gid 65534 keeping only CAP_PERFMON, with an
//! `RLIMIT_MEMLOCK` of 4 MiB, and pins 4 MiB buffers one after the other
//! on one file (SET_CONFIG, which replaces the file's last session, then
//! map the control page and the data area and keep them mapped):
//! SET_CONFIG must fail with EPERM once the mapped buffers fill the
//! allowance and the limit (by round 4 with up to 5 online CPUs), and
//! succeed again on a new file once they are unmapped and the first file
//! is closed (the charge was given back);
//! GET_STATS's `locked_bytes` then covers the buffer.  Root (CAP_IPC_LOCK)
//! pins 6 buffers of 2 MiB without a refusal.
//!
//! The device is 0600 root: the check opens it to everyone while the
//! child runs (the child must open it with its own credentials) and puts
//! its mode back afterwards.

use crate::checks::{error_name, good_config, wait_child, wait_status_text, Outcome};
use crate::mapping::{page_size, Map};
use crate::same_stream::map_buffer;
use rprof::device::DEFAULT_PATH;
use rprof::errno::io_error_name;
use rprof::memlock::{memlock_rlimit, mlock_kb, user_allowance, SessionMemory};
use rprof::Device;
use rprof_abi::rprof_config;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;

/// The unprivileged user and group (`nobody`).
const NOBODY: u32 = 65534;
/// `CAP_PERFMON` (linux/capability.h).
const CAP_PERFMON: u32 = 38;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// The child's `RLIMIT_MEMLOCK`.
const CHILD_RLIMIT: u64 = 4 << 20;
/// The child's buffers: 4 MiB of data.
const CHILD_BUFFER_PAGES: u32 = 1024;
/// Rounds the child tries at most.
const CHILD_ROUNDS: u32 = 12;
/// Root's buffers: 2 MiB of data.
const ROOT_BUFFER_PAGES: u32 = 512;
/// Root's rounds, which must all succeed.
const ROOT_ROUNDS: u32 = 6;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The two words of a version-3 capability set holding only `cap`.
fn only_cap(cap: u32) -> [CapData; 2] {
    let mut sets = [CapData::default(); 2];
    let word = &mut sets[(cap / 32) as usize];
    word.effective = 1 << (cap % 32);
    word.permitted = 1 << (cap % 32);
    sets
}

/// The last round at which SET_CONFIG may still be refused: buffers of
/// `buffer_bytes` (charged while mapped) fill `limit` bytes (the user's
/// allowance and the rlimit) after `limit / buffer_bytes` of them, so the
/// next one cannot fit, rings or not.
fn latest_refusal(limit: u64, buffer_bytes: u64) -> u64 {
    limit / buffer_bytes.max(1) + 1
}

/// A configuration the module accepts, with `buffer_pages` data pages.
fn config_of(buffer_pages: u32) -> rprof_config {
    let mut c = good_config();
    c.buffer_pages = buffer_pages;
    c
}

/// `what` failed with the errno of `e`, as a message.
fn os_error(what: &str) -> String {
    format!(
        "{what} failed with {}",
        io_error_name(&io::Error::last_os_error())
    )
}

/// Buffers of replaced sessions, still mapped.
#[derive(Default)]
struct Pinned {
    maps: Vec<(Map, Map)>,
    /// Bytes mapped: control pages and data areas.
    bytes: u64,
}

/// What one round of [`Pinned::pin`] did.
enum Round {
    /// The session was configured and its buffer stays mapped.
    Pinned,
    /// SET_CONFIG said EPERM.
    Refused,
}

impl Pinned {
    /// Configures `config` on `dev` (replacing its last session) and maps
    /// its buffer, keeping the mappings.
    fn pin(&mut self, dev: &Device, config: &rprof_config, page: u64) -> Result<Round, String> {
        match dev.set_config(config) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => return Ok(Round::Refused),
            Err(e) => {
                return Err(format!(
                    "expected SET_CONFIG to succeed or fail with EPERM, got {}",
                    error_name(&e)
                ))
            }
        }
        let (ctrl, data, data_size) = map_buffer(dev)?;
        self.bytes += page + data_size as u64;
        self.maps.push((ctrl, data));
        Ok(Round::Pinned)
    }

    /// Unmaps every buffer.
    fn unmap_all(&mut self) -> Result<(), String> {
        for (ctrl, data) in self.maps.drain(..) {
            for map in [ctrl, data] {
                map.unmap()
                    .map_err(|e| format!("munmap failed with {}", io_error_name(&e)))?;
            }
        }
        self.bytes = 0;
        Ok(())
    }
}

/// Makes this process uid and gid 65534 with CAP_PERFMON, and nothing
/// else, in its permitted and effective sets.
fn become_nobody_with_perfmon() -> Result<(), String> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) } != 0 {
        return Err(os_error("prctl(PR_SET_KEEPCAPS)"));
    }
    // SAFETY: setgroups with a count of 0 reads no memory.
    if unsafe { libc::setgroups(0, std::ptr::null()) } != 0 {
        return Err(os_error("setgroups(0) (run as root)"));
    }
    // SAFETY: plain integers; the process has one thread (a fork child).
    if unsafe { libc::setresgid(NOBODY, NOBODY, NOBODY) } != 0 {
        return Err(os_error("setresgid(65534)"));
    }
    // SAFETY: As above.  PR_SET_KEEPCAPS keeps the permitted set.
    if unsafe { libc::setresuid(NOBODY, NOBODY, NOBODY) } != 0 {
        return Err(os_error("setresuid(65534)"));
    }
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let sets = only_cap(CAP_PERFMON);
    // SAFETY: capset reads one header and two data structures (version 3),
    // which `header` and `sets` are, laid out as the kernel's.
    let ret = unsafe { libc::syscall(libc::SYS_capset, &header, sets.as_ptr()) };
    if ret != 0 {
        return Err(os_error("capset(CAP_PERFMON)"));
    }
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut got = [CapData::default(); 2];
    // SAFETY: capget reads the header and writes two data structures
    // (version 3) into `got`.
    let ret = unsafe { libc::syscall(libc::SYS_capget, &header, got.as_mut_ptr()) };
    if ret != 0 {
        return Err(os_error("capget"));
    }
    // SAFETY: geteuid and getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if got != sets || euid != NOBODY || egid != NOBODY {
        return Err(format!(
            "expected uid/gid 65534 with only CAP_PERFMON, got euid {euid}, egid {egid}, \
             capabilities {got:x?}"
        ));
    }
    Ok(())
}

/// Sets `RLIMIT_MEMLOCK` (soft and hard) to `bytes`.
fn set_memlock_rlimit(bytes: u64) -> Result<(), String> {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit reads one struct rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) } != 0 {
        return Err(os_error("setrlimit(RLIMIT_MEMLOCK)"));
    }
    Ok(())
}

/// The child's part: pins 4 MiB buffers up to the refusal, then checks
/// that the charge is given back.
fn nobody_pins(page: u64) -> Outcome {
    become_nobody_with_perfmon()?;
    set_memlock_rlimit(CHILD_RLIMIT)?;
    let config = config_of(CHILD_BUFFER_PAGES);
    let memory = SessionMemory::on_this_system(&config);
    let allowance = user_allowance();
    let limit = allowance + CHILD_RLIMIT;
    let latest = latest_refusal(limit, memory.buffer_bytes);
    let mut pinned = Pinned::default();
    let mut refusal = None;
    let dev = Device::open(DEFAULT_PATH).map_err(|e| e.to_string())?;
    for round in 1..=CHILD_ROUNDS {
        match pinned.pin(&dev, &config, page) {
            Ok(Round::Pinned) => {}
            Ok(Round::Refused) => {
                refusal = Some(u64::from(round));
                break;
            }
            Err(e) => return Err(format!("round {round}: {e}")),
        }
    }
    let figures = format!(
        "buffers of {} KiB (+ rings {} KiB), allowance {} KiB (mlock_kb {}) + RLIMIT_MEMLOCK {} KiB",
        memory.buffer_bytes / 1024,
        memory.rings_bytes() / 1024,
        allowance / 1024,
        mlock_kb(),
        CHILD_RLIMIT / 1024
    );
    let Some(round) = refusal else {
        return Err(format!(
            "expected SET_CONFIG to fail with EPERM by round {latest}, got {CHILD_ROUNDS} \
             sessions with {} bytes pinned ({figures})",
            pinned.bytes
        ));
    };
    let at_refusal = pinned.bytes;
    if round > latest {
        return Err(format!(
            "expected SET_CONFIG to fail with EPERM by round {latest}, got it at round {round} \
             with {at_refusal} bytes pinned ({figures})"
        ));
    }
    if round == 1 && memory.total() <= limit {
        return Err(format!(
            "expected the first session ({} KiB) to fit, got EPERM ({figures})",
            memory.total() / 1024
        ));
    }
    pinned.unmap_all()?;
    // The file's last session (round 1's, still its own: EPERM replaced
    // nothing) holds its charge until the file is closed.
    drop(dev);
    let dev = Device::open(DEFAULT_PATH).map_err(|e| e.to_string())?;
    dev.set_config(&config).map_err(|e| {
        format!(
            "expected SET_CONFIG to succeed once the {at_refusal} pinned bytes were unmapped, \
             got {}",
            error_name(&e)
        )
    })?;
    let (stats, _) = dev
        .stats(false)
        .map_err(|e| format!("GET_STATS failed with {}", error_name(&e)))?;
    if stats.locked_bytes < memory.buffer_bytes {
        return Err(format!(
            "expected GET_STATS's locked_bytes >= the buffer's {} bytes, got {}",
            memory.buffer_bytes, stats.locked_bytes
        ));
    }
    Ok(format!(
        "uid 65534 with only CAP_PERFMON: SET_CONFIG refused with EPERM at round {round} \
         (at most {latest}) with {at_refusal} bytes pinned by {} mapped buffers ({figures}), \
         accepted again once they were unmapped, locked_bytes {}",
        round - 1,
        stats.locked_bytes
    ))
}

/// Root's part: every round pins its buffer.
fn root_pins(page: u64) -> Outcome {
    let config = config_of(ROOT_BUFFER_PAGES);
    let mut pinned = Pinned::default();
    let dev = Device::open(DEFAULT_PATH).map_err(|e| e.to_string())?;
    for round in 1..=ROOT_ROUNDS {
        match pinned.pin(&dev, &config, page) {
            Ok(Round::Pinned) => {}
            Ok(Round::Refused) => {
                return Err(format!(
                    "expected root (CAP_IPC_LOCK) to configure session {round} of {ROOT_ROUNDS} \
                     with {} bytes pinned, got EPERM",
                    pinned.bytes
                ))
            }
            Err(e) => return Err(format!("root, round {round}: {e}")),
        }
    }
    let bytes = pinned.bytes;
    pinned.unmap_all()?;
    let rlimit = memlock_rlimit().map_or("unlimited".to_string(), |l| format!("{} KiB", l / 1024));
    Ok(format!(
        "root (CAP_IPC_LOCK, RLIMIT_MEMLOCK {rlimit}): {ROOT_ROUNDS} buffers of {} KiB, \
         {bytes} bytes pinned at once",
        (u64::from(ROOT_BUFFER_PAGES) + 1) * page / 1024
    ))
}

/// The device open to everyone for the guard's lifetime, then its mode
/// as it was.
struct OpenToAll {
    mode: u32,
}

impl OpenToAll {
    fn new() -> Result<OpenToAll, String> {
        let meta = std::fs::metadata(DEFAULT_PATH)
            .map_err(|e| format!("cannot stat {DEFAULT_PATH}: {}", io_error_name(&e)))?;
        let mode = meta.permissions().mode() & 0o7777;
        std::fs::set_permissions(DEFAULT_PATH, std::fs::Permissions::from_mode(mode | 0o666))
            .map_err(|e| format!("cannot chmod {DEFAULT_PATH}: {}", io_error_name(&e)))?;
        Ok(OpenToAll { mode })
    }
}

impl Drop for OpenToAll {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(DEFAULT_PATH, std::fs::Permissions::from_mode(self.mode));
    }
}

/// Runs `child` in a forked child and returns its outcome, which it
/// sends back through a pipe.
fn in_child(child: impl FnOnce() -> Outcome) -> Outcome {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe2"));
    }
    // SAFETY: pipe2 just opened both; each is owned once, here.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: rprof-e2e starts no threads, so the child is a whole copy of
    // a single-threaded process and may allocate and use the device (the
    // unit test's harness has threads: there the child only formats and
    // writes, and glibc's malloc is safe across fork); it leaves with
    // _exit, never returning into the parent's code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        drop(read_end);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child))
            .unwrap_or_else(|_| Err("the child panicked".into()));
        let (tag, msg) = match &outcome {
            Ok(m) => ("ok", m),
            Err(m) => ("FAIL", m),
        };
        let mut pipe = std::fs::File::from(write_end);
        let code = i32::from(pipe.write_all(format!("{tag} {msg}").as_bytes()).is_err());
        drop(pipe);
        // SAFETY: _exit ends the child at once; it has no preconditions.
        unsafe { libc::_exit(code) };
    }
    drop(write_end);
    let mut text = String::new();
    let read = std::fs::File::from(read_end).read_to_string(&mut text);
    let status =
        wait_child(pid).map_err(|e| format!("waitpid failed with {}", io_error_name(&e)))?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!(
            "expected the child to report and exit 0, got {}",
            wait_status_text(status)
        ));
    }
    read.map_err(|e| format!("cannot read the child's report: {}", io_error_name(&e)))?;
    child_outcome(&text)
}

/// The outcome a child wrote: `ok MESSAGE` or `FAIL MESSAGE`.
fn child_outcome(text: &str) -> Outcome {
    match text.split_once(' ') {
        Some(("ok", msg)) => Ok(msg.to_string()),
        Some(("FAIL", msg)) => Err(msg.to_string()),
        _ => Err(format!("expected the child's report, got {text:?}")),
    }
}

/// Runs `memlock`.
pub fn run() -> Outcome {
    let page = page_size()? as u64;
    let child = {
        let _open = OpenToAll::new()?;
        in_child(|| nobody_pins(page))?
    };
    let root = root_pins(page)?;
    Ok(format!("{child}; {root}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfmon_is_bit_6_of_the_second_word() {
        let sets = only_cap(CAP_PERFMON);
        assert_eq!(sets[0], CapData::default());
        assert_eq!(
            sets[1],
            CapData {
                effective: 1 << 6,
                permitted: 1 << 6,
                inheritable: 0,
            }
        );
        assert_eq!(only_cap(14)[0].effective, 1 << 14, "CAP_IPC_LOCK");
    }

    /// The refusal comes once the mapped buffers fill the allowance and
    /// the rlimit: 2 online CPUs (8 MiB) hold one 4 MiB buffer (and its
    /// control page) and refuse the second at the latest, 4 CPUs (12 MiB)
    /// the third, 5 CPUs (14 MiB) the fourth.
    #[test]
    fn latest_refusals() {
        let buffer = 1025 * 4096;
        let limit = |cpus: u64| cpus * 2048 * 1024 + CHILD_RLIMIT;
        assert_eq!(latest_refusal(limit(2), buffer), 2);
        assert_eq!(latest_refusal(limit(4), buffer), 3);
        assert_eq!(latest_refusal(limit(5), buffer), 4);
        assert_eq!(latest_refusal(limit(1), 0), limit(1) + 1);
    }

    #[test]
    fn configs_are_good_with_their_buffer() {
        let c = config_of(CHILD_BUFFER_PAGES);
        assert_eq!((c.buffer_pages, c.nr_events), (1024, 1));
        assert_eq!(c.size, good_config().size);
    }

    #[test]
    fn child_reports() {
        assert_eq!(child_outcome("ok pinned 3"), Ok("pinned 3".into()));
        assert_eq!(child_outcome("FAIL no EPERM"), Err("no EPERM".into()));
        assert!(child_outcome("").unwrap_err().contains("child's report"));
        assert!(child_outcome("okay").is_err());
    }

    /// A forked child's outcome comes back, failures included.
    #[test]
    fn outcomes_cross_the_fork() {
        assert_eq!(in_child(|| Ok("fine".into())), Ok("fine".into()));
        assert_eq!(in_child(|| Err("bad".into())), Err("bad".into()));
    }
}

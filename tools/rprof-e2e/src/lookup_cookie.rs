//! `lookup-cookie`: `RPROF_IOC_LOOKUP_COOKIE` agrees with the stream.
//!
//! Before any session, LOOKUP_COOKIE on a file gives EINVAL.  Then a short
//! cpu-clock session with this process busy in user mode (so its own
//! executable gets a file cookie), STOP, and the whole stream by `read()`.
//! After STOP, for every COOKIE record of the stream, LOOKUP_COOKIE by the
//! owner returns the same path, flags, device and inode; an unknown cookie
//! gives ENOENT; a 1-byte buffer gives ENAMETOOLONG with `path_len` set to
//! the path's length plus its NUL; another file (not the owner) gets EBUSY.

use crate::checks::{error_name, expect_errno, good_config, open, set_nonblocking, Outcome};
use crate::same_stream::busy_for;
use rprof::Device;
use rprof_decode::{decode_all, Record};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// A cookie no session hands out.
const UNKNOWN_COOKIE: u64 = 0xdead_beef;

/// Reads the stream of a stopped session with non-blocking `read()`s up to
/// its end (FLUSH when nothing is there yet).
pub fn read_stopped_stream(dev: &Device) -> Result<Vec<u8>, String> {
    set_nonblocking(dev)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut stream = Vec::new();
    let mut idle = 0;
    loop {
        match dev.read(&mut buf) {
            Ok(0) => return Ok(stream),
            Ok(n) => {
                stream.extend_from_slice(buf.get(..n).unwrap_or(&buf));
                idle = 0;
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                idle += 1;
                if idle > 100 {
                    return Err(format!(
                        "expected the stopped session's stream to end, got EAGAIN after {} bytes",
                        stream.len()
                    ));
                }
                dev.flush()
                    .map_err(|e| format!("FLUSH failed with {}", error_name(&e)))?;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("read after STOP failed with {}", error_name(&e))),
        }
    }
}

/// Runs `lookup-cookie`.
pub fn run() -> Outcome {
    let dev = open()?;
    let mut one = [0u8; 1];
    expect_errno(
        "LOOKUP_COOKIE without a session",
        dev.lookup_cookie_into(16, &mut one).1,
        &[libc::EINVAL],
    )?;

    dev.set_config(&good_config())
        .map_err(|e| format!("SET_CONFIG failed with {}", error_name(&e)))?;
    dev.start()
        .map_err(|e| format!("START failed with {}", error_name(&e)))?;
    busy_for(Duration::from_millis(300));
    dev.stop()
        .map_err(|e| format!("STOP failed with {}", error_name(&e)))?;
    let bytes = read_stopped_stream(&dev)?;
    let records = decode_all(&bytes).map_err(|e| format!("the stream does not decode: {e}"))?;
    let cookies: Vec<(u64, u16, u64, u64, &str)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Cookie {
                cookie,
                flags,
                dev,
                ino,
                path,
            } => Some((*cookie, *flags, *dev, *ino, path.as_str())),
            _ => None,
        })
        .collect();
    if cookies.is_empty() {
        return Err(format!(
            "expected COOKIE records after 300 ms of user-mode work, got none in {} records",
            records.len()
        ));
    }

    let mut stat_checked = 0;
    for &(cookie, flags, d, ino, path) in &cookies {
        let info = dev.lookup_cookie(cookie).map_err(|e| {
            format!(
                "LOOKUP_COOKIE of cookie {cookie} ({path}) from the stream: expected success, got {}",
                error_name(&e)
            )
        })?;
        let got = String::from_utf8_lossy(&info.path);
        if got != path || info.dev != d || info.ino != ino || info.flags != u32::from(flags) {
            return Err(format!(
                "LOOKUP_COOKIE of cookie {cookie}: expected {path} dev {d:#x} ino {ino} flags {flags:#x} \
                 as in its COOKIE record, got {got} dev {:#x} ino {} flags {:#x}",
                info.dev, info.ino, info.flags
            ));
        }
        // And both must be the file itself, as stat() sees it here (st_dev
        // is new_encode_dev() on 64-bit Linux, as the module reports it).
        if flags == 0 {
            let m = std::fs::metadata(path)
                .map_err(|e| format!("stat of cookie {cookie}'s path {path}: {e}"))?;
            if (m.dev(), m.ino()) != (d, ino) {
                return Err(format!(
                    "cookie {cookie} ({path}): expected dev {:#x} ino {} as stat() gives, \
                     got dev {d:#x} ino {ino}",
                    m.dev(),
                    m.ino()
                ));
            }
            stat_checked += 1;
        }
    }
    if stat_checked == 0 {
        return Err(
            "expected at least one cookie of an ordinary file to check with stat(), got none"
                .into(),
        );
    }

    expect_errno(
        &format!("LOOKUP_COOKIE of unknown cookie {UNKNOWN_COOKIE:#x}"),
        dev.lookup_cookie_into(UNKNOWN_COOKIE, &mut [0u8; 256]).1,
        &[libc::ENOENT],
    )?;

    let (cookie, _, _, _, path) = cookies[0];
    let (arg, result) = dev.lookup_cookie_into(cookie, &mut one);
    expect_errno(
        &format!("LOOKUP_COOKIE of cookie {cookie} into 1 byte"),
        result,
        &[libc::ENAMETOOLONG],
    )?;
    let need = path.len() + 1;
    if arg.path_len as usize != need {
        return Err(format!(
            "LOOKUP_COOKIE into 1 byte: expected path_len {need} (strlen(\"{path}\") + 1), got {}",
            arg.path_len
        ));
    }

    let other = open()?;
    expect_errno(
        "LOOKUP_COOKIE by a file that does not own the session",
        other.lookup_cookie_into(cookie, &mut [0u8; 256]).1,
        &[libc::EBUSY],
    )?;

    Ok(format!(
        "EINVAL without a session; {} cookies of the stream looked up alike (e.g. {cookie} = {path}), \
         {stat_checked} of them the files stat() names; \
         ENOENT for {UNKNOWN_COOKIE:#x}; ENAMETOOLONG with path_len {need} for 1 byte; EBUSY for a non-owner",
        cookies.len()
    ))
}

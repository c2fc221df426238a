//! The speedscope export opened in speedscope itself: the app of its npm
//! package (installed into the cache by scripts/deps.sh), served from
//! localhost and run by Debian's headless Chromium (scripts/deps.sh
//! installs it too).  The schema check in consumers.rs says the file is
//! well formed; this says that the real app loads it and shows the
//! profiles and functions we meant, with the weights we meant.
//!
//! speedscope draws its flame charts with WebGL on a canvas, so the page's
//! text cannot show them; its sandwich view (`#view=sandwich`) is an HTML
//! table of every function with its total and self weight, and its
//! toolbar lists the profiles.  The test reads those from the DOM after
//! the app ran (`--dump-dom` with a virtual time budget, so that the
//! fetch and the rendering finish first), and takes a screenshot of the
//! flame chart (`#view=left-heavy`) to check that something was drawn.

// Helpers of tests: a panic there is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{fixture, rprof, symfs};

/// A file of this run under cargo's temporary directory for tests, where
/// the screenshot stays for a human to look at.
fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("rprof-speedscope-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// speedscope's built app (index.html and its scripts) from its npm
/// package, where scripts/deps.sh installs it (see scripts/common.sh).
fn speedscope_app() -> PathBuf {
    let cache = match std::env::var_os("RPROF_CACHE") {
        Some(c) => PathBuf::from(c),
        None => match std::env::var_os("XDG_CACHE_HOME") {
            Some(x) => PathBuf::from(x).join("rprof"),
            None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/rprof"),
        },
    };
    let app = cache.join("speedscope-1.25.0/node_modules/speedscope/dist/release");
    assert!(
        app.join("index.html").is_file(),
        "{} is missing: scripts/deps.sh installs it",
        app.join("index.html").display()
    );
    app
}

/// Serves, on a free port of 127.0.0.1, `/profile.json` from `profile`
/// and every other file from the flat directory `app`, for as long as the
/// test runs; the port.  speedscope reads `#profileURL=` with `fetch`,
/// which Chromium does not allow on `file://` pages, hence a server.
fn serve(app: PathBuf, profile: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (app, profile) = (app.clone(), profile.clone());
            std::thread::spawn(move || {
                // A connection the browser dropped is not the test's
                // business; what it did not get shows in the page.
                let _ = answer(conn, &app, &profile);
            });
        }
    });
    port
}

/// Answers one GET request on `conn` and closes it.
fn answer(conn: TcpStream, app: &Path, profile: &Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let name = path.trim_start_matches('/');
    let file = if name == "profile.json" {
        Some(profile.to_path_buf())
    } else if !name.is_empty() && !name.contains('/') && !name.starts_with('.') {
        Some(app.join(name))
    } else {
        None
    };
    let body = file.and_then(|f| std::fs::read(f).ok());
    let mut conn = conn;
    match body {
        Some(body) => {
            let kind = match name.rsplit('.').next().unwrap_or("") {
                "html" => "text/html; charset=utf-8",
                "js" => "text/javascript; charset=utf-8",
                "css" => "text/css; charset=utf-8",
                "json" => "application/json",
                "png" => "image/png",
                "ico" => "image/x-icon",
                "woff2" => "font/woff2",
                "wasm" => "application/wasm",
                _ => "application/octet-stream",
            };
            write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            )?;
            conn.write_all(&body)?;
        }
        None => {
            conn.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
        }
    }
    conn.flush()
}

/// The window speedscope is rendered in.
const WIDTH: u32 = 1280;
const HEIGHT: u32 = 800;

/// Runs headless Chromium on `url` with `args` (`--dump-dom`,
/// `--screenshot=...`), letting the page's scripts run for up to ten
/// seconds of virtual time (time stands still while a fetch is pending,
/// so the profile is loaded and drawn by then); its stdout.  A profile
/// speedscope cannot load makes it `alert()`, which headless Chromium
/// waits on for ever: after a minute the run is stopped and the test
/// fails.
fn chromium(args: &[&str], url: &str, name: &str) -> String {
    // Each run its own profile directory: tests run in parallel, and
    // Chromium refuses a profile another instance holds.
    let profile = tmp(&format!("chromium-{name}"));
    let stdout = tmp(&format!("chromium-{name}.out"));
    let stderr = tmp(&format!("chromium-{name}.err"));
    let window = format!("--window-size={WIDTH},{HEIGHT}");
    let user_data = format!("--user-data-dir={}", profile.display());
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // WebGL on the CPU (SwiftShader) for the flame chart, which
            // newer Chromiums no longer fall back to on their own.
            "--enable-unsafe-swiftshader",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
            &window,
            &user_data,
        ])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("chromium: {e} (scripts/deps.sh installs Debian's chromium)"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} {url}: still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "chromium {args:?} {url}: {status}\n{}",
        std::fs::read_to_string(&stderr).unwrap_or_default()
    );
    std::fs::read_to_string(&stdout).unwrap()
}

/// The text of an HTML document: its tags become line breaks, the
/// entities speedscope's text can hold are decoded, and blank lines go.
fn page_text(html: &str) -> Vec<String> {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match (c, in_tag) {
            ('<', _) => {
                in_tag = true;
                text.push('\n');
            }
            ('>', true) => in_tag = false,
            (c, false) => text.push(c),
            _ => {}
        }
    }
    text.lines()
        .map(|l| {
            l.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&nbsp;", " ")
                .replace("&amp;", "&")
                .trim()
                .to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)
/// decoded: its width, height and pixels as RGB.
fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG ({} bytes)",
        bytes.len()
    );
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let (mut width, mut height, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len = be32(&bytes[at..]) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = be32(data);
                height = be32(&data[4..]);
                let (depth, colour, interlace) = (data[8], data[9], data[12]);
                assert!(
                    depth == 8 && matches!(colour, 2 | 6) && interlace == 0,
                    "PNG of depth {depth}, colour type {colour}, interlace {interlace}"
                );
                channels = if colour == 6 { 4 } else { 3 };
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        // Length, type, data, CRC.
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = width as usize * channels;
    assert_eq!(raw.len(), height as usize * (stride + 1), "PNG data size");
    // Undo each scanline's filter (PNG spec, section 9).
    let mut image = vec![0u8; height as usize * stride];
    for y in 0..height as usize {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                image[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 {
                image[(y - 1) * stride + x]
            } else {
                0
            };
            let c = if y > 0 && x >= channels {
                image[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("PNG filter {f}"),
            };
            image[y * stride + x] = line[x].wrapping_add(predicted);
        }
    }
    let pixels = image
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (width, height, pixels)
}

/// `rprof export -f speedscope` of `data` (with `args`) into `json`; the
/// names and units of its profiles.
fn export(data: &Path, json: &Path, args: &[&str]) -> Vec<(String, String)> {
    let (data, json) = (data.to_string_lossy(), json.to_string_lossy());
    let mut all = vec!["export", "-f", "speedscope", "-i", &data, "-o", &json];
    all.extend_from_slice(args);
    rprof(&all);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&*json).unwrap()).unwrap();
    doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap().to_string();
            (s("name"), s("unit"))
        })
        .collect()
}

/// The profile names speedscope's page lists, of those in `names`.
fn listed<'a>(page: &[String], names: &'a [(String, String)]) -> Vec<&'a str> {
    names
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| page.iter().any(|l| l == n))
        .collect()
}

/// speedscope loads the fixture's export and shows it: the profile
/// selector lists one profile per thread named `comm pid/tid (event)`,
/// the heaviest (attr_main's) opened first; the sandwich view's table
/// of functions has main_hot and lib_hot at the top, about 3:1, their
/// weights shown as time (the unit is nanoseconds of cpu-clock: about
/// 1.4 s and 0.4 s of 1 ms samples, where sample counts would show as
/// plain numbers like 1,374); and the flame chart draws coloured frames
/// (the screenshot).
#[test]
fn speedscope_in_chromium_shows_the_fixture() {
    let app = speedscope_app();
    let json = tmp("fixture.speedscope.json");
    let profiles = export(&fixture(), &json, &["--symfs", &symfs().to_string_lossy()]);
    let port = serve(app, json.clone());
    let url = |view: &str| {
        format!("http://127.0.0.1:{port}/index.html#profileURL=profile.json&view={view}")
    };

    let dom = chromium(&["--dump-dom"], &url("sandwich"), "sandwich");
    let text = page_text(&dom);
    let all = text.join("\n");
    let dump = tmp("sandwich.html");
    std::fs::write(&dump, &dom).unwrap();
    println!("speedscope's page (sandwich view): {}", dump.display());

    // The profiles, as the toolbar's selector lists them: every thread
    // of the export, attr_main's main thread first.
    let first = profiles[0].0.as_str();
    let thread = first
        .strip_prefix("attr_main ")
        .and_then(|s| s.strip_suffix(" (cpu-clock@999)"))
        .unwrap_or_else(|| panic!("the first profile is {first:?}"));
    let (pid, tid) = thread
        .split_once('/')
        .unwrap_or_else(|| panic!("no pid/tid in {first:?}"));
    assert!(
        pid.parse::<u32>().is_ok_and(|p| p > 0) && tid.parse::<u32>().is_ok_and(|t| t > 0),
        "{first:?}"
    );
    assert_eq!(
        listed(&text, &profiles).len(),
        profiles.len(),
        "speedscope lists {:?} of {profiles:?}:\n{all}",
        listed(&text, &profiles)
    );
    assert!(
        profiles.iter().any(|(n, _)| n.starts_with("swapper/")),
        "no idle profile in {profiles:?}"
    );

    // The sandwich table: after the header "Symbol Name", rows of
    // "TOTAL (PCT%)", "SELF (PCT%)", "NAME", heaviest first.
    let table: Vec<&String> = text
        .iter()
        .skip_while(|l| *l != "Symbol Name")
        .skip(1)
        .collect();
    assert!(
        table.len() >= 6,
        "no sandwich table in speedscope's page:\n{all}"
    );
    let rows: Vec<(&str, &str)> = table
        .chunks_exact(3)
        .map(|r| (r[0].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(rows[0].1, "main_hot", "{all}");
    assert_eq!(rows[1].1, "lib_hot", "{all}");
    // "1.38s (75%)", "392.39ms (21%)": a time, and its share of the
    // profile.
    let seconds = |total: &str| -> f64 {
        let value = total.split_whitespace().next().unwrap_or("");
        let split = value
            .find(|c: char| !c.is_ascii_digit() && c != '.' && c != ',')
            .unwrap_or(value.len());
        let (number, unit) = value.split_at(split);
        let scale = match unit {
            "s" => 1.0,
            "ms" => 1e-3,
            "µs" => 1e-6,
            "ns" => 1e-9,
            _ => panic!("{total:?} is not a time:\n{all}"),
        };
        number.replace(',', "").parse::<f64>().unwrap() * scale
    };
    let (main_hot, lib_hot) = (seconds(rows[0].0), seconds(rows[1].0));
    assert!(
        (1.0..2.0).contains(&main_hot) && (0.2..0.7).contains(&lib_hot),
        "main_hot {main_hot} s, lib_hot {lib_hot} s:\n{all}"
    );
    let ratio = main_hot / lib_hot;
    assert!(
        (2.25..=3.75).contains(&ratio),
        "main_hot:lib_hot = {ratio}\n{all}"
    );

    // The flame chart, as a picture.
    let png = tmp("left-heavy.png");
    let _ = std::fs::remove_file(&png);
    let shot = format!("--screenshot={}", png.display());
    chromium(&[&shot], &url("left-heavy"), "left-heavy");
    println!("speedscope's flame chart: {}", png.display());
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot {}: {e}", png.display()));
    let (w, h, pixels) = decode_png(&bytes);
    assert_eq!((w, h), (WIDTH, HEIGHT), "{}", png.display());
    // Frames are drawn in colour; the page around them (and any error
    // message) is white, black and grey.  The root frame spans the whole
    // chart, so some lines of pixels are in colour from edge to edge.
    let in_colour = |p: &[u8; 3]| p.iter().max().unwrap() - p.iter().min().unwrap() > 40;
    let coloured = pixels.iter().filter(|p| in_colour(p)).count();
    let full_lines = pixels
        .chunks_exact(w as usize)
        .filter(|line| line.iter().filter(|p| in_colour(p)).count() * 10 >= line.len() * 9)
        .count();
    let mut colours: Vec<[u8; 3]> = pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    println!(
        "{coloured} of {} pixels in colour, {full_lines} lines in colour across, {} colours",
        pixels.len(),
        colours.len()
    );
    assert!(
        coloured * 20 > pixels.len() && full_lines >= 10 && colours.len() > 16,
        "{}: {coloured} of {} pixels in colour, {full_lines} lines in colour \
         across, {} colours: no flame chart",
        png.display(),
        pixels.len(),
        colours.len()
    );
}

/// The fixture made a two-event recording: every second sample becomes a
/// `cycles:100000` sample.
fn two_event_recording() -> PathBuf {
    let path = tmp("two-events.data");
    common::two_event_recording(&path);
    path
}

/// A two-event recording exports to profiles of one event each: by
/// default every event, the cpu-clock ones (time, the first event)
/// first, then the cycles ones (plain counts); with `--event 1` only
/// the cycles ones.  speedscope lists every one of them.
#[test]
fn speedscope_in_chromium_lists_each_event_apart() {
    let app = speedscope_app();
    let data = two_event_recording();
    let json = tmp("two-events.speedscope.json");
    let profiles = export(&data, &json, &["--symfs", &symfs().to_string_lossy()]);
    let event_of = |(name, unit): &(String, String)| {
        if name.ends_with(" (cpu-clock@999)") && unit == "nanoseconds" {
            0
        } else if name.ends_with(" (cycles:100000)") && unit == "none" {
            1
        } else {
            panic!("profile {name:?} of unit {unit:?}")
        }
    };
    let events: Vec<u32> = profiles.iter().map(event_of).collect();
    assert!(
        events.contains(&0) && events.contains(&1) && events.windows(2).all(|w| w[0] <= w[1]),
        "{profiles:?}"
    );
    let only = export(
        &data,
        &tmp("cycles.speedscope.json"),
        &["--symfs", &symfs().to_string_lossy(), "--event", "1"],
    );
    assert!(
        !only.is_empty() && only.iter().all(|p| event_of(p) == 1),
        "{only:?}"
    );

    let port = serve(app, json);
    let url = format!("http://127.0.0.1:{port}/index.html#profileURL=profile.json&view=sandwich");
    let page = page_text(&chromium(&["--dump-dom"], &url, "two-events"));
    assert_eq!(
        listed(&page, &profiles).len(),
        profiles.len(),
        "speedscope lists {:?} of {profiles:?}:\n{}",
        listed(&page, &profiles),
        page.join("\n")
    );
}

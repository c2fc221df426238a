//! Trial failures of the host tests, to prove that `make check` goes red.
//!
//! `RPROF_INJECT=host-abort make check` (or `make host-test`) makes this
//! test binary abort in the middle of its run, as a test that crashes
//! would: cargo prints no `test result` line for it, and the harness
//! (tests/harness/summarize.py) must fail the run and name this binary.
//! The variable is read when the test runs, so the normal build is the
//! same binary and its test passes.

/// The trial failures the harness knows (README.md, "Trial runs").
const KNOWN: &[&str] = &["kunit-fail", "warn", "host-abort", "guest-hang"];

/// Aborts under `RPROF_INJECT=host-abort`; fails under an unknown value,
/// so a misspelt trial run does not pass for a real one.
#[test]
fn injected_failures() {
    match std::env::var("RPROF_INJECT").as_deref() {
        Err(_) | Ok("") => {}
        Ok("host-abort") => {
            eprintln!("RPROF_INJECT=host-abort: aborting this test binary");
            std::process::abort();
        }
        Ok(other) => assert!(
            KNOWN.contains(&other),
            "RPROF_INJECT={other} is not a known trial failure (known: {KNOWN:?})"
        ),
    }
}

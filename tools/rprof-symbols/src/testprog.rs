//! For tests (here and in the crates that use this one): a small C
//! program with DWARF, built with the host's `cc`.

// Test support: a failure to build the program is the test's failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `dir/SOURCE` (a loop in `function`, `static` if `local`, called
/// by `main`) and builds it with `-O2 -g` and a build-id, plus `cflags`,
/// into `dir/OUT`; panics if that fails.
pub fn build_c(
    dir: &Path,
    source: &str,
    out: &str,
    function: &str,
    local: bool,
    cflags: &[&str],
) -> PathBuf {
    let src = dir.join(source);
    let storage = if local { "static " } else { "" };
    std::fs::write(
        &src,
        format!(
            "volatile unsigned long sink;\n\
             {storage}__attribute__((noinline)) void {function}(unsigned long n)\n\
             {{\n\
             \tfor (unsigned long i = 0; i < n; i++)\n\
             \t\tsink += i;\n\
             }}\n\
             int main(int argc, char **argv)\n\
             {{\n\
             \t{function}((unsigned long)argc);\n\
             \treturn 0;\n\
             }}\n"
        ),
    )
    .unwrap();
    let bin = dir.join(out);
    let mut cmd = Command::new("cc");
    cmd.args(["-O2", "-g", "-Wl,--build-id"])
        .args(cflags)
        .arg("-o")
        .arg(&bin)
        .arg(&src);
    let st = cmd.status().unwrap();
    assert!(st.success(), "{cmd:?} failed");
    bin
}

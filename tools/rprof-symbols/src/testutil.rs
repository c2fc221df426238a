//! Helpers shared by the unit tests.

/// A fresh, empty directory for a test, named after `what` and `name`
/// and this process.
pub(crate) fn test_dir(what: &str, name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rprof-{what}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Makes a FIFO at `path` (for the tests that it is never opened).
pub(crate) fn mkfifo(path: &std::path::Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

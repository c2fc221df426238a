//! Compiles the kernel's `src/sampling/ring.rs` against loom's atomics: the file
//! switches on `cfg(loom)`, which this crate always sets.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
    println!("cargo::rustc-cfg=loom");
    println!("cargo::rerun-if-changed=../../src/sampling/ring.rs");
}

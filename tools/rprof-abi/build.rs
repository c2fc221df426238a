//! Generates the Rust bindings of `include/uapi/linux/rprof.h`.
//!
//! The header is the single source of truth of rprof's ABI: every structure,
//! enum constant and plain `#define` named `rprof_*`/`RPROF_*` comes from it.
//! It includes `<linux/types.h>` and `<linux/ioctl.h>`, which come from the
//! host's system headers (Debian's `linux-libc-dev`).

use std::env;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let header = manifest_dir.join("../../include/uapi/linux/rprof.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-changed=build.rs");

    let Some(out_dir) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("rprof-abi: OUT_DIR is not set (not run by Cargo?)");
        return ExitCode::FAILURE;
    };

    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .allowlist_type("(rprof|RPROF)_.*")
        .allowlist_var("(rprof|RPROF)_.*")
        // The ioctl numbers are function-like macro uses that bindgen does
        // not evaluate; `lib.rs` computes them.  Keep the names free for it
        // should a future bindgen learn to.
        .blocklist_item(
            "RPROF_IOC_(GET_VERSION|SET_CONFIG|START|STOP|FLUSH|GET_STATS|LOOKUP_COOKIE|RESET_COOKIES|ADD_UNWIND)",
        )
        // Enum constants keep their C names (`RPROF_RECORD_SAMPLE`), typed
        // by the enum's alias (`rprof_record_type`, a `u32`).
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        // Arrays longer than 32 have no `Default`, and bindgen would write
        // an `unsafe` zeroing impl for `rprof_module`; `lib.rs` has a safe one.
        .no_default("rprof_module")
        .derive_debug(true)
        .derive_copy(true)
        .derive_partialeq(true)
        .derive_eq(true)
        .use_core()
        .ctypes_prefix("core::ffi")
        .layout_tests(true)
        .formatter(bindgen::Formatter::None)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate();
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "rprof-abi: bindgen failed on {}: {e} (is libclang-dev installed?)",
                header.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let out = out_dir.join("rprof.rs");
    if let Err(e) = bindings.write_to_file(&out) {
        eprintln!("rprof-abi: cannot write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

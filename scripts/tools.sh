#!/usr/bin/env bash
# Builds the userspace tools as static binaries for the busybox guest.
# --target keeps crt-static away from build scripts and proc macros.
. "$(dirname "$0")/common.sh"
cd "$RPROF_TOP/tools"
RUSTFLAGS="-C target-feature=+crt-static" \
	cargo build --release --locked --target x86_64-unknown-linux-gnu --bins

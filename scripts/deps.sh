#!/usr/bin/env bash
# Installs what building and testing rprof needs on a Debian 12 machine:
# Debian packages (kernel source, Rust for the kernel, QEMU, busybox) and
# bindgen from crates.io (Debian's is too old for Linux 6.12).  golang-go
# (go tool pprof) and binutils (addr2line) check the pprof export in the
# host tests, python3-jsonschema and speedscope's published schema (the
# npm package, into the cache) the speedscope export, and chromium runs
# that package's app headless to see the export rendered.  linux-perf is
# the guest's perf: the oracle of the call-chain tests (48-unwind) and the
# other profiler of make bench.
# Idempotent: installs only what is missing.
. "$(dirname "$0")/common.sh"

PKGS=(linux-source-6.12 rustc-web rust-web-src libclang-dev clang lld llvm
	qemu-system-x86 busybox-static cpio flex bison bc libelf-dev libssl-dev
	kmod xz-utils python3 gcc g++ gcc-multilib make golang-go binutils python3-jsonschema
	chromium linux-perf)
# npm, unless a Node.js installation already brings it.
command -v npm >/dev/null || PKGS+=(npm)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	msg "installing Debian packages: ${missing[*]}"
	SUDO=
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! [ -x "$KERNEL_BINDGEN" ]; then
	msg "installing bindgen-cli $BINDGEN_VERSION into $BINDGEN_ROOT"
	cargo install --locked --quiet --root "$BINDGEN_ROOT" bindgen-cli --version "$BINDGEN_VERSION"
fi

SPEEDSCOPE_SCHEMA=$SPEEDSCOPE_ROOT/node_modules/speedscope/dist/release/file-format-schema.json
if ! [ -f "$SPEEDSCOPE_SCHEMA" ]; then
	msg "installing speedscope $SPEEDSCOPE_VERSION (its file format schema) into $SPEEDSCOPE_ROOT"
	npm install --no-audit --no-fund --silent --prefix "$SPEEDSCOPE_ROOT" "speedscope@$SPEEDSCOPE_VERSION"
fi

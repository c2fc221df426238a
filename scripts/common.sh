# shellcheck shell=bash
# Shared settings for rprof's build and test scripts. Source it; do not run it.
#
# Everything expensive (the test kernel, bindgen) lives in a cache outside the
# checkout so that a second `make check` takes seconds.  Override the location
# with RPROF_CACHE; `make clean-cache` removes it.

set -euo pipefail

RPROF_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RPROF_CACHE=${RPROF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rprof}
RPROF_BUILD=${RPROF_BUILD:-$RPROF_TOP/build}

# The kernel's Rust must be built by Debian's rustc, whose library source
# (rust-web-src) matches it; rustup's toolchain has no rust-src.
KERNEL_RUSTC=/usr/bin/rustc
# The kernel and modules are built with clang (LLVM=1): 6.12 allows Rust
# with KASAN only for a clang-built kernel.  RPROF_LLVM= (empty) builds
# with gcc and no KASAN support.
RPROF_LLVM=${RPROF_LLVM-1}
BINDGEN_VERSION=0.73.2
BINDGEN_ROOT=$RPROF_CACHE/bindgen-$BINDGEN_VERSION
KERNEL_BINDGEN=$BINDGEN_ROOT/bin/bindgen
# speedscope from npm, for the JSON schema of its file format that the
# host tests check the speedscope export against, and for its app, in
# which they open the export (headless Chromium).
SPEEDSCOPE_VERSION=1.25.0
SPEEDSCOPE_ROOT=$RPROF_CACHE/speedscope-$SPEEDSCOPE_VERSION

msg() { printf '[rprof] %s\n' "$*" >&2; }
die() { printf '[rprof] error: %s\n' "$*" >&2; exit 1; }

# kernel_dir prints the cache directory of the test kernel for the current
# linux-source version and configuration fragment.
kernel_dir() {
	local ver hash
	if [ -n "${RPROF_KDIR:-}" ]; then # an explicit test kernel tree
		printf '%s\n' "$RPROF_KDIR"
		return
	fi
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
		die "linux-source-6.12 is not installed (run scripts/deps.sh)"
	hash=$( (cat "$RPROF_TOP/tests/kernel/rprof.config" "$RPROF_TOP/scripts/kernel.sh"
		echo "LLVM=$RPROF_LLVM") | sha256sum | cut -c1-12)
	printf '%s/linux-%s-%s\n' "$RPROF_CACHE" "$ver" "$hash"
}

# kmake runs make in the kernel tree (or against it, with M=) with the
# toolchain the test kernel was built with.
kmake() {
	make RUSTC="$KERNEL_RUSTC" BINDGEN="$KERNEL_BINDGEN" ${RPROF_LLVM:+LLVM=$RPROF_LLVM} "$@"
}

# perf, as Debian's linux-perf installs it: /usr/bin/perf is the 6.1
# binary itself on Debian 12 (older packages had a wrapper script in front
# of perf_X.Y; take the binary if so).
perf_binary() {
	local p
	for p in /usr/bin/perf_* /usr/lib/linux-tools-*/perf /usr/bin/perf; do
		[ -x "$p" ] && [ "$(head -c 4 "$p" | tail -c 3)" = ELF ] && { echo "$p"; return 0; }
	done
	return 1
}

# install_libs ROOT FILE...: the loader and every library ldd names for
# FILE at the same paths in the guest tree ROOT (linux-vdso has no file).
install_libs() {
	local root=$1 f lib
	shift
	# One file at a time: for several, ldd heads each list with "FILE:".
	for f in "$@"; do
		ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
	done | sort -u | while read -r lib; do
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
}

# install_python ROOT: Debian's python3 into the guest tree ROOT, at its
# own path, with the least of its library it needs to start with -S (no
# site): the encodings it imports at startup, os.py and lib-dynload as the
# landmarks by which it finds its prefixes.  A workload of the unwind
# tests (48-unwind): a binary nobody here built, without frame pointers.
install_python() {
	local root=$1 py lib
	# Debian's, not whatever python3 comes first on PATH (a pyenv shim).
	py=$(readlink -f /usr/bin/python3) && [ -x "$py" ] || die "no /usr/bin/python3 (apt-get install python3)"
	lib=$("$py" -S -c 'import os; print(os.path.dirname(os.__file__))')
	mkdir -p "$root$(dirname "$py")" "$root$lib/encodings" "$root$lib/lib-dynload"
	cp -L "$py" "$root$py"
	ln -sf "$(basename "$py")" "$root$(dirname "$py")/python3"
	cp "$lib/os.py" "$root$lib/"
	cp "$lib/encodings/__init__.py" "$lib/encodings/aliases.py" "$lib/encodings/utf_8.py" "$root$lib/encodings/"
	install_libs "$root" "$py"
}

# install_perf ROOT: the host's perf into the guest tree ROOT as
# /usr/bin/perf, with the loader and every library ldd names at the same
# paths.
install_perf() {
	local root=$1 perf
	perf=$(perf_binary) || die "no perf binary (apt-get install linux-perf)"
	mkdir -p "$root/usr/bin"
	cp -L "$perf" "$root/usr/bin/perf"
	install_libs "$root" "$perf"
}

#!/usr/bin/env bash
# Test workloads for the guest (sources in tests/workloads/):
#   workloads.sh build          builds them under $RPROF_BUILD/workloads
#   workloads.sh install ROOT   copies them into the initramfs tree ROOT
#
# The programs are built with the host's gcc and linked dynamically against
# the host's glibc; `install` copies the dynamic loader and the libraries
# they need (as ldd names them) to the same absolute paths in ROOT.  The
# busy module is built against the cached test kernel like rprof.ko
# (scripts/module.sh), in a copy of its sources.  storm, tiny, chains32 and the
# fuzzer (tests/fuzz, /tests/bin/rprof-fuzz) are linked statically.
. "$(dirname "$0")/common.sh"

SRC=$RPROF_TOP/tests/workloads
OUT=$RPROF_BUILD/workloads
# -O1 keeps the hot loops as written; -fno-inline keeps every function a
# symbol of its own; no stripping: the attribution test reads the symbols.
CFLAGS=(-O1 -fno-inline -g -Wall -Wextra)
PROGRAMS=(attr_main short chains stalls nofp cxx rustw)

build() {
	mkdir -p "$OUT"
	gcc "${CFLAGS[@]}" -fPIC -shared -o "$OUT/libattr_lib.so" "$SRC/libattr_lib.c"
	gcc "${CFLAGS[@]}" -o "$OUT/attr_main" "$SRC/attr_main.c" -ldl
	gcc "${CFLAGS[@]}" -o "$OUT/short" "$SRC/short.c"
	gcc "${CFLAGS[@]}" -pthread -o "$OUT/stalls" "$SRC/stalls.c"
	# A fork+exec storm: a spawner and a process as small as can be
	# (static, tiny without a C library).
	gcc "${CFLAGS[@]}" -static -o "$OUT/storm" "$SRC/storm.c"
	gcc "${CFLAGS[@]}" -static -nostdlib -no-pie -fno-stack-protector -o "$OUT/tiny" "$SRC/tiny.c"
	gcc "${CFLAGS[@]}" -static -pthread -o "$OUT/fifo_spin" "$SRC/fifo_spin.c"
	gcc "${CFLAGS[@]}" -static -o "$OUT/exitlat" "$SRC/exitlat.c"
	# Known call chains: frame pointers, no inlining, no tail calls.
	gcc "${CFLAGS[@]}" -fno-omit-frame-pointer -fno-shrink-wrap -fno-optimize-sibling-calls \
		-o "$OUT/chains" "$SRC/chains.c"
	# Known call chains without frame pointers (-O2 as distributions
	# build; noipa in the source keeps every function whole): only the
	# unwind tables find their callers (48-unwind.sh).
	gcc -O2 -fomit-frame-pointer -g -Wall -Wextra -o "$OUT/nofp" "$SRC/nofp.c"
	# C++ as Debian builds it: -O2, so no frame pointers.
	g++ -O2 -g -Wall -Wextra -o "$OUT/cxx" "$SRC/cxx.cpp"
	# Rust as cargo build --release builds it: -O, no frame pointers.
	rustc -O -g --edition 2021 -o "$OUT/rustw" "$SRC/rustw.rs"
	# The same as a 32-bit program (gcc-multilib), static: the guest has
	# no 32-bit C library.
	gcc "${CFLAGS[@]}" -m32 -static -fno-omit-frame-pointer -fno-shrink-wrap -fno-optimize-sibling-calls \
		-o "$OUT/chains32" "$SRC/chains.c"
	gcc -static -O2 -pthread -Wall -Wextra -Werror -I"$RPROF_TOP/include/uapi" \
		-o "$OUT/rprof-fuzz" "$RPROF_TOP"/tests/fuzz/*.c

	local KDIR mod=$OUT/busymod
	KDIR=$("$RPROF_TOP/scripts/kernel.sh")
	mkdir -p "$mod"
	rm -f "$mod"/*.o "$mod"/*.ko "$mod"/.*.cmd
	cp "$SRC/busymod/rprof_busy.c" "$SRC/busymod/rprof_mmhold.c" "$SRC/busymod/Kbuild" "$mod/"
	kmake -s -C "$KDIR" M="$mod" modules >"$mod/build.log" 2>&1 || {
		cat "$mod/build.log" >&2
		die "rprof_busy.ko build failed in $mod"
	}
	grep -E 'warning|error' "$mod/build.log" >&2 || true
	msg "built $OUT/{attr_main,libattr_lib.so,short,stalls,chains,nofp,cxx,rustw,chains32,storm,tiny,fifo_spin,exitlat,rprof-fuzz} and $mod/rprof_{busy,mmhold}.ko"
}

install_into() {
	local root=$1 f
	for f in "${PROGRAMS[@]}" libattr_lib.so busymod/rprof_busy.ko busymod/rprof_mmhold.ko storm tiny fifo_spin exitlat chains32 rprof-fuzz; do
		[ -f "$OUT/$f" ] || die "$OUT/$f is missing (run scripts/workloads.sh build)"
	done
	mkdir -p "$root/tests/bin" "$root/lib"
	for f in "${PROGRAMS[@]}" libattr_lib.so; do
		cp "$OUT/$f" "$root/tests/bin/$f"
	done
	cp "$OUT/busymod/rprof_busy.ko" "$OUT/busymod/rprof_mmhold.ko" "$root/lib/"
	cp "$OUT/storm" "$OUT/tiny" "$OUT/fifo_spin" "$OUT/exitlat" "$OUT/chains32" "$OUT/rprof-fuzz" "$root/tests/bin/"
	# perf: the oracle of the call-chain tests (48-unwind); python3 and
	# its hot loop, one of their workloads.
	install_perf "$root"
	install_python "$root"
	cp "$SRC/pyhot.py" "$root/tests/bin/"
	# The loader and libraries, as ldd resolves them on this host.
	local progs=()
	for f in "${PROGRAMS[@]}" libattr_lib.so; do
		progs+=("$OUT/$f")
	done
	install_libs "$root" "${progs[@]}"
}

case "${1:-}" in
build) build ;;
install) install_into "${2:?usage: workloads.sh install ROOT}" ;;
*) die "usage: workloads.sh build|install ROOT" ;;
esac

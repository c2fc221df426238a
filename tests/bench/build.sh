#!/usr/bin/env bash
# The benchmark's own pieces (sources beside this script):
#   tests/bench/build.sh build KDIR    builds the workload and the floor
#                                      module (against KDIR) under
#                                      $RPROF_BUILD/bench-pieces
#   tests/bench/build.sh install ROOT  copies them, and perf with its
#                                      shared libraries, into the initramfs
#                                      tree ROOT (vm.sh's RPROF_VM_HOOK)
. "$(dirname "$0")/../../scripts/common.sh"

SRC=$RPROF_TOP/tests/bench
OUT=$RPROF_BUILD/bench-pieces

build() {
	local kdir=$1 mod=$OUT/floor
	mkdir -p "$OUT" "$mod"
	# Static: no loader or libraries to carry; -O2, the loop stays a loop
	# (see the asm barrier in work.c); frame pointers, for the call-chain
	# figures (perf -g and rprof -g walk them).
	gcc -O2 -fno-omit-frame-pointer -static -Wall -Wextra -o "$OUT/work" "$SRC/work.c"
	# The same without frame pointers, as distributions build: the
	# call-chain figures of the DWARF modes (rprof's unwind tables, perf
	# --call-graph dwarf), which need none.
	gcc -O2 -fomit-frame-pointer -static -Wall -Wextra -o "$OUT/work-nofp" "$SRC/work.c"
	gcc -O2 -static -Wall -Wextra -o "$OUT/maxrss" "$SRC/maxrss.c"
	rm -f "$mod"/*.o "$mod"/*.ko "$mod"/.*.cmd
	cp "$SRC/floor/rprof_floor.c" "$SRC/floor/Kbuild" "$mod/"
	kmake -s -C "$kdir" M="$mod" modules >"$mod/build.log" 2>&1 || {
		cat "$mod/build.log" >&2
		die "rprof_floor.ko build failed in $mod"
	}
	grep -E 'warning|error' "$mod/build.log" >&2 || true
}

install_into() {
	local root=$1
	for f in work work-nofp maxrss floor/rprof_floor.ko; do
		[ -f "$OUT/$f" ] || die "$OUT/$f is missing (run tests/bench/build.sh build KDIR)"
	done
	mkdir -p "$root/tests/bin" "$root/lib" "$root/usr/bin"
	cp "$OUT/work" "$OUT/work-nofp" "$OUT/maxrss" "$root/tests/bin/"
	cp "$OUT/floor/rprof_floor.ko" "$root/lib/rprof_floor.ko"
	# The settings tests/harness/bench.sh wrote for the guest script.
	[ ! -f "$OUT/bench.conf" ] || cp "$OUT/bench.conf" "$root/tests/bench.conf"
	install_perf "$root"
}

case "${1:-}" in
build) build "${2:?usage: build.sh build KDIR}" ;;
install) install_into "${2:?usage: build.sh install ROOT}" ;;
*) die "usage: tests/bench/build.sh build KDIR | install ROOT" ;;
esac

#!/usr/bin/env bash
# Builds rprof.ko twice against the cached test kernel: the release module
# (build/module/rprof.ko) and the test module with the KUnit suites
# (build/module-kunit/rprof.ko); `module.sh bench` builds the benchmark
# module (build/module-bench/rprof.ko), `module.sh release` the release
# module alone.  Each build runs in a copy of the sources
# so the two configurations never share objects.  RPROF_INJECT=kunit-fail
# or warn builds trial modules that must make `make check` fail.
. "$(dirname "$0")/common.sh"

KDIR=$("$RPROF_TOP/scripts/kernel.sh")

build_one() { # <dir> [make args...]
	local dir=$1
	shift
	mkdir -p "$dir"
	# Copy only what Kbuild needs; rsync-free so busybox-less hosts work.
	rm -rf "$dir/src" "$dir/include"
	cp -r "$RPROF_TOP/src" "$RPROF_TOP/include" "$RPROF_TOP/Kbuild" "$dir/"
	rm -f "$dir"/src/*.o "$dir"/src/.*.cmd "$dir/src/uapi_generated.rs"
	printf 'include $(src)/Kbuild\n' >"$dir/Makefile.kbuild"
	kmake -s -C "$KDIR" M="$dir" CONFIG_RPROF=m "$@" modules >"$dir/build.log" 2>&1 || {
		cat "$dir/build.log" >&2
		die "module build failed in $dir"
	}
	grep -E 'warning|error' "$dir/build.log" >&2 || true
}

if [ "${1:-}" = bench ]; then
	build_one "$RPROF_BUILD/module-bench" RPROF_BENCH=y RPROF_INJECT=
	msg "built $RPROF_BUILD/module-bench/rprof.ko"
	exit 0
fi
build_one "$RPROF_BUILD/module" RPROF_INJECT=
if [ "${1:-}" = release ]; then
	msg "built $RPROF_BUILD/module/rprof.ko"
	exit 0
fi
build_one "$RPROF_BUILD/module-kunit" RPROF_KUNIT=y RPROF_INJECT="${RPROF_INJECT:-}"
msg "built $RPROF_BUILD/module/rprof.ko and $RPROF_BUILD/module-kunit/rprof.ko"

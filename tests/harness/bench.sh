#!/usr/bin/env bash
# `make bench`: what users pay for a profiler, measured in one boot of a
# quiet kernel (tests/bench/README.md says how and why).
#
#  - the benchmark kernel (scripts/bench-kernel.sh, cached), and against
#    it the release module, the bench module (ring microbenchmark and
#    per-stage timing), the floor module and the test workloads, under
#    build/bench/build (apart from the test kernel's build/module*);
#  - perf (Debian's linux-perf, 6.1) with its libraries, the static
#    workload and the floor module go into the guest's initramfs through
#    vm.sh's RPROF_VM_HOOK;
#  - QEMU runs with -icount: guest time follows the instruction count, so
#    the figures do not depend on the load of the host;
#  - on the host, the rate at which a large recording is read, counted
#    and exported (tools/rprof-report/examples/report_rate.rs);
#  - bench_report.py turns the guest's lines into build/bench.json and a
#    table (build/bench/table.md); RPROF_BENCH_README=1 also puts the
#    table into README.md.
#
# Settings (environment): RPROF_BENCH_ITERATIONS (LCG steps of one
# workload copy), RPROF_BENCH_ROUNDS, RPROF_BENCH_FREQS,
# RPROF_BENCH_SCENARIOS, RPROF_BENCH_STAGE_FREQS, RPROF_BENCH_SHIFT (the
# -icount shift), RPROF_BENCH_CHAIN_HZ and RPROF_BENCH_CHAIN_DEPTHS (the
# call-chain runs: recursion depths of the workload, "" for none),
# RPROF_BENCH_SCALE_CPUS (the second boot, with as many vCPUs as the
# largest: "" for none), RPROF_BENCH_SCALE_HZ, RPROF_BENCH_SCALE_ITERATIONS,
# RPROF_BENCH_RATE_FREQS (its rates for the loss-free maximum),
# RPROF_BENCH_EXITLAT_HZ (the exit and exec latency runs' rate, "" for
# none),
# RPROF_BENCH_PROFILE=HZ (instead of the figures: where rprof's time goes,
# perf sampling the guest at HZ while rprof records the workload; see
# tests/bench/README.md).  Figures, never a pass/fail test.
. "$(dirname "$0")/../../scripts/common.sh"

started=$(date +%s)
OUT=$RPROF_BUILD/bench
BUILD=$OUT/build
ITERATIONS=${RPROF_BENCH_ITERATIONS:-300000000}
ROUNDS=${RPROF_BENCH_ROUNDS:-3}
FREQS=${RPROF_BENCH_FREQS:-1000 4000 10000}
SCENARIOS=${RPROF_BENCH_SCENARIOS:-one all}
STAGE_FREQS=${RPROF_BENCH_STAGE_FREQS:-$FREQS}
CHAIN_HZ=${RPROF_BENCH_CHAIN_HZ:-4000}
# Recursion depths that give the workload user chains of about 16 and 64
# frames, the issue's two sizes: depths 12 and 60 gave means of 11.9 and
# 54.8 user frames a chain in the 4739ae5 run (samples land all along the
# recursion, not only at its bottom).
CHAIN_DEPTHS=${RPROF_BENCH_CHAIN_DEPTHS-16 70}
# Exits and execs of sampled processes (issue 29), at this rate ("" for
# none).
EXITLAT_HZ=${RPROF_BENCH_EXITLAT_HZ-4000}
# The scaling boot: 1, 2 and 4 CPUs online of a 4-vCPU guest, a shorter
# workload (each copy a third of the main runs': 4 copies under -icount
# take 4 times as long), and rates up to 40 kHz per CPU.
SCALE_CPUS=${RPROF_BENCH_SCALE_CPUS-1 2 4}
SCALE_HZ=${RPROF_BENCH_SCALE_HZ:-4000}
SCALE_ITERATIONS=${RPROF_BENCH_SCALE_ITERATIONS:-100000000}
RATE_FREQS=${RPROF_BENCH_RATE_FREQS:-10000 20000 40000}
# 2^0 ns of guest time per instruction: a 1 GHz, one-instruction-a-cycle
# CPU (see tests/bench/README.md).
SHIFT=${RPROF_BENCH_SHIFT:-0}
ICOUNT="-icount shift=$SHIFT,sleep=off"

"$RPROF_TOP/scripts/deps.sh"
if ! dpkg-query -W -f='${Status}' linux-perf 2>/dev/null | grep -q 'install ok installed'; then
	msg "installing Debian's linux-perf (perf for the guest)"
	SUDO=
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends linux-perf
fi

BKDIR=$("$RPROF_TOP/scripts/bench-kernel.sh")
mkdir -p "$BUILD"
# Everything below builds against the benchmark kernel: kernel_dir()
# (common.sh) returns RPROF_KDIR when it is set.
export RPROF_KDIR=$BKDIR
RPROF_BUILD=$BUILD "$RPROF_TOP/scripts/module.sh" release >/dev/null
RPROF_BUILD=$BUILD "$RPROF_TOP/scripts/module.sh" bench >/dev/null
RPROF_BUILD=$BUILD "$RPROF_TOP/scripts/workloads.sh" build >/dev/null
RPROF_BUILD=$BUILD "$RPROF_TOP/tests/bench/build.sh" build "$BKDIR"
"$RPROF_TOP/scripts/tools.sh" >/dev/null 2>&1 || "$RPROF_TOP/scripts/tools.sh"
cat >"$BUILD/bench-pieces/bench.conf" <<EOF
ITERATIONS=$ITERATIONS
ROUNDS=$ROUNDS
FREQS="$FREQS"
SCENARIOS="$SCENARIOS"
STAGE_FREQS="$STAGE_FREQS"
CHAIN_HZ=$CHAIN_HZ
CHAIN_DEPTHS="$CHAIN_DEPTHS"
EXITLAT_HZ="$EXITLAT_HZ"
PROFILE_HZ="${RPROF_BENCH_PROFILE:-}"
EOF
built=$(date +%s)

RPROF_BUILD=$BUILD RPROF_VM_HOOK="$RPROF_TOP/tests/bench/build.sh install" RPROF_VM_RENICE=0 \
	RPROF_QEMU_EXTRA="$ICOUNT" RPROF_VM_TIMEOUT=${RPROF_VM_TIMEOUT:-1500} \
	"$RPROF_TOP/tests/harness/vm.sh" bench "$OUT" || msg "the guest run ended with status $? (see $OUT/console.log)"

# The scaling boot, with as many vCPUs as the largest count asked for.
logs="$OUT/results.log"
if [ -n "$SCALE_CPUS" ] && [ -z "${RPROF_BENCH_PROFILE:-}" ]; then
	smp=$(echo "$SCALE_CPUS" | tr ' ' '\n' | sort -n | tail -n 1)
	cat >>"$BUILD/bench-pieces/bench.conf" <<EOF
PHASE=scale
SCALE_CPUS="$SCALE_CPUS"
SCALE_HZ=$SCALE_HZ
SCALE_ITERATIONS=$SCALE_ITERATIONS
RATE_FREQS="$RATE_FREQS"
EOF
	RPROF_BUILD=$BUILD RPROF_VM_HOOK="$RPROF_TOP/tests/bench/build.sh install" RPROF_VM_RENICE=0 \
		RPROF_VM_SMP=$smp RPROF_QEMU_EXTRA="$ICOUNT" RPROF_VM_TIMEOUT=${RPROF_VM_TIMEOUT:-1500} \
		"$RPROF_TOP/tests/harness/vm.sh" bench "$OUT/scale" ||
		msg "the scaling guest ended with status $? (see $OUT/scale/console.log)"
	logs="$logs $OUT/scale/results.log"
fi
booted=$(date +%s)

if [ -n "${RPROF_BENCH_PROFILE:-}" ]; then
	python3 "$RPROF_TOP/tests/harness/bench_profile.py" "$OUT/results.log" \
		"$BUILD/module-bench/rprof.ko" | tee "$OUT/profile.txt"
	msg "make bench (profile): $((booted - started)) s; $OUT/profile.txt"
	exit 0
fi
# On the host: how fast a large recording is read, counted and exported
# (rprof report, and rprofd's decoding), from the test fixture repeated
# to 64 MiB of stream; one "B host" line for bench_report.py.
msg "timing rprof report on a 64 MiB recording (host)"
(cd "$RPROF_TOP/tools" && cargo run -q --release -p rprof-report --example report_rate -- \
	"$RPROF_TOP/tests/fixtures/attr_main.rprof.data" "$RPROF_TOP/tests/fixtures/symfs" 64) \
	>>"$OUT/results.log" || msg "report_rate failed (no host figures)"
# And how fast samples at many distinct addresses are named: 200000 of
# them across rprof's own executable (symbol table, demangling), as
# scripts/tools.sh built it above (a fresh clone has no other).
msg "timing symbolization of 200000 distinct addresses (host)"
(cd "$RPROF_TOP/tools" && cargo run -q --release -p rprof-report --example symbolize_rate -- \
	"$RPROF_TOP/tools/target/x86_64-unknown-linux-gnu/release/rprof" 200000) \
	>>"$OUT/results.log" || msg "symbolize_rate failed (no symbolization figures)"
machine="$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB, $(. /etc/os-release && echo "$PRETTY_NAME")"
python3 "$RPROF_TOP/tests/harness/bench_report.py" $logs \
	--json "$RPROF_BUILD/bench.json" --markdown "$OUT/table.md" \
	${RPROF_BENCH_README:+--readme "$RPROF_TOP/README.md"} \
	--meta "date=$(date -u +%Y-%m-%d)" --meta "machine=$machine" \
	--meta "icount=$ICOUNT" --meta "qemu=$(qemu-system-x86_64 --version | head -n 1)" \
	--meta "build_s=$((built - started))" --meta "guest_s=$((booted - built))"
msg "make bench: $((booted - started)) s (build $((built - started)) s, guest $((booted - built)) s);" \
	"figures in $RPROF_BUILD/bench.json, guest log $OUT/results.log"

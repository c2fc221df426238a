#!/bin/sh
# In the guest (rprof_mode=bench, see guest-init.sh): every figure of
# `make bench`, in one boot of the benchmark kernel.  Lines that start
# with "B " carry the figures (key=value pairs); bench_report.py on the
# host reads them.  The settings come from /tests/bench.conf (written by
# tests/harness/bench.sh):
#   ITERATIONS  LCG steps of one workload copy
#   ROUNDS      rounds of the interleaved runs
#   FREQS       sampling frequencies, Hz per CPU
#   SCENARIOS   "one" (one copy, on CPU 0) and/or "all" (one copy per CPU)
#   STAGE_FREQS frequencies of the per-stage runs (bench module, CPU 0
#               alone)
#   CHAIN_HZ, CHAIN_DEPTHS  the call-chain runs: perf -g against rprof -g
#               (bench module, CPU 0 alone) with the workload's loop that
#               many calls deep; then, on the workload built without
#               frame pointers, perf --call-graph dwarf against rprof's
#               unwind tables (--call-graph dwarf), each against the floor
#               on that workload
#   EXITLAT_HZ  the exit and exec latency runs' rate (bench module, CPU
#               0 alone; empty: none)
#   PHASE=scale the second boot (more vCPUs): SCALE_CPUS CPUs online in
#               turn, the others offline, one workload copy per online CPU
#               of SCALE_ITERATIONS steps: none, floor, perf and rprof at
#               SCALE_HZ, then perf and rprof at each of RATE_FREQS (which
#               of them lose samples); last, rprofd's peak RSS
. /tests/bench.conf
WORK=/tests/bin/work
# Prints the peak RSS of the profiler it runs (tests/bench/maxrss.c).
MAXRSS=/tests/bin/maxrss
PERF=/usr/bin/perf
# rprof's unwind tables' cache (the guest has no $HOME): the first DWARF
# run compiles the workload's table, inside its span.
export RPROF_UNWIND_CACHE=/tmp/unwind-cache
NCPU=$(grep -c '^processor' /proc/cpuinfo)

# In the guest, the microbenchmark module and the release module are both
# named rprof; the floor module rprof_floor.
unload() {
	rmmod "$1" 2>/dev/null || true
}

copies_of() { # scenario
	case $1 in
	one) echo 1 ;;
	all) echo "$NCPU" ;;
	esac
}

# Prints the workload's line with the profiler's figures appended.
# Usage: run_one PROFILER HZ COPIES [DEPTH]
run_one() {
	prof=$1 hz=$2 copies=$3 samples=0 delivered= lost=0 out= frames= stacks= file=0 stream=0 capacity=0
	set -- "$copies" "$ITERATIONS" ${4:+"$4"}
	rm -f /tmp/prof.err
	online=$(grep -c '^processor' /proc/cpuinfo)
	dmesg -c >/dev/null
	case $prof in
	none)
		out=$($WORK "$@")
		;;
	floor)
		insmod /lib/rprof_floor.ko freq="$hz" || echo "B error insmod rprof_floor" >&2
		out=$($WORK "$@")
		rmmod rprof_floor
		samples=$(dmesg | sed -n 's/.*rprof_floor: \([0-9]*\) samples.*/\1/p' | tail -n 1)
		;;
	perf | perf-g | perf-dwarf)
		case $prof in
		perf) g= ;;
		perf-g) g=-g ;;
		perf-dwarf) g="--call-graph dwarf" ;;
		esac
		out=$($MAXRSS $PERF record -a $g -e cpu-clock -F "$hz" -o /tmp/perf.data -- \
			$WORK "$@" 2>/tmp/prof.err)
		file=$(stat -c %s /tmp/perf.data)
		samples=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' /tmp/prof.err | tail -n 1)
		# perf record says nothing of samples its rings dropped; the LOST
		# records in its file do (after the span: not part of the figures).
		lost=$($PERF report -i /tmp/perf.data --stats 2>/dev/null |
			sed -n 's/^ *LOST events: *\([0-9]*\).*/\1/p' | head -n 1)
		capacity=$lost
		rm -f /tmp/perf.data
		;;
	rprof | rprof-g | rprof-dwarf)
		# rprof-g: frame pointers, as perf -g walks them (-g alone takes
		# unwind tables where the module has them); rprof-dwarf: the
		# tables, compiled and uploaded at the start (inside the span).
		case $prof in
		rprof) g= ;;
		rprof-g) g="--call-graph fp" ;;
		rprof-dwarf) g="--call-graph dwarf" ;;
		esac
		out=$($MAXRSS rprof record -a $g -F "$hz" -o /tmp/rprof.data -- \
			$WORK "$@" 2>/tmp/prof.err)
		file=$(stat -c %s /tmp/rprof.data)
		stream=$(sed -n 's/.*rprof: recorded .*, \([0-9]*\) bytes of stream,.*/\1/p' /tmp/prof.err)
		# User frames per chain, from the module's chain counters.
		frames=$(sed -n 's/.*rprof: chains: \([0-9]*\), kernel frames: [0-9]*, user frames: \([0-9]*\),.*/\1 \2/p' /tmp/prof.err |
			awk '$1 > 0 { printf "%.1f", $2 / $1 }')
		stacks=$(sed -n 's/.*rprof: chains: .*distinct stacks: \([0-9]*\).*/\1/p' /tmp/prof.err)
		samples=$(sed -n 's/.*module: samples \([0-9]*\),.*/\1/p' /tmp/prof.err | tail -n 1)
		delivered=$(sed -n 's/.*module: samples [0-9]*, delivered \([0-9]*\),.*/\1/p' /tmp/prof.err | tail -n 1)
		lost=$(sed -n 's/.*module: samples [0-9]*, delivered [0-9]*, lost \([0-9]*\).*/\1/p' /tmp/prof.err | tail -n 1)
		# Of them, for want of room (the rings, the event buffer): what
		# a rate the pipeline cannot keep up with loses.
		capacity=$(sed -n 's/.*module: samples .*(ring \([0-9]*\), buffer \([0-9]*\),.*/\1 \2/p' /tmp/prof.err |
			tail -n 1 | awk '{ print $1 + $2 }')
		# Where a loss happened (ring, buffer, ...), for the log.
		[ "${lost:-0}" = 0 ] || echo "B loss prof=$prof hz=$hz $(grep 'rprof: module:' /tmp/prof.err | tail -n 1)" >&2
		rm -f /tmp/rprof.data
		;;
	esac
	case $out in
	work*) ;;
	*)
		{
			echo "B error prof=$prof hz=$hz: no workload output"
			head -n 20 /tmp/prof.err 2>/dev/null
		} >&2
		;;
	esac
	rss=$(sed -n 's/^maxrss_kb=\([0-9]*\)$/\1/p' /tmp/prof.err 2>/dev/null | tail -n 1)
	echo "$out cpus=$online samples=${samples:-0} delivered=${delivered:-${samples:-0}} lost=${lost:-0} lost_capacity=${capacity:-0} file_bytes=${file:-0} stream_bytes=${stream:-0} maxrss_kb=${rss:-0} user_frames=${frames:-0} stacks=${stacks:-0} max_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate) uptime=$(cut -d" " -f1 /proc/uptime)"
}

cpus_online() { # 0|1: every CPU but CPU 0 off or on
	for f in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -f "$f" ] && echo "$1" >"$f"
	done
}

# The TSC clocksource replaces tsc-early about a second after boot (the
# refined calibration); wait for it so that every figure sees the same
# clock.
for _ in $(seq 50); do
	grep -qx tsc /sys/devices/system/clocksource/clocksource0/current_clocksource && break
	sleep 0.1
done
echo "B info kernel=$(uname -r) cpus=$NCPU clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"perf=$($PERF --version 2>/dev/null | sed 's/perf version //') iterations=$ITERATIONS rounds=$ROUNDS"

# RPROF_BENCH_PROFILE: where rprof's instructions go, seen by perf.  On
# CPU 0 alone, perf samples the guest at PROFILE_HZ while the bench
# module's insmod runs the microbenchmarks (ring push, handler body, the
# drain of user samples: task context, where perf's cpu-clock sees it);
# the samples are counted by symbol+offset ("P" lines;
# tests/harness/bench_profile.py maps them to source lines on the host).
if [ -n "${PROFILE_HZ:-}" ]; then
	cpus_online 0
	dmesg -c >/dev/null
	$PERF record -a -e cpu-clock -F "$PROFILE_HZ" -o /tmp/p.data -- insmod /lib/rprof-bench.ko >/tmp/prof.out 2>&1 ||
		echo "B error profile run: $(tail -n 3 /tmp/prof.out)"
	dmesg | sed -n 's/.*rprof: bench: \([^:]*\): *\([0-9.]*\) ns.*/\1|\2/p' |
		while IFS='|' read -r what ns; do
			echo "B micro run=1 what=$(echo "$what" | tr ' ' _) ns=$ns"
		done
	$PERF script -i /tmp/p.data -F comm,ip,sym,symoff,dso 2>/dev/null |
		awk '{ comm = $1; so = $3; dso = $NF; if (dso == "([unknown])") so = $2; n[comm "|" so "|" dso]++; t++ }
			END { for (k in n) print "P hz=0 n=" n[k] " total=" t " key=" k }' |
		sort -t= -k3 -n -r | head -n 600
	echo "B text base=$(cat /sys/module/rprof/sections/.text)"
	unload rprof
	cpus_online 1
	echo "B done"
	exit 0
fi

# The scaling boot: how the costs grow with the CPUs, the highest rate
# each profiler keeps up with, and the daemon's memory.
if [ "${PHASE:-}" = scale ]; then
	echo "B scaleinfo vcpus=$NCPU hz=$SCALE_HZ iterations=$SCALE_ITERATIONS"
	ITERATIONS=$SCALE_ITERATIONS
	# The rates are the profilers' to keep up with: the kernel's cap
	# raised above the highest tried, and not lowered behind our back
	# when an interrupt runs long (perf_cpu_time_max_percent=0).
	echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
	echo 200000 >/proc/sys/kernel/perf_event_max_sample_rate
	insmod /lib/rprof.ko || echo "B error insmod rprof"
	for n in $SCALE_CPUS; do
		[ "$n" -le "$NCPU" ] || continue
		# CPUs 0 .. n-1 online, the rest offline.
		for f in /sys/devices/system/cpu/cpu[1-9]*/online; do
			i=${f#/sys/devices/system/cpu/cpu}
			i=${i%/online}
			echo $((i < n ? 1 : 0)) >"$f"
		done
		line=$(run_one none 0 "$n")
		echo "B scale prof=none hz=0 ${line#work }"
		for prof in floor perf rprof; do
			line=$(run_one "$prof" "$SCALE_HZ" "$n")
			echo "B scale prof=$prof hz=$SCALE_HZ ${line#work }"
		done
		for hz in $RATE_FREQS; do
			for prof in perf rprof; do
				line=$(run_one "$prof" "$hz" "$n")
				echo "B rate prof=$prof hz=$hz ${line#work }"
			done
		done
	done
	cpus_online 1
	# rprofd (rprof daemon, 1 s profiles) over a workload on every CPU;
	# maxrss passes the SIGTERM on.
	rm -rf /tmp/dd
	$MAXRSS rprof daemon --dir /tmp/dd --interval 1 -F "$SCALE_HZ" 2>/tmp/d.err &
	d=$!
	sleep 3
	$WORK "$NCPU" "$ITERATIONS" >/dev/null
	sleep 2
	kill -TERM $d
	wait $d
	echo "B daemon hz=$SCALE_HZ cpus=$NCPU status=$? maxrss_kb=$(sed -n 's/^maxrss_kb=//p' /tmp/d.err | tail -n 1) profiles=$(ls /tmp/dd | grep -c 'pb.gz$')"
	unload rprof
	echo "B scaledone"
	exit 0
fi

# 1. and 2. run on CPU 0 alone, the other CPUs offline: under -icount
# guest time counts the instructions of every CPU, so a stage timed on one
# CPU would also count what another CPU ran meanwhile.
cpus_online 0

# 1. The ring-write microbenchmark, three loads of the bench module.
for run in 1 2 3; do
	dmesg -c >/dev/null
	insmod /lib/rprof-bench.ko || echo "B error insmod rprof-bench"
	dmesg | sed -n 's/.*rprof: bench: \([^:]*\): *\([0-9.]*\) ns.*/\1|\2/p' |
		while IFS='|' read -r what ns; do
			echo "B micro run=$run what=$(echo "$what" | tr ' ' _) ns=$ns"
		done
	# 2. With the third load: the per-stage cost model, one session per
	# frequency, with the workload alone, under the floor and under perf
	# beside it.
	if [ "$run" = 3 ]; then
		line=$(run_one none 0 1)
		echo "B solo prof=none hz=0 ${line#work }"
		for hz in $STAGE_FREQS; do
			line=$(run_one floor "$hz" 1)
			echo "B solo prof=floor hz=$hz ${line#work }"
			line=$(run_one perf "$hz" 1)
			echo "B solo prof=perf hz=$hz ${line#work }"
			line=$(run_one rprof "$hz" 1)
			echo "B solo prof=rprof-bench hz=$hz ${line#work }"
			dmesg | sed -n 's/.*rprof: bench: stage \([a-z_]*\): \([0-9]*\) runs, \([0-9]*\) ns.*/\1 \2 \3/p' |
				while read -r name runs ns; do
					echo "B stage hz=$hz name=$name runs=$runs ns=$ns"
				done
		done
		# 2b. Call chains: perf -g and rprof -g with the loop DEPTH
		# calls deep, against the floor at the same rate.
		# The DWARF modes run the workload built without frame pointers
		# (floor-nofp is the floor on it).
		for depth in $CHAIN_DEPTHS; do
			for prof in floor perf-g rprof-g floor-nofp perf-dwarf rprof-dwarf; do
				case $prof in
				floor-nofp) WORK=/tests/bin/work-nofp run="floor" ;;
				*-dwarf) WORK=/tests/bin/work-nofp run=$prof ;;
				*) WORK=/tests/bin/work run=$prof ;;
				esac
				line=$(run_one "$run" "$CHAIN_HZ" 1 "$depth")
				echo "B chain prof=$prof hz=$CHAIN_HZ depth=$depth ${line#work }"
				case $prof in rprof-g | rprof-dwarf) ;; *) continue ;; esac
				dmesg | sed -n 's/.*rprof: bench: stage \([a-z_]*\): \([0-9]*\) runs, \([0-9]*\) ns.*/\1 \2 \3/p' |
					while read -r name runs ns; do
						echo "B chainstage prof=$prof hz=$CHAIN_HZ depth=$depth name=$name runs=$runs ns=$ns"
					done
			done
		done
		WORK=/tests/bin/work
		# 2c. Exits and execs of sampled processes (issue 29, item 3):
		# exitlat's children, with 500 idle processes beside them, each
		# touch 16 MiB, spin 20 ms and exit (or exec); the time from
		# exit()/execve() to its end, and until the memory is free again,
		# under no profiler, perf, rprof and rprof holding every address
		# space until the drain (the bench module's pin_mm, as rprof did
		# before it named mappings).
		if [ -n "${EXITLAT_HZ:-}" ]; then
			for mode in exit exec; do
				for prof in none perf rprof rprof-pin; do
					set -- /tests/bin/exitlat 500 20 20 16
					[ "$mode" = exec ] && set -- "$@" exec
					case $prof in
					none) out=$("$@" 2>&1) ;;
					perf) out=$($PERF record -a -e cpu-clock -F "$EXITLAT_HZ" -o /tmp/perf.data -- "$@" 2>/dev/null) ;;
					rprof*)
						[ "$prof" = rprof-pin ] && echo 1 >/sys/module/rprof/parameters/pin_mm
						out=$(rprof record -a -F "$EXITLAT_HZ" -o /tmp/rprof.data -- "$@" 2>/dev/null)
						echo 0 >/sys/module/rprof/parameters/pin_mm
						;;
					esac
					rm -f /tmp/perf.data /tmp/rprof.data
					case $out in
					exitlat* | execlat*) echo "B exitlat mode=$mode prof=$prof hz=$EXITLAT_HZ ${out#* }" ;;
					*) echo "B error exitlat mode=$mode prof=$prof: $(echo "$out" | head -n 3)" ;;
					esac
				done
			done
		fi
	fi
	rmmod rprof
done
cpus_online 1

# 3. The interleaved rounds: every profiler at every frequency in each
# round, on the release module, all CPUs online.
insmod /lib/rprof.ko || echo "B error insmod rprof"
for round in $(seq "$ROUNDS"); do
	for sc in $SCENARIOS; do
		copies=$(copies_of "$sc")
		line=$(run_one none 0 "$copies")
		echo "B run round=$round scenario=$sc prof=none hz=0 ${line#work }"
		for hz in $FREQS; do
			for prof in floor perf rprof; do
				line=$(run_one "$prof" "$hz" "$copies")
				echo "B run round=$round scenario=$sc prof=$prof hz=$hz ${line#work }"
			done
		done
	done
done
unload rprof
echo "B done"

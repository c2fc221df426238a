#!/bin/sh
# Call chains end to end (issue 10): rprof record --call-graph fp (the
# frame-pointer walk; -g takes unwind tables where the module has them, see
# 48-unwind.sh) of programs with known
# chains (tests/workloads/chains.c, frame pointers), checked in the folded
# stacks of `rprof export`; chains deeper than the limit, a program that
# corrupts its frame pointer, kernel chains, and the flat profile with and
# without chains.
. /tests/e2e/lib.sh

J=/tmp/chains.json
json() { # KEY: a field of the last summary
	rprof-e2e json "$1" <$J
}

# folded_split FILE [COMM]: "H A X" for COMM's chains (default chains):
# samples whose leaf is hot, those under main;a;b and those under main;x.
folded_split() {
	awk -v comm="${2:-chains}" '{
		n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (index(s, comm ";") != 1 || s !~ /;hot$/) next
		h += n
		if (s ~ /;main;a;b;hot$/) a += n
		if (s ~ /;main;x;hot$/) x += n
	} END { printf "%d %d %d\n", h, a, x }' "$1"
}

# check_split FOLDED COMM LABEL: COMM's chains of hot reach main (at least
# 90% of them) and split 3:1 within 20% between main;a;b and main;x (two
# checks, named with LABEL in front).
check_split() {
	set -- $(folded_split "$1" "$2") "$3"
	diag "$4hot $1, under main;a;b $2, under main;x $3"
	check "$4at least 90% of hot's $1 samples have their chain down to main ($(($2 + $3)))" \
		test "$1" -gt 100 -a $((10 * ($2 + $3))) -ge $((9 * $1))
	# 3:1 within 20%: a/x in [2.4, 3.6].
	check "$4the two paths split 3:1 within 20% ($2 : $3)" \
		test "$3" -gt 0 -a $((10 * $2)) -ge $((24 * $3)) -a $((10 * $2)) -le $((36 * $3))
}

plan 19
unload
load

# 1. main -> a -> b -> hot and main -> x -> hot at 3:1.
if rprof record --call-graph fp -o /tmp/ch.data -- /tests/bin/chains split 4 >/tmp/ch.out 2>/tmp/ch.err; then
	ok "rprof record --call-graph fp -- chains split 4"
else
	not_ok "rprof record --call-graph fp -- chains split 4"
fi
diag "$(cat /tmp/ch.out /tmp/ch.err)"
rprof export --format folded -i /tmp/ch.data -o /tmp/ch.folded >/tmp/e.out 2>&1
diag "$(grep '^chains;.*;hot ' /tmp/ch.folded | head -5)"
diag "$(rprof report -i /tmp/ch.data --stdio 2>&1 | head -12)"
check_split /tmp/ch.folded chains ""

# The pprof export goes out to the host, where go tool pprof -traces must
# show both chains (tests/harness/guest_pprof.py).
rprof export --format pprof -i /tmp/ch.data -o /tmp/ch.pb.gz >/tmp/pp.out 2>&1
n=$(sed -n 's/.*exported \([0-9]*\) samples.*/\1/p' /tmp/pp.out)
send_file chains.pb.gz /tmp/ch.pb.gz "samples=$n" "chains=hot>b>a>main,hot>x>main"
rprof flamegraph -i /tmp/ch.data -o /tmp/ch.svg >/tmp/fg.out 2>&1
diag "$(cat /tmp/fg.out)"
check "rprof flamegraph draws both paths (b and x under main)" \
	sh -c "grep -q '<title>b (' /tmp/ch.svg && grep -q '<title>x (' /tmp/ch.svg && grep -q '<title>main (' /tmp/ch.svg"

rprof report -g -i /tmp/ch.data --stdio >/tmp/ch.report 2>&1
diag "$(grep -A8 ' hot$' /tmp/ch.report | head -12)"
# hot's entry is followed by its two chains, b's (3/4) before x's.
check "rprof report -g: hot's callers b then x, with main above both" \
	sh -c "awk '/ hot\$/{f=1} f' /tmp/ch.report | head -12 | tr -d ' ' | tr '\n' ' ' | grep -q -- '---hot |--[0-9.]*%--b |a |main.* |--[0-9.]*%--x |main'"

# rprof script prints each sample's frames, leaf first.
rprof script -i /tmp/ch.data >/tmp/ch.script 2>&1
diag "$(grep -m1 -B1 -A4 -E '^[[:space:]]+[0-9a-f]+ hot \(' /tmp/ch.script)"
check "rprof script: samples in hot list their callers b, a, main in order" \
	sh -c "grep -A3 -E '^[[:space:]]+[0-9a-f]+ hot \(' /tmp/ch.script | tr -s ' \t' '  ' | cut -d' ' -f3 | tr '\n' ' ' | grep -q 'hot b a main'"

# 1b. The same program built 32-bit (a compat task): its frame records
# are 32-bit words, walked as such, and its ELF32 symbols name them.
rprof record --call-graph fp -o /tmp/ch32.data -- /tests/bin/chains32 split 4 >/tmp/ch32.out 2>&1
diag "$(cat /tmp/ch32.out)"
rprof export --format folded -i /tmp/ch32.data -o /tmp/ch32.folded >/dev/null 2>&1
diag "$(grep '^chains32;' /tmp/ch32.folded | awk '{ print $NF, $0 }' | sort -nr | head -4)"
check_split /tmp/ch32.folded chains32 "32-bit program: "
/tests/bin/chains32 split 3 >/dev/null &
pid=$!
rprof dump -g -e cpu-clock@1000 -d 2 --quiet --summary-json >$J
wait $pid
diag "$(cat $J)"
check "32-bit program: user frames walked, no user side skipped" \
	test "$(json stats.chains.user_frames)" -gt 0 -a "$(json stats.chains.user_skipped)" -eq 0
check "... and the accounting is exact" sh -c "rprof-e2e lost-invariant <$J"

# 2. The flat profile is the same without chains: hot's share of chains'
# user samples (percent) within 5 points.  Its kernel samples (the tick,
# softirqs, page faults: slow and uneven under TCG with KASAN, 7% of its
# samples in one run and 21% in the next) are left out of both.
share() { # FOLDED: "H K": hot's percent of comm chains' user samples, and
	# the percent of its samples in the kernel
	# A kernel or module leaf: "sym_[k]" in a chain; in a flat profile
	# "[kernel.kallsyms];sym" or "[MODULE];sym" for a loaded module.
	kdsos="kernel\\.kallsyms$(cut -d' ' -f1 /proc/modules | sed 's/^/|/' | tr -d '\n')"
	awk -v kdsos="$kdsos" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (index(s, "chains;") != 1) next
		a += n
		if (s ~ /_\[k\]$/ || s ~ ("^chains;\\[(" kdsos ")\\];[^;]*$")) { k += n; next }
		t += n; if (s ~ /;hot$/) h += n
	} END { if (t) printf "%d %d\n", 100 * h / t, 100 * k / a; else print "0 0" }' "$1"
}
rprof record -o /tmp/flat.data -- /tests/bin/chains split 4 >/dev/null 2>&1
rprof export --format folded -i /tmp/flat.data -o /tmp/flat.folded >/dev/null 2>&1
set -- $(share /tmp/ch.folded) $(share /tmp/flat.folded)
with=$1 without=$3
diag "chains' samples in the kernel: $2% with chains, $4% without"
diag "$(grep '^chains;' /tmp/flat.folded | awk '{ print $NF, $0 }' | sort -nr | head -6)"
check "the same flat profile with and without chains: hot $with% and $without% of chains' user samples" \
	test "$without" -ge 80 -a $((with - without)) -le 5 -a $((without - with)) -le 5

# 3. Recursion 200 deep, beyond the 127-frame limit: chains cut and
# flagged, nothing else lost.
/tests/bin/chains deep 3 >/dev/null &
pid=$!
rprof dump -g -e cpu-clock@1000 -d 2 --quiet --summary-json >$J
wait $pid
diag "$(cat $J)"
check "deep recursion: chains cut at the limit are counted as truncated" \
	test "$(json stats.chains.truncated)" -gt 0
check "... and the accounting is exact" sh -c "rprof-e2e lost-invariant <$J"
check "... every delivered sample names a stack" \
	test "$(json samples_with_stack)" -eq "$(json samples)"

# 4. A program that spins with a bad frame pointer (unmapped, a kernel
# address, misaligned, itself): the walks end with FAULT or BAD_FP, no
# splat, exact accounting.
/tests/bin/chains badfp 3 >/dev/null &
pid=$!
rprof dump -g -e cpu-clock@1000 -d 2 --quiet --summary-json >$J
wait $pid
diag "$(cat $J)"
check "bad frame pointers: walks end on a fault or a bad frame pointer" \
	test $(($(json stats.chains.user_fault) + $(json stats.chains.user_bad_fp))) -gt 0
check "... and the accounting is exact" sh -c "rprof-e2e lost-invariant <$J"

# 5. Kernel chains: reading /dev/zero spends its time under read(), whose
# kernel callers come in order.
dd if=/dev/zero of=/dev/null bs=65536 count=200000 2>/dev/null &
pid=$!
rprof record --call-graph fp -a -d 2 -o /tmp/k.data >/dev/null 2>&1
kill $pid 2>/dev/null
wait $pid 2>/dev/null
rprof export --format folded -i /tmp/k.data -o /tmp/k.folded >/dev/null 2>&1
diag "$(grep '^dd;.*vfs_read' /tmp/k.folded | head -3)"
check "kernel chains: dd's samples show ksys_read calling vfs_read" \
	grep -q '^dd;.*ksys_read_\[k\];vfs_read_\[k\]' /tmp/k.folded

# 6. Chains off: GET_STATS says no chain was taken.
rprof dump -e cpu-clock@1000 -d 1 --quiet --summary-json >$J
check "without -g no chain is taken" test "$(json stats.chains.chains)" -eq 0 -a "$(json stacks)" -eq 0

check "the module unloads cleanly after all that" rmmod rprof
done_testing

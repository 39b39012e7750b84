#!/bin/bash
# passthrough.sh BUILD_DIR [ROUNDS] - per-call cost of the passthrough preload.
#
# Alternates plain and preloaded runs of bench/passthrough (1-byte write+read
# on TCP loopback), prints the medians and their ratio.  With valgrind
# installed, also the ratio of instructions executed in user space per pair
# (repeatable, unlike time on a shared machine).  A benchmark, not a test.
set -eu
build=$(cd "${1:?usage: $0 BUILD_DIR [ROUNDS]}" && pwd)
rounds=${2:-7}
prog=$build/bin/bench_passthrough
lib=$build/lib/libsmcr.so

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

plain=() smcr=()
for _ in $(seq "$rounds"); do
	plain+=("$("$prog")")
	smcr+=("$(LD_PRELOAD=$lib "$prog")")
done
p=$(printf '%s\n' "${plain[@]}" | median)
s=$(printf '%s\n' "${smcr[@]}" | median)
echo "write+read pair, median of $rounds: plain $p ns, libsmcr $s ns, ratio $(awk "BEGIN {printf \"%.3f\", $s / $p}")"

if command -v valgrind > /dev/null; then
	count() {
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 |
			sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
	}
	n=20000
	ip=$(count "$prog" $n)
	is=$(LD_PRELOAD=$lib count "$prog" $n)
	ip0=$(count "$prog" 0)
	is0=$(LD_PRELOAD=$lib count "$prog" 0)
	awk "BEGIN {p = ($ip - $ip0) / $n; s = ($is - $is0) / $n;
		printf \"user-space instructions per pair: plain %.1f, libsmcr %.1f (+%.1f)\n\", p, s, s - p}"
fi

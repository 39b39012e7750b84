#!/bin/bash
# many.sh BUILD_DIR [RUNS] - epoll_wait beside 5,000 idle connections, in a
# qemu guest, where RLIMIT_NOFILE can be raised: on a host whose hard limit
# is too low for them (each shared-memory connection end costs smcrd 4
# descriptors, tests/bench/epoll_idle.sh says why) they can still be
# measured.
#
# Boots one guest (runvm.sh, guest-setup.sh with rxe on a veth; VM_MEM 2G),
# raises the hard limit to 1,048,576 as the guest's root may, and runs
# tests/bench/epoll_idle.sh BUILD_DIR RUNS over shared memory on the
# guest's loopback, with a 5 s warm-up (SMCR_BENCH_WARMUP): a TCG guest
# takes seconds to look 256 times at 5,000 new members, after which they
# go quiet (epoll_idle.sh's Warm-up).  Its table goes to OUT (default
# BUILD_DIR/vm-many)/epoll_idle.txt, and is printed.  TCG runs every
# instruction in software, so only the ratios within the guest mean
# anything.  nginx with thousands of connections (compare.sh's nginx-many)
# is not measured here: in TCG, preloaded, 867 to 1,001 of wrk's 1,000
# connections were accepted within its 10 s run, and wrk failed.  A benchmark, not a test (CI never runs it).  About 10
# minutes with RUNS = 3 on a two-core host; nothing else should run then.
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR [RUNS]}" && pwd)
runs=${2:-3}
case $runs in '' | *[!0-9]* | 0) echo "usage: $0 BUILD_DIR [RUNS] (RUNS: a positive number)" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/../bench" && pwd)
out=${OUT:-$build/vm-many}
export VM_CACHE=${VM_CACHE:-/var/tmp/smcr-vm} VM_MEM=${VM_MEM:-2G}
export VM_TIMEOUT=${VM_TIMEOUT:-$((600 * runs))}

mkdir -p "$out"
rm -f "$out/epoll_idle.txt"
job="ulimit -Hn 1048576 && ulimit -n 1048576 && SMCR_BENCH_WARMUP=5 \
	$(printf '%q' "$bench/epoll_idle.sh") $(printf '%q' "$build") $runs > /out/epoll_idle.txt 2>&1"
rc=0
"$here/runvm.sh" "$out" "$here/guest-setup.sh" rxe veth 10.9.0.1/24 bash -c "$job" || rc=$?
cat "$out/epoll_idle.txt" 2> /dev/null || echo "(no output: see $out/console.log)"
exit "$rc"

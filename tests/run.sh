#!/bin/bash
# run.sh - install what is missing, build, and run every test.
#
# Four builds: Release (everything, integration tests with real programs),
# ASan+UBSan and TSan (the unit tests and the stress-like integration tests
# under the sanitizers) and clang with libFuzzer
# (the wire decoders, smcrd's control requests and a connection's CDCs,
# fuzzed for 20 s each).  Then the Release build again in
# qemu guests with soft RDMA devices (tests/vm/run.sh, a few minutes).
# Every stage runs even when an earlier one failed (a stage whose build
# failed fails too); the end lists the failed stages, and the exit status
# is 1 if there is any.  A ctest selection that matches no test fails
# (--no-tests=error): a renamed test cannot empty a stage unnoticed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
failed=()

# stage NAME COMMAND...: runs one stage and records whether it failed.
stage() {
	local name=$1 t0=$SECONDS
	shift
	echo "=== stage $name"
	if "$@"; then
		echo "=== stage $name: passed ($((SECONDS - t0)) s)"
	else
		echo "=== stage $name: FAILED ($((SECONDS - t0)) s)"
		failed+=("$name")
	fi
}

# build DIR CMAKE_ARGS...: configures and builds DIR (all targets).
build() {
	local dir=$1
	shift
	cmake -S . -B "$dir" "$@" > /dev/null && cmake --build "$dir" -j"$jobs"
}

ctest_in() { ctest --test-dir "$@" --no-tests=error --output-on-failure; }

tools/install-deps.sh --test --vm || exit 1

stage build build build -DCMAKE_BUILD_TYPE=Release
stage build-asan build build-asan -DCMAKE_BUILD_TYPE=Debug -DSMCR_SANITIZE=ON
stage unit-asan ctest_in build-asan -L unit

build_fuzz() {
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DSMCR_FUZZ=ON > /dev/null &&
		cmake --build build-fuzz -j"$jobs" --target write_seeds fuzz_clc fuzz_cdc fuzz_control fuzz_cdc_seq \
			fuzz_clc_seq fuzz_shm_peer fuzz_filter
}
stage build-fuzz build_fuzz
stage fuzz ctest_in build-fuzz -L fuzz

stage tests ctest_in build -j"$jobs"

# The Debian package: built, linted, installed, used with the installed
# files only, removed and purged (tests/package/run.sh).
stage package tests/package/run.sh

# The integration tests that stress libsmcr hardest, again with the preload
# built under ASan+UBSan, most over shared memory with smcrd.  The tests
# preload the ASan runtime in front of it (lib.sh's $PRELOAD); smcr_run,
# which does not, needs ASan told not to check that it comes first.  ftp
# is not among them: curl, with GCC 12's ASan runtime preloaded (libsmcr
# or not), waits for ever on glibc's lock in its first setlocale().
stage integration-asan env ASAN_OPTIONS=verify_asan_link_order=0 \
	ctest --test-dir build-asan --no-tests=error --output-on-failure \
	-R 'integration\.(transparency|semantics|fork|forkserver|closefrom|dispatch|sharedconn|stress|handover|handover_uid|late_peer|kill|budget|subprocess|exec_close|raw_clone|first_calls|fork_counted|spawn_offers|inherited_filter|leave_confined|leave_both|used_then_forked|sandbox_race|exit_send|(fork|socat|redis|iperf3|sockperf|idle_conns)-shm)$|adversarial\.(state_lock|forged_leave)$'

# And under ThreadSanitizer: the unit tests, and the integration tests whose
# programs are ours (TSan must be in the program: python or socat cannot
# load a TSan libsmcr).
stage build-tsan build build-tsan -DCMAKE_BUILD_TYPE=Debug -DSMCR_TSAN=ON
stage tsan ctest_in build-tsan -R '^unit\.|integration\.(transparency|semantics|fork|fork-shm|stress)$'

stage vm tests/vm/run.sh build

echo "=== tests/run.sh: ${#failed[@]} failed stage(s)${failed[*]:+: ${failed[*]}}"
[ ${#failed[@]} = 0 ]

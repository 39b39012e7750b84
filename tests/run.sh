#!/bin/bash
# run.sh - install what is missing, build, and run every test.
#
# Four builds: Release (everything, integration tests with real programs),
# ASan+UBSan and TSan (the unit tests and the stress-like integration tests
# under the sanitizers) and clang with libFuzzer
# (the wire decoders fuzzed for 20 s each).  Then the Release build again in
# qemu guests with soft RDMA devices (tests/vm/run.sh, a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

tools/install-deps.sh --test --vm

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSMCR_SANITIZE=ON > /dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan -L unit --no-tests=error --output-on-failure

cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DSMCR_FUZZ=ON > /dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_clc fuzz_cdc
ctest --test-dir build-fuzz -L fuzz --output-on-failure

ctest --test-dir build --no-tests=error --output-on-failure -j"$jobs"

# The integration tests that stress libsmcr hardest, again with the preload
# built under ASan+UBSan (fork-shm and socat-shm: over shared memory, with
# smcrd).  The programs load it before their own ASan runtime (or have
# none), which ASan accepts when told not to check.
ASAN_OPTIONS=verify_asan_link_order=0 ctest --test-dir build-asan --no-tests=error --output-on-failure \
	-R 'integration\.(transparency|fork|fork-shm|socat-shm|stress|handover)$'

# And under ThreadSanitizer: the unit tests, and the integration tests whose
# programs are ours (TSan must be in the program: python or socat cannot
# load a TSan libsmcr).
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSMCR_TSAN=ON > /dev/null
cmake --build build-tsan -j"$jobs"
ctest --test-dir build-tsan --no-tests=error --output-on-failure \
	-R '^unit\.|integration\.(transparency|fork|fork-shm|stress)$'

tests/vm/run.sh build

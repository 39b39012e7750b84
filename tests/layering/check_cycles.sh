#!/bin/bash
# check_cycles.sh BUILD_DIR - no two files of one program call each other,
# directly or round a ring: for libsmcr.so, smcrd and smcrctl (each with
# the common library), tools/dev/depgraph.sh --cycles over their objects.
set -u -o pipefail
[ $# = 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$1 depgraph=$(dirname "$0")/../../tools/dev/depgraph.sh failed=0
objects() { find "$@" -name '*.c.o' ! -name '*embedded*'; }
check() {
	local name=$1; shift
	if out=$("$depgraph" --cycles $(objects "$@")); then
		echo "ok: no cycles between the files of $name"
	else
		echo "FAIL: files of $name that call each other:"; echo "$out" | sed 's/^/  /'
		failed=1
	fi
}
common=$build/common/CMakeFiles/smcr_common.dir
check libsmcr.so "$build"/libsmcr/CMakeFiles/smcr*.dir "$common"
check smcrd "$build/smcrd/CMakeFiles/smcrd.dir" "$common"
check smcrctl "$build/tools/CMakeFiles/smcrctl.dir" "$common"
exit $failed

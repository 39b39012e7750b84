#!/bin/bash
# docs.sh BUILD_DIR - the man pages render cleanly and document every option
# and command that each tool's --help lists (and the reverse for commands),
# and every option of each smcrctl command's own --help.
. "$(dirname "$0")/lib.sh" "$1"
need man col
src=$(cd "$(dirname "$0")/../.." && pwd)

# options < TEXT: the options (-x, --long) a text names.
options() { grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u; }

check() {
	local tool=$1 page=$2 help
	help=$("$BIN/$tool" --help) || fail "$tool --help exits non-zero"
	warnings=$(man -l --warnings=all "$page" 2>&1 > /dev/null)
	[ -z "$warnings" ] && pass "$(basename "$page") renders without warnings" ||
		fail "$(basename "$page"): $warnings"
	rendered=$(MANWIDTH=200 man -l "$page" 2> /dev/null | col -b)
	for opt in $(options <<< "$help"); do
		grep -qE -- "(^|[^a-zA-Z-])$opt([^a-zA-Z-]|\$)" <<< "$rendered" && pass "$tool: $opt documented" ||
			fail "$tool: $opt in --help but not in $(basename "$page")"
	done
}

check smcrd "$src/smcrd/smcrd.8"
check smcrctl "$src/tools/smcrctl.8"
check smcr_run "$src/tools/smcr_run.1"

# smcrctl's commands, from its --help, each have an entry in the page, and so
# does every option that the command's own --help lists.
commands=$("$BIN/smcrctl" --help | sed -n 's/^  \([a-z][a-z, ]*[a-z]\)  .*/\1/p' | tr ',' ' ')
rendered=$(MANWIDTH=200 man -l "$src/tools/smcrctl.8" | col -b)
for cmd in $commands; do
	grep -qE "^ +$cmd\b|, $cmd\b" <<< "$rendered" && pass "smcrctl $cmd documented" ||
		fail "smcrctl $cmd not in smcrctl(8)"
	help=$("$BIN/smcrctl" "$cmd" --help) || fail "smcrctl $cmd --help exits non-zero"
	for opt in $(options <<< "$help"); do
		grep -qE -- "(^|[^a-zA-Z-])$opt([^a-zA-Z-]|\$)" <<< "$rendered" &&
			pass "smcrctl $cmd: $opt documented" ||
			fail "smcrctl $cmd: $opt in its --help but not in smcrctl.8"
	done
done
warnings=$(man -l --warnings=all "$src/libsmcr/libsmcr.7" 2>&1 > /dev/null)
[ -z "$warnings" ] && pass "libsmcr.7 renders without warnings" || fail "libsmcr.7: $warnings"
for var in SMCR_LOG SMCR_LOG_DEST SMCR_RUNDIR SMCR_RDMA_LINK_IDLE_MS; do
	grep -q "$var" "$src/libsmcr/base/log.c" "$src/common/control_proto.h" "$src/libsmcr/transports/rdma/smc_rdma_dev.c" &&
	man -l "$src/libsmcr/libsmcr.7" | grep -q "$var" && pass "libsmcr(7) documents $var" ||
		fail "libsmcr(7) lacks $var"
done
finish

#!/bin/bash
# inherited_filter.sh BUILD_DIR - a preloaded server exec'd under a seccomp
# filter that libsmcr never saw installed, as systemd runs a unit with
# SystemCallFilter=@system-service: that set leaves bpf(2) out, and the
# filter kills a caller.  libsmcr asks smcrd's BPF maps at listen, connect
# and accept, so such a server died of SIGSYS at its first client.
#  1. socat echoing, under a filter that kills on bpf (tests/progs/
#     seccomp_exec.c): 20 connections echo byte-exact, the server lives,
#     and every connection is on TCP: CONFINED at the server, PEERNOSMC
#     at the client (the listener was never marked for SMC).
#  2. The same under a filter that allows everything, with
#     SMCR_SECCOMP_ALLOWS_BPF=1 (the administrator's word that it allows
#     bpf): the connections go over $SMCR_TEST_TRANSPORT, no fallback.
. "$(dirname "$0")/lib.sh"
PORT=24680
CONNS=20 BYTES=65536
start_smcrd "$PORT" 64

# serve NAME FILTER [VAR=VALUE...]: socat echoing on PORT under seccomp_exec FILTER, preloaded
serve() {
	local name=$1 filter=$2; shift 2
	start_bg "$name" plain "$BIN/seccomp_exec" "$filter" env LD_PRELOAD="$PRELOAD" SMCR_LOG=debug "$@" \
		socat "TCP-LISTEN:$PORT,reuseaddr,fork,bind=$TEST_ADDR" EXEC:cat
	SERVER=$LAST_PID
	wait_listen "$PORT" "$SERVER"
}

# echoes NAME: CONNS preloaded connections of BYTES each echo byte-exact, and the server lives
echoes() {
	run_mode smcr timeout 60 "$PY" "$SRC/tests/integration/echo_clients.py" "$TEST_ADDR" "$PORT" \
		"$CONNS" 2 "$BYTES" > "$WORK/$1-client.out" 2> "$WORK/$1-client.err"
	expect_eq "$1: client exit status" "$?" 0
	expect_eq "$1: echoes" "$(cat "$WORK/$1-client.out")" "echoes the same: $CONNS"
	if kill -0 "$SERVER" 2>/dev/null; then pass "$1: the server lives"; fi
	stop_bg "$SERVER"
}

serve forbids-bpf bpf
echoes forbids-bpf
reasons=$(fallback_reasons | awk '{ printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $3 }')
expect_eq "forbids-bpf: fallback reasons" "${reasons:-none}" "CONFINED=$CONNS PEERNOSMC=$CONNS"
on_transport "forbids-bpf" 0 0

serve allows-bpf nothing SMCR_SECCOMP_ALLOWS_BPF=1
echoes allows-bpf
on_transport "allows-bpf" "$CONNS" $((CONNS * BYTES))
finish

# lib.sh - shared by the integration tests (sourced, not run).
#
# Each test runs real, unmodified programs twice: plainly and under
# libsmcr.so, and compares.  Usage in a test: `. lib.sh "$1"` with the build
# directory as $1.  Provides:
#   $BIN, $LIB         build outputs
#   $PRELOAD           what LD_PRELOAD holds under the preload: $LIB, after
#                      the ASan runtime if $LIB is built with it (ASan
#                      intercepts malloc and the rest only from first place)
#   $WORK              a scratch directory removed at exit
#   run_mode MODE CMD  runs CMD plainly (MODE=plain) or under the preload with
#                      SMCR_LOG=debug (MODE=smcr); stderr of the preloaded
#                      process goes where the caller redirects it
#   start_bg NAME MODE CMD...   starts a server in the background, its output in
#                      $WORK/NAME.out / $WORK/NAME.err; killed at exit
#   wait_port PORT [PID]   waits until something listens on $TEST_ADDR:PORT
#                      (gives up early if process PID, the server, exits)
#   wait_listen PORT [PID] the same, without connecting to it
#   stop_bg PID [SIG [SECS]]   stops such a server so that it exits cleanly
#   socat_transfer NAME PORT [LISTEN_OPTS [CONNECT_OPTS]]   a preloaded socat
#                      pair moves $WORK/data into $WORK/got, every byte (below)
#   summary FILE PROG [PID]    the counters of a libsmcr exit summary
#   $PY                the distribution's python3
#   wait_for FILE PATTERN, capture FILE FILTER, option_on_wire FILE PORT
#                      (packet captures: see below)
#   libsmcr_saw NAME MODE PROG SERVER_PID N   what libsmcr counted (see below)
#   stats_counter NAME  one counter of `smcrctl stats --json` (see below)
#   start_smcrd PORTS MB   smcrd for a test (see below)
#   on_transport NAME CONNS BYTES   what went over the transport under test
#   transport_counter FIELD [T]     one counter of that transport (or of T)
#   memory_back WHAT [TENTHS]       every buffer is back with max_memory
#   allow_log PATTERN  libsmcr warn:/error: lines this test expects (below)
#   fallbacks_seen     each fallback libsmcr logged: process, fd, reason
#   fallback_reasons, fallback_count REASON   smcrd's fallbacks by reason
#   interposed_functions   the functions libsmcr interposes (real.h)
#   until_true CMD...  up to 5 s for CMD to succeed
#   test_user NAME     $TEST_UID: an unprivileged system user NAME, created
#                      for the test (if missing) and removed at exit
#   victim_unharmed NAME PORT CONNS BYTES   after an attack: root's
#                      preloaded connections still go over the transport
#   pass MSG / fail MSG / finish
#
# What a test cannot miss (checked by finish, whatever the test asserted):
#   - a sanitizer report: every process writes ASan, UBSan, LeakSanitizer and
#     TSan reports to files in $SAN_DIR, not to a stderr nobody reads (TSan
#     then exits with status 97; leaks count if our code allocated them);
#   - a libsmcr "warn:" or "error:" line in any file in $WORK, unless the
#     test allowed it by name (allow_log);
#   - a process started by start_bg that died of a crash signal or of TSan:
#     stop_bg checks its status, and finish stops the ones still running
#     and checks theirs.
#
# Two environment variables say where and over what the tests run; unset,
# everything runs as it always has (loopback, shared memory):
#   SMCR_TEST_ADDR (127.0.0.1, as $TEST_ADDR): the address the tests'
#       servers listen on and their clients connect to, the one waited for by
#       wait_port, and smcrd's ip_addr_list in start_smcrd ("127.0.0.1 ::1"
#       for the default);
#   SMCR_TEST_TRANSPORT (shm, as $TEST_TRANSPORT; or rdma): the transport
#       the SMC connections must take.  With rdma, start_smcrd writes shm = 0
#       (same-host peers then go over RDMA: it needs an RDMA device on
#       $TEST_ADDR, not loopback) and on_transport checks the rdma counters,
#       and that shm counted nothing.  The tests that compare programs plainly
#       and under the preload (redis, iperf3, sockperf, socat, fork) start
#       smcrd only if it is set (with_smcrd; CTest's NAME-shm variants set
#       it): unset, their preloaded runs go on TCP (no daemon, NODAEMON).
# A third lets several test runs share a host: SMCR_TEST_CGROUP, a cgroup v2
# directory that holds the test (unset: the cgroup v2 root).  $SMCRD, the
# command that starts smcrd, attaches its negotiation program there, so that
# it acts on this run's connections only.
set -u
BUILD=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
BIN=$BUILD/bin
LIB=$BUILD/lib/libsmcr.so
SMCRD=("$BIN/smcrd")
[ -z "${SMCR_TEST_CGROUP:-}" ] || SMCRD+=(-C "$SMCR_TEST_CGROUP")
WORK=$(mktemp -d /tmp/smcr-test.XXXXXX)
FAILED=0
BG_PIDS=()
declare -A BG_NAME              # start_bg's processes not yet stopped: pid -> name
LOG_ALLOWED=()
SAN_DIR=$WORK/sanitizer
mkdir "$SAN_DIR"
SAN_EXIT=97
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# ASan and UBSan exit 0 after a report: LeakSanitizer also finds the leaks
# of the programs under test (python's), which are not ours to fail on, and
# shares their exit status (sanitizer_reports sorts the reports instead).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$SAN_DIR/asan:exitcode=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$SAN_DIR/ubsan:print_stacktrace=1"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$SAN_DIR/tsan:exitcode=$SAN_EXIT"
TEST_ADDR=${SMCR_TEST_ADDR:-127.0.0.1}
TEST_TRANSPORT=${SMCR_TEST_TRANSPORT:-shm}
case $TEST_TRANSPORT in
	shm|rdma) ;;
	*) echo "FAIL: SMCR_TEST_TRANSPORT=$TEST_TRANSPORT: shm or rdma"; exit 1 ;;
esac

CREATED_USERS=()
cleanup() {
	local user
	for pid in "${BG_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	for user in "${CREATED_USERS[@]}"; do
		pkill -KILL -u "$user" 2>/dev/null
		userdel "$user" 2>/dev/null
	done
	if [ "$FAILED" = 0 ]; then
		rm -rf "$WORK"
	else
		show_logs
		echo "(kept $WORK for inspection)"
	fi
}

# show_logs: the end of each text file the failed test left in $WORK, so
# that its logs leave the machine with the test's output; control bytes
# shown as cat -v does (an adversarial test's logs may hold escapes meant
# for a terminal).
show_logs() {
	local file
	find "$WORK" -type f -size +0 | sort | head -n 40 | while read -r file; do
		grep -Iq . "$file" || continue                  # data, captures
		echo "--- ${file#"$WORK"/} (last 12 of $(wc -l < "$file") lines)"
		tail -n 12 "$file" | cut -c 1-300 | cat -v | sed 's/^/    /'
	done
}
trap cleanup EXIT

# test_user NAME: sets TEST_UID to the uid of the system user NAME, made
# for this test if it does not exist (and then removed at exit).  No home,
# no shell, no group but its own.
test_user() {
	if ! id -u "$1" > /dev/null 2>&1; then
		useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$1" ||
			{ fail "useradd $1"; finish; }
		CREATED_USERS+=("$1")
	fi
	TEST_UID=$(id -u "$1")
}

# victim_unharmed NAME PORT CONNS BYTES: after an attack (tests/adversarial),
# a root client and server, both preloaded (echo_clients.py, socat echoing
# on PORT), make CONNS connections of BYTES each over $TEST_TRANSPORT,
# byte-exact, with no fallback (each one seen is printed with its reason),
# and `smcrctl status` answers.
victim_unharmed() {
	local name=$1 port=$2 conns=$3 bytes=$4
	if timeout 10 "$BIN/smcrctl" status > "$WORK/status.out" 2>&1; then
		pass "$name: smcrctl status answers"
	else
		fail "$name: smcrctl status: $(cat "$WORK/status.out")"
	fi
	start_bg victim-server smcr socat "TCP-LISTEN:$port,reuseaddr,fork,bind=$TEST_ADDR" EXEC:cat
	wait_listen "$port" "$LAST_PID" || return
	run_mode smcr timeout 60 "$PY" "$SRC/tests/integration/echo_clients.py" "$TEST_ADDR" "$port" \
		"$conns" 2 "$bytes" > "$WORK/victim.out" 2> "$WORK/victim.err"
	expect_eq "$name: client exit status" "$?" 0
	expect_eq "$name: echoes" "$(cat "$WORK/victim.out")" "echoes the same: $conns"
	on_transport "$name" "$conns" $((conns * bytes))
	fallbacks_seen
}

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
finish() {
	stop_all_bg
	sanitizer_reports
	libsmcr_complaints
	if [ "$FAILED" = 0 ]; then echo "$(basename "$0"): all passed"; exit 0; fi
	echo "$(basename "$0"): FAILED"; exit 1
}

need() {
	for prog in "$@"; do
		command -v "$prog" >/dev/null || { echo "FAIL: $prog is not installed (run tools/install-deps.sh --test)"; exit 1; }
	done
}

[ -r "$LIB" ] || { echo "FAIL: $LIB not built"; exit 1; }
PRELOAD=$LIB
asan_runtime=$(ldd "$LIB" | awk '$1 ~ /^libasan\./ { print $3 }')
[ -z "$asan_runtime" ] || PRELOAD="$asan_runtime $LIB"

# The distribution's interpreter, not a version manager's wrapper script.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

run_mode() {
	local mode=$1; shift
	if [ "$mode" = smcr ]; then
		LD_PRELOAD=$PRELOAD SMCR_LOG=debug "$@"
	else
		"$@"
	fi
}

# The subshell execs the server, so that $LAST_PID is the server itself (the
# pid in its libsmcr lines, and the process killed at exit).
start_bg() {
	local name=$1 mode=$2; shift 2
	(
		if [ "$mode" = smcr ]; then export LD_PRELOAD=$PRELOAD SMCR_LOG=debug; fi
		exec "$@"
	) > "$WORK/$name.out" 2> "$WORK/$name.err" &
	BG_PIDS+=($!)
	LAST_PID=$!
	BG_NAME[$!]=$name
}

# stop_bg PID [SIGNAL [SECONDS]]: sends SIGNAL (none if "-") to a server
# started by start_bg and waits up to SECONDS (10) for it to exit, so that it
# prints its libsmcr summary; then it is killed.  Returns its exit status,
# and fails the test if that says it crashed (crashed).
stop_bg() {
	local pid=$1 sig=${2:-TERM} secs=${3:-10} rc=0 name=${BG_NAME[$1]:-process $1}
	[ "$sig" = - ] || kill -s "$sig" "$pid" 2>/dev/null
	for _ in $(seq 1 $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$name (pid $pid) did not exit within ${secs}s"
		kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || rc=$?
	unset "BG_NAME[$pid]"
	crashed "$name" "$rc"
	return "$rc"
}

# crashed NAME STATUS: fails (and returns 0) if exit STATUS is a crash
# signal's or TSan's; a test's own SIGTERM, SIGINT or SIGKILL is no crash.
crashed() {
	case $2 in
		$SAN_EXIT) fail "$1: exit status $2: a sanitizer report (below)" ;;
		132|133|134|135|136|139|140|159)
			fail "$1: killed by SIG$(kill -l "$2") (exit status $2)" ;;
		*) return 1 ;;
	esac
}

# stop_all_bg: stops start_bg's processes that are still running (SIGTERM,
# as cleanup would) and checks how they ended.
stop_all_bg() {
	local pid
	for pid in "${!BG_NAME[@]}"; do
		stop_bg "$pid" TERM 10 || true
	done
}

# sanitizer_reports: fails on each report in $SAN_DIR, with its first
# lines; of a LeakSanitizer report, only the leaks allocated through our
# code (a frame in this source tree or in libsmcr.so) count.
sanitizer_reports() {
	local report ours
	for report in "$SAN_DIR"/*; do
		[ -e "$report" ] || continue
		ours=$report
		if grep -q 'ERROR: LeakSanitizer' "$report"; then
			ours=$WORK/leaks-$(basename "$report")
			awk -v src="$SRC/" 'BEGIN { RS = ""; ORS = "\n\n" }
				/leak of/ && (index($0, src) || /libsmcr\.so/)' "$report" > "$ours"
			[ -s "$ours" ] || continue
		fi
		fail "sanitizer report $(basename "$report"):"
		head -n 30 "$ours" | sed 's/^/    /'
	done
}

# allow_log PATTERN: libsmcr warn:/error: lines that match PATTERN (an ERE)
# are expected by this test (a refused buffer, a killed peer, ...).
allow_log() { LOG_ALLOWED+=("$1"); }

# libsmcr_complaints: fails on every libsmcr warn:/error: line in $WORK that
# no allow_log pattern matches, naming the file it is in.
libsmcr_complaints() {
	local lines pat
	lines=$(grep -rsoE 'libsmcr\[[0-9]+\]: (warn|error): .*' "$WORK" | sed "s|^$WORK/||")
	for pat in "${LOG_ALLOWED[@]}"; do
		lines=$(grep -vE -- "$pat" <<< "$lines")
	done
	[ -n "$lines" ] || return 0
	fail "libsmcr complained ($(wc -l <<< "$lines") lines, none allowed by this test):"
	head -n 20 <<< "$lines" | sed 's/^/    /'
}

# fallbacks_seen: every connection libsmcr logged (SMCR_LOG=debug) as kept
# on TCP, at the handshake or in the CLC exchange, one line each:
# "PROGRAM[PID] fd FD: REASON", PROGRAM from that process's exit summary.
fallbacks_seen() {
	local pid fd reason prog
	grep -rshoE 'libsmcr\[[0-9]+\]: debug: fd [0-9]+: (fallback to TCP|CLC: staying on TCP): [A-Z_]+' "$WORK" |
	sed -E 's/libsmcr\[([0-9]+)\]: debug: fd ([0-9]+): .*TCP: ([A-Z_]+)/\1 \2 \3/' |
	while read -r pid fd reason; do
		prog=$(grep -rshoE "libsmcr\\[$pid\\]: info: [^ ]+: tcp: " "$WORK" | head -n 1 | cut -d' ' -f3)
		echo "${prog%:}[$pid] fd $fd: $reason"
	done
}

wait_port() {
	for _ in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/$TEST_ADDR/$1") 2>/dev/null; then return 0; fi
		if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then break; fi
		sleep 0.1
	done
	echo "FAIL: nothing listens on port $1"; FAILED=1; return 1
}

# wait_listen PORT [PID]: like wait_port, without connecting (for servers
# that serve one connection, or count them).
wait_listen() {
	for _ in $(seq 1 100); do
		if ss -Htln "sport = :$1" | grep -q .; then return 0; fi
		if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then break; fi
		sleep 0.1
	done
	echo "FAIL: nothing listens on port $1"; FAILED=1; return 1
}

# start_xinetd PORT ARGS...: xinetd, preloaded, serving PORT on
# $TEST_ADDR by running /bin/sh ARGS as root with the connection as its
# descriptors 0, 1 and 2 (a new process and image per connection, as
# inetd does); LAST_PID is xinetd's, once it listens.  Finishes the test if
# xinetd is missing or does not listen.
start_xinetd() {
	local port=$1
	shift
	command -v xinetd > /dev/null ||
		{ fail "xinetd is not installed (tools/install-deps.sh --test)"; finish; }
	cat > "$WORK/xinetd.conf" <<EOC
service smcr-test
{
	type = UNLISTED
	port = $port
	bind = $TEST_ADDR
	socket_type = stream
	protocol = tcp
	wait = no
	user = root
	server = /bin/sh
	server_args = $*
	passenv = LD_PRELOAD SMCR_RUNDIR SMCR_LOG ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
	instances = 50
	cps = 1000 1
}
EOC
	start_bg xinetd smcr xinetd -dontfork -f "$WORK/xinetd.conf" -pidfile "$WORK/xinetd.pid"
	wait_listen "$port" "$LAST_PID" || finish
}

# socat_transfer NAME PORT [LISTEN_OPTS [CONNECT_OPTS]]: a preloaded socat
# listening on PORT (its address options after LISTEN_OPTS' comma) takes
# $WORK/data from a preloaded socat client (CONNECT_OPTS) into $WORK/got;
# the client exits 0, the server ends with the connection, and every byte
# came.  Their logs: $WORK/NAME-server.out/.err, $WORK/NAME-client.err.
socat_transfer() {
	local name=$1 port=$2 server
	rm -f "$WORK/got"
	start_bg "$name-server" smcr socat -u "TCP-LISTEN:$port,bind=$TEST_ADDR,reuseaddr${3:-}" \
		"CREATE:$WORK/got"
	server=$LAST_PID
	wait_listen "$port" "$server" || finish
	run_mode smcr socat -u "FILE:$WORK/data" "TCP:$TEST_ADDR:$port${4:-}" 2> "$WORK/$name-client.err"
	expect_eq "$name: client exit status" "$?" 0
	until_true eval '! kill -0 "$server" 2> /dev/null' ||
		fail "$name: the server did not end with the connection"
	stop_bg "$server"
	expect_eq "$name: the bytes" "$(sha256sum < "$WORK/got")" "$(sha256sum < "$WORK/data")"
}

# The number of debug lines in FILE saying libsmcr saw a connection of KIND
# (accepted|connect).
seen() {
	local kind=$2
	case $kind in
		accepted) grep -c 'TCP connection from .* accepted' "$1" ;;
		connect) grep -c 'TCP connect to ' "$1" ;;
	esac
}

# summary FILE PROG [PID]: the counters of the exit summary that PROG's
# libsmcr (pid PID if given, else the last one) printed in FILE, as
# "LISTENERS CLIENTS SERVERS BYTES_IN BYTES_OUT"; empty if there is none.
# The bytes are all the program moved: through TCP, plus those of each SMC
# transport in the summary ("shm: C client, S server, I B in, O B out").
summary() {
	local pid=${3:-[0-9]+} line tcp lis cli srv b_in b_out t_in t_out
	line=$(grep -E "^libsmcr\[($pid)\]: info: $2: tcp: " "$1" | tail -n 1)
	tcp=$(sed -nE 's/.*: tcp: ([0-9]+) listener, ([0-9]+) client, ([0-9]+) server connections; ([0-9]+) bytes in, ([0-9]+) out.*/\1 \2 \3 \4 \5/p' <<< "$line")
	[ -n "$tcp" ] || return 0
	read -r lis cli srv b_in b_out <<< "$tcp"
	while read -r t_in t_out; do
		[ -n "$t_in" ] || continue
		b_in=$((b_in + t_in)) b_out=$((b_out + t_out))
	done <<< "$(grep -oE '[a-z]+: [0-9]+ client, [0-9]+ server, [0-9]+ B in, [0-9]+ B out' <<< "$line" |
		    sed -E 's/.* ([0-9]+) B in, ([0-9]+) B out/\1 \2/')"    # not <(...): no /dev/fd in tests/vm's guests
	echo "$lis $cli $srv $b_in $b_out"
}

# libsmcr_saw NAME MODE PROG SERVER_PID N: in a plain run, no libsmcr line in
# $WORK/client-NAME.err or server-NAME.err (returns 1: nothing more to check);
# under the preload, N connects and N accepts seen, and the exit summaries of
# PROG say N client connections, 1 listener, N server connections.  Sets
# c_in c_out (client) and s_in s_out (server) from the summaries.
libsmcr_saw() {
	local name=$1 mode=$2 prog=$3 srv=$4 n=$5 c_cli s_lis s_srv
	local cerr=$WORK/client-$name.err serr=$WORK/server-$name.err
	if [ "$mode" = plain ]; then
		if grep -q libsmcr "$cerr" "$serr"; then fail "$name: libsmcr lines in the plain run"; fi
		return 1
	fi
	expect_eq "$name: client connects seen by libsmcr" "$(seen "$cerr" connect)" "$n"
	expect_eq "$name: server accepts seen by libsmcr" "$(seen "$serr" accepted)" "$n"
	read -r _ c_cli _ c_in c_out <<< "$(summary "$cerr" "$prog")"
	read -r s_lis _ s_srv s_in s_out <<< "$(summary "$serr" "$prog" "$srv")"
	expect_eq "$name: libsmcr summaries (client connections, listeners, server connections)" \
		"${c_cli:-none} ${s_lis:-none} ${s_srv:-none}" "$n 1 $n"
}

# stats_counter NAME: the counter NAME of `smcrctl stats --json` (of the smcrd
# at $SMCR_RUNDIR), wherever it sits in the object; "none" if it has none.
# A dotted NAME is a path from the top: transports.rdma.clients.
stats_counter() {
	"$BIN/smcrctl" stats --json | "$PY" -c '
import json, sys
def find(o):
    if isinstance(o, dict):
        if sys.argv[1] in o:
            return o[sys.argv[1]]
        for v in o.values():
            found = find(v)
            if found is not None:
                return found
    return None
def path(o):
    for k in sys.argv[1].split("."):
        if not isinstance(o, dict) or k not in o:
            return None
        o = o[k]
    return o
j = json.load(sys.stdin)
found = path(j) if "." in sys.argv[1] else find(j)
print("none" if found is None else found)' "$1"
}

# transport_counter FIELD [TRANSPORT]: FIELD (clients, servers, bytes_in,
# ...) of TRANSPORT's counters ($TEST_TRANSPORT's if not given) in
# `smcrctl stats --json`; "none" if there are none.
transport_counter() {
	stats_counter "transports.${2:-$TEST_TRANSPORT}.$1"
}

# memory_back WHAT [TENTHS]: within TENTHS tenths of a second (50), smcrd
# counts no buffer memory in use (a process's buffers come back as it
# closes them, or as smcrd sees a killed one's control socket close).
memory_back() {
	for _ in $(seq "${2:-50}"); do
		[ "$(stats_counter in_use)" = 0 ] && break
		sleep 0.1
	done
	expect_eq "$1" "$(stats_counter in_use)" 0
}

# start_smcrd PORTS MAX_MEMORY_MB: smcrd (root) with SMC on for $TEST_ADDR
# (127.0.0.1 and ::1 by default) and the ports PORTS, and shm = 0 if the
# transport under test is rdma; its run directory and configuration in
# $WORK, its pid in $SMCRD_PID.  The test ends here if it does not come up.
start_smcrd() {
	local addrs=$TEST_ADDR shm=1
	[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }
	[ "$TEST_ADDR" = 127.0.0.1 ] && addrs="127.0.0.1 ::1"
	[ "$TEST_TRANSPORT" = rdma ] && shm=0
	export SMCR_RUNDIR=$WORK/run
	CONF=$WORK/smcr.conf
	cp "$(dirname "${BASH_SOURCE[0]}")/../../conf/smcr.conf" "$CONF"
	"$BIN/smcrctl" -c "$CONF" set enabled=1 "ip_addr_list=$addrs" \
		"port_range_list=$1" "max_memory=$2" "shm=$shm" > /dev/null
	start_bg smcrd plain "${SMCRD[@]}" -f -c "$CONF"
	SMCRD_PID=$LAST_PID
	for _ in $(seq 50); do "$BIN/smcrctl" status > /dev/null 2>&1 && break; sleep 0.1; done
	"$BIN/smcrctl" status > /dev/null || { fail "smcrd did not start: $(cat "$WORK/smcrd.err")"; finish; }
}

# with_smcrd PORTS MAX_MEMORY_MB: for the tests that run programs plainly and
# under the preload: start_smcrd if SMCR_TEST_TRANSPORT is set (their
# preloaded runs must then go over that transport: on_transport), nothing
# otherwise (they stay on TCP, falling back with NODAEMON: the
# pure-passthrough run).  Says so loudly, so that a log of the daemon-less
# run is not mistaken for an SMC one: their header line "# variants: shm"
# makes CTest run them again as integration.NAME-shm, with
# SMCR_TEST_TRANSPORT=shm (tests/CMakeLists.txt).  Returns 1 if it did not
# start one.
with_smcrd() {
	local name
	name=$(basename "$0" .sh)
	if [ -z "${SMCR_TEST_TRANSPORT:-}" ]; then
		echo "NOTE: no smcrd (SMCR_TEST_TRANSPORT unset): the preloaded runs stay on TCP," \
			"falling back with NODAEMON; integration.$name-shm is the SMC run"
		return 1
	fi
	start_smcrd "$@"
	echo "smcrd: ip_addr_list $TEST_ADDR, transport $TEST_TRANSPORT"
}

# on_transport NAME CONNS MIN_BYTES [FALLBACKS]: since the last call, CONNS
# more connections (at least) went over $TEST_TRANSPORT at each end,
# carrying at least MIN_BYTES, and FALLBACKS (0) connection ends fell back
# to TCP ("-": the test checks them itself); with CONNS 0, none went over it
# (and fallbacks are not checked).
# With rdma, shm carried none at all (shm = 0).  A connection whose peer
# closed it during the CLC exchange (PEERCLOSED: a benchmark client exiting
# mid-connect) is no fallback here: it carries nothing, on TCP or off it.
last_cli=0 last_srv=0 last_bytes=0 last_fallbacks=0
on_transport() {
	local name=$1 conns=$2 bytes=$3 fallbacks=${4:-0} t=$TEST_TRANSPORT cli srv b fb shm v
	cli=$(transport_counter clients) srv=$(transport_counter servers)
	b=$(transport_counter bytes_in) fb=$(fallbacks_counted)
	for v in "$cli" "$srv" "$b" "$fb"; do
		[[ $v =~ ^[0-9]+$ ]] || { fail "$name: smcrctl stats --json: no $t counters ('$v')"; return; }
	done
	if [ "$conns" = 0 ]; then
		expect_eq "$name: client and server connections on $t" "$((cli - last_cli)) $((srv - last_srv))" "0 0"
	elif [ $((cli - last_cli)) -ge "$conns" ] && [ $((srv - last_srv)) -ge "$conns" ]; then
		pass "$name: $((cli - last_cli)) client and $((srv - last_srv)) server connections on $t"
	else
		fail "$name: on $t: $((cli - last_cli)) client, $((srv - last_srv)) server; expected >= $conns each"
	fi
	if [ $((b - last_bytes)) -ge "$bytes" ]; then
		pass "$name: $((b - last_bytes)) bytes received over $t"
	else
		fail "$name: $((b - last_bytes)) bytes over $t, expected >= $bytes"
	fi
	[ "$conns" = 0 ] || [ "$fallbacks" = - ] ||
		expect_fallbacks "$name" "$((fb - last_fallbacks))" "$fallbacks"
	if [ "$t" != shm ]; then
		shm="$(transport_counter clients shm) $(transport_counter servers shm) $(transport_counter bytes_in shm)"
		expect_eq "$name: shm connections and bytes (shm = 0)" "$shm" "0 0 0"
	fi
	last_cli=$cli last_srv=$srv last_bytes=$b last_fallbacks=$fb
}

# on_transport_forked NAME CONNS MIN_BYTES [LEFT]: on_transport for a server
# that forks after accept(), and LEFT (0) ends left for TCP: over RDMA,
# whose queue pairs a child cannot use, the child answers the Proposal with
# a link of its own, since accept() leaves that to the first call on the
# connection (docs/ARCHITECTURE.md, "Processes and descriptors").
last_left=0
on_transport_forked() {
	local name=$1 conns=$2 bytes=$3 left
	left=$(transport_counter left)
	on_transport "$name" "$conns" "$bytes"
	expect_eq "$name: ends that left for TCP" $((left - last_left)) "${4:-0}"
	last_left=$left
}

# fallback_reasons: smcrd's fallbacks to TCP by reason, one "NAME CODE
# COUNT" line each (smcrctl stats --json); nothing if there are none, and
# status 1 if smcrctl could not say.
fallback_reasons() {
	"$BIN/smcrctl" stats --json | "$PY" -c '
import json, sys
for r in json.load(sys.stdin)["connections"]["fallback_reasons"]:
    print(r["name"], r["code"], r["count"])'
}

# fallback_count REASON: the connection ends that fell back with REASON.
fallback_count() {
	fallback_reasons | awk -v reason="$1" '$1 == reason { n = $3 } END { print n + 0 }'
}

# fallbacks_counted: the connection ends smcrd counts as fallen back to
# TCP, but for PEERCLOSED; nothing if smcrctl could not say.
fallbacks_counted() {
	local reasons
	reasons=$(fallback_reasons) || return 1
	awk '$1 != "PEERCLOSED" { n += $3 } END { print n + 0 }' <<< "$reasons"
}

# expect_fallbacks NAME GOT WANT: GOT connection ends fell back to TCP, as
# WANT; if not, says why: smcrd's count by reason, and each fallback libsmcr
# logged in this test (process, descriptor, reason).
expect_fallbacks() {
	expect_eq "$1: fallbacks to TCP" "$2" "$3" && return
	echo "    by reason (smcrd): $(fallback_reasons |
		awk '{ printf "%s%s (%s): %s", (NR > 1 ? ", " : ""), $1, $2, $3 } END { if (!NR) printf "none" }')"
	fallbacks_seen | sed 's/^/    logged: /'
}

# interposed_functions: the functions libsmcr interposes (libsmcr/base/real.h's
# X() table), sorted, one per line.
interposed_functions() {
	grep -oE '^[[:space:]]*X\([^,]+, *[A-Za-z0-9_]+,' "$SRC/libsmcr/base/real.h" |
		sed -E 's/.*, *([A-Za-z0-9_]+),$/\1/' | sort
}

# expect_at_least WHAT ACTUAL MIN
expect_at_least() {
	if [ "${2:-0}" -ge "$3" ] 2>/dev/null; then pass "$1: $2 (>= $3)"; else fail "$1: ${2:-none} (expected >= $3)"; fi
}

# expect_between WHAT ACTUAL MIN MAX
expect_between() {
	if [ "${2:-x}" -ge "$3" ] 2>/dev/null && [ "$2" -le "$4" ]; then
		pass "$1: $2 ($3 to $4)"
	else
		fail "$1: ${2:-none} (expected $3 to $4)"
	fi
}

expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1: $2"; else fail "$1: got '$2', expected '$3'"; return 1; fi
}

# wait_for FILE PATTERN: up to 5 s for PATTERN in FILE.
wait_for() {
	until_true grep -qs -- "$2" "$1"
}

# capture FILE FILTER [PREFIX...]: loopback TCP packets matching FILTER (a
# pcap filter such as "portrange 17000-17099") go to FILE until exit.
capture() {
	local file=$1 filter=$2
	shift 2
	"$@" tcpdump -i lo -nn -U --immediate-mode -w "$file" "tcp and ($filter)" 2> "$file.err" &
	BG_PIDS+=($!)
	wait_for "$file.err" "listening on" || fail "tcpdump: $(cat "$file.err")"
}

# option_on_wire FILE PORT: whether the last SYN and SYN-ACK on PORT in the
# capture FILE carried the SMC-R option (fe 06 e2 d4 c3 d9): "SYN=1 SYN-ACK=0".
option_on_wire() {
	tcpdump -r "$1" -nn -x "tcp port $2" 2>/dev/null | awk '
		function done() { if (kind == "S") syn = index(hex, "fe06e2d4c3d9") > 0
				  if (kind == "S.") synack = index(hex, "fe06e2d4c3d9") > 0 }
		/^[0-9]/ { done(); match($0, /Flags \[[^]]*\]/)
			   kind = substr($0, RSTART + 7, RLENGTH - 8); hex = ""; next }
			 { for (i = 2; i <= NF; i++) hex = hex $i }
		END	 { done(); print "SYN=" syn + 0 " SYN-ACK=" synack + 0 }'
}

# rmb_size [TRANSPORT]: the size in bytes of the largest RMB that libsmcr
# gave a connection over TRANSPORT ($TEST_TRANSPORT) so far, from the RMB
# histogram of `smcrctl stats --json`: what libsmcr allocated, whatever
# rmb_size is set to; "none" (and status 1) if it gave none.
rmb_size() {
	"$BIN/smcrctl" stats --json | "$PY" -c '
import json, sys
rmbs = json.load(sys.stdin)["transports"][sys.argv[1]]["rmbs"]
sizes = [int(k[:-3]) << (10 if k.endswith("KiB") else 20) for k, n in rmbs.items() if n]
print(max(sizes) if sizes else "none")
sys.exit(not sizes)' "${1:-$TEST_TRANSPORT}"
}

# conn_field PID FIELD: FIELD (rmb_size, bytes_out, mode, ...) of process
# PID's first open connection in `smcrctl conns --json`; "none" if it has
# none, or that connection no such field.
conn_field() {
	"$BIN/smcrctl" conns --json --pid "$1" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)
print(c[0].get(sys.argv[1], "none") if c else "none")' "$2"
}

# until_true CONDITION...: up to 5 s for the command CONDITION to succeed.
until_true() {
	for _ in $(seq 50); do "$@" && return 0; sleep 0.1; done
	return 1
}

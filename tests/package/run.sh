#!/bin/bash
# tests/package/run.sh - the Debian package, as an administrator gets it
# (tests/run.sh's stage package; root).
#
# Builds it from this tree (a copy in a scratch directory: dpkg-buildpackage
# writes beside the source), fails on any lintian error, installs it with
# apt-get, and then uses the installed files only, from a scratch directory
# with a PATH that holds no build tree:
#   - the paths agree: smcr_run and LD_PRELOAD=libsmcr.so load the library
#     in the multiarch directory, man finds the pages, smcrctl reads
#     /etc/smcr/smcr.conf (installed with SMC off), the units' ExecStart
#     programs exist, bash-completion loads the completions, and no unit
#     was enabled;
#   - smcrd (its own configuration, written with the installed smcrctl, and
#     in $SMCR_TEST_CGROUP if set, as tests/integration/lib.sh does) and a
#     redis-server / redis-benchmark pair under smcr_run: their connections
#     go over shared memory (the fallbacks and their reasons are printed if
#     any), `smcrctl stats --prometheus` parses (the Prometheus project's
#     parser) with the same counts, and `smcrctl top` draws them on a pty;
#   - apt-get remove keeps only the conffile, apt-get purge removes it and
#     /etc/smcr: no file of the package is left, smcrd's program is no
#     longer attached to the cgroup, and no installed smcrd runs.
# The package is purged at exit whatever happened, so that no installed
# libsmcr.so or /etc/smcr outlives the stage.  Environment, as lib.sh's:
# SMCR_TEST_ADDR (127.0.0.1), SMCR_TEST_CGROUP (the cgroup v2 root).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PORT=24520 MB=64 CLIENTS=4 REQUESTS=2000
ADDR=${SMCR_TEST_ADDR:-127.0.0.1}
CGROUP=${SMCR_TEST_CGROUP:-$(findmnt -t cgroup2 -no TARGET | head -n 1)}
WORK=$(mktemp -d /tmp/smcr-package.XXXXXX)
FAILED=0 INSTALLED_BY_US=0
PIDS=()

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
expect_eq() { if [ "$2" = "$3" ]; then pass "$1: $2"; else fail "$1: got '$2', expected '$3'"; fi; }

# package_state: dpkg's word for smcr: installed, config-files, not-installed...
package_state() { dpkg-query -W -f='${db:Status-Status}' smcr 2>/dev/null || echo not-installed; }

# cleanup: our processes stopped, then the package purged (if we installed it).
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	if [ "$INSTALLED_BY_US" = 1 ] && [ "$(package_state)" != not-installed ]; then
		echo "cleanup: purging the package"
		apt-get purge -y -q smcr > "$WORK/cleanup-purge.log" 2>&1 || dpkg --purge smcr
	fi
	if [ "$FAILED" = 0 ]; then rm -rf "$WORK"; else echo "(kept $WORK for inspection)"; fi
}
trap cleanup EXIT
trap 'fail "interrupted"; exit 1' INT TERM

finish() {
	if [ "$FAILED" = 0 ]; then echo "package: all passed"; exit 0; fi
	echo "package: FAILED"; exit 1
}

# build: the package from a copy of this tree (tracked and new files, as
# they are), into $WORK/src; its .changes in $CHANGES.
build() {
	mkdir -p "$WORK/src/smcr"
	(cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar c) | tar x -C "$WORK/src/smcr"
	(cd "$WORK/src/smcr" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
		> "$WORK/build.log" 2>&1 || { fail "dpkg-buildpackage: $(tail -n 20 "$WORK/build.log")"; finish; }
	CHANGES=$(echo "$WORK"/src/smcr_*.changes)
	DEB=$(echo "$WORK"/src/smcr_[0-9]*.deb)        # not smcr-dbgsym_
	pass "built $(basename "$DEB")"
}

# lint: lintian on the build; its errors fail the stage, the rest is shown.
lint() {
	lintian --fail-on error "$CHANGES" > "$WORK/lintian.txt" 2>&1
	local rc=$?
	sed 's/^/    lintian: /' "$WORK/lintian.txt"
	expect_eq "lintian: exit status (errors fail it)" "$rc" 0
	expect_eq "lintian: errors" "$(grep -c '^E: ' "$WORK/lintian.txt")" 0
}

# install_package: apt-get install of the .deb (its dependencies are build
# dependencies of this tree: already there; no recommends, so that
# nothing else is added to the host).  Records which of its paths existed.
install_package() {
	dpkg-deb -c "$DEB" | awk '{ print substr($6, 2) }' | sed 's|/$||; /^$/d' | sort > "$WORK/deb-paths"
	while read -r path; do [ -e "$path" ] && echo "$path"; done < "$WORK/deb-paths" > "$WORK/existed"
	INSTALLED_BY_US=1
	apt-get install -y -q --no-install-recommends "$DEB" > "$WORK/install.log" 2>&1 ||
		{ fail "apt-get install: $(tail -n 20 "$WORK/install.log")"; finish; }
	expect_eq "installed" "$(package_state)" installed
	dpkg -L smcr | grep -vx "/\." | sort > "$WORK/dpkg-L"
}

# in_maps PROG...: the libsmcr.so PROG runs with (its own /proc/self/maps).
in_maps() { "$@" cat /proc/self/maps | awk '/libsmcr\.so/ { print $6; exit }'; }

# paths_agree: where the programs look is where the package put things.
paths_agree() {
	local libdir unit exe
	libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	expect_eq "smcr_run preloads" "$(in_maps smcr_run)" "$libdir/libsmcr.so"
	expect_eq "LD_PRELOAD=libsmcr.so (by name: the linker's cache)" \
		"$(in_maps env LD_PRELOAD=libsmcr.so)" "$libdir/libsmcr.so"
	expect_eq "pkg-config's preload" "$(pkg-config --variable=preload libsmcr)" "$libdir/libsmcr.so"
	for page in smcrctl.8 smcrd.8 smcr_run.1 libsmcr.7; do
		expect_eq "man ${page%.*}" "$(man -w "${page##*.}" "${page%.*}" 2>&1)" \
			"/usr/share/man/man${page##*.}/$page.gz"
	done
	expect_eq "smcrctl's default configuration" "$(smcrctl show | sha1sum)" \
		"$(smcrctl -c /etc/smcr/smcr.conf show | sha1sum)"
	expect_eq "installed with SMC off" "$(smcrctl show | awk '$1 == "enabled" { print $2 }')" 0
	expect_eq "a conffile" "$(dpkg-query -W -f='${Conffiles}' smcr | awk '{ print $1 }')" /etc/smcr/smcr.conf
	for unit in smcrd.service smcr-prometheus.service; do
		exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "/lib/systemd/system/$unit")
		[ -x "$exe" ] && dpkg -S "$exe" > /dev/null 2>&1 && pass "$unit: ExecStart $exe, of the package" ||
			fail "$unit: ExecStart $exe is not the package's"
	done
	expect_eq "units enabled by the install" "$(find /etc/systemd/system -name 'smcr*' | wc -l)" 0
	for cmd in smcrctl smcr_run; do
		# _completion_loader returns 124 when it loaded one ("try again").
		bash --norc --noprofile -c '. /usr/share/bash-completion/bash_completion &&
			{ _completion_loader "$1"; complete -p "$1"; }' - "$cmd" > /dev/null 2>&1 &&
			pass "bash-completion loads $cmd's" || fail "bash-completion finds no completion of $cmd"
	done
}

# start_smcrd: the installed smcrd, its configuration in $WORK (written by
# the installed smcrctl), its run directory there, attached to $CGROUP.
start_smcrd() {
	local smcrd=(smcrd -f -c "$WORK/smcr.conf")
	[ -z "${SMCR_TEST_CGROUP:-}" ] || smcrd+=(-C "$SMCR_TEST_CGROUP")
	export SMCR_RUNDIR=$WORK/run
	cp /etc/smcr/smcr.conf "$WORK/smcr.conf"
	smcrctl -c "$WORK/smcr.conf" set enabled=1 "ip_addr_list=127.0.0.0/8 $ADDR" \
		"port_range_list=$PORT" "max_memory=$MB" > /dev/null || fail "smcrctl set"
	"${smcrd[@]}" > "$WORK/smcrd.out" 2> "$WORK/smcrd.err" &
	SMCRD_PID=$!
	PIDS+=("$SMCRD_PID")
	for _ in $(seq 50); do smcrctl status > /dev/null 2>&1 && break; sleep 0.1; done
	smcrctl status > "$WORK/status.txt" || { fail "smcrd did not start: $(cat "$WORK/smcrd.err")"; finish; }
	grep -q "attached to $CGROUP\$" "$WORK/status.txt" && pass "smcrd attached its program to $CGROUP" ||
		fail "smcrd: $(grep negotiation "$WORK/status.txt")"
}

# stats_json EXPR: EXPR (python, on j: smcrctl stats --json) printed.
stats_json() {
	smcrctl stats --json | python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

# fallbacks: every fallback smcrd counted (name, code, count) and libsmcr logged.
fallbacks() {
	stats_json '"\n".join("%s %s: %s" % (r["name"], r["code"], r["count"]) for r in j["connections"]["fallback_reasons"])'
	grep -hoE 'libsmcr\[[0-9]+\]: debug: fd [0-9]+: (fallback to TCP|CLC: staying on TCP): .*' "$WORK"/*.err
}

# run_redis: a preloaded redis-server and redis-benchmark, over shared memory.
run_redis() {
	smcr_run -l debug redis-server --port "$PORT" --bind "$ADDR" --save '' --appendonly no \
		> "$WORK/redis-server.out" 2> "$WORK/redis-server.err" &
	REDIS_PID=$!
	PIDS+=("$REDIS_PID")
	# Listening: not asked with a plain client, whose connection would fall back (PEERNOSMC).
	for _ in $(seq 100); do ss -Htln "sport = :$PORT" | grep -q . && break; sleep 0.1; done
	smcr_run -l debug redis-benchmark -h "$ADDR" -p "$PORT" -c "$CLIENTS" -n "$REQUESTS" -t set,get -q \
		> "$WORK/benchmark.out" 2> "$WORK/benchmark.err" || fail "redis-benchmark: $(tail -n 5 "$WORK/benchmark.err")"
	tr '\r' '\n' < "$WORK/benchmark.out" | grep 'requests per second' | sed 's/^/    /'
	local shm fb
	shm=$(stats_json 'min(j["transports"]["shm"]["clients"], j["transports"]["shm"]["servers"])')
	fb=$(stats_json 'sum(r["count"] for r in j["connections"]["fallback_reasons"])')
	[ "$shm" -ge "$CLIENTS" ] && pass "redis: $shm connections over shm at each end" ||
		fail "redis: $shm connections over shm, expected >= $CLIENTS"
	expect_eq "redis: fallbacks to TCP" "$fb" 0
	[ "$fb" = 0 ] || fallbacks | sed 's/^/    fallback: /'
}

# prometheus: the exposition parses, with the shm connections in it.
prometheus() {
	smcrctl stats --prometheus > "$WORK/metrics.prom" || fail "stats --prometheus exits $?"
	python3 - "$WORK/metrics.prom" "$CLIENTS" <<'EOF' > "$WORK/prom.out" 2>&1 || fail "prometheus: $(cat "$WORK/prom.out")"
import sys
from prometheus_client.parser import text_string_to_metric_families
samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(open(sys.argv[1]).read()) for s in f.samples}
for role in ("client", "server"):
    v = samples.get(("smcr_connections_total", (("role", role), ("transport", "shm"))), 0)
    print(f"smcr_connections_total shm {role}: {v:.0f}")
    assert v >= int(sys.argv[2]), "fewer than the benchmark's clients"
EOF
	[ "$FAILED" = 1 ] || pass "stats --prometheus parses: $(tr '\n' ' ' < "$WORK/prom.out")"
}

# show_top: smcrctl top on a pty (script), 3 frames, while a redis-cli pings.
show_top() {
	smcr_run redis-cli -h "$ADDR" -p "$PORT" -r 100000 -i 0.05 ping > /dev/null 2> "$WORK/redis-cli.err" &
	local cli=$!
	PIDS+=("$cli")
	for _ in $(seq 50); do [ "$(smcrctl conns --mode shm | wc -l)" -ge 3 ] && break; sleep 0.1; done
	SHELL=/bin/bash timeout 60 script -qec "stty cols 160 rows 30; smcrctl top -n 3 -d 0.5" /dev/null \
		> "$WORK/top.out" 2>&1 || fail "smcrctl top exits $?"
	kill "$cli"
	sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' "$WORK/top.out" | tr -d '\r' |
		awk '/^smcrctl top - / { f = "" } { f = f $0 "\n" } END { printf "%s", f }' > "$WORK/top.txt"
	sed 's/^/    /' "$WORK/top.txt"
	expect_eq "top: redis-server and redis-cli rows on shm" \
		"$(grep -cE '^ +[0-9]+ redis-(server|cli) +[0-9]+ +[0-9.KMG]+ +[0-9.KMG]+ shm ' "$WORK/top.txt")" 2
	grep -qE "^Memory: .* of max_memory $MB MiB" "$WORK/top.txt" && pass "top: memory of max_memory" ||
		fail "top: no memory line"
}

# stop_smcrd: redis and smcrd stopped; the program no longer attached.
stop_smcrd() {
	bpftool cgroup show "$CGROUP" | grep -q sock_ops && pass "bpftool: a sock_ops program on $CGROUP" ||
		fail "bpftool shows no sock_ops program on $CGROUP while smcrd runs"
	kill "$REDIS_PID" "$SMCRD_PID"
	wait "$REDIS_PID" "$SMCRD_PID"
	expect_eq "bpftool: programs left on $CGROUP" "$(bpftool cgroup show "$CGROUP" | grep -c sock_ops)" 0
}

# left_over: paths of the package that exist now and did not before.
left_over() {
	while read -r path; do [ -e "$path" ] && echo "$path"; done < "$WORK/dpkg-L" | sort |
		comm -23 - "$WORK/existed"
}

# uninstall: remove keeps the conffile only; purge, nothing.
uninstall() {
	apt-get remove -y -q smcr > "$WORK/remove.log" 2>&1 || fail "apt-get remove: $(tail -n 5 "$WORK/remove.log")"
	expect_eq "after remove" "$(package_state)" config-files
	expect_eq "after remove, left: the conffile and its directory" "$(left_over | tr '\n' ' ')" \
		"/etc/smcr /etc/smcr/smcr.conf "
	apt-get purge -y -q smcr > "$WORK/purge.log" 2>&1 || fail "apt-get purge: $(tail -n 5 "$WORK/purge.log")"
	expect_eq "after purge" "$(package_state)" not-installed
	expect_eq "after purge, files of the package left" "$(left_over | tr '\n' ' ')" ""
	[ ! -e /etc/smcr ] && pass "/etc/smcr gone" || fail "/etc/smcr left: $(ls -la /etc/smcr)"
	expect_eq "units left enabled" "$(find /etc/systemd/system -name 'smcr*' | wc -l)" 0
	expect_eq "installed smcrd processes" \
		"$(find /proc/[0-9]*/exe -lname '/usr/sbin/smcrd*' 2> /dev/null | wc -l)" 0
}

[ "$(id -u)" = 0 ] || { echo "FAIL: needs root (apt-get, smcrd)"; exit 1; }
[ "$(package_state)" = not-installed ] ||
	{ echo "FAIL: smcr is already installed here ($(package_state)): not touching it"; exit 1; }
for prog in dpkg-buildpackage lintian bpftool script ss redis-server redis-benchmark redis-cli man; do
	command -v "$prog" > /dev/null || { echo "FAIL: $prog missing (tools/install-deps.sh --test)"; exit 1; }
done
build
lint
install_package
# The installed programs only: no build tree in PATH, run from elsewhere.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
unset SMCR_CONF SMCR_LIBRARY LD_PRELOAD
cd "$WORK" || exit 1
paths_agree
start_smcrd
run_redis
prometheus
show_top
stop_smcrd
uninstall
finish

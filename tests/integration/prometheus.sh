#!/bin/bash
# prometheus.sh BUILD_DIR - smcrctl stats --prometheus: the host statistics
# in the Prometheus text exposition format, for node_exporter's textfile
# collector.  Preloaded echo clients make connections over shared memory to
# a preloaded socat; once every process has exited, the output is read with
# the Prometheus project's own parser (python3-prometheus-client) and must:
# parse; have one HELP and one TYPE line per family, no untyped family, and
# counters named *_total; carry the same figures as --json (connections per
# transport and role, at least those made; bytes; SMC negotiated; every
# fallback reason of common/reason.h with its code, PEERNOSMC counting a
# plain client's connection at least; memory, the limit being
# max_memory in bytes; processes).  --output FILE writes the same text by
# replacing FILE (a new inode: a hard link to the old one keeps the old
# text), leaving no temporary file; wrong option mixes are usage errors.
. "$(dirname "$0")/lib.sh" "$1"
need socat
PORT=24300
CONNS=3
SIZE=4096
MB=64
start_smcrd $PORT $MB

start_bg server smcr socat TCP-LISTEN:$PORT,bind="$TEST_ADDR",reuseaddr,fork PIPE
server=$LAST_PID
wait_listen $PORT "$server" || finish
run_mode smcr timeout 60 "$PY" "$(dirname "$0")/echo_clients.py" "$TEST_ADDR" $PORT $CONNS 2 $SIZE \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "echoes" "$(cat "$WORK/client.out")" "echoes the same: $CONNS"
on_transport "echo clients" $CONNS $((CONNS * SIZE))
# A plain client: the preloaded server keeps it on TCP, PEERNOSMC.
expect_eq "plain client" "$(echo hello | socat -t 2 - TCP:"$TEST_ADDR":$PORT)" hello
stop_bg "$server"
# Every process gone, nothing changes: --json and --prometheus read the same figures.
none_registered() { [ "$(stats_counter registered)" = 0 ]; }
until_true none_registered || fail "processes still registered: $(stats_counter registered)"

"$BIN/smcrctl" stats --prometheus > "$WORK/metrics.prom" || fail "--prometheus exits $?"
"$BIN/smcrctl" stats --json > "$WORK/stats.json"
sed 's/^/    /' "$WORK/metrics.prom"

# check.py: "ok MESSAGE" or "bad MESSAGE" per assertion.
cat > "$WORK/check.py" <<'EOF'
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
j = json.load(open(sys.argv[2]))
conns, size, mb, reason_h = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]

def check(ok, msg):
    print("ok" if ok else "bad", msg)

families = list(text_string_to_metric_families(text))
check(families, f"parsed: {len(families)} families")
names = [f.name for f in families]
check(len(names) == len(set(names)), "each family in one group")
for f in families:
    check(f.type in ("counter", "gauge") and f.documentation, f"{f.name}: typed {f.type}, with help")
heads = re.findall(r"^# (HELP|TYPE) (\S+)", text, re.M)
for kind in ("HELP", "TYPE"):
    listed = [n for k, n in heads if k == kind]
    check(len(listed) == len(set(listed)) == len(families), f"one {kind} line per family")
for name, typ in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
    check(re.fullmatch(r"smcr_[a-z_]+", name) and name.endswith("_total") == (typ == "counter"),
          f"{name} ({typ}): snake_case, _total for counters only")

samples = {}
for f in families:
    for s in f.samples:
        samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

def value(name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))

def same(what, got, want, at_least=None):
    check(got == want and (at_least is None or got >= at_least),
          f"{what}: {got} (--json: {want}{'' if at_least is None else f', made: {at_least}'})")

c, d, t = j["connections"], j["data"], j["transports"]
for role in ("client", "server"):
    for tr in ("shm", "rdma"):
        same(f"connections {tr} {role}", value("smcr_connections_total", transport=tr, role=role),
             t[tr][role + "s"], conns if tr == "shm" else None)
    same(f"shm {role} as in the basic view", value("smcr_connections_total", transport="shm", role=role),
         c[f"shm_{role}s"])
    same(f"TCP {role}", value("smcr_tcp_connections_total", role=role), c[f"tcp_{role}s"])
    same(f"SMC negotiated {role}", value("smcr_smc_negotiated_total", role=role), c[f"smc_{role}s"], conns)
for tr in ("tcp", "shm"):
    for way in ("in", "out"):
        same(f"bytes {tr} {way}", value("smcr_bytes_total", transport=tr, direction=way),
             d[f"{tr}_bytes_{way}"], conns * size if tr == "shm" else None)
for way in ("in", "out"):
    same(f"bytes rdma {way}", value("smcr_bytes_total", transport="rdma", direction=way), t["rdma"]["bytes_" + way])
same("memory limit (bytes)", value("smcr_memory_bytes", kind="limit"), j["memory"]["max_memory"], mb << 20)
check(j["memory"]["max_memory"] == mb << 20, f"max_memory: {mb} MB")
same("memory in use", value("smcr_memory_bytes", kind="in_use"), j["memory"]["in_use"])
same("memory peak", value("smcr_memory_bytes", kind="peak"), j["memory"]["peak"])
same("open now", value("smcr_connections_open"), c["open"])
same("processes registered", value("smcr_processes"), j["processes"]["registered"])
same("processes exited", value("smcr_processes_exited_total"), j["processes"]["exited"], 2)

reasons = re.findall(r"X\((\w+), (0x[0-9a-f]+)u", open(reason_h).read())
counted = {r["name"]: r["count"] for r in c["fallback_reasons"]}
fallbacks = [s for f in families if f.name == "smcr_fallbacks" for s in f.samples]
check(sorted((s.labels["reason"], s.labels["code"]) for s in fallbacks) == sorted(reasons),
      f"a fallback series per reason of reason.h, with its code: {len(fallbacks)}")
check((value("smcr_fallbacks_total", reason="PEERNOSMC", code="0x03010000") or 0) >= 1,
      "PEERNOSMC: the plain client")
for name, code in reasons:
    same(f"fallbacks {name}", value("smcr_fallbacks_total", reason=name, code=code), counted.get(name, 0))
EOF
"$PY" "$WORK/check.py" "$WORK/metrics.prom" "$WORK/stats.json" $CONNS $SIZE $MB "$SRC/common/reason.h" \
	> "$WORK/check.out" 2>&1 || fail "check.py: $(tail -n 5 "$WORK/check.out")"
while read -r verdict msg; do
	if [ "$verdict" = ok ]; then pass "$msg"; else fail "$msg"; fi
done < "$WORK/check.out"

mkdir "$WORK/textfile"
OUT=$WORK/textfile/smcr.prom
echo old > "$OUT"
ln "$OUT" "$WORK/old.prom"
"$BIN/smcrctl" stats --prometheus --output "$OUT" > "$WORK/output.stdout" || fail "--output exits $?"
cmp -s "$OUT" "$WORK/metrics.prom" && pass "--output: the same text" || fail "--output: $(diff "$OUT" "$WORK/metrics.prom")"
expect_eq "--output: nothing on stdout" "$(cat "$WORK/output.stdout")" ""
expect_eq "--output: replaced, not rewritten in place (the old inode keeps its text)" "$(cat "$WORK/old.prom")" old
expect_eq "--output: no temporary file left" "$(ls "$WORK/textfile")" smcr.prom
expect_eq "--output: readable by the collector" "$(stat -c %a "$OUT")" 644
"$BIN/smcrctl" stats --prometheus --output "$WORK/none/smcr.prom" 2> "$WORK/nodir.err"
expect_eq "--output into a missing directory: exit status" "$?" 1
for args in "--prometheus --json" "--prometheus -d" "--prometheus -i 1" "--output $OUT"; do
	# shellcheck disable=SC2086 # the options are words
	"$BIN/smcrctl" stats $args > /dev/null 2>&1
	expect_eq "stats $args: usage error" "$?" 2
done
finish

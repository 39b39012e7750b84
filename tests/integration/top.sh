#!/bin/bash
# top.sh BUILD_DIR - smcrctl top, on a terminal (a pty made by util-linux's
# script) and in batch mode, against real preloaded connections: a socat
# client streaming into a preloaded socat sink over shared memory (the
# busiest: first, with a rate), an idle pair of preloaded socats over shared
# memory (rate 0), and a plain client's connection to a preloaded socat,
# kept on TCP with PEERNOSMC.  The frame's header counts them by mode and
# shows memory against max_memory; every line fits a narrow window (cut to
# its width, the frame to its height), and a window narrowed while it runs
# (SIGWINCH); q and Ctrl-C end it with the
# terminal as it was (canonical mode, echo, the cursor shown); an
# unprivileged user sees none of root's connections.
. "$(dirname "$0")/lib.sh" "$1"
need socat script setpriv
SINK=24510 HOLD=24511 ECHO=24512 MB=64
start_smcrd $SINK-$ECHO $MB

start_bg sink smcr socat TCP-LISTEN:$SINK,bind="$TEST_ADDR",reuseaddr,fork /dev/null
wait_listen $SINK "$LAST_PID" || finish
start_bg stream smcr socat -u /dev/zero TCP:"$TEST_ADDR":$SINK,bind="$TEST_ADDR"
start_bg hold smcr socat TCP-LISTEN:$HOLD,bind="$TEST_ADDR",reuseaddr PIPE
wait_listen $HOLD "$LAST_PID" || finish
start_bg idle smcr socat -u SYSTEM:'echo hello; exec sleep 60' TCP:"$TEST_ADDR":$HOLD,bind="$TEST_ADDR"
start_bg echo smcr socat TCP-LISTEN:$ECHO,bind="$TEST_ADDR",reuseaddr PIPE
wait_listen $ECHO "$LAST_PID" || finish
start_bg plain plain socat -u EXEC:"sleep 60" TCP:"$TEST_ADDR":$ECHO,bind="$TEST_ADDR"
# Listed, and the idle pair past its CLC exchange (its record says shm once a byte moved).
conns_listed() {
	[ "$("$BIN/smcrctl" conns | tail -n +2 | wc -l)" = 5 ] &&
		[ "$("$BIN/smcrctl" conns --mode shm | tail -n +2 | wc -l)" = 4 ]
}
until_true conns_listed || fail "smcrctl conns lists not 5, 4 on shm: $("$BIN/smcrctl" conns)"
"$BIN/smcrctl" conns > "$WORK/conns.txt"
grep -q "TCP 0x03010000 PEERNOSMC" "$WORK/conns.txt" || fail "no PEERNOSMC connection listed"

# on_pty COLS ROWS COMMAND: COMMAND's output on a COLS x ROWS terminal, then
# that terminal's modes (stty -a); its keys from stdin; its exit status.
# 60 s at most.
on_pty() {
	SHELL=/bin/bash timeout 60 script -qec "stty cols $1 rows $2; $3; rc=\$?; echo; stty -a; exit \$rc" /dev/null
}
# plain_text FILE: FILE without escape sequences and carriage returns.
plain_text() { sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' "$1" | tr -d '\r'; }
# last_frame FILE: the last frame of top's output in FILE, from its first line.
last_frame() { plain_text "$1" | awk '/^smcrctl top - / { f = "" } { f = f $0 "\n" } END { printf "%s", f }'; }
# restored FILE NAME: after top ended, the terminal is back in canonical
# mode with echo, and the cursor shown.
restored() {
	grep -qE '(^|[^-])icanon' "$1" && grep -qE '(^|[^-])echo ' "$1" &&
		pass "$2: canonical mode and echo back" ||
		fail "$2: terminal modes not restored: $(grep -oE -- '-?(icanon|echo) ' "$1" | tr '\n' ' ')"
	grep -q $'\e\[?25h' "$1" && pass "$2: cursor shown again" || fail "$2: cursor left hidden"
}

# top_running COLS COMMAND OUT NAME: COMMAND on a COLS x 30 pty in the
# background, its output in OUT, its keys from key_to_top; returns once it
# drew a frame.
top_running() {
	rm -f "$WORK/keys"
	mkfifo "$WORK/keys"
	on_pty "$1" 30 "$2" < "$WORK/keys" > "$3" 2>&1 &
	pty=$!
	exec 3> "$WORK/keys"
	wait_for "$3" "PID COMMAND" || fail "$4: no frame drawn"
}
# key_to_top KEY: types KEY there; returns COMMAND's exit status.
key_to_top() {
	local rc=0
	printf '%s' "$1" >&3
	wait "$pty" || rc=$?
	exec 3>&-
	return "$rc"
}

# A wide terminal: 3 frames, half a second apart.
on_pty 200 40 "$BIN/smcrctl top -n 3 -d 0.5" < /dev/null > "$WORK/wide.out" 2>&1 ||
	fail "top -n 3 exits $?: $(plain_text "$WORK/wide.out" | tail -n 5)"
expect_eq "frames drawn" "$(plain_text "$WORK/wide.out" | grep -c '^smcrctl top - ')" 3
last_frame "$WORK/wide.out" > "$WORK/frame.txt"
sed 's/^/    /' "$WORK/frame.txt"
grep -qE "^Connections: 5 open: 4 shm, 0 SMC-R, 1 TCP, 0 other" "$WORK/frame.txt" &&
	pass "header: 5 connections, 4 on shm, 1 on TCP" || fail "header: $(grep '^Connections' "$WORK/frame.txt")"
grep -qE "^Memory: [0-9.]+ MiB in use of max_memory $MB MiB" "$WORK/frame.txt" &&
	pass "header: memory against max_memory $MB MiB" || fail "header: $(grep '^Memory' "$WORK/frame.txt")"
rows=$(awk 'p && !NF { exit } p { print } /^ +PID COMMAND/ { p = 1 }' "$WORK/frame.txt")
expect_eq "one row per connection" "$(grep -c . <<< "$rows")" 5
read -r _ comm _ rin rout mode _ <<< "$(head -n 1 <<< "$rows")"
expect_eq "busiest first: socat on shm" "$comm $mode" "socat shm"
[[ $rin$rout =~ [KMG] ]] && pass "busiest first: moving data ($rin in, $rout out per second)" ||
	fail "busiest first moves nothing: $(head -n 1 <<< "$rows")"
expect_eq "idle connections on shm, at rate 0" \
	"$(awk '$4 == "0" && $5 == "0" && $6 == "shm"' <<< "$rows" | wc -l)" 2
grep -qE "^ +[0-9]+ socat +[0-9]+ +[0-9.KMG]+ +[0-9.KMG]+ TCP 0x03010000 PEERNOSMC " <<< "$rows" &&
	pass "the plain client's connection: TCP, PEERNOSMC" || fail "no PEERNOSMC row: $rows"
restored "$WORK/wide.out" "-n 3"

# A narrow, short window: no line wider than it, no frame taller.
on_pty 50 9 "$BIN/smcrctl top -n 2 -d 0.5" < /dev/null > "$WORK/narrow.out" 2>&1 ||
	fail "narrow: top exits $?"
expect_eq "narrow: lines wider than 50" \
	"$(plain_text "$WORK/narrow.out" | awk '/^speed / { exit } length > 50' | wc -l)" 0
# Each line of a frame clears the rest of its row (ESC [K); a frame starts at ESC [H.
expect_eq "narrow: the last frame's lines (the window's last row kept empty)" \
	"$(awk -v RS='\033\\[H' 'END { print gsub(/\033\[K/, "") }' "$WORK/narrow.out")" 8

# q, then Ctrl-C (the terminal's interrupt character, so SIGINT), end it.
for key in q $'\003'; do
	name=$([ "$key" = q ] && echo q || echo Ctrl-C)
	top_running 100 "$BIN/smcrctl top -d 0.5" "$WORK/key.out" "$name"
	key_to_top "$key"
	expect_eq "$name: exit status" "$?" 0
	restored "$WORK/key.out" "$name"
done

# A window made narrower while it runs (stty on its pty: the kernel sends
# SIGWINCH): the frames from then on fit the new width.
top_running 120 "tty > $WORK/tty; $BIN/smcrctl top -d 0.5" "$WORK/resize.out" resize
stty -F "$(cat "$WORK/tty")" cols 40 rows 30
size_after=$(wc -c < "$WORK/resize.out")
redrawn() { [ "$(tail -c +"$((size_after + 1))" "$WORK/resize.out" | grep -c 'PID COMMAND')" -ge 2 ]; }
until_true redrawn || fail "resize: no frames after the resize"
key_to_top q
wide=$(head -c "$size_after" "$WORK/resize.out" | plain_text /dev/stdin | awk 'length > 40' | wc -l)
[ "$wide" -gt 0 ] && pass "resize: $wide lines wider than 40 before" || fail "resize: none wider than 40 before"
# The last frame: two or more frames after the resize, drawn after it.
expect_eq "resize: lines wider than 40 in the last frame" \
	"$(last_frame "$WORK/resize.out" | awk '/^speed / { exit } length > 40' | wc -l)" 0

# Batch mode: frames without escapes; an unprivileged user sees only its own
# (none here) connections.
"$BIN/smcrctl" top -b -n 1 -d 0.2 > "$WORK/batch.out" || fail "top -b exits $?"
grep -q $'\e' "$WORK/batch.out" && fail "-b: escape sequences in the output" || pass "-b: plain text"
expect_eq "-b: rows" "$(awk 'p && NF { n++ } /^ +PID COMMAND/ { p = 1 } END { print n + 0 }' "$WORK/batch.out")" 5
test_user smcrtop
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run
setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups "$BIN/smcrctl" top -b -n 1 -d 0.2 \
	> "$WORK/user.out" 2>&1 || fail "top as uid $TEST_UID exits $?: $(cat "$WORK/user.out")"
grep -qE "^Connections: 0 open \(uid $TEST_UID's only\)" "$WORK/user.out" &&
	pass "uid $TEST_UID sees none of root's connections" || fail "as uid $TEST_UID: $(cat "$WORK/user.out")"
"$BIN/smcrctl" top -n 0 > /dev/null 2>&1
expect_eq "-n 0: usage error" "$?" 2
finish

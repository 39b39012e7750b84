#!/bin/bash
# inetd.sh BUILD_DIR - an inetd-style super-server under the preload:
# xinetd accepts each connection, forks and execs a shell script with the
# connection as its descriptors 0, 1 and 2, which reads a file name and
# execs cat on that file.  Twelve clients at once (socat, preloaded) each
# ask for one of three files (1 byte, 1 MiB, 3 MiB) and must get it whole,
# checked by sha256 (socat -t 60: by default it waits only 0.5 s for the
# answer once its input ended, which a slow guest's two execs outlast).
# Every connection goes over $SMCR_TEST_TRANSPORT from xinetd's accept,
# with no fallback; over RDMA, cat (whose image has no link) and then its
# client go on over TCP.  None of libsmcr's lines reaches a client (stderr
# is the connection too).
. "$(dirname "$0")/lib.sh"
PORT=19460
start_smcrd "$PORT" 64

mkdir "$WORK/files"
head -c 1 /dev/urandom > "$WORK/files/tiny"
head -c $((1 << 20)) /dev/urandom > "$WORK/files/mid"
head -c $((3 << 20)) /dev/urandom > "$WORK/files/big"
cat > "$WORK/serve.sh" <<'EOS'
IFS= read -r name
exec cat "$1/$name"
EOS
start_xinetd "$PORT" "$WORK/serve.sh" "$WORK/files"
server=$LAST_PID

names=(tiny mid big)
pids=()
bytes=0
for i in $(seq 0 11); do
	name=${names[i % 3]}
	bytes=$((bytes + $(stat -c %s "$WORK/files/$name")))
	echo "$name" | run_mode smcr timeout 60 socat -t 60 - "TCP:$TEST_ADDR:$PORT" \
		> "$WORK/got$i" 2> "$WORK/client$i.err" &
	pids+=($!)
done
for i in $(seq 0 11); do
	wait "${pids[i]}"
	expect_eq "client $i: socat exit status" "$?" 0
	expect_eq "client $i: ${names[i % 3]}, sha256" "$(sha256sum < "$WORK/got$i")" \
		"$(sha256sum < "$WORK/files/${names[i % 3]}")"
done
# cat, a new image, cannot use the RDMA link sh made: it goes on over TCP
# (LEAVE), and each client after it (docs/ARCHITECTURE.md).  So over RDMA
# only the names (52 bytes) went over the transport, and the files over TCP.
if [ "$TEST_TRANSPORT" = rdma ]; then
	on_transport "file names" 12 52
	expect_at_least "bytes received over TCP" "$(stats_counter tcp_bytes_in)" "$bytes"
	expect_eq "ends that left for TCP" "$(transport_counter left)" 24
	expect_eq "clients that went on over TCP after cat left" \
		"$(cat "$WORK"/client*.err | grep -c 'goes on over TCP from here: PEERLEFT')" 12
else
	on_transport "files served" 12 "$bytes"
	expect_eq "ends that left for TCP" "$(transport_counter left)" 0
fi
stop_bg "$server"
finish

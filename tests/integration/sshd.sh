#!/bin/bash
# sshd.sh BUILD_DIR - a privilege-separated server: OpenSSH's sshd and ssh,
# both under the preload.  sshd accepts, forks, and re-execs itself with the
# connection on descriptors 0 and 1; the new image forks a pre-auth child
# that chroots to /run/sshd, becomes the sshd user, sets RLIMIT_NOFILE to 1
# and RLIMIT_FSIZE to 0, and installs its seccomp filter (read, write, poll,
# futex and a few more; anything else kills it) before it speaks the key
# exchange; after login a third process carries the session.  Every one of
# them must carry the connection over $SMCR_TEST_TRANSPORT: 50 MiB up and
# 50 MiB down, each checked by sha256.  Over RDMA the pre-auth child,
# forked, goes on over TCP as its filter comes (it was killed by it: ssh
# exited 255).
. "$(dirname "$0")/lib.sh"
PORT=19490
MIB=50
[ -x /usr/sbin/sshd ] || { fail "sshd is not installed (tools/install-deps.sh --test)"; finish; }
start_smcrd "$PORT" 64

mkdir -p -m 755 /run/sshd               # its pre-auth chroot, as the package's unit makes it
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
cat > "$WORK/sshd_config" <<EOC
ListenAddress $TEST_ADDR:$PORT
HostKey $WORK/host_key
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile none
EOC
start_bg sshd smcr /usr/sbin/sshd -D -e -f "$WORK/sshd_config"
server=$LAST_PID
wait_listen "$PORT" "$server" || finish

ssh_to() {
	run_mode smcr timeout 120 ssh -p "$PORT" -i "$WORK/user_key" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
		"root@$TEST_ADDR" "$@"
}
head -c $((MIB << 20)) /dev/urandom > "$WORK/up"
want=$(sha256sum < "$WORK/up")
ssh_to "cat > $WORK/up.got" < "$WORK/up" 2> "$WORK/ssh-up.err"
expect_eq "upload: ssh exit status" "$?" 0
expect_eq "upload: sha256 of what sshd's session wrote" "$(sha256sum < "$WORK/up.got")" "$want"
ssh_to "cat $WORK/up" > "$WORK/down.got" 2> "$WORK/ssh-down.err"
expect_eq "download: ssh exit status" "$?" 0
expect_eq "download: sha256" "$(sha256sum < "$WORK/down.got")" "$want"
if [ "$TEST_TRANSPORT" = rdma ]; then
	# the pre-auth child, forked, cannot use the monitor's queue pair: it
	# goes on over TCP (LEAVE) as its filter comes, and its client after
	# it; the session then is TCP's (two sessions: 4 ends left)
	on_transport "ssh sessions" 2 0
	expect_eq "ends that left for TCP" "$(transport_counter left)" 4
	expect_at_least "bytes received, over RDMA and then TCP" \
		"$(($(transport_counter bytes_in) + $(stats_counter tcp_bytes_in)))" $((2 * MIB << 20))
else
	on_transport "ssh sessions" 2 $((2 * MIB << 20))
fi
stop_bg "$server"
finish

#!/bin/bash
# ftp.sh BUILD_DIR - passive-mode FTP through vsftpd and curl, both under the
# preload, with vsftpd's own confinement: its per-session process in a new
# PID namespace, its pre-login process in a new network namespace, chrooted,
# as nobody, with RLIMIT_NOFILE 0, and the data connections accepted by its
# privileged process and handed to the chrooted one over SCM_RIGHTS.  Its
# chroot (secure_chroot_dir) is made here, not left to the package: a
# machine whose /run is fresh (the VM guests) has no /var/run/vsftpd/empty,
# and without it vsftpd's pre-login process exits at once.
#
# Passive FTP is the protocol whose server accepts a data connection only
# after the client, having seen its connect() complete, sends STOR or RETR
# on the control connection: a client whose connect() (or poll for it)
# waited for the server's accept() would never send it.  Three downloads
# and three uploads of 4 MiB are checked by sha256.  The data connections
# must go over $SMCR_TEST_TRANSPORT (over RDMA they stay on TCP, see below);
# a control connection may stay on TCP,
# but only for a reason that names what the confined process could not do
# (NOSMCDEV: another network namespace, CONFINED: no descriptor it may
# receive), never reset.  vsftpd's seccomp sandbox is off: its pre-login
# filter forbids the futex and poll that a control connection already on
# SMC needs (docs/ARCHITECTURE.md, "Seccomp filters").
. "$(dirname "$0")/lib.sh"
PORT=19431
command -v vsftpd > /dev/null || { fail "vsftpd is not installed (tools/install-deps.sh --test)"; finish; }
start_smcrd "$PORT-19440" 64

chmod 755 "$WORK"
root=$WORK/ftproot
mkdir -p "$root/up" "$WORK/empty"
chown ftp "$root/up"
head -c $((4 << 20)) /dev/urandom > "$root/file.bin"
want=$(sha256sum < "$root/file.bin")
cat > "$WORK/vsftpd.conf" <<EOC
listen=YES
listen_address=$TEST_ADDR
listen_port=$PORT
background=NO
anonymous_enable=YES
local_enable=NO
write_enable=YES
anon_upload_enable=YES
anon_root=$root
no_anon_password=YES
pasv_enable=YES
pasv_min_port=$((PORT + 1))
pasv_max_port=$((PORT + 9))
pasv_address=$TEST_ADDR
secure_chroot_dir=$WORK/empty
isolate=YES
isolate_network=YES
seccomp_sandbox=NO
xferlog_enable=NO
EOC
start_bg vsftpd smcr vsftpd "$WORK/vsftpd.conf"
server=$LAST_PID
wait_listen "$PORT" "$server" || finish

url=ftp://$TEST_ADDR:$PORT
for i in 1 2 3; do
	run_mode smcr timeout 60 curl -sS --ftp-pasv -o "$WORK/got$i.bin" "$url/file.bin" \
		2> "$WORK/download$i.err"
	expect_eq "download $i: curl exit status" "$?" 0
	expect_eq "download $i: sha256" "$(sha256sum < "$WORK/got$i.bin")" "$want"
	run_mode smcr timeout 60 curl -sS --ftp-pasv -T "$root/file.bin" "$url/up/put$i.bin" \
		2> "$WORK/upload$i.err"
	expect_eq "upload $i: curl exit status" "$?" 0
	expect_eq "upload $i: sha256" "$(sha256sum < "$root/up/put$i.bin")" "$want"
done
if [ "$TEST_TRANSPORT" = rdma ]; then
	# vsftpd accepts them in its chrooted session process, which can reach
	# neither the verbs libraries nor /dev/infiniband (NOSMCDEV;
	# docs/ARCHITECTURE.md, "Processes and descriptors")
	on_transport "data connections (on TCP over an RDMA host)" 0 0
else
	on_transport "data connections" 6 $((6 * (4 << 20))) -
fi
while read -r name code count; do
	[ -n "$name" ] || continue      # none fell back
	case $name in
	NOSMCDEV|CONFINED|PEERDECL) pass "control connection ends on TCP: $name ($code): $count" ;;
	*) fail "a connection end fell back with $name ($code): $count" ;;
	esac
done <<< "$(fallback_reasons)"         # not < <(...): a VM guest has no /dev/fd
expect_eq "connections reset in the CLC exchange" "$(stats_counter handshake_errors)" 0
stop_bg "$server"
finish

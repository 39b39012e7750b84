#!/bin/bash
# guest-setup.sh DRIVER NETDEV ADDR/LEN COMMAND [ARGS...] - inside a tests/vm
# guest: brings up what smcr needs, then execs COMMAND.
#
# Owns the guest's devices (there is no udev, no init system):
#   lo up (the integration tests use 127.0.0.1 and ::1);
#   NETDEV with ADDR/LEN: "veth" makes a veth pair veth0/veth1 and puts ADDR
#     on veth0; "eth0" loads virtio_net and uses the guest's NIC.  Not lo:
#     rdma_cm cannot resolve routes over rxe on lo;
#   DRIVER rxe (Soft-RoCE, rdma_rxe) or siw (Soft-iWARP; the module file
#     $SIW_KO if set, see siw.sh) on that netdev, named rxe0 or siw0, with
#     rdma_ucm for librdmacm;
#   cgroup v2 at /sys/fs/cgroup: smcrd attaches its BPF sock_ops program to
#     the first cgroup2 mount it finds in /proc/self/mounts;
#   no limit on locked memory (ulimit -l: RDMA buffers are registered).
# Fails (exit 1) if any step does, or if the device is not ACTIVE.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 rxe|siw veth|eth0 ADDR/LEN COMMAND [ARGS...]" >&2; exit 2; }
driver=$1 netdev=$2 addr=$3
shift 3
step() { echo "guest-setup: $*"; "$@" || { echo "guest-setup: FAILED: $*"; exit 1; }; }

step ip link set lo up
case $netdev in
	veth)
		step modprobe veth
		step ip link add veth0 type veth peer name veth1
		step ip link set veth1 up
		netdev=veth0 ;;
	eth0) step modprobe virtio_net ;;
	*) echo "guest-setup: unknown netdev $netdev" >&2; exit 2 ;;
esac
step ip addr add "$addr" dev "$netdev"
step ip link set "$netdev" up

case $driver in
	rxe) step modprobe rdma_rxe ;;
	siw)
		if [ -n "${SIW_KO:-}" ]; then   # built by siw.sh: the kernel has none
			step modprobe -a ib_core libcrc32c
			step insmod "$SIW_KO"
		else
			step modprobe siw
		fi ;;
	*) echo "guest-setup: unknown driver $driver" >&2; exit 2 ;;
esac
step modprobe rdma_ucm
step rdma link add "${driver}0" type "$driver" netdev "$netdev"
for _ in $(seq 50); do
	rdma link show "${driver}0/1" 2>/dev/null | grep -q 'state ACTIVE' && break
	sleep 0.1
done
rdma link show "${driver}0/1"
rdma link show "${driver}0/1" | grep -q 'state ACTIVE' || { echo "guest-setup: ${driver}0 not ACTIVE"; exit 1; }

mkdir -p /sys/fs/cgroup
step mount -t cgroup2 none /sys/fs/cgroup
# Registered memory is locked memory, and siw counts it against
# RLIMIT_MEMLOCK even for root (8 MiB by default: a dozen connections), as
# an administrator running RDMA applications raises it.
step ulimit -l unlimited
echo "guest-setup: ready, running $*"
exec "$@"

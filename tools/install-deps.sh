#!/bin/bash
# install-deps.sh [--test|--rdma-vm] - install the Debian packages smcr needs, if missing.
#   (no option)  what the build and the demonstration need
#   --test       also the real programs the integration tests run
#   --rdma-vm    also what the RDMA tests need to run in a qemu guest with a
#                soft-RDMA device (research/softroce-vm.md): the verbs
#                providers (rxe, siw), rdma tools, perftest, qemu, a kernel
set -euo pipefail

build=(cmake make gcc pkg-config libc6-dev
       libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev
       libcmocka-dev clang libbpf-dev linux-libc-dev
       redis-server redis-tools)
tests=(iperf3 sockperf socat curl python3 procps iproute2 tcpdump util-linux
       libclang-rt-14-dev man-db bsdextrautils)

rdma_vm=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
         qemu-system-x86 linux-image-amd64 busybox-static gdb)

want=("${build[@]}")
[ "${1:-}" = --test ] && want+=("${tests[@]}")
[ "${1:-}" = --rdma-vm ] && want+=("${rdma_vm[@]}")

missing=()
for pkg in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root (or apt-get install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null

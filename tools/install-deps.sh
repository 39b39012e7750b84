#!/bin/bash
# install-deps.sh [--test] [--vm] - install the Debian packages smcr needs, if missing.
#   (no option)  what the build (CMake, and the Debian package) and the demonstration need
#   --test       also the real programs the integration tests run, and what
#                the package stage checks with (lintian, bpftool)
#   --vm         also what tests/vm/ needs: qemu, a guest kernel, busybox, the
#                user-space verbs stack (rdma-core, perftest) for rxe and siw,
#                and the kernel's source and headers to build siw (Debian's
#                kernel has no siw module)
set -euo pipefail

build=(cmake make gcc pkg-config libc6-dev
       libibverbs-dev librdmacm-dev libnl-3-dev libnl-route-3-dev
       libcmocka-dev clang libbpf-dev linux-libc-dev
       redis-server redis-tools
       debhelper dpkg-dev fakeroot)
tests=(iperf3 sockperf socat curl vsftpd xinetd openssh-server python3 procps iproute2 tcpdump util-linux
       libclang-rt-14-dev man-db bsdextrautils nginx wrk nodejs bash-completion
       python3-prometheus-client lintian bpftool strace)

vm=(qemu-system-x86 linux-image-amd64 busybox-static cpio gzip kmod iproute2
    linux-headers-amd64 linux-source make xz-utils
    rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest)

want=("${build[@]}")
for opt in "$@"; do
	case $opt in
		--test) want+=("${tests[@]}") ;;
		--vm) want+=("${vm[@]}") ;;
		*) echo "usage: $0 [--test] [--vm]" >&2; exit 2 ;;
	esac
done

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

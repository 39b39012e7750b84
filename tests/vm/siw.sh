#!/bin/bash
# siw.sh CACHE_DIR - a Soft-iWARP module for the guest kernel, if it lacks one.
#
# Owns siw: Debian's kernel is built without CONFIG_RDMA_SIW, so this
# compiles drivers/infiniband/sw/siw from the distribution's kernel source
# (linux-source) against the guest kernel's headers (linux-headers-KVER)
# into CACHE_DIR/siw.ko; it is rebuilt only when the kernel changes.  The
# kernel is the one initramfs.sh chose (CACHE_DIR/vmlinuz).  Prints the
# module's path, or nothing when the kernel has its own siw (modprobe works).
set -euo pipefail
cache=$(cd "${1:?usage: $0 CACHE_DIR}" && pwd)
kernel=$(readlink "$cache/vmlinuz") || { echo "siw.sh: run initramfs.sh first" >&2; exit 1; }
kver=${kernel#/boot/vmlinuz-}

if modinfo -k "$kver" siw > /dev/null 2>&1; then
	exit 0
fi
if [ -f "$cache/siw.ko" ] && [ "$(cat "$cache/siw.stamp" 2>/dev/null)" = "$kver" ]; then
	echo "$cache/siw.ko"
	exit 0
fi

series=$(cut -d. -f1,2 <<< "$kver")           # 6.1.0-56-amd64 -> 6.1
src=/usr/src/linux-source-$series.tar.xz
headers=/lib/modules/$kver/build
[ -f "$src" ] || { echo "siw.sh: no $src (tools/install-deps.sh --vm)" >&2; exit 1; }
[ -d "$headers" ] || { echo "siw.sh: no $headers (linux-headers-$kver)" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tar -xJf "$src" -C "$dir" --strip-components=5 "linux-source-$series/drivers/infiniband/sw/siw"
make -s -C "$headers" M="$dir" CONFIG_RDMA_SIW=m modules > "$dir/build.log" 2>&1 ||
	{ cat "$dir/build.log" >&2; echo "siw.sh: building siw for $kver failed" >&2; exit 1; }
cp "$dir/siw.ko" "$cache/siw.ko"
echo "$kver" > "$cache/siw.stamp"
echo "$cache/siw.ko"

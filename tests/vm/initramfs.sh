#!/bin/bash
# initramfs.sh CACHE_DIR - the guest's kernel and initramfs for tests/vm/.
#
# Owns the guest's boot: the newest /boot/vmlinuz-* (its version is
# discovered, never written down here), and a busybox initramfs holding the
# modules that kernel needs to reach the host's root over virtio-9p (virtio,
# 9p, overlay, in the order modprobe --show-depends gives) and an /init that
#   - mounts the host's / read-only over 9p (tag hostroot) under a tmpfs overlay,
#   - mounts proc, sys, devtmpfs, devpts, /dev/shm, /run and the writable
#     share (tag out) at /out,
#   - switch_roots (not chroot: rdma link add makes the kernel run
#     /sbin/modprobe, which must be the host's) and runs /out/job.sh,
#   - writes its exit status to /out/rc and powers off (qemu exits).
# Writes CACHE_DIR/vmlinuz (a link), CACHE_DIR/initramfs.cpio.gz and
# CACHE_DIR/stamp; rebuilds only when the kernel or this script changed.
set -euo pipefail
cache=$(mkdir -p "${1:?usage: $0 CACHE_DIR}" && cd "$1" && pwd)

kernel=$(ls -v /boot/vmlinuz-* 2>/dev/null | tail -n 1 || true)
[ -n "$kernel" ] || { echo "initramfs.sh: no /boot/vmlinuz-* (tools/install-deps.sh --vm)" >&2; exit 1; }
kver=${kernel#/boot/vmlinuz-}
stamp="$kver $(sha256sum < "$0")"
if [ -f "$cache/initramfs.cpio.gz" ] && [ "$(cat "$cache/stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,mods,proc,sys,dev,mnt/host,mnt/rw,mnt/root}
cp /bin/busybox "$root/bin/busybox"

# The modules in load order, uncompressed (busybox insmod reads plain .ko).
n=0
while read -r kind path; do
	[ "$kind" = insmod ] || continue        # "builtin NAME": nothing to load
	n=$((n + 1))
	dest=$root/mods/$(printf %02d "$n")-$(basename "${path%%.ko*}").ko
	case $path in
		*.ko) cp "$path" "$dest" ;;
		*.ko.xz) xz -dc "$path" > "$dest" ;;
		*.ko.zst) zstd -qdc "$path" > "$dest" ;;
		*) echo "initramfs.sh: cannot read $path" >&2; exit 1 ;;
	esac
done < <(for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -S "$kver" --show-depends "$m"
	 done | awk '!seen[$0]++')

cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in /mods/*.ko; do insmod "$m" || echo "init: insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /mnt/host ||
	{ echo "init: 9p root mount failed"; poweroff -f; }
mount -t tmpfs -o size=512m tmpfs /mnt/rw
mkdir -p /mnt/rw/upper /mnt/rw/work
mount -t overlay overlay -o lowerdir=/mnt/host,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work /mnt/root ||
	{ echo "init: overlay mount failed"; poweroff -f; }
mount -t proc proc /mnt/root/proc
mount -t sysfs sys /mnt/root/sys
mount -t devtmpfs dev /mnt/root/dev
mkdir -p /mnt/root/dev/pts /mnt/root/dev/shm /mnt/root/out
mount -t devpts devpts /mnt/root/dev/pts
mount -t tmpfs shm /mnt/root/dev/shm
mount -t tmpfs run /mnt/root/run
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /mnt/root/out ||
	{ echo "init: out share mount failed"; poweroff -f; }
exec switch_root /mnt/root /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb /bin/bash -c '
	cd /; /bin/bash /out/job.sh </dev/null >/dev/console 2>&1; rc=$?
	echo "$rc" > /out/rc; echo "init: job rc=$rc"; sync; umount /out
	exec /usr/bin/busybox poweroff -f'
INIT
chmod +x "$root/init"

(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$cache/initramfs.cpio.gz.new"
mv "$cache/initramfs.cpio.gz.new" "$cache/initramfs.cpio.gz"
ln -sfn "$kernel" "$cache/vmlinuz"
echo "$stamp" > "$cache/stamp"
echo "initramfs.sh: kernel $kver, $n modules, $cache/initramfs.cpio.gz"

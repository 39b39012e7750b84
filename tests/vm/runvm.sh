#!/bin/bash
# runvm.sh OUTDIR SCRIPT [ARGS...] - boots one qemu guest (TCG) that runs
# "bash SCRIPT ARGS..." as root on the host's file system, and exits with
# SCRIPT's status (125 if the guest never reported one, 124 if it was killed
# at the time limit).
#
# Owns one guest's lifetime.  The guest sees the host's / read-only (writes
# go to a tmpfs overlay and are lost) and OUTDIR, writable, at /out: the job
# (/out/job.sh), its status (/out/rc), the serial console (console.log, on
# the host side) and whatever the script leaves there.  Paths in SCRIPT and
# ARGS are the host's; the job starts in the current directory.  Environment:
#   VM_CACHE   where initramfs.sh keeps the kernel and initramfs (/var/tmp/smcr-vm)
#   VM_TIMEOUT seconds before qemu is killed (300)
#   VM_MEM, VM_SMP  guest memory and CPUs (768M, 2)
#   VM_NET     qemu options for a network device (none by default)
#   VM_ENV     names of variables to pass on to SCRIPT
set -euo pipefail
out=$(mkdir -p "${1:?usage: $0 OUTDIR SCRIPT [ARGS...]}" && cd "$1" && pwd)
script=$(realpath "${2:?usage: $0 OUTDIR SCRIPT [ARGS...]}")
shift 2
here=$(dirname "$(realpath "$0")")
cache=${VM_CACHE:-/var/tmp/smcr-vm}

"$here/initramfs.sh" "$cache"

rm -f "$out/rc" "$out/console.log"
{
	echo "# written by runvm.sh; run by the guest's /init"
	for v in ${VM_ENV:-}; do printf 'export %s=%q\n' "$v" "${!v-}"; done
	printf 'cd %q\n' "$PWD"
	printf 'exec /bin/bash %q' "$script"
	printf ' %q' "$@"
	echo
} > "$out/job.sh"

# shellcheck disable=SC2086  # VM_NET is a list of qemu options
timeout -k 5 "${VM_TIMEOUT:-300}" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -m "${VM_MEM:-768M}" -smp "${VM_SMP:-2}" \
	-nographic -no-reboot -monitor none -serial "file:$out/console.log" \
	-kernel "$cache/vmlinuz" -initrd "$cache/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet panic=-1" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$out,mount_tag=out,security_model=none" \
	${VM_NET:--nic none} < /dev/null > "$out/qemu.log" 2>&1 || {
	rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "runvm.sh: $script: killed after ${VM_TIMEOUT:-300} s" >&2
		exit 124
	fi
	echo "runvm.sh: qemu exited with $rc: $(tail -n 3 "$out/qemu.log")" >&2
}
rc=$(cat "$out/rc" 2>/dev/null || true)
[[ $rc =~ ^[0-9]+$ ]] || { echo "runvm.sh: $script reported no status (see $out/console.log)" >&2; exit 125; }
exit "$rc"

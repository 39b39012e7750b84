#!/bin/bash
# check_links.sh CC ARCHIVE... - every layer links with only the layers
# below it.  ARCHIVEs are the layers' static libraries, lowest first (as
# libsmcr/CMakeLists.txt lists them).  Each is linked whole into a shared
# object with the archives below it and the C library, with
# --no-undefined: a function that a layer calls in a layer above it is an
# undefined symbol there, and the link fails, naming it.
set -u -o pipefail
[ $# -ge 2 ] || { echo "usage: $0 CC ARCHIVE..." >&2; exit 2; }
cc=$1; shift
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
below=() failed=0
for archive in "$@"; do
	layer=$(basename "$archive" .a)
	if "$cc" -shared -o "$work/$layer.so" -Wl,--whole-archive "$archive" -Wl,--no-whole-archive \
		$(printf '%s\n' "${below[@]}" | tac) -ldl -lpthread -Wl,--no-undefined \
		2> "$work/$layer.log"; then
		echo "ok: $layer links over ${#below[@]} layers below it"
	else
		echo "FAIL: $layer calls upward (or outside its layers):"
		grep -o "undefined reference to .*" "$work/$layer.log" | sort -u | sed 's/^/  /'
		failed=1
	fi
	below+=("$archive")
done
exit $failed

#!/bin/bash
# depgraph.sh [--cycles] OBJECT... - which source file calls which: an
# edge "A B" for each function or variable that A's object uses and B's
# object defines, unless the C library defines it too (libsmcr's
# interposers define read(), close(), ...: a file calling close() calls the
# C library's).  With --cycles, lists the groups of files that reach each
# other instead (exit 1 if there is any).
set -eu -o pipefail
mode=edges
if [ "${1:-}" = --cycles ]; then mode=cycles; shift; fi
[ $# -gt 0 ] || { echo "usage: $0 [--cycles] OBJECT..." >&2; exit 2; }
libc=$(${CC:-cc} -print-file-name=libc.so.6)
edges=$({ nm -D --defined-only "$libc" | awk '{print "C", $3}' | sed 's/@.*//'
for o in "$@"; do
	src=$(basename "$o" .o); src=${src%.c}
	nm -P --defined-only "$o" | awk -v f="$src" '$2 ~ /^[TDBRVW]$/ {print "D", $1, f}'
	nm -P --undefined-only "$o" | awk -v f="$src" '{print "U", $1, f}'
done; } | awk '$1 == "C" {libc[$2]; next} $1 == "D" {def[$2] = $3; next} !($2 in libc) {use[NR] = $2; user[NR] = $3}
	END {for (i in use) if ((use[i] in def) && def[use[i]] != user[i]) print user[i], def[use[i]]}' | sort -u)
if [ $mode = edges ]; then printf '%s\n' "$edges"; exit 0; fi
# Strongly connected components by reachability (small graphs: files).
printf '%s\n' "$edges" | awk '
	NF == 2 {r[$1, $2] = 1; n[$1]; n[$2]}
	END {
		for (k in n) for (i in n) if (r[i, k]) for (j in n) if (r[k, j]) r[i, j] = 1
		bad = 0
		for (i in n) if (!(i in done)) {
			g = i; done[i]
			for (j in n) if (j != i && r[i, j] && r[j, i]) {g = g " " j; done[j]}
			if (g != i || r[i, i]) {print "cycle: " g; bad = 1}
		}
		exit bad
	}'

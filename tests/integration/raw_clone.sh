#!/bin/bash
# raw_clone.sh BUILD_DIR - a child of the raw clone system call (vsftpd's
# fork into new namespaces) that dies holding a robust mutex shared with
# its parent leaves it to the parent (EOWNERDEAD) under the preload: the
# child gets its own thread id and robust list, as fork() would give it.
# Plainly the C library leaves it its parent's id and no list, and the lock
# stays held for ever: an application's shared robust mutex that a
# sandboxed child died holding hung every other holder
# (tests/progs/clone_probe.c).  No smcrd: this is libsmcr alone.
. "$(dirname "$0")/lib.sh"

"$BIN/clone_probe" > "$WORK/plain.out" 2>&1
expect_eq "plain: clone_probe exit status" "$?" 0
expect_eq "plain: the id in the child's locks (the danger)" \
	"$(sed -n 's/^the id in the child.s locks: //p' "$WORK/plain.out")" "its parent's"
expect_eq "plain: the lock the child died holding (the danger)" \
	"$(sed -n 's/^the lock the child died holding: //p' "$WORK/plain.out")" "still held"

run_mode smcr "$BIN/clone_probe" > "$WORK/smcr.out" 2> "$WORK/smcr.err"
expect_eq "preloaded: clone_probe exit status" "$?" 0
expect_eq "preloaded: the id in the child's locks" \
	"$(sed -n 's/^the id in the child.s locks: //p' "$WORK/smcr.out")" "its own"
expect_eq "preloaded: the lock the child died holding" \
	"$(sed -n 's/^the lock the child died holding: //p' "$WORK/smcr.out")" "given back"
finish

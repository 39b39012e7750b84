/*
 * exec.h - an exec made around libsmcr's hand-over of this image's holds
 * (preload_exec.c), whichever way it is made: the C library's exec
 * functions, or the raw system call (preload_clone.c's syscall()).
 */
#ifndef SMCR_EXEC_H
#define SMCR_EXEC_H

/*
 * exec(arg), an exec: this image's connections are handed to the next
 * before, and taken back if it returns (it failed).  Its result, errno
 * as it left it.
 */
long smcr_exec_by(long (*exec)(void *arg), void *arg);

#endif

/*
 * vfork_x86_64.S - vfork and __vfork interposed on x86-64.  Each calls its
 * C half (preload_vfork.c: offer every connection not yet on offer, and
 * find the C library's function) with the stack 16-byte aligned, then
 * jumps to that function with the stack as it came: the caller's return
 * address on top and nothing of ours below it, so that the child, which
 * returns on the parent's stack, returns straight to the caller, as the C
 * library's vfork makes it (it keeps that address in a register across
 * the system call).  vfork takes no arguments and the caller keeps no
 * value in a register the C function may change, so no other register
 * needs keeping.  AArch64's stub is vfork_aarch64.S; other architectures
 * have none: there vfork is the C library's, unchanged
 * (docs/ARCHITECTURE.md, "vfork").
 */
#ifdef __CET__
#include <cet.h>                /* _CET_ENDBR, and the note that marks IBT and SHSTK */
#else
#define _CET_ENDBR
#endif

.macro vfork_stub name, prepare
	.text
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	_CET_ENDBR
	subq $8, %rsp                   /* 16-byte aligned at the call */
	.cfi_adjust_cfa_offset 8
	call \prepare@PLT
	addq $8, %rsp                   /* the caller's return address on top */
	.cfi_adjust_cfa_offset -8
	jmp *%rax
	.cfi_endproc
	.size \name, . - \name
.endm

vfork_stub vfork, smcr_vfork_prepare
vfork_stub __vfork, smcr___vfork_prepare

.section .note.GNU-stack, "", @progbits

/*
 * vfork_aarch64.S - vfork and __vfork interposed on AArch64, as
 * vfork_x86_64.S does on x86-64.  Each keeps the frame pointer and the
 * return address (x30) in a frame of its own, calls its C half
 * (preload_vfork.c: offer every connection not yet on offer, and find the
 * C library's function), takes both back and frees the frame, then
 * branches to that function with sp and x30 as they came: nothing of ours
 * is left on the stack that the child, running on its parent's, could
 * overwrite, and the child and the parent each return to the caller
 * through x30, as the C library's vfork makes it.  vfork takes no
 * arguments; x16 (the intra-procedure-call register, which a BTI "c"
 * landing pad accepts) carries the target.
 */
.macro vfork_stub name, prepare
	.text
	.globl \name
	.type \name, %function
	.p2align 2
\name:
	.cfi_startproc
	hint #34                        /* bti c, where branch protection is on */
	stp x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov x29, sp
	bl \prepare
	mov x16, x0
	ldp x29, x30, [sp], #16
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	br x16
	.cfi_endproc
	.size \name, . - \name
.endm

vfork_stub vfork, smcr_vfork_prepare
vfork_stub __vfork, smcr___vfork_prepare

#ifdef __ARM_FEATURE_BTI_DEFAULT
/* The note that keeps the library marked for BTI: every entry above has its pad. */
	.pushsection .note.gnu.property, "a"
	.balign 8
	.long 4                         /* name size */
	.long 16                        /* descriptor size */
	.long 5                         /* NT_GNU_PROPERTY_TYPE_0 */
	.asciz "GNU"
	.long 0xc0000000                /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.long 4
	.long 1                         /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */
	.long 0
	.popsection
#endif

.section .note.GNU-stack, "", %progbits

/*
 * fuzz_filter.c - libFuzzer target for the seccomp filter interpreter
 * (libsmcr/base/filter.c): any program over any system call.  An input is
 * a struct seccomp_data, then the program's instructions (8 bytes each),
 * copied to a buffer of exactly their size so that ASan sees any read past
 * the program; the run must end (every jump goes forward) without reading
 * outside the data, and UBSan catches a shift or division gone wrong.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seccomp_data d;
	struct sock_filter *prog;
	size_t n;

	if (size < sizeof(d))
		return 0;
	memcpy(&d, data, sizeof(d));
	n = (size - sizeof(d)) / sizeof(*prog);
	if (n > BPF_MAXINSNS)
		n = BPF_MAXINSNS;
	prog = malloc(n ? n * sizeof(*prog) : 1);
	if (!prog)
		return 0;
	memcpy(prog, data + sizeof(d), n * sizeof(*prog));
	(void)smcr_filter_run(prog, (unsigned int)n, &d);
	free(prog);
	return 0;
}

/*
 * grant_client - asks smcrd for buffer memory through libsmcr's control
 * client, as a connection setting up its buffers will.
 *
 *   grant_client [--hold] BYTES...
 *
 * Prints one line per request: "granted BYTES" or "refused BYTES: reason".
 * With --hold it then waits to be killed, holding its grants.  SMCR_LOG
 * says what libsmcr's client logs, as in a preloaded process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "log.h"

int main(int argc, char **argv)
{
	int i = 1, hold = argc > 1 && strcmp(argv[1], "--hold") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	smcr_log_init();
	for (i += hold; i < argc; i++) {
		unsigned long long bytes = strtoull(argv[i], NULL, 0);
		int rc = smcr_control_grant(bytes);
		if (rc == 0)
			printf("granted %llu\n", bytes);
		else
			printf("refused %llu: %s\n", bytes, strerror(-rc));
	}
	printf("done\n");
	while (hold)
		pause();
	return 0;
}

/*
 * connect - cost of setting up a TCP connection: connect + accept + close.
 *
 *   connect PORT [PAIRS]
 *
 * Listens on 127.0.0.1:PORT and runs PAIRS connect/accept pairs in one
 * thread, each closed with a reset (SO_LINGER 0) so no TIME_WAIT builds up.
 * Prints microseconds per pair.  connect.sh runs it with and without smcrd
 * and the preload, to measure what negotiation adds per connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: connect PORT [PAIRS]\n");
		return 2;
	}
	long pairs = argc > 2 ? atol(argv[2]) : 5000;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
	struct linger abort_close = { .l_onoff = 1, .l_linger = 0 };
	int one = 1;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (void *)&a, sizeof(a)) || listen(l, 128)) {
		perror("listen");
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < pairs; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (void *)&a, sizeof(a))) {
			perror("connect");
			return 1;
		}
		int s = accept(l, NULL, NULL);
		if (s < 0) {
			perror("accept");
			return 1;
		}
		setsockopt(c, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
		close(c);
		close(s);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.2f\n", ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / pairs);
	return 0;
}

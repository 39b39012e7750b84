/*
 * passthrough - cost of one small write + read on a TCP loopback connection.
 *
 *   passthrough [ITERATIONS]
 *
 * Prints nanoseconds per write+read pair.  Run with and without libsmcr.so
 * (passthrough.sh does) to see what the interposition layer adds per call.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 200000;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int one = 1;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(l, (void *)&a, sizeof(a)) || listen(l, 1) || getsockname(l, (void *)&a, &len)) {
		perror("listen");
		return 1;
	}
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (void *)&a, sizeof(a))) {
		perror("connect");
		return 1;
	}
	int s = accept(l, NULL, NULL);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	struct timespec t0, t1;
	char b = 'x';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < iterations; i++) {
		if (write(c, &b, 1) != 1 || read(s, &b, 1) != 1) {
			perror("io");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / iterations;
	printf("%.1f\n", ns);
	return 0;
}

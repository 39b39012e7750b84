/*
 * sockprobe - exercises every interposed call, successes and failures, and
 * prints each result, errno and descriptor number.  The integration test runs
 * it with and without libsmcr.so and requires identical output: the preload
 * must be invisible.  Built with _FORTIFY_SOURCE so that read, recv, recvfrom,
 * poll and ppoll go through glibc's __*_chk entry points, as in distribution
 * binaries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long rc)
{
	printf("%-28s rc=%ld errno=%s\n", what, rc, rc < 0 ? strerrorname_np(errno) : "-");
	errno = 0;
}

#define CALL(what, expr) show(what, (long)(expr))

/* A length the compiler cannot see: fortified calls then go through __*_chk. */
static size_t dyn(size_t n)
{
	static volatile size_t launder;
	launder = n;
	return launder;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	return a;
}

/* A connected pair over TCP loopback; returns the listener. */
static int tcp_pair(int *client, int *server)
{
	struct sockaddr_in a = loopback(0);
	socklen_t len = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	CALL("socket(listener)", lfd);
	CALL("setsockopt(SO_REUSEADDR)", setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CALL("bind", bind(lfd, (void *)&a, sizeof(a)));
	CALL("getsockname", getsockname(lfd, (void *)&a, &len));
	CALL("listen", listen(lfd, 16));
	*client = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
	CALL("socket(client)", *client);
	CALL("connect", connect(*client, (void *)&a, sizeof(a)));
	*server = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CALL("accept4", *server);
	return lfd;
}

static void data_calls(int c, int s)
{
	char buf[256] = { 0 }, big[4096];
	struct iovec iov[3] = { { "ab", 2 }, { "cde", 3 }, { "f", 1 } };
	struct iovec riov[2] = { { buf, 2 }, { buf + 2, 64 } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };
	struct mmsghdr mm[2] = { { .msg_hdr = { .msg_iov = iov, .msg_iovlen = 1 } },
				 { .msg_hdr = { .msg_iov = iov + 1, .msg_iovlen = 2 } } };
	int avail = -1;

	CALL("write", write(c, "hello", 5));
	CALL("read", read(s, buf, dyn(sizeof(buf))));
	CALL("send", send(c, "world", 5, 0));
	CALL("recv(MSG_PEEK)", recv(s, buf, 3, MSG_PEEK));
	CALL("ioctl(FIONREAD)", ioctl(s, FIONREAD, &avail));
	printf("FIONREAD=%d\n", avail);
	CALL("recv", recv(s, buf, dyn(sizeof(buf)), 0));
	printf("data=%.5s\n", buf);
	CALL("recv(empty, DONTWAIT)", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	CALL("writev", writev(c, iov, 3));
	CALL("readv", readv(s, riov, 2));
	CALL("sendmsg", sendmsg(c, &msg, MSG_NOSIGNAL));
	struct sockaddr_in from;
	socklen_t fromlen = sizeof(from);
	CALL("recvfrom", recvfrom(s, buf, dyn(sizeof(buf)), 0, (void *)&from, &fromlen));
	CALL("sendto", sendto(s, "xy", 2, 0, NULL, 0));
	struct msghdr rmsg = { .msg_iov = riov, .msg_iovlen = 2 };
	CALL("recvmsg", recvmsg(c, &rmsg, 0));
	CALL("sendmmsg", sendmmsg(c, mm, 2, 0));
	struct mmsghdr rmm[1] = { { .msg_hdr = { .msg_iov = riov, .msg_iovlen = 2 } } };
	CALL("recvmmsg", recvmmsg(s, rmm, 1, 0, NULL));
	/* how much of the two messages came at once is timing (Nagle): take the rest */
	printf("recvmmsg len in 1..6: %d\n", rmm[0].msg_len >= 1 && rmm[0].msg_len <= 6);
	if (rmm[0].msg_len < 6)
		recv(s, buf, 6 - rmm[0].msg_len, MSG_WAITALL);
	CALL("recv(MSG_WAITALL 6)", (send(c, "123456", 6, 0), recv(s, buf, 6, MSG_WAITALL)));

	/* big transfer in both directions, content checked */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	size_t got = 0;
	CALL("write(4096)", write(c, big, sizeof(big)));
	while (got < sizeof(big)) {
		ssize_t n = read(s, buf, sizeof(buf));
		if (n <= 0)
			break;
		if (memcmp(buf, big + got, (size_t)n) != 0)
			printf("MISMATCH at %zu\n", got);
		got += (size_t)n;
	}
	printf("big received %zu\n", got);
}

static void file_calls(int c, int s)
{
	char path[] = "/tmp/sockprobe.XXXXXX", buf[64];
	int f = mkstemp(path);
	int pipefd[2];
	off_t off = 2;

	unlink(path);
	CALL("write(file)", write(f, "0123456789", 10));
	CALL("sendfile", sendfile(c, f, &off, 5));
	CALL("read(after sendfile)", read(s, buf, sizeof(buf)));
	printf("sendfile offset=%ld data=%.5s\n", (long)off, buf);
	CALL("pipe", pipe(pipefd));
	CALL("write(sock for splice)", write(c, "spliced", 7));
	CALL("splice(sock->pipe)", splice(s, NULL, pipefd[1], NULL, 7, 0));
	CALL("splice(pipe->sock)", splice(pipefd[0], NULL, s, NULL, 7, 0));
	CALL("read(spliced)", read(c, buf, sizeof(buf)));
	CALL("recv(regular file)", recv(f, buf, 1, 0));
	CALL("getsockopt(file)", getsockopt(f, SOL_SOCKET, SO_TYPE, buf, &(socklen_t){ 4 }));
	close(pipefd[0]);
	close(pipefd[1]);
	close(f);
}

static void control_calls(int c, int s)
{
	int v = 0, one = 1;
	socklen_t len = sizeof(v);

	CALL("getsockopt(SO_TYPE)", getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &len));
	printf("SO_TYPE=%d\n", v);
	CALL("setsockopt(TCP_NODELAY)", setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	CALL("getsockopt(TCP_NODELAY)", getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	printf("TCP_NODELAY=%d\n", v != 0);
	CALL("setsockopt(bad level)", setsockopt(c, 12345, 1, &one, sizeof(one)));
	CALL("getsockopt(SO_ERROR)", getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &len));
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	CALL("getpeername", getpeername(s, (void *)&peer, &plen));
	int fl = fcntl(s, F_GETFL);
	CALL("fcntl(F_GETFL)", fl);
	CALL("fcntl(F_SETFL,O_NONBLOCK)", fcntl(s, F_SETFL, fl | O_NONBLOCK));
	CALL("read(nonblock empty)", read(s, &v, 1));
	CALL("ioctl(FIONBIO off)", ioctl(s, FIONBIO, &(int){ 0 }));
	CALL("fcntl(F_GETFL) after", fcntl(s, F_GETFL) & O_NONBLOCK);
	CALL("fcntl(F_GETFD)", fcntl(s, F_GETFD));
	CALL("fcntl(F_DUPFD,100)", fcntl(c, F_DUPFD, 100));
	CALL("fcntl(F_DUPFD_CLOEXEC)", fcntl(c, F_DUPFD_CLOEXEC, 0));
	CALL("fcntl(bad fd)", fcntl(-1, F_GETFL));
	CALL("ioctl(bad request)", ioctl(c, 0x7fff, NULL));
}

static void dup_calls(int c, int s)
{
	char b;
	int d = dup(c);
	CALL("dup", d);
	CALL("dup2(d,50)", dup2(d, 50));
	CALL("dup2(same)", dup2(d, d));
	CALL("dup3(d,51,CLOEXEC)", dup3(d, 51, O_CLOEXEC));
	CALL("dup3(same)", dup3(d, d, 0));
	CALL("dup(-1)", dup(-1));
	CALL("write(dup2 copy)", write(50, "x", 1));
	CALL("read(from dup2 copy)", read(s, &b, 1));
	CALL("close(50)", close(50));
	CALL("close(50) again", close(50));
	CALL("close(51)", close(51));
	CALL("close(d)", close(d));
	CALL("close_range(100,100)", close_range(100, 100, 0));
	CALL("close_range(bad)", close_range(10, 5, 0));
	CALL("close_range(CLOEXEC)", close_range(200, 300, CLOSE_RANGE_CLOEXEC));
}

static void wait_calls(int c, int s)
{
	struct pollfd p[2] = { { .fd = s, .events = POLLIN }, { .fd = c, .events = POLLOUT } };
	struct timespec zero = { 0, 0 };
	fd_set rs;
	char b;

	CALL("poll(idle)", poll(p, 1, 0));
	CALL("write(1)", write(c, "z", 1));
	CALL("poll(readable)", poll(p, dyn(2), 1000));
	printf("revents=%x,%x\n", p[0].revents, p[1].revents);
	CALL("ppoll(readable)", ppoll(p, dyn(1), &zero, NULL));
	FD_ZERO(&rs);
	FD_SET(s, &rs);
	CALL("select(readable)", select(s + 1, &rs, NULL, NULL, &(struct timeval){ 1, 0 }));
	CALL("pselect(readable)", pselect(s + 1, &rs, NULL, NULL, &zero, NULL));
	CALL("read(1)", read(s, &b, 1));
	FD_SET(s, &rs);
	CALL("select(idle)", select(s + 1, &rs, NULL, NULL, &(struct timeval){ 0, 0 }));

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0xabcdef }, out[4];
	CALL("epoll_create1", ep);
	CALL("epoll_create", epoll_create(1));
	CALL("epoll_ctl(ADD)", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_ctl(ADD again)", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_ctl(DEL unknown)", epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL));
	CALL("epoll_wait(idle)", epoll_wait(ep, out, 4, 0));
	CALL("write(1)", write(c, "z", 1));
	CALL("epoll_wait(readable)", epoll_wait(ep, out, 4, 1000));
	printf("data=%llx events=%x\n", (unsigned long long)out[0].data.u64, out[0].events);
	CALL("epoll_pwait", epoll_pwait(ep, out, 4, 0, NULL));
	CALL("epoll_pwait2", epoll_pwait2(ep, out, 4, &zero, NULL));
	CALL("epoll_wait(bad fd)", epoll_wait(-1, out, 4, 0));
	CALL("read(1)", read(s, &b, 1));

	/* edge-triggered: news once; data left unread is not news again */
	ev.events = EPOLLIN | EPOLLET;
	CALL("epoll_ctl(MOD ET)", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	CALL("write(2)", write(c, "zz", 2));
	CALL("epoll_wait(ET news)", epoll_wait(ep, out, 4, 1000));
	CALL("read(1 of 2)", read(s, &b, 1));
	CALL("epoll_wait(ET no news, 50 ms)", epoll_wait(ep, out, 4, 50));
	CALL("write(1)", write(c, "z", 1));
	CALL("epoll_wait(ET more)", epoll_wait(ep, out, 4, 1000));
	CALL("epoll_wait(ET spent)", epoll_wait(ep, out, 4, 0));
	CALL("epoll_ctl(MOD ET again)", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	CALL("epoll_wait(ET after MOD)", epoll_wait(ep, out, 4, 0));
	CALL("recv(2)", recv(s, (char[2]){ 0 }, 2, 0));

	/* deleted, then added again (event loops do it at every request) */
	ev.events = EPOLLIN;
	CALL("write(1)", write(c, "z", 1));
	CALL("epoll_ctl(DEL)", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	CALL("epoll_wait(after DEL)", epoll_wait(ep, out, 4, 0));
	CALL("epoll_ctl(MOD after DEL)", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	CALL("epoll_ctl(DEL again)", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	CALL("epoll_ctl(ADD back)", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_wait(after ADD back)", epoll_wait(ep, out, 4, 1000));
	printf("data=%llx events=%x\n", (unsigned long long)out[0].data.u64, out[0].events);
	CALL("read(1)", read(s, &b, 1));
	CALL("close(ep)", close(ep));

	/* select leaves in the timeout what is left of it */
	struct timeval tv = { 0, 30000 };
	FD_SET(s, &rs);
	CALL("select(idle, 30 ms)", select(s + 1, &rs, NULL, NULL, &tv));
	printf("timeout left=%ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Writes a byte on *arg after the alarm has rung. */
static void *write_later(void *arg)
{
	usleep(200000);
	if (write(*(int *)arg, "r", 1) != 1)
		perror("write_later");
	return NULL;
}

/* A signal whose handler asks for SA_RESTART does not end a blocking read. */
static void signal_calls(int c, int s)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_value = { 0, 20000 } };
	char b;

	pthread_t writer;

	sigaction(SIGALRM, &sa, NULL);
	pthread_create(&writer, NULL, write_later, &c);
	setitimer(ITIMER_REAL, &it, NULL);
	CALL("read(across SA_RESTART signal)", read(s, &b, 1));
	CALL("pthread_join", pthread_join(writer, NULL));
	sa.sa_flags = 0;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	CALL("read(signal without SA_RESTART)", read(s, &b, 1));
	signal(SIGALRM, SIG_DFL);
}

static void error_calls(void)
{
	char b;
	struct sockaddr_in a = loopback(1);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CALL("read(-1)", read(-1, &b, 1));
	CALL("recv(-1)", recv(-1, &b, 1, 0));
	CALL("send(-1)", send(-1, &b, 1, 0));
	CALL("close(-1)", close(-1));
	CALL("socket(bad domain)", socket(12345, SOCK_STREAM, 0));
	CALL("connect(refused)", connect(fd, (void *)&a, sizeof(a)));
	CALL("getsockopt(SO_ERROR) after", getsockopt(fd, SOL_SOCKET, SO_ERROR, &b, &(socklen_t){ 1 }));
	CALL("accept(not listening)", accept(fd, NULL, NULL));
	CALL("listen(-1)", listen(-1, 1));
	CALL("shutdown(not connected)", shutdown(fd, SHUT_RDWR));
	CALL("close(fd)", close(fd));
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(1),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	CALL("socket(v6 nonblock)", fd);
	int rc = connect(fd, (void *)&a6, sizeof(a6));
	CALL("connect(v6 nonblock)", rc);
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	CALL("poll(connect done)", poll(&p, 1, 2000));
	int err = 0;
	CALL("getsockopt(SO_ERROR)", getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &(socklen_t){ 4 }));
	printf("SO_ERROR=%s\n", err ? strerrorname_np(err) : "0");
	CALL("close(v6)", close(fd));
}

static void close_calls(int c, int s)
{
	char b[8];
	CALL("shutdown(c,SHUT_WR)", shutdown(c, SHUT_WR));
	CALL("read(EOF)", read(s, b, sizeof(b)));
	CALL("write(after peer SHUT_WR)", write(s, "q", 1));
	CALL("read(q)", read(c, b, sizeof(b)));
	CALL("close(s)", close(s));
	CALL("read(after peer close)", read(c, b, sizeof(b)));
	CALL("close(c)", close(c));
	CALL("write(closed fd)", write(c, "x", 1));
}

static void fork_calls(int c, int s)
{
	pid_t pid = fork();
	if (pid == 0) {                     /* child answers on the inherited socket */
		char b[16];
		ssize_t n = read(s, b, sizeof(b));
		_exit(n == 4 && write(s, "pong", 4) == 4 ? 0 : 1);
	}
	char b[16] = { 0 };
	int status;
	CALL("write(ping)", write(c, "ping", 4));
	CALL("poll(pong, 5 s)", poll(&(struct pollfd){ .fd = c, .events = POLLIN }, 1, 5000));
	CALL("read(pong from child)", read(c, b, sizeof(b)));
	CALL("waitpid", waitpid(pid, &status, 0) == pid);
	printf("child status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	int c, s;
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int lfd = tcp_pair(&c, &s);
	data_calls(c, s);
	file_calls(c, s);
	control_calls(c, s);
	dup_calls(c, s);
	wait_calls(c, s);
	signal_calls(c, s);
	fork_calls(c, s);
	error_calls();
	close_calls(c, s);
	closefrom(3);
	CALL("close(listener) after closefrom", close(lfd));
	return 0;
}

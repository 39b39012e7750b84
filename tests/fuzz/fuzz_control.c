/*
 * fuzz_control.c - libFuzzer target for what smcrd takes from any local
 * process on its control socket: one message and the descriptors passed
 * with it (smcrd/control_request.c), then the checks that the kinds of
 * those descriptors get where smcrd uses them (smcrd/shm_broker.c for
 * OFFER, ATTACH, RESUME and WITHDRAW, smcrd/stats_agg.c for REGISTER).
 *
 * Each input is a sequence of requests (fuzz_control_input.h): for each,
 * the message is sent over a SOCK_SEQPACKET pair with real descriptors of
 * input-chosen kinds in its slots, received as smcrd receives it, judged,
 * and its descriptors handed to the check its type gets, against one
 * broker kept for the whole input.  Every verdict is compared with what
 * this file, knowing what it sent, says it must be; a disagreement aborts,
 * as does any descriptor left open once the input is done.
 */
#include <fcntl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_request.h"
#include "fuzz_control_input.h"
#include "shm_broker.h"
#include "stats_agg.h"

#define CHECK(cond)				\
	do {					\
		if (!(cond))			\
			abort();		\
	} while (0)

#define OWNER 1                 /* the client id every OFFER is made as */
#define STRANGER 2

/* What lives across inputs: one TCP connection, its listener, the control pair. */
static struct {
	int tcp_a, tcp_b, listener;
	int client, daemon;     /* the client's end of the control connection, smcrd's */
	uint64_t page;
} fx;

/* The offers accepted so far in this input, as this file knows them. */
struct offer_record {
	uint64_t token;
	uint64_t bytes;
	enum fuzz_fd_kind end;  /* FUZZ_FD_TCP_A or _B: the socket it was offered on */
	bool live;
};

struct run {
	struct smcrd_shm_broker broker;
	struct offer_record offers[FUZZ_CONTROL_MAX_REQUESTS];
	size_t noffers;
};

static void connect_tcp(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	fx.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fx.listener >= 0 && bind(fx.listener, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fx.listener, 1) == 0);
	CHECK(getsockname(fx.listener, (struct sockaddr *)&sa, &len) == 0);
	fx.tcp_a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fx.tcp_a >= 0 && connect(fx.tcp_a, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	fx.tcp_b = accept4(fx.listener, NULL, NULL, SOCK_CLOEXEC);
	CHECK(fx.tcp_b >= 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int pair[2];

	(void)argc;
	(void)argv;
	fx.page = (uint64_t)sysconf(_SC_PAGESIZE);
	connect_tcp();
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
	fx.client = pair[0];
	fx.daemon = pair[1];
	return 0;
}

static size_t open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	size_t n = 0;

	CHECK(dir);
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
}

static int memfd(uint64_t bytes, unsigned int flags, int seals)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC | flags);

	CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
	CHECK(!seals || fcntl(fd, F_ADD_SEALS, seals) == 0);
	return fd;
}

static int reopen_read_only(int fd)
{
	char path[64];
	int again;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	again = open(path, O_RDONLY | O_CLOEXEC);
	close(fd);
	CHECK(again >= 0);
	return again;
}

/* A statistics region as libsmcr's smcr_stats_region_new() makes it; bad: a wrong layout. */
static int stats_region(bool bad)
{
	const size_t bytes = smcr_stats_region_size();
	int fd = memfd(bytes, MFD_ALLOW_SEALING, 0);
	struct smcr_stats *s;

	/* as libsmcr makes it: every page allocated, its size sealed */
	CHECK(fallocate(fd, 0, 0, (off_t)bytes) == 0);
	s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(s != MAP_FAILED);
	s->layout = SMCR_STATS_LAYOUT + bad;
	s->size = sizeof(*s);
	munmap(s, bytes);
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	return fd;
}

static int other_end_of_pair(int domain, int type)
{
	int pair[2];

	CHECK(socketpair(domain, type | SOCK_CLOEXEC, 0, pair) == 0);
	close(pair[1]);
	return pair[0];
}

static int pipe_reader(void)
{
	int p[2];

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	close(p[1]);
	return p[0];
}

#define OFFER_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A new descriptor of the kind a slot byte names. */
static int make_fd(enum fuzz_fd_kind kind, unsigned int pages)
{
	uint64_t bytes = pages * fx.page;

	switch (kind) {
	case FUZZ_FD_MEMFD_SEALED:
		return memfd(bytes, MFD_ALLOW_SEALING, OFFER_SEALS);
	case FUZZ_FD_MEMFD_UNSEALED:
		return memfd(bytes, MFD_ALLOW_SEALING, 0);
	case FUZZ_FD_MEMFD_WRITE_SEALED:
		return memfd(bytes, MFD_ALLOW_SEALING, OFFER_SEALS | F_SEAL_WRITE);
	case FUZZ_FD_MEMFD_READ_ONLY:
		return reopen_read_only(memfd(bytes, MFD_ALLOW_SEALING, OFFER_SEALS));
	case FUZZ_FD_MEMFD_NO_SEALING:
		return memfd(bytes, 0, 0);
	case FUZZ_FD_STATS:
		return stats_region(pages != 0);
	case FUZZ_FD_TCP_A:
		return fcntl(fx.tcp_a, F_DUPFD_CLOEXEC, 0);
	case FUZZ_FD_TCP_B:
		return fcntl(fx.tcp_b, F_DUPFD_CLOEXEC, 0);
	case FUZZ_FD_TCP_LISTENER:
		return fcntl(fx.listener, F_DUPFD_CLOEXEC, 0);
	case FUZZ_FD_TCP_UNCONNECTED:
		return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	case FUZZ_FD_UNIX:
		return other_end_of_pair(AF_UNIX, SOCK_STREAM);
	case FUZZ_FD_EVENTFD:
		return eventfd(0, EFD_CLOEXEC);
	case FUZZ_FD_PIPE:
		return pipe_reader();
	case FUZZ_FD_DEV_NULL:
	case FUZZ_FD_KINDS:
		break;
	}
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static enum fuzz_fd_kind slot_kind(uint8_t slot)
{
	return (enum fuzz_fd_kind)((slot & 0x0f) % FUZZ_FD_KINDS);
}

static unsigned int slot_pages(uint8_t slot)
{
	return slot >> 4;
}

static size_t slots_sent(const struct fuzz_control_request *req)
{
	return req->shape & FUZZ_SHAPE_SLOTS;
}

static uint64_t token_for(const struct run *run, const struct fuzz_control_request *req)
{
	return req->offer < run->noffers ? run->offers[req->offer].token : req->offer;
}

static struct smcr_control_msg message_for(const struct run *run,
					   const struct fuzz_control_request *req)
{
	return (struct smcr_control_msg){
		.version = req->shape & FUZZ_SHAPE_BAD_VERSION ? SMCR_CONTROL_VERSION + 1
							       : SMCR_CONTROL_VERSION,
		.type = req->type,
		.bytes = req->bytes_pages * fx.page + !!(req->shape & FUZZ_SHAPE_ODD_BYTES),
		.token = token_for(run, req),
	};
}

/* Sends m, len bytes of it (zeros past its end), with a new descriptor in every slot sent. */
static void send_request(const struct smcr_control_msg *m, size_t len,
			 const struct fuzz_control_request *req)
{
	uint8_t bytes[sizeof(*m) + 128] = { 0 };
	int fds[FUZZ_CONTROL_SLOTS];
	union {
		char buf[CMSG_SPACE(FUZZ_CONTROL_SLOTS * sizeof(int))];
		struct cmsghdr align;
	} room;
	struct iovec iov = { bytes, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t n = slots_sent(req);

	memcpy(bytes, m, sizeof(*m));
	for (size_t i = 0; i < n; i++)
		fds[i] = make_fd(slot_kind(req->slot[i]), slot_pages(req->slot[i]));
	smcr_control_put_fds(&mh, room.buf, sizeof(room.buf), fds, n);    /* maybe too many */
	CHECK(sendmsg(fx.client, &mh, MSG_DONTWAIT) == (ssize_t)len);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);          /* in flight, the kernel holds them */
}

/* How many descriptors a request of type carries, at least and at most (control_proto.h). */
static void fds_of_type(uint16_t type, size_t *least, size_t *most)
{
	*least = *most = 0;
	if (type == SMCR_CONTROL_OFFER)
		*least = *most = 5;
	else if (type == SMCR_CONTROL_ATTACH || type == SMCR_CONTROL_RESUME)
		*least = *most = 1;
	else if (type == SMCR_CONTROL_REGISTER || type == SMCR_CONTROL_WITHDRAW)
		*most = 1;
}

static bool memfd_of(uint8_t slot, uint64_t least, uint64_t most)
{
	uint64_t bytes = slot_pages(slot) * fx.page;

	return slot_kind(slot) == FUZZ_FD_MEMFD_SEALED && bytes >= least && bytes <= most &&
	       bytes > 0;
}

static bool is_tcp_end(enum fuzz_fd_kind kind)
{
	return kind == FUZZ_FD_TCP_A || kind == FUZZ_FD_TCP_B;
}

/* An OFFER passes smcrd_shm_check exactly when its slots hold what control_proto.h asks. */
static bool offer_acceptable(const struct fuzz_control_request *req, uint64_t bytes)
{
	return is_tcp_end(slot_kind(req->slot[0])) && memfd_of(req->slot[1], bytes, bytes) &&
	       slot_kind(req->slot[2]) == FUZZ_FD_UNIX && slot_kind(req->slot[3]) == FUZZ_FD_UNIX &&
	       memfd_of(req->slot[4], 1, 65536);
}

static void check_offer(struct run *run, const struct smcr_control_msg *m, int *in,
			const struct fuzz_control_request *req)
{
	struct smcrd_shm_offer o;
	uint64_t token;
	char why[240];
	int rc = smcrd_shm_check(&o, in, m->bytes, why, sizeof(why));

	CHECK((rc == 0) == offer_acceptable(req, m->bytes));
	if (rc)
		return;
	CHECK(o.bytes == m->bytes);
	CHECK(smcrd_shm_add(&run->broker, &o, in, OWNER, &token) == 0);
	/* the offer keeps its memfd, channel and state; the socket stays the caller's */
	CHECK(in[0] >= 0 && in[1] == -1 && in[2] == -1 && in[3] == -1 && in[4] == -1);
	run->offers[run->noffers++] = (struct offer_record){
		.token = token, .bytes = o.bytes, .end = slot_kind(req->slot[0]), .live = true,
	};
}

static struct offer_record *offer_named(struct run *run, uint64_t token)
{
	for (size_t i = 0; i < run->noffers; i++)
		if (run->offers[i].live && run->offers[i].token == token)
			return &run->offers[i];
	return NULL;
}

static bool offered_on(const struct run *run, enum fuzz_fd_kind end)
{
	for (size_t i = 0; i < run->noffers; i++)
		if (run->offers[i].live && run->offers[i].end == end)
			return true;
	return false;
}

static enum fuzz_fd_kind other_end(enum fuzz_fd_kind end)
{
	return end == FUZZ_FD_TCP_A ? FUZZ_FD_TCP_B : FUZZ_FD_TCP_A;
}

static void close_all(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

static bool is_memfd(int fd)
{
	return fcntl(fd, F_GET_SEALS) >= 0;
}

static bool is_unix_stream(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);
	struct sockaddr_un a;
	socklen_t alen = sizeof(a);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
	       getsockname(fd, (struct sockaddr *)&a, &alen) == 0 && a.sun_family == AF_UNIX;
}

/* A buffer as the broker hands it out: its memfd and its channel's tx; closed here. */
static void check_buffer(const int fds[2])
{
	CHECK(is_memfd(fds[0]) && is_unix_stream(fds[1]));
	close_all(fds, 2);
}

/*
 * Only the other end of the offering connection gets an offer's buffer;
 * token 0 names whichever that other end offered.
 */
static void check_attach(struct run *run, const struct smcr_control_msg *m, const int *in,
			 const struct fuzz_control_request *req)
{
	enum fuzz_fd_kind kind = slot_kind(req->slot[0]);
	uint64_t token = m->token;
	struct offer_record *o = offer_named(run, token);
	int fds[2];
	int rc = smcrd_shm_attach(&run->broker, &token, in[0], fds);

	if (m->token)
		CHECK((rc == 0) == (o && is_tcp_end(kind) && kind == other_end(o->end)));
	else
		CHECK((rc == 0) == (is_tcp_end(kind) && offered_on(run, other_end(kind))));
	if (rc)
		return;
	o = offer_named(run, token);
	CHECK(o && o->end == other_end(kind));
	check_buffer(fds);
}

/* The socket an offer was made on gets it back, with its peer's if that end offered too. */
static void check_resume(struct run *run, const int *in, const struct fuzz_control_request *req)
{
	enum fuzz_fd_kind kind = slot_kind(req->slot[0]);
	uint64_t token = 0, adopted = 1;
	int fds[SMCRD_SHM_RESUME_FDS];
	size_t nfds = 0;
	int rc = smcrd_shm_resume(&run->broker, in[0], OWNER, &token, &adopted, fds, &nfds);

	CHECK((rc == 0) == (is_tcp_end(kind) && offered_on(run, kind)));
	if (rc)
		return;
	CHECK(adopted == 0 && offer_named(run, token) && offer_named(run, token)->end == kind);
	CHECK(nfds == (offered_on(run, other_end(kind)) ? 6u : 4u));
	/* the state, then the buffer and the channel's rx and tx, then the peer's buffer and tx */
	CHECK(is_memfd(fds[0]) && is_unix_stream(fds[2]));
	close(fds[0]);
	close(fds[2]);
	check_buffer((const int[]){ fds[1], fds[3] });
	if (nfds == 6)
		check_buffer(fds + 4);
}

/* Its owner ends an offer, or whoever shows the offering socket; nobody else. */
static void check_withdraw(struct run *run, const struct smcr_control_msg *m, const int *in,
			   size_t nin, const struct fuzz_control_request *req)
{
	uint64_t asker = req->shape & FUZZ_SHAPE_STRANGER ? STRANGER : OWNER, owner = 0;
	struct offer_record *o = offer_named(run, m->token);
	bool shows = nin && o && slot_kind(req->slot[0]) == o->end;
	uint64_t bytes = smcrd_shm_withdraw(&run->broker, m->token, asker, nin ? in[0] : -1,
					    &owner);

	CHECK((bytes != 0) == (o && (asker == OWNER || shows)));
	if (!bytes)
		return;
	CHECK(bytes == o->bytes && owner == OWNER);
	o->live = false;
}

/* A statistics region is mapped exactly when it is one of the right size and layout. */
static void check_register(const int *in, size_t nin, const struct fuzz_control_request *req)
{
	char why[240];
	const struct smcr_stats *s;

	if (!nin)
		return;
	s = smcrd_stats_map(in[0], why, sizeof(why));
	CHECK(!!s == (slot_kind(req->slot[0]) == FUZZ_FD_STATS && slot_pages(req->slot[0]) == 0));
	if (s)
		munmap((void *)s, smcr_stats_region_size());
}

static void check_descriptors(struct run *run, const struct smcr_control_msg *m, int *in,
			      size_t nin, const struct fuzz_control_request *req)
{
	switch (m->type) {
	case SMCR_CONTROL_OFFER:
		check_offer(run, m, in, req);
		break;
	case SMCR_CONTROL_ATTACH:
		check_attach(run, m, in, req);
		break;
	case SMCR_CONTROL_RESUME:
		check_resume(run, in, req);
		break;
	case SMCR_CONTROL_WITHDRAW:
		check_withdraw(run, m, in, nin, req);
		break;
	case SMCR_CONTROL_REGISTER:
		check_register(in, nin, req);
		break;
	default:
		break;
	}
}

static void serve_one(struct run *run, const struct fuzz_control_request *req)
{
	const struct smcr_control_msg sent = message_for(run, req);
	ssize_t len = (ssize_t)sizeof(sent) + (req->shape & FUZZ_SHAPE_BAD_LENGTH ? req->len_delta : 0);
	size_t n = slots_sent(req), least, most, nin;
	struct smcr_control_msg m;
	int in[SMCR_CONTROL_MAX_FDS];
	bool cut, short_of_fds;

	send_request(&sent, (size_t)len, req);
	ssize_t got = smcrd_request_recv(fx.daemon, &m, in, &nin, &cut);
	/* longer than a request: cut to one, and said to be one byte more */
	CHECK(got == (len > (ssize_t)sizeof(m) ? (ssize_t)sizeof(m) + 1 : len));
	CHECK(nin == (n < SMCR_CONTROL_MAX_FDS ? n : SMCR_CONTROL_MAX_FDS));
	CHECK(cut == (n > SMCR_CONTROL_MAX_FDS));
	fds_of_type(sent.type, &least, &most);
	bool expected = len == (ssize_t)sizeof(m) && sent.version == SMCR_CONTROL_VERSION &&
			n >= least && n <= most;
	CHECK(smcrd_request_well_formed(&m, got, nin, cut, &short_of_fds) == expected);
	CHECK(!short_of_fds);           /* never here: we are not short of descriptors */
	if (expected) {
		CHECK(memcmp(&m, &sent, sizeof(m)) == 0);
		check_descriptors(run, &m, in, nin, req);
	}
	close_all(in, nin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t before = open_fds();
	struct run run = { .noffers = 0 };
	struct fuzz_control_request req;

	smcrd_shm_broker_init(&run.broker);
	for (size_t i = 0; i < FUZZ_CONTROL_MAX_REQUESTS && size >= sizeof(req); i++) {
		memcpy(&req, data, sizeof(req));
		serve_one(&run, &req);
		data += sizeof(req);
		size -= sizeof(req);
	}
	smcrd_shm_broker_close(&run.broker);
	CHECK(open_fds() == before);
	return 0;
}

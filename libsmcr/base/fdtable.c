/*
 * fdtable.c - the per-descriptor table (see fdtable.h for why it looks so).
 *
 * Chunks come from mmap(), not malloc(): socket() and accept() are
 * async-signal-safe and so must be what they call.  Two threads that race to
 * create the same chunk agree through compare-and-swap; the loser unmaps its
 * copy.  Errno is preserved on every path.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#include "fdtable.h"
#include "real.h"

_Atomic(struct smcr_fd_slot *) smcr_fd_chunks[SMCR_FD_CHUNKS];

static void no_record(uint32_t id) { (void)id; }
static struct smcr_sock *same_sock(struct smcr_sock *sk) { return sk; }
static void no_sock(struct smcr_sock *sk, int fd) { (void)sk; (void)fd; }
static struct smcr_epoll *same_epoll(struct smcr_epoll *ep) { return ep; }
static void no_epoll(struct smcr_epoll *ep) { (void)ep; }
static void no_fd(int fd) { (void)fd; }

static const struct smcr_fd_refs refs_none = {
	.record_hold = no_record, .record_drop = no_record,
	.sock_get = same_sock, .sock_put = no_sock,
	.epoll_get = same_epoll, .epoll_put = no_epoll,
	.before_forget = no_fd,
};
static _Atomic(const struct smcr_fd_refs *) refs_live = &refs_none;

void smcr_fd_refs_register(const struct smcr_fd_refs *refs)
{
	atomic_store_explicit(&refs_live, refs, memory_order_release);
}

static const struct smcr_fd_refs *refs(void)
{
	return atomic_load_explicit(&refs_live, memory_order_acquire);
}

static struct smcr_fd_slot *slot_of(int fd, bool create)
{
	if ((unsigned int)fd >= SMCR_FD_MAX)
		return NULL;
	_Atomic(struct smcr_fd_slot *) *top = &smcr_fd_chunks[(unsigned int)fd >> SMCR_FD_CHUNK_BITS];
	struct smcr_fd_slot *chunk = atomic_load_explicit(top, memory_order_acquire);

	if (!chunk && create) {
		const size_t bytes = SMCR_FD_CHUNK_SLOTS * sizeof(struct smcr_fd_slot);
		int saved_errno = errno;
		struct smcr_fd_slot *fresh = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
						  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		errno = saved_errno;
		if (fresh == MAP_FAILED)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(top, &chunk, fresh,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			chunk = fresh;
		} else {
			munmap(fresh, bytes);        /* another thread won; chunk is its */
			errno = saved_errno;
		}
	}
	return chunk ? &chunk[fd & (SMCR_FD_CHUNK_SLOTS - 1)] : NULL;
}

bool smcr_fd_set(int fd, enum smcr_fd_state state)
{
	struct smcr_fd_slot *slot = slot_of(fd, true);

	if (!slot)
		return false;
	/* release: whoever sees the state sees what was recorded before it (the connection) */
	atomic_store_explicit(&slot->state, state, memory_order_release);
	return true;
}

bool smcr_fd_claim(int fd, enum smcr_fd_state from, enum smcr_fd_state to)
{
	struct smcr_fd_slot *slot = slot_of(fd, false);
	uint32_t expected = from;

	return slot && atomic_compare_exchange_strong_explicit(&slot->state, &expected, to,
							       memory_order_relaxed,
							       memory_order_relaxed);
}

bool smcr_fd_set_keeper(int fd, int *where)
{
	struct smcr_fd_slot *slot = slot_of(fd, where != NULL);

	if (slot)
		atomic_store_explicit(&slot->keeper, where, memory_order_relaxed);
	return slot || !where;
}

static uint32_t reason_of(int fd)
{
	struct smcr_fd_slot *slot = slot_of(fd, false);

	return slot ? atomic_load_explicit(&slot->reason, memory_order_relaxed) : 0;
}

void smcr_fd_set_reason(int fd, uint32_t reason)
{
	struct smcr_fd_slot *slot = slot_of(fd, false);

	if (slot)
		atomic_store_explicit(&slot->reason, reason, memory_order_relaxed);
}

bool smcr_fd_set_rcvbuf(int fd, uint32_t bytes)
{
	struct smcr_fd_slot *slot = slot_of(fd, true);

	if (slot)
		atomic_store_explicit(&slot->rcvbuf, bytes, memory_order_relaxed);
	return slot != NULL;
}

uint32_t smcr_fd_sleepers_add(int fd, int delta)
{
	struct smcr_fd_slot *slot = slot_of(fd, delta > 0);
	uint32_t was;

	if (!slot)
		return 0;
	was = atomic_load_explicit(&slot->sleepers, memory_order_relaxed);
	while ((delta > 0 || was > 0) &&
	       !atomic_compare_exchange_weak_explicit(&slot->sleepers, &was,
						      was + (uint32_t)delta,
						      memory_order_seq_cst, memory_order_relaxed))
		;
	return was;
}

bool smcr_fd_set_record(int fd, uint32_t id)
{
	struct smcr_fd_slot *slot = slot_of(fd, true);

	if (!slot) {
		refs()->record_drop(id);
		return false;
	}
	refs()->record_drop(atomic_exchange_explicit(&slot->conn, id, memory_order_relaxed));
	return true;
}

bool smcr_fd_set_sock(int fd, struct smcr_sock *sk)
{
	struct smcr_fd_slot *slot = slot_of(fd, true);

	if (!slot)
		return false;
	atomic_store_explicit(&slot->plain, NULL, memory_order_relaxed);
	struct smcr_sock *old = atomic_exchange_explicit(&slot->sock, sk, memory_order_acq_rel);
	if (old)
		refs()->sock_put(old, fd);
	return true;
}

void smcr_fd_set_plain(int fd, struct smcr_sock *sk)
{
	struct smcr_fd_slot *slot = slot_of(fd, false);

	if (slot && sk && atomic_load_explicit(&slot->sock, memory_order_relaxed) == sk)
		atomic_store_explicit(&slot->plain, sk, memory_order_relaxed);
}

bool smcr_fd_set_epoll(int fd, struct smcr_epoll *ep)
{
	struct smcr_fd_slot *slot = slot_of(fd, true);

	if (!slot)
		return false;
	struct smcr_epoll *old = atomic_exchange_explicit(&slot->epoll, ep, memory_order_acq_rel);
	if (old)
		refs()->epoll_put(old);
	return true;
}

void smcr_fd_forget(int fd)
{
	struct smcr_fd_slot *slot = slot_of(fd, false);

	if (!slot)
		return;
	enum smcr_fd_state state = atomic_load_explicit(&slot->state, memory_order_relaxed);
	if (state == SMCR_FD_OWN)
		return;
	/* epoll sets must let go of it before its connection goes (epoll.c) */
	if ((smcr_fd_state_is_tcp(state) && state != SMCR_FD_TCP_LISTENER) ||
	    atomic_load_explicit(&slot->epoll, memory_order_relaxed))
		refs()->before_forget(fd);      /* an instance leaves those it is nested in too */
	atomic_store_explicit(&slot->state, SMCR_FD_UNKNOWN, memory_order_relaxed);
	atomic_store_explicit(&slot->reason, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->rcvbuf, 0, memory_order_relaxed);
	/* the common case, no objects, costs three loads */
	if (atomic_load_explicit(&slot->conn, memory_order_relaxed))
		refs()->record_drop(atomic_exchange_explicit(&slot->conn, 0, memory_order_relaxed));
	atomic_store_explicit(&slot->plain, NULL, memory_order_relaxed);
	if (atomic_load_explicit(&slot->sock, memory_order_relaxed)) {
		struct smcr_sock *sk = atomic_exchange_explicit(&slot->sock, NULL,
								memory_order_acq_rel);
		if (sk)
			refs()->sock_put(sk, fd);
	}
	if (atomic_load_explicit(&slot->epoll, memory_order_relaxed)) {
		struct smcr_epoll *ep = atomic_exchange_explicit(&slot->epoll, NULL,
								 memory_order_acq_rel);
		if (ep)
			refs()->epoll_put(ep);
	}
}

/* The first descriptor in [fd, last] that is not in a chunk never used; -1: none. */
static int next_tracked(unsigned int fd, unsigned int last)
{
	for (; fd <= last; fd++) {
		if ((fd & (SMCR_FD_CHUNK_SLOTS - 1)) != 0 ||
		    atomic_load_explicit(&smcr_fd_chunks[fd >> SMCR_FD_CHUNK_BITS],
					 memory_order_acquire))
			return (int)fd;
		fd += SMCR_FD_CHUNK_SLOTS - 1;      /* a chunk never used: nothing in it */
	}
	return -1;
}

void smcr_fd_forget_range(unsigned int first, unsigned int last)
{
	if (last >= SMCR_FD_MAX)
		last = SMCR_FD_MAX - 1;
	for (int fd = next_tracked(first, last); fd >= 0; fd = next_tracked((unsigned int)fd + 1, last))
		smcr_fd_forget(fd);
}

int smcr_fd_next_in(unsigned int first, unsigned int last, enum smcr_fd_state state)
{
	if (last >= SMCR_FD_MAX)
		last = SMCR_FD_MAX - 1;
	for (int fd = next_tracked(first, last); fd >= 0; fd = next_tracked((unsigned int)fd + 1, last))
		if (smcr_fd_get(fd) == state)
			return fd;
	return -1;
}

int smcr_fd_next_sock(unsigned int first)
{
	for (int fd = next_tracked(first, SMCR_FD_MAX - 1); fd >= 0;
	     fd = next_tracked((unsigned int)fd + 1, SMCR_FD_MAX - 1))
		if (smcr_fd_sock(fd))
			return fd;
	return -1;
}

void smcr_fd_copy(int oldfd, int newfd)
{
	enum smcr_fd_state state = smcr_fd_get(oldfd);

	struct smcr_sock *sk = smcr_fd_sock(oldfd);
	struct smcr_epoll *ep = smcr_fd_epoll(oldfd);
	uint32_t record = smcr_fd_record(oldfd);

	smcr_fd_forget(newfd);
	if (state == SMCR_FD_UNKNOWN || !smcr_fd_set(newfd, state))
		return;
	smcr_fd_set_reason(newfd, reason_of(oldfd));
	smcr_fd_set_rcvbuf(newfd, smcr_fd_rcvbuf(oldfd));
	if (record) {
		refs()->record_hold(record);
		smcr_fd_set_record(newfd, record);
	}
	if (sk)
		smcr_fd_set_sock(newfd, refs()->sock_get(sk));
	if (ep)
		smcr_fd_set_epoll(newfd, refs()->epoll_get(ep));
}

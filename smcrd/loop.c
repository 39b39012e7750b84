/*
 * loop.c - smcrd's event loop: one poll() over a signalfd (SIGHUP reloads,
 * SIGTERM and SIGINT stop), the address-change socket (interfaces.c), the
 * closer's helper (closer.c) and the control socket (control.c), each
 * served in turn.  It sits above control.c, closer.c and daemon.c and is
 * called only by main (smcrd.c).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "closer.h"
#include "daemon.h"
#include "interfaces.h"
#include "loop.h"
#include "smcrd_log.h"

/* Handles the pending signals; false once smcrd should stop. */
static bool on_signals(struct smcrd *d)
{
	struct signalfd_siginfo si;

	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char why[512];
			smcrd_reload(d, why, sizeof(why));
		} else {
			smcrd_log(LOG_NOTICE, "exiting on SIG%s", sigabbrev_np((int)si.ssi_signo));
			return false;
		}
	}
	return true;
}

enum { POLL_SIGNALS, POLL_INTERFACES, POLL_CLOSER, POLL_CONTROL };

/* The poll table for this round: signals, address changes, the control socket's entries. */
static int fill_poll(struct smcrd *d, size_t *n)
{
	*n = POLL_CONTROL + smcrd_control_npoll(&d->control);
	if (*n > d->poll_capacity) {
		void *grown = realloc(d->poll, *n * 2 * sizeof(*d->poll));
		if (!grown)
			return -1;
		d->poll = grown;
		d->poll_capacity = *n * 2;
	}
	d->poll[POLL_SIGNALS] = (struct pollfd){ .fd = d->signal_fd, .events = POLLIN };
	d->poll[POLL_INTERFACES] = (struct pollfd){ .fd = smcrd_interfaces_fd(d->interfaces),
						    .events = POLLIN };
	d->poll[POLL_CLOSER] = (struct pollfd){ .fd = smcrd_closer_fd(), .events = POLLIN };
	smcrd_control_pollfds(&d->control, &d->poll[POLL_CONTROL]);
	return 0;
}

/* The shorter of two poll() timeouts (-1: for ever). */
static int sooner(int a, int b)
{
	return a < 0 ? b : b < 0 || a < b ? a : b;
}

int smcrd_run(struct smcrd *d)
{
	for (;;) {
		size_t n;
		if (fill_poll(d, &n)) {
			smcrd_log(LOG_ERR, "poll table: %s", strerror(errno));
			return 1;
		}
		if (poll(d->poll, n, sooner(smcrd_control_timeout(&d->control),
					    smcrd_closer_timeout())) < 0) {
			if (errno == EINTR)
				continue;
			smcrd_log(LOG_ERR, "poll: %s", strerror(errno));
			return 1;
		}
		if (d->poll[POLL_SIGNALS].revents && !on_signals(d))
			return 0;
		if (d->poll[POLL_INTERFACES].revents)
			smcrd_interfaces_update(d->interfaces, &d->cfg);
		smcrd_control_serve(&d->control, &d->poll[POLL_CONTROL], d);
		smcrd_closer_serve();   /* last: what this round gave it to close */
	}
}

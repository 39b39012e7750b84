/*
 * closer.c - the closer thread (closer.h).
 *
 * A queue under one mutex.  Should the thread hang on one descriptor, the
 * others wait behind it and smcrd's descriptors fill up; smcrd then refuses
 * new registrations (control.c, refuse_one) but goes on serving.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "closer.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pending = PTHREAD_COND_INITIALIZER;
static int *queue;
static size_t queued, capacity;
static bool running;

static void *closer(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!queued)
			pthread_cond_wait(&pending, &lock);
		int fd = queue[--queued];
		pthread_mutex_unlock(&lock);
		close(fd);
		pthread_mutex_lock(&lock);
	}
	return NULL;
}

int smcrd_closer_start(void)
{
	pthread_t thread;
	int rc = pthread_create(&thread, NULL, closer, NULL);

	if (rc) {
		errno = rc;
		return -1;
	}
	pthread_detach(thread);
	running = true;
	return 0;
}

int smcrd_close_later(int fd)
{
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&lock);
	if (running && queued == capacity) {
		size_t cap = capacity ? capacity * 2 : 64;
		int *grown = realloc(queue, cap * sizeof(*queue));
		if (grown) {
			queue = grown;
			capacity = cap;
		}
	}
	if (!running || queued == capacity) {
		pthread_mutex_unlock(&lock);
		close(fd);              /* no thread (start-up, tests) or no memory: at once */
		return 0;
	}
	queue[queued++] = fd;
	pthread_cond_signal(&pending);
	pthread_mutex_unlock(&lock);
	return 0;
}

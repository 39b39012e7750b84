/*
 * clone_probe.c - what a child of the raw clone system call leaves behind
 * when it dies holding a robust mutex shared with its parent (as a
 * sandboxed server's child may die holding one of the server's own).
 * Prints whose thread id the child's locks carry and whether the parent,
 * once the child is gone, gets the lock back (EOWNERDEAD) or finds it still
 * held after 2 s.  The C library alone leaves the child its parent's id and
 * no robust list, so the lock stays held: libsmcr's interposed syscall()
 * gives the child its own (raw_clone.sh).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	pthread_mutex_t *lock = mmap(NULL, sizeof(*lock), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t attr;
	struct timespec until;
	int status, rc;
	long child;

	if (lock == MAP_FAILED || pthread_mutexattr_init(&attr) ||
	    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) ||
	    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) ||
	    pthread_mutex_init(lock, &attr)) {
		perror("clone_probe: a shared robust mutex");
		return 1;
	}
	child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (child == 0) {
		pthread_mutex_lock(lock);
		_exit(lock->__data.__owner == gettid() ? 0 : 3);    /* dies holding it */
	}
	if (child < 0 || waitpid((pid_t)child, &status, 0) != child || !WIFEXITED(status)) {
		perror("clone_probe: the child");
		return 1;
	}
	printf("the id in the child's locks: %s\n",
	       WEXITSTATUS(status) == 0 ? "its own" : "its parent's");
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	rc = pthread_mutex_timedlock(lock, &until);
	printf("the lock the child died holding: %s\n",
	       rc == EOWNERDEAD ? "given back" : rc == ETIMEDOUT ? "still held" : strerror(rc));
	return 0;
}

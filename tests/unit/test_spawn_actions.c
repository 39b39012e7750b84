/*
 * Unit tests of a posix_spawn's file actions followed
 * (libsmcr/entry/spawn_actions.c): which descriptors of this process the
 * new image starts with, the actions made with the C library's own
 * functions.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "spawn_actions.h"

struct action {
	enum { END, CLOSE, DUP2, OPEN, CLOSEFROM, CHDIR, FCHDIR } op;
	int fd, to;
};

struct expect {
	int fd;                 /* this process's */
	bool survives;          /* not close-on-exec */
	unsigned int copies;    /* descriptors of the new image that copy it */
};

struct spawn_case {
	const char *what;
	struct action actions[6];
	struct expect expect[4];       /* up to fd -1 */
};

static const struct spawn_case cases[] = {
	{ "no actions: what survives", { { END, 0, 0 } },
	  { { 5, true, 1 }, { 5, false, 0 }, { -1, false, 0 } } },
	/* as subprocess.sh's spawn case */
	{ "a socket dup2'd onto 0 and 1", { { DUP2, 5, 0 }, { DUP2, 5, 1 } },
	  { { 5, false, 2 }, { 5, true, 3 }, { 0, true, 0 }, { -1, false, 0 } } },
	{ "later actions win",
	  { { DUP2, 5, 0 }, { DUP2, 5, 0 }, { DUP2, 5, 7 }, { OPEN, 7, 0 }, { CLOSE, 5, 0 } },
	  { { 5, true, 1 }, { -1, false, 0 } } },
	{ "a dup of a dup copies the first", { { DUP2, 5, 0 }, { DUP2, 0, 1 }, { DUP2, 9, 2 } },
	  { { 5, false, 2 }, { 9, false, 1 }, { 9, true, 2 }, { -1, false, 0 } } },
	{ "closefrom closes what came before it",
	  { { DUP2, 5, 9 }, { DUP2, 5, 1 }, { CLOSEFROM, 3, 0 }, { DUP2, 1, 4 } },
	  { { 5, true, 2 }, { 2, true, 1 }, { -1, false, 0 } } },
	{ "actions on no descriptor", { { CHDIR, 0, 0 }, { FCHDIR, 5, 0 } },
	  { { 5, true, 1 }, { -1, false, 0 } } },
};

static void add(posix_spawn_file_actions_t *fa, const struct action *a)
{
	switch (a->op) {
	case CLOSE:
		posix_spawn_file_actions_addclose(fa, a->fd);
		break;
	case DUP2:
		posix_spawn_file_actions_adddup2(fa, a->fd, a->to);
		break;
	case OPEN:
		posix_spawn_file_actions_addopen(fa, a->fd, "/dev/null", O_RDONLY, 0);
		break;
	case CLOSEFROM:
		posix_spawn_file_actions_addclosefrom_np(fa, a->fd);
		break;
	case CHDIR:
		posix_spawn_file_actions_addchdir_np(fa, "/");
		break;
	case FCHDIR:
		posix_spawn_file_actions_addfchdir_np(fa, a->fd);
		break;
	case END:
		break;
	}
}

static void copies_follow_the_actions(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		posix_spawn_file_actions_t fa;
		struct smcr_spawn_fds t;

		posix_spawn_file_actions_init(&fa);
		for (const struct action *a = cases[c].actions; a->op != END; a++)
			add(&fa, a);
		assert_true(smcr_spawn_follow(&t, &fa));
		for (const struct expect *e = cases[c].expect; e->fd >= 0; e++) {
			unsigned int got = smcr_spawn_copies(&t, e->fd, e->survives);

			if (got != e->copies)
				fail_msg("%s: fd %d (%s): %u copies, expected %u", cases[c].what,
					 e->fd, e->survives ? "survives" : "close-on-exec", got,
					 e->copies);
		}
		posix_spawn_file_actions_destroy(&fa);
	}
}

static void no_actions_at_all(void **state)
{
	struct smcr_spawn_fds t;

	(void)state;
	assert_true(smcr_spawn_follow(&t, NULL));
	assert_int_equal(smcr_spawn_copies(&t, 5, true), 1);
}

/* A record not as expected is not followed: the caller hands nothing over. */
static void unexpected_records_refused(void **state)
{
	posix_spawn_file_actions_t fa;
	struct smcr_spawn_fds t;

	(void)state;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 5, 0);
	*(int *)(void *)fa.__actions = 99;              /* a tag we do not know */
	assert_false(smcr_spawn_follow(&t, &fa));
	*(int *)(void *)fa.__actions = 1;               /* back to dup2 */
	fa.__used = fa.__allocated + 1;
	assert_false(smcr_spawn_follow(&t, &fa));
	fa.__used = 1;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i <= SMCR_SPAWN_ACTIONS_MAX; i++)
		posix_spawn_file_actions_addclose(&fa, 100 + i);
	assert_false(smcr_spawn_follow(&t, &fa));
	posix_spawn_file_actions_destroy(&fa);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copies_follow_the_actions),
		cmocka_unit_test(no_actions_at_all),
		cmocka_unit_test(unexpected_records_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

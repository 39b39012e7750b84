/*
 * Unit tests of the CDC mailbox (libsmcr/transports/smc_mbox.h): a reader
 * gets each CDC once, never a torn one while a writer of another thread
 * writes without pause, and a writer that left seq odd holds no reader.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "smc_mbox.h"

#define WRITES 200000

/* A CDC-sized message of n: every byte says the same n, so a torn one shows. */
static void message(uint32_t n, uint8_t msg[SMC_CDC_MSG_LEN])
{
	for (unsigned int i = 0; i < SMC_CDC_MSG_LEN; i++)
		msg[i] = (uint8_t)(n + i);
}

/* n if msg is whole, as message() made it; UINT32_MAX if torn. */
static uint32_t message_number(const uint8_t msg[SMC_CDC_MSG_LEN])
{
	for (unsigned int i = 1; i < SMC_CDC_MSG_LEN; i++)
		if (msg[i] != (uint8_t)(msg[0] + i))
			return UINT32_MAX;
	return msg[0];
}

static void reads_each_once(void **state)
{
	struct smc_mbox mbox = { 0 };
	uint8_t msg[SMC_CDC_MSG_LEN];
	uint32_t seen = 0;

	(void)state;
	assert_false(smc_mbox_read(&mbox, &seen, msg));        /* nothing yet */
	message(7, msg);
	smc_mbox_write(&mbox, msg);
	message(0, msg);
	assert_true(smc_mbox_read(&mbox, &seen, msg));
	assert_int_equal(message_number(msg), 7);
	assert_false(smc_mbox_read(&mbox, &seen, msg));        /* the same one */
	message(8, msg);
	smc_mbox_write(&mbox, msg);
	message(9, msg);
	smc_mbox_write(&mbox, msg);                             /* the latest replaces it */
	assert_true(smc_mbox_read(&mbox, &seen, msg));
	assert_int_equal(message_number(msg), 9);
}

static void odd_seq_holds_nobody(void **state)
{
	struct smc_mbox mbox = { 0 };
	uint8_t msg[SMC_CDC_MSG_LEN];
	uint32_t seen = 0;

	(void)state;
	atomic_store(&mbox.seq, 5);     /* a writer that stopped mid-write, or a hostile one */
	assert_false(smc_mbox_read(&mbox, &seen, msg));
	message(3, msg);
	smc_mbox_write(&mbox, msg);     /* even again */
	assert_int_equal(atomic_load(&mbox.seq) & 1, 0);
	assert_true(smc_mbox_read(&mbox, &seen, msg));
	assert_int_equal(message_number(msg), 3);
}

struct race {
	struct smc_mbox mbox;
	_Atomic int done;
};

static void *writer(void *arg)
{
	struct race *r = arg;
	uint8_t msg[SMC_CDC_MSG_LEN];

	for (uint32_t n = 1; n <= WRITES; n++) {
		message(n, msg);
		smc_mbox_write(&r->mbox, msg);
		/* a pause, as between CDCs: a writer without any holds every read off */
		for (volatile unsigned int i = 0; i < 200; i++)
			;
	}
	atomic_store(&r->done, 1);
	return NULL;
}

static void never_torn(void **state)
{
	struct race r = { 0 };
	uint8_t msg[SMC_CDC_MSG_LEN];
	uint32_t seen = 0, whole = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, writer, &r), 0);
	while (!atomic_load(&r.done)) {
		if (!smc_mbox_read(&r.mbox, &seen, msg))
			continue;
		assert_int_not_equal(message_number(msg), UINT32_MAX);
		assert_int_equal(seen & 1, 0);
		whole++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(whole > 0);
	/* the last CDC, read now or before */
	assert_true(smc_mbox_read(&r.mbox, &seen, msg) || whole > 0);
	assert_int_equal(message_number(msg), (uint8_t)WRITES);
	assert_int_equal(seen, 2u * WRITES);
	print_message("%u whole reads while %u CDCs were written\n", whole, WRITES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_each_once),
		cmocka_unit_test(odd_seq_holds_nobody),
		cmocka_unit_test(never_torn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

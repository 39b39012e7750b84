/*
 * stats_sum.c - reading a statistics region (stats_region.h): its counters plus
 * the traffic of the connections still open in its table, which join the
 * counters only when they close.  Shared by libsmcr (its exit line) and
 * smcrd (the host's figures), where the region is another process's memory:
 * every value is only added up, never past the top (smcr_stats_add_word),
 * and the two used as indexes (high, transport) are checked first.
 */
#include "stats_region.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* One open connection's traffic, into the counters of its mode and transport. */
static void add_record(struct smcr_stats_counts *sum, const struct smcr_conn_record *r)
{
	uint32_t mode = LOAD(r->mode), t = LOAD(r->transport);

	if (mode == SMCR_CONN_TCP) {
		smcr_stats_add_word(&sum->tcp_bytes_in, LOAD(r->bytes_in));
		smcr_stats_add_word(&sum->tcp_bytes_out, LOAD(r->bytes_out));
		smcr_stats_add_word(&sum->tcp_recvs, LOAD(r->recvs));
		smcr_stats_add_word(&sum->tcp_sends, LOAD(r->sends));
	} else if (mode == SMCR_CONN_SMC && t < SMCR_TRANSPORTS) {
		struct smcr_stats_transport *s = &sum->transport[t];
		smcr_stats_add_word(&s->bytes_in, LOAD(r->bytes_in));
		smcr_stats_add_word(&s->bytes_out, LOAD(r->bytes_out));
		smcr_stats_add_word(&s->recvs, LOAD(r->recvs));
		smcr_stats_add_word(&s->sends, LOAD(r->sends));
		smcr_stats_add_word(&s->rmb_full, LOAD(r->rmb_full));
		smcr_stats_add_word(&s->peer_rmb_full, LOAD(r->peer_rmb_full));
	}
}

void smcr_stats_accumulate(struct smcr_stats_counts *sum, const struct smcr_stats *s)
{
	uint32_t high = LOAD(s->conns.high);

	for (size_t i = 0; i < SMCR_STATS_WORDS; i++)
		smcr_stats_add_word(&smcr_stats_words(sum)[i], LOAD(s->word[i]));
	if (high > SMCR_CONN_SLOTS)
		high = SMCR_CONN_SLOTS;
	for (uint32_t i = 0; i < high; i++)
		add_record(sum, &s->conns.slot[i]);
}

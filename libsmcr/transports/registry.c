/*
 * registry.c - every transport's ops, by id: the table that
 * SMCR_TRANSPORT_LIST (common/conn_record.h) generates, so that a new
 * transport is its own folder here and one line there.
 */
#include "smc_transport.h"

#define DECLARE(id, name) extern const struct smc_transport_ops smc_##name##_ops;
SMCR_TRANSPORT_LIST(DECLARE)
#undef DECLARE

#define ENTRY(id, name) [SMCR_TRANSPORT_##id] = &smc_##name##_ops,
static const struct smc_transport_ops *const transports[SMCR_TRANSPORTS] = {
	SMCR_TRANSPORT_LIST(ENTRY)
};
#undef ENTRY

const struct smc_transport_ops *smc_transport(unsigned int id)
{
	return id < SMCR_TRANSPORTS ? transports[id] : NULL;
}

void smc_transports_process_ending(void)
{
	for (unsigned int id = 0; id < SMCR_TRANSPORTS; id++)
		if (transports[id]->process_ending)
			transports[id]->process_ending();
}

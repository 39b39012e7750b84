/*
 * reason.c - the table behind reason.h.
 */
#include <stddef.h>

#include "reason.h"

static const struct {
	uint32_t code;
	const char *name, *text;
} reasons[SMCR_REASON_COUNT] = {
	[SMCR_REASON_NONE] = { 0, "NONE", "not a fallback" },
#define SMCR_REASON_ENTRY(name, code, text) [SMCR_REASON_##name] = { code, #name, text },
	SMCR_REASONS(SMCR_REASON_ENTRY)
#undef SMCR_REASON_ENTRY
};

enum smcr_reason smcr_reason_known(enum smcr_reason reason)
{
	return (unsigned int)reason < SMCR_REASON_COUNT ? reason : SMCR_REASON_INTERR;
}

static unsigned int index_of(enum smcr_reason reason)
{
	return (unsigned int)smcr_reason_known(reason);
}

uint32_t smcr_reason_code(enum smcr_reason reason)
{
	return reasons[index_of(reason)].code;
}

const char *smcr_reason_name(enum smcr_reason reason)
{
	return reasons[index_of(reason)].name;
}

const char *smcr_reason_text(enum smcr_reason reason)
{
	return reasons[index_of(reason)].text;
}

enum smcr_reason smcr_reason_from_code(uint32_t code)
{
	for (unsigned int i = 1; i < SMCR_REASON_COUNT; i++)
		if (reasons[i].code == code)
			return (enum smcr_reason)i;
	return SMCR_REASON_NONE;
}

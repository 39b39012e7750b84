/*
 * config_priv.h - what the files of the smcr_config library share privately.
 */
#ifndef SMCR_CONFIG_PRIV_H
#define SMCR_CONFIG_PRIV_H

#include "config.h"

/* What surrounds a key or value without being part of it. */
#define BLANKS " \t\r\n"

/* Fills err (if not NULL) with line and the formatted message; returns -1. */
int smcr_config_fail(struct smcr_config_error *err, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

/*
 * std_streams.h - stdin, stdout and stderr over the SMC connections a
 * process starts with (std_streams.c), set up once by the constructor after
 * the inherited connections are adopted.
 */
#ifndef SMCR_STD_STREAMS_H
#define SMCR_STD_STREAMS_H

void smcr_std_streams_adopt(void);

#endif

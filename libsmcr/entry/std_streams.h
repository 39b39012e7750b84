/*
 * std_streams.h - stdio streams over SMC connections (std_streams.c): the
 * standard streams of a process that starts with connections on 0, 1 or 2,
 * those of a descriptor that dup2 or dup3 makes a connection, and fdopen()
 * of one (interposed there).
 */
#ifndef SMCR_STD_STREAMS_H
#define SMCR_STD_STREAMS_H

/* By the constructor, after the inherited connections are adopted. */
void smcr_std_streams_adopt(void);

/*
 * Around dup2/dup3(oldfd, newfd): before, the standard stream of newfd is
 * flushed if a connection is to replace its descriptor (its bytes go where
 * they were written for); after, it is replaced if newfd is a connection.
 */
void smcr_std_stream_before_dup(int oldfd, int newfd);
void smcr_std_stream_after_dup(int newfd);

#endif

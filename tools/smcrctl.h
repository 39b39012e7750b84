/*
 * smcrctl.h - smcrctl's commands, which smcrctl.c dispatches to from its
 * table of commands.  Each lives below smcrctl.c in a file of its own:
 * smcrctl_config.c (show, set, enable, disable), smcrctl_status.c,
 * smcrctl_stats.c (writing Prometheus's format with smcrctl_prom.h),
 * smcrctl_conns.c, smcrctl_top.c, smcrctl_check.c; what they share is
 * smcrctl_common.h's.
 */
#ifndef SMCRCTL_H
#define SMCRCTL_H

/* What a command is given: the configuration file (-c) and its arguments. */
struct smcrctl_args {
	const char *conf;
	char **argv;
	int argc;
};

/*
 * Each returns its exit status, or EXIT_SHOW_USAGE (smcrctl_common.h) when
 * its arguments are wrong.
 */
int smcrctl_show(const struct smcrctl_args *a);
int smcrctl_set(const struct smcrctl_args *a);
int smcrctl_enable(const struct smcrctl_args *a);
int smcrctl_disable(const struct smcrctl_args *a);
int smcrctl_status(const struct smcrctl_args *a);
int smcrctl_stats(const struct smcrctl_args *a);
int smcrctl_conns(const struct smcrctl_args *a);
int smcrctl_top(const struct smcrctl_args *a);
int smcrctl_check(const struct smcrctl_args *a);

#endif

/*
 * smc_ibv.c - the dlopen()ed RDMA libraries (smc_ibv.h).
 *
 * The libraries stay loaded for the life of the process once loaded: the
 * transport's thread and the objects it created depend on them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "smc_ibv.h"

struct smc_ibv smc_ibv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_err;
static const char *load_why;

static void load(void)
{
	/* RTLD_GLOBAL: librdmacm and the verbs providers find libibverbs' symbols */
	void *lib[2] = {
		dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL),
		dlopen("librdmacm.so.1", RTLD_NOW | RTLD_GLOBAL),
	};
	enum { VERBS, CM };

	if (!lib[VERBS] || !lib[CM]) {
		load_why = "libibverbs.so.1 or librdmacm.so.1 not installed";
		load_err = -ENODEV;
		return;
	}
#define SMC_IBV_RESOLVE(l, name)						\
	smc_ibv.name = (__typeof__(&name))dlsym(lib[l], #name);		\
	if (!smc_ibv.name) {							\
		load_why = "symbol " #name " missing from the RDMA libraries";	\
		load_err = -ENODEV;						\
		return;								\
	}
	SMC_IBV_FUNCS(SMC_IBV_RESOLVE)
#undef SMC_IBV_RESOLVE
}

int smc_ibv_load(const char **why)
{
	pthread_once(&load_once, load);
	if (why)
		*why = load_why;
	return load_err;
}

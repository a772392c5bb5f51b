/*
 * rs_sleeper.c — (make bench only, part 9) an LD_PRELOAD library that
 * starts one thread when it is loaded, before main, and lets it sleep for
 * the life of the process (pause(2)). Preloaded into both processes of
 * upstream's rstream it gives upstream's library what ours always has: a
 * second thread in the process (our progress engine), doing nothing, so
 * that part 9 can tell the cost of having such a thread on this bed (glibc
 * takes its multithreaded paths in every process that has started one)
 * from the cost of what our library does.
 */
#include <pthread.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

__attribute__((constructor)) static void start_sleeper(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, sleeper, NULL) == 0)
		pthread_detach(t);
}

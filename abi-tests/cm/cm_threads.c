/*
 * cm_threads.c — thread test of the CM core on the soft-RoCE guest.
 *
 * T threads each run C cycles of create_id / bind_addr(192.0.2.1) /
 * resolve_addr(192.0.2.1) / resolve_route / destroy_id, in three modes:
 *
 *   shared     all ids on ONE event channel; one dispatcher thread polls
 *              the (non-blocking) channel fd, reads every event, checks it
 *              against the id it names (via id->context), acks it and
 *              wakes that id's owner;
 *   perthread  every thread has its own channel and reads its own events;
 *   sync       sync ids (NULL channel): every id has a private channel and
 *              resolve_* block until their event.
 *
 * Checks: no deadlock (a watchdog ends the process after a hard timeout
 * and says where it was), every event accounted for (2 per cycle, the
 * right type, for the right id, status 0), no call failing, and no file
 * descriptors left behind (counted in /proc/self/fd after a warm-up cycle,
 * since libraries keep device contexts open). Memory leaks are checked by
 * running this under valgrind (abi-tests/vm/tests.d/20-cm-diff.sh).
 *
 *   cm_threads [-t THREADS] [-c CYCLES] [-m shared|perthread|sync|all] [-T SECONDS] [-x]
 * (-x: the other allocating paths too, see extra_paths)
 * Output: one line per mode, then "threads: N passed, M failed". Exit 0/1;
 * 2 on watchdog timeout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#define RDMA_CM_EVENT_USER_ 18 /* v60+; Debian 44's header lacks it */

static int nthreads = 8, ncycles = 200, timeout_s = 240;
static const char *volatile current_mode = "setup";

/* per-mode counters (atomics) */
static long events_ok, events_bad, call_errors;

/* One in-flight id of a thread in shared mode: the dispatcher reports the
 * event type here and signals. */
struct slot {
	pthread_mutex_t lk;
	pthread_cond_t cv;
	int have; /* an event arrived */
	int type, status;
};

static struct rdma_event_channel *shared_ch;
static volatile int stop_dispatch;

static void add(long *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_SEQ_CST);
}

static void sa_v4(struct sockaddr_in *s, const char *ip, int port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

static void check_event(int type, int status, int want)
{
	if (type == want && status == 0)
		add(&events_ok);
	else
		add(&events_bad);
}

/* shared mode: read, check and hand over every event until told to stop
 * (the channel fd is non-blocking; poll wakes us or times out) */
static void *dispatcher(void *arg)
{
	struct pollfd pfd = { .fd = shared_ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	(void)arg;
	for (;;) {
		if (rdma_get_cm_event(shared_ch, &ev)) {
			if (errno != EAGAIN) {
				add(&call_errors);
				return NULL;
			}
			if (stop_dispatch)
				return NULL;
			poll(&pfd, 1, 100);
			continue;
		}
		struct slot *s = ev->id->context;
		int type = ev->event, status = ev->status;
		/* ack before waking the owner: it may destroy the id at once */
		if (rdma_ack_cm_event(ev))
			add(&call_errors);
		pthread_mutex_lock(&s->lk);
		s->type = type;
		s->status = status;
		s->have = 1;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->lk);
	}
}

/* wait for the dispatcher to report this slot's next event */
static void wait_slot(struct slot *s, int want)
{
	pthread_mutex_lock(&s->lk);
	while (!s->have)
		pthread_cond_wait(&s->cv, &s->lk);
	s->have = 0;
	check_event(s->type, s->status, want);
	pthread_mutex_unlock(&s->lk);
}

/* read the next event of a private (per-thread) channel */
static void read_own(struct rdma_event_channel *ch, struct rdma_cm_id *id, int want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		add(&call_errors);
		return;
	}
	check_event(ev->id == id ? (int)ev->event : -1, ev->status, want);
	if (rdma_ack_cm_event(ev))
		add(&call_errors);
}

/*
 * -x: after every cycle, a thread also runs the other allocating paths once
 * (for the leak check under valgrind, and to run them concurrently):
 * get/free_devices; migrate async -> sync -> async; a failing sync
 * resolve_addr; destroy with an event still unread; and, if the library
 * has them (RDMACM_1.4, looked up at run time), write_cm_event and
 * resolve_addrinfo/query_addrinfo on a sync id, destroy with a result
 * never queried. Only calls that must succeed count as failures.
 */
static int extras;
static int (*p_write_cm_event)(struct rdma_cm_id *, enum rdma_cm_event_type, int, uint64_t);
static int (*p_resolve_addrinfo)(struct rdma_cm_id *, const char *, const char *, const struct rdma_addrinfo *);
static int (*p_query_addrinfo)(struct rdma_cm_id *, struct rdma_addrinfo **);
static int kernel_has_write_event = -1; /* learnt from the first try */

static void must(int ok)
{
	if (!ok)
		add(&call_errors);
}

static void extra_paths(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in d, nr;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_context **l;
	int n;

	sa_v4(&d, "192.0.2.1", 7471);
	sa_v4(&nr, "198.51.100.1", 7471);
	l = rdma_get_devices(&n);
	must(l && n > 0);
	if (l)
		rdma_free_devices(l);
	if (!ch) {
		add(&call_errors);
		return;
	}
	/* migrate: async on ch, then sync, then back */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0) {
		must(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0);
		if (rdma_get_cm_event(ch, &ev) == 0)
			rdma_ack_cm_event(ev);
		else
			add(&call_errors);
		must(rdma_migrate_id(id, NULL) == 0);
		must(rdma_resolve_route(id, 2000) == 0);
		must(rdma_migrate_id(id, ch) == 0);
		must(rdma_destroy_id(id) == 0);
	} else {
		add(&call_errors);
	}
	/* failing sync resolution */
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP) == 0) {
		must(rdma_resolve_addr(id, NULL, (struct sockaddr *)&nr, 500) == -1);
		must(rdma_destroy_id(id) == 0);
	} else {
		add(&call_errors);
	}
	/* destroy with the event unread */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0) {
		must(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0);
		must(rdma_destroy_id(id) == 0);
	} else {
		add(&call_errors);
	}
	/* drain whatever the destroyed id left (nothing, normally) */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	while (rdma_get_cm_event(ch, &ev) == 0)
		rdma_ack_cm_event(ev);
	if (p_write_cm_event && p_resolve_addrinfo && p_query_addrinfo &&
	    rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0) {
		int r = p_write_cm_event(id, RDMA_CM_EVENT_USER_, 1, 2);
		if (kernel_has_write_event < 0)
			kernel_has_write_event = r == 0;
		must((r == 0) == (kernel_has_write_event == 1));
		if (r == 0) {
			struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
			poll(&pfd, 1, 2000);
			if (rdma_get_cm_event(ch, &ev) == 0)
				rdma_ack_cm_event(ev);
			else
				add(&call_errors);
		}
		must(rdma_destroy_id(id) == 0);
		if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0) {
			struct rdma_addrinfo *ai = NULL;
			r = p_resolve_addrinfo(id, "192.0.2.1", "7471", NULL);
			must((r == 0) == (kernel_has_write_event == 1));
			if (r == 0 && p_query_addrinfo(id, &ai) == 0)
				rdma_freeaddrinfo(ai);
			else if (r == 0)
				add(&call_errors);
			/* a second result, never queried: destroy frees it */
			if (r == 0)
				must(p_resolve_addrinfo(id, "fd00::1", NULL, NULL) == 0);
			must(rdma_destroy_id(id) == 0);
		} else {
			add(&call_errors);
		}
	}
	rdma_destroy_event_channel(ch);
}

enum mode { SHARED, PERTHREAD, SYNC };

static void *worker(void *arg)
{
	enum mode m = (enum mode)(long)arg;
	struct rdma_event_channel *ch = NULL;
	struct sockaddr_in b, d;
	struct slot s;
	int i;

	pthread_mutex_init(&s.lk, NULL);
	pthread_cond_init(&s.cv, NULL);
	s.have = 0;
	sa_v4(&b, "192.0.2.1", 0);
	sa_v4(&d, "192.0.2.1", 7471);
	if (m == SHARED)
		ch = shared_ch;
	else if (m == PERTHREAD && !(ch = rdma_create_event_channel())) {
		add(&call_errors);
		return NULL;
	}
	for (i = 0; i < ncycles; i++) {
		struct rdma_cm_id *id;

		if (rdma_create_id(ch, &id, &s, RDMA_PS_TCP)) {
			add(&call_errors);
			continue;
		}
		if (rdma_bind_addr(id, (struct sockaddr *)&b) ||
		    rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000)) {
			add(&call_errors);
			goto destroy;
		}
		if (m == SHARED)
			wait_slot(&s, RDMA_CM_EVENT_ADDR_RESOLVED);
		else if (m == PERTHREAD)
			read_own(ch, id, RDMA_CM_EVENT_ADDR_RESOLVED);
		else
			check_event(id->event ? (int)id->event->event : -1, id->event ? id->event->status : -1,
				    RDMA_CM_EVENT_ADDR_RESOLVED);
		if (rdma_resolve_route(id, 2000)) {
			add(&call_errors);
			goto destroy;
		}
		if (m == SHARED)
			wait_slot(&s, RDMA_CM_EVENT_ROUTE_RESOLVED);
		else if (m == PERTHREAD)
			read_own(ch, id, RDMA_CM_EVENT_ROUTE_RESOLVED);
		else
			check_event(id->event ? (int)id->event->event : -1, id->event ? id->event->status : -1,
				    RDMA_CM_EVENT_ROUTE_RESOLVED);
destroy:
		if (rdma_destroy_id(id))
			add(&call_errors);
		if (extras)
			extra_paths();
	}
	if (m == PERTHREAD)
		rdma_destroy_event_channel(ch);
	pthread_mutex_destroy(&s.lk);
	pthread_cond_destroy(&s.cv);
	return NULL;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static int run_mode(enum mode m, const char *name)
{
	pthread_t *t = calloc(nthreads, sizeof(*t)), disp;
	long want = 2L * nthreads * ncycles;
	int i, fds0, fds1, ok;

	current_mode = name;
	events_ok = events_bad = call_errors = 0;
	fds0 = count_fds();
	if (m == SHARED) {
		if (!(shared_ch = rdma_create_event_channel())) {
			printf("mode %s: create_event_channel failed: %s\n", name, strerror(errno));
			free(t);
			return 0;
		}
		fcntl(shared_ch->fd, F_SETFL, fcntl(shared_ch->fd, F_GETFL) | O_NONBLOCK);
		stop_dispatch = 0;
		pthread_create(&disp, NULL, dispatcher, NULL);
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(long)m);
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	if (m == SHARED) {
		stop_dispatch = 1;
		pthread_join(disp, NULL);
		rdma_destroy_event_channel(shared_ch);
	}
	fds1 = count_fds();
	ok = events_ok == want && !events_bad && !call_errors && fds1 == fds0;
	printf("%s mode %s: %d threads x %d cycles%s: %ld/%ld events ok, %ld bad, %ld failed calls, fds %+d\n",
	       ok ? "ok  " : "FAIL", name, nthreads, ncycles, extras ? " (+extras)" : "", events_ok, want, events_bad, call_errors, fds1 - fds0);
	free(t);
	return ok;
}

static void on_alarm(int sig)
{
	char buf[160];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf), "FAIL watchdog: still running after %d s in mode %s (deadlock?): %ld events\n",
		     timeout_s, current_mode, events_ok + events_bad);
	if (write(1, buf, n) < 0)
		_exit(3);
	_exit(2);
}

/* one cycle outside the measurement: the library opens its devices (all
 * of them, for rdma_get_devices) and keeps them open */
static void warm_up(void)
{
	struct ibv_context **l;
	struct rdma_cm_id *id;
	struct sockaddr_in d;

	l = rdma_get_devices(NULL);
	if (l)
		rdma_free_devices(l);

	sa_v4(&d, "192.0.2.1", 7471);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0) {
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000);
		rdma_destroy_id(id);
	}
}

int main(int argc, char **argv)
{
	const char *mode = "all";
	int o, pass = 0, fail = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p_write_cm_event = dlsym(RTLD_DEFAULT, "rdma_write_cm_event");
	p_resolve_addrinfo = dlsym(RTLD_DEFAULT, "rdma_resolve_addrinfo");
	p_query_addrinfo = dlsym(RTLD_DEFAULT, "rdma_query_addrinfo");
	while ((o = getopt(argc, argv, "t:c:m:T:x")) != -1) {
		switch (o) {
		case 'x': extras = 1; break;
		case 't': nthreads = atoi(optarg); break;
		case 'c': ncycles = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'T': timeout_s = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-t THREADS] [-c CYCLES] [-m shared|perthread|sync|all] [-T S] [-x]\n",
				argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || ncycles < 1)
		return 2;
	signal(SIGALRM, on_alarm);
	alarm(timeout_s);
	warm_up();
	if (!strcmp(mode, "all") || !strcmp(mode, "shared"))
		run_mode(SHARED, "shared") ? pass++ : fail++;
	if (!strcmp(mode, "all") || !strcmp(mode, "perthread"))
		run_mode(PERTHREAD, "perthread") ? pass++ : fail++;
	if (!strcmp(mode, "all") || !strcmp(mode, "sync"))
		run_mode(SYNC, "sync") ? pass++ : fail++;
	printf("threads: %d passed, %d failed\n", pass, fail);
	return fail || !pass;
}

/* hostile.c — a hostile rsocket peer against our rsocket library.
 *
 *   hostile victim PORT [SELF_ADDR]
 *   hostile attack ADDR PORT CASE
 *
 * victim: a plain rsocket server (rsocket API; run with our librdmacm). It
 * serves connections one after another and prints, for each, what the
 * library did (return values and errno names):
 *   "conn K accepted"
 *   "conn K: ..."            commands served
 *   "conn K end: OUTCOME: DETAILS"
 * OUTCOME is "reset" (the library reported an error on the rsocket before
 * the application read anything), "reset-later" (an error after commands),
 * "eof" (the peer closed cleanly) or "timeout". Any call result that a reset
 * or live connection must never give (a send that succeeds on a reset
 * connection, more bytes than asked for, ...) is printed as "ANOMALY ...".
 * The victim does not read during its first SETTLE_MS: a peer that breaks
 * the protocol must be caught by the library alone. Then it serves command
 * lines (PING, BULK, IOWRITE, QUIT). After the connection that sent QUIT it
 * opens one more connection to its own listener from a thread, in the same
 * process (when SELF_ADDR is given). Exit 0: QUIT was served, the self test
 * echoed its data intact and no anomaly was seen; 4: the same but with
 * anomalies on the way; 1: the final exchange or the self test failed.
 *
 * attack: a raw peer speaking the rsocket wire protocol itself, with
 * librdmacm's rdma_cm API and libibverbs (run it with the system
 * librdmacm): an RC QP, the 40-byte connection data in the private data,
 * RDMA WRITE WITH IMMEDIATE for messages. Each CASE misbehaves in one way
 * (the case_* functions); it prints what it saw and exits 0 when its own
 * side of the case went as expected (what the victim did is judged from the
 * victim's output), non-zero when it could not run or saw wrong data.
 *
 * Everything has a timeout (alarm() as a last resort).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SETTLE_MS 1500
#define SETTLE_SLICE_MS 100
/* How long the victim waits in rpoll for a command. */
#define READ_MS 10000

static const char *ename(int e)
{
	const char *n;

	if (e == 0)
		return "0";
	n = strerrorname_np(e);
	return n ? n : "E?";
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The data every BULK and IOWRITE carries: byte i of the stream. */
static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static void fill_pat(uint8_t *b, size_t n, size_t start)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(start + i);
}

static size_t check_pat(const uint8_t *b, size_t n, size_t start)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(start + i))
			return i;
	return n;
}

/* ===================================================================
 * victim
 * =================================================================== */

static int anomalies;

static void anomaly(int k, const char *fmt, ...)
{
	va_list ap;

	printf("conn %d: ANOMALY ", k);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	anomalies++;
}

struct linebuf {
	char b[4096];
	size_t n;
};

/* The next command line (without '\n'): 1; 0 at EOF; -1 on an error
 * (errno); -2 at the timeout. */
static int read_line(int fd, struct linebuf *lb, char *out, size_t outsz, int ms, int k)
{
	int spins = 0;

	for (;;) {
		char *nl = memchr(lb->b, '\n', lb->n);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t got;
		int r;

		if (nl) {
			size_t l = (size_t)(nl - lb->b);
			size_t c = l < outsz - 1 ? l : outsz - 1;

			memcpy(out, lb->b, c);
			out[c] = 0;
			memmove(lb->b, nl + 1, lb->n - l - 1);
			lb->n -= l + 1;
			return 1;
		}
		if (lb->n == sizeof(lb->b)) {
			errno = EMSGSIZE;
			return -1;
		}
		uint64_t t0 = now_ms();

		r = rpoll(&p, 1, ms);
		if (r > 0 && (p.revents & POLLIN) && now_ms() - t0 + 20 >= (uint64_t)ms) {
			/* Data seen only when the timeout ran out: it came
			 * earlier and rpoll slept through it. */
			anomaly(k, "rpoll(POLLIN, %d ms) reported the data only at its timeout (a missed wake-up)", ms);
		}
		if (r == 0) {
			/* A timeout with data waiting is a missed wake-up. */
			got = rrecv(fd, lb->b + lb->n, sizeof(lb->b) - lb->n, MSG_DONTWAIT);
			if (got > 0) {
				anomaly(k, "rpoll(POLLIN, %d ms) timed out although %zd bytes had arrived "
					   "(a missed wake-up)", ms, got);
				lb->n += (size_t)got;
				continue;
			}
			return -2;
		}
		if (r < 0) {
			anomaly(k, "rpoll -1 %s", ename(errno));
			return -1;
		}
		got = rrecv(fd, lb->b + lb->n, sizeof(lb->b) - lb->n, MSG_DONTWAIT);
		if (got > (ssize_t)(sizeof(lb->b) - lb->n)) {
			anomaly(k, "rrecv returned %zd, more than asked", got);
			return -1;
		}
		if (got > 0) {
			lb->n += (size_t)got;
			continue;
		}
		if (got == 0)
			return 0;
		if (errno == EAGAIN && ++spins < 1000)
			continue;
		return -1;
	}
}

/* Send all of buf (non-blocking calls, rpoll between): the bytes sent;
 * errno set when short. */
static size_t send_all(int fd, const void *buf, size_t len, int ms)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = rsend(fd, (const char *)buf + done, len - done, MSG_DONTWAIT);
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r == 0) {
			errno = EPIPE;
			return done;
		}
		if (errno != EAGAIN)
			return done;
		if (rpoll(&p, 1, ms) <= 0) {
			errno = ETIMEDOUT;
			return done;
		}
		if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			/* Let the next rsend report the error. */
			r = rsend(fd, (const char *)buf + done, len - done, MSG_DONTWAIT);
			if (r > 0) {
				done += (size_t)r;
				continue;
			}
			if (r == 0)
				errno = EPIPE;
			return done;
		}
	}
	return done;
}

static void revents_str(short r, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s%s%s", r & POLLIN ? "IN|" : "", r & POLLOUT ? "OUT|" : "",
		 r & POLLERR ? "ERR|" : "", r & POLLHUP ? "HUP|" : "", r & POLLNVAL ? "NVAL|" : "");
	if (out[0])
		out[strlen(out) - 1] = 0;
	else
		snprintf(out, n, "none");
}

/* A connection the library has broken: what every call says now. */
static void probe_dead(int fd, int k, char *det, size_t detsz)
{
	int soerr = -1;
	socklen_t sl = sizeof(soerr);
	size_t drained = 0;
	ssize_t r;
	int e = 0, i;
	char buf[8192];

	if (rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
		soerr = -errno;
	/* Data that arrived within the rules before the violation may still
	 * be read; then EOF (0) or ECONNRESET. */
	for (i = 0; i < 1000; i++) {
		r = rrecv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r <= 0)
			break;
		if (r > (ssize_t)sizeof(buf))
			anomaly(k, "rrecv returned %zd, more than asked", r);
		drained += (size_t)r;
	}
	e = r < 0 ? errno : 0;
	if (r > 0 || (r < 0 && e != ECONNRESET && e != ENOTCONN))
		anomaly(k, "rrecv on a reset connection: %zd %s", r, ename(e));
	{
		ssize_t s = rsend(fd, "x", 1, MSG_DONTWAIT);
		int se = s < 0 ? errno : 0;

		if (s >= 0 || se == EAGAIN)
			anomaly(k, "rsend on a reset connection: %zd %s", s, ename(se));
		snprintf(det, detsz, "SO_ERROR %s, rrecv drained %zu bytes then %zd%s%s, rsend %zd%s%s",
			 soerr < 0 ? "(getsockopt failed)" : ename(soerr), drained, r, r < 0 ? " " : "",
			 r < 0 ? ename(e) : "", s, s < 0 ? " " : "", s < 0 ? ename(se) : "");
	}
}

static void close_conn(int fd, int k, char *det, size_t detsz)
{
	int r = rclose(fd);
	size_t l = strlen(det);

	snprintf(det + l, detsz - l, ", rclose %d%s%s", r, r ? " " : "", r ? ename(errno) : "");
	(void)k;
}

enum { O_RESET, O_RESET_LATER, O_EOF, O_TIMEOUT };
static const char *onames[] = { "reset", "reset-later", "eof", "timeout" };

/* Serve one accepted connection; true if it was the final (QUIT) one. */
static int serve(int fd, int k)
{
	struct pollfd p = { .fd = fd, .events = 0 };
	char det[512] = "", rv[32], line[256];
	struct linebuf lb = { .n = 0 };
	int quit = 0, outcome, r;

	/* Do not read for a while: the library alone must catch a peer that
	 * breaks the rules (events 0: only POLLERR/POLLHUP end the wait). The
	 * wait goes in slices: each rpoll call processes what has completed,
	 * so a missed wake-up inside one rpoll (the rpoll-wakeup case) cannot
	 * hide what the other cases are about. */
	for (int waited = 0; waited < SETTLE_MS; waited += SETTLE_SLICE_MS) {
		r = rpoll(&p, 1, SETTLE_SLICE_MS);
		if (r != 0)
			break;
	}
	if (r < 0)
		anomaly(k, "rpoll -1 %s", ename(errno));
	if (r > 0 && (p.revents & (POLLERR | POLLHUP))) {
		revents_str(p.revents, rv, sizeof(rv));
		probe_dead(fd, k, det, sizeof(det));
		if (!(p.revents & POLLERR))
			outcome = O_EOF; /* a plain hang-up: the peer left */
		else
			outcome = O_RESET;
		close_conn(fd, k, det, sizeof(det));
		printf("conn %d end: %s: revents %s, %s\n", k, onames[outcome], rv, det);
		return 0;
	}
	for (;;) {
		r = read_line(fd, &lb, line, sizeof(line), READ_MS, k);
		if (r != 1)
			break;
		for (char *c = line; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				*c = '?';
		if (!strncmp(line, "PING", 4)) {
			char reply[300];
			int n = snprintf(reply, sizeof(reply), "PONG%s\n", line + 4);
			size_t s = send_all(fd, reply, (size_t)n, 5000);

			printf("conn %d: \"%s\": replied %zu of %d bytes%s%s\n", k, line, s, n,
			       s < (size_t)n ? " " : "", s < (size_t)n ? ename(errno) : "");
		} else if (!strncmp(line, "BULK ", 5)) {
			size_t n = strtoul(line + 5, NULL, 0), s;
			uint8_t *b;

			if (n > (1 << 24))
				n = 1 << 24;
			b = malloc(n ? n : 1);
			if (!b)
				break;
			fill_pat(b, n, 0);
			s = send_all(fd, b, n, 5000);
			free(b);
			printf("conn %d: \"%s\": sent %zu of %zu bytes%s%s\n", k, line, s, n, s < n ? " " : "",
			       s < n ? ename(errno) : "");
		} else if (!strncmp(line, "IOWRITE ", 8)) {
			char *end;
			long long off = strtoll(line + 8, &end, 0);
			size_t n = strtoul(end, NULL, 0), w;
			uint8_t b[4096];
			char reply[64];
			int rn;

			if (n > sizeof(b))
				n = sizeof(b);
			fill_pat(b, n, 0);
			w = riowrite(fd, b, n, (off_t)off, 0);
			if (w != (size_t)-1 && w > n)
				anomaly(k, "riowrite returned %zu, more than asked", w);
			printf("conn %d: \"%s\": riowrite %zd%s%s\n", k, line, (ssize_t)w,
			       w == (size_t)-1 ? " " : "", w == (size_t)-1 ? ename(errno) : "");
			rn = snprintf(reply, sizeof(reply), "IOW %zd\n", (ssize_t)w);
			send_all(fd, reply, (size_t)rn, 5000);
		} else if (!strcmp(line, "QUIT")) {
			size_t s = send_all(fd, "BYE\n", 4, 5000);

			printf("conn %d: \"%s\": replied %zu of 4 bytes\n", k, line, s);
			quit = s == 4;
		} else {
			printf("conn %d: unknown command \"%s\"\n", k, line);
		}
	}
	if (r == -2) {
		outcome = O_TIMEOUT;
		snprintf(det, sizeof(det), "%zu bytes read without a command line", lb.n);
	} else {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (r == -1 && errno != ECONNRESET)
			snprintf(det, sizeof(det), "rrecv -1 %s, ", ename(errno));
		rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr || r == -1) {
			size_t l = strlen(det);
			struct pollfd q = { .fd = fd, .events = POLLIN | POLLOUT };

			outcome = O_RESET_LATER;
			rpoll(&q, 1, 0);
			revents_str(q.revents, rv, sizeof(rv));
			snprintf(det + l, sizeof(det) - l, "SO_ERROR %s, revents %s", ename(soerr), rv);
			{
				ssize_t s = rsend(fd, "x", 1, MSG_DONTWAIT);
				int se = s < 0 ? errno : 0;

				l = strlen(det);
				snprintf(det + l, sizeof(det) - l, ", rsend %zd%s%s", s, s < 0 ? " " : "",
					 s < 0 ? ename(se) : "");
				if (s >= 0 || se == EAGAIN)
					anomaly(k, "rsend on a reset connection: %zd %s", s, ename(se));
			}
		} else {
			ssize_t again;
			char b[64];

			outcome = O_EOF;
			/* EOF is final: whatever the peer sends after its
			 * shutdown or disconnect must not be read. */
			usleep(500000);
			again = rrecv(fd, b, sizeof(b), MSG_DONTWAIT);
			if (again > 0)
				anomaly(k, "rrecv returned %zd bytes after it had reported EOF", again);
			snprintf(det, sizeof(det), "rrecv 0, then %zd%s%s", again, again < 0 ? " " : "",
				 again < 0 ? ename(errno) : "");
		}
	}
	close_conn(fd, k, det, sizeof(det));
	printf("conn %d end: %s: %s\n", k, onames[outcome], det);
	return quit;
}

/* The in-process self test: a client thread connects to our own listener
 * and sends 16 blocks of 16 KiB, each echoed back. */
struct self {
	const char *addr;
	int port;
	int ok;
	char why[128];
};

static void *self_client(void *arg)
{
	struct self *st = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)st->port) };
	static uint8_t out[16384], in[16384];
	int fd, i;

	if (inet_pton(AF_INET, st->addr, &sin.sin_addr) != 1) {
		snprintf(st->why, sizeof(st->why), "bad address %s", st->addr);
		return NULL;
	}
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		snprintf(st->why, sizeof(st->why), "rsocket %s", ename(errno));
		return NULL;
	}
	if (rconnect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		snprintf(st->why, sizeof(st->why), "rconnect %s", ename(errno));
		rclose(fd);
		return NULL;
	}
	for (i = 0; i < 16; i++) {
		size_t got = 0;

		fill_pat(out, sizeof(out), (size_t)i * sizeof(out));
		if (rsend(fd, out, sizeof(out), 0) != (ssize_t)sizeof(out)) {
			snprintf(st->why, sizeof(st->why), "rsend block %d: %s", i, ename(errno));
			break;
		}
		while (got < sizeof(in)) {
			ssize_t r = rrecv(fd, in + got, sizeof(in) - got, 0);

			if (r <= 0) {
				snprintf(st->why, sizeof(st->why), "rrecv block %d: %zd %s", i, r, ename(errno));
				goto out;
			}
			got += (size_t)r;
		}
		if (check_pat(in, sizeof(in), (size_t)i * sizeof(in)) != sizeof(in)) {
			snprintf(st->why, sizeof(st->why), "block %d echoed wrong", i);
			goto out;
		}
	}
	st->ok = 1;
out:
	rclose(fd);
	return NULL;
}

static int self_test(int lfd, const char *addr, int port)
{
	struct self st = { .addr = addr, .port = port };
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	pthread_t t;
	size_t echoed = 0;
	int fd = -1;

	if (pthread_create(&t, NULL, self_client, &st)) {
		printf("selftest: FAILED: pthread_create\n");
		return 0;
	}
	if (rpoll(&p, 1, 30000) == 1)
		fd = raccept(lfd, NULL, NULL);
	if (fd >= 0) {
		static char buf[65536];

		for (;;) {
			ssize_t r = rrecv(fd, buf, sizeof(buf), 0);

			if (r <= 0)
				break;
			if (rsend(fd, buf, (size_t)r, 0) != r)
				break;
			echoed += (size_t)r;
		}
		rclose(fd);
	}
	pthread_join(t, NULL);
	if (st.ok && echoed == 16 * 16384) {
		printf("selftest: ok: a new in-process connection echoed %zu bytes intact\n", echoed);
		return 1;
	}
	printf("selftest: FAILED: accept %s, echoed %zu, client: %s\n", fd >= 0 ? "ok" : "failed", echoed,
	       st.ok ? "ok" : st.why);
	return 0;
}

static int victim(int port, const char *self_addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int lfd, one = 1, iomap = 4, k = 0, quit = 0, self_ok = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	alarm(300);
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0) {
		printf("victim: rsocket: %s\n", ename(errno));
		return 2;
	}
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Room for 4 entries the peer may write (the iomap case). */
	if (rsetsockopt(lfd, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof(iomap)))
		printf("victim: RDMA_IOMAPSIZE: %s\n", ename(errno));
	if (rbind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(lfd, 8)) {
		printf("victim: rbind/rlisten: %s\n", ename(errno));
		return 2;
	}
	printf("victim: listening on port %d\n", port);
	while (!quit) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int fd, r;

		alarm(300);
		r = rpoll(&p, 1, 120000);
		if (r != 1) {
			printf("victim: no connection within 120 s (rpoll %d %s)\n", r, r < 0 ? ename(errno) : "");
			return 3;
		}
		fd = raccept(lfd, NULL, NULL);
		if (fd < 0) {
			/* A connection the library dropped before we took it. */
			printf("victim: raccept -1 %s\n", ename(errno));
			if (errno != EAGAIN)
				anomalies++;
			continue;
		}
		k++;
		printf("conn %d accepted\n", k);
		quit = serve(fd, k);
	}
	if (self_addr)
		self_ok = self_test(lfd, self_addr, port);
	rclose(lfd);
	printf("victim: %d connections, %d anomalies, final exchange %s, self test %s\n", k, anomalies,
	       quit ? "ok" : "FAILED", self_addr ? (self_ok ? "ok" : "FAILED") : "not run");
	/* 4: healthy at the end, but anomalies were seen on the way. */
	return quit && self_ok ? (anomalies ? 4 : 0) : 1;
}

/* ===================================================================
 * attacker
 * =================================================================== */

/* Queue sizes and buffers of the raw peer. */
#define A_RQ 512
#define A_SQ 1024
#define A_HALF 4096 /* our receive ring: two halves */
#define A_IOW 4096  /* our riowrite window */
#define A_SBUF 65536
#define PAGE 4096

enum { OP_DATA = 0, OP_SGL = 4, OP_IOMAP = 6, OP_CTRL = 7 };
#define IMM(op, v) (((uint32_t)(op) << 29) | ((uint32_t)(v) & 0x1fffffff))

struct sge_be {
	uint64_t addr;
	uint32_t key;
	uint32_t len;
};

struct conndata {
	uint8_t version, flags;
	uint16_t credits;
	uint8_t iomap_size;
	struct sge_be target, data; /* host order once decoded */
};

struct att {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	/* guard | target | guard | data ring | guard | iow | guard | sbuf */
	uint8_t *mem;
	size_t mem_len;
	uint8_t *target, *data, *iow, *sbuf;
	struct ibv_mr *mr_target, *mr_data, *mr_iow, *mr_sbuf;
	size_t sbuf_off;
	struct conndata v;
	/* sending: the victim's SGE being filled, our table's next entry */
	uint64_t cur_addr;
	uint32_t cur_key, cur_len;
	int tidx;
	uint16_t sseq_no, sseq_comp;
	/* receiving */
	uint32_t rd_pos, free_off, free_pending;
	uint16_t rseq_no;
	int rsge_idx;
	uint8_t inbox[65536];
	size_t inbox_n;
	int credit_updates;
	int rx_errors, tx_errors;
	int odd_ops; /* messages the victim must never send */
	int disconnected;
};

static void die(const char *what)
{
	printf("attack: %s failed: %s\n", what, ename(errno));
	exit(2);
}

static void decode_conn(const uint8_t *b, struct conndata *c)
{
	uint64_t a;
	uint32_t k, l;

	c->version = b[0];
	c->flags = b[1];
	c->credits = (uint16_t)(b[2] << 8 | b[3]);
	c->iomap_size = b[7];
	memcpy(&a, b + 8, 8);
	memcpy(&k, b + 16, 4);
	memcpy(&l, b + 20, 4);
	c->target = (struct sge_be){ be64toh(a), ntohl(k), ntohl(l) };
	memcpy(&a, b + 24, 8);
	memcpy(&k, b + 32, 4);
	memcpy(&l, b + 36, 4);
	c->data = (struct sge_be){ be64toh(a), ntohl(k), ntohl(l) };
}

static void encode_conn(uint8_t *b, const struct conndata *c)
{
	uint64_t a;
	uint32_t k, l;

	memset(b, 0, 40);
	b[0] = c->version;
	b[1] = c->flags;
	b[2] = (uint8_t)(c->credits >> 8);
	b[3] = (uint8_t)c->credits;
	b[7] = c->iomap_size;
	a = htobe64(c->target.addr);
	k = htonl(c->target.key);
	l = htonl(c->target.len);
	memcpy(b + 8, &a, 8);
	memcpy(b + 16, &k, 4);
	memcpy(b + 20, &l, 4);
	a = htobe64(c->data.addr);
	k = htonl(c->data.key);
	l = htonl(c->data.len);
	memcpy(b + 24, &a, 8);
	memcpy(b + 32, &k, 4);
	memcpy(b + 36, &l, 4);
}

static uint32_t scale_to_value(uint8_t s)
{
	return s <= 128 ? s : (uint32_t)(s & 0x7f) << 8;
}

/* The next CM event within ms: its type (private data of ESTABLISHED
 * decoded into a->v), -1 at the timeout. */
static int cm_event(struct att *a, int ms, int *status)
{
	struct pollfd p = { .fd = a->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&p, 1, ms) != 1)
		return -1;
	if (rdma_get_cm_event(a->ch, &ev))
		return -1;
	type = ev->event;
	if (status)
		*status = ev->status;
	if (type == RDMA_CM_EVENT_ESTABLISHED) {
		if (ev->param.conn.private_data && ev->param.conn.private_data_len >= 40)
			decode_conn(ev->param.conn.private_data, &a->v);
		else
			memset(&a->v, 0, sizeof(a->v));
	}
	if (type == RDMA_CM_EVENT_DISCONNECTED)
		a->disconnected = 1;
	rdma_ack_cm_event(ev);
	return type;
}

static void post_recvs(struct att *a, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;

		if (ibv_post_recv(a->qp, &wr, &bad))
			die("ibv_post_recv");
	}
}

/* Registered memory with unregistered guard pages around each region. */
static void setup_mem(struct att *a)
{
	size_t off = 0;

	a->mem_len = PAGE + PAGE + PAGE + 2 * A_HALF + PAGE + A_IOW + PAGE + A_SBUF;
	a->mem = mmap(NULL, a->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->mem == MAP_FAILED)
		die("mmap");
	memset(a->mem, 0xa5, a->mem_len);
	off = PAGE;
	a->target = a->mem + off;
	memset(a->target, 0, PAGE);
	off += PAGE + PAGE;
	a->data = a->mem + off;
	memset(a->data, 0, 2 * A_HALF);
	off += 2 * A_HALF + PAGE;
	a->iow = a->mem + off;
	memset(a->iow, 0, A_IOW);
	off += A_IOW + PAGE;
	a->sbuf = a->mem + off;
	a->mr_target = ibv_reg_mr(a->pd, a->target, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	a->mr_data = ibv_reg_mr(a->pd, a->data, 2 * A_HALF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	a->mr_iow = ibv_reg_mr(a->pd, a->iow, A_IOW, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	a->mr_sbuf = ibv_reg_mr(a->pd, a->sbuf, A_SBUF, IBV_ACCESS_LOCAL_WRITE);
	if (!a->mr_target || !a->mr_data || !a->mr_iow || !a->mr_sbuf)
		die("ibv_reg_mr");
}

/* Whether every byte outside our registered regions is untouched: the
 * guard pages (0xa5) and the unregistered rest of the target page (0). */
static int guards_ok(struct att *a)
{
	size_t guard[] = { 0, 2 * PAGE, 3 * PAGE + 2 * A_HALF, 4 * PAGE + 2 * A_HALF + A_IOW };

	for (size_t g = 0; g < sizeof(guard) / sizeof(guard[0]); g++)
		for (size_t i = 0; i < PAGE; i++)
			if (a->mem[guard[g] + i] != 0xa5) {
				printf("attack: guard byte at offset %zu changed\n", guard[g] + i);
				return 0;
			}
	for (size_t i = 64; i < PAGE; i++)
		if (a->target[i]) {
			printf("attack: target page byte %zu (unregistered) changed\n", i);
			return 0;
		}
	return 1;
}

/* Resolve, create the QP and memory, connect with private data pd/len
 * (NULL: our own well-formed connection data). The final CM event. */
static int att_connect(struct att *a, const char *addr, const char *port, const uint8_t *pd, uint8_t len,
		       int *status)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	uint8_t mine[40];
	int t;

	memset(a, 0, sizeof(*a));
	a->ch = rdma_create_event_channel();
	if (!a->ch)
		die("rdma_create_event_channel");
	if (rdma_create_id(a->ch, &a->id, a, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(addr, port, &hints, &ai)) {
		printf("attack: cannot resolve %s:%s\n", addr, port);
		exit(2);
	}
	if (rdma_resolve_addr(a->id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	if ((t = cm_event(a, 10000, status)) != RDMA_CM_EVENT_ADDR_RESOLVED) {
		printf("attack: address not resolved (event %d)\n", t);
		exit(2);
	}
	if (rdma_resolve_route(a->id, 5000))
		die("rdma_resolve_route");
	if ((t = cm_event(a, 10000, status)) != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		printf("attack: route not resolved (event %d)\n", t);
		exit(2);
	}
	a->pd = ibv_alloc_pd(a->id->verbs);
	if (!a->pd)
		die("ibv_alloc_pd");
	a->scq = ibv_create_cq(a->id->verbs, A_SQ, NULL, NULL, 0);
	a->rcq = ibv_create_cq(a->id->verbs, A_RQ, NULL, NULL, 0);
	if (!a->scq || !a->rcq)
		die("ibv_create_cq");
	qa.send_cq = a->scq;
	qa.recv_cq = a->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = A_SQ;
	qa.cap.max_recv_wr = A_RQ;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 64;
	if (rdma_create_qp(a->id, a->pd, &qa))
		die("rdma_create_qp");
	a->qp = a->id->qp;
	setup_mem(a);
	post_recvs(a, A_RQ);
	if (!pd) {
		struct conndata c = {
			.version = 1,
			.flags = 2, /* iomap table follows (size 0); little-endian */
			.credits = A_RQ,
			.iomap_size = 0,
			.target = { (uintptr_t)a->target, a->mr_target->rkey, 2 },
			.data = { (uintptr_t)a->data, a->mr_data->rkey, A_HALF },
		};

		encode_conn(mine, &c);
		pd = mine;
		len = 40;
	}
	cp.private_data = len ? pd : NULL;
	cp.private_data_len = len;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.flow_control = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(a->id, &cp))
		die("rdma_connect");
	t = cm_event(a, 15000, status);
	if (t == RDMA_CM_EVENT_ESTABLISHED) {
		a->cur_addr = a->v.data.addr;
		a->cur_key = a->v.data.key;
		a->cur_len = a->v.data.len;
		a->tidx = 1;
		a->sseq_comp = a->v.credits;
		a->rsge_idx = 1;
		a->free_off = A_HALF; /* the second half is advertised first */
	}
	return t;
}

/* Post one RDMA WRITE (with immediate if imm_op >= 0) of len bytes copied
 * from src into our send buffer (len 0: no payload). */
static int post_write(struct att *a, const void *src, uint32_t len, uint64_t raddr, uint32_t rkey, int with_imm,
		      uint32_t imm)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;

	if (len) {
		if (a->sbuf_off + len > A_SBUF)
			a->sbuf_off = 0;
		memcpy(a->sbuf + a->sbuf_off, src, len);
		sge.addr = (uintptr_t)(a->sbuf + a->sbuf_off);
		sge.length = len;
		sge.lkey = a->mr_sbuf->lkey;
		a->sbuf_off += (len + 63) & ~63u;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	wr.wr_id = 2;
	wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(a->qp, &wr, &bad)) {
		printf("attack: ibv_post_send: %s\n", ename(errno));
		return -1;
	}
	return 0;
}

/* Wait for n send completions (at most ms): how many came (failed ones
 * counted in tx_errors too). */
static int reap(struct att *a, int n, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int done = 0;

	while (done < n && now_ms() < end) {
		struct ibv_wc wc[16];
		int r = ibv_poll_cq(a->scq, 16, wc);

		if (r < 0)
			break;
		if (r == 0) {
			usleep(200);
			continue;
		}
		for (int i = 0; i < r; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				a->tx_errors++;
				printf("attack: send completion: %s\n", ibv_wc_status_str(wc[i].status));
			}
		}
		done += r;
	}
	return done;
}

static int write_sync(struct att *a, const void *src, uint32_t len, uint64_t raddr, uint32_t rkey, int with_imm,
		      uint32_t imm)
{
	int errs = a->tx_errors;

	if (post_write(a, src, len, raddr, rkey, with_imm, imm))
		return -1;
	return reap(a, 1, 5000) == 1 && a->tx_errors == errs ? 0 : -1;
}

/* Advertise our free half at free_off: its SGE into the victim's target
 * SGL table, then the credit update. */
static int advertise(struct att *a)
{
	uint8_t e[16];
	uint64_t addr = (uintptr_t)(a->data + a->free_off);
	uint32_t key = a->mr_data->rkey, len = A_HALF;
	uint64_t raddr = a->v.target.addr + (uint64_t)a->rsge_idx * 16;

	/* In the victim's byte order (its flags: bit 0 = big-endian). */
	if (a->v.flags & 1) {
		addr = htobe64(addr);
		key = htonl(key);
		len = htonl(len);
	}
	memcpy(e, &addr, 8);
	memcpy(e + 8, &key, 4);
	memcpy(e + 12, &len, 4);
	a->rsge_idx = (a->rsge_idx + 1) % (int)(a->v.target.len ? a->v.target.len : 1);
	a->free_off ^= A_HALF;
	return write_sync(a, e, 16, raddr, a->v.target.key, 1, IMM(OP_SGL, (uint16_t)(a->rseq_no + A_RQ)));
}

/* Take the receive completions there are (waiting at most ms for the
 * first): how many; -1 on an error completion. Data goes to the inbox,
 * consumed at once, and our ring halves are advertised again as they
 * empty. */
static int poll_rx(struct att *a, int ms, int readvertise)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int got = 0;

	for (;;) {
		struct ibv_wc wc[16];
		int r = ibv_poll_cq(a->rcq, 16, wc);

		if (r < 0)
			return -1;
		for (int i = 0; i < r; i++) {
			uint32_t imm, op, val;

			if (wc[i].status != IBV_WC_SUCCESS) {
				a->rx_errors++;
				printf("attack: receive completion: %s\n", ibv_wc_status_str(wc[i].status));
				return -1;
			}
			post_recvs(a, 1);
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM)) {
				a->odd_ops++;
				continue;
			}
			imm = ntohl(wc[i].imm_data);
			op = imm >> 29;
			val = imm & 0x1fffffff;
			switch (op) {
			case OP_DATA:
				for (uint32_t j = 0; j < val; j++) {
					if (a->inbox_n < sizeof(a->inbox))
						a->inbox[a->inbox_n++] = a->data[a->rd_pos];
					a->rd_pos = (a->rd_pos + 1) % (2 * A_HALF);
				}
				a->rseq_no++;
				a->free_pending += val;
				while (readvertise && a->free_pending >= A_HALF) {
					a->free_pending -= A_HALF;
					if (advertise(a))
						return -1;
				}
				break;
			case OP_SGL:
				a->sseq_comp = (uint16_t)val;
				a->credit_updates++;
				break;
			case OP_IOMAP:
				break;
			case OP_CTRL:
				break;
			default:
				a->odd_ops++;
				printf("attack: the victim sent reserved op %u\n", op);
			}
		}
		got += r;
		if (r > 0 || now_ms() >= end)
			break;
		usleep(200);
	}
	return got;
}

/* Send bytes as data messages into the victim's ring, as a correct sender:
 * within the SGEs and credits the victim gave. */
static int send_data(struct att *a, const void *buf, uint32_t len)
{
	const uint8_t *p = buf;
	uint64_t end = now_ms() + 10000;

	while (len) {
		uint32_t n;

		if (!a->cur_len) {
			uint8_t *e = a->target + a->tidx * 16;
			uint64_t ad;
			uint32_t k, l;

			memcpy(&ad, e, 8);
			memcpy(&k, e + 8, 4);
			memcpy(&l, e + 12, 4);
			if (l) {
				a->cur_addr = ad;
				a->cur_key = k;
				a->cur_len = l;
				memset(e + 12, 0, 4);
				a->tidx ^= 1;
			}
		}
		if (!a->cur_len || a->sseq_no == a->sseq_comp) {
			if (now_ms() > end) {
				printf("attack: no room to send in the victim's ring within 10 s\n");
				return -1;
			}
			if (poll_rx(a, 100, 1) < 0)
				return -1;
			continue;
		}
		n = len < a->cur_len ? len : a->cur_len;
		if (n > 2048)
			n = 2048;
		if (write_sync(a, p, n, a->cur_addr, a->cur_key, 1, IMM(OP_DATA, n)))
			return -1;
		a->cur_addr += n;
		a->cur_len -= n;
		a->sseq_no++;
		p += n;
		len -= n;
	}
	return 0;
}

static int send_line(struct att *a, const char *s)
{
	return send_data(a, s, (uint32_t)strlen(s));
}

/* Wait for one line from the victim (without '\n'): 0, -1 on timeout. */
static int wait_line(struct att *a, char *out, size_t outsz, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		uint8_t *nl = memchr(a->inbox, '\n', a->inbox_n);

		if (nl) {
			size_t l = (size_t)(nl - a->inbox), c = l < outsz - 1 ? l : outsz - 1;

			memcpy(out, a->inbox, c);
			out[c] = 0;
			memmove(a->inbox, nl + 1, a->inbox_n - l - 1);
			a->inbox_n -= l + 1;
			return 0;
		}
		if (now_ms() > end || poll_rx(a, 100, 1) < 0) {
			out[0] = 0;
			return -1;
		}
	}
}

/* Wait for n bytes of data in the inbox. */
static int wait_bytes(struct att *a, size_t n, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (a->inbox_n < n) {
		if (now_ms() > end || poll_rx(a, 100, 1) < 0)
			return -1;
	}
	return 0;
}

/* Wait for the victim to take the connection down (its rclose: the CM's
 * DISCONNECTED); receive completions are taken meanwhile. */
static int wait_gone(struct att *a, int ms)
{
	uint64_t t0 = now_ms(), end = t0 + (uint64_t)ms;

	while (!a->disconnected && now_ms() < end) {
		cm_event(a, 50, NULL);
		if (!a->rx_errors)
			poll_rx(a, 0, 0);
	}
	if (a->disconnected)
		printf("attack: the victim disconnected (after %llu ms)\n", (unsigned long long)(now_ms() - t0));
	else
		printf("attack: the victim did not disconnect within %d ms\n", ms);
	return a->disconnected ? 0 : -1;
}

/* Close cleanly: DISCONNECT control message, then the CM's disconnect. */
static void close_clean(struct att *a)
{
	post_write(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, IMM(OP_CTRL, 0));
	reap(a, 1, 3000);
	rdma_disconnect(a->id);
	wait_gone(a, 5000);
}

static int exchange(struct att *a, const char *cmd, const char *want)
{
	char line[256], msg[256];

	uint64_t t0 = now_ms();

	snprintf(msg, sizeof(msg), "%s\n", cmd);
	if (send_line(a, msg) || wait_line(a, line, sizeof(line), 15000)) {
		printf("attack: \"%s\": no reply\n", cmd);
		return -1;
	}
	printf("attack: \"%s\" -> \"%s\"%s (%llu ms)\n", cmd, line, strcmp(line, want) ? " (WRONG)" : "",
	       (unsigned long long)(now_ms() - t0));
	return strcmp(line, want) ? -1 : 0;
}

/* Zero-length messages with these immediates, one by one. */
static int send_imms(struct att *a, const uint32_t *imms, int n)
{
	for (int i = 0; i < n; i++) {
		if (write_sync(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, imms[i])) {
			printf("attack: immediate 0x%08x did not go\n", imms[i]);
			return -1;
		}
		printf("attack: sent immediate 0x%08x\n", imms[i]);
	}
	return 0;
}

/* The victim's first credit update (its second ring half in our table). */
static int wait_first_credit(struct att *a)
{
	uint64_t end = now_ms() + 10000;

	while (!a->credit_updates && now_ms() < end)
		if (poll_rx(a, 100, 0) < 0)
			return -1;
	return a->credit_updates ? 0 : -1;
}

static int established_or_die(struct att *a, int t)
{
	if (t != RDMA_CM_EVENT_ESTABLISHED) {
		printf("attack: not connected (CM event %d: %s)\n", t, t >= 0 ? rdma_event_str(t) : "timeout");
		exit(2);
	}
	if (a->v.version != 1) {
		printf("attack: the victim's connection data has version %u\n", a->v.version);
		exit(2);
	}
	printf("attack: connected; victim ring half %u bytes, %u credits, SGL table of %u, iomap %u\n",
	       a->v.data.len, a->v.credits, a->v.target.len, scale_to_value(a->v.iomap_size));
	return 0;
}

/* ---- the cases ---- */

/* One data message claiming more than the whole ring (both halves, once
 * the second is advertised). */
static int case_overrun(struct att *a)
{
	uint8_t junk[16];
	uint32_t claim;

	if (wait_first_credit(a))
		printf("attack: (no credit update from the victim within 10 s)\n");
	claim = 2 * a->v.data.len + 1;
	memset(junk, 'O', sizeof(junk));
	post_write(a, junk, sizeof(junk), a->v.data.addr, a->v.data.key, 1, IMM(OP_DATA, claim));
	printf("attack: sent 16 bytes claiming %u (ring %u)\n", claim, 2 * a->v.data.len);
	return wait_gone(a, 20000);
}

/* Fill both advertised halves with real data, then one byte more. */
static int case_overrun_sum(struct att *a)
{
	static uint8_t buf[1 << 20];
	uint64_t addr2;
	uint32_t key2, len2;
	uint8_t *e;

	if (wait_first_credit(a)) {
		printf("attack: no credit update from the victim within 10 s\n");
		return -1;
	}
	e = a->target + 16;
	memcpy(&addr2, e, 8);
	memcpy(&key2, e + 8, 4);
	memcpy(&len2, e + 12, 4);
	if (a->v.data.len > sizeof(buf) || len2 > sizeof(buf) || !len2) {
		printf("attack: unexpected halves %u/%u\n", a->v.data.len, len2);
		return -1;
	}
	memset(buf, 'S', sizeof(buf));
	/* The halves can be larger than one of our sends: the data goes in
	 * pieces, the claims are what counts. */
	if (write_sync(a, buf, 1024, a->v.data.addr, a->v.data.key, 1, IMM(OP_DATA, a->v.data.len)) ||
	    write_sync(a, buf, 1024, addr2, key2, 1, IMM(OP_DATA, len2))) {
		printf("attack: the legitimate messages did not go\n");
		return -1;
	}
	post_write(a, buf, 1, a->v.data.addr, a->v.data.key, 1, IMM(OP_DATA, 1));
	printf("attack: sent %u + %u bytes (both halves), then 1 more\n", a->v.data.len, len2);
	return wait_gone(a, 20000);
}

/* More data messages than the credits the victim gave: all the credits'
 * worth first (their completions: each took one of the victim's posted
 * receives), then, once the victim has had time to post receives again, one
 * more: only the library's credit check can catch it. */
static int case_credits(struct att *a)
{
	uint32_t n = a->v.credits, posted = 0, done = 0;
	uint64_t t0 = now_ms();
	uint8_t b = 'C';

	for (uint32_t i = 0; i < n; i++) {
		while (posted - done >= A_SQ - 8) {
			int r = reap(a, 1, 5000);

			if (r <= 0)
				break;
			done += (uint32_t)r;
		}
		if (post_write(a, &b, 1, a->v.data.addr + i % a->v.data.len, a->v.data.key, 1, IMM(OP_DATA, 1)))
			break;
		posted++;
	}
	done += (uint32_t)reap(a, (int)(posted - done), 20000);
	printf("attack: %u one-byte messages (the credits given) completed, %d failed\n", done, a->tx_errors);
	if (done != n || a->tx_errors)
		return -1;
	usleep(200000);
	post_write(a, &b, 1, a->v.data.addr + n % a->v.data.len, a->v.data.key, 1, IMM(OP_DATA, 1));
	printf("attack: then one more (%u against %u credits) %llu ms after the first\n", n + 1, n,
	       (unsigned long long)(now_ms() - t0));
	return wait_gone(a, 20000);
}

/* A bogus SGE written into the victim's target SGL table, announced with a
 * credit update; then the victim is asked for more data than our first
 * half: whatever it writes must land inside our memory (or fail). */
static int case_sge(struct att *a)
{
	uint8_t e[32];
	uint64_t a0 = 0xdeadbeef00000000ull, a1 = (uintptr_t)a->data + (1 << 20);
	uint32_t k0 = 0x0badf00d, l0 = 65536, k1 = a->mr_data->rkey, l1 = 0xffffffffu;
	size_t ok;
	int rc = 0;

	memcpy(e, &a0, 8);
	memcpy(e + 8, &k0, 4);
	memcpy(e + 12, &l0, 4);
	memcpy(e + 16, &a1, 8);
	memcpy(e + 24, &k1, 4);
	memcpy(e + 28, &l1, 4);
	if (write_sync(a, e, 32, a->v.target.addr, a->v.target.key, 0, 0) ||
	    write_sync(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, IMM(OP_SGL, A_RQ))) {
		printf("attack: the bogus SGEs did not go\n");
		return -1;
	}
	printf("attack: wrote bogus SGEs (past our region; garbage key) into the victim's table\n");
	if (send_line(a, "BULK 16384\n"))
		return -1;
	/* The first half is legitimately ours to fill; nothing re-advertised. */
	{
		uint64_t end = now_ms() + 15000;

		while (!a->disconnected && now_ms() < end) {
			if (!a->rx_errors && poll_rx(a, 50, 0) < 0)
				printf("attack: (our QP saw the victim's bad write)\n");
			cm_event(a, 10, NULL);
		}
	}
	ok = check_pat(a->inbox, a->inbox_n, 0);
	printf("attack: received %zu bytes of the BULK (%s)\n", a->inbox_n,
	       ok == a->inbox_n ? "as sent" : "CORRUPT");
	if (ok != a->inbox_n || a->inbox_n > A_HALF)
		rc = -1;
	if (!a->disconnected) {
		printf("attack: the victim did not disconnect within 15 s\n");
		rdma_disconnect(a->id);
	} else {
		printf("attack: the victim disconnected\n");
	}
	return rc;
}

/* IOMAP messages at indexes out of range, a valid iomap entry and one whose
 * offset wraps; the victim riowrites through both. */
static int case_iomap(struct att *a)
{
	uint32_t n = scale_to_value(a->v.iomap_size);
	uint64_t tab = a->v.target.addr + 16ull * a->v.target.len;
	uint32_t imms[] = { IMM(OP_IOMAP, 0x1fffffff), IMM(OP_IOMAP, n), IMM(OP_IOMAP, n + 1) };
	uint8_t e[24];
	uint64_t off, ad;
	uint32_t k, l;
	int rc = 0;

	if (n < 2) {
		printf("attack: the victim has an iomap table of %u entries (needs 2)\n", n);
		return -1;
	}
	if (advertise(a))
		return -1;
	if (send_imms(a, imms, 3))
		return -1;
	/* Entry 0: offset 0x10000 -> our window; entry 1: offset 2^64-4096
	 * (wraps) -> our window + 2048, 8 KiB (past our region's end). */
	off = 0x10000;
	ad = (uintptr_t)a->iow;
	k = a->mr_iow->rkey;
	l = A_IOW;
	memcpy(e, &off, 8);
	memcpy(e + 8, &ad, 8);
	memcpy(e + 16, &k, 4);
	memcpy(e + 20, &l, 4);
	if (write_sync(a, e, 24, tab, a->v.target.key, 1, IMM(OP_IOMAP, 0)))
		return -1;
	a->sseq_no++;
	off = 0xfffffffffffff000ull;
	ad = (uintptr_t)a->iow + 2048;
	l = 8192;
	memcpy(e, &off, 8);
	memcpy(e + 8, &ad, 8);
	memcpy(e + 20, &l, 4);
	if (write_sync(a, e, 24, tab + 24, a->v.target.key, 1, IMM(OP_IOMAP, 1)))
		return -1;
	a->sseq_no++;
	printf("attack: wrote iomap entries 0 (our window) and 1 (offset 2^64-4096, wrapping)\n");
	if (exchange(a, "IOWRITE 65536 64", "IOW 64"))
		rc = -1;
	else if (check_pat(a->iow, 64, 0) != 64)
		printf("attack: riowrite at 65536: WRONG data\n"), rc = -1;
	else
		printf("attack: riowrite at 65536: 64 bytes landed in our window\n");
	if (exchange(a, "IOWRITE -4096 64", "IOW 64"))
		rc = -1;
	else if (check_pat(a->iow + 2048, 64, 0) != 64)
		printf("attack: riowrite at -4096: WRONG data\n"), rc = -1;
	else
		printf("attack: riowrite at -4096: 64 bytes landed in our window + 2048\n");
	if (exchange(a, "IOWRITE 4096 64", "IOW 0"))
		rc = -1;
	if (exchange(a, "PING iomap", "PONG iomap"))
		rc = -1;
	close_clean(a);
	return rc;
}

/* Reserved operations and unknown control values, then normal traffic. */
static int case_unknown(struct att *a)
{
	uint32_t imms[] = {
		IMM(1, 0x123), IMM(1, 0x1fffffff), IMM(2, 100), IMM(3, 0), IMM(3, 0x1fffffff), IMM(5, 7),
		IMM(OP_CTRL, 1), IMM(OP_CTRL, 3), IMM(OP_CTRL, 0x1fffffff),
	};
	int rc = 0;

	if (advertise(a) || send_imms(a, imms, (int)(sizeof(imms) / sizeof(imms[0]))))
		return -1;
	if (exchange(a, "PING 1", "PONG 1") || exchange(a, "PING 2", "PONG 2"))
		rc = -1;
	close_clean(a);
	return rc;
}

/* A correct peer that sends a burst of messages without data (credit
 * updates that change nothing) while the victim waits in rpoll(POLLIN),
 * then a command: rpoll must wake up for the data that follows. */
static int case_rpoll_wakeup(struct att *a)
{
	int rc = 0, posted = 0;

	if (advertise(a))
		return -1;
	/* The victim is past its settle time and waits in rpoll(POLLIN). */
	usleep((SETTLE_MS + 700) * 1000);
	/* One at a time: they keep arriving while the victim's rpoll loops. */
	for (int i = 0; i < 300; i++) {
		if (write_sync(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, IMM(OP_SGL, (uint16_t)(a->rseq_no + A_RQ))))
			return -1;
		posted++;
	}
	printf("attack: %d credit updates sent while the victim waits in rpoll\n", posted);
	usleep(300000);
	if (exchange(a, "PING wakeup", "PONG wakeup"))
		rc = -1;
	close_clean(a);
	return rc;
}

/* Data after our SHUTDOWN: the victim has seen EOF; it must not read
 * more. */
static int case_after_shutdown(struct att *a)
{
	int rc = 0;

	if (advertise(a))
		return -1;
	if (exchange(a, "PING before", "PONG before"))
		rc = -1;
	if (write_sync(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, IMM(OP_CTRL, 2)))
		return -1;
	printf("attack: sent SHUTDOWN\n");
	usleep(200000);
	if (send_line(a, "PING after shutdown\n"))
		printf("attack: (the data after the shutdown did not go)\n");
	else
		printf("attack: sent a command after the shutdown\n");
	if (wait_gone(a, 20000))
		rc = -1;
	return rc;
}

static int case_huge(struct att *a)
{
	post_write(a, NULL, 0, a->v.data.addr, a->v.data.key, 1, IMM(OP_DATA, 0x1fffffff));
	printf("attack: sent an empty message claiming 0x1fffffff bytes\n");
	return wait_gone(a, 20000);
}

/* Requests whose connection data the victim must refuse. */
static int case_garbage(const char *addr, const char *port)
{
	struct att a;
	uint8_t pd[40];
	struct {
		const char *what;
		int len;
		uint8_t version;
	} tries[] = {
		{ "no private data", 0, 0 },
		{ "version 2", 40, 2 },
		{ "version 0", 40, 0 },
		{ "version 255", 40, 255 },
	};
	int rc = 0;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		int t, st = 0;
		struct conndata c = {
			.version = tries[i].version, .flags = 2, .credits = A_RQ,
			.target = { 0x1000, 1, 2 }, .data = { 0x2000, 1, A_HALF },
		};

		encode_conn(pd, &c);
		t = att_connect(&a, addr, port, pd, (uint8_t)tries[i].len, &st);
		printf("attack: %s: %s (status %d)\n", tries[i].what, t >= 0 ? rdma_event_str(t) : "timeout", st);
		if (t != RDMA_CM_EVENT_REJECTED)
			rc = -1;
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			rdma_disconnect(a.id);
		rdma_destroy_qp(a.id);
		rdma_destroy_id(a.id);
		rdma_destroy_event_channel(a.ch);
	}
	return rc;
}

/* A correct peer: ping, a bulk transfer across many ring halves (our ring
 * advertised again as we read it), QUIT. */
static int case_good(struct att *a)
{
	int rc = 0;
	size_t want = 20000;

	if (advertise(a))
		return -1;
	if (exchange(a, "PING good", "PONG good"))
		rc = -1;
	if (send_line(a, "BULK 20000\n") || wait_bytes(a, want, 20000)) {
		printf("attack: BULK: got %zu of %zu bytes\n", a->inbox_n, want);
		rc = -1;
	} else if (check_pat(a->inbox, want, 0) != want) {
		printf("attack: BULK: data WRONG at byte %zu\n", check_pat(a->inbox, want, 0));
		rc = -1;
	} else {
		printf("attack: BULK: %zu bytes as sent\n", want);
	}
	memmove(a->inbox, a->inbox + want, a->inbox_n - want);
	a->inbox_n -= want;
	if (exchange(a, "QUIT", "BYE"))
		rc = -1;
	close_clean(a);
	return rc;
}

int main(int argc, char **argv)
{
	struct att a;
	const char *c;
	int t, st = 0, rc;

	if (argc >= 3 && !strcmp(argv[1], "victim"))
		return victim(atoi(argv[2]), argc >= 4 ? argv[3] : NULL);
	if (argc != 5 || strcmp(argv[1], "attack")) {
		fprintf(stderr, "usage: %s victim PORT [SELF_ADDR] | attack ADDR PORT CASE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(60);
	c = argv[4];
	if (!strcmp(c, "garbage-conn-data")) {
		rc = case_garbage(argv[2], argv[3]);
		printf("attack: %s: %s\n", c, rc ? "FAILED" : "done");
		return rc ? 1 : 0;
	}
	if (!strcmp(c, "short-conn-data")) {
		/* One byte: version 1. The CM pads a request's private data with
		 * zeros, so the victim sees version 1 with every field 0. */
		uint8_t one = 1;

		t = att_connect(&a, argv[2], argv[3], &one, 1, &st);
		printf("attack: %s: %s (status %d)\n", c, t >= 0 ? rdma_event_str(t) : "timeout", st);
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			rc = wait_gone(&a, 20000);
		else
			rc = 0;
		printf("attack: %s: %s\n", c, rc ? "FAILED" : "done");
		return rc ? 1 : 0;
	}
	t = att_connect(&a, argv[2], argv[3], NULL, 0, &st);
	established_or_die(&a, t);
	if (!strcmp(c, "overrun"))
		rc = case_overrun(&a);
	else if (!strcmp(c, "overrun-sum"))
		rc = case_overrun_sum(&a);
	else if (!strcmp(c, "credits"))
		rc = case_credits(&a);
	else if (!strcmp(c, "sge"))
		rc = case_sge(&a);
	else if (!strcmp(c, "iomap"))
		rc = case_iomap(&a);
	else if (!strcmp(c, "unknown"))
		rc = case_unknown(&a);
	else if (!strcmp(c, "rpoll-wakeup"))
		rc = case_rpoll_wakeup(&a);
	else if (!strcmp(c, "data-after-shutdown"))
		rc = case_after_shutdown(&a);
	else if (!strcmp(c, "huge-imm"))
		rc = case_huge(&a);
	else if (!strcmp(c, "good"))
		rc = case_good(&a);
	else {
		printf("attack: unknown case %s\n", c);
		return 2;
	}
	if (!guards_ok(&a))
		rc = -1;
	if (a.odd_ops) {
		printf("attack: the victim sent %d messages of no version 1 operation\n", a.odd_ops);
		rc = -1;
	}
	printf("attack: %s: %s\n", c, rc ? "FAILED" : "done");
	return rc ? 1 : 0;
}

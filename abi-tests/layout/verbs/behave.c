/*
 * behave.c — the helpers of our rdma/rdma_verbs.h against rdma-core's, run
 * side by side without a device: the verbs objects they reach through the
 * rdma_cm_id (qp, srq, cqs, their context's ops) are fakes, and the few
 * libibverbs functions they call (ibv_reg_mr, ibv_reg_mr_iova2,
 * ibv_dereg_mr, ibv_get_cq_event, ibv_ack_cq_events) are defined here, so
 * the program's own definitions are the ones called. Every fake appends
 * what it was given to a trace; a case passes when both tables leave the
 * same trace, return value and errno (cases where rdma-core's header
 * asserts are checked on ours alone, against its documented behaviour).
 * Ends with "N passed, M failed".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"

static char trace[8192];
static int pass, fail;

static void note(const char *fmt, ...)
{
	size_t used = strlen(trace);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(trace + used, sizeof(trace) - used, fmt, ap);
	va_end(ap);
}

/* The fake objects. */
static struct ibv_context ctx;
static struct ibv_pd pd;
static struct ibv_qp qp;
static struct ibv_srq srq;
static struct ibv_cq send_cq, recv_cq, other_cq;
static struct ibv_comp_channel send_ch, recv_ch;
static struct ibv_ah ah;
static struct ibv_mr mr, fresh_mr;
static struct rdma_cm_id id;
static char buf[256];
static struct ibv_sge sgl[3];

static const char *obj(const void *p)
{
	if (p == NULL) return "NULL";
	if (p == &pd) return "pd";
	if (p == &qp) return "qp";
	if (p == &srq) return "srq";
	if (p == &send_cq) return "send_cq";
	if (p == &recv_cq) return "recv_cq";
	if (p == &other_cq) return "other_cq";
	if (p == &send_ch) return "send_ch";
	if (p == &recv_ch) return "recv_ch";
	if (p == &ah) return "ah";
	if (p == &mr) return "mr";
	if (p == &fresh_mr) return "fresh_mr";
	if (p == &id) return "id";
	if (p == sgl) return "caller's sgl";
	if ((const char *)p >= buf && (const char *)p < buf + sizeof(buf)) return "buf";
	return "other";
}

/* Scripted results. */
static int post_result, dereg_result;
static int polls[8], npolls, polled;
static int notify_result;
static struct { struct ibv_cq *cq; void *context; int fail_errno; } events[4];
static int nevents, taken;

static void note_sges(const struct ibv_sge *s, int n)
{
	int i;

	note(" sg_list=%s num_sge=%d [", obj(s), n);
	for (i = 0; i < n && i < 3; i++)
		note(" %s+%lu/%u/%#x", obj((void *)(uintptr_t)s[i].addr),
		     (unsigned long)((uintptr_t)s[i].addr - (uintptr_t)buf), s[i].length, s[i].lkey);
	note(" ]");
}

static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	note("post_send(%s) wr_id=%#llx next=%s opcode=%d flags=%#x", obj(q), (unsigned long long)wr->wr_id,
	     obj(wr->next), (int)wr->opcode, wr->send_flags);
	note_sges(wr->sg_list, wr->num_sge);
	if (wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_RDMA_WRITE)
		note(" remote=%#llx rkey=%#x", (unsigned long long)wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
	/* (Only rdma_post_ud_send runs on the UD QP: the others leave wr.ud unset.) */
	if (wr->opcode == IBV_WR_SEND && q->qp_type == IBV_QPT_UD)
		note(" ah=%s qpn=%#x qkey=%#x", obj(wr->wr.ud.ah), wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
	note(" bad=%s;", bad != NULL ? "given" : "NULL");
	if (post_result != 0 && bad != NULL)
		*bad = wr;
	return post_result;
}

static void note_recv(const char *what, const void *q, struct ibv_recv_wr *wr, int given)
{
	note("%s(%s) wr_id=%#llx next=%s", what, obj(q), (unsigned long long)wr->wr_id, obj(wr->next));
	note_sges(wr->sg_list, wr->num_sge);
	note(" bad=%s;", given ? "given" : "NULL");
}

static int fake_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	note_recv("post_recv", q, wr, bad != NULL);
	if (post_result != 0 && bad != NULL)
		*bad = wr;
	return post_result;
}

static int fake_post_srq_recv(struct ibv_srq *s, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	note_recv("post_srq_recv", s, wr, bad != NULL);
	if (post_result != 0 && bad != NULL)
		*bad = wr;
	return post_result;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int r = polled < npolls ? polls[polled] : 0;

	polled++;
	note("poll(%s,%d)=%d;", obj(cq), n, r);
	if (r > 0) {
		memset(wc, 0, sizeof(*wc));
		wc->wr_id = 0x1000 + (uint64_t)polled;
		wc->status = IBV_WC_SUCCESS;
		wc->byte_len = 42;
	}
	return r;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	note("notify(%s,%d)=%d;", obj(cq), solicited, notify_result);
	return notify_result;
}

/* The libibverbs functions the helpers call, defined by the program. */
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *p, void *addr, size_t length, int access)
{
	note("reg_mr(%s,%s+%lu,%lu,%#x);", obj(p), obj(addr), (unsigned long)((char *)addr - buf),
	     (unsigned long)length, access);
	return &fresh_mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *p, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	note("reg_mr_iova2(%s,%s+%lu,%lu,iova %s,%#x);", obj(p), obj(addr), (unsigned long)((char *)addr - buf),
	     (unsigned long)length, iova == (uintptr_t)addr ? "=addr" : "other", access);
	return &fresh_mr;
}

int ibv_dereg_mr(struct ibv_mr *m)
{
	note("dereg_mr(%s)=%d;", obj(m), dereg_result);
	return dereg_result;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **context)
{
	note("get_cq_event(%s)", obj(ch));
	if (taken >= nevents || events[taken].fail_errno != 0) {
		errno = taken < nevents ? events[taken].fail_errno : EIO;
		taken++;
		note("=-1 errno %d;", errno);
		return -1;
	}
	*cq = events[taken].cq;
	*context = events[taken].context;
	taken++;
	note("=0 cq %s context %s;", obj(*cq), obj(*context));
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	note("ack(%s,%u);", obj(cq), n);
}

static void reset(void)
{
	static struct ibv_context_ops none;

	ctx.ops = none;
	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	ctx.ops.post_srq_recv = fake_post_srq_recv;
	ctx.ops.poll_cq = fake_poll_cq;
	ctx.ops.req_notify_cq = fake_req_notify_cq;
	memset(&id, 0, sizeof(id));
	id.pd = &pd;
	id.qp = &qp;
	id.send_cq = &send_cq;
	id.recv_cq = &recv_cq;
	id.send_cq_channel = &send_ch;
	id.recv_cq_channel = &recv_ch;
	qp.context = srq.context = send_cq.context = recv_cq.context = other_cq.context = &ctx;
	qp.qp_type = IBV_QPT_RC;
	send_cq.cq_context = recv_cq.cq_context = &id;
	mr.addr = buf + 16;
	mr.length = 128;
	mr.lkey = 0x51;
	mr.rkey = 0x52;
	sgl[0].addr = (uintptr_t)(buf + 16);
	sgl[0].length = 8;
	sgl[0].lkey = 0x51;
	sgl[1].addr = (uintptr_t)(buf + 64);
	sgl[1].length = 32;
	sgl[1].lkey = 0x51;
	post_result = dereg_result = notify_result = 0;
	npolls = polled = nevents = taken = 0;
	trace[0] = '\0';
}

static void set_polls(int n, const int *v)
{
	memcpy(polls, v, (size_t)n * sizeof(*v));
	npolls = n;
}

static void add_event(struct ibv_cq *cq, void *context, int fail_errno)
{
	events[nevents].cq = cq;
	events[nevents].context = context;
	events[nevents].fail_errno = fail_errno;
	nevents++;
}

/* A case: setup() arranges the fakes, call() runs one helper of table t. */
typedef void (*setup_fn)(void);
typedef int (*call_fn)(const struct verbs_table *t);

static void run(const struct verbs_table *t, setup_fn setup, call_fn call, char *out, size_t outlen)
{
	int ret, err;

	reset();
	if (setup != NULL)
		setup();
	errno = 4242;
	ret = call(t);
	err = errno;
	snprintf(out, outlen, "%s => ret %d errno %d", trace, ret, err);
}

static void same(const char *name, setup_fn setup, call_fn call)
{
	char a[sizeof(trace) + 64], b[sizeof(trace) + 64];

	run(&upstream_table, setup, call, a, sizeof(a));
	run(&ours_table, setup, call, b, sizeof(b));
	if (strcmp(a, b) == 0) {
		pass++;
		if (getenv("VERBOSE") != NULL)
			printf("ok   %s: %s\n", name, b);
	} else {
		fail++;
		printf("FAIL %s\n  rdma-core: %s\n  ours:      %s\n", name, a, b);
	}
}

static void ours_only(const char *name, setup_fn setup, call_fn call, const char *want)
{
	char b[sizeof(trace) + 64];

	run(&ours_table, setup, call, b, sizeof(b));
	if (strcmp(b, want) == 0) {
		pass++;
		if (getenv("VERBOSE") != NULL)
			printf("ok   %s (ours only): %s\n", name, b);
	} else {
		fail++;
		printf("FAIL %s (ours only)\n  want: %s\n  got:  %s\n", name, want, b);
	}
}

#define CASE(fn, body) static int fn(const struct verbs_table *t) { body }

CASE(c_seterrno0, return t->seterrno(0);)
CASE(c_seterrno_eio, return t->seterrno(EIO);)
CASE(c_seterrno_neg, return t->seterrno(-7);)
CASE(c_reg_msgs, return t->reg_msgs(&id, buf + 8, 100) == &fresh_mr;)
CASE(c_reg_read, return t->reg_read(&id, buf + 8, 100) == &fresh_mr;)
CASE(c_reg_write, return t->reg_write(&id, buf + 8, 100) == &fresh_mr;)
CASE(c_dereg, return t->dereg_mr(&mr);)
CASE(c_recvv, return t->post_recvv(&id, (void *)0xabc, sgl, 2);)
CASE(c_sendv, return t->post_sendv(&id, (void *)0xabc, sgl, 2, IBV_SEND_SIGNALED | IBV_SEND_INLINE);)
CASE(c_sendv0, return t->post_sendv(&id, NULL, NULL, 0, 0);)
CASE(c_readv, return t->post_readv(&id, (void *)0xdef, sgl, 2, IBV_SEND_SIGNALED, 0x1122334455667788ull, 0x99);)
CASE(c_writev, return t->post_writev(&id, (void *)0xdef, sgl, 1, IBV_SEND_FENCE, 0xfeedull, 0x77);)
CASE(c_recv, return t->post_recv(&id, (void *)0x1, buf + 16, 128, &mr);)
CASE(c_recv_mid, return t->post_recv(&id, (void *)0x2, buf + 40, 10, &mr);)
CASE(c_recv_out, return t->post_recv(&id, (void *)0x2, buf + 140, 10, &mr);)
CASE(c_send, return t->post_send(&id, (void *)0x3, buf + 20, 50, &mr, IBV_SEND_SIGNALED);)
CASE(c_send_nomr, return t->post_send(&id, (void *)0x3, buf + 20, 50, NULL, IBV_SEND_INLINE);)
CASE(c_read, return t->post_read(&id, (void *)0x4, buf + 20, 50, &mr, IBV_SEND_SIGNALED, 0xabcdef, 0x1234);)
CASE(c_read_nomr, return t->post_read(&id, (void *)0x4, buf + 20, 50, NULL, 0, 0xabcdef, 0x1234);)
CASE(c_write, return t->post_write(&id, (void *)0x5, buf + 20, 50, &mr, 0, 0xabcdef, 0x1234);)
CASE(c_write_nomr, return t->post_write(&id, (void *)0x5, buf + 20, 50, NULL, IBV_SEND_INLINE, 0xabcdef, 0x1234);)
CASE(c_ud, return t->post_ud_send(&id, (void *)0x6, buf + 30, 20, &mr, IBV_SEND_SIGNALED, &ah, 0xabcd);)
CASE(c_ud_nomr, return t->post_ud_send(&id, (void *)0x6, buf + 30, 20, NULL, 0, &ah, 0x1);)

static struct ibv_wc wc;
static int comp_result(int r)
{
	note("wc wr_id=%#llx;", r > 0 ? (unsigned long long)wc.wr_id : 0ull);
	return r;
}
CASE(c_send_comp, memset(&wc, 0, sizeof(wc)); return comp_result(t->get_send_comp(&id, &wc));)
CASE(c_recv_comp, memset(&wc, 0, sizeof(wc)); return comp_result(t->get_recv_comp(&id, &wc));)

static void s_srq(void) { id.srq = &srq; }
static void s_fail(void) { post_result = ENOMEM; }
static void s_srq_fail(void) { id.srq = &srq; post_result = ENOMEM; }
static void s_dereg_busy(void) { dereg_result = EBUSY; }
static void s_ud(void) { qp.qp_type = IBV_QPT_UD; }
static void s_ud_fail(void) { qp.qp_type = IBV_QPT_UD; post_result = ENOMEM; }
static void s_ready(void) { static const int v[] = { 1 }; set_polls(1, v); }
static void s_race(void) { static const int v[] = { 0, 1 }; set_polls(2, v); }
static void s_wait(void)
{
	static const int v[] = { 0, 0, 1 };

	set_polls(3, v);
	add_event(&send_cq, &id, 0);
}
static void s_wait_recv(void)
{
	static const int v[] = { 0, 0, 1 };

	set_polls(3, v);
	add_event(&recv_cq, &id, 0);
}
static void s_wait_twice(void)
{
	static const int v[] = { 0, 0, 0, 0, 1 };

	set_polls(5, v);
	add_event(&send_cq, &id, 0);
	add_event(&send_cq, &id, 0);
}
static void s_wait_twice_recv(void)
{
	static const int v[] = { 0, 0, 0, 0, 1 };

	set_polls(5, v);
	add_event(&recv_cq, &id, 0);
	add_event(&recv_cq, &id, 0);
}
static void s_notify_fails(void) { notify_result = EINVAL; }
static void s_event_fails(void)
{
	static const int v[] = { 0, 0 };

	set_polls(2, v);
	add_event(NULL, NULL, EAGAIN);
}
static void s_poll_fails(void) { static const int v[] = { -2 }; set_polls(1, v); }
static void s_poll_fails_late(void) { static const int v[] = { 0, -5 }; set_polls(2, v); }
static void s_foreign(void)
{
	static const int v[] = { 0, 0, 1 };

	set_polls(3, v);
	add_event(&other_cq, &id, 0);
}

int main(void)
{
	same("rdma_seterrno(0)", NULL, c_seterrno0);
	same("rdma_seterrno(EIO)", NULL, c_seterrno_eio);
	same("rdma_seterrno(-7)", NULL, c_seterrno_neg);
	same("rdma_reg_msgs", NULL, c_reg_msgs);
	same("rdma_reg_read", NULL, c_reg_read);
	same("rdma_reg_write", NULL, c_reg_write);
	same("rdma_dereg_mr", NULL, c_dereg);
	same("rdma_dereg_mr, EBUSY", s_dereg_busy, c_dereg);
	same("rdma_post_recvv, QP", NULL, c_recvv);
	same("rdma_post_recvv, SRQ", s_srq, c_recvv);
	same("rdma_post_recvv, ENOMEM", s_fail, c_recvv);
	same("rdma_post_recvv, SRQ, ENOMEM", s_srq_fail, c_recvv);
	same("rdma_post_sendv", NULL, c_sendv);
	same("rdma_post_sendv, no sge", NULL, c_sendv0);
	same("rdma_post_sendv, ENOMEM", s_fail, c_sendv);
	same("rdma_post_readv", NULL, c_readv);
	same("rdma_post_readv, ENOMEM", s_fail, c_readv);
	same("rdma_post_writev", NULL, c_writev);
	same("rdma_post_recv, whole region", NULL, c_recv);
	same("rdma_post_recv, inside", NULL, c_recv_mid);
	same("rdma_post_recv, SRQ", s_srq, c_recv_mid);
	same("rdma_post_recv, ENOMEM", s_fail, c_recv);
	same("rdma_post_send", NULL, c_send);
	same("rdma_post_send, no mr", NULL, c_send_nomr);
	same("rdma_post_send, ENOMEM", s_fail, c_send);
	same("rdma_post_read", NULL, c_read);
	same("rdma_post_write", NULL, c_write);
	same("rdma_post_write, no mr", NULL, c_write_nomr);
	same("rdma_post_write, ENOMEM", s_fail, c_write);
	same("rdma_post_ud_send", s_ud, c_ud);
	same("rdma_post_ud_send, no mr", s_ud, c_ud_nomr);
	same("rdma_post_ud_send, ENOMEM", s_ud_fail, c_ud);
	same("rdma_get_send_comp, completion waiting", s_ready, c_send_comp);
	same("rdma_get_recv_comp, completion waiting", s_ready, c_recv_comp);
	same("rdma_get_send_comp, completion after arming", s_race, c_send_comp);
	same("rdma_get_send_comp, one event", s_wait, c_send_comp);
	same("rdma_get_recv_comp, one event", s_wait_recv, c_recv_comp);
	same("rdma_get_send_comp, two events", s_wait_twice, c_send_comp);
	same("rdma_get_recv_comp, two events", s_wait_twice_recv, c_recv_comp);
	same("rdma_get_send_comp, arming fails", s_notify_fails, c_send_comp);
	same("rdma_get_recv_comp, arming fails", s_notify_fails, c_recv_comp);
	same("rdma_get_send_comp, event read fails", s_event_fails, c_send_comp);
	same("rdma_get_recv_comp, event read fails", s_event_fails, c_recv_comp);

	/* Where rdma-core's header asserts or stores a negative errno. */
	ours_only("rdma_post_recv, buffer past the region", NULL, c_recv_out, " => ret -1 errno 22");
	ours_only("rdma_post_read, no mr (lkey 0)", NULL, c_read_nomr,
		  "post_send(qp) wr_id=0x4 next=NULL opcode=4 flags=0 sg_list=other num_sge=1 [ buf+20/50/0 ]"
		  " remote=0xabcdef rkey=0x1234 bad=given; => ret 0 errno 4242");
	ours_only("rdma_get_send_comp, poll fails", s_poll_fails, c_send_comp,
		  "poll(send_cq,1)=-2;wc wr_id=0; => ret -1 errno 2");
	ours_only("rdma_get_recv_comp, poll fails after arming", s_poll_fails_late, c_recv_comp,
		  "poll(recv_cq,1)=0;notify(recv_cq,0)=0;poll(recv_cq,1)=-5;wc wr_id=0; => ret -1 errno 5");
	ours_only("rdma_get_send_comp, event from another CQ", s_foreign, c_send_comp,
		  "poll(send_cq,1)=0;notify(send_cq,0)=0;poll(send_cq,1)=0;get_cq_event(send_ch)=0 cq other_cq "
		  "context id;ack(other_cq,1);wc wr_id=0; => ret -1 errno 22");

	printf("%d passed, %d failed\n", pass, fail);
	return fail != 0;
}

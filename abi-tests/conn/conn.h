/*
 * conn.h — what the parts of conn_diff share (conn_diff.c has the case
 * table and says what the program does): the connection functions looked
 * up at run time, the printing of ids and events, and the building blocks
 * of the cases (conn_common.c). The cases themselves, by family:
 *   conn_rc.c     RC connections: connect/accept/reject/disconnect, private
 *                 data, wildcard listeners, SRQ, migration, connect errors
 *   conn_qp.c     rdma_create_qp, rdma_init_qp_attr, rdma_establish with an
 *                 application-owned QP, ECE
 *   conn_ud.c     UD (SIDR) connections
 *   conn_ep.c     sync endpoints (rdma_create_ep, rdma_get_request,
 *                 ai_connect), each side in a thread of its own
 *   conn_mcast.c  multicast joins and leaves
 *   conn_fault.c  faults: a peer SIGKILLed, listeners destroyed, backlog,
 *                 device removal
 *   conn_bad.c    calls in the wrong state, bad arguments
 * Every file defines _GNU_SOURCE before including this header first.
 */
#ifndef CONN_H
#define CONN_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include "../common/harness.h"

/* how long a case waits for an event that should come (ms) */
#define EV_WAIT 8000

/*
 * The connection functions, resolved at run time (conn_diff.c). Each call
 * in the cases goes through p_NAME (the #defines after the list).
 */
#define CONN_FNS(X)                                                              \
	X(rdma_listen) X(rdma_connect) X(rdma_accept) X(rdma_reject) X(rdma_disconnect) \
	X(rdma_get_request) X(rdma_establish) X(rdma_init_qp_attr) X(rdma_create_qp)    \
	X(rdma_destroy_qp) X(rdma_create_ep) X(rdma_destroy_ep) X(rdma_join_multicast)  \
	X(rdma_join_multicast_ex) X(rdma_leave_multicast) X(rdma_set_local_ece)         \
	X(rdma_get_remote_ece) X(rdma_reject_ece) X(rdma_create_srq) X(rdma_destroy_srq) X(rdma_create_qp_ex)
#define X_DECL(n) extern __typeof__(&n) p_##n;
CONN_FNS(X_DECL)
#define rdma_listen(...) p_rdma_listen(__VA_ARGS__)
#define rdma_connect(...) p_rdma_connect(__VA_ARGS__)
#define rdma_accept(...) p_rdma_accept(__VA_ARGS__)
#define rdma_reject(...) p_rdma_reject(__VA_ARGS__)
#define rdma_disconnect(...) p_rdma_disconnect(__VA_ARGS__)
#define rdma_get_request(...) p_rdma_get_request(__VA_ARGS__)
#define rdma_establish(...) p_rdma_establish(__VA_ARGS__)
#define rdma_init_qp_attr(...) p_rdma_init_qp_attr(__VA_ARGS__)
#define rdma_create_qp(...) p_rdma_create_qp(__VA_ARGS__)
#define rdma_destroy_qp(...) p_rdma_destroy_qp(__VA_ARGS__)
#define rdma_create_ep(...) p_rdma_create_ep(__VA_ARGS__)
#define rdma_destroy_ep(...) p_rdma_destroy_ep(__VA_ARGS__)
#define rdma_join_multicast(...) p_rdma_join_multicast(__VA_ARGS__)
#define rdma_join_multicast_ex(...) p_rdma_join_multicast_ex(__VA_ARGS__)
#define rdma_leave_multicast(...) p_rdma_leave_multicast(__VA_ARGS__)
#define rdma_set_local_ece(...) p_rdma_set_local_ece(__VA_ARGS__)
#define rdma_get_remote_ece(...) p_rdma_get_remote_ece(__VA_ARGS__)
#define rdma_reject_ece(...) p_rdma_reject_ece(__VA_ARGS__)
#define rdma_create_srq(...) p_rdma_create_srq(__VA_ARGS__)
#define rdma_destroy_srq(...) p_rdma_destroy_srq(__VA_ARGS__)
#define rdma_create_qp_ex(...) p_rdma_create_qp_ex(__VA_ARGS__)

/* ---- conn_common.c: names for ids, printing ---- */

void name_id(struct rdma_cm_id *id, const char *name);
const char *idname(struct rdma_cm_id *id);
void print_pd(const void *p, unsigned len);
const char *qpn_str(uint32_t q);
void print_id(struct rdma_cm_id *id);
void print_ah(const struct ibv_ah_attr *ah);
void print_qp_attr(struct ibv_qp_init_attr *a, struct rdma_cm_id *id);
extern void *mc_context;	    /* the context the multicast cases join with */
extern struct rdma_ud_param last_ud; /* the ud param of the last event get_ev read */
void print_event(struct rdma_cm_event *ev);
int get_ev(const char *label, struct rdma_event_channel *ch, int ms, struct rdma_cm_id **child,
	   const char *child_name);
void no_ev(const char *label, struct rdma_event_channel *ch, int ms);
struct rdma_event_channel *new_channel(const char *label);

/* ---- conn_common.c: building blocks ---- */

struct rdma_cm_id *new_id(const char *name, struct rdma_event_channel *ch, enum rdma_port_space ps);
void destroy_id(const char *name, struct rdma_cm_id *id);
struct rdma_cm_id *listener(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
			    enum rdma_port_space ps, int backlog);
int resolve(const char *name, struct rdma_cm_id *id, const char *src, const char *ip, int port, int route);
struct rdma_cm_id *client(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
			  enum rdma_port_space ps);
void qp_attr_init(struct ibv_qp_init_attr *a, enum ibv_qp_type t);
int make_qp(const char *name, struct rdma_cm_id *id, enum ibv_qp_type t);
void drop_qp(struct rdma_cm_id *id);
unsigned char *pattern(unsigned char *b, int n, int seed);
void conn_param(struct rdma_conn_param *p, const void *pd, int len);

/* ---- conn_common.c: a message over the QPs ---- */

struct msgbuf {
	struct ibv_mr *mr;
	char data[256];
};

struct msgbuf *msg_new(const char *label, struct ibv_pd *pd);
void msg_free(struct msgbuf *m);
void post_recv(const char *label, struct ibv_qp *qp, struct msgbuf *m);
void post_send(const char *label, struct ibv_qp *qp, struct msgbuf *m, const char *text, struct ibv_ah *ah,
	       uint32_t qpn, uint32_t qkey);
void poll_cq(const char *label, struct ibv_cq *cq, int ms, struct msgbuf *m, int skip);
void query_qp_state(const char *label, struct ibv_qp *qp);

/* ---- conn_common.c: an RC connection between a listener and a client ---- */

struct conn {
	struct rdma_event_channel *sch, *cch; /* server (listener, child), client */
	struct rdma_cm_id *lid, *sid, *cid;   /* listener, accepted child, client */
	struct msgbuf *sm, *cm;
};

int rc_connect(struct conn *c, const char *ip, int port, int cpd, int spd);
void rc_message(struct conn *c, const char *text);
void rc_teardown(struct conn *c);

/* ---- the cases (the table in conn_diff.c) ---- */

/* conn_rc.c */
void c_rc_v4_pd0(void);
void c_rc_v4_pd1(void);
void c_rc_v4_pd56(void);
void c_rc_v6(void);
void c_rc_defaults(void);
void c_pd_limits(void);
void c_reject(void);
void c_reject_ece(void);
void c_no_listener(void);
void c_listen_wildcard(void);
void c_srq(void);
void c_migrate_connected(void);
void c_connect_error(void);
void c_client_gone_before_accept(void);
/* conn_qp.c */
void c_create_qp(void);
void c_init_qp_attr(void);
void c_establish(void);
/* conn_ud.c */
void c_ud(void);
void c_ud_limits(void);
void c_ud_reject(void);
/* conn_ep.c */
void c_ep_errors(void);
void c_ep_sync(void);
void c_ep_ai_connect(void);
void c_ep_ai_connect_wrap(void);
void c_ep_ud(void);
/* conn_mcast.c */
void c_mcast_v4(void);
void c_mcast_v6(void);
void c_mcast_bound(void);
/* conn_fault.c */
void c_kill_client(void);
void c_kill_server(void);
void c_listener_destroy_pending(void);
void c_listener_destroy_child(void);
void c_backlog(void);
void c_device_removal(void);
/* conn_bad.c */
void c_wrong_state(void);
void c_bad_args(void);

#endif

/*
 * layout.c — prints the size of every public librdmacm struct and the
 * offset and size of every field, plus the values of the public constants,
 * one per line: "struct.field offset size" / "const NAME value".
 *
 * Built twice by abi-tests/layout/check.sh: against Debian's upstream headers
 * (/usr/include, from librdmacm-dev) and against ours (include/); the two
 * outputs must be identical. build.rs also turns the upstream output into
 * compile-time assertions on the Rust types of src/abi.
 */
#include <stddef.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>
#include <rdma/rsocket.h>

#define S(T) printf("%s - 0 %zu\n", #T, sizeof(struct T))
#define U(T) printf("%s - 0 %zu\n", #T, sizeof(union T))
#define F(T, f) printf("%s %s %zu %zu\n", #T, #f, offsetof(struct T, f), sizeof(((struct T *)0)->f))
#define C(n) printf("const %s %llu\n", #n, (unsigned long long)(n))

int main(void)
{
	S(rdma_event_channel);
	F(rdma_event_channel, fd);

	S(rdma_ib_addr);
	F(rdma_ib_addr, sgid); F(rdma_ib_addr, dgid); F(rdma_ib_addr, pkey);

	S(rdma_addr);
	F(rdma_addr, src_addr); F(rdma_addr, src_sin); F(rdma_addr, src_sin6); F(rdma_addr, src_storage);
	F(rdma_addr, dst_addr); F(rdma_addr, dst_sin); F(rdma_addr, dst_sin6); F(rdma_addr, dst_storage);
	F(rdma_addr, addr); F(rdma_addr, addr.ibaddr);

	S(rdma_route);
	F(rdma_route, addr); F(rdma_route, path_rec); F(rdma_route, num_paths);

	S(rdma_cm_id);
	F(rdma_cm_id, verbs); F(rdma_cm_id, channel); F(rdma_cm_id, context); F(rdma_cm_id, qp);
	F(rdma_cm_id, route); F(rdma_cm_id, route.addr.src_addr); F(rdma_cm_id, route.addr.dst_addr);
	F(rdma_cm_id, route.addr.addr.ibaddr.sgid); F(rdma_cm_id, route.addr.addr.ibaddr.dgid);
	F(rdma_cm_id, route.addr.addr.ibaddr.pkey); F(rdma_cm_id, route.path_rec); F(rdma_cm_id, route.num_paths);
	F(rdma_cm_id, ps); F(rdma_cm_id, port_num); F(rdma_cm_id, event);
	F(rdma_cm_id, send_cq_channel); F(rdma_cm_id, send_cq); F(rdma_cm_id, recv_cq_channel);
	F(rdma_cm_id, recv_cq); F(rdma_cm_id, srq); F(rdma_cm_id, pd); F(rdma_cm_id, qp_type);

	S(rdma_conn_param);
	F(rdma_conn_param, private_data); F(rdma_conn_param, private_data_len);
	F(rdma_conn_param, responder_resources); F(rdma_conn_param, initiator_depth);
	F(rdma_conn_param, flow_control); F(rdma_conn_param, retry_count);
	F(rdma_conn_param, rnr_retry_count); F(rdma_conn_param, srq); F(rdma_conn_param, qp_num);

	S(rdma_ud_param);
	F(rdma_ud_param, private_data); F(rdma_ud_param, private_data_len); F(rdma_ud_param, ah_attr);
	F(rdma_ud_param, qp_num); F(rdma_ud_param, qkey);

	S(rdma_cm_event);
	F(rdma_cm_event, id); F(rdma_cm_event, listen_id); F(rdma_cm_event, event); F(rdma_cm_event, status);
	F(rdma_cm_event, param); F(rdma_cm_event, param.conn); F(rdma_cm_event, param.ud);
	F(rdma_cm_event, param.ud.qp_num);

	S(rdma_addrinfo);
	F(rdma_addrinfo, ai_flags); F(rdma_addrinfo, ai_family); F(rdma_addrinfo, ai_qp_type);
	F(rdma_addrinfo, ai_port_space); F(rdma_addrinfo, ai_src_len); F(rdma_addrinfo, ai_dst_len);
	F(rdma_addrinfo, ai_src_addr); F(rdma_addrinfo, ai_dst_addr); F(rdma_addrinfo, ai_src_canonname);
	F(rdma_addrinfo, ai_dst_canonname); F(rdma_addrinfo, ai_route_len); F(rdma_addrinfo, ai_route);
	F(rdma_addrinfo, ai_connect_len); F(rdma_addrinfo, ai_connect); F(rdma_addrinfo, ai_next);

	S(rdma_cm_join_mc_attr_ex);
	F(rdma_cm_join_mc_attr_ex, comp_mask); F(rdma_cm_join_mc_attr_ex, join_flags);
	F(rdma_cm_join_mc_attr_ex, addr);

	S(ib_addr);
	F(ib_addr, sib_addr8); F(ib_addr, sib_addr16); F(ib_addr, sib_addr32); F(ib_addr, sib_addr64);
	S(sockaddr_ib);
	F(sockaddr_ib, sib_family); F(sockaddr_ib, sib_pkey); F(sockaddr_ib, sib_flowinfo);
	F(sockaddr_ib, sib_addr); F(sockaddr_ib, sib_sid); F(sockaddr_ib, sib_sid_mask);
	F(sockaddr_ib, sib_scope_id);

	/* libibverbs fields the library reads itself. */
	S(ibv_device);
	F(ibv_device, node_type); F(ibv_device, transport_type); F(ibv_device, name);
	F(ibv_device, dev_name); F(ibv_device, dev_path); F(ibv_device, ibdev_path);
	S(ibv_device_attr);
	F(ibv_device_attr, fw_ver); F(ibv_device_attr, node_guid); F(ibv_device_attr, sys_image_guid);
	F(ibv_device_attr, max_mr_size); F(ibv_device_attr, page_size_cap); F(ibv_device_attr, vendor_id);
	F(ibv_device_attr, vendor_part_id); F(ibv_device_attr, hw_ver); F(ibv_device_attr, max_qp);
	F(ibv_device_attr, max_qp_wr); F(ibv_device_attr, device_cap_flags); F(ibv_device_attr, max_sge);
	F(ibv_device_attr, max_sge_rd); F(ibv_device_attr, max_cq); F(ibv_device_attr, max_cqe);
	F(ibv_device_attr, max_mr); F(ibv_device_attr, max_pd); F(ibv_device_attr, max_qp_rd_atom);
	F(ibv_device_attr, max_ee_rd_atom); F(ibv_device_attr, max_res_rd_atom);
	F(ibv_device_attr, max_qp_init_rd_atom); F(ibv_device_attr, max_ee_init_rd_atom);
	F(ibv_device_attr, atomic_cap); F(ibv_device_attr, max_ee); F(ibv_device_attr, max_rdd);
	F(ibv_device_attr, max_mw); F(ibv_device_attr, max_raw_ipv6_qp); F(ibv_device_attr, max_raw_ethy_qp);
	F(ibv_device_attr, max_mcast_grp); F(ibv_device_attr, max_mcast_qp_attach);
	F(ibv_device_attr, max_total_mcast_qp_attach); F(ibv_device_attr, max_ah); F(ibv_device_attr, max_fmr);
	F(ibv_device_attr, max_map_per_fmr); F(ibv_device_attr, max_srq); F(ibv_device_attr, max_srq_wr);
	F(ibv_device_attr, max_srq_sge); F(ibv_device_attr, max_pkeys); F(ibv_device_attr, local_ca_ack_delay);
	F(ibv_device_attr, phys_port_cnt);
	/* Prefix mirrors (read through pointers only): fields, no size. */
	F(ibv_context, device);
	F(ibv_context, ops.poll_cq); F(ibv_context, ops.req_notify_cq);
	F(ibv_context, ops.post_send); F(ibv_context, ops.post_recv);
	/* libibverbs structs passed through rdma_create_qp(_ex), rdma_create_srq(_ex),
	 * rdma_init_qp_attr and the ECE calls. */
	S(ibv_qp_cap);
	F(ibv_qp_cap, max_send_wr); F(ibv_qp_cap, max_recv_wr); F(ibv_qp_cap, max_send_sge);
	F(ibv_qp_cap, max_recv_sge); F(ibv_qp_cap, max_inline_data);
	S(ibv_qp_init_attr);
	F(ibv_qp_init_attr, qp_context); F(ibv_qp_init_attr, send_cq); F(ibv_qp_init_attr, recv_cq);
	F(ibv_qp_init_attr, srq); F(ibv_qp_init_attr, cap); F(ibv_qp_init_attr, qp_type); F(ibv_qp_init_attr, sq_sig_all);
	S(ibv_qp_init_attr_ex);
	F(ibv_qp_init_attr_ex, qp_context); F(ibv_qp_init_attr_ex, send_cq); F(ibv_qp_init_attr_ex, recv_cq);
	F(ibv_qp_init_attr_ex, srq); F(ibv_qp_init_attr_ex, cap); F(ibv_qp_init_attr_ex, qp_type);
	F(ibv_qp_init_attr_ex, sq_sig_all); F(ibv_qp_init_attr_ex, comp_mask); F(ibv_qp_init_attr_ex, pd);
	F(ibv_qp_init_attr_ex, xrcd); F(ibv_qp_init_attr_ex, create_flags); F(ibv_qp_init_attr_ex, max_tso_header);
	F(ibv_qp_init_attr_ex, rwq_ind_tbl); F(ibv_qp_init_attr_ex, rx_hash_conf); F(ibv_qp_init_attr_ex, source_qpn);
	F(ibv_qp_init_attr_ex, send_ops_flags);
	S(ibv_srq_attr);
	F(ibv_srq_attr, max_wr); F(ibv_srq_attr, max_sge); F(ibv_srq_attr, srq_limit);
	S(ibv_srq_init_attr);
	F(ibv_srq_init_attr, srq_context); F(ibv_srq_init_attr, attr);
	S(ibv_srq_init_attr_ex);
	F(ibv_srq_init_attr_ex, srq_context); F(ibv_srq_init_attr_ex, attr); F(ibv_srq_init_attr_ex, comp_mask);
	F(ibv_srq_init_attr_ex, srq_type); F(ibv_srq_init_attr_ex, pd); F(ibv_srq_init_attr_ex, xrcd);
	F(ibv_srq_init_attr_ex, cq); F(ibv_srq_init_attr_ex, tm_cap);
	S(ibv_ece);
	F(ibv_ece, vendor_id); F(ibv_ece, options); F(ibv_ece, comp_mask);
	S(ibv_qp_attr);
	F(ibv_qp_attr, qp_state); F(ibv_qp_attr, cur_qp_state); F(ibv_qp_attr, path_mtu);
	F(ibv_qp_attr, path_mig_state); F(ibv_qp_attr, qkey); F(ibv_qp_attr, rq_psn); F(ibv_qp_attr, sq_psn);
	F(ibv_qp_attr, dest_qp_num); F(ibv_qp_attr, qp_access_flags); F(ibv_qp_attr, cap);
	F(ibv_qp_attr, ah_attr); F(ibv_qp_attr, alt_ah_attr); F(ibv_qp_attr, pkey_index);
	F(ibv_qp_attr, alt_pkey_index); F(ibv_qp_attr, en_sqd_async_notify); F(ibv_qp_attr, sq_draining);
	F(ibv_qp_attr, max_rd_atomic); F(ibv_qp_attr, max_dest_rd_atomic); F(ibv_qp_attr, min_rnr_timer);
	F(ibv_qp_attr, port_num); F(ibv_qp_attr, timeout); F(ibv_qp_attr, retry_cnt); F(ibv_qp_attr, rnr_retry);
	F(ibv_qp_attr, alt_port_num); F(ibv_qp_attr, alt_timeout); F(ibv_qp_attr, rate_limit);
	F(ibv_qp, context); F(ibv_qp, qp_context); F(ibv_qp, pd); F(ibv_qp, send_cq); F(ibv_qp, recv_cq);
	F(ibv_qp, srq); F(ibv_qp, handle); F(ibv_qp, qp_num); F(ibv_qp, state); F(ibv_qp, qp_type);
	F(ibv_pd, context); F(ibv_pd, handle);
	F(ibv_cq, context); F(ibv_cq, channel); F(ibv_cq, cq_context); F(ibv_cq, handle); F(ibv_cq, cqe);
	/* The data path of rsockets. */
	S(ibv_comp_channel);
	F(ibv_comp_channel, context); F(ibv_comp_channel, fd); F(ibv_comp_channel, refcnt);
	S(ibv_sge);
	F(ibv_sge, addr); F(ibv_sge, length); F(ibv_sge, lkey);
	S(ibv_send_wr);
	F(ibv_send_wr, wr_id); F(ibv_send_wr, next); F(ibv_send_wr, sg_list); F(ibv_send_wr, num_sge);
	F(ibv_send_wr, opcode); F(ibv_send_wr, send_flags); F(ibv_send_wr, imm_data); F(ibv_send_wr, wr);
	F(ibv_send_wr, wr.rdma); F(ibv_send_wr, wr.rdma.remote_addr); F(ibv_send_wr, wr.rdma.rkey);
	F(ibv_send_wr, wr.ud); F(ibv_send_wr, wr.ud.ah); F(ibv_send_wr, wr.ud.remote_qpn); F(ibv_send_wr, wr.ud.remote_qkey);
	F(ibv_send_wr, qp_type); F(ibv_send_wr, bind_mw);
	S(ibv_recv_wr);
	F(ibv_recv_wr, wr_id); F(ibv_recv_wr, next); F(ibv_recv_wr, sg_list); F(ibv_recv_wr, num_sge);
	S(ibv_wc);
	F(ibv_wc, wr_id); F(ibv_wc, status); F(ibv_wc, opcode); F(ibv_wc, vendor_err); F(ibv_wc, byte_len);
	F(ibv_wc, imm_data); F(ibv_wc, qp_num); F(ibv_wc, src_qp); F(ibv_wc, wc_flags); F(ibv_wc, pkey_index);
	F(ibv_wc, slid); F(ibv_wc, sl); F(ibv_wc, dlid_path_bits);
	F(ibv_mr, context); F(ibv_mr, pd); F(ibv_mr, addr); F(ibv_mr, length); F(ibv_mr, handle);
	F(ibv_mr, lkey); F(ibv_mr, rkey);
	S(ibv_ah_attr);
	F(ibv_ah_attr, grh); F(ibv_ah_attr, dlid); F(ibv_ah_attr, sl); F(ibv_ah_attr, src_path_bits);
	F(ibv_ah_attr, static_rate); F(ibv_ah_attr, is_global); F(ibv_ah_attr, port_num);
	S(ibv_sa_path_rec);
	F(ibv_sa_path_rec, dgid); F(ibv_sa_path_rec, sgid); F(ibv_sa_path_rec, dlid); F(ibv_sa_path_rec, slid);
	F(ibv_sa_path_rec, raw_traffic); F(ibv_sa_path_rec, flow_label); F(ibv_sa_path_rec, hop_limit);
	F(ibv_sa_path_rec, traffic_class); F(ibv_sa_path_rec, reversible); F(ibv_sa_path_rec, numb_path);
	F(ibv_sa_path_rec, pkey); F(ibv_sa_path_rec, sl); F(ibv_sa_path_rec, mtu_selector); F(ibv_sa_path_rec, mtu);
	F(ibv_sa_path_rec, rate_selector); F(ibv_sa_path_rec, rate); F(ibv_sa_path_rec, packet_life_time_selector);
	F(ibv_sa_path_rec, packet_life_time); F(ibv_sa_path_rec, preference);
	S(ibv_path_record);
	F(ibv_path_record, service_id); F(ibv_path_record, dgid); F(ibv_path_record, sgid);
	F(ibv_path_record, dlid); F(ibv_path_record, slid); F(ibv_path_record, flowlabel_hoplimit);
	F(ibv_path_record, tclass); F(ibv_path_record, reversible_numpath); F(ibv_path_record, pkey);
	F(ibv_path_record, qosclass_sl); F(ibv_path_record, mtu); F(ibv_path_record, rate);
	F(ibv_path_record, packetlifetime); F(ibv_path_record, preference); F(ibv_path_record, reserved);
	S(ibv_path_data);
	F(ibv_path_data, flags); F(ibv_path_data, reserved); F(ibv_path_data, path);

	C(RDMA_CM_EVENT_ADDR_RESOLVED); C(RDMA_CM_EVENT_ADDR_ERROR); C(RDMA_CM_EVENT_ROUTE_RESOLVED);
	C(RDMA_CM_EVENT_ROUTE_ERROR); C(RDMA_CM_EVENT_CONNECT_REQUEST); C(RDMA_CM_EVENT_CONNECT_RESPONSE);
	C(RDMA_CM_EVENT_CONNECT_ERROR); C(RDMA_CM_EVENT_UNREACHABLE); C(RDMA_CM_EVENT_REJECTED);
	C(RDMA_CM_EVENT_ESTABLISHED); C(RDMA_CM_EVENT_DISCONNECTED); C(RDMA_CM_EVENT_DEVICE_REMOVAL);
	C(RDMA_CM_EVENT_MULTICAST_JOIN); C(RDMA_CM_EVENT_MULTICAST_ERROR); C(RDMA_CM_EVENT_ADDR_CHANGE);
	C(RDMA_CM_EVENT_TIMEWAIT_EXIT);
	C(RDMA_PS_IPOIB); C(RDMA_PS_TCP); C(RDMA_PS_UDP); C(RDMA_PS_IB);
	C(RDMA_IB_IP_PS_MASK); C(RDMA_IB_IP_PORT_MASK); C(RDMA_IB_IP_PS_TCP); C(RDMA_IB_IP_PS_UDP);
	C(RDMA_IB_PS_IB); C(RDMA_UDP_QKEY); C(RDMA_MAX_RESP_RES); C(RDMA_MAX_INIT_DEPTH);
	C(RAI_PASSIVE); C(RAI_NUMERICHOST); C(RAI_NOROUTE); C(RAI_FAMILY);
	C(RDMA_CM_JOIN_MC_ATTR_ADDRESS); C(RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS); C(RDMA_CM_JOIN_MC_ATTR_RESERVED);
	C(RDMA_MC_JOIN_FLAG_FULLMEMBER); C(RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER); C(RDMA_MC_JOIN_FLAG_RESERVED);
	C(RDMA_OPTION_ID); C(RDMA_OPTION_ID_TOS); C(RDMA_OPTION_ID_REUSEADDR); C(RDMA_OPTION_ID_AFONLY);
	C(RDMA_OPTION_ID_ACK_TIMEOUT); C(RDMA_OPTION_IB); C(RDMA_OPTION_IB_PATH);
	C(AF_IB); C(PF_IB);
	C(SOL_RDMA); C(RDMA_SQSIZE); C(RDMA_RQSIZE); C(RDMA_INLINE); C(RDMA_IOMAPSIZE); C(RDMA_ROUTE);
	return 0;
}

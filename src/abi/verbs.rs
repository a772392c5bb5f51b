//! libibverbs types, as mirrors of `<infiniband/verbs.h>` and
//! `<infiniband/sa.h>` (not emitted into our headers: they include the
//! system's). Three kinds:
//! - full mirrors of the structs passed by value or filled through
//!   pointers (`ibv_qp_attr`, `ibv_qp_init_attr`, `ibv_device_attr`, ...);
//! - **prefix mirrors** of objects libibverbs allocates, declaring only the
//!   leading fields the library reads (`ibv_context`, `ibv_qp`, `ibv_pd`,
//!   `ibv_cq`): never constructed or copied here, only read through
//!   pointers libibverbs returned;
//! - opaque types whose fields are never touched.
//!
//! build.rs asserts every declared field's offset and size against the
//! system's headers (and the size of every full mirror).
#![allow(non_camel_case_types)]

use super::RawQpType;
use libc::{c_char, c_int, c_void};

/// Opaque libibverbs objects: only pointers to them appear in our structs.
#[repr(C)]
pub struct ibv_srq {
    _opaque: [u8; 0],
}
/// `struct ibv_comp_channel` (full mirror, 16 bytes).
#[repr(C)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
    pub refcnt: c_int,
}
#[repr(C)]
pub struct ibv_xrcd {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct ibv_ah {
    _opaque: [u8; 0],
}

/// `struct ibv_device` (full mirror, 664 bytes).
#[repr(C)]
pub struct ibv_device {
    _ops: [*mut c_void; 2],
    pub node_type: c_int,
    pub transport_type: c_int,
    pub name: [c_char; 64],
    pub dev_name: [c_char; 64],
    pub dev_path: [c_char; 256],
    pub ibdev_path: [c_char; 256],
}

/// `struct ibv_context` (prefix mirror).
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
}

/// `struct ibv_context_ops` (prefix mirror, up to `post_recv`): the
/// provider's data-path entries, which `<infiniband/verbs.h>`'s inline
/// `ibv_poll_cq`, `ibv_req_notify_cq`, `ibv_post_send` and `ibv_post_recv`
/// call through (`src/verbs.rs` does the same).
#[repr(C)]
pub struct ibv_context_ops {
    _before_poll_cq: [*mut c_void; 11],
    pub poll_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int>,
    pub req_notify_cq: Option<unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int>,
    _before_post_send: [*mut c_void; 12],
    pub post_send: Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int>,
    pub post_recv: Option<unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int>,
}

/// `struct ibv_pd` (prefix mirror).
#[repr(C)]
pub struct ibv_pd {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_cq` (prefix mirror).
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
}

/// `struct ibv_qp` (prefix mirror).
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub handle: u32,
    pub qp_num: u32,
    pub state: u32,
    pub qp_type: u32,
}

/// `struct ibv_device_attr` (full mirror, 232 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: u32,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: u32,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

impl Default for ibv_device_attr {
    fn default() -> Self {
        // SAFETY: integers and arrays of them: all-zero is valid.
        unsafe { std::mem::zeroed() }
    }
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: RawQpType,
    pub sq_sig_all: c_int,
}

/// `struct ibv_rx_hash_conf`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_rx_hash_conf {
    pub rx_hash_function: u8,
    pub rx_hash_key_len: u8,
    pub rx_hash_key: *mut u8,
    pub rx_hash_fields_mask: u64,
}

/// `struct ibv_qp_init_attr_ex` (136 bytes); its first 64 bytes are an
/// `ibv_qp_init_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_init_attr_ex {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: RawQpType,
    pub sq_sig_all: c_int,
    pub comp_mask: u32,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    pub create_flags: u32,
    pub max_tso_header: u16,
    pub rwq_ind_tbl: *mut c_void,
    pub rx_hash_conf: ibv_rx_hash_conf,
    pub source_qpn: u32,
    pub send_ops_flags: u64,
}

/// `struct ibv_srq_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_srq_attr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// `struct ibv_srq_init_attr` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_srq_init_attr {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
}

/// `struct ibv_tm_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_tm_cap {
    pub max_num_tags: u32,
    pub max_ops: u32,
}

/// `struct ibv_srq_init_attr_ex` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_srq_init_attr_ex {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
    pub comp_mask: u32,
    pub srq_type: u32,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    pub cq: *mut ibv_cq,
    pub tm_cap: ibv_tm_cap,
}

/// `struct ibv_ece`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ibv_ece {
    pub vendor_id: u32,
    pub options: u32,
    pub comp_mask: u32,
}

/// `struct ibv_qp_attr` (full mirror, 144 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_attr {
    pub qp_state: u32,
    pub cur_qp_state: u32,
    pub path_mtu: u32,
    pub path_mig_state: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: u32,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

impl ibv_qp_attr {
    /// All-zero attributes with `qp_state` set.
    pub fn state(qp_state: u32) -> Self {
        // SAFETY: integers, arrays and unions of them: all-zero is valid.
        let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = qp_state;
        a
    }
}

/// `struct ib_uverbs_qp_attr`, the kernel's QP attributes (INIT_QP_ATTR's
/// answer, 144 bytes); only libibverbs' `ibv_copy_qp_attr_from_kern`
/// reads it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ib_uverbs_qp_attr {
    pub raw: [u32; 36],
}

/// `union ibv_gid` (16 bytes, align 8).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_gid {
    pub raw: [u8; 16],
    pub global: ibv_gid_global,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_gid_global {
    pub subnet_prefix: u64,
    pub interface_id: u64,
}

/// `struct ibv_global_route` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_ah_attr` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_sa_path_rec` (host form, 64 bytes), from `<infiniband/sa.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_sa_path_rec {
    pub dgid: ibv_gid,
    pub sgid: ibv_gid,
    pub dlid: u16,
    pub slid: u16,
    pub raw_traffic: c_int,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reversible: c_int,
    pub numb_path: u8,
    pub pkey: u16,
    pub sl: u8,
    pub mtu_selector: u8,
    pub mtu: u8,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub preference: u8,
}

/// `struct ibv_path_record` (SA wire format, 64 bytes, big-endian fields).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ibv_path_record {
    pub service_id: u64,
    pub dgid: [u8; 16],
    pub sgid: [u8; 16],
    pub dlid: u16,
    pub slid: u16,
    pub flowlabel_hoplimit: u32,
    pub tclass: u8,
    pub reversible_numpath: u8,
    pub pkey: u16,
    pub qosclass_sl: u16,
    pub mtu: u8,
    pub rate: u8,
    pub packetlifetime: u8,
    pub preference: u8,
    pub reserved: [u8; 6],
}

/// `struct ibv_path_data` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ibv_path_data {
    pub flags: u32,
    pub reserved: u32,
    pub path: ibv_path_record,
}

/// `struct ibv_sge` (full mirror, 16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// The `rdma` member of `ibv_send_wr`'s `wr` union.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_send_wr_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// The `ud` member of `ibv_send_wr`'s `wr` union.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_send_wr_ud {
    pub ah: *mut ibv_ah,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// The `wr` union of `ibv_send_wr` (32 bytes; `rdma` and `ud` are used
/// here).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_send_wr_rdma,
    pub ud: ibv_send_wr_ud,
    pub raw: [u64; 4],
}

/// `struct ibv_send_wr` (full mirror, 128 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: u32,
    pub send_flags: u32,
    /// Big-endian, as on the wire.
    pub imm_data: u32,
    pub wr: ibv_send_wr_wr,
    pub qp_type: u32,
    pub bind_mw: [u64; 6],
}

impl ibv_send_wr {
    pub fn zeroed() -> Self {
        // SAFETY: integers, NULL pointers and unions of them.
        unsafe { std::mem::zeroed() }
    }
}

/// `struct ibv_recv_wr` (full mirror, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `struct ibv_wc` (full mirror, 48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// Big-endian, as on the wire.
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `struct ibv_mr` (prefix mirror).
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

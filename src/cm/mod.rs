//! The connection manager: event channels, ids, connections, QPs,
//! multicast, and the events that tie them together.
//!
//! Files, bottom to top (each uses only the ones listed before it; checked
//! by `abi-tests/layers.py`, see docs/architecture.md):
//! - `device`: RDMA devices, opened lazily, their shared PDs;
//! - `channel`: event channels;
//! - `id`: the id object, the ids table, addresses/GIDs/paths, the
//!   commands that act on one id alone;
//! - `qp`: QPs and SRQs of an id, QP state changes;
//! - `mcast`: multicast memberships;
//! - `events`: event records, the ack;
//! - `conn`: connection commands and the CONNECT_RESPONSE handler;
//! - `resolve_ai`: RDMACM_1.4 address resolution;
//! - `lifecycle`: create, migrate and destroy an id;
//! - `dispatch`: reads the kernel's events and calls each family's handler;
//! - `ops`: operations that wait for their event on a sync id, endpoints.

pub mod channel;
pub mod conn;
pub mod device;
pub mod dispatch;
pub mod events;
pub mod id;
pub mod lifecycle;
pub mod mcast;
pub mod ops;
pub mod qp;
pub mod resolve_ai;

//! rsockets (rsocket(7)): stream and datagram sockets over RDMA that speak
//! upstream's wire protocols, built on the connection manager's safe handles.
//!
//! Files, bottom to top (each uses only the ones before it; see
//! docs/architecture.md and docs/rsockets.md):
//! - `wire`: the protocol's byte layouts and immediates;
//! - `dgwire`: the datagram headers (UDP resolution, UD data);
//! - `flow`: credits, rings and the checks on what the peer reports;
//! - `config`: defaults, `/etc/rdma/rsocket/*`, per-socket options;
//! - `udp`: a datagram socket's internal UDP socket;
//! - `mem`: registered memory;
//! - `signal`: the descriptor and how it reports readiness;
//! - `stream`: one connection's verbs resources and data path;
//! - `dgqp`: one UD QP of a datagram socket;
//! - `socket`: the stream socket object, its state and tables;
//! - `dgram`: the datagram socket object, its tables and data path;
//! - `engine`: the progress thread (CM events, idle progress, keepalive,
//!   the datagram sockets' UDP exchange and completions);
//! - `iomap`, `api`, `opts`, `poll`, `repoll`: the operations behind the
//!   exports.

pub mod api;
pub mod config;
pub mod dgqp;
pub mod dgram;
pub mod dgwire;
pub mod engine;
pub mod flow;
pub mod iomap;
pub mod mem;
pub mod opts;
pub mod poll;
pub mod repoll;
pub mod signal;
pub mod socket;
pub mod stream;
pub mod udp;
pub mod wire;

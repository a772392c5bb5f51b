//! rsockets (rsocket(7)): stream sockets over RDMA that speak upstream's
//! wire protocol, built on the connection manager's safe handles.
//!
//! Files, bottom to top (each uses only the ones before it; see
//! docs/architecture.md and docs/rsockets.md):
//! - `wire`: the protocol's byte layouts and immediates;
//! - `flow`: credits, rings and the checks on what the peer reports;
//! - `config`: defaults, `/etc/rdma/rsocket/*`, per-socket options;
//! - `mem`: registered memory;
//! - `signal`: the descriptor and how it reports readiness;
//! - `stream`: one connection's verbs resources and data path;
//! - `socket`: the socket object, its state and tables;
//! - `engine`: the progress thread (CM events, idle progress, keepalive);
//! - `iomap`, `api`, `opts`, `poll`, `repoll`: the operations behind the
//!   exports.

pub mod api;
pub mod config;
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
pub mod wire;

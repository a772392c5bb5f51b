//! Address translation: `rdma_getaddrinfo` and what it asks (glibc, a
//! numeric fast path, ibacm, the subnet administrator).
//!
//! Files, bottom to top (each uses only the ones before it): `numeric`
//! (literals without glibc), `wildcard` (the passive lookup with no node), `model` (the safe query and result types),
//! `acm` (ibacm client), `sa` (`RAI_SA`), `getaddrinfo` (the query and the
//! C list).

pub mod acm;
pub mod getaddrinfo;
pub mod model;
pub mod numeric;
pub mod sa;
pub mod wildcard;

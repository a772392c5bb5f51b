//! QUERY(ADDR), QUERY(GID) and QUERY(PATH) responses taken into an id and
//! read back (`rdmacm::fuzzing::query_responses`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rdmacm::fuzzing::query_responses(data));

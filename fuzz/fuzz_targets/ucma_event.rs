//! Kernel event records (`struct rdma_ucm_event_resp`) through the event
//! dispatcher, for an RC or a UD id of ours or an unknown uid
//! (`rdmacm::fuzzing::event_record`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rdmacm::fuzzing::event_record(data));

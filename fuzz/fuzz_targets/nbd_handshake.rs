//! The NBD server's handshake (and whatever follows it) from arbitrary
//! client bytes: no panic, no hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    eraid_nbd::fuzzing::serve_client_bytes(data);
});

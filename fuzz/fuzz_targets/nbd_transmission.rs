//! The NBD server's transmission phase: a valid handshake (structured
//! replies if the first byte is odd), then arbitrary request bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, requests)) = data.split_first() else {
        return;
    };
    let mut input = eraid_nbd::fuzzing::handshake_prefix(mode & 1 == 1);
    input.extend_from_slice(requests);
    eraid_nbd::fuzzing::serve_client_bytes(&input);
});

//! The fuzz targets' entry point (`eraid_nbd::fuzzing`) and inputs the
//! fuzzers found or were seeded with: each must be served without a panic
//! or a hang, and a well-formed one must get its reply.

use eraid_nbd::fuzzing::{handshake_prefix, serve_client_bytes};
use eraid_nbd::protocol::{CMD_DISC, CMD_READ, NBDMAGIC, REQUEST_MAGIC, SIMPLE_REPLY_MAGIC};

fn request(command: u16, handle: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
    bytes.extend_from_slice(&0u16.to_be_bytes());
    bytes.extend_from_slice(&command.to_be_bytes());
    bytes.extend_from_slice(&handle.to_be_bytes());
    bytes.extend_from_slice(&offset.to_be_bytes());
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes
}

#[test]
fn a_whole_client_session_over_the_fuzz_entry_point_gets_its_read() {
    let mut input = handshake_prefix(false);
    input.extend(request(CMD_READ, 0xabcd, 4096, 512));
    input.extend(request(CMD_DISC, 1, 0, 0));
    let replies = serve_client_bytes(&input);
    assert_eq!(&replies[..8], &NBDMAGIC.to_be_bytes());
    // The simple reply to the read: magic, error 0, the handle, 512 zeroes.
    let mut reply = SIMPLE_REPLY_MAGIC.to_be_bytes().to_vec();
    reply.extend_from_slice(&0u32.to_be_bytes());
    reply.extend_from_slice(&0xabcdu64.to_be_bytes());
    reply.extend_from_slice(&[0u8; 512]);
    assert!(
        replies.ends_with(&reply),
        "no read reply at the end of {} bytes",
        replies.len()
    );
}

#[test]
fn garbage_and_truncated_handshakes_end_the_connection_cleanly() {
    let whole = handshake_prefix(true);
    for cut in 0..whole.len() {
        serve_client_bytes(&whole[..cut]);
    }
    serve_client_bytes(b"GET / HTTP/1.1\r\n\r\n");
}

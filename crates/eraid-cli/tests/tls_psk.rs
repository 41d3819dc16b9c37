//! `eraid serve --tls-psk FILE` (issue 20): nbdinfo and nbdcopy connect
//! with libnbd's `nbds://USER@HOST/?tls-psk-file=FILE` and the key from
//! the file, read and write equal data; a wrong key, a user the server's
//! file does not have, and a plaintext client are refused.

mod support;

use std::path::Path;
use support::*;

const MEMBERS: [&str; 3] = ["d0", "d1", "d2"];

fn create_raid5(dir: &Path) {
    let mut args = vec!["create", "--level", "5", "--chunk", "64K", "--size", "16M"];
    args.extend_from_slice(&MEMBERS);
    eraid(dir, &args).expect_ok();
}

/// A PSK file as psktool writes it: `username:hexkey` with a random key.
fn psk_file(dir: &Path, name: &str, username: &str, seed: u64) -> String {
    let path = dir.join(name);
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rng(seed), &mut key);
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(&path, format!("{username}:{hex}\n")).unwrap();
    path.display().to_string()
}

/// The server's `nbds://127.0.0.1:PORT/` as libnbd takes PSK credentials.
fn psk_uri(server_uri: &str, username: &str, file: &str) -> String {
    let rest = server_uri
        .strip_prefix("nbds://")
        .expect("serve --tls-psk prints an nbds:// URI");
    format!("nbds://{username}@{rest}?tls-psk-file={file}")
}

#[test]
fn tls_psk_serves_the_key_holder_and_refuses_wrong_keys_unknown_users_and_plaintext() {
    let test = "tls_psk_serves_the_key_holder_and_refuses_wrong_keys_unknown_users_and_plaintext";
    if !require_tools(test, &["nbdinfo", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    create_raid5(dir);
    let keys = psk_file(dir, "keys.psk", "alice", 1);
    let server = Server::start_tcp(dir, &["--tls-psk", &keys], &MEMBERS);
    let uri = psk_uri(&server.uri, "alice", &keys);

    let info = run_tool(dir, "nbdinfo", &[&uri]).expect_ok();
    assert!(info.stdout.contains("with TLS"), "{info}");
    let capacity = run_tool(dir, "nbdinfo", &["--json", &uri])
        .expect_ok()
        .json()["exports"][0]["export-size"]
        .as_u64()
        .unwrap();
    assert_eq!(capacity, detail_json(dir, &MEMBERS)["capacity_bytes"]);
    write_random(&dir.join("in.bin"), capacity, 70);
    run_tool(dir, "nbdcopy", &["--flush", "in.bin", &uri]).expect_ok();
    run_tool(dir, "nbdcopy", &[&uri, "out.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("in.bin"),
        &dir.join("out.bin"),
        capacity,
        "TLS-PSK round trip",
    );

    // The right user with another key: the TLS handshake fails.
    let wrong = psk_file(dir, "wrong.psk", "alice", 2);
    let refused = run_tool(dir, "nbdinfo", &[&psk_uri(&server.uri, "alice", &wrong)]);
    assert!(!refused.ok(), "a wrong key must be refused: {refused}");
    assert!(refused.stderr.contains("TLS"), "{refused}");
    // A user the server does not know, whatever its key.
    let stranger = psk_file(dir, "stranger.psk", "mallory", 3);
    let refused = run_tool(
        dir,
        "nbdinfo",
        &[&psk_uri(&server.uri, "mallory", &stranger)],
    );
    assert!(!refused.ok(), "an unknown user must be refused: {refused}");
    let refused = run_tool(
        dir,
        "nbdcopy",
        &[&psk_uri(&server.uri, "mallory", &stranger), "x.bin"],
    );
    assert!(!refused.ok(), "nbdcopy as an unknown user: {refused}");
    // Plaintext: TLS is required.
    let plain_uri = server.uri.replacen("nbds://", "nbd://", 1);
    let refused = run_tool(dir, "nbdinfo", &[&plain_uri]);
    assert!(
        !refused.ok(),
        "a plaintext client must be refused: {refused}"
    );
    assert!(refused.stderr.contains("opt_go"), "{refused}");
    // The server is unharmed by the refusals.
    run_tool(dir, "nbdinfo", &[&uri]).expect_ok();
    server.stop();
}

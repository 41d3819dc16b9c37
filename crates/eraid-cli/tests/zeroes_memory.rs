//! WRITE_ZEROES and TRIM cost no buffer proportional to their length: 64
//! zero writes of 4 GiB at once (the most one connection may have in
//! flight, each the longest NBD allows) leave the server's peak resident
//! memory under 512 MiB, and the range reads back as zeroes. Before, each
//! was materialised as buffers (a 1 GiB zero write took 2.1 GiB).

mod support;
use eraid_nbd::client::Client;
use eraid_nbd::protocol as p;
use support::*;

const REQUESTS: usize = 64;
/// The longest NBD length (32 bits) that is a multiple of 512.
const ZERO_LEN_BYTES: u32 = u32::MAX - 511;

fn peak_resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("server status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM")
}

#[test]
fn sixty_four_zero_writes_of_four_gib_stay_under_512_mib() {
    let dir = scratch();
    // Sparse members: 4 x 1.6 GiB, RAID-5 with 1 MiB chunks: 4.8 GiB.
    create(
        dir.path(),
        &[
            "--level", "5", "--chunk", "1M", "--size", "1600M", "d0", "d1", "d2", "d3",
        ],
    );
    let mut server = Server::start(dir.path(), &["d0", "d1", "d2", "d3"]);
    let mut client = Client::connect_uri(&server.uri).expect("connect");
    assert!(client.size_bytes() >= u64::from(ZERO_LEN_BYTES));
    let pattern: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8 + 1).collect();
    for at in [0u64, 1 << 30, 3 << 30] {
        client.write(at, &pattern, false).expect("write");
    }
    for i in 0..REQUESTS {
        // Alternate trims and zero writes over the same 4 GiB.
        let command = if i % 2 == 0 {
            p::CMD_WRITE_ZEROES
        } else {
            p::CMD_TRIM
        };
        client
            .send_request(command, 0, 0, ZERO_LEN_BYTES, &[])
            .expect("send");
    }
    for _ in 0..REQUESTS {
        let reply = client.receive_reply().expect("reply");
        assert_eq!(reply.error, 0, "a zero write or trim failed");
    }
    let peak_kib = peak_resident_kib(server.pid());
    for at in [0u64, 1 << 30, 3 << 30] {
        let back = client.read(at, 1 << 20).expect("read");
        assert!(back.iter().all(|&b| b == 0), "{at} not zeroed");
    }
    client.disconnect().expect("disconnect");
    assert!(server.running(), "{}", server.log_text());
    server.stop();
    assert!(
        peak_kib < 512 * 1024,
        "peak resident memory {} MiB for {REQUESTS} zero writes of 4 GiB",
        peak_kib / 1024
    );
    eprintln!("peak resident memory: {} MiB", peak_kib / 1024);
    let out = eraid(dir.path(), &["check", "d0", "d1", "d2", "d3"]);
    assert!(out.ok(), "check after zeroing: {out}");
}

//! Malformed and hostile input over a raw socket: the server answers with
//! the right error and keeps the connection, or closes only that connection.

mod common;

use std::sync::Arc;

use common::{serve_mem, Raw};
use eraid_nbd::protocol as p;
use eraid_nbd::MemExport;

const SIZE_BYTES: usize = 1024 * 1024;

fn export_with_pattern() -> Arc<MemExport> {
    Arc::new(MemExport::with_contents(
        "disk0",
        common::random_bytes(SIZE_BYTES, 9),
    ))
}

#[test]
fn bad_client_flags_close_the_connection() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::connect(&served.socket_path);
    let flags = raw.greeting();
    assert_eq!(flags, p::FLAG_FIXED_NEWSTYLE | p::FLAG_NO_ZEROES);
    raw.send(&(1u32 << 7).to_be_bytes());
    assert!(
        raw.is_closed(),
        "unknown client flag must close the connection"
    );
}

#[test]
fn bad_option_magic_closes_the_connection() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    let mut message = b"NOTAMAGC".to_vec();
    message.extend_from_slice(&p::OPT_GO.to_be_bytes());
    message.extend_from_slice(&0u32.to_be_bytes());
    raw.send(&message);
    assert!(raw.is_closed());
}

#[test]
fn oversize_option_length_closes_without_allocating() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    let mut message = p::IHAVEOPT.to_be_bytes().to_vec();
    message.extend_from_slice(&p::OPT_GO.to_be_bytes());
    message.extend_from_slice(&u32::MAX.to_be_bytes());
    raw.send(&message);
    assert!(
        raw.is_closed(),
        "a 4 GiB option must close the connection at once"
    );
    // The server is still fine for others.
    let mut other = Raw::start(&served.socket_path);
    assert_eq!(other.go(b"").0, SIZE_BYTES as u64);
}

#[test]
fn unknown_options_get_unsup_then_go_works() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    for option in [0xdead, p::OPT_STARTTLS] {
        raw.option(option, b"some ignored data");
        let (replied_option, reply_type, _) = raw.option_reply();
        assert_eq!((replied_option, reply_type), (option, p::REP_ERR_UNSUP));
    }
    assert_eq!(raw.go(b"disk0"), (SIZE_BYTES as u64, expected_flags()));
    raw.read_ok(1, 0, 4096);
}

fn expected_flags() -> u16 {
    p::FLAG_HAS_FLAGS
        | p::FLAG_SEND_FLUSH
        | p::FLAG_SEND_FUA
        | p::FLAG_SEND_TRIM
        | p::FLAG_SEND_WRITE_ZEROES
        | p::FLAG_CAN_MULTI_CONN
}

#[test]
fn unknown_export_gets_err_unknown_and_malformed_go_gets_err_invalid() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    raw.option(p::OPT_GO, &Raw::go_data(b"nosuchdisk", &[]));
    assert_eq!(raw.option_reply().1, p::REP_ERR_UNKNOWN);
    raw.option(p::OPT_INFO, &[0, 0, 0, 200, b'x']); // name longer than the data
    assert_eq!(raw.option_reply().1, p::REP_ERR_INVALID);
    raw.option(p::OPT_LIST, b"junk");
    assert_eq!(raw.option_reply().1, p::REP_ERR_INVALID);
    assert_eq!(raw.go(b"").0, SIZE_BYTES as u64);
}

#[test]
fn info_then_go_reports_name_description_and_block_sizes() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES).with_preferred_block_bytes(65536));
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    raw.option(
        p::OPT_INFO,
        &Raw::go_data(
            b"disk0",
            &[p::INFO_NAME, p::INFO_DESCRIPTION, p::INFO_BLOCK_SIZE],
        ),
    );
    let mut infos = Vec::new();
    loop {
        let (option, reply_type, data) = raw.option_reply();
        assert_eq!(option, p::OPT_INFO);
        if reply_type == p::REP_ACK {
            break;
        }
        assert_eq!(reply_type, p::REP_INFO);
        infos.push(data);
    }
    let find = |info: u16| {
        infos
            .iter()
            .find(|d| d[0..2] == info.to_be_bytes())
            .cloned()
    };
    assert_eq!(&find(p::INFO_NAME).expect("name")[2..], b"disk0");
    assert_eq!(
        &find(p::INFO_DESCRIPTION).expect("description")[2..],
        b"in-memory export disk0"
    );
    let block = find(p::INFO_BLOCK_SIZE).expect("block size");
    let sizes: Vec<u32> = block[2..]
        .chunks(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(sizes, vec![512, 65536, 32 * 1024 * 1024]);
    // INFO leaves the client in negotiation; GO still works.
    assert_eq!(raw.go(b"disk0").0, SIZE_BYTES as u64);
}

#[test]
fn export_name_option_enters_transmission_with_and_without_zeroes() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    for no_zeroes in [true, false] {
        let mut raw = Raw::connect(&served.socket_path);
        raw.greeting();
        let flags = if no_zeroes {
            p::FLAG_C_FIXED_NEWSTYLE | p::FLAG_C_NO_ZEROES
        } else {
            p::FLAG_C_FIXED_NEWSTYLE
        };
        raw.send(&flags.to_be_bytes());
        raw.option(p::OPT_EXPORT_NAME, b"disk0");
        let mut reply = vec![0u8; if no_zeroes { 10 } else { 134 }];
        std::io::Read::read_exact(&mut raw.stream, &mut reply).unwrap();
        assert_eq!(
            u64::from_be_bytes(reply[0..8].try_into().unwrap()),
            SIZE_BYTES as u64
        );
        assert!(reply[10..].iter().all(|&b| b == 0));
        assert_eq!(raw.read_ok(1, 512, 512), export.contents()[512..1024]);
    }
}

#[test]
fn abort_is_acknowledged_and_closes() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    raw.option(p::OPT_ABORT, &[]);
    assert_eq!(raw.option_reply().1, p::REP_ACK);
    assert!(raw.is_closed());
}

/// Opens a connection in transmission.
fn transmitting(served: &common::Served) -> Raw {
    let mut raw = Raw::start(&served.socket_path);
    raw.go(b"");
    raw
}

#[test]
fn bad_requests_get_errors_and_the_connection_keeps_working() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = transmitting(&served);
    let expected = export.contents();
    let size = SIZE_BYTES as u64;
    let cases: [(&str, u16, u64, u32, u32); 8] = [
        (
            "read past the end",
            p::CMD_READ,
            size - 512,
            1024,
            p::EINVAL,
        ),
        (
            "read at a huge offset",
            p::CMD_READ,
            u64::MAX - 511,
            512,
            p::EINVAL,
        ),
        ("unaligned offset", p::CMD_READ, 100, 512, p::EINVAL),
        ("unaligned length", p::CMD_READ, 0, 100, p::EINVAL),
        (
            "read over the maximum",
            p::CMD_READ,
            0,
            32 * 1024 * 1024 + 512,
            p::EINVAL,
        ),
        ("unknown command", 42, 0, 512, p::EINVAL),
        ("trim past the end", p::CMD_TRIM, size, 512, p::EINVAL),
        (
            "zeroes past the end",
            p::CMD_WRITE_ZEROES,
            size,
            512,
            p::ENOSPC,
        ),
    ];
    for (index, (what, command, offset, len, error)) in cases.into_iter().enumerate() {
        let handle = 100 + index as u64;
        raw.request(command, 0, handle, offset, len);
        assert_eq!(raw.reply(), (error, handle), "{what}");
        assert_eq!(
            raw.read_ok(handle + 1000, 4096, 512),
            expected[4096..4608],
            "after {what}"
        );
    }
    assert_eq!(export.contents(), expected, "nothing was written");
}

#[test]
fn rejected_writes_consume_their_payload() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut raw = transmitting(&served);
    let expected = export.contents();

    // Past the end: ENOSPC, payload skipped.
    raw.request(p::CMD_WRITE, 0, 1, SIZE_BYTES as u64, 4096);
    raw.send(&[0xEE; 4096]);
    assert_eq!(raw.reply(), (p::ENOSPC, 1));
    // Unaligned: EINVAL.
    raw.request(p::CMD_WRITE, 0, 2, 1, 512);
    raw.send(&[0xEE; 512]);
    assert_eq!(raw.reply(), (p::EINVAL, 2));
    // Over the maximum but drainable: EINVAL after reading all 33 MiB.
    let len = 33 * 1024 * 1024;
    raw.request(p::CMD_WRITE, 0, 3, 0, len);
    raw.send(&vec![0xEE; len as usize]);
    assert_eq!(raw.reply(), (p::EINVAL, 3));

    assert_eq!(raw.read_ok(4, 0, 4096), expected[..4096]);
    assert_eq!(
        export.contents(),
        expected,
        "no rejected payload was written"
    );
}

#[test]
fn absurd_write_length_closes_only_that_connection() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut bystander = transmitting(&served);
    let mut raw = transmitting(&served);
    raw.request(p::CMD_WRITE, 0, 1, 0, u32::MAX - 511);
    assert!(raw.is_closed());
    bystander.read_ok(1, 0, 512);
}

#[test]
fn bad_request_magic_closes_only_that_connection() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut bystander = transmitting(&served);
    let mut raw = transmitting(&served);
    let mut header = p::RequestHeader {
        flags: 0,
        command: p::CMD_READ,
        handle: 1,
        offset_bytes: 0,
        len_bytes: 512,
    }
    .encode();
    header[0] ^= 0xff;
    raw.send(&header);
    assert!(raw.is_closed());
    bystander.read_ok(1, 0, 512);
}

#[test]
fn truncated_request_header_closes_that_connection_only() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    let mut bystander = transmitting(&served);
    let mut raw = transmitting(&served);
    let header = p::RequestHeader {
        flags: 0,
        command: p::CMD_READ,
        handle: 1,
        offset_bytes: 0,
        len_bytes: 512,
    }
    .encode();
    raw.send(&header[..11]);
    raw.stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(raw.is_closed(), "a header cut by EOF ends the connection");
    assert_eq!(bystander.read_ok(7, 512, 512), export.contents()[512..1024]);
}

#[test]
fn read_only_export_refuses_writes_with_eperm() {
    let export = Arc::new(MemExport::new("ro", SIZE_BYTES).with_read_only(true));
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    let (_, flags) = raw.go(b"ro");
    assert_ne!(flags & p::FLAG_READ_ONLY, 0);
    raw.request(p::CMD_WRITE, 0, 1, 0, 512);
    raw.send(&[1; 512]);
    assert_eq!(raw.reply(), (p::EPERM, 1));
    raw.request(p::CMD_TRIM, 0, 2, 0, 512);
    assert_eq!(raw.reply(), (p::EPERM, 2));
    raw.read_ok(3, 0, 512);
}

#[test]
fn garbage_never_takes_the_server_down() {
    let export = export_with_pattern();
    let served = serve_mem(&export);
    for seed in 0..32u64 {
        let garbage = common::random_bytes(64 + (seed as usize * 37) % 512, seed);
        // Garbage in the handshake...
        let mut raw = Raw::connect(&served.socket_path);
        raw.greeting();
        let _ = std::io::Write::write_all(&mut raw.stream, &garbage);
        drop(raw);
        // ...and in transmission.
        let mut raw = transmitting(&served);
        let _ = std::io::Write::write_all(&mut raw.stream, &garbage);
        drop(raw);
    }
    let mut raw = transmitting(&served);
    raw.read_ok(1, 0, 4096);
}

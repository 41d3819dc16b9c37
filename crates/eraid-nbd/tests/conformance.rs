//! Protocol conformance, table-driven: one case per MUST/SHOULD of the NBD
//! specification (doc/proto.md of NetworkBlockDevice/nbd) that the server
//! implements, each asserting the exact reply, then that the connection
//! still works. Runs over a Unix socket against the in-memory export.

mod common;

use std::io::Read;
use std::sync::Arc;

use common::{serve_mem, Raw, Served};
use eraid_nbd::protocol as p;
use eraid_nbd::MemExport;

const SIZE_BYTES: usize = 1024 * 1024;
const SIZE: u64 = SIZE_BYTES as u64;

/// How a case's connection reaches transmission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// NBD_OPT_GO, simple replies.
    Simple,
    /// NBD_OPT_STRUCTURED_REPLY, then GO.
    Structured,
    /// Structured replies, `base:allocation` selected, then GO.
    Allocation,
    /// The old NBD_OPT_EXPORT_NAME (no block sizes can be told).
    ExportName,
    /// GO on a read-only export.
    ReadOnly,
}

/// What the reply must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// This NBD error (a simple reply, or one error chunk when structured).
    Error(u32),
    /// Success without data.
    Done,
    /// A successful read: the export's bytes.
    Data,
    /// One block status chunk with one extent (length, flags).
    Extent(u32, u32),
}

struct Case {
    rule: &'static str,
    setup: Setup,
    command: u16,
    flags: u16,
    offset: u64,
    len: u32,
    expect: Expect,
}

const fn case(
    rule: &'static str,
    setup: Setup,
    command: u16,
    flags: u16,
    offset: u64,
    len: u32,
    expect: Expect,
) -> Case {
    Case {
        rule,
        setup,
        command,
        flags,
        offset,
        len,
        expect,
    }
}

use Expect::*;
use Setup::*;

const CASES: &[Case] = &[
    // Command flags: "Clients MUST NOT set a command flag bit that is not
    // documented for the particular command"; the server refuses with EINVAL.
    case(
        "unknown command flag bit 9 on READ",
        Simple,
        p::CMD_READ,
        1 << 9,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "unknown command flag bit 15 on WRITE (payload consumed)",
        Simple,
        p::CMD_WRITE,
        1 << 15,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "NO_HOLE is valid only on WRITE_ZEROES",
        Simple,
        p::CMD_READ,
        p::CMD_FLAG_NO_HOLE,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "NO_HOLE on WRITE_ZEROES MUST be supported",
        Simple,
        p::CMD_WRITE_ZEROES,
        p::CMD_FLAG_NO_HOLE,
        0,
        512,
        Done,
    ),
    case(
        "DF MUST NOT be set unless SEND_DF was advertised",
        Structured,
        p::CMD_READ,
        p::CMD_FLAG_DF,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "REQ_ONE is valid only on BLOCK_STATUS",
        Allocation,
        p::CMD_READ,
        p::CMD_FLAG_REQ_ONE,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "FAST_ZERO unadvertised: SHOULD fail with EINVAL",
        Simple,
        p::CMD_WRITE_ZEROES,
        p::CMD_FLAG_FAST_ZERO,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "FUA with SEND_FUA: server MUST accept it on all commands (FLUSH)",
        Simple,
        p::CMD_FLUSH,
        p::CMD_FLAG_FUA,
        0,
        0,
        Done,
    ),
    case(
        "FUA on WRITE_ZEROES",
        Simple,
        p::CMD_WRITE_ZEROES,
        p::CMD_FLAG_FUA,
        4096,
        512,
        Done,
    ),
    // Commands.
    case(
        "unknown command type: EINVAL",
        Simple,
        42,
        0,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "CACHE is not advertised: EINVAL",
        Simple,
        p::CMD_CACHE,
        0,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "FLUSH offset and length MUST be zero",
        Simple,
        p::CMD_FLUSH,
        0,
        512,
        0,
        Error(p::EINVAL),
    ),
    // Size constraints: "The server SHOULD report an NBD_EINVAL error if the
    // client's request is not aligned ... or would exceed the export size".
    case(
        "unaligned READ offset",
        Simple,
        p::CMD_READ,
        0,
        100,
        512,
        Error(p::EINVAL),
    ),
    case(
        "unaligned WRITE length",
        Simple,
        p::CMD_WRITE,
        0,
        0,
        100,
        Error(p::EINVAL),
    ),
    case(
        "READ past the end",
        Simple,
        p::CMD_READ,
        0,
        SIZE - 512,
        1024,
        Error(p::EINVAL),
    ),
    case(
        "READ offset wrapping u64",
        Simple,
        p::CMD_READ,
        0,
        u64::MAX - 511,
        512,
        Error(p::EINVAL),
    ),
    case(
        "READ over the maximum payload",
        Simple,
        p::CMD_READ,
        0,
        0,
        32 * 1024 * 1024 + 512,
        Error(p::EINVAL),
    ),
    case(
        "TRIM past the end",
        Simple,
        p::CMD_TRIM,
        0,
        SIZE,
        512,
        Error(p::EINVAL),
    ),
    case(
        "WRITE past the end: ENOSPC",
        Simple,
        p::CMD_WRITE,
        0,
        SIZE,
        512,
        Error(p::ENOSPC),
    ),
    case(
        "WRITE_ZEROES past the end: SHOULD return ENOSPC",
        Simple,
        p::CMD_WRITE_ZEROES,
        0,
        SIZE - 512,
        1024,
        Error(p::ENOSPC),
    ),
    case(
        "same constraints after EXPORT_NAME: unaligned READ",
        ExportName,
        p::CMD_READ,
        0,
        0,
        100,
        Error(p::EINVAL),
    ),
    case(
        "same constraints after EXPORT_NAME: aligned READ",
        ExportName,
        p::CMD_READ,
        0,
        512,
        512,
        Data,
    ),
    // TRIM: "MAY round offset up and length down": unaligned trims succeed.
    case(
        "511-byte TRIM rounds inward to nothing and succeeds",
        Simple,
        p::CMD_TRIM,
        0,
        0,
        511,
        Done,
    ),
    case(
        "unaligned TRIM rounds inward and succeeds",
        Simple,
        p::CMD_TRIM,
        0,
        1,
        2047,
        Done,
    ),
    case(
        "unaligned TRIM with FUA",
        Simple,
        p::CMD_TRIM,
        p::CMD_FLAG_FUA,
        100,
        1000,
        Done,
    ),
    // Zero lengths: behaviour unspecified, "the server SHOULD NOT disconnect".
    case("zero-length READ", Simple, p::CMD_READ, 0, 512, 0, Data),
    case("zero-length WRITE", Simple, p::CMD_WRITE, 0, 512, 0, Done),
    case("zero-length TRIM", Simple, p::CMD_TRIM, 0, 512, 0, Done),
    case(
        "zero-length WRITE_ZEROES",
        Simple,
        p::CMD_WRITE_ZEROES,
        0,
        512,
        0,
        Done,
    ),
    case(
        "zero-length READ, structured: a NONE chunk",
        Structured,
        p::CMD_READ,
        0,
        512,
        0,
        Done,
    ),
    case(
        "zero-length BLOCK_STATUS: EINVAL, no disconnect",
        Allocation,
        p::CMD_BLOCK_STATUS,
        0,
        512,
        0,
        Error(p::EINVAL),
    ),
    // Read-only: writes of any kind get EPERM.
    case(
        "WRITE on a read-only export: EPERM",
        ReadOnly,
        p::CMD_WRITE,
        0,
        0,
        512,
        Error(p::EPERM),
    ),
    case(
        "WRITE_ZEROES on a read-only export: SHOULD return EPERM",
        ReadOnly,
        p::CMD_WRITE_ZEROES,
        0,
        0,
        512,
        Error(p::EPERM),
    ),
    case(
        "TRIM on a read-only export: EPERM",
        ReadOnly,
        p::CMD_TRIM,
        0,
        0,
        512,
        Error(p::EPERM),
    ),
    case(
        "READ on a read-only export",
        ReadOnly,
        p::CMD_READ,
        0,
        0,
        512,
        Data,
    ),
    // Structured replies: "MUST NOT use a simple reply for NBD_CMD_READ
    // (even for the case of an early NBD_EINVAL due to bad flags)".
    case(
        "structured READ: one OFFSET_DATA chunk",
        Structured,
        p::CMD_READ,
        0,
        8192,
        4096,
        Data,
    ),
    case(
        "structured READ error: an error chunk",
        Structured,
        p::CMD_READ,
        0,
        SIZE,
        512,
        Error(p::EINVAL),
    ),
    case(
        "structured READ with a bad flag: an error chunk",
        Structured,
        p::CMD_READ,
        1 << 7,
        0,
        512,
        Error(p::EINVAL),
    ),
    // Block status.
    case(
        "BLOCK_STATUS without a selected context: SHOULD reply EINVAL",
        Structured,
        p::CMD_BLOCK_STATUS,
        0,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "BLOCK_STATUS without structured replies: EINVAL",
        Simple,
        p::CMD_BLOCK_STATUS,
        0,
        0,
        512,
        Error(p::EINVAL),
    ),
    case(
        "BLOCK_STATUS: the whole range is data (flags 0)",
        Allocation,
        p::CMD_BLOCK_STATUS,
        0,
        65536,
        131072,
        Extent(131072, 0),
    ),
    case(
        "BLOCK_STATUS REQ_ONE: one extent no longer than asked",
        Allocation,
        p::CMD_BLOCK_STATUS,
        p::CMD_FLAG_REQ_ONE,
        0,
        4096,
        Extent(4096, 0),
    ),
    case(
        "BLOCK_STATUS past the end: SHOULD return EINVAL",
        Allocation,
        p::CMD_BLOCK_STATUS,
        0,
        SIZE - 512,
        1024,
        Error(p::EINVAL),
    ),
    case(
        "BLOCK_STATUS unaligned: EINVAL",
        Allocation,
        p::CMD_BLOCK_STATUS,
        0,
        100,
        512,
        Error(p::EINVAL),
    ),
];

/// A reply as it arrives: simple (error, handle) or one structured chunk.
#[derive(Debug)]
enum Reply {
    Simple {
        error: u32,
        handle: u64,
    },
    Chunk {
        flags: u16,
        kind: u16,
        handle: u64,
        payload: Vec<u8>,
    },
}

fn read_exact(raw: &mut Raw, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    raw.stream.read_exact(&mut buf).expect("reply bytes");
    buf
}

fn read_reply(raw: &mut Raw) -> Reply {
    let magic = u32::from_be_bytes(read_exact(raw, 4).try_into().unwrap());
    match magic {
        p::SIMPLE_REPLY_MAGIC => {
            let rest = read_exact(raw, 12);
            Reply::Simple {
                error: u32::from_be_bytes(rest[0..4].try_into().unwrap()),
                handle: u64::from_be_bytes(rest[4..12].try_into().unwrap()),
            }
        }
        p::STRUCTURED_REPLY_MAGIC => {
            let rest = read_exact(raw, 16);
            let len = u32::from_be_bytes(rest[12..16].try_into().unwrap());
            Reply::Chunk {
                flags: u16::from_be_bytes(rest[0..2].try_into().unwrap()),
                kind: u16::from_be_bytes(rest[2..4].try_into().unwrap()),
                handle: u64::from_be_bytes(rest[4..12].try_into().unwrap()),
                payload: read_exact(raw, len as usize),
            }
        }
        other => panic!("bad reply magic {other:#x}"),
    }
}

/// Reaches transmission; returns the connection and the context id of
/// `base:allocation` when selected.
fn connect(served: &Served, setup: Setup) -> (Raw, Option<u32>) {
    let mut raw = Raw::start(&served.socket_path);
    let mut context = None;
    if setup == ExportName {
        raw.option(p::OPT_EXPORT_NAME, b"");
        let reply = read_exact(&mut raw, 10);
        assert_eq!(u64::from_be_bytes(reply[0..8].try_into().unwrap()), SIZE);
        return (raw, None);
    }
    if matches!(setup, Structured | Allocation) {
        raw.option(p::OPT_STRUCTURED_REPLY, &[]);
        assert_eq!(raw.option_reply().1, p::REP_ACK);
    }
    if setup == Allocation {
        raw.option(
            p::OPT_SET_META_CONTEXT,
            &meta_data(b"", &[b"base:allocation"]),
        );
        let (_, reply_type, data) = raw.option_reply();
        assert_eq!(reply_type, p::REP_META_CONTEXT);
        assert_eq!(&data[4..], b"base:allocation");
        context = Some(u32::from_be_bytes(data[0..4].try_into().unwrap()));
        assert_eq!(raw.option_reply().1, p::REP_ACK);
    }
    raw.go(b"");
    (raw, context)
}

fn meta_data(name: &[u8], queries: &[&[u8]]) -> Vec<u8> {
    let mut data = (name.len() as u32).to_be_bytes().to_vec();
    data.extend_from_slice(name);
    data.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for query in queries {
        data.extend_from_slice(&(query.len() as u32).to_be_bytes());
        data.extend_from_slice(query);
    }
    data
}

/// Sends one request (with a payload for WRITE) and checks its reply.
#[allow(clippy::too_many_arguments)]
fn check(
    raw: &mut Raw,
    export: &MemExport,
    structured: bool,
    context: Option<u32>,
    request: (u16, u16, u64, u32),
    handle: u64,
    expect: Expect,
    rule: &str,
) {
    let (command, flags, offset, len) = request;
    raw.request(command, flags, handle, offset, len);
    if command == p::CMD_WRITE {
        raw.send(&vec![0xa5; len as usize]);
    }
    let reply = read_reply(raw);
    match (expect, reply) {
        (
            Error(error),
            Reply::Simple {
                error: got,
                handle: h,
            },
        ) if !structured => {
            assert_eq!((got, h), (error, handle), "{rule}");
        }
        (
            Error(error),
            Reply::Chunk {
                flags,
                kind,
                handle: h,
                payload,
            },
        ) if structured => {
            assert_eq!(
                (kind, flags, h),
                (p::REPLY_TYPE_ERROR, p::REPLY_FLAG_DONE, handle),
                "{rule}"
            );
            assert_eq!(
                u32::from_be_bytes(payload[0..4].try_into().unwrap()),
                error,
                "{rule}"
            );
            let message_len = u16::from_be_bytes(payload[4..6].try_into().unwrap()) as usize;
            assert_eq!(payload.len(), 6 + message_len, "{rule}: error chunk length");
        }
        (Done, Reply::Simple { error, handle: h }) => {
            assert_eq!((error, h), (0, handle), "{rule}");
            if command == p::CMD_READ {
                assert!(!structured, "{rule}: a structured read needs a chunk");
            }
        }
        (
            Done,
            Reply::Chunk {
                flags,
                kind,
                handle: h,
                payload,
            },
        ) if structured => {
            assert_eq!(
                (kind, flags, h),
                (p::REPLY_TYPE_NONE, p::REPLY_FLAG_DONE, handle),
                "{rule}"
            );
            assert!(payload.is_empty(), "{rule}");
        }
        (Data, Reply::Simple { error, handle: h }) if !structured => {
            assert_eq!((error, h), (0, handle), "{rule}");
            let data = read_exact(raw, len as usize);
            assert_eq!(
                data,
                export.contents()[offset as usize..][..len as usize],
                "{rule}"
            );
        }
        (
            Data,
            Reply::Chunk {
                flags,
                kind,
                handle: h,
                payload,
            },
        ) if structured => {
            assert_eq!(
                (kind, flags, h),
                (p::REPLY_TYPE_OFFSET_DATA, p::REPLY_FLAG_DONE, handle),
                "{rule}"
            );
            assert_eq!(
                u64::from_be_bytes(payload[0..8].try_into().unwrap()),
                offset,
                "{rule}"
            );
            assert_eq!(
                payload[8..],
                export.contents()[offset as usize..][..len as usize],
                "{rule}"
            );
        }
        (
            Extent(extent_len, extent_flags),
            Reply::Chunk {
                flags,
                kind,
                handle: h,
                payload,
            },
        ) => {
            assert_eq!(
                (kind, flags, h),
                (p::REPLY_TYPE_BLOCK_STATUS, p::REPLY_FLAG_DONE, handle),
                "{rule}"
            );
            let mut expected = context.expect("a context").to_be_bytes().to_vec();
            expected.extend_from_slice(&extent_len.to_be_bytes());
            expected.extend_from_slice(&extent_flags.to_be_bytes());
            assert_eq!(payload, expected, "{rule}");
        }
        (expect, reply) => {
            panic!("{rule}: expected {expect:?}, got {reply:?} (structured: {structured})")
        }
    }
}

#[test]
fn every_request_is_judged_against_the_spec() {
    let export = Arc::new(MemExport::with_contents(
        "disk0",
        common::random_bytes(SIZE_BYTES, 3),
    ));
    let read_only = Arc::new(
        MemExport::with_contents("disk0", common::random_bytes(SIZE_BYTES, 4)).with_read_only(true),
    );
    let served = serve_mem(&export);
    let served_read_only = serve_mem(&read_only);
    for (index, case) in CASES.iter().enumerate() {
        let (served, export) = if case.setup == ReadOnly {
            (&served_read_only, &read_only)
        } else {
            (&served, &export)
        };
        let (mut raw, context) = connect(served, case.setup);
        let structured = matches!(case.setup, Structured | Allocation);
        let handle = 1000 + index as u64;
        let request = (case.command, case.flags, case.offset, case.len);
        check(
            &mut raw,
            export,
            structured,
            context,
            request,
            handle,
            case.expect,
            case.rule,
        );
        // The connection stays usable after every case.
        let after = format!("a read after: {}", case.rule);
        check(
            &mut raw,
            export,
            structured,
            context,
            (p::CMD_READ, 0, 4096, 512),
            handle + 1,
            Data,
            &after,
        );
        raw.request(p::CMD_DISC, 0, 0, 0, 0);
        assert!(raw.is_closed(), "DISC closes: {}", case.rule);
    }
}

/// Option haggling: one case per rule, each asserting the replies.
#[test]
fn options_are_answered_as_the_spec_says() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    type Replies = &'static [u32];
    let allocation: &[u8] = b"base:allocation";
    let cases: Vec<(&str, bool, u32, Vec<u8>, Replies)> = vec![
        (
            "STRUCTURED_REPLY with data: SHOULD reject with ERR_INVALID",
            false,
            p::OPT_STRUCTURED_REPLY,
            b"x".to_vec(),
            &[p::REP_ERR_INVALID],
        ),
        (
            "SET_META_CONTEXT before structured replies: SHOULD send ERR_INVALID",
            false,
            p::OPT_SET_META_CONTEXT,
            meta_data(b"", &[allocation]),
            &[p::REP_ERR_INVALID],
        ),
        (
            "LIST_META_CONTEXT before structured replies: MAY send ERR_INVALID",
            false,
            p::OPT_LIST_META_CONTEXT,
            meta_data(b"", &[]),
            &[p::REP_ERR_INVALID],
        ),
        (
            "LIST_META_CONTEXT, no query: MUST return all contexts",
            true,
            p::OPT_LIST_META_CONTEXT,
            meta_data(b"", &[]),
            &[p::REP_META_CONTEXT, p::REP_ACK],
        ),
        (
            "LIST_META_CONTEXT `base:` wildcard MUST be supported",
            true,
            p::OPT_LIST_META_CONTEXT,
            meta_data(b"disk0", &[b"base:"]),
            &[p::REP_META_CONTEXT, p::REP_ACK],
        ),
        (
            "unknown namespace MUST be ignored: only ACK",
            true,
            p::OPT_LIST_META_CONTEXT,
            meta_data(b"", &[b"x-other:thing"]),
            &[p::REP_ACK],
        ),
        (
            "SET_META_CONTEXT `base:` MUST be ignored",
            true,
            p::OPT_SET_META_CONTEXT,
            meta_data(b"", &[b"base:"]),
            &[p::REP_ACK],
        ),
        (
            "SET_META_CONTEXT with zero queries selects none",
            true,
            p::OPT_SET_META_CONTEXT,
            meta_data(b"", &[]),
            &[p::REP_ACK],
        ),
        (
            "SET_META_CONTEXT base:allocation selects it",
            true,
            p::OPT_SET_META_CONTEXT,
            meta_data(b"", &[allocation]),
            &[p::REP_META_CONTEXT, p::REP_ACK],
        ),
        (
            "query past the option length: MUST fail with ERR_INVALID",
            true,
            p::OPT_SET_META_CONTEXT,
            {
                let mut d = meta_data(b"", &[allocation]);
                d.pop();
                d
            },
            &[p::REP_ERR_INVALID],
        ),
        (
            "meta context for an unknown export: ERR_UNKNOWN",
            true,
            p::OPT_SET_META_CONTEXT,
            meta_data(b"nope", &[allocation]),
            &[p::REP_ERR_UNKNOWN],
        ),
        (
            "unsupported option: ERR_UNSUP",
            false,
            p::OPT_STARTTLS,
            Vec::new(),
            &[p::REP_ERR_UNSUP],
        ),
    ];
    for (rule, structured, option, data, expected) in cases {
        let mut raw = Raw::start(&served.socket_path);
        if structured {
            raw.option(p::OPT_STRUCTURED_REPLY, &[]);
            assert_eq!(raw.option_reply().1, p::REP_ACK, "{rule}");
        }
        raw.option(option, &data);
        for &reply_type in expected {
            let (replied_option, got, reply_data) = raw.option_reply();
            assert_eq!((replied_option, got), (option, reply_type), "{rule}");
            if got == p::REP_META_CONTEXT {
                assert_eq!(&reply_data[4..], b"base:allocation", "{rule}");
            }
        }
        // Haggling goes on after every answer.
        assert_eq!(raw.go(b"").0, SIZE, "GO after: {rule}");
    }
}

#[test]
fn a_failed_set_meta_context_clears_the_selection() {
    let export = Arc::new(MemExport::new("disk0", SIZE_BYTES));
    let served = serve_mem(&export);
    let mut raw = Raw::start(&served.socket_path);
    raw.option(p::OPT_STRUCTURED_REPLY, &[]);
    assert_eq!(raw.option_reply().1, p::REP_ACK);
    raw.option(
        p::OPT_SET_META_CONTEXT,
        &meta_data(b"", &[b"base:allocation"]),
    );
    assert_eq!(raw.option_reply().1, p::REP_META_CONTEXT);
    assert_eq!(raw.option_reply().1, p::REP_ACK);
    // "Issuing this command replaces all previously-set metadata contexts
    // (including when this command fails)".
    raw.option(
        p::OPT_SET_META_CONTEXT,
        &meta_data(b"nope", &[b"base:allocation"]),
    );
    assert_eq!(raw.option_reply().1, p::REP_ERR_UNKNOWN);
    raw.go(b"");
    check(
        &mut raw,
        &export,
        true,
        None,
        (p::CMD_BLOCK_STATUS, 0, 0, 512),
        1,
        Error(p::EINVAL),
        "no context after a failed SET",
    );
}

#[test]
fn export_name_and_go_clients_get_the_same_block_constraints() {
    let export = Arc::new(MemExport::with_contents(
        "disk0",
        common::random_bytes(SIZE_BYTES, 5),
    ));
    let served = serve_mem(&export);
    let requests: &[(u16, u64, u32)] = &[
        (p::CMD_READ, 0, 256),
        (p::CMD_READ, 256, 512),
        (p::CMD_READ, 512, 512),
        (p::CMD_READ, 0, 32 * 1024 * 1024 + 512),
        (p::CMD_WRITE_ZEROES, 100, 512),
        (p::CMD_TRIM, 100, 511),
    ];
    let mut verdicts = Vec::new();
    for setup in [Simple, ExportName] {
        let (mut raw, _) = connect(&served, setup);
        let mut errors = Vec::new();
        for (index, &(command, offset, len)) in requests.iter().enumerate() {
            raw.request(command, 0, index as u64, offset, len);
            let (error, handle) = raw.reply();
            assert_eq!(handle, index as u64);
            if error == 0 && command == p::CMD_READ {
                read_exact(&mut raw, len as usize);
            }
            errors.push(error);
        }
        verdicts.push(errors);
    }
    assert_eq!(
        verdicts[0],
        vec![p::EINVAL, p::EINVAL, 0, p::EINVAL, p::EINVAL, 0]
    );
    assert_eq!(
        verdicts[0], verdicts[1],
        "GO and EXPORT_NAME clients are judged alike"
    );
}

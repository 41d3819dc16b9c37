//! Server side of the fixed newstyle handshake: greeting, client flags and
//! option haggling, up to the switch to transmission.

use std::io::{self, Write};
use std::time::Instant;

use crate::config::ServerConfig;
use crate::export::Export;
use crate::protocol::{self as p, be_u16, be_u32, be_u64};
use crate::stream::{DeadlineWriter, MessageReader, NextMessage, Stream, Watch};
use crate::tls;

/// Largest option payload accepted; real options are a name plus a few
/// info requests, so anything bigger is abuse and closes the connection.
pub const OPTION_DATA_BYTES_MAX: u32 = 64 * 1024;
/// Options one connection may send before it is considered abusive.
const OPTIONS_PER_CONNECTION_MAX: usize = 256;

/// The metadata context id given to `base:allocation` (any nonzero value).
pub const ALLOCATION_CONTEXT_ID: u32 = 1;

/// What the handshake agreed on for the transmission phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Session {
    /// NBD_OPT_STRUCTURED_REPLY was acknowledged.
    pub structured_replies: bool,
    /// `base:allocation` was selected by the last NBD_OPT_SET_META_CONTEXT.
    pub allocation_context: bool,
}

/// How option haggling ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Negotiated {
    /// The client chose the export and transmission starts now.
    Transmission(Session),
    /// The client aborted, went away, or the server is stopping.
    Closed,
}

/// Why the connection must be dropped during the handshake.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("protocol violation: {0}")]
    Violation(String),
}

/// The transmission flags advertised for `export`.
pub fn transmission_flags(export: &dyn Export, config: &ServerConfig) -> u16 {
    let mut flags = p::FLAG_HAS_FLAGS
        | p::FLAG_SEND_FLUSH
        | p::FLAG_SEND_FUA
        | p::FLAG_SEND_TRIM
        | p::FLAG_SEND_WRITE_ZEROES;
    if config.multi_conn {
        flags |= p::FLAG_CAN_MULTI_CONN;
    }
    if export.read_only() {
        flags |= p::FLAG_READ_ONLY;
    }
    flags
}

/// What a TLS handshake after NBD_OPT_STARTTLS must respect: the same
/// stop and cancel flags and the same deadline as the NBD handshake.
pub struct TlsUpgrade<'a> {
    pub watch: &'a Watch,
    pub deadline: Instant,
}

/// Runs the handshake on a fresh connection. `admit` is asked once the
/// client chose the export: false means the transmission slots are full.
pub fn negotiate(
    reader: &mut MessageReader<Stream>,
    writer: &mut DeadlineWriter,
    export: &dyn Export,
    config: &ServerConfig,
    admit: &mut dyn FnMut() -> bool,
    upgrade: &TlsUpgrade,
) -> Result<Negotiated, HandshakeError> {
    let mut session = Session::default();
    let tls_required = config.tls.as_ref().is_some_and(|policy| policy.required);
    let mut tls_active = false;
    let mut greeting = Vec::with_capacity(18);
    greeting.extend_from_slice(&p::NBDMAGIC.to_be_bytes());
    greeting.extend_from_slice(&p::IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(p::FLAG_FIXED_NEWSTYLE | p::FLAG_NO_ZEROES).to_be_bytes());
    writer.write_all(&greeting)?;

    let mut client_flags_bytes = [0u8; 4];
    if reader.next_message(&mut client_flags_bytes)? != NextMessage::Ready {
        return Ok(Negotiated::Closed);
    }
    let client_flags = u32::from_be_bytes(client_flags_bytes);
    if client_flags & !p::FLAG_C_KNOWN != 0 {
        // The spec says the server MUST close on flags it does not know.
        return Err(HandshakeError::Violation(format!(
            "unknown client flags {client_flags:#x}"
        )));
    }
    let no_zeroes = client_flags & p::FLAG_C_NO_ZEROES != 0;

    for _ in 0..OPTIONS_PER_CONNECTION_MAX {
        let mut header = [0u8; 16];
        if reader.next_message(&mut header)? != NextMessage::Ready {
            return Ok(Negotiated::Closed);
        }
        if be_u64(&header[0..8]) != p::IHAVEOPT {
            return Err(HandshakeError::Violation("bad option magic".into()));
        }
        let option = be_u32(&header[8..12]);
        let data_len_bytes = be_u32(&header[12..16]);
        if data_len_bytes > OPTION_DATA_BYTES_MAX {
            return Err(HandshakeError::Violation(format!(
                "option {option} data of {data_len_bytes} bytes exceeds {OPTION_DATA_BYTES_MAX}"
            )));
        }
        let mut data = vec![0u8; data_len_bytes as usize];
        reader.fill(&mut data)?;

        if tls_required && !tls_active && option != p::OPT_STARTTLS && option != p::OPT_ABORT {
            if option == p::OPT_EXPORT_NAME {
                // No error reply exists for EXPORT_NAME: the spec says close.
                return Err(HandshakeError::Violation(
                    "EXPORT_NAME before STARTTLS while TLS is required".into(),
                ));
            }
            send_option_reply(
                writer,
                option,
                p::REP_ERR_TLS_REQD,
                b"TLS is required: send NBD_OPT_STARTTLS first",
            )?;
            continue;
        }
        match option {
            p::OPT_STARTTLS => {
                let Some(policy) = &config.tls else {
                    send_option_reply(
                        writer,
                        option,
                        p::REP_ERR_UNSUP,
                        b"TLS is not configured on this server",
                    )?;
                    continue;
                };
                if tls_active || !data.is_empty() {
                    send_option_reply(
                        writer,
                        option,
                        p::REP_ERR_INVALID,
                        b"STARTTLS takes no data and only once",
                    )?;
                    continue;
                }
                send_option_reply(writer, option, p::REP_ACK, &[])?;
                // A failed TLS handshake ends the connection (the spec's
                // MUST: nothing can be said in plaintext after the ACK).
                let tls_stream = tls::accept(
                    reader.get_mut(),
                    &policy.credentials,
                    upgrade.watch,
                    upgrade.deadline,
                )?;
                *writer.get_mut() = Stream::Tls(tls_stream.try_clone()?);
                *reader.get_mut() = Stream::Tls(tls_stream);
                tls_active = true;
                // Nothing agreed in plaintext carries over into TLS.
                session = Session::default();
            }
            p::OPT_EXPORT_NAME => {
                if !names_export(&data, export) {
                    // EXPORT_NAME has no error reply: the spec says hard disconnect.
                    return Err(HandshakeError::Violation("unknown export name".into()));
                }
                if !admit() {
                    return Err(HandshakeError::Violation(
                        "connection limit reached (EXPORT_NAME cannot be answered)".into(),
                    ));
                }
                let mut reply = Vec::with_capacity(10 + p::EXPORT_NAME_ZEROES_BYTES);
                reply.extend_from_slice(&export.size_bytes().to_be_bytes());
                reply.extend_from_slice(&transmission_flags(export, config).to_be_bytes());
                if !no_zeroes {
                    reply.extend_from_slice(&[0u8; p::EXPORT_NAME_ZEROES_BYTES]);
                }
                writer.write_all(&reply)?;
                return Ok(Negotiated::Transmission(session));
            }
            p::OPT_GO | p::OPT_INFO => {
                let admit = &mut *admit;
                let mut admit_go = || option == p::OPT_INFO || admit();
                if answer_info(writer, option, &data, export, config, &mut admit_go)?
                    && option == p::OPT_GO
                {
                    return Ok(Negotiated::Transmission(session));
                }
            }
            p::OPT_STRUCTURED_REPLY => {
                if data.is_empty() {
                    session.structured_replies = true;
                    send_option_reply(writer, option, p::REP_ACK, &[])?;
                } else {
                    send_option_reply(
                        writer,
                        option,
                        p::REP_ERR_INVALID,
                        b"STRUCTURED_REPLY takes no data",
                    )?;
                }
            }
            p::OPT_LIST_META_CONTEXT | p::OPT_SET_META_CONTEXT => {
                let selected = answer_meta_context(writer, option, &data, export, session)?;
                if option == p::OPT_SET_META_CONTEXT {
                    // SET replaces the selection, even when it fails.
                    session.allocation_context = selected;
                }
            }
            p::OPT_LIST => {
                if data.is_empty() {
                    let name = p::truncate_string(export.name()).as_bytes();
                    let mut server = Vec::with_capacity(4 + name.len());
                    server.extend_from_slice(&(name.len() as u32).to_be_bytes());
                    server.extend_from_slice(name);
                    send_option_reply(writer, option, p::REP_SERVER, &server)?;
                    send_option_reply(writer, option, p::REP_ACK, &[])?;
                } else {
                    send_option_reply(writer, option, p::REP_ERR_INVALID, b"LIST takes no data")?;
                }
            }
            p::OPT_ABORT => {
                // The client may already be gone; the reply is a courtesy.
                let _ = send_option_reply(writer, option, p::REP_ACK, &[]);
                return Ok(Negotiated::Closed);
            }
            _ => {
                // Extended headers...: unsupported, and the client may go on negotiating.
                send_option_reply(writer, option, p::REP_ERR_UNSUP, b"option not supported")?;
            }
        }
    }
    Err(HandshakeError::Violation("too many options".into()))
}

/// Answers NBD_OPT_GO / NBD_OPT_INFO. Returns true when the export was
/// described and acknowledged, false after an error reply.
fn answer_info(
    writer: &mut DeadlineWriter,
    option: u32,
    data: &[u8],
    export: &dyn Export,
    config: &ServerConfig,
    admit: &mut dyn FnMut() -> bool,
) -> io::Result<bool> {
    let Some((name, requests)) = parse_info_request(data) else {
        send_option_reply(
            writer,
            option,
            p::REP_ERR_INVALID,
            b"malformed GO/INFO data",
        )?;
        return Ok(false);
    };
    if !names_export(name, export) {
        send_option_reply(writer, option, p::REP_ERR_UNKNOWN, b"no such export")?;
        return Ok(false);
    }
    if !admit() {
        send_option_reply(
            writer,
            option,
            p::REP_ERR_POLICY,
            b"too many connections; try again later",
        )?;
        return Ok(false);
    }

    let mut info_export = Vec::with_capacity(12);
    info_export.extend_from_slice(&p::INFO_EXPORT.to_be_bytes());
    info_export.extend_from_slice(&export.size_bytes().to_be_bytes());
    info_export.extend_from_slice(&transmission_flags(export, config).to_be_bytes());
    send_option_reply(writer, option, p::REP_INFO, &info_export)?;

    // Block sizes are sent even when not asked for: the spec allows it, and
    // a client that ignores them would only meet EINVAL on unaligned I/O.
    let mut info_block = Vec::with_capacity(14);
    info_block.extend_from_slice(&p::INFO_BLOCK_SIZE.to_be_bytes());
    info_block.extend_from_slice(&config.min_block_bytes.to_be_bytes());
    info_block.extend_from_slice(
        &config
            .preferred_block_bytes(export.preferred_block_bytes())
            .to_be_bytes(),
    );
    info_block.extend_from_slice(&config.max_request_bytes.to_be_bytes());
    send_option_reply(writer, option, p::REP_INFO, &info_block)?;

    if requests.contains(&p::INFO_NAME) {
        let mut info_name = p::INFO_NAME.to_be_bytes().to_vec();
        info_name.extend_from_slice(p::truncate_string(export.name()).as_bytes());
        send_option_reply(writer, option, p::REP_INFO, &info_name)?;
    }
    if requests.contains(&p::INFO_DESCRIPTION) {
        let description = export.description();
        let mut info_description = p::INFO_DESCRIPTION.to_be_bytes().to_vec();
        info_description.extend_from_slice(p::truncate_string(&description).as_bytes());
        send_option_reply(writer, option, p::REP_INFO, &info_description)?;
    }
    send_option_reply(writer, option, p::REP_ACK, &[])?;
    Ok(true)
}

/// Answers NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT. Returns
/// whether `base:allocation` was selected (always false for LIST).
fn answer_meta_context(
    writer: &mut DeadlineWriter,
    option: u32,
    data: &[u8],
    export: &dyn Export,
    session: Session,
) -> io::Result<bool> {
    if !session.structured_replies {
        // Block status replies are structured: meta contexts need them first.
        send_option_reply(
            writer,
            option,
            p::REP_ERR_INVALID,
            b"negotiate structured replies first",
        )?;
        return Ok(false);
    }
    let Some((name, queries)) = parse_meta_context_request(data) else {
        send_option_reply(
            writer,
            option,
            p::REP_ERR_INVALID,
            b"malformed meta context data",
        )?;
        return Ok(false);
    };
    if !names_export(name, export) {
        send_option_reply(writer, option, p::REP_ERR_UNKNOWN, b"no such export")?;
        return Ok(false);
    }
    let allocation = p::META_CONTEXT_BASE_ALLOCATION.as_bytes();
    let matches = if option == p::OPT_LIST_META_CONTEXT {
        // No query lists everything; `base:` is the namespace's wildcard.
        queries.is_empty() || queries.iter().any(|q| *q == allocation || *q == b"base:")
    } else {
        // Unknown contexts are ignored, as the spec asks.
        queries.contains(&allocation)
    };
    if matches {
        let mut reply = ALLOCATION_CONTEXT_ID.to_be_bytes().to_vec();
        reply.extend_from_slice(allocation);
        send_option_reply(writer, option, p::REP_META_CONTEXT, &reply)?;
    }
    send_option_reply(writer, option, p::REP_ACK, &[])?;
    Ok(matches && option == p::OPT_SET_META_CONTEXT)
}

/// Splits meta context data into the export name and the queries; None
/// when a length inside runs past the option or bytes are left over.
fn parse_meta_context_request(data: &[u8]) -> Option<(&[u8], Vec<&[u8]>)> {
    let name_len_bytes = be_u32(data.get(0..4)?) as usize;
    let name_end = 4usize.checked_add(name_len_bytes)?;
    let name = data.get(4..name_end)?;
    let query_count = be_u32(data.get(name_end..name_end.checked_add(4)?)?) as usize;
    let mut rest = &data[name_end + 4..];
    // Each query takes at least 4 bytes, so a huge count fails fast here.
    if query_count > rest.len() / 4 {
        return None;
    }
    let mut queries = Vec::with_capacity(query_count);
    for _ in 0..query_count {
        let query_len_bytes = be_u32(rest.get(0..4)?) as usize;
        let query = rest.get(4..4usize.checked_add(query_len_bytes)?)?;
        queries.push(query);
        rest = &rest[4 + query_len_bytes..];
    }
    rest.is_empty().then_some((name, queries))
}

/// Splits GO/INFO data into the export name and the requested info types;
/// None when the lengths inside disagree with the option length.
fn parse_info_request(data: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let name_len_bytes = be_u32(data.get(0..4)?) as usize;
    let name = data.get(4..4usize.checked_add(name_len_bytes)?)?;
    let rest = &data[4 + name_len_bytes..];
    let request_count = usize::from(be_u16(rest.get(0..2)?));
    let request_bytes = rest.get(2..)?;
    if request_bytes.len() != request_count * 2 {
        return None;
    }
    Some((name, request_bytes.chunks_exact(2).map(be_u16).collect()))
}

/// The empty name selects the (only) export.
fn names_export(name: &[u8], export: &dyn Export) -> bool {
    name.is_empty() || name == export.name().as_bytes()
}

/// Sends one fixed-newstyle option reply.
fn send_option_reply(
    writer: &mut DeadlineWriter,
    option: u32,
    reply_type: u32,
    data: &[u8],
) -> io::Result<()> {
    let mut reply = Vec::with_capacity(20 + data.len());
    reply.extend_from_slice(&p::OPTION_REPLY_MAGIC.to_be_bytes());
    reply.extend_from_slice(&option.to_be_bytes());
    reply.extend_from_slice(&reply_type.to_be_bytes());
    reply.extend_from_slice(&(data.len() as u32).to_be_bytes());
    reply.extend_from_slice(data);
    writer.write_all(&reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info_data(name: &[u8], requests: &[u16]) -> Vec<u8> {
        let mut data = (name.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(name);
        data.extend_from_slice(&(requests.len() as u16).to_be_bytes());
        for request in requests {
            data.extend_from_slice(&request.to_be_bytes());
        }
        data
    }

    #[test]
    fn parses_well_formed_info_requests() {
        let data = info_data(b"disk", &[p::INFO_NAME, p::INFO_BLOCK_SIZE]);
        let (name, requests) = parse_info_request(&data).unwrap();
        assert_eq!(name, b"disk");
        assert_eq!(requests, vec![p::INFO_NAME, p::INFO_BLOCK_SIZE]);
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

    #[test]
    fn parses_meta_context_requests_and_rejects_inconsistent_ones() {
        let data = meta_data(b"disk", &[b"base:allocation", b"qemu:dirty"]);
        let (name, queries) = parse_meta_context_request(&data).unwrap();
        assert_eq!(name, b"disk");
        assert_eq!(queries, vec![&b"base:allocation"[..], &b"qemu:dirty"[..]]);
        let mut extra = data.clone();
        extra.push(0);
        assert!(parse_meta_context_request(&extra).is_none());
        let mut short = data.clone();
        short.pop();
        assert!(parse_meta_context_request(&short).is_none());
        let mut huge_count = meta_data(b"", &[]);
        huge_count[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_meta_context_request(&huge_count).is_none());
    }

    #[test]
    fn rejects_inconsistent_info_requests() {
        assert!(parse_info_request(&[]).is_none());
        assert!(parse_info_request(&[0xff, 0xff, 0xff, 0xff, 0, 0]).is_none());
        let mut extra = info_data(b"", &[p::INFO_NAME]);
        extra.push(0);
        assert!(parse_info_request(&extra).is_none());
        let mut short = info_data(b"x", &[p::INFO_NAME]);
        short.pop();
        assert!(parse_info_request(&short).is_none());
    }
}

//! Wire constants of the NBD protocol (doc/proto.md of NetworkBlockDevice/nbd).
//!
//! Only the subset this crate speaks is listed; every value is big-endian on
//! the wire.

/// "NBDMAGIC": first 8 bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle magic; also prefixes every client option.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of every fixed-newstyle option reply.
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Magic of a structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

// Handshake flags (server -> client, 16 bits).
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;

// Client flags (client -> server, 32 bits).
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;
/// Every client flag this server understands; any other bit closes the connection.
pub const FLAG_C_KNOWN: u32 = FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES;

// Transmission flags (16 bits).
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;

// Option reply types.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_META_CONTEXT: u32 = 4;
const REP_FLAG_ERROR: u32 = 1 << 31;
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
pub const REP_ERR_POLICY: u32 = REP_FLAG_ERROR | 2;
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
/// Options other than STARTTLS (and ABORT) sent before TLS when TLS is required.
pub const REP_ERR_TLS_REQD: u32 = REP_FLAG_ERROR | 5;
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;
pub const REP_ERR_SHUTDOWN: u32 = REP_FLAG_ERROR | 7;

/// True for every option reply type that reports an error.
pub fn is_reply_error(reply_type: u32) -> bool {
    reply_type & REP_FLAG_ERROR != 0
}

// Information types in NBD_REP_INFO replies and NBD_OPT_GO/INFO requests.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_CACHE: u16 = 5;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;

// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const CMD_FLAG_DF: u16 = 1 << 2;
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

// Structured reply flags and chunk types.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) | 1;

/// The one metadata context this server offers.
pub const META_CONTEXT_BASE_ALLOCATION: &str = "base:allocation";
// base:allocation status flags (0 = data, allocated or unknown).
pub const STATE_HOLE: u32 = 1 << 0;
pub const STATE_ZERO: u32 = 1 << 1;

// Error values in simple replies (the protocol fixes these numbers; they
// are not the host's errno values).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const ENOMEM: u32 = 12;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

/// A short text for an error value, sent in structured error chunks.
pub fn error_message(error: u32) -> &'static str {
    match error {
        EPERM => "operation not permitted (read-only export)",
        EIO => "input/output error",
        ENOMEM => "out of memory",
        EINVAL => "invalid request (flags, alignment, range or length)",
        ENOSPC => "no space left (past the end of the export)",
        EOVERFLOW => "request too large",
        ENOTSUP => "not supported",
        ESHUTDOWN => "server is shutting down",
        _ => "error",
    }
}

/// Request header: magic, flags, type, handle, offset, length.
pub const REQUEST_HEADER_BYTES: usize = 4 + 2 + 2 + 8 + 8 + 4;
/// Simple reply header: magic, error, handle.
pub const SIMPLE_REPLY_HEADER_BYTES: usize = 4 + 4 + 8;
/// Structured reply chunk header: magic, flags, type, handle, length.
pub const STRUCTURED_REPLY_HEADER_BYTES: usize = 4 + 2 + 2 + 8 + 4;
/// Reserved zeroes after an NBD_OPT_EXPORT_NAME reply unless NO_ZEROES was agreed.
pub const EXPORT_NAME_ZEROES_BYTES: usize = 124;
/// The protocol's limit on any string (export name, description, message).
pub const STRING_BYTES_MAX: usize = 4096;

/// A transmission request header as sent by the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub command: u16,
    pub handle: u64,
    pub offset_bytes: u64,
    pub len_bytes: u32,
}

impl RequestHeader {
    /// Decodes a header; None when the magic is wrong (a protocol violation).
    pub fn decode(bytes: &[u8; REQUEST_HEADER_BYTES]) -> Option<RequestHeader> {
        if be_u32(&bytes[0..4]) != REQUEST_MAGIC {
            return None;
        }
        Some(RequestHeader {
            flags: be_u16(&bytes[4..6]),
            command: be_u16(&bytes[6..8]),
            handle: be_u64(&bytes[8..16]),
            offset_bytes: be_u64(&bytes[16..24]),
            len_bytes: be_u32(&bytes[24..28]),
        })
    }

    pub fn encode(&self) -> [u8; REQUEST_HEADER_BYTES] {
        let mut out = [0u8; REQUEST_HEADER_BYTES];
        out[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        out[4..6].copy_from_slice(&self.flags.to_be_bytes());
        out[6..8].copy_from_slice(&self.command.to_be_bytes());
        out[8..16].copy_from_slice(&self.handle.to_be_bytes());
        out[16..24].copy_from_slice(&self.offset_bytes.to_be_bytes());
        out[24..28].copy_from_slice(&self.len_bytes.to_be_bytes());
        out
    }
}

/// Encodes a simple reply header.
pub fn encode_simple_reply(error: u32, handle: u64) -> [u8; SIMPLE_REPLY_HEADER_BYTES] {
    let mut out = [0u8; SIMPLE_REPLY_HEADER_BYTES];
    out[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out[4..8].copy_from_slice(&error.to_be_bytes());
    out[8..16].copy_from_slice(&handle.to_be_bytes());
    out
}

/// Encodes a structured reply chunk header for a payload of `len_bytes`.
pub fn encode_structured_reply(
    flags: u16,
    reply_type: u16,
    handle: u64,
    len_bytes: u32,
) -> [u8; STRUCTURED_REPLY_HEADER_BYTES] {
    let mut out = [0u8; STRUCTURED_REPLY_HEADER_BYTES];
    out[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out[4..6].copy_from_slice(&flags.to_be_bytes());
    out[6..8].copy_from_slice(&reply_type.to_be_bytes());
    out[8..16].copy_from_slice(&handle.to_be_bytes());
    out[16..20].copy_from_slice(&len_bytes.to_be_bytes());
    out
}

// The decoders take slices whose length the caller fixed; they are private
// helpers so no client-controlled length reaches them.
pub(crate) fn be_u16(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[0], bytes[1]])
}

pub(crate) fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

pub(crate) fn be_u64(bytes: &[u8]) -> u64 {
    let mut array = [0u8; 8];
    array.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(array)
}

/// Cuts a string to the protocol's 4096-byte limit on a character boundary.
pub fn truncate_string(text: &str) -> &str {
    if text.len() <= STRING_BYTES_MAX {
        return text;
    }
    let mut end = STRING_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics_spell_their_ascii_names() {
        assert_eq!(&NBDMAGIC.to_be_bytes(), b"NBDMAGIC");
        assert_eq!(&IHAVEOPT.to_be_bytes(), b"IHAVEOPT");
    }

    #[test]
    fn request_header_round_trips_and_rejects_bad_magic() {
        let header = RequestHeader {
            flags: CMD_FLAG_FUA,
            command: CMD_WRITE,
            handle: 0xdead_beef_0123_4567,
            offset_bytes: 1 << 40,
            len_bytes: 4096,
        };
        let mut bytes = header.encode();
        assert_eq!(RequestHeader::decode(&bytes), Some(header));
        bytes[0] ^= 1;
        assert_eq!(RequestHeader::decode(&bytes), None);
    }

    #[test]
    fn truncate_string_keeps_char_boundaries() {
        let long = "é".repeat(3000); // 6000 bytes
        let cut = truncate_string(&long);
        assert!(cut.len() <= STRING_BYTES_MAX);
        assert!(cut.len() >= STRING_BYTES_MAX - 1);
    }
}

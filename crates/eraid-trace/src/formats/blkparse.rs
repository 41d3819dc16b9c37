//! `blkparse` default text output (blktrace from Linux).
//!
//! Event lines look like
//! `8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]`:
//! device `major,minor`, CPU, sequence number, time in seconds, PID, action,
//! RWBS flags, then for I/O events `sector + sectors [command]`.
//!
//! Only queue (`Q`) events become requests: they are the requests as the
//! application issued them, before merging and splitting by the block layer,
//! which is what a replay should submit. Every other line is skipped: other
//! actions (`G`, `I`, `D`, `C`, `M`, `m`, ...), the per-CPU and total summary
//! blocks blkparse prints at the end, and blank lines. `Q` events that carry
//! no data are skipped too: flushes without a payload (`Q FWS [jbd2]`),
//! discards (RWBS containing `D`) and zero-length requests.
//!
//! The device is encoded like the kernel's `dev_t` (`MKDEV`):
//! `major << 20 | minor`; see [`device_id`].

use super::LineParser;
use crate::decimal::{parse_scaled, parse_u32, parse_u64, sectors_to_bytes};
use crate::TraceRequest;

/// Bits the kernel gives the minor number inside a `dev_t`.
const MINOR_BITS: u32 = 20;

/// The device number used for `major,minor`, as the kernel's `MKDEV`.
pub fn device_id(major: u32, minor: u32) -> Option<u32> {
    if major >= 1 << (32 - MINOR_BITS) || minor >= 1 << MINOR_BITS {
        return None;
    }
    Some(major << MINOR_BITS | minor)
}

/// Parser for `blkparse` text lines.
#[derive(Debug, Default, Clone)]
pub struct BlkparseParser;

/// `major,minor` if the token looks like a blkparse device field.
fn device_token(token: &str) -> Option<(&str, &str)> {
    let (major, minor) = token.split_once(',')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(major) && digits(minor)).then_some((major, minor))
}

impl LineParser for BlkparseParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Lines that do not start with a device are summaries or noise.
        let Some((major, minor)) = fields.first().and_then(|t| device_token(t)) else {
            return Ok(None);
        };
        if fields.get(5) != Some(&"Q") {
            return Ok(None);
        }
        let Some(rwbs) = fields.get(6) else {
            return Err("queue event has no RWBS field".to_string());
        };
        let is_read = if rwbs.contains('D') {
            return Ok(None);
        } else if rwbs.contains('R') {
            true
        } else if rwbs.contains('W') {
            false
        } else {
            // 'N' (no data) or a bare flush: nothing to replay.
            return Ok(None);
        };
        let payload = &fields[7..];
        let has_sectors = payload.first().is_some_and(|t| !t.starts_with('['));
        if !has_sectors {
            // A request without a sector range, such as a pre-flush.
            return Ok(None);
        }
        if payload.len() < 3 || payload[1] != "+" {
            return Err(format!(
                "queue event should continue `sector + sectors`, found {:?}",
                payload.join(" ")
            ));
        }
        let major = parse_u32(major, "device major")?;
        let minor = parse_u32(minor, "device minor")?;
        let device = device_id(major, minor)
            .ok_or_else(|| format!("device {major},{minor} does not fit a dev_t"))?;
        let arrival_ns = parse_scaled(fields[3], 9, "time")?;
        let offset_bytes = sectors_to_bytes(parse_u64(payload[0], "sector")?, "sector")?;
        let len_bytes = sectors_to_bytes(parse_u64(payload[2], "sector count")?, "sector count")?;
        if len_bytes == 0 {
            return Ok(None);
        }
        Ok(Some(TraceRequest {
            arrival_ns,
            device,
            offset_bytes,
            len_bytes,
            is_read,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Option<TraceRequest>, String> {
        BlkparseParser.parse_line(line)
    }

    #[test]
    fn parses_a_queue_event() {
        let request = parse("8,0  3  1  0.000000000  697  Q  W 223490 + 8 [kjournald]")
            .unwrap()
            .unwrap();
        assert_eq!(
            request,
            TraceRequest {
                arrival_ns: 0,
                device: 8 << 20,
                offset_bytes: 223_490 * 512,
                len_bytes: 4096,
                is_read: false,
            }
        );
        let read = parse("8,16 0 12 1.250000001 42 Q RA 100 + 256 [cat]")
            .unwrap()
            .unwrap();
        assert!(read.is_read);
        assert_eq!(read.device, (8 << 20) | 16);
        assert_eq!(read.arrival_ns, 1_250_000_001);
        assert_eq!(read.len_bytes, 256 * 512);
    }

    #[test]
    fn skips_everything_but_data_queue_events() {
        for line in [
            "8,0  3  2  0.000001000  697  G  W 223490 + 8 [kjournald]",
            "8,0  3  5  0.000004000  697  C  W 223490 + 8 [0]",
            "8,0  1  4  0.000062000 1234  Q FWS [kworker/1:1]",
            "8,0  1  6  0.000063000 1234  Q  DS 2048 + 2048 [fstrim]",
            "8,0  1  0  0.000070000    0  m   N cfq1234 insert_request",
            "CPU0 (8,0):",
            " Reads Queued:           0,        0KiB\t Writes Queued:          14,      240KiB",
            "Total (8,0):",
            "Throughput (R/W): 0KiB/s / 2344KiB/s",
            "",
        ] {
            assert_eq!(parse(line), Ok(None), "{line:?}");
        }
    }

    #[test]
    fn rejects_malformed_queue_events() {
        assert!(parse("8,0 3 1 0.0 697 Q").unwrap_err().contains("RWBS"));
        assert!(parse("8,0 3 1 0.0 697 Q W 5 - 8 [x]")
            .unwrap_err()
            .contains("sector + sectors"));
        assert!(parse("8,0 3 1 zero 697 Q W 5 + 8 [x]")
            .unwrap_err()
            .contains("time"));
        assert!(parse("8,0 3 1 0.0 697 Q W 5 + x [x]")
            .unwrap_err()
            .contains("sector count"));
        assert!(parse("4096,0 3 1 0.0 697 Q W 5 + 8 [x]")
            .unwrap_err()
            .contains("dev_t"));
    }
}

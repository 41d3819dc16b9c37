//! MQSim's nanosecond ASCII traces (`data/traces/*-small.trace`).
//!
//! One request per line, whitespace separated:
//! `arrival_time_ns device start_sector size_sectors type`, for example
//! `11413000 0 657728 16 1`. Sectors are 512 bytes; type 1 is a read and
//! 0 a write.

use super::LineParser;
use crate::decimal::{parse_u32, parse_u64, sectors_to_bytes};
use crate::TraceRequest;

/// Parser for MQSim trace lines.
#[derive(Debug, Default, Clone)]
pub struct MqSimParser;

impl LineParser for MqSimParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected 5 fields arrival_time_ns device start_sector size_sectors type, found {}",
                fields.len()
            ));
        }
        let arrival_ns = parse_u64(fields[0], "arrival time")?;
        let device = parse_u32(fields[1], "device")?;
        let offset_bytes = sectors_to_bytes(parse_u64(fields[2], "start sector")?, "start sector")?;
        let len_bytes = sectors_to_bytes(parse_u64(fields[3], "size")?, "size")?;
        let is_read = match fields[4] {
            "1" => true,
            "0" => false,
            other => return Err(format!("type {other:?} is not 1 (read) or 0 (write)")),
        };
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

    #[test]
    fn parses_a_websearch_line() {
        let request = MqSimParser
            .parse_line("11413000 0 657728 16 1")
            .unwrap()
            .unwrap();
        assert_eq!(
            request,
            TraceRequest {
                arrival_ns: 11_413_000,
                device: 0,
                offset_bytes: 657_728 * 512,
                len_bytes: 8192,
                is_read: true,
            }
        );
    }

    #[test]
    fn rejects_bad_fields() {
        let mut parser = MqSimParser;
        assert!(parser
            .parse_line("1 2 3 4")
            .unwrap_err()
            .contains("5 fields"));
        assert!(parser.parse_line("1 2 3 4 2").unwrap_err().contains("type"));
        assert!(parser
            .parse_line("1.5 2 3 4 1")
            .unwrap_err()
            .contains("arrival"));
        assert!(parser
            .parse_line("1 -2 3 4 1")
            .unwrap_err()
            .contains("device"));
    }
}

//! DiskSim ASCII traces (DiskSim 4.0 `valid/ascii.trace` style).
//!
//! One request per line, whitespace separated:
//! `arrival_time_ms device block_number block_count flags`, for example
//! `13.191135 30 0 5 1` (DiskSim separates fields with tabs). Blocks are
//! 512 bytes; bit 0 of `flags` set means read. DiskSim reads the flags with `%x`, so they are parsed as
//! hexadecimal (an optional `0x` prefix is accepted); other flag bits are
//! ignored.

use super::LineParser;
use crate::decimal::{parse_scaled, parse_u32, parse_u64, sectors_to_bytes};
use crate::TraceRequest;

/// Parser for DiskSim ASCII lines.
#[derive(Debug, Default, Clone)]
pub struct DiskSimParser;

impl LineParser for DiskSimParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected 5 fields arrival_time_ms device block_number block_count flags, found {}",
                fields.len()
            ));
        }
        let arrival_ns = parse_scaled(fields[0], 6, "arrival time")?;
        let device = parse_u32(fields[1], "device")?;
        let offset_bytes = sectors_to_bytes(parse_u64(fields[2], "block number")?, "block number")?;
        let len_bytes = sectors_to_bytes(parse_u64(fields[3], "block count")?, "block count")?;
        let flags_text = fields[4];
        let hex = flags_text
            .strip_prefix("0x")
            .or_else(|| flags_text.strip_prefix("0X"))
            .unwrap_or(flags_text);
        let flags = u64::from_str_radix(hex, 16)
            .map_err(|_| format!("flags {flags_text:?} is not a hexadecimal number"))?;
        Ok(Some(TraceRequest {
            arrival_ns,
            device,
            offset_bytes,
            len_bytes,
            is_read: flags & 1 == 1,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_line_of_the_disksim_example() {
        let request = DiskSimParser
            .parse_line("13.191135\t30\t0\t5\t1")
            .unwrap()
            .unwrap();
        assert_eq!(
            request,
            TraceRequest {
                arrival_ns: 13_191_135,
                device: 30,
                offset_bytes: 0,
                len_bytes: 2560,
                is_read: true,
            }
        );
        let write = DiskSimParser
            .parse_line("25.9 18 28601 12 0")
            .unwrap()
            .unwrap();
        assert!(!write.is_read);
        assert_eq!(write.arrival_ns, 25_900_000);
    }

    #[test]
    fn rejects_bad_fields() {
        let mut parser = DiskSimParser;
        assert!(parser
            .parse_line("1 2 3 4")
            .unwrap_err()
            .contains("5 fields"));
        assert!(parser
            .parse_line("1 2 3 4 z")
            .unwrap_err()
            .contains("flags"));
        assert!(parser
            .parse_line("-1 2 3 4 1")
            .unwrap_err()
            .contains("arrival"));
        assert!(parser
            .parse_line("1 2 3.5 4 1")
            .unwrap_err()
            .contains("block number"));
    }
}

//! SPC ASCII traces (the UMass/SPC Financial and WebSearch files).
//!
//! One request per line: `ASU,LBA,size_bytes,opcode,timestamp_s`, for example
//! `0,303567,3584,w,0.000000`. The LBA is in 512-byte sectors, the opcode is
//! `r`/`R` or `w`/`W`, and the timestamp is seconds since the trace began.
//! The SPC specification allows optional fields after the timestamp; they are
//! ignored. The ASU becomes [`TraceRequest::device`].

use super::LineParser;
use crate::decimal::{parse_scaled, parse_u32, parse_u64, sectors_to_bytes};
use crate::TraceRequest;

/// Parser for SPC ASCII lines.
#[derive(Debug, Default, Clone)]
pub struct SpcParser;

impl LineParser for SpcParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() < 5 {
            return Err(format!(
                "expected 5 comma-separated fields ASU,LBA,size_bytes,opcode,timestamp_s, found {}",
                fields.len()
            ));
        }
        let device = parse_u32(fields[0], "ASU")?;
        let offset_bytes = sectors_to_bytes(parse_u64(fields[1], "LBA")?, "LBA")?;
        let len_bytes = parse_u64(fields[2], "size")?;
        let is_read = match fields[3] {
            "r" | "R" => true,
            "w" | "W" => false,
            other => return Err(format!("opcode {other:?} is not r, R, w or W")),
        };
        let arrival_ns = parse_scaled(fields[4], 9, "timestamp")?;
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
        SpcParser.parse_line(line)
    }

    #[test]
    fn parses_a_financial_line() {
        let request = parse("0,303567,3584,w,0.000000").unwrap().unwrap();
        assert_eq!(
            request,
            TraceRequest {
                arrival_ns: 0,
                device: 0,
                offset_bytes: 303_567 * 512,
                len_bytes: 3584,
                is_read: false,
            }
        );
        let request = parse("2, 55, 8192, R, 1.5, extra").unwrap().unwrap();
        assert!(request.is_read);
        assert_eq!(request.device, 2);
        assert_eq!(request.arrival_ns, 1_500_000_000);
    }

    #[test]
    fn rejects_bad_fields() {
        assert!(parse("0,1,512,w")
            .unwrap_err()
            .contains("5 comma-separated"));
        assert!(parse("0,1,512,x,0.1").unwrap_err().contains("opcode"));
        assert!(parse("0,-1,512,r,0.1").unwrap_err().contains("LBA"));
        assert!(parse("a,1,512,r,0.1").unwrap_err().contains("ASU"));
        assert!(parse("0,1,512,r,soon").unwrap_err().contains("timestamp"));
        assert!(parse("0,36028797018963968,512,r,0")
            .unwrap_err()
            .contains("overflows"));
    }
}

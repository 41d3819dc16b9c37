//! MSR Cambridge CSV traces (SNIA IOTTA, Narayanan et al., FAST 2008).
//!
//! One request per line:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, for example
//! `128166372003061629,wdev,0,Write,4267819008,4096,1185`. The timestamp is a
//! Windows FILETIME (100 ns units since 1601); offset and size are bytes;
//! type is `Read` or `Write`; the response time is ignored.
//!
//! Arrival times are made relative to the first request of the file, since
//! absolute FILETIMEs are huge and meaningless to a simulator. MSR files are
//! sorted by time; should a line nevertheless be earlier than the first, its
//! arrival is clamped to 0 rather than rejected.

use super::LineParser;
use crate::decimal::{parse_u32, parse_u64};
use crate::TraceRequest;

/// Nanoseconds per FILETIME tick.
const FILETIME_TICK_NS: u64 = 100;

/// Parser for MSR Cambridge lines; remembers the first timestamp.
#[derive(Debug, Default, Clone)]
pub struct MsrParser {
    first_timestamp_ticks: Option<u64>,
}

impl LineParser for MsrParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<TraceRequest>, String> {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 7 {
            return Err(format!(
                "expected 7 comma-separated fields \
                 Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime, found {}",
                fields.len()
            ));
        }
        let timestamp_ticks = parse_u64(fields[0], "timestamp")?;
        let device = parse_u32(fields[2], "disk number")?;
        let is_read = if fields[3].eq_ignore_ascii_case("read") {
            true
        } else if fields[3].eq_ignore_ascii_case("write") {
            false
        } else {
            return Err(format!("type {:?} is not Read or Write", fields[3]));
        };
        let offset_bytes = parse_u64(fields[4], "offset")?;
        let len_bytes = parse_u64(fields[5], "size")?;
        parse_u64(fields[6], "response time")?;
        let first = *self.first_timestamp_ticks.get_or_insert(timestamp_ticks);
        let arrival_ns = timestamp_ticks
            .saturating_sub(first)
            .checked_mul(FILETIME_TICK_NS)
            .ok_or_else(|| format!("timestamp {timestamp_ticks} is too far from the first"))?;
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
    fn times_are_relative_to_the_first_line() {
        let mut parser = MsrParser::default();
        let first = parser
            .parse_line("128166372003061629,wdev,0,Write,4267819008,4096,1185")
            .unwrap()
            .unwrap();
        assert_eq!(first.arrival_ns, 0);
        assert!(!first.is_read);
        assert_eq!(first.offset_bytes, 4_267_819_008);
        let second = parser
            .parse_line("128166372003071629,wdev,3,Read,512,8192,90")
            .unwrap()
            .unwrap();
        assert_eq!(second.arrival_ns, 10_000 * 100);
        assert_eq!(second.device, 3);
        assert!(second.is_read);
        assert_eq!(second.len_bytes, 8192);
    }

    #[test]
    fn rejects_bad_fields() {
        let mut parser = MsrParser::default();
        assert!(parser
            .parse_line("1,h,0,Read,0,512")
            .unwrap_err()
            .contains("7 comma"));
        assert!(parser
            .parse_line("1,h,0,Trim,0,512,1")
            .unwrap_err()
            .contains("type"));
        assert!(parser
            .parse_line("x,h,0,Read,0,512,1")
            .unwrap_err()
            .contains("timestamp"));
        assert!(parser
            .parse_line("1,h,0,Read,0,-5,1")
            .unwrap_err()
            .contains("size"));
    }
}

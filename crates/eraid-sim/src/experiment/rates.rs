//! Rate settings in experiment files (`speed_min`, `speed_max` of
//! `[growth]` and `[failure]`): a bare number is KiB/s, as Linux MD's
//! sync_speed_min/max; a text is a size per second ("10M", "10M/s").

use super::file::IntOrText;
use crate::units::parse_size_bytes;

/// The rate in KiB/s, or why the value is not a rate.
pub fn rate_kib_s(value: &IntOrText) -> Result<u64, String> {
    match value {
        IntOrText::Int(kib) => Ok(*kib),
        IntOrText::Text(t) => {
            let t = t.trim();
            let t = t.strip_suffix("/s").unwrap_or(t);
            let bytes = parse_size_bytes(t).map_err(|e| {
                format!("{e} (a rate per second, e.g. \"10M\"; a bare number is KiB/s)")
            })?;
            Ok(bytes / 1024)
        }
    }
}

//! Exact parsing of the numeric fields traces use.
//!
//! Timestamps are parsed as decimal text straight into integer nanoseconds
//! rather than through `f64`, so `0.000000001` s is exactly 1 ns and long
//! traces do not drift from float rounding.

/// Parses an unsigned decimal such as `12.5` into an integer scaled by
/// `10^fraction_digits` (`12.5` with 3 digits gives 12500). Digits beyond the
/// precision are truncated. Exponent forms (`1.5e-3`) fall back to `f64`,
/// because some tools write them and rejecting them would help nobody.
pub(crate) fn parse_scaled(text: &str, fraction_digits: u32, what: &str) -> Result<u64, String> {
    let text = text.trim();
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    let bad = || format!("{what} {text:?} is not a non-negative number");
    if unsigned.is_empty() {
        return Err(bad());
    }
    if unsigned.contains(['e', 'E']) {
        return parse_float_scaled(unsigned, fraction_digits).ok_or_else(bad);
    }
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (unsigned, ""),
    };
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    if !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let too_large = || format!("{what} {text:?} is too large");
    let scale = 10u64.checked_pow(fraction_digits).ok_or_else(too_large)?;
    let mut value: u64 = 0;
    for b in whole.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(too_large)?;
    }
    value = value.checked_mul(scale).ok_or_else(too_large)?;
    let mut fraction_value: u64 = 0;
    let mut used: u32 = 0;
    for b in fraction.bytes().take(fraction_digits as usize) {
        fraction_value = fraction_value * 10 + u64::from(b - b'0');
        used += 1;
    }
    fraction_value *= 10u64.pow(fraction_digits - used);
    value.checked_add(fraction_value).ok_or_else(too_large)
}

fn parse_float_scaled(text: &str, fraction_digits: u32) -> Option<u64> {
    let value: f64 = text.parse().ok()?;
    let scaled = value * 10f64.powi(i32::try_from(fraction_digits).ok()?);
    // u64::MAX as f64 rounds up to 2^64, so compare with `<` to stay in range.
    (scaled.is_finite() && scaled >= 0.0 && scaled < u64::MAX as f64).then(|| scaled.round() as u64)
}

/// Parses a plain unsigned integer field, naming the field in the error.
pub(crate) fn parse_u64(text: &str, what: &str) -> Result<u64, String> {
    let text = text.trim();
    text.parse::<u64>()
        .map_err(|_| format!("{what} {text:?} is not a non-negative integer"))
}

/// Parses a plain unsigned 32-bit integer field, naming the field in the error.
pub(crate) fn parse_u32(text: &str, what: &str) -> Result<u32, String> {
    let text = text.trim();
    text.parse::<u32>()
        .map_err(|_| format!("{what} {text:?} is not a non-negative 32-bit integer"))
}

/// Converts a sector count or address to bytes, failing instead of wrapping.
pub(crate) fn sectors_to_bytes(sectors: u64, what: &str) -> Result<u64, String> {
    sectors
        .checked_mul(crate::SECTOR_BYTES)
        .ok_or_else(|| format!("{what} {sectors} sectors overflows a 64-bit byte address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_parsing_is_exact() {
        assert_eq!(parse_scaled("0.000000001", 9, "t"), Ok(1));
        assert_eq!(parse_scaled("12.5", 3, "t"), Ok(12_500));
        assert_eq!(parse_scaled("7", 6, "t"), Ok(7_000_000));
        assert_eq!(parse_scaled(".25", 2, "t"), Ok(25));
        assert_eq!(parse_scaled("1.23456789", 3, "t"), Ok(1_234));
        assert_eq!(parse_scaled("1.5e-3", 9, "t"), Ok(1_500_000));
    }

    #[test]
    fn scaled_parsing_rejects_garbage() {
        for text in [
            "",
            ".",
            "-1",
            "1.2.3",
            "abc",
            "1e999",
            "99999999999999999999",
        ] {
            assert!(parse_scaled(text, 9, "t").is_err(), "{text:?}");
        }
    }
}

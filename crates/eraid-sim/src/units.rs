//! Sizes written by people: `64K`, `64KiB`, `1M`, `4096`.

/// Parses a byte count with an optional binary suffix (K, M, G, T, with or
/// without `iB`/`B`; case-insensitive). Plain numbers are bytes.
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, suffix) = lower.split_at(digits_end);
    let bad = || format!("'{trimmed}' is not a size (expected e.g. 4096, 64K, 64KiB, 1M)");
    let value: u64 = number.parse().map_err(|_| bad())?;
    let shift = match suffix.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{trimmed}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size_bytes;

    #[test]
    fn suffixes() {
        assert_eq!(parse_size_bytes("4096"), Ok(4096));
        assert_eq!(parse_size_bytes("64K"), Ok(65536));
        assert_eq!(parse_size_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_size_bytes("1m"), Ok(1 << 20));
        assert!(parse_size_bytes("x").is_err());
        assert!(parse_size_bytes("5Q").is_err());
    }
}

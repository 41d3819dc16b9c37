//! Byte sizes on the command line: "65536", "64K", "64KiB", "256M", "1G".

/// Parses a size with an optional binary suffix (K, M, G, T; "iB"/"B" allowed).
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(format!(
            "'{text}' is not a size (expected a number with an optional K, M, G or T suffix)"
        ));
    }
    let number: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("'{text}' is too large"))?;
    let shift = match t[digits_end..].to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        suffix => {
            return Err(format!(
                "'{text}': unknown size suffix '{suffix}' (use K, M, G or T)"
            ))
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("64K"), Ok(65536));
        assert_eq!(parse_size_bytes("256M"), Ok(256 << 20));
        assert_eq!(parse_size_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size_bytes("4096"), Ok(4096));
        assert!(parse_size_bytes("K").is_err());
        assert!(parse_size_bytes("12Q").is_err());
        assert!(parse_size_bytes("99999999999999999999T").is_err());
    }
}

//! DiskSim `.seek` files: `Seek distances measured: N`, then N lines
//! `distance, time_ms`.

use super::SpecError;

/// Parses a seek table into ascending (distance in cylinders, ms) points.
pub fn parse_seek_table(file: &str, text: &str) -> Result<Vec<(u32, f64)>, SpecError> {
    let mut points: Vec<(u32, f64)> = Vec::new();
    let mut declared = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |m: &str| SpecError::new(file, line_no, m);
        if let Some(rest) = line.strip_prefix("Seek distances measured:") {
            declared = Some(
                rest.trim()
                    .parse::<usize>()
                    .map_err(|_| err("bad count of seek distances"))?,
            );
            continue;
        }
        let mut parts = line.split([',', ' ', '\t']).filter(|s| !s.is_empty());
        let (Some(d), Some(t), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err("expected 'distance, time_ms'"));
        };
        let d = d.parse::<u32>().map_err(|_| err("bad seek distance"))?;
        let t = t.parse::<f64>().map_err(|_| err("bad seek time"))?;
        if !t.is_finite() || t < 0.0 {
            return Err(err("seek time must be a non-negative number"));
        }
        if points.last().is_some_and(|p| p.0 >= d) {
            return Err(err("seek distances must be strictly ascending"));
        }
        points.push((d, t));
    }
    let last_line = text.lines().count().max(1);
    match declared {
        Some(n) if n != points.len() => Err(SpecError::new(
            file,
            last_line,
            format!(
                "header declares {n} seek distances but {} are listed",
                points.len()
            ),
        )),
        _ if points.is_empty() => Err(SpecError::new(file, last_line, "no seek distances")),
        _ => Ok(points),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_locates_errors() {
        let ok = parse_seek_table("s", "Seek distances measured: 2\n1,\t0.8\n10,\t1.5\n").unwrap();
        assert_eq!(ok, vec![(1, 0.8), (10, 1.5)]);
        let e = parse_seek_table("s.seek", "Seek distances measured: 2\n1, 0.8\n10 oops\n")
            .unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("s.seek", 3));
        assert!(parse_seek_table("s", "Seek distances measured: 3\n1, 0.8\n").is_err());
    }
}

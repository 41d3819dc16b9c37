//! The level and chunk `eraid create` builds from its flags: a RAID level
//! by number, or CRS from --data, --parity and --w.

use anyhow::{bail, Result};
use eraid_core::geometry::{
    crs_default_chunk_bytes, crs_default_w, Level, CHUNK_BYTES_DEFAULT, CRS_W_MAX,
};

/// The level named by `--level` and the CRS flags. `member_count` is how
/// many members were named (a CRS array has exactly data + parity).
pub fn level_from_flags(
    level_text: &str,
    data: Option<usize>,
    parity: Option<usize>,
    w: Option<usize>,
    member_count: usize,
) -> Result<Level> {
    if level_text.trim().eq_ignore_ascii_case("crs") {
        let (Some(data), Some(parity)) = (data, parity) else {
            bail!("--level crs needs --data K and --parity M (k data and m parity members)");
        };
        if data == 0 || parity == 0 {
            bail!("--level crs needs at least 1 data and 1 parity member (got --data {data} --parity {parity})");
        }
        if data + parity != member_count {
            bail!(
                "--data {data} --parity {parity} makes {} members, but {member_count} were named",
                data + parity
            );
        }
        let w = match w {
            Some(w) => w,
            None => crs_default_w(member_count).ok_or_else(|| {
                anyhow::anyhow!(
                    "{member_count} members do not fit CRS at any w <= {CRS_W_MAX} (k + m <= 2^w)"
                )
            })?,
        };
        return Ok(Level::Crs {
            parity_members: parity,
            w,
        });
    }
    for (flag, given) in [
        ("--data", data.is_some()),
        ("--parity", parity.is_some()),
        ("--w", w.is_some()),
    ] {
        if given {
            bail!("{flag} applies to --level crs only (RAID levels take their shape from the member count)");
        }
    }
    Ok(Level::parse(level_text)?)
}

/// The chunk size when --chunk is not given: 64 KiB, or w packets of
/// 16 KiB for CRS (its chunks are w packets of a power of two bytes).
pub fn default_chunk_bytes(level: Level) -> u64 {
    match level {
        Level::Crs { w, .. } => crs_default_chunk_bytes(w),
        _ => CHUNK_BYTES_DEFAULT,
    }
}

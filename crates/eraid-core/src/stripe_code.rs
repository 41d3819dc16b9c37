//! [`StripeCode`]: the erasure code of one array's stripes, whichever
//! family it comes from: GF(2^8) matrix codes (RAID-5, RAID-6, the RAID-10
//! copy) or Cauchy Reed-Solomon bit-matrix codes. The engine only encodes,
//! reconstructs and applies deltas; this type hides which code does it.

use crate::geometry::{Geometry, Level};
use eraid_codes::{CauchyReedSolomon, CodeError, MatrixCode};
use std::ops::Range;

#[derive(Clone, Debug)]
pub enum StripeCode {
    Matrix(MatrixCode),
    /// Operates on whole chunks only (`whole_chunks`).
    Crs(CauchyReedSolomon),
}

impl StripeCode {
    /// The code of `geometry`'s stripes; None for RAID-0 (no redundancy).
    /// Errs only for a CRS shape Jerasure cannot build (a geometry that
    /// passed `Geometry::new` always builds).
    pub fn for_geometry(geometry: &Geometry) -> Result<Option<StripeCode>, String> {
        let k = geometry.data_per_stripe();
        Ok(match geometry.level {
            Level::Raid0 => None,
            Level::Raid5 => Some(StripeCode::Matrix(MatrixCode::raid5(k))),
            Level::Raid6 => Some(StripeCode::Matrix(MatrixCode::raid6_pq(k))),
            // A mirror is a one-data-shard code whose "parity" is a copy.
            Level::Raid10 => Some(StripeCode::Matrix(MatrixCode::raid5(1))),
            Level::Crs { parity_members, w } => Some(StripeCode::Crs(
                CauchyReedSolomon::jerasure(k, parity_members, w).map_err(|e| e.to_string())?,
            )),
        })
    }

    /// The code of an array with `geometry` whose CRS layout was grown by
    /// `crs_growths` (oldest first; empty: never grown, `for_geometry`).
    pub fn for_array(
        geometry: &Geometry,
        crs_growths: &[crate::growth::scale_crs::CrsScaledShape],
    ) -> Result<Option<StripeCode>, String> {
        let (Level::Crs { parity_members, w }, Some(first)) = (geometry.level, crs_growths.first())
        else {
            return StripeCode::for_geometry(geometry);
        };
        let k = geometry.data_per_stripe();
        let matrix = crate::growth::scale_crs::crs_coding_matrix(
            first.old_data_members,
            parity_members,
            w,
            crs_growths,
        )?;
        if matrix.len() != k * parity_members {
            return Err(format!(
                "the recorded growths make {} data members, the geometry has {k}",
                matrix.len() / parity_members
            ));
        }
        Ok(Some(StripeCode::Crs(
            CauchyReedSolomon::from_matrix(k, parity_members, w, matrix)
                .map_err(|e| e.to_string())?,
        )))
    }

    /// Whether every parity shard is a plain copy of the one data shard (a
    /// mirror): then a write's parity is its data, shared, not computed.
    pub fn parity_is_data_copy(&self) -> bool {
        match self {
            StripeCode::Matrix(code) => {
                code.data_count() == 1 && code.coding_rows().iter().all(|&c| c == 1)
            }
            StripeCode::Crs(_) => false,
        }
    }

    /// Whether stripe operations must cover whole chunks (see
    /// `Level::whole_chunk_stripes`).
    pub fn whole_chunks(&self) -> bool {
        matches!(self, StripeCode::Crs(_))
    }

    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<(), CodeError> {
        match self {
            StripeCode::Matrix(code) => code.encode(data, parity),
            StripeCode::Crs(code) => code.encode(data, parity),
        }
    }

    pub fn reconstruct(&self, shards: &mut [&mut [u8]], present: &[bool]) -> Result<(), CodeError> {
        match self {
            StripeCode::Matrix(code) => code.reconstruct(shards, present),
            StripeCode::Crs(code) => code.reconstruct(shards, present),
        }
    }

    /// Read-modify-write from the old and new bytes of data shard
    /// `data_index` over `window` (indexes into the parity shards, which cover
    /// the stripe's whole row). A matrix code adds both into parity `window`
    /// in place with no delta buffer (`MatrixCode::update_parity`); CRS builds
    /// the delta and goes through `apply_delta_window`. Same parity either way.
    pub fn update_parity_window<P: std::ops::DerefMut<Target = [u8]>>(
        &self,
        data_index: usize,
        old_data: &[u8],
        new_data: &[u8],
        window: Range<usize>,
        parity: &mut [P],
    ) -> Result<(), CodeError> {
        assert_eq!(old_data.len(), window.len(), "old data spans its window");
        match self {
            StripeCode::Matrix(code) => {
                let mut refs: Vec<&mut [u8]> =
                    parity.iter_mut().map(|p| &mut p[window.clone()]).collect();
                code.update_parity(data_index, old_data, new_data, &mut refs)
            }
            StripeCode::Crs(_) => {
                let mut delta = old_data.to_vec();
                if delta.len() != new_data.len() {
                    return Err(CodeError::BadShape(format!(
                        "update_parity: old data has {} bytes, new data {}",
                        delta.len(),
                        new_data.len()
                    )));
                }
                eraid_codes::xor_into(&mut delta, new_data);
                self.apply_delta_window(data_index, &delta, window, parity)
            }
        }
    }

    /// Read-modify-write: `delta` (old XOR new data) covers bytes `window`
    /// of data shard `data_index`; every parity shard covers the stripe's
    /// whole row (`window` indexes into it). A matrix code updates parity
    /// bytes `window` only; a CRS parity packet mixes all packets, so its
    /// delta is widened to the whole row with zeroes (unchanged bytes).
    pub fn apply_delta_window<P: std::ops::DerefMut<Target = [u8]>>(
        &self,
        data_index: usize,
        delta: &[u8],
        window: Range<usize>,
        parity: &mut [P],
    ) -> Result<(), CodeError> {
        assert_eq!(delta.len(), window.len(), "delta spans its window");
        match self {
            StripeCode::Matrix(code) => {
                let mut refs: Vec<&mut [u8]> =
                    parity.iter_mut().map(|p| &mut p[window.clone()]).collect();
                code.apply_delta(data_index, delta, &mut refs)
            }
            StripeCode::Crs(code) => {
                let row_len = parity.first().map_or(0, |p| p.len());
                let mut wide = vec![0u8; row_len];
                wide[window].copy_from_slice(delta);
                let mut refs: Vec<&mut [u8]> = parity.iter_mut().map(|p| &mut p[..]).collect();
                code.apply_delta(data_index, &wide, &mut refs)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::ParityLayout;

    fn crs_geometry(members: usize, m: usize, w: usize) -> Geometry {
        let level = Level::Crs {
            parity_members: m,
            w,
        };
        Geometry::new(
            level,
            ParityLayout::LeftSymmetric,
            members,
            crate::geometry::crs_default_chunk_bytes(w),
            64 << 20,
        )
        .unwrap()
    }

    /// A partial-chunk delta applied through `apply_delta_window`, and the
    /// same change through `update_parity_window`, give the parity a full
    /// re-encode gives, for CRS (whose parity bytes depend on every packet)
    /// and for RAID-6.
    #[test]
    fn windowed_delta_equals_reencoding() {
        let raid6 =
            Geometry::new(Level::Raid6, ParityLayout::LeftSymmetric, 6, 4096, 64 << 20).unwrap();
        for geometry in [crs_geometry(6, 2, 3), crs_geometry(7, 3, 4), raid6] {
            let code = StripeCode::for_geometry(&geometry).unwrap().unwrap();
            let (k, m) = (geometry.data_per_stripe(), geometry.parity_per_stripe());
            let len = if code.whole_chunks() {
                geometry.chunk_bytes as usize
            } else {
                4096
            };
            let mut data: Vec<Vec<u8>> = (0..k)
                .map(|j| (0..len).map(|b| (b * 7 + j * 13) as u8).collect())
                .collect();
            let encode = |data: &[Vec<u8>]| {
                let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
                let mut parity = vec![vec![0u8; len]; m];
                let mut out: Vec<&mut [u8]> = parity.iter_mut().map(|p| p.as_mut_slice()).collect();
                code.encode(&refs, &mut out).unwrap();
                parity
            };
            let mut parity = encode(&data);
            let window = 1000..1700;
            let new: Vec<u8> = window.clone().map(|b| (b * 31) as u8).collect();
            let delta: Vec<u8> = data[1][window.clone()]
                .iter()
                .zip(&new)
                .map(|(a, b)| a ^ b)
                .collect();
            let mut by_update = parity.clone();
            code.apply_delta_window(1, &delta, window.clone(), &mut parity)
                .unwrap();
            code.update_parity_window(
                1,
                &data[1][window.clone()],
                &new,
                window.clone(),
                &mut by_update,
            )
            .unwrap();
            data[1][window].copy_from_slice(&new);
            assert_eq!(parity, encode(&data), "{:?}", geometry.level);
            assert_eq!(by_update, parity, "{:?}", geometry.level);
        }
    }
}

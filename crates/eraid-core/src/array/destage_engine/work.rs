//! One destage operation's plan and data: the status matrix Z of its unit,
//! the rxw-matrix M (basic, then contiguity-transformed under MSC-CT), the
//! cache snapshot taken under the stripe lock, the device read runs and
//! what they returned, and the computed writes.

use crate::cache::config::{CacheConfig, CachePolicy};
use crate::cache::matrix::{basic_rxw, BlockState, Ops, RowMethod, RxwMatrix, StatusMatrix};
use crate::cache::rules::check_rules;
use crate::cache::runs::{read_runs, write_runs, Run};
use crate::cache::store::{BlockKey, CacheStore, UnitKey};
use crate::cache::transform::{contiguity_transform, Added};
use crate::cache::BLOCK_BYTES;
use bytes::Bytes;
use eraid_codes::MatrixCode;
use rustc_hash::FxHashMap as HashMap;
use std::ops::Range;

const BLOCK: usize = BLOCK_BYTES as usize;

/// How a row's parity is made; `Degraded` reads every readable block of
/// the row and rebuilds what a missing member held (no transform then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Normal(RowMethod),
    Degraded,
}

pub(in crate::array) struct DestageWork {
    pub unit: UnitKey,
    /// The stripe rows the unit covers (all of them for a stripe unit).
    first_row: u32,
    row_count: usize,
    z: StatusMatrix,
    m: RxwMatrix,
    methods: Vec<Method>,
    /// (row, col) -> data and version, as cached when planned (shared
    /// with the cache, not copied: a later write to the block copies it).
    snapshot: HashMap<(usize, usize), (Bytes, u64)>,
    pub read_runs: Vec<Run>,
    read_bufs: Vec<Option<crate::io::ReadBuf>>,
    pub write_run_count: usize,
    pub added: Added,
    /// Dirty block versions this destage writes (or encodes into parity).
    pub written: Vec<(BlockKey, u64)>,
}

/// A computed device write: shard (column), intra-chunk byte range, bytes.
pub(in crate::array) type ShardWrite = (usize, Range<u64>, Bytes);

/// A block read with r, to cache as clean.
pub(in crate::array) type BlockFill = (BlockKey, Vec<u8>);

impl DestageWork {
    pub fn new(unit: UnitKey, rows_per_strip: usize) -> DestageWork {
        let (first_row, row_count) = match unit.row {
            Some(row) => (row, 1),
            None => (0, rows_per_strip),
        };
        DestageWork {
            unit,
            first_row,
            row_count,
            z: StatusMatrix::empty(0, 0),
            m: RxwMatrix::empty(0, 0, 0),
            methods: Vec::new(),
            snapshot: HashMap::default(),
            read_runs: Vec::new(),
            read_bufs: Vec::new(),
            write_run_count: 0,
            added: Added::default(),
            written: Vec::new(),
        }
    }

    fn key(&self, row: usize, col: usize) -> BlockKey {
        BlockKey {
            stripe: self.unit.stripe,
            row: self.first_row + row as u32,
            col: col as u32,
        }
    }

    /// Intra-chunk byte offset of a matrix row.
    pub fn row_offset_bytes(&self, row: usize) -> u64 {
        (self.first_row as u64 + row as u64) * BLOCK_BYTES
    }

    /// Plans under the stripe lock: snapshot, Z, M, the transform (MSC-CT,
    /// all members readable), the rules check, and the read runs.
    /// `readable` is per shard (data then parity).
    pub fn plan(
        &mut self,
        store: &CacheStore,
        config: &CacheConfig,
        k: usize,
        m: usize,
        readable: &[bool],
    ) {
        assert_eq!(readable.len(), k + m);
        self.snapshot.clear();
        self.written.clear();
        self.z = StatusMatrix::empty(self.row_count, k);
        for row in 0..self.row_count {
            for col in 0..k {
                let key = self.key(row, col);
                if let Some(entry) = store.get(key) {
                    self.snapshot
                        .insert((row, col), (entry.data.clone(), entry.version));
                    if entry.dirty {
                        self.written.push((key, entry.version));
                    }
                }
                self.z.set(row, col, store.state(key));
            }
        }
        self.added = Added::default();
        if readable.iter().all(|&r| r) {
            let (mut matrix, methods) = basic_rxw(&self.z, m);
            if config.policy == CachePolicy::MscCt {
                self.added = contiguity_transform(
                    &mut matrix,
                    &self.z,
                    &config.read_rule,
                    &config.write_rule,
                );
            }
            if let Err(violation) = check_rules(&self.z, &matrix) {
                panic!(
                    "destage plan breaks a rule: {violation:?}\nZ = {:?}\nM = {matrix:?}",
                    self.z
                );
            }
            self.m = matrix;
            self.methods = methods.into_iter().map(Method::Normal).collect();
        } else {
            self.plan_degraded(k, m, readable);
        }
        self.read_runs = read_runs(&self.m);
        self.read_bufs = vec![None; self.read_runs.len()];
        self.write_run_count = write_runs(&self.m).len();
    }

    fn plan_degraded(&mut self, k: usize, m: usize, readable: &[bool]) {
        let mut matrix = RxwMatrix::empty(self.row_count, k, m);
        self.methods = vec![Method::Normal(RowMethod::Idle); self.row_count];
        for row in 0..self.row_count {
            if !self.z.row_has_dirty(row) {
                continue;
            }
            self.methods[row] = Method::Degraded;
            for (col, &col_readable) in readable.iter().enumerate() {
                let dirty = col < k && self.z.get(row, col) == BlockState::Dirty;
                let mut ops = Ops::NONE;
                if col_readable {
                    ops.insert(if dirty { Ops::T } else { Ops::R });
                }
                if dirty {
                    ops.insert(Ops::W);
                }
                if col >= k {
                    ops.insert(Ops::DEST.with(Ops::W));
                }
                matrix.set(row, col, ops);
            }
        }
        self.m = matrix;
    }

    pub fn read_done(&mut self, run: usize, bytes: crate::io::ReadBuf) {
        assert_eq!(
            bytes.len(),
            self.read_runs[run].rows.len() * BLOCK,
            "short destage read"
        );
        self.read_bufs[run] = Some(bytes);
    }

    /// What the disk held, for blocks read (r or t).
    fn read_blocks(&self) -> HashMap<(usize, usize), &[u8]> {
        let mut blocks = HashMap::default();
        for (run, buf) in self.read_runs.iter().zip(&self.read_bufs) {
            let buf = buf.as_ref().expect("every destage read is in");
            for (n, row) in run.rows.clone().enumerate() {
                blocks.insert((row, run.col), &buf[n * BLOCK..(n + 1) * BLOCK]);
            }
        }
        blocks
    }

    /// Computes the new parity and the device writes. Returns the blocks
    /// to cache as clean (the r's) and the writes, or why it cannot.
    /// Each write run is laid out in a buffer from `buffers`: a fresh
    /// allocation per run (up to a strip) cost more in page faults and
    /// zeroing than the copy itself, under the engine lock.
    pub fn compute(
        &self,
        code: &MatrixCode,
        k: usize,
        m: usize,
        buffers: &eraid_buffers::BufferPool,
    ) -> Result<(Vec<BlockFill>, Vec<ShardWrite>), String> {
        let old = self.read_blocks();
        let cached = |row: usize, col: usize| self.snapshot.get(&(row, col)).map(|(d, _)| &d[..]);
        let mut parity: HashMap<(usize, usize), Vec<u8>> = HashMap::default();
        for row in 0..self.row_count {
            let new_parity: Vec<Vec<u8>> = match self.methods[row] {
                Method::Normal(RowMethod::Idle) => continue,
                Method::Normal(RowMethod::ReadModifyWrite) => {
                    let mut out: Vec<Vec<u8>> = (k..k + m)
                        .map(|p| old.get(&(row, p)).expect("old parity read").to_vec())
                        .collect();
                    for col in 0..k {
                        if self.z.get(row, col) != BlockState::Dirty {
                            continue;
                        }
                        let old_data = old.get(&(row, col)).expect("old data read (t)");
                        let new_data = cached(row, col).expect("dirty data");
                        let mut refs: Vec<&mut [u8]> =
                            out.iter_mut().map(|p| p.as_mut_slice()).collect();
                        code.update_parity(col, old_data, new_data, &mut refs)
                            .map_err(|e| e.to_string())?;
                    }
                    out
                }
                Method::Normal(RowMethod::ReconstructWrite) => {
                    let data: Vec<&[u8]> = (0..k)
                        .map(|col| {
                            cached(row, col)
                                .or_else(|| old.get(&(row, col)).copied())
                                .expect("reconstruct-write has every data block")
                        })
                        .collect();
                    encode(code, &data, m)?
                }
                Method::Degraded => {
                    let mut shards: Vec<Vec<u8>> = vec![vec![0; BLOCK]; k + m];
                    let mut present = vec![false; k + m];
                    for col in 0..k + m {
                        if let Some(bytes) = old.get(&(row, col)) {
                            shards[col].copy_from_slice(bytes);
                            present[col] = true;
                        }
                    }
                    let mut refs: Vec<&mut [u8]> =
                        shards.iter_mut().map(|s| s.as_mut_slice()).collect();
                    code.reconstruct(&mut refs, &present)
                        .map_err(|e| e.to_string())?;
                    for (col, shard) in shards.iter_mut().enumerate().take(k) {
                        if self.z.get(row, col) == BlockState::Dirty {
                            shard.copy_from_slice(cached(row, col).expect("dirty data"));
                        }
                    }
                    let data: Vec<&[u8]> = shards[..k].iter().map(|s| s.as_slice()).collect();
                    encode(code, &data, m)?
                }
            };
            for (p, bytes) in new_parity.into_iter().enumerate() {
                parity.insert((row, k + p), bytes);
            }
        }
        let mut fills = Vec::new();
        for row in 0..self.row_count {
            for col in 0..k {
                if self.m.get(row, col).has(Ops::R) {
                    if let Some(bytes) = old.get(&(row, col)) {
                        fills.push((self.key(row, col), bytes.to_vec()));
                    }
                }
            }
        }
        let mut writes = Vec::new();
        for run in write_runs(&self.m) {
            let mut bytes = buffers.take(run.rows.len() * BLOCK);
            for (index, row) in run.rows.clone().enumerate() {
                let block = if run.col >= k {
                    parity
                        .get(&(row, run.col))
                        .map(|p| p.as_slice())
                        .or_else(|| old.get(&(row, run.col)).copied())
                } else {
                    cached(row, run.col).or_else(|| old.get(&(row, run.col)).copied())
                };
                // The rules check guaranteed a source for every w.
                // Every block of the buffer is filled: a reused buffer's
                // old bytes never reach a member.
                bytes[index * BLOCK..(index + 1) * BLOCK]
                    .copy_from_slice(block.expect("a written block has data"));
            }
            let start = self.row_offset_bytes(run.rows.start);
            writes.push((run.col, start..start + bytes.len() as u64, bytes.freeze()));
        }
        Ok((fills, writes))
    }
}

fn encode(code: &MatrixCode, data: &[&[u8]], m: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut out = vec![vec![0u8; BLOCK]; m];
    let mut refs: Vec<&mut [u8]> = out.iter_mut().map(|p| p.as_mut_slice()).collect();
    code.encode(data, &mut refs).map_err(|e| e.to_string())?;
    Ok(out)
}

//! A deliberately simple SSD: `channels` independent channels, each serving
//! one command at a time in `latency + bytes / bandwidth`. A command goes to
//! the channel that frees first (lowest index on ties), in arrival order.

use super::model::{DiskCompletion, DiskRequest, SubmitError};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SsdSpec {
    pub capacity_sectors: u64,
    pub channels: usize,
    pub read_latency_us: f64,
    pub write_latency_us: f64,
    /// Bandwidth of one channel in MB/s (10^6 bytes per second).
    pub read_mb_per_s_per_channel: f64,
    pub write_mb_per_s_per_channel: f64,
}

impl SsdSpec {
    /// A generic SATA-era SSD: 8 channels, 60 us reads, 200 us writes,
    /// 60 MB/s read and 30 MB/s write per channel (about 480/240 MB/s total).
    /// Illustrative figures, not a specific product.
    pub fn generic(capacity_sectors: u64) -> Self {
        SsdSpec {
            capacity_sectors,
            channels: 8,
            read_latency_us: 60.0,
            write_latency_us: 200.0,
            read_mb_per_s_per_channel: 60.0,
            write_mb_per_s_per_channel: 30.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SsdModel {
    spec: SsdSpec,
    channel_free_ns: Vec<u64>,
    now_ns: u64,
    seq: u64,
    pending: Vec<(u64, u64, DiskCompletion)>,
}

impl SsdModel {
    pub fn new(spec: SsdSpec) -> Self {
        SsdModel {
            channel_free_ns: vec![0; spec.channels.max(1)],
            spec,
            now_ns: 0,
            seq: 0,
            pending: Vec::new(),
        }
    }
    pub fn capacity_sectors(&self) -> u64 {
        self.spec.capacity_sectors
    }

    pub fn submit(&mut self, now_ns: u64, req: DiskRequest) -> Result<(), SubmitError> {
        if now_ns < self.now_ns {
            return Err(SubmitError::TimeWentBackwards {
                id: req.id,
                now_ns,
                model_ns: self.now_ns,
            });
        }
        if req.sectors == 0 {
            return Err(SubmitError::Empty { id: req.id });
        }
        let end = req.lbn.saturating_add(u64::from(req.sectors));
        if end > self.spec.capacity_sectors {
            return Err(SubmitError::OutOfRange {
                id: req.id,
                lbn: req.lbn,
                end,
                capacity: self.spec.capacity_sectors,
            });
        }
        self.now_ns = now_ns;
        let (lat_us, mb_s) = if req.is_read {
            (
                self.spec.read_latency_us,
                self.spec.read_mb_per_s_per_channel,
            )
        } else {
            (
                self.spec.write_latency_us,
                self.spec.write_mb_per_s_per_channel,
            )
        };
        let bytes = f64::from(req.sectors) * 512.0;
        let service_ns = (lat_us * 1e3 + bytes / mb_s.max(1e-9) * 1e3).ceil() as u64;
        let (ch, free) = self
            .channel_free_ns
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, f)| (f, i))
            .unwrap_or((0, 0));
        let finish_ns = free.max(now_ns) + service_ns;
        self.channel_free_ns[ch] = finish_ns;
        self.seq += 1;
        let c = DiskCompletion {
            id: req.id,
            submit_ns: now_ns,
            finish_ns,
            cache_hit: false,
            seek_cyls: 0,
        };
        self.pending.push((finish_ns, self.seq, c));
        Ok(())
    }

    pub fn next_event_ns(&self) -> Option<u64> {
        self.pending.iter().map(|p| p.0).min()
    }

    pub fn advance(&mut self, now_ns: u64) -> Vec<DiskCompletion> {
        self.now_ns = self.now_ns.max(now_ns);
        let mut done: Vec<_> = self
            .pending
            .iter()
            .filter(|p| p.0 <= now_ns)
            .copied()
            .collect();
        self.pending.retain(|p| p.0 > now_ns);
        done.sort_by_key(|p| (p.0, p.1));
        done.into_iter().map(|p| p.2).collect()
    }
}

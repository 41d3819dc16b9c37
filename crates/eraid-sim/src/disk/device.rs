//! One type for "a member disk" whatever its kind, so the simulator's event
//! loop treats hard disks and SSDs alike.

use super::model::{DiskCompletion, DiskModel, DiskRequest, SubmitError};
use super::ssd::SsdModel;

#[derive(Debug, Clone)]
pub enum Device {
    Hdd(Box<DiskModel>),
    Ssd(SsdModel),
}

impl Device {
    pub fn capacity_sectors(&self) -> u64 {
        match self {
            Device::Hdd(d) => d.capacity_sectors(),
            Device::Ssd(s) => s.capacity_sectors(),
        }
    }
    pub fn submit(&mut self, now_ns: u64, req: DiskRequest) -> Result<(), SubmitError> {
        match self {
            Device::Hdd(d) => d.submit(now_ns, req),
            Device::Ssd(s) => s.submit(now_ns, req),
        }
    }
    pub fn next_event_ns(&self) -> Option<u64> {
        match self {
            Device::Hdd(d) => d.next_event_ns(),
            Device::Ssd(s) => s.next_event_ns(),
        }
    }
    pub fn advance(&mut self, now_ns: u64) -> Vec<DiskCompletion> {
        match self {
            Device::Hdd(d) => d.advance(now_ns),
            Device::Ssd(s) => s.advance(now_ns),
        }
    }
}

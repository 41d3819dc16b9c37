//! Which stripe a rebuild starts next: address order (PR, DOR) or PRO's
//! hot zones (`zone_scheduler`).

use super::rebuilt_map::RebuiltMap;
use super::zone_scheduler::ZoneScheduler;
use crate::io::TimeNs;
use crate::rebuild::config::RebuildConfig;

pub(in crate::array) enum RebuildOrder {
    /// The next stripe in address order not yet rebuilt nor in flight.
    Address {
        next: u64,
    },
    Zones(Box<ZoneScheduler>),
}

impl RebuildOrder {
    /// The order `config` asks for; a zone is `hot_zone_bytes` of each
    /// replacement, `member_bytes_per_stripe` of it per stripe.
    pub fn new(config: &RebuildConfig, total_stripes: u64, member_data_bytes: u64) -> RebuildOrder {
        if !config.strategy.by_popularity() {
            return RebuildOrder::Address { next: 0 };
        }
        let zone_stripes = (config.hot_zone_bytes as u128 * total_stripes as u128
            / member_data_bytes.max(1) as u128)
            .clamp(1, total_stripes.max(1) as u128) as u64;
        RebuildOrder::Zones(Box::new(ZoneScheduler::new(
            total_stripes,
            zone_stripes,
            config.time_slice_ms,
            config.popularity_half_life_ms,
        )))
    }

    pub fn next(
        &mut self,
        now: TimeNs,
        map: &RebuiltMap,
        total: u64,
        busy: &dyn Fn(u64) -> bool,
    ) -> Option<u64> {
        match self {
            RebuildOrder::Address { next } => {
                while *next < total && (map.is_rebuilt(*next) || busy(*next)) {
                    *next += 1;
                }
                (*next < total).then_some(*next)
            }
            RebuildOrder::Zones(zones) => zones.next(now, map, busy),
        }
    }

    pub fn zones(&mut self) -> Option<&mut ZoneScheduler> {
        match self {
            RebuildOrder::Zones(zones) => Some(zones),
            RebuildOrder::Address { .. } => None,
        }
    }

    pub fn zones_ref(&self) -> Option<&ZoneScheduler> {
        match self {
            RebuildOrder::Zones(zones) => Some(zones),
            RebuildOrder::Address { .. } => None,
        }
    }
}

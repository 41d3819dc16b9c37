//! Members joining or leaving a running array: a growth's new slots, a
//! replacement or hot spare, a removal. The pool's device table and the
//! machine's device numbers must stay lined up through each.

use std::sync::Arc;

use eraid_core::growth::config::ReshapeConfig;
use eraid_core::io::{AdminCommand, TimeNs};

use super::state::EngineState;
use crate::handle::{GrowError, GrowMember, MemberChangeError, RemovedMember};
use crate::io_pool::default_io_threads;
use crate::member_io::DetachedMember;
use crate::stats::{IoCounters, MemberStats};

impl EngineState {
    /// Serves `members` as new slots, then asks the machine to grow onto
    /// them; drops them again if it refuses.
    pub(crate) fn grow(
        &mut self,
        members: Vec<GrowMember>,
        config: ReshapeConfig,
    ) -> Result<serde_json::Value, GrowError> {
        if self.closing {
            return Err(GrowError::ShuttingDown);
        }
        let now = self.now();
        let Some(pool) = self.pool.as_ref() else {
            return Err(GrowError::ShuttingDown);
        };
        let first = pool.member_count();
        if let Err(reason) = self.devices_line_up(now, first) {
            return Err(GrowError::Refused(reason));
        }
        let (devices, new_members): (Vec<_>, Vec<_>) =
            members.into_iter().map(|m| (m.device, m.member)).unzip();
        let labels: Vec<String> = devices.iter().map(|d| d.label().to_string()).collect();
        self.pool
            .as_ref()
            .expect("checked above")
            .add_members(devices);
        self.shared
            .stats()
            .by_member
            .extend(labels.into_iter().map(|label| MemberStats {
                label,
                io: IoCounters::default(),
            }));
        let answer = self.machine.handle_admin(
            now,
            AdminCommand::StartGrow {
                members: new_members,
                config,
            },
        );
        self.keep_or_drop_new_devices(first, &answer)
            .map_err(GrowError::Refused)?;
        let pool = self.pool.as_ref().expect("checked above");
        tracing::info!(
            added = pool.member_count() - first,
            members = pool.member_count(),
            "growth started"
        );
        Ok(answer)
    }

    /// The machine numbers new devices from its own count
    /// (`device_count` in its status): the pool must line up with it.
    fn devices_line_up(&mut self, now: TimeNs, served: usize) -> Result<(), String> {
        let status = self.machine.handle_admin(now, AdminCommand::Status);
        let count = status
            .get("device_count")
            .or_else(|| status.get("member_count"))
            .and_then(|c| c.as_u64());
        match count {
            Some(count) if count != served as u64 => Err(format!(
                "the engine serves {served} devices but the array counts {count}"
            )),
            _ => Ok(()),
        }
    }

    /// Serves `member` as the next device, then asks the machine to add it
    /// (a replacement, or a spare); drops it again if it refuses.
    pub(crate) fn add_member(
        &mut self,
        member: GrowMember,
        spare: bool,
        replaces: Option<usize>,
    ) -> Result<serde_json::Value, MemberChangeError> {
        if self.closing {
            return Err(MemberChangeError::ShuttingDown);
        }
        let now = self.now();
        let Some(pool) = self.pool.as_ref() else {
            return Err(MemberChangeError::ShuttingDown);
        };
        let first = pool.member_count();
        self.devices_line_up(now, first)
            .map_err(MemberChangeError::Refused)?;
        let label = member.device.label().to_string();
        let pool = self.pool.as_ref().expect("checked above");
        pool.add_members(vec![member.device]);
        self.shared.stats().by_member.push(MemberStats {
            label: label.clone(),
            io: IoCounters::default(),
        });
        let command = match replaces {
            Some(slot) => AdminCommand::ReplaceMember {
                slot,
                member: member.member,
            },
            None => AdminCommand::AddMember {
                member: member.member,
                spare,
            },
        };
        let answer = self.machine.handle_admin(now, command);
        self.keep_or_drop_new_devices(first, &answer)
            .map_err(MemberChangeError::Refused)?;
        tracing::info!(spare, "member {label} added");
        Ok(answer)
    }

    /// Asks the machine to remove member `slot`; the device it used (as
    /// the status said before) is then replaced by a stand-in.
    pub(crate) fn remove_member(
        &mut self,
        slot: usize,
    ) -> Result<RemovedMember, MemberChangeError> {
        if self.closing || self.pool.is_none() {
            return Err(MemberChangeError::ShuttingDown);
        }
        let now = self.now();
        let before = self.machine.handle_admin(now, AdminCommand::Status);
        let device = before["members"]
            .as_array()
            .and_then(|members| members.iter().find(|m| m["index"] == slot))
            .and_then(|m| m["device"].as_u64())
            .map(|d| d as usize);
        let status = self
            .machine
            .handle_admin(now, AdminCommand::RemoveMember { slot });
        if let Some(error) = status.get("error") {
            let reason = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(MemberChangeError::Refused(reason));
        }
        // The machine no longer addresses the device unless a member or
        // spare in use still maps to it (a failed slot keeps its device
        // number, but nothing is issued to it).
        let in_use = |m: &serde_json::Value| {
            matches!(m["state"].as_str(), Some("active" | "rebuilding" | "spare"))
        };
        let still_used = status["members"].as_array().is_some_and(|members| {
            members
                .iter()
                .any(|m| in_use(m) && m["device"].as_u64() == device.map(|d| d as u64))
        });
        let released_device = device.filter(|_| !still_used);
        if let (Some(device), Some(pool)) = (released_device, &self.pool) {
            pool.replace_member(
                device,
                Arc::new(DetachedMember {
                    label: format!("removed device {device}"),
                }),
            );
        }
        Ok(RemovedMember {
            status,
            released_device,
        })
    }

    /// After the machine answered a command that added devices from slot
    /// `first` on: if it refused (its reason is returned), the devices are
    /// dropped again (it changed nothing, so no I/O addresses them);
    /// otherwise the pool gets workers for them.
    fn keep_or_drop_new_devices(
        &mut self,
        first: usize,
        answer: &serde_json::Value,
    ) -> Result<(), String> {
        let pool = self.pool.as_mut().expect("the caller checked the pool");
        if let Some(error) = answer.get("error") {
            pool.truncate_members(first);
            self.shared.stats().by_member.truncate(first);
            return Err(error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string));
        }
        if !self.io_threads_fixed {
            let wanted = default_io_threads(pool.member_count());
            if let Err(error) = pool.ensure_threads(wanted) {
                tracing::warn!("cannot start more I/O workers for the new members: {error}");
            }
        }
        Ok(())
    }
}

//! The sequential transfer rate of a drive model, measured rather than
//! computed from its datasheet, so zones, skews, head switches and the
//! drive's cache all count as they do in the simulation.
//!
//! A fresh drive streams 4 MiB commands (four outstanding, as a streaming
//! host keeps it busy) over 16 MiB at each of four places spread over the
//! span the members use; the rate is total bytes over total time, reads and
//! writes separately.

use super::disk_choice::DiskChoice;
use super::growth::SequentialRates;
use crate::disk::DiskRequest;

const COMMAND_BYTES: u64 = 4 << 20;
const RUN_BYTES: u64 = 16 << 20;
const PLACES: u64 = 4;
const OUTSTANDING: u64 = 4;

/// Measures `disk` over `[start_bytes, end_bytes)`.
pub fn measure(
    disk: &DiskChoice,
    start_bytes: u64,
    end_bytes: u64,
) -> Result<SequentialRates, String> {
    Ok(SequentialRates {
        read_bytes_s: rate(disk, start_bytes, end_bytes, true)?,
        write_bytes_s: rate(disk, start_bytes, end_bytes, false)?,
    })
}

fn rate(disk: &DiskChoice, start_bytes: u64, end_bytes: u64, is_read: bool) -> Result<f64, String> {
    let span = end_bytes.saturating_sub(start_bytes);
    let run = RUN_BYTES
        .min(span / PLACES / COMMAND_BYTES * COMMAND_BYTES)
        .max(COMMAND_BYTES);
    let mut total_bytes = 0u64;
    let mut total_ns = 0u64;
    for place in 0..PLACES {
        let offset = start_bytes + (span.saturating_sub(run)) * place / (PLACES - 1).max(1);
        let offset = offset / 4096 * 4096;
        let mut device = disk.build()?;
        let commands = run / COMMAND_BYTES;
        let mut next = 0u64;
        let mut done = 0u64;
        let mut now = 0u64;
        let submit = |device: &mut crate::disk::Device, i: u64, now: u64| {
            device
                .submit(
                    now,
                    DiskRequest {
                        id: i,
                        lbn: (offset + i * COMMAND_BYTES) / 512,
                        sectors: (COMMAND_BYTES / 512) as u32,
                        is_read,
                    },
                )
                .map_err(|e| e.to_string())
        };
        while next < commands.min(OUTSTANDING) {
            submit(&mut device, next, now)?;
            next += 1;
        }
        while done < commands {
            let Some(t) = device.next_event_ns() else {
                return Err("the drive model went idle during the rate measurement".into());
            };
            now = now.max(t);
            for _ in device.advance(now) {
                done += 1;
                if next < commands {
                    submit(&mut device, next, now)?;
                    next += 1;
                }
            }
        }
        total_bytes += commands * COMMAND_BYTES;
        total_ns += now;
    }
    Ok(total_bytes as f64 / (total_ns.max(1) as f64 / 1e9))
}

//! Reader for DiskSim 4.0 drive descriptions.
//!
//! [`parse_diskspecs`] reads the first `disksim_disk` block of a `.diskspecs`
//! text; [`parse_parv`] reads a run file (`.parv`): the first disk of its
//! topology and the bus that disk sits on. The files they name (`source X`,
//! `Model = source X.model`, `Full seek curve = X.seek`) are fetched through
//! a resolver the caller supplies, so parsing itself touches no files.
//! [`load_disksim_model`] is the convenience that reads them from disk.
//!
//! Every error names the file and the line.
//!
//! # Parameters read
//!
//! `.parv`: source, instantiate, topology (first `disksim_disk` and the
//! `disksim_bus` above it); `disksim_bus`: Read / Write block transfer time.
//!
//! `disksim_disk`: Model; Time scale for overheads; Bulk sector transfer
//! time; Max queue length; Scheduler / Scheduling policy; Number of buffer
//! segments; Segment size (in blks); Enable caching in buffer; Buffer
//! continuous read; Minimum / Maximum read-ahead (blks); Read-ahead over
//! requested; High (read) water mark; Set watermark by reqsize; Immed
//! transfer partial hit; Fast write level; Allow read hits on write data;
//! Combine seq writes; the eight
//! `Read|Write hit|miss over. after read|write` overheads; Read / Write
//! completion overhead; Data preparation overhead; First reselect
//! overhead; Minimum seek delay.
//!
//! `dm_disk`: Number of data surfaces; Layout Model (`dm_layout_g1`:
//! LBN-to-PBN mapping scheme (0, 1, 2), Sparing scheme used (0 to 10),
//! Rangesize for sparing, Skew units, Zones: First/Last cylinder number,
//! Blocks per track, Offset of first block, Empty space at zone front, Skew
//! for track switch, Skew for cylinder switch, Number of spares, slips,
//! defects); Mechanical Model (`dm_mech_g1`: Seek type (`extracted`, `hpl`,
//! `hplplus10`), Full seek curve, HPL seek equation values, First ten seek
//! times, Head switch time, Add. write settling delay, Rotation speed (in
//! rpms)).
//!
//! Everything else is ignored; `IGNORED.md` beside this file lists those
//! parameters and why.

mod diskspecs_file;
mod error;
mod fields;
mod load;
mod model_file;
mod parv_file;
mod seek_table;
pub mod syntax;

pub use error::SpecError;
pub use load::load_disksim_model;
pub use parv_file::parse_parv;
pub use seek_table::parse_seek_table;

use crate::disk::DiskSpec;

/// Returns the text of a file named inside a model file (relative names are
/// the caller's business), or a message saying why it cannot.
pub type Resolver<'a> = dyn FnMut(&str) -> Result<String, String> + 'a;

/// Parses the first `disksim_disk` block of a `.diskspecs` text.
pub fn parse_diskspecs(
    file: &str,
    text: &str,
    resolve: &mut Resolver<'_>,
) -> Result<DiskSpec, SpecError> {
    let blocks = syntax::parse_blocks(file, text)?;
    let disk = blocks
        .iter()
        .find(|b| b.type_name == "disksim_disk")
        .ok_or_else(|| SpecError::new(file, 1, "no 'disksim_disk' block"))?;
    diskspecs_file::read_disk(file, disk, resolve)
}

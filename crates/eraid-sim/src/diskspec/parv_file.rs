//! DiskSim run files (`.parv`): the first disk of the `topology`, read from
//! the `disksim_disk` spec it is instantiated as, with the transfer times of
//! the bus it hangs from (DiskSim moves each sector at the slower of the
//! disk's "Bulk sector transfer time" and that bus's block transfer time).
//! Controllers and other buses are taken as pass-through.

use super::diskspecs_file::read_disk;
use super::fields::Fields;
use super::syntax::{parse_top_level, Block, TopItem, TopoNode};
use super::{Resolver, SpecError};
use crate::disk::DiskSpec;

/// `source` files may include others; a chain this deep is a loop.
const MAX_SOURCE_DEPTH: usize = 16;

#[derive(Default)]
struct RunFile {
    /// Every block, with the file it came from.
    blocks: Vec<(String, Block)>,
    /// (file, line, instance names, spec name).
    instances: Vec<(String, usize, Vec<String>, String)>,
    topology: Option<(String, TopoNode)>,
}

impl RunFile {
    fn read(
        &mut self,
        file: &str,
        text: &str,
        resolve: &mut Resolver<'_>,
        depth: usize,
    ) -> Result<(), SpecError> {
        for item in parse_top_level(file, text)? {
            match item {
                TopItem::Block(b) => self.blocks.push((file.to_string(), b)),
                TopItem::Source { file: name, line } => {
                    if depth >= MAX_SOURCE_DEPTH {
                        return Err(SpecError::new(
                            file,
                            line,
                            format!("'source {name}' nests too deep (a loop?)"),
                        ));
                    }
                    let text = resolve(&name).map_err(|m| {
                        SpecError::new(file, line, format!("cannot read '{name}': {m}"))
                    })?;
                    self.read(&name, &text, resolve, depth + 1)?;
                }
                TopItem::Instantiate { names, spec, line } => {
                    self.instances.push((file.to_string(), line, names, spec))
                }
                TopItem::Topology(t) => {
                    if self.topology.is_none() {
                        self.topology = Some((file.to_string(), t));
                    }
                }
            }
        }
        Ok(())
    }

    /// The block of type `type_name` that component `instance` is an
    /// instance of; errors point at the topology line naming it.
    fn spec_block(
        &self,
        topo_file: &str,
        node: &TopoNode,
        type_name: &str,
    ) -> Result<(&str, &Block), SpecError> {
        let (_, _, _, spec) = self
            .instances
            .iter()
            .find(|i| i.2.contains(&node.name))
            .ok_or_else(|| {
                SpecError::new(
                    topo_file,
                    node.line,
                    format!("'{}' is never instantiated", node.name),
                )
            })?;
        self.blocks
            .iter()
            .find(|(_, b)| b.type_name == type_name && b.name.as_deref() == Some(spec.as_str()))
            .map(|(f, b)| (f.as_str(), b))
            .ok_or_else(|| {
                SpecError::new(
                    topo_file,
                    node.line,
                    format!("'{}' is an instance of '{spec}', but no '{type_name} {spec}' block is defined", node.name),
                )
            })
    }
}

/// The first disk in the tree, with its parent component.
fn first_disk<'a>(
    node: &'a TopoNode,
    parent: Option<&'a TopoNode>,
) -> Option<(&'a TopoNode, Option<&'a TopoNode>)> {
    if node.type_name == "disksim_disk" {
        return Some((node, parent));
    }
    node.children.iter().find_map(|c| first_disk(c, Some(node)))
}

/// Reads the disk of a `.parv` text; `file` names it in errors.
pub fn parse_parv(
    file: &str,
    text: &str,
    resolve: &mut Resolver<'_>,
) -> Result<DiskSpec, SpecError> {
    let mut run = RunFile::default();
    run.read(file, text, resolve, 0)?;
    let (topo_file, topology) = run
        .topology
        .as_ref()
        .ok_or_else(|| SpecError::new(file, 1, "no 'topology' in the run file"))?;
    let (disk, parent) = first_disk(topology, None).ok_or_else(|| {
        SpecError::new(
            topo_file,
            topology.line,
            "the topology holds no 'disksim_disk'",
        )
    })?;
    let (disk_file, disk_block) = run.spec_block(topo_file, disk, "disksim_disk")?;
    let mut spec = read_disk(disk_file, disk_block, resolve)?;
    if let Some(bus) = parent.filter(|p| p.type_name == "disksim_bus") {
        let (bus_file, bus_block) = run.spec_block(topo_file, bus, "disksim_bus")?;
        let f = Fields::new(bus_file, bus_block);
        spec.bus_read_ms_per_sector = spec
            .bus_read_ms_per_sector
            .max(f.non_negative("Read block transfer time")?);
        spec.bus_write_ms_per_sector = spec
            .bus_write_ms_per_sector
            .max(f.non_negative("Write block transfer time")?);
    }
    Ok(spec)
}

//! The array's journal as the CLI sees it: made at `create --journal`,
//! found again from the superblock at every start, checked against it,
//! and the cache settings (`--cache`, `--cache-size`).

use crate::output::say;
use anyhow::{bail, Result};
use eraid_core::cache::config::{CacheConfig, CachePolicy};
use eraid_core::geometry::Geometry;
use eraid_core::metadata::superblock::Superblock;
use eraid_driver::journal_file::{open_journal, OpenedJournal};
use std::path::Path;

/// The cache size when none is given: an eighth of the machine's memory,
/// at most the paper's 512 MiB.
pub fn default_cache_bytes() -> u64 {
    let paper_bytes = 512 << 20;
    let total_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    match total_bytes {
        Some(total) => (total / 8).clamp(16 << 20, paper_bytes),
        None => paper_bytes,
    }
}

/// The cache a start uses: `policy`/`size_bytes` given, else what create
/// recorded, else none. A write-back policy needs the journal.
pub fn cache_config(
    superblock: &Superblock,
    geometry: &Geometry,
    policy: Option<&str>,
    size_bytes: Option<u64>,
) -> Result<CacheConfig> {
    let recorded = superblock.cache.as_ref();
    let policy = match policy.or(recorded.map(|c| c.policy.as_str())) {
        Some(name) => CachePolicy::parse(name).map_err(anyhow::Error::msg)?,
        None => CachePolicy::None,
    };
    let journal_usable = superblock
        .journal
        .as_ref()
        .is_some_and(|j| j.failed.is_none());
    if policy != CachePolicy::None && !journal_usable {
        match &superblock.journal {
            Some(journal) => bail!(
                "the write-back cache {} needs the journal, but {} failed earlier ({}): \
                 serve with --cache none",
                policy.name(),
                journal.path_hint,
                journal.failed.as_deref().unwrap_or("")
            ),
            None => bail!(
                "the write-back cache {} needs a journal (an acknowledged write held only in \
                 memory would be lost in a crash); this array has none: create it with \
                 --journal PATH, or serve with --cache none",
                policy.name()
            ),
        }
    }
    let mut config = CacheConfig {
        policy,
        size_bytes: size_bytes
            .or(recorded.map(|c| c.size_bytes))
            .unwrap_or_else(default_cache_bytes),
        ..CacheConfig::default()
    };
    // The rule create or `eraid tune` recorded (none in superblocks
    // written before it was: the default stays).
    if let Some(stride) = recorded.and_then(|c| c.stride.as_ref()) {
        config.read_rule = stride.read_rule();
        config.write_rule = stride.write_rule();
    }
    config
        .validate(geometry)
        .map_err(|e| anyhow::anyhow!("--cache: {e}"))?;
    Ok(config)
}

/// Opens and checks the journal the superblock records (None: it has
/// none, or it failed earlier and is not replayed again). The error names
/// the journal and what does not match; a journal that does not match is
/// not written to. One that does has the free part of its log zeroed
/// (`clear_leftovers`: only bytes no record to replay holds).
pub fn open_recorded(
    superblock: &Superblock,
    path: Option<&Path>,
) -> Result<Option<OpenedJournal>> {
    let Some(record) = &superblock.journal else {
        if let Some(path) = path {
            bail!(
                "--journal {}: this array was created without a journal",
                path.display()
            );
        }
        return Ok(None);
    };
    if let Some(reason) = &record.failed {
        say!(
            "warning: the journal {} failed earlier ({reason}); serving without it, \
             write-through (the write hole is open)",
            record.path_hint
        );
        return Ok(None);
    }
    let path = path.unwrap_or(Path::new(&record.path_hint));
    let name = path.display();
    let opened = open_journal(path).map_err(anyhow::Error::msg)?;
    let header = &opened.setup.header;
    if header.journal_id != record.journal_id || header.array_uuid != superblock.array_uuid {
        bail!(
            "{name} is not this array's journal (its header names array {} journal {:x}; \
             the array {} records journal {:x})",
            header.array_uuid,
            header.journal_id,
            superblock.array_uuid,
            record.journal_id
        );
    }
    if header.size_bytes != record.size_bytes {
        bail!(
            "journal {name} says it is {} bytes but the array recorded {}",
            header.size_bytes,
            record.size_bytes
        );
    }
    eraid_driver::journal_file::clear_leftovers(&opened).map_err(anyhow::Error::msg)?;
    Ok(Some(opened))
}

//! `eraid create`: write a new array's metadata onto its members.

use crate::members::check_distinct;
use crate::size::parse_size_bytes;
use anyhow::{bail, Context, Result};
use clap::Args;
use eraid_core::cache::config::CachePolicy;
use eraid_core::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
use eraid_core::metadata::create::{initial_writes, new_superblock, NewMember};
use eraid_core::metadata::superblock::Superblock;
use eraid_driver::{read_metadata_area, write_at_sync, MemberDevice, MemberFile, MemberOptions};
use std::path::{Path, PathBuf};

/// Create a new array on member files or block devices
///
/// Member files that do not exist are created (sparse) with --size. A member
/// that already belongs to an eraid array is refused unless --force; so are
/// impossible geometries (too few members, a chunk that is not a power of two
/// from 4K to 4M, members of unequal size without --size). Nothing is written
/// until every check has passed. Members that held data before are fully
/// resynchronised on the first start. --spare adds hot spares (checked as
/// the members, and at least as large), recorded in the superblocks as
/// `eraid add --spare` records them:
///   eraid create --level 5 --size 64M d0 d1 d2 d3 --spare d4
///
/// CRS (Cauchy Reed-Solomon): `--level crs --data K --parity M [--w W]`
/// stores k data and m parity chunks per stripe on k + m members and
/// survives any m missing members. Each chunk is cut into w packets and
/// parity is computed by XORs over GF(2^w) with Jerasure's cauchy_good
/// matrix; w defaults to the smallest with k + m <= 2^w (as Jerasure picks
/// it: 2 for up to 4 members, 3 up to 8, 4 up to 16, ...). A CRS chunk is w
/// packets of a power of two bytes (default w x 16K, e.g. 48K for w = 3).
/// Writes smaller than a chunk read and rewrite whole parity chunks
/// (read-modify-write over the chunk), since each parity packet depends on
/// every packet of the data chunk. CRS arrays grow (again and again) with
/// `eraid grow --strategy scale-crs|epu [--matrix jerasure|optimized]`.
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct CreateArgs {
    /// RAID level: 0 (striping), 5 (single parity), 6 (P+Q), 10 (mirrored
    /// pairs, near layout), or crs (Cauchy Reed-Solomon, with --data and --parity).
    #[arg(long)]
    level: String,
    /// CRS: data members per stripe (k).
    #[arg(long, value_name = "K")]
    data: Option<usize>,
    /// CRS: parity members per stripe (m); any m members may be missing.
    #[arg(long, value_name = "M")]
    parity: Option<usize>,
    /// CRS: packets per chunk, the field GF(2^w) (2 to 8; default the
    /// smallest with k + m <= 2^w).
    #[arg(long, value_name = "W")]
    w: Option<usize>,
    /// Chunk size, a power of two from 4K to 4M (default 64K); for CRS,
    /// w packets of a power of two bytes (default w x 16K).
    #[arg(long)]
    chunk: Option<String>,
    /// Parity layout for RAID-5/6: left-symmetric (default, as Linux MD),
    /// left-asymmetric, right-asymmetric, right-symmetric.
    #[arg(long)]
    layout: Option<String>,
    /// Size of each member; creates missing member files (sparse) of this
    /// size, and uses only this much of larger members.
    #[arg(long)]
    size: Option<String>,
    /// Overwrite members that already belong to an eraid array.
    #[arg(long)]
    force: bool,
    /// Hot spares (files or block devices, created with --size if missing):
    /// recorded in the superblocks, they take over a member that fails.
    /// Put the members first, or end the --spare list with `--`.
    #[arg(long = "spare", value_name = "NEW", num_args = 1..)]
    spares: Vec<PathBuf>,
    /// A journal for the write-back cache (RAID-5/6), on a file or block
    /// device that is not a member: writes are acknowledged once durable
    /// in it, and it is replayed after a crash (closing the write hole).
    /// A missing file is created with --journal-size.
    #[arg(long, value_name = "PATH")]
    journal: Option<PathBuf>,
    /// Size of a journal file created by --journal (default 256M). A write
    /// longer than half of it is refused (EINVAL), a limit `serve`
    /// advertises as the export's maximum block size.
    #[arg(long, value_name = "SIZE")]
    journal_size: Option<String>,
    /// Write-back cache policy recorded for serve: none, pbgc, sc or msc-ct
    /// (default msc-ct with --journal, else none; a write-back policy
    /// needs --journal).
    #[arg(long, value_name = "POLICY")]
    cache: Option<String>,
    /// Cache size recorded for serve (default an eighth of the memory, at
    /// most 512M).
    #[arg(long, value_name = "SIZE")]
    cache_size: Option<String>,
    #[command(flatten)]
    stride: crate::tune::ManualStride,
    /// msc-ct: do not run the stride benchmark; record the default rule
    /// (S_r_max = S_w_max = 8 blocks). Without it (and without
    /// --stride-max-read/--stride-max-write), create times strided reads
    /// and writes on the first member for a few seconds (see `eraid tune
    /// --help`: O_DIRECT only; tmpfs measures no penalty, so no transform).
    #[arg(long, conflicts_with_all = ["stride_max_read", "stride_max_write"])]
    no_tune: bool,
    /// Member files, block devices or NBD exports (nbd://HOST:PORT/EXPORT,
    /// nbd+unix:///EXPORT?socket=PATH, nbds://...?tls-certificates=DIR),
    /// in slot order. Exports must exist: only files are created.
    #[arg(required = true)]
    members: Vec<PathBuf>,
}

impl CreateArgs {
    pub fn run(self) -> Result<i32> {
        let level = crate::level_args::level_from_flags(
            &self.level,
            self.data,
            self.parity,
            self.w,
            self.members.len(),
        )?;
        let layout = match &self.layout {
            Some(name) => ParityLayout::parse(name)?,
            None => ParityLayout::default_for(level),
        };
        let chunk_bytes = match &self.chunk {
            Some(text) => parse_size_bytes(text)
                .map_err(anyhow::Error::msg)
                .context("--chunk")?,
            None => crate::level_args::default_chunk_bytes(level),
        };
        let size_bytes = match &self.size {
            Some(s) => Some(
                parse_size_bytes(s)
                    .map_err(anyhow::Error::msg)
                    .context("--size")?,
            ),
            None => None,
        };
        if let (Some(text), Some(bytes)) = (&self.size, size_bytes) {
            check_size_supported(text, bytes, self.members.len())?;
        }
        if !self.spares.is_empty() && level.redundancy() == 0 {
            bail!(
                "{} has no redundancy: nothing could be rebuilt onto a spare (--spare {})",
                level.name(),
                self.spares[0].display()
            );
        }
        if self.spares.len() > eraid_core::metadata::SPARES_MAX {
            bail!(
                "{} spares given; an array records at most {}",
                self.spares.len(),
                eraid_core::metadata::SPARES_MAX
            );
        }
        // Members, then spares: every check below applies to both.
        let members_count = self.members.len();
        let all: Vec<PathBuf> = self.members.iter().chain(&self.spares).cloned().collect();
        check_distinct(&all)?;
        // Members in use (a running serve, check or grow, another path to
        // the same data, a mounted device) are refused whatever --force
        // says: overwriting them would pull an array from under its server.
        let mut locks = crate::locks::MemberLocks::default();
        for path in &all {
            if member_exists(path) {
                locks.extend(crate::locks::lock_member(path)?);
            }
        }
        // Inspect every member before touching any.
        let mut existing_sizes = Vec::new();
        let mut any_existing = false;
        let mut locked_arrays: Vec<String> = Vec::new();
        for (index, path) in all.iter().enumerate() {
            if !member_exists(path) {
                if size_bytes.is_none() {
                    bail!(
                        "{} does not exist; give --size to create it",
                        path.display()
                    );
                }
                existing_sizes.push(None);
                continue;
            }
            // A spare's old contents do not matter: it is rebuilt in full.
            any_existing |= index < members_count;
            let read_only = MemberOptions {
                writable: false,
                ..MemberOptions::default()
            };
            let file = MemberDevice::open_with(path, read_only)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let area = read_metadata_area(&file, METADATA_BYTES as usize)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if let Ok(sb) = Superblock::decode_newest(&area) {
                if !self.force {
                    bail!(
                        "{} already belongs to array {} (member {} of a {}); use --force to overwrite it",
                        path.display(),
                        sb.array_uuid,
                        sb.this_member,
                        sb.geometry.level.name()
                    );
                }
                // Its array may be served through other paths.
                if !locked_arrays.contains(&sb.array_uuid) {
                    locks.extend(crate::locks::lock_array(&sb.array_uuid)?);
                    locked_arrays.push(sb.array_uuid.clone());
                }
            }
            if let Some(size) = size_bytes {
                if file.size_bytes() < size {
                    bail!(
                        "{} has {} bytes, less than --size {}",
                        path.display(),
                        file.size_bytes(),
                        size
                    );
                }
            }
            existing_sizes.push(Some(file.size_bytes()));
        }
        let member_bytes =
            match size_bytes {
                Some(size) => size,
                None => {
                    let sizes: Vec<u64> = existing_sizes[..members_count]
                        .iter()
                        .flatten()
                        .copied()
                        .collect();
                    let smallest = *sizes.iter().min().expect("at least one member");
                    if sizes.iter().any(|&s| s != smallest) {
                        bail!(
                        "members have unequal sizes ({}); give --size to use the same size on each",
                        sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
                    );
                    }
                    smallest
                }
            };
        for (path, size) in self.spares.iter().zip(&existing_sizes[members_count..]) {
            if let Some(size) = size.filter(|&s| s < member_bytes) {
                bail!(
                    "spare {} is too small: {size} bytes, but every member of this array needs                      {member_bytes} bytes",
                    path.display()
                );
            }
        }
        let geometry = Geometry::new(level, layout, self.members.len(), chunk_bytes, member_bytes)?;
        let journal_plan = self.plan_journal(&geometry, &all)?;
        let cache_record = self.plan_cache(&geometry, journal_plan.is_some())?;
        if let Some(plan) = &journal_plan {
            if plan.existing_bytes.is_some() {
                locks.extend(crate::locks::lock_member(&plan.path)?);
            }
        }
        let new_paths: Vec<&PathBuf> = all
            .iter()
            .zip(&existing_sizes)
            .filter(|(_, existing)| existing.is_none())
            .map(|(path, _)| path)
            .collect();
        check_files_can_be_that_large(&new_paths, member_bytes, self.size.as_deref())?;
        // All checks passed: create missing files, then write metadata. A
        // failure from here on removes the files this run created.
        let mut created = CreatedFiles::default();
        if let Some(plan) = journal_plan.as_ref().filter(|p| p.existing_bytes.is_none()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&plan.path)
                .with_context(|| format!("cannot create journal {}", plan.path.display()))?;
            created.paths.push(plan.path.clone());
            locks.extend(crate::locks::lock_member(&plan.path)?);
            file.set_len(plan.size_bytes).with_context(|| {
                format!(
                    "cannot make journal {} {} bytes long",
                    plan.path.display(),
                    plan.size_bytes
                )
            })?;
        }
        for path in new_paths {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            created.paths.push(path.clone());
            locks.extend(crate::locks::lock_member(path)?);
            file.set_len(member_bytes).with_context(|| {
                format!("cannot make {} {member_bytes} bytes long", path.display())
            })?;
        }
        let array_uuid = uuid::Uuid::new_v4().to_string();
        let members = self
            .members
            .iter()
            .map(|p| NewMember {
                uuid: uuid::Uuid::new_v4().to_string(),
                path_hint: crate::member_name::canonical_or_given(p)
                    .display()
                    .to_string(),
            })
            .collect();
        let created_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut superblock = new_superblock(geometry, array_uuid.clone(), members, created_unix_s);
        superblock.spares = self
            .spares
            .iter()
            .map(|p| eraid_core::metadata::superblock::MemberRecord {
                uuid: uuid::Uuid::new_v4().to_string(),
                state: eraid_core::metadata::superblock::MemberState::Spare,
                path_hint: crate::member_name::canonical_or_given(p)
                    .display()
                    .to_string(),
                failure: None,
                absent_unwritten_since_events: None,
                re_add_from_events: None,
            })
            .collect();
        superblock.cache = cache_record;
        if let Some(plan) = &journal_plan {
            let journal_id = uuid::Uuid::new_v4().as_u64_pair().0;
            eraid_driver::journal_file::create_journal(
                &plan.path,
                plan.size_bytes,
                journal_id,
                &array_uuid,
            )
            .map_err(anyhow::Error::msg)?;
            superblock.journal = Some(eraid_core::metadata::superblock::JournalRecord {
                journal_id,
                size_bytes: plan.size_bytes,
                path_hint: std::fs::canonicalize(&plan.path)
                    .unwrap_or_else(|_| plan.path.clone())
                    .display()
                    .to_string(),
                failed: None,
            });
        }
        let files: Vec<MemberDevice> = all
            .iter()
            .map(|p| MemberDevice::open(p).with_context(|| format!("cannot open {}", p.display())))
            .collect::<Result<_>>()?;
        if let Some(cache) = superblock
            .cache
            .as_mut()
            .filter(|c| c.policy == CachePolicy::MscCt.name())
        {
            let target = crate::tune::BenchTarget {
                device: &files[0],
                label: all[0].display().to_string(),
                direct: files[0].direct(),
                is_nbd: files[0].is_nbd(),
            };
            cache.stride = Some(crate::tune::decide(
                &self.stride,
                self.no_tune,
                &target,
                &geometry,
            )?);
        }
        for (member, offset, bytes) in initial_writes(&superblock, any_existing) {
            write_at_sync(&files[member], offset, &bytes)
                .with_context(|| format!("cannot write metadata to {}", all[member].display()))?;
        }
        created.keep();
        drop(locks);
        println!(
            "created {} {} array {}: {} members, chunk {} KiB, capacity {} bytes ({:.1} MiB)",
            level.name(),
            layout.name(),
            array_uuid,
            geometry.member_count,
            chunk_bytes >> 10,
            geometry.capacity_bytes(),
            geometry.capacity_bytes() as f64 / (1 << 20) as f64
        );
        if !self.spares.is_empty() {
            println!("hot spares: {}", self.spares.len());
        }
        if let Some(plan) = &journal_plan {
            println!(
                "journal {} ({} MiB), cache {}",
                plan.path.display(),
                plan.size_bytes >> 20,
                superblock
                    .cache
                    .as_ref()
                    .map_or("none".to_string(), |c| format!(
                        "{} of {} MiB{}",
                        c.policy,
                        c.size_bytes >> 20,
                        c.stride
                            .as_ref()
                            .map_or(String::new(), |s| format!(" ({})", s.summary()))
                    ))
            );
        }
        for warning in
            crate::space::shortfall_warnings(&all, crate::members::member_bytes_needed(&geometry))
        {
            eprintln!("{warning}");
        }
        if any_existing && level != Level::Raid0 {
            println!("members held data before: the first start resynchronises parity over the whole array");
        }
        Ok(0)
    }
}

/// True when the member is there to open: an existing file or device,
/// or an NBD export (which `create` never makes; connecting says whether
/// it is there).
fn member_exists(path: &Path) -> bool {
    eraid_driver::is_nbd_uri(path) || path.exists()
}

/// The journal `create` will make or take over.
struct JournalPlan {
    path: PathBuf,
    size_bytes: u64,
    /// The size of a file or device that exists already.
    existing_bytes: Option<u64>,
}

impl CreateArgs {
    /// Checks --journal and --journal-size against the array, before
    /// anything is written; the error names the flag.
    fn plan_journal(
        &self,
        geometry: &Geometry,
        members: &[PathBuf],
    ) -> Result<Option<JournalPlan>> {
        let Some(path) = &self.journal else {
            if self.journal_size.is_some() {
                bail!("--journal-size needs --journal PATH");
            }
            return Ok(None);
        };
        if !matches!(geometry.level, Level::Raid5 | Level::Raid6) {
            bail!(
                "--journal: the write-back cache and its journal need RAID-5 or RAID-6 (not {})",
                geometry.level.name()
            );
        }
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if members.iter().any(|m| canonical(m) == canonical(path)) {
            bail!("--journal {} is also a member or spare", path.display());
        }
        let min_bytes = eraid_core::journal::journal_bytes_min(
            geometry.member_count as u64 * geometry.chunk_bytes,
        );
        let existing_bytes = if path.exists() {
            let file = MemberFile::open_with(
                path,
                MemberOptions {
                    writable: false,
                    ..MemberOptions::default()
                },
            )
            .with_context(|| format!("--journal: cannot open {}", path.display()))?;
            if self.journal_size.is_some() {
                bail!(
                    "--journal-size is for a journal file create makes; {} exists ({} bytes)",
                    path.display(),
                    file.size_bytes()
                );
            }
            Some(file.size_bytes())
        } else {
            None
        };
        let size_bytes = match (existing_bytes, &self.journal_size) {
            (Some(bytes), _) => bytes,
            (None, Some(text)) => parse_size_bytes(text)
                .map_err(anyhow::Error::msg)
                .context("--journal-size")?,
            (None, None) => (256 << 20).max(min_bytes),
        };
        if size_bytes < min_bytes {
            bail!(
                "--journal {} is too small: {size_bytes} bytes, this array needs at least \
                 {min_bytes} ({} MiB: 64 stripes, at least 8 MiB)",
                path.display(),
                min_bytes.div_ceil(1 << 20)
            );
        }
        Ok(Some(JournalPlan {
            path: path.clone(),
            size_bytes,
            existing_bytes,
        }))
    }

    /// The cache settings to record; a write-back policy needs a journal.
    fn plan_cache(
        &self,
        geometry: &Geometry,
        journal: bool,
    ) -> Result<Option<eraid_core::metadata::superblock::CacheRecord>> {
        use eraid_core::cache::config::CacheConfig;
        let policy = match (&self.cache, journal) {
            (Some(name), _) => CachePolicy::parse(name)
                .map_err(anyhow::Error::msg)
                .context("--cache")?,
            (None, true) => CachePolicy::MscCt,
            (None, false) => CachePolicy::None,
        };
        if policy != CachePolicy::None && !journal {
            bail!(
                "--cache {}: a write-back cache needs --journal PATH (an acknowledged write \
                 held only in memory would be lost in a crash)",
                policy.name()
            );
        }
        let size_bytes = match &self.cache_size {
            Some(text) => parse_size_bytes(text)
                .map_err(anyhow::Error::msg)
                .context("--cache-size")?,
            None => crate::journal::default_cache_bytes(),
        };
        if policy == CachePolicy::None && self.cache_size.is_some() {
            bail!("--cache-size needs a write-back --cache (pbgc, sc or msc-ct)");
        }
        if policy != CachePolicy::MscCt && (self.no_tune || self.stride.given()) {
            bail!(
                "{}: only the msc-ct cache uses the stride rule (the cache is {})",
                if self.no_tune {
                    "--no-tune"
                } else {
                    "--stride-max-read/--stride-max-write"
                },
                policy.name()
            );
        }
        if policy == CachePolicy::None {
            return Ok(None);
        }
        let config = CacheConfig {
            policy,
            size_bytes,
            ..CacheConfig::default()
        };
        config
            .validate(geometry)
            .map_err(|e| anyhow::anyhow!("--cache: {e}"))?;
        // msc-ct's stride rule is decided once the members are open.
        Ok(Some(eraid_core::metadata::superblock::CacheRecord {
            policy: policy.name().to_string(),
            size_bytes,
            stride: None,
        }))
    }
}

/// Refuses a --size no array could use: file offsets are signed 64-bit, and
/// the array's capacity (at most members x size) must be one too.
fn check_size_supported(text: &str, size_bytes: u64, member_count: usize) -> Result<()> {
    let largest_bytes = i64::MAX as u64 / member_count.max(1) as u64;
    if size_bytes > largest_bytes {
        bail!(
            "--size {text} is larger than the largest supported member size for {member_count} \
             members, {largest_bytes} bytes ({} TiB): the array's capacity must stay below 8 EiB",
            largest_bytes >> 40
        );
    }
    Ok(())
}

/// Asks each filesystem that will hold a new member whether it allows a
/// file of `size_bytes` (ext4 stops at 16 TiB), with a temporary file that
/// is removed at once, so an impossible size fails before any member file
/// exists.
fn check_files_can_be_that_large(
    new_paths: &[&PathBuf],
    size_bytes: u64,
    size_text: Option<&str>,
) -> Result<()> {
    let mut asked: Vec<PathBuf> = Vec::new();
    for path in new_paths {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if asked.contains(&dir) {
            continue;
        }
        let probe = tempfile::Builder::new()
            .prefix(".eraid-size-probe")
            .tempfile_in(&dir)
            .with_context(|| format!("cannot create {}", path.display()))?;
        if let Err(error) = probe.as_file().set_len(size_bytes) {
            let size = size_text.map_or(size_bytes.to_string(), str::to_string);
            if error.raw_os_error() == Some(libc::EFBIG) {
                bail!(
                    "--size {size} ({size_bytes} bytes) is larger than the filesystem holding {} \
                     allows for one file; use a smaller --size or another filesystem \
                     (nothing was created)",
                    path.display()
                );
            }
            return Err(error).with_context(|| {
                format!("cannot make {} {size_bytes} bytes long", path.display())
            });
        }
        asked.push(dir);
    }
    Ok(())
}

/// Member files this run created: removed on drop unless `keep` is called,
/// so a create that fails leaves no file behind (a 0-byte leftover would
/// block the next attempt).
#[derive(Default)]
struct CreatedFiles {
    paths: Vec<PathBuf>,
}

impl CreatedFiles {
    fn keep(mut self) {
        self.paths.clear();
    }
}

impl Drop for CreatedFiles {
    fn drop(&mut self) {
        for path in &self.paths {
            remove_created(path);
        }
    }
}

fn remove_created(path: &Path) {
    if let Err(error) = std::fs::remove_file(path) {
        eprintln!(
            "eraid: could not remove {} after the failed create: {error}",
            path.display()
        );
    }
}

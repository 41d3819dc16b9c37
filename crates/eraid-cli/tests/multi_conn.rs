//! NBD_FLAG_CAN_MULTI_CONN (issue 24): `eraid serve` advertises it, so a
//! flush on any connection must make durable every write completed on any
//! connection before it. The members here are in-process NBD exports with
//! a volatile write cache: a write lands in the cache, only a flush (or
//! FUA) makes it durable, as on a disk whose cache is on. Three clients
//! write at once on their own connections, a fourth flushes, and every
//! written chunk must then be in the members' durable images. The array
//! keeps its promise because a user flush flushes every member, whichever
//! connection it came on.

mod support;

use eraid_nbd::client::Client;
use eraid_nbd::protocol as p;
use eraid_nbd::{
    Done, Export, ExportCommand, ExportError, Listener, RunningServer, Server as NbdServer,
    ServerConfig,
};
use std::path::Path;
use std::sync::{Arc, Mutex};
use support::*;

const MEMBER_BYTES: usize = 16 << 20;
const CHUNK_BYTES: usize = 64 << 10;

/// A member with a write cache: `cached` is what reads see, `durable`
/// what would survive a power cut. One lock over both, so a flush copies
/// a state no write is halfway into.
struct CachedMember {
    name: String,
    images: Mutex<Images>,
}

struct Images {
    cached: Vec<u8>,
    durable: Vec<u8>,
}

impl CachedMember {
    fn new(name: &str) -> CachedMember {
        CachedMember {
            name: name.to_string(),
            images: Mutex::new(Images {
                cached: vec![0; MEMBER_BYTES],
                durable: vec![0; MEMBER_BYTES],
            }),
        }
    }

    fn durable(&self) -> Vec<u8> {
        self.images.lock().unwrap().durable.clone()
    }
}

impl Export for CachedMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> String {
        "member with a volatile write cache".into()
    }
    fn size_bytes(&self) -> u64 {
        MEMBER_BYTES as u64
    }
    fn preferred_block_bytes(&self) -> u32 {
        4096
    }
    fn submit(&self, command: ExportCommand, done: Done) {
        let mut images = self.images.lock().unwrap();
        // The server checked every range against size_bytes().
        let range = |offset: u64, len: usize| offset as usize..offset as usize + len;
        let result: Result<Option<Vec<u8>>, ExportError> = match command {
            ExportCommand::Read {
                offset_bytes,
                len_bytes,
            } => Ok(Some(
                images.cached[range(offset_bytes, len_bytes as usize)].to_vec(),
            )),
            ExportCommand::Write {
                offset_bytes,
                data,
                fua,
            } => {
                let at = range(offset_bytes, data.len());
                images.cached[at.clone()].copy_from_slice(&data);
                if fua {
                    images.durable[at].copy_from_slice(&data);
                }
                Ok(None)
            }
            ExportCommand::Flush => {
                let Images { cached, durable } = &mut *images;
                durable.copy_from_slice(cached);
                Ok(None)
            }
            ExportCommand::Trim {
                offset_bytes,
                len_bytes,
            }
            | ExportCommand::WriteZeroes {
                offset_bytes,
                len_bytes,
                fua: false,
            } => {
                images.cached[range(offset_bytes, len_bytes as usize)].fill(0);
                Ok(None)
            }
            ExportCommand::WriteZeroes {
                offset_bytes,
                len_bytes,
                fua: true,
            } => {
                let at = range(offset_bytes, len_bytes as usize);
                images.cached[at.clone()].fill(0);
                images.durable[at].fill(0);
                Ok(None)
            }
        };
        drop(images);
        done(result.map(|data| data.map(Vec::into)));
    }
}

/// Whether `block` lies, 4 KiB aligned, anywhere in one of `images`.
fn held_by_any(images: &[Vec<u8>], block: &[u8]) -> bool {
    images.iter().any(|image| {
        image
            .chunks_exact(4096)
            .enumerate()
            .any(|(i, page)| page == &block[..4096] && image[i * 4096..].starts_with(block))
    })
}

fn start_members(dir: &Path) -> (Vec<Arc<CachedMember>>, Vec<RunningServer>, Vec<String>) {
    let mut members = Vec::new();
    let mut servers = Vec::new();
    let mut uris = Vec::new();
    for i in 0..4 {
        let member = Arc::new(CachedMember::new(""));
        let socket = dir.join(format!("member{i}.sock"));
        let server = NbdServer::bind(
            Listener::Unix(socket.clone()),
            Arc::clone(&member) as Arc<dyn Export>,
            ServerConfig::default(),
        )
        .expect("bind a member server");
        members.push(member);
        servers.push(server.start().expect("start a member server"));
        uris.push(nbd_uri(&socket));
    }
    (members, servers, uris)
}

fn connect(server: &support::Server) -> Client {
    let client = Client::connect_unix(&server.socket, "").expect("connect to eraid serve");
    assert_ne!(
        client.transmission_flags() & p::FLAG_CAN_MULTI_CONN,
        0,
        "eraid serve advertises CAN_MULTI_CONN"
    );
    client
}

/// Writes from three connections at once, a flush from a fourth: every
/// written chunk is durable on the members when the flush is answered.
/// On RAID-0 nothing else flushes the members, so the test also checks
/// that a write acknowledged after the others is *not* durable before
/// the flush: the members really hold back unflushed writes.
fn flush_on_one_connection_covers_the_others(level: &str) {
    let dir = scratch();
    let (members, _member_servers, uris) = start_members(dir.path());
    let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
    let mut create_args = vec!["--level", level];
    create_args.extend_from_slice(&uris);
    create(dir.path(), &create_args);
    let server = Server::start(dir.path(), &uris);

    // Chunk-aligned 64 KiB writes, each lands whole on one member.
    let writers: Vec<std::thread::JoinHandle<Vec<Vec<u8>>>> = (0..3u64)
        .map(|writer| {
            let mut client = connect(&server);
            std::thread::spawn(move || {
                (0..4u64)
                    .map(|n| {
                        let block = random_block(writer * 16 + n);
                        let offset_bytes = (writer * 8 + n) * CHUNK_BYTES as u64;
                        client
                            .write(offset_bytes, &block, false)
                            .expect("write acknowledged");
                        block
                    })
                    .collect()
            })
        })
        .collect();
    let mut written: Vec<Vec<u8>> = writers
        .into_iter()
        .flat_map(|w| w.join().expect("writer thread"))
        .collect();

    let mut late_writer = connect(&server);
    let late = random_block(99);
    late_writer
        .write(40 * CHUNK_BYTES as u64, &late, false)
        .expect("late write acknowledged");
    let durable: Vec<Vec<u8>> = members.iter().map(|m| m.durable()).collect();
    if level == "0" {
        assert!(
            !held_by_any(&durable, &late),
            "the members made a write durable with no flush: the test could not tell"
        );
    }
    written.push(late);

    let mut flusher = connect(&server);
    flusher.flush().expect("flush acknowledged");
    let durable: Vec<Vec<u8>> = members.iter().map(|m| m.durable()).collect();
    for (i, block) in written.iter().enumerate() {
        assert!(
            held_by_any(&durable, block),
            "RAID-{level}: write {i}, acknowledged on another connection before the flush, \
             is not durable after it\n{}",
            server.log_text()
        );
    }
    server.stop();
}

fn random_block(seed: u64) -> Vec<u8> {
    use rand::RngCore;
    let mut block = vec![0u8; CHUNK_BYTES];
    rng(seed).fill_bytes(&mut block);
    block
}

#[test]
fn raid0_flush_on_one_connection_covers_writes_on_the_others() {
    flush_on_one_connection_covers_the_others("0");
}

#[test]
fn raid5_flush_on_one_connection_covers_writes_on_the_others() {
    flush_on_one_connection_covers_the_others("5");
}

/// `eraid detail --control` tells the operator how much of the time the
/// core's lock was held (the number that says whether the one-at-a-time
/// core is the limit): after writes from four connections at once, the
/// JSON's `engine_lock` has counted them and the human form says it.
#[test]
fn detail_reports_the_engine_lock_after_writes_on_four_connections() {
    let dir = scratch();
    let (_members, _member_servers, uris) = start_members(dir.path());
    let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
    let mut create_args = vec!["--level", "0"];
    create_args.extend_from_slice(&uris);
    create(dir.path(), &create_args);
    let server = Server::start_with(dir.path(), &["--control", "ctl.sock"], &uris);
    let before = live(dir.path(), "ctl.sock")["engine_lock"].clone();
    assert!(before["acquisitions"].is_u64(), "{before}");

    let writes_per_connection = 32u64;
    let writers: Vec<_> = (0..4u64)
        .map(|writer| {
            let mut client = connect(&server);
            std::thread::spawn(move || {
                for n in 0..writes_per_connection {
                    let offset_bytes = (writer * writes_per_connection + n) * 4096;
                    client
                        .write(offset_bytes, &[writer as u8 + 1; 4096], false)
                        .expect("write acknowledged");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }

    let after = live(dir.path(), "ctl.sock")["engine_lock"].clone();
    let acquired =
        after["acquisitions"].as_u64().unwrap() - before["acquisitions"].as_u64().unwrap();
    assert!(acquired >= 4 * writes_per_connection, "{before} -> {after}");
    let fraction = after["held_fraction"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&fraction), "{after}");
    assert!(
        after["uptime_s"].as_f64().unwrap() >= after["held_s"].as_f64().unwrap(),
        "{after}"
    );
    let human = eraid(dir.path(), &["detail", "--control", "ctl.sock"]).expect_ok();
    assert!(
        human.stdout.contains("engine lock held") && human.stdout.contains("acquisitions"),
        "{human}"
    );
    server.stop();
}

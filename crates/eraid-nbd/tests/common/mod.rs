//! Shared helpers for the integration tests: a served MemExport, a raw
//! protocol speaker for malformed input, and deterministic random bytes.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use eraid_nbd::protocol as p;
use eraid_nbd::{Export, Listener, MemExport, RunningServer, Server, ServerConfig};

/// A running server over a Unix socket in its own temporary directory.
pub struct Served {
    pub server: Option<RunningServer>,
    pub socket_path: PathBuf,
    pub uri: String,
    _dir: tempfile::TempDir,
}

impl Served {
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop().expect("server stops cleanly");
        }
    }
}

pub fn serve(export: Arc<dyn Export>, config: ServerConfig) -> Served {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket_path = dir.path().join("nbd.sock");
    let server = Server::bind(Listener::Unix(socket_path.clone()), export, config).expect("bind");
    let uri = server.uri();
    let server = server.start().expect("start");
    Served {
        server: Some(server),
        socket_path,
        uri,
        _dir: dir,
    }
}

pub fn serve_mem(export: &Arc<MemExport>) -> Served {
    serve(
        Arc::clone(export) as Arc<dyn Export>,
        ServerConfig::default(),
    )
}

/// Deterministic pseudo-random bytes (xorshift64*), so failures reproduce.
pub fn random_bytes(len_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(len_bytes + 8);
    while out.len() < len_bytes {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len_bytes);
    out
}

/// True if `tool` runs; otherwise says loudly that the test is skipped.
pub fn have_tool(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        eprintln!("SKIPPED: `{tool}` is not installed");
    }
    found
}

/// Runs a command, panicking with its output if it fails.
pub fn run(command: &mut Command) -> String {
    let output = command.output().expect("spawn tool");
    assert!(
        output.status.success(),
        "{command:?} failed: {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Speaks the protocol byte by byte, so tests can send anything.
pub struct Raw {
    pub stream: UnixStream,
}

impl Raw {
    pub fn connect(path: &Path) -> Raw {
        let stream = UnixStream::connect(path).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Raw { stream }
    }

    /// Reads the greeting and checks it.
    pub fn greeting(&mut self) -> u16 {
        let mut greeting = [0u8; 18];
        self.stream.read_exact(&mut greeting).expect("greeting");
        assert_eq!(&greeting[0..8], b"NBDMAGIC");
        assert_eq!(&greeting[8..16], b"IHAVEOPT");
        u16::from_be_bytes([greeting[16], greeting[17]])
    }

    /// Greeting plus the usual client flags.
    pub fn start(path: &Path) -> Raw {
        let mut raw = Raw::connect(path);
        raw.greeting();
        raw.send(&(p::FLAG_C_FIXED_NEWSTYLE | p::FLAG_C_NO_ZEROES).to_be_bytes());
        raw
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    pub fn option(&mut self, option: u32, data: &[u8]) {
        let mut message = p::IHAVEOPT.to_be_bytes().to_vec();
        message.extend_from_slice(&option.to_be_bytes());
        message.extend_from_slice(&(data.len() as u32).to_be_bytes());
        message.extend_from_slice(data);
        self.send(&message);
    }

    /// Reads one option reply: (option, reply type, data).
    pub fn option_reply(&mut self) -> (u32, u32, Vec<u8>) {
        let mut header = [0u8; 20];
        self.stream.read_exact(&mut header).expect("option reply");
        assert_eq!(
            u64::from_be_bytes(header[0..8].try_into().unwrap()),
            p::OPTION_REPLY_MAGIC
        );
        let option = u32::from_be_bytes(header[8..12].try_into().unwrap());
        let reply_type = u32::from_be_bytes(header[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(header[16..20].try_into().unwrap());
        let mut data = vec![0u8; len as usize];
        self.stream
            .read_exact(&mut data)
            .expect("option reply data");
        (option, reply_type, data)
    }

    pub fn go_data(name: &[u8], requests: &[u16]) -> Vec<u8> {
        let mut data = (name.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(name);
        data.extend_from_slice(&(requests.len() as u16).to_be_bytes());
        for request in requests {
            data.extend_from_slice(&request.to_be_bytes());
        }
        data
    }

    /// Sends NBD_OPT_GO and reads replies to the ACK; returns (size, flags).
    pub fn go(&mut self, name: &[u8]) -> (u64, u16) {
        self.option(p::OPT_GO, &Self::go_data(name, &[p::INFO_BLOCK_SIZE]));
        let mut export = None;
        loop {
            let (option, reply_type, data) = self.option_reply();
            assert_eq!(option, p::OPT_GO);
            match reply_type {
                p::REP_ACK => break,
                p::REP_INFO => {
                    if u16::from_be_bytes([data[0], data[1]]) == p::INFO_EXPORT {
                        export = Some((
                            u64::from_be_bytes(data[2..10].try_into().unwrap()),
                            u16::from_be_bytes([data[10], data[11]]),
                        ));
                    }
                }
                other => panic!("GO failed with reply {other:#x}"),
            }
        }
        export.expect("NBD_INFO_EXPORT")
    }

    pub fn request(
        &mut self,
        command: u16,
        flags: u16,
        handle: u64,
        offset_bytes: u64,
        len_bytes: u32,
    ) {
        let header = p::RequestHeader {
            flags,
            command,
            handle,
            offset_bytes,
            len_bytes,
        };
        self.send(&header.encode());
    }

    /// Reads a simple reply header: (error, handle).
    pub fn reply(&mut self) -> (u32, u64) {
        let mut header = [0u8; p::SIMPLE_REPLY_HEADER_BYTES];
        self.stream.read_exact(&mut header).expect("simple reply");
        assert_eq!(
            u32::from_be_bytes(header[0..4].try_into().unwrap()),
            p::SIMPLE_REPLY_MAGIC
        );
        (
            u32::from_be_bytes(header[4..8].try_into().unwrap()),
            u64::from_be_bytes(header[8..16].try_into().unwrap()),
        )
    }

    /// A successful read proves the connection still works.
    pub fn read_ok(&mut self, handle: u64, offset_bytes: u64, len_bytes: u32) -> Vec<u8> {
        self.request(p::CMD_READ, 0, handle, offset_bytes, len_bytes);
        assert_eq!(self.reply(), (0, handle), "read must succeed");
        let mut data = vec![0u8; len_bytes as usize];
        self.stream.read_exact(&mut data).expect("read data");
        data
    }

    /// True when the server has closed the connection (EOF, or reset).
    pub fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                false
            }
            Err(_) => true,
        }
    }
}

/// (For tls.rs and shared_client.rs.) A CA and a localhost server certificate in qemu's layout, made with
/// openssl; `other-key.pem` belongs to no certificate.
pub fn make_pki(dir: &Path) {
    let openssl = |args: &[&str]| {
        run(Command::new("openssl").args(args).current_dir(dir));
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend_from_slice(&ec);
    ca.extend_from_slice(&[
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca-cert.pem",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
    ]);
    openssl(&ca);
    let mut csr = vec!["req"];
    csr.extend_from_slice(&ec);
    csr.extend_from_slice(&[
        "-keyout",
        "server-key.pem",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(&csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca-cert.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-out",
        "server-cert.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        "other-key.pem",
    ]);
}

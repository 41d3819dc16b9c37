//! `eraid serve` with TLS: nbdinfo and nbdcopy over `nbds://` with the
//! test's own CA (issue 20, acceptance 5), plaintext clients refused when
//! TLS is required and served when it is only allowed, and bad TLS flags
//! or certificate files refused before anything is served.

mod support;

use std::path::Path;
use support::*;

const MEMBERS: [&str; 3] = ["d0", "d1", "d2"];

/// Makes `dir/pki` in qemu's layout (ca-cert.pem, server-cert.pem,
/// server-key.pem) with openssl: a CA and a server certificate for
/// localhost and 127.0.0.1 signed by it. Also leaves `other-key.pem`, a key
/// that belongs to no certificate.
fn make_pki(dir: &Path) -> String {
    let pki = dir.join("pki");
    std::fs::create_dir(&pki).unwrap();
    let ext = pki.join("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
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
        "/CN=eraid test CA",
    ]);
    run_tool(&pki, "openssl", &ca).expect_ok();
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
    run_tool(&pki, "openssl", &csr).expect_ok();
    let ext_arg = ext.display().to_string();
    run_tool(
        &pki,
        "openssl",
        &[
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
            &ext_arg,
        ],
    )
    .expect_ok();
    run_tool(
        &pki,
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "other-key.pem",
        ],
    )
    .expect_ok();
    pki.display().to_string()
}

fn create_raid5(dir: &Path) {
    let mut args = vec!["create", "--level", "5", "--chunk", "64K", "--size", "16M"];
    args.extend_from_slice(&MEMBERS);
    eraid(dir, &args).expect_ok();
}

/// `uri` with the CA directory libnbd should trust.
fn with_ca(uri: &str, pki: &str) -> String {
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}tls-certificates={pki}")
}

/// Acceptance 5: nbdinfo and nbdcopy read (and nbdcopy writes) over
/// nbds:// with the same CA; a plaintext client is refused.
#[test]
fn tls_required_serves_nbds_and_refuses_plaintext() {
    let test = "tls_required_serves_nbds_and_refuses_plaintext";
    if !require_tools(test, &["openssl", "nbdinfo", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let pki = make_pki(dir);
    create_raid5(dir);
    let server = Server::start_tcp(dir, &["--tls-cert", &pki], &MEMBERS);
    assert!(
        server.uri.starts_with("nbds://127.0.0.1:"),
        "serve --tls-cert must print an nbds:// URI: {}",
        server.uri
    );
    let uri = with_ca(&server.uri, &pki);

    let info = run_tool(dir, "nbdinfo", &[&uri]).expect_ok();
    assert!(
        info.stdout.contains("with TLS"),
        "nbdinfo should report TLS: {info}"
    );
    let info = run_tool(dir, "nbdinfo", &["--json", &uri])
        .expect_ok()
        .json();
    let capacity = info["exports"][0]["export-size"].as_u64().unwrap();
    assert_eq!(capacity, detail_json(dir, &MEMBERS)["capacity_bytes"]);

    write_random(&dir.join("in.bin"), capacity, 51);
    run_tool(dir, "nbdcopy", &["in.bin", &uri]).expect_ok();
    run_tool(dir, "nbdcopy", &[&uri, "out.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("in.bin"),
        &dir.join("out.bin"),
        capacity,
        "nbds round trip",
    );

    // Plaintext: GO gets NBD_REP_ERR_TLS_REQD, which libnbd reports as a
    // failed NBD_OPT_GO; the URI the server printed is the TLS one.
    let plain_uri = server.uri.replacen("nbds://", "nbd://", 1);
    let refused = run_tool(dir, "nbdinfo", &[&plain_uri]);
    assert!(
        !refused.ok(),
        "a plaintext client must be refused: {refused}"
    );
    assert!(
        refused.stderr.contains("opt_go"),
        "the refusal should come from option haggling (NBD_OPT_GO): {refused}"
    );
    let refused = run_tool(dir, "nbdcopy", &[&plain_uri, "plain.bin"]);
    assert!(
        !refused.ok(),
        "nbdcopy in plaintext must be refused: {refused}"
    );
    // A client that trusts another CA does not get in either.
    let other_ca = dir.join("other-ca");
    std::fs::create_dir(&other_ca).unwrap();
    run_tool(
        &other_ca,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca-key.pem",
            "-out",
            "ca-cert.pem",
            "-days",
            "2",
            "-subj",
            "/CN=other CA",
        ],
    )
    .expect_ok();
    let untrusted = run_tool(
        dir,
        "nbdinfo",
        &[&with_ca(&server.uri, &other_ca.display().to_string())],
    );
    assert!(
        !untrusted.ok(),
        "a client of another CA must fail: {untrusted}"
    );
    server.stop();
}

/// `--tls allow` serves TLS and plaintext clients alike.
#[test]
fn tls_allowed_serves_both() {
    let test = "tls_allowed_serves_both";
    if !require_tools(test, &["openssl", "nbdinfo", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let pki = make_pki(dir);
    create_raid5(dir);
    let server = Server::start_tcp(dir, &["--tls-cert", &pki, "--tls", "allow"], &MEMBERS);
    assert!(server.uri.starts_with("nbd://"), "{}", server.uri);
    let tls_uri = with_ca(&server.uri.replacen("nbd://", "nbds://", 1), &pki);
    let tls_info = run_tool(dir, "nbdinfo", &[&tls_uri]).expect_ok();
    assert!(tls_info.stdout.contains("with TLS"), "{tls_info}");
    let plain_info = run_tool(dir, "nbdinfo", &[&server.uri]).expect_ok();
    assert!(plain_info.stdout.contains("without TLS"), "{plain_info}");

    write_random(&dir.join("in.bin"), MIB, 52);
    run_tool(dir, "nbdcopy", &["in.bin", &tls_uri]).expect_ok();
    run_tool(dir, "nbdcopy", &[&server.uri, "out.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("in.bin"),
        &dir.join("out.bin"),
        MIB,
        "TLS write, plaintext read",
    );
    server.stop();
}

/// Bad TLS flags and certificate files: a clear error naming what is
/// wrong, before any member is touched.
#[test]
fn bad_tls_flags_and_files_are_refused_naming_them() {
    let test = "bad_tls_flags_and_files_are_refused_naming_them";
    if !require_tools(test, &["openssl"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let pki = make_pki(dir);
    create_raid5(dir);
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&MEMBERS);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let refuse = |extra: &[&str], names: &[&str]| {
        let args = serve(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rejected(dir, &args, names);
    };

    std::fs::write(dir.join("keys.psk"), "alice:0123456789abcdef\n").unwrap();
    refuse(
        &["--tls-psk", "keys.psk", "--tls-cert", &pki],
        &["--tls-cert", "--tls-psk", "give one"],
    );
    refuse(&["--tls-psk", "no-such.psk"], &["--tls-psk", "no-such.psk"]);
    std::fs::write(dir.join("bad.psk"), "alice:0123\nbob=00ff\n").unwrap();
    refuse(
        &["--tls-psk", "bad.psk"],
        &["bad.psk", "line 2", "username:hexkey"],
    );
    std::fs::write(dir.join("badhex.psk"), "alice:01zz\n").unwrap();
    refuse(
        &["--tls-psk", "badhex.psk"],
        &["badhex.psk", "line 1", "not hexadecimal"],
    );
    refuse(
        &["--tls", "require"],
        &["--tls require", "--tls-cert", "--tls-psk"],
    );
    refuse(
        &["--tls", "allow"],
        &["--tls allow", "--tls-cert", "--tls-psk"],
    );
    refuse(&["--tls", "maybe"], &["--tls", "maybe"]);
    refuse(
        &["--tls-cert", "no-such-dir"],
        &["no-such-dir", "not a directory"],
    );

    // Each broken layout names the file at fault.
    let broken = dir.join("broken");
    let copy_pki = |files: &[(&str, &str)]| {
        let _ = std::fs::remove_dir_all(&broken);
        std::fs::create_dir(&broken).unwrap();
        for (from, to) in files {
            std::fs::copy(Path::new(&pki).join(from), broken.join(to)).unwrap();
        }
    };
    copy_pki(&[
        ("ca-cert.pem", "ca-cert.pem"),
        ("server-cert.pem", "server-cert.pem"),
    ]);
    refuse(&["--tls-cert", "broken"], &["server-key.pem"]);
    copy_pki(&[("server-key.pem", "server-key.pem")]);
    refuse(&["--tls-cert", "broken"], &["server-cert.pem"]);
    copy_pki(&[
        ("server-cert.pem", "server-cert.pem"),
        ("server-key.pem", "server-key.pem"),
    ]);
    std::fs::write(broken.join("server-key.pem"), "not a key\n").unwrap();
    refuse(
        &["--tls-cert", "broken"],
        &["server-key.pem", "private key"],
    );
    copy_pki(&[
        ("server-cert.pem", "server-cert.pem"),
        ("server-key.pem", "server-key.pem"),
    ]);
    std::fs::write(broken.join("server-cert.pem"), "nothing here\n").unwrap();
    refuse(
        &["--tls-cert", "broken"],
        &["server-cert.pem", "no certificate"],
    );
    // A key that is not the certificate's.
    copy_pki(&[
        ("server-cert.pem", "server-cert.pem"),
        ("other-key.pem", "server-key.pem"),
    ]);
    refuse(
        &["--tls-cert", "broken"],
        &[
            "server-cert.pem",
            "server-key.pem",
            "cannot be used together",
        ],
    );
    // An unreadable key (mode 000 stops only non-root readers).
    if !is_root() {
        copy_pki(&[
            ("server-cert.pem", "server-cert.pem"),
            ("server-key.pem", "server-key.pem"),
        ]);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            broken.join("server-key.pem"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        refuse(
            &["--tls-cert", "broken"],
            &["server-key.pem", "permission denied"],
        );
    }
}

/// Signs a client certificate with `pki`'s CA into `dir` as libnbd looks
/// for it there: `client-cert.pem` and `client-key.pem`.
fn make_client_cert(pki: &Path, dir: &Path) {
    let ext = dir.join("client.ext");
    std::fs::write(
        &ext,
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    let key = dir.join("client-key.pem").display().to_string();
    let csr = dir.join("client.csr").display().to_string();
    let cert = dir.join("client-cert.pem").display().to_string();
    run_tool(
        pki,
        "openssl",
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            "/CN=eraid test client",
        ],
    )
    .expect_ok();
    run_tool(
        pki,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca-cert.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-out",
            &cert,
            "-days",
            "2",
            "-extfile",
            &ext.display().to_string(),
        ],
    )
    .expect_ok();
}

/// `--tls-verify-peer`: a client presenting a certificate the CA signed
/// gets in; one with no certificate, or one another CA signed, does not.
#[test]
fn tls_verify_peer_serves_only_clients_with_a_certificate_of_the_ca() {
    let test = "tls_verify_peer_serves_only_clients_with_a_certificate_of_the_ca";
    if !require_tools(test, &["openssl", "nbdinfo", "nbdcopy"]) {
        return;
    }
    let scratch = scratch();
    let dir = scratch.path();
    let pki = make_pki(dir);
    create_raid5(dir);
    // The client's directory: the CA to trust the server by, and its own
    // certificate.
    let client_dir = dir.join("client");
    std::fs::create_dir(&client_dir).unwrap();
    std::fs::copy(
        Path::new(&pki).join("ca-cert.pem"),
        client_dir.join("ca-cert.pem"),
    )
    .unwrap();
    make_client_cert(Path::new(&pki), &client_dir);
    // A client with no certificate: only the CA.
    let bare_dir = dir.join("bare");
    std::fs::create_dir(&bare_dir).unwrap();
    std::fs::copy(
        Path::new(&pki).join("ca-cert.pem"),
        bare_dir.join("ca-cert.pem"),
    )
    .unwrap();
    let server = Server::start_tcp(dir, &["--tls-cert", &pki, "--tls-verify-peer"], &MEMBERS);
    let uri = with_ca(&server.uri, &client_dir.display().to_string());

    let info = run_tool(dir, "nbdinfo", &[&uri]).expect_ok();
    assert!(info.stdout.contains("with TLS"), "{info}");
    write_random(&dir.join("in.bin"), MIB, 53);
    run_tool(dir, "nbdcopy", &["--flush", "in.bin", &uri]).expect_ok();
    run_tool(dir, "nbdcopy", &[&uri, "out.bin"]).expect_ok();
    assert_same_prefix(
        &dir.join("in.bin"),
        &dir.join("out.bin"),
        MIB,
        "with a client certificate",
    );
    let refused = run_tool(
        dir,
        "nbdinfo",
        &[&with_ca(&server.uri, &bare_dir.display().to_string())],
    );
    assert!(
        !refused.ok(),
        "a client without a certificate must be refused: {refused}"
    );
    assert!(refused.stderr.contains("TLS"), "{refused}");
    // A certificate another CA signed.
    let other_pki = dir.join("other");
    std::fs::create_dir(&other_pki).unwrap();
    let other = make_pki(&other_pki);
    let forged_dir = dir.join("forged");
    std::fs::create_dir(&forged_dir).unwrap();
    std::fs::copy(
        Path::new(&pki).join("ca-cert.pem"),
        forged_dir.join("ca-cert.pem"),
    )
    .unwrap();
    make_client_cert(Path::new(&other), &forged_dir);
    let refused = run_tool(
        dir,
        "nbdinfo",
        &[&with_ca(&server.uri, &forged_dir.display().to_string())],
    );
    assert!(
        !refused.ok(),
        "a client certificate of another CA must be refused: {refused}"
    );
    assert!(refused.stderr.contains("TLS"), "{refused}");
    run_tool(dir, "nbdinfo", &[&uri]).expect_ok();
    server.stop();

    // Without certificates to check clients against, the flag is refused.
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-verify-peer",
        "d0",
        "d1",
        "d2",
    ];
    rejected(dir, &args, &["--tls-verify-peer", "--tls-cert"]);
}

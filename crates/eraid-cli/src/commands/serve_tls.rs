//! `eraid serve`'s TLS flags: from `--tls`, `--tls-cert` and `--tls-psk`
//! to the NBD server's TLS policy (X.509 through rustls, pre-shared keys
//! through OpenSSL), checked before anything is served.

use anyhow::{bail, Result};
use clap::ValueEnum;
use eraid_nbd::{TlsCredentials, TlsPolicy};
use std::path::Path;

/// Whether NBD clients must, may or cannot use TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsMode {
    /// Plaintext clients are refused (NBD_REP_ERR_TLS_REQD).
    Require,
    /// Clients may start TLS or stay plaintext.
    Allow,
    /// No TLS: NBD_OPT_STARTTLS is refused as unsupported.
    Off,
}

/// The TLS policy the flags ask for. `mode` defaults to `require` when
/// certificates or keys are given and to `off` otherwise. Files are read
/// and checked here, so a bad one stops serve before anything is served.
pub fn tls_policy(
    mode: Option<TlsMode>,
    cert_dir: Option<&Path>,
    psk_file: Option<&Path>,
    verify_peer: bool,
) -> Result<Option<TlsPolicy>> {
    if verify_peer && cert_dir.is_none() {
        bail!("--tls-verify-peer needs --tls-cert DIR (its ca-cert.pem signs the clients)");
    }
    if let (Some(cert_dir), Some(psk_file)) = (cert_dir, psk_file) {
        bail!(
            "--tls-cert {} and --tls-psk {}: give one (X.509 certificates or pre-shared keys)",
            cert_dir.display(),
            psk_file.display()
        );
    }
    let have_credentials = cert_dir.is_some() || psk_file.is_some();
    let mode = mode.unwrap_or(if have_credentials {
        TlsMode::Require
    } else {
        TlsMode::Off
    });
    let required = match mode {
        TlsMode::Off => return Ok(None),
        TlsMode::Require => true,
        TlsMode::Allow => false,
    };
    let credentials = match (cert_dir, psk_file) {
        (Some(cert_dir), _) => {
            if !cert_dir.is_dir() {
                bail!("--tls-cert {}: not a directory", cert_dir.display());
            }
            TlsCredentials::X509(
                eraid_nbd::load_cert_dir_with(cert_dir, verify_peer)
                    .map_err(|e| anyhow::anyhow!("--tls-cert: {e}"))?,
            )
        }
        (None, Some(psk_file)) => TlsCredentials::Psk(
            eraid_nbd::load_psk_file(psk_file).map_err(|e| anyhow::anyhow!("--tls-psk: {e}"))?,
        ),
        (None, None) => {
            let mode_name = if required { "require" } else { "allow" };
            bail!(
                "--tls {mode_name} needs certificates or keys: give --tls-cert DIR or \
                 --tls-psk FILE"
            );
        }
    };
    Ok(Some(TlsPolicy {
        credentials,
        required,
    }))
}

//! `eraid serve`'s TLS flags: from `--tls`, `--tls-cert` and `--tls-psk`
//! to the NBD server's TLS policy, checked before anything is served.

use anyhow::{bail, Result};
use clap::ValueEnum;
use eraid_nbd::TlsPolicy;
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

/// The TLS policy the flags ask for. `mode` defaults to `require` when a
/// certificate directory is given and to `off` otherwise.
pub fn tls_policy(
    mode: Option<TlsMode>,
    cert_dir: Option<&Path>,
    psk_file: Option<&Path>,
) -> Result<Option<TlsPolicy>> {
    if let Some(psk_file) = psk_file {
        // rustls has no TLS-PSK; pretending would serve plaintext or fail
        // every client, so the flag is refused outright.
        bail!(
            "--tls-psk {}: TLS with pre-shared keys is not supported yet (rustls has no \
             TLS-PSK); use X.509 certificates with --tls-cert DIR",
            psk_file.display()
        );
    }
    let mode = mode.unwrap_or(if cert_dir.is_some() {
        TlsMode::Require
    } else {
        TlsMode::Off
    });
    let required = match mode {
        TlsMode::Off => return Ok(None),
        TlsMode::Require => true,
        TlsMode::Allow => false,
    };
    let Some(cert_dir) = cert_dir else {
        let mode_name = if required { "require" } else { "allow" };
        bail!("--tls {mode_name} needs certificates: give --tls-cert DIR");
    };
    if !cert_dir.is_dir() {
        bail!("--tls-cert {}: not a directory", cert_dir.display());
    }
    let server_config =
        eraid_nbd::load_cert_dir(cert_dir).map_err(|e| anyhow::anyhow!("--tls-cert: {e}"))?;
    Ok(Some(TlsPolicy {
        server_config,
        required,
    }))
}

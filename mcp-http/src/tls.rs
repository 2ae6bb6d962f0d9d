//! TLS: rustls with the ring provider, the bundled web PKI roots, the
//! operating system's trust store (read once per process), and the extra
//! CA certificates a client is given. Verification is always on.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::{ClientOptions, HttpError};

/// The trust anchors every client starts from (the bundled web PKI roots,
/// plus the system's when `os_roots`), built once per process: reading and
/// parsing a few hundred system certificates on every new client (each
/// HTTP connect, each OAuth web client) would be the same work again.
/// System certificates that cannot be read or parsed are skipped and
/// logged, never fatal.
fn base_roots(os_roots_too: bool) -> &'static RootCertStore {
    static WEB: std::sync::OnceLock<RootCertStore> = std::sync::OnceLock::new();
    static WEB_AND_OS: std::sync::OnceLock<RootCertStore> = std::sync::OnceLock::new();
    let build = |with_os: bool| {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if with_os {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::debug!(error = %e, "a certificate of the system's trust store was skipped");
            }
            let (added, ignored) = roots.add_parsable_certificates(found.certs);
            tracing::debug!(added, ignored, "the system's trust store");
        }
        roots
    };
    if os_roots_too {
        WEB_AND_OS.get_or_init(|| build(true))
    } else {
        WEB.get_or_init(|| build(false))
    }
}

/// The TLS settings of a client being built.
pub(crate) fn config(options: &ClientOptions) -> Result<rustls::ClientConfig, HttpError> {
    let mut roots = base_roots(options.os_roots).clone();
    let mut extra: Vec<CertificateDer<'static>> = Vec::new();
    if let Some(path) = &options.extra_ca_file {
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| {
                HttpError::InvalidConfig(format!(
                    "cannot read CA certificates from {}: {e}",
                    path.display()
                ))
            })?;
        if certs.is_empty() {
            return Err(HttpError::InvalidConfig(format!(
                "{} holds no PEM certificate",
                path.display()
            )));
        }
        extra.extend(certs);
    }
    if let Some(pem) = &options.extra_ca_pem {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| HttpError::InvalidConfig(format!("cannot read CA certificates: {e}")))?;
        extra.extend(certs);
    }
    for cert in extra {
        roots.add(cert).map_err(|e| {
            HttpError::InvalidConfig(format!("a CA certificate cannot be used: {e}"))
        })?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpError::InvalidConfig(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

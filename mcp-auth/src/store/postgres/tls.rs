//! TLS to the database with rustls (ring), as tokio-postgres asks for it:
//! with the URL's `sslmode` (`prefer` by default: TLS when the server offers
//! it; `require` to insist). Roots: the web PKI, plus the CA certificates a
//! platform's database is signed by (PEM). No channel binding: SCRAM
//! without it, as with most clients.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use crate::store::StoreError;

/// Makes TLS connections to the database.
#[derive(Clone)]
pub(crate) struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl RustlsConnect {
    /// Trusting the web PKI and the certificates in `extra_pem`.
    pub(crate) fn new(extra_pem: Option<&str>) -> Result<Self, StoreError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(pem) = extra_pem {
            let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| StoreError::Settings(format!("cannot read the database CA: {e}")))?;
            if certs.is_empty() {
                return Err(StoreError::Settings(
                    "the database CA holds no PEM certificate".into(),
                ));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    StoreError::Settings(format!("the database CA cannot be used: {e}"))
                })?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Settings(format!("TLS setup: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(RustlsConnect {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsHandshake;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsHandshake, io::Error> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsHandshake {
            config: self.config.clone(),
            name,
        })
    }
}

/// One connection's handshake.
pub(crate) struct RustlsHandshake {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsHandshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            let tls = connector.connect(self.name, stream).await?;
            Ok(RustlsStream(Box::new(tls)))
        })
    }
}

/// A TLS stream to the database.
pub(crate) struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

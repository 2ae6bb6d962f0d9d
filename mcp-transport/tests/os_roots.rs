//! The operating system's trust store: a CA the system trusts (here given
//! through `SSL_CERT_FILE`, which the store honours, as a corporate machine's
//! CA would be installed) is trusted with no extra CA option, and not when
//! `os_roots(false)`.
//!
//! One test in this file: it sets the environment before the first HTTP
//! client reads the store (read once per process).

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// Setting an environment variable is `unsafe` in edition 2024: sound here,
// before any other thread of this test binary reads the environment.
#![allow(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Request, to_raw};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
use mcp_stack_transport::{Lifecycle, Received, SendContext, Transport};
use serde_json::json;

async fn initialize(url: &str, options: HttpOptions) -> Result<(), String> {
    let t = StreamableHttpTransport::connect(url, options)
        .await
        .map_err(|e| e.to_string())?;
    let init = Message::from(Request::new(
        0,
        "initialize",
        Some(
            to_raw(&json!({"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}))
            .unwrap(),
        ),
    ));
    let context = SendContext::new().lifecycle(Lifecycle::Initialize);
    t.send_with(&init, &context)
        .await
        .map_err(|e| e.to_string())?;
    let answer = tokio::time::timeout(Duration::from_secs(10), t.recv())
        .await
        .map_err(|_| "no answer".to_owned())?
        .map_err(|e| e.to_string())?;
    t.close().await;
    match answer {
        Received::Message(Message::Response(_)) => Ok(()),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_in_the_system_store_is_trusted_unless_turned_off() {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-os-roots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("ca-bundle.pem");
    std::fs::write(&bundle, cert.cert.pem()).unwrap();
    // SAFETY: the only test of this binary, before any client (or other
    // thread) reads the environment.
    unsafe { std::env::set_var("SSL_CERT_FILE", &bundle) };

    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let server = Arc::new(
        HttpServer::start(HttpServerOptions::default())
            .await
            .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = Arc::clone(&server);
    let accept = tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            if let Ok(tls) = acceptor.accept(tcp).await {
                serving.serve_connection(tls);
            }
        }
    });
    let url = format!("https://{addr}/mcp");
    let options = || {
        HttpOptions::new()
            .request_timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(2))
    };

    // Trusted through the system store, with no extra CA.
    initialize(&url, options()).await.unwrap();
    // Not with the system store turned off: only the bundled roots.
    let err = initialize(&url, options().os_roots(false))
        .await
        .unwrap_err();
    assert!(err.contains("certificate"), "{err}");

    accept.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

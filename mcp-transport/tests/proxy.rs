//! The HTTP transports through an HTTP proxy: a tiny `CONNECT` proxy on
//! 127.0.0.1 (it counts the tunnels it opened, so a test knows the traffic
//! went through it) in front of the testkit's HTTP server. The environment
//! is given through `Proxy::from_lookup`: no test touches the process
//! environment.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::header::HeaderMap;
use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{
    HttpOptions, HttpTrace, Proxy, StreamableHttpTransport, WebClient,
};
use mcp_stack_transport::{Lifecycle, Received, SendContext, Transport, TransportError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const VERSION: &str = "2025-06-18";

/// What the test proxy saw and did.
#[derive(Default)]
struct ProxyLog {
    /// Connections accepted.
    connections: AtomicUsize,
    /// Tunnels opened (a 2xx answered and the server reached).
    tunnels: AtomicUsize,
    /// Each `CONNECT`: its target and its `Proxy-Authorization`, if any.
    connects: Mutex<Vec<(String, Option<String>)>>,
}

/// How the test proxy answers.
#[derive(Clone)]
enum Behaviour {
    /// Tunnels every `CONNECT`.
    Open,
    /// Tunnels only with this `Proxy-Authorization`; 407 otherwise.
    Credentials(String),
    /// Reads the `CONNECT` and never answers.
    Silent,
}

struct TestProxy {
    addr: SocketAddr,
    log: Arc<ProxyLog>,
    task: tokio::task::JoinHandle<()>,
}

impl TestProxy {
    async fn start(behaviour: Behaviour) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(ProxyLog::default());
        let seen = Arc::clone(&log);
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                seen.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(client, behaviour.clone(), Arc::clone(&seen)));
            }
        });
        TestProxy { addr, log, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn tunnels(&self) -> usize {
        self.log.tunnels.load(Ordering::SeqCst)
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One proxy connection: reads the `CONNECT` head, answers, relays.
async fn serve(mut client: TcpStream, behaviour: Behaviour, log: Arc<ProxyLog>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let auth = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    log.connects
        .lock()
        .unwrap()
        .push((target.to_owned(), auth.clone()));
    if method != "CONNECT" {
        let _ = client
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    }
    match behaviour {
        Behaviour::Silent => {
            // Holds the connection until the client gives up.
            let _ = client.read(&mut byte).await;
            return;
        }
        Behaviour::Credentials(expected) if auth.as_deref() != Some(expected.as_str()) => {
            let _ = client
                .write_all(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                      Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n",
                )
                .await;
            return;
        }
        _ => {}
    }
    // The tests' servers all listen on 127.0.0.1, which never goes through
    // an environment proxy: they are named `FAR_HOST` to the client, and the
    // proxy, which resolves names for its clients, finds them here.
    let resolved = target.replace(FAR_HOST, "127.0.0.1");
    let Ok(mut server) = TcpStream::connect(resolved).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    };
    log.tunnels.fetch_add(1, Ordering::SeqCst);
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}

/// A name for a test server that is not loopback to the client (which
/// never resolves it: the proxy does, to 127.0.0.1).
const FAR_HOST: &str = "mcp-server.test";

/// `server`'s URL under [`FAR_HOST`]: a request to it goes through an
/// environment proxy, as a request to a remote server would.
fn far_url(server: &HttpServer) -> String {
    server.url().replace("127.0.0.1", FAR_HOST)
}

fn lookup(vars: &[(&str, &str)]) -> Proxy {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Proxy::from_lookup(move |name| map.get(name).cloned())
}

fn options() -> HttpOptions {
    HttpOptions::new()
        .request_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
}

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::from(Request::new(id, method, Some(to_raw(&params).unwrap())))
}

fn initialize() -> Message {
    request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

async fn send(t: &dyn Transport, message: &Message) -> Result<(), TransportError> {
    let context = match message.method() {
        Some("initialize") => SendContext::new().lifecycle(Lifecycle::Initialize),
        Some("notifications/initialized") => SendContext::new()
            .revision(VERSION.parse().unwrap())
            .lifecycle(Lifecycle::Initialized),
        _ => SendContext::new().revision(VERSION.parse().unwrap()),
    };
    t.send_with(message, &context).await
}

/// Receives until the answer to `id` (within 10 s).
async fn answer(t: &dyn Transport, id: i64) -> Value {
    let wait = async {
        loop {
            match t.recv().await.unwrap() {
                Received::Message(m @ (Message::Response(_) | Message::Error(_)))
                    if m.id() == Some(&id.into()) =>
                {
                    return serde_json::to_value(&m).unwrap();
                }
                Received::Failed(f) if f.id == id.into() => {
                    panic!("request {id} failed: {}", f.error)
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("no answer within 10 s")
}

/// Handshake, then an `echo` call: the answer's text.
async fn handshake_and_echo(t: &dyn Transport, text: &str) -> Value {
    send(t, &initialize()).await.unwrap();
    let init = answer(t, 0).await;
    assert_eq!(init["result"]["protocolVersion"], VERSION, "{init}");
    send(
        t,
        &Message::from(Notification::new("notifications/initialized", None)),
    )
    .await
    .unwrap();
    let call = request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
    );
    send(t, &call).await.unwrap();
    answer(t, 1).await["result"]["content"][0]["text"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_goes_through_the_proxy_the_environment_names() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let proxy = TestProxy::start(Behaviour::Open).await;
    // A `NO_PROXY` that does not name the server changes nothing.
    let options = options().proxy(lookup(&[
        ("HTTP_PROXY", &proxy.url()),
        ("NO_PROXY", "other.test,10.0.0.0/8"),
    ]));
    let t = StreamableHttpTransport::connect(&far_url(&server), options)
        .await
        .unwrap();
    assert_eq!(handshake_and_echo(&t, "proxied").await, "proxied");
    assert!(proxy.tunnels() >= 1);
    let connects = proxy.log.connects.lock().unwrap().clone();
    let target = format!("{FAR_HOST}:{}", server.addr().port());
    assert!(
        connects
            .iter()
            .all(|(t, auth)| *t == target && auth.is_none()),
        "{connects:?}"
    );
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_bypasses_an_environment_proxy() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let proxy = TestProxy::start(Behaviour::Open).await;
    for vars in [
        vec![("http_proxy", proxy.url())],
        vec![("ALL_PROXY", proxy.url())],
        vec![
            ("http_proxy", proxy.url()),
            ("NO_PROXY", "127.0.0.1".into()),
        ],
    ] {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let t = StreamableHttpTransport::connect(&server.url(), options().proxy(lookup(&vars)))
            .await
            .unwrap();
        // The call is answered; had it gone to the proxy, the proxy would
        // have counted the connection before the answer came.
        assert_eq!(handshake_and_echo(&t, "direct").await, "direct");
        t.close().await;
    }
    assert_eq!(proxy.log.connections.load(Ordering::SeqCst), 0);
    assert_eq!(proxy.tunnels(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_407_is_a_typed_error_that_asks_for_credentials() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let proxy = TestProxy::start(Behaviour::Credentials("Basic dTpw".to_owned())).await;

    // No credentials.
    let t =
        StreamableHttpTransport::connect(&server.url(), options().proxy(Proxy::url(proxy.url())))
            .await
            .unwrap();
    let err = send(&t, &initialize()).await.unwrap_err();
    let TransportError::ProxyRefused {
        proxy: shown,
        target,
        status,
        credentials_sent,
    } = &err
    else {
        panic!("not a proxy refusal: {err}");
    };
    assert_eq!((*status, *credentials_sent), (407, false));
    assert_eq!(*shown, proxy.url());
    assert_eq!(*target, server.addr().to_string());
    assert!(err.to_string().contains("needs credentials"), "{err}");
    assert_eq!(
        err.http_status(),
        None,
        "the status is the proxy's, not the server's"
    );
    t.close().await;

    // Wrong credentials: said so, and never shown.
    let wrong = format!("http://u:wrong-secret@{}", proxy.addr);
    let t = StreamableHttpTransport::connect(&server.url(), options().proxy(Proxy::url(wrong)))
        .await
        .unwrap();
    let err = send(&t, &initialize()).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransportError::ProxyRefused {
                status: 407,
                credentials_sent: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("refused the credentials"), "{err}");
    assert!(!err.to_string().contains("wrong-secret"), "{err}");
    assert!(!format!("{err:?}").contains("wrong-secret"), "{err:?}");
    t.close().await;
    assert_eq!(proxy.tunnels(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_reach_the_proxy_as_proxy_authorization_and_nowhere_else() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    // base64("al@ice:s3cret")
    let expected = "Basic YWxAaWNlOnMzY3JldA==";
    let proxy = TestProxy::start(Behaviour::Credentials(expected.to_owned())).await;
    let traces = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&traces);
    let url = format!("http://al%40ice:s3cret@{}", proxy.addr);
    let options = options()
        .proxy(Proxy::url(url))
        .observer(move |e: &HttpTrace| seen.lock().unwrap().push(format!("{e:?}")));
    assert!(!format!("{options:?}").contains("s3cret"));
    let t = StreamableHttpTransport::connect(&server.url(), options)
        .await
        .unwrap();
    assert_eq!(
        handshake_and_echo(&t, "with credentials").await,
        "with credentials"
    );
    assert!(proxy.tunnels() >= 1);
    let connects = proxy.log.connects.lock().unwrap().clone();
    assert!(
        connects
            .iter()
            .all(|(_, auth)| auth.as_deref() == Some(expected)),
        "{connects:?}"
    );
    t.close().await;
    let traces = traces.lock().unwrap().join("\n");
    assert!(
        !traces.contains("s3cret") && !traces.contains("YWxAaWNl"),
        "{traces}"
    );
}

/// TLS to the server runs inside the tunnel, with the same roots and ALPN
/// as a direct connection: an `h2`-only TLS server is reached over HTTP/2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_runs_inside_the_tunnel() {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let cert = rcgen::generate_simple_self_signed(vec![FAR_HOST.to_string()]).unwrap();
    let pem = cert.cert.pem();
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let server = Arc::new(
        HttpServer::start(HttpServerOptions::default())
            .await
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = Arc::clone(&server);
    let accept = tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            if let Ok(tls) = acceptor.accept(tcp).await {
                serving.serve_connection_h2(tls);
            }
        }
    });
    let proxy = TestProxy::start(Behaviour::Open).await;
    let options = options().extra_ca_pem(pem).proxy(lookup(&[
        ("HTTPS_PROXY", &proxy.url()),
        ("http_proxy", "http://unused:1"),
    ]));
    let url = format!("https://{FAR_HOST}:{}/mcp", addr.port());
    let t = StreamableHttpTransport::connect(&url, options)
        .await
        .unwrap();
    assert_eq!(handshake_and_echo(&t, "tls inside").await, "tls inside");
    assert!(proxy.tunnels() >= 1);
    t.close().await;
    accept.abort();
}

/// The OAuth exchanges (`WebClient`) take the same proxy as the transport.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_client_goes_through_the_same_proxy() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let proxy = TestProxy::start(Behaviour::Open).await;
    let web = WebClient::new(&options().proxy(Proxy::url(proxy.url()))).unwrap();
    let url = format!(
        "http://{}/.well-known/oauth-protected-resource",
        server.addr()
    );
    let answer = web.get(&url, HeaderMap::new()).await.unwrap();
    assert!(
        answer.status >= 200,
        "an answer came back: {}",
        answer.status
    );
    assert_eq!(proxy.tunnels(), 1);

    // And `Proxy::none()` overrides an environment that names one.
    let web = WebClient::new(&options().proxy(Proxy::none())).unwrap();
    web.get(&url, HeaderMap::new()).await.unwrap();
    assert_eq!(proxy.log.connections.load(Ordering::SeqCst), 1);
}

/// The connect timeout covers the proxy's connect and the `CONNECT`
/// exchange: a proxy that never answers is a timeout that names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_proxy_is_a_connect_timeout_naming_it() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let proxy = TestProxy::start(Behaviour::Silent).await;
    let options = options()
        .connect_timeout(Duration::from_millis(300))
        .proxy(Proxy::url(proxy.url()));
    let t = StreamableHttpTransport::connect(&server.url(), options)
        .await
        .unwrap();
    let err = tokio::time::timeout(Duration::from_secs(4), send(&t, &initialize()))
        .await
        .expect("the connect timeout bounds the CONNECT exchange")
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains(&proxy.url()), "{err}");
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_unusable_proxy_is_named() {
    let server = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap();
    drop(closed);
    let t = StreamableHttpTransport::connect(
        &server.url(),
        options().proxy(Proxy::url(format!("http://{closed_addr}"))),
    )
    .await
    .unwrap();
    let err = send(&t, &initialize()).await.unwrap_err();
    assert!(matches!(err, TransportError::Http { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("cannot reach the proxy http://{closed_addr}")),
        "{err}"
    );
    t.close().await;

    // A SOCKS proxy in the environment fails the requests it concerns,
    // naming the variable, with what to do.
    let t = StreamableHttpTransport::connect(
        &far_url(&server),
        options().proxy(lookup(&[("ALL_PROXY", "socks5://user:pw@127.0.0.1:1080")])),
    )
    .await
    .unwrap();
    let err = send(&t, &initialize()).await.unwrap_err();
    assert!(matches!(err, TransportError::InvalidConfig(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("ALL_PROXY") && text.contains("SOCKS") && text.contains("NO_PROXY"),
        "{text}"
    );
    assert!(!text.contains("pw"), "{text}");
    t.close().await;

    // An explicit proxy that is no proxy URL fails up front.
    let err = StreamableHttpTransport::connect(
        &server.url(),
        options().proxy(Proxy::url("https://user:pw@proxy.example:443")),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TransportError::InvalidConfig(_)), "{err}");
    assert!(err.to_string().contains("https:// proxy"), "{err}");
    assert!(!err.to_string().contains("pw"), "{err}");
}

//! `bench http`: `tools/call` round trips to one local streamable HTTP server
//! on 127.0.0.1, with this stack (`mcp-stack-session` over `mcp-stack-transport`'s
//! streamable HTTP transport), with the `rmcp` SDK's streamable HTTP client
//! (on reqwest), and with a raw floor (hyper HTTP/1.1 connections POSTing
//! pre-serialized JSON-RPC, one `serde_json` parse per response),
//! sequentially and with 8 calls in flight.
//!
//! The server is `mcp-testkit`'s HTTP server, in this process but on its own
//! thread and tokio runtime, so that it does not share the clients' runtime:
//! stateful (an `Mcp-Session-Id` per client), answering with
//! `application/json` by default (the fast path; `--answers sse` for SSE
//! streams). Each client has its own session; the clients take turns, round
//! after round, so that noise from elsewhere on the machine hits them alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::clients::{Ours, Rmcp, TEXT};
use super::rounds::{Mode, Results, RunConfig, Timed, ratio_in, run_rounds, verdict};
use super::stdio::IN_FLIGHT;
use crate::args::HttpArgs;

/// The protocol version the floor asks for.
const FLOOR_VERSION: &str = mcp_stack_session::ProtocolVersion::LATEST_HANDSHAKE.as_str();

pub(crate) fn run(args: HttpArgs) -> Result<(), String> {
    if args.instructions {
        return super::instructions::http(&args);
    }
    let HttpArgs {
        n,
        n_inflight,
        rounds,
        answers,
        server_threads,
        runtime: flavor,
        only,
        era,
        auth,
        token_store,
        in_flight,
        sequential_only,
        url: given_url,
        ..
    } = args;
    let n_inflight = n_inflight.unwrap_or(n.saturating_mul(4));
    let only = only.unwrap_or_default();
    let era = match era.as_str() {
        "legacy" => mcp_stack_testkit::Era::Legacy,
        "dual" => mcp_stack_testkit::Era::Dual,
        other => {
            return Err(format!(
                "--era: unknown `{other}` (known: legacy, dual; dual lets ours speak 2026-07-28 \
                 while rmcp and the floor use the handshake)"
            ));
        }
    };
    let clients = match only.as_str() {
        "" => vec![true; 3],
        "ours" => vec![true, false, false],
        "rmcp" => vec![false, true, false],
        "floor" => vec![false, false, true],
        other => {
            return Err(format!(
                "--only: unknown client `{other}` (known: ours, rmcp, floor)"
            ));
        }
    };
    let modes = super::rounds::modes(&in_flight, sequential_only)?;
    let json_response = match answers.as_str() {
        "json" => true,
        "sse" => false,
        other => return Err(format!("--answers: unknown `{other}` (known: json, sse)")),
    };
    let run = RunConfig {
        n,
        n_inflight,
        rounds,
        clients,
        modes,
    };
    if n == 0 || n_inflight < run.widest() || rounds == 0 || server_threads == 0 {
        return Err(
            "--n, --rounds and --server-threads must be at least 1, --n-inflight at least the \
             widest --in-flight"
                .into(),
        );
    }

    let (runtime, runtime_name) = super::stdio::client_runtime(&flavor)?;

    let mut options = HttpServerOptions {
        json_response,
        ..HttpServerOptions::default()
    };
    options.server.era = era;
    // `--url` (what --instructions passes on): a server outside this process.
    let server = match given_url {
        Some(url) => Server::Given(url),
        None => Server::Own(ServerThread::start(options, server_threads)?),
    };
    let server_runtime = match server_threads {
        1 => "tokio current-thread".to_owned(),
        k => format!("tokio multi-thread ({k} workers)"),
    };
    let widths: Vec<String> = run
        .modes
        .iter()
        .filter(|m| **m != Mode::Sequential)
        .map(|m| m.width().to_string())
        .collect();
    let in_flight_text = match widths.as_slice() {
        [] => String::new(),
        w => format!(" and {n_inflight} with {} in flight", w.join(", ")),
    };
    println!(
        "bench http: tools/call `echo` round trips over streamable HTTP to 127.0.0.1; {n} sequential \
         calls{in_flight_text} per run; best and median of {rounds} interleaved rounds after a \
         warm-up; clients on a {runtime_name} runtime"
    );
    let url = server.url().to_owned();
    let counts = Arc::new(super::token_store::Counts::default());
    let store = auth.then_some((token_store.as_str(), &counts));
    let result = bench(&runtime, &url, &run, store);
    server.stop();
    let results = result?;
    let mode = match (json_response, era) {
        (true, mcp_stack_testkit::Era::Dual) => {
            "dual era: sessions for the handshake, stateless 2026-07-28 with a fresh server \
             instance per request; application/json answers"
        }
        (false, mcp_stack_testkit::Era::Dual) => {
            "dual era: sessions for the handshake, stateless 2026-07-28 with a fresh server \
             instance per request; SSE answers"
        }
        (true, _) => "stateful, application/json answers",
        (false, _) => "stateful, SSE answers",
    };
    let labels = if auth { AUTH_CLIENTS } else { CLIENTS };
    print_table(
        &format!(
            "mcp-testkit streamable HTTP ({mode}), in-process on its own {server_runtime} runtime"
        ),
        &url,
        &results,
        &labels,
        &run.modes,
    );
    if auth {
        let ratio = |mode: Mode| {
            let m = run.modes.iter().position(|x| *x == mode)?;
            let ours = results.first().and_then(|r| r.get(m))?;
            let with = results.get(1).and_then(|r| r.get(m))?;
            (!ours.rates.is_empty() && !with.rates.is_empty()).then(|| with.best() / ours.best())
        };
        let show = |r: Option<f64>| match r {
            Some(r) if r >= 0.95 => format!("{r:.3}x, met"),
            Some(r) => format!("{r:.3}x, NOT met"),
            None => "not measured".to_owned(),
        };
        println!(
            "auth target (best runs): ours with a token >= 0.95x ours without: sequential {}; \
             8 in flight {}",
            show(ratio(Mode::Sequential)),
            show(ratio(Mode::InFlight(IN_FLIGHT)))
        );
        println!(
            "  ours + OAuth token: the same session with mcp_stack_auth::client::OAuthClient as the\n    \
             transport's authorizer, holding a valid stored token (credentials read per request,\n    \
             Authorization header added); the server ignores the header, so the difference\n    \
             is the client's authorization cost."
        );
        println!("  {}", counts.summary(&token_store));
    }
    println!();
    println!(
        "  ours: mcp_stack_session::Session::call_tool over mcp_stack_transport::http::StreamableHttpTransport"
    );
    println!("    (HttpOptions::new(); the tool's input schema is checked on every call).");
    println!("  rmcp: rmcp::Peer::call_tool over rmcp::transport::StreamableHttpClientTransport");
    println!("    (from_uri: its default reqwest client, no TLS).");
    println!("  floor: hyper::client::conn::http1 connections, one per caller, POSTing a request");
    println!("    formatted in place and parsing each body with serde_json::from_slice::<Value>;");
    println!("    no GET stream, no schema, no id table.");
    if era == mcp_stack_testkit::Era::Dual {
        println!("  --era dual: ours speaks 2026-07-28 (no session, headers mirrored; the testkit");
        println!("    serves each such request with a fresh server instance), rmcp and the floor");
        println!("    the handshake with a session: the ratios compare different server work too.");
    }
    println!("  K in flight: K tasks each calling in a loop; ours and rmcp share one client,");
    println!("    the floor has one connection per task.");
    Ok(())
}

const CLIENTS: [&str; 3] = [
    "ours (mcp-stack-session)",
    "rmcp 3 (reqwest)",
    "floor (raw hyper)",
];

/// With `--auth`, the second client is ours with a token.
const AUTH_CLIENTS: [&str; 3] = [
    "ours (mcp-stack-session)",
    "ours + OAuth token",
    "floor (raw hyper)",
];

/// The server the clients call.
enum Server {
    /// On a thread of this process.
    Own(ServerThread),
    /// Somewhere else (`--url`).
    Given(String),
}

impl Server {
    fn url(&self) -> &str {
        match self {
            Server::Own(thread) => &thread.url,
            Server::Given(url) => url,
        }
    }

    fn stop(self) {
        if let Server::Own(thread) = self {
            thread.stop();
        }
    }
}

/// The test server, on a thread and runtime of its own.
pub(super) struct ServerThread {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl ServerThread {
    pub(super) fn start(options: HttpServerOptions, threads: usize) -> Result<Self, String> {
        let runtime = match threads {
            1 => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            k => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(k)
                .enable_all()
                .build(),
        }
        .map_err(|e| format!("cannot start the server's runtime: {e}"))?;
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("bench-http-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    match HttpServer::start(options).await {
                        Ok(server) => {
                            let _ = url_tx.send(Ok(server.url()));
                            let _ = stopped.await;
                            server.shutdown().await;
                        }
                        Err(e) => {
                            let _ = url_tx.send(Err(format!("cannot start the server: {e}")));
                        }
                    }
                });
            })
            .map_err(|e| format!("cannot start the server thread: {e}"))?;
        let url = url_rx
            .recv()
            .map_err(|_| "the server thread ended early".to_owned())??;
        Ok(ServerThread { url, stop, thread })
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    pub(super) fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

fn bench(
    rt: &tokio::runtime::Runtime,
    url: &str,
    run: &RunConfig,
    store: Option<(&str, &Arc<super::token_store::Counts>)>,
) -> Result<Results, String> {
    let auth = store.is_some();
    let on = |c: usize| run.clients.get(c).copied().unwrap_or(false);
    let (with_ours, with_second, with_floor) = (on(0), on(1), on(2));
    let ours = match with_ours {
        true => Some(rt.block_on(connect_ours(url))?),
        false => None,
    };
    let rmcp = match with_second && !auth {
        true => Some(rt.block_on(connect_rmcp(url))?),
        false => None,
    };
    let ours_auth = match (with_second, store) {
        (true, Some((kind, counts))) => {
            Some(rt.block_on(connect_ours_authorized(url, kind, counts))?)
        }
        _ => None,
    };
    let floor = match with_floor {
        true => Some(rt.block_on(Floor::connect(url, run.widest()))?),
        false => None,
    };
    if let Some(ours) = &ours {
        println!("ours negotiated protocol {}", ours.protocol());
    }
    let one_run = |c: usize, mode: Mode, calls: usize| -> Result<Timed, String> {
        match (c, mode, &ours, &rmcp, &floor) {
            (0, Mode::Sequential, Some(ours), _, _) => rt.block_on(ours.sequential(calls)),
            (0, Mode::InFlight(k), Some(ours), _, _) => rt.block_on(ours.in_flight(rt, k, calls)),
            (1, Mode::Sequential, _, Some(rmcp), _) => rt.block_on(rmcp.sequential(calls)),
            (1, Mode::InFlight(k), _, Some(rmcp), _) => rt.block_on(rmcp.in_flight(rt, k, calls)),
            (1, Mode::Sequential, _, None, _) => match &ours_auth {
                Some(o) => rt.block_on(o.sequential(calls)),
                None => Ok(Vec::new()),
            },
            (1, Mode::InFlight(k), _, None, _) => match &ours_auth {
                Some(o) => rt.block_on(o.in_flight(rt, k, calls)),
                None => Ok(Vec::new()),
            },
            (2, Mode::Sequential, _, _, Some(floor)) => rt.block_on(floor.sequential(calls)),
            (2, Mode::InFlight(k), _, _, Some(floor)) => rt.block_on(floor.in_flight(rt, k, calls)),
            _ => Ok(Vec::new()),
        }
        .map(Timed::from)
    };

    let results = run_rounds(run, one_run)?;
    if let Some(ours) = ours {
        rt.block_on(ours.close());
    }
    if let Some(rmcp) = rmcp {
        rt.block_on(rmcp.close());
    }
    if let Some(o) = ours_auth {
        rt.block_on(o.close());
    }
    drop(floor);
    Ok(results)
}

fn print_table(server: &str, url: &str, results: &Results, labels: &[&str; 3], modes: &[Mode]) {
    println!();
    println!("server: {server} at {url}");
    let auth = labels == &AUTH_CLIENTS;
    let second = if auth { "vs auth" } else { "vs rmcp" };
    let ratios = super::rounds::print_rows(results, labels, modes, second);
    if auth {
        return;
    }
    let eight = Mode::InFlight(IN_FLIGHT);
    println!(
        "targets (best runs): sequential >= 1.5x rmcp: {}; 8 in flight >= 1.5x rmcp: {}; \
         sequential >= 0.8x floor: {}; 8 in flight >= 0.8x floor: {}",
        verdict(ratio_in(&ratios, Mode::Sequential, 0), 1.5),
        verdict(ratio_in(&ratios, eight, 0), 1.5),
        verdict(ratio_in(&ratios, Mode::Sequential, 1), 0.8),
        verdict(ratio_in(&ratios, eight, 1), 0.8),
    );
    super::rounds::noise_note(results, labels, modes);
}

/// This stack over streamable HTTP.
async fn connect_ours(url: &str) -> Result<Ours, String> {
    let transport = StreamableHttpTransport::connect(url, HttpOptions::new())
        .await
        .map_err(|e| format!("ours: {e}"))?;
    Ours::over(transport).await
}

/// This stack with an OAuth client holding a valid token as the
/// transport's authorizer.
async fn connect_ours_authorized(
    url: &str,
    kind: &str,
    counts: &Arc<super::token_store::Counts>,
) -> Result<Ours, String> {
    use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
    use mcp_stack_auth::store::{StoredAuth, StoredTokens, TokenStore};
    let server = mcp_stack_auth::canonical::canonical_resource(url).map_err(|e| e.to_string())?;
    let store = super::token_store::open(kind, counts).await?;
    let mut entry = StoredAuth::new(server, "http://127.0.0.1/bench-issuer");
    let mut tokens = StoredTokens::bearer(mcp_stack_auth::Secret::new("bench-access-token"));
    tokens.expires_at = Some(u64::MAX / 2);
    entry.tokens = Some(tokens);
    store.save(&entry).await.map_err(|e| e.to_string())?;
    let options = HttpOptions::new();
    // The login written before the run is not a request's store operation.
    counts.store_ops.store(0, Ordering::Relaxed);
    let client = OAuthClient::new(OAuthConfig::new(url), &options, Arc::new(store), None)
        .map_err(|e| e.to_string())?;
    let authorizer = super::token_store::CountedAuthorizer {
        inner: client,
        counts: counts.clone(),
    };
    let transport = StreamableHttpTransport::connect(url, options.authorizer(Arc::new(authorizer)))
        .await
        .map_err(|e| format!("ours + auth: {e}"))?;
    Ours::over(transport).await
}

/// `rmcp`'s streamable HTTP client.
async fn connect_rmcp(url: &str) -> Result<Rmcp, String> {
    use rmcp::ServiceExt;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    let service = ().serve(transport).await.map_err(|e| format!("rmcp: {e}"))?;
    Rmcp::checked(service).await
}

/// The floor: HTTP/1.1 connections of its own (one per caller), requests
/// formatted in place, one `Value` parse per answer.
struct Floor {
    shared: Arc<FloorShared>,
    /// One connection per caller; the first serves the sequential runs.
    connections: Vec<Arc<Mutex<SendRequest<Full<Bytes>>>>>,
}

#[derive(Debug)]
struct FloorShared {
    /// `host:port`.
    authority: String,
    path: String,
    session_id: String,
    next_id: AtomicU64,
}

impl Floor {
    /// `width` connections (at least one).
    async fn connect(url: &str, width: usize) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("floor: not an http:// URL: {url}"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut connections = Vec::with_capacity(width.max(1));
        for _ in 0..width.max(1) {
            let stream = tokio::net::TcpStream::connect(authority)
                .await
                .map_err(|e| format!("floor: cannot connect: {e}"))?;
            let _ = stream.set_nodelay(true);
            let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| format!("floor: {e}"))?;
            tokio::spawn(connection);
            connections.push(Arc::new(Mutex::new(send)));
        }
        let mut shared = FloorShared {
            authority: authority.to_owned(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            session_id: String::new(),
            next_id: AtomicU64::new(1),
        };
        let first = connections
            .first()
            .ok_or_else(|| "floor: no connection".to_owned())?;
        let mut send = first.lock().await;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": FLOOR_VERSION, "capabilities": {},
            "clientInfo": {"name": "bench-floor", "version": "0"}}});
        let body = serde_json::to_vec(&init).map_err(|e| format!("floor: {e}"))?;
        let (status, session, answer) = shared.post(&mut send, body.into()).await?;
        if answer.get("result").is_none() {
            return Err(format!("floor: initialize failed ({status}): {answer}"));
        }
        shared.session_id = session.ok_or("floor: the server gave no Mcp-Session-Id")?;
        let notification =
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let (status, _, _) = shared.post(&mut send, notification).await?;
        if status != StatusCode::ACCEPTED {
            return Err(format!(
                "floor: notifications/initialized answered {status}"
            ));
        }
        drop(send);
        Ok(Floor {
            shared: Arc::new(shared),
            connections,
        })
    }

    async fn sequential(&self, calls: usize) -> Result<Vec<Duration>, String> {
        let shared = Arc::clone(&self.shared);
        let connection = self
            .connections
            .first()
            .cloned()
            .ok_or_else(|| "floor: no connection".to_owned())?;
        let task = tokio::spawn(async move {
            let mut send = connection.lock().await;
            let mut latencies = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = Instant::now();
                shared.call(&mut send).await?;
                latencies.push(start.elapsed());
            }
            Ok::<_, String>(latencies)
        });
        task.await
            .map_err(|e| format!("the caller task failed: {e}"))?
    }

    async fn in_flight(
        &self,
        rt: &tokio::runtime::Runtime,
        width: usize,
        calls: usize,
    ) -> Result<Vec<Duration>, String> {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = self
            .connections
            .iter()
            .take(width.max(1))
            .map(|connection| {
                let next = Arc::clone(&next);
                let shared = Arc::clone(&self.shared);
                let connection = Arc::clone(connection);
                rt.spawn(async move {
                    let mut send = connection.lock().await;
                    let mut latencies = Vec::with_capacity(calls / width.max(1) + 1);
                    while next.fetch_add(1, Ordering::Relaxed) < calls {
                        let start = Instant::now();
                        shared.call(&mut send).await?;
                        latencies.push(start.elapsed());
                    }
                    Ok::<_, String>(latencies)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(calls);
        for task in tasks {
            all.extend(
                task.await
                    .map_err(|e| format!("a caller task failed: {e}"))??,
            );
        }
        Ok(all)
    }
}

impl FloorShared {
    /// One `tools/call` round trip.
    async fn call(&self, send: &mut SendRequest<Full<Bytes>>) -> Result<(), String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#
        );
        let (_, _, answer) = self.post(send, body.into()).await?;
        if answer.get("result").is_some() {
            std::hint::black_box(answer);
            Ok(())
        } else {
            Err(format!("floor: tools/call failed: {answer}"))
        }
    }

    /// POSTs a body; returns the status, the session id header and the
    /// parsed JSON answer (`null` for an empty body).
    async fn post(
        &self,
        send: &mut SendRequest<Full<Bytes>>,
        body: Bytes,
    ) -> Result<(StatusCode, Option<String>, Value), String> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(&self.path)
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if !self.session_id.is_empty() {
            request = request
                .header("mcp-session-id", &self.session_id)
                .header("mcp-protocol-version", FLOOR_VERSION);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| format!("floor: {e}"))?;
        send.ready().await.map_err(|e| format!("floor: {e}"))?;
        let response = send
            .send_request(request)
            .await
            .map_err(|e| format!("floor: {e}"))?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let is_json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("floor: {e}"))?
            .to_bytes();
        let answer = if bytes.is_empty() {
            Value::Null
        } else if is_json {
            serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("floor: {e}"))?
        } else {
            // An SSE answer (`--answers sse`): the last `data:` line.
            let text = std::str::from_utf8(&bytes).map_err(|e| format!("floor: {e}"))?;
            let data = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .rfind(|d| !d.is_empty())
                .ok_or_else(|| format!("floor: no data in the answer ({status})"))?;
            serde_json::from_str::<Value>(data).map_err(|e| format!("floor: {e}"))?
        };
        Ok((status, session, answer))
    }
}

/// The server `bench http` with these options calls, started on a thread of
/// this process (for `--instructions`, which runs the clients under valgrind
/// in children and passes them the URL, so that the server's instructions
/// are not counted).
pub(super) fn start_server(args: &HttpArgs) -> Result<ServerThread, String> {
    let json_response = match args.answers.as_str() {
        "json" => true,
        "sse" => false,
        other => return Err(format!("--answers: unknown `{other}` (known: json, sse)")),
    };
    let mut options = HttpServerOptions {
        json_response,
        ..HttpServerOptions::default()
    };
    options.server.era = match args.era.as_str() {
        "legacy" => mcp_stack_testkit::Era::Legacy,
        "dual" => mcp_stack_testkit::Era::Dual,
        other => return Err(format!("--era: unknown `{other}` (known: legacy, dual)")),
    };
    ServerThread::start(options, args.server_threads.max(1))
}

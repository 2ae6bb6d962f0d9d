//! Our own MCP server for tests and demos: well-behaved, or broken on purpose.
//!
//! `mcp-testkit` is a small MCP server (protocol revisions 2024-11-05 to
//! 2025-11-25, and 2026-07-28 with [`ServerOptions::era`] `Modern` or `Dual`)
//! that speaks newline-delimited JSON-RPC over stdio, and over HTTP with the
//! [`http`] module (streamable HTTP, sessions or the stateless 2026-07-28
//! form with header validation, and legacy HTTP+SSE). Client tests
//! run it as a child process (the `mcp-testkit` binary, or a program that calls
//! [`run`] / [`serve_stdio`]) or in-process over any `AsyncRead`/`AsyncWrite`
//! pair with [`serve`]. With the cargo feature `runtime`, `InProcessConnector`
//! is an `mcp-stack-runtime` connector that starts it in-process per connect.
//!
//! Well-behaved, it answers `initialize` (echoing a supported requested
//! version, else `2025-11-25`), `ping`, `logging/setLevel`, `tools/list`
//! (paginated with [`ServerOptions::page_size`]), `tools/call`, and the
//! resource, prompt and completion methods below, handles
//! `notifications/cancelled` (a cancelled call gets no response) and runs calls
//! concurrently. Its tools:
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `echo` | `text` | the text |
//! | `add` | `a`, `b` (numbers) | the sum, as text and as `structuredContent: {sum}` (with an `outputSchema`) |
//! | `read_file` | `path`, `maxBytes?` | the file's text; confined to the workspace (no absolute paths, no `..`, no symlinks out) |
//! | `slow` | `ms` | `done after N ms`, after sleeping; on 2025-11-25 it may run as a task |
//! | `fail` | `message?` | `isError: true` |
//! | `progress` | `steps`, `intervalMs?` | `notifications/progress` per step when the call has a progress token |
//! | `get_env` | `name` | the variable's value, or `isError: true` when unset |
//! | `bad_output` | — | `structuredContent` that violates its own `outputSchema` |
//! | `touch_resource` | `uri` | a new revision of the resource; `notifications/resources/updated` to its subscribers |
//! | `add_resource` | — | adds `test://added/N`; `notifications/resources/list_changed` |
//! | `countdown` | `polls?` (default 2), `fail?` | as a task, completes (or fails) at the `polls`th `tasks/get`; called plainly, answers at once |
//! | `ask_user` | `mode?` (`form`, the default, or `url`) | elicitation: a form (`name` required, `age`, `subscribe` default false) or a URL (`https://example.com/connect?elicitation=ID`); reports the action and content (text and `structuredContent`); content that breaks the form is an `isError` result, never reported |
//! | `sample` | `prompt` | `sampling/createMessage` (one user text message, `maxTokens`); reports the model's text and name |
//! | `list_roots` | — | `roots/list`; reports the roots and how many `notifications/roots/list_changed` the connection received |
//! | `ask_name` (2026-07-28 only) | — | an `input_required` result asking for a name (elicitation), then `hello NAME` on the retry |
//! | `route` (2026-07-28 only) | `query`, `region?`, `shard?` | where the query would run; `region` and `shard` carry `x-mcp-header` (`Mcp-Param-Region`, `Mcp-Param-Shard` over HTTP) |
//! | `bad_header` (2026-07-28 only) | `weight?` | an invalid `x-mcp-header` (on a `number`): a conforming HTTP client drops the tool |
//!
//! So a legacy client sees the 14 tools of [`TOOL_NAMES`], a modern one the
//! 17 of [`MODERN_TOOL_NAMES`] (16 after an HTTP client drops `bad_header`).
//!
//! Tasks, deterministically (no clock decides when a `countdown` ends: the
//! client's polls do):
//!
//! - 2025-11-25 (a session that negotiated it): capability `tasks: {list,
//!   cancel, requests: {tools: {call}}}`; `slow` and `countdown` have
//!   `execution.taskSupport: "optional"`, and a call of either with
//!   `params.task` answers a `CreateTaskResult` (any other tool: `-32601`).
//!   `tasks/get`, `tasks/result` (blocks until the task ends), `tasks/list`
//!   (paged), `tasks/cancel` (`-32602` for an ended task), and
//!   `notifications/tasks/status` when a task ends.
//! - 2026-07-28: the extension `io.modelcontextprotocol/tasks` in
//!   `server/discover`; a `countdown` call whose `_meta` declares it is
//!   answered with `resultType: "task"`; `tasks/get` (the result or error
//!   inline), `tasks/update` (acknowledged), `tasks/cancel` (acknowledged);
//!   `-32021` for a task request that does not declare the extension.
//! - Every task suggests a 20 ms poll interval.
//!
//! `ask_user`, `sample` and `list_roots` ask the client. Before 2026-07-28
//! they send `elicitation/create`, `sampling/createMessage` or `roots/list`
//! while the call is pending and wait for the answer (over HTTP on an SSE
//! stream: the GET stream, else the oldest open request stream; legacy
//! HTTP+SSE's stream); after an accepted URL-mode elicitation (2025-11-25)
//! they send `notifications/elicitation/complete` with its `elicitationId`.
//! In 2026-07-28 they answer `input_required` (keys `user`, `sample`,
//! `roots`; URL mode has no `elicitationId` there) and complete on the retry
//! that carries the answer and the `requestState`. A client that did not
//! declare the capability, the elicitation mode, or a revision that has it
//! (elicitation 2025-06-18, URL mode 2025-11-25) is never asked: the tool
//! answers `isError` saying what is missing. A client's error answer is an
//! `isError` result too.
//!
//! It also serves resources, prompts and completion, in every era
//! (capabilities `resources: {subscribe, listChanged}`, `prompts:
//! {listChanged}`, `completions: {}`):
//!
//! - `resources/list` (paged like `tools/list`): `test://text/1` …
//!   `test://text/N` (text; N is [`ServerOptions::resource_count`]),
//!   `test://blob/1` (eight bytes that are not UTF-8), `test://blob/large`
//!   ([`ServerOptions::blob_bytes`] bytes), then any `add_resource` added.
//!   `resources/templates/list`: `test://text/{id}` and
//!   `test://greeting/{name}`; `resources/read` reads any URI they match
//!   (`test://greeting/bob` is `Hello, bob!`). An unknown URI is `-32002`
//!   (`-32602` in 2026-07-28), `data: {"uri"}`.
//! - Updates: before 2026-07-28 `resources/subscribe`/`unsubscribe`, and
//!   every connection that sent `initialize` hears of list changes; in
//!   2026-07-28 `subscriptions/listen` with `resourceSubscriptions` and
//!   `resourcesListChanged` (notifications tagged with the subscription id).
//!   An HTTP server's sessions and requests share one set of resources.
//! - Prompts ([`PROMPT_NAMES`]): `greeting` (`name`), `review` (`code`,
//!   `style?`; two messages), `scaffold` (`framework`, `language`); a missing
//!   required argument or an unknown prompt is `-32602` naming it.
//! - `completion/complete`: `review`'s `style` (concise, detailed,
//!   friendly), `greeting`'s and `test://greeting/{name}`'s `name`,
//!   `scaffold`'s `framework` and `language` (only the framework's languages
//!   when `context.arguments.framework` names one), `test://text/{id}`'s
//!   `id`; filtered by prefix ignoring case, at most 100 values, with
//!   `total` and `hasMore`.
//!
//! Arguments that break a tool's input schema (missing, wrong type, out of
//! range) and unknown tools get `-32602` with `data: {"field", "reason"}`;
//! failures of the tool itself (a missing file, a refused path) are results
//! with `isError: true`. Unknown methods get `-32601`. Bad client input never
//! panics the server.
//!
//! It speaks through the same `mcp-stack-protocol` types a client parses: its
//! answers and notifications are built as them (the tool definitions are
//! `Tool` values) and requests are read into them.
//!
//! Each [`Misbehaviour`] breaks one thing on purpose, for testing how a client
//! copes: noise on stdout, a handshake that never completes, an unsupported
//! protocol version, a crash, an oversized line, … (`mcp-testkit
//! --list-misbehaviours` lists them). These write raw bytes, not types.
//!
//! # Example
//!
//! ```
//! use mcp_stack_testkit::{ServerOptions, serve};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (client, server) = tokio::io::duplex(64 * 1024);
//! let (server_read, server_write) = tokio::io::split(server);
//! let server = tokio::spawn(serve(ServerOptions::default(), server_read, server_write));
//!
//! let (client_read, mut client_write) = tokio::io::split(client);
//! let mut lines = BufReader::new(client_read).lines();
//! client_write.write_all(concat!(
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","#,
//!     r#""capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#, "\n",
//!     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
//!     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#, "\n",
//! ).as_bytes()).await.unwrap();
//!
//! let init: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
//! assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
//! assert_eq!(init["result"]["serverInfo"]["name"], "mcp-testkit");
//! let echo: serde_json::Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
//! assert_eq!(echo["result"]["content"][0]["text"], "hi");
//!
//! // Closing the input ends the server.
//! client_write.shutdown().await.unwrap();
//! server.await.unwrap().unwrap();
//! # });
//! ```

use std::io::{self, Write as _};
use std::process::ExitCode;

use tokio::io::{AsyncRead, AsyncWrite};

mod client;
#[cfg(feature = "http")]
pub mod http;
mod options;
mod outbox;
#[cfg(target_os = "linux")]
pub mod procs;
mod prompts;
mod resources;
#[cfg(feature = "runtime")]
mod runtime;
mod server;
mod task_store;
mod tools;

pub use options::{
    ArgsError, DEFAULT_BATCH_BOMB_BYTES, DEFAULT_BLOB_BYTES, DEFAULT_DRAIN_MS, DEFAULT_FLOOD_COUNT,
    DEFAULT_LATE_MS, DEFAULT_OVERSIZE_BYTES, DEFAULT_RESOURCE_COUNT, Era, HELP, Misbehaviour,
    ServerOptions,
};
pub use prompts::PROMPT_NAMES;
pub use server::hostile::{ESCAPE_TEXT, ESCAPE_TOOL, PRINT_ENV_SERVER, PRINT_ENV_TOOL};
pub use server::{BOGUS_PROTOCOL_VERSION, EXIT_IMMEDIATELY_MESSAGE, SERVER_NAME};
pub use tools::{MODERN_TOOL_NAMES, TOOL_NAMES};

#[cfg(feature = "runtime")]
pub use runtime::InProcessConnector;

/// Serves MCP over any reader and writer until the reader ends.
///
/// Nothing is written to stderr and the process is never exited: where a
/// misbehaviour would exit the process ([`Misbehaviour::ExitImmediately`],
/// [`Misbehaviour::CrashMidCall`]), `serve` returns an error instead and
/// closes the writer. With [`Misbehaviour::IgnoreStdinClose`] it never returns
/// (drop the future to stop it). Calls still running when the input ends get
/// [`ServerOptions::drain_ms`] to answer, then are dropped. Dropping the future
/// stops everything it started.
///
/// Calls run as tasks on the current tokio runtime.
pub async fn serve<R, W>(options: ServerOptions, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    server::serve_on(options, None, reader, writer, server::Host::InMemory).await
}

/// Serves MCP over this process's stdin and stdout, logging to stderr.
///
/// Only protocol messages go to stdout (unless a misbehaviour says otherwise).
/// This **exits the process** where a misbehaviour says so: with code 1 for
/// [`Misbehaviour::ExitImmediately`], with code 101 for
/// [`Misbehaviour::CrashMidCall`]. With [`Misbehaviour::IgnoreStdinClose`] it
/// ignores SIGTERM and never returns.
pub async fn serve_stdio(options: ServerOptions) -> io::Result<()> {
    server::serve_on(
        options,
        None,
        tokio::io::stdin(),
        tokio::io::stdout(),
        server::Host::Process,
    )
    .await
}

/// The whole `mcp-testkit` command: parses `args` (without the program name),
/// handles `--help` and `--list-misbehaviours`, then runs [`serve_stdio`].
///
/// A program that wants to offer the test server (the `mcp` CLI's demo) can
/// call this from a hidden subcommand and pass its arguments through.
/// Bad arguments exit with code 2, a failed server with code 1.
pub async fn run(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return write_out(HELP);
    }
    if args.iter().any(|a| a == "--list-misbehaviours") {
        return write_out(&Misbehaviour::list());
    }
    #[cfg(feature = "http")]
    if args
        .iter()
        .any(|a| a == "--http" || a.starts_with("--http="))
    {
        return run_http(args).await;
    }
    match ServerOptions::from_args(args.into_iter()) {
        Err(e) => {
            let _ = writeln!(io::stderr(), "mcp-testkit: error: {e}");
            ExitCode::from(2)
        }
        Ok(options) => match serve_stdio(options).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let _ = writeln!(io::stderr(), "mcp-testkit: error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// `--http ADDR [--legacy-sse|--both] [--stateless] [--json-response]
/// [--no-get-stream] [--http-misbehave NAME] [--require-header 'K: V']
/// [--oauth …]` plus
/// the usual server options (`--era modern|dual` for 2026-07-28 streamable
/// HTTP): serves HTTP until interrupted, printing the URL to stderr.
#[cfg(feature = "http")]
async fn run_http(args: Vec<String>) -> ExitCode {
    let fail = |e: String| {
        let _ = writeln!(io::stderr(), "mcp-testkit: error: {e}");
        ExitCode::from(2)
    };
    let mut options = http::HttpServerOptions::default();
    let mut addr = None;
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let value = |it: &mut std::vec::IntoIter<String>| inline.clone().or_else(|| it.next());
        match flag.as_str() {
            "--http" => addr = value(&mut it),
            "--legacy-sse" => options.mode = http::HttpMode::LegacySse,
            "--both" => options.mode = http::HttpMode::Both,
            "--stateless" => options.stateless = true,
            "--json-response" => options.json_response = true,
            "--no-get-stream" => options.get_stream = false,
            "--http-misbehave" => {
                let Some(name) = value(&mut it) else {
                    return fail("--http-misbehave needs a value".into());
                };
                match http::HttpMisbehaviour::from_name(&name) {
                    Some(m) => options.misbehaviours.push(m),
                    None => return fail(format!("unknown HTTP misbehaviour {name:?}")),
                }
            }
            "--require-header" => {
                let Some(kv) = value(&mut it) else {
                    return fail("--require-header needs 'Name: value'".into());
                };
                let Some((k, v)) = kv.split_once(':') else {
                    return fail("--require-header needs 'Name: value'".into());
                };
                options.require_header = Some((k.trim().to_owned(), v.trim().to_owned()));
            }
            #[cfg(feature = "oauth")]
            f if f == "--oauth" || f.starts_with("--oauth-") => {
                if let Err(e) = oauth_flag(f, &mut options.oauth, || value(&mut it)) {
                    return fail(e);
                }
            }
            #[cfg(not(feature = "oauth"))]
            f if f == "--oauth" || f.starts_with("--oauth-") => {
                return fail(format!(
                    "{f}: this build has no OAuth mode (the testkit's `oauth` feature; \
                     `mcp demo-server` leaves it out: run `mcp-testkit` for it)"
                ));
            }
            _ => rest.push(arg),
        }
    }
    let Some(addr) = addr else {
        return fail("--http needs an address, e.g. 127.0.0.1:0".into());
    };
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        return fail(format!(
            "--http {addr:?}: expected IP:PORT, e.g. 127.0.0.1:0"
        ));
    };
    match ServerOptions::from_args(rest.into_iter()) {
        Err(e) => fail(e.to_string()),
        Ok(server) => {
            options.server = server;
            let server = match http::HttpServer::bind(addr, options).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = writeln!(
                        io::stderr(),
                        "mcp-testkit: error: cannot listen on {addr}: {e}"
                    );
                    return ExitCode::FAILURE;
                }
            };
            let _ = writeln!(io::stderr(), "mcp-testkit: listening on {}", server.url());
            let _ = tokio::signal::ctrl_c().await;
            server.shutdown().await;
            ExitCode::SUCCESS
        }
    }
}

/// One `--oauth*` flag of `run_http`: each turns the OAuth mode on and
/// changes one of its options.
#[cfg(feature = "oauth")]
fn oauth_flag(
    flag: &str,
    oauth: &mut Option<http::OAuthOptions>,
    value: impl FnOnce() -> Option<String>,
) -> Result<(), String> {
    let o = oauth.take().unwrap_or_default();
    let o = match flag {
        "--oauth" => o,
        "--oauth-rotate-refresh" => o.rotate_refresh_tokens(true),
        _ => {
            let Some(v) = value() else {
                return Err(format!(
                    "{flag} needs a value; run with --help for the flags"
                ));
            };
            oauth_value(flag, &v, o)?
        }
    };
    *oauth = Some(o);
    Ok(())
}

/// An `--oauth-*` flag with a value.
#[cfg(feature = "oauth")]
fn oauth_value(flag: &str, v: &str, o: http::OAuthOptions) -> Result<http::OAuthOptions, String> {
    use http::{AuthServerMetadata, OAuthMisbehaviour, ResourceMetadataAt};
    Ok(match flag {
        "--oauth-scope" => o.scopes(v.split([' ', ',']).filter(|s| !s.is_empty())),
        "--oauth-tool-scope" => {
            let Some((tool, scope)) = v.split_once('=') else {
                return Err(format!("{flag} needs TOOL=SCOPE, got {v:?}"));
            };
            o.tool_scope(tool, scope)
        }
        "--oauth-token-lifetime" => match v.parse() {
            Ok(seconds) => o.access_token_lifetime(seconds),
            Err(_) => return Err(format!("{flag} needs a number of seconds, got {v:?}")),
        },
        "--oauth-issuer-path" => o.issuer_path(v),
        "--oauth-metadata" => o.metadata(match v {
            "oauth" => AuthServerMetadata::OAuth,
            "openid" => AuthServerMetadata::OpenId,
            "both" => AuthServerMetadata::Both,
            "none" => AuthServerMetadata::None,
            _ => {
                return Err(format!(
                    "{flag} needs oauth, openid, both or none, got {v:?}"
                ));
            }
        }),
        "--oauth-resource-metadata" => o.resource_metadata_at(match v {
            "path" => ResourceMetadataAt::Path,
            "root" => ResourceMetadataAt::Root,
            "both" => ResourceMetadataAt::Both,
            "none" => ResourceMetadataAt::Nowhere,
            _ => return Err(format!("{flag} needs path, root, both or none, got {v:?}")),
        }),
        "--oauth-misbehave" => match OAuthMisbehaviour::from_name(v) {
            Some(m) => o.misbehave(m),
            None => return Err(format!("unknown OAuth misbehaviour {v:?}")),
        },
        "--oauth-client" => {
            let (id, secret) = match v.split_once(':') {
                Some((id, secret)) => (id, Some(secret)),
                None => (v, None),
            };
            o.preregistered_client(
                id,
                secret,
                ["http://127.0.0.1/callback", "http://localhost/callback"],
            )
        }
        _ => {
            return Err(format!(
                "unknown argument {flag:?}; run with --help for the flags"
            ));
        }
    })
}

fn write_out(text: &str) -> ExitCode {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

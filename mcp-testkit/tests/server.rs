//! The server driven in-process over `tokio::io::duplex` with raw JSON lines.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use mcp_stack_testkit::{Misbehaviour, ServerOptions, TOOL_NAMES, serve};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf, split,
};
use tokio::task::JoinHandle;

struct Peer {
    read: BufReader<ReadHalf<DuplexStream>>,
    write: Option<WriteHalf<DuplexStream>>,
    server: JoinHandle<io::Result<()>>,
}

impl Peer {
    fn start(options: ServerOptions) -> Peer {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = split(server);
        let server = tokio::spawn(serve(options, server_read, server_write));
        let (read, write) = split(client);
        Peer {
            read: BufReader::new(read),
            write: Some(write),
            server,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        let w = self.write.as_mut().unwrap();
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next line as bytes, without the newline; `None` at end of stream.
    async fn line_bytes(&mut self) -> Option<Vec<u8>> {
        let mut line = Vec::new();
        let n = tokio::time::timeout(
            Duration::from_secs(30),
            self.read.read_until(b'\n', &mut line),
        )
        .await
        .expect("no line from the server within 30 s")
        .unwrap();
        if n == 0 {
            return None;
        }
        assert_eq!(line.pop(), Some(b'\n'));
        Some(line)
    }

    async fn line(&mut self) -> String {
        String::from_utf8(self.line_bytes().await.expect("end of stream")).unwrap()
    }

    async fn recv(&mut self) -> Value {
        let line = self.line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        let response = self.recv().await;
        assert_eq!(response["id"], id, "{response}");
        response
    }

    async fn tool(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        let r = self
            .call(
                id,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
        r["result"].clone()
    }

    async fn initialize_with(&mut self, version: &str) -> Value {
        let r = self.call(0, "initialize", init_params(version)).await;
        self.notify("notifications/initialized", json!({})).await;
        r
    }

    async fn initialize(&mut self) -> Value {
        self.initialize_with("2025-11-25").await["result"].clone()
    }

    /// Closes the input and waits for the server to end.
    async fn finish(mut self) -> io::Result<()> {
        self.close_input().await;
        self.server.await.unwrap()
    }

    /// Ends the server's input (dropping one half of a split stream would not).
    async fn close_input(&mut self) {
        if let Some(mut w) = self.write.take() {
            w.shutdown().await.unwrap();
        }
    }
}

fn init_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}
    })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

fn assert_invalid_field(response: &Value, field: &str) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(response["error"]["data"]["field"], field, "{response}");
}

#[tokio::test]
async fn handshake_negotiates_version_and_declares_capabilities() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut peer = Peer::start(ServerOptions::default());
        let r = peer.initialize_with(version).await;
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["result"]["protocolVersion"], version);
        peer.finish().await.unwrap();
    }
    let mut peer = Peer::start(ServerOptions::default());
    let r = peer.initialize_with("2099-01-01").await;
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["capabilities"]["logging"], json!({}));
    assert_eq!(result["serverInfo"]["name"], "mcp-testkit");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .contains("read_file")
    );
    assert_eq!(peer.call(1, "ping", json!({})).await["result"], json!({}));
    // `params` may be left out of a ping.
    peer.send_raw(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc":"2.0","id":"p","result":{}})
    );
    assert_eq!(
        peer.call(2, "logging/setLevel", json!({"level": "warning"}))
            .await["result"],
        json!({})
    );
    let bad = peer
        .call(3, "logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_invalid_field(&bad, "level");
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn initialize_params_are_checked_field_by_field() {
    let mut peer = Peer::start(ServerOptions::default());
    let r = peer
        .call(
            1,
            "initialize",
            json!({"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_invalid_field(&r, "protocolVersion");
    let r = peer
        .call(
            2,
            "initialize",
            json!({"protocolVersion": 2025, "capabilities": {}}),
        )
        .await;
    assert_invalid_field(&r, "protocolVersion");
    let r = peer
        .call(3, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"version": "1"}}))
        .await;
    assert_invalid_field(&r, "clientInfo.name");
    let r = peer.call(4, "initialize", json!(["2025-11-25"])).await;
    assert_invalid_field(&r, "params");
    // Still serving: a good initialize works.
    assert_eq!(peer.initialize().await["protocolVersion"], "2025-11-25");
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn bad_input_gets_json_rpc_errors_and_the_server_lives() {
    let mut peer = Peer::start(ServerOptions::default());
    // A client-side method: the server does not serve it.
    let r = peer.call(1, "sampling/createMessage", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    assert_eq!(r["error"]["data"]["method"], "sampling/createMessage");

    peer.send_raw("this is not json").await;
    let r = peer.recv().await;
    assert_eq!(r["error"]["code"], -32700);
    assert!(r.get("id").is_none(), "{r}");

    peer.send_raw(r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#)
        .await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);

    // A batch: each element answered on its own.
    peer.send_raw(r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}, 7]"#)
        .await;
    assert_eq!(peer.recv().await["id"], 6);
    assert_eq!(peer.recv().await["error"]["code"], -32600);

    // Responses and unknown notifications are ignored.
    peer.send_raw(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#)
        .await;
    peer.notify("notifications/whatever", json!({})).await;
    assert_eq!(peer.call(8, "ping", json!({})).await["result"], json!({}));
    peer.finish().await.unwrap();
}

async fn list_all(peer: &mut Peer) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = peer.call(100 + pages as i64, "tools/list", params).await;
        pages += 1;
        for tool in r["result"]["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
        }
        match r["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
            None => return (names, pages),
        }
    }
}

#[tokio::test]
async fn tools_list_in_one_page_with_schemas() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    let r = peer.call(1, "tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), TOOL_NAMES.len());
    assert!(r["result"].get("nextCursor").is_none());
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].is_string());
    }
    let add = tools.iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(add["outputSchema"]["required"], json!(["sum"]));
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn tools_list_pages() {
    let mut options = ServerOptions::default();
    options.page_size = NonZeroUsize::new(3);
    let mut peer = Peer::start(options);
    peer.initialize().await;
    let (names, pages) = list_all(&mut peer).await;
    assert_eq!(names, TOOL_NAMES);
    assert_eq!(pages, TOOL_NAMES.len().div_ceil(3));

    let r = peer
        .call(1, "tools/list", json!({"cursor": "page-2"}))
        .await;
    assert_invalid_field(&r, "cursor");
    let r = peer.call(2, "tools/list", json!({"cursor": 3})).await;
    assert_invalid_field(&r, "cursor");
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn echo_add_fail_get_env_bad_output() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;

    let r = peer.tool(1, "echo", json!({"text": "héllo\nworld"})).await;
    assert_eq!(text(&r), "héllo\nworld");
    assert!(r.get("isError").is_none());

    let r = peer.tool(2, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(text(&r), "5");
    assert_eq!(r["structuredContent"], json!({"sum": 5}));
    let r = peer.tool(3, "add", json!({"a": 1.5, "b": -0.25})).await;
    assert_eq!(r["structuredContent"]["sum"], 1.25);

    let r = peer.tool(4, "fail", json!({"message": "it broke"})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(text(&r), "it broke");
    let r = peer.tool(5, "fail", json!({})).await;
    assert_eq!(r["isError"], true);

    let path = std::env::var("PATH").unwrap_or_default();
    if !path.is_empty() {
        let r = peer.tool(6, "get_env", json!({"name": "PATH"})).await;
        assert_eq!(text(&r), path);
    }
    let r = peer
        .tool(
            7,
            "get_env",
            json!({"name": "MCP_TESTKIT_SURELY_UNSET_VARIABLE"}),
        )
        .await;
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("is not set"));

    let r = peer.tool(8, "bad_output", json!({})).await;
    assert_eq!(r["structuredContent"]["count"], "three");
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn invalid_arguments_name_the_field() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
    let r = peer.call(1, "tools/call", call("echo", json!({}))).await;
    assert_invalid_field(&r, "arguments.text");
    let r = peer
        .call(2, "tools/call", call("echo", json!({"text": 5})))
        .await;
    assert_invalid_field(&r, "arguments.text");
    let r = peer
        .call(3, "tools/call", call("add", json!({"a": 1, "b": "2"})))
        .await;
    assert_invalid_field(&r, "arguments.b");
    let r = peer
        .call(4, "tools/call", call("slow", json!({"ms": -1})))
        .await;
    assert_invalid_field(&r, "arguments.ms");
    let r = peer
        .call(5, "tools/call", call("slow", json!({"ms": 1.5})))
        .await;
    assert_invalid_field(&r, "arguments.ms");
    let r = peer.call(6, "tools/call", call("nope", json!({}))).await;
    assert_invalid_field(&r, "name");
    let r = peer.call(7, "tools/call", json!({"arguments": {}})).await;
    assert_invalid_field(&r, "name");
    let r = peer
        .call(8, "tools/call", json!({"name": "echo", "arguments": [1]}))
        .await;
    assert_invalid_field(&r, "arguments");
    let r = peer
        .call(
            9,
            "tools/call",
            call("read_file", json!({"path": "x", "maxBytes": 1u64 << 40})),
        )
        .await;
    assert_invalid_field(&r, "arguments.maxBytes");
    peer.finish().await.unwrap();
}

/// A fresh folder under the target dir: `workspace/` with files, and a secret beside it.
fn fixture(name: &str) -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mcp-testkit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let workspace = root.join("workspace");
    std::fs::create_dir_all(workspace.join("sub")).unwrap();
    std::fs::write(workspace.join("hello.txt"), "hello, workspace\n").unwrap();
    std::fs::write(workspace.join("sub/inner.txt"), "inner").unwrap();
    std::fs::write(root.join("secret.txt"), "top secret").unwrap();
    (root, workspace)
}

#[tokio::test]
async fn read_file_is_confined_to_the_workspace() {
    let (root, workspace) = fixture("read");
    let mut options = ServerOptions::default();
    options.workspace = Some(workspace.clone());
    let mut peer = Peer::start(options);
    peer.initialize().await;
    let read = |path: &str| json!({"path": path});

    let r = peer.tool(1, "read_file", read("hello.txt")).await;
    assert_eq!(text(&r), "hello, workspace\n");
    assert!(r.get("isError").is_none());
    let r = peer.tool(2, "read_file", read("./sub/inner.txt")).await;
    assert_eq!(text(&r), "inner");
    let r = peer
        .tool(3, "read_file", json!({"path": "hello.txt", "maxBytes": 5}))
        .await;
    assert_eq!(text(&r), "hello");

    let r = peer.tool(4, "read_file", read("missing.txt")).await;
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("no such file"), "{r}");

    for (id, path) in [
        (5, "../secret.txt"),
        (6, "../etc/passwd"),
        (7, "sub/../../secret.txt"),
    ] {
        let r = peer.tool(id, "read_file", read(path)).await;
        assert_eq!(r["isError"], true, "{path}");
        assert!(text(&r).contains("`..` is not allowed"), "{r}");
    }
    let absolute = root.join("secret.txt");
    let r = peer
        .tool(8, "read_file", read(absolute.to_str().unwrap()))
        .await;
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("absolute paths are not allowed"), "{r}");
    let r = peer.tool(9, "read_file", read("sub")).await;
    assert_eq!(r["isError"], true);

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&absolute, workspace.join("escape")).unwrap();
        std::os::unix::fs::symlink(&root, workspace.join("up")).unwrap();
        std::os::unix::fs::symlink("hello.txt", workspace.join("alias")).unwrap();
        for (id, path) in [(10, "escape"), (11, "up/secret.txt")] {
            let r = peer.tool(id, "read_file", read(path)).await;
            assert_eq!(r["isError"], true, "{path}");
            assert!(text(&r).contains("outside the workspace"), "{r}");
            assert!(!text(&r).contains("top secret"));
        }
        let r = peer.tool(12, "read_file", read("alias")).await;
        assert_eq!(text(&r), "hello, workspace\n");
    }
    peer.finish().await.unwrap();
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test(start_paused = true)]
async fn calls_run_concurrently() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    let start = tokio::time::Instant::now();
    peer.request(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 10_000}}),
    )
    .await;
    peer.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "fast"}}),
    )
    .await;
    let first = peer.recv().await;
    assert_eq!(first["id"], 2);
    assert!(start.elapsed() < Duration::from_secs(10));
    let second = peer.recv().await;
    assert_eq!(second["id"], 1);
    assert_eq!(text(&second["result"]), "done after 10000 ms");
    assert!(start.elapsed() >= Duration::from_secs(10));
    peer.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_gets_no_response() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    peer.request(
        7,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 5000}}),
    )
    .await;
    peer.notify(
        "notifications/cancelled",
        json!({"requestId": 7, "reason": "test"}),
    )
    .await;
    // Cancelling an unknown request is ignored.
    peer.notify("notifications/cancelled", json!({"requestId": "nope"}))
        .await;
    assert_eq!(peer.call(8, "ping", json!({})).await["result"], json!({}));
    // Well past the 5 s the call would have taken: nothing arrives.
    let nothing = tokio::time::timeout(Duration::from_secs(60), peer.read.fill_buf()).await;
    assert!(nothing.is_err(), "unexpected output after cancellation");
    // A call that is not cancelled still completes.
    let r = peer.tool(9, "slow", json!({"ms": 10})).await;
    assert_eq!(text(&r), "done after 10 ms");
    peer.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn progress_notifications_follow_the_token() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    peer.request(
        1,
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3, "intervalMs": 100},
               "_meta": {"progressToken": "tok-1"}}),
    )
    .await;
    for i in 1..=3 {
        let n = peer.recv().await;
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "tok-1");
        assert_eq!(n["params"]["progress"], i);
        assert_eq!(n["params"]["total"], 3);
        assert!(n["params"]["message"].is_string());
    }
    let r = peer.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(text(&r["result"]), "completed 3 steps");

    // An integer token works too; no token, no notifications.
    peer.request(
        2,
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": 42}}),
    )
    .await;
    assert_eq!(peer.recv().await["params"]["progressToken"], 42);
    assert_eq!(peer.recv().await["id"], 2);
    let r = peer.tool(3, "progress", json!({"steps": 2})).await;
    assert_eq!(text(&r), "completed 2 steps");
    let r = peer
        .call(
            4,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": {}}}),
        )
        .await;
    assert_invalid_field(&r, "_meta.progressToken");
    peer.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn end_of_input_ends_the_server_and_its_calls() {
    let mut peer = Peer::start(ServerOptions::default());
    peer.initialize().await;
    let start = tokio::time::Instant::now();
    let slow = |ms: u64| json!({"name": "slow", "arguments": {"ms": ms}});
    peer.request(1, "tools/call", slow(3_600_000)).await;
    peer.request(2, "tools/call", slow(500)).await;
    peer.close_input().await;
    // A call that ends within the drain time still answers ...
    assert_eq!(peer.recv().await["id"], 2);
    // ... and the hour-long one does not keep the server alive.
    tokio::time::timeout(Duration::from_secs(10), &mut peer.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(peer.line_bytes().await, None);
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(1000), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn without_calls_in_flight_end_of_input_ends_at_once() {
    let mut options = ServerOptions::default();
    options.drain_ms = 3_600_000;
    let mut peer = Peer::start(options);
    peer.initialize().await;
    assert_eq!(
        peer.tool(1, "echo", json!({"text": "x"})).await["content"][0]["text"],
        "x"
    );
    tokio::time::timeout(Duration::from_secs(10), peer.finish())
        .await
        .unwrap()
        .unwrap();
}

// --- misbehaviours ---------------------------------------------------------

#[tokio::test]
async fn unsupported_version() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::UnsupportedVersion));
    assert_eq!(peer.initialize().await["protocolVersion"], "1999-01-01");
    peer.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn never_answer_initialize() {
    let mut peer = Peer::start(ServerOptions::misbehaving(
        Misbehaviour::NeverAnswerInitialize,
    ));
    peer.request(1, "initialize", init_params("2025-11-25"))
        .await;
    let nothing = tokio::time::timeout(Duration::from_secs(60), peer.read.fill_buf()).await;
    assert!(nothing.is_err(), "initialize was answered");
    // The server is alive, it just never completes the handshake.
    assert_eq!(peer.call(2, "ping", json!({})).await["result"], json!({}));
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn unknown_ids_precede_each_response() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::UnknownIds));
    peer.request(1, "initialize", init_params("2025-11-25"))
        .await;
    let stray = peer.recv().await;
    assert_eq!(stray["id"], "mcp-testkit-unknown-1");
    assert!(stray.get("result").is_some());
    assert_eq!(peer.recv().await["id"], 1);
    peer.request(2, "ping", json!({})).await;
    assert_eq!(peer.recv().await["id"], "mcp-testkit-unknown-2");
    assert_eq!(peer.recv().await["id"], 2);
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn stdout_noise_before_the_handshake() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::StdoutNoise));
    for _ in 0..3 {
        let line = peer.line().await;
        assert!(serde_json::from_str::<Value>(&line).is_err(), "{line}");
    }
    assert_eq!(peer.initialize().await["serverInfo"]["name"], "mcp-testkit");
    assert_eq!(peer.call(1, "ping", json!({})).await["result"], json!({}));
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn noise_and_invalid_utf8_before_each_response() {
    let mut options = ServerOptions::default();
    options.misbehaviours = vec![Misbehaviour::Noise, Misbehaviour::InvalidUtf8];
    let mut peer = Peer::start(options);
    peer.request(1, "ping", json!({})).await;
    let noise = peer.line().await;
    assert!(serde_json::from_str::<Value>(&noise).is_err());
    let bad = peer.line_bytes().await.unwrap();
    assert!(std::str::from_utf8(&bad).is_err());
    assert_eq!(peer.recv().await["id"], 1);
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn require_initialized_hides_tools_until_initialized() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::RequireInitialized));
    peer.call(0, "initialize", init_params("2025-11-25")).await;
    let r = peer.call(1, "tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"], json!([]));
    peer.notify("notifications/initialized", json!({})).await;
    let r = peer.call(2, "tools/list", json!({})).await;
    assert_eq!(
        r["result"]["tools"].as_array().unwrap().len(),
        TOOL_NAMES.len()
    );
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn no_tools_capability() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::NoToolsCapability));
    let result = peer.initialize().await;
    assert!(result["capabilities"].get("tools").is_none(), "{result}");
    assert_eq!(
        peer.call(1, "tools/list", json!({})).await["error"]["code"],
        -32601
    );
    let r = peer
        .call(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32601);
    peer.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn late_answer_waits() {
    let mut options = ServerOptions::misbehaving(Misbehaviour::LateAnswer);
    options.late_ms = 2500;
    let mut peer = Peer::start(options);
    peer.initialize().await;
    let start = tokio::time::Instant::now();
    let r = peer.tool(1, "echo", json!({"text": "eventually"})).await;
    assert_eq!(text(&r), "eventually");
    assert!(start.elapsed() >= Duration::from_millis(2500));
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn flood_and_oversized_line_before_the_result() {
    let mut options = ServerOptions::default();
    options.misbehaviours = vec![
        Misbehaviour::OversizedLine,
        Misbehaviour::FloodNotifications,
    ];
    options.flood_count = 5;
    options.oversize_bytes = 100_000;
    let mut peer = Peer::start(options);
    peer.initialize().await;
    peer.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert!(peer.line_bytes().await.unwrap().len() > 100_000);
    for i in 1..=5 {
        let n = peer.recv().await;
        assert_eq!(n["method"], "notifications/message");
        assert_eq!(n["params"]["data"], format!("flood notification {i} of 5"));
    }
    assert_eq!(text(&peer.recv().await["result"]), "x");
    peer.finish().await.unwrap();
}

#[tokio::test]
async fn crash_and_exit_end_serve_with_an_error_in_process() {
    let mut peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::CrashMidCall));
    peer.initialize().await;
    peer.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert_eq!(
        peer.line_bytes().await,
        None,
        "the output closes without an answer"
    );
    assert!(
        peer.finish()
            .await
            .unwrap_err()
            .to_string()
            .contains("crash")
    );

    let peer = Peer::start(ServerOptions::misbehaving(Misbehaviour::ExitImmediately));
    let e = peer.finish().await.unwrap_err();
    assert!(e.to_string().contains("API_TOKEN"));
}

#[tokio::test]
async fn instance_log_counts_starts_and_handshakes() {
    let (root, _) = fixture("instance-log");
    let log = root.join("instances.log");
    let mut options = ServerOptions::default();
    options.instance_log = Some(log.clone());
    for _ in 0..2 {
        let mut peer = Peer::start(options.clone());
        peer.initialize().await;
        peer.finish().await.unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let pid = std::process::id();
    let expected = format!("start {pid}\ninitialize {pid}\n").repeat(2);
    assert_eq!(text, expected);
    std::fs::remove_dir_all(root).unwrap();
}

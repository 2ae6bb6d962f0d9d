//! Tasks in both designs, driven in-process with raw JSON lines: 2025-11-25's
//! task utility and 2026-07-28's tasks extension. A `countdown` task ends at
//! a given poll, so nothing here depends on time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Duration;

use mcp_stack_testkit::{Era, ServerOptions, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};

const EXT: &str = "io.modelcontextprotocol/tasks";

struct Peer {
    lines: Lines<BufReader<ReadHalf<tokio::io::DuplexStream>>>,
    write: WriteHalf<tokio::io::DuplexStream>,
    /// 2026-07-28: the `_meta` every request carries.
    meta: Option<Value>,
}

impl Peer {
    fn start(options: ServerOptions, meta: Option<Value>) -> Peer {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (r, w) = tokio::io::split(server);
        tokio::spawn(serve(options, r, w));
        let (r, write) = tokio::io::split(client);
        Peer {
            lines: BufReader::new(r).lines(),
            write,
            meta,
        }
    }

    async fn legacy(version: &str) -> (Peer, Value) {
        let mut peer = Peer::start(ServerOptions::default(), None);
        let init = peer
            .ok(
                0,
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await;
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (peer, init)
    }

    /// A 2026-07-28 peer; `declare`: its requests declare the tasks extension.
    fn modern(declare: bool) -> Peer {
        let caps = if declare {
            json!({"extensions": {EXT: {}}})
        } else {
            json!({})
        };
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": caps});
        let mut options = ServerOptions::default();
        options.era = Era::Modern;
        Peer::start(options, Some(meta))
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, mut params: Value) {
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("no line from the server within 30 s")
            .unwrap()
            .expect("end of stream");
        serde_json::from_str(&line).unwrap()
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        let answer = self.recv().await;
        assert_eq!(
            answer["id"], id,
            "expected the answer to {method}: {answer}"
        );
        answer
    }

    async fn ok(&mut self, id: i64, method: &str, params: Value) -> Value {
        let answer = self.call(id, method, params).await;
        assert!(answer["result"].is_object(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn error(&mut self, id: i64, method: &str, params: Value) -> Value {
        let answer = self.call(id, method, params).await;
        assert!(answer["error"].is_object(), "{method}: {answer}");
        answer["error"].clone()
    }
}

#[tokio::test]
async fn a_2025_11_25_countdown_task_is_polled_to_its_end_and_its_result_fetched() {
    let (mut peer, init) = Peer::legacy("2025-11-25").await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    let tools = peer.ok(1, "tools/list", json!({})).await;
    let support = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["execution"]["taskSupport"]
            .clone()
    };
    assert_eq!(
        (support("countdown"), support("slow")),
        (json!("optional"), json!("optional"))
    );
    assert_eq!(support("echo"), Value::Null);

    let created = peer
        .ok(
            2,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 2},
                                     "task": {"ttl": 60000}}),
        )
        .await;
    let task = &created["task"];
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(
        (&task["status"], &task["ttl"], &task["pollInterval"]),
        (&json!("working"), &json!(60000), &json!(20))
    );
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'), "{task}");
    assert!(
        created.get("content").is_none(),
        "a task, not the result: {created}"
    );

    let first = peer.ok(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(first["status"], "working");
    // The second poll ends it: the status notification comes before the answer.
    peer.request(4, "tasks/get", json!({"taskId": id})).await;
    let note = peer.recv().await;
    assert_eq!(note["method"], "notifications/tasks/status");
    assert_eq!(
        (&note["params"]["taskId"], &note["params"]["status"]),
        (&json!(id), &json!("completed"))
    );
    let second = peer.recv().await;
    assert_eq!(
        (&second["id"], &second["result"]["status"]),
        (&json!(4), &json!("completed"))
    );

    let result = peer.ok(5, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["content"][0]["text"], "countdown finished");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );

    let listed = peer.ok(6, "tasks/list", json!({})).await;
    assert_eq!(listed["tasks"][0]["taskId"], json!(id));
    let refused = peer.error(7, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(refused["code"], -32602, "an ended task cannot be cancelled");
    let unknown = peer.error(8, "tasks/get", json!({"taskId": "nope"})).await;
    assert_eq!(unknown["code"], -32602);
}

#[tokio::test]
async fn tasks_result_waits_for_the_end_and_cancellation_is_final() {
    let (mut peer, _) = Peer::legacy("2025-11-25").await;
    let created = peer
        .ok(
            1,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 1}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // tasks/result blocks; the poll that ends the task releases it.
    peer.request(2, "tasks/result", json!({"taskId": id})).await;
    peer.request(3, "tasks/get", json!({"taskId": id})).await;
    let mut lines = [peer.recv().await, peer.recv().await, peer.recv().await];
    lines.sort_by_key(|l| l["id"].as_i64().unwrap_or(0));
    assert_eq!(lines[0]["method"], "notifications/tasks/status");
    assert_eq!(
        lines[1]["result"]["content"][0]["text"],
        "countdown finished"
    );
    assert_eq!(lines[2]["result"]["status"], "completed");

    let created = peer
        .ok(
            4,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 50}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    peer.request(5, "tasks/cancel", json!({"taskId": id})).await;
    let note = peer.recv().await;
    assert_eq!(note["params"]["status"], "cancelled");
    let cancelled = peer.recv().await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let polled = peer.ok(6, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(polled["status"], "cancelled", "cancelled stays cancelled");
    let result = peer.error(7, "tasks/result", json!({"taskId": id})).await;
    assert!(
        result["message"].as_str().unwrap().contains("cancelled"),
        "{result}"
    );

    // A failing countdown: tasks/result answers its JSON-RPC error.
    let created = peer
        .ok(
            8,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 0, "fail": true}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    peer.request(9, "tasks/get", json!({"taskId": id})).await;
    let _note = peer.recv().await;
    assert_eq!(peer.recv().await["result"]["status"], "failed");
    let error = peer.error(10, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(error["code"], -32603);
}

#[tokio::test]
async fn a_slow_task_ends_when_its_tool_does() {
    let (mut peer, _) = Peer::legacy("2025-11-25").await;
    let created = peer
        .ok(
            1,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 0}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // No clock: tasks/result simply waits for the tool.
    peer.request(2, "tasks/result", json!({"taskId": id})).await;
    let mut lines = [peer.recv().await, peer.recv().await];
    lines.sort_by_key(|l| l["id"].as_i64().unwrap_or(0));
    assert_eq!(lines[0]["params"]["status"], "completed");
    assert_eq!(lines[1]["result"]["content"][0]["text"], "done after 0 ms");
}

#[tokio::test]
async fn tasks_are_only_where_they_are_offered() {
    let (mut peer, _) = Peer::legacy("2025-11-25").await;
    let refused = peer
        .error(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}),
        )
        .await;
    assert_eq!(refused["code"], -32601, "echo does not run as a task");

    // 2025-06-18 has no tasks: the augmentation is ignored, the methods unknown.
    let (mut peer, init) = Peer::legacy("2025-06-18").await;
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
    let plain = peer
        .ok(
            1,
            "tools/call",
            json!({"name": "countdown", "arguments": {}, "task": {}}),
        )
        .await;
    assert_eq!(
        plain["content"][0]["text"],
        "countdown finished (not run as a task)"
    );
    let unknown = peer.error(2, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(unknown["code"], -32601);
}

#[tokio::test]
async fn the_2026_07_28_extension_answers_with_a_task_and_inlines_its_result() {
    let mut peer = Peer::modern(true);
    let discovered = peer.ok(1, "server/discover", json!({})).await;
    assert_eq!(discovered["capabilities"]["extensions"][EXT], json!({}));
    assert!(discovered["capabilities"].get("tasks").is_none());

    let created = peer
        .ok(
            2,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 2}}),
        )
        .await;
    assert_eq!(
        (&created["resultType"], &created["status"]),
        (&json!("task"), &json!("working"))
    );
    assert_eq!(
        (&created["ttlMs"], &created["pollIntervalMs"]),
        (&json!(3_600_000), &json!(20))
    );
    let id = created["taskId"].as_str().unwrap().to_owned();
    let working = peer.ok(3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        (&working["resultType"], &working["status"]),
        (&json!("complete"), &json!("working"))
    );
    assert!(working.get("result").is_none());
    let done = peer.ok(4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "countdown finished");
    let update = peer
        .ok(
            5,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {}}),
        )
        .await;
    assert_eq!(update, json!({"resultType": "complete"}));
    assert_eq!(peer.error(6, "tasks/list", json!({})).await["code"], -32601);
    assert_eq!(
        peer.error(7, "tasks/result", json!({"taskId": id})).await["code"],
        -32601
    );

    let created = peer
        .ok(
            8,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 1, "fail": true}}),
        )
        .await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let failed = peer.ok(9, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        (&failed["status"], &failed["error"]["code"]),
        (&json!("failed"), &json!(-32603))
    );

    let created = peer
        .ok(
            10,
            "tools/call",
            json!({"name": "countdown", "arguments": {"polls": 9}}),
        )
        .await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let ack = peer.ok(11, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(
        peer.ok(12, "tasks/get", json!({"taskId": id})).await["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn without_the_extension_declared_a_2026_07_28_client_gets_plain_results() {
    let mut peer = Peer::modern(false);
    let plain = peer
        .ok(
            1,
            "tools/call",
            json!({"name": "countdown", "arguments": {}}),
        )
        .await;
    assert_eq!(plain["resultType"], "complete");
    assert_eq!(
        plain["content"][0]["text"],
        "countdown finished (not run as a task)"
    );
    let refused = peer.error(2, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(refused["code"], -32021);
    assert_eq!(
        refused["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
}

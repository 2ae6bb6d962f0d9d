//! Answering the server's requests: an elicitation handler (the server asks
//! the user to fill a form) and a sampling handler (the server asks the
//! client's model for a completion). A real application shows a dialog and
//! calls its model; these answer from code.
//!
//! ```sh
//! cargo run -p mcp-stack-client --example handlers -- target/debug/mcp-testkit
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use mcp_stack_client::jsonrpc::ErrorObject;
use mcp_stack_client::serde::Deserialize;
use mcp_stack_client::serde_json::{self, Map, Value, json};
use mcp_stack_client::transport::BoxFuture;
use mcp_stack_client::types::{ElicitRequestParams, ElicitResult};
use mcp_stack_client::{ClientHandlers, Elicitor, Sampler, SessionConfig, StdioConfig};

/// Fills every form with what it knows of the user; declines what it cannot
/// answer (here, a form without a `name` field).
struct Assistant;

impl Elicitor for Assistant {
    fn elicit<'a>(&'a self, request: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
        Box::pin(async move {
            println!("  the server asks: {}", request.message);
            let wants_name = request
                .requested_schema
                .as_ref()
                .and_then(|s| s.get("properties")?.get("name"))
                .is_some();
            let answer = if wants_name {
                let mut content = Map::new();
                content.insert("name".into(), json!("Ada"));
                content.insert("subscribe".into(), json!(true));
                json!({"action": "accept", "content": content})
            } else {
                json!({"action": "decline"})
            };
            // ElicitResult keeps unknown fields: read it from its JSON.
            serde_json::from_value(answer).unwrap_or_else(|_| decline())
        })
    }
}

fn decline() -> ElicitResult {
    ElicitResult {
        action: "decline".into(),
        content: None,
        extra: Map::new(),
    }
}

/// A "model" that answers every sampling request by counting the words of
/// the last message; a real one calls an LLM (and asks the user first).
struct WordCounter;

impl Sampler for WordCounter {
    fn create_message<'a>(
        &'a self,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ErrorObject>> {
        Box::pin(async move {
            let text = params
                .get("messages")
                .and_then(Value::as_array)
                .and_then(|m| m.last())
                .and_then(|m| m.pointer("/content/text"))
                .and_then(Value::as_str)
                .unwrap_or("");
            println!("  the server asks the model about: {text:?}");
            Ok(json!({
                "role": "assistant",
                "model": "word-counter",
                "stopReason": "endTurn",
                "content": {"type": "text", "text": format!("{} words", text.split_whitespace().count())}
            }))
        })
    }
}

/// What `ask_user` reports in its structured content.
#[derive(Deserialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Answered {
    action: String,
    content: Option<Person>,
}

#[derive(Deserialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Person {
    name: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let program = args.next().unwrap_or_else(|| "mcp-testkit".into());
    match run(&program, args.collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(program: &str, args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    // The handlers are declared to the server as the client's capabilities.
    let handlers = ClientHandlers::new()
        .elicitation(Assistant)
        .sampling(WordCounter);
    let config = SessionConfig::new().handler(handlers);
    let session =
        mcp_stack_client::connect_stdio(StdioConfig::new(program).args(args), config).await?;

    let form = session
        .call_tool("ask_user", json!({}))
        .await?
        .into_result()?;
    println!("ask_user: {}", form.text());
    // What the tool reports, read into a type of ours.
    let answered: Answered = form.structured()?;
    if answered.action != "accept" || answered.content.map(|c| c.name).as_deref() != Some("Ada") {
        return Err(format!("the form was not answered: {}", form.text()).into());
    }

    let sampled = session
        .call_tool("sample", json!({"prompt": "how many words is this"}))
        .await?
        .into_result()?;
    println!("sample: {}", sampled.text());
    if !sampled.text().contains("5 words") {
        return Err(format!("unexpected sample: {}", sampled.text()).into());
    }
    session.close().await;
    Ok(())
}

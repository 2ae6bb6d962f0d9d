//! `xtask conformance-client <url>`: the client the official conformance
//! suite runs, one scenario at a time.
//!
//! It is an agent with nothing particular to do, built from the library:
//! connect over HTTP (streamable HTTP, falling back to HTTP+SSE) with
//! `mcp-stack-session`, list the tools (every page), call each one with arguments
//! drawn from its input schema (the `fill` module) while following its
//! progress, list resources and prompts and read the first of each, answer elicitation with the requested schema's defaults
//! ([`DefaultsElicitationHandler`]), list the server's skills (skills
//! extension) without fetching any, and close. The scenario's name
//! (`MCP_CONFORMANCE_SCENARIO`) is logged and, for one scenario only, picks
//! a driver ([`scenario_arguments`]): `json-schema-2020-12-preservation`
//! can only observe whether the client kept a tool's `inputSchema` intact if
//! the client sends that schema back to an echo tool, as its instructions
//! say. The driver sends what the library's catalog holds; the library
//! behaviour checked is the same for every client. Likewise the
//! `sep-2640-client-verify-*` scenarios are a task that loads the listed
//! skills and reads their files ([`skills_task`]); every other run loads
//! none.
//!
//! What the suite tells any client, it follows:
//!
//! - the protocol revision to speak, `MCP_CONFORMANCE_PROTOCOL_VERSION`
//!   (set by the suite's alpha line; `--protocol` overrides it), applied as
//!   a config pin ([`SessionConfig::pin_protocol`]): a 2026-07-28 revision
//!   selects the modern lifecycle;
//! - arguments the harness supplies for named tools, the `toolCalls` list of
//!   `MCP_CONFORMANCE_CONTEXT` (`[{"name", "arguments"}]`), used instead of
//!   drawn ones for those tools, as a user's task would supply them.
//!
//! The exit status is 0 when every step succeeded. A tool that reports
//! `isError: true` ran and failed; that is the tool's result, not the
//! client's failure. So is a JSON-RPC error in answer to `tools/call`: the
//! server answered. Everything else (no connection, a timeout, an answer
//! that is not valid, arguments the client itself refused) fails the run.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use mcp_stack_session::types::Implementation;
use mcp_stack_session::{
    CallOptions, DefaultsElicitationHandler, ServerNotification, Session, SessionConfig,
    SessionError, ToolCatalog,
};

use super::fill;
use super::http;
use crate::args::ClientArgs;

/// The whole client run is bounded by this (the suite's own limit is 30 s).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(25);

/// Runs the client: `[--protocol PIN] <server-url>` (the URL last).
pub(crate) fn main(args: ClientArgs) -> Result<(), String> {
    let ClientArgs { protocol, url } = args;
    let pin = match protocol {
        Some(p) if !p.is_empty() => Some(p),
        _ => std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
            .ok()
            .filter(|p| !p.is_empty()),
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!(
        "conformance-client: scenario `{scenario}`, server {url}, protocol {}",
        pin.as_deref().unwrap_or("(default)")
    );
    let mut config = config();
    if let Some(pin) = &pin {
        config
            .pin_protocol(pin)
            .map_err(|e| format!("protocol pin `{pin}`: {e}"))?;
    }
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default();
    let given = given_arguments(&context);
    let context: Value = serde_json::from_str(&context).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async {
        let run = run(&url, config, &given, &scenario, &context);
        match tokio::time::timeout(CLIENT_TIMEOUT, run).await {
            Ok(r) => r,
            Err(_) => Err(format!("gave up after {} s", CLIENT_TIMEOUT.as_secs())),
        }
    })
}

fn config() -> SessionConfig {
    SessionConfig::new()
        .client_info(Implementation::new(
            "mcp-client-rs-conformance",
            env!("CARGO_PKG_VERSION"),
        ))
        .server_name("conformance")
        .request_timeout(Duration::from_secs(20))
        .handshake_timeout(Duration::from_secs(20))
        .handler(DefaultsElicitationHandler::new())
        .on_notification(|n: &ServerNotification| match n {
            ServerNotification::Log(m) => eprintln!("server log [{}]: {}", m.level, m.data),
            ServerNotification::ToolsListChanged => eprintln!("server: the tool list changed"),
            _ => {}
        })
}

/// Arguments the harness gives for named tools: the `toolCalls` of the
/// context (`{"toolCalls": [{"name": …, "arguments": {…}}]}`); the first
/// entry for a name wins. Anything else in the context is not for us.
fn given_arguments(context: &str) -> HashMap<String, Value> {
    let mut given = HashMap::new();
    let Ok(context) = serde_json::from_str::<Value>(context) else {
        return given;
    };
    let calls = context.get("toolCalls").and_then(Value::as_array);
    for call in calls.into_iter().flatten() {
        if let (Some(name), Some(arguments)) = (
            call.get("name").and_then(Value::as_str),
            call.get("arguments").filter(|a| a.is_object()),
        ) {
            given
                .entry(name.to_string())
                .or_insert_with(|| arguments.clone());
        }
    }
    given
}

async fn run(
    url: &str,
    config: SessionConfig,
    given: &HashMap<String, Value>,
    scenario: &str,
    context: &Value,
) -> Result<(), String> {
    if !http::AVAILABLE {
        return Err("this build has no HTTP transport".into());
    }
    // Every run can authorize, as an agent configured for OAuth servers
    // can: a server that never answers 401 never sees the authorizer.
    let authorizer = http::authorizer(url, scenario, context)?;
    let transport =
        http::connect_authorized(url, http::Mode::Auto, "conformance", authorizer).await?;
    let session = Session::connect_shared(transport, config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let server = session.server();
    eprintln!(
        "connected to {} {} (protocol {}, over {})",
        server.server_info.name,
        server.server_info.version,
        session.protocol_version(),
        session.transport().kind()
    );
    let result = use_tools(&session, given, scenario).await;
    browse(&session).await;
    let skills = use_skills(&session, skills_task(scenario)).await;
    session.close().await;
    match (result, skills) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(a), Err(b)) => Err(format!("{a}; {b}")),
    }
}

/// What the run's task asks of a server's skills (the skills extension,
/// SEP-2640). An agent with nothing particular to do lists them, as a host
/// assembling its skill registry does, and loads none: loading is the
/// model's or the user's decision, and fetching a skill's files ahead of it
/// is what the extension forbids. The `sep-2640-client-verify-*` scenarios
/// are a task that does load: "load the skill, then read its supporting
/// file" (the scenario's stated contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkillsTask {
    /// List the skills only.
    List,
    /// List them, load each, and read each loaded skill's other files.
    LoadAll,
}

fn skills_task(scenario: &str) -> SkillsTask {
    if scenario.starts_with("sep-2640-client-verify-") {
        SkillsTask::LoadAll
    } else {
        SkillsTask::List
    }
}

/// Lists the server's skills, when it declared the extension, and loads
/// them when the task says so. Every file is verified by the library (size,
/// digest, and for `SKILL.md` the frontmatter against the listing); a
/// refused file fails the run (the task could not be done) and is not used:
/// a skill whose `SKILL.md` is refused is not loaded, so none of its other
/// files are read.
async fn use_skills(session: &Session, task: SkillsTask) -> Result<(), String> {
    if session.skills_settings().is_err() {
        return Ok(());
    }
    let skills = session
        .list_skills()
        .await
        .map_err(|e| format!("skills/list: {e}"))?;
    eprintln!("{} skills", skills.len());
    for skill in skills.iter() {
        eprintln!(
            "skill {} ({} files): {}",
            skill.uri,
            skill.files().len(),
            skill.description().unwrap_or("(no description)")
        );
    }
    if task == SkillsTask::List {
        return Ok(());
    }
    let mut failures = Vec::new();
    for entry in skills.iter() {
        let loaded = match session.load_skill(entry).await {
            Ok(loaded) => loaded,
            Err(e) => {
                eprintln!("not loaded: {e}");
                failures.push(e.to_string());
                continue;
            }
        };
        eprintln!(
            "loaded {} ({} bytes of instructions)",
            entry.uri,
            loaded.body().len()
        );
        for file in entry.files().iter().filter(|f| f.uri != entry.uri) {
            match session.read_skill_file(&loaded, &file.uri).await {
                Ok(read) => eprintln!("read {} ({} bytes, verified)", read.uri, read.bytes.len()),
                Err(e) => {
                    eprintln!("not read: {e}");
                    failures.push(e.to_string());
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Lists the resources and prompts, when the server offers them, and reads
/// (gets) the first of each, as an agent looking around would. Their answers
/// are only logged: this client's verdict is about tools.
async fn browse(session: &Session) {
    let caps = &session.server().capabilities;
    if caps.resources.is_some() {
        match session.list_resources().await {
            Ok(resources) => {
                if let Some(first) = resources.first() {
                    match session.read_resource(&first.uri).await {
                        Ok(r) => {
                            eprintln!("read {}: {} content item(s)", first.uri, r.contents.len())
                        }
                        Err(e) => eprintln!("read {}: {e}", first.uri),
                    }
                }
            }
            Err(e) => eprintln!("resources/list: {e}"),
        }
    }
    if caps.prompts.is_some() {
        match session.list_prompts().await {
            Ok(prompts) => {
                if let Some(prompt) = prompts.first() {
                    // Required arguments get a placeholder value.
                    let arguments: std::collections::BTreeMap<String, String> = prompt
                        .arguments
                        .iter()
                        .flatten()
                        .filter(|a| a.required == Some(true))
                        .map(|a| (a.name.clone(), "example".to_owned()))
                        .collect();
                    match session.get_prompt(&prompt.name, arguments).await {
                        Ok(_) => eprintln!("got prompt {}", prompt.name),
                        Err(e) => eprintln!("prompts/get {}: {e}", prompt.name),
                    }
                }
            }
            Err(e) => eprintln!("prompts/list: {e}"),
        }
    }
}

/// The one scenario driver: `json-schema-2020-12-preservation` asks the
/// client to pass the focal tool's `inputSchema`, exactly as the client holds
/// it, to the `json_schema_echo` tool; the server compares the echo with what
/// it sent. Every other scenario gets nothing here.
fn scenario_arguments(scenario: &str, catalog: &ToolCatalog) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    if scenario == "json-schema-2020-12-preservation" {
        const ECHO: &str = "json_schema_echo";
        if let Some(focal) = catalog.iter().find(|t| t.name != ECHO) {
            out.insert(
                ECHO.to_string(),
                serde_json::json!({ "schema": focal.input_schema }),
            );
        }
    }
    out
}

async fn use_tools(
    session: &Session,
    given: &HashMap<String, Value>,
    scenario: &str,
) -> Result<(), String> {
    let catalog = session
        .list_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let mut given = given.clone();
    for (name, arguments) in scenario_arguments(scenario, &catalog) {
        given.entry(name).or_insert(arguments);
    }
    for note in catalog.diagnostics() {
        eprintln!("tools/list: {note}");
    }
    eprintln!("{} tools", catalog.len());
    let mut failures = Vec::new();
    for tool in catalog.iter() {
        let arguments = given
            .get(&tool.name)
            .cloned()
            .unwrap_or_else(|| fill::arguments(&tool.input_schema));
        eprintln!("calling {} with {arguments}", tool.name);
        let name = tool.name.clone();
        let options = CallOptions::new().on_progress(move |p| {
            eprintln!("progress of {name}: {} / {:?}", p.progress(), p.total());
        });
        match session.call_tool_with(&tool.name, arguments, options).await {
            Ok(result) if result.is_error() => {
                eprintln!("{} reported an error: {}", tool.name, result.text());
            }
            Ok(result) => eprintln!("{} returned: {}", tool.name, result.text()),
            // The server answered, with a JSON-RPC error: like `isError`,
            // that is the server's answer (a tool it lists but does not
            // serve, say), not this client failing.
            Err(e @ SessionError::Protocol { .. }) => {
                eprintln!("{}: the server answered with an error: {e}", tool.name);
            }
            Err(e) => {
                eprintln!("{} failed: {e}", tool.name);
                failures.push(format!("{}: {e}", tool.name));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn given_arguments_come_from_the_context_tool_calls() {
        let context = json!({
            "name": "whatever",
            "toolCalls": [
                {"name": "a", "arguments": {"x": 1}},
                {"name": "a", "arguments": {"x": 2}},
                {"name": "b", "arguments": "not an object"},
                {"arguments": {"y": 1}}
            ],
            "client_id": "ignored"
        });
        let given = given_arguments(&context.to_string());
        assert_eq!(given.len(), 1);
        assert_eq!(given["a"], json!({"x": 1}));
        assert!(given_arguments("not json").is_empty());
        assert!(given_arguments(r#"{"client_id": "x"}"#).is_empty());
    }

    #[test]
    fn only_the_verify_scenarios_load_skills() {
        for s in [
            "sep-2640-client-verify-digest",
            "sep-2640-client-verify-size",
            "sep-2640-client-verify-frontmatter",
        ] {
            assert_eq!(skills_task(s), SkillsTask::LoadAll, "{s}");
        }
        for s in ["sep-2640-client-no-prefetch", "initialize", ""] {
            assert_eq!(skills_task(s), SkillsTask::List, "{s}");
        }
    }
}

//! The lifecycle and version negotiation: `initialize` (2024-11-05 to
//! 2025-11-25), `server/discover` (2026-07-28), and which revision a
//! request speaks under the server's [`Era`].

use std::time::Duration;

use mcp_stack_jsonrpc::Id;
use mcp_stack_protocol::discover::{DiscoverResult, UnsupportedVersionData};
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::results::{CacheHints, ResultType};
use mcp_stack_protocol::types::{
    Extra, Implementation, InitializeParams, InitializeResult, PromptsCapability,
    ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use mcp_stack_protocol::{ProtocolVersion, meta};
use serde_json::{Map, Value};

use super::hostile;
use super::misbehave::append_instance_log;
use super::params::{Presence, expect, typed};
use super::{BOGUS_PROTOCOL_VERSION, SERVER_NAME, Server};
use crate::client::ClientSide;
use crate::options::{Era, Misbehaviour, ServerOptions};
use crate::outbox::ProtocolError;
use crate::tools;

/// The modern revision the server speaks with `--era modern|dual`.
pub(crate) const DISCOVER_REVISION: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// The versions a server of this era names in `supportedVersions` and in
/// `-32022` errors, newest first.
pub(crate) fn supported_versions(era: Era) -> Vec<&'static str> {
    let mut supported = vec![DISCOVER_REVISION.as_str()];
    if era == Era::Dual {
        supported.extend(ProtocolVersion::HANDSHAKE.iter().map(|v| v.as_str()));
    }
    supported
}

/// The message and `data` of the `-32022` error refusing `requested`.
pub(crate) fn unsupported_version(era: Era, requested: Option<&str>) -> (String, Value) {
    let supported = supported_versions(era);
    let message = format!(
        "Unsupported protocol version (this server speaks {})",
        supported.join(", ")
    );
    let data = UnsupportedVersionData {
        supported: supported.into_iter().map(str::to_owned).collect(),
        requested: requested.map(str::to_owned),
        extra: Extra::new(),
    };
    (message, serde_json::to_value(data).unwrap_or_default())
}

/// Whether a modern (2026-07-28) request for `method` is served, rather than
/// answered `-32601`. Keep in step with `Server::dispatch`.
#[cfg(feature = "http")]
pub(crate) fn discover_method_known(options: &crate::options::ServerOptions, method: &str) -> bool {
    match method {
        request::ServerDiscover::METHOD
        | request::LoggingSetLevel::METHOD
        | request::SubscriptionsListen::METHOD
        | request::ResourcesList::METHOD
        | request::ResourcesTemplatesList::METHOD
        | request::ResourcesRead::METHOD
        | request::PromptsList::METHOD
        | request::PromptsGet::METHOD
        | request::CompletionComplete::METHOD
        | request::TasksGet::METHOD
        | request::TasksUpdate::METHOD
        | request::TasksCancel::METHOD => true,
        request::ToolsList::METHOD | request::ToolsCall::METHOD => {
            !options.has(Misbehaviour::NoToolsCapability)
        }
        _ => false,
    }
}

/// The `-32601` of a method 2026-07-28 does not have (`ping`, `initialize`).
pub(super) fn handshake_only(method: &str) -> ProtocolError {
    let why = if method == request::Ping::METHOD {
        " (2026-07-28 has no ping)"
    } else {
        " (2026-07-28 has no initialize handshake; send requests with _meta)"
    };
    ProtocolError::method_not_found(method, why)
}

/// `initialize`'s params. The testkit is stricter than the type (which
/// lets `clientInfo.version` default), so the fields are checked first, in
/// order.
fn parse_initialize(params: Map<String, Value>) -> Result<InitializeParams, ProtocolError> {
    if let Some(problem) = initialize_problem(&params) {
        return Err(problem);
    }
    typed(params, |_| None)
}

/// The first field of `initialize`'s params that is wrong.
fn initialize_problem(params: &Map<String, Value>) -> Option<ProtocolError> {
    let problem = expect(
        params,
        "protocolVersion",
        Presence::Required,
        Value::is_string,
        "a string",
    )
    .or_else(|| {
        expect(
            params,
            "capabilities",
            Presence::Required,
            Value::is_object,
            "an object",
        )
    });
    if problem.is_some() {
        return problem;
    }
    let Some(Value::Object(client)) = params.get("clientInfo") else {
        return Some(ProtocolError::invalid_field(
            "clientInfo",
            "required: an object with \"name\" and \"version\"",
        ));
    };
    ["name", "version"]
        .into_iter()
        .find(|field| !client.get(*field).is_some_and(Value::is_string))
        .map(|field| {
            ProtocolError::invalid_field(format!("clientInfo.{field}"), "expected a string")
        })
}

impl Server {
    /// Which revision a request speaks: `Some(true)` for 2026-07-28 (every
    /// request of a modern-era server; on a dual-era one, a request whose
    /// `_meta` names a version, or a `server/discover`). A modern request
    /// that does not name 2026-07-28 is answered `-32022` here: `None`.
    pub(super) async fn revision_of(
        &self,
        id: &Id,
        method: &str,
        params: Option<&Map<String, Value>>,
    ) -> Option<bool> {
        let era = self.options().era;
        let requested = params
            .and_then(|p| p.get(meta::KEY))
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .and_then(Value::as_str);
        let discover = match era {
            Era::Legacy => false,
            Era::Modern => true,
            _ => requested.is_some() || method == request::ServerDiscover::METHOD,
        };
        if discover && requested != Some(DISCOVER_REVISION.as_str()) {
            // Every modern request names its version; `initialize` to a
            // modern-only server lands here too, and the error names what the
            // server does speak.
            let (message, data) = unsupported_version(era, requested);
            let error = ProtocolError::with_data(
                mcp_stack_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION,
                message,
                data,
            );
            self.outbox.respond_error(Some(id.clone()), error).await;
            return None;
        }
        Some(discover)
    }

    /// An `initialize` request: logged to the instance log; `None` when the
    /// `never-answer-initialize` misbehaviour leaves it unanswered. What the
    /// client declares (and the revision agreed) is remembered for the
    /// tools that ask the client.
    pub(super) fn initialize_request(
        &mut self,
        params: Result<Map<String, Value>, ProtocolError>,
    ) -> Option<Result<InitializeResult, ProtocolError>> {
        if let Some(log) = &self.options().instance_log
            && let Err(e) = append_instance_log(log, "initialize")
        {
            self.log(&format!("cannot write instance log {}: {e}", log.display()));
        }
        if self.options().has(Misbehaviour::NeverAnswerInitialize) {
            self.log("not answering initialize (misbehaviour never-answer-initialize)");
            return None;
        }
        let answer = params.and_then(parse_initialize).map(|p| {
            let result = self.initialize(&p);
            self.client = ClientSide::legacy(&result.protocol_version, p.capabilities);
            result
        });
        Some(answer)
    }

    /// The `initialize` result: the requested version when it is one of
    /// the handshake revisions, else the latest of them.
    fn initialize(&self, params: &InitializeParams) -> InitializeResult {
        let requested = params.protocol_version.as_str();
        let version = if self.options().has(Misbehaviour::UnsupportedVersion) {
            BOGUS_PROTOCOL_VERSION
        } else if requested
            .parse::<ProtocolVersion>()
            .is_ok_and(ProtocolVersion::has_handshake)
        {
            requested
        } else {
            ProtocolVersion::LATEST_HANDSHAKE.as_str()
        };
        self.log(&format!(
            "initialize: client asked for {requested}, answering {version}"
        ));
        let tasks = (version == ProtocolVersion::V2025_11_25.as_str())
            .then(mcp_stack_protocol::tasks::TasksCapability::tool_calls);
        let capabilities = ServerCapabilities {
            logging: Some(Value::Object(Map::new())),
            tasks,
            ..self.capabilities()
        };
        let instructions = hostile::instructions(self.options());
        InitializeResult {
            protocol_version: version.to_owned(),
            capabilities,
            server_info: server_info(self.options()),
            instructions: instructions.or(Some(format!(
                "mcp-testkit is a test server. Tools: {}. read_file only reads inside the \
                 workspace folder; slow, progress and fail help test timeouts, progress and \
                 tool errors; touch_resource and add_resource change the test:// resources; \
                 ask_user, sample and list_roots ask the client (elicitation, sampling, roots).",
                tools::TOOL_NAMES.join(", ")
            ))),
            extra: Extra::new(),
        }
    }

    /// The `server/discover` result.
    pub(super) fn discover(&self) -> DiscoverResult {
        let supported = supported_versions(self.options().era);
        self.log(&format!(
            "server/discover: speaking {}",
            supported.join(", ")
        ));
        let supported = supported.into_iter().map(str::to_owned).collect();
        let mut capabilities = self.capabilities();
        mcp_stack_protocol::tasks::extension::offer(&mut capabilities);
        let mut result = DiscoverResult::new(supported, capabilities, &server_info(self.options()));
        result.instructions = hostile::instructions(self.options()).or(Some(
            "mcp-testkit (2026-07-28). ask_name shows multi-round-trip results.".to_owned(),
        ));
        ResultType::Complete.write(&mut result.extra);
        DISCOVER_CACHE.write(&mut result.extra);
        result
    }

    /// What both lifecycles declare: tools (with list changes, unless the
    /// `no-tools-capability` misbehaviour leaves them out), resources (with
    /// subscriptions and list changes), prompts (with list changes) and
    /// completions.
    fn capabilities(&self) -> ServerCapabilities {
        let tools =
            (!self.options().has(Misbehaviour::NoToolsCapability)).then(|| ToolsCapability {
                list_changed: Some(true),
                extra: Extra::new(),
            });
        ServerCapabilities {
            tools,
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                extra: Extra::new(),
            }),
            prompts: Some(PromptsCapability {
                list_changed: Some(true),
                extra: Extra::new(),
            }),
            completions: Some(Value::Object(Map::new())),
            ..ServerCapabilities::default()
        }
    }
}

/// The server's name, title and version, in `serverInfo` and in
/// `server/discover`'s `_meta` (another under `escape-text` and `print-env`).
fn server_info(options: &ServerOptions) -> Implementation {
    hostile::server_info(options).unwrap_or_else(|| Implementation {
        title: Some("MCP test kit server".to_owned()),
        ..Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
    })
}

/// How long a client may keep the `server/discover` result.
const DISCOVER_CACHE: CacheHints = CacheHints {
    ttl: Duration::from_secs(60),
    private: false,
};

#[cfg(all(test, feature = "http"))]
mod tests {
    use mcp_stack_jsonrpc::codes;
    use serde_json::json;

    use super::*;
    use crate::options::ServerOptions;
    use crate::server::{Host, serve_on};

    /// The HTTP layer answers 404 for the methods `discover_method_known`
    /// refuses: it must agree with what the server itself serves.
    #[tokio::test]
    async fn discover_method_known_agrees_with_the_dispatch() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        for misbehaviours in [vec![], vec![Misbehaviour::NoToolsCapability]] {
            for era in [Era::Modern, Era::Dual] {
                let options = ServerOptions {
                    era,
                    misbehaviours: misbehaviours.clone(),
                    ..ServerOptions::default()
                };
                let (client, server) = tokio::io::duplex(1 << 16);
                let (r, w) = tokio::io::split(server);
                let task = tokio::spawn(serve_on(options.clone(), None, r, w, Host::InMemory));
                let (r, mut w) = tokio::io::split(client);
                let mut lines = BufReader::new(r).lines();
                for method in [
                    "server/discover",
                    "logging/setLevel",
                    "tools/list",
                    "tools/call",
                    "ping",
                    "initialize",
                    "resources/list",
                    "resources/templates/list",
                    "resources/read",
                    "resources/subscribe",
                    "resources/unsubscribe",
                    "prompts/list",
                    "prompts/get",
                    "completion/complete",
                    "sampling/createMessage",
                    "tasks/get",
                    "tasks/update",
                    "tasks/cancel",
                    "tasks/result",
                    "tasks/list",
                ] {
                    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method,
                        "params": {"_meta": {meta::PROTOCOL_VERSION: DISCOVER_REVISION.as_str()}}});
                    w.write_all(format!("{request}\n").as_bytes())
                        .await
                        .unwrap();
                    let answer: Value =
                        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
                    let not_found = answer["error"]["code"] == codes::METHOD_NOT_FOUND;
                    assert_eq!(
                        discover_method_known(&options, method),
                        !not_found,
                        "{era:?} {method}: {answer}"
                    );
                }
                w.shutdown().await.unwrap();
                task.await.unwrap().unwrap();
            }
        }
    }
}

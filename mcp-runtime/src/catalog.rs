//! The tool catalog an agent sees: every server's tools under namespaced
//! names, sorted, with the failures of servers that did not start.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_config::{Fingerprint, ToolFilter};
use mcp_session::ProtocolVersion;
use mcp_session::types::{Tool, ToolAnnotations};
use mcp_transport::TransportKind;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::describe_duration;
use crate::naming;

/// One tool as the agent sees it.
#[derive(Debug, Clone)]
pub struct RuntimeTool {
    name: String,
    server: String,
    tool: Arc<Tool>,
}

impl RuntimeTool {
    /// The namespaced name (`SERVER__TOOL`): what the agent calls.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server it belongs to (its name in the config).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's own name on its server.
    pub fn tool_name(&self) -> &str {
        &self.tool.name
    }

    /// The tool as its server described it (schema, annotations, …).
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    /// The description, for the model.
    pub fn description(&self) -> Option<&str> {
        self.tool.description.as_deref()
    }

    /// JSON Schema of the arguments.
    pub fn input_schema(&self) -> &Value {
        &self.tool.input_schema
    }

    /// Behaviour hints (`readOnlyHint`, `destructiveHint` …).
    pub fn annotations(&self) -> Option<&ToolAnnotations> {
        self.tool.annotations.as_ref()
    }
}

/// Which startup step of a server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartupStep {
    /// Reading its settings (an unsupported protocol version pin, say).
    Config,
    /// Opening the transport (starting the process).
    Connect,
    /// The `initialize` handshake.
    Handshake,
    /// Fetching `tools/list`.
    ListTools,
}

impl fmt::Display for StartupStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartupStep::Config => "config",
            StartupStep::Connect => "connect",
            StartupStep::Handshake => "handshake",
            StartupStep::ListTools => "tools/list",
        })
    }
}

/// A server that did not start: which, at which step, why, and when it is
/// tried again.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerFailure {
    /// The server's name.
    pub server: String,
    /// The step that failed.
    pub step: StartupStep,
    /// Why, with a hint where there is one.
    pub message: String,
    /// The server's last stderr lines (stdio), oldest first.
    pub stderr_tail: Vec<String>,
    /// Failed attempts in a row with this server config.
    pub attempts: u32,
    /// The wait before the next attempt (the next request after it retries).
    pub retry_after: Duration,
    pub(crate) retry_at: Instant,
    pub(crate) fingerprint: Fingerprint,
}

impl fmt::Display for ServerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server `{}` failed at {}: {}",
            self.server, self.step, self.message
        )?;
        if let Some(last) = self.stderr_tail.last() {
            write!(f, " (last stderr line: {last})")?;
        }
        write!(
            f,
            " [attempt {}, next try in {}]",
            self.attempts,
            describe_duration(self.retry_after)
        )
    }
}

/// Something worth knowing about a server's tools (no `tools` capability,
/// a name left out …).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerNote {
    /// The server's name (empty when it concerns several).
    pub server: String,
    /// What to know.
    pub message: String,
}

/// A server the session is connected to, and what was negotiated with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectedServer {
    /// The server's name in the config.
    pub server: String,
    /// The protocol revision in use (2026-07-28 or a handshake revision).
    pub protocol: ProtocolVersion,
    /// The transport in use.
    pub transport: TransportKind,
}

/// The session's tools, sorted by namespaced name, with diagnostics.
#[derive(Debug, Default)]
pub struct RuntimeCatalog {
    tools: Vec<RuntimeTool>,
    index: HashMap<String, usize>,
    failures: Vec<ServerFailure>,
    notes: Vec<ServerNote>,
    connected: Vec<ConnectedServer>,
}

/// What the catalog is built from, per connected server.
pub(crate) struct ServerTools<'a> {
    pub(crate) server: &'a str,
    pub(crate) filter: &'a ToolFilter,
    pub(crate) tools: Vec<&'a Arc<Tool>>,
    pub(crate) diagnostics: &'a [String],
    pub(crate) protocol: ProtocolVersion,
    pub(crate) transport: TransportKind,
}

impl RuntimeCatalog {
    /// Builds the catalog: filters, names (see [`naming::assign`]), sorts.
    pub(crate) fn build(servers: &[ServerTools<'_>], failures: Vec<ServerFailure>) -> Self {
        let mut notes = Vec::new();
        let mut connected: Vec<ConnectedServer> = servers
            .iter()
            .map(|s| ConnectedServer {
                server: s.server.to_owned(),
                protocol: s.protocol,
                transport: s.transport,
            })
            .collect();
        connected.sort_by(|a, b| a.server.cmp(&b.server));
        let mut pairs = BTreeSet::new();
        let mut by_pair: BTreeMap<(String, String), Arc<Tool>> = BTreeMap::new();
        for s in servers {
            for m in s.diagnostics {
                notes.push(ServerNote {
                    server: s.server.to_owned(),
                    message: m.clone(),
                });
            }
            for tool in &s.tools {
                if !s.filter.allows(&tool.name) {
                    continue;
                }
                let pair = (s.server.to_owned(), tool.name.clone());
                pairs.insert(pair.clone());
                by_pair.insert(pair, Arc::clone(tool));
            }
        }
        let (names, left_out) = naming::assign(&pairs);
        notes.extend(left_out.into_iter().map(|message| ServerNote {
            server: String::new(),
            message,
        }));
        let mut tools: Vec<RuntimeTool> = names
            .into_iter()
            .filter_map(|(pair, name)| {
                let tool = by_pair.remove(&pair)?;
                Some(RuntimeTool {
                    name,
                    server: pair.0,
                    tool,
                })
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        RuntimeCatalog {
            tools,
            index,
            failures,
            notes,
            connected,
        }
    }

    /// The servers connected, by name, with the protocol revision and
    /// transport each one uses.
    pub fn connected(&self) -> &[ConnectedServer] {
        &self.connected
    }

    /// The tools, sorted by namespaced name.
    pub fn tools(&self) -> &[RuntimeTool] {
        &self.tools
    }

    /// A tool by namespaced name.
    pub fn get(&self, name: &str) -> Option<&RuntimeTool> {
        self.index.get(name).and_then(|&i| self.tools.get(i))
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// There are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Servers that failed to start, by name.
    pub fn failures(&self) -> &[ServerFailure] {
        &self.failures
    }

    /// Notes on servers' tools.
    pub fn notes(&self) -> &[ServerNote] {
        &self.notes
    }

    pub(crate) fn some_names(&self, n: usize) -> Vec<String> {
        self.tools.iter().take(n).map(|t| t.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, read_only: bool) -> Arc<Tool> {
        Arc::new(
            serde_json::from_value(json!({
                "name": name,
                "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
                "annotations": {"readOnlyHint": read_only}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn namespaced_sorted_filtered_with_schema_and_annotations() {
        let a = [
            tool("write", false),
            tool("read", true),
            tool("secret", true),
        ];
        let b = [tool("read", true)];
        let mut filter_a = ToolFilter::default();
        filter_a.exclude.insert("secret".to_owned());
        let open = ToolFilter::default();
        let servers = [
            ServerTools {
                server: "zeta",
                filter: &filter_a,
                tools: a.iter().collect(),
                diagnostics: &[],
                protocol: ProtocolVersion::V2026_07_28,
                transport: TransportKind::StreamableHttp,
            },
            ServerTools {
                server: "alpha",
                filter: &open,
                tools: b.iter().collect(),
                diagnostics: &["no tools capability".to_owned()],
                protocol: ProtocolVersion::V2025_11_25,
                transport: TransportKind::Stdio,
            },
        ];
        let c = RuntimeCatalog::build(&servers, Vec::new());
        let names: Vec<&str> = c.tools().iter().map(RuntimeTool::name).collect();
        assert_eq!(names, ["alpha__read", "zeta__read", "zeta__write"]);
        let w = c.get("zeta__write").unwrap();
        assert_eq!((w.server(), w.tool_name()), ("zeta", "write"));
        assert_eq!(w.annotations().unwrap().read_only_hint, Some(false));
        assert_eq!(w.input_schema()["properties"]["x"]["type"], "string");
        assert!(c.get("zeta__secret").is_none());
        assert_eq!(c.notes().len(), 1);
        assert_eq!(c.notes()[0].server, "alpha");
        let connected: Vec<(&str, &str)> = c
            .connected()
            .iter()
            .map(|s| (s.server.as_str(), s.protocol.as_str()))
            .collect();
        assert_eq!(connected, [("alpha", "2025-11-25"), ("zeta", "2026-07-28")]);
    }
}

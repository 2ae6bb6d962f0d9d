//! The catalog an agent sees: every server's tools, resources, resource
//! templates and prompts under namespaced names, sorted, with the failures
//! of servers that did not start.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_config::{Fingerprint, ToolFilter};
use mcp_stack_session::ProtocolVersion;
use mcp_stack_session::protocol::request::{Request as _, ToolsList};
use mcp_stack_session::types::{
    Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolAnnotations,
};
use mcp_stack_transport::TransportKind;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::{EntryKind, describe_duration};
pub use crate::lists::ToolStatus;
use crate::naming;

/// One tool as the agent sees it.
#[derive(Debug, Clone)]
pub struct RuntimeTool {
    name: String,
    /// Shared by the server's entries.
    server: Arc<str>,
    tool: Arc<Tool>,
    status: ToolStatus,
    /// How its definition differs from the one pinned (not approved yet).
    changed: Option<Arc<[String]>>,
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

    /// Whether its server can take a call now.
    pub fn status(&self) -> ToolStatus {
        self.status
    }

    /// When its definition differs from the one pinned and is used anyway
    /// (pinning policy `warn`), the fields that changed.
    pub fn definition_changed(&self) -> Option<&[String]> {
        self.changed.as_deref()
    }
}

/// One resource as the agent sees it: a namespaced name for a URI.
#[derive(Debug, Clone)]
pub struct RuntimeResource {
    name: String,
    /// Shared by the server's entries.
    server: Arc<str>,
    resource: Arc<Resource>,
}

impl RuntimeResource {
    /// The namespaced name (`SERVER__NAME`, from the resource's `name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server it belongs to (its name in the config).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The URI, which is what the server reads.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }

    /// The resource's own name on its server.
    pub fn resource_name(&self) -> &str {
        &self.resource.name
    }

    /// The resource as its server described it (title, MIME type, size …).
    pub fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
}

/// One resource template as the agent sees it.
#[derive(Debug, Clone)]
pub struct RuntimeResourceTemplate {
    name: String,
    /// Shared by the server's entries.
    server: Arc<str>,
    template: Arc<ResourceTemplate>,
}

impl RuntimeResourceTemplate {
    /// The namespaced name (`SERVER__NAME`, from the template's `name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server it belongs to (its name in the config).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The URI template (RFC 6570).
    pub fn uri_template(&self) -> &str {
        &self.template.uri_template
    }

    /// The template's own name on its server.
    pub fn template_name(&self) -> &str {
        &self.template.name
    }

    /// The template as its server described it.
    pub fn template(&self) -> &Arc<ResourceTemplate> {
        &self.template
    }
}

/// One prompt as the agent sees it.
#[derive(Debug, Clone)]
pub struct RuntimePrompt {
    name: String,
    /// Shared by the server's entries.
    server: Arc<str>,
    prompt: Arc<Prompt>,
}

impl RuntimePrompt {
    /// The namespaced name (`SERVER__PROMPT`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server it belongs to (its name in the config).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The prompt's own name on its server.
    pub fn prompt_name(&self) -> &str {
        &self.prompt.name
    }

    /// The prompt as its server described it.
    pub fn prompt(&self) -> &Arc<Prompt> {
        &self.prompt
    }

    /// The arguments it declares.
    pub fn arguments(&self) -> &[PromptArgument] {
        self.prompt.arguments.as_deref().unwrap_or_default()
    }
}

/// Which startup step of a server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartupStep {
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
            StartupStep::Connect => "connect",
            StartupStep::Handshake => "handshake",
            StartupStep::ListTools => ToolsList::METHOD,
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

/// Something worth knowing about a server's entries (no `tools`
/// capability, a list that could not be fetched, a name left out …).
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

/// The session's tools, resources, resource templates and prompts, each
/// sorted by namespaced name, with diagnostics.
///
/// Every kind is named by the rules of [`naming`] on its own: `SERVER__NAME`,
/// sanitized, at most 64 characters, clashes resolved deterministically.
/// Resources and templates are named after their `name`; when a server
/// gives several the same name, the first (by URI) keeps it and the others
/// are named after `name@URI` (a note says so). An entry a server lists
/// twice (same URI, same prompt name) is kept once.
#[derive(Debug, Default)]
pub struct RuntimeCatalog {
    // Each kind sorted by namespaced name (unique): found by binary search,
    // with no map of names to build (2,400 names at 100 servers).
    tools: Vec<RuntimeTool>,
    resources: Vec<RuntimeResource>,
    /// URI → the resources (of any server) at it.
    uris: HashMap<String, Vec<usize>>,
    templates: Vec<RuntimeResourceTemplate>,
    prompts: Vec<RuntimePrompt>,
    failures: Vec<ServerFailure>,
    notes: Vec<ServerNote>,
    connected: Vec<ConnectedServer>,
    pin_reports: Vec<crate::persist::PinReport>,
    /// The tools' search index, built on first search (`deferred.rs`).
    pub(crate) search: crate::search::IndexCell,
}

/// What the catalog is built from, per connected server.
pub(crate) struct ServerEntries<'a> {
    pub(crate) server: &'a str,
    pub(crate) filter: &'a ToolFilter,
    pub(crate) tools: Vec<&'a Arc<Tool>>,
    pub(crate) resources: &'a [Arc<Resource>],
    pub(crate) templates: &'a [Arc<ResourceTemplate>],
    pub(crate) prompts: &'a [Arc<Prompt>],
    pub(crate) diagnostics: &'a [String],
    pub(crate) protocol: ProtocolVersion,
    pub(crate) transport: TransportKind,
    /// Ready when connected; else listed from the persisted catalog.
    pub(crate) status: ToolStatus,
    /// Tools whose definition differs from their pin, with the diff.
    pub(crate) changed: BTreeMap<String, Vec<String>>,
}

/// One entry to name: its name on the server, what tells it apart from
/// others of that name (a URI; the name itself for prompts), the item.
type ToName<'a, T> = (&'a str, &'a str, &'a Arc<T>);

/// Names one kind of entry across servers (see [`RuntimeCatalog`]): returns
/// (namespaced name, server, item), sorted by namespaced name.
fn name_kind<T>(
    kind: EntryKind,
    per_server: Vec<(&str, Vec<ToName<'_, T>>)>,
    notes: &mut Vec<ServerNote>,
) -> Vec<(String, Arc<str>, Arc<T>)> {
    // (server, raw name, item): unique by (server, raw name).
    let mut entries: Vec<(&str, Cow<'_, str>, &Arc<T>)> = Vec::new();
    for (server, mut items) in per_server {
        items.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut ids = HashSet::with_capacity(items.len());
        let mut raws: HashSet<Cow<'_, str>> = HashSet::with_capacity(items.len());
        let mut shared_names = BTreeSet::new();
        let mut previous: Option<&str> = None;
        for (name, id, item) in items {
            if !ids.insert(id) {
                notes.push(ServerNote {
                    server: server.to_owned(),
                    message: format!("lists {kind} `{id}` more than once; it is kept once"),
                });
                continue;
            }
            let raw: Cow<'_, str> = if previous == Some(name) {
                shared_names.insert(name);
                Cow::Owned(format!("{name}@{id}"))
            } else {
                Cow::Borrowed(name)
            };
            previous = Some(name);
            if !raws.insert(raw.clone()) {
                notes.push(ServerNote {
                    server: server.to_owned(),
                    message: format!(
                        "{kind} `{id}` is left out: another {kind} of this server is literally named `{raw}`"
                    ),
                });
                continue;
            }
            entries.push((server, raw, item));
        }
        for name in shared_names {
            notes.push(ServerNote {
                server: server.to_owned(),
                message: format!(
                    "several {kind}s are named `{name}`: the first by URI keeps the name, the \
                     others are named after `{name}@URI`"
                ),
            });
        }
    }
    // Unique already: server names are, and raw names within a server.
    entries.sort_unstable_by(|a, b| (a.0, &*a.1).cmp(&(b.0, &*b.1)));
    let pairs: Vec<(&str, &str)> = entries.iter().map(|(s, raw, _)| (*s, &**raw)).collect();
    let (names, left_out) = naming::assign_by_name(&pairs, &kind.to_string());
    notes.extend(left_out.into_iter().map(|message| ServerNote {
        server: String::new(),
        message,
    }));
    // One string per server, shared by its entries (sorted by server).
    let mut shared: Vec<Arc<str>> = Vec::with_capacity(entries.len());
    for (server, _, _) in &entries {
        match shared.last() {
            Some(last) if &**last == *server => shared.push(Arc::clone(last)),
            _ => shared.push(Arc::from(*server)),
        }
    }
    // Sorted by name already: the names come that way.
    names
        .into_iter()
        .filter_map(|(name, i)| {
            let (_, _, item) = entries.get(i)?;
            Some((name, Arc::clone(shared.get(i)?), Arc::clone(item)))
        })
        .collect()
}

/// The entry of `sorted` (sorted by `name_of`, unique) named `name`.
fn by_name<'a, T>(sorted: &'a [T], name: &str, name_of: impl Fn(&T) -> &str) -> Option<&'a T> {
    let at = sorted.binary_search_by(|e| name_of(e).cmp(name)).ok()?;
    sorted.get(at)
}

impl RuntimeCatalog {
    /// Builds the catalog: filters the tools, names every kind (see
    /// [`naming::assign_kind`]), sorts.
    pub(crate) fn build(servers: &[ServerEntries<'_>], failures: Vec<ServerFailure>) -> Self {
        let mut notes = Vec::new();
        let mut connected: Vec<ConnectedServer> = servers
            .iter()
            .filter(|s| s.status == ToolStatus::Ready)
            .map(|s| ConnectedServer {
                server: s.server.to_owned(),
                protocol: s.protocol,
                transport: s.transport,
            })
            .collect();
        connected.sort_by(|a, b| a.server.cmp(&b.server));
        for s in servers {
            for m in s.diagnostics {
                notes.push(ServerNote {
                    server: s.server.to_owned(),
                    message: m.clone(),
                });
            }
        }
        let tools = name_kind(
            EntryKind::Tool,
            servers
                .iter()
                .map(|s| {
                    let allowed = s.tools.iter().filter(|t| s.filter.allows(&t.name));
                    let items = allowed.map(|t| (t.name.as_str(), t.name.as_str(), *t));
                    (s.server, items.collect())
                })
                .collect(),
            &mut notes,
        );
        let extras: HashMap<&str, &ServerEntries<'_>> =
            servers.iter().map(|s| (s.server, s)).collect();
        let tools: Vec<RuntimeTool> = tools
            .into_iter()
            .map(|(name, server, tool)| {
                let entries = extras.get(&*server);
                let status = entries.map_or(ToolStatus::Ready, |e| e.status);
                let changed = entries
                    .and_then(|e| e.changed.get(&tool.name))
                    .map(|d| Arc::from(d.as_slice()));
                RuntimeTool {
                    name,
                    server,
                    tool,
                    status,
                    changed,
                }
            })
            .collect();
        let resources = name_kind(
            EntryKind::Resource,
            servers
                .iter()
                .map(|s| {
                    let items = s
                        .resources
                        .iter()
                        .map(|r| (r.name.as_str(), r.uri.as_str(), r));
                    (s.server, items.collect())
                })
                .collect(),
            &mut notes,
        );
        let resources: Vec<RuntimeResource> = resources
            .into_iter()
            .map(|(name, server, resource)| RuntimeResource {
                name,
                server,
                resource,
            })
            .collect();
        let templates = name_kind(
            EntryKind::ResourceTemplate,
            servers
                .iter()
                .map(|s| {
                    let items = s
                        .templates
                        .iter()
                        .map(|t| (t.name.as_str(), t.uri_template.as_str(), t));
                    (s.server, items.collect())
                })
                .collect(),
            &mut notes,
        );
        let templates: Vec<RuntimeResourceTemplate> = templates
            .into_iter()
            .map(|(name, server, template)| RuntimeResourceTemplate {
                name,
                server,
                template,
            })
            .collect();
        let prompts = name_kind(
            EntryKind::Prompt,
            servers
                .iter()
                .map(|s| {
                    let items = s
                        .prompts
                        .iter()
                        .map(|p| (p.name.as_str(), p.name.as_str(), p));
                    (s.server, items.collect())
                })
                .collect(),
            &mut notes,
        );
        let prompts: Vec<RuntimePrompt> = prompts
            .into_iter()
            .map(|(name, server, prompt)| RuntimePrompt {
                name,
                server,
                prompt,
            })
            .collect();
        let mut uris: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in resources.iter().enumerate() {
            uris.entry(r.uri().to_owned()).or_default().push(i);
        }
        RuntimeCatalog {
            tools,
            resources,
            uris,
            templates,
            prompts,
            failures,
            notes,
            connected,
            pin_reports: Vec::new(),
            search: Default::default(),
        }
    }

    /// The catalog with these pin reports.
    pub(crate) fn with_pin_reports(mut self, reports: Vec<crate::persist::PinReport>) -> Self {
        self.pin_reports = reports;
        self
    }

    /// Tools whose definition is not the one pinned (changed, and
    /// withheld under policy `block`), and tools that came or went in the
    /// last comparison with the pins.
    pub fn pin_reports(&self) -> &[crate::persist::PinReport] {
        &self.pin_reports
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
        by_name(&self.tools, name, RuntimeTool::name)
    }

    /// The resources, sorted by namespaced name.
    pub fn resources(&self) -> &[RuntimeResource] {
        &self.resources
    }

    /// A resource by namespaced name.
    pub fn resource(&self, name: &str) -> Option<&RuntimeResource> {
        by_name(&self.resources, name, RuntimeResource::name)
    }

    /// The resources at `uri`, of every server that lists it (sorted by
    /// namespaced name; more than one when servers share a URI).
    pub fn resources_at(&self, uri: &str) -> impl Iterator<Item = &RuntimeResource> {
        self.uris
            .get(uri)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.resources.get(i))
    }

    /// The resource templates, sorted by namespaced name.
    pub fn resource_templates(&self) -> &[RuntimeResourceTemplate] {
        &self.templates
    }

    /// A resource template by namespaced name.
    pub fn resource_template(&self, name: &str) -> Option<&RuntimeResourceTemplate> {
        by_name(&self.templates, name, RuntimeResourceTemplate::name)
    }

    /// The prompts, sorted by namespaced name.
    pub fn prompts(&self) -> &[RuntimePrompt] {
        &self.prompts
    }

    /// A prompt by namespaced name.
    pub fn prompt(&self, name: &str) -> Option<&RuntimePrompt> {
        by_name(&self.prompts, name, RuntimePrompt::name)
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

    /// Notes on servers' entries.
    pub fn notes(&self) -> &[ServerNote] {
        &self.notes
    }

    /// Up to `n` namespaced names of one kind, for error messages.
    pub(crate) fn some_names(&self, kind: EntryKind, n: usize) -> Vec<String> {
        let names: Vec<&str> = match kind {
            EntryKind::Tool => self.tools.iter().map(RuntimeTool::name).take(n).collect(),
            EntryKind::Resource => self
                .resources
                .iter()
                .map(RuntimeResource::name)
                .take(n)
                .collect(),
            EntryKind::ResourceTemplate => self
                .templates
                .iter()
                .map(RuntimeResourceTemplate::name)
                .take(n)
                .collect(),
            EntryKind::Prompt => self
                .prompts
                .iter()
                .map(RuntimePrompt::name)
                .take(n)
                .collect(),
        };
        names.into_iter().map(str::to_owned).collect()
    }
}

#[cfg(test)]
mod tests;

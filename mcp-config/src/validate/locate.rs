//! Where each format keeps its servers (and VS Code its inputs).

use serde_json::{Map, Value};

use super::{join, kind};
use crate::Format;
use crate::report::Problem;

/// The server maps of a document, each with its path, in the order a later
/// one's server overrides an earlier one's of the same name; and where the
/// inputs are.
#[derive(Debug, Default)]
pub(super) struct Found<'d> {
    pub(super) maps: Vec<(String, &'d Map<String, Value>)>,
    pub(super) inputs: Option<(String, &'d Value)>,
}

fn object<'d>(
    path: String,
    v: &'d Value,
    problems: &mut Vec<Problem>,
) -> Option<(String, &'d Map<String, Value>)> {
    match v {
        Value::Object(m) => Some((path, m)),
        other => {
            problems.push(Problem::error(
                path,
                format!(
                    "must be an object mapping server names to server records, found {}",
                    kind(other)
                ),
            ));
            None
        }
    }
}

/// Finds the servers of `doc` as `format`'s client does. `project` picks
/// Claude Code's local scope (`projects.<project>.mcpServers`).
pub(super) fn locate<'d>(
    doc: &'d Map<String, Value>,
    format: Format,
    project: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Found<'d> {
    let mut found = Found::default();
    let nested = |outer: &str, inner: &str| {
        doc.get(outer)
            .and_then(Value::as_object)
            .and_then(|m| m.get(inner))
    };
    match format {
        Format::VsCode => {
            // `.vscode/mcp.json`: `servers`; a `settings.json`: `mcp.servers`.
            if let Some(v) = doc.get("servers") {
                found.maps.extend(object("servers".to_owned(), v, problems));
                found.inputs = doc.get("inputs").map(|v| ("inputs".to_owned(), v));
            } else if let Some(v) = nested("mcp", "servers") {
                found
                    .maps
                    .extend(object("mcp.servers".to_owned(), v, problems));
                found.inputs = nested("mcp", "inputs").map(|v| ("mcp.inputs".to_owned(), v));
            }
        }
        Format::OpenCode => {
            // The newer layout is `mcp.servers`; the older puts the servers
            // under `mcp` itself (where a server named `servers` has a `type`).
            match (doc.get("mcp"), nested("mcp", "servers")) {
                (_, Some(v @ Value::Object(m))) if !m.contains_key("type") => {
                    found
                        .maps
                        .extend(object("mcp.servers".to_owned(), v, problems));
                }
                (Some(v), _) => found.maps.extend(object("mcp".to_owned(), v, problems)),
                (None, _) => {}
            }
        }
        Format::ClaudeCode => {
            // User (or project) scope, then the local scope of this project.
            if let Some(v) = doc.get("mcpServers") {
                found
                    .maps
                    .extend(object("mcpServers".to_owned(), v, problems));
            }
            if let Some(p) = project
                && let Some(v) = doc
                    .get("projects")
                    .and_then(Value::as_object)
                    .and_then(|projects| projects.get(p))
                    .and_then(Value::as_object)
                    .and_then(|entry| entry.get("mcpServers"))
            {
                let path = join(&join("projects", p), "mcpServers");
                found.maps.extend(object(path, v, problems));
            }
        }
        _ => {
            let key = format.servers_key();
            if let Some(v) = doc.get(key) {
                found.maps.extend(object(key.to_owned(), v, problems));
            }
        }
    }
    found
}

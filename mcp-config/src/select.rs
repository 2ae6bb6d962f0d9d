//! Only what is asked for: one server picked out of a file, the others'
//! problems kept as warnings.

use std::collections::BTreeSet;

use crate::expand::{Dialect, Ref, refs};
use crate::model::{InputSpec, McpConfig};
use crate::report::{Problem, Report, Severity};
use crate::validate::{Model, join};
use crate::{ConfigError, Secret};

impl McpConfig {
    /// The inputs (`${input:ID}`) the enabled servers use (with `only`,
    /// that server's), each once, in the order declared: what a program
    /// asks for before [`Resolve::inputs`](crate::Resolve::inputs).
    pub fn inputs_used(&self, only: Option<&str>) -> Vec<&InputSpec> {
        let dialect = Dialect::of(self.format);
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        for (name, s) in &self.servers {
            if only.is_some_and(|o| o != name)
                || s.enabled == Some(false)
                || self.agent.mcp_enabled == Some(false)
            {
                continue;
            }
            let mut texts: Vec<&str> = Vec::new();
            texts.extend(s.command.as_deref());
            texts.extend(s.args.iter().map(String::as_str));
            texts.extend(s.env.values().map(Secret::expose));
            texts.extend(s.cwd.as_deref());
            texts.extend(s.url.as_deref());
            texts.extend(s.headers.values().map(Secret::expose));
            texts.extend(s.env_file.as_deref());
            texts.extend(s.proxy.as_ref().map(Secret::expose));
            for t in texts {
                for r in refs(t, dialect) {
                    if let Ref::Input(id) = r {
                        ids.insert(id);
                    }
                }
            }
        }
        self.inputs
            .iter()
            .filter(|i| ids.contains(i.id.as_str()))
            .collect()
    }

    /// Where a server sits in the file (its problems' path prefix).
    pub fn location(&self, name: &str) -> String {
        self.locations
            .get(name)
            .cloned()
            .unwrap_or_else(|| join(self.format.servers_key(), name))
    }
}

/// Whether `path` is at or under `location`.
pub(crate) fn is_under(path: &str, location: &str) -> bool {
    path.strip_prefix(location)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Keeps the server `name`: another server's errors become warnings and
/// that server is left out. A name the document lacks is an error naming
/// the servers it has.
pub(crate) fn keep_one(
    model: &mut Model,
    report: &mut Report,
    name: &str,
    origin: &str,
) -> Result<(), ConfigError> {
    let Some(own) = model.locations.get(name).cloned() else {
        return Err(ConfigError::UnknownServer {
            origin: origin.to_owned(),
            name: name.to_owned(),
            known: model.locations.keys().cloned().collect(),
            disabled: false,
        });
    };
    let mut broken = Vec::new();
    for p in &mut report.problems {
        if p.severity != Severity::Error || is_under(&p.path, &own) {
            continue;
        }
        if let Some((other, _)) = model.locations.iter().find(|(_, at)| is_under(&p.path, at)) {
            broken.push(other.clone());
            *p = Problem::warning(
                std::mem::take(&mut p.path),
                format!(
                    "{} (server `{other}` is left out: only `{name}` was asked for)",
                    p.message
                ),
            );
        }
    }
    for other in broken {
        model.servers.remove(&other);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_means_the_path_or_below_it() {
        assert!(is_under("mcpServers.a", "mcpServers.a"));
        assert!(is_under("mcpServers.a.env.X", "mcpServers.a"));
        assert!(is_under("mcpServers.a[0]", "mcpServers.a"));
        assert!(!is_under("mcpServers.ab", "mcpServers.a"));
        assert!(!is_under("mcpServers", "mcpServers.a"));
    }
}

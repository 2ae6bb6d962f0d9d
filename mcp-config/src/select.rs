//! Only what is asked for: one server picked out of a file, the others'
//! problems kept as warnings.

use crate::ConfigError;
use crate::report::{Problem, Report, Severity};
use crate::validate::Model;

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

//! The one error type of this crate.

use std::path::PathBuf;

use crate::Report;

/// Why a config could not be loaded or resolved. Messages never hold env or
/// header values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// What was read.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// Not valid JSON or TOML.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file (or `<input>`).
        origin: String,
        /// What the parser said, with line and column, never the offending text.
        message: String,
    },
    /// The format could not be detected from the content.
    #[error(
        "{origin}: cannot tell which config format this is (no `mcpServers`, `servers`, \
         `mcp_servers`, `context_servers` or `mcp` found); name the format: openclaw-json, \
         openclaw-toml, claude-desktop, cursor, vscode, codex, claude-code, gemini-cli, windsurf, \
         zed or opencode"
    )]
    UnknownFormat {
        /// The file (or `<input>`).
        origin: String,
    },
    /// A folder holds more than one config file and none was chosen.
    #[error(
        "{} holds {}; only one would be read, so edits to the other would seem to do nothing. \
         Pass the file itself, or choose a format",
        dir.display(), describe_files(files)
    )]
    Ambiguous {
        /// The folder.
        dir: PathBuf,
        /// The config files found in it.
        files: Vec<PathBuf>,
    },
    /// A folder holds no config file.
    #[error("{} holds no MCP config file (looked for {})", dir.display(), looked_for.join(", "))]
    NotFound {
        /// The folder.
        dir: PathBuf,
        /// The names looked for.
        looked_for: Vec<String>,
    },
    /// Validation found errors (every one of them is in the report).
    #[error("{origin}: invalid MCP config:\n{report}")]
    Invalid {
        /// The file (or `<input>`).
        origin: String,
        /// All problems, warnings included.
        report: Report,
    },
    /// The one server asked for is not in the file, or is disabled.
    #[error("{origin}: {}", describe_missing(name, known, *disabled))]
    UnknownServer {
        /// The file (or `<input>`).
        origin: String,
        /// The name asked for.
        name: String,
        /// The servers the file has.
        known: Vec<String>,
        /// It is there, but disabled.
        disabled: bool,
    },
    /// `${VAR}` expansion failed (missing variables and values that became invalid).
    #[error("{origin}: cannot resolve the MCP config:\n{report}")]
    Unresolved {
        /// The file (or `<input>`).
        origin: String,
        /// All problems.
        report: Report,
    },
}

impl ConfigError {
    /// The report, when the error is made of config problems.
    pub fn report(&self) -> Option<&Report> {
        match self {
            ConfigError::Invalid { report, .. } | ConfigError::Unresolved { report, .. } => {
                Some(report)
            }
            _ => None,
        }
    }
}

fn describe_files(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    match names.as_slice() {
        [a, b] => format!("both {a} and {b}"),
        _ => format!("several config files ({})", names.join(", ")),
    }
}

fn describe_missing(name: &str, known: &[String], disabled: bool) -> String {
    if disabled {
        format!("server `{name}` is disabled; enable it to use it")
    } else if known.is_empty() {
        format!("no server `{name}`: the file has no servers")
    } else {
        format!("no server `{name}` (it has: {})", known.join(", "))
    }
}

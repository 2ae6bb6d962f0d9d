//! Reading files: format detection, syntax, folders.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::validate::document_to_model;
use crate::{ConfigError, Format, McpConfig, Report};

/// How to load a config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// The format, or `None` to detect it from the file name and content.
    pub format: Option<Format>,
    /// Treat warnings (unknown keys, ignored fields) as errors.
    pub strict: bool,
    /// Only this server is wanted: another server's errors become warnings
    /// (that server is left out), and a name the file lacks is an error.
    pub server: Option<String>,
    /// The project folder, for Claude Code's `~/.claude.json`: its local
    /// scope (`projects.<this folder>.mcpServers`) is read beside the user
    /// scope, and wins on a name both have. `mcp` gives its working folder.
    pub project: Option<PathBuf>,
}

impl Options {
    /// Detect the format, warnings stay warnings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Use this format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// Strict mode: warnings are errors.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The project folder (Claude Code's local scope).
    pub fn project(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project = Some(dir.into());
        self
    }

    /// Only this server is wanted (`--server NAME`): see [`Options::server`](Self#structfield.server).
    pub fn server(mut self, name: impl Into<String>) -> Self {
        self.server = Some(name.into());
        self
    }
}

/// A loaded config and its warnings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Loaded {
    /// The validated config.
    pub config: McpConfig,
    /// Warnings (errors make loading fail instead).
    pub report: Report,
}

/// Files a folder is searched for, in this order.
pub const FOLDER_CANDIDATES: &[&str] = &[
    "settings.json",
    "config.toml",
    "claude_desktop_config.json",
    "mcp.json",
    ".mcp.json",
    ".cursor/mcp.json",
    ".vscode/mcp.json",
    ".gemini/settings.json",
    "mcp_config.json",
    "opencode.json",
    "opencode.jsonc",
];

/// Parses config text; the format is detected unless named in `options`.
pub fn parse_str(text: &str, options: &Options) -> Result<Loaded, ConfigError> {
    parse_inner(text, None, options)
}

/// Loads a config file, or a folder holding exactly one config file.
///
/// A folder with several (say `settings.json` and `config.toml`) is an
/// error naming them, unless `options.format` chooses one.
pub fn load_path(path: &Path, options: &Options) -> Result<Loaded, ConfigError> {
    let file = if path.is_dir() {
        locate(path, options.format)?
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|source| ConfigError::Read {
        path: file.clone(),
        source,
    })?;
    parse_inner(&text, Some(&file), options)
}

/// Finds the config file in a folder.
pub fn locate(dir: &Path, format: Option<Format>) -> Result<PathBuf, ConfigError> {
    let names: &[&str] = match format {
        Some(f) => f.file_names(),
        None => FOLDER_CANDIDATES,
    };
    let found: Vec<PathBuf> = names
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.is_file())
        .collect();
    match (found.as_slice(), format) {
        ([], _) => Err(ConfigError::NotFound {
            dir: dir.to_path_buf(),
            looked_for: names.iter().map(|n| (*n).to_owned()).collect(),
        }),
        ([one, ..], Some(_)) | ([one], None) => Ok(one.clone()),
        (_, None) => Err(ConfigError::Ambiguous {
            dir: dir.to_path_buf(),
            files: found,
        }),
    }
}

fn origin(path: Option<&Path>) -> String {
    path.map_or_else(|| "<input>".to_owned(), |p| p.display().to_string())
}

fn parse_inner(text: &str, path: Option<&Path>, options: &Options) -> Result<Loaded, ConfigError> {
    let origin = origin(path);
    let ext = path.and_then(Path::extension).and_then(|e| e.to_str());
    let (document, format) = match options.format {
        Some(f) => (parse_syntax(text, f.is_toml(), &origin)?, f),
        None => {
            let is_toml = match ext {
                Some("toml") => true,
                Some("json" | "jsonc") => false,
                _ => !text.trim_start().starts_with('{'),
            };
            let doc = parse_syntax(text, is_toml, &origin)?;
            let format = detect(&doc, is_toml, path).ok_or_else(|| ConfigError::UnknownFormat {
                origin: origin.clone(),
            })?;
            (doc, format)
        }
    };
    let project = options.project.as_ref().map(|p| p.to_string_lossy());
    let (mut model, mut report) =
        document_to_model(&document, format, options.strict, project.as_deref());
    if let Some(name) = &options.server {
        crate::select::keep_one(&mut model, &mut report, name, &origin)?;
    }
    if report.has_errors() {
        return Err(ConfigError::Invalid { origin, report });
    }
    let config = McpConfig {
        servers: model.servers,
        agent: model.agent,
        format,
        source: path.map(Path::to_path_buf),
        locations: model.locations,
        inputs: model.inputs,
    };
    Ok(Loaded { config, report })
}

fn parse_syntax(text: &str, is_toml: bool, origin: &str) -> Result<Value, ConfigError> {
    if is_toml {
        toml::from_str::<Value>(text).map_err(|e| {
            let (line, column) =
                e.span()
                    .and_then(|s| text.get(..s.start))
                    .map_or((0, 0), |before| {
                        let line = before.matches('\n').count() + 1;
                        let column =
                            before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                        (line, column)
                    });
            // The parser's own Display quotes the offending line: it may hold a secret.
            let what = e.message().trim_end();
            ConfigError::Syntax {
                origin: origin.to_owned(),
                message: format!("not valid TOML at line {line}, column {column}: {what}"),
            }
        })
    } else {
        // Comments and trailing commas are read as the editors read them.
        serde_json::from_str::<Value>(&crate::jsonc::to_json(text)).map_err(|e| {
            ConfigError::Syntax {
                origin: origin.to_owned(),
                message: format!("not valid JSON: {e}"),
            }
        })
    }
}

const OPENCLAW_KEYS: &[&str] = &[
    "transport",
    "timeoutMs",
    "requestTimeoutMs",
    "handshakeTimeoutMs",
    "supportsParallelToolCalls",
    "timeout_ms",
    "request_timeout_ms",
    "handshake_timeout_ms",
    "supports_parallel_tool_calls",
];

const CODEX_KEYS: &[&str] = &[
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "env_vars",
];

/// Keys only Gemini CLI's server records have.
const GEMINI_KEYS: &[&str] = &[
    "httpUrl",
    "trust",
    "includeTools",
    "excludeTools",
    "timeout",
];

/// Top-level keys of Gemini CLI's `settings.json` (none is OpenClaw's).
const GEMINI_TOP: &[&str] = &[
    "selectedAuthType",
    "theme",
    "general",
    "ui",
    "security",
    "telemetry",
    "contextFileName",
    "allowMCPServers",
    "excludeMCPServers",
    "coreTools",
];

/// Detects the format from the content, using the file name as a hint.
pub(crate) fn detect(doc: &Value, is_toml: bool, path: Option<&Path>) -> Option<Format> {
    let obj = doc.as_object()?;
    let file_name = path
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let in_vscode = path
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .is_some_and(|n| n == ".vscode");
    let records_have = |key: &str, names: &[&str]| {
        obj.get(key).and_then(Value::as_object).is_some_and(|m| {
            m.values()
                .filter_map(Value::as_object)
                .any(|r| r.keys().any(|k| names.contains(&k.as_str())))
        })
    };
    let has_table = |k: &str| obj.get(k).is_some_and(Value::is_object);
    if is_toml {
        if records_have("mcp_servers", CODEX_KEYS) {
            return Some(Format::Codex);
        }
        if has_table("agent") || has_table("llm") || records_have("mcp_servers", OPENCLAW_KEYS) {
            return Some(Format::OpenClawToml);
        }
        let codex_top = [
            "model",
            "model_provider",
            "approval_policy",
            "sandbox_mode",
            "profiles",
        ];
        if obj.contains_key("mcp_servers") || codex_top.iter().any(|k| obj.contains_key(*k)) {
            return Some(Format::Codex);
        }
        return None;
    }
    if obj.contains_key("servers") && !obj.contains_key("mcpServers") {
        return Some(Format::VsCode);
    }
    if has_table("context_servers") {
        return Some(Format::Zed);
    }
    if let Some(mcp) = obj.get("mcp").and_then(Value::as_object) {
        let schema = obj.get("$schema").and_then(Value::as_str).unwrap_or("");
        let opencode_records = |m: &serde_json::Map<String, Value>| {
            m.values().filter_map(Value::as_object).any(|r| {
                matches!(
                    r.get("type").and_then(Value::as_str),
                    Some("local" | "remote")
                ) || r.get("command").is_some_and(Value::is_array)
            })
        };
        let nested = mcp.get("servers").and_then(Value::as_object);
        if file_name.starts_with("opencode.")
            || schema.contains("opencode")
            || opencode_records(mcp)
            || nested.is_some_and(opencode_records)
        {
            return Some(Format::OpenCode);
        }
        if nested.is_some() {
            return Some(Format::VsCode);
        }
    }
    let parent = path
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    match file_name {
        ".mcp.json" | ".claude.json" => return Some(Format::ClaudeCode),
        "mcp_config.json" => return Some(Format::Windsurf),
        "settings.json" if parent == ".gemini" => return Some(Format::GeminiCli),
        _ => {}
    }
    if obj.contains_key("projects") && obj.contains_key("mcpServers") {
        return Some(Format::ClaudeCode);
    }
    if has_table("agent") || has_table("llm") || records_have("mcpServers", OPENCLAW_KEYS) {
        return Some(Format::OpenClawJson);
    }
    if records_have("mcpServers", GEMINI_KEYS) || GEMINI_TOP.iter().any(|k| obj.contains_key(*k)) {
        return Some(Format::GeminiCli);
    }
    if records_have("mcpServers", &["serverUrl"]) {
        return Some(Format::Windsurf);
    }
    match file_name {
        "settings.json" => return Some(Format::OpenClawJson),
        "claude_desktop_config.json" => return Some(Format::ClaudeDesktop),
        "mcp.json" if in_vscode => return Some(Format::VsCode),
        "mcp.json" => return Some(Format::Cursor),
        _ => {}
    }
    if !obj.contains_key("mcpServers") {
        return (has_table("agent") || has_table("llm")).then_some(Format::OpenClawJson);
    }
    if has_table("agent") || has_table("llm") || records_have("mcpServers", OPENCLAW_KEYS) {
        Some(Format::OpenClawJson)
    } else if records_have("mcpServers", &["url", "type", "headers"]) {
        Some(Format::Cursor)
    } else {
        Some(Format::ClaudeDesktop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detection_by_content() {
        let d = |v: Value, toml: bool| detect(&v, toml, None);
        assert_eq!(d(json!({"servers": {}}), false), Some(Format::VsCode));
        assert_eq!(
            d(json!({"mcpServers": {"a": {"command": "x"}}}), false),
            Some(Format::ClaudeDesktop)
        );
        assert_eq!(
            d(json!({"mcpServers": {"a": {"url": "x"}}}), false),
            Some(Format::Cursor)
        );
        assert_eq!(
            d(json!({"mcpServers": {}, "agent": {}}), false),
            Some(Format::OpenClawJson)
        );
        assert_eq!(
            d(json!({"mcpServers": {"a": {"transport": "stdio"}}}), false),
            Some(Format::OpenClawJson)
        );
        assert_eq!(d(json!({"other": 1}), false), None);
        assert_eq!(
            d(json!({"mcp_servers": {"a": {"command": "x"}}}), true),
            Some(Format::Codex)
        );
        assert_eq!(
            d(json!({"mcp_servers": {}, "agent": {}}), true),
            Some(Format::OpenClawToml)
        );
        assert_eq!(
            d(
                json!({"mcp_servers": {"a": {"bearer_token_env_var": "T"}}, "agent": {}}),
                true
            ),
            Some(Format::Codex)
        );
        assert_eq!(d(json!({"model": "m"}), true), Some(Format::Codex));
    }

    #[test]
    fn detection_by_file_name() {
        let doc = json!({"mcpServers": {}});
        let at = |p: &str| detect(&doc, false, Some(Path::new(p)));
        assert_eq!(
            at("/x/claude_desktop_config.json"),
            Some(Format::ClaudeDesktop)
        );
        assert_eq!(at("/x/settings.json"), Some(Format::OpenClawJson));
        assert_eq!(at("/x/.cursor/mcp.json"), Some(Format::Cursor));
        assert_eq!(at("/x/.vscode/mcp.json"), Some(Format::VsCode));
    }

    #[test]
    fn toml_syntax_errors_do_not_quote_the_line() {
        let text = "[mcp_servers.a]\ncommand = \"x\"\nenv = { K = \"s3cr3t-value\" \n";
        let e = parse_str(text, &Options::new()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("not valid TOML at line 3"), "{msg}");
        assert!(!msg.contains("s3cr3t"), "{msg}");
    }

    #[test]
    fn json_syntax_errors_name_line_and_column() {
        let e = parse_str(
            "{\"mcpServers\": {\"a\": {\"env\": {\"K\": \"s3cr3t\"}}",
            &Options::new(),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("<input>: not valid JSON: EOF while parsing"),
            "{msg}"
        );
        assert!(!msg.contains("s3cr3t"), "{msg}");
    }
}

//! `is_mcp_config_record` and document validation: every problem at once, each with its path.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::expand::{self, Dialect};
use mcp_stack_protocol::ProtocolPin;
use mcp_stack_protocol::endpoint::check_url;

use crate::model::{AgentDefaults, DeclaredTransport, ServerConfig};
use crate::report::{Problem, Report};
use crate::{Format, Secret};

/// Validates one server record; `path` is where it sits (`mcpServers.local-fs`).
///
/// Reports every problem at once. Unknown keys are warnings here;
/// [`validate`] with `strict` makes them errors. Works on TOML too, once
/// converted to a `serde_json::Value`.
///
/// ```
/// use mcp_stack_config::is_mcp_config_record;
/// let problems = is_mcp_config_record(&serde_json::json!({"command": "node", "url": "https://x"}), "mcpServers.a");
/// assert_eq!(problems[0].path, "mcpServers.a");
/// assert!(problems[0].message.starts_with("has both `command` and `url`"));
/// ```
pub fn is_mcp_config_record(value: &Value, path: &str) -> Vec<Problem> {
    record(value, path, None).1
}

/// Validates a whole document (a config file as JSON) in the given format.
pub fn validate(document: &Value, format: Format, strict: bool) -> Report {
    document_to_model(document, format, strict, None).1
}

/// What a document holds, before it becomes an [`McpConfig`](crate::McpConfig).
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub(crate) servers: BTreeMap<String, ServerConfig>,
    pub(crate) agent: AgentDefaults,
    /// Where each server sits (`mcpServers.a`).
    pub(crate) locations: BTreeMap<String, String>,
    pub(crate) inputs: Vec<crate::model::InputSpec>,
}

pub(crate) fn document_to_model(
    document: &Value,
    format: Format,
    strict: bool,
    project: Option<&str>,
) -> (Model, Report) {
    let mut problems = Vec::new();
    let mut inputs = Vec::new();
    let mut servers = BTreeMap::new();
    let mut locations = BTreeMap::new();
    let mut agent = AgentDefaults::default();
    match document {
        Value::Object(doc) => {
            if let Some(a) = doc.get("agent") {
                agent = agent_defaults(a, &mut problems);
            }
            let found = locate::locate(doc, format, project, &mut problems);
            if let Some((path, v)) = found.inputs {
                let mut ck = Ck {
                    base: path.clone(),
                    problems: Vec::new(),
                    dialect: Dialect::PLAIN,
                };
                inputs = inputs::inputs(&mut ck, &path, v);
                problems.extend(ck.problems);
            }
            for (key, map) in found.maps {
                for (name, rec) in sorted(map) {
                    let path = join(&key, name);
                    if name.is_empty() {
                        problems.push(Problem::error(&key, "has a server with an empty name"));
                    } else if !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        problems.push(Problem::error(
                            &path,
                            format!(
                                "server name `{}` may only use letters, digits, `_` and `-`",
                                name.escape_debug()
                            ),
                        ));
                    }
                    let (server, p) = record(rec, &path, Some(format));
                    problems.extend(p);
                    if let Some(s) = server {
                        servers.insert(name.clone(), s);
                    }
                    locations.insert(name.clone(), path);
                }
            }
        }
        other => problems.push(Problem::error(
            "",
            format!(
                "the file must hold an object (a table of settings), found {}",
                kind(other)
            ),
        )),
    }
    let mut report = Report { problems };
    if strict {
        report.make_strict();
    }
    let model = Model {
        servers,
        agent,
        locations,
        inputs,
    };
    (model, report)
}

fn agent_defaults(value: &Value, problems: &mut Vec<Problem>) -> AgentDefaults {
    let mut ck = Ck {
        base: "agent".to_owned(),
        problems: Vec::new(),
        dialect: Dialect::PLAIN,
    };
    let mut out = AgentDefaults::default();
    let Value::Object(map) = value else {
        problems.push(Problem::error(
            "agent",
            format!("must be an object, found {}", kind(value)),
        ));
        return out;
    };
    for (key, v) in map {
        let path = ck.at(key);
        match key.as_str() {
            "toolCallTimeoutMs" | "tool_call_timeout_ms" => {
                out.request_timeout = ck.duration(path, v, Unit::Millis);
            }
            "handshakeTimeoutMs" | "handshake_timeout_ms" => {
                out.handshake_timeout = ck.duration(path, v, Unit::Millis);
            }
            "mcpEnabled" | "mcp_enabled" => out.mcp_enabled = ck.boolean(path, v),
            _ => {} // the agent block holds much more than MCP settings
        }
    }
    problems.extend(ck.problems);
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Transport,
    Command,
    Args,
    Env,
    EnvVars,
    Cwd,
    Url,
    Headers,
    EnvHeaders,
    BearerEnv,
    RequestMs,
    RequestSec,
    HandshakeMs,
    HandshakeSec,
    Parallel,
    Enabled,
    Disabled,
    Include,
    Exclude,
    ProtocolVersion,
    EnvFile,
    OAuth,
    Proxy,
    /// Gemini CLI's `httpUrl`: a streamable HTTP endpoint.
    HttpUrl,
    /// `timeout` in milliseconds: Gemini CLI's request timeout, OpenCode's
    /// wait for the server's tools (its handshake).
    Timeout,
    Trust,
    Pinning,
    /// Read and left alone: `description` (Gemini CLI), `source` and
    /// `settings` (Zed).
    Ignored,
}

impl Field {
    /// Keys of one group must not both be set.
    fn group(self) -> &'static str {
        match self {
            Field::Transport => "the transport",
            Field::Command => "the command",
            Field::Args => "the arguments",
            Field::Env => "the environment",
            Field::EnvVars => "the passed-through variables",
            Field::Cwd => "the working directory",
            Field::Url | Field::HttpUrl => "the URL",
            Field::Headers => "the headers",
            Field::EnvHeaders => "the headers taken from the environment",
            Field::BearerEnv => "the bearer token variable",
            Field::RequestMs | Field::RequestSec | Field::Timeout => "the request timeout",
            Field::HandshakeMs | Field::HandshakeSec => "the handshake timeout",
            Field::Parallel => "parallel tool calls",
            Field::Enabled | Field::Disabled => "whether the server is enabled",
            Field::Include => "the included tools",
            Field::Exclude => "the excluded tools",
            Field::ProtocolVersion => "the protocol version",
            Field::EnvFile => "the env file",
            Field::OAuth => "the OAuth settings",
            Field::Proxy => "the proxy",
            Field::Trust => "trust",
            Field::Pinning => "the pinning policy",
            Field::Ignored => "",
        }
    }
}

/// Every key a server record may have, in any of the formats (camelCase and snake_case).
const KEYS: &[(&str, Field)] = &[
    ("transport", Field::Transport),
    ("type", Field::Transport),
    ("command", Field::Command),
    ("args", Field::Args),
    ("env", Field::Env),
    ("env_vars", Field::EnvVars),
    ("envVars", Field::EnvVars),
    ("cwd", Field::Cwd),
    ("url", Field::Url),
    ("headers", Field::Headers),
    ("http_headers", Field::Headers),
    ("env_http_headers", Field::EnvHeaders),
    ("envHttpHeaders", Field::EnvHeaders),
    ("bearer_token_env_var", Field::BearerEnv),
    ("bearerTokenEnvVar", Field::BearerEnv),
    ("timeoutMs", Field::RequestMs),
    ("requestTimeoutMs", Field::RequestMs),
    ("timeout_ms", Field::RequestMs),
    ("request_timeout_ms", Field::RequestMs),
    ("tool_timeout_sec", Field::RequestSec),
    ("handshakeTimeoutMs", Field::HandshakeMs),
    ("handshake_timeout_ms", Field::HandshakeMs),
    ("startup_timeout_ms", Field::HandshakeMs),
    ("startup_timeout_sec", Field::HandshakeSec),
    ("supportsParallelToolCalls", Field::Parallel),
    ("supports_parallel_tool_calls", Field::Parallel),
    ("enabled", Field::Enabled),
    ("disabled", Field::Disabled),
    ("includeTools", Field::Include),
    ("include_tools", Field::Include),
    ("enabled_tools", Field::Include),
    ("excludeTools", Field::Exclude),
    ("exclude_tools", Field::Exclude),
    ("disabled_tools", Field::Exclude),
    ("protocolVersion", Field::ProtocolVersion),
    ("protocol_version", Field::ProtocolVersion),
    ("envFile", Field::EnvFile),
    ("env_file", Field::EnvFile),
    ("oauth", Field::OAuth),
    ("auth", Field::OAuth),
    ("proxy", Field::Proxy),
    ("httpUrl", Field::HttpUrl),
    ("serverUrl", Field::Url),
    ("environment", Field::Env),
    ("timeout", Field::Timeout),
    ("trust", Field::Trust),
    ("pinning", Field::Pinning),
    ("disabledTools", Field::Exclude),
    ("description", Field::Ignored),
    ("source", Field::Ignored),
    ("settings", Field::Ignored),
];

#[derive(Clone, Copy)]
enum Unit {
    Millis,
    Secs,
}

struct Ck {
    base: String,
    problems: Vec<Problem>,
    dialect: Dialect,
}

impl Ck {
    fn at(&self, seg: &str) -> String {
        join(&self.base, seg)
    }

    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::error(path, message));
    }

    fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::warning(path, message));
    }

    fn wrong_type(&mut self, path: String, expected: &str, v: &Value) {
        self.error(path, format!("must be {expected}, found {}", kind(v)));
    }

    fn string<'v>(&mut self, path: String, v: &'v Value) -> Option<&'v str> {
        match v {
            Value::String(s) => Some(s),
            _ => {
                self.wrong_type(path, "a string", v);
                None
            }
        }
    }

    /// A string that may hold `${VAR}`: checks the template syntax too.
    fn template(&mut self, path: String, v: &Value) -> Option<String> {
        let s = self.string(path.clone(), v)?;
        if let Err(e) = expand::check(s, self.dialect) {
            self.error(path, e.0);
            return None;
        }
        Some(s.to_owned())
    }

    fn boolean(&mut self, path: String, v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => {
                self.wrong_type(path, "true or false", v);
                None
            }
        }
    }

    fn duration(&mut self, path: String, v: &Value, unit: Unit) -> Option<Duration> {
        let unit_name = match unit {
            Unit::Millis => "a number of milliseconds",
            Unit::Secs => "a number of seconds",
        };
        let Some(n) = v.as_f64() else {
            self.wrong_type(path, unit_name, v);
            return None;
        };
        if n <= 0.0 {
            self.error(path, format!("must be greater than zero, found {v}"));
            return None;
        }
        let d = match (v.as_u64(), unit) {
            (Some(ms), Unit::Millis) => Some(Duration::from_millis(ms)),
            (Some(s), Unit::Secs) => Some(Duration::from_secs(s)),
            (None, Unit::Millis) => Duration::try_from_secs_f64(n / 1000.0).ok(),
            (None, Unit::Secs) => Duration::try_from_secs_f64(n).ok(),
        };
        if d.is_none() {
            self.error(path, "is too large");
        }
        d
    }

    fn string_list(&mut self, path: String, v: &Value, templates: bool) -> Option<Vec<String>> {
        let Value::Array(items) = v else {
            self.wrong_type(path, "a list of strings", v);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let s = if templates {
                self.template(p, item)
            } else {
                self.string(p, item).map(str::to_owned)
            };
            match s {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn var_name(&mut self, path: String, v: &Value) -> Option<String> {
        let s = self.string(path.clone(), v)?;
        if is_var_name(s) {
            Some(s.to_owned())
        } else {
            self.error(path, "must name an environment variable (letters, digits and `_`, not starting with a digit)");
            None
        }
    }

    fn object<'v>(
        &mut self,
        path: &str,
        v: &'v Value,
        what: &str,
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            _ => {
                self.wrong_type(path.to_owned(), what, v);
                None
            }
        }
    }

    /// A header name; `seen` holds lowercase names already used in this record.
    fn header_name(&mut self, path: &str, name: &str, seen: &mut Vec<(String, String)>) -> bool {
        if name.is_empty() {
            self.error(path, "header name is empty");
            return false;
        }
        if !name.bytes().all(is_tchar) {
            self.error(path, "header name is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)");
            return false;
        }
        let lower = name.to_ascii_lowercase();
        if let Some((_, first)) = seen.iter().find(|(l, _)| *l == lower) {
            let first = first.clone();
            self.error(
                path,
                format!(
                    "repeats the header `{first}` (header names are case-insensitive); keep one"
                ),
            );
            return false;
        }
        seen.push((lower, name.to_owned()));
        true
    }
}

/// Checks a header value (a template before expansion, or the expanded value).
/// The message never quotes the value.
pub(crate) fn header_value_problem(value: &str) -> Option<&'static str> {
    if value.contains(['\r', '\n']) {
        Some(
            "header value contains a line break (CR or LF), which would split the HTTP request; remove it",
        )
    } else if value
        .chars()
        .any(|c| (c.is_control() && c != '\t') || c == '\u{7f}')
    {
        Some("header value contains a control character; remove it")
    } else if !value.is_ascii() {
        Some("header value contains a non-ASCII character; header values must be ASCII")
    } else {
        None
    }
}

/// Checks a URL (a template before expansion, or the expanded value).
/// `None` when fine or when it cannot be judged before expansion.
pub(crate) fn url_problem(url: &str) -> Option<String> {
    // A template is checked with each `${…}` standing for a plain word (and
    // checked again once expanded); one that is all variable cannot be.
    if url.starts_with("${") {
        return None;
    }
    let mut plain = String::with_capacity(url.len());
    let mut rest = url;
    while let Some((before, after)) = rest.split_once("${") {
        plain.push_str(before);
        match after.split_once('}') {
            Some((_, tail)) => {
                plain.push('x');
                rest = tail;
            }
            None => {
                plain.push_str("${");
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    check_url(&plain).err().map(|p| p.to_string())
}

/// Checks a `proxy` value (a template before expansion, or the expanded
/// value): `none`, empty, or an http:// proxy URL. `None` when fine or
/// when it cannot be judged before expansion. Never quotes the value.
pub(crate) fn proxy_problem(value: &str) -> Option<String> {
    if is_no_proxy(value) || expand::has_vars(value) {
        return None;
    }
    mcp_stack_protocol::endpoint::check_proxy_url(value.trim())
        .err()
        .map(|p| format!("{p}; or write \"none\" to connect directly"))
}

/// `none` (any case) or empty: no proxy, whatever the environment says.
pub(crate) fn is_no_proxy(value: &str) -> bool {
    let v = value.trim();
    v.is_empty() || v.eq_ignore_ascii_case("none")
}

/// Entries by key, whatever order `serde_json`'s map keeps (so reports are stable).
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

pub(crate) fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Path segment join; odd characters in keys are escaped so a report stays one line each.
pub(crate) fn join(base: &str, seg: &str) -> String {
    let seg: String = if seg.chars().any(char::is_control) {
        seg.escape_debug().collect()
    } else {
        seg.to_owned()
    };
    if base.is_empty() {
        seg
    } else {
        format!("{base}.{seg}")
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn transport_name(t: DeclaredTransport) -> &'static str {
    match t {
        DeclaredTransport::Stdio => "stdio",
        DeclaredTransport::StreamableHttp => "streamable-http",
        DeclaredTransport::Http => "http",
        DeclaredTransport::Sse => "sse",
    }
}

/// Validates a record and builds it; the record is `None` when it is not an object.
pub(crate) fn record(
    value: &Value,
    path: &str,
    format: Option<Format>,
) -> (Option<ServerConfig>, Vec<Problem>) {
    let mut ck = Ck {
        base: path.to_owned(),
        problems: Vec::new(),
        dialect: format.map_or(Dialect::PLAIN, Dialect::of),
    };
    let Value::Object(map) = value else {
        ck.error(
            path,
            format!(
                "must be an object (a server record with `command` or `url`), found {}",
                kind(value)
            ),
        );
        return (None, ck.problems);
    };
    let mut s = ServerConfig::default();
    let mut seen_groups: Vec<(&'static str, &str)> = Vec::new();
    let mut header_names: Vec<(String, String)> = Vec::new();
    let mut transport_key = "transport";
    let mut stdio_only: Vec<String> = Vec::new();
    let mut http_only: Vec<String> = Vec::new();

    for (key, v) in sorted(map) {
        let path = ck.at(key);
        let Some(&(_, field)) = KEYS.iter().find(|(k, _)| k == key) else {
            let hint = crate::suggest::did_you_mean(key, KEYS.iter().map(|(k, _)| *k));
            ck.warn(
                path,
                format!("unknown key `{}` is ignored{hint}", key.escape_debug()),
            );
            continue;
        };
        if field == Field::Ignored {
            continue;
        }
        if let Some((_, first)) = seen_groups.iter().find(|(g, _)| *g == field.group()) {
            ck.error(
                path,
                format!(
                    "`{first}` already sets {}; keep one of the two",
                    field.group()
                ),
            );
            continue;
        }
        seen_groups.push((field.group(), key));
        match field {
            Field::Transport => {
                transport_key = if key == "type" { "type" } else { "transport" };
                if let Some(t) = ck.string(path.clone(), v) {
                    s.transport = match t {
                        "stdio" => Some(DeclaredTransport::Stdio),
                        "streamable-http" | "streamableHttp" | "streamable_http" => {
                            Some(DeclaredTransport::StreamableHttp)
                        }
                        "http" => Some(DeclaredTransport::Http),
                        "sse" => Some(DeclaredTransport::Sse),
                        // OpenCode's names.
                        "local" => Some(DeclaredTransport::Stdio),
                        "remote" => Some(DeclaredTransport::Http),
                        other => {
                            ck.error(path, format!("unknown transport `{}`; use stdio, streamable-http, http or sse", other.escape_debug()));
                            None
                        }
                    };
                }
            }
            Field::Command => command::command(&mut ck, &mut s, &path, v, map),
            Field::Args => {
                stdio_only.push(path.clone());
                s.args = ck.string_list(path, v, true).unwrap_or_default();
            }
            Field::Env => {
                stdio_only.push(path.clone());
                if let Some(m) = ck.object(&path, v, "an object of variable names to string values")
                {
                    for (name, val) in sorted(m) {
                        let p = join(&path, name);
                        if name.is_empty() || name.contains(['=', '\0']) {
                            ck.error(p, "environment variable name must be non-empty and contain no `=` or NUL");
                        } else if let Some(val) = ck.template(p, val) {
                            s.env.insert(name.clone(), Secret::new(val));
                        }
                    }
                }
            }
            Field::EnvVars => {
                stdio_only.push(path.clone());
                if let Value::Array(items) = v {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(n) = ck.var_name(format!("{path}[{i}]"), item) {
                            s.env_vars.push(n);
                        }
                    }
                } else {
                    ck.wrong_type(path, "a list of environment variable names", v);
                }
            }
            Field::Cwd => {
                stdio_only.push(path.clone());
                s.cwd = ck.template(path, v);
            }
            Field::Url | Field::HttpUrl => {
                if field == Field::HttpUrl {
                    s.transport = Some(DeclaredTransport::StreamableHttp);
                } else if format == Some(Format::GeminiCli) && key == "url" && s.transport.is_none()
                {
                    // Gemini CLI: `url` is an SSE endpoint, `httpUrl` a streamable one.
                    s.transport = Some(DeclaredTransport::Sse);
                }
                if let Some(u) = ck.template(path.clone(), v) {
                    if let Some(m) = url_problem(&u) {
                        ck.error(path, m);
                    } else {
                        s.url = Some(u);
                    }
                }
            }
            Field::Headers => {
                http_only.push(path.clone());
                if let Some(m) = ck.object(&path, v, "an object of header names to string values") {
                    for (name, val) in sorted(m) {
                        let p = join(&path, name);
                        if !ck.header_name(&p, name, &mut header_names) {
                            continue;
                        }
                        if let Some(val) = ck.template(p.clone(), val) {
                            match header_value_problem(&val) {
                                Some(m) => ck.error(p, m),
                                None => {
                                    s.headers.insert(name.clone(), Secret::new(val));
                                }
                            }
                        }
                    }
                }
            }
            Field::EnvHeaders => {
                http_only.push(path.clone());
                if let Some(m) = ck.object(
                    &path,
                    v,
                    "an object of header names to environment variable names",
                ) {
                    for (name, val) in sorted(m) {
                        let p = join(&path, name);
                        if ck.header_name(&p, name, &mut header_names)
                            && let Some(var) = ck.var_name(p, val)
                        {
                            s.env_headers.insert(name.clone(), var);
                        }
                    }
                }
            }
            Field::BearerEnv => {
                http_only.push(path.clone());
                if ck.header_name(&path, "Authorization", &mut header_names) {
                    s.bearer_token_env_var = ck.var_name(path, v);
                }
            }
            Field::RequestMs => s.request_timeout = ck.duration(path, v, Unit::Millis),
            Field::Timeout if format == Some(Format::OpenCode) => {
                s.handshake_timeout = ck.duration(path, v, Unit::Millis);
            }
            Field::Timeout => s.request_timeout = ck.duration(path, v, Unit::Millis),
            Field::Trust => s.trust = ck.boolean(path, v),
            Field::Pinning => {
                if let Some(text) = ck.string(path.clone(), v) {
                    s.pinning = crate::model::ToolPinning::parse(text);
                    if s.pinning.is_none() {
                        ck.error(path, "must be block, warn or off");
                    }
                }
            }
            Field::Ignored => {}
            Field::RequestSec => s.request_timeout = ck.duration(path, v, Unit::Secs),
            Field::HandshakeMs => s.handshake_timeout = ck.duration(path, v, Unit::Millis),
            Field::HandshakeSec => s.handshake_timeout = ck.duration(path, v, Unit::Secs),
            Field::Parallel => s.supports_parallel_tool_calls = ck.boolean(path, v),
            Field::Enabled => s.enabled = ck.boolean(path, v),
            Field::Disabled => s.enabled = ck.boolean(path, v).map(|d| !d),
            Field::Include => s.include_tools = ck.string_list(path, v, false),
            Field::Exclude => s.exclude_tools = ck.string_list(path, v, false).unwrap_or_default(),
            Field::ProtocolVersion => {
                if let Some(pv) = ck.string(path.clone(), v) {
                    if let Ok(pin) = pv.parse::<ProtocolPin>() {
                        s.protocol_version = Some(pin);
                    } else {
                        ck.error(
                            path,
                            format!(
                                "unknown protocol version `{}`; use one of {}",
                                pv.escape_debug(),
                                ProtocolPin::spellings().join(", ")
                            ),
                        );
                    }
                }
            }
            Field::EnvFile => {
                stdio_only.push(path.clone());
                s.env_file = ck.template(path, v);
            }
            Field::OAuth => {
                http_only.push(path.clone());
                s.oauth = oauth_settings(&mut ck, &path, v);
            }
            Field::Proxy => {
                http_only.push(path.clone());
                if let Some(p) = ck.template(path.clone(), v) {
                    match proxy_problem(&p) {
                        Some(m) => ck.error(path, m),
                        None => s.proxy = Some(Secret::new(p)),
                    }
                }
            }
        }
    }

    let has_command = map.contains_key("command");
    let has_url = ["url", "httpUrl", "serverUrl"]
        .iter()
        .any(|k| map.contains_key(*k));
    match (has_command, has_url) {
        (true, true) => ck.error(
            path,
            "has both `command` and `url`; a server is either a local process (`command`) or a remote endpoint (`url`), not both",
        ),
        (false, false) => ck.error(
            path,
            "has neither `command` nor `url`; add `command` to run a local server or `url` to reach a remote one",
        ),
        (true, false) => {
            if let Some(t @ (DeclaredTransport::StreamableHttp | DeclaredTransport::Http | DeclaredTransport::Sse)) = s.transport {
                ck.error(ck.at(transport_key), format!("is `{}` but there is no `url`", transport_name(t)));
            }
            for p in http_only {
                ck.warn(p, "is ignored: only HTTP servers (with `url`) use it");
            }
        }
        (false, true) => {
            if s.transport == Some(DeclaredTransport::Stdio) {
                ck.error(ck.at(transport_key), "is `stdio` but there is no `command`");
            }
            for p in stdio_only {
                ck.warn(p, "is ignored: only stdio servers (with `command`) use it");
            }
        }
    }
    (Some(s), ck.problems)
}

mod command;
mod inputs;
mod locate;
mod oauth;

use oauth::oauth_settings;

#[cfg(test)]
mod tests;

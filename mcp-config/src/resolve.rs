//! `${VAR}` expansion, defaults, fingerprints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::expand::{self, Dialect, ExpandError, Missing, Values};
use crate::fingerprint::{FingerprintKey, secret_digest};
use mcp_stack_protocol::defaults;

use crate::model::pin_spelling;
use crate::model::{
    DeclaredTransport, HttpKind, InputKind, InputSpec, ProxySetting, ResolvedConfig,
    ResolvedServer, ServerConfig, ToolFilter, TransportConfig,
};
use crate::validate::{header_value_problem, is_no_proxy, join, proxy_problem, url_problem};
use crate::{ConfigError, Fingerprint, Format, McpConfig, Problem, Report, Secret};

/// An injected environment lookup: `None` means unset.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Reads the process environment (non-Unicode values count as unset).
///
/// Pass it to [`resolve`] in programs; tests pass a closure over a map.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Expands `${VAR}`, applies defaults and fingerprints every enabled server,
/// under this process's random key ([`FingerprintKey::per_process`]).
///
/// Every missing variable is reported at once, each with the variable's name
/// and the config path; a missing variable never becomes an empty string.
///
/// The fingerprints are comparable within this process only; for ones that
/// hold across runs, keep a key and call [`resolve_with_key`]. [`Resolve`]
/// does the same with more choices (one server alone).
pub fn resolve(
    config: &McpConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedConfig, ConfigError> {
    Resolve::new(env).run(config)
}

/// [`resolve`], with fingerprints under `key`: the same config and key give
/// the same fingerprints in any process.
pub fn resolve_with_key(
    config: &McpConfig,
    env: &dyn Fn(&str) -> Option<String>,
    key: &FingerprintKey,
) -> Result<ResolvedConfig, ConfigError> {
    Resolve::new(env).key(key).run(config)
}

/// How to resolve a config: the environment, the fingerprint key, and
/// which servers.
///
/// ```
/// use mcp_stack_config::{Options, Resolve, parse_str};
/// let text = r#"{"mcpServers": {
///     "a": {"command": "a"},
///     "b": {"command": "${UNSET_HERE}"}
/// }}"#;
/// let loaded = parse_str(text, &Options::new()).unwrap();
/// // `b` needs a variable that is not set; asking for `a` alone never looks.
/// let only_a = Resolve::new(&|_: &str| None).only("a").run(&loaded.config).unwrap();
/// assert_eq!(only_a.servers.len(), 1);
/// ```
#[derive(Clone, Copy)]
pub struct Resolve<'a> {
    env: EnvLookup<'a>,
    key: &'a FingerprintKey,
    only: Option<&'a str>,
    inputs: Option<&'a BTreeMap<String, Secret>>,
}

impl std::fmt::Debug for Resolve<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolve")
            .field("only", &self.only)
            .finish_non_exhaustive()
    }
}

impl<'a> Resolve<'a> {
    /// Every enabled server, `${VAR}` from `env`, under this process's key.
    pub fn new(env: EnvLookup<'a>) -> Self {
        Self {
            env,
            key: FingerprintKey::per_process(),
            only: None,
            inputs: None,
        }
    }

    /// The values of VS Code's inputs (`${input:ID}`), by id, as the user
    /// gave them (a program asks on a terminal, or reads its command line;
    /// [`McpConfig::inputs_used`] says which are needed). One without a
    /// value is an error naming the input and its description.
    pub fn inputs(mut self, values: &'a BTreeMap<String, Secret>) -> Self {
        self.inputs = Some(values);
        self
    }

    /// Fingerprints under `key` (see [`resolve_with_key`]).
    pub fn key(mut self, key: &'a FingerprintKey) -> Self {
        self.key = key;
        self
    }

    /// Only the server `name`: no other server is expanded, so another's
    /// unset variable is no problem. A name the config lacks, or a disabled
    /// server, is [`ConfigError::UnknownServer`].
    pub fn only(mut self, name: &'a str) -> Self {
        self.only = Some(name);
        self
    }

    /// Resolves `config`.
    pub fn run(&self, config: &McpConfig) -> Result<ResolvedConfig, ConfigError> {
        resolve_config(config, self)
    }
}

fn origin_of(config: &McpConfig) -> String {
    config
        .source
        .as_ref()
        .map_or_else(|| "<input>".to_owned(), |p| p.display().to_string())
}

fn resolve_config(config: &McpConfig, how: &Resolve<'_>) -> Result<ResolvedConfig, ConfigError> {
    let mcp_enabled = config.agent.mcp_enabled.unwrap_or(true);
    let env = how.env;
    let key = how.key;
    if let Some(name) = how.only {
        let is_disabled = config
            .servers
            .get(name)
            .is_some_and(|s| !mcp_enabled || s.enabled == Some(false));
        if !config.servers.contains_key(name) || is_disabled {
            return Err(ConfigError::UnknownServer {
                origin: origin_of(config),
                name: name.to_owned(),
                known: config.servers.keys().cloned().collect(),
                disabled: is_disabled,
            });
        }
    }
    let mut problems = Vec::new();
    let mut servers = BTreeMap::new();
    let mut disabled = BTreeSet::new();
    for (name, server) in &config.servers {
        if how.only.is_some_and(|only| only != name) {
            continue;
        }
        if !mcp_enabled || server.enabled == Some(false) {
            disabled.insert(name.clone());
            continue;
        }
        let mut r = Resolver {
            env,
            base: config.location(name),
            format: config.format,
            problems: &mut problems,
            key,
            dialect: Dialect::of(config.format),
            inputs: how.inputs,
            specs: &config.inputs,
            workspace: workspace_folder(config),
        };
        if let Some(s) = r.server(name, server, config) {
            servers.insert(name.clone(), s);
        }
    }
    if !problems.is_empty() {
        return Err(ConfigError::Unresolved {
            origin: origin_of(config),
            report: Report { problems },
        });
    }
    let fingerprint = session_fingerprint(key, &servers, mcp_enabled);
    Ok(ResolvedConfig {
        servers,
        disabled,
        fingerprint,
        format: config.format,
        source: config.source.clone(),
    })
}

/// The project folder an editor's `${workspaceFolder}` names: the folder
/// holding the `.vscode` (`.cursor`, `.windsurf`) folder the file is in.
fn workspace_folder(config: &McpConfig) -> Option<String> {
    let dir = config.source.as_ref()?.parent()?;
    let name = dir.file_name()?.to_str()?;
    matches!(name, ".vscode" | ".cursor" | ".windsurf")
        .then(|| dir.parent())
        .flatten()
        .map(|p| p.to_string_lossy().into_owned())
}

struct Resolver<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    base: String,
    format: Format,
    problems: &'a mut Vec<Problem>,
    key: &'a FingerprintKey,
    dialect: Dialect,
    inputs: Option<&'a BTreeMap<String, Secret>>,
    specs: &'a [InputSpec],
    workspace: Option<String>,
}

/// What a template's references expand to.
struct Ctx<'r> {
    env: &'r dyn Fn(&str) -> Option<String>,
    inputs: Option<&'r BTreeMap<String, Secret>>,
    workspace: Option<&'r str>,
}

impl Values for Ctx<'_> {
    fn env(&self, name: &str) -> Option<String> {
        (self.env)(name)
    }
    fn input(&self, id: &str) -> Option<String> {
        self.inputs?.get(id).map(|v| v.expose().to_owned())
    }
    fn workspace_folder(&self) -> Option<String> {
        self.workspace.map(str::to_owned)
    }
}

impl Resolver<'_> {
    fn missing_message(&self, m: &Missing) -> String {
        match m {
            Missing::Env(n) => format!(
                "environment variable `{n}` is not set; set it, or write `${{{n}:-default}}` for a default"
            ),
            Missing::Input(id) => match self.specs.iter().find(|s| &s.id == id) {
                Some(spec) => {
                    let what = spec
                        .description
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    format!(
                        "input `{id}`{what} has no value; give it (`mcp` takes `--input {id}=VALUE`, or asks on a terminal)"
                    )
                }
                None => format!("`${{input:{id}}}` names no input; declare it under `inputs`"),
            },
            Missing::WorkspaceFolder => "`${workspaceFolder}` has no value: the file is not in a project's `.vscode` (or `.cursor`) folder".to_owned(),
            Missing::UserHome => "`${userHome}` has no value: neither HOME nor USERPROFILE is set".to_owned(),
        }
    }

    fn expand(&mut self, path: String, template: &str) -> Option<String> {
        let ctx = Ctx {
            env: self.env,
            inputs: self.inputs,
            workspace: self.workspace.as_deref(),
        };
        match expand::expand(template, self.dialect, &ctx) {
            Ok(v) => {
                self.check_picks(&path, template);
                Some(v)
            }
            Err(ExpandError::Missing(missing)) => {
                for m in missing {
                    let message = self.missing_message(&m);
                    self.problems.push(Problem::error(path.clone(), message));
                }
                None
            }
            Err(ExpandError::Syntax(e)) => {
                self.problems.push(Problem::error(path, e.0));
                None
            }
        }
    }

    /// A `pickString` input's value must be one of its options.
    fn check_picks(&mut self, path: &str, template: &str) {
        for r in expand::refs(template, self.dialect) {
            let expand::Ref::Input(id) = r else { continue };
            let Some(spec) = self.specs.iter().find(|s| s.id == id) else {
                continue;
            };
            let value = self.inputs.and_then(|i| i.get(id));
            if spec.kind == InputKind::PickString
                && let Some(v) = value
                && !spec.options.iter().any(|o| o == v.expose())
            {
                self.problems.push(Problem::error(
                    path,
                    format!("input `{id}` must be one of {}", spec.options.join(", ")),
                ));
            }
        }
    }

    /// `envFile`'s variables, read from the file (relative to the config's folder).
    fn env_file(
        &mut self,
        template: &str,
        source: Option<&std::path::Path>,
    ) -> BTreeMap<String, String> {
        let path = join(&self.base, "envFile");
        let Some(file) = self.expand(path.clone(), template) else {
            return BTreeMap::new();
        };
        let mut file = PathBuf::from(file);
        if file.is_relative()
            && let Some(dir) = source.and_then(std::path::Path::parent)
        {
            file = dir.join(file);
        }
        match std::fs::read_to_string(&file) {
            Ok(text) => crate::envfile::parse(&text).0,
            Err(e) => {
                self.problems.push(Problem::error(
                    path,
                    format!("cannot read the env file {}: {e}", file.display()),
                ));
                BTreeMap::new()
            }
        }
    }

    fn var(&mut self, path: String, name: &str, key: &str) -> Option<String> {
        let v = (self.env)(name);
        if v.is_none() {
            self.problems.push(Problem::error(
                path,
                format!("environment variable `{name}` (named by `{key}`) is not set; set it"),
            ));
        }
        v
    }

    fn header(&mut self, path: String, value: String) -> Option<Secret> {
        match header_value_problem(&value) {
            Some(m) => {
                self.problems
                    .push(Problem::error(path, format!("after expansion, {m}")));
                None
            }
            None => Some(Secret::new(value)),
        }
    }

    fn server(
        &mut self,
        name: &str,
        s: &ServerConfig,
        config: &McpConfig,
    ) -> Option<ResolvedServer> {
        let before = self.problems.len();
        let transport = if let Some(command) = &s.command {
            let command = self.expand(join(&self.base, "command"), command);
            let args: Vec<Option<String>> = s
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| self.expand(format!("{}[{i}]", join(&self.base, "args")), a))
                .collect();
            let mut env = BTreeMap::new();
            for (k, v) in &s.env {
                if let Some(v) = self.expand(join(&join(&self.base, "env"), k), v.expose()) {
                    env.insert(k.clone(), Secret::new(v));
                }
            }
            if let Some(t) = &s.env_file {
                for (k, v) in self.env_file(t, config.source.as_deref()) {
                    env.entry(k).or_insert_with(|| Secret::new(v));
                }
            }
            for k in &s.env_vars {
                if !env.contains_key(k)
                    && let Some(v) = (self.env)(k)
                {
                    env.insert(k.clone(), Secret::new(v));
                }
            }
            let cwd = s
                .cwd
                .as_ref()
                .and_then(|c| self.expand(join(&self.base, "cwd"), c));
            TransportConfig::Stdio {
                command: command.unwrap_or_default(),
                args: args.into_iter().flatten().collect(),
                env,
                cwd: cwd.map(PathBuf::from),
            }
        } else if let Some(url) = &s.url {
            let url_path = join(&self.base, "url");
            let url = self.expand(url_path.clone(), url);
            if let Some(u) = &url
                && let Some(m) = url_problem(u)
            {
                self.problems
                    .push(Problem::error(url_path, format!("after expansion, {m}")));
            }
            let headers_key = if self.format == Format::Codex {
                "http_headers"
            } else {
                "headers"
            };
            let mut headers = BTreeMap::new();
            for (k, v) in &s.headers {
                let p = join(&join(&self.base, headers_key), k);
                if let Some(v) = self.expand(p.clone(), v.expose())
                    && let Some(v) = self.header(p, v)
                {
                    headers.insert(k.clone(), v);
                }
            }
            for (k, var) in &s.env_headers {
                let p = join(&join(&self.base, "env_http_headers"), k);
                if let Some(v) = self.var(p.clone(), var, "env_http_headers")
                    && let Some(v) = self.header(p, v)
                {
                    headers.insert(k.clone(), v);
                }
            }
            if let Some(var) = &s.bearer_token_env_var {
                let p = join(&self.base, "bearer_token_env_var");
                if let Some(v) = self.var(p.clone(), var, "bearer_token_env_var")
                    && let Some(v) = self.header(p, format!("Bearer {v}"))
                {
                    headers.insert("Authorization".to_owned(), v);
                }
            }
            let kind = match s.transport {
                Some(DeclaredTransport::Sse) => HttpKind::Sse,
                Some(DeclaredTransport::StreamableHttp) => HttpKind::StreamableHttp,
                _ => HttpKind::StreamableHttpWithSseFallback,
            };
            let proxy = s.proxy.as_ref().and_then(|p| {
                let path = join(&self.base, "proxy");
                let p = self.expand(path.clone(), p.expose())?;
                if is_no_proxy(&p) {
                    return Some(ProxySetting::Direct);
                }
                match proxy_problem(&p) {
                    Some(m) => {
                        self.problems
                            .push(Problem::error(path, format!("after expansion, {m}")));
                        None
                    }
                    None => Some(ProxySetting::Url(Secret::new(p.trim()))),
                }
            });
            TransportConfig::Http {
                url: url.unwrap_or_default(),
                headers,
                kind,
                proxy,
            }
        } else {
            self.problems.push(Problem::error(
                self.base.clone(),
                "has neither `command` nor `url`; add `command` to run a local server or `url` to reach a remote one",
            ));
            return None;
        };
        if self.problems.len() > before {
            return None;
        }
        let mut server = ResolvedServer {
            name: name.to_owned(),
            transport,
            request_timeout: s
                .request_timeout
                .or(config.agent.request_timeout)
                .unwrap_or(defaults::REQUEST_TIMEOUT),
            handshake_timeout: s
                .handshake_timeout
                .or(config.agent.handshake_timeout)
                .unwrap_or(defaults::HANDSHAKE_TIMEOUT),
            supports_parallel_tool_calls: s
                .supports_parallel_tool_calls
                .unwrap_or(defaults::SUPPORTS_PARALLEL_TOOL_CALLS),
            tools: ToolFilter {
                include: s
                    .include_tools
                    .as_ref()
                    .map(|v| v.iter().cloned().collect()),
                exclude: s.exclude_tools.iter().cloned().collect(),
            },
            protocol_version: s.protocol_version,
            trust: s.trust,
            pinning: s.pinning,
            oauth: None,
            fingerprint: Fingerprint::UNSET,
        };
        if let (Some(o), TransportConfig::Http { .. }) = (&s.oauth, &server.transport) {
            let base = join(&self.base, "oauth");
            let mut expanded = o.clone();
            expanded.client_id = o
                .client_id
                .as_ref()
                .and_then(|v| self.expand(join(&base, "clientId"), v));
            expanded.client_secret = o
                .client_secret
                .as_ref()
                .and_then(|v| self.expand(join(&base, "clientSecret"), v.expose()))
                .map(Secret::new);
            expanded.client_metadata_url = o
                .client_metadata_url
                .as_ref()
                .and_then(|v| self.expand(join(&base, "clientMetadataUrl"), v));
            if self.problems.len() > before {
                return None;
            }
            server.oauth = Some(expanded);
        }
        server.fingerprint =
            Fingerprint::of_canonical(self.key, &canonical_server(self.key, &server));
        Some(server)
    }
}

fn nanos(d: Duration) -> String {
    d.as_nanos().to_string()
}

/// The canonical form a server fingerprint covers: behaviour only, secrets
/// only as their keyed digests, header names lowercased, name excluded.
pub(crate) fn canonical_server(key: &FingerprintKey, s: &ResolvedServer) -> Value {
    let digest = |v: &Secret| Value::String(secret_digest(key, v.expose()));
    let transport = match &s.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!({
            "kind": "stdio",
            "command": command,
            "args": args,
            "env": env.iter().map(|(k, v)| (k.clone(), digest(v))).collect::<serde_json::Map<_, _>>(),
            "cwd": cwd.as_ref().map(|c| c.to_string_lossy().into_owned()),
        }),
        TransportConfig::Http {
            url,
            headers,
            kind,
            proxy,
        } => {
            let mut http = json!({
                "kind": kind.name(),
                "url": url,
                "headers": headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), digest(v))).collect::<serde_json::Map<_, _>>(),
            });
            // Only when set, so fingerprints of configs without it stay as
            // they were; a URL only as its digest (it may hold credentials).
            if let (Some(p), Value::Object(map)) = (proxy, &mut http) {
                let p = match p {
                    ProxySetting::Direct => json!("none"),
                    ProxySetting::Url(url) => json!({"url": digest(url)}),
                };
                map.insert("proxy".into(), p);
            }
            http
        }
    };
    let mut canonical = json!({
        "v": 2,
        "transport": transport,
        "request_timeout_ns": nanos(s.request_timeout),
        "handshake_timeout_ns": nanos(s.handshake_timeout),
        "supports_parallel_tool_calls": s.supports_parallel_tool_calls,
        "tools": {"include": s.tools.include, "exclude": s.tools.exclude},
        "protocol_version": s.protocol_version.map(pin_spelling),
    });
    // Only when set, so fingerprints of configs without it stay as they were.
    if let (Some(o), Value::Object(map)) = (&s.oauth, &mut canonical) {
        map.insert(
            "oauth".into(),
            json!({
                "enabled": o.is_enabled(),
                "client_id": o.client_id,
                "client_secret": o.client_secret.as_ref().map(digest),
                "scopes": o.scopes,
                "callback_port": o.callback_port,
                "client_metadata_url": o.client_metadata_url,
            }),
        );
    }
    canonical
}

fn session_fingerprint(
    key: &FingerprintKey,
    servers: &BTreeMap<String, ResolvedServer>,
    mcp_enabled: bool,
) -> Fingerprint {
    let fps: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(n, s)| (n.clone(), Value::String(s.fingerprint.to_hex())))
        .collect();
    Fingerprint::of_canonical(
        key,
        &json!({"v": 1, "mcp_enabled": mcp_enabled, "servers": fps}),
    )
}

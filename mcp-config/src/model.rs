//! The config model: raw (as written, `${VAR}` unexpanded) and resolved.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use mcp_stack_protocol::ProtocolPin;

use crate::{Fingerprint, Secret};

/// The file formats read. All map to one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenClaw `settings.json`: `mcpServers` plus an `agent` block.
    OpenClawJson,
    /// OpenClaw `config.toml`: `[agent]`, `[mcp_servers.NAME]`.
    OpenClawToml,
    /// Claude Desktop `claude_desktop_config.json`: `mcpServers`.
    ClaudeDesktop,
    /// Cursor `mcp.json`: `mcpServers`.
    Cursor,
    /// VS Code `.vscode/mcp.json`: `servers` with `type`.
    VsCode,
    /// Codex `config.toml`: `[mcp_servers.NAME]`.
    Codex,
    /// Claude Code: a project's `.mcp.json`, or `~/.claude.json` (user
    /// scope `mcpServers`, local scope `projects.<path>.mcpServers`).
    ClaudeCode,
    /// Gemini CLI `settings.json`: `mcpServers` (`httpUrl`, `url` for SSE, `trust`, …).
    GeminiCli,
    /// Windsurf `mcp_config.json`: `mcpServers` (`serverUrl`).
    Windsurf,
    /// Zed `settings.json`: `context_servers`.
    Zed,
    /// OpenCode `opencode.json(c)`: `mcp` (`type: local|remote`), or `mcp.servers`.
    OpenCode,
}

impl Format {
    /// All formats, in the order a folder is searched.
    pub const ALL: [Format; 11] = [
        Format::OpenClawJson,
        Format::OpenClawToml,
        Format::ClaudeDesktop,
        Format::Cursor,
        Format::VsCode,
        Format::Codex,
        Format::ClaudeCode,
        Format::GeminiCli,
        Format::Windsurf,
        Format::Zed,
        Format::OpenCode,
    ];

    /// The short name used on the command line (`openclaw-json`, `vscode`, …).
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenClawJson => "openclaw-json",
            Format::OpenClawToml => "openclaw-toml",
            Format::ClaudeDesktop => "claude-desktop",
            Format::Cursor => "cursor",
            Format::VsCode => "vscode",
            Format::Codex => "codex",
            Format::ClaudeCode => "claude-code",
            Format::GeminiCli => "gemini-cli",
            Format::Windsurf => "windsurf",
            Format::Zed => "zed",
            Format::OpenCode => "opencode",
        }
    }

    /// The client's name, as a report labels the file (`Claude Code`).
    pub fn client(self) -> &'static str {
        match self {
            Format::OpenClawJson | Format::OpenClawToml => "OpenClaw",
            Format::ClaudeDesktop => "Claude Desktop",
            Format::Cursor => "Cursor",
            Format::VsCode => "VS Code",
            Format::Codex => "Codex",
            Format::ClaudeCode => "Claude Code",
            Format::GeminiCli => "Gemini CLI",
            Format::Windsurf => "Windsurf",
            Format::Zed => "Zed",
            Format::OpenCode => "OpenCode",
        }
    }

    /// Whether the file is TOML (else JSON).
    pub fn is_toml(self) -> bool {
        matches!(self, Format::OpenClawToml | Format::Codex)
    }

    /// The key holding the server map; also the first segment of problem paths.
    pub fn servers_key(self) -> &'static str {
        match self {
            Format::OpenClawToml | Format::Codex => "mcp_servers",
            Format::VsCode => "servers",
            Format::Zed => "context_servers",
            Format::OpenCode => "mcp",
            Format::OpenClawJson
            | Format::ClaudeDesktop
            | Format::Cursor
            | Format::ClaudeCode
            | Format::GeminiCli
            | Format::Windsurf => "mcpServers",
        }
    }

    /// File names this format is found under in a folder, most specific first.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            Format::OpenClawJson => &["settings.json"],
            Format::OpenClawToml | Format::Codex => &["config.toml"],
            Format::ClaudeDesktop => &["claude_desktop_config.json"],
            Format::Cursor => &["mcp.json", ".cursor/mcp.json"],
            Format::VsCode => &[".vscode/mcp.json", "mcp.json"],
            Format::ClaudeCode => &[".mcp.json", ".claude.json"],
            Format::GeminiCli => &[".gemini/settings.json", "settings.json"],
            Format::Windsurf => &["mcp_config.json"],
            Format::Zed => &[".zed/settings.json", "settings.json"],
            Format::OpenCode => &[
                "opencode.json",
                "opencode.jsonc",
                ".opencode/opencode.json",
                ".opencode/opencode.jsonc",
            ],
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::name`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown config format `{0}`; use one of openclaw-json, openclaw-toml, claude-desktop, cursor, vscode, codex, claude-code, gemini-cli, windsurf, zed, opencode"
)]
pub struct UnknownFormatName(pub String);

impl FromStr for Format {
    type Err = UnknownFormatName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormatName(s.to_owned()))
    }
}

/// A transport as declared by `transport` / `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeclaredTransport {
    /// `stdio`.
    Stdio,
    /// `streamable-http` (also `streamableHttp`, `streamable_http`): no SSE fallback.
    StreamableHttp,
    /// `http`: streamable HTTP with the legacy SSE fallback, like a bare `url`.
    Http,
    /// `sse`: the legacy HTTP+SSE transport only.
    Sse,
}

/// Session-level settings (OpenClaw's `agent` block).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentDefaults {
    /// `toolCallTimeoutMs`: default request timeout of every server.
    pub request_timeout: Option<Duration>,
    /// `handshakeTimeoutMs`: default handshake timeout of every server.
    pub handshake_timeout: Option<Duration>,
    /// `mcpEnabled`: `false` disables every server.
    pub mcp_enabled: Option<bool>,
}

/// One server record as written: validated, `${VAR}` not yet expanded.
///
/// Env and header values are [`Secret`]s already (a file may hold literal tokens).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// `transport` / `type`, if given.
    pub transport: Option<DeclaredTransport>,
    /// `command` (stdio).
    pub command: Option<String>,
    /// `args`.
    pub args: Vec<String>,
    /// `env`.
    pub env: BTreeMap<String, Secret>,
    /// Codex `env_vars`: names passed through from the parent environment when set.
    pub env_vars: Vec<String>,
    /// `cwd`.
    pub cwd: Option<String>,
    /// `url` (HTTP).
    pub url: Option<String>,
    /// `headers` / Codex `http_headers`.
    pub headers: BTreeMap<String, Secret>,
    /// Codex `env_http_headers`: header name → environment variable name.
    pub env_headers: BTreeMap<String, String>,
    /// Codex `bearer_token_env_var`: sends `Authorization: Bearer $VAR`.
    pub bearer_token_env_var: Option<String>,
    /// `timeoutMs` / `requestTimeoutMs` / `tool_timeout_sec`.
    pub request_timeout: Option<Duration>,
    /// `handshakeTimeoutMs` / `startup_timeout_sec`.
    pub handshake_timeout: Option<Duration>,
    /// `supportsParallelToolCalls`.
    pub supports_parallel_tool_calls: Option<bool>,
    /// `enabled`, or the negation of `disabled`.
    pub enabled: Option<bool>,
    /// `includeTools` / `enabled_tools`: only these tools (None: all).
    pub include_tools: Option<Vec<String>>,
    /// `excludeTools` / `disabled_tools`.
    pub exclude_tools: Vec<String>,
    /// `protocolVersion`: a [`ProtocolPin`](mcp_stack_protocol::ProtocolPin)
    /// (`handshake`, `discover`, `auto` or a revision; `legacy` and `modern` are older
    /// spellings), parsed at validation: a pin this client does not know
    /// is a validation error.
    pub protocol_version: Option<ProtocolPin>,
    /// `oauth` (Claude Code, Gemini CLI, this client) or `auth` (Cursor):
    /// how to authorize with an OAuth-protected HTTP server.
    pub oauth: Option<OAuthSettings>,
    /// `proxy` (HTTP servers): `http://[user:password@]host:port`, or
    /// `none`, as written (may hold `${VAR}`; a secret: it may carry
    /// credentials). Absent: the environment's `HTTPS_PROXY` and friends.
    pub proxy: Option<Secret>,
    /// `envFile` (VS Code, Cursor): a dotenv file whose variables the
    /// server gets (`env` wins over it), as written (may hold `${…}`;
    /// relative to the config file's folder).
    pub env_file: Option<String>,
    /// Gemini CLI's `trust` (its confirmations skipped). This client asks
    /// for no confirmation, so it changes nothing here; kept to be shown.
    pub trust: Option<bool>,
    /// `pinning` (this client): what to do when one of the server's tool
    /// definitions differs from the one pinned (`block`, `warn` or `off`).
    pub pinning: Option<ToolPinning>,
}

/// A server's `pinning` key: what the runtime does with a tool whose
/// definition differs from the one pinned when it was first seen. Not part
/// of the fingerprint (it changes nothing of the connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolPinning {
    /// Use the new definition; say what changed.
    Warn,
    /// Withhold the changed tool until it is approved.
    Block,
    /// Keep and compare no pins.
    Off,
}

impl ToolPinning {
    /// `warn`, `block` or `off`.
    pub fn parse(s: &str) -> Option<ToolPinning> {
        match s {
            "warn" => Some(ToolPinning::Warn),
            "block" => Some(ToolPinning::Block),
            "off" => Some(ToolPinning::Off),
            _ => None,
        }
    }
}

/// What kind of value a VS Code input asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputKind {
    /// `promptString`: any text (`password: true` masks it).
    PromptString,
    /// `pickString`: one of `options`.
    PickString,
}

/// One of VS Code's `inputs`: a value `${input:ID}` stands for, given by
/// the user when the config is used (the program asks, or takes it from
/// its command line: [`Resolve::inputs`](crate::Resolve::inputs)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputSpec {
    /// `id`, as `${input:ID}` names it.
    pub id: String,
    /// `type`.
    pub kind: InputKind,
    /// `description`: what to ask.
    pub description: Option<String>,
    /// `password`: mask what is typed.
    pub password: bool,
    /// `options` of a `pickString` (their values).
    pub options: Vec<String>,
    /// `default`.
    pub default: Option<String>,
}

/// OAuth settings of one HTTP server. As written, `client_id`,
/// `client_secret` and `client_metadata_url` may hold `${VAR}`; resolved,
/// they are expanded. Everything else (endpoints, registration) is
/// discovered from the server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// `enabled: false` turns authorization off: a 401 is then an error.
    pub enabled: Option<bool>,
    /// `clientId` / `CLIENT_ID`: a pre-registered client.
    pub client_id: Option<String>,
    /// `clientSecret` / `CLIENT_SECRET`: its secret (a confidential client).
    pub client_secret: Option<Secret>,
    /// `scopes`: the scopes to ask for (else the server's challenge decides).
    pub scopes: Option<Vec<String>>,
    /// `callbackPort`: a fixed port for the login redirect (else ephemeral).
    pub callback_port: Option<u16>,
    /// `clientMetadataUrl`: an HTTPS URL of this client's metadata document,
    /// used as its client id where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// `tokenStore`: where this server's tokens are kept (else the
    /// program's default).
    pub token_store: Option<TokenStoreKind>,
}

/// Where OAuth tokens are kept (`tokenStore`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenStoreKind {
    /// `"file"`: a file per server in the user's config folder.
    File,
    /// `"keyring"`: the OS credential store (macOS Keychain, Windows
    /// Credential Manager, Secret Service).
    Keyring,
}

impl TokenStoreKind {
    /// The spelling in a config (and on the command line).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStoreKind::File => "file",
            TokenStoreKind::Keyring => "keyring",
        }
    }
}

impl std::str::FromStr for TokenStoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "file" => Ok(TokenStoreKind::File),
            "keyring" => Ok(TokenStoreKind::Keyring),
            _ => Err(format!(
                "unknown token store `{}`: `keyring` or `file`",
                s.escape_debug()
            )),
        }
    }
}

impl OAuthSettings {
    /// Whether authorization is on (it is unless `enabled: false`).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// A whole config file as read: validated, not yet resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpConfig {
    /// Servers by name (names match `[A-Za-z0-9_-]+`).
    pub servers: BTreeMap<String, ServerConfig>,
    /// Session-level defaults.
    pub agent: AgentDefaults,
    /// The format it was read as.
    pub format: Format,
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
    /// Where each server sits in the file, as problem paths name it
    /// (`mcpServers.local-fs`, `projects./home/me/app.mcpServers.db`).
    pub locations: BTreeMap<String, String>,
    /// VS Code's `inputs`, in the order written.
    pub inputs: Vec<InputSpec>,
}

/// How an HTTP server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HttpKind {
    /// Streamable HTTP only (`transport: streamable-http`).
    StreamableHttp,
    /// Legacy HTTP+SSE only (`transport: sse`).
    Sse,
    /// Streamable HTTP, falling back to legacy SSE (a bare `url`, or `type: http`).
    StreamableHttpWithSseFallback,
}

impl HttpKind {
    /// The name used in canonical forms and reports.
    pub fn name(self) -> &'static str {
        match self {
            HttpKind::StreamableHttp => "streamable-http",
            HttpKind::Sse => "sse",
            HttpKind::StreamableHttpWithSseFallback => "streamable-http+sse-fallback",
        }
    }
}

/// A resolved transport.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio {
        /// Program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment it gets on top of the transport's allowlist.
        env: BTreeMap<String, Secret>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// A remote endpoint.
    Http {
        /// `http://` or `https://` URL.
        url: String,
        /// Extra request headers, names as written.
        headers: BTreeMap<String, Secret>,
        /// Which HTTP transport(s) to use.
        kind: HttpKind,
        /// The server's `proxy` setting; `None`: the environment decides
        /// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`).
        proxy: Option<ProxySetting>,
    },
}

/// A server's explicit `proxy` setting, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxySetting {
    /// `"none"` (or empty, as curl has it): straight to the server,
    /// whatever the environment says.
    Direct,
    /// `http://[user:password@]host:port`: through this HTTP proxy (checked
    /// with [`check_proxy_url`](mcp_stack_protocol::endpoint::check_proxy_url)).
    /// A secret: the user info is a credential; show it with
    /// [`redact_url`].
    Url(Secret),
}

impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", env)
                .field("cwd", cwd)
                .finish(),
            TransportConfig::Http {
                url,
                headers,
                kind,
                proxy,
            } => f
                .debug_struct("Http")
                .field("url", &redact_url(url))
                .field("headers", headers)
                .field("kind", kind)
                .field("proxy", proxy)
                .finish(),
        }
    }
}

/// A URL with its user info and query string (where tokens hide) redacted:
/// the stack's one redactor, `mcp_stack_protocol::endpoint::redact_url`.
pub use mcp_stack_protocol::endpoint::redact_url;

/// Which of a server's tools are exposed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFilter {
    /// Only these (None: all).
    pub include: Option<BTreeSet<String>>,
    /// Never these (wins over `include`).
    pub exclude: BTreeSet<String>,
}

impl ToolFilter {
    /// Whether a tool of this name is exposed.
    pub fn allows(&self, tool: &str) -> bool {
        !self.exclude.contains(tool) && self.include.as_ref().is_none_or(|inc| inc.contains(tool))
    }
}

/// One enabled server, `${VAR}` expanded and defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedServer {
    /// Its name: tool namespace prefix and log tag.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// Bound on every request (tools/list and tools/call included).
    pub request_timeout: Duration,
    /// Bound on the handshake.
    pub handshake_timeout: Duration,
    /// May calls to this server run concurrently.
    pub supports_parallel_tool_calls: bool,
    /// Tool include/exclude lists.
    pub tools: ToolFilter,
    /// Pinned protocol lifecycle or revision, if any.
    pub protocol_version: Option<ProtocolPin>,
    /// Gemini CLI's `trust`, as written (no effect here: nothing is confirmed).
    pub trust: Option<bool>,
    /// The server's `pinning` policy, if the config sets one.
    pub pinning: Option<ToolPinning>,
    /// OAuth settings, `${VAR}` expanded (HTTP servers only).
    pub oauth: Option<OAuthSettings>,
    /// Fingerprint of everything above except the name.
    pub fingerprint: Fingerprint,
}

/// A config ready for connecting: enabled servers resolved, fingerprinted.
///
/// Disabled servers are not resolved (their variables need not be set); their
/// names are in `disabled`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedConfig {
    /// Enabled servers by name.
    pub servers: BTreeMap<String, ResolvedServer>,
    /// Names of servers left out because they are disabled.
    pub disabled: BTreeSet<String>,
    /// Session fingerprint: server names and fingerprints plus session settings.
    pub fingerprint: Fingerprint,
    /// The format it was read as.
    pub format: Format,
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert!(
            "yaml"
                .parse::<Format>()
                .unwrap_err()
                .to_string()
                .contains("`yaml`")
        );
    }

    #[test]
    fn redact_url_hides_user_info_and_query() {
        assert_eq!(
            redact_url("https://u:p@h.example/mcp?key=1#x"),
            "https://<redacted>@h.example/mcp?<redacted>"
        );
        assert_eq!(redact_url("http://h:8080/mcp"), "http://h:8080/mcp");
        assert_eq!(redact_url("http://h?k=v"), "http://h?<redacted>");
    }

    #[test]
    fn tool_filter_exclude_wins() {
        let f = ToolFilter {
            include: Some(["a".to_owned(), "b".to_owned()].into()),
            exclude: ["b".to_owned()].into(),
        };
        assert!(f.allows("a") && !f.allows("b") && !f.allows("c"));
        assert!(ToolFilter::default().allows("anything"));
    }
}

/// How a config spells a protocol pin: the mode (`handshake`, `discover`,
/// `auto`) or the revision's date. An older spelling (`legacy`, `modern`)
/// reads back as the mode it names, so two configs that mean the same pin
/// spell (and fingerprint) it the same.
pub fn pin_spelling(pin: ProtocolPin) -> String {
    match pin {
        ProtocolPin::Mode(mode) => mode.as_str().to_owned(),
        ProtocolPin::Version(version) => version.as_str().to_owned(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod pin_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_pin_is_spelled_as_its_mode_or_revision() {
        for spelling in ProtocolPin::spellings() {
            let pin: ProtocolPin = spelling.parse().unwrap();
            assert_eq!(pin_spelling(pin), spelling);
        }
        assert_eq!(pin_spelling("legacy".parse().unwrap()), "handshake");
        assert_eq!(pin_spelling("modern".parse().unwrap()), "discover");
    }

    /// The pin is parsed once, at validation: the resolved server carries it.
    #[test]
    fn a_resolved_server_carries_its_parsed_pin() {
        use mcp_stack_protocol::{ProtocolMode, ProtocolVersion};
        let text = r#"{"mcpServers": {
            "a": {"command": "a", "protocolVersion": "2025-06-18"},
            "b": {"command": "b", "protocol_version": "legacy"},
            "c": {"command": "c"}
        }}"#;
        let loaded = crate::parse_str(text, &crate::Options::new()).unwrap();
        let resolved = crate::resolve(&loaded.config, &|_: &str| None).unwrap();
        let pin = |name: &str| resolved.servers.get(name).unwrap().protocol_version;
        assert_eq!(
            pin("a"),
            Some(ProtocolPin::Version(ProtocolVersion::V2025_06_18))
        );
        assert_eq!(pin("b"), Some(ProtocolPin::Mode(ProtocolMode::Handshake)));
        assert_eq!(pin("c"), None);
    }
}

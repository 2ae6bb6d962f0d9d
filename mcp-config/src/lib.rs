//! MCP server configuration: read it, check it, resolve it, fingerprint it.
//!
//! Users bring the config files they already have. This crate reads them all
//! into one model:
//!
//! | format | file | servers under |
//! |---|---|---|
//! | OpenClaw JSON | `settings.json` | `mcpServers`, defaults in `agent` |
//! | OpenClaw TOML | `config.toml` | `[mcp_servers.NAME]`, defaults in `[agent]` |
//! | Claude Desktop | `claude_desktop_config.json` | `mcpServers` |
//! | Claude Code | `.mcp.json`, `~/.claude.json` | `mcpServers`; local scope `projects.<path>.mcpServers` |
//! | Cursor | `.cursor/mcp.json` | `mcpServers` (`envFile`, `${workspaceFolder}`) |
//! | VS Code | `.vscode/mcp.json`, `settings.json` | `servers` / `mcp.servers` (`type: stdio\|http\|sse`), `inputs` |
//! | Codex | `config.toml` | `[mcp_servers.NAME]` (`bearer_token_env_var`, `http_headers`, `enabled_tools`, …) |
//! | Gemini CLI | `.gemini/settings.json` | `mcpServers` (`httpUrl`, `url` = SSE, `timeout`, `trust`, `includeTools`, `$VAR`) |
//! | Windsurf | `mcp_config.json` | `mcpServers` (`serverUrl`, `disabledTools`) |
//! | Zed | `settings.json` | `context_servers` (`command` a string or `{path, args, env}`) |
//! | OpenCode | `opencode.json(c)` | `mcp` or `mcp.servers` (`type: local\|remote`, command lists, `environment`, `{env:VAR}`) |
//!
//! JSON files may hold comments and trailing commas (JSONC), as the editors
//! write them. Each format's own references expand as its client does:
//! `${VAR}` everywhere; VS Code's `${input:ID}` (values the program gives:
//! [`Resolve::inputs`], [`McpConfig::inputs_used`]), `${workspaceFolder}`
//! (the folder holding `.vscode/`) and `${userHome}`. [`Options::server`]
//! and [`Resolve::only`] take one server alone: another's problems are then
//! warnings, and nothing of it is expanded.
//!
//! The steps, each its own function:
//!
//! 1. **Load** ([`load_path`], [`parse_str`]): detect the format (or take it
//!    from [`Options`]), parse, and validate every server record with
//!    [`is_mcp_config_record`], which reports *every* problem at once, each
//!    with its path (`mcpServers.remote-tools.headers.Authorization`).
//! 2. **Resolve** ([`resolve`]): expand `${VAR}`, `${VAR:-default}` (and
//!    `$${` for a literal `${`) with an injected environment lookup, apply
//!    defaults (request timeout 60 s, handshake 30 s, parallel tool calls on),
//!    infer the transport (`command` → stdio; `url` → streamable HTTP with
//!    legacy SSE fallback; an explicit `transport`/`type` wins).
//! 3. **Fingerprint**: each [`ResolvedServer`] and the whole
//!    [`ResolvedConfig`] carry a [`Fingerprint`] of a canonical form,
//!    so reordering keys or writing a default explicitly changes nothing, while
//!    any change in behaviour does. A fingerprint is an HMAC-SHA256 under a
//!    secret [`FingerprintKey`], and env, header, proxy and client-secret
//!    values enter it only through their own HMAC: without the key, a
//!    printed fingerprint lets no one test guesses of any value behind it.
//!    [`resolve`] uses a random key made once per process (fingerprints
//!    comparable within the run); [`resolve_with_key`] takes a key the
//!    program keeps, for fingerprints that hold across runs.
//!
//! An HTTP server's `proxy` (`"http://[user:password@]host:port"`, or
//! `"none"` for a direct connection whatever `HTTPS_PROXY` says; absent:
//! the environment decides) resolves to a [`ProxySetting`]; its URL is a
//! [`Secret`] (it may hold credentials) and enters fingerprints as its HMAC.
//!
//! Env and header values are [`Secret`]s: `Debug`, `Display` and errors
//! print `<redacted>`. Other values may come from `${VAR}` too; a program
//! that shows a config (as `mcp config show` does) asks [`has_vars`] and
//! shows those as written.
//!
//! Loading, validating and resolving are this crate's; how problems and
//! servers are worded for people is the program's (`mcp config check|show`
//! live in `mcp-stack-cli`): [`Report::lines`] and `Display` are the building blocks.
//!
//! # Example
//!
//! ```
//! use mcp_stack_config::{Options, TransportConfig, parse_str, resolve};
//!
//! let text = r#"{
//!   "mcpServers": {
//!     "remote-tools": {
//!       "url": "https://tools.example.com/mcp",
//!       "headers": { "Authorization": "Bearer ${MCP_SERVER_TOKEN}" }
//!     }
//!   }
//! }"#;
//! let loaded = parse_str(text, &Options::new()).unwrap();
//!
//! // The environment is injected: a closure, a map, or `mcp_stack_config::process_env`.
//! let env = |name: &str| (name == "MCP_SERVER_TOKEN").then(|| "tok-123".to_owned());
//! let resolved = resolve(&loaded.config, &env).unwrap();
//!
//! let server = &resolved.servers["remote-tools"];
//! let TransportConfig::Http { headers, .. } = &server.transport else { unreachable!() };
//! assert_eq!(headers["Authorization"].expose(), "Bearer tok-123");
//! assert!(!format!("{server:?}").contains("tok-123"));
//! assert_eq!(server.request_timeout.as_secs(), 60);
//!
//! // A missing variable is an error naming it and its path, never "".
//! let err = resolve(&loaded.config, &|_: &str| None).unwrap_err();
//! assert!(err.to_string().contains(
//!     "mcpServers.remote-tools.headers.Authorization: environment variable `MCP_SERVER_TOKEN` is not set"
//! ));
//! ```

pub mod edit;
mod envfile;
mod error;
mod expand;
mod fingerprint;
mod formats;
mod jsonc;
mod model;
mod report;
mod resolve;
mod select;
pub mod suggest;
mod validate;

pub use error::ConfigError;
pub use expand::{has_vars, has_vars_in};
pub use fingerprint::{Fingerprint, FingerprintKey, KeyUnavailable};
pub use formats::{FOLDER_CANDIDATES, Loaded, Options, load_path, locate, parse_str};
pub use mcp_stack_protocol::ProtocolPin;
pub use mcp_stack_protocol::secret::Secret;
pub use model::{
    AgentDefaults, DeclaredTransport, Format, HttpKind, InputKind, InputSpec, McpConfig,
    OAuthSettings, ProxySetting, ResolvedConfig, ResolvedServer, ServerConfig, TokenStoreKind,
    ToolFilter, ToolPinning, TransportConfig, UnknownFormatName, pin_spelling, redact_url,
};
pub use report::{Problem, Report, Severity};
pub use resolve::{EnvLookup, Resolve, process_env, resolve, resolve_with_key};
pub use validate::{is_mcp_config_record, validate};

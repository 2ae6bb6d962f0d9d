//! Adding and removing one server in a config file, text in, text out
//! (no IO: `mcp add|remove` read and write the file).
//!
//! Every other byte stays as it was: comments, key order, indentation,
//! blank lines. The entry is written the way the file's own client reads
//! it ([`Format`]): `mcpServers` or `servers` or `[mcp_servers.NAME]`,
//! VS Code's `type`, OpenClaw's `transport`, Codex's `http_headers`. What
//! the client could not read is refused with an [`EditError`], and no text
//! is returned: a URL server in Claude Desktop's file, SSE in Codex's, a
//! name outside `[A-Za-z0-9_-]`, an existing name unless replacing, a
//! file that does not parse.
//!
//! Each format's way of writing a server is one entry of a table
//! (`spec`); adding a format is adding its entry. JSON and JSONC are
//! edited by a small span-preserving editor of this crate (`edit/json.rs`),
//! TOML by `toml_edit`. Every edit is checked before it is returned: the
//! new text, parsed, must equal the old one with just that entry added or
//! removed.
//!
//! ```
//! use mcp_stack_config::Format;
//! use mcp_stack_config::edit::{Existing, NewServer, add_server, remove_server};
//!
//! let text = "{\n  // mine\n  \"servers\": {}\n}\n";
//! let server = NewServer::stdio("npx", ["-y", "some-mcp-server"]).env("TOKEN", "${TOKEN}");
//! let added = add_server(text, Format::VsCode, "tools", &server, Existing::Refuse).unwrap();
//! assert!(added.contains("\"type\": \"stdio\""));
//! assert_eq!(remove_server(&added, Format::VsCode, "tools").unwrap(), text);
//! ```

use std::path::Path;

use serde_json::Value;

use crate::Format;
use crate::Secret;

mod json;
mod toml;

/// How a format's file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syntax {
    /// Plain JSON: its client reads no comments or trailing commas.
    Json,
    /// JSON with comments and trailing commas.
    Jsonc,
    /// TOML.
    Toml,
}

/// How a format names the HTTP transport of a URL server.
#[derive(Clone, Copy, Debug)]
enum Kinds {
    /// It cannot: the client picks one itself (Cursor).
    ClientPicks,
    /// Streamable HTTP is the only one (Codex).
    StreamableOnly,
    /// A key says which: its value for each (`auto`: `None` leaves the
    /// key out).
    Key {
        key: &'static str,
        auto: Option<&'static str>,
        streamable: &'static str,
        sse: &'static str,
    },
    /// The URL's own key says which (Gemini CLI: `httpUrl` or `url`;
    /// Windsurf's `serverUrl` for both, the client picking).
    UrlKey {
        streamable: &'static str,
        sse: &'static str,
    },
}

/// How a format writes URL servers.
#[derive(Clone, Copy, Debug)]
struct Remote {
    kinds: Kinds,
    /// The key of the headers map.
    headers: &'static str,
}

/// One format's way of writing a server: the table entry.
#[derive(Clone, Copy, Debug)]
struct Spec {
    format: Format,
    syntax: Syntax,
    /// The keys leading to the servers object.
    servers_at: &'static [&'static str],
    /// `(key, value)` marking a stdio server (VS Code's `"type": "stdio"`).
    stdio_type: Option<(&'static str, &'static str)>,
    /// URL servers, or why the format has none.
    remote: Result<Remote, &'static str>,
    /// A file name that only this format uses: such a file is made when
    /// missing.
    own_file_names: &'static [&'static str],
    /// Why servers cannot be added to this format yet (its entries have a
    /// shape of their own this writer does not make); removing still works.
    no_add: Option<&'static str>,
}

/// The table: one entry per format.
fn spec(format: Format) -> Spec {
    const OPENCLAW: Result<Remote, &str> = Ok(Remote {
        kinds: Kinds::Key {
            key: "transport",
            auto: None,
            streamable: "streamable-http",
            sse: "sse",
        },
        headers: "headers",
    });
    let base = Spec {
        format,
        syntax: Syntax::Json,
        servers_at: &["mcpServers"],
        stdio_type: None,
        remote: OPENCLAW,
        own_file_names: &[],
        no_add: None,
    };
    match format {
        Format::OpenClawJson => base,
        Format::OpenClawToml => Spec {
            syntax: Syntax::Toml,
            servers_at: &["mcp_servers"],
            ..base
        },
        Format::ClaudeDesktop => Spec {
            remote: Err(
                "Claude Desktop's config file holds local (stdio) servers only; remote servers are added in its Settings, under Connectors",
            ),
            own_file_names: &["claude_desktop_config.json"],
            ..base
        },
        Format::Cursor => Spec {
            remote: Ok(Remote {
                kinds: Kinds::ClientPicks,
                headers: "headers",
            }),
            own_file_names: &[".cursor/mcp.json"],
            ..base
        },
        Format::VsCode => Spec {
            syntax: Syntax::Jsonc,
            servers_at: &["servers"],
            stdio_type: Some(("type", "stdio")),
            remote: Ok(Remote {
                kinds: Kinds::Key {
                    key: "type",
                    auto: Some("http"),
                    streamable: "http",
                    sse: "sse",
                },
                headers: "headers",
            }),
            own_file_names: &[".vscode/mcp.json"],
            ..base
        },
        Format::Codex => Spec {
            syntax: Syntax::Toml,
            servers_at: &["mcp_servers"],
            remote: Ok(Remote {
                kinds: Kinds::StreamableOnly,
                headers: "http_headers",
            }),
            ..base
        },
        // `.mcp.json` and `~/.claude.json`'s user scope (the local scope,
        // `projects.<folder>.mcpServers`, is not written).
        Format::ClaudeCode => Spec {
            remote: Ok(Remote {
                kinds: Kinds::Key {
                    key: "type",
                    auto: Some("http"),
                    streamable: "http",
                    sse: "sse",
                },
                headers: "headers",
            }),
            own_file_names: &[".mcp.json"],
            ..base
        },
        Format::GeminiCli => Spec {
            syntax: Syntax::Jsonc,
            remote: Ok(Remote {
                kinds: Kinds::UrlKey {
                    streamable: "httpUrl",
                    sse: "url",
                },
                headers: "headers",
            }),
            ..base
        },
        Format::Windsurf => Spec {
            remote: Ok(Remote {
                kinds: Kinds::UrlKey {
                    streamable: "serverUrl",
                    sse: "serverUrl",
                },
                headers: "headers",
            }),
            ..base
        },
        Format::Zed => Spec {
            syntax: Syntax::Jsonc,
            servers_at: &["context_servers"],
            remote: Err("this writer adds local (stdio) servers to Zed's settings only"),
            ..base
        },
        Format::OpenCode => Spec {
            syntax: Syntax::Jsonc,
            servers_at: &["mcp"],
            no_add: Some(
                "OpenCode's entries (`type: local|remote`, the command as one array, `environment`) are not written by `mcp add` yet; add it in opencode.json by hand",
            ),
            ..base
        },
    }
}

/// Which HTTP transport a URL server is written with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteTransport {
    /// None named: the format's default (where it has a choice, the
    /// client's own: streamable HTTP, falling back to SSE in most).
    #[default]
    Unnamed,
    /// Streamable HTTP.
    StreamableHttp,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// The server to write.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum NewServer {
    /// A local process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment, in order.
        env: Vec<(String, Secret)>,
    },
    /// A remote endpoint.
    Remote {
        /// The URL.
        url: String,
        /// The transport asked for.
        transport: RemoteTransport,
        /// Request headers, in order.
        headers: Vec<(String, Secret)>,
    },
}

impl NewServer {
    /// A stdio server.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        NewServer::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// A URL server.
    pub fn remote(url: impl Into<String>) -> Self {
        NewServer::Remote {
            url: url.into(),
            transport: RemoteTransport::Unnamed,
            headers: Vec::new(),
        }
    }

    /// With an environment variable (stdio servers; ignored otherwise).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let NewServer::Stdio { env, .. } = &mut self {
            env.push((name.into(), Secret::new(value.into())));
        }
        self
    }

    /// With a header (URL servers; ignored otherwise).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let NewServer::Remote { headers, .. } = &mut self {
            headers.push((name.into(), Secret::new(value.into())));
        }
        self
    }

    /// With this transport (URL servers; ignored otherwise).
    pub fn transport(mut self, kind: RemoteTransport) -> Self {
        if let NewServer::Remote { transport, .. } = &mut self {
            *transport = kind;
        }
        self
    }
}

/// What to do when the name is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Existing {
    /// Refuse ([`EditError::Exists`]).
    Refuse,
    /// Put the new entry in place of the old one.
    Replace,
}

/// Why an edit was refused. No text is returned then: the file stays as it
/// was. Messages never hold env or header values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The file is not valid JSON or TOML.
    #[error("{message}; fix the file first")]
    Syntax {
        /// What is wrong, with line and column, never the offending text.
        message: String,
    },
    /// The file uses comments or trailing commas, which its client reads as errors.
    #[error(
        "{format} reads plain JSON, but the file has {what} at line {line}, column {column}: \
         its client could not read it; fix the file first"
    )]
    NotPlainJson {
        /// The format.
        format: Format,
        /// `a comment` or `a trailing comma`.
        what: &'static str,
        /// Where (1-based).
        line: usize,
        /// Where (1-based, in characters).
        column: usize,
    },
    /// This writer does not add servers to this format.
    #[error("{why}")]
    NotWritable {
        /// The format.
        format: Format,
        /// Why, and what to do instead.
        why: &'static str,
    },
    /// The format could not be told from the file.
    #[error(
        "cannot tell which config format this is (no `mcpServers`, `servers` or `mcp_servers` \
         found); name the format"
    )]
    UnknownFormat,
    /// The name cannot be a server name.
    #[error(
        "`{}` cannot be a server name: use letters, digits, `_` and `-` (what the clients \
         and `mcp` read)",
        name.escape_debug()
    )]
    BadName {
        /// The name.
        name: String,
    },
    /// The name is taken.
    #[error("the file already has a server `{name}`; replace it, or remove it first")]
    Exists {
        /// The name.
        name: String,
    },
    /// No such server.
    #[error("the file has no server `{name}`{}", list_known(known))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: Vec<String>,
    },
    /// The name is written twice.
    #[error(
        "the server `{name}` is written twice in the file; clients differ on which they read, so fix it by hand"
    )]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A key on the way to the servers is something else than an object.
    #[error("`{key}` is not an object (a table) of servers; fix it by hand")]
    NotAnObject {
        /// The dotted key.
        key: String,
    },
    /// The format cannot hold this server as asked.
    #[error("{0}")]
    Unsupported(String),
    /// The entry would not pass validation.
    #[error("the entry would not be valid: {}", problems.join("; "))]
    Invalid {
        /// The problems, each with its path.
        problems: Vec<String>,
    },
    /// The edit would have changed more than the entry (a bug).
    #[error(
        "the edit would have changed more than the entry `{name}`, so nothing is written \
         (a bug in mcp-stack-config: please report it with the file's layout)"
    )]
    Unchecked {
        /// The entry.
        name: String,
    },
}

fn list_known(known: &[String]) -> String {
    if known.is_empty() {
        " (it has none)".to_owned()
    } else {
        format!(" (it has: {})", known.join(", "))
    }
}

/// A value as written: strings, lists of strings, maps in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Str(String),
    List(Vec<String>),
    Map(Vec<(String, Node)>),
}

impl Node {
    fn to_value(&self) -> Value {
        match self {
            Node::Str(s) => Value::from(s.as_str()),
            Node::List(items) => Value::from(items.clone()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

fn pairs(items: &[(String, Secret)]) -> Node {
    Node::Map(
        items
            .iter()
            .map(|(k, v)| (k.clone(), Node::Str(v.expose().to_owned())))
            .collect(),
    )
}

/// Whether `name` can be a server name: what `mcp` (and Codex, Claude
/// Code) accept.
fn check_name(name: &str) -> Result<(), EditError> {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(EditError::BadName {
            name: name.to_owned(),
        })
    }
}

/// The record `spec`'s client reads for `server`.
fn record(spec: &Spec, name: &str, server: &NewServer) -> Result<Node, EditError> {
    let mut entries: Vec<(String, Node)> = Vec::new();
    let mut put = |k: &str, v: Node| entries.push((k.to_owned(), v));
    match server {
        NewServer::Stdio { command, args, env } => {
            if let Some((key, value)) = spec.stdio_type {
                put(key, Node::Str(value.to_owned()));
            }
            put("command", Node::Str(command.clone()));
            if !args.is_empty() {
                put("args", Node::List(args.clone()));
            }
            if !env.is_empty() {
                put("env", pairs(env));
            }
        }
        NewServer::Remote {
            url,
            transport,
            headers,
        } => {
            let remote = spec
                .remote
                .map_err(|why| EditError::Unsupported(why.to_owned()))?;
            let format = spec.format;
            let mut url_key = "url";
            match (remote.kinds, transport) {
                (_, RemoteTransport::Unnamed)
                | (Kinds::StreamableOnly, RemoteTransport::StreamableHttp) => {
                    if let Kinds::Key {
                        key, auto: Some(v), ..
                    } = remote.kinds
                    {
                        put(key, Node::Str(v.to_owned()));
                    }
                    if let Kinds::UrlKey { streamable, .. } = remote.kinds {
                        url_key = streamable;
                    }
                }
                (Kinds::ClientPicks, _) => {
                    return Err(EditError::Unsupported(format!(
                        "{format} has no way to name the transport of a URL server (its client picks one itself); leave the transport out"
                    )));
                }
                (Kinds::StreamableOnly, _) => {
                    return Err(EditError::Unsupported(format!(
                        "{format} reaches URL servers over streamable HTTP only; it cannot use the SSE transport"
                    )));
                }
                (
                    Kinds::Key {
                        key,
                        streamable,
                        sse,
                        ..
                    },
                    t,
                ) => {
                    let v = if *t == RemoteTransport::Sse {
                        sse
                    } else {
                        streamable
                    };
                    put(key, Node::Str(v.to_owned()));
                }
                (Kinds::UrlKey { streamable, sse }, t) => {
                    url_key = if *t == RemoteTransport::Sse {
                        sse
                    } else {
                        streamable
                    };
                }
            }
            put(url_key, Node::Str(url.clone()));
            if !headers.is_empty() {
                put(remote.headers, pairs(headers));
            }
        }
    }
    let node = Node::Map(entries);
    let path = format!("{}.{name}", spec.servers_at.join("."));
    let problems: Vec<String> = crate::is_mcp_config_record(&node.to_value(), &path)
        .into_iter()
        .filter(|p| p.severity == crate::Severity::Error)
        .map(|p| p.to_string())
        .collect();
    if problems.is_empty() {
        Ok(node)
    } else {
        Err(EditError::Invalid { problems })
    }
}

/// `text` (a config file in `format`) with the server `name` added.
///
/// The entry goes last among the servers (the servers object, or
/// `[mcp_servers]` table, is made when missing). A taken name is refused,
/// or replaced in place with [`Existing::Replace`].
pub fn add_server(
    text: &str,
    format: Format,
    name: &str,
    server: &NewServer,
    existing: Existing,
) -> Result<String, EditError> {
    check_name(name)?;
    let spec = spec(format);
    if let Some(why) = spec.no_add {
        return Err(EditError::NotWritable { format, why });
    }
    let node = record(&spec, name, server)?;
    let replace = existing == Existing::Replace;
    match spec.syntax {
        Syntax::Toml => {
            let out = toml::insert(text, spec.servers_at, name, &node, replace)?;
            toml::check(text, &out, spec.servers_at, name, Some(&node))?;
            Ok(out)
        }
        Syntax::Json | Syntax::Jsonc => {
            let doc = parse_json(text, &spec)?;
            let out = doc.insert(spec.servers_at, name, &node, replace)?;
            check_json(&doc, &out, spec.servers_at, name, Some(&node))?;
            Ok(out)
        }
    }
}

/// `text` (a config file in `format`) without the server `name`.
pub fn remove_server(text: &str, format: Format, name: &str) -> Result<String, EditError> {
    let spec = spec(format);
    match spec.syntax {
        Syntax::Toml => {
            let out = toml::remove(text, spec.servers_at, name)?;
            toml::check(text, &out, spec.servers_at, name, None)?;
            Ok(out)
        }
        Syntax::Json | Syntax::Jsonc => {
            let doc = parse_json(text, &spec)?;
            let out = doc.remove(spec.servers_at, name)?;
            check_json(&doc, &out, spec.servers_at, name, None)?;
            Ok(out)
        }
    }
}

/// The server names in `text`, in file order.
pub fn server_names(text: &str, format: Format) -> Result<Vec<String>, EditError> {
    let spec = spec(format);
    match spec.syntax {
        Syntax::Toml => toml::names(text, spec.servers_at),
        Syntax::Json | Syntax::Jsonc => parse_json(text, &spec)?.names(spec.servers_at),
    }
}

/// The format of an existing file, for editing. Unlike loading, this
/// needs only the syntax and the layout, so a file whose entries have
/// problems can still be edited (say, to remove the broken one).
pub fn detect_format(text: &str, path: Option<&Path>) -> Result<Format, EditError> {
    let ext = path.and_then(Path::extension).and_then(|e| e.to_str());
    let is_toml = match ext {
        Some("toml") => true,
        Some("json" | "jsonc") => false,
        _ => !text.trim_start().starts_with(['{', '/']),
    };
    let doc = if is_toml {
        toml::value(text)?
    } else {
        json::Doc::parse(text)?.value()?
    };
    crate::formats::detect(&doc, is_toml, path).ok_or(EditError::UnknownFormat)
}

/// The format a new file at `path` is in, when its name says so beyond
/// doubt (`claude_desktop_config.json`, `.vscode/mcp.json`,
/// `.cursor/mcp.json`); `None` for names several clients use
/// (`settings.json`, `config.toml`, `mcp.json`).
pub fn format_of_new_file(path: &Path) -> Option<Format> {
    Format::ALL.into_iter().find(|f| {
        spec(*f)
            .own_file_names
            .iter()
            .any(|name| path.ends_with(name))
    })
}

/// The text of a new, empty file in `format`.
pub fn skeleton(format: Format) -> String {
    let spec = spec(format);
    match spec.syntax {
        Syntax::Toml => String::new(),
        Syntax::Json | Syntax::Jsonc => {
            let mut text = String::from("{}");
            for (depth, key) in spec.servers_at.iter().enumerate().rev() {
                let outer = "  ".repeat(depth);
                text = format!("{{\n{outer}  {}: {text}\n{outer}}}", json_string(key));
            }
            text.push('\n');
            text
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn parse_json<'t>(text: &'t str, spec: &Spec) -> Result<json::Doc<'t>, EditError> {
    let doc = json::Doc::parse(text)?;
    if spec.syntax == Syntax::Json
        && let Some((line, column, what)) = doc.jsonc_features()
    {
        return Err(EditError::NotPlainJson {
            format: spec.format,
            what,
            line,
            column,
        });
    }
    Ok(doc)
}

/// `before` with `name` set to `record` (or removed) under `path`.
fn expected(before: &Value, path: &[&str], name: &str, record: Option<&Node>) -> Option<Value> {
    let mut want = before.clone();
    let mut at = &mut want;
    for key in path {
        let obj = at.as_object_mut()?;
        at = obj
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    let servers = at.as_object_mut()?;
    match record {
        Some(node) => servers.insert(name.to_owned(), node.to_value()),
        None => servers.remove(name),
    };
    Some(want)
}

/// Checks that `out`, parsed, is the old document with just the entry changed.
fn check_json(
    before: &json::Doc<'_>,
    out: &str,
    path: &[&str],
    name: &str,
    record: Option<&Node>,
) -> Result<(), EditError> {
    let unchecked = || EditError::Unchecked {
        name: name.to_owned(),
    };
    let after = json::Doc::parse(out).map_err(|_| unchecked())?;
    let want = expected(&before.value()?, path, name, record);
    if after.value().ok() == want
        && after.jsonc_features().is_some() == before.jsonc_features().is_some()
    {
        Ok(())
    } else {
        Err(unchecked())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn skeletons_read_as_their_format() {
        for format in Format::ALL {
            let text = skeleton(format);
            let loaded = crate::parse_str(&text, &crate::Options::new().format(format)).unwrap();
            assert!(loaded.config.servers.is_empty(), "{format}");
        }
        assert_eq!(skeleton(Format::VsCode), "{\n  \"servers\": {}\n}\n");
    }

    #[test]
    fn new_file_names_that_say_the_format() {
        let f = |p: &str| format_of_new_file(Path::new(p));
        assert_eq!(f("/h/.vscode/mcp.json"), Some(Format::VsCode));
        assert_eq!(f("/h/.cursor/mcp.json"), Some(Format::Cursor));
        assert_eq!(
            f("/h/x/claude_desktop_config.json"),
            Some(Format::ClaudeDesktop)
        );
        assert_eq!(f("/h/mcp.json"), None);
        assert_eq!(f("/h/settings.json"), None);
        assert_eq!(f("/h/config.toml"), None);
    }

    #[test]
    fn names_outside_the_alphabet_are_refused() {
        for bad in ["", "a b", "a.b", "é", "a/b"] {
            let e = add_server(
                "{}",
                Format::Cursor,
                bad,
                &NewServer::stdio("x", [""; 0]),
                Existing::Refuse,
            );
            assert!(matches!(e, Err(EditError::BadName { .. })), "{bad}: {e:?}");
        }
    }
}

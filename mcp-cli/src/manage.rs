//! `mcp add` and `mcp remove`: one server in or out of a config file, as
//! `claude mcp add|remove` do, in the file's own format and keeping every
//! other byte (`mcp_stack_config::edit` does the editing; this module reads,
//! words and writes). The file is written atomically: a temporary file in
//! the same folder, with the old file's permissions, renamed over it.
//!
//! A missing file is made when its format is beyond doubt: its name is one
//! client's alone (`claude_desktop_config.json`, `.vscode/mcp.json`,
//! `.cursor/mcp.json`) or `--format` names it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use mcp_stack_config::Format;
use mcp_stack_config::edit::{self, EditError, Existing, NewServer, RemoteTransport};
use serde_json::{Map, Value};

use crate::errors::CliError;
use crate::output::Style;
use crate::term::{self, outln};

/// `mcp add`.
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// The server's name: letters, digits, `_` and `-`.
    name: String,
    /// The config file to add it to (made when missing, if its name or
    /// --format says which client's it is).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// A remote server: its URL (else give the command after `--`).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With --url: `http` (streamable HTTP) or `sse`, where the format can
    /// say which; left out, the client's default.
    #[arg(short, long, value_name = "KIND")]
    transport: Option<String>,
    /// With --url: a request header, `'Name: value'` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    header: Vec<String>,
    /// For a command: an environment variable, `KEY=VALUE` (repeatable).
    /// Write `'KEY=${KEY}'` to keep the value out of the file.
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// The file's format, when neither its content nor its name says
    /// (openclaw-json, openclaw-toml, claude-desktop, cursor, vscode, codex).
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Replace a server of the same name (in place).
    #[arg(short, long)]
    force: bool,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// The command to run and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

/// `mcp remove`.
#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// The server's name.
    name: String,
    /// The config file.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The file's format, when its content does not say.
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

fn edit_failed(e: &EditError) -> CliError {
    let kind = match e {
        EditError::Syntax { .. } | EditError::NotPlainJson { .. } => "syntax",
        EditError::UnknownFormat => "format",
        EditError::BadName { .. } => "name",
        EditError::Exists { .. } => "exists",
        EditError::NotFound { .. } => "not_found",
        EditError::Invalid { .. } => "invalid",
        _ => "unsupported",
    };
    let mut message = e.to_string();
    if let EditError::Exists { .. } = e {
        message.push_str(" (--force replaces it)");
    }
    if let EditError::UnknownFormat = e {
        message.push_str(" with --format");
    }
    CliError::new(kind, message)
}

/// `--format NAME`.
pub(crate) fn format_arg(format: Option<&str>) -> Result<Option<Format>, CliError> {
    format
        .map(|f| {
            f.parse::<Format>()
                .map_err(|e| CliError::usage(e.to_string()))
        })
        .transpose()
}

/// The file a `--config` names: a folder's one config file; through a
/// symbolic link, the file it points to (so the link stays a link).
pub(crate) fn config_file(path: &Path, format: Option<Format>) -> Result<PathBuf, CliError> {
    let file = if path.is_dir() {
        mcp_stack_config::locate(path, format)
            .map_err(|e| CliError::new("not_found", e.to_string()))?
    } else {
        path.to_path_buf()
    };
    Ok(std::fs::canonicalize(&file).unwrap_or(file))
}

/// The file's text, and whether it exists.
fn read(path: &Path) -> Result<Option<String>, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::new(
            "io",
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

fn detect(text: &str, path: &Path, format: Option<Format>) -> Result<Format, CliError> {
    match format {
        Some(f) => Ok(f),
        None => edit::detect_format(text, Some(path)).map_err(|e| edit_failed(&e)),
    }
}

/// Writes `text` to `path` through a temporary file in the same folder,
/// renamed over it, with the old file's permissions.
fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    let failed = |what: &str, e: std::io::Error| {
        CliError::new("io", format!("cannot {what} {}: {e}", path.display()))
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| failed("make the folder of", e))?;
    let permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path
        .file_name()
        .map_or_else(|| "config".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.mcp-{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(text.as_bytes())?;
        if let Some(p) = &permissions {
            file.set_permissions(p.clone())?;
        }
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed("write", e)
    })
}

/// The server `args` describe.
fn new_server(args: &AddArgs) -> Result<NewServer, CliError> {
    let env = args
        .env
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(CliError::usage(format!(
                "--env takes KEY=VALUE, got `{}`",
                kv.split_once('=').map_or(kv.as_str(), |(k, _)| k)
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let headers = args
        .header
        .iter()
        .map(|h| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() && !k.trim().contains(' ') => {
                Ok((k.trim().to_owned(), v.trim().to_owned()))
            }
            _ => Err(CliError::usage(format!(
                "--header takes 'Name: value', got `{}`",
                h.split_once(':').map_or(h.as_str(), |(k, _)| k)
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (_, v) in &env {
        term::keep_secret(v);
    }
    for (_, v) in &headers {
        term::keep_credential(v);
    }
    match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => Err(CliError::usage(
            "give either --url or a command after `--`, not both",
        )),
        (None, None) => Err(CliError::usage(
            "give the server's command after `--` (mcp add NAME --config FILE -- CMD ARGS…), or --url URL",
        )),
        (None, Some((command, rest))) => {
            if !headers.is_empty() {
                return Err(CliError::usage(
                    "--header is for --url servers; a command gets --env",
                ));
            }
            if args.transport.as_deref().is_some_and(|t| t != "stdio") {
                return Err(CliError::usage(
                    "--transport http|sse is for --url servers; a command is a stdio server",
                ));
            }
            let mut server = NewServer::stdio(command.clone(), rest.iter().cloned());
            for (k, v) in env {
                server = server.env(k, v);
            }
            Ok(server)
        }
        (Some(url), None) => {
            if !env.is_empty() {
                return Err(CliError::usage(
                    "--env sets the environment of a command the client starts; a --url server has none (its client would ignore it): use --header",
                ));
            }
            let transport = match args.transport.as_deref() {
                None => RemoteTransport::Unnamed,
                Some("http" | "streamable-http") => RemoteTransport::StreamableHttp,
                Some("sse") => RemoteTransport::Sse,
                Some(other) => {
                    return Err(CliError::usage(format!(
                        "unknown --transport `{other}` for a --url server: use http (streamable HTTP) or sse"
                    )));
                }
            };
            let mut server = NewServer::remote(url.clone()).transport(transport);
            for (k, v) in headers {
                server = server.header(k, v);
            }
            Ok(server)
        }
    }
}

/// `mcp add`.
pub(crate) fn add(args: &AddArgs, style: Style) -> ExitCode {
    match try_add(args) {
        Ok(done) => done.report(args.json, style),
        Err(f) => f.report(style),
    }
}

/// What was done, for the report.
struct Done {
    verb: &'static str,
    name: String,
    file: PathBuf,
    format: Format,
    created: bool,
    replaced: bool,
}

impl Done {
    fn report(&self, json: bool, style: Style) -> ExitCode {
        let file = self.file.display().to_string();
        if json {
            let mut v = Map::new();
            v.insert(self.verb.into(), Value::from(self.name.as_str()));
            v.insert("file".into(), Value::from(file));
            v.insert("format".into(), Value::from(self.format.name()));
            v.insert("created".into(), Value::from(self.created));
            v.insert("replaced".into(), Value::from(self.replaced));
            term::print_json(&Value::Object(v), true);
        } else {
            let how = match (self.verb, self.created, self.replaced) {
                ("removed", ..) => "removed from",
                (_, true, _) => "added to new file",
                (_, _, true) => "replaced in",
                _ => "added to",
            };
            outln!(
                "{} {} {how} {file} ({})",
                style.ok("✓"),
                self.name,
                self.format
            );
        }
        ExitCode::SUCCESS
    }
}

fn try_add(args: &AddArgs) -> Result<Done, CliError> {
    let format = format_arg(args.format.as_deref())?;
    let server = new_server(args)?;
    let path = config_file(&args.config, format)?;
    let (text, format, created) = match read(&path)? {
        Some(text) => {
            let format = detect(&text, &path, format)?;
            (text, format, false)
        }
        None => {
            let format = format.or_else(|| edit::format_of_new_file(&path)).ok_or_else(|| {
                CliError::new(
                    "format",
                    format!(
                        "{} does not exist, and several clients use that file name; name the format with --format (openclaw-json, openclaw-toml, claude-desktop, cursor, vscode, codex) to make it",
                        path.display()
                    ),
                )
            })?;
            (edit::skeleton(format), format, true)
        }
    };
    let replaced = args.force
        && edit::server_names(&text, format).is_ok_and(|names| names.contains(&args.name));
    let existing = if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let out = edit::add_server(&text, format, &args.name, &server, existing)
        .map_err(|e| edit_failed(&e))?;
    write_atomically(&path, &out)?;
    Ok(Done {
        verb: "added",
        name: args.name.clone(),
        file: path,
        format,
        created,
        replaced,
    })
}

/// `mcp remove`.
pub(crate) fn remove(args: &RemoveArgs, style: Style) -> ExitCode {
    let done = (|| -> Result<Done, CliError> {
        let format = format_arg(args.format.as_deref())?;
        let path = config_file(&args.config, format)?;
        let text = read(&path)?.ok_or_else(|| {
            CliError::new("not_found", format!("{} does not exist", path.display()))
        })?;
        let format = detect(&text, &path, format)?;
        let out = edit::remove_server(&text, format, &args.name).map_err(|e| edit_failed(&e))?;
        write_atomically(&path, &out)?;
        Ok(Done {
            verb: "removed",
            name: args.name.clone(),
            file: path,
            format,
            created: false,
            replaced: false,
        })
    })();
    match done {
        Ok(done) => done.report(args.json, style),
        Err(f) => f.report(style),
    }
}

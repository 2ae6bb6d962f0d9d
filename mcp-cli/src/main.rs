//! `mcp`: probe MCP servers, list and call their tools, check config files,
//! and show every message on the wire.
//!
//! ```text
//! mcp probe                              # the built-in demo server
//! mcp probe --stdio 'npx -y @modelcontextprotocol/server-everything' --trace
//! mcp probe --config settings.json --server local-fs
//! mcp tools --stdio 'python server.py'
//! mcp call --stdio 'python server.py' echo --args '{"text": "hi"}'
//! mcp config check settings.json
//! mcp add fs --config .vscode/mcp.json -- npx -y @modelcontextprotocol/server-filesystem .
//! mcp list --config .vscode/mcp.json --status
//! ```
//!
//! Everything printed goes through `term`, the one output stage (secrets
//! scrubbed, a server's control characters escaped).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod agent;
mod arguments;
mod auth;
mod cache;
mod commands;
mod config;
mod diagnosis;
mod direct;
mod elicit;
mod errors;
mod features;
mod inputs;
mod list;
mod manage;
mod oauth;
mod output;
mod probe;
mod report;
mod servers;
mod signals;
mod target;
mod term;
mod tool_search;
mod trace;
mod words;

use output::Style;

/// Probe MCP servers, list and call their tools, check configs.
#[derive(Debug, Parser)]
#[command(name = "mcp", version, about, long_about = None)]
struct Cli {
    /// Log what the client does (to stderr).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// A value for a VS Code input of the config, `ID=VALUE` (repeatable);
    /// inputs not given are asked on a terminal.
    #[arg(long = "input", value_name = "ID=VALUE", global = true)]
    input: Vec<String>,
    /// Where OAuth logins are kept: `file` (the default) or `keyring` (the
    /// OS credential store). Else a server's `tokenStore`, else MCP_TOKEN_STORE.
    #[arg(long, value_name = "STORE", global = true, value_parser = oauth::parse_store_kind)]
    token_store: Option<mcp_stack_config::TokenStoreKind>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run initialize → initialized → tools/list → tools/call against a server and
    /// report each step; with no target, the built-in demo server.
    Probe(ProbeArgs),
    /// List a server's tools (with --config: every server's, under the
    /// SERVER__TOOL names an agent sees).
    Tools(ToolsArgs),
    /// The pinned tool definitions of `--config` servers: list them, approve
    /// a changed one, or forget a server's.
    #[command(subcommand)]
    Pins(cache::PinsCommand),
    /// Call one tool (with --config: by its SERVER__TOOL name).
    Call(CallArgs),
    /// List a server's resources and resource templates (with --config: one
    /// server, --server NAME).
    Resources(ToolsArgs),
    /// Read a resource (text printed; binary contents summarized, or
    /// written with --out FILE).
    Read(features::ReadArgs),
    /// List a server's prompts and their arguments.
    Prompts(ToolsArgs),
    /// Get a prompt with arguments (checked against the prompt's own first).
    Prompt(features::PromptArgs),
    /// Suggest values for a prompt argument or a resource template variable.
    Complete(features::CompleteArgs),
    /// Print the server's notifications as they come (subscribing to
    /// --resource URIs), until interrupted or --for SECS.
    Listen(features::ListenArgs),
    /// Check or show a config file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Add a server to a config file, in the file's own format, keeping
    /// every other byte (`-- CMD ARGS…` or `--url URL`).
    Add(manage::AddArgs),
    /// Remove a server from a config file, keeping every other byte.
    Remove(manage::RemoveArgs),
    /// List a config file's servers; with --status, whether each answers.
    List(list::ListArgs),
    /// Log in to an OAuth-protected HTTP server: opens the browser on the
    /// authorization page, receives the redirect on 127.0.0.1, stores the tokens.
    Login(auth::LoginArgs),
    /// Forget a server's stored login.
    Logout(auth::ServerArgs),
    /// Stored logins.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Run the built-in demo server: an MCP server on stdin/stdout (or
    /// HTTP with --http ADDR), what the commands talk to when given no
    /// target. Every example runs against it: `--stdio 'mcp demo-server'`.
    #[command(
        name = "demo-server",
        disable_help_flag = true,
        long_about = "Run the built-in demo server: an MCP server speaking every revision on \
            stdin/stdout (or over HTTP with --http ADDR), with tools (echo, add, read_file, \
            slow, fail, progress …), resources, prompts and completions. It is what `mcp \
            probe`, `mcp tools`, `mcp call` … talk to when given no target; as a command it \
            serves any client: `mcp tools --stdio 'mcp demo-server'`, or in a config \
            `\"command\": \"mcp\", \"args\": [\"demo-server\"]`. Its options can make \
            it misbehave, for testing a client."
    )]
    DemoServer {
        /// The demo server's options (listed below).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, powershell,
    /// elvish); README, "Completions and the man page", says where it goes.
    Completions {
        /// The shell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `mcp man > ~/.local/share/man/man1/mcp.1`.
    Man,
}

/// The command line's definitions: the derived ones, with the demo
/// server's own options as its help. The parser, the completions and the
/// man page all come from here.
fn cli_command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
        .mut_subcommand("demo-server", |c| c.after_long_help(demo_help()))
}

/// The demo server's options, from the testkit's help, named as `mcp`
/// runs it.
fn demo_help() -> String {
    let help = mcp_stack_testkit::HELP;
    let options = help
        .find("Options:")
        .and_then(|at| help.get(at + "Options:".len()..))
        .unwrap_or(help);
    format!(
        "Demo server options:{}\nExamples:\n  mcp tools --stdio 'mcp demo-server'\n  mcp probe --stdio \
         'mcp demo-server --misbehave stdout-noise'\n  mcp demo-server --http 127.0.0.1:8765   \
         # then: mcp tools --url http://127.0.0.1:8765/mcp\n",
        options.replace("mcp-testkit", "mcp demo-server")
    )
}

/// Which server(s) to talk to. With none of these: the built-in demo server.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct TargetArgs {
    /// A stdio server: the command line, split like a shell would (quotes
    /// work) but run directly, never through a shell.
    #[arg(long, value_name = "'CMD ARGS…'", conflicts_with_all = ["config", "url"])]
    pub(crate) stdio: Option<String>,
    /// An HTTP server: its MCP endpoint (streamable HTTP) or SSE URL.
    #[arg(long, value_name = "URL", conflicts_with = "config")]
    pub(crate) url: Option<String>,
    /// A header for a --url server, `'Name: value'` (repeatable). Values are
    /// never shown in traces or errors.
    #[arg(long = "header", value_name = "'NAME: VALUE'", requires = "url")]
    pub(crate) header: Vec<String>,
    /// The HTTP transport for --url: streamable-http, sse, or auto (streamable
    /// HTTP, falling back to SSE on 400/404/405).
    #[arg(long, value_name = "KIND", default_value = "auto", requires = "url")]
    pub(crate) transport: String,
    /// A config file (or a folder holding one): Claude Desktop, Claude
    /// Code, Cursor, VS Code, Codex, Gemini CLI, Windsurf, Zed, OpenCode,
    /// OpenClaw.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// With --config: only this server.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) server: Option<String>,
    /// Environment for a --stdio server, on top of the allowlist (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// Per-request timeout in milliseconds (default 60000, or the config's).
    #[arg(long, value_name = "MS")]
    pub(crate) timeout: Option<u64>,
    /// Handshake timeout in milliseconds (default 30000, or the config's).
    #[arg(long, value_name = "MS")]
    pub(crate) handshake_timeout: Option<u64>,
    /// Protocol lifecycle: `handshake` (the initialize handshake, 2024-11-05
    /// to 2025-11-25), `discover` (2026-07-28: server/discover and
    /// per-request metadata), `auto` (probe with server/discover, fall back
    /// to the handshake), or one revision. `legacy` and `modern` are older
    /// spellings. Default: auto, or the config's `protocolVersion`.
    #[arg(long, value_name = "MODE")]
    pub(crate) protocol: Option<String>,
}

/// How to show things.
#[derive(Debug, Args, Clone, Copy, Default)]
pub(crate) struct ShowArgs {
    /// Print every JSON-RPC message in both directions, and the server's stderr.
    #[arg(long)]
    pub(crate) trace: bool,
    /// Print a machine-readable JSON report instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Do not summarise long outputs (tool lists, results, traced messages).
    #[arg(long)]
    pub(crate) full: bool,
}

#[derive(Debug, Args)]
struct ProbeArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    show: ShowArgs,
    /// The tool to call in the tools/call step (default: a safe one, when the
    /// server has one).
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,
    /// Arguments for --call, as JSON.
    #[arg(long, value_name = "JSON", requires = "call")]
    args: Option<String>,
}

#[derive(Debug, Args)]
struct ToolsArgs {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    show: ShowArgs,
    /// With --config: ask the servers, even when the catalog cache is fresh.
    #[arg(long)]
    refresh: bool,
    /// What to do with a tool whose definition changed since it was pinned:
    /// block (withheld until `mcp pins approve`), warn (the default: used and
    /// marked) or off.
    #[arg(long, value_name = "POLICY", value_parser = cache::parse_policy)]
    pinning: Option<mcp_stack_runtime::PinPolicy>,
    /// Rank the tools for QUERY (names, titles, descriptions, parameters),
    /// best first.
    #[arg(long, value_name = "QUERY")]
    search: Option<String>,
    /// With --search: how many tools to show.
    #[arg(
        short = 'k',
        long,
        value_name = "N",
        default_value_t = 10,
        requires = "search"
    )]
    limit: usize,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) show: ShowArgs,
    /// The tool's name (with --config: SERVER__TOOL, or the bare name when
    /// --server picks one server).
    pub(crate) tool: String,
    /// Arguments, each read by the tool's input schema: `n=3` is a number
    /// where the schema says integer or number, `all=true` a boolean, text
    /// a string; `key:=JSON` passes JSON as it is (`tags:='["a","b"]'`).
    /// They go on top of --args.
    #[arg(value_name = "KEY=VALUE")]
    pub(crate) pairs: Vec<String>,
    /// Arguments as a JSON object; `@FILE` reads it from a file, `-` from
    /// stdin.
    #[arg(long, value_name = "JSON|@FILE|-")]
    pub(crate) args: Option<String>,
    /// Show the call's progress as the server reports it (a bar on a
    /// terminal, plain lines otherwise; on stderr).
    #[arg(long)]
    pub(crate) progress: bool,
    /// Run the tool as a task (a server that offers tasks: 2025-11-25's
    /// `tasks` capability, or 2026-07-28's tasks extension) and wait for its
    /// result, within --timeout; the task's id and status changes go to
    /// stderr. One server only (not with --config).
    #[arg(long)]
    pub(crate) task: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Validate a config file: every problem, with its path. Exit status 1 on errors.
    Check {
        /// The file, or a folder holding one.
        file: PathBuf,
        /// Unknown keys are errors, not warnings.
        #[arg(long)]
        strict: bool,
        /// The format, when detection is not wanted (openclaw-json,
        /// openclaw-toml, claude-desktop, claude-code, cursor, vscode, codex,
        /// gemini-cli, windsurf, zed, opencode).
        #[arg(long)]
        format: Option<String>,
        /// Print the problems as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the resolved servers (secrets redacted) with their fingerprints.
    Show {
        /// The file, or a folder holding one.
        file: PathBuf,
        /// The format, when detection is not wanted.
        #[arg(long)]
        format: Option<String>,
        /// Print the servers as JSON (the lines `show` prints, redacted).
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let code = run_cli();
    // A reader that stopped early (`mcp tools --json | head -c 100`): the
    // command ended quietly, with SIGPIPE's status (README, exit codes).
    if term::stdout_closed() {
        return ExitCode::from(term::CLOSED_PIPE_EXIT);
    }
    code
}

fn run_cli() -> ExitCode {
    let parsed = cli_command()
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return command_line_error(&e),
    };
    match &cli.command {
        Command::DemoServer { args } if args.iter().any(|a| a == "-h" || a == "--help") => {
            let mut cmd = cli_command();
            // Built, the subcommand's usage reads `mcp demo-server`.
            cmd.build();
            if let Some(demo) = cmd.find_subcommand_mut("demo-server") {
                term::outln!("{}", demo.render_long_help().to_string().trim_end());
            }
            return ExitCode::SUCCESS;
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cli_command(), "mcp", &mut script);
            term::outln!("{}", String::from_utf8_lossy(&script).trim_end());
            return ExitCode::SUCCESS;
        }
        Command::Man => {
            let mut page = Vec::new();
            if let Err(e) = clap_mangen::Man::new(cli_command()).render(&mut page) {
                term::errln!("mcp man: {e}");
                return ExitCode::FAILURE;
            }
            term::outln!("{}", String::from_utf8_lossy(&page).trim_end());
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    if let Command::DemoServer { args } = cli.command {
        // A server: its signals keep their default meaning.
        return signals::run_unwatched(mcp_stack_testkit::run(args));
    }
    if cli.verbose {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(term::log_writer)
            .init();
    }
    let style = Style::detect();
    let (name, json) = cli.command.name_and_json();
    errors::start(&name, json);
    if let Err(e) = inputs::give(&cli.input) {
        return errors::finish(errors::usage_error(&e.to_string()));
    }
    oauth::choose_store(cli.token_store);
    let code = match cli.command {
        Command::Probe(a) => run_async(probe::probe(
            a.target,
            a.show,
            style,
            probe::SampleCall::from_args(a.call, a.args),
        )),
        Command::Tools(a) => {
            cache::set_pinning(a.pinning);
            cache::allow_cached_listing(a.refresh);
            match a.search {
                Some(q) => run_async(tool_search::search(a.target, a.show, q, a.limit, style)),
                None => run_async(commands::tools(a.target, a.show, style)),
            }
        }
        Command::Pins(c) => cache::pins(c, style),
        Command::Call(a) => run_async(commands::call(a, style)),
        Command::Listen(a) => run_async(features::listen(a, style)),
        Command::Resources(a) => run_async(commands::resources(a.target, a.show, style)),
        Command::Read(a) => run_async(commands::read(a, style)),
        Command::Prompts(a) => run_async(commands::prompts(a.target, a.show, style)),
        Command::Prompt(a) => run_async(commands::prompt(a, style)),
        Command::Complete(a) => run_async(features::complete(a, style)),
        Command::Config(c) => config::run(c, style),
        Command::Add(a) => manage::add(&a, style),
        Command::Remove(a) => manage::remove(&a, style),
        Command::List(a) => run_async(list::list(a, style)),
        Command::Login(a) => run_async(auth::login(a, style)),
        Command::Logout(a) => run_async(auth::logout(&a, style)),
        Command::Auth(auth::AuthCommand::Status { json }) => run_async(auth::status(json, style)),
        Command::DemoServer { .. } | Command::Completions { .. } | Command::Man => {
            ExitCode::SUCCESS
        }
    };
    errors::finish(code)
}

impl Command {
    /// The command's name as messages are headed (`tools`, `config
    /// check`), and whether it runs with `--json`.
    fn name_and_json(&self) -> (String, bool) {
        let (name, json) = match self {
            Command::Probe(a) => ("probe", a.show.json),
            Command::Tools(a) => ("tools", a.show.json),
            Command::Pins(cache::PinsCommand::List { json }) => ("pins", *json),
            Command::Pins(_) => ("pins", false),
            Command::Call(a) => ("call", a.show.json),
            Command::Resources(a) => ("resources", a.show.json),
            Command::Read(a) => ("read", a.show.json),
            Command::Prompts(a) => ("prompts", a.show.json),
            Command::Prompt(a) => ("prompt", a.show.json),
            Command::Complete(a) => ("complete", a.show.json),
            Command::Listen(a) => ("listen", a.show.json),
            Command::Config(ConfigCommand::Check { json, .. }) => ("config check", *json),
            Command::Config(ConfigCommand::Show { json, .. }) => ("config show", *json),
            Command::Add(a) => ("add", a.json),
            Command::Remove(a) => ("remove", a.json),
            Command::List(a) => ("list", a.json),
            Command::Login(a) => ("login", a.target.json),
            Command::Logout(a) => ("logout", a.json),
            Command::Auth(auth::AuthCommand::Status { json }) => ("auth status", *json),
            Command::DemoServer { .. } => ("demo-server", false),
            Command::Completions { .. } => ("completions", false),
            Command::Man => ("man", false),
        };
        (name.to_owned(), json)
    }
}

/// A command line clap refused: its message (exit status 2); with
/// `--json` anywhere on it, as the JSON error object on stdout too. Help
/// and the version are printed as asked.
fn command_line_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let command = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    errors::start(&command, json);
    let rendered = e.to_string();
    let mut message = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned();
    term::errln!("{}", rendered.trim_end());
    if let Some(hint) = suggestion(e, &command) {
        term::errln!("mcp: {}", hint.trim_start_matches("; "));
        message.push_str(&hint);
    }
    errors::finish(errors::CliError::usage(message).record())
}

/// "did you mean …" for an unknown command or flag (clap's own
/// suggestions are not built in), from the same clap definitions.
fn suggestion(e: &clap::Error, command: &str) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let unknown = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let cli = cli_command();
    if let Some(name) = unknown(ContextKind::InvalidSubcommand) {
        let names: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
        let hint = mcp_stack_config::suggest::did_you_mean(&name, names.iter().copied());
        return (!hint.is_empty()).then_some(hint);
    }
    let flag = unknown(ContextKind::InvalidArg)?;
    let sub = cli.find_subcommand(command).unwrap_or(&cli);
    let flags: Vec<String> = sub
        .get_arguments()
        .chain(cli.get_arguments())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let hint = mcp_stack_config::suggest::did_you_mean(&flag, flags.iter().map(String::as_str));
    (!hint.is_empty()).then_some(hint)
}

/// Runs a command; a signal closes the servers it started (`signals`).
fn run_async(f: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    signals::run(f)
}

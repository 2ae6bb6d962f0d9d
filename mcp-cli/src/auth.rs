//! `mcp login`, `mcp logout` and `mcp auth status` (the OAuth client the
//! other commands carry is `oauth`'s).
//!
//! `mcp login` is the one place that sends the user to a browser (or prints the URL with `--no-browser`, or runs
//! `--browser-command`, which tests use to follow the redirect).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};
use mcp_stack_auth::agent::{Launcher, LoopbackAgent};
use mcp_stack_auth::client::OAuthClient;
use mcp_stack_auth::store::StoredAuth;
use mcp_stack_config::OAuthSettings;
use mcp_stack_transport::http::HttpOptions;

use crate::errors::CliError;
use crate::oauth::{login_hint, oauth_config, store, store_for};
use crate::output::{Style, printable};
use crate::term::{self, errln, outln};
use serde_json::{Value, json};

/// Which server to log in to.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ServerArgs {
    /// The server's MCP endpoint.
    #[arg(long, value_name = "URL", conflicts_with = "config")]
    pub(crate) url: Option<String>,
    /// A config file (or a folder holding one).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// With --config: the server.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) server: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `mcp login`.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    #[command(flatten)]
    pub(crate) target: ServerArgs,
    /// Print the authorization URL instead of opening a browser (for a
    /// remote shell: open it anywhere, the redirect must reach this machine's
    /// 127.0.0.1, e.g. through an SSH port forward with --callback-port).
    #[arg(long)]
    no_browser: bool,
    /// Run this command with the authorization URL as its last argument
    /// instead of opening the system browser (also MCP_BROWSER).
    #[arg(long, value_name = "CMD")]
    browser_command: Option<String>,
    /// Receive the redirect on this port (default: the config's, else any free one).
    #[arg(long, value_name = "PORT")]
    callback_port: Option<u16>,
    /// Give up waiting for the browser after this many seconds.
    #[arg(long, value_name = "SECS", default_value = "300")]
    timeout: u64,
    /// Scopes to ask for, space-separated (default: what the server asks).
    #[arg(long, value_name = "SCOPES")]
    scopes: Option<String>,
    /// A pre-registered client id (default: the config's, else registration).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
}

/// `mcp auth …`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Which servers have stored logins: issuer, scopes, expiry (no secrets).
    Status {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The OAuth settings for one server, from a config or the command line.
struct Server {
    url: String,
    settings: OAuthSettings,
    hint: String,
    /// The config's proxy for it; else the environment's.
    proxy: mcp_stack_transport::http::Proxy,
}

fn server_of(args: &ServerArgs) -> Result<Server, String> {
    if let Some(url) = &args.url {
        return Ok(Server {
            url: url.clone(),
            settings: OAuthSettings::default(),
            hint: format!(
                "run `mcp login --url {}`",
                mcp_stack_config::redact_url(url)
            ),
            proxy: mcp_stack_transport::http::Proxy::from_env(),
        });
    }
    let (Some(path), Some(name)) = (&args.config, &args.server) else {
        return Err("say which server: --url URL, or --config FILE --server NAME".into());
    };
    let resolved = crate::target::load_config(path, Some(name))?;
    let server = resolved
        .servers
        .get(name)
        .ok_or_else(|| format!("{} has no server {name:?}", path.display()))?;
    let mcp_stack_config::TransportConfig::Http { url, .. } = &server.transport else {
        return Err(format!(
            "{name} is a stdio server: stdio servers take credentials from their environment, not OAuth"
        ));
    };
    Ok(Server {
        url: url.clone(),
        settings: server.oauth.clone().unwrap_or_default(),
        hint: login_hint(url, Some((path, name))),
        proxy: mcp_stack_runtime::http_proxy(server),
    })
}

/// The launcher `mcp login` hands the authorization URL to.
fn launcher(args: &LoginArgs, style: Style) -> Result<Launcher, String> {
    let command = args.browser_command.clone().or_else(|| {
        std::env::var("MCP_BROWSER")
            .ok()
            .filter(|c| !c.trim().is_empty())
    });
    if args.no_browser {
        return Ok(Arc::new(move |url: &str| {
            errln!("Open this URL in a browser to authorize:\n\n  {url}\n");
            Ok(())
        }));
    }
    if let Some(command) = command {
        let words =
            crate::words::split(&command).map_err(|e| format!("--browser-command: {}", e.0))?;
        let Some((program, rest)) = words.split_first() else {
            return Err("--browser-command is empty".into());
        };
        let (program, rest) = (program.clone(), rest.to_vec());
        return Ok(Arc::new(move |url: &str| {
            std::process::Command::new(&program)
                .args(&rest)
                .arg(url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .map(|_| ())
                .map_err(|e| format!("cannot run the browser command `{program}`: {e}"))
        }));
    }
    let _ = style;
    Ok(Arc::new(|url: &str| {
        errln!("Opening the browser to authorize; if it does not open, visit:\n\n  {url}\n");
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else if cfg!(windows) {
            "explorer"
        } else {
            "xdg-open"
        };
        // A missing opener is not fatal: the URL is printed above.
        let _ = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        Ok(())
    }))
}

/// `mcp login`.
pub(crate) async fn login(args: LoginArgs, style: Style) -> ExitCode {
    match login_inner(&args, style).await {
        Ok(entry) if args.target.json => {
            term::print_json(&entry_json(&entry), true);
            ExitCode::SUCCESS
        }
        Ok(entry) => {
            outln!(
                "{} logged in to {} (issuer {})",
                style.ok("✓"),
                printable(&entry.server),
                printable(&entry.issuer)
            );
            if let Some(tokens) = &entry.tokens {
                if !tokens.scopes.is_empty() {
                    outln!("  scopes: {}", printable(&tokens.scopes.join(" ")));
                }
                outln!("  expires: {}", expiry(tokens.expires_at));
                outln!(
                    "  refresh token: {}",
                    if tokens.refresh_token.is_some() {
                        "yes"
                    } else {
                        "no"
                    }
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => CliError::new("auth", e).report(style),
    }
}

async fn login_inner(args: &LoginArgs, style: Style) -> Result<StoredAuth, String> {
    let server = server_of(&args.target)?;
    let mut settings = server.settings.clone();
    if let Some(id) = &args.client_id {
        settings.client_id = Some(id.clone());
    }
    if let Some(scopes) = &args.scopes {
        settings.scopes = Some(scopes.split_whitespace().map(str::to_owned).collect());
    }
    let port = args.callback_port.or(settings.callback_port).unwrap_or(0);
    let agent = LoopbackAgent::new(launcher(args, style)?)
        .port(port)
        .timeout(Duration::from_secs(args.timeout));
    let config = oauth_config(&server.url, &settings, &server.hint);
    let options = HttpOptions::new().proxy(server.proxy.clone());
    let client = OAuthClient::new(
        config,
        &options,
        store_for(Some(&server.settings))?,
        Some(Arc::new(agent)),
    )
    .map_err(|e| e.to_string())?;
    client.login().await.map_err(|e| e.to_string())
}

/// `mcp logout`.
pub(crate) async fn logout(args: &ServerArgs, style: Style) -> ExitCode {
    let result = async {
        let server = server_of(args)?;
        let key = mcp_stack_auth::canonical::canonical_resource(&server.url)
            .map_err(|e| e.to_string())?;
        // The single user's logins (identity "").
        let store = store_for(Some(&server.settings))?;
        let removed = store
            .remove("", &key, None)
            .await
            .map_err(|e| e.to_string())?;
        // The catalogs only a login could fetch go with it: of this server
        // when named in a config, else of every server (the cache knows
        // servers by name, not by URL; a public catalog stays).
        let name = args
            .url
            .is_none()
            .then_some(args.server.as_deref())
            .flatten();
        let forgotten = match crate::cache::dir() {
            Some(dir) => mcp_stack_runtime::persist::forget_private(&dir, name).map_err(|e| {
                format!(
                    "the login was removed, but not the catalogs cached under it ({}): {e}",
                    dir.display()
                )
            })?,
            None => 0,
        };
        Ok::<_, String>((removed, forgotten))
    }
    .await;
    match result {
        Ok((n, forgotten)) if args.json => {
            term::print_json(
                &json!({"removed": n, "cachedCatalogsRemoved": forgotten}),
                true,
            );
            ExitCode::SUCCESS
        }
        Ok((n, forgotten)) => {
            if n == 0 {
                outln!("no stored login for that server");
            } else {
                outln!("{} removed {n} stored login(s)", style.ok("✓"));
            }
            if forgotten > 0 {
                outln!(
                    "{} removed {forgotten} catalog(s) cached under a login",
                    style.ok("✓")
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => CliError::new("auth", e).report(style),
    }
}

/// `mcp auth status`.
pub(crate) async fn status(json: bool, style: Style) -> ExitCode {
    let listed = match store() {
        Ok(s) => s.list().await.map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let entries = match listed {
        Ok(entries) => entries,
        Err(e) => return CliError::new("auth", e).report(style),
    };
    if json {
        let all: Vec<Value> = entries.iter().map(entry_json).collect();
        term::print_json(&Value::Array(all), true);
        return ExitCode::SUCCESS;
    }
    if entries.is_empty() {
        outln!("no stored logins");
        return ExitCode::SUCCESS;
    }
    for e in &entries {
        outln!("{}", style.bold(&printable(&e.server)));
        outln!("  issuer: {}", printable(&e.issuer));
        if let Some(c) = &e.client {
            outln!(
                "  client: {} ({})",
                printable(&c.client_id),
                printable(&c.source)
            );
        }
        match &e.tokens {
            Some(t) => {
                let scopes = if t.scopes.is_empty() {
                    "(none named)".to_string()
                } else {
                    t.scopes.join(" ")
                };
                outln!("  scopes: {}", printable(&scopes));
                outln!("  expires: {}", expiry(t.expires_at));
                outln!(
                    "  refresh token: {}",
                    if t.refresh_token.is_some() {
                        "yes"
                    } else {
                        "no"
                    }
                );
            }
            None => outln!("  tokens: none (log in again)"),
        }
    }
    ExitCode::SUCCESS
}

/// A stored login as JSON (no secrets: whether there is a refresh token,
/// never the token).
fn entry_json(e: &StoredAuth) -> Value {
    json!({
        "server": e.server,
        "issuer": e.issuer,
        "client": e.client.as_ref().map(|c| json!({"clientId": c.client_id, "source": c.source})),
        "scopes": e.tokens.as_ref().map(|t| &t.scopes),
        "expiresAt": e.tokens.as_ref().and_then(|t| t.expires_at),
        "refreshToken": e.tokens.as_ref().map(|t| t.refresh_token.is_some()),
    })
}

fn expiry(at: Option<u64>) -> String {
    let Some(at) = at else {
        return "not stated".into();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if at <= now {
        format!(
            "expired {} ago",
            mcp_stack_transport::describe_duration(Duration::from_secs(now - at))
        )
    } else {
        format!(
            "in {}",
            mcp_stack_transport::describe_duration(Duration::from_secs(at - now))
        )
    }
}

//! The persisted catalog and the tool pins, as the CLI uses them.
//!
//! `--config` commands run their ad-hoc runtime with the user's catalog
//! cache (`$MCP_CACHE_DIR`, else `$XDG_CACHE_HOME/mcp-stack`, else
//! `~/.cache/mcp-stack`), fingerprints keyed by that folder's key so they
//! hold from one run to the next. `mcp tools --config F` answers from it
//! when every server's lists are fresh, saying how old they are;
//! `--refresh` goes to the servers. Tools whose definitions changed since
//! they were pinned are marked; `mcp pins list|approve|reset` manages the
//! pins; `--pinning block|warn|off` picks the policy.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

use mcp_stack_config::FingerprintKey;
use mcp_stack_runtime::persist::pins;
use mcp_stack_runtime::{CatalogCache, PinPolicy};
use serde_json::{Value, json};

use crate::errors::{CliError, usage_error};
use crate::output::{Style, printable};
use crate::term::{self, errln, outln};

/// The policy `--pinning` chose for this run (else `warn`).
static PINNING: OnceLock<PinPolicy> = OnceLock::new();

/// Parses `--pinning`.
pub(crate) fn parse_policy(s: &str) -> Result<PinPolicy, String> {
    PinPolicy::parse(s).ok_or_else(|| format!("`{s}` is not a pinning policy: block, warn or off"))
}

/// Sets this run's pinning policy.
pub(crate) fn set_pinning(policy: Option<PinPolicy>) {
    if let Some(p) = policy {
        let _ = PINNING.set(p);
    }
}

/// The cache folder: `$MCP_CACHE_DIR`, else the user's.
pub(crate) fn dir() -> Option<PathBuf> {
    match std::env::var_os("MCP_CACHE_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => CatalogCache::user_dir(),
    }
}

/// The runtime's cache settings for this run (none without a folder).
pub(crate) fn options() -> Option<CatalogCache> {
    let dir = dir()?;
    let policy = PINNING.get().copied().unwrap_or_default();
    // The CLI closes its servers at once: start them before listing.
    Some(
        CatalogCache::in_dir(dir)
            .pinning(policy)
            .background_connect(false),
    )
}

/// The key fingerprints are made with, so that they hold across runs (the
/// cache folder's; `None`: this run's own, and nothing is found in the cache).
pub(crate) fn key() -> Option<FingerprintKey> {
    let dir = dir()?;
    match mcp_stack_runtime::load_or_create_key(&dir) {
        Ok(k) => Some(k),
        Err(e) => {
            errln!("mcp: the catalog cache is not used: {e}");
            None
        }
    }
}

/// Whether this command's listing may come from a fresh persisted catalog
/// (`mcp tools` without `--refresh`).
static CACHED_LISTING: OnceLock<bool> = OnceLock::new();

/// Lets `mcp tools --config F` answer from the catalog cache when it is
/// fresh (not with `--refresh`).
pub(crate) fn allow_cached_listing(refresh: bool) {
    let _ = CACHED_LISTING.set(!refresh);
}

/// See [`allow_cached_listing`].
pub(crate) fn listing_may_be_cached() -> bool {
    CACHED_LISTING.get().copied().unwrap_or(false)
}

/// `mcp pins …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PinsCommand {
    /// List every server's pinned tools, and those whose definition changed.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve the definition a server now offers for a tool: SERVER__TOOL
    /// (the name `mcp tools --config` shows) or SERVER/TOOL.
    Approve {
        /// The tool.
        name: String,
    },
    /// Forget the pins of one server (or of all): the next listing is
    /// pinned as first seen.
    Reset {
        /// The server (all servers when left out).
        server: Option<String>,
    },
}

/// Runs `mcp pins …`.
pub(crate) fn pins(command: PinsCommand, style: Style) -> ExitCode {
    let Some(dir) = dir() else {
        return usage_error("no cache folder: set MCP_CACHE_DIR, XDG_CACHE_HOME or HOME");
    };
    let io = |e: std::io::Error| {
        CliError::new("config", format!("{}: {e}", dir.display())).report(style)
    };
    match command {
        PinsCommand::List { json } => {
            let all = match pins::list(&dir) {
                Ok(a) => a,
                Err(e) => return io(e),
            };
            if json {
                let v: Vec<Value> = all
                    .iter()
                    .map(|s| {
                        let tools: serde_json::Map<String, Value> = s
                            .tools
                            .iter()
                            .map(|(name, p)| {
                                (
                                    name.clone(),
                                    json!({
                                        "hash": p.hash,
                                        "present": p.present,
                                        "changed": p.offered_hash.is_some(),
                                    }),
                                )
                            })
                            .collect();
                        json!({"server": s.server, "target": s.target, "tools": tools})
                    })
                    .collect();
                term::print_json(&Value::Array(v), true);
                return ExitCode::SUCCESS;
            }
            if all.is_empty() {
                outln!("no pinned tools in {}", dir.display());
            }
            for s in &all {
                outln!(
                    "{} ({})",
                    style.bold(&printable(&s.server)),
                    printable(&s.target)
                );
                for (name, p) in &s.tools {
                    let state = match (p.present, &p.offered, p.offered_hash.is_some()) {
                        (false, _, _) => style.dim("removed"),
                        (true, Some(offered), true) => {
                            let lines =
                                mcp_stack_runtime::persist::definition_diff(&p.definition, offered);
                            let mut s = style.warn("changed, not approved");
                            for l in lines {
                                s.push_str(&format!("\n      {}", printable(&l)));
                            }
                            s
                        }
                        _ => "pinned".to_owned(),
                    };
                    outln!(
                        "  {}  {}  {}",
                        printable(name),
                        style.dim(p.hash.get(..12).unwrap_or_default()),
                        state
                    );
                }
            }
            ExitCode::SUCCESS
        }
        PinsCommand::Approve { name } => {
            let split = name.split_once("__").or_else(|| name.split_once('/'));
            let Some((server, tool)) = split else {
                return usage_error("name the tool as SERVER__TOOL or SERVER/TOOL");
            };
            match pins::approve(&dir, server, tool) {
                Ok(true) => {
                    outln!("approved the new definition of `{}` of `{}`", printable(tool), printable(server));
                    ExitCode::SUCCESS
                }
                Ok(false) => CliError::new(
                    "usage",
                    format!("no changed definition of `{tool}` of `{server}` waits for approval (mcp pins list shows them)"),
                )
                .report(style),
                Err(e) => io(e),
            }
        }
        PinsCommand::Reset { server } => match pins::reset(&dir, server.as_deref()) {
            Ok(n) => {
                outln!("forgot the pins of {n} server(s)");
                ExitCode::SUCCESS
            }
            Err(e) => io(e),
        },
    }
}

/// An age in words: seconds, minutes, hours or days.
pub(crate) fn describe_age(age: std::time::Duration) -> String {
    let s = age.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86400 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86400),
    }
}

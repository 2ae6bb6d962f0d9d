//! `--config`: the commands run through one ad-hoc session of
//! `mcp-stack-runtime` ([`AdHocRuntime`], their [`Servers`]), so tools, resources
//! and prompts carry the namespaced names (`SERVER__TOOL`) an agent sees,
//! and every server of the config starts at once, a failure in one not
//! stopping the others.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_stack_config::{ResolvedConfig, ResolvedServer};
use mcp_stack_runtime::{
    ConnectError, Connector, DefaultConnector, PersistedCatalog, RuntimeCatalog, RuntimeError,
    RuntimeLease, RuntimeManager, RuntimeOptions,
};
use mcp_stack_session::CallOptions;
use mcp_stack_session::types::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool,
};
use mcp_stack_transport::{BoxFuture, Transport};
use serde_json::Value;

use crate::errors::{CliError, usage_error};
use crate::oauth;
use crate::output::{Style, printable, printable_block};
use crate::servers::{Failure, Listed, Listing, Resources, Servers, StderrTail};
use crate::target::load_config_keyed;
use crate::term::errln;
use crate::trace::{TraceOptions, Traced};
use crate::{ShowArgs, TargetArgs};

/// The agent session id of the CLI's one runtime.
const AD_HOC_SESSION: &str = "ad-hoc";

/// A runtime for one session, built at once from a config, with reaping
/// off: the names and routing an agent gets, without the process-wide
/// manager. Call [`close`](Self::close) at the end (dropping it kills the
/// servers without their close sequence).
#[derive(Debug)]
pub(crate) struct AdHocRuntime {
    manager: RuntimeManager,
    source: Source,
}

/// Where the catalog comes from.
#[derive(Debug)]
enum Source {
    /// The servers, connected.
    Live(RuntimeLease),
    /// The persisted catalog, fresh (`mcp tools` without `--refresh`):
    /// nothing is connected, so nothing can be called.
    Persisted(Box<PersistedCatalog>),
}

impl AdHocRuntime {
    /// Starts every server of `config` (concurrently) through `connector`.
    async fn open(
        config: &ResolvedConfig,
        connector: Arc<dyn Connector>,
    ) -> Result<Self, RuntimeError> {
        let mut options = RuntimeOptions::default().idle_ttl(std::time::Duration::ZERO);
        if let Some(cache) = crate::cache::options() {
            options = options.catalog_cache(cache);
        }
        let manager = RuntimeManager::with_connector(options, connector);
        if crate::cache::listing_may_be_cached()
            && let Some(persisted) = manager.persisted_catalog(config).filter(|p| p.fresh)
        {
            return Ok(AdHocRuntime {
                manager,
                source: Source::Persisted(Box::new(persisted)),
            });
        }
        // Before anything starts: a signal disposes of it.
        crate::signals::track_runtime(&manager);
        let lease = manager.acquire(AD_HOC_SESSION, config).await?;
        Ok(AdHocRuntime {
            manager,
            source: Source::Live(lease),
        })
    }

    /// The tools under their namespaced names, and the servers that failed.
    fn catalog(&self) -> &RuntimeCatalog {
        match &self.source {
            Source::Live(lease) => lease.catalog(),
            Source::Persisted(p) => &p.catalog,
        }
    }

    /// The connected runtime (a persisted catalog has none).
    fn live(&self) -> Result<&RuntimeLease, Failure> {
        match &self.source {
            Source::Live(lease) => Ok(lease),
            Source::Persisted(_) => Err(Failure::new(
                "the catalog was read from the cache: nothing is connected",
            )),
        }
    }
}

/// The default connector, with every transport traced when `--trace` asks.
#[derive(Debug)]
struct TracingConnector {
    inner: DefaultConnector,
    trace: TraceOptions,
}

impl Connector for TracingConnector {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            let transport = self.inner.connect(server).await?;
            // The runtime closes it too; a signal during a build must not
            // wait for the runtime to know of it.
            crate::signals::track(&transport);
            if !self.trace.enabled {
                return Ok(transport);
            }
            let traced: Arc<dyn Transport> = Arc::new(Traced::new(transport, self.trace));
            Ok(traced)
        })
    }
}

/// Starts the servers of `--config` (or of `--server` alone), printing
/// which connected and which failed.
pub(crate) async fn open(
    args: &TargetArgs,
    show: ShowArgs,
    style: Style,
) -> Result<AdHocRuntime, ExitCode> {
    let Some(path) = &args.config else {
        return Err(usage_error("--config FILE is needed"));
    };
    let key = crate::cache::key();
    let config = load_config_keyed(path, args.server.as_deref(), key.as_ref())
        .map_err(|e| usage_error(&e))?;
    // Stored OAuth logins for HTTP servers; a missing one names the login.
    let mut inner = DefaultConnector::new();
    if let Ok(store) = oauth::runtime_store(&config) {
        let config_path = path.clone();
        let hint: mcp_stack_runtime::LoginHint = Arc::new(move |server: &ResolvedServer| {
            oauth::login_hint("", Some((&config_path, &server.name)))
        });
        // Every token sent is scrubbed from what is printed.
        let logins = mcp_stack_runtime::StoredLogins::new(store, hint);
        inner = inner.with_authorizers(Arc::new(oauth::ScrubbedSource::new(Arc::new(logins))));
    }
    let connector = TracingConnector {
        inner,
        trace: TraceOptions {
            enabled: show.trace,
            to_stderr: show.json,
            full: show.full,
            style,
        },
    };
    let runtime = AdHocRuntime::open(&config, Arc::new(connector))
        .await
        .map_err(|e| CliError::new("start", e.to_string()).report(style))?;
    if let Source::Persisted(p) = &runtime.source {
        errln!(
            "{} from the catalog cache, {} old (--refresh asks the servers)",
            style.dim("·"),
            crate::cache::describe_age(p.age)
        );
    }
    for s in runtime.catalog().connected() {
        errln!(
            "{} {}: protocol {} over {}",
            style.dim("·"),
            printable(&s.server),
            s.protocol,
            s.transport
        );
    }
    for f in runtime.catalog().failures() {
        errln!("{} {}", style.fail("✗"), printable_block(&f.to_string()));
    }
    Ok(runtime)
}

/// The runtime's notes on its lists, for people, and the tools whose
/// definition is not the one pinned (changed, added, removed: see `mcp pins`).
fn notes(catalog: &RuntimeCatalog) -> Vec<String> {
    let notes = catalog.notes().iter().map(|n| format!("{n:?}"));
    let pins = catalog.pin_reports().iter().map(|r| r.to_string());
    notes.chain(pins).collect()
}

impl Servers for AdHocRuntime {
    fn namespaced(&self) -> bool {
        true
    }

    fn some_failed(&self) -> bool {
        !self.catalog().failures().is_empty()
    }

    fn tools(&self) -> BoxFuture<'_, Result<Listing<Tool>, Failure>> {
        let catalog = self.catalog();
        let items = catalog
            .tools()
            .iter()
            .map(|t| Listed {
                name: t.name().to_owned(),
                origin: Some((t.server().to_owned(), t.tool_name().to_owned())),
                item: Arc::clone(t.tool()),
            })
            .collect();
        let listing = Listing {
            notes: notes(catalog),
            items,
        };
        Box::pin(std::future::ready(Ok(listing)))
    }

    fn resources(&self) -> BoxFuture<'_, Result<Resources, Failure>> {
        let catalog = self.catalog();
        let resources: Vec<Listed<Resource>> = catalog
            .resources()
            .iter()
            .map(|r| Listed {
                name: r.name().to_owned(),
                origin: Some((r.server().to_owned(), r.resource().name.clone())),
                item: Arc::clone(r.resource()),
            })
            .collect();
        let templates = catalog
            .resource_templates()
            .iter()
            .map(|t| Listed {
                name: t.name().to_owned(),
                origin: Some((t.server().to_owned(), t.template_name().to_owned())),
                item: Arc::clone(t.template()),
            })
            .collect();
        let listed = Resources {
            resources: Listing {
                notes: notes(catalog),
                items: resources,
            },
            templates,
        };
        Box::pin(std::future::ready(Ok(listed)))
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Listing<Prompt>, Failure>> {
        let catalog = self.catalog();
        let items = catalog
            .prompts()
            .iter()
            .map(|p| Listed {
                name: p.name().to_owned(),
                origin: Some((p.server().to_owned(), p.prompt().name.clone())),
                item: Arc::clone(p.prompt()),
            })
            .collect();
        let listing = Listing {
            notes: notes(catalog),
            items,
        };
        Box::pin(std::future::ready(Ok(listing)))
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: CallOptions,
        as_task: bool,
    ) -> BoxFuture<'a, Result<CallToolResult, Failure>> {
        Box::pin(async move {
            if as_task {
                return Err(Failure::new(
                    "--task runs a tool on one server: use --stdio, --url or the demo",
                ));
            }
            self.live()?
                .call_tool_with(name, arguments, options)
                .await
                .map_err(|e| {
                    let mut failure = Failure::new(e.to_string());
                    if let RuntimeError::UnknownTool { .. } = e {
                        failure.hints.push(
                            "names are SERVER__TOOL; `mcp tools --config FILE` lists them".into(),
                        );
                    }
                    failure
                })
        })
    }

    fn read_resource<'a>(
        &'a self,
        name_or_uri: &'a str,
    ) -> BoxFuture<'a, Result<ReadResourceResult, Failure>> {
        Box::pin(async move {
            self.live()?
                .read_resource(name_or_uri)
                .await
                .map_err(|e| Failure::new(e.to_string()))
        })
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<GetPromptResult, Failure>> {
        Box::pin(async move {
            self.live()?
                .get_prompt(name, arguments)
                .await
                .map_err(|e| Failure::new(e.to_string()))
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, StderrTail> {
        Box::pin(async move {
            let AdHocRuntime { manager, source } = *self;
            drop(source);
            manager.dispose_all().await;
            Vec::new()
        })
    }
}

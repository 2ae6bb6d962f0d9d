//! What one connected server offers — tools, resources, resource templates,
//! prompts — as last fetched, and fetching it again when the server says a
//! list changed.
//!
//! The lists come from the server's [`Session`], whose own caches hold them
//! until `notifications/…/list_changed` (or a 2026-07-28 server's `ttlMs`);
//! so fetching a list that did not change costs no request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_stack_session::protocol::request::{
    PromptsList, Request as _, ResourcesList, ResourcesTemplatesList,
};
use mcp_stack_session::types::{Prompt, Resource, ResourceTemplate};
use mcp_stack_session::{ServerNotification, Session, SessionError, ToolCatalog};

/// Whether a tool's server can take a call now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolStatus {
    /// Its server is connected.
    Ready,
    /// Listed from the persisted catalog; its server is connecting in the
    /// background, and a call waits for it.
    Connecting,
    /// Listed from the persisted catalog; its server failed to start (the
    /// catalog's [`failures`](crate::RuntimeCatalog::failures) say why). A call
    /// fails at once.
    Unavailable,
}

/// One list beside tools, as last fetched.
#[derive(Debug)]
pub(crate) struct Listed<T> {
    /// The session's cached list the items came from: a fetch that returns
    /// the same one brought nothing new.
    source: Option<Arc<Vec<T>>>,
    pub(crate) items: Vec<Arc<T>>,
    /// Why the last fetch failed, if it did.
    error: Option<String>,
}

impl<T: Clone> Listed<T> {
    fn empty() -> Self {
        Listed {
            source: None,
            items: Vec::new(),
            error: None,
        }
    }

    fn same(&self, other: &Self) -> bool {
        let sources = match (&self.source, &other.source) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        sources && self.error == other.error
    }

    fn kept(&self) -> Self {
        Listed {
            source: self.source.clone(),
            items: self.items.clone(),
            error: self.error.clone(),
        }
    }

    /// The list a fetch gives: new items, the prior ones when nothing
    /// changed, nothing for an undeclared capability, and on a failure the
    /// prior items (if any) with the reason.
    fn from_fetch(
        method: &str,
        fetched: Result<Arc<Vec<T>>, SessionError>,
        prior: Option<&Self>,
    ) -> Self {
        match fetched {
            Ok(source) => match prior {
                Some(p) if p.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, &source)) => Listed {
                    error: None,
                    ..p.kept()
                },
                _ => Listed {
                    items: source.iter().cloned().map(Arc::new).collect(),
                    source: Some(source),
                    error: None,
                },
            },
            // The server does not offer this kind: no entries, nothing to say.
            Err(SessionError::NotSupported(_)) => Listed::empty(),
            Err(e) => match prior {
                Some(p) if p.source.is_some() => Listed {
                    error: Some(format!(
                        "{method} failed: {e}; the list fetched before is kept"
                    )),
                    ..p.kept()
                },
                _ => Listed {
                    error: Some(format!("{method} failed: {e}")),
                    ..Listed::empty()
                },
            },
        }
    }
}

/// Which lists to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Which {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Which {
    pub(crate) const ALL: Which = Which {
        tools: true,
        resources: true,
        prompts: true,
    };

    pub(crate) fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }
}

/// The lists a server said changed since they were last fetched, set by
/// the session's notification listener.
#[derive(Debug, Default)]
pub(crate) struct ChangeFlags {
    tools: AtomicBool,
    resources: AtomicBool,
    prompts: AtomicBool,
}

impl ChangeFlags {
    /// Records a `list_changed` notification; whether it was one.
    pub(crate) fn mark(&self, n: &ServerNotification) -> bool {
        let flag = match n {
            ServerNotification::ToolsListChanged => &self.tools,
            ServerNotification::ResourcesListChanged => &self.resources,
            ServerNotification::PromptsListChanged => &self.prompts,
            _ => return false,
        };
        flag.store(true, Ordering::Release);
        true
    }

    /// The lists marked changed, unmarking them.
    pub(crate) fn take(&self) -> Which {
        Which {
            tools: self.tools.swap(false, Ordering::AcqRel),
            resources: self.resources.swap(false, Ordering::AcqRel),
            prompts: self.prompts.swap(false, Ordering::AcqRel),
        }
    }
}

/// Everything a server offers, as last fetched.
#[derive(Debug)]
pub(crate) struct ServerLists {
    pub(crate) tools: Arc<ToolCatalog>,
    tools_error: Option<String>,
    pub(crate) resources: Listed<Resource>,
    pub(crate) templates: Listed<ResourceTemplate>,
    pub(crate) prompts: Listed<Prompt>,
    /// The tool catalog's diagnostics and the failed fetches, for the
    /// catalog's notes.
    pub(crate) notes: Vec<String>,
    /// Each tool's pin hash by name, computed once (or read from the
    /// persisted record): see [`ServerLists::pin_hashes`].
    pin_hashes: std::sync::OnceLock<std::collections::BTreeMap<String, String>>,
}

impl ServerLists {
    /// Fetches the lists `which` names (tools are given: at start they are
    /// fetched first, and their failure fails the start), keeping the
    /// others from `prior`.
    pub(crate) async fn fetch(
        session: &Session,
        tools: Arc<ToolCatalog>,
        tools_error: Option<String>,
        prior: Option<&ServerLists>,
        which: Which,
    ) -> ServerLists {
        let (resources, templates, prompts) = tokio::join!(
            async {
                match (which.resources, prior) {
                    (false, Some(p)) => p.resources.kept(),
                    _ => Listed::from_fetch(
                        ResourcesList::METHOD,
                        session.list_resources().await,
                        prior.map(|p| &p.resources),
                    ),
                }
            },
            async {
                match (which.resources, prior) {
                    (false, Some(p)) => p.templates.kept(),
                    _ => Listed::from_fetch(
                        ResourcesTemplatesList::METHOD,
                        session.list_resource_templates().await,
                        prior.map(|p| &p.templates),
                    ),
                }
            },
            async {
                match (which.prompts, prior) {
                    (false, Some(p)) => p.prompts.kept(),
                    _ => Listed::from_fetch(
                        PromptsList::METHOD,
                        session.list_prompts().await,
                        prior.map(|p| &p.prompts),
                    ),
                }
            },
        );
        let mut notes: Vec<String> = tools.diagnostics().to_vec();
        notes.extend(tools_error.iter().cloned());
        for error in [&resources.error, &templates.error, &prompts.error]
            .into_iter()
            .flatten()
        {
            notes.push(error.clone());
        }
        ServerLists {
            tools,
            tools_error,
            resources,
            templates,
            prompts,
            notes,
            pin_hashes: std::sync::OnceLock::new(),
        }
    }

    /// Each tool's pin hash ([`definition_hash`](crate::persist::pins::definition_hash))
    /// by name: computed on first use, once per fetched list; a list read
    /// from the persisted catalog has them from its record.
    pub(crate) fn pin_hashes(&self) -> &std::collections::BTreeMap<String, String> {
        self.pin_hashes.get_or_init(|| {
            self.tools
                .iter()
                .filter_map(|t| {
                    let (_, hash) = crate::persist::pins::definition_hash(t)?;
                    Some((t.name.clone(), hash))
                })
                .collect()
        })
    }

    /// The lists a persisted record holds (nothing fetched: no session yet).
    pub(crate) fn from_record(record: crate::persist::ServerRecord) -> ServerLists {
        fn listed<T: Clone>(items: Vec<T>) -> Listed<T> {
            Listed {
                items: items.into_iter().map(Arc::new).collect(),
                // No session list is the source of persisted items; an
                // empty one marks them as listed (a failed fetch keeps
                // them) without a copy of every item.
                source: Some(Arc::new(Vec::new())),
                error: None,
            }
        }
        let hashes = std::sync::OnceLock::new();
        // Trusted only when they cover exactly the record's tools (a record
        // written before they were kept has none: they are computed).
        if record.pin_hashes.len() == record.tools.len()
            && record
                .tools
                .iter()
                .all(|t| record.pin_hashes.contains_key(&t.name))
        {
            let _ = hashes.set(record.pin_hashes);
        }
        let tools = Arc::new(ToolCatalog::new(record.tools, Vec::new()));
        ServerLists {
            notes: tools.diagnostics().to_vec(),
            tools,
            tools_error: None,
            resources: listed(record.resources),
            templates: listed(record.templates),
            prompts: listed(record.prompts),
            pin_hashes: hashes,
        }
    }

    /// A record of these lists, to persist.
    /// `authorized`: fetched with credentials (a configured header, or an
    /// authorizer the connector gave): then the record is private.
    pub(crate) fn to_record(
        &self,
        server: &mcp_stack_config::ResolvedServer,
        session: &Session,
        authorized: bool,
    ) -> crate::persist::ServerRecord {
        let info = session.server().clone();
        let hints = crate::persist::ServerRecord::hints_of(&info);
        fn own<T: Clone>(items: &[Arc<T>]) -> Vec<T> {
            items.iter().map(|i| (**i).clone()).collect()
        }
        crate::persist::ServerRecord {
            server: server.name.clone(),
            fingerprint: server.fingerprint.to_hex(),
            saved_at_ms: crate::persist::now_ms(),
            ttl_ms: hints.map(|h| u64::try_from(h.ttl.as_millis()).unwrap_or(u64::MAX)),
            private: hints.is_some_and(|h| h.private)
                || authorized
                || crate::persist::authorized(server),
            protocol: session.protocol_version().as_str().to_owned(),
            info: serde_json::value::to_raw_value(&info).ok(),
            tools: self.tools.iter().map(|t| (**t).clone()).collect(),
            resources: own(&self.resources.items),
            templates: own(&self.templates.items),
            prompts: own(&self.prompts.items),
            pin_hashes: self.pin_hashes().clone(),
        }
    }

    /// Fetches again what `which` names (through the session's caches).
    pub(crate) async fn refetch(&self, session: &Session, which: Which) -> ServerLists {
        let (tools, tools_error) = if which.tools {
            match session.list_tools().await {
                Ok(t) => (t, None),
                Err(e) => (
                    Arc::clone(&self.tools),
                    Some(format!(
                        "tools/list failed: {e}; the list fetched before is kept"
                    )),
                ),
            }
        } else {
            (Arc::clone(&self.tools), self.tools_error.clone())
        };
        ServerLists::fetch(session, tools, tools_error, Some(self), which).await
    }

    /// Whether `other` holds anything this does not.
    pub(crate) fn same(&self, other: &ServerLists) -> bool {
        Arc::ptr_eq(&self.tools, &other.tools)
            && self.tools_error == other.tools_error
            && self.resources.same(&other.resources)
            && self.templates.same(&other.templates)
            && self.prompts.same(&other.prompts)
    }
}

//! The resources: the catalog (`resources/list`, `resources/templates/list`,
//! `resources/read`) and the state that changes while serving (revisions
//! bumped by `touch_resource`, resources added by `add_resource`, and who
//! listens for those changes).
//!
//! The state is one [`World`] per server: a stdio or in-memory server has
//! its own; an HTTP server shares one among its sessions and its 2026-07-28
//! per-request instances, so that a `touch_resource` call reaches a
//! `subscriptions/listen` stream held open by another request.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use mcp_stack_jsonrpc::Id;
use mcp_stack_protocol::meta;
use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::subscriptions::{SubscriptionFilter, SubscriptionParams};
use mcp_stack_protocol::types::{
    Extra, Resource, ResourceContents, ResourceTemplate, ResourceUpdatedParams,
};
use serde_json::{Map, Value};

use crate::options::ServerOptions;
use crate::outbox::Outbox;
use crate::task_store::TaskStore;

/// The scheme of every resource here.
const TEXT_PREFIX: &str = "test://text/";
const GREETING_PREFIX: &str = "test://greeting/";
const ADDED_PREFIX: &str = "test://added/";
/// A small binary resource whose bytes are not UTF-8.
pub(crate) const BLOB_URI: &str = "test://blob/1";
/// The binary resource sized by [`ServerOptions::blob_bytes`].
pub(crate) const LARGE_BLOB_URI: &str = "test://blob/large";
/// The bytes of [`BLOB_URI`]: a NUL, bytes that never occur in UTF-8 and
/// an invalid sequence.
pub(crate) const BLOB_BYTES: &[u8] = &[0x00, 0x01, 0xfe, 0xff, 0xc3, 0x28, 0x80, 0x7f];

/// The template of the text resources (any positive id reads, the first
/// [`ServerOptions::resource_count`] are listed).
pub(crate) const TEXT_TEMPLATE: &str = "test://text/{id}";
/// The template of the greetings: `test://greeting/bob` reads `Hello, bob!`.
pub(crate) const GREETING_TEMPLATE: &str = "test://greeting/{name}";

/// The names completion offers for a greeting (`name`).
pub(crate) const NAMES: &[&str] = &[
    "alice", "bob", "carol", "dave", "eve", "frank", "grace", "mallory", "trent",
];

/// The resource templates, in `resources/templates/list` order.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate {
            title: Some("Text resource".to_owned()),
            description: Some(
                "Text resource number {id} (any positive integer; the first are listed)."
                    .to_owned(),
            ),
            mime_type: Some("text/plain".to_owned()),
            ..ResourceTemplate::new(TEXT_TEMPLATE, "text")
        },
        ResourceTemplate {
            title: Some("Greeting".to_owned()),
            description: Some("Greets {name}: \"Hello, {name}!\".".to_owned()),
            mime_type: Some("text/plain".to_owned()),
            ..ResourceTemplate::new(GREETING_TEMPLATE, "greeting")
        },
    ]
}

/// What a URI names, when it names something this server has.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    Text(u64),
    Blob,
    LargeBlob,
    Greeting(String),
    Added(u64),
}

/// A positive decimal number written the one way (no sign, no leading zero).
fn canonical_number(s: &str) -> Option<u64> {
    let n: u64 = s.parse().ok()?;
    (n > 0 && n.to_string() == s).then_some(n)
}

/// `%XX` escapes decoded; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// Changes that matter to listeners.
enum Change<'a> {
    /// A resource's contents changed.
    Updated(&'a str),
    /// A resource was added.
    ListChanged,
}

/// Who listens for changes.
#[derive(Debug)]
enum ListenerKind {
    /// A connection that sent `initialize` (before 2026-07-28): resource
    /// list changes, and updates of the URIs it subscribed to.
    Legacy { uris: BTreeSet<String> },
    /// A 2026-07-28 `subscriptions/listen` request, with what was granted.
    Listen { id: Id, granted: SubscriptionFilter },
}

#[derive(Debug)]
struct Listener {
    conn: u64,
    outbox: Outbox,
    kind: ListenerKind,
}

#[derive(Debug, Default)]
struct State {
    /// How often each resource was touched (absent: never; revision 1).
    touches: BTreeMap<String, u64>,
    /// Resources added by `add_resource`: `test://added/1` … `/N`.
    added: u64,
    listeners: BTreeMap<u64, Listener>,
    next_key: u64,
}

/// The resources of one server and who listens for their changes.
#[derive(Debug)]
pub(crate) struct World {
    resource_count: usize,
    blob_bytes: usize,
    /// `test://blob/large`'s contents, encoded once.
    large_blob: OnceLock<ResourceContents>,
    state: Mutex<State>,
    /// Held while announcing a change and while a subscription opens, so
    /// that no notification of a subscription goes out before its
    /// acknowledgment.
    order: tokio::sync::Mutex<()>,
    /// The tasks (both designs).
    pub(crate) tasks: TaskStore,
}

impl World {
    pub(crate) fn new(options: &ServerOptions) -> Self {
        World {
            resource_count: options.resource_count,
            blob_bytes: options.blob_bytes,
            large_blob: OnceLock::new(),
            state: Mutex::default(),
            order: tokio::sync::Mutex::new(()),
            tasks: TaskStore::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new key for a connection (or a listener).
    pub(crate) fn next_key(&self) -> u64 {
        let mut state = self.state();
        state.next_key += 1;
        state.next_key
    }

    /// How many resources `resources/list` shows in all.
    pub(crate) fn len(&self) -> usize {
        let added = usize::try_from(self.state().added).unwrap_or(usize::MAX);
        self.resource_count.saturating_add(2).saturating_add(added)
    }

    /// The listed resource at `index` (in list order: the text resources,
    /// the two blobs, then those added).
    pub(crate) fn resource_at(&self, index: usize) -> Option<Resource> {
        let text = |n: u64| Resource {
            title: Some(format!("Text resource {n}")),
            mime_type: Some("text/plain".to_owned()),
            ..Resource::new(format!("{TEXT_PREFIX}{n}"), format!("text-{n}"))
        };
        let count = self.resource_count;
        if index < count {
            return Some(text(index as u64 + 1));
        }
        match index - count {
            0 => Some(Resource {
                title: Some("Binary resource".to_owned()),
                description: Some("A few bytes that are not UTF-8.".to_owned()),
                mime_type: Some("application/octet-stream".to_owned()),
                size: Some(BLOB_BYTES.len() as u64),
                ..Resource::new(BLOB_URI, "blob-1")
            }),
            1 => Some(Resource {
                title: Some("Large binary resource".to_owned()),
                description: Some("Its size is set with --blob-bytes.".to_owned()),
                mime_type: Some("application/octet-stream".to_owned()),
                size: Some(self.blob_bytes as u64),
                ..Resource::new(LARGE_BLOB_URI, "blob-large")
            }),
            n => {
                let k = (n - 1) as u64;
                (k <= self.state().added).then(|| Resource {
                    title: Some(format!("Added resource {k}")),
                    mime_type: Some("text/plain".to_owned()),
                    ..Resource::new(format!("{ADDED_PREFIX}{k}"), format!("added-{k}"))
                })
            }
        }
    }

    /// What `uri` names, if anything.
    fn known(&self, uri: &str) -> Option<Known> {
        if let Some(id) = uri.strip_prefix(TEXT_PREFIX) {
            return canonical_number(id).map(Known::Text);
        }
        if let Some(name) = uri.strip_prefix(GREETING_PREFIX) {
            return percent_decode(name)
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .map(Known::Greeting);
        }
        if let Some(k) = uri.strip_prefix(ADDED_PREFIX) {
            return canonical_number(k)
                .filter(|k| *k <= self.state().added)
                .map(Known::Added);
        }
        match uri {
            BLOB_URI => Some(Known::Blob),
            LARGE_BLOB_URI => Some(Known::LargeBlob),
            _ => None,
        }
    }

    /// Whether `uri` can be read.
    pub(crate) fn exists(&self, uri: &str) -> bool {
        self.known(uri).is_some()
    }

    /// A resource's revision: 1, plus one per touch.
    fn revision(&self, uri: &str) -> u64 {
        self.state().touches.get(uri).copied().unwrap_or(0) + 1
    }

    /// The contents of `uri`; `None` when there is no such resource.
    pub(crate) fn read(&self, uri: &str) -> Option<ResourceContents> {
        let text = |text: String| {
            let mut contents = ResourceContents::text(uri, text);
            if let ResourceContents::Text(t) = &mut contents {
                t.mime_type = Some("text/plain".to_owned());
            }
            contents
        };
        let revised = |base: String| match self.revision(uri) {
            1 => base,
            n => format!("{base} (revision {n})"),
        };
        Some(match self.known(uri)? {
            Known::Text(n) => text(revised(format!("This is text resource {n}."))),
            Known::Added(k) => text(revised(format!("This is added resource {k}."))),
            Known::Greeting(name) => text(revised(format!("Hello, {name}!"))),
            Known::Blob => octets(ResourceContents::blob(uri, BLOB_BYTES)),
            Known::LargeBlob => self
                .large_blob
                .get_or_init(|| {
                    let bytes: Vec<u8> = (0..self.blob_bytes).map(|i| (i % 251) as u8).collect();
                    octets(ResourceContents::blob(uri, &bytes))
                })
                .clone(),
        })
    }

    /// `touch_resource`: a new revision of `uri`, announced to whoever
    /// subscribed to it. `None` when there is no such resource.
    pub(crate) async fn touch(&self, uri: &str) -> Option<u64> {
        if !self.exists(uri) {
            return None;
        }
        let revision = {
            let mut state = self.state();
            let touches = state.touches.entry(uri.to_owned()).or_default();
            *touches += 1;
            *touches + 1
        };
        self.announce(Change::Updated(uri)).await;
        Some(revision)
    }

    /// `add_resource`: one more resource (its URI), announced to whoever
    /// listens for list changes.
    pub(crate) async fn add(&self) -> String {
        let k = {
            let mut state = self.state();
            state.added += 1;
            state.added
        };
        self.announce(Change::ListChanged).await;
        format!("{ADDED_PREFIX}{k}")
    }

    /// Sends each listener concerned its notification (outside the lock:
    /// sending waits while a writer is full).
    async fn announce(&self, change: Change<'_>) {
        let _order = self.order.lock().await;
        let mut sends = Vec::new();
        for listener in self.state().listeners.values() {
            let subscription = match &listener.kind {
                ListenerKind::Legacy { uris } => match change {
                    Change::Updated(uri) if uris.contains(uri) => None,
                    Change::ListChanged => None,
                    Change::Updated(_) => continue,
                },
                ListenerKind::Listen { id, granted } => {
                    let wanted = match change {
                        Change::Updated(uri) => granted
                            .resource_subscriptions
                            .as_ref()
                            .is_some_and(|uris| uris.iter().any(|u| u == uri)),
                        Change::ListChanged => granted.resources_list_changed == Some(true),
                    };
                    if !wanted {
                        continue;
                    }
                    Some(id)
                }
            };
            let mut extra = Extra::new();
            if let Some(id) = subscription {
                let mut m = Map::new();
                m.insert(
                    meta::SUBSCRIPTION_ID.to_owned(),
                    serde_json::to_value(id).unwrap_or_default(),
                );
                extra.insert(meta::KEY.to_owned(), Value::Object(m));
            }
            let (method, params) = match change {
                Change::Updated(uri) => (
                    notification::ResourcesUpdated::METHOD,
                    serde_json::to_value(ResourceUpdatedParams {
                        uri: uri.to_owned(),
                        extra,
                    })
                    .unwrap_or_default(),
                ),
                Change::ListChanged => (
                    notification::ResourcesListChanged::METHOD,
                    Value::Object(extra),
                ),
            };
            sends.push((listener.outbox.clone(), method, params));
        }
        for (outbox, method, params) in sends {
            outbox.notify(method, &params).await;
        }
    }

    /// Connection `conn` speaks the handshake: it hears of list changes
    /// (and, once it subscribes, of updates).
    pub(crate) fn register_legacy(&self, conn: u64, outbox: &Outbox) {
        let mut state = self.state();
        let exists = state
            .listeners
            .values()
            .any(|l| l.conn == conn && matches!(l.kind, ListenerKind::Legacy { .. }));
        if !exists {
            state.next_key += 1;
            let key = state.next_key;
            state.listeners.insert(
                key,
                Listener {
                    conn,
                    outbox: outbox.clone(),
                    kind: ListenerKind::Legacy {
                        uris: BTreeSet::new(),
                    },
                },
            );
        }
    }

    /// `resources/subscribe` (`true`) or `resources/unsubscribe` of `uri`
    /// by connection `conn`.
    pub(crate) fn subscribe(&self, conn: u64, outbox: &Outbox, uri: &str, on: bool) {
        self.register_legacy(conn, outbox);
        let mut state = self.state();
        for listener in state.listeners.values_mut() {
            if listener.conn == conn
                && let ListenerKind::Legacy { uris } = &mut listener.kind
            {
                if on {
                    uris.insert(uri.to_owned());
                } else {
                    uris.remove(uri);
                }
            }
        }
    }

    /// A `subscriptions/listen` stream (request `id` of connection `conn`)
    /// opens: registered with what it was granted, then acknowledged, before
    /// any change is announced to it.
    pub(crate) async fn listen(
        &self,
        conn: u64,
        outbox: &Outbox,
        id: &Id,
        granted: SubscriptionFilter,
    ) {
        let _order = self.order.lock().await;
        {
            let mut state = self.state();
            state.next_key += 1;
            let key = state.next_key;
            state.listeners.insert(
                key,
                Listener {
                    conn,
                    outbox: outbox.clone(),
                    kind: ListenerKind::Listen {
                        id: id.clone(),
                        granted: granted.clone(),
                    },
                },
            );
        }
        outbox
            .notify(
                notification::SubscriptionsAcknowledged::METHOD,
                &SubscriptionParams::acknowledgment(id, granted),
            )
            .await;
    }

    /// The `subscriptions/listen` request `id` of connection `conn` ended.
    pub(crate) fn unlisten(&self, conn: u64, id: &Id) {
        self.state().listeners.retain(|_, l| {
            !(l.conn == conn && matches!(&l.kind, ListenerKind::Listen { id: i, .. } if i == id))
        });
    }

    /// Connection `conn` ended: it listens no more.
    pub(crate) fn forget(&self, conn: u64) {
        self.state().listeners.retain(|_, l| l.conn != conn);
    }
}

/// Binary contents are `application/octet-stream`.
fn octets(mut contents: ResourceContents) -> ResourceContents {
    if let ResourceContents::Blob(b) = &mut contents {
        b.mime_type = Some("application/octet-stream".to_owned());
    }
    contents
}

/// Up to 100 of `candidates` that start with `prefix` (ignoring ASCII
/// case), with how many match in all.
pub(crate) fn complete<'a>(
    candidates: impl IntoIterator<Item = std::borrow::Cow<'a, str>>,
    prefix: &str,
) -> mcp_stack_protocol::types::Completion {
    const MAX: usize = 100;
    let prefix = prefix.to_ascii_lowercase();
    let mut values = Vec::new();
    let mut total: u64 = 0;
    for c in candidates {
        if c.to_ascii_lowercase().starts_with(&prefix) {
            total += 1;
            if values.len() < MAX {
                values.push(c.into_owned());
            }
        }
    }
    mcp_stack_protocol::types::Completion {
        has_more: Some(total > values.len() as u64),
        total: Some(total),
        values,
    }
}

impl World {
    /// Completion of a template's variable; `None` for a template or a
    /// variable this server does not have.
    pub(crate) fn complete_template(
        &self,
        template: &str,
        variable: &str,
        prefix: &str,
    ) -> Option<mcp_stack_protocol::types::Completion> {
        match (template, variable) {
            (TEXT_TEMPLATE, "id") => Some(complete(
                (1..=self.resource_count).map(|n| n.to_string().into()),
                prefix,
            )),
            (GREETING_TEMPLATE, "name") => {
                Some(complete(NAMES.iter().map(|n| (*n).into()), prefix))
            }
            _ => None,
        }
    }

    /// Whether a template with this pattern exists.
    pub(crate) fn has_template(template: &str) -> bool {
        template == TEXT_TEMPLATE || template == GREETING_TEMPLATE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(count: usize) -> World {
        World::new(&ServerOptions {
            resource_count: count,
            blob_bytes: 300,
            ..ServerOptions::default()
        })
    }

    #[test]
    fn list_order_and_reads() {
        let w = world(2);
        let uris: Vec<String> = (0..w.len())
            .map(|i| w.resource_at(i).unwrap().uri)
            .collect();
        assert_eq!(
            uris,
            ["test://text/1", "test://text/2", BLOB_URI, LARGE_BLOB_URI]
        );
        assert!(w.resource_at(4).is_none());
        // Every listed resource reads.
        for uri in &uris {
            assert_eq!(w.read(uri).unwrap().uri(), Some(uri.as_str()));
        }
        assert_eq!(
            w.read("test://text/7").unwrap().as_text(),
            Some("This is text resource 7.")
        );
        let ResourceContents::Blob(b) = w.read(BLOB_URI).unwrap() else {
            panic!("not a blob")
        };
        assert_eq!(b.bytes().unwrap(), BLOB_BYTES);
        // (That they are not UTF-8 the compiler checks: `invalid_from_utf8`.)
        let ResourceContents::Blob(b) = w.read(LARGE_BLOB_URI).unwrap() else {
            panic!("not a blob")
        };
        assert_eq!(b.bytes().unwrap().len(), 300);
        assert_eq!(
            w.read("test://greeting/bob").unwrap().as_text(),
            Some("Hello, bob!")
        );
        assert_eq!(
            w.read("test://greeting/Ada%20L").unwrap().as_text(),
            Some("Hello, Ada L!")
        );
        for missing in [
            "test://text/0",
            "test://text/01",
            "test://text/x",
            "test://greeting/",
            "test://greeting/%zz",
            "test://blob/2",
            "test://added/1",
            "file:///etc/passwd",
        ] {
            assert!(w.read(missing).is_none(), "{missing}");
        }
    }

    #[tokio::test]
    async fn touches_and_additions_change_what_is_served() {
        let w = world(1);
        assert_eq!(w.touch("test://text/1").await, Some(2));
        assert_eq!(
            w.read("test://text/1").unwrap().as_text(),
            Some("This is text resource 1. (revision 2)")
        );
        assert_eq!(w.touch("test://nothing").await, None);
        assert_eq!(w.len(), 3);
        assert_eq!(w.add().await, "test://added/1");
        assert_eq!(w.len(), 4);
        assert_eq!(w.resource_at(3).unwrap().uri, "test://added/1");
        assert!(w.exists("test://added/1"));
    }

    #[test]
    fn completion_is_filtered_capped_and_counted() {
        let w = world(250);
        let c = w.complete_template(TEXT_TEMPLATE, "id", "1").unwrap();
        // 1, 10–19, 100–199.
        assert_eq!(c.total, Some(111));
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.has_more, Some(true));
        assert_eq!(c.values.first().map(String::as_str), Some("1"));
        let c = w.complete_template(GREETING_TEMPLATE, "name", "M").unwrap();
        assert_eq!(c.values, ["mallory"]);
        assert_eq!((c.total, c.has_more), (Some(1), Some(false)));
        assert!(w.complete_template(GREETING_TEMPLATE, "id", "").is_none());
        assert!(w.complete_template("test://{x}", "x", "").is_none());
    }
}

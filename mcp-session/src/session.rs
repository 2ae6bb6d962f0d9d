//! One client connection: the handle, and the operations on it (tools,
//! resources, subscriptions, diagnostics).

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_jsonrpc::{Id, Message, Notification, RawJson};
use mcp_transport::{SendContext, Transport};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use mcp_protocol::meta::RequestMeta;
use mcp_protocol::results::{InputRequest, InputRequiredResult, ResultType};
use mcp_protocol::tasks::extension::DetailedTask;
use mcp_protocol::tasks::{CreateTaskResult, TaskMetadata};
use mcp_protocol::types::{
    CallToolResult, InitializeResult, ListToolsResult, ReadResourceResult, Tool,
};
use mcp_protocol::{ProtocolVersion, codes as mcp_codes, methods, x_mcp_header};

use crate::config::{CallOptions, Diagnostics, SessionConfig};
use crate::error::SessionError;
use crate::parse::{CallMeta, CallParams, ResultShape, parse_result, to_raw_params};
use crate::pending::Deadline;
use crate::reader::{ClosedInfo, Shared};
use crate::subscriptions::{Subscription, SubscriptionEvent, SubscriptionFilter};
use crate::tasks::{StartedTask, TaskHandle};
use crate::tools::{CatalogTool, Checked, ToolCatalog};

/// The catalog and how long it stays fresh.
pub(crate) struct CachedCatalog {
    pub(crate) catalog: Arc<ToolCatalog>,
    /// `None`: until the server says the list changed (legacy servers send
    /// no TTL). `Some`: the modern server's `ttlMs` from the fetch.
    pub(crate) fresh_until: Option<Instant>,
    /// The count of list changes the fetch started at (`catalog_changes`).
    pub(crate) changes: u64,
}

/// The session handle's state. Dropping the last handle stops the reader
/// task, which drops the transport (a stdio transport then kills its child).
pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) reader: JoinHandle<()>,
    pub(crate) next_id: AtomicI64,
    pub(crate) config: SessionConfig,
    /// The server's `initialize` result, shared with every connection
    /// that got an identical one (see `intern`).
    pub(crate) init: Arc<InitializeResult>,
    pub(crate) version: ProtocolVersion,
    /// Per-request metadata, for a modern session.
    pub(crate) meta: Option<RequestMeta>,
    /// The tools catalog, read without waiting on every call.
    pub(crate) catalog: std::sync::RwLock<Option<CachedCatalog>>,
    /// Held while the catalog is fetched: concurrent callers wait for one
    /// fetch instead of each making their own.
    pub(crate) catalog_fetch: tokio::sync::Mutex<()>,
    pub(crate) call_gate: tokio::sync::Mutex<()>,
    /// The cached lists beside tools, made on first use (most connections
    /// of a runtime never list resources or prompts).
    pub(crate) features: OnceLock<Box<crate::features::FeatureCaches>>,
}

impl Inner {
    /// The caches of the lists beside tools.
    pub(crate) fn features(&self) -> &crate::features::FeatureCaches {
        self.features.get_or_init(Box::default)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
        self.shared.server_requests.abort_all();
    }
}

/// One MCP client connection.
///
/// Cheap to clone; all clones share the connection. Requests may be made
/// concurrently from any number of tasks.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.inner.config.server_name)
            .field("version", &self.inner.version)
            .field("transport", &self.inner.transport.kind())
            .finish_non_exhaustive()
    }
}

/// What a `tools/call` came to.
pub(crate) enum CallAnswer {
    /// The result (its output not yet checked), and the catalog to check it with.
    Complete(CallToolResult, Arc<ToolCatalog>),
    /// A task, whose result comes later.
    Task(StartedTask),
}

/// Leaves out the tools whose `x-mcp-header` annotations are invalid, as
/// the 2026-07-28 spec requires over HTTP; says why for each.
pub(crate) fn drop_invalid_header_tools(server: &str, tools: &mut Vec<Tool>) -> Vec<String> {
    let mut diagnostics = Vec::new();
    tools.retain(|tool| match x_mcp_header::annotations(&tool.input_schema) {
        Ok(_) => true,
        Err(why) => {
            tracing::warn!(server, tool = %tool.name, "tool left out: {why}");
            diagnostics.push(format!(
                "tool `{}` left out: {why} (the 2026-07-28 spec excludes tools with invalid \
                 x-mcp-header annotations)",
                tool.name
            ));
            false
        }
    });
    diagnostics
}

/// Whether an error answer to `resources/read` of `uri` says the resource
/// does not exist: -32002 (before 2026-07-28), or -32602 naming the URI in
/// its data or saying "not found" (an invalid-params error about something
/// else stays a protocol error).
pub(crate) fn is_not_found(error: &mcp_jsonrpc::ErrorObject, uri: &str) -> bool {
    if error.code == mcp_codes::RESOURCE_NOT_FOUND {
        return true;
    }
    if error.code != mcp_jsonrpc::codes::INVALID_PARAMS {
        return false;
    }
    let data: Option<Value> = error.data_as().and_then(Result::ok);
    data.as_ref()
        .and_then(|d| d.get("uri"))
        .and_then(Value::as_str)
        == Some(uri)
        || error.message.to_ascii_lowercase().contains("not found")
}

/// `base` with the `Mcp-Param-*` headers of a call, for the transport.
pub(crate) fn param_context(
    base: SendContext,
    params: &[x_mcp_header::HeaderParam],
    arguments: &Value,
) -> SendContext {
    x_mcp_header::param_values(params, arguments)
        .into_iter()
        .fold(base, |c, (name, value)| c.param_header(name, value))
}

impl Session {
    /// What the server said about itself in `initialize`.
    pub fn server(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// The configuration the session runs with.
    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }

    /// The transport underneath (for its stderr tail or exit status).
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.inner.transport
    }

    /// Sends a request with JSON parameters and returns the raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, SessionError> {
        // What a 2026-07-28 request mirrors as `Mcp-Name`, when it has one.
        let context = match x_mcp_header::name_field(method)
            .and_then(|field| params.as_ref()?.get(field)?.as_str())
        {
            Some(name) => self.inner.named_context(name),
            None => self.inner.context(),
        };
        let raw = match (params, &self.inner.meta) {
            (Some(p), _) => Some(self.inner.params(method, &p)?),
            (None, Some(_)) => Some(self.inner.params(method, &json!({}))?),
            (None, None) => None,
        };
        let id = self.inner.next_id();
        let timeout = timeout.unwrap_or(self.inner.config.request_timeout);
        self.inner
            .request_raw(id, method, raw, timeout, None, &context)
            .await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SessionError> {
        let raw = params.map(|p| to_raw_params(method, &p)).transpose()?;
        let message = Message::Notification(Notification::new(method, raw));
        let context = self.inner.context();
        Ok(self.inner.transport.send_with(&message, &context).await?)
    }

    /// Checks the server answers: `ping`, or `server/discover` for a modern
    /// server (2026-07-28 has no `ping`).
    pub async fn ping(&self) -> Result<(), SessionError> {
        let method = if !self.inner.version.has_ping() {
            methods::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.request(method, None, None).await.map(|_| ())
    }

    /// Subscribes to the notifications in `filter` and waits (up to the
    /// request timeout) for the acknowledgment: on 2026-07-28 a
    /// `subscriptions/listen` stream; before it, `resources/subscribe` for
    /// each resource and the list changes the server declares (see
    /// [`crate::subscriptions`]). [`Subscription::acknowledged`] says what
    /// was granted.
    ///
    /// The subscription holds the session open while it lives.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, SessionError> {
        if self.inner.version.listening() == mcp_protocol::Listening::Subscribe {
            return self.listen_locally(filter).await;
        }
        let method = methods::SUBSCRIPTIONS_LISTEN;
        let raw = self
            .inner
            .params(method, &json!({ "notifications": filter }))?;
        let id = self.inner.next_id();
        let subscribers = Arc::clone(&self.inner.shared.subscribers);
        let events = subscribers.insert(id.id(), Arc::clone(&self.inner.shared.dropped));
        let inner = Arc::clone(&self.inner);
        let request_id = id;
        let task = tokio::spawn(async move {
            // The stream lasts until either side ends it: no deadline.
            let forever = Duration::from_secs(100 * 365 * 24 * 3600);
            let context = inner.context();
            let outcome = inner
                .request_raw(request_id, method, Some(raw), forever, None, &context)
                .await
                .map(drop);
            inner.shared.subscribers.end(&request_id.id(), outcome);
        });
        // Built first: dropping it on a failure below cancels the request.
        let mut subscription = Subscription {
            id: id.id(),
            acknowledged: SubscriptionFilter::default(),
            events,
            task,
            subscribers,
            ended: false,
            on_drop: None,
        };
        let timeout = self.inner.config.request_timeout;
        let acknowledged = tokio::time::timeout(timeout, async {
            loop {
                match subscription.events.recv().await {
                    Some(SubscriptionEvent::Acknowledged(filter)) => return Ok(filter),
                    // The spec puts the acknowledgment first; tolerate one late.
                    Some(SubscriptionEvent::Notification(_)) => continue,
                    Some(SubscriptionEvent::Ended(Ok(()))) => {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: "the server ended the subscription before acknowledging it"
                                .into(),
                        });
                    }
                    Some(SubscriptionEvent::Ended(Err(e))) => return Err(e),
                    None => return Err(SessionError::Closed),
                }
            }
        })
        .await;
        match acknowledged {
            Ok(Ok(filter)) => {
                subscription.acknowledged = filter;
                Ok(subscription)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(SessionError::timeout(
                format!("{method} (waiting for its acknowledgment)"),
                crate::error::TimeoutKind::Request,
                timeout,
                timeout,
            )),
        }
    }

    /// [`listen`](Self::listen) before 2026-07-28.
    async fn listen_locally(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, SessionError> {
        let caps = &self.inner.init.capabilities;
        let asked = |flag: Option<bool>| flag == Some(true);
        let mut granted = SubscriptionFilter::new();
        if asked(filter.tools_list_changed)
            && caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true)
        {
            granted = granted.tools_list_changed();
        }
        if asked(filter.resources_list_changed)
            && caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true)
        {
            granted = granted.resources_list_changed();
        }
        if asked(filter.prompts_list_changed)
            && caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true)
        {
            granted = granted.prompts_list_changed();
        }
        let can_subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        let mut subscribed = Vec::new();
        for uri in filter.resource_subscriptions.iter().flatten() {
            if !can_subscribe {
                break;
            }
            self.subscribe_resource(uri).await?;
            subscribed.push(uri.clone());
            granted = granted.resource(uri.clone());
        }
        let id = Id::from(format!("local-subscription-{}", self.inner.next_id()));
        let events = self.inner.shared.subscribers.insert_local(
            id.clone(),
            granted.clone(),
            Arc::clone(&self.inner.shared.dropped),
        );
        // Unsubscribing on drop needs the session; the task holds it.
        let session = self.clone();
        let on_drop: Box<dyn FnOnce() + Send + Sync> = Box::new(move || {
            if subscribed.is_empty() {
                return;
            }
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    for uri in subscribed {
                        let _ = session.unsubscribe_resource(&uri).await;
                    }
                });
            }
        });
        Ok(Subscription {
            id,
            acknowledged: granted,
            events,
            task: tokio::spawn(async {}),
            subscribers: Arc::clone(&self.inner.shared.subscribers),
            ended: false,
            on_drop: Some(on_drop),
        })
    }

    /// The tool catalog: cached, fetched (every page) when missing or marked
    /// stale by `notifications/tools/list_changed`.
    ///
    /// A server without the `tools` capability yields an empty catalog with
    /// a diagnostic, and no request is sent.
    pub async fn list_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.catalog(true).await
    }

    /// The catalog, fetched when missing or invalidated by
    /// `notifications/tools/list_changed`; when `honour_ttl`, also when a
    /// modern server's `ttlMs` has run out. (A call only needs the schemas to
    /// check its arguments, so it uses a catalog past its TTL rather than
    /// fetching before every call.)
    pub(crate) async fn catalog(&self, honour_ttl: bool) -> Result<Arc<ToolCatalog>, SessionError> {
        // The common case, every call: a current catalog, read under a
        // shared lock that is never held across an await.
        let changes = &self.inner.shared.catalog_changes;
        if let Some(catalog) = self.cached_catalog(honour_ttl, changes.load(Ordering::Acquire)) {
            return Ok(catalog);
        }
        let _fetching = self.inner.catalog_fetch.lock().await;
        let seen = changes.load(Ordering::Acquire);
        if let Some(catalog) = self.cached_catalog(honour_ttl, seen) {
            // Fetched by the caller we waited for.
            return Ok(catalog);
        }
        let fetched = self.fetch_tools().await;
        let mut cached = self
            .inner
            .catalog
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match fetched {
            Ok((catalog, ttl)) => {
                let catalog = Arc::new(catalog);
                // A change announced during the fetch leaves it stale.
                *cached = Some(CachedCatalog {
                    catalog: Arc::clone(&catalog),
                    fresh_until: ttl.map(|ttl| Instant::now() + ttl),
                    changes: seen,
                });
                Ok(catalog)
            }
            Err(e) => {
                // The change is used up all the same: later calls go on
                // with the catalog they had, rather than each failing on
                // a server whose `tools/list` fails.
                if let Some(c) = cached.as_mut() {
                    c.changes = seen;
                }
                Err(e)
            }
        }
    }

    /// The cached catalog, unless there is none, the tools list changed
    /// since it was fetched (`changes` is the current count), or (with
    /// `honour_ttl`) its TTL ran out.
    fn cached_catalog(&self, honour_ttl: bool, changes: u64) -> Option<Arc<ToolCatalog>> {
        let cached = self
            .inner
            .catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let c = cached.as_ref().filter(|c| c.changes == changes)?;
        let expired = honour_ttl && c.fresh_until.is_some_and(|t| Instant::now() >= t);
        (!expired).then(|| Arc::clone(&c.catalog))
    }

    /// Fetches the catalog again, whatever the cache holds.
    pub async fn refresh_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.inner
            .shared
            .catalog_changes
            .fetch_add(1, Ordering::AcqRel);
        self.list_tools().await
    }

    /// Every page of `tools/list`, and (for a modern server) how long the
    /// result stays fresh: the shortest `ttlMs` of its pages, 0 when absent.
    pub(crate) async fn fetch_tools(
        &self,
    ) -> Result<(ToolCatalog, Option<Duration>), SessionError> {
        if self.inner.init.capabilities.tools.is_none() {
            let why = "tools/list is empty: the server did not declare the `tools` capability, so it offers no tools";
            return Ok((ToolCatalog::new(Vec::new(), vec![why.to_string()]), None));
        }
        let (mut tools, ttl) = self.pages::<ListToolsResult>(methods::TOOLS_LIST).await?;
        let diagnostics = if self.inner.mirrors_headers() {
            drop_invalid_header_tools(&self.inner.config.server_name, &mut tools)
        } else {
            Vec::new()
        };
        Ok((ToolCatalog::new(tools, diagnostics), ttl))
    }

    /// Calls a tool with the session's defaults.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, SessionError> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// Calls a tool.
    ///
    /// The arguments are checked against the tool's input schema first; on a
    /// mismatch nothing is sent and the error names each field. A result
    /// with `isError: true` is `Ok`: the tool ran and reported a failure.
    /// `structuredContent` is checked against the tool's output schema.
    ///
    /// A 2026-07-28 server with the tasks extension may answer with a task
    /// instead of the result: the call then polls it to its end and returns
    /// its result, within the call's timeout, which each change of the
    /// task's state extends (like progress) up to `max_total_timeout`.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, SessionError> {
        let start = Instant::now();
        let timeout = options.timeout.unwrap_or(self.inner.config.request_timeout);
        match self.call_inner(name, &arguments, &options, None).await? {
            CallAnswer::Complete(result, catalog) => self.checked_output(&catalog, name, result),
            CallAnswer::Task(started) => {
                tracing::debug!(server = %self.inner.config.server_name, tool = name, task = %started.summary().task_id, "the server answered with a task; waiting for it");
                let mut deadline =
                    Deadline::new(start, timeout, self.inner.config.max_total_timeout);
                let mut handle = TaskHandle::new(self.clone(), name, started);
                handle.wait_until(&mut deadline, true, &mut |_| {}).await
            }
        }
    }

    /// Sends `tools/call` (asking for a task with `task` on 2025-11-25),
    /// answering `input_required` rounds, and returns what it came to: a
    /// result (not yet checked against the output schema) with the catalog
    /// it was checked against, or a task.
    pub(crate) async fn call_inner(
        &self,
        name: &str,
        arguments: &Value,
        options: &CallOptions,
        task: Option<&TaskMetadata>,
    ) -> Result<CallAnswer, SessionError> {
        let mut catalog = self.catalog(false).await?;
        if catalog.get(name).is_none() {
            // The server may have added the tool since the catalog was fetched.
            catalog = self.refresh_tools().await?;
        }
        let entry = self.checked_entry(&catalog, name, arguments)?;

        let _serial = if self.inner.config.supports_parallel_tool_calls {
            None
        } else {
            Some(self.inner.call_gate.lock().await)
        };
        let method = methods::TOOLS_CALL;
        let timeout = options.timeout.unwrap_or(self.inner.config.request_timeout);
        let mirror_headers = self.inner.mirrors_headers();
        let base = self.inner.named_context(name);
        let mut context = if mirror_headers {
            param_context(base.clone(), entry.header_params(), arguments)
        } else {
            base.clone()
        };
        let task_extension = self.inner.version.tasks() == mcp_protocol::TaskModel::Extension;
        let mut refetched = false;
        let mut input: Option<(serde_json::Map<String, Value>, Option<String>)> = None;
        let mut rounds = 0usize;
        loop {
            let id = self.inner.next_id();
            let token = id.id();
            let meta = CallMeta {
                entries: self.inner.meta.as_ref().map(RequestMeta::entries),
                encoded: self.inner.meta.as_ref().and_then(RequestMeta::entries_json),
                progress: options.on_progress.is_some().then_some(&token),
            };
            let params = CallParams {
                name,
                arguments,
                meta: (!meta.is_empty()).then_some(meta),
                input_responses: input.as_ref().map(|(r, _)| r),
                request_state: input.as_ref().and_then(|(_, s)| s.as_deref()),
                task,
            };
            let raw = to_raw_params(method, &params)?;
            let sent = self
                .inner
                .request_raw(
                    id,
                    method,
                    Some(raw),
                    timeout,
                    options.on_progress.as_ref(),
                    &context,
                )
                .await;
            let result = match sent {
                Err(SessionError::Protocol { error, .. })
                    if mirror_headers && !refetched && error.code == mcp_codes::HEADER_MISMATCH =>
                {
                    // The spec's remedy: the tool's schema may have changed;
                    // fetch the catalog again and retry with its headers, once.
                    refetched = true;
                    tracing::info!(server = %self.inner.config.server_name, tool = name, "header mismatch ({}); fetching tools/list again and retrying", error.message);
                    // From here on the new schema is the tool's: the
                    // arguments are checked against it before the retry, and
                    // the output after.
                    catalog = self.refresh_tools().await?;
                    let entry = self.checked_entry(&catalog, name, arguments)?;
                    context = param_context(base.clone(), entry.header_params(), arguments);
                    continue;
                }
                other => other?,
            };
            // Read as a tool result first, the common case: `resultType` and
            // `task` then sit among its other members. Only when it is not
            // one (or does not read as one) is it read again as what it is.
            let (complete, kind, task_object) =
                match parse_result::<CallToolResult>(method, &result) {
                    Ok(r) => {
                        let kind =
                            ResultType::named(r.extra.get(ResultType::KEY).and_then(Value::as_str));
                        let task_object = r.extra.get("task").is_some_and(Value::is_object);
                        (Ok(r), kind, task_object)
                    }
                    Err(e) => {
                        // A scan that builds nothing says what it is instead.
                        let shape: ResultShape = parse_result(method, &result)?;
                        let kind =
                            ResultType::named(shape.result_type.as_ref().and_then(Value::as_str));
                        (Err(e), kind, shape.task.is_some_and(|t| t.0))
                    }
                };
            match kind {
                ResultType::InputRequired => {
                    rounds += 1;
                    if rounds > self.inner.config.max_input_rounds {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: format!(
                                "the server still asked for input after {} rounds; gave up",
                                self.inner.config.max_input_rounds
                            ),
                        });
                    }
                    let asked: InputRequiredResult = parse_result(method, &result)?;
                    let mut responses = serde_json::Map::new();
                    for (key, request) in asked.input_requests.iter().flatten() {
                        responses.insert(key.clone(), self.answer_input(request).await?);
                    }
                    // `requestState` goes back exactly as it came, or not at all.
                    input = Some((responses, asked.request_state));
                    continue;
                }
                ResultType::Task if task_extension => {
                    let task: DetailedTask = parse_result(method, &result)?;
                    return Ok(CallAnswer::Task(StartedTask::Modern(Box::new(task))));
                }
                _ => {}
            }
            if task.is_some() && task_object {
                let created: CreateTaskResult = parse_result(method, &result)?;
                return Ok(CallAnswer::Task(StartedTask::Legacy(Box::new(
                    created.task,
                ))));
            }
            return Ok(CallAnswer::Complete(complete?, catalog));
        }
    }

    /// `result`, unless its `structuredContent` does not match the tool's
    /// output schema.
    pub(crate) fn checked_output(
        &self,
        catalog: &ToolCatalog,
        name: &str,
        result: CallToolResult,
    ) -> Result<CallToolResult, SessionError> {
        if let (Some(structured), false) = (&result.structured_content, result.is_error())
            && let Some(entry) = catalog.get(name)
            && let Checked::Invalid(problems) = entry.check_output(structured)
        {
            return Err(SessionError::InvalidOutput {
                tool: name.to_string(),
                problems,
            });
        }
        Ok(result)
    }

    /// The catalog's entry for `name`, with `arguments` checked against its
    /// input schema: an unknown tool or invalid arguments are errors, and
    /// nothing is sent.
    pub(crate) fn checked_entry<'c>(
        &self,
        catalog: &'c ToolCatalog,
        name: &str,
        arguments: &Value,
    ) -> Result<&'c CatalogTool, SessionError> {
        let Some(entry) = catalog.get(name) else {
            return Err(SessionError::UnknownTool {
                name: name.to_string(),
                known: catalog.some_names(20),
            });
        };
        match entry.check_arguments(arguments) {
            Checked::Valid | Checked::Disabled => Ok(entry),
            Checked::Invalid(problems) => Err(SessionError::InvalidArguments {
                tool: name.to_string(),
                problems,
            }),
            Checked::Unchecked(why) => {
                tracing::warn!(server = %self.inner.config.server_name, tool = name, "arguments not checked: {why}");
                Ok(entry)
            }
        }
    }

    /// Reads a resource. A resource the server does not have is
    /// [`SessionError::ResourceNotFound`], whichever code the server's
    /// revision uses for it (-32602 from 2026-07-28 on, -32002 before).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, SessionError> {
        let method = methods::RESOURCES_READ;
        let timeout = self.inner.config.request_timeout;
        match self
            .inner
            .request(
                method,
                &json!({ "uri": uri }),
                timeout,
                &self.inner.named_context(uri),
            )
            .await
        {
            Err(SessionError::Protocol { error, .. }) if is_not_found(&error, uri) => {
                Err(SessionError::ResourceNotFound {
                    uri: uri.to_string(),
                    message: error.message,
                })
            }
            other => other,
        }
    }

    /// Answers one of a server's input requests (multi-round-trip results)
    /// through the handler. Without a handler, elicitation is declined and
    /// anything else is an error.
    pub(crate) async fn answer_input(&self, request: &InputRequest) -> Result<Value, SessionError> {
        let params = match &request.params {
            Some(p) => Some(to_raw_params(&request.method, p)?),
            None => None,
        };
        let answer = match &self.inner.config.handler {
            Some(h) => {
                h.handle(
                    &request.method,
                    params.as_ref().and_then(|p| p.raw_value().ok()),
                )
                .await
            }
            None => None,
        };
        match answer {
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(SessionError::InputRequest {
                method: request.method.clone(),
                reason: error.to_string(),
            }),
            None if request.method == methods::ELICITATION_CREATE => {
                Ok(json!({"action": "decline"}))
            }
            None => Err(SessionError::InputRequest {
                method: request.method.clone(),
                reason: "this client has no handler for it".into(),
            }),
        }
    }

    /// What the session has seen: frames that were not messages, responses
    /// to unknown ids.
    pub fn diagnostics(&self) -> Diagnostics {
        let (invalid_frames, last_invalid) = {
            let invalid = self
                .inner
                .shared
                .invalid
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            (invalid.count, invalid.last.iter().cloned().collect())
        };
        Diagnostics {
            invalid_frames,
            last_invalid,
            unknown_responses: self.inner.shared.lock_pending().unknown_responses,
            answering: self.inner.shared.server_requests.len(),
            dropped_notifications: self.inner.shared.dropped.load(Ordering::Relaxed),
            refused_server_requests: self
                .inner
                .shared
                .server_requests
                .refused
                .load(Ordering::Relaxed),
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.shared.lock_pending().in_flight()
    }

    /// The connection is closed (by either side).
    pub fn is_closed(&self) -> bool {
        self.inner.shared.lock_pending().is_closed()
    }

    /// Closes the connection with the transport's close sequence. Requests
    /// in flight end with a closed error.
    pub async fn close(&self) {
        self.inner.shared.server_requests.abort_all();
        self.inner.transport.close().await;
        let mut pending = self.inner.shared.lock_pending();
        if !pending.is_closed() {
            let mut err = self
                .inner
                .shared
                .closed_error
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if err.is_none() {
                *err = Some(ClosedInfo::by_client());
            }
            pending.close();
        }
    }
}

//! Session errors: each says which layer failed.

use std::fmt;
use std::time::Duration;

use mcp_stack_jsonrpc::ErrorObject;
use mcp_stack_transport::TransportError;

/// One problem found when checking a value against a JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// Where in the value, as a JSON Pointer (`""` is the whole value, `/path` a field).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "arguments: {}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

fn list(problems: &[SchemaProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a session operation failed.
///
/// The variants name the layer: the transport (the server is gone), a
/// timeout, the protocol (a JSON-RPC error from the server), the client-side
/// checks (invalid arguments, an output that does not match its schema), or
/// the handshake (version mismatch).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The transport failed or closed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// No answer in time. The request was cancelled on the server (except
    /// `initialize`, which cannot be). The message names the timeout that
    /// fired, its bound, and the setting that raises it.
    #[error(
        "{method} timed out after {}: {} of {} ran out; if the server is just slow, raise {}",
        fmt_duration(*.after),
        .kind.describe(),
        fmt_duration(*.bound),
        .kind.setting()
    )]
    #[non_exhaustive]
    Timeout {
        /// The request's method.
        method: String,
        /// How long we waited.
        after: Duration,
        /// Which timeout fired.
        kind: TimeoutKind,
        /// That timeout's configured bound.
        bound: Duration,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{method} failed: {error}{}", explain(.error))]
    Protocol {
        /// The request's method.
        method: String,
        /// The error the server sent.
        error: ErrorObject,
    },
    /// The server answered with something that is not what the method returns.
    #[error("{method}: the server's answer is not valid: {reason}")]
    InvalidResponse {
        /// The request's method.
        method: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The arguments do not match the tool's input schema; nothing was sent.
    #[error("invalid arguments for tool `{tool}`: {}", list(.problems))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Each problem, with the field's path.
        problems: Vec<SchemaProblem>,
    },
    /// The tool's `structuredContent` does not match its output schema.
    #[error("tool `{tool}` returned structured content that does not match its outputSchema: {}", list(.problems))]
    InvalidOutput {
        /// The tool.
        tool: String,
        /// Each problem, with the field's path.
        problems: Vec<SchemaProblem>,
    },
    /// The server has no tool of that name.
    #[error("the server has no tool named `{name}`{}", known_tools(.known))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Some of the names it does have.
        known: Vec<String>,
    },
    /// The server chose a protocol version this client does not speak.
    #[error(
        "protocol version mismatch: the client offered {offered}, the server answered {received} \
         (this client supports {}); upgrade the client or use a server that speaks one of those",
        supported.join(", ")
    )]
    VersionMismatch {
        /// The version the client offered.
        offered: String,
        /// The version the server answered with.
        received: String,
        /// The versions this client speaks.
        supported: Vec<String>,
    },
    /// A discover-only session met a server that only has the handshake.
    #[error(
        "the server speaks only the initialize handshake (2025-11-25 or older): {reason}; \
         use the legacy or auto protocol mode"
    )]
    LegacyServer {
        /// What gave it away.
        reason: String,
    },
    /// The server asked for input (elicitation, sampling, roots) that could
    /// not be given.
    #[error("the server asked for {method}, which could not be answered: {reason}")]
    InputRequest {
        /// The input request's method.
        method: String,
        /// Why.
        reason: String,
    },
    /// Prompt arguments that do not match the prompt's declared ones; nothing
    /// was sent.
    #[error("invalid arguments for prompt `{prompt}`: {problems}")]
    InvalidPromptArguments {
        /// The prompt.
        prompt: String,
        /// What is wrong, and the arguments it takes.
        problems: String,
    },
    /// The server does not offer this feature (it did not declare the capability).
    #[error("the server does not support {0} (capability not declared)")]
    NotSupported(&'static str),
    /// `resources/read` named a resource the server does not have (code
    /// -32602 from 2026-07-28 servers, -32002 from earlier ones).
    #[error("the server has no resource {uri} ({message})")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
        /// The server's message.
        message: String,
    },
    /// A skill's file failed verification against the skill's entry (size,
    /// digest, frontmatter), or could not be verified at all (no digests,
    /// not listed); its content was not returned (skills extension).
    #[error("skill {skill}: {file} refused: {problem}")]
    SkillRejected {
        /// The URI of the skill's `SKILL.md`.
        skill: String,
        /// The file's URI (or the reference that named it).
        file: String,
        /// What failed.
        problem: crate::skill_problem::SkillProblem,
    },
    /// The server's answer was longer than the transport's size limit and
    /// was skipped (its first bytes named this request).
    #[error(
        "the answer to {method} was over the {limit}-byte size limit and was skipped; if the \
         server's answers are this large, raise the limit (StdioConfig::max_frame_length, \
         HttpOptions::max_event_size)"
    )]
    AnswerTooLarge {
        /// The request's method.
        method: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A paged list (`tools/list`, `resources/list`, `prompts/list`,
    /// `tasks/list`, `skills/list` …) went over one of the budgets of one
    /// fetch: more pages, bytes or entries than the session takes. Paging
    /// stopped there and nothing of the list was kept. The message names
    /// the budget and the [`SessionConfig`](crate::SessionConfig) method
    /// that raises it.
    #[error(
        "{method}: the server's list went over {} after {pages} page(s); stopped paging and \
         kept none of it. If the server really lists that much, raise {}",
        .budget.describe(*.limit),
        .budget.setting()
    )]
    #[non_exhaustive]
    ListTooLarge {
        /// The list's method.
        method: String,
        /// Which budget ran out.
        budget: ListBudget,
        /// That budget's configured bound (pages, bytes or entries).
        limit: usize,
        /// The pages received when it ran out.
        pages: usize,
    },
    /// A 2025-11-25 tool whose `execution.taskSupport` is absent or
    /// `forbidden` cannot run as a task; nothing was sent.
    #[error(
        "tool `{tool}` does not run as a task (its execution.taskSupport is absent or \
         \"forbidden\"); call it normally"
    )]
    TaskForbidden {
        /// The tool.
        tool: String,
    },
    /// A task ended with a JSON-RPC error (status `failed`, or the error
    /// `tasks/result` answered).
    #[error("task {task_id} failed: {}", task_failure(.error.as_deref(), .message.as_deref()))]
    TaskFailed {
        /// The task.
        task_id: String,
        /// The error the task ended with, when the server said (boxed: it
        /// is large, and every `Result` of the session carries this type).
        error: Option<Box<ErrorObject>>,
        /// The task's status message.
        message: Option<String>,
    },
    /// A task was cancelled before it finished.
    #[error("task {task_id} was cancelled{}", message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The task's status message.
        message: Option<String>,
    },
    /// Waiting for a task ran out of time. Nothing more was sent: the task
    /// goes on on the server (wait again, or cancel it).
    #[error(
        "task {task_id} did not finish within {} (last status: {status}); it may still be \
         running on the server: wait for it again or cancel it",
        fmt_duration(*.after)
    )]
    TaskTimeout {
        /// The task.
        task_id: String,
        /// How long the wait lasted.
        after: Duration,
        /// The task's last known status.
        status: String,
    },
    /// The session was closed by this client.
    #[error("the session is closed")]
    Closed,
    /// A tool reported a failure (`isError: true`), made an error by
    /// [`CallToolResult::into_result`](mcp_stack_protocol::types::CallToolResult::into_result)
    /// and `?`: its text is in the [`ToolError`](mcp_stack_protocol::types::ToolError).
    #[error(transparent)]
    Tool(#[from] mcp_stack_protocol::types::ToolError),
    /// A result did not read into the type asked for
    /// ([`CallToolResult::structured`](mcp_stack_protocol::types::CallToolResult::structured),
    /// [`ReadResourceResult::json`](mcp_stack_protocol::types::ReadResourceResult::json)),
    /// through `?`.
    #[error(transparent)]
    Decode(#[from] mcp_stack_protocol::types::DecodeError),
}

/// Which timeout fired ([`SessionError::Timeout`]), so the user knows which
/// setting to raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// The per-request timeout, which each progress notification restarts:
    /// [`SessionConfig::request_timeout`](crate::SessionConfig::request_timeout),
    /// or [`CallOptions::timeout`](crate::CallOptions::timeout) for one call.
    Request,
    /// The cap on a request's whole life, which progress cannot extend past:
    /// [`SessionConfig::max_total_timeout`](crate::SessionConfig::max_total_timeout).
    MaxTotal,
    /// The start of the connection (the `initialize` handshake or
    /// `server/discover`):
    /// [`SessionConfig::handshake_timeout`](crate::SessionConfig::handshake_timeout).
    Handshake,
    /// The 2026-07-28 probe of the auto mode, when it is the shorter bound:
    /// [`SessionConfig::probe_timeout`](crate::SessionConfig::probe_timeout).
    Probe,
}

impl TimeoutKind {
    /// The setting that raises this timeout, as the builder method to call.
    pub fn setting(self) -> &'static str {
        match self {
            TimeoutKind::Request => {
                "SessionConfig::request_timeout (or CallOptions::timeout for one call)"
            }
            TimeoutKind::MaxTotal => "SessionConfig::max_total_timeout",
            TimeoutKind::Handshake => "SessionConfig::handshake_timeout",
            TimeoutKind::Probe => "SessionConfig::probe_timeout",
        }
    }

    /// The timeout, in words.
    fn describe(self) -> &'static str {
        match self {
            TimeoutKind::Request => "the request timeout (restarted by each progress notification)",
            TimeoutKind::MaxTotal => "the max total timeout (which progress cannot extend)",
            TimeoutKind::Handshake => "the handshake timeout",
            TimeoutKind::Probe => "the probe timeout",
        }
    }
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Which budget of a list fetch ran out ([`SessionError::ListTooLarge`]),
/// so the user knows which setting to raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListBudget {
    /// The number of pages:
    /// [`SessionConfig::max_list_pages`](crate::SessionConfig::max_list_pages).
    Pages,
    /// The bytes of the answers, raw JSON as received, all pages together:
    /// [`SessionConfig::max_list_bytes`](crate::SessionConfig::max_list_bytes).
    Bytes,
    /// The entries, all pages together:
    /// [`SessionConfig::max_list_items`](crate::SessionConfig::max_list_items).
    Items,
}

impl ListBudget {
    /// The setting that raises this budget, as the builder method to call.
    pub fn setting(self) -> &'static str {
        match self {
            ListBudget::Pages => "SessionConfig::max_list_pages",
            ListBudget::Bytes => "SessionConfig::max_list_bytes",
            ListBudget::Items => "SessionConfig::max_list_items",
        }
    }

    /// The budget of `limit`, in words.
    fn describe(self, limit: usize) -> String {
        match self {
            ListBudget::Pages => format!("the budget of {limit} pages"),
            ListBudget::Bytes => format!(
                "the budget of {limit} bytes ({}) of answers",
                describe_bytes(limit)
            ),
            ListBudget::Items => format!("the budget of {limit} entries"),
        }
    }
}

/// A size in words: `64 MiB`, `1.5 KiB`, `10 bytes`.
fn describe_bytes(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    let scaled = |unit: usize, name: &str| {
        if bytes.is_multiple_of(unit) {
            format!("{} {name}", bytes / unit)
        } else {
            // Precision does not matter here: a budget in words.
            #[allow(clippy::cast_precision_loss)]
            let value = bytes as f64 / unit as f64;
            format!("{value:.1} {name}")
        }
    };
    if bytes >= MIB {
        scaled(MIB, "MiB")
    } else if bytes >= KIB {
        scaled(KIB, "KiB")
    } else {
        format!("{bytes} bytes")
    }
}

fn task_failure(error: Option<&ErrorObject>, message: Option<&str>) -> String {
    match (error, message) {
        (Some(e), _) => e.to_string(),
        (None, Some(m)) => m.to_owned(),
        (None, None) => "the server gave no reason".to_owned(),
    }
}

/// What the 2026-07-28 error codes mean for the user.
fn explain(error: &ErrorObject) -> String {
    let data: Option<serde_json::Value> = error.data_as().and_then(Result::ok);
    match error.code {
        mcp_stack_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported = data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .map(|s| s.to_string())
                .unwrap_or_else(|| "not said".into());
            format!(
                "; the server does not speak the requested protocol version (it supports: {supported})"
            )
        }
        mcp_stack_protocol::codes::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            let required = data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .map(|s| s.to_string())
                .unwrap_or_else(|| "not said".into());
            format!(
                "; the server needs a client capability this client did not declare: {required}"
            )
        }
        mcp_stack_protocol::codes::HEADER_MISMATCH => {
            "; the HTTP headers did not match the request body (a proxy rewriting headers?)".into()
        }
        _ => String::new(),
    }
}

fn known_tools(known: &[String]) -> String {
    if known.is_empty() {
        " (it lists no tools)".into()
    } else {
        format!(" (it has: {})", known.join(", "))
    }
}

pub(crate) use mcp_stack_transport::describe_duration as fmt_duration;

impl SessionError {
    /// A [`Timeout`](Self::Timeout): `method` waited `after`, when the
    /// `kind` timeout of `bound` ran out.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_stack_session::{SessionError, TimeoutKind};
    /// let secs = Duration::from_secs;
    /// let e = SessionError::timeout("tools/call", TimeoutKind::MaxTotal, secs(600), secs(600));
    /// assert!(e.is_timeout());
    /// assert_eq!(e.timeout_kind(), Some(TimeoutKind::MaxTotal));
    /// assert!(e.to_string().contains("raise SessionConfig::max_total_timeout"));
    /// ```
    pub fn timeout(
        method: impl Into<String>,
        kind: TimeoutKind,
        bound: Duration,
        after: Duration,
    ) -> Self {
        SessionError::Timeout {
            method: method.into(),
            after,
            kind,
            bound,
        }
    }

    /// Which budget of a list fetch ran out, when this is a
    /// [`ListTooLarge`](Self::ListTooLarge).
    pub fn list_budget(&self) -> Option<ListBudget> {
        match self {
            SessionError::ListTooLarge { budget, .. } => Some(*budget),
            _ => None,
        }
    }

    /// Which timeout fired, when this is a [`Timeout`](Self::Timeout).
    pub fn timeout_kind(&self) -> Option<TimeoutKind> {
        match self {
            SessionError::Timeout { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// A request's timeout during the lifecycle is the lifecycle's: the
    /// handshake (or probe) timeout of `bound`.
    pub(crate) fn in_lifecycle(self, kind: TimeoutKind, bound: Duration) -> Self {
        match self {
            SessionError::Timeout { method, after, .. } => SessionError::Timeout {
                method,
                after,
                kind,
                bound,
            },
            other => other,
        }
    }

    /// A request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            SessionError::Timeout { .. } | SessionError::TaskTimeout { .. }
        )
    }

    /// The connection is gone (server exited, transport closed, session closed).
    pub fn is_closed(&self) -> bool {
        match self {
            SessionError::Transport(t) => t.is_closed(),
            SessionError::Closed => true,
            _ => false,
        }
    }

    /// The JSON-RPC error the server sent, when this is one.
    pub fn protocol_error(&self) -> Option<&ErrorObject> {
        match self {
            SessionError::Protocol { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The transport error, when this is one.
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            SessionError::Transport(t) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_budget_is_named_with_its_setting_and_size() {
        assert_eq!(describe_bytes(64 * 1024 * 1024), "64 MiB");
        assert_eq!(describe_bytes(1536), "1.5 KiB");
        assert_eq!(describe_bytes(10), "10 bytes");
        let e = SessionError::ListTooLarge {
            method: "tools/list".into(),
            budget: ListBudget::Bytes,
            limit: 64 * 1024 * 1024,
            pages: 257,
        };
        let text = e.to_string();
        assert!(text.starts_with("tools/list: "), "{text}");
        assert!(
            text.contains("64 MiB") && text.contains("257 page(s)"),
            "{text}"
        );
        assert!(
            text.contains("raise SessionConfig::max_list_bytes"),
            "{text}"
        );
        assert_eq!(e.list_budget(), Some(ListBudget::Bytes));
        assert_eq!(ListBudget::Items.setting(), "SessionConfig::max_list_items");
        assert_eq!(ListBudget::Pages.setting(), "SessionConfig::max_list_pages");
    }
}

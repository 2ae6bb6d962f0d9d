//! What a failed step probably means, in the terms of the usual MCP
//! troubleshooting list (wrong command or path, a server that logs to
//! stdout, a missing variable, a version mismatch, a slow start, an
//! authorization the server wants): each function takes what a step saw (an
//! error, the server's exit, the noise on its stdout) and returns the
//! sentences for the report's `diagnosis:` section. Nothing here prints or
//! does IO, so each rule is unit-tested on its own.

use mcp_stack_session::types::CallToolResult;
use mcp_stack_session::{SessionError, TimeoutKind};
use mcp_stack_transport::{ExitInfo, TransportError};
use serde_json::Value;

use crate::output::{ms, printable, summarize};
use crate::trace::Noise;

/// Explains an HTTP failure: status codes, TLS, connection refused.
pub(crate) fn http(e: &TransportError) -> Option<String> {
    match e.http_status() {
        Some(401) => Some(
            "HTTP 401 Unauthorized: check the Authorization header format — `Bearer <token>` \
             with one space — and whether the token expired"
                .into(),
        ),
        Some(403) => Some(
            "HTTP 403 Forbidden: the credentials were accepted but lack access; check the \
             token's scopes (or the server's Origin checks)"
                .into(),
        ),
        Some(404) => Some(
            "HTTP 404: check the URL path (often /mcp for streamable HTTP, /sse for the old \
             HTTP+SSE transport)"
                .into(),
        ),
        Some(s @ (400 | 405)) => Some(format!(
            "HTTP {s}: the server may speak the other HTTP transport; try --transport sse \
             (or streamable-http)"
        )),
        Some(s) if s >= 500 => Some(format!(
            "HTTP {s}: the server failed; its logs should say why"
        )),
        Some(_) => None,
        None => match e {
            TransportError::Http { message, .. } if message.contains("certificate") => Some(
                "the TLS certificate is not trusted: is the URL right? for a private CA, \
                 trust its certificate"
                    .into(),
            ),
            TransportError::Http { message, .. } if message.contains("refused") => Some(
                "nothing is listening there: is the server running, and the port right?".into(),
            ),
            TransportError::InvalidConfig(m) => Some(format!("fix the settings: {m}")),
            TransportError::Unauthorized { message, .. } => {
                Some(format!("needs authorization: {message}"))
            }
            _ => None,
        },
    }
}

/// Explains why a stdio server could not be started.
pub(crate) fn spawn(e: &TransportError) -> String {
    match e {
        TransportError::Spawn { program, source }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            format!(
                "`{program}` was not found: install it, or give its full path (the server is started directly, not through a shell, with PATH from this environment)"
            )
        }
        _ => format!("the server could not be started: {e}"),
    }
}

/// Explains a failed handshake: an HTTP failure alone, or what the error,
/// the server's exit and any noise on its stdout point to.
pub(crate) fn handshake(e: &SessionError, exit: Option<&ExitInfo>, noise: &Noise) -> Vec<String> {
    if let Some(d) = e.transport_error().and_then(http) {
        return vec![d];
    }
    let mut found = vec![match e {
        SessionError::Timeout { after, .. } => format!(
            "the server did not answer initialize within {}: it may be slow to start (raise --handshake-timeout), or stuck before reading stdin",
            ms(*after)
        ),
        SessionError::VersionMismatch {
            offered, received, ..
        } => format!(
            "protocol version mismatch: this client offered {offered} and the server answered {received}; upgrade the server (or the client) so they share a version"
        ),
        e if e.is_closed() => {
            let how = exit.map(|x| format!(" ({x})")).unwrap_or_default();
            format!(
                "the server exited during the handshake{how}: often a missing environment variable or a bad argument; its stderr below usually says which"
            )
        }
        SessionError::LegacyServer { .. } => {
            "the server speaks only the initialize handshake (2025-11-25 or older); probe it with --protocol auto or legacy".into()
        }
        SessionError::Protocol { error, .. }
            if error.code == mcp_stack_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            format!(
                "the server does not speak the offered protocol version: {}; try --protocol auto, which probes with server/discover (2026-07-28) and falls back to the handshake",
                error.message
            )
        }
        other => format!("the handshake failed: {other}"),
    }];
    if noise.count > 0 {
        let ex = noise.examples.first().cloned().unwrap_or_default();
        found.push(format!(
            "{} line(s) on the server's stdout were not JSON-RPC (e.g. {ex}): a stdio server must write logs to stderr, never stdout",
            noise.count
        ));
    }
    found
}

/// Explains an answer skipped for its size, whatever the request.
pub(crate) fn too_large(e: &SessionError) -> Option<String> {
    match e {
        SessionError::AnswerTooLarge { method, limit } => Some(format!(
            "the server's answer to {method} was longer than the {limit}-byte limit, so it was \
             skipped and the request failed; the server sends more than a client should hold \
             (page its lists, or return large data as resources), or the limit must be raised \
             in the embedding application"
        )),
        _ => None,
    }
}

/// Explains a failed `tools/call`: arguments, timeouts, a server gone.
pub(crate) fn call(e: &SessionError) -> Option<String> {
    if let Some(d) = too_large(e) {
        return Some(d);
    }
    match e {
        SessionError::InvalidArguments { problems, .. } => Some(format!(
            "the arguments do not match the tool's inputSchema ({}); nothing was sent",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )),
        SessionError::Protocol { error, .. }
            if error.code == mcp_stack_jsonrpc::codes::INVALID_PARAMS =>
        {
            let field = error
                .data
                .as_ref()
                .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
                .map(|d| format!(" (server says: {d})"))
                .unwrap_or_default();
            Some(format!(
                "-32602 invalid params: the server rejected the arguments{field}; compare them with the tool's inputSchema from tools/list"
            ))
        }
        SessionError::Timeout {
            kind: TimeoutKind::MaxTotal,
            bound,
            ..
        } => Some(format!(
            "the tool kept reporting progress but ran past the {} cap on a whole call, which progress cannot extend (the session's max total timeout)",
            ms(*bound)
        )),
        SessionError::Timeout { after, .. } => Some(format!(
            "the tool did not answer within {}; raise the timeout (--timeout) if it is just slow",
            ms(*after)
        )),
        e if e.is_closed() => Some(
            "the server went away during the call (it crashed or exited); see its stderr".into(),
        ),
        _ => None,
    }
}

/// A tool that ran and said it failed (`isError`): not a protocol error.
pub(crate) fn tool_error(tool: &str, result: &CallToolResult, full: bool) -> String {
    format!(
        "`{tool}` ran and reported a failure (isError: true, a tool error, not a protocol error): {}",
        printable(&summarize(&result.text(), 300, full))
    )
}

/// An empty tool list from a server that declares `tools`. (Without the
/// capability, the catalog's own diagnostic says why.)
pub(crate) fn no_tools(declares_tools: bool) -> Option<String> {
    declares_tools.then(|| {
        "the server declares `tools` but lists none; this client sent notifications/initialized, so the server has registered no tools (check its tool registration)".into()
    })
}

/// Lines on a stdio server's stdout that were not JSON-RPC, seen by the end
/// of a probe.
pub(crate) fn stdout_noise(noise: &Noise) -> Option<String> {
    (noise.count > 0).then(|| {
        format!(
            "{} line(s) on the server's stdout were not JSON-RPC (e.g. {}): a stdio server must log to stderr",
            noise.count,
            noise.examples.first().cloned().unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn noise(count: u64, example: &str) -> Noise {
        Noise {
            count,
            examples: vec![example.into()],
        }
    }

    #[test]
    fn http_statuses_say_what_to_check() {
        let status = |status| TransportError::HttpStatus {
            status,
            url: "POST https://h/mcp".into(),
            body: String::new(),
        };
        assert!(http(&status(401)).is_some_and(|d| d.contains("`Bearer <token>`")));
        assert!(http(&status(405)).is_some_and(|d| d.contains("try --transport sse")));
        assert!(http(&status(503)).is_some_and(|d| d.starts_with("HTTP 503: the server failed")));
        assert_eq!(http(&status(418)), None);
        let refused = TransportError::Http {
            url: "POST http://127.0.0.1:1/mcp".into(),
            message: "connection refused".into(),
        };
        assert!(http(&refused).is_some_and(|d| d.starts_with("nothing is listening there")));
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = TransportError::Spawn {
            program: "nope".into(),
            source: std::io::ErrorKind::NotFound.into(),
        };
        assert!(spawn(&e).starts_with("`nope` was not found: install it"));
    }

    #[test]
    fn a_silent_handshake_and_stdout_noise_are_both_explained() {
        let after = Duration::from_millis(1500);
        let e = SessionError::timeout("initialize", TimeoutKind::Handshake, after, after);
        let found = handshake(&e, None, &noise(2, "hello"));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found.first().is_some_and(|d| d.contains("within 1.5 s")),
            "{found:?}"
        );
        assert!(
            found
                .get(1)
                .is_some_and(|d| d.starts_with("2 line(s)") && d.contains("(e.g. hello)")),
            "{found:?}"
        );
    }

    #[test]
    fn an_exit_during_the_handshake_names_the_exit() {
        let e = SessionError::Transport(TransportError::closed("server closed stdout"));
        let exit = ExitInfo::new(Some(3), None);
        let found = handshake(&e, Some(&exit), &Noise::default());
        assert_eq!(
            found.first().map(String::as_str),
            Some(
                "the server exited during the handshake (exit code 3): often a missing environment variable or a bad argument; its stderr below usually says which"
            )
        );
    }

    #[test]
    fn call_failures_and_the_end_of_probe_notes() {
        let after = Duration::from_millis(200);
        let e = SessionError::timeout("tools/call", TimeoutKind::Request, after, after);
        assert!(call(&e).is_some_and(|d| d.contains("within 200 ms") && d.contains("--timeout")));
        let cap = Duration::from_secs(600);
        let e = SessionError::timeout("tools/call", TimeoutKind::MaxTotal, cap, cap);
        assert!(
            call(&e).is_some_and(|d| d.contains("cap on a whole call") && !d.contains("--timeout"))
        );
        assert_eq!(no_tools(false), None);
        assert!(no_tools(true).is_some());
        assert_eq!(stdout_noise(&Noise::default()), None);
        assert!(stdout_noise(&noise(1, "x")).is_some_and(|d| d.ends_with("must log to stderr")));
    }

    #[test]
    fn an_oversized_answer_is_not_blamed_on_stdout_logging() {
        let e = SessionError::AnswerTooLarge {
            method: "tools/list".into(),
            limit: 16 * 1024 * 1024,
        };
        let d = too_large(&e).unwrap();
        assert!(
            d.contains("tools/list") && d.contains("16777216-byte limit"),
            "{d}"
        );
        assert!(!d.contains("stderr"), "{d}");
        assert_eq!(call(&e), Some(d));
        assert_eq!(too_large(&SessionError::Closed), None);
    }
}

//! The 2024-11-05 HTTP+SSE transport: GET `/sse` opens a session's stream
//! (first event: `endpoint`), messages are POSTed to
//! `/messages?sessionId=…` and answered on that stream.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use mcp_stack_jsonrpc::Message;
use mcp_stack_protocol::request::{self, Request as _};
use tokio::sync::mpsc;

use super::response::{Body, empty, full};
use super::session::SessionKind;
use super::sse::{sse_event, sse_response};
use super::{HttpMisbehaviour, Shared, lock};

impl Shared {
    /// GET `/sse`: a new session and its stream.
    pub(super) fn legacy_stream(&self) -> Response<Body> {
        self.stats.legacy_streams.fetch_add(1, Ordering::Relaxed);
        let session = self.new_session(SessionKind::LegacySse);
        if self.options.has(HttpMisbehaviour::DropSseStream)
            && !self.dropped_once.swap(true, Ordering::SeqCst)
        {
            session.drop_stream_after(self.options.drop_after);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let endpoint = format!("/messages?sessionId={}", session.id);
        let short = HttpMisbehaviour::short_stream_prelude(&self.options);
        if let Some(prelude) = short.filter(|p| !p.is_empty()) {
            let _ = tx.send(Bytes::from_static(prelude));
        }
        let _ = tx.send(sse_event(None, Some("endpoint"), endpoint.as_bytes()));
        if short.is_some() {
            // Ended after its endpoint event: the sender goes with this scope.
            return sse_response(rx);
        }
        lock(&session.routes).standalone = Some(tx);
        sse_response(rx)
    }

    /// POST `/messages?sessionId=…`: a message for that session, accepted
    /// with `202`; whatever answers it goes to the session's stream.
    pub(super) async fn legacy_post(&self, request: Request<Incoming>) -> Response<Body> {
        let id = request
            .uri()
            .query()
            .unwrap_or_default()
            .split('&')
            .find_map(|kv| kv.strip_prefix("sessionId="))
            .map(str::to_owned);
        let session = id.and_then(|id| lock(&self.sessions).get(&id).cloned());
        let Some(session) = session.filter(|s| s.legacy) else {
            return full(StatusCode::NOT_FOUND, "text/plain", "Session not found");
        };
        let (parts, body) = request.into_parts();
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return empty(StatusCode::BAD_REQUEST),
        };
        let message = Message::from_slice(&body).ok();
        if let Some(forbidden) = message
            .as_ref()
            .and_then(|m| self.insufficient_scope(&parts.headers, "/sse", m))
        {
            return forbidden;
        }
        if message.as_ref().and_then(Message::method) == Some(request::Initialize::METHOD) {
            self.stats.initializes.fetch_add(1, Ordering::Relaxed);
        }
        self.stats.posts.fetch_add(1, Ordering::Relaxed);
        if session.write(&body).await.is_err() {
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
        full(StatusCode::ACCEPTED, "text/plain", "Accepted")
    }
}

//! Streamable HTTP with sessions (2024-11-05 to 2025-11-25): POST, GET
//! and DELETE at `/mcp`. A 2026-07-28 POST branches off to
//! [`super::discover_post`] once its body is read.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use mcp_stack_jsonrpc::{Message, codes};
use mcp_stack_protocol::request::{self, Request as _};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::response::{
    Body, empty, header_str, header_value, internal_error, json_answer, json_error,
};
use super::session::{Session, SessionKind, progress_token};
use super::sse::{priming_event, sse_response};
use super::{HttpMisbehaviour, Shared, discover, lock};
use crate::options::Era;

/// Adds the `Mcp-Session-Id` header a new session's first answer carries.
fn with_session_id(mut response: Response<Body>, id: Option<&str>) -> Response<Body> {
    if let Some(id) = id
        && let Ok(v) = HeaderValue::from_str(id)
    {
        response.headers_mut().insert("mcp-session-id", v);
    }
    response
}

/// A POST must accept both JSON and SSE answers: the `406` for one that
/// does not.
fn not_acceptable(request: &Request<Incoming>) -> Option<Response<Body>> {
    let accept = header_str(request, "accept").unwrap_or_default();
    if accept.contains("application/json") && accept.contains("text/event-stream") {
        return None;
    }
    Some(json_error(
        StatusCode::NOT_ACCEPTABLE,
        super::response::SDK_TRANSPORT_ERROR,
        "Not Acceptable: Client must accept both application/json and text/event-stream",
    ))
}

/// A POST's headers, its body and the message in it; `400` when the body
/// cannot be read or is not JSON-RPC.
async fn read_message(
    request: Request<Incoming>,
) -> Result<(HeaderMap, Bytes, Message), Response<Body>> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Err(empty(StatusCode::BAD_REQUEST)),
    };
    match Message::from_slice(&body) {
        Ok(message) => Ok((parts.headers, body, message)),
        Err(e) => Err(json_error(
            StatusCode::BAD_REQUEST,
            codes::PARSE_ERROR,
            &format!("Parse error: {e}"),
        )),
    }
}

impl Shared {
    /// POST `/mcp`: a message for a session, or a 2026-07-28 message.
    pub(super) async fn post(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if let Some(refused) = not_acceptable(&request) {
            return refused;
        }
        let (headers, body, message) = match read_message(request).await {
            Ok(read) => read,
            Err(refused) => return refused,
        };
        if let Some(forbidden) = self.insufficient_scope(&headers, "/mcp", &message) {
            return forbidden;
        }
        if discover::speaks_discover(self.options.server.era, &headers, &message) {
            return self.discover_post(&headers, body, message).await;
        }
        let is_init = message.method() == Some(request::Initialize::METHOD);
        let session = match self.session_for(&headers, is_init) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if let Some(expired) = self.expire_if_due(&session) {
            return expired;
        }
        self.stats.posts.fetch_add(1, Ordering::Relaxed);
        let session_id = (!self.options.stateless && is_init).then(|| session.id.clone());
        match self.answer(&session, &body, &message, is_init).await {
            Ok(answer) => with_session_id(answer, session_id.as_deref()),
            Err(failed) => failed,
        }
    }

    /// The session a POST goes to: a new one for `initialize` (counted),
    /// else the one its `Mcp-Session-Id` names (its `MCP-Protocol-Version`
    /// recorded).
    fn session_for(
        &self,
        headers: &HeaderMap,
        is_init: bool,
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        if is_init {
            self.stats.initializes.fetch_add(1, Ordering::Relaxed);
            return Ok(if self.options.stateless {
                self.stateless_session()
            } else {
                self.new_session(SessionKind::Streamable)
            });
        }
        let version = header_value(headers, "mcp-protocol-version").unwrap_or_default();
        lock(&self.stats.protocol_versions).push(version.to_owned());
        self.find_session_by(header_value(headers, "mcp-session-id"))
    }

    /// The one session of a stateless server, started on first use.
    fn stateless_session(&self) -> Arc<Session> {
        let mut s = lock(&self.stateless);
        Arc::clone(s.get_or_insert_with(|| {
            Session::start(
                String::new(),
                SessionKind::Streamable,
                self.options.server.clone(),
                self.world(),
            )
        }))
    }

    /// With the expire misbehaviours: counts the session's POSTs, and once
    /// past `expire_after` ends the first session, answering as for a stale id.
    fn expire_if_due(&self, session: &Session) -> Option<Response<Body>> {
        let posts = session.posts.fetch_add(1, Ordering::Relaxed) + 1;
        let expire = self.options.has(HttpMisbehaviour::ExpireSession)
            || self.options.has(HttpMisbehaviour::ExpireSession400);
        if expire
            && !self.options.stateless
            && posts > self.options.expire_after
            && !self.expired_once.swap(true, Ordering::SeqCst)
        {
            lock(&self.sessions).remove(&session.id);
            return Some(self.stale_answer());
        }
        None
    }

    /// Hands a message to the session's instance: a notification or response
    /// is accepted (`202`); a request is answered as JSON or on an SSE stream
    /// of its own. `Err` is a failure, given without the session header.
    async fn answer(
        &self,
        session: &Session,
        body: &Bytes,
        message: &Message,
        is_init: bool,
    ) -> Result<Response<Body>, Response<Body>> {
        let failed = |_| empty(StatusCode::INTERNAL_SERVER_ERROR);
        let Message::Request(req) = message else {
            session.write(body).await.map_err(failed)?;
            return Ok(empty(StatusCode::ACCEPTED));
        };
        if let Some(refused) = self.misbehave_before_answer(&req.method, !is_init).await {
            return Err(refused);
        }
        let wrong_type = !is_init && self.options.has(HttpMisbehaviour::WrongContentType);
        if self.options.json_response || wrong_type {
            let answer = session.ask(&req.id, body).await;
            return answer
                .map(|answer| json_answer(answer, wrong_type))
                .ok_or_else(|| empty(StatusCode::INTERNAL_SERVER_ERROR));
        }
        let drop_stream = req.method == request::ToolsCall::METHOD
            && self.options.has(HttpMisbehaviour::DropStream);
        let params = req
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok());
        let progress = params.as_ref().and_then(progress_token);
        let rx = self.open_request_stream(session, &req.id, progress, drop_stream);
        session.write(body).await.map_err(failed)?;
        Ok(sse_response(rx))
    }

    /// The `status-500` misbehaviour (a `tools/call` is answered 500) and,
    /// when `slow`, `slow-head` (the answer waits `slow_ms`), before a
    /// request reaches its instance.
    pub(super) async fn misbehave_before_answer(
        &self,
        method: &str,
        slow: bool,
    ) -> Option<Response<Body>> {
        if method == request::ToolsCall::METHOD && self.options.has(HttpMisbehaviour::Status500) {
            return Some(internal_error());
        }
        if slow && self.options.has(HttpMisbehaviour::SlowHead) {
            tokio::time::sleep(Duration::from_millis(self.options.slow_ms)).await;
        }
        None
    }

    /// Opens the SSE stream request `id` is answered on and sends its
    /// priming event. With `drop_stream` the client's end ends right after
    /// it (announcing `retry`): the answer waits for a resumption.
    fn open_request_stream(
        &self,
        session: &Session,
        id: &mcp_stack_jsonrpc::Id,
        progress: Option<String>,
        drop_stream: bool,
    ) -> mpsc::UnboundedReceiver<Bytes> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = lock(&session.routes);
        let live = (!drop_stream).then(|| tx.clone());
        let sid = routes.open_stream(id, progress, live);
        let retry = drop_stream.then_some(self.options.retry_ms);
        let _ = tx.send(priming_event(sid, retry));
        rx
    }

    /// What a request with an unknown or expired session id gets: 404, or
    /// 400 as the TypeScript SDK answers with `expire-session-400`.
    fn stale_answer(&self) -> Response<Body> {
        self.stats
            .stale_session_answers
            .fetch_add(1, Ordering::Relaxed);
        if self.options.has(HttpMisbehaviour::ExpireSession400) {
            json_error(
                StatusCode::BAD_REQUEST,
                super::response::SDK_TRANSPORT_ERROR,
                "Bad Request: No valid session ID provided",
            )
        } else {
            json_error(
                StatusCode::NOT_FOUND,
                super::response::SDK_SESSION_NOT_FOUND,
                "Session not found",
            )
        }
    }

    /// The session a streamable request belongs to, or the answer to give instead.
    fn find_session_by(&self, id: Option<&str>) -> Result<Arc<Session>, Box<Response<Body>>> {
        if self.options.stateless {
            return Ok(self.stateless_session());
        }
        let Some(id) = id else {
            // What the TypeScript SDK answers before `initialize`; a client
            // probing with a 2026-07-28 request falls back on it.
            return Err(Box::new(json_error(
                StatusCode::BAD_REQUEST,
                super::response::SDK_TRANSPORT_ERROR,
                "Bad Request: Server not initialized",
            )));
        };
        match lock(&self.sessions).get(id) {
            Some(s) if !s.legacy => Ok(Arc::clone(s)),
            _ => Err(Box::new(self.stale_answer())),
        }
    }

    /// GET `/mcp`: the session's stream for server-initiated messages, or
    /// with `Last-Event-ID` the resumption of a request's stream.
    pub(super) fn get(&self, request: Request<Incoming>) -> Response<Body> {
        if self.options.stateless
            || !self.options.get_stream
            || self.options.server.era == Era::Modern
        {
            return empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        let session = match self.find_session_by(header_str(&request, "mcp-session-id")) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if let Some(last) = header_str(&request, "last-event-id") {
            return self.resume(&session, last);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.stats.get_streams.fetch_add(1, Ordering::Relaxed);
        if let Some(prelude) = HttpMisbehaviour::short_stream_prelude(&self.options) {
            // Answered, then ended: the sender goes with this scope.
            if !prelude.is_empty() {
                let _ = tx.send(Bytes::from_static(prelude));
            }
            return sse_response(rx);
        }
        lock(&session.routes).standalone = Some(tx);
        sse_response(rx)
    }

    /// Replays a request stream's events after `last` (an id `SID-N`, or
    /// `SID-p` for its priming event) and attaches the client if the
    /// answer is still to come.
    fn resume(&self, session: &Session, last: &str) -> Response<Body> {
        self.stats.resumes.fetch_add(1, Ordering::Relaxed);
        lock(&self.stats.last_event_ids).push(last.to_owned());
        let Some((sid, n)) = last.split_once('-') else {
            return empty(StatusCode::BAD_REQUEST);
        };
        let Ok(sid) = sid.parse::<u64>() else {
            return empty(StatusCode::BAD_REQUEST);
        };
        // `p` is the priming event: replay everything.
        let from = n.parse::<usize>().map_or(0, |n| n + 1);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = lock(&session.routes);
        let Some(stream) = routes.streams.get_mut(&sid) else {
            return empty(StatusCode::NOT_FOUND);
        };
        for event in stream.log.iter().skip(from) {
            let _ = tx.send(event.clone());
        }
        if !stream.done {
            stream.live = Some(tx);
        }
        sse_response(rx)
    }

    /// DELETE `/mcp`: ends the session.
    pub(super) fn delete(&self, request: &Request<Incoming>) -> Response<Body> {
        self.stats.deletes.fetch_add(1, Ordering::Relaxed);
        if self.options.stateless || self.options.server.era == Era::Modern {
            return empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        match header_str(request, "mcp-session-id") {
            Some(id) if lock(&self.sessions).remove(id).is_some() => empty(StatusCode::OK),
            _ => self.stale_answer(),
        }
    }
}

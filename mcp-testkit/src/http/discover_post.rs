//! Serving a 2026-07-28 POST: no session; the headers are checked against
//! the body ([`super::discover`]); a request is served by an MCP instance of
//! its own, which ends with the answer or when the client goes away.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use mcp_stack_jsonrpc::{Id, Message, Request, codes};
use mcp_stack_protocol::request::{self, Request as _};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::discover::{self, Rejection};
use super::response::{Body, empty, json_answer, json_error, rejection_response};
use super::session::{Session, SessionKind, progress_token};
use super::sse::{sse_headers, sse_response};
use super::{HttpMisbehaviour, Shared, lock};

/// One 2026-07-28 request's MCP instance. Dropping it ends the instance
/// (aborting the request's work); dropping it before the answer went out
/// counts a [`super::HttpStats::disconnect_cancels`].
#[derive(Debug)]
struct DiscoverCall {
    shared: Arc<Shared>,
    session: Arc<Session>,
    finished: bool,
}

impl DiscoverCall {
    /// Starts the request's instance.
    fn start(shared: Arc<Shared>) -> Self {
        let session = Session::start(
            String::new(),
            SessionKind::Discover,
            shared.options.server.clone(),
            shared.world(),
        );
        DiscoverCall {
            shared,
            session,
            finished: false,
        }
    }

    /// The answer went out (or the instance ended): no cancellation.
    fn finish(&mut self) {
        self.finished = true;
    }

    /// Sends the request and answers with its result as one JSON body.
    async fn answer_json(mut self, id: &Id, body: &[u8], wrong_type: bool) -> Response<Body> {
        // Dropped (a cancellation) when the client goes away first.
        let answer = self.session.ask(id, body).await;
        self.finish();
        match answer {
            Some(answer) => json_answer(answer, wrong_type),
            None => empty(StatusCode::INTERNAL_SERVER_ERROR),
        }
    }

    /// Sends the request and answers with an SSE stream scoped to it
    /// (progress, then the answer; no event ids), which owns the instance.
    async fn answer_stream(
        mut self,
        id: &Id,
        progress: Option<String>,
        body: &[u8],
    ) -> Response<Body> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.session.routes).open_stream(id, progress, Some(tx));
        if self.session.write(body).await.is_err() {
            self.finish();
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
        sse_response_for(rx, self)
    }
}

impl Drop for DiscoverCall {
    fn drop(&mut self) {
        if !self.finished {
            self.shared
                .stats
                .disconnect_cancels
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An SSE response that owns one modern request's instance: the stream
/// ending (after the answer) finishes the call; the client dropping it
/// first cancels the call.
fn sse_response_for(rx: mpsc::UnboundedReceiver<Bytes>, call: DiscoverCall) -> Response<Body> {
    let stream = futures_util::stream::unfold((rx, call), |(mut rx, mut call)| async move {
        match rx.recv().await {
            Some(bytes) => Some((Ok::<_, Infallible>(Frame::data(bytes)), (rx, call))),
            None => {
                call.finish();
                None
            }
        }
    });
    sse_headers(Response::new(StreamBody::new(stream).boxed()))
}

impl Shared {
    /// A 2026-07-28 POST: a notification is accepted (and counted), a
    /// request checked, then served by an instance of its own.
    pub(super) async fn discover_post(
        self: Arc<Self>,
        headers: &HeaderMap,
        body: Bytes,
        message: Message,
    ) -> Response<Body> {
        self.stats.modern_posts.fetch_add(1, Ordering::Relaxed);
        lock(&self.stats.modern_headers).push(discover::recorded_headers(headers));
        let req = match &message {
            Message::Request(req) => req,
            Message::Notification(_) => {
                self.stats
                    .modern_notifications
                    .fetch_add(1, Ordering::Relaxed);
                return empty(StatusCode::ACCEPTED);
            }
            _ => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    codes::INVALID_REQUEST,
                    "Bad Request: a 2026-07-28 client sends only requests and notifications",
                );
            }
        };
        let params = req
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
            .unwrap_or_default();
        if let Err(rejection) = self.check_discover(headers, req, &params) {
            return rejection_response(&rejection, Some(&req.id));
        }
        if let Some(refused) = self.misbehave_before_answer(&req.method, true).await {
            return refused;
        }
        if req.method == request::ToolsCall::METHOD
            && self.options.has(HttpMisbehaviour::DropStream)
        {
            // The stream ends before the answer, and nothing can resume it.
            let (_, rx) = mpsc::unbounded_channel();
            return sse_response(rx);
        }
        let call = DiscoverCall::start(Arc::clone(&self));
        let wrong_type = self.options.has(HttpMisbehaviour::WrongContentType);
        if self.options.json_response || wrong_type {
            return call.answer_json(&req.id, &body, wrong_type).await;
        }
        call.answer_stream(&req.id, progress_token(&params), &body)
            .await
    }

    /// The spec's checks of a modern request's headers against its body;
    /// an `initialize` is refused naming the versions this server speaks.
    /// Header mismatches are counted.
    fn check_discover(
        &self,
        headers: &HeaderMap,
        req: &Request,
        params: &Map<String, Value>,
    ) -> Result<(), Rejection> {
        let checked = if req.method == request::Initialize::METHOD {
            Err(discover::refuse_initialize(self.options.server.era, params))
        } else {
            discover::validate(&self.options.server, headers, &req.method, params)
        };
        if let Err(rejection) = &checked
            && rejection.code == mcp_stack_protocol::codes::HEADER_MISMATCH
        {
            self.stats.header_rejections.fetch_add(1, Ordering::Relaxed);
        }
        checked
    }
}

//! An expired session: replaying the handshake on a new one, and posting
//! the messages that are not requests (with the same expiry handling).

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Response};
use mcp_jsonrpc::{Id, Message};

use super::super::HttpTrace;
use super::super::client::{content_type, read_body, status_error};
use super::state::{self, Renewal};
use super::{Extra, Inner, Posted, closed_error};
use crate::TransportError;
use crate::sse::{SseItem, SseParser};

impl Inner {
    /// Initializes a new session after the one of `stale` expired: replays
    /// the initialize request and the initialized notification.
    pub(super) async fn renew(
        self: &Arc<Self>,
        stale: u64,
        status: Option<u16>,
    ) -> Result<(), TransportError> {
        let _renewing = tokio::select! {
            guard = self.renewing.lock() => guard,
            () = self.closing.cancelled() => return Err(closed_error()),
        };
        let renewal = self.state().begin_renewal(stale);
        let ((init_id, init_body), initialized) = match renewal {
            Renewal::Done => return Ok(()),
            Renewal::Replay { init, initialized } => (init, initialized),
            Renewal::Impossible => {
                return Err(TransportError::Http {
                    url: self.what(&Method::POST).to_owned(),
                    message: "the session expired and there is no initialize request to replay"
                        .into(),
                });
            }
        };
        let status = status.map(|s| format!("HTTP {s}")).unwrap_or_default();
        tracing::info!(
            server = self.options().name(),
            "session expired ({status}); initializing a new one"
        );
        self.options().observe(HttpTrace::Note(format!(
            "session expired ({status}); replaying initialize for a new session"
        )));
        let what = self.what(&Method::POST);
        let response = self.post(&init_body, false, Extra::None).await?.response;
        if !response.status().is_success() {
            return Err(status_error(response, what).await);
        }
        self.state().session_started(response.headers());
        self.drain_answer(response, &init_id).await?;
        if let Some(body) = initialized {
            let response = self.post(&body, true, Extra::None).await?.response;
            if !response.status().is_success() {
                return Err(status_error(response, what).await);
            }
        }
        // A renewal does not wait for it: requests are waiting.
        let _ = self.start_get_stream();
        Ok(())
    }

    /// Reads the answer to a replayed initialize without handing it on.
    pub(super) async fn drain_answer(
        &self,
        response: Response<Incoming>,
        init_id: &Id,
    ) -> Result<(), TransportError> {
        let what = self.what(&Method::POST);
        let limit = self.options().max_event_size;
        let timeout = self.options().request_timeout;
        match &*content_type(&response) {
            "text/event-stream" => {
                let read = async {
                    let mut body = response.into_body();
                    let mut parser = SseParser::with_max_event_size(limit);
                    while let Some(Ok(frame)) = body.frame().await {
                        let Ok(data) = frame.into_data() else {
                            continue;
                        };
                        parser.push(&data);
                        while let Some(item) = parser.next_item() {
                            if let SseItem::Event(e) = item
                                && let Ok(m) = Message::from_slice(&e.data)
                                && m.id() == Some(init_id)
                            {
                                return;
                            }
                        }
                    }
                };
                tokio::time::timeout(timeout, read)
                    .await
                    .map_err(|_| TransportError::Timeout {
                        what: "the answer to the replayed initialize".into(),
                        after: timeout,
                    })
            }
            _ => read_body(response.into_body(), limit, timeout, what)
                .await
                .map(drop),
        }
    }

    /// POSTs a notification or a response; the server should answer 202.
    pub(super) async fn post_other(self: &Arc<Self>, body: Bytes) -> Result<(), TransportError> {
        let what = self.what(&Method::POST);
        let mut renewed = false;
        loop {
            let Posted { response, session } = self.post(&body, true, Extra::None).await?;
            if response.status().is_success() {
                return Ok(());
            }
            let error = status_error(response, what).await;
            if let Some(generation) = session
                && !renewed
                && state::is_expiry(&error)
            {
                renewed = true;
                self.renew(generation, error.http_status()).await?;
                continue;
            }
            return Err(error);
        }
    }
}

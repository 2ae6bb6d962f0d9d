//! The GET stream: server-initiated messages of a session, and resuming a
//! dropped request stream.

use std::sync::Arc;

use hyper::Method;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use tokio::sync::oneshot;

use super::super::client::event_stream;
use super::{Inner, LAST_EVENT_ID};
use crate::TransportError;
use crate::sse::SseParser;

/// The longest wait between two attempts to reopen the GET stream.
const MAX_RECONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Inner {
    /// Opens a GET stream; `Ok(None)` when the server answers 405.
    pub(super) async fn open_get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Option<Incoming>, TransportError> {
        let mut headers = self.headers("text/event-stream", true).headers;
        if let Some(last) = last_event_id
            && let Ok(v) = HeaderValue::from_str(last)
        {
            headers.insert(LAST_EVENT_ID, v);
        }
        let what = self.what(&Method::GET);
        let request = self.client.build(Method::GET, &self.url, headers, None);
        let response = self.client.send(request).await?;
        if response.status() == hyper::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(None);
        }
        event_stream(response, what).await.map(Some)
    }

    /// The GET stream for server-initiated messages of one session;
    /// `opened` hears when the first attempt is answered (or failed).
    pub(super) async fn run_get_stream(
        self: Arc<Self>,
        generation: u64,
        mut opened: Option<oneshot::Sender<()>>,
    ) {
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        let mut failures = 0u32;
        loop {
            if self.closing.is_cancelled() || self.state().generation() != generation {
                return;
            }
            let last = parser.last_event_id().map(str::to_owned);
            let result = self.open_get(last.as_deref()).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match result {
                Ok(Some(body)) => {
                    failures = 0;
                    let idle = self.options().idle_stream_timeout;
                    self.pump(body, &mut parser, None, Some(idle)).await;
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(server = self.options().name(), "GET stream: {e}");
                    if e.http_status().is_some_and(|s| (400..500).contains(&s)) {
                        return;
                    }
                    failures += 1;
                    if failures > self.options().max_reconnects {
                        return;
                    }
                }
            }
            // The server's `retry` when it gave one (the spec's rule); else a
            // jittered backoff from the default, so clients that lost the
            // same server do not reconnect in step.
            let wait = parser.retry().unwrap_or_else(|| {
                crate::backoff::delay(
                    failures.max(1),
                    self.options().default_retry,
                    MAX_RECONNECT_WAIT,
                    self.options().name(),
                )
            });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.closing.cancelled() => return,
            }
        }
    }

    /// Starts the GET stream; what it gives hears when the server has
    /// answered the stream's request (or it failed).
    pub(super) fn start_get_stream(self: &Arc<Self>) -> Option<oneshot::Receiver<()>> {
        if !self.options().get_stream {
            return None;
        }
        let generation = self.state().generation();
        let me = Arc::clone(self);
        let (opened, answered) = oneshot::channel();
        self.spawn(me.run_get_stream(generation, Some(opened)));
        Some(answered)
    }
}

//! The GET stream: server-initiated messages of a session, and resuming a
//! dropped request stream.

use std::sync::Arc;

use hyper::Method;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use tokio::sync::oneshot;

use super::super::HttpTrace;
use super::super::client::event_stream;
use super::state::GetStream;
use super::{Inner, LAST_EVENT_ID};
use crate::TransportError;
use crate::sse::SseParser;

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
    ///
    /// When the stream ends it is opened again, after a wait the IO-free
    /// [`GetStream`] chooses: the server's `retry` (at least
    /// [`MIN_STREAM_RETRY`](crate::backoff::MIN_STREAM_RETRY)), and a
    /// backoff that only a stream that lived long enough starts afresh. The
    /// trace and a `tracing` event name each wait and why.
    pub(super) async fn run_get_stream(
        self: Arc<Self>,
        generation: u64,
        mut opened: Option<oneshot::Sender<()>>,
    ) {
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        let mut get = GetStream::default();
        loop {
            if self.closing.is_cancelled() || self.state().generation() != generation {
                return;
            }
            let last = parser.last_event_id().map(str::to_owned);
            let result = self.open_get(last.as_deref()).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let mut lived = None;
            let why = match result {
                Ok(Some(body)) => {
                    get.opened();
                    let since = tokio::time::Instant::now();
                    let idle = self.options().idle_stream_timeout;
                    self.pump(body, &mut parser, None, Some(idle)).await;
                    let life = since.elapsed();
                    lived = Some(life);
                    let young = get.ended(life);
                    format!(
                        "the GET stream ended after {} ms{}",
                        life.as_millis(),
                        if young {
                            " (young: the backoff goes on)"
                        } else {
                            ""
                        }
                    )
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(server = self.options().name(), "GET stream: {e}");
                    if e.http_status().is_some_and(|s| (400..500).contains(&s)) {
                        return;
                    }
                    if get.failed(self.options().max_reconnects) {
                        return;
                    }
                    format!("opening the GET stream failed: {e}")
                }
            };
            let pace = get.next_wait(
                parser.retry(),
                self.options().default_retry,
                self.options().name(),
            );
            pace.trace(self.options().name(), "GET", lived);
            self.options().observe(HttpTrace::Note(format!(
                "{why}; reopening it {}",
                pace.describe()
            )));
            tokio::select! {
                () = tokio::time::sleep(pace.wait) => {}
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

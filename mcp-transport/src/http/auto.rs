//! Streamable HTTP with fallback to the legacy HTTP+SSE transport.
//!
//! [`connect`] returns a transport that decides on its first `send` (the
//! `initialize` request), as the spec's backwards-compatibility section
//! says: it POSTs the message to the URL with streamable HTTP; when the
//! server answers 400, 404 or 405, it GETs the same URL as an HTTP+SSE
//! stream and goes on with that. A refused 2026-07-28 probe
//! (`server/discover`) does not choose: the error goes back to the session,
//! which falls back to `initialize`, and that decides. The choice is remembered in a
//! [`TransportCache`] (keyed by URL) that the caller keeps, so the next
//! connection to that server goes straight to the right transport.
//!
//! ```no_run
//! use mcp_stack_transport::http::HttpOptions;
//! use mcp_stack_transport::http::auto::{self, TransportCache};
//!
//! # async fn demo() -> Result<(), mcp_stack_transport::TransportError> {
//! let cache = TransportCache::new();
//! let transport = auto::connect("http://127.0.0.1:3000/mcp", HttpOptions::new(), &cache).await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use mcp_stack_jsonrpc::Message;
use tokio::sync::{Mutex, watch};

use super::{HttpOptions, HttpTrace, SseTransport, StreamableHttpTransport};
use crate::{
    Answer, BoxFuture, Lifecycle, Received, SendContext, Transport, TransportError, TransportKind,
};

/// Which HTTP transport each URL turned out to speak. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct TransportCache(Arc<StdMutex<HashMap<String, TransportKind>>>);

impl TransportCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The transport remembered for a URL.
    pub fn get(&self, url: &str) -> Option<TransportKind> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(url)
            .copied()
    }

    /// Remembers the transport of a URL.
    pub fn insert(&self, url: &str, kind: TransportKind) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(url.to_owned(), kind);
    }
}

/// A transport that picks streamable HTTP or HTTP+SSE on its first send.
pub struct AutoTransport {
    url: String,
    options: HttpOptions,
    cache: TransportCache,
    /// Held while choosing.
    choosing: Mutex<()>,
    chosen: watch::Sender<Option<Arc<dyn Transport>>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for AutoTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoTransport")
            .field("kind", &self.chosen.borrow().as_ref().map(|t| t.kind()))
            .finish_non_exhaustive()
    }
}

/// A transport for `url` that uses what `cache` remembers for it, or finds
/// out on the first send (streamable HTTP first, HTTP+SSE on 400/404/405).
///
/// When the cache says HTTP+SSE, the SSE stream is opened here.
pub async fn connect(
    url: &str,
    options: HttpOptions,
    cache: &TransportCache,
) -> Result<AutoTransport, TransportError> {
    let known: Option<Arc<dyn Transport>> = match cache.get(url) {
        Some(TransportKind::Sse) => {
            Some(Arc::new(SseTransport::connect(url, options.clone()).await?))
        }
        Some(TransportKind::StreamableHttp) => Some(Arc::new(
            StreamableHttpTransport::connect(url, options.clone()).await?,
        )),
        _ => {
            // Check the settings now, not at the first send.
            StreamableHttpTransport::connect(url, options.clone()).await?;
            None
        }
    };
    Ok(AutoTransport {
        url: url.to_owned(),
        options,
        cache: cache.clone(),
        choosing: Mutex::new(()),
        chosen: watch::Sender::new(known),
        closed: AtomicBool::new(false),
    })
}

impl AutoTransport {
    fn current(&self) -> Option<Arc<dyn Transport>> {
        self.chosen.borrow().clone()
    }

    async fn choose_and_send(
        &self,
        message: &Message,
        context: &SendContext,
    ) -> Result<(), TransportError> {
        let _guard = self.choosing.lock().await;
        if let Some(t) = self.current() {
            return t.send_with(message, context).await;
        }
        let streamable = StreamableHttpTransport::connect(&self.url, self.options.clone()).await?;
        match streamable.send_with(message, context).await {
            Ok(()) => {
                self.cache.insert(&self.url, TransportKind::StreamableHttp);
                self.chosen.send_replace(Some(Arc::new(streamable)));
                Ok(())
            }
            // Only a refused `initialize` says the server may speak HTTP+SSE:
            // a refused 2026-07-28 probe (`server/discover`) goes back to the
            // session, which falls back to `initialize` and so comes here again.
            Err(e)
                if matches!(e.http_status(), Some(400 | 404 | 405))
                    && context.lifecycle_of() == Lifecycle::Initialize =>
            {
                streamable.close().await;
                self.options.observe(HttpTrace::Note(format!(
                    "streamable HTTP was refused ({e}); falling back to HTTP+SSE"
                )));
                tracing::info!("streamable HTTP refused ({e}); trying the HTTP+SSE transport");
                let sse = SseTransport::connect(&self.url, self.options.clone())
                    .await
                    .map_err(|sse_error| TransportError::Http {
                        url: self.url_for_errors(),
                        message: format!(
                            "neither transport worked: streamable HTTP: {e}; HTTP+SSE: {sse_error}"
                        ),
                    })?;
                sse.send_with(message, context).await?;
                self.cache.insert(&self.url, TransportKind::Sse);
                self.chosen.send_replace(Some(Arc::new(sse)));
                Ok(())
            }
            Err(e) => {
                streamable.close().await;
                Err(e)
            }
        }
    }

    fn url_for_errors(&self) -> String {
        super::parse_url(&self.url)
            .map(|u| super::redact_url(&u))
            .unwrap_or_default()
    }
}

impl Transport for AutoTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(TransportError::closed("closed by the client"));
            }
            match self.current() {
                Some(t) => t.send_with(message, context).await,
                None => self.choose_and_send(message, context).await,
            }
        })
    }

    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(TransportError::closed("closed by the client"));
            }
            match self.current() {
                Some(t) => t.request_with(request, context).await,
                None => self
                    .choose_and_send(request, context)
                    .await
                    .map(|()| Answer::Later),
            }
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let mut rx = self.chosen.subscribe();
            let transport = loop {
                if self.closed.load(Ordering::SeqCst) {
                    return Err(TransportError::closed("closed by the client"));
                }
                if let Some(t) = rx.borrow_and_update().clone() {
                    break t;
                }
                if rx.changed().await.is_err() {
                    return Err(TransportError::closed("closed by the client"));
                }
            };
            transport.recv().await
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closed.store(true, Ordering::SeqCst);
            // Wake a recv waiting for the choice.
            self.chosen.send_modify(|_| {});
            if let Some(t) = self.current() {
                t.close().await;
            }
        })
    }

    fn kind(&self) -> TransportKind {
        self.current()
            .map_or(TransportKind::StreamableHttp, |t| t.kind())
    }
}

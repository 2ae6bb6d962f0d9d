//! Writing SSE: events and streamed responses.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::Response;
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use tokio::sync::mpsc;

use super::response::Body;

/// One SSE event (`id:` and `event:` lines when given, then `data:`).
pub(super) fn sse_event(id: Option<&str>, event: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    if let Some(event) = event {
        out.extend_from_slice(format!("event: {event}\n").as_bytes());
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The priming event of request stream `sid`: an id and no data, so the
/// client can resume; with `retry` (ms) before a stream that is dropped.
pub(super) fn priming_event(sid: u64, retry: Option<u64>) -> Bytes {
    let mut priming = format!("id: {sid}-p\n").into_bytes();
    if let Some(retry) = retry {
        priming.extend_from_slice(format!("retry: {retry}\n").as_bytes());
    }
    priming.extend_from_slice(b"data:\n\n");
    Bytes::from(priming)
}

/// An SSE response streaming what `rx` gets, until every sender is gone.
pub(super) fn sse_response(rx: mpsc::UnboundedReceiver<Bytes>) -> Response<Body> {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(Frame::data(bytes)), rx))
    });
    sse_headers(Response::new(StreamBody::new(stream).boxed()))
}

/// The headers of an SSE response.
pub(super) fn sse_headers(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

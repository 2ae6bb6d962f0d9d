//! An expired session, reported to the layer above (which runs the
//! handshake again), and posting the messages that are not requests.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Method;

use super::super::HttpTrace;
use super::super::client::status_error;
use super::state;
use super::{Extra, Inner, Posted};
use crate::{Received, TransportError};

impl Inner {
    /// The server answered a message sent in the session of `generation`
    /// with `error`, which says the session expired: the server did not
    /// process that message. The first such answer for the current
    /// session drops its id and reports [`Received::SessionExpired`];
    /// from then on only `initialize` is posted, until its answer starts
    /// a new session. Returns the message's error:
    /// [`TransportError::SessionExpired`].
    pub(super) async fn session_expired(
        &self,
        generation: u64,
        error: TransportError,
    ) -> TransportError {
        let reason = error.to_string();
        let news = self.state().expire(generation, &reason);
        if news {
            tracing::info!(
                server = self.options().name(),
                "the server's session expired ({reason}); waiting for a new handshake"
            );
            self.options().observe(HttpTrace::Note(format!(
                "session expired ({reason}); reported, waiting for initialize"
            )));
            self.deliver(Received::SessionExpired {
                reason: reason.clone(),
            })
            .await;
        }
        self.expired_error(reason)
    }

    /// The error of a message the server did not process because the
    /// session expired (`reason`).
    pub(super) fn expired_error(&self, reason: String) -> TransportError {
        TransportError::SessionExpired {
            url: self.what(&Method::POST).to_owned(),
            reason,
        }
    }

    /// POSTs a notification or a response; the server should answer 202.
    pub(super) async fn post_other(self: &Arc<Self>, body: Bytes) -> Result<(), TransportError> {
        let what = self.what(&Method::POST);
        let Posted { response, session } = self.post(&body, true, Extra::None).await?;
        if response.status().is_success() {
            return Ok(());
        }
        let error = status_error(response, what).await;
        match session {
            Some(generation) if state::is_expiry(&error) => {
                Err(self.session_expired(generation, error).await)
            }
            _ => Err(error),
        }
    }
}

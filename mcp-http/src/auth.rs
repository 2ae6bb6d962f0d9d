//! The hook through which a [`Client`](crate::Client) is authorized: an
//! [`Authorizer`] gives the headers for each request (`Authorization:
//! Bearer …`, a DPoP proof) and hears each 401 and 403 answer.
//!
//! The transports know nothing of OAuth. Every request they make (the POSTs,
//! the GET stream, the DELETE at close, the legacy SSE GET and its POSTs)
//! goes through one place that asks the authorizer for headers, sends, and on
//! a 401 or 403 hands the challenge to the authorizer, which may obtain new
//! credentials (refresh a token, authorize again with more scopes) and ask
//! for the request to be sent again. `mcp-stack-auth` implements the OAuth 2.1
//! flow of the MCP specification on this trait; a static token needs none
//! of it (use [`ClientOptions::header`](crate::ClientOptions::header), or
//! the transport options' header of the same name).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use hyper::header::HeaderMap;
use hyper::{Method, Uri};

use crate::HttpError;

/// The future an [`Authorizer`] returns.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How many times one request is sent again after a challenge, at most: a
/// refresh, then re-authorizations for more scopes. The authorizer keeps its
/// own, tighter limits; this one only makes a loop impossible.
pub const MAX_AUTH_RETRIES: u32 = 4;

/// Authorizes the requests of an HTTP transport. Implemented by `mcp-stack-auth`'s
/// OAuth client; an application may supply its own.
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The headers for a request about to go out (`Authorization`, and for
    /// DPoP a `DPoP` proof bound to `target`), or `None` to send it without.
    /// Called before every request, so it must be cheap when it has a fresh
    /// token; it may refresh one that is about to expire.
    fn credentials<'a>(
        &'a self,
        target: &'a RequestTarget,
    ) -> AuthFuture<'a, Result<Option<Credentials>, HttpError>>;

    /// The server answered a request with 401 or 403. Return
    /// [`AuthDecision::Retry`] once there are new credentials to send the
    /// request with, [`AuthDecision::GiveUp`] to hand the answer to the
    /// caller as it is, or an error that says what the user must do (log
    /// in, configure a client id).
    fn challenged<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> AuthFuture<'a, Result<AuthDecision, HttpError>>;
}

/// The request that credentials are for.
#[derive(Debug, Clone)]
pub struct RequestTarget {
    /// `POST`, `GET` or `DELETE`.
    pub method: Method,
    /// The full URL (DPoP proofs name it; never logged by the transport).
    pub uri: Uri,
}

/// Headers that authorize one request.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Credentials {
    /// The headers to add (their values are marked sensitive, never traced).
    pub headers: HeaderMap,
    /// Which credentials these are: handed back in the challenge a request
    /// sent with them receives, so an authorizer can tell a stale challenge
    /// (another request already refreshed) from a fresh one.
    pub generation: u64,
}

impl Credentials {
    /// Credentials made of these headers (marked sensitive here).
    pub fn new(mut headers: HeaderMap, generation: u64) -> Self {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        Credentials {
            headers,
            generation,
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(|k| k.as_str()).collect();
        f.debug_struct("Credentials")
            .field("headers", &names)
            .field("generation", &self.generation)
            .finish()
    }
}

/// A 401 or 403 answer, as an authorizer sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthChallenge {
    /// 401 or 403.
    pub status: u16,
    /// The request that was refused.
    pub target: RequestTarget,
    /// Every `WWW-Authenticate` value of the answer.
    pub www_authenticate: Vec<String>,
    /// The answer's `DPoP-Nonce`, when it has one.
    pub dpop_nonce: Option<String>,
    /// The generation of the credentials the request carried, `None` when
    /// it carried none.
    pub generation: Option<u64>,
    /// How many times this request was already sent again after a challenge.
    pub retries: u32,
}

/// What to do with a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthDecision {
    /// Send it again with fresh credentials.
    Retry,
    /// Hand the 401 or 403 to the caller.
    GiveUp,
}

/// The relevant parts of a refused answer's headers.
pub(crate) fn challenge_of(
    status: u16,
    target: RequestTarget,
    headers: &HeaderMap,
    generation: Option<u64>,
    retries: u32,
) -> AuthChallenge {
    let www_authenticate = headers
        .get_all(hyper::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let dpop_nonce = headers
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    AuthChallenge {
        status,
        target,
        www_authenticate,
        dpop_nonce,
        generation,
        retries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn credentials_never_show_their_values() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer s3cret"));
        let c = Credentials::new(h, 7);
        let shown = format!("{c:?}");
        assert!(shown.contains("authorization") && !shown.contains("s3cret"));
        assert!(c.headers.values().all(HeaderValue::is_sensitive));
    }

    #[test]
    fn a_challenge_keeps_every_www_authenticate_value_and_the_nonce() {
        let mut h = HeaderMap::new();
        h.append(
            "www-authenticate",
            HeaderValue::from_static("Basic realm=x"),
        );
        h.append(
            "www-authenticate",
            HeaderValue::from_static("Bearer scope=\"a b\""),
        );
        h.insert("dpop-nonce", HeaderValue::from_static("n1"));
        let target = RequestTarget {
            method: Method::POST,
            uri: Uri::from_static("http://127.0.0.1/mcp"),
        };
        let c = challenge_of(401, target, &h, Some(3), 0);
        assert_eq!(c.www_authenticate.len(), 2);
        assert_eq!(c.dpop_nonce.as_deref(), Some("n1"));
        assert_eq!(c.generation, Some(3));
    }
}

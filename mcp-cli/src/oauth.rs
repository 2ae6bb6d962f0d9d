//! The OAuth client every HTTP target carries, and what to tell the user
//! to run when a login is missing. `probe`, `tools`, `call` and the other
//! commands use stored tokens (refreshing them as they go) but never open a
//! browser: a server that needs a login makes them say which `mcp login` to
//! run (`auth`).

use std::path::Path;
use std::sync::Arc;

use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{FileStore, TokenStore};
use mcp_stack_config::{OAuthSettings, ResolvedServer};
use mcp_stack_runtime::HttpSettings;
use mcp_stack_transport::http::HttpError;
use mcp_stack_transport::http::auth::{
    AuthChallenge, AuthDecision, AuthFuture, Authorizer, Credentials, RequestTarget,
};

use crate::term;

/// What to tell the user to run.
pub(crate) fn login_hint(url: &str, config: Option<(&Path, &str)>) -> String {
    match config {
        Some((path, name)) => format!(
            "run `mcp login --config {} --server {name}`",
            path.display()
        ),
        None => format!(
            "run `mcp login --url {}`",
            mcp_stack_config::redact_url(url)
        ),
    }
}

/// The OAuth client settings for `url`: the config's, this program's
/// client name, and the login to name when one is missing.
pub(crate) fn oauth_config(url: &str, settings: &OAuthSettings, hint: &str) -> OAuthConfig {
    mcp_stack_runtime::oauth_config(url, settings)
        .client_name("mcp (mcp-client-rs)")
        .login_hint(hint)
}

/// The token store in the user's folder.
pub(crate) fn store() -> Result<Arc<dyn TokenStore>, String> {
    FileStore::default_location()
        .map(|s| Arc::new(s) as Arc<dyn TokenStore>)
        .map_err(|e| e.to_string())
}

/// The authorizer an HTTP target carries (no browser: a needed login is an
/// error naming the command), or `None` when OAuth is off for it or the
/// store cannot be had (then a 401 is reported as it is).
pub(crate) fn authorizer(http: &HttpSettings, hint: &str) -> Option<Arc<dyn Authorizer>> {
    if !http.wants_oauth() {
        return None;
    }
    let store = store().ok()?;
    let config = oauth_config(&http.url, &http.oauth, hint);
    match OAuthClient::new(config, &http.options, store, None) {
        Ok(client) => Some(Arc::new(Scrubbed(Arc::new(client)))),
        Err(e) => {
            tracing::debug!(error = %e, "no OAuth for this server");
            None
        }
    }
}

/// An authorizer whose tokens are scrubbed from everything printed: the
/// `Authorization` value of each request is registered as a secret as it
/// goes out, a refreshed token included.
#[derive(Debug)]
struct Scrubbed(Arc<dyn Authorizer>);

impl Authorizer for Scrubbed {
    fn credentials<'a>(
        &'a self,
        target: &'a RequestTarget,
    ) -> AuthFuture<'a, Result<Option<Credentials>, HttpError>> {
        Box::pin(async move {
            let credentials = self.0.credentials(target).await?;
            let sent = credentials
                .as_ref()
                .and_then(|c| c.headers.get("authorization"))
                .and_then(|v| v.to_str().ok());
            if let Some(value) = sent {
                term::keep_credential(value);
            }
            Ok(credentials)
        })
    }

    fn challenged<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> AuthFuture<'a, Result<AuthDecision, HttpError>> {
        self.0.challenged(challenge)
    }
}

/// The runtime's authorizers (`--config`), scrubbed like [`Scrubbed`].
#[derive(Debug)]
pub(crate) struct ScrubbedSource(Arc<dyn mcp_stack_runtime::AuthorizerSource>);

impl ScrubbedSource {
    pub(crate) fn new(inner: Arc<dyn mcp_stack_runtime::AuthorizerSource>) -> Self {
        ScrubbedSource(inner)
    }
}

impl mcp_stack_runtime::AuthorizerSource for ScrubbedSource {
    fn authorizer(&self, server: &ResolvedServer) -> Option<Arc<dyn Authorizer>> {
        self.0
            .authorizer(server)
            .map(|a| Arc::new(Scrubbed(a)) as Arc<dyn Authorizer>)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// An authorizer that hands out one bearer token.
    #[derive(Debug)]
    struct Fixed(&'static str);

    impl Authorizer for Fixed {
        fn credentials<'a>(
            &'a self,
            _target: &'a RequestTarget,
        ) -> AuthFuture<'a, Result<Option<Credentials>, HttpError>> {
            Box::pin(async move {
                let mut c = Credentials::default();
                let value = format!("Bearer {}", self.0).parse().unwrap();
                c.headers.insert("authorization", value);
                Ok(Some(c))
            })
        }

        fn challenged<'a>(
            &'a self,
            _challenge: &'a AuthChallenge,
        ) -> AuthFuture<'a, Result<AuthDecision, HttpError>> {
            Box::pin(async { Ok(AuthDecision::GiveUp) })
        }
    }

    #[tokio::test]
    async fn a_token_sent_is_scrubbed_from_what_is_printed() {
        let token = "tok-7f3a9c-from-the-authorizer";
        let echoed = format!("the server says: your token is {token}");
        assert_eq!(term::scrub(&echoed), echoed, "not known before it is sent");
        let target = RequestTarget {
            method: "POST".parse().unwrap(),
            uri: "http://127.0.0.1:1/mcp".parse().unwrap(),
        };
        let scrubbed = Scrubbed(Arc::new(Fixed(token)));
        let sent = scrubbed.credentials(&target).await.unwrap().unwrap();
        assert!(sent.headers.contains_key("authorization"));
        assert_eq!(
            term::scrub(&echoed),
            "the server says: your token is <redacted>"
        );
        assert_eq!(term::scrub(&format!("Bearer {token}")), "<redacted>");
    }
}

//! The OAuth client every HTTP target carries, and what to tell the user
//! to run when a login is missing. `probe`, `tools`, `call` and the other
//! commands use stored tokens (refreshing them as they go) but never open a
//! browser: a server that needs a login makes them say which `mcp login` to
//! run (`auth`).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{FileStore, LoginKey, StoreFuture, StoreLock, StoredAuth, TokenStore};
use mcp_stack_config::{OAuthSettings, ResolvedServer, TokenStoreKind};
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

/// `--token-store`, when given: it wins over the config and the environment.
static CHOSEN: OnceLock<TokenStoreKind> = OnceLock::new();

/// Records `--token-store` (once, at start).
pub(crate) fn choose_store(kind: Option<TokenStoreKind>) {
    if let Some(kind) = kind {
        let _ = CHOSEN.set(kind);
    }
}

/// `--token-store`'s values.
pub(crate) fn parse_store_kind(s: &str) -> Result<TokenStoreKind, String> {
    s.parse()
}

/// Which store keeps a server's tokens: `--token-store`, else the server's
/// `tokenStore` in the config, else `MCP_TOKEN_STORE`, else the file store.
/// The keychain is never the default: tokens a file store holds would seem
/// gone, and a locked keychain can stop a command to ask for a password.
pub(crate) fn store_kind(settings: Option<&OAuthSettings>) -> Result<TokenStoreKind, String> {
    if let Some(kind) = CHOSEN.get() {
        return Ok(*kind);
    }
    if let Some(kind) = settings.and_then(|s| s.token_store) {
        return Ok(kind);
    }
    match std::env::var("MCP_TOKEN_STORE") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|e| format!("MCP_TOKEN_STORE: {e}")),
        _ => Ok(TokenStoreKind::File),
    }
}

/// The token store of the program's choice (see [`store_kind`]).
pub(crate) fn store() -> Result<Arc<dyn TokenStore>, String> {
    store_for(None)
}

/// The token store of a server with these OAuth settings.
pub(crate) fn store_for(settings: Option<&OAuthSettings>) -> Result<Arc<dyn TokenStore>, String> {
    let files = FileStore::default_location().map_err(|e| e.to_string())?;
    match store_kind(settings)? {
        TokenStoreKind::Keyring => keyring_store(files),
        _ => Ok(Arc::new(files)),
    }
}

/// The store the runtime's logins use for a config's servers: each
/// server's own choice ([`store_kind`]), by the canonical URI its tokens
/// are kept under.
pub(crate) fn runtime_store(
    config: &mcp_stack_config::ResolvedConfig,
) -> Result<Arc<dyn TokenStore>, String> {
    let default_kind = store_kind(None)?;
    let default = store_for(None)?;
    let mut routed = Routed {
        default: default.clone(),
        by_server: Vec::new(),
        others: Vec::new(),
    };
    for server in config.servers.values() {
        let (Some(settings), mcp_stack_config::TransportConfig::Http { url, .. }) =
            (&server.oauth, &server.transport)
        else {
            continue;
        };
        let kind = store_kind(Some(settings))?;
        let Ok(key) = mcp_stack_auth::canonical::canonical_resource(url) else {
            continue;
        };
        if kind == default_kind {
            continue;
        }
        let store = match routed.others.iter().find(|(k, _)| *k == kind) {
            Some((_, store)) => store.clone(),
            None => {
                let store = store_for(Some(settings))?;
                routed.others.push((kind, store.clone()));
                store
            }
        };
        routed.by_server.push((key, store));
    }
    if routed.by_server.is_empty() {
        return Ok(default);
    }
    Ok(Arc::new(routed))
}

/// Servers whose config chose another store than the program's.
#[derive(Debug)]
struct Routed {
    default: Arc<dyn TokenStore>,
    /// By canonical URI.
    by_server: Vec<(String, Arc<dyn TokenStore>)>,
    /// The other stores, one per kind.
    others: Vec<(TokenStoreKind, Arc<dyn TokenStore>)>,
}

impl Routed {
    fn pick(&self, server: &str) -> &dyn TokenStore {
        self.by_server
            .iter()
            .find(|(key, _)| key == server)
            .map_or(&*self.default, |(_, store)| &**store)
    }
}

impl TokenStore for Routed {
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>> {
        self.pick(server).load(identity, server)
    }

    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        self.pick(&entry.server).save(entry)
    }

    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize> {
        self.pick(server).remove(identity, server, issuer)
    }

    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>> {
        Box::pin(async move {
            let mut all = self.default.list().await?;
            for (_, store) in &self.others {
                for e in store.list().await? {
                    if !all.iter().any(|a| {
                        a.identity == e.identity && a.server == e.server && a.issuer == e.issuer
                    }) {
                        all.push(e);
                    }
                }
            }
            Ok(all)
        })
    }

    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock> {
        self.pick(&key.server).lock(key)
    }
}

/// The OS credential store, its locks (and the tokens kept before) in the
/// file store's folder; `MCP_KEYRING_SERVICE` names the service its items
/// are kept under (default `mcp-stack`).
#[cfg(feature = "keyring")]
fn keyring_store(files: FileStore) -> Result<Arc<dyn TokenStore>, String> {
    let mut store = mcp_stack_auth::store::KeyringStore::new(files);
    if let Ok(service) = std::env::var("MCP_KEYRING_SERVICE")
        && !service.trim().is_empty()
    {
        store = store.service(service.trim());
    }
    Ok(Arc::new(store))
}

#[cfg(not(feature = "keyring"))]
fn keyring_store(_files: FileStore) -> Result<Arc<dyn TokenStore>, String> {
    Err("this mcp was built without the keyring feature: use --token-store file".into())
}

/// The authorizer an HTTP target carries (no browser: a needed login is an
/// error naming the command), or `None` when OAuth is off for it or the
/// store cannot be had (then a 401 is reported as it is).
pub(crate) fn authorizer(http: &HttpSettings, hint: &str) -> Option<Arc<dyn Authorizer>> {
    if !http.wants_oauth() {
        return None;
    }
    let store = match store_for(Some(&http.oauth)) {
        Ok(store) => store,
        Err(e) => {
            tracing::debug!(error = %e, "no token store");
            return None;
        }
    };
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

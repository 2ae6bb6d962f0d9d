//! [`StoredLogins`]: OAuth for the runtime's HTTP servers, from a token
//! store (cargo feature `oauth`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::TokenStore;
use mcp_stack_config::{Fingerprint, OAuthSettings, ResolvedServer, TransportConfig};
use mcp_stack_transport::http::HttpOptions;
use mcp_stack_transport::http::auth::Authorizer;

use crate::connector::AuthorizerSource;

/// Tells the user how to log in to a server (the runtime never opens a
/// browser): e.g. `run \`mcp login --config agents.json --server docs\``.
pub type LoginHint = Arc<dyn Fn(&ResolvedServer) -> String + Send + Sync>;

/// Authorizes each HTTP server with `mcp-stack-auth`'s OAuth client over one
/// token store: stored tokens are sent and refreshed (shortly before they
/// expire, and once on a 401) during long agent sessions; a server with no
/// usable login fails to start with the hint, and its diagnostic says so.
/// One client per identity, server and fingerprint, kept across
/// reconnections: sessions of one identity
/// ([`RuntimeManager::acquire_as`](crate::RuntimeManager::acquire_as))
/// share its logins, and no other identity's.
pub struct StoredLogins {
    store: Arc<dyn TokenStore>,
    hint: LoginHint,
    clients: Mutex<HashMap<(String, String, Fingerprint), Arc<OAuthClient>>>,
}

impl fmt::Debug for StoredLogins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredLogins")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl StoredLogins {
    /// Logins from `store`; `hint` words the error of a missing login.
    pub fn new(store: Arc<dyn TokenStore>, hint: LoginHint) -> Self {
        StoredLogins {
            store,
            hint,
            clients: Mutex::new(HashMap::new()),
        }
    }
}

/// The OAuth client settings a server's config gives: its pre-registered
/// client (id and secret), client metadata document URL and scopes. The
/// runtime and the `mcp` command build their clients from this, then add
/// what is theirs (a login hint, a client name).
pub fn oauth_config(url: &str, settings: &OAuthSettings) -> OAuthConfig {
    let mut config = OAuthConfig::new(url);
    if let Some(id) = &settings.client_id {
        config = config.client(id.clone(), settings.client_secret.clone());
    }
    if let Some(url) = &settings.client_metadata_url {
        config = config.client_metadata_url(url.clone());
    }
    if let Some(scopes) = &settings.scopes {
        config = config.scopes(scopes.clone());
    }
    config
}

impl AuthorizerSource for StoredLogins {
    fn authorizer(&self, server: &ResolvedServer) -> Option<Arc<dyn Authorizer>> {
        self.authorizer_for(server, "")
    }

    fn authorizer_for(
        &self,
        server: &ResolvedServer,
        identity: &str,
    ) -> Option<Arc<dyn Authorizer>> {
        let TransportConfig::Http { url, .. } = &server.transport else {
            return None;
        };
        let settings = server.oauth.clone().unwrap_or_default();
        if !settings.is_enabled() {
            return None;
        }
        let key = (identity.to_owned(), server.name.clone(), server.fingerprint);
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&key) {
            return Some(client.clone());
        }
        let config = oauth_config(url, &settings)
            .login_hint((self.hint)(server))
            .identity(identity);
        let options = HttpOptions::new()
            .request_timeout(server.request_timeout)
            .proxy(crate::settings::http_proxy(server));
        match OAuthClient::new(config, &options, self.store.clone(), None) {
            Ok(client) => {
                let client = Arc::new(client);
                clients.insert(key, client.clone());
                Some(client)
            }
            Err(e) => {
                tracing::warn!(server = %server.name, error = %e, "no OAuth client for this server");
                None
            }
        }
    }
}

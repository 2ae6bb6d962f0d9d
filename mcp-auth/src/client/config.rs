//! What an [`OAuthClient`](super::OAuthClient) is told: who the client is
//! and which grant obtains its tokens.

use crate::Secret;
use mcp_stack_protocol::endpoint::redact_url;

/// Which grant obtains tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A user authorizes in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The client acts on its own behalf (client credentials: a secret or a
    /// private key); no user, no browser.
    ClientCredentials,
    /// Workload identity: a JWT the workload's platform issued it, traded
    /// with the JWT bearer grant (RFC 7523); no user, no browser, no
    /// client secret. A refused assertion is final: the grant is neither
    /// retried nor swapped for another.
    JwtBearer {
        /// The workload's assertion (its audience: the authorization server).
        assertion: Secret,
    },
    /// Enterprise-managed authorization: the user's ID token from the
    /// enterprise identity provider is exchanged there for an ID-JAG for
    /// the authorization server (RFC 8693), which the JWT bearer grant
    /// trades for an access token; no browser. The client authenticates at
    /// the authorization server with its configured id and secret.
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// The user's ID token from the identity provider.
        id_token: Secret,
    },
}

impl Grant {
    /// Whether a person takes part (the authorization code grant).
    pub(super) fn has_user(&self) -> bool {
        matches!(self, Grant::AuthorizationCode)
    }
}

/// How this client identifies itself to authorization servers, and what
/// it asks for.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The MCP server's URL.
    pub server_url: String,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret (a confidential client).
    pub client_secret: Option<Secret>,
    /// A private key (PKCS#8 PEM) for `private_key_jwt`, and its algorithm
    /// (`ES256` or `RS256`).
    pub private_key: Option<(Secret, String)>,
    /// The HTTPS URL of this client's metadata document, used as its client
    /// id where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for in place of the spec's choice.
    pub scopes: Option<Vec<String>>,
    /// The name given in dynamic registration.
    pub client_name: String,
    /// Which grant.
    pub grant: Grant,
    /// What to tell the user to run when a login is needed and no user
    /// agent is at hand ("run `mcp login --url …`").
    pub login_hint: String,
    /// Bind tokens to a key (DPoP, RFC 9449) when the authorization server
    /// offers it (default true).
    pub dpop: bool,
    /// Whose logins to use: the platform's user or tenant id (empty, the
    /// default: the single user of a machine). Stored logins are kept per
    /// identity; two identities never share a token.
    pub identity: String,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("server_url", &redact_url(&self.server_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field(
                "private_key",
                &self.private_key.as_ref().map(|(_, alg)| alg),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// Settings for this server: no pre-registration, the spec's scope
    /// choice, the authorization-code grant.
    pub fn new(server_url: impl Into<String>) -> Self {
        OAuthConfig {
            server_url: server_url.into(),
            client_id: None,
            client_secret: None,
            private_key: None,
            client_metadata_url: None,
            scopes: None,
            client_name: "mcp-client".into(),
            grant: Grant::AuthorizationCode,
            login_hint: "log in again".into(),
            dpop: true,
            identity: String::new(),
        }
    }

    /// A pre-registered client id (and secret).
    pub fn client(mut self, id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// A private key for `private_key_jwt` (PKCS#8 PEM, `ES256` or `RS256`).
    pub fn private_key(mut self, pem: Secret, alg: impl Into<String>) -> Self {
        self.private_key = Some((pem, alg.into()));
        self
    }

    /// This client's metadata document URL (used as its client id).
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Scopes to ask for.
    pub fn scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = Some(scopes);
        self
    }

    /// The grant.
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// The name given in dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Use the logins of `identity` (see the field).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// What to tell the user when a login is needed (see the field).
    pub fn login_hint(mut self, hint: impl Into<String>) -> Self {
        self.login_hint = hint.into();
        self
    }
}

//! The MCP OAuth 2.1 client flow (MCP authorization, revisions 2025-03-26
//! through 2026-07-28): its decisions, IO-free, and (feature `client`, on
//! by default) the driver that runs them over `mcp-http`, the HTTP client
//! the transports use too (this crate does not depend on the transports).
//!
//! The decision modules fetch nothing, listen nowhere, open no browser,
//! read no clock and store no token: each takes what was received and says
//! what to do next, and every branch is unit-tested. The driver is
//! [`client::OAuthClient`], an `mcp_http` `Authorizer` that an HTTP
//! transport takes in its options; it keeps tokens in a [`store::TokenStore`]
//! (a file per server in the user's config folder, or memory) and sends a
//! user to authorize through an [`agent::UserAgent`] (a browser and a
//! loopback listener, or nothing at all in a runtime). The flow, module by
//! module:
//!
//! 1. A `401` from the MCP server: [`challenge`] reads its
//!    `WWW-Authenticate` (`resource_metadata`, `scope`, `error`).
//! 2. [`discovery`] lists the protected resource metadata URLs to try;
//!    [`metadata::ProtectedResourceMetadata::check`] checks the document
//!    against the server ([`canonical`] is the server's RFC 8707 resource).
//! 3. [`discovery`] lists the authorization server metadata URLs of the
//!    chosen issuer; [`metadata::AuthorizationServerMetadata::check`]
//!    checks the issuer, the endpoints and PKCE (2025-03-26 servers without
//!    protected resource metadata: [`discovery::legacy_metadata_url`], whose
//!    document must name the server's origin as its issuer
//!    ([`metadata::AuthorizationServerMetadata::check_origin_issuer`]), and
//!    [`discovery::legacy_default_endpoints`] when there is none).
//! 4. [`registration`] picks pre-registration, a Client ID Metadata
//!    Document or dynamic registration.
//! 5. [`scope`] picks the scopes, [`pkce`] makes the verifier and `state`,
//!    [`authorize`] builds the URL and checks the redirect (state, RFC 9207
//!    `iss`, errors).
//! 6. [`token`] builds the token request (client authentication, [`jwt`]
//!    for `private_key_jwt`) and reads the answer into [`token::Tokens`].
//! 7. A `403` with `insufficient_scope`: [`scope::step_up_scopes`] and
//!    [`scope::StepUp`].
//!
//! Secrets (tokens, codes, verifiers, client secrets, request bodies) are
//! [`Secret`]s, which never show themselves through `Debug`; [`AuthError`]
//! messages never contain one.
//!
//! ```
//! use mcp_auth::challenge::BearerChallenge;
//! use mcp_auth::discovery::{authorization_server_metadata_urls, protected_resource_metadata_urls};
//!
//! # fn main() -> Result<(), mcp_auth::AuthError> {
//! let server = "https://mcp.example.com/mcp";
//! let header = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#;
//! let challenge = BearerChallenge::from_headers(&[header]).expect("a Bearer challenge");
//! assert_eq!(challenge.scope.as_deref(), Some(&["files:read".to_owned()][..]));
//!
//! // Where the protected resource metadata is: the challenge says so.
//! let prm_urls = protected_resource_metadata_urls(server, challenge.resource_metadata.as_deref())?;
//! assert_eq!(prm_urls, ["https://mcp.example.com/.well-known/oauth-protected-resource/mcp"]);
//!
//! // Its `authorization_servers` named an issuer with a path:
//! let as_urls = authorization_server_metadata_urls("https://auth.example.com/tenant1")?;
//! assert_eq!(as_urls[0], "https://auth.example.com/.well-known/oauth-authorization-server/tenant1");
//! assert_eq!(as_urls.len(), 3);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "client")]
pub mod agent;
pub mod authorize;
pub mod canonical;
pub mod challenge;
#[cfg(feature = "client")]
pub mod client;
pub mod discovery;
pub mod dpop;
pub mod error;
pub mod jwt;
pub mod metadata;
pub mod pkce;
pub mod registration;
pub mod scope;
pub use mcp_protocol::secret;
#[cfg(feature = "client")]
pub mod store;
pub mod token;
mod uri;

pub use error::AuthError;
pub use secret::Secret;

//! The MCP OAuth 2.1 client flow (MCP authorization, revisions 2025-03-26
//! through 2026-07-28): its decisions, IO-free, and (feature `client`, on
//! by default) the driver that runs them over `mcp-stack-http`, the HTTP client
//! the transports use too (this crate does not depend on the transports).
//!
//! The decisions fetch nothing, listen nowhere, open no browser, read no
//! clock and store no token: each takes what was received and says what to
//! do next, and every branch is unit-tested. The driver is
//! [`client::OAuthClient`], an `mcp_stack_http` `Authorizer` that an HTTP
//! transport takes in its options; it keeps tokens in a [`store::TokenStore`]
//! (a file per server in the user's config folder, or memory) and sends a
//! user to authorize through an [`agent::UserAgent`] (a browser and a
//! loopback listener, or nothing at all in a runtime).
//!
//! The public surface is what an application embedding OAuth uses: the
//! driver ([`client`]: `OAuthClient`, `OAuthConfig`, `Grant`), its stores
//! ([`store`]), its user agents ([`agent`]), [`AuthError`] and [`Secret`];
//! and the decisions a program outside the driver has a use for:
//! [`challenge`] (reading `WWW-Authenticate`), [`discovery`] (the metadata
//! URLs to try, in the spec's order) and [`canonical`] (the server's RFC
//! 8707 resource, the key tokens are stored under). The other steps of the
//! flow are private modules the driver runs, in order: a 401's challenge;
//! the protected resource metadata and its checks against the server; the
//! authorization server metadata (issuer, endpoints, PKCE S256; the
//! 2025-03-26 fallbacks); registration (pre-registered, a Client ID
//! Metadata Document, dynamic); scopes and PKCE; the authorization URL and
//! the redirect's checks (state, RFC 9207 `iss`); the token request (client
//! authentication, `private_key_jwt`) and its answer; DPoP proofs; a 403's
//! step-up to more scopes.
//!
//! Secrets (tokens, codes, verifiers, client secrets, request bodies) are
//! [`Secret`]s, which never show themselves through `Debug`; [`AuthError`]
//! messages never contain one.
//!
//! ```
//! use mcp_stack_auth::challenge::BearerChallenge;
//! use mcp_stack_auth::discovery::{authorization_server_metadata_urls, protected_resource_metadata_urls};
//!
//! # fn main() -> Result<(), mcp_stack_auth::AuthError> {
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
#[cfg(feature = "client")]
mod authorize;
pub mod canonical;
pub mod challenge;
#[cfg(feature = "client")]
pub mod client;
pub mod discovery;
#[cfg(feature = "client")]
mod dpop;
mod error;
// Partly used by the public decisions (challenge, discovery, canonical),
// wholly by the driver: without it, what only the driver uses is idle.
#[cfg_attr(not(feature = "client"), allow(dead_code, unused_imports))]
mod jwt;
#[cfg_attr(not(feature = "client"), allow(dead_code, unused_imports))]
mod metadata;
#[cfg_attr(not(feature = "client"), allow(dead_code, unused_imports))]
mod pkce;
#[cfg(feature = "client")]
mod registration;
#[cfg(feature = "client")]
mod scope;
#[cfg(feature = "client")]
pub mod store;
#[cfg_attr(not(feature = "client"), allow(dead_code, unused_imports))]
mod token;
mod uri;

pub use error::AuthError;
pub use mcp_stack_protocol::secret::Secret;

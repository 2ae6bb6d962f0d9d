//! The IO-free decisions of the MCP OAuth 2.1 client flow (work in progress).

pub mod authorize;
pub mod canonical;
pub mod challenge;
pub mod discovery;
pub mod error;
pub mod metadata;
pub mod pkce;
pub mod registration;
pub mod scope;
pub mod secret;
pub mod token;
mod uri;

pub use error::AuthError;
pub use secret::Secret;

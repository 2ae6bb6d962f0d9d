//! [`AuthError`]: why the authorization flow cannot go on, worded for the
//! person who has to fix it. No message ever contains a token, code,
//! verifier or client secret; URLs are shown without user info or query.

use thiserror::Error;

/// Why a step of the authorization flow failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A URL that cannot be parsed or lacks a part it needs.
    #[error("{what} {url} is not usable: {reason}")]
    InvalidUrl {
        /// What the URL is for (`server URL`, `token endpoint`, …).
        what: &'static str,
        /// The URL, without user info or query.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A URL that must be `https` (or point at this machine) but is not, or
    /// that carries user info or a fragment.
    #[error(
        "{what} {url} is not allowed: {reason}; authorization servers must be reached over \
         https (plain http only on 127.0.0.1, ::1 or localhost)"
    )]
    InsecureUrl {
        /// What the URL is for.
        what: &'static str,
        /// The URL, without user info or query.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The protected resource metadata names a different resource than the
    /// MCP server being accessed; the metadata must not be used.
    #[error(
        "the server's protected resource metadata is for {found}, not for {expected}; refusing \
         to authorize (check the server URL, or ask the server's operator to fix its metadata)"
    )]
    ResourceMismatch {
        /// The server's canonical URI.
        expected: String,
        /// The `resource` the metadata names.
        found: String,
    },
    /// An `issuer` differs from the one expected: in authorization server
    /// metadata (RFC 8414 §3.3) or in an authorization response (RFC 9207).
    #[error(
        "the authorization server identifies itself as {found}, but {expected} was expected; \
         refusing to continue (a mix-up attack or a misconfigured server)"
    )]
    IssuerMismatch {
        /// The issuer recorded before the request.
        expected: String,
        /// The issuer received.
        found: String,
    },
    /// The authorization server advertises `iss` in its responses but the
    /// response had none (RFC 9207 §2.4).
    #[error(
        "the authorization response has no `iss` although {issuer} promises one; refusing the \
         response (try signing in again)"
    )]
    IssuerMissing {
        /// The issuer recorded before the request.
        issuer: String,
    },
    /// The authorization server does not support PKCE with S256.
    #[error(
        "the authorization server {issuer} does not advertise PKCE with S256 \
         (code_challenge_methods_supported); MCP clients must refuse to authorize with it"
    )]
    PkceUnsupported {
        /// The authorization server.
        issuer: String,
    },
    /// Metadata that lacks a required field or has an unusable one.
    #[error("invalid {what}: {reason}")]
    InvalidMetadata {
        /// Which document (`protected resource metadata`, …).
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The authorization response's `state` is missing or not ours.
    #[error(
        "the authorization response does not carry the state of this request; it was discarded \
         (try signing in again)"
    )]
    StateMismatch,
    /// The authorization response (the redirect's query) is malformed.
    #[error("the authorization response is malformed: {reason}")]
    InvalidCallback {
        /// What is wrong.
        reason: &'static str,
    },
    /// The authorization server refused the authorization request.
    #[error("authorization was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The OAuth error code (`access_denied`, …).
        error: String,
        /// The server's `error_description`, if any.
        description: Option<String>,
    },
    /// No way to obtain a client id for this authorization server.
    #[error("configure a client id for this server: {reason}")]
    NoRegistration {
        /// Why none of the registration mechanisms applies.
        reason: String,
    },
    /// No client authentication method both sides support.
    #[error("no usable client authentication at the token endpoint: {reason}")]
    NoClientAuth {
        /// Why.
        reason: String,
    },
    /// A token endpoint answer that is not a usable token response.
    #[error("the token endpoint's answer is not a usable token response: {reason}")]
    InvalidTokenResponse {
        /// What is wrong.
        reason: String,
    },
    /// The token endpoint answered with an OAuth error (RFC 6749 §5.2).
    #[error("the token request was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRejected {
        /// The OAuth error code (`invalid_grant`, …).
        error: String,
        /// The server's `error_description`, if any.
        description: Option<String>,
    },
    /// A dynamic client registration answer that is not usable.
    #[error("the client registration answer is not usable: {reason}")]
    InvalidRegistration {
        /// What is wrong.
        reason: String,
    },
    /// A private key that cannot be used for client assertions.
    #[error("the private key cannot be used: {reason}")]
    InvalidKey {
        /// What is wrong (never key material).
        reason: String,
    },
    /// A PKCE verifier outside RFC 7636 §4.1's rules.
    #[error("a PKCE verifier is 43 to 128 characters of A-Z a-z 0-9 - . _ ~")]
    InvalidVerifier,
    /// The system's random number generator failed.
    #[error("the system random number generator failed")]
    Random,
    /// An HTTP exchange of the flow failed (the transport's words: status,
    /// URL without query, never a body that could hold a secret).
    #[error("talking to the authorization server failed: {0}")]
    Http(String),
    /// The token store failed.
    #[error("the token store: {0}")]
    Store(String),
    /// A login is needed and cannot happen here (no user agent, a revoked
    /// login): the message says what to run.
    #[error("{0}")]
    LoginRequired(String),
    /// Sending the user to authorize failed, or the user never came back.
    #[error("{0}")]
    Interaction(String),
}

/// A peer's text (an OAuth `error` or `error_description`, a URL it
/// published) fit for a message: each control character (C0, DEL, C1:
/// ESC, BEL, line breaks…) replaced by `\u{FFFD}`, so that no escape
/// sequence travels in an [`AuthError`], and at most `max` characters
/// (then `…`).
pub(crate) fn peer_text(text: &str, max: usize) -> String {
    let mut shown: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect();
    if text.chars().nth(max).is_some() {
        shown.push('…');
    }
    shown
}

/// How much of a peer's `error_description` an [`AuthError`] keeps.
pub(crate) const DESCRIPTION_CHARS: usize = 300;

/// How much of a peer's `error` code an [`AuthError`] keeps.
pub(crate) const ERROR_CODE_CHARS: usize = 64;

impl AuthError {
    /// The token endpoint refused a grant as `invalid_grant`: a refresh
    /// token that was revoked, spent or expired.
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, AuthError::TokenRejected { error, .. } if error == "invalid_grant")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_has_no_control_characters_and_a_bound() {
        assert_eq!(peer_text("plain text", 20), "plain text");
        assert_eq!(
            peer_text("\u{1b}[2J\u{7}\u{9b}31m\r\nok\u{7f}", 20),
            "\u{FFFD}[2J\u{FFFD}\u{FFFD}31m\u{FFFD}\u{FFFD}ok\u{FFFD}"
        );
        assert_eq!(peer_text("abcdef", 3), "abc…");
        assert_eq!(peer_text("abc", 3), "abc");
        assert_eq!(peer_text("é日本", 2), "é日…");
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = AuthError::NoRegistration {
            reason: "the authorization server offers neither".into(),
        };
        assert!(
            e.to_string()
                .starts_with("configure a client id for this server: ")
        );
        let d = AuthError::Denied {
            error: "access_denied".into(),
            description: Some("user said no".into()),
        };
        assert_eq!(
            d.to_string(),
            "authorization was refused: access_denied (user said no)"
        );
        let d = AuthError::TokenRejected {
            error: "invalid_grant".into(),
            description: None,
        };
        assert_eq!(
            d.to_string(),
            "the token request was refused: invalid_grant"
        );
        assert!(
            AuthError::StateMismatch
                .to_string()
                .contains("try signing in again")
        );
    }
}

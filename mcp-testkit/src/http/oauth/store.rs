//! What the authorization server remembers (clients, codes, tokens) and its
//! clock, without IO: the endpoints decide, this keeps the books.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AuthMethod {
    /// A public client: `client_id` in the form, no secret.
    None,
    /// `Authorization: Basic` with the id and secret.
    Basic,
    /// `client_id` and `client_secret` in the form.
    Post,
}

impl AuthMethod {
    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(AuthMethod::None),
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            _ => None,
        }
    }
}

/// A client the authorization server knows.
#[derive(Clone)]
pub(super) struct Client {
    pub(super) id: String,
    pub(super) secret: Option<String>,
    pub(super) auth: AuthMethod,
    pub(super) redirect_uris: Vec<String>,
    pub(super) grant_types: Vec<String>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .field("auth", &self.auth)
            .field("redirect_uris", &self.redirect_uris)
            .field("grant_types", &self.grant_types)
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(super) fn may(&self, grant_type: &str) -> bool {
        self.grant_types.iter().any(|g| g == grant_type)
    }
}

/// An authorization code and what it was issued for.
#[derive(Debug, Clone)]
pub(super) struct Code {
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    /// `None` only with the `no-pkce` misbehaviour.
    pub(super) challenge: Option<String>,
    pub(super) resource: String,
    pub(super) scopes: Vec<String>,
    pub(super) expires: Instant,
}

/// What a token (access or refresh) was issued for.
#[derive(Debug, Clone)]
pub(super) struct Grant {
    pub(super) client_id: String,
    pub(super) scopes: Vec<String>,
    pub(super) resource: String,
    /// Access tokens only.
    pub(super) expires: Option<Instant>,
}

/// Why a bearer token is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TokenProblem {
    Unknown,
    Expired,
    OtherResource,
}

/// How long an authorization code lives (OAuth 2.1 recommends at most ten
/// minutes).
const CODE_LIFETIME: Duration = Duration::from_secs(600);

/// The books. Every secret is a random opaque string.
pub(super) struct Store {
    seed: [u8; 32],
    counter: u64,
    /// Added to the real clock, so tests can move time forward.
    offset: Duration,
    pub(super) clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    access: HashMap<String, Grant>,
    refresh: HashMap<String, Grant>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("clients", &self.clients.len())
            .field("codes", &self.codes.len())
            .field("access_tokens", &self.access.len())
            .field("refresh_tokens", &self.refresh.len())
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

/// A seed for the random strings: the standard library's random hash keys
/// (as `mcp-stack-transport`'s backoff jitter uses them), the time and the process.
fn seed() -> [u8; 32] {
    let mut h = Sha256::new();
    for i in 0u64..4 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(i);
        h.update(hasher.finish().to_le_bytes());
    }
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.update(t.as_nanos().to_le_bytes());
    }
    h.update(std::process::id().to_le_bytes());
    h.finalize().into()
}

/// BASE64URL(SHA256(verifier)), the S256 code challenge (RFC 7636).
pub(super) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// RFC 7636's `code_verifier` (and our check of `code_challenge`): 43 to
/// 128 unreserved characters.
pub(super) fn pkce_shaped(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// Compares secrets without stopping at the first difference.
pub(super) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

impl Store {
    pub(super) fn new() -> Self {
        Store {
            seed: seed(),
            counter: 0,
            offset: Duration::ZERO,
            clients: HashMap::new(),
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: HashMap::new(),
        }
    }

    /// The server's clock: the real one plus what tests advanced it by.
    pub(super) fn now(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.offset).unwrap_or(now)
    }

    /// How far the clock was moved forward.
    pub(super) fn offset(&self) -> Duration {
        self.offset
    }

    /// Moves the clock forward.
    pub(super) fn advance(&mut self, by: Duration) {
        self.offset = self.offset.saturating_add(by);
    }

    /// A fresh random string: `prefix` and 43 base64url characters.
    pub(super) fn random(&mut self, prefix: &str) -> String {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(self.counter.to_le_bytes());
        format!("{prefix}{}", URL_SAFE_NO_PAD.encode(h.finalize()))
    }

    /// Issues an authorization code.
    pub(super) fn issue_code(
        &mut self,
        client_id: &str,
        redirect_uri: &str,
        challenge: Option<String>,
        resource: &str,
        scopes: Vec<String>,
    ) -> String {
        let code = self.random("code_");
        let expires = self.now() + CODE_LIFETIME;
        self.codes.insert(
            code.clone(),
            Code {
                client_id: client_id.to_owned(),
                redirect_uri: redirect_uri.to_owned(),
                challenge,
                resource: resource.to_owned(),
                scopes,
                expires,
            },
        );
        code
    }

    /// A code still unused and unexpired.
    pub(super) fn code(&self, code: &str) -> Option<&Code> {
        self.codes.get(code).filter(|c| self.now() < c.expires)
    }

    /// Uses a code up.
    pub(super) fn take_code(&mut self, code: &str) {
        self.codes.remove(code);
    }

    /// Issues an access token living `lifetime` (already expired with
    /// `expired`), and, with `refresh`, a refresh token for the same grant.
    pub(super) fn issue_tokens(
        &mut self,
        client_id: &str,
        scopes: &[String],
        resource: &str,
        lifetime: Duration,
        expired: bool,
        refresh: bool,
    ) -> (String, Option<String>) {
        let now = self.now();
        let expires = if expired {
            now
        } else {
            now.checked_add(lifetime).unwrap_or(now)
        };
        let grant = Grant {
            client_id: client_id.to_owned(),
            scopes: scopes.to_vec(),
            resource: resource.to_owned(),
            expires: Some(expires),
        };
        let access = self.random("at_");
        self.access.insert(access.clone(), grant.clone());
        let refresh = refresh.then(|| {
            let token = self.random("rt_");
            let grant = Grant {
                expires: None,
                ..grant
            };
            self.refresh.insert(token.clone(), grant);
            token
        });
        (access, refresh)
    }

    /// A refresh token's grant, if it is still valid.
    pub(super) fn refresh_grant(&self, token: &str) -> Option<&Grant> {
        self.refresh.get(token)
    }

    /// Invalidates a refresh token (rotation).
    pub(super) fn drop_refresh(&mut self, token: &str) {
        self.refresh.remove(token);
    }

    /// Adds a refresh token for a grant (rotation).
    pub(super) fn issue_refresh(&mut self, grant: Grant) -> String {
        let token = self.random("rt_");
        self.refresh.insert(token.clone(), grant);
        token
    }

    /// The scopes of a valid access token for `resource`.
    pub(super) fn check_access(
        &self,
        token: &str,
        resource: &str,
    ) -> Result<&[String], TokenProblem> {
        let grant = self.access.get(token).ok_or(TokenProblem::Unknown)?;
        if grant.expires.is_some_and(|e| self.now() >= e) {
            return Err(TokenProblem::Expired);
        }
        if grant.resource != resource {
            return Err(TokenProblem::OtherResource);
        }
        Ok(&grant.scopes)
    }

    /// Forgets every access and refresh token (and unused code).
    pub(super) fn revoke_all(&mut self) {
        self.access.clear();
        self.refresh.clear();
        self.codes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            s256(verifier),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert!(pkce_shaped(verifier));
        assert!(!pkce_shaped("short"));
        assert!(!pkce_shaped(&format!("{verifier}!")));
    }

    #[test]
    fn tokens_are_random_and_expire_on_the_servers_clock() {
        let mut s = Store::new();
        let scopes = vec!["mcp".to_owned()];
        let (a, r) = s.issue_tokens(
            "c",
            &scopes,
            "http://x/mcp",
            Duration::from_secs(60),
            false,
            true,
        );
        let (b, _) = s.issue_tokens("c", &scopes, "http://x/mcp", Duration::ZERO, false, false);
        assert_ne!(a, b);
        assert!(a.starts_with("at_") && r.is_some_and(|r| r.starts_with("rt_")));
        assert_eq!(s.check_access(&a, "http://x/mcp"), Ok(&scopes[..]));
        assert_eq!(
            s.check_access(&a, "http://x/sse"),
            Err(TokenProblem::OtherResource)
        );
        // A lifetime of 0 is expired at once.
        assert_eq!(
            s.check_access(&b, "http://x/mcp"),
            Err(TokenProblem::Expired)
        );
        s.advance(Duration::from_secs(61));
        assert_eq!(
            s.check_access(&a, "http://x/mcp"),
            Err(TokenProblem::Expired)
        );
        s.revoke_all();
        assert_eq!(
            s.check_access(&a, "http://x/mcp"),
            Err(TokenProblem::Unknown)
        );
    }

    #[test]
    fn codes_expire_and_are_taken_once() {
        let mut s = Store::new();
        let code = s.issue_code("c", "http://127.0.0.1/cb", None, "r", vec![]);
        assert!(s.code(&code).is_some());
        s.take_code(&code);
        assert!(s.code(&code).is_none());
        let code = s.issue_code("c", "http://127.0.0.1/cb", None, "r", vec![]);
        s.advance(CODE_LIFETIME);
        assert!(s.code(&code).is_none());
    }

    #[test]
    fn secrets_compare() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}

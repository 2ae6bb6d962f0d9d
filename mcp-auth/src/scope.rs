//! Which scopes to request: the specification's scope selection strategy,
//! `offline_access`, and the step-up after `insufficient_scope`.

/// The `offline_access` scope, which asks for a refresh token.
pub(crate) const OFFLINE_ACCESS: &str = "offline_access";

/// The scopes of the first authorization request; `None` means omit the
/// `scope` parameter.
///
/// 1. The `scope` of the `WWW-Authenticate` challenge, if any (the
///    specification: it is authoritative for the current request);
/// 2. else every scope of the protected resource metadata's `scopes_supported`;
/// 3. else none: the parameter is omitted.
///
/// `offline_access` is added when the client wants a refresh token
/// (`want_offline`) and the *authorization server's* `scopes_supported`
/// lists it — never otherwise (requesting a scope the server does not list
/// is an error; the conformance scenario `auth/offline-access-not-supported`
/// checks it). It is not added when step 3 omits the parameter: `scope=offline_access`
/// alone would replace the server's default scopes with a request for a
/// refresh token only, narrowing what the user is asked to grant.
/// Empty lists count as absent.
pub(crate) fn initial_scopes(
    challenge_scope: Option<&[String]>,
    prm_scopes_supported: Option<&[String]>,
    as_scopes_supported: Option<&[String]>,
    want_offline: bool,
) -> Option<Vec<String>> {
    let base = challenge_scope
        .filter(|s| !s.is_empty())
        .or(prm_scopes_supported.filter(|s| !s.is_empty()))?;
    let mut scopes = union(&[], base);
    let as_offers = as_scopes_supported.is_some_and(|s| s.iter().any(|s| s == OFFLINE_ACCESS));
    if want_offline && as_offers && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
        scopes.push(OFFLINE_ACCESS.to_owned());
    }
    Some(scopes)
}

/// The scopes of a step-up re-authorization: the scopes held (previously
/// requested) and then the challenged ones, in order, without duplicates.
/// The 2026-07-28 specification asks for this union so that permissions
/// needed by other operations are not lost.
pub(crate) fn step_up_scopes(held: &[String], challenged: &[String]) -> Vec<String> {
    union(held, challenged)
}

fn union(first: &[String], second: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(first.len() + second.len());
    for s in first.iter().chain(second) {
        if !s.is_empty() && !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// Bounds the re-authorizations for one (resource, operation): the
/// specification asks clients to retry "no more than a few times" and to
/// track attempts. Keep one per (resource, operation) while it fails.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg(test)]
pub(crate) struct StepUp {
    attempts: u32,
    limit: u32,
}

#[cfg(test)]
impl StepUp {
    /// The default limit: three re-authorizations.
    pub(crate) const DEFAULT_LIMIT: u32 = 3;

    /// A counter with the default limit.
    pub(crate) fn new() -> StepUp {
        StepUp::with_limit(Self::DEFAULT_LIMIT)
    }

    /// A counter allowing `limit` re-authorizations.
    pub(crate) fn with_limit(limit: u32) -> StepUp {
        StepUp { attempts: 0, limit }
    }

    /// Whether one more re-authorization is allowed; counts it if so. After
    /// `false`, treat the failure as permanent.
    pub(crate) fn try_again(&mut self) -> bool {
        if self.attempts >= self.limit {
            return false;
        }
        self.attempts += 1;
        true
    }

    /// How many re-authorizations were made.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
impl Default for StepUp {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn challenge_scope_first() {
        let got = initial_scopes(
            Some(&v(&["files:read"])),
            Some(&v(&["a", "b"])),
            None,
            false,
        );
        assert_eq!(got, Some(v(&["files:read"])));
    }

    #[test]
    fn then_prm_scopes() {
        assert_eq!(
            initial_scopes(None, Some(&v(&["a", "b"])), None, false),
            Some(v(&["a", "b"]))
        );
        assert_eq!(
            initial_scopes(Some(&[]), Some(&v(&["a", "a"])), None, false),
            Some(v(&["a"]))
        );
    }

    #[test]
    fn else_omitted_even_when_offline_is_offered() {
        let offline = v(&["offline_access"]);
        assert_eq!(initial_scopes(None, None, Some(&offline), true), None);
        assert_eq!(initial_scopes(None, Some(&[]), Some(&offline), true), None);
    }

    #[test]
    fn offline_access_only_when_the_server_lists_it_and_wanted() {
        let as_ok = v(&["mcp:basic", "offline_access"]);
        let as_no = v(&["mcp:basic"]);
        let prm = v(&["mcp:basic"]);
        assert_eq!(
            initial_scopes(None, Some(&prm), Some(&as_ok), true),
            Some(v(&["mcp:basic", "offline_access"]))
        );
        assert_eq!(
            initial_scopes(None, Some(&prm), Some(&as_ok), false),
            Some(prm.clone())
        );
        assert_eq!(
            initial_scopes(None, Some(&prm), Some(&as_no), true),
            Some(prm.clone())
        );
        assert_eq!(
            initial_scopes(None, Some(&prm), None, true),
            Some(prm.clone())
        );
        // Not twice.
        let with = v(&["mcp:basic", "offline_access"]);
        assert_eq!(
            initial_scopes(Some(&with), None, Some(&as_ok), true),
            Some(with.clone())
        );
    }

    #[test]
    fn step_up_is_an_ordered_union() {
        assert_eq!(
            step_up_scopes(&v(&["a", "b"]), &v(&["b", "c", "c", ""])),
            v(&["a", "b", "c"])
        );
        assert_eq!(step_up_scopes(&[], &v(&["x"])), v(&["x"]));
    }

    #[test]
    fn step_up_counter() {
        let mut s = StepUp::default();
        assert!(s.try_again() && s.try_again() && s.try_again());
        assert!(!s.try_again());
        assert_eq!(s.attempts(), 3);
        let mut none = StepUp::with_limit(0);
        assert!(!none.try_again());
    }
}

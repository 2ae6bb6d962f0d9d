//! `WWW-Authenticate` challenges (RFC 7235 §4.1, RFC 6750 §3, RFC 9728 §5.1).
//!
//! [`parse`] reads every challenge of one or more header values; it never
//! fails and never panics: what it cannot read it skips, up to the next
//! comma. [`BearerChallenge`] is what the authorization flow needs from the
//! `Bearer` (or `DPoP`) challenge.

use crate::token::TokenType;

/// One challenge: an auth scheme and its parameters or token68.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// The auth scheme as written (compare with [`Challenge::is_scheme`]).
    pub scheme: String,
    /// The auth parameters in order, names lowercased, values unquoted.
    /// A repeated name is kept only at its first occurrence.
    pub params: Vec<(String, String)>,
    /// The token68 form (`Basic` credentials style), if the challenge has one.
    pub token68: Option<String>,
}

impl Challenge {
    /// Whether the scheme is `name`, ignoring case.
    pub fn is_scheme(&self, name: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(name)
    }

    /// The value of parameter `name`, ignoring case.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every challenge of the given `WWW-Authenticate` header values, in order.
///
/// ```
/// let c = mcp_stack_auth::challenge::parse(&[r#"Basic realm="a", Bearer scope="x y", error="invalid_token""#]);
/// assert_eq!(c.len(), 2);
/// assert_eq!(c[1].param("scope"), Some("x y"));
/// ```
pub fn parse(values: &[&str]) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in values {
        Parser {
            s: value.as_bytes(),
            i: 0,
        }
        .challenges(&mut out);
    }
    out
}

// Whitespace is space and tab, and also CR and LF: a value written with
// folded lines (as the specification's examples are) reads the same.

/// RFC 7230 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 7235 `token68` characters (without the trailing `=`).
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        String::from_utf8_lossy(self.s.get(from..to).unwrap_or_default()).into_owned()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n' | b',')) {
            self.i += 1;
        }
    }

    /// Skips what cannot be read, up to the next comma outside a quoted string.
    fn skip_garbage(&mut self) {
        let mut quoted = false;
        while let Some(b) = self.peek() {
            match b {
                b'"' => quoted = !quoted,
                b'\\' if quoted => self.i += 1,
                b',' if !quoted => return,
                _ => {}
            }
            self.i += 1;
        }
    }

    /// The end of a token starting at `i`.
    fn token_end(&self, mut i: usize) -> usize {
        while self.peek_at(i).is_some_and(is_tchar) {
            i += 1;
        }
        i
    }

    /// If an `name = value` parameter starts here: its name and the index
    /// of its value.
    fn param_ahead(&self) -> Option<(String, usize)> {
        let end = self.token_end(self.i);
        if end == self.i {
            return None;
        }
        let mut j = end;
        while matches!(self.peek_at(j), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            j += 1;
        }
        if self.peek_at(j) != Some(b'=') {
            return None;
        }
        j += 1;
        while matches!(self.peek_at(j), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            j += 1;
        }
        // A value is a token or a quoted string; `abc==` is a token68.
        match self.peek_at(j) {
            Some(b) if b == b'"' || is_tchar(b) => {
                Some((self.text(self.i, end).to_ascii_lowercase(), j))
            }
            _ => None,
        }
    }

    fn challenges(&mut self, out: &mut Vec<Challenge>) {
        loop {
            self.skip_ws_and_commas();
            if self.peek().is_none() {
                return;
            }
            let start = self.i;
            let end = self.token_end(start);
            if end == start {
                self.skip_garbage();
                continue;
            }
            let mut challenge = Challenge {
                scheme: self.text(start, end),
                ..Challenge::default()
            };
            self.i = end;
            match self.peek() {
                None | Some(b',') => {}
                Some(b' ' | b'\t' | b'\r' | b'\n') => {
                    self.skip_ws();
                    self.body(&mut challenge);
                }
                Some(_) => {
                    self.skip_garbage();
                    continue;
                }
            }
            out.push(challenge);
        }
    }

    /// What follows a scheme: a token68 or parameters, up to the next
    /// challenge (or the end).
    fn body(&mut self, challenge: &mut Challenge) {
        if self.param_ahead().is_none() {
            if self.token68(challenge) {
                return;
            }
            // Not a token68 either: maybe the next challenge, or garbage.
            match self.peek() {
                None | Some(b',') => return,
                Some(b) if is_tchar(b) => return,
                Some(_) => {
                    self.skip_garbage();
                    return;
                }
            }
        }
        while let Some((name, value_at)) = self.param_ahead() {
            self.i = value_at;
            let value = if self.peek() == Some(b'"') {
                self.quoted()
            } else {
                let end = self.token_end(self.i);
                let v = self.text(self.i, end);
                self.i = end;
                v
            };
            if challenge.param(&name).is_none() {
                challenge.params.push((name, value));
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.skip_ws_and_commas();
                    // A parameter continues this challenge; anything else
                    // starts the next one.
                }
                None => return,
                // A missing comma between parameters (a common server
                // bug) is forgiven; anything else is skipped.
                Some(_) if self.param_ahead().is_some() => {}
                Some(_) => self.skip_garbage(),
            }
        }
    }

    /// A token68 followed by the end, a comma or whitespace.
    fn token68(&mut self, challenge: &mut Challenge) -> bool {
        let start = self.i;
        let mut j = start;
        while self.peek_at(j).is_some_and(is_token68) {
            j += 1;
        }
        if j == start {
            return false;
        }
        while self.peek_at(j) == Some(b'=') {
            j += 1;
        }
        if !matches!(
            self.peek_at(j),
            None | Some(b',' | b' ' | b'\t' | b'\r' | b'\n')
        ) {
            return false;
        }
        challenge.token68 = Some(self.text(start, j));
        self.i = j;
        true
    }

    /// A quoted string starting at `"`; an unterminated one runs to the end.
    fn quoted(&mut self) -> String {
        self.i += 1;
        let mut bytes = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(escaped) = self.peek() {
                        bytes.push(escaped);
                        self.i += 1;
                    }
                }
                _ => bytes.push(b),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// What the authorization flow reads from a `Bearer` (or `DPoP`) challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerChallenge {
    /// The scheme the parameters came from.
    pub scheme: TokenType,
    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces; `None` when absent or empty.
    pub scope: Option<Vec<String>>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` challenge of the header values, or, when there is
    /// none, the first `DPoP` challenge (RFC 9449 §7.1 carries the same
    /// parameters). `None` when neither is present.
    pub fn from_headers(values: &[&str]) -> Option<BearerChallenge> {
        let all = parse(values);
        let (c, scheme) = all
            .iter()
            .find(|c| c.is_scheme("Bearer"))
            .map(|c| (c, TokenType::Bearer))
            .or_else(|| {
                all.iter()
                    .find(|c| c.is_scheme("DPoP"))
                    .map(|c| (c, TokenType::DPoP))
            })?;
        let text = |name| c.param(name).map(str::to_owned);
        let scope = c
            .param("scope")
            .map(|s| {
                s.split_ascii_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty());
        Some(BearerChallenge {
            scheme,
            resource_metadata: text("resource_metadata").filter(|s| !s.is_empty()),
            scope,
            error: text("error"),
            error_description: text("error_description"),
        })
    }

    /// `error="insufficient_scope"`: the token lacks scopes (step-up).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// `error="invalid_token"`: the token is expired, revoked or malformed.
    pub fn is_invalid_token(&self) -> bool {
        self.error.as_deref() == Some("invalid_token")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params(c: &Challenge) -> Vec<(&str, &str)> {
        c.params
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn spec_example() {
        let v = "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource\",\n                         scope=\"files:read\"";
        let b = BearerChallenge::from_headers(&[v]).unwrap();
        assert_eq!(b.scheme, TokenType::Bearer);
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(b.scope, Some(vec!["files:read".to_owned()]));
        assert!(!b.is_insufficient_scope() && !b.is_invalid_token());
    }

    #[test]
    fn insufficient_scope_example() {
        let v = r#"Bearer error="insufficient_scope", scope="files:read files:write  user:profile", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="Additional file write permission required""#;
        let b = BearerChallenge::from_headers(&[v]).unwrap();
        assert!(b.is_insufficient_scope());
        assert_eq!(
            b.scope.unwrap(),
            ["files:read", "files:write", "user:profile"]
        );
        assert_eq!(
            b.error_description.as_deref(),
            Some("Additional file write permission required")
        );
        let b = BearerChallenge::from_headers(&[r#"Bearer error=invalid_token"#]).unwrap();
        assert!(b.is_invalid_token());
    }

    #[test]
    fn several_challenges_in_one_value() {
        let c = parse(&[
            r#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#,
        ]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].scheme, "Newauth");
        assert_eq!(
            params(&c[0]),
            [
                ("realm", "apps"),
                ("type", "1"),
                ("title", "Login to \"apps\"")
            ]
        );
        assert!(c[1].is_scheme("basic"));
        assert_eq!(c[1].param("REALM"), Some("simple"));
    }

    #[test]
    fn several_header_values_and_bare_schemes() {
        let c = parse(&["Negotiate", "Basic, Bearer realm=x", ""]);
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Negotiate", "Basic", "Bearer"]);
        assert_eq!(c[2].param("realm"), Some("x"));
    }

    #[test]
    fn token68_forms() {
        let c = parse(&["Negotiate abc+/d==, Basic YWxhZGRpbjpvcGVuc2VzYW1l, Bearer realm=a"]);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].token68.as_deref(), Some("abc+/d=="));
        assert_eq!(c[1].token68.as_deref(), Some("YWxhZGRpbjpvcGVuc2VzYW1l"));
        assert_eq!(c[2].param("realm"), Some("a"));
        // `x=` at the end: a token68 with one pad, not a parameter.
        assert_eq!(parse(&["Foo x="])[0].token68.as_deref(), Some("x="));
    }

    #[test]
    fn case_whitespace_duplicates_unknowns() {
        let c = parse(&["bEaReR  Scope = \"a\" ,ERROR=\"x\",scope=\"b\", foo=bar"]);
        assert_eq!(c.len(), 1);
        assert_eq!(
            params(&c[0]),
            [("scope", "a"), ("error", "x"), ("foo", "bar")]
        );
        let b = BearerChallenge::from_headers(&["bEaReR  Scope = \"a\""]).unwrap();
        assert_eq!(b.scope.unwrap(), ["a"]);
    }

    #[test]
    fn missing_commas_between_params_are_forgiven() {
        let c = parse(&[r#"Bearer realm="x" scope="a b" error=invalid_token"#]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].param("scope"), Some("a b"));
        assert_eq!(c[0].param("error"), Some("invalid_token"));
    }

    #[test]
    fn escapes_and_unterminated_quotes() {
        let c = parse(&[r#"Bearer a="x\\y\"z", b="unterminated \"#]);
        assert_eq!(c[0].param("a"), Some(r#"x\y"z"#));
        assert_eq!(c[0].param("b"), Some("unterminated "));
    }

    #[test]
    fn garbage_is_skipped() {
        let c = parse(&["=== ,\"quoted, junk\", Bearer scope=\"s\", @@@ x, Basic ]] , DPoP"]);
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Bearer", "Basic", "DPoP"]);
        assert_eq!(c[0].param("scope"), Some("s"));
        // Garbage right after a scheme name.
        let c = parse(&["Bearer=x, Basic"]);
        assert_eq!(c.len(), 1);
        assert!(c[0].is_scheme("basic"));
        // Garbage where a parameter should follow another.
        let c = parse(&["Bearer a=b ]]junk, Basic"]);
        assert_eq!(c.len(), 2);
        assert_eq!(params(&c[0]), [("a", "b")]);
        // A parameter without a value.
        let c = parse(&["Bearer a=, Basic"]);
        assert_eq!(c[0].token68.as_deref(), Some("a="));
        assert!(c[1].is_scheme("basic"));
        let c = parse(&["Bearer a= ;"]);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn dpop_is_used_when_there_is_no_bearer() {
        let v = r#"DPoP algs="ES256", resource_metadata="https://h/prm", Basic realm=x"#;
        let b = BearerChallenge::from_headers(&[v]).unwrap();
        assert_eq!(b.scheme, TokenType::DPoP);
        assert_eq!(b.resource_metadata.as_deref(), Some("https://h/prm"));
        let both = ["DPoP error=a", "Bearer error=b"];
        let b = BearerChallenge::from_headers(&both).unwrap();
        assert_eq!(
            (b.scheme, b.error.as_deref()),
            (TokenType::Bearer, Some("b"))
        );
        assert_eq!(BearerChallenge::from_headers(&["Basic realm=x"]), None);
        assert_eq!(BearerChallenge::from_headers(&[]), None);
    }

    #[test]
    fn empty_scope_and_metadata_are_absent() {
        let b =
            BearerChallenge::from_headers(&[r#"Bearer scope="  ", resource_metadata="""#]).unwrap();
        assert_eq!(b.scope, None);
        assert_eq!(b.resource_metadata, None);
    }

    proptest! {
        #[test]
        fn arbitrary_input_never_panics(values in proptest::collection::vec(".*", 0..4)) {
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            let _ = parse(&refs);
            let _ = BearerChallenge::from_headers(&refs);
        }

        #[test]
        fn challenge_like_input_never_panics(
            value in r#"([A-Za-z]{1,6}|[ ,="\\\t]|[a-z]{1,3}=|"[^"]{0,5}"?|\xFF|é){0,24}"#
        ) {
            let _ = parse(&[&value]);
        }
    }
}

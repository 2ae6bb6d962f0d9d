//! What an MCP server URL must be, checked one way everywhere: the config
//! validator, the resolver (after `${VAR}` expansion) and the HTTP
//! transports all call [`check_url`], so a URL one layer accepts is never
//! refused by another. An HTTP proxy's URL is checked the same way, by
//! [`check_proxy_url`]. A URL is shown (in an error, a trace, a config
//! listing) through [`redact_url`] alone.
//!
//! These rules live here, below the HTTP client, because the IO-free
//! layers need them too: the config validator checks URLs and shows them,
//! and `mcp-stack-auth`'s decisions (built without any HTTP stack) name URLs in
//! their errors.

use std::fmt;

pub use http::Uri;

/// Why a string is not an MCP server URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlProblem {
    /// The scheme is not `http` or `https`.
    NotHttp,
    /// There is no host.
    NoHost,
    /// Unencoded whitespace.
    Whitespace,
    /// Not a URL at all (bad characters, a port out of range, a broken IPv6 literal…).
    Invalid,
}

impl fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlProblem::NotHttp => "must be an http:// or https:// URL",
            UrlProblem::NoHost => "has no host; write it as https://host/path",
            UrlProblem::Whitespace => "contains whitespace; percent-encode it (%20)",
            UrlProblem::Invalid => {
                "is not a valid URL (check for characters to percent-encode, the port and \
                 brackets around an IPv6 address)"
            }
        })
    }
}

impl std::error::Error for UrlProblem {}

/// Parses an MCP server URL: `http` or `https` (any case), a host, no
/// whitespace, and otherwise a URI as RFC 3986 has it.
///
/// ```
/// use mcp_stack_protocol::endpoint::{UrlProblem, check_url};
/// assert_eq!(check_url("https://tools.example.com/mcp").unwrap().host(), Some("tools.example.com"));
/// assert_eq!(check_url("ftp://h/x").unwrap_err(), UrlProblem::NotHttp);
/// assert_eq!(check_url("https:///x").unwrap_err(), UrlProblem::NoHost);
/// assert_eq!(check_url("https://h:99999/").unwrap_err(), UrlProblem::Invalid);
/// ```
pub fn check_url(url: &str) -> Result<Uri, UrlProblem> {
    if url.contains(char::is_whitespace) {
        return Err(UrlProblem::Whitespace);
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        url.get(8..)
    } else if lower.starts_with("http://") {
        url.get(7..)
    } else {
        return Err(UrlProblem::NotHttp);
    };
    // The authority ends at the first `/`, `?` or `#`; after user info, the host.
    let authority = rest
        .unwrap_or("")
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() || host.starts_with(':') {
        return Err(UrlProblem::NoHost);
    }
    let uri: Uri = url.parse().map_err(|_| UrlProblem::Invalid)?;
    // `http` keeps a port it cannot read as none at all, which would send
    // the request to the default port: such a port is no URL.
    let host_port = host.rsplit_once(']').map_or(host, |(_, after)| after);
    if let Some((_, port)) = host_port.rsplit_once(':')
        && !port.is_empty()
        && port.parse::<u16>().is_err()
    {
        return Err(UrlProblem::Invalid);
    }
    match uri.host() {
        Some(h) if !h.is_empty() => Ok(uri),
        _ => Err(UrlProblem::NoHost),
    }
}

/// Why a string is not a proxy URL this stack can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyProblem {
    /// An `https://` proxy (TLS to the proxy itself): not supported.
    HttpsProxy,
    /// A SOCKS proxy (`socks4://`, `socks5://`, `socks5h://`): not supported.
    Socks,
    /// Not an `http://` URL at all.
    NotHttp,
    /// There is no host.
    NoHost,
    /// A path, query or fragment: a proxy is a host and a port.
    NotJustHostAndPort,
    /// Not a URL at all (bad characters, a port out of range, whitespace…).
    Invalid,
}

impl fmt::Display for ProxyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProxyProblem::HttpsProxy => {
                "is an https:// proxy, which is not supported (TLS to the proxy itself); \
                 use the proxy's http:// address: traffic to https servers stays encrypted \
                 inside the tunnel"
            }
            ProxyProblem::Socks => "is a SOCKS proxy, which is not supported; use an HTTP proxy",
            ProxyProblem::NotHttp => "must be an http:// proxy URL (http://host:port)",
            ProxyProblem::NoHost => "has no host; write it as http://host:port",
            ProxyProblem::NotJustHostAndPort => {
                "must be just http://[user:password@]host:port, with no path or query"
            }
            ProxyProblem::Invalid => {
                "is not a valid proxy URL (check for characters to percent-encode in the \
                 user name and password, the port, and brackets around an IPv6 address)"
            }
        })
    }
}

impl std::error::Error for ProxyProblem {}

/// Parses an HTTP proxy URL: `http://[user:password@]host[:port][/]`. The
/// config validator, the resolver and the HTTP transports all call it, as
/// they do [`check_url`]. `https://` and SOCKS proxies are refused with
/// their own reasons, so the message can say so.
///
/// ```
/// use mcp_stack_protocol::endpoint::{ProxyProblem, check_proxy_url};
/// assert_eq!(check_proxy_url("http://proxy.corp:3128").unwrap().port_u16(), Some(3128));
/// assert_eq!(check_proxy_url("https://proxy.corp").unwrap_err(), ProxyProblem::HttpsProxy);
/// assert_eq!(check_proxy_url("socks5h://proxy:1080").unwrap_err(), ProxyProblem::Socks);
/// assert_eq!(check_proxy_url("http://proxy/path").unwrap_err(), ProxyProblem::NotJustHostAndPort);
/// ```
pub fn check_proxy_url(url: &str) -> Result<Uri, ProxyProblem> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http") => {}
        Some("https") => return Err(ProxyProblem::HttpsProxy),
        Some("socks4" | "socks4a" | "socks5" | "socks5h" | "socks") => {
            return Err(ProxyProblem::Socks);
        }
        _ => return Err(ProxyProblem::NotHttp),
    }
    let uri = check_url(url).map_err(|problem| match problem {
        UrlProblem::NoHost => ProxyProblem::NoHost,
        UrlProblem::NotHttp => ProxyProblem::NotHttp,
        _ => ProxyProblem::Invalid,
    })?;
    let path_ok = matches!(uri.path(), "" | "/");
    if !path_ok || uri.query().is_some() || url.contains('#') {
        return Err(ProxyProblem::NotJustHostAndPort);
    }
    Ok(uri)
}

/// A URL as it may be shown, in an error, a trace or a listing: user info
/// and query replaced by `<redacted>` (so a reader sees they were there),
/// the fragment dropped, control characters (a peer's URL may carry
/// terminal escapes) each `U+FFFD`, and at most 200 characters. Text that
/// is no URL is shown the same way, up to its first `?` or `#`.
///
/// ```
/// use mcp_stack_protocol::endpoint::redact_url;
/// assert_eq!(
///     redact_url("https://user:pw@h.example:8443/mcp?token=abc#f"),
///     "https://<redacted>@h.example:8443/mcp?<redacted>"
/// );
/// let uri: mcp_stack_protocol::endpoint::Uri = "http://127.0.0.1/sse".parse().unwrap();
/// assert_eq!(redact_url(&uri), "http://127.0.0.1/sse");
/// ```
pub fn redact_url<U: fmt::Display + ?Sized>(url: &U) -> String {
    const MAX: usize = 200;
    let url = url.to_string();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", &url));
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut shown = String::with_capacity(url.len().min(MAX) + 20);
    if !scheme.is_empty() {
        shown.push_str(scheme);
        shown.push_str("://");
    }
    match authority.rsplit_once('@') {
        Some((_, host)) => {
            shown.push_str("<redacted>@");
            shown.push_str(host);
        }
        None => shown.push_str(authority),
    }
    let (path, fragment_or_query) = match path.find(['?', '#']) {
        Some(i) => path.split_at(i),
        None => (path, ""),
    };
    shown.push_str(path);
    if fragment_or_query.starts_with('?') {
        shown.push_str("?<redacted>");
    }
    let mut out: String = shown
        .chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .take(MAX)
        .collect();
    if shown.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

/// What a proxy's refusal of `CONNECT` asks of the user, from its status
/// (407: credentials; 403: a destination it does not allow; 502–504: it
/// could not reach the server), or nothing.
pub fn proxy_refusal_hint(status: u16, credentials_sent: bool) -> &'static str {
    match (status, credentials_sent) {
        (407, false) => {
            " (the proxy needs credentials: put them in the proxy URL, \
             http://user:password@host:port, percent-encoded)"
        }
        (407, true) => " (the proxy refused the credentials in the proxy URL)",
        (403, _) => {
            " (the proxy does not allow this destination; some allow CONNECT only to \
             port 443, or the server's host must be in NO_PROXY)"
        }
        (502..=504, _) => " (the proxy could not reach the server)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        for ok in [
            "https://h/mcp",
            "HTTP://h",
            "http://127.0.0.1:3000/mcp",
            "https://u:p@h/mcp?x=1#f",
            "http://[::1]:8080/",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("ftp://h", UrlProblem::NotHttp),
            ("h/mcp", UrlProblem::NotHttp),
            ("", UrlProblem::NotHttp),
            ("https:///x", UrlProblem::NoHost),
            ("https://", UrlProblem::NoHost),
            ("https://u@/x", UrlProblem::NoHost),
            ("https://:80/x", UrlProblem::NoHost),
            ("https://h/a b", UrlProblem::Whitespace),
            (" https://h", UrlProblem::Whitespace),
            ("https://h:99999/", UrlProblem::Invalid),
            ("http://[::1/", UrlProblem::Invalid),
            ("https://h:-1/", UrlProblem::Invalid),
        ] {
            assert_eq!(check_url(bad).unwrap_err(), why, "{bad:?}");
        }
    }

    #[test]
    fn the_proxy_rule() {
        for ok in [
            "http://proxy:3128",
            "HTTP://proxy",
            "http://proxy:3128/",
            "http://u:p%40ss@proxy:8080",
            "http://[::1]:3128",
        ] {
            assert!(check_proxy_url(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("https://proxy:443", ProxyProblem::HttpsProxy),
            ("socks5://proxy:1080", ProxyProblem::Socks),
            ("SOCKS5H://proxy:1080", ProxyProblem::Socks),
            ("proxy:3128", ProxyProblem::NotHttp),
            ("ftp://proxy", ProxyProblem::NotHttp),
            ("http://", ProxyProblem::NoHost),
            ("http://proxy/x", ProxyProblem::NotJustHostAndPort),
            ("http://proxy/?a=1", ProxyProblem::NotJustHostAndPort),
            ("http://proxy/#f", ProxyProblem::NotJustHostAndPort),
            ("http://proxy:99999", ProxyProblem::Invalid),
            ("http://pro xy", ProxyProblem::Invalid),
        ] {
            assert_eq!(check_proxy_url(bad).unwrap_err(), why, "{bad:?}");
        }
    }

    #[test]
    fn redact_url_hides_user_info_query_fragment_and_controls() {
        assert_eq!(
            redact_url("https://u:p@h.example/mcp?key=1#x"),
            "https://<redacted>@h.example/mcp?<redacted>"
        );
        assert_eq!(redact_url("http://h:8080/mcp"), "http://h:8080/mcp");
        assert_eq!(redact_url("http://h?k=v"), "http://h?<redacted>");
        assert_eq!(redact_url("http://h/p#frag"), "http://h/p");
        assert_eq!(redact_url("no scheme?q"), "no scheme?<redacted>");
        assert_eq!(
            redact_url("https://h\u{1b}]52;c;eA==\u{7}/\u{9b}2J"),
            "https://h\u{FFFD}]52;c;eA==\u{FFFD}/\u{FFFD}2J"
        );
        let long = format!("https://h/{}", "a".repeat(300));
        assert_eq!(redact_url(&long).chars().count(), 201);
        let uri: Uri = "https://user:pw@example.com:8443/mcp?token=abc"
            .parse()
            .unwrap();
        let shown = redact_url(&uri);
        assert_eq!(shown, "https://<redacted>@example.com:8443/mcp?<redacted>");
    }

    #[test]
    fn proxy_hints_follow_the_status() {
        assert!(proxy_refusal_hint(407, false).contains("needs credentials"));
        assert!(proxy_refusal_hint(407, true).contains("refused the credentials"));
        assert!(proxy_refusal_hint(403, true).contains("NO_PROXY"));
        assert_eq!(proxy_refusal_hint(500, false), "");
    }
}

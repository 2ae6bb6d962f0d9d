//! What an MCP server URL must be, checked one way everywhere: the config
//! validator, the resolver (after `${VAR}` expansion) and the HTTP
//! transports all call [`check_url`], so a URL one layer accepts is never
//! refused by another.

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
/// use mcp_protocol::endpoint::{UrlProblem, check_url};
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
}

//! What an MCP server URL must be, checked one way everywhere: the config
//! validator, the resolver (after `${VAR}` expansion) and the HTTP
//! transports all call [`check_url`], so a URL one layer accepts is never
//! refused by another. An HTTP proxy's URL is checked the same way, by
//! [`check_proxy_url`].

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
/// use mcp_protocol::endpoint::{ProxyProblem, check_proxy_url};
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
}

//! URL parsing shared by the modules: the stack's one URL rule
//! (`mcp_stack_protocol::endpoint::check_url`), split into the parts the flow
//! needs, with what that rule lets through noted (user info, a fragment).

use std::net::Ipv4Addr;

use mcp_stack_protocol::endpoint::{UrlProblem, check_url, redact_url};

use crate::AuthError;

/// An absolute `http` or `https` URL, split into the parts the flow needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    /// `http` or `https`, lowercase.
    pub(crate) scheme: &'static str,
    /// The host, lowercase; an IPv6 address keeps its brackets.
    pub(crate) host: String,
    /// The port, unless absent or the scheme's default.
    pub(crate) port: Option<u16>,
    /// The path as written; `/` when the URL has none.
    pub(crate) path: String,
    /// The query as written, without `?`.
    pub(crate) query: Option<String>,
    /// Whether the URL carried user info (`user:pass@`).
    pub(crate) userinfo: bool,
    /// Whether the URL carried a fragment.
    pub(crate) fragment: bool,
}

impl Url {
    /// Parses `url`; `what` names it in errors.
    pub(crate) fn parse(url: &str, what: &'static str) -> Result<Url, AuthError> {
        let invalid = |reason| AuthError::InvalidUrl {
            what,
            url: redact_url(url),
            reason,
        };
        if url.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err(invalid("it contains whitespace or control characters"));
        }
        let (rest, fragment) = match url.split_once('#') {
            Some((rest, _)) => (rest, true),
            None => (url, false),
        };
        // The stack's one URL rule (what the config validator and the
        // transports apply too); this type only splits what it accepted.
        let uri = check_url(rest).map_err(|problem| {
            invalid(match problem {
                UrlProblem::NotHttp if !rest.contains("://") => {
                    "it is not an absolute URL (no scheme)"
                }
                UrlProblem::NotHttp => "it is not an http:// or https:// URL",
                UrlProblem::NoHost => "it has no host",
                UrlProblem::Whitespace => "it contains whitespace or control characters",
                _ => "it is not a valid URL (or its port is not a number from 0 to 65535)",
            })
        })?;
        let scheme = if uri
            .scheme_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("https"))
        {
            "https"
        } else {
            "http"
        };
        let authority = uri.authority().map_or("", |a| a.as_str());
        let userinfo = authority.contains('@');
        let port = uri.port_u16();
        let host = uri.host().unwrap_or("").to_ascii_lowercase();
        if host.is_empty() {
            return Err(invalid("it has no host"));
        }
        let default_port = if scheme == "https" { 443 } else { 80 };
        Ok(Url {
            scheme,
            host,
            port: port.filter(|p| *p != default_port),
            path: uri.path().to_owned(),
            query: uri.query().map(str::to_owned),
            userinfo,
            fragment,
        })
    }

    /// `scheme://host[:port]`, lowercase, the default port left out.
    pub(crate) fn origin(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{p}", self.scheme, self.host),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// The path, empty for the root (`/` or none).
    pub(crate) fn path_or_empty(&self) -> &str {
        if self.path == "/" { "" } else { &self.path }
    }

    /// `?query`, or nothing.
    pub(crate) fn query_suffix(&self) -> String {
        self.query
            .as_deref()
            .map(|q| format!("?{q}"))
            .unwrap_or_default()
    }

    /// Whether the host is this machine: `localhost`, 127.0.0.0/8 or `::1`.
    pub(crate) fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self.host == "[::1]"
            || self
                .host
                .parse::<Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parts() {
        let u = Url::parse(
            "HTTPS://User:pw@MCP.Example.com:443/A/b?x=1#f",
            "server URL",
        )
        .unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "mcp.example.com");
        assert_eq!(u.port, None);
        assert_eq!(u.path, "/A/b");
        assert_eq!(u.query.as_deref(), Some("x=1"));
        assert!(u.userinfo && u.fragment);
        assert_eq!(u.origin(), "https://mcp.example.com");
        assert_eq!(u.query_suffix(), "?x=1");

        let u = Url::parse("http://[::1]:8080", "x").unwrap();
        assert_eq!(u.host, "[::1]");
        assert_eq!(u.port, Some(8080));
        assert_eq!(u.path_or_empty(), "");
        assert_eq!(u.query_suffix(), "");
        assert_eq!(u.origin(), "http://[::1]:8080");
        assert!(u.is_loopback());
        assert_eq!(Url::parse("http://h:/x", "x").unwrap().port, None);
        assert_eq!(Url::parse("http://h:80/x", "x").unwrap().port, None);
    }

    #[test]
    fn refuses_what_is_no_url() {
        for bad in [
            "mcp.example.com",
            "/relative",
            "ftp://h/x",
            "https://h x/",
            "https://h:99999/",
            "https://h:port/",
            "",
            "https://",
        ] {
            assert!(
                matches!(Url::parse(bad, "x"), Err(AuthError::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn loopback_hosts() {
        for (url, lo) in [
            ("http://localhost:3000/", true),
            ("http://LOCALHOST/", true),
            ("http://127.0.0.1/", true),
            ("http://127.200.0.9/", true),
            ("http://[::1]/", true),
            ("http://128.0.0.1/", false),
            ("http://localhost.evil.com/", false),
            ("http://[::2]/", false),
        ] {
            assert_eq!(Url::parse(url, "x").unwrap().is_loopback(), lo, "{url}");
        }
    }
}

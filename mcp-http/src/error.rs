//! Why an HTTP exchange failed.

/// Why a request of a [`Client`](crate::Client) or a
/// [`WebClient`](crate::WebClient) got no answer, or why the client could
/// not be built. An answer with an error status is no error here: the
/// caller reads the status. The MCP transports turn each variant into the
/// `TransportError` of the same name.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// An exchange failed without a status: connection refused, TLS, a
    /// body that could not be read or was over its bound.
    #[error("HTTP error ({url}): {message}")]
    Http {
        /// The method and URL, without query or user info.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The HTTP proxy would not open a tunnel to the server: it answered
    /// `CONNECT` with a status other than 2xx.
    #[error(
        "the proxy {proxy} answered HTTP {status} to CONNECT {target}{}",
        mcp_stack_protocol::endpoint::proxy_refusal_hint(*.status, *.credentials_sent)
    )]
    ProxyRefused {
        /// The proxy, `http://host:port` (never its user info).
        proxy: String,
        /// The server the tunnel was for, `host:port`.
        target: String,
        /// The proxy's status code (407: it wants credentials).
        status: u16,
        /// Whether credentials from the proxy URL were sent.
        credentials_sent: bool,
    },
    /// Something took longer than its bound.
    #[error("timed out after {}: {what}", mcp_stack_protocol::defaults::describe_duration(*.after))]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The bound.
        after: std::time::Duration,
    },
    /// The server wants authorization that the [`Authorizer`](crate::auth::Authorizer)
    /// could not obtain: the message says what to do (log in, configure a client id).
    #[error("{url} needs authorization: {message}")]
    Unauthorized {
        /// The method and URL of the refused request, without query or user info.
        url: String,
        /// Why no credentials could be had, and what to do about it.
        message: String,
    },
    /// The client's settings cannot work (a bad URL, a header value with a
    /// line break, an unreadable CA file). Values of headers are never shown.
    #[error("invalid transport settings: {0}")]
    InvalidConfig(String),
}

/// Whether an error (or one of its sources) is a timeout.
pub(crate) fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        next = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_found_among_the_sources() {
        #[derive(Debug)]
        struct Wrapper(std::io::Error);
        impl std::fmt::Display for Wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("tcp connect error")
            }
        }
        impl std::error::Error for Wrapper {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let timeout = Wrapper(std::io::Error::new(std::io::ErrorKind::TimedOut, "slow"));
        assert!(timed_out(&timeout));
        let refused = Wrapper(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "no",
        ));
        assert!(!timed_out(&refused));
    }

    #[test]
    fn messages_name_the_bound_and_the_proxy_hint() {
        let e = HttpError::Timeout {
            what: "a connection".into(),
            after: std::time::Duration::from_millis(1500),
        };
        assert_eq!(e.to_string(), "timed out after 1.5 s: a connection");
        let e = HttpError::ProxyRefused {
            proxy: "http://p:3128".into(),
            target: "h:443".into(),
            status: 407,
            credentials_sent: false,
        };
        assert!(e.to_string().contains("needs credentials"), "{e}");
    }
}

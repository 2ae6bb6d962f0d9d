//! HTTP proxies: which proxy (if any) a request goes through, and the
//! connector that tunnels through it.
//!
//! The rules are on [`Proxy`].

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use hyper::Uri;
use hyper::header::HeaderValue;

use crate::HttpError;

mod tunnel;

pub(crate) use tunnel::{Failure, ProxyConnector, TunnelError};

/// Which proxy an HTTP client goes through. The default reads the
/// environment when the client is built. `Debug` never shows credentials.
///
/// The choice is made once per client build ([`Proxy`] in the options):
/// the environment (the default), an explicit proxy, or none. From the
/// environment, curl's variables and rules:
///
/// * `https_proxy` / `HTTPS_PROXY` for `https://` servers, `http_proxy` /
///   `HTTP_PROXY` for `http://` ones, `all_proxy` / `ALL_PROXY` for both when
///   the specific one is unset; the lowercase name wins; an empty value is
///   unset. `HTTP_PROXY` in upper case is ignored when `REQUEST_METHOD` is
///   set (a CGI program, where a request's `Proxy:` header becomes it).
/// * `no_proxy` / `NO_PROXY`: hosts reached directly, comma- (or space-)
///   separated: `*` (every host), a name (that host and its subdomains:
///   `example.com` and `.example.com` both match `example.com` and
///   `api.example.com`, never `badexample.com`; `*.example.com` is read as
///   `.example.com`), an IP address, or a CIDR block (`10.0.0.0/8`,
///   `fd00::/8`); any entry may end with `:port`, and then matches that port
///   only. Case does not matter; names are never resolved, so `localhost`
///   does not cover `127.0.0.1`.
/// * Loopback never goes through a proxy the environment names (Go's rule,
///   not curl's): `localhost`, `*.localhost`, `127.0.0.0/8` and `::1` are
///   this machine, which a proxy elsewhere cannot reach for it, and local
///   MCP servers are common. A proxy given explicitly (`ClientOptions::proxy`,
///   a server's `proxy` setting) is used for every host, loopback included.
/// * A value without a scheme is an `http://` proxy (`proxy.corp:3128`); the
///   port defaults to 80 (curl would use 1080: write the port). An
///   `https://` or SOCKS proxy in a variable fails only the requests that
///   would use it, with the variable named.
///
/// An explicit proxy ([`Proxy::url`]) is used for every request of the
/// client, `NO_PROXY` notwithstanding: it names the proxy of one server.
///
/// Both `https://` and `http://` servers are reached through an HTTP
/// `CONNECT host:port` tunnel (TLS to an `https://` server then runs inside
/// it, with the same roots and ALPN as a direct connection). Some proxies
/// allow `CONNECT` only to port 443; their refusal of an `http://` server
/// is a [`HttpError::ProxyRefused`] naming the status. Credentials in
/// the proxy URL's user info (percent-decoded) go in a `Proxy-Authorization:
/// Basic` header of the `CONNECT` only, never to the server, and are never
/// logged or shown.
///
/// ```
/// use mcp_stack_http::{ClientOptions, Proxy};
/// let options = ClientOptions::new().proxy(Proxy::url("http://me:s3cret@proxy.corp:3128"));
/// assert!(!format!("{options:?}").contains("s3cret"));
/// let direct = ClientOptions::new().proxy(Proxy::none());
/// ```
#[derive(Clone, Default)]
pub struct Proxy(Choice);

#[derive(Clone, Default)]
enum Choice {
    /// Read the process environment when the client is built.
    #[default]
    Environment,
    /// No proxy, whatever the environment says.
    Direct,
    /// This proxy for every request.
    Url(String),
    /// Rules already read (through a lookup).
    Rules(Arc<ProxyRules>),
}

impl Proxy {
    /// The proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, `NO_PROXY`), read when the client is built: the default.
    pub fn from_env() -> Self {
        Proxy(Choice::Environment)
    }

    /// No proxy: every request goes straight to its server, whatever the
    /// environment says.
    pub fn none() -> Self {
        Proxy(Choice::Direct)
    }

    /// This proxy for every request: `http://[user:password@]host:port`
    /// (user and password percent-encoded). Checked when the client is
    /// built; `https://` and SOCKS proxies are not supported.
    pub fn url(url: impl Into<String>) -> Self {
        Proxy(Choice::Url(url.into()))
    }

    /// The environment's rules, read now through `lookup` (a variable's
    /// value, or `None` when unset) instead of the process environment: for
    /// tests, and for programs that keep their settings elsewhere.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        Proxy(Choice::Rules(Arc::new(ProxyRules::from_lookup(&lookup))))
    }

    /// The rules for a client being built.
    pub(crate) fn rules(&self) -> Result<Arc<ProxyRules>, HttpError> {
        match &self.0 {
            Choice::Environment => Ok(Arc::new(ProxyRules::from_lookup(&|name| {
                std::env::var(name).ok()
            }))),
            Choice::Direct => Ok(Arc::new(ProxyRules::default())),
            Choice::Url(url) => {
                let endpoint = ProxyEndpoint::parse(url).map_err(|problem| {
                    HttpError::InvalidConfig(format!(
                        "the proxy {} {problem}",
                        crate::redact_url(url.trim())
                    ))
                })?;
                Ok(Arc::new(ProxyRules {
                    every: Some(Arc::new(endpoint)),
                    ..ProxyRules::default()
                }))
            }
            Choice::Rules(rules) => Ok(Arc::clone(rules)),
        }
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Choice::Environment => f.write_str("Proxy::from_env()"),
            Choice::Direct => f.write_str("Proxy::none()"),
            Choice::Url(url) => write!(f, "Proxy::url({:?})", crate::redact_url(url.trim())),
            Choice::Rules(rules) => write!(f, "Proxy::from_lookup({rules:?})"),
        }
    }
}

/// One usable proxy: where to connect, and the credentials for `CONNECT`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProxyEndpoint {
    /// `http://host:port`, what the inner connector dials.
    dial: Uri,
    /// The proxy as shown in errors and logs (no user info).
    shown: String,
    /// `Basic …`, marked sensitive.
    authorization: Option<HeaderValue>,
}

impl fmt::Debug for ProxyEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyEndpoint")
            .field("proxy", &self.shown)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl ProxyEndpoint {
    /// Parses a proxy URL (`http://[user:password@]host[:port]`).
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let uri =
            mcp_stack_protocol::endpoint::check_proxy_url(url.trim()).map_err(|p| p.to_string())?;
        let host = uri.host().ok_or("has no host")?;
        let port = uri.port_u16().unwrap_or(80);
        let dial: Uri = format!("http://{host}:{port}")
            .parse()
            .map_err(|_| "is not a valid proxy URL".to_owned())?;
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let authorization = match authority.rsplit_once('@') {
            Some((userinfo, _)) => Some(basic(userinfo)?),
            None => None,
        };
        Ok(ProxyEndpoint {
            dial,
            shown: format!("http://{host}:{port}"),
            authorization,
        })
    }

    /// The proxy as shown: `http://host:port`.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    pub(crate) fn has_credentials(&self) -> bool {
        self.authorization.is_some()
    }
}

/// `Basic base64(user:password)` from percent-encoded user info.
fn basic(userinfo: &str) -> Result<HeaderValue, String> {
    use base64::Engine as _;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let mut plain = percent_decode(user)?;
    plain.push(b':');
    plain.extend(percent_decode(password)?);
    let encoded = base64::engine::general_purpose::STANDARD.encode(plain);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
        .map_err(|_| "has credentials that cannot be sent".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

/// Decodes `%XX` escapes; a broken escape is an error (never shown: it is
/// part of a credential).
fn percent_decode(s: &str) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "has a broken %-escape in its user name or password".to_owned())?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

/// A proxy variable's value: the proxy, or why it cannot be used (kept
/// until a request would need it, so an unusable `ALL_PROXY` does not stop
/// servers it does not concern).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FromVariable {
    Use(Arc<ProxyEndpoint>),
    Unusable {
        variable: &'static str,
        problem: String,
    },
}

impl FromVariable {
    fn read(variable: &'static str, value: &str) -> Self {
        let value = value.trim();
        // curl's leniency: no scheme means http.
        let url = if value.contains("://") {
            value.to_owned()
        } else {
            format!("http://{value}")
        };
        match ProxyEndpoint::parse(&url) {
            Ok(endpoint) => FromVariable::Use(Arc::new(endpoint)),
            Err(problem) => FromVariable::Unusable {
                variable,
                problem: format!("{variable} ({}) {problem}", crate::redact_url(value.trim())),
            },
        }
    }
}

/// Where one request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Straight to the server.
    Direct,
    /// Through this proxy.
    Via(Arc<ProxyEndpoint>),
    /// Through a proxy a variable names but that cannot be used: an error.
    Unusable(String),
}

/// The proxy decisions of one client, read once when it is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProxyRules {
    /// An explicit proxy: every request, `NO_PROXY` not consulted.
    every: Option<Arc<ProxyEndpoint>>,
    /// For `https://` servers.
    https: Option<FromVariable>,
    /// For `http://` servers.
    http: Option<FromVariable>,
    /// Hosts reached directly.
    no_proxy: NoProxy,
}

impl ProxyRules {
    /// Reads the proxy variables through `lookup` (pure: no process state).
    pub(crate) fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let first = |names: &[&'static str]| {
            names.iter().find_map(|&name| {
                lookup(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (name, v))
            })
        };
        let cgi = lookup("REQUEST_METHOD").is_some();
        let all = first(&["all_proxy", "ALL_PROXY"]);
        let https = first(&["https_proxy", "HTTPS_PROXY"]).or_else(|| all.clone());
        let http = if cgi {
            first(&["http_proxy"])
        } else {
            first(&["http_proxy", "HTTP_PROXY"])
        }
        .or(all);
        let no_proxy = first(&["no_proxy", "NO_PROXY"])
            .map(|(_, v)| NoProxy::parse(&v))
            .unwrap_or_default();
        ProxyRules {
            every: None,
            https: https.map(|(name, v)| FromVariable::read(name, &v)),
            http: http.map(|(name, v)| FromVariable::read(name, &v)),
            no_proxy,
        }
    }

    /// Where a request to `target` goes.
    pub(crate) fn route(&self, target: &Uri) -> Route {
        if let Some(endpoint) = &self.every {
            return Route::Via(Arc::clone(endpoint));
        }
        let https = target.scheme_str() == Some("https");
        let entry = if https { &self.https } else { &self.http };
        let Some(entry) = entry else {
            return Route::Direct;
        };
        let Some(host) = target.host() else {
            return Route::Direct;
        };
        let port = target.port_u16().unwrap_or(if https { 443 } else { 80 });
        if is_loopback(host) || self.no_proxy.matches(host, port) {
            return Route::Direct;
        }
        match entry {
            FromVariable::Use(endpoint) => Route::Via(Arc::clone(endpoint)),
            FromVariable::Unusable { problem, .. } => Route::Unusable(problem.clone()),
        }
    }

    /// Whether any request could go through a proxy.
    pub(crate) fn any(&self) -> bool {
        self.every.is_some() || self.https.is_some() || self.http.is_some()
    }
}

/// Whether `host` (as in a URI: IPv6 in brackets) names this machine.
fn is_loopback(host: &str) -> bool {
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok_and(|ip| match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    })
}

/// `NO_PROXY`, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NoProxy {
    /// `*`: every host.
    all: bool,
    entries: Vec<(Pattern, Option<u16>)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    /// A name, lowercase, without leading or trailing dots.
    Domain(String),
    /// An address and the number of leading bits that must match.
    Net(IpAddr, u8),
}

impl NoProxy {
    /// Parses a `NO_PROXY` value; entries that mean nothing are skipped.
    pub(crate) fn parse(value: &str) -> Self {
        let mut out = NoProxy::default();
        for token in value.split(|c: char| c == ',' || c.is_whitespace()) {
            if token.is_empty() {
                continue;
            }
            if token == "*" {
                out.all = true;
                continue;
            }
            let (body, port) = split_port(token);
            if let Some(pattern) = Pattern::parse(body) {
                out.entries.push((pattern, port));
            }
        }
        out
    }

    /// Whether a request to `host` (as a URI has it: IPv6 in brackets) on
    /// `port` is reached directly.
    pub(crate) fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let ip = bare.parse::<IpAddr>().ok();
        let name = bare.trim_end_matches('.').to_ascii_lowercase();
        self.entries.iter().any(|(pattern, p)| {
            p.is_none_or(|p| p == port)
                && match (pattern, ip) {
                    (Pattern::Net(net, bits), Some(ip)) => in_net(ip, *net, *bits),
                    (Pattern::Domain(domain), None) => {
                        name == *domain
                            || name
                                .strip_suffix(domain.as_str())
                                .is_some_and(|head| head.ends_with('.'))
                    }
                    _ => false,
                }
        })
    }
}

impl Pattern {
    fn parse(body: &str) -> Option<Pattern> {
        let bare = body
            .strip_prefix('[')
            .and_then(|b| b.strip_suffix(']'))
            .unwrap_or(body);
        let (addr, bits) = match bare.split_once('/') {
            Some((addr, bits)) => (addr, Some(bits)),
            None => (bare, None),
        };
        if let Ok(ip) = addr.parse::<IpAddr>() {
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(b) => b.parse::<u8>().ok().filter(|b| *b <= max)?,
            };
            return Some(Pattern::Net(ip, bits));
        }
        if bits.is_some() {
            return None;
        }
        let name = bare.strip_prefix('*').unwrap_or(bare);
        let name = name.trim_start_matches('.').trim_end_matches('.');
        (!name.is_empty()).then(|| Pattern::Domain(name.to_ascii_lowercase()))
    }
}

/// `host:port` → (`host`, port); an IPv6 address without brackets, a
/// CIDR block or a plain name keeps everything.
fn split_port(token: &str) -> (&str, Option<u16>) {
    if let Some(rest) = token.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        if let Some((inside, after)) = rest.split_once(']') {
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            let end = inside.len() + 2;
            return (token.get(..end).unwrap_or(token), port);
        }
        return (token, None);
    }
    match token.rsplit_once(':') {
        // More than one colon without brackets: an IPv6 address.
        Some((head, port)) if !head.contains(':') => match port.parse::<u16>() {
            Ok(p) => (head, Some(p)),
            Err(_) => (token, None),
        },
        _ => (token, None),
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (ip, net, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(a.to_bits()), u128::from(b.to_bits()), 32u32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.to_bits(), b.to_bits(), 128u32),
        // An IPv4-mapped IPv6 address against an IPv4 block.
        (IpAddr::V6(a), IpAddr::V4(b)) => match a.to_ipv4_mapped() {
            Some(a) => (u128::from(a.to_bits()), u128::from(b.to_bits()), 32u32),
            None => return false,
        },
        (IpAddr::V4(_), IpAddr::V6(_)) => return false,
    };
    let bits = u32::from(bits).min(width);
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    (ip >> shift) == (net >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn rules(vars: &[(&str, &str)]) -> ProxyRules {
        ProxyRules::from_lookup(&lookup(vars))
    }

    fn via(route: Route) -> String {
        match route {
            Route::Via(e) => e.shown().to_owned(),
            other => panic!("not through a proxy: {other:?}"),
        }
    }

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn no_proxy_matching_follows_curl() {
        let n = NoProxy::parse("example.com, .corp.example ,10.0.0.0/8,::1 192.168.1.7,,");
        assert!(n.matches("example.com", 443));
        assert!(n.matches("API.Example.com", 443));
        assert!(n.matches("example.com.", 443));
        assert!(!n.matches("badexample.com", 443));
        assert!(!n.matches("example.com.evil", 443));
        assert!(n.matches("corp.example", 80));
        assert!(n.matches("a.b.corp.example", 80));
        assert!(n.matches("10.1.2.3", 80));
        assert!(!n.matches("11.1.2.3", 80));
        assert!(n.matches("[::1]", 80));
        assert!(n.matches("192.168.1.7", 80));
        assert!(!n.matches("192.168.1.8", 80));
        // Names are not resolved: localhost does not cover 127.0.0.1.
        let n = NoProxy::parse("localhost");
        assert!(n.matches("localhost", 80));
        assert!(!n.matches("127.0.0.1", 80));
        // An IP entry matches no name, a name no IP.
        assert!(!NoProxy::parse("127.0.0.1").matches("localhost", 80));
    }

    #[test]
    fn no_proxy_wildcards_ports_and_ipv6() {
        assert!(NoProxy::parse("*").matches("anything.example", 1));
        assert!(NoProxy::parse("a.example, *").matches("b.example", 1));
        // `*.example.com` is read as `.example.com`.
        let n = NoProxy::parse("*.example.com");
        assert!(n.matches("www.example.com", 443) && n.matches("example.com", 443));
        // With a port, that port only.
        let n = NoProxy::parse("example.com:8443,127.0.0.1:3000,[::1]:9000");
        assert!(n.matches("example.com", 8443));
        assert!(!n.matches("example.com", 443));
        assert!(n.matches("127.0.0.1", 3000));
        assert!(!n.matches("127.0.0.1", 3001));
        assert!(n.matches("[::1]", 9000));
        assert!(!n.matches("[::1]", 9001));
        // IPv6 blocks, with and without brackets; mapped IPv4.
        let n = NoProxy::parse("fd00::/8,[2001:db8::1]");
        assert!(n.matches("[fd12::5]", 443));
        assert!(n.matches("[2001:db8::1]", 443));
        assert!(!n.matches("[2001:db8::2]", 443));
        assert!(NoProxy::parse("127.0.0.0/8").matches("[::ffff:127.0.0.9]", 80));
        // Nonsense is skipped, never a panic.
        let n = NoProxy::parse("10.0.0.0/99, a/b, ., :80, [::1");
        assert!(!n.matches("10.0.0.1", 80));
        assert!(NoProxy::parse("").entries.is_empty());
    }

    #[test]
    fn loopback_never_goes_through_an_environment_proxy() {
        let r = rules(&[
            ("http_proxy", "http://proxy:3128"),
            ("https_proxy", "http://proxy:3128"),
        ]);
        for target in [
            "http://127.0.0.1:3000/mcp",
            "http://127.9.9.9/mcp",
            "http://[::1]:3000/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
            "http://localhost/mcp",
            "https://LocalHost./mcp",
            "http://dev.localhost:8080/mcp",
        ] {
            assert_eq!(r.route(&uri(target)), Route::Direct, "{target}");
        }
        // Not loopback: proxied.
        for target in ["http://128.0.0.1/mcp", "http://localhost.example.com/mcp"] {
            assert_eq!(via(r.route(&uri(target))), "http://proxy:3128", "{target}");
        }
    }

    #[test]
    fn which_variable_for_which_scheme() {
        let r = rules(&[
            ("HTTPS_PROXY", "http://secure:1"),
            ("http_proxy", "plain:2"),
            ("ALL_PROXY", "http://all:3"),
        ]);
        assert_eq!(via(r.route(&uri("https://h/"))), "http://secure:1");
        assert_eq!(via(r.route(&uri("http://h/"))), "http://plain:2");
        // ALL_PROXY when the specific one is unset or empty.
        let r = rules(&[("https_proxy", " "), ("all_proxy", "http://all:3")]);
        assert_eq!(via(r.route(&uri("https://h/"))), "http://all:3");
        assert_eq!(via(r.route(&uri("http://h/"))), "http://all:3");
        // Lowercase wins.
        let r = rules(&[
            ("https_proxy", "http://low:1"),
            ("HTTPS_PROXY", "http://up:2"),
        ]);
        assert_eq!(via(r.route(&uri("https://h/"))), "http://low:1");
        // Uppercase HTTP_PROXY, but not in a CGI program.
        let r = rules(&[("HTTP_PROXY", "http://up:2")]);
        assert_eq!(via(r.route(&uri("http://h/"))), "http://up:2");
        let r = rules(&[("HTTP_PROXY", "http://up:2"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(r.route(&uri("http://h/")), Route::Direct);
        // Nothing set: direct; the default port is 80.
        assert_eq!(rules(&[]).route(&uri("https://h/")), Route::Direct);
        assert!(!rules(&[]).any());
        let r = rules(&[("https_proxy", "proxy")]);
        assert_eq!(via(r.route(&uri("https://h/"))), "http://proxy:80");
    }

    #[test]
    fn no_proxy_uses_the_default_port_of_the_scheme() {
        let r = rules(&[
            ("https_proxy", "http://p:1"),
            ("http_proxy", "http://p:1"),
            ("no_proxy", "h:443"),
        ]);
        assert_eq!(r.route(&uri("https://h/")), Route::Direct);
        assert_eq!(via(r.route(&uri("http://h/"))), "http://p:1");
    }

    #[test]
    fn an_unusable_variable_fails_only_what_would_use_it() {
        let r = rules(&[
            ("https_proxy", "http://fine:1"),
            ("ALL_PROXY", "socks5h://user:pw@socks:1080"),
            ("no_proxy", "internal"),
        ]);
        assert_eq!(via(r.route(&uri("https://h/"))), "http://fine:1");
        let Route::Unusable(why) = r.route(&uri("http://h/")) else {
            panic!()
        };
        assert!(
            why.starts_with("ALL_PROXY (socks5h://<redacted>@socks:1080) is a SOCKS proxy"),
            "{why}"
        );
        assert!(!why.contains("pw"), "{why}");
        assert_eq!(r.route(&uri("http://internal/")), Route::Direct);
    }

    #[test]
    fn credentials_become_basic_and_are_never_shown() {
        let e = ProxyEndpoint::parse("http://al%40ice:p%3Ass@proxy:3128").unwrap();
        let auth = e.authorization.clone().unwrap();
        assert!(auth.is_sensitive());
        // base64("al@ice:p:ss")
        assert_eq!(auth, "Basic YWxAaWNlOnA6c3M=");
        assert_eq!(e.shown(), "http://proxy:3128");
        assert!(!format!("{e:?}").contains("YWx"));
        let p = Proxy::url("http://al%40ice:p%3Ass@proxy:3128");
        assert!(!format!("{p:?}").contains("ice"), "{p:?}");
        let err = Proxy::url("https://u:secret@proxy:3128")
            .rules()
            .unwrap_err();
        assert!(matches!(err, HttpError::InvalidConfig(_)));
        assert!(
            err.to_string().contains("https://<redacted>@proxy:3128"),
            "{err}"
        );
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(ProxyEndpoint::parse("http://u:%zz@proxy:1").is_err());
        // A user without a password.
        let e = ProxyEndpoint::parse("http://token@proxy:1").unwrap();
        assert_eq!(e.authorization.unwrap(), "Basic dG9rZW46");
    }

    #[test]
    fn an_explicit_proxy_ignores_no_proxy_and_none_ignores_everything() {
        let r = Proxy::url("http://p:9").rules().unwrap();
        assert_eq!(via(r.route(&uri("http://127.0.0.1/"))), "http://p:9");
        let r = Proxy::none().rules().unwrap();
        assert!(!r.any());
        assert_eq!(r.route(&uri("https://h/")), Route::Direct);
    }

    #[test]
    fn a_name_entry_never_matches_an_address() {
        // Found by the property below: the name entry "0.0" and the host
        // 0.0.0.0. An address is compared as an address, never as text.
        let n = NoProxy::parse("0.0");
        assert!(!n.matches("0.0.0.0", 80));
        assert!(n.matches("a.0.0", 80));
        assert!(NoProxy::parse("0.0.0.0").matches("0.0.0.0", 80));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn label() -> impl Strategy<Value = String> {
            "[a-z0-9]{1,8}"
        }

        proptest! {
            /// A name entry matches the name and every subdomain, in any
            /// case and with any leading dot, and nothing that merely ends
            /// with the same letters.
            #[test]
            fn domains_match_at_label_boundaries(
                domain in prop::collection::vec(label(), 1..4),
                sub in prop::collection::vec(label(), 0..3),
                glue in label(),
                dot in any::<bool>(),
                port in any::<u16>(),
            ) {
                let domain = domain.join(".");
                let entry = if dot { format!(".{domain}") } else { domain.clone() };
                let n = NoProxy::parse(&entry);
                let mut host = sub.join(".");
                if !host.is_empty() { host.push('.'); }
                host.push_str(&domain);
                // Digit-only labels can spell an address ("0.0" under
                // "0.0" is 0.0.0.0), and an address is matched only by
                // address entries (see `a_name_entry_never_matches_an_address`).
                prop_assume!(host.parse::<IpAddr>().is_err());
                prop_assert!(n.matches(&host, port));
                prop_assert!(n.matches(&host.to_ascii_uppercase(), port));
                let glued = format!("{glue}{domain}");
                prop_assert!(!n.matches(&glued, port));
            }

            /// A CIDR block matches exactly the addresses sharing its prefix.
            #[test]
            fn ipv4_blocks(net in any::<u32>(), ip in any::<u32>(), bits in 0u8..=32) {
                let entry = format!("{}/{bits}", std::net::Ipv4Addr::from_bits(net));
                let host = std::net::Ipv4Addr::from_bits(ip).to_string();
                let mask = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits)) };
                prop_assert_eq!(NoProxy::parse(&entry).matches(&host, 80), (net & mask) == (ip & mask));
            }

            /// Any text parses and matches without a panic.
            #[test]
            fn never_panics(value in ".{0,64}", host in ".{0,32}", port in any::<u16>()) {
                let _ = NoProxy::parse(&value).matches(&host, port);
                let _ = ProxyRules::from_lookup(&|_| Some(value.clone()));
            }
        }
    }
}

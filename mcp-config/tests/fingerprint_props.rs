#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Fingerprints ignore key order, env/header order, whitespace and explicit
//! defaults, and change with every field that affects behaviour.

use std::collections::BTreeMap;

use mcp_stack_config::{
    Fingerprint, FingerprintKey, Format, Options, parse_str, resolve, resolve_with_key,
};
use proptest::prelude::*;

/// A JSON-ish tree that keeps key order, so the test controls it.
#[derive(Clone, Debug)]
enum Node {
    Str(String),
    Num(u64),
    Bool(bool),
    List(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

fn s(v: &str) -> Node {
    Node::Str(v.to_owned())
}

fn quote(v: &str) -> String {
    serde_json::Value::String(v.to_owned()).to_string()
}

/// Renders JSON, shuffling object keys by `seed` and padding with whitespace.
fn render(n: &Node, seed: u64, out: &mut String) {
    const WS: [&str; 4] = ["", " ", "\n  ", "\t"];
    let ws = |k: u64| WS[(k % 4) as usize];
    match n {
        Node::Str(v) => out.push_str(&quote(v)),
        Node::Num(v) => out.push_str(&v.to_string()),
        Node::Bool(b) => out.push_str(&b.to_string()),
        Node::List(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws(seed >> 3));
                render(it, seed.rotate_left(7), out);
            }
            out.push(']');
        }
        Node::Obj(entries) => {
            let mut e: Vec<_> = entries.iter().collect();
            e.sort_by_key(|(k, _)| {
                k.bytes()
                    .fold(seed, |h, b| h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b))
            });
            out.push('{');
            out.push_str(ws(seed));
            for (i, (k, v)) in e.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(ws(seed >> (i % 13)));
                }
                out.push_str(&quote(k));
                out.push_str(ws(seed >> 5));
                out.push(':');
                render(v, seed.rotate_left(11), out);
            }
            out.push_str(ws(seed >> 9));
            out.push('}');
        }
    }
}

#[derive(Clone, Debug)]
struct Rec {
    stdio: bool,
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    url: String,
    headers: BTreeMap<String, String>,
    request_ms: Option<u64>,
    handshake_ms: Option<u64>,
    parallel: Option<bool>,
}

impl Rec {
    /// The record; `explicit` writes defaults out (transport, timeouts, parallelism).
    fn node(&self, explicit: bool) -> Node {
        let mut e = Vec::new();
        if self.stdio {
            e.push(("command".to_owned(), s(&self.command)));
            e.push((
                "args".to_owned(),
                Node::List(self.args.iter().map(|a| s(a)).collect()),
            ));
            e.push((
                "env".to_owned(),
                Node::Obj(self.env.iter().map(|(k, v)| (k.clone(), s(v))).collect()),
            ));
            if explicit {
                e.push(("transport".to_owned(), s("stdio")));
            }
        } else {
            e.push(("url".to_owned(), s(&self.url)));
            e.push((
                "headers".to_owned(),
                Node::Obj(
                    self.headers
                        .iter()
                        .map(|(k, v)| (k.clone(), s(v)))
                        .collect(),
                ),
            ));
            if explicit {
                e.push(("type".to_owned(), s("http")));
            }
        }
        let req = self.request_ms.or(explicit.then_some(60_000));
        if let Some(ms) = req {
            e.push(("timeoutMs".to_owned(), Node::Num(ms)));
        }
        if let Some(ms) = self.handshake_ms.or(explicit.then_some(30_000)) {
            e.push(("handshakeTimeoutMs".to_owned(), Node::Num(ms)));
        }
        if let Some(p) = self.parallel.or(explicit.then_some(true)) {
            e.push(("supportsParallelToolCalls".to_owned(), Node::Bool(p)));
        }
        if explicit {
            e.push(("enabled".to_owned(), Node::Bool(true)));
        }
        Node::Obj(vec![(
            "mcpServers".to_owned(),
            Node::Obj(vec![("srv".to_owned(), Node::Obj(e))]),
        )])
    }

    fn json(&self, explicit: bool, seed: u64) -> String {
        let mut out = String::new();
        render(&self.node(explicit), seed, &mut out);
        out
    }

    /// The same record as OpenClaw TOML.
    fn toml(&self) -> String {
        let mut t = String::from("[mcp_servers.srv]\n");
        if self.stdio {
            t += &format!("command = {}\n", quote(&self.command));
            let args: Vec<String> = self.args.iter().map(|a| quote(a)).collect();
            t += &format!("args = [{}]\n", args.join(", "));
        } else {
            t += &format!("url = {}\n", quote(&self.url));
        }
        if let Some(ms) = self.request_ms {
            t += &format!("request_timeout_ms = {ms}\n");
        }
        if let Some(ms) = self.handshake_ms {
            t += &format!("handshake_timeout_ms = {ms}\n");
        }
        if let Some(p) = self.parallel {
            t += &format!("supports_parallel_tool_calls = {p}\n");
        }
        let (table, map) = if self.stdio {
            ("env", &self.env)
        } else {
            ("headers", &self.headers)
        };
        t += &format!("[mcp_servers.srv.{table}]\n");
        for (k, v) in map.iter().rev() {
            t += &format!("{} = {}\n", quote(k), quote(v));
        }
        t
    }
}

fn fingerprints(text: &str, format: Option<Format>) -> (Fingerprint, Fingerprint) {
    let mut options = Options::new();
    options.format = format;
    let loaded = parse_str(text, &options).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let r = resolve(&loaded.config, &|_: &str| None).unwrap();
    (r.servers["srv"].fingerprint, r.fingerprint)
}

fn value() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9/._ -]{0,12}"
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        any::<bool>(),
        "[a-z][a-z0-9_-]{0,8}",
        prop::collection::vec(value(), 0..4),
        prop::collection::btree_map("[A-Z][A-Z0-9_]{0,6}", value(), 0..4),
        "https?://[a-z]{1,8}(\\.example)?(:[0-9]{2,4})?/[a-z]{0,6}",
        prop::collection::btree_map("X-[A-Za-z]{1,6}", "[ -#%-~]{0,12}", 0..4),
        prop::option::of(1u64..200_000),
        prop::option::of(1u64..200_000),
        prop::option::of(any::<bool>()),
    )
        .prop_map(
            |(stdio, command, args, env, url, headers, request_ms, handshake_ms, parallel)| {
                // Header names differing only by case would be a validation error.
                let mut seen = std::collections::BTreeSet::new();
                let headers = headers
                    .into_iter()
                    .filter(|(k, _)| seen.insert(k.to_ascii_lowercase()))
                    .collect();
                Rec {
                    stdio,
                    command,
                    args,
                    env,
                    url,
                    headers,
                    request_ms,
                    handshake_ms,
                    parallel,
                }
            },
        )
}

#[derive(Clone, Debug)]
enum Change {
    Command,
    Arg,
    EnvValue,
    Url,
    HeaderValue,
    RequestTimeout,
    HandshakeTimeout,
    Parallel,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn order_whitespace_and_explicit_defaults_do_not_matter(r in rec(), seed_a: u64, seed_b: u64) {
        let base = fingerprints(&r.json(false, seed_a), None);
        prop_assert_eq!(base, fingerprints(&r.json(false, seed_b), None));
        prop_assert_eq!(base, fingerprints(&r.json(true, seed_b), None));
        prop_assert_eq!(base, fingerprints(&r.toml(), Some(Format::OpenClawToml)));
    }

    #[test]
    fn the_same_key_gives_the_same_fingerprints_another_key_others(r in rec(), seed: u64, a: [u8; 32], b: [u8; 32]) {
        prop_assume!(a != b);
        let loaded = parse_str(&r.json(false, seed), &Options::new()).unwrap();
        let under = |k: [u8; 32]| {
            let c = resolve_with_key(&loaded.config, &|_: &str| None, &FingerprintKey::from_bytes(k)).unwrap();
            (c.servers["srv"].fingerprint, c.fingerprint)
        };
        prop_assert_eq!(under(a), under(a));
        let (server_a, session_a) = under(a);
        let (server_b, session_b) = under(b);
        prop_assert_ne!(server_a, server_b);
        prop_assert_ne!(session_a, session_b);
    }

    #[test]
    fn behaviour_changes_change_the_fingerprint(
        r in rec(),
        change in prop_oneof![
            Just(Change::Command), Just(Change::Arg), Just(Change::EnvValue), Just(Change::Url),
            Just(Change::HeaderValue), Just(Change::RequestTimeout), Just(Change::HandshakeTimeout),
            Just(Change::Parallel),
        ],
        seed: u64,
    ) {
        let mut m = r.clone();
        match change {
            Change::Command => { m.stdio = true; m.command.push('x'); }
            Change::Arg => { m.stdio = true; match m.args.first_mut() { Some(a) => a.push('x'), None => m.args.push(String::new()) } }
            Change::EnvValue => { m.stdio = true; m.env.entry("CHANGED".into()).or_default().push('x'); }
            Change::Url => { m.stdio = false; m.url.push('x'); }
            Change::HeaderValue => { m.stdio = false; m.headers.entry("Z-Changed".into()).or_default().push('x'); }
            Change::RequestTimeout => m.request_ms = Some(m.request_ms.unwrap_or(60_000) + 1),
            Change::HandshakeTimeout => m.handshake_ms = Some(m.handshake_ms.unwrap_or(30_000) + 1),
            Change::Parallel => m.parallel = Some(!m.parallel.unwrap_or(true)),
        }
        // Only compare when the change is a real change of the rendered record.
        let mut base = r;
        base.stdio = m.stdio;
        let (a, a_session) = fingerprints(&base.json(false, seed), None);
        let (b, b_session) = fingerprints(&m.json(false, seed), None);
        prop_assert_ne!(a, b);
        prop_assert_ne!(a_session, b_session);
    }
}

#[test]
fn secrets_change_the_fingerprint_but_never_appear_in_it() {
    let text = |v: &str| {
        format!(
            r#"{{"mcpServers": {{"srv": {{"url": "https://h/mcp", "headers": {{"Authorization": "Bearer {v}"}}}}}}}}"#
        )
    };
    let (a, _) = fingerprints(&text("aaaa"), None);
    let (b, _) = fingerprints(&text("aaab"), None);
    assert_ne!(a, b);
    assert!(!a.to_string().contains("aaaa"));
}

//! Unit tests of record validation.
use super::*;
use serde_json::json;

fn only(value: Value) -> Problem {
    let p = is_mcp_config_record(&value, "mcpServers.s");
    assert_eq!(p.len(), 1, "{p:#?}");
    p.into_iter().next().unwrap()
}

#[test]
fn a_good_record_has_no_problems() {
    let v = json!({"command": "node", "args": ["a"], "env": {"A": "${B:-c}"}, "timeoutMs": 5});
    assert_eq!(is_mcp_config_record(&v, "x"), vec![]);
}

#[test]
fn url_checks() {
    assert_eq!(url_problem("https://h/mcp"), None);
    assert_eq!(url_problem("HTTP://h"), None);
    assert_eq!(url_problem("${URL}"), None);
    assert_eq!(url_problem("https://${HOST}/mcp?key=${KEY}"), None);
    assert_eq!(
        url_problem("ftp://h").as_deref(),
        Some("must be an http:// or https:// URL")
    );
    assert_eq!(
        url_problem("ftp://${HOST}/").as_deref(),
        Some("must be an http:// or https:// URL")
    );
    assert!(
        url_problem("https:///x")
            .unwrap()
            .starts_with("has no host")
    );
    assert!(
        url_problem("https://h/a b")
            .unwrap()
            .starts_with("contains whitespace")
    );
    // What the transport would refuse, refused here too.
    assert!(
        url_problem("https://h:99999/mcp")
            .unwrap()
            .starts_with("is not a valid URL")
    );
}

#[test]
fn proxy_checks() {
    for ok in [
        "http://proxy:3128",
        "none",
        "NONE",
        "",
        "http://${U}:${P}@proxy:3128",
        "${PROXY}",
    ] {
        assert_eq!(proxy_problem(ok), None, "{ok}");
    }
    let p = only(json!({"url": "https://h/mcp", "proxy": "https://u:secret@proxy:443"}));
    assert_eq!(p.path, "mcpServers.s.proxy");
    assert!(p.message.contains("https:// proxy"), "{}", p.message);
    assert!(!p.message.contains("secret"), "{}", p.message);
    assert!(
        proxy_problem("socks5://proxy:1080")
            .unwrap()
            .contains("SOCKS")
    );
    assert!(proxy_problem("proxy:3128").unwrap().contains("http://"));
    let p = only(json!({"url": "https://h/mcp", "proxy": 3128}));
    assert_eq!(p.message, "must be a string, found a number");
    let p = only(json!({"command": "x", "proxy": "none"}));
    assert!(p.message.contains("only HTTP servers"), "{}", p.message);
}

#[test]
fn header_value_checks() {
    assert_eq!(header_value_problem("Bearer x\t y"), None);
    assert!(
        header_value_problem("a\r\nX: y")
            .unwrap()
            .contains("line break")
    );
    assert!(header_value_problem("a\u{1}").unwrap().contains("control"));
    assert!(header_value_problem("é").unwrap().contains("non-ASCII"));
}

#[test]
fn a_group_set_twice_is_an_error() {
    let p = only(json!({"command": "x", "timeoutMs": 1, "requestTimeoutMs": 2}));
    assert_eq!(p.path, "mcpServers.s.timeoutMs");
    assert_eq!(
        p.message,
        "`requestTimeoutMs` already sets the request timeout; keep one of the two"
    );
}

#[test]
fn join_escapes_control_characters() {
    assert_eq!(join("a", "b\nc"), "a.b\\nc");
    assert_eq!(join("", "b"), "b");
}

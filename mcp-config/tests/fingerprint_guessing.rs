#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Issue #25, hole 6: a printed fingerprint must not let a weak secret be
//! guessed offline. The attacker here sees what `mcp config show` prints (the
//! config as written, `${VAR}` unexpanded, and the fingerprints) and tries
//! every candidate of a tiny set with the unkeyed construction fingerprints
//! used before they were keyed: a domain-separated SHA-256 of each secret
//! inside a canonical form, and a SHA-256 of that form.

use mcp_stack_config::{
    FingerprintKey, Options, ResolvedConfig, parse_str, resolve, resolve_with_key,
};
use sha2::{Digest, Sha256};

/// The secret, one of the candidates, as a 6-digit PIN would be.
const PIN: &str = "000417";

fn candidates() -> impl Iterator<Item = String> {
    (0..1000).map(|n| format!("{n:06}"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The unkeyed secret digest: SHA-256 of a fixed prefix and the value.
fn old_secret_digest(value: &str) -> String {
    let mut input = b"mcp-config secret v1\0".to_vec();
    input.extend_from_slice(value.as_bytes());
    format!("sha256:{}", sha256_hex(&input))
}

/// The unkeyed fingerprint of a stdio server `pin-server` with these args
/// and env, everything else default: SHA-256 of its canonical form (keys
/// sorted, compact).
fn old_fingerprint(args: &[String], env: &[(&str, String)]) -> String {
    let args = serde_json::to_string(args).unwrap();
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("\"{k}\":\"{}\"", old_secret_digest(v)))
        .collect();
    let canonical = format!(
        concat!(
            r#"{{"handshake_timeout_ns":"30000000000","protocol_version":null,"#,
            r#""request_timeout_ns":"60000000000","supports_parallel_tool_calls":true,"#,
            r#""tools":{{"exclude":[],"include":null}},"#,
            r#""transport":{{"args":{},"command":"pin-server","cwd":null,"env":{{{}}},"kind":"stdio"}},"v":1}}"#
        ),
        args,
        env.join(",")
    );
    sha256_hex(canonical.as_bytes())
}

/// Resolves `text` with `PIN` set to the secret, as `mcp config show` would.
fn resolved(text: &str) -> ResolvedConfig {
    let loaded = parse_str(text, &Options::new()).unwrap();
    resolve(&loaded.config, &|n: &str| {
        (n == "PIN").then(|| PIN.to_owned())
    })
    .unwrap()
}

/// Every candidate whose unkeyed fingerprint is the printed one.
fn guesses(printed: &str, old: impl Fn(String) -> String) -> Vec<String> {
    candidates().filter(|c| old(c.clone()) == printed).collect()
}

#[test]
fn a_weak_env_secret_cannot_be_recovered_from_the_printed_fingerprint() {
    let r =
        resolved(r#"{"mcpServers": {"s": {"command": "pin-server", "env": {"PIN": "${PIN}"}}}}"#);
    let printed = r.servers["s"].fingerprint.to_string();
    let found = guesses(&printed, |c| old_fingerprint(&[], &[("PIN", c)]));
    assert!(found.is_empty(), "the PIN was guessed offline: {found:?}");
}

/// `config show` prints an arg from `${VAR}` as written, because it may be
/// as secret as an env value; the fingerprint must not give it away either.
#[test]
fn a_weak_secret_in_an_arg_cannot_be_recovered_from_the_printed_fingerprint() {
    let r =
        resolved(r#"{"mcpServers": {"s": {"command": "pin-server", "args": ["--pin=${PIN}"]}}}"#);
    let printed = r.servers["s"].fingerprint.to_string();
    let found = guesses(&printed, |c| old_fingerprint(&[format!("--pin={c}")], &[]));
    assert!(found.is_empty(), "the PIN was guessed offline: {found:?}");
}

const ENV_PIN: &str =
    r#"{"mcpServers": {"s": {"command": "pin-server", "env": {"PIN": "${PIN}"}}}}"#;

fn keyed(text: &str, key: &FingerprintKey, pin: &str) -> String {
    let loaded = parse_str(text, &Options::new()).unwrap();
    let env = |n: &str| (n == "PIN").then(|| pin.to_owned());
    resolve_with_key(&loaded.config, &env, key).unwrap().servers["s"]
        .fingerprint
        .to_string()
}

/// The guessing above is not vacuous: whoever holds the key (the user, or
/// someone who has read their key file) does find the PIN by resolving each
/// candidate under it. The key is what protects the secret, so a different
/// key finds nothing.
#[test]
fn the_key_is_what_stands_between_a_fingerprint_and_a_guess() {
    let key = FingerprintKey::from_bytes([0x5a; 32]);
    let printed = keyed(ENV_PIN, &key, PIN);
    let with_key: Vec<String> = candidates()
        .filter(|c| keyed(ENV_PIN, &key, c) == printed)
        .collect();
    assert_eq!(with_key, [PIN]);
    let other = FingerprintKey::from_bytes([0xa5; 32]);
    assert!(candidates().all(|c| keyed(ENV_PIN, &other, &c) != printed));
}

/// Stable where it must be: the same key (as read again from its file in
/// the next run) gives the same fingerprint; a changed secret a new one.
#[test]
fn same_key_same_fingerprint_changed_secret_new_fingerprint() {
    let key = FingerprintKey::from_bytes([3; 32]);
    let again = FingerprintKey::from_bytes(*key.expose_bytes());
    assert_eq!(keyed(ENV_PIN, &key, PIN), keyed(ENV_PIN, &again, PIN));
    assert_ne!(keyed(ENV_PIN, &key, PIN), keyed(ENV_PIN, &key, "000418"));
    // `resolve` keys by this process's key: stable within the process.
    let a = resolved(ENV_PIN);
    let b = resolved(ENV_PIN);
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_eq!(
        a.servers["s"].fingerprint.to_string(),
        keyed(ENV_PIN, FingerprintKey::per_process(), PIN)
    );
}

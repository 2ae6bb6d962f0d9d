#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Config text, as users write it, through every format's parser, the
//! validation and `${VAR}` resolution: whatever the text, problems come back
//! as data, never as a panic. (The `config` fuzz target checks the same
//! with coverage guidance; this runs on stable in `cargo test`.)

use mcp_stack_config::{Format, Options, parse_str, resolve};
use proptest::prelude::*;

const FORMATS: [Option<Format>; 12] = [
    None,
    Some(Format::OpenClawJson),
    Some(Format::OpenClawToml),
    Some(Format::ClaudeDesktop),
    Some(Format::Cursor),
    Some(Format::VsCode),
    Some(Format::Codex),
    Some(Format::ClaudeCode),
    Some(Format::GeminiCli),
    Some(Format::Windsurf),
    Some(Format::Zed),
    Some(Format::OpenCode),
];

fn load_all(text: &str) {
    for format in FORMATS {
        let mut options = Options::new();
        options.format = format;
        if let Ok(loaded) = parse_str(text, &options) {
            let env = |name: &str| name.len().is_multiple_of(2).then(|| format!("v-{name}"));
            let _ = resolve(&loaded.config, &env);
        }
    }
}

/// A JSON value shaped like a server record, with odd values where the
/// keys are known.
fn record() -> impl Strategy<Value = serde_json::Value> {
    let key = prop_oneof![
        Just("command".to_owned()),
        Just("args".to_owned()),
        Just("env".to_owned()),
        Just("url".to_owned()),
        Just("headers".to_owned()),
        Just("type".to_owned()),
        Just("oauth".to_owned()),
        Just("timeoutMs".to_owned()),
        Just("protocolVersion".to_owned()),
        "[a-zA-Z_]{1,8}",
    ];
    let leaf = prop_oneof![
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[ -~]{0,24}".prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
        "\\$\\{[A-Z_]{0,6}\\}?[ -~]{0,6}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map("[a-zA-Z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::collection::btree_map(key, value, 0..6)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_text_is_data_not_a_panic(text in "(?s).{0,300}") {
        load_all(&text);
    }

    #[test]
    fn records_with_odd_values_are_data_not_a_panic(
        servers in proptest::collection::btree_map("[a-z]{1,6}", record(), 0..4),
        key in prop_oneof![Just("mcpServers"), Just("servers"), Just("mcp_servers")],
    ) {
        let servers: serde_json::Map<String, serde_json::Value> = servers.into_iter().collect();
        let doc = serde_json::json!({ key: servers });
        load_all(&doc.to_string());
    }
}

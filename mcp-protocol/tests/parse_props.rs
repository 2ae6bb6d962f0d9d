#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Server-supplied text through this crate's parsers: never a panic, and
//! what round-trips does. (The `header` and `frontmatter` fuzz targets check
//! the same with coverage guidance; these run on stable in `cargo test`.)

use mcp_stack_protocol::skills::frontmatter;
use mcp_stack_protocol::types::{CallToolResult, Content, ResourceContents, ResourceTemplate};
use mcp_stack_protocol::x_mcp_header::{decode_value, encode_value};
use proptest::prelude::*;
use serde_json::Value;

/// Any JSON value, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[ -~]{0,16}".prop_map(Value::from),
        prop_oneof![
            Just("text"),
            Just("image"),
            Just("audio"),
            Just("resource"),
            Just("resource_link"),
            Just("blob"),
            Just("uri")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("text".to_owned()),
                    Just("blob".to_owned()),
                    Just("uri".to_owned()),
                    Just("data".to_owned()),
                    Just("mimeType".to_owned()),
                    Just("content".to_owned()),
                    Just("isError".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn header_values_decode_without_panic_and_encodings_round_trip(text in "(?s).{0,80}") {
        if let Some(decoded) = decode_value(&text) {
            let again = encode_value(&decoded);
            let back = decode_value(&again).map(|c| c.into_owned());
            prop_assert_eq!(back.as_deref(), Some(&*decoded));
        }
        let encoded = encode_value(&text);
        let back = decode_value(&encoded).map(|c| c.into_owned());
        prop_assert_eq!(back.as_deref(), Some(text.as_str()));
    }

    #[test]
    fn frontmatter_is_read_or_refused_never_a_panic(
        body in "(?s).{0,200}",
        lines in proptest::collection::vec("[a-z_]{1,8}: [ -~]{0,20}", 0..6),
    ) {
        let _ = frontmatter::parse(&body);
        let text = format!("---\n{}\n---\n{body}", lines.join("\n"));
        if let Ok((fields, _)) = frontmatter::parse(&text) {
            prop_assert!(frontmatter::differences(&fields, &fields).is_empty());
        }
    }

    #[test]
    fn template_variables_never_panic(template in "[a-z:/{}+?#,*.;&0-9]{0,40}") {
        let _ = ResourceTemplate::new(template, "t").variables();
    }

    #[test]
    fn content_read_from_text_is_text_content_exactly_when_it_says_so(value in json()) {
        // From text, as a session reads it: the streaming reader sees the
        // members one by one, with no intermediate map.
        let text = serde_json::to_string(&value).unwrap();
        let read = serde_json::from_str::<Content>(&text);
        // Compared with the same text read as a `Value` (a float need not
        // survive a trip through text bit for bit).
        let value: Value = serde_json::from_str(&text).unwrap();
        let says_text = value.get("type").and_then(Value::as_str) == Some("text")
            && value.get("text").is_some_and(Value::is_string);
        match read {
            Ok(Content::Text(t)) => {
                prop_assert!(says_text);
                prop_assert_eq!(Some(t.text.as_str()), value["text"].as_str());
                // Every other member kept: written back as it came.
                prop_assert_eq!(serde_json::to_value(Content::Text(t)).unwrap(), value);
            }
            Ok(Content::Unknown(v)) => {
                prop_assert!(!says_text);
                prop_assert_eq!(v, value);
            }
            Ok(_) => prop_assert!(!says_text),
            Err(e) => prop_assert!(false, "content is never refused: {e}"),
        }
    }

    #[test]
    fn content_and_results_of_any_shape_are_read_or_refused(value in json()) {
        // Unknown shapes are kept, never a panic, and written back as read.
        if let Ok(c) = serde_json::from_value::<Content>(value.clone()) {
            let _ = c.kind();
            if matches!(c, Content::Unknown(_)) {
                prop_assert_eq!(serde_json::to_value(&c).unwrap(), value.clone());
            }
        }
        if let Ok(r) = serde_json::from_value::<ResourceContents>(value.clone()) {
            let _ = (r.uri(), r.mime_type(), r.as_text());
            if let ResourceContents::Blob(b) = &r {
                let _ = (b.bytes(), b.decoded_len());
            }
        }
        let _ = serde_json::from_value::<CallToolResult>(value);
    }
}

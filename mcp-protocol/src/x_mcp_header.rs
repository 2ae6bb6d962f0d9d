//! The request metadata headers of revision 2026-07-28 on streamable HTTP,
//! and `x-mcp-header`: tool arguments mirrored into headers. No IO.
//!
//! A 2026-07-28 request mirrors parts of its body into headers:
//! [`PROTOCOL_VERSION`] (the `_meta` version), [`METHOD`], [`NAME`] (the
//! field [`name_field`] picks: `params.name` of `tools/call` and
//! `prompts/get`, `params.uri` of `resources/read`) and
//! `Mcp-Param-{Name}` ([`PARAM_PREFIX`]) for annotated tool arguments.
//! Values that are not plain header-safe ASCII travel in the Base64
//! sentinel form ([`encode_value`], [`decode_value`]).
//!
//! A tool's `inputSchema` may mark a property with `"x-mcp-header": "Name"`;
//! on streamable HTTP the client then sends the argument's value as the
//! header `Mcp-Param-Name`. The spec constrains the annotations, and a tool
//! that breaks a constraint must be left out of the catalog:
//!
//! * the name is a non-empty HTTP token (RFC 9110 `tchar`s), unique among the
//!   schema's annotations regardless of case;
//! * the property's `type` is `string`, `integer` or `boolean`;
//! * the property is reachable from the root through `properties` keys only
//!   (not through `items`, `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`,
//!   `$ref`/`$defs` or any other keyword).
//!
//! ```
//! use mcp_stack_protocol::x_mcp_header::{annotations, param_values};
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {
//!         "region": {"type": "string", "x-mcp-header": "Region"},
//!         "query": {"type": "string"}
//!     }
//! });
//! let params = annotations(&schema).unwrap();
//! let values = param_values(&params, &json!({"region": "us-west1", "query": "x"}));
//! assert_eq!(values, [("Region".to_string(), "us-west1".to_string())]);
//!
//! let bad = json!({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}});
//! assert!(annotations(&bad).unwrap_err().contains("number"));
//! ```

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::request::{
    PromptsGet, Request as _, ResourcesRead, TasksCancel, TasksGet, TasksUpdate, ToolsCall,
};

/// Header: the request's protocol version (equal to its `_meta` version).
pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
/// Header: the request's method.
pub const METHOD: &str = "Mcp-Method";
/// Header: the name the request is about (see [`name_field`]).
pub const NAME: &str = "Mcp-Name";
/// Header name prefix of mirrored tool arguments: `Mcp-Param-{name}`.
pub const PARAM_PREFIX: &str = "Mcp-Param-";
/// Start of the Base64 sentinel form of a header value.
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// End of the Base64 sentinel form of a header value.
pub const SENTINEL_SUFFIX: &str = "?=";

/// Which string field of `params` the [`NAME`] header mirrors for `method`.
///
/// ```
/// use mcp_stack_protocol::x_mcp_header::name_field;
/// assert_eq!(name_field("tools/call"), Some("name"));
/// assert_eq!(name_field("resources/read"), Some("uri"));
/// assert_eq!(name_field("tasks/get"), Some("taskId"));
/// assert_eq!(name_field("tools/list"), None);
/// ```
pub fn name_field(method: &str) -> Option<&'static str> {
    match method {
        ToolsCall::METHOD | PromptsGet::METHOD => Some("name"),
        ResourcesRead::METHOD => Some("uri"),
        // The tasks extension routes a task's requests by its id.
        TasksGet::METHOD | TasksUpdate::METHOD | TasksCancel::METHOD => Some("taskId"),
        _ => None,
    }
}

/// Encodes a value for an [`NAME`] or `Mcp-Param-*` header: as it is when it
/// is visible ASCII with inner spaces or tabs only; otherwise (non-ASCII,
/// control characters, leading or trailing whitespace, empty, or text that
/// looks like the sentinel itself) as `=?base64?{UTF-8 in Base64}?=`.
///
/// ```
/// use mcp_stack_protocol::x_mcp_header::encode_value;
/// assert_eq!(encode_value("us-west1"), "us-west1");
/// assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// ```
pub fn encode_value(value: &str) -> Cow<'_, str> {
    let safe_bytes = value.bytes().all(|b| matches!(b, 0x20..=0x7e | b'\t'));
    let trimmed = !value.starts_with([' ', '\t']) && !value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
    let plain = !value.is_empty() && safe_bytes && trimmed && !looks_encoded;
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            STANDARD.encode(value.as_bytes())
        ))
    }
}

/// Decodes a header value: the sentinel form to its text, anything else as
/// it is. `None` when the sentinel holds no valid Base64 of UTF-8.
///
/// ```
/// use mcp_stack_protocol::x_mcp_header::decode_value;
/// assert_eq!(decode_value("=?base64?IHBhZGRlZCA=?=").as_deref(), Some(" padded "));
/// assert_eq!(decode_value("plain").as_deref(), Some("plain"));
/// assert_eq!(decode_value("=?base64?!!?="), None);
/// ```
pub fn decode_value(value: &str) -> Option<Cow<'_, str>> {
    let Some(inner) = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|v| v.strip_suffix(SENTINEL_SUFFIX))
    else {
        return Some(Cow::Borrowed(value));
    };
    // Padded or not, as senders differ; the trailing bits must be zero.
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(inner).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// The annotation keyword.
pub const KEYWORD: &str = "x-mcp-header";

/// One annotated argument: where it sits in the arguments and its header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The chain of property names from the arguments' root.
    pub path: Vec<String>,
    /// The name portion of `Mcp-Param-{name}`.
    pub name: String,
}

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas (other than `properties`).
const SCHEMA_MAPS: &[&str] = &[
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// The annotated arguments of a tool's input schema, or why the annotations
/// make the tool invalid.
pub fn annotations(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    let mut path = Vec::new();
    walk(schema, true, &mut path, &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for param in &found {
        let lower = param.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!(
                "the x-mcp-header name {:?} is used twice (names are compared without case)",
                param.name
            ));
        }
        seen.push(lower);
    }
    Ok(found)
}

fn walk(
    schema: &Value,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return Ok(());
    };
    if let Some(annotation) = map.get(KEYWORD) {
        let at = if path.is_empty() {
            "the schema root".to_string()
        } else {
            format!("/{}", path.join("/"))
        };
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header at {at} is not on a property reached through `properties` alone"
            ));
        }
        let Value::String(name) = annotation else {
            return Err(format!("x-mcp-header at {at} is not a string"));
        };
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {name:?} at {at} is not a valid header name token"
            ));
        }
        match map.get("type") {
            Some(Value::String(t)) if matches!(t.as_str(), "string" | "integer" | "boolean") => {}
            Some(other) => {
                return Err(format!(
                    "x-mcp-header {name:?} at {at} is on a property of type {other}; only \
                     string, integer and boolean may be mirrored"
                ));
            }
            None => {
                return Err(format!(
                    "x-mcp-header {name:?} at {at} is on a property without a primitive `type`"
                ));
            }
        }
        found.push(HeaderParam {
            path: path.clone(),
            name: name.clone(),
        });
    }
    for (key, value) in map {
        if key == "properties" {
            if let Value::Object(props) = value {
                walk_map(props, reachable, path, found)?;
            }
        } else if SCHEMA_MAPS.contains(&key.as_str()) {
            if let Value::Object(props) = value {
                walk_map(props, false, path, found)?;
            }
        } else if SCHEMA_ARRAYS.contains(&key.as_str()) && value.is_array() {
            for item in value.as_array().into_iter().flatten() {
                walk(item, false, path, found)?;
            }
        } else if ONE_SCHEMA.contains(&key.as_str()) {
            walk(value, false, path, found)?;
        }
    }
    Ok(())
}

fn walk_map(
    props: &Map<String, Value>,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    for (name, sub) in props {
        path.push(name.clone());
        let result = walk(sub, reachable, path, found);
        path.pop();
        result?;
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for a call, as (name portion, text): each
/// annotated argument present in `arguments` (and not `null`). The text is
/// [`value_text`]; a transport encodes it with [`encode_value`].
pub fn param_values(params: &[HeaderParam], arguments: &Value) -> Vec<(String, String)> {
    let mut values = Vec::new();
    for param in params {
        let mut value = arguments;
        let mut present = true;
        for key in &param.path {
            match value.get(key) {
                Some(v) => value = v,
                None => {
                    present = false;
                    break;
                }
            }
        }
        if !present {
            continue;
        }
        if let Some(text) = value_text(value) {
            values.push((param.name.clone(), text));
        }
    }
    values
}

/// An argument's header text: strings as they are, integers in decimal,
/// booleans as `true`/`false`; `None` for anything else (null, objects,
/// arrays, fractions).
pub fn value_text(value: &Value) -> Option<String> {
    Some(match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // 42.0 is an integer to JSON Schema.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{f:.0}")
            }
            _ => return None,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(schema: Value) -> Result<Vec<String>, String> {
        annotations(&schema).map(|v| v.into_iter().map(|p| p.name).collect())
    }

    #[test]
    fn nested_properties_are_reachable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "x-mcp-header": {"type": "string"}
                    }
                },
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            }
        });
        let params = annotations(&schema).unwrap();
        assert_eq!(params.len(), 2);
        let region = params.iter().find(|p| p.name == "Region").unwrap();
        assert_eq!(region.path, ["target", "region"]);
    }

    #[test]
    fn every_constraint_rejects() {
        let bad = [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A\r\n"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": 3}}}),
                "not a string",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "number",
            ),
            (
                json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
                "object",
            ),
            (
                json!({"properties": {"a": {"x-mcp-header": "A"}}}),
                "primitive",
            ),
            (
                json!({"properties": {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dUP"}
                }}),
                "twice",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "properties",
            ),
            (
                json!({"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "properties",
            ),
            (
                json!({"$defs": {"a": {"type": "string", "x-mcp-header": "A"}}, "properties": {"a": {"$ref": "#/$defs/a"}}}),
                "properties",
            ),
            (
                json!({"if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}}),
                "properties",
            ),
            (json!({"type": "object", "x-mcp-header": "Root"}), "root"),
        ];
        for (schema, why) in bad {
            let err = annotations(&schema).unwrap_err();
            assert!(err.contains(why), "{schema}: {err}");
        }
    }

    #[test]
    fn values_become_text_and_absent_ones_are_left_out() {
        let schema = json!({"properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "n": {"type": "string", "x-mcp-header": "Null"},
            "m": {"type": "string", "x-mcp-header": "Missing"},
            "o": {"type": "object", "properties": {"deep": {"type": "integer", "x-mcp-header": "Deep"}}}
        }});
        let params = annotations(&schema).unwrap();
        let mut got = param_values(
            &params,
            &json!({"s": "Hello, 世界", "i": -7, "b": false, "n": null, "o": {"deep": 42.0}}),
        );
        got.sort();
        assert_eq!(
            got,
            [
                ("B".into(), "false".into()),
                ("Deep".into(), "42".into()),
                ("I".into(), "-7".into()),
                ("S".into(), "Hello, 世界".into()),
            ]
        );
        assert_eq!(
            names(json!({"type": "object"})).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_spec_encoding_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_value("a b\tc"), "a b\tc");
        assert_eq!(encode_value(""), "=?base64??=");
        assert_eq!(encode_value("=?base64?x"), "=?base64?x");
    }

    #[test]
    fn decoding_inverts_encoding_and_refuses_bad_sentinels() {
        for text in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?literal?=",
            "",
        ] {
            assert_eq!(decode_value(&encode_value(text)).as_deref(), Some(text));
        }
        // Unpadded Base64 is accepted too.
        assert_eq!(decode_value("=?base64?Zg?=").as_deref(), Some("f"));
        for bad in [
            "=?base64?Z?=",
            "=?base64?Zm9v!?=",
            "=?base64?Zh==?=",
            "=?base64?/w==?=",
        ] {
            assert_eq!(decode_value(bad), None, "{bad}");
        }
    }
}

//! `x-mcp-header`: tool arguments mirrored into HTTP headers (protocol
//! revision 2026-07-28), without IO.
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
//! use mcp_session::headers::{annotations, param_headers};
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
//! let context = param_headers(&params, &json!({"region": "us-west1", "query": "x"}));
//! assert_eq!(context.param_headers(), &[("Region".to_string(), "us-west1".to_string())]);
//!
//! let bad = json!({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}});
//! assert!(annotations(&bad).unwrap_err().contains("number"));
//! ```

use mcp_transport::SendContext;
use serde_json::{Map, Value};

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

/// The `Mcp-Param-*` headers for a call: each annotated argument present in
/// `arguments` (and not `null`), as text: strings as they are, integers in
/// decimal, booleans as `true`/`false`. The transport encodes them.
pub fn param_headers(params: &[HeaderParam], arguments: &Value) -> SendContext {
    let mut context = SendContext::new();
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
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => i.to_string(),
                (_, Some(u), _) => u.to_string(),
                // 42.0 is an integer to JSON Schema.
                (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                    format!("{f:.0}")
                }
                _ => continue,
            },
            _ => continue,
        };
        context = context.param_header(param.name.clone(), text);
    }
    context
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
        let context = param_headers(
            &params,
            &json!({"s": "Hello, 世界", "i": -7, "b": false, "n": null, "o": {"deep": 42.0}}),
        );
        let mut got = context.param_headers().to_vec();
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
}

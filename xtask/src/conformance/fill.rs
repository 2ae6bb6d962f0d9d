//! Arguments for a tool from its input schema, as an agent with no task of
//! its own would pick them: the schema's defaults, constants, first enum
//! values and examples, and otherwise a plain value of the right type.
//!
//! Optional properties are left out (the server applies its own defaults)
//! unless the schema gives a default for them.

use serde_json::{Map, Value, json};

/// How deep nested schemas are followed.
const MAX_DEPTH: usize = 8;

/// Arguments for a tool whose input schema is `schema`.
pub(crate) fn arguments(schema: &Value) -> Value {
    match value_for(schema, 0) {
        Value::Object(o) => Value::Object(o),
        // Tool arguments are always an object.
        _ => Value::Object(Map::new()),
    }
}

fn value_for(schema: &Value, depth: usize) -> Value {
    let Some(s) = schema.as_object() else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(v) = s.get("default").or_else(|| s.get("const")) {
        return v.clone();
    }
    if let Some(first) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = s
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = s.get(key).and_then(Value::as_array).and_then(|a| {
            a.iter()
                .find(|v| v.get("type").and_then(Value::as_str) != Some("null"))
        }) {
            return value_for(first, depth + 1);
        }
    }
    let kind = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if s.contains_key("properties") => "object",
        _ => "string",
    };
    match kind {
        "object" => object_for(s, depth),
        "array" => {
            let n = s
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .min(3);
            let item = s
                .get("items")
                .map_or(json!("example"), |i| value_for(i, depth + 1));
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "integer" => json!(number_in_range(s, 1.0).round() as i64),
        "number" => json!(number_in_range(s, 1.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => string_for(s),
    }
}

fn object_for(s: &Map<String, Value>, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let has_default = prop.get("default").is_some();
            if required.contains(&name.as_str()) || has_default {
                out.insert(name.clone(), value_for(prop, depth + 1));
            }
        }
    }
    Value::Object(out)
}

fn number_in_range(s: &Map<String, Value>, preferred: f64) -> f64 {
    let min = s.get("minimum").and_then(Value::as_f64).or_else(|| {
        s.get("exclusiveMinimum")
            .and_then(Value::as_f64)
            .map(|m| m + 1.0)
    });
    let max = s.get("maximum").and_then(Value::as_f64).or_else(|| {
        s.get("exclusiveMaximum")
            .and_then(Value::as_f64)
            .map(|m| m - 1.0)
    });
    let mut v = preferred;
    if let Some(min) = min {
        v = v.max(min);
    }
    if let Some(max) = max {
        v = v.min(max);
    }
    v
}

fn string_for(s: &Map<String, Value>) -> Value {
    let text = match s.get("format").and_then(Value::as_str) {
        Some("uri" | "url") => "data:text/plain,hello",
        Some("email") => "someone@example.com",
        Some("date") => "2025-01-01",
        Some("date-time") => "2025-01-01T00:00:00Z",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        _ => "example",
    };
    let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let mut text = text.to_string();
    while (text.chars().count() as u64) < min {
        text.push('x');
    }
    Value::String(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_get_typed_values_and_defaults_are_kept() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "n": {"type": "integer", "minimum": 5},
                "kind": {"type": "string", "enum": ["x", "y"]},
                "count": {"type": "number", "default": 3},
                "optional": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "when": {"type": "string", "format": "date"}
            },
            "required": ["a", "n", "kind", "tags", "when"]
        });
        assert_eq!(
            arguments(&schema),
            json!({"a": 1.0, "n": 5, "kind": "x", "count": 3,
                   "tags": ["example", "example"], "when": "2025-01-01"})
        );
    }

    #[test]
    fn odd_schemas_still_give_an_object() {
        assert_eq!(arguments(&json!({})), json!({}));
        assert_eq!(arguments(&json!(true)), json!({}));
        assert_eq!(
            arguments(
                &json!({"properties": {"x": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}},
                "required": ["x"]})
            ),
            json!({"x": true})
        );
    }
}

//! Arguments for a tool from its input schema, as an agent with no task of
//! its own would pick them: the schema's defaults, constants, first enum
//! values and examples, and otherwise a plain value of the right type.
//!
//! Optional properties are left out (the server applies its own defaults)
//! unless the schema gives a default for them. What makes a property
//! required is read from the object's own `required`, from each `allOf`
//! part, from the first branch of an `anyOf`/`oneOf` (at the top or inside
//! `allOf`), and from `then`/`else` as the `if` decides for the value drawn
//! so far (a plain `required` + `const`/`enum` reading of `if`; anything
//! else in `if` counts as not matching).

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
    // A combinator stands for the value's type only where the schema names
    // none itself (an object's `allOf` of `required` lists does not).
    let typed = s.contains_key("type") || s.contains_key("properties");
    for key in ["anyOf", "oneOf", "allOf"].into_iter().filter(|_| !typed) {
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
    let mut required: Vec<&str> = required_of(s);
    for part in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(part) = part.as_object() {
            required.extend(required_of(part));
        }
    }
    let mut out = Map::new();
    fill_properties(s, &required, &mut out, depth);
    // `if`/`then`/`else`: decided on what was drawn above.
    if let Some(cond) = s.get("if").and_then(Value::as_object) {
        let branch = if holds(cond, &out) { "then" } else { "else" };
        if let Some(b) = s.get(branch).and_then(Value::as_object) {
            let more = required_of(b);
            fill_properties(s, &more, &mut out, depth);
        }
    }
    Value::Object(out)
}

/// The names `s` requires: its `required`, and the `required` of the first
/// branch of its `anyOf`/`oneOf`.
fn required_of(s: &Map<String, Value>) -> Vec<&str> {
    let own = s.get("required").and_then(Value::as_array);
    let branch = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| s.get(*k).and_then(Value::as_array))
        .filter_map(|a| a.first())
        .filter_map(|b| b.get("required").and_then(Value::as_array));
    own.into_iter()
        .chain(branch)
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Adds to `out` each property that is required or has a default, drawn
/// from its schema in `s.properties` (a required name without one gets a
/// string).
fn fill_properties(
    s: &Map<String, Value>,
    required: &[&str],
    out: &mut Map<String, Value>,
    depth: usize,
) {
    let props = s.get("properties").and_then(Value::as_object);
    for (name, prop) in props.into_iter().flatten() {
        let has_default = prop.get("default").is_some();
        if !out.contains_key(name) && (required.contains(&name.as_str()) || has_default) {
            out.insert(name.clone(), value_for(prop, depth + 1));
        }
    }
    for name in required {
        if !out.contains_key(*name) && !props.is_some_and(|p| p.contains_key(*name)) {
            out.insert((*name).to_string(), json!("example"));
        }
    }
}

/// Whether `value` matches the `if` schema `cond`, read as `required`
/// plus `const`/`enum` of properties; other keywords count as no match.
fn holds(cond: &Map<String, Value>, value: &Map<String, Value>) -> bool {
    let known = ["required", "properties", "type"];
    if cond.keys().any(|k| !known.contains(&k.as_str())) {
        return false;
    }
    let required_there = cond
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|n| value.contains_key(n));
    let props_match = cond
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(name, p)| match value.get(name) {
            None => true,
            Some(v) => {
                p.get("const").is_none_or(|c| c == v)
                    && p.get("enum")
                        .and_then(Value::as_array)
                        .is_none_or(|e| e.contains(v))
            }
        });
    required_there && props_match
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
    fn composition_and_conditionals_add_required_properties() {
        // The shape of the conformance suite's JSON Schema 2020-12 fixture.
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        });
        assert_eq!(
            arguments(&schema),
            json!({"phone": "example", "email": "example"})
        );
        // When the `if` holds, `then` applies.
        let schema = json!({
            "type": "object",
            "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["kind"],
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"required": ["x"]},
            "else": {"required": ["y"]}
        });
        assert_eq!(arguments(&schema), json!({"kind": "a", "x": 1}));
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

//! Tool arguments people can type: `key=value` read by the tool's input
//! schema (`n=3` is a number where the schema says `integer` or `number`,
//! `flag=true` a boolean where it says `boolean`, text a string where it
//! says `string`), `key:=JSON` for raw JSON (as httpie has it), on top of
//! `--args` (a JSON object, `@FILE` holding one, or `-` for stdin); and a
//! tool's signature for `mcp tools`: `read_file(path: string, maxBytes?:
//! integer)`.

use std::io::Read as _;

use serde_json::{Map, Value};

use mcp_stack_config::suggest::did_you_mean;

/// The text of `--args`: JSON as given, `@FILE`'s content, or stdin's (`-`).
pub(crate) fn args_text(given: &str) -> Result<String, String> {
    if given == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("--args -: cannot read stdin: {e}"))?;
        return Ok(text);
    }
    if let Some(path) = given.strip_prefix('@') {
        return std::fs::read_to_string(path).map_err(|e| format!("--args @{path}: {e}"));
    }
    Ok(given.to_owned())
}

/// `--args` as a JSON object (`None`: an empty one).
pub(crate) fn args_object(given: Option<&str>) -> Result<Map<String, Value>, String> {
    let Some(given) = given else {
        return Ok(Map::new());
    };
    let text = args_text(given)?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("--args must be a JSON object".into()),
        Err(e) => Err(format!("--args is not JSON: {e}")),
    }
}

/// The types a schema allows (`"type": "x"` or `["x", "y"]`; none: any).
fn types(schema: Option<&Value>) -> Vec<&str> {
    match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `text` read as one of `types`: the first that reads it, trying the
/// others before `string` (a string takes anything).
fn read_as(text: &str, types: &[&str]) -> Option<Value> {
    let mut order: Vec<&str> = types.iter().copied().filter(|t| *t != "string").collect();
    if types.contains(&"string") {
        order.push("string");
    }
    order.into_iter().find_map(|t| match t {
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<i64>().ok().map(Value::from).or_else(|| {
            text.parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        }),
        "boolean" => match text {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => (text == "null").then_some(Value::Null),
        "array" | "object" => serde_json::from_str::<Value>(text)
            .ok()
            .filter(|v| (t == "array") == v.is_array() && (t == "object") == v.is_object()),
        "string" => Some(Value::from(text)),
        _ => None,
    })
}

/// `pairs` (`key=value`, `key:=JSON`) into `base` (from `--args`), each
/// value read by `schema` (the tool's input schema); `tool` names it in
/// errors. An argument the schema does not list is refused, with the
/// closest it does, unless the schema allows others.
pub(crate) fn with_pairs(
    tool: &str,
    schema: &Value,
    pairs: &[String],
    mut base: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let open = !matches!(schema.get("additionalProperties"), Some(Value::Bool(false)))
        && properties.is_none_or(|p| p.is_empty());
    for pair in pairs {
        let (key, raw, text) = match (pair.split_once(":="), pair.split_once('=')) {
            (Some((k, v)), Some((k2, _))) if k.len() <= k2.len() => (k, true, v),
            (_, Some((k, v))) => (k, false, v),
            (Some((k, v)), None) => (k, true, v),
            (None, None) => {
                return Err(format!(
                    "`{pair}`: arguments are KEY=VALUE (by the tool's schema) or KEY:=JSON"
                ));
            }
        };
        let property = properties.and_then(|p| p.get(key));
        if property.is_none() && !open {
            let known: Vec<&str> = properties
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(format!(
                "{tool} has no argument `{key}`{} (its arguments: {})",
                did_you_mean(key, known.iter().copied()),
                known.join(", ")
            ));
        }
        let value = if raw {
            serde_json::from_str(text).map_err(|e| format!("`{key}:=`: not JSON: {e}"))?
        } else {
            let allowed = types(property);
            if allowed.is_empty() {
                Value::from(text)
            } else {
                read_as(text, &allowed).ok_or_else(|| {
                    format!(
                        "`{key}={text}`: {tool} takes {} there (`{key}:=JSON` passes JSON as it is)",
                        allowed.join(" or ")
                    )
                })?
            }
        };
        base.insert(key.to_owned(), value);
    }
    Ok(base)
}

/// One property's type for people: `string`, `integer|null`, `string[]`,
/// `"a"|"b"` (an enum), `any`.
fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("|");
    }
    let ts = types(Some(schema));
    if ts.is_empty() {
        return "any".into();
    }
    ts.iter()
        .map(|t| match (*t, schema.get("items")) {
            ("array", Some(items)) if !types(Some(items)).is_empty() => {
                format!("{}[]", type_name(items))
            }
            (t, _) => t.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// A tool's signature: `name(path: string, maxBytes?: integer)`, required
/// arguments first, optional ones marked with `?`.
pub(crate) fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args: Vec<(bool, String)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, v)| {
                    let optional = !required.contains(&k.as_str());
                    let mark = if optional { "?" } else { "" };
                    (optional, format!("{k}{mark}: {}", type_name(v)))
                })
                .collect()
        })
        .unwrap_or_default();
    // Required first, each group in the schema's order.
    args.sort_by_key(|(optional, _)| *optional);
    let args: Vec<String> = args.into_iter().map(|(_, a)| a).collect();
    format!("{name}({})", args.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "depth": {"type": "integer"},
                "ratio": {"type": "number"},
                "all": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["fast", "slow"]},
                "limit": {"type": ["integer", "null"]}
            },
            "required": ["path"]
        })
    }

    fn pairs(p: &[&str]) -> Result<Map<String, Value>, String> {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        with_pairs("t", &schema(), &p, Map::new())
    }

    #[test]
    fn values_are_read_by_the_schema() {
        let m = pairs(&[
            "path=42",
            "depth=3",
            "ratio=0.5",
            "all=true",
            "tags=[\"a\"]",
            "limit=null",
        ])
        .unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"path": "42", "depth": 3, "ratio": 0.5, "all": true, "tags": ["a"], "limit": null})
        );
        assert_eq!(pairs(&["ratio=2"]).unwrap()["ratio"], json!(2));
        assert_eq!(pairs(&["mode=fast"]).unwrap()["mode"], json!("fast"));
        // `=` inside the value stays in the value.
        assert_eq!(pairs(&["path=a=b"]).unwrap()["path"], json!("a=b"));
    }

    #[test]
    fn raw_json_and_base_arguments() {
        let base = Map::from_iter([
            ("path".to_owned(), json!("x")),
            ("all".into(), json!(false)),
        ]);
        let p = vec![
            "depth:=7".to_owned(),
            "all=true".to_owned(),
            "path:=\"y\"".to_owned(),
        ];
        let m = with_pairs("t", &schema(), &p, base).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"path": "y", "depth": 7, "all": true})
        );
    }

    #[test]
    fn wrong_values_and_unknown_names_say_what_fits() {
        let e = pairs(&["depth=three"]).unwrap_err();
        assert!(e.contains("integer") && e.contains("depth:=JSON"), "{e}");
        assert!(pairs(&["all=maybe"]).unwrap_err().contains("boolean"));
        let e = pairs(&["pth=x"]).unwrap_err();
        assert!(e.contains("did you mean `path`"), "{e}");
        assert!(pairs(&["novalue"]).unwrap_err().contains("KEY=VALUE"));
        assert!(pairs(&["depth:=nope"]).unwrap_err().contains("not JSON"));
        // A schema without properties takes any name, as a string.
        let open = with_pairs("t", &json!({"type": "object"}), &["k=1".into()], Map::new());
        assert_eq!(open.unwrap()["k"], json!("1"));
    }

    #[test]
    fn signatures_name_types_and_mark_optional_arguments() {
        assert_eq!(
            signature(
                "read_file",
                &json!({
                    "type": "object",
                    "properties": {"maxBytes": {"type": "integer"}, "path": {"type": "string"}},
                    "required": ["path"]
                })
            ),
            "read_file(path: string, maxBytes?: integer)"
        );
        let s = signature("t", &schema());
        assert!(s.starts_with("t(path: string, "), "{s}");
        assert!(
            s.contains("tags?: string[]") && s.contains("mode?: \"fast\"|\"slow\""),
            "{s}"
        );
        assert!(s.contains("limit?: integer|null"), "{s}");
        assert_eq!(signature("x", &json!({"type": "object"})), "x()");
    }

    #[test]
    fn args_files_are_read() {
        let path = std::env::temp_dir().join(format!("mcp-args-{}.json", std::process::id()));
        std::fs::write(&path, r#"{"a": 1}"#).unwrap();
        let m = args_object(Some(&format!("@{}", path.display()))).unwrap();
        assert_eq!(m["a"], json!(1));
        assert!(args_object(Some("[1]")).unwrap_err().contains("object"));
        assert!(args_object(Some("@/nonexistent/x")).is_err());
        assert!(args_object(None).unwrap().is_empty());
    }
}

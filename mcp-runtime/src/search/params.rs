//! A tool's parameters as the index sees them: the names of its schema's
//! properties and their descriptions and titles, nested ones too, bounded
//! in count and depth.
//!
//! Read from the schema's `Value` when it has one, else from its JSON text
//! (a tool from the persisted catalog keeps its schema unparsed,
//! [`Schema`]): the first search over such a catalog would otherwise build
//! every tool's schema tree, and keep it, to take a few names out of it. The
//! text is read into borrowed slices only, and a member of a type the index
//! does not read is skipped, as a `Value` walk skips it; a schema the text
//! reader cannot read the same way (a member given twice, which a `Value`
//! keeps the last of) is parsed and read as a `Value`, so both readers
//! always agree.

use std::borrow::Cow;
use std::collections::BTreeMap;

use mcp_stack_session::types::Schema;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{MAX_PARAMETERS, MAX_SCHEMA_DEPTH};

/// One thing the index takes from a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Param<'a> {
    /// A property's name.
    Name(Cow<'a, str>),
    /// A property's description or title.
    Text(Cow<'a, str>),
}

/// The parameters of `schema`, in the order the index takes them: each
/// property (sorted by name, as a `Value`'s members are) with its
/// description and title, then its own properties; `items` before
/// `properties`.
pub(super) fn params(schema: &Schema) -> Vec<Param<'_>> {
    let mut out = Vec::new();
    // The text only while no tree was built: a tree is read without a parse.
    if let Some(text) = schema.raw_text().filter(|_| schema.is_unparsed()) {
        let mut budget = MAX_PARAMETERS;
        if from_text(text, 0, &mut budget, &mut out).is_some() {
            return out;
        }
        out.clear();
    }
    let mut budget = MAX_PARAMETERS;
    from_value(schema, 0, &mut budget, &mut out);
    out
}

fn from_value<'a>(schema: &'a Value, depth: usize, budget: &mut usize, out: &mut Vec<Param<'a>>) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(items) = schema.get("items") {
        from_value(items, depth + 1, budget, out);
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        out.push(Param::Name(Cow::Borrowed(name)));
        for key in ["description", "title"] {
            if let Some(text) = property.get(key).and_then(Value::as_str) {
                out.push(Param::Text(Cow::Borrowed(text)));
            }
        }
        from_value(property, depth + 1, budget, out);
    }
}

/// The members of a schema object the index reads, each kept as its text
/// (borrowed): a member of a type the index does not read is skipped, as
/// a `Value` walk skips it.
#[derive(Deserialize)]
struct Node<'a> {
    #[serde(borrow, default)]
    items: Option<&'a RawValue>,
    #[serde(borrow, default)]
    properties: Option<&'a RawValue>,
    #[serde(borrow, default)]
    description: Option<&'a RawValue>,
    #[serde(borrow, default)]
    title: Option<&'a RawValue>,
}

/// `text` as a schema object; `Some(None)` when it is not an object (a
/// `Value` walk finds nothing in it either); `None` when it is an object
/// this reader cannot read as a `Value` walk would (a member given twice).
fn read_node(text: &str) -> Option<Option<Node<'_>>> {
    if !text.trim_start().starts_with('{') {
        return Some(None);
    }
    serde_json::from_str(text).ok().map(Some)
}

/// A property's name, borrowed from the text unless it has escapes.
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

/// A string member, borrowed from the text unless it has escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// A member's text as a string, when it is one.
fn string(member: Option<&RawValue>) -> Option<Option<Cow<'_, str>>> {
    match member {
        Some(raw) if raw.get().starts_with('"') => serde_json::from_str::<Text<'_>>(raw.get())
            .ok()
            .map(|Text(text)| Some(text)),
        _ => Some(None),
    }
}

/// [`from_value`] over the JSON text; `None`: read it as a `Value` instead.
fn from_text<'a>(
    text: &'a str,
    depth: usize,
    budget: &mut usize,
    out: &mut Vec<Param<'a>>,
) -> Option<()> {
    if depth >= MAX_SCHEMA_DEPTH {
        return Some(());
    }
    let Some(node) = read_node(text)? else {
        return Some(());
    };
    walk(node, depth, budget, out)
}

/// The items and properties of a node read at `depth`.
fn walk<'a>(
    node: Node<'a>,
    depth: usize,
    budget: &mut usize,
    out: &mut Vec<Param<'a>>,
) -> Option<()> {
    if let Some(items) = node.items {
        from_text(items.get(), depth + 1, budget, out)?;
    }
    let Some(properties) = node.properties.filter(|p| p.get().starts_with('{')) else {
        return Some(());
    };
    let properties: BTreeMap<Name<'a>, &'a RawValue> =
        serde_json::from_str(properties.get()).ok()?;
    for (Name(name), property) in properties {
        if *budget == 0 {
            return Some(());
        }
        *budget -= 1;
        out.push(Param::Name(name));
        let Some(property) = read_node(property.get())? else {
            continue;
        };
        for text in [string(property.description)?, string(property.title)?]
            .into_iter()
            .flatten()
        {
            out.push(Param::Text(text));
        }
        if depth + 1 < MAX_SCHEMA_DEPTH {
            walk(property, depth + 1, budget, out)?;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn by_value(schema: &Value) -> Vec<Param<'_>> {
        let mut out = Vec::new();
        let mut budget = MAX_PARAMETERS;
        from_value(schema, 0, &mut budget, &mut out);
        out
    }

    fn by_text(text: &str) -> Option<Vec<Param<'_>>> {
        let mut out = Vec::new();
        let mut budget = MAX_PARAMETERS;
        from_text(text, 0, &mut budget, &mut out).map(|()| out)
    }

    fn unparsed(value: &Value, pretty: bool) -> Schema {
        let text = if pretty {
            serde_json::to_string_pretty(value)
        } else {
            serde_json::to_string(value)
        };
        Schema::from_raw(RawValue::from_string(text.unwrap()).unwrap())
    }

    /// Schema-like values: objects of the members the index reads (and
    /// others), each of any type, nested.
    fn schema_like() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z \\\\\"é]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            let key = prop_oneof![
                Just("properties".to_owned()),
                Just("items".to_owned()),
                Just("description".to_owned()),
                Just("title".to_owned()),
                "[a-c]{1,2}",
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map(key, inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// From the text or from the `Value`, the same parameters, in the
        /// same order, for any schema-like value, compact or pretty.
        #[test]
        fn text_and_value_give_the_same_parameters(value in schema_like(), pretty in any::<bool>()) {
            let schema = unparsed(&value, pretty);
            prop_assert_eq!(params(&schema), by_value(&value));
            prop_assert!(schema.is_unparsed(), "read without a tree");
        }
    }

    #[test]
    fn a_plain_schema_is_read_from_its_text_alone() {
        let value = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where \"it\" is", "title": "Path"},
                "opts": {"type": "object", "properties": {"deep": {"description": "Nested"}}},
                "list": {"type": "array", "items": {"properties": {"each": {}}}},
                "flag": true
            }
        });
        let text = value.to_string();
        let read = by_text(&text).expect("read from the text");
        assert_eq!(read, by_value(&value));
        let names: Vec<&str> = read
            .iter()
            .filter_map(|p| match p {
                Param::Name(n) => Some(&**n),
                Param::Text(_) => None,
            })
            .collect();
        assert_eq!(names, ["flag", "list", "each", "opts", "deep", "path"]);
        assert!(read.contains(&Param::Text(Cow::Owned("Where \"it\" is".into()))));
    }

    #[test]
    fn what_the_text_reader_cannot_read_goes_through_a_value() {
        // Members of a type the index does not read are skipped, from the
        // text as from a `Value`.
        for value in [
            json!({"properties": {"a": {"description": 7, "title": "A"}}}),
            json!({"properties": [1], "items": {"properties": {"b": {}}}}),
        ] {
            let text = value.to_string();
            assert_eq!(by_text(&text), Some(by_value(&value)), "{value}");
        }
        // A member given twice: the text reader refuses it, and a `Value`
        // (which keeps the last) is read instead.
        assert!(by_text(r#"{"properties": {"a": {"title": "x", "title": "y"}}}"#).is_none());
        let twice = r#"{"properties": {"a": {"title": "x", "title": "y"}}}"#;
        let schema = Schema::from_raw(RawValue::from_string(twice.into()).unwrap());
        assert_eq!(
            params(&schema),
            [
                Param::Name(Cow::Borrowed("a")),
                Param::Text(Cow::Borrowed("y"))
            ]
        );
    }

    #[test]
    fn the_bounds_hold_from_the_text() {
        let many: serde_json::Map<String, Value> = (0..MAX_PARAMETERS + 10)
            .map(|i| (format!("p{i:03}"), json!({})))
            .collect();
        let value = json!({"properties": many});
        let text = value.to_string();
        let read = by_text(&text).unwrap();
        assert_eq!(read.len(), MAX_PARAMETERS);
        let mut deep = json!({"description": "bottom"});
        for level in 0..MAX_SCHEMA_DEPTH + 2 {
            deep = json!({"properties": {format!("l{level}"): deep}});
        }
        let text = deep.to_string();
        let read = by_text(&text).unwrap();
        assert_eq!(read, by_value(&deep));
        assert_eq!(read.len(), MAX_SCHEMA_DEPTH);
    }
}

//! [`Tool`] read by hand: one pass over each member, where serde's derive
//! (with `#[serde(flatten)]` for `extra`) would first buffer the whole
//! object, schemas included, and then read it again. A `tools/list`
//! answer and a persisted catalog are mostly tools.
//!
//! [`LazyTool`] reads the same object with its schemas kept as JSON text
//! ([`Schema::from_raw`]), parsed on first use.

use serde::Deserialize;
use serde::de::{Deserializer, Error, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::by_hand::once;
use super::content::{Field, Key};
use super::{Extra, Icon, Schema, Tool, ToolAnnotations, empty_object_schema};

const FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
];

/// A schema member: parsed, or kept as text.
fn schema<'de, A: MapAccess<'de>>(map: &mut A, lazy: bool) -> Result<Schema, A::Error> {
    if lazy {
        Ok(Schema::from_raw(map.next_value::<Box<RawValue>>()?))
    } else {
        Ok(Schema::from(map.next_value::<Value>()?))
    }
}

/// Reads a schema member once; a second one is an error, as with derive.
fn schema_once<'de, A: MapAccess<'de>>(
    map: &mut A,
    slot: &mut Option<Option<Schema>>,
    name: &'static str,
    lazy: bool,
    nullable: bool,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(A::Error::duplicate_field(name));
    }
    *slot = Some(if nullable {
        if lazy {
            map.next_value::<Option<Box<RawValue>>>()?
                .map(Schema::from_raw)
        } else {
            map.next_value::<Option<Value>>()?.map(Schema::from)
        }
    } else {
        Some(schema(map, lazy)?)
    });
    Ok(())
}

/// The visitor of both readers.
struct Fields {
    lazy: bool,
}

impl<'de> Visitor<'de> for Fields {
    type Value = Tool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a tool object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tool, A::Error> {
        let mut name: Option<String> = None;
        let mut title: Option<Option<String>> = None;
        let mut description: Option<Option<String>> = None;
        let mut input_schema: Option<Option<Schema>> = None;
        let mut output_schema: Option<Option<Schema>> = None;
        let mut annotations: Option<Option<ToolAnnotations>> = None;
        let mut icons: Option<Option<Vec<Icon>>> = None;
        let mut extra = Extra::new();
        while let Some(key) = map.next_key_seed(Key(FIELDS))? {
            match key {
                Field::Known(0) => once(&mut map, &mut name, "name")?,
                Field::Known(1) => once(&mut map, &mut title, "title")?,
                Field::Known(2) => once(&mut map, &mut description, "description")?,
                Field::Known(3) => {
                    schema_once(&mut map, &mut input_schema, "inputSchema", self.lazy, false)?;
                }
                Field::Known(4) => {
                    schema_once(
                        &mut map,
                        &mut output_schema,
                        "outputSchema",
                        self.lazy,
                        true,
                    )?;
                }
                Field::Known(5) => once(&mut map, &mut annotations, "annotations")?,
                Field::Known(_) => once(&mut map, &mut icons, "icons")?,
                Field::Other(key) => {
                    let value = map.next_value::<Value>()?;
                    extra.insert(key, value);
                }
            }
        }
        Ok(Tool {
            name: name.ok_or_else(|| A::Error::missing_field("name"))?,
            title: title.flatten(),
            description: description.flatten(),
            input_schema: input_schema
                .flatten()
                .unwrap_or_else(|| empty_object_schema().into()),
            output_schema: output_schema.flatten(),
            annotations: annotations.flatten(),
            icons: icons.flatten(),
            extra,
        })
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Fields { lazy: false })
    }
}

/// A [`Tool`] read with its schemas kept as JSON text, each parsed the
/// first time it is looked into ([`Schema`]): reading a catalog costs its
/// bytes, not a tree per schema.
///
/// It takes serde_json's own readers (`from_str`, `from_slice`,
/// `from_reader`, or a `Value`), which can hand a member over as text;
/// other deserializers (another format, or serde's buffering behind
/// `#[serde(flatten)]` and untagged enums) refuse to, and the read fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyTool(pub Tool);

impl<'de> Deserialize<'de> for LazyTool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Fields { lazy: true }).map(LazyTool)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The derived reader this one replaces: same struct, serde's derive.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Derived {
        name: String,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        description: Option<String>,
        #[serde(default = "empty_object_schema")]
        input_schema: Value,
        #[serde(default)]
        output_schema: Option<Value>,
        #[serde(default)]
        annotations: Option<ToolAnnotations>,
        #[serde(default)]
        icons: Option<Vec<Icon>>,
        #[serde(flatten)]
        extra: Extra,
    }

    fn derived(v: &Value) -> Result<Tool, serde_json::Error> {
        let d = Derived::deserialize(v)?;
        Ok(Tool {
            name: d.name,
            title: d.title,
            description: d.description,
            input_schema: d.input_schema.into(),
            output_schema: d.output_schema.map(Into::into),
            annotations: d.annotations,
            icons: d.icons,
            extra: d.extra,
        })
    }

    #[test]
    fn the_lazy_reader_reads_the_same_tool_and_keeps_schemas_as_text() {
        let text = r#"{"name": "read", "inputSchema": {"type": "object", "required": ["p"]},
            "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
            "_meta": {"k": 1}}"#;
        let eager: Tool = serde_json::from_str(text).unwrap();
        let LazyTool(lazy) = serde_json::from_str(text).unwrap();
        assert!(lazy.input_schema.is_unparsed());
        assert!(lazy.output_schema.as_ref().is_some_and(Schema::is_unparsed));
        assert!(!eager.input_schema.is_unparsed());
        assert_eq!(lazy, eager);
        assert_eq!(
            lazy.input_schema.raw_text(),
            Some(r#"{"type": "object", "required": ["p"]}"#)
        );
        // No schema, a null one: as the eager reader.
        for text in [
            r#"{"name": "t"}"#,
            r#"{"name": "t", "inputSchema": null, "outputSchema": null}"#,
        ] {
            let eager: Tool = serde_json::from_str(text).unwrap();
            let LazyTool(lazy) = serde_json::from_str(text).unwrap();
            assert_eq!(lazy, eager, "{text}");
            assert_eq!(lazy.output_schema, None);
        }
        // A duplicate schema member is an error, as with the eager reader.
        let twice = r#"{"name": "t", "inputSchema": {}, "inputSchema": {}}"#;
        assert!(serde_json::from_str::<LazyTool>(twice).is_err());
        assert!(serde_json::from_str::<Tool>(twice).is_err());
    }

    #[test]
    fn reads_what_the_derive_read() {
        let cases = [
            json!({"name": "t"}),
            json!({"name": "t", "title": null, "inputSchema": null, "annotations": null}),
            json!({
                "name": "read", "title": "Read", "description": "Reads.",
                "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}},
                "outputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true, "x": 1},
                "icons": [{"src": "https://e.example/i.png"}],
                "_meta": {"k": [1, 2]}, "execution": {"taskSupport": "optional"}
            }),
        ];
        for case in cases {
            let ours: Tool = serde_json::from_str(&case.to_string()).unwrap();
            assert_eq!(ours, derived(&case).unwrap(), "{case}");
            // And from a Value, as the session's typed reads do.
            assert_eq!(Tool::deserialize(&case).unwrap(), ours);
            // What it writes reads back the same.
            let again: Tool = serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
            assert_eq!(again, ours);
        }
    }

    #[test]
    fn refuses_what_the_derive_refused() {
        for bad in [
            json!({"title": "no name"}),
            json!({"name": 7}),
            json!({"name": "t", "title": 7}),
            json!({"name": "t", "annotations": "no"}),
            json!([1, 2]),
            json!("tool"),
        ] {
            assert!(derived(&bad).is_err(), "{bad}");
            assert!(Tool::deserialize(&bad).is_err(), "{bad}");
            assert!(
                serde_json::from_str::<Tool>(&bad.to_string()).is_err(),
                "{bad}"
            );
        }
        let twice = r#"{"name": "a", "name": "b"}"#;
        let err = serde_json::from_str::<Tool>(twice).unwrap_err();
        assert!(err.to_string().contains("duplicate field `name`"), "{err}");
    }
}

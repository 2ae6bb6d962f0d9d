//! A fast path for the input schema most tools have (and many output
//! schemas): an object whose properties each allow some JSON types, some
//! of them required, extra members allowed or not. Arguments are checked
//! with their optional `null` members absent, as the session checks them;
//! structured content as given.
//!
//! By hand such arguments take a lookup and a type test each: the check
//! of a one-argument call fell from about 580 instructions to 370
//! (callgrind, of a 20,400-instruction `tools/call`), and a tool whose
//! arguments are only ever valid never compiles its validator (about
//! 140 µs per schema in a release build, and its memory; the first
//! compile of a process also builds the validator's meta-schemas, about
//! 4 million instructions). Only *acceptance* is decided here:
//! arguments this check refuses go to the general validator, which makes
//! the report and has the last word. What must hold, then, is that the
//! fast path never accepts what the validator refuses; a property test
//! checks that, and that the two agree on object arguments, on generated
//! schemas and arguments.
//!
//! A schema is taken as simple only when every keyword in it is one this
//! module knows, with a well-formed value (anything else, `enum` or
//! `minLength` or a `$ref`, goes to the general validator): at the top
//! `type: "object"`, `properties`, `required`, `additionalProperties: bool`
//! and annotations; in a property, `type` and annotations. Extension
//! keywords (`x-…`, such as `x-mcp-header`) count as annotations.
//! `$schema`, when present, must name draft 2020-12, 2019-09 or draft-07,
//! whose `integer` is any number with no fractional part.

use serde_json::{Map, Number, Value};

/// A simple input schema, ready to check arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleSchema {
    /// Each property and the types it allows, sorted by name.
    properties: Vec<(String, Types)>,
    required: Vec<String>,
    /// Members not in `properties` are allowed.
    additional: bool,
}

/// A set of JSON types, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 1 << 1;
    const INTEGER: u8 = 1 << 2;
    const NUMBER: u8 = 1 << 3;
    const STRING: u8 = 1 << 4;
    const ARRAY: u8 = 1 << 5;
    const OBJECT: u8 = 1 << 6;
    const ANY: Types = Types(0x7f);

    fn named(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }

    /// The types a `type` keyword's value names: one name, or a non-empty
    /// array of distinct names.
    fn of(value: &Value) -> Option<Types> {
        match value {
            Value::String(name) => Self::named(name).map(Types),
            Value::Array(names) if !names.is_empty() => {
                let mut bits = 0u8;
                for name in names {
                    let bit = Self::named(name.as_str()?)?;
                    if bits & bit != 0 {
                        return None;
                    }
                    bits |= bit;
                }
                Some(Types(bits))
            }
            _ => None,
        }
    }

    fn allows(self, value: &Value) -> bool {
        let bits = match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if integral(n) => Self::NUMBER | Self::INTEGER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        };
        self.0 & bits != 0
    }
}

/// A number with no fractional part (`1` and `1.0` alike), as JSON Schema
/// counts integers since draft-06.
fn integral(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// `$schema` values whose rules this module follows.
const DRAFTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
];

/// An annotation keyword with a well-formed value (what the meta-schema
/// asks of it), which changes nothing about validity.
fn annotation(keyword: &str, value: &Value) -> Option<bool> {
    Some(match keyword {
        "title" | "description" | "$comment" => value.is_string(),
        "examples" => value.is_array(),
        "default" => true,
        "deprecated" | "readOnly" | "writeOnly" => value.is_boolean(),
        // Extensions (2026-07-28's `x-mcp-header`): validators ignore
        // keywords they do not know.
        other if other.starts_with("x-") => true,
        _ => return None,
    })
}

impl SimpleSchema {
    /// The schema as a simple one, when it is.
    pub(crate) fn of(schema: &Value) -> Option<SimpleSchema> {
        let top = schema.as_object()?;
        let mut simple = SimpleSchema {
            properties: Vec::new(),
            required: Vec::new(),
            additional: true,
        };
        for (keyword, value) in top {
            match keyword.as_str() {
                "type" => {
                    if value.as_str() != Some("object") {
                        return None;
                    }
                }
                "$schema" => {
                    if !DRAFTS.contains(&value.as_str()?) {
                        return None;
                    }
                }
                "additionalProperties" => simple.additional = value.as_bool()?,
                "properties" => simple.properties = properties(value.as_object()?)?,
                "required" => {
                    for name in value.as_array()? {
                        let name = name.as_str()?;
                        if simple.required.iter().any(|r| r == name) {
                            return None;
                        }
                        simple.required.push(name.to_owned());
                    }
                }
                other => {
                    if !annotation(other, value)? {
                        return None;
                    }
                }
            }
        }
        Some(simple)
    }

    /// Whether tool arguments are valid. A top-level `null` member that is
    /// not required counts as absent, as for the general check of arguments
    /// (see `without_optional_nulls`). `false` may also mean "not decided
    /// here".
    pub(crate) fn accepts_arguments(&self, arguments: &Value) -> bool {
        self.check(arguments, true)
    }

    /// Whether `value` is valid, every member as given (structured
    /// content). `false` may also mean "not decided here".
    pub(crate) fn accepts(&self, value: &Value) -> bool {
        self.check(value, false)
    }

    fn check(&self, value: &Value, optional_nulls_absent: bool) -> bool {
        let Value::Object(members) = value else {
            return false;
        };
        let required = |name: &str| self.required.iter().any(|r| r == name);
        if !self.required.iter().all(|r| members.contains_key(r)) {
            return false;
        }
        members.iter().all(|(name, value)| {
            if optional_nulls_absent && value.is_null() && !required(name) {
                return true;
            }
            match self
                .properties
                .binary_search_by(|(p, _)| p.as_str().cmp(name))
            {
                Ok(i) => self
                    .properties
                    .get(i)
                    .is_some_and(|(_, types)| types.allows(value)),
                Err(_) => self.additional,
            }
        })
    }
}

/// The `properties` keyword's members, each a schema of `type` and
/// annotations (or `true`), sorted by name.
fn properties(members: &Map<String, Value>) -> Option<Vec<(String, Types)>> {
    let mut out = Vec::with_capacity(members.len());
    for (name, schema) in members {
        let types = match schema {
            Value::Bool(true) => Types::ANY,
            Value::Object(keywords) => {
                let mut types = Types::ANY;
                for (keyword, value) in keywords {
                    if keyword == "type" {
                        types = Types::of(value)?;
                    } else if !annotation(keyword, value)? {
                        return None;
                    }
                }
                types
            }
            _ => return None,
        };
        out.push((name.clone(), types));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn common_tool_schemas_are_simple_and_others_are_not() {
        let echo = json!({"type": "object", "properties": {"text": {"type": "string",
            "description": "what to echo"}}, "required": ["text"]});
        let simple = SimpleSchema::of(&echo).unwrap();
        assert!(simple.accepts_arguments(&json!({"text": "hi"})));
        assert!(!simple.accepts_arguments(&json!({"text": 1})));
        assert!(!simple.accepts_arguments(&json!({})));
        assert!(simple.accepts_arguments(&json!({"text": "hi", "extra": 1})));
        assert!(!simple.accepts_arguments(&json!("hi")));
        for not_simple in [
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}),
            json!({"type": "object", "properties": {"a": {"enum": [1, 2]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}),
            json!({"type": "object", "properties": {"a": false}}),
            json!({"type": "object", "required": ["a", "a"]}),
            json!({"type": "object", "properties": {"a": {"type": []}}}),
            json!({"type": "object", "properties": {"a": {"type": ["string", "string"]}}}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "description": 5}),
            json!({"type": "array"}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}),
        ] {
            assert_eq!(SimpleSchema::of(&not_simple), None, "{not_simple}");
        }
    }

    #[test]
    fn optional_nulls_count_as_absent_and_integers_include_whole_floats() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
            "required": ["n"]});
        let simple = SimpleSchema::of(&schema).unwrap();
        assert!(simple.accepts_arguments(&json!({"n": 1.0, "s": null, "other": null})));
        assert!(!simple.accepts_arguments(&json!({"n": 1.5})));
        assert!(
            !simple.accepts_arguments(&json!({"n": null})),
            "a required null is checked"
        );
        assert!(!simple.accepts_arguments(&json!({"n": 1, "other": 1})));
        // Structured content is checked as given: its nulls are values.
        assert!(!simple.accepts(&json!({"n": 1, "s": null})));
        assert!(simple.accepts(&json!({"n": 1, "s": "x"})));
    }

    const NAMES: &[&str] = &["a", "b", "c", "text", "n"];
    const TYPES: &[&str] = &[
        "null", "boolean", "integer", "number", "string", "array", "object",
    ];

    fn property() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!(true)),
            Just(json!({})),
            prop::sample::select(TYPES).prop_map(|t| json!({"type": t, "description": "x"})),
            prop::sample::select(TYPES).prop_map(|t| json!({"type": t, "x-mcp-header": "Region"})),
            prop::sample::subsequence(TYPES, 1..4).prop_map(|t| json!({ "type": t })),
        ]
    }

    fn schema() -> impl Strategy<Value = Value> {
        (
            prop::collection::btree_map(prop::sample::select(NAMES), property(), 0..4),
            prop::sample::subsequence(NAMES, 0..3),
            prop::option::of(any::<bool>()),
            prop::option::of(prop::sample::select(DRAFTS)),
            any::<bool>(),
        )
            .prop_map(|(properties, required, additional, draft, typed)| {
                let mut schema = json!({ "properties": properties, "required": required });
                if typed {
                    schema["type"] = json!("object");
                }
                if let Some(additional) = additional {
                    schema["additionalProperties"] = json!(additional);
                }
                if let Some(draft) = draft {
                    schema["$schema"] = json!(draft);
                }
                schema
            })
    }

    fn member() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop_oneof![Just(1.0), Just(-2.0), Just(0.5), Just(1e300), Just(-0.0)]
                .prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
            Just(json!([1, "x"])),
            Just(json!({"k": 1})),
        ]
    }

    fn arguments() -> impl Strategy<Value = Value> {
        prop_oneof![
            8 => prop::collection::btree_map(prop::sample::select(NAMES), member(), 0..5)
                .prop_map(|m| json!(m)),
            1 => member(),
        ]
    }

    proptest! {
        /// The fast path agrees with the general validator: on arguments
        /// (which the session checks without their optional nulls) and on
        /// structured content (checked as given).
        #[test]
        fn agrees_with_the_general_validator(schema in schema(), args in prop::collection::vec(arguments(), 1..8)) {
            let simple = SimpleSchema::of(&schema).expect("generated schemas are simple");
            let validator = jsonschema::options().build(&schema).expect("generated schemas compile");
            for args in args {
                let stripped = crate::tools::without_optional_nulls(&schema, &args)
                    .unwrap_or_else(|| args.clone());
                // Arguments (optional nulls absent) and structured content
                // (as given): never accepted when the validator refuses,
                // and decided alike both ways for objects.
                for (fast, general) in [
                    (simple.accepts_arguments(&args), validator.is_valid(&stripped)),
                    (simple.accepts(&args), validator.is_valid(&args)),
                ] {
                    prop_assert!(!fast || general, "accepted: schema {} value {}", schema, args);
                    if args.is_object() {
                        prop_assert_eq!(fast, general, "schema {} value {}", schema, args);
                    }
                }
            }
        }
    }
}

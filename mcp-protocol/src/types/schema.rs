//! [`Schema`]: a tool's JSON Schema, either a parsed [`Value`] or the JSON
//! text it was read from, parsed on first use.
//!
//! A catalog read back from a file holds thousands of schemas that nothing
//! may ever look into (a tool's schema is read when the tool is validated,
//! searched or shown): keeping their text and parsing each on first use
//! makes such a read cost its bytes, not a tree of every schema.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON Schema (a tool's `inputSchema` or `outputSchema`).
///
/// It dereferences to its [`Value`]; one made from JSON text
/// ([`Schema::from_raw`]) parses that text the first time it is looked
/// into, and writes it back out unchanged. Equality is the values'
/// (equal text is taken as equal without parsing). The hash covers nothing
/// of the schema, so that one kept as text hashes without being parsed:
/// equal schemas hash alike, as `Eq` requires.
#[derive(Clone)]
pub struct Schema {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Parsed(Value),
    Raw {
        text: Box<RawValue>,
        parsed: OnceLock<Value>,
    },
}

impl Schema {
    /// A schema kept as `text` (valid JSON, as a [`RawValue`] is), parsed
    /// on first use.
    pub fn from_raw(text: Box<RawValue>) -> Schema {
        Schema {
            repr: Repr::Raw {
                text,
                parsed: OnceLock::new(),
            },
        }
    }

    /// The schema's value, parsed now if it was kept as text. Text that
    /// cannot become a `Value` (nested past serde_json's depth limit) is
    /// `null`.
    pub fn value(&self) -> &Value {
        match &self.repr {
            Repr::Parsed(v) => v,
            Repr::Raw { text, parsed } => parsed.get_or_init(|| parse(text)),
        }
    }

    /// The JSON text it was read from, when it is kept as text.
    pub fn raw_text(&self) -> Option<&str> {
        match &self.repr {
            Repr::Parsed(_) => None,
            Repr::Raw { text, .. } => Some(text.get()),
        }
    }

    /// Whether it is kept as text that was not parsed yet.
    pub fn is_unparsed(&self) -> bool {
        matches!(&self.repr, Repr::Raw { parsed, .. } if parsed.get().is_none())
    }

    /// Its value, owned.
    pub fn into_value(self) -> Value {
        match self.repr {
            Repr::Parsed(v) => v,
            Repr::Raw { text, parsed } => parsed.into_inner().unwrap_or_else(|| parse(&text)),
        }
    }
}

/// `text` as a `Value`; `null` where it cannot be one (nested past
/// serde_json's depth limit).
fn parse(text: &RawValue) -> Value {
    serde_json::from_str(text.get()).unwrap_or(Value::Null)
}

impl From<Value> for Schema {
    fn from(value: Value) -> Schema {
        Schema {
            repr: Repr::Parsed(value),
        }
    }
}

impl Deref for Schema {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

/// Changing a schema parses it first if it is kept as text; it is then
/// written out from its value.
impl DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut Value {
        if let Repr::Raw { .. } = &self.repr {
            let value = std::mem::replace(&mut self.repr, Repr::Parsed(Value::Null));
            self.repr = Repr::Parsed(Schema { repr: value }.into_value());
        }
        match &mut self.repr {
            Repr::Parsed(v) => v,
            // Made `Parsed` just above.
            Repr::Raw { .. } => unreachable!("a schema kept as text after it was parsed"),
        }
    }
}

impl AsRef<Value> for Schema {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        if let (Some(a), Some(b)) = (self.raw_text(), other.raw_text())
            && a == b
        {
            return true;
        }
        self.value() == other.value()
    }
}

impl Eq for Schema {}

impl PartialEq<Value> for Schema {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl Hash for Schema {
    /// Nothing: see the type's docs.
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Parsed(v) => fmt::Debug::fmt(v, f),
            Repr::Raw { text, .. } => write!(f, "Schema({})", text.get()),
        }
    }
}

/// Its JSON text: as it was read when kept as text, else its value's.
impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Parsed(v) => fmt::Display::fmt(v, f),
            Repr::Raw { text, .. } => f.write_str(text.get()),
        }
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.repr {
            Repr::Parsed(v) => v.serialize(s),
            Repr::Raw { text, .. } => text.serialize(s),
        }
    }
}

/// Any deserializer: the schema is read as a [`Value`]. (Keeping the text
/// takes serde_json's own reader: [`LazyTool`](super::LazyTool).)
impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Schema, D::Error> {
        Value::deserialize(d).map(Schema::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> Schema {
        Schema::from_raw(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn text_is_parsed_on_first_use_and_written_back_unchanged() {
        let s = raw(r#"{ "type": "object", "properties": {"b": {}, "a": {}} }"#);
        assert!(s.is_unparsed());
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{ "type": "object", "properties": {"b": {}, "a": {}} }"#
        );
        assert!(s.is_unparsed(), "writing it out does not parse it");
        assert_eq!(s.get("type"), Some(&json!("object")));
        assert!(!s.is_unparsed());
        assert_eq!(
            s.clone().into_value(),
            json!({"type": "object", "properties": {"a": {}, "b": {}}})
        );
    }

    #[test]
    fn equality_is_the_values_and_equal_schemas_hash_alike() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |s: &Schema| {
            let mut h = DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        };
        let a = raw(r#"{"type":"object","required":["x"]}"#);
        let b = raw(r#"{ "required": ["x"], "type": "object" }"#);
        let c = Schema::from(json!({"type": "object", "required": ["x"]}));
        let d = raw(r#"{"type":"object"}"#);
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(c, b);
        assert_ne!(a, d);
        assert_eq!(hash(&a), hash(&b));
        assert_eq!(hash(&a), hash(&c));
        // Equal text is equal without parsing.
        let e = raw(r#"{"type":"object","required":["x"]}"#);
        let f = raw(r#"{"type":"object","required":["x"]}"#);
        assert_eq!(e, f);
        assert!(e.is_unparsed() && f.is_unparsed());
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            // Numbers whose text reads back exactly (serde_json's default
            // float reader may round a long mantissa differently: that is
            // text against text, the same with or without a `Schema`).
            (-4000i32..4000).prop_map(|i| Value::from(f64::from(i) / 8.0)),
            "[a-z\"\\\u{0}-\u{1f}é]{0,20}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::btree_map("[a-z$\"]{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Kept as text or parsed, from any formatting of any value: the
        /// same value, equal to each other, written back as read.
        #[test]
        fn text_and_value_agree(value in json_value(), pretty in proptest::bool::ANY) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let lazy = raw(&text);
            let eager = Schema::from(value.clone());
            proptest::prop_assert_eq!(serde_json::to_string(&lazy).unwrap(), text.clone());
            proptest::prop_assert_eq!(lazy.to_string(), text);
            // Both ways: one side is text, the other a value.
            proptest::prop_assert!(lazy.eq(&eager));
            proptest::prop_assert!(eager.eq(&lazy));
            proptest::prop_assert_eq!(lazy.value(), &value);
            proptest::prop_assert_eq!(lazy.into_value(), value);
        }
    }

    #[test]
    fn changing_text_parses_it_and_writes_the_change() {
        let mut s = raw(r#"{"type": "object"}"#);
        s.as_object_mut()
            .unwrap()
            .insert("required".into(), json!(["a"]));
        assert_eq!(s.raw_text(), None);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"required":["a"],"type":"object"}"#
        );
    }

    #[test]
    fn any_deserializer_gives_a_parsed_schema() {
        let s: Schema = serde_json::from_str(r#"{"type":"string"}"#).unwrap();
        assert!(!s.is_unparsed());
        assert_eq!(s.raw_text(), None);
        let s = Schema::deserialize(&json!(true)).unwrap();
        assert_eq!(*s, json!(true));
    }
}

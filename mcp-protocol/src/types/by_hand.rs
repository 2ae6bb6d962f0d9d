//! One-pass readers for structs that keep unknown members in `extra`.
//!
//! serde's derive with `#[serde(flatten)]` first buffers every member of
//! the object (nested objects included) into an intermediate tree, then
//! reads that tree a second time; an item inside a list that is itself
//! flattened is buffered once per level. [`read_by_hand!`] writes the
//! reader that reads each member once, straight into its field, with
//! unknown members into `extra`: what derive reads, it reads; what derive
//! refuses (a missing required member, a wrong type, a member given twice),
//! it refuses.

use serde::Deserialize;
use serde::de::{Error, MapAccess};

/// Reads `slot`'s member once; a second one is an error, as with derive.
pub(super) fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(A::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// `impl Deserialize for $ty`, one pass, for a struct whose other members
/// go to `extra: Extra`. Members are given by field and JSON name:
/// `required` (missing is an error), `optional` (`Option<T>` fields:
/// missing or `null` is `None`) and `defaulted` (missing is
/// `T::default()`).
macro_rules! read_by_hand {
    (
        $ty:ident, $expecting:literal,
        required { $($req:ident: $rkey:literal),* $(,)? },
        optional { $($opt:ident: $okey:literal),* $(,)? },
        defaulted { $($def:ident: $dkey:literal),* $(,)? } $(,)?
    ) => {
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const FIELDS: &[&str] = &[$($rkey,)* $($okey,)* $($dkey,)*];
                struct Fields;
                impl<'de> ::serde::de::Visitor<'de> for Fields {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        use $crate::types::by_hand::once;
                        use $crate::types::content::{Field, Key};
                        $(let mut $req = None;)*
                        $(let mut $opt: Option<Option<_>> = None;)*
                        $(let mut $def = None;)*
                        let mut extra = $crate::types::Extra::new();
                        while let Some(key) = map.next_key_seed(Key(FIELDS))? {
                            match key {
                                Field::Known(i) => match FIELDS.get(i).copied() {
                                    $(Some($rkey) => once(&mut map, &mut $req, $rkey)?,)*
                                    $(Some($okey) => once(&mut map, &mut $opt, $okey)?,)*
                                    $(Some($dkey) => once(&mut map, &mut $def, $dkey)?,)*
                                    // Every index of FIELDS is matched above.
                                    _ => {
                                        map.next_value::<::serde::de::IgnoredAny>()?;
                                    }
                                },
                                Field::Other(key) => {
                                    let value = map.next_value::<::serde_json::Value>()?;
                                    extra.insert(key, value);
                                }
                            }
                        }
                        Ok($ty {
                            $($req: $req.ok_or_else(
                                || <A::Error as ::serde::de::Error>::missing_field($rkey),
                            )?,)*
                            $($opt: $opt.flatten(),)*
                            $($def: $def.unwrap_or_default(),)*
                            extra,
                        })
                    }
                }
                d.deserialize_map(Fields)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::super::{
        Icon, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        Prompt, PromptArgument, Resource, ResourceTemplate,
    };

    /// Reads `v` as a `T` from text and from a `Value` (both must agree),
    /// and writes it back.
    fn round_trip<T>(v: &Value) -> Result<Value, serde_json::Error>
    where
        T: serde::Serialize + for<'de> serde::Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        let from_text: T = serde_json::from_str(&v.to_string())?;
        let from_value = T::deserialize(v)?;
        assert_eq!(from_text, from_value);
        serde_json::to_value(&from_text)
    }

    /// Members no reader knows, with any JSON value.
    fn extras() -> impl Strategy<Value = Map<String, Value>> {
        let value = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::from),
            proptest::collection::vec(any::<u8>().prop_map(Value::from), 0..3)
                .prop_map(Value::from),
        ];
        proptest::collection::btree_map("(_meta|annotations|x[a-z]{0,5})", value, 0..4)
            .prop_map(|m| m.into_iter().collect())
    }

    fn maybe(s: &'static str) -> impl Strategy<Value = Option<Value>> {
        proptest::option::of(s.prop_map(Value::from))
    }

    prop_compose! {
        fn resource()(
            uri in "[a-z]{1,4}:///[a-z]{0,4}", name in "[a-z]{1,6}",
            title in maybe("[A-Z][a-z]{0,5}"), description in maybe("[a-z ]{0,12}"),
            mime in maybe("text/[a-z]{1,5}"), size in proptest::option::of(any::<u32>()),
            icons in proptest::option::of(proptest::collection::vec("https://[a-z]{1,5}", 0..2)),
            extra in extras(),
        ) -> Value {
            let mut o = extra;
            o.insert("uri".into(), uri.into());
            o.insert("name".into(), name.into());
            title.map(|v| o.insert("title".into(), v));
            description.map(|v| o.insert("description".into(), v));
            mime.map(|v| o.insert("mimeType".into(), v));
            size.map(|v| o.insert("size".into(), v.into()));
            icons.map(|v| {
                let icons = v.into_iter().map(|src| json!({"src": src, "theme": "dark"}));
                o.insert("icons".into(), icons.collect::<Vec<_>>().into())
            });
            Value::Object(o)
        }
    }

    prop_compose! {
        fn prompt()(
            name in "[a-z]{1,6}", description in maybe("[a-z ]{0,12}"),
            arguments in proptest::option::of(proptest::collection::vec(
                ("[a-z]{1,4}", proptest::option::of(any::<bool>()), extras()), 0..3)),
            extra in extras(),
        ) -> Value {
            let mut o = extra;
            o.insert("name".into(), name.into());
            description.map(|v| o.insert("description".into(), v));
            arguments.map(|args| {
                let args = args.into_iter().map(|(name, required, mut a)| {
                    a.insert("name".into(), name.into());
                    required.map(|r| a.insert("required".into(), r.into()));
                    Value::Object(a)
                });
                o.insert("arguments".into(), args.collect::<Vec<_>>().into())
            });
            Value::Object(o)
        }
    }

    proptest! {
        /// Every member comes back as it was: known ones through their
        /// fields, the others through `extra`.
        #[test]
        fn what_is_read_writes_back_the_same(
            resources in proptest::collection::vec(resource(), 0..3),
            prompts in proptest::collection::vec(prompt(), 0..3),
            cursor in maybe("[a-z0-9]{1,6}"),
            extra in extras(),
        ) {
            for r in &resources {
                prop_assert_eq!(&round_trip::<Resource>(r).unwrap(), r);
            }
            for p in &prompts {
                prop_assert_eq!(&round_trip::<Prompt>(p).unwrap(), p);
            }
            let mut page = extra;
            cursor.map(|c| page.insert("nextCursor".into(), c));
            let mut resources_page = page.clone();
            resources_page.insert("resources".into(), resources.into());
            let resources_page = Value::Object(resources_page);
            prop_assert_eq!(round_trip::<ListResourcesResult>(&resources_page).unwrap(), resources_page);
            let mut prompts_page = page;
            prompts_page.insert("prompts".into(), prompts.into());
            let prompts_page = Value::Object(prompts_page);
            prop_assert_eq!(round_trip::<ListPromptsResult>(&prompts_page).unwrap(), prompts_page);
        }
    }

    #[test]
    fn missing_optional_members_and_nulls_are_none_and_defaults_empty() {
        let r: Resource =
            serde_json::from_str(r#"{"uri": "a:///", "name": "n", "title": null}"#).unwrap();
        assert_eq!(r, Resource::new("a:///", "n"));
        let t: ResourceTemplate =
            serde_json::from_str(r#"{"uriTemplate": "a:///{x}", "name": "t"}"#).unwrap();
        assert_eq!(t, ResourceTemplate::new("a:///{x}", "t"));
        let page: ListResourceTemplatesResult = serde_json::from_str("{}").unwrap();
        assert!(page.resource_templates.is_empty() && page.next_cursor.is_none());
        let a: PromptArgument = serde_json::from_str(r#"{"name": "a", "required": true}"#).unwrap();
        assert_eq!(a, PromptArgument::new("a", true));
        let i: Icon = serde_json::from_str(r#"{"src": "s", "sizes": ["any"]}"#).unwrap();
        assert_eq!(i.sizes.as_deref(), Some(&["any".to_owned()][..]));
    }

    #[test]
    fn refuses_what_derive_refused() {
        let err = |r: Result<Resource, serde_json::Error>| r.unwrap_err().to_string();
        assert!(err(serde_json::from_str(r#"{"name": "n"}"#)).contains("missing field `uri`"));
        assert!(
            err(serde_json::from_str(
                r#"{"uri": "u", "name": "a", "name": "b"}"#
            ))
            .contains("duplicate field `name`")
        );
        assert!(serde_json::from_str::<Resource>(r#"{"uri": "u", "name": 7}"#).is_err());
        assert!(
            serde_json::from_str::<Resource>(r#"{"uri": "u", "name": "n", "size": "big"}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<Resource>(r#"["u", "n"]"#).is_err());
        assert!(serde_json::from_str::<Prompt>(r#"{"name": "p", "arguments": [{}]}"#).is_err());
        assert!(serde_json::from_str::<ListPromptsResult>(r#"{"prompts": null}"#).is_err());
        let err = serde_json::from_str::<ListToolsResult>("{}").unwrap_err();
        assert!(err.to_string().contains("missing field `tools`"), "{err}");
        assert!(serde_json::from_str::<Icon>(r#"{"sizes": []}"#).is_err());
    }
}

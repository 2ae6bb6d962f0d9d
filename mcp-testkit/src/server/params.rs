//! Reading a request's params into `mcp-stack-protocol`'s types.
//!
//! The type says what a request may carry. When the params do not fit, the
//! `-32602` answer names the field that is wrong (`data.field`), found by
//! checks in a fixed order, so that a request with two bad fields always
//! gets the same answer.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::outbox::ProtocolError;

/// `params` as a `T`; when they are not one, the error `explain` finds
/// (the first field that is wrong), else the parser's reason against
/// `params` as a whole.
pub(super) fn typed<T: DeserializeOwned>(
    params: Map<String, Value>,
    explain: impl FnOnce(&Map<String, Value>) -> Option<ProtocolError>,
) -> Result<T, ProtocolError> {
    let params = Value::Object(params);
    T::deserialize(&params).map_err(|e| {
        params
            .as_object()
            .and_then(explain)
            .unwrap_or_else(|| ProtocolError::invalid_field("params", e.to_string()))
    })
}

/// Whether the field must be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// Absent is an error (and `null` is not the expected type).
    Required,
    /// Absent or `null` is fine.
    Optional,
}

/// The error naming `field` when it is missing though required, or is not
/// `what` (`is` says which values are).
pub(super) fn expect(
    params: &Map<String, Value>,
    field: &str,
    presence: Presence,
    is: fn(&Value) -> bool,
    what: &str,
) -> Option<ProtocolError> {
    match (params.get(field), presence) {
        (None, Presence::Required) => Some(ProtocolError::invalid_field(field, "required")),
        (None | Some(Value::Null), Presence::Optional) => None,
        (Some(value), _) if is(value) => None,
        (Some(_), _) => Some(ProtocolError::invalid_field(
            field,
            format!("expected {what}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use mcp_stack_protocol::types::PaginatedParams;
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_misfit_names_the_field_or_the_params() {
        let cursor = |p: &Map<String, Value>| {
            expect(
                p,
                "cursor",
                Presence::Optional,
                Value::is_string,
                "a string",
            )
        };
        let ok: PaginatedParams = typed(map(json!({"cursor": "c", "x": 1})), cursor).unwrap();
        assert_eq!(ok.cursor.as_deref(), Some("c"));
        let null: PaginatedParams = typed(map(json!({"cursor": null})), cursor).unwrap();
        assert_eq!(null.cursor, None);
        let bad = typed::<PaginatedParams>(map(json!({"cursor": 5})), cursor).unwrap_err();
        assert!(
            format!("{bad:?}").contains("cursor: expected a string"),
            "{bad:?}"
        );
        let other = typed::<PaginatedParams>(map(json!({"_meta": 5})), cursor).unwrap_err();
        assert!(
            format!("{other:?}").contains("invalid params: params: "),
            "{other:?}"
        );
    }

    #[test]
    fn required_fields_are_missing_or_of_the_wrong_type() {
        let p = map(json!({"a": null, "b": "x"}));
        let e = |field, presence| expect(&p, field, presence, Value::is_string, "a string");
        assert!(format!("{:?}", e("z", Presence::Required)).contains("z: required"));
        assert!(format!("{:?}", e("a", Presence::Required)).contains("a: expected a string"));
        assert!(e("a", Presence::Optional).is_none());
        assert!(e("z", Presence::Optional).is_none());
        assert!(e("b", Presence::Required).is_none());
    }
}

//! Reading a received request or notification into its type, once, from
//! its method and raw params: [`from_server`](crate::from_server) for what a
//! client receives, [`from_client`](crate::from_client) for what a server
//! does. The conventions both follow are here.
//!
//! * The params are read straight from the raw JSON into the method's
//!   [`Params`](crate::request::Request::Params) (no `Value` in between).
//!   Absent params, or `null`, read as `{}`.
//! * A method without params the receiver uses (`ping`, `roots/list`,
//!   the `list_changed` notifications, `notifications/initialized`) is a
//!   variant without data, and its params are not read: a peer that
//!   garbles them still gets its `ping` answered.
//! * A method the table does not know, or that the other side does not
//!   send, is kept as it came: `Other { method, params }`, raw.
//! * Params that do not fit are a [`ParamsError`] naming the method.

use mcp_stack_jsonrpc::{ErrorObject, RawValue, codes};
use serde::de::DeserializeOwned;

/// A request's or notification's params did not fit its method's type.
#[derive(Debug, thiserror::Error)]
#[error("{method}: the parameters are not valid: {reason}")]
pub struct ParamsError {
    method: String,
    reason: serde_json::Error,
}

impl ParamsError {
    /// The method whose params did not fit.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// What the parser found.
    pub fn reason(&self) -> &serde_json::Error {
        &self.reason
    }
}

/// The answer to a request whose params did not fit: `-32602` (invalid
/// params), saying which method and why.
impl From<ParamsError> for ErrorObject {
    fn from(e: ParamsError) -> ErrorObject {
        ErrorObject::new(codes::INVALID_PARAMS, e.to_string())
    }
}

/// `params` read as `T`, for `method`; absent or `null` params read as
/// `{}`.
pub(crate) fn read<T: DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
) -> Result<T, ParamsError> {
    let text = match params.map(RawValue::get) {
        None | Some("null") => "{}",
        Some(text) => text,
    };
    serde_json::from_str(text).map_err(|reason| ParamsError {
        method: method.to_owned(),
        reason,
    })
}

/// The raw params, owned, for an `Other` variant.
pub(crate) fn keep(params: Option<&RawValue>) -> Option<Box<RawValue>> {
    params.map(ToOwned::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::EmptyParams;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn absent_and_null_params_read_as_empty() {
        let absent: EmptyParams = read("ping", None).unwrap();
        assert_eq!(absent, EmptyParams::default());
        let null: EmptyParams = read("ping", Some(&raw("null"))).unwrap();
        assert_eq!(null, EmptyParams::default());
    }

    #[test]
    fn a_misfit_names_its_method_and_answers_invalid_params() {
        let e =
            read::<crate::types::ResourceParams>("resources/read", Some(&raw("{}"))).unwrap_err();
        assert_eq!(e.method(), "resources/read");
        assert!(
            e.to_string()
                .starts_with("resources/read: the parameters are not valid: ")
        );
        assert!(e.reason().to_string().contains("uri"), "{e}");
        let answer = ErrorObject::from(e);
        assert_eq!(answer.code, codes::INVALID_PARAMS);
        assert!(
            answer.message.contains("missing field `uri`"),
            "{}",
            answer.message
        );
    }
}

//! A request as the client sends it: its params serialized by serde straight
//! into the frame, never into a `String` of their own first.

use std::fmt;
use std::io;

use serde::Serialize;

use super::serialize::{ParamsWriter, write_request};
use super::{Message, Request};
use crate::id::Id;
use crate::raw::RawJson;

/// A request whose params are still a value of the caller's type: the
/// codec writes them by serde straight into the outgoing frame
/// (`Encoder<OutgoingRequest>` of [`NewlineCodec`](crate::NewlineCodec)),
/// byte for byte what the same request as a [`Message`] gives.
///
/// ```
/// use mcp_stack_jsonrpc::{Id, OutgoingRequest};
/// let params = serde_json::json!({"name": "echo"});
/// let request = OutgoingRequest::new(Id::from(7), "tools/call").params(&params);
/// assert_eq!(
///     String::from_utf8(request.to_vec().unwrap()).unwrap(),
///     r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#
/// );
/// ```
#[derive(Clone)]
pub struct OutgoingRequest<'a> {
    id: Id,
    method: &'a str,
    params: Option<&'a (dyn Erased + Sync)>,
}

/// `Serialize`, erased: writes JSON to any writer.
trait Erased {
    fn write_json(&self, w: &mut dyn io::Write) -> Result<(), serde_json::Error>;
}

impl<T: Serialize> Erased for T {
    fn write_json(&self, mut w: &mut dyn io::Write) -> Result<(), serde_json::Error> {
        crate::compact::to_writer(&mut w, self)
    }
}

impl ParamsWriter for &(dyn Erased + Sync) {
    fn write_params(&self, w: &mut dyn io::Write) -> Result<(), serde_json::Error> {
        self.write_json(w)
    }
}

impl<'a> OutgoingRequest<'a> {
    /// A request without params.
    pub fn new(id: Id, method: &'a str) -> Self {
        OutgoingRequest {
            id,
            method,
            params: None,
        }
    }

    /// The same request with `params` (an object or an array, as JSON-RPC
    /// requires of them).
    pub fn params<P: Serialize + Sync>(mut self, params: &'a P) -> Self {
        self.params = Some(params);
        self
    }

    /// The request's id.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// The method.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// Writes the request as compact JSON (no line end).
    pub(crate) fn write<W: io::Write>(&self, w: &mut W) -> Result<(), serde_json::Error> {
        write_request(Some(&self.id), self.method, self.params, w)
    }

    /// The request as compact JSON (no trailing newline), as
    /// [`Message::to_vec`] writes it.
    pub fn to_vec(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(64 + self.method.len());
        self.write(&mut out)?;
        Ok(out)
    }

    /// The request as a [`Message`], its params serialized into a
    /// [`RawJson`]: for a transport that passes messages as values.
    pub fn to_message(&self) -> Result<Message, serde_json::Error> {
        let params = match self.params {
            Some(p) => {
                let mut out = Vec::with_capacity(128);
                p.write_json(&mut out)?;
                Some(RawJson::from_serialized(out))
            }
            None => None,
        };
        Ok(Message::Request(Request {
            id: self.id.clone(),
            method: self.method.to_owned(),
            params,
        }))
    }
}

impl fmt::Debug for OutgoingRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingRequest")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("has_params", &self.params.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // The reference the direct path is compared against.
    use crate::raw::to_raw;
    use proptest::prelude::*;
    use serde_json::Value;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
            "[\n\r\"\\\\\u{0}-\u{1f}é😀a]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(".{0,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn id() -> impl Strategy<Value = Id> {
        prop_oneof![
            any::<i64>().prop_map(Id::from),
            any::<u64>().prop_map(Id::from),
            ".{0,8}".prop_map(Id::from),
        ]
    }

    proptest! {
        /// Params written straight into the frame give the bytes the
        /// request built with `to_raw` params gives.
        #[test]
        fn params_written_directly_match_raw_params(
            id in id(),
            method in "[a-z/\"\\\\\u{1}é]{1,12}",
            params in prop::option::of(prop::collection::btree_map(".{0,6}", value(), 0..4)),
        ) {
            let reference = Message::from(Request::new(
                id.clone(),
                method.clone(),
                params.as_ref().map(|p| to_raw(p).unwrap()),
            ));
            let mut outgoing = OutgoingRequest::new(id.clone(), &method);
            if let Some(p) = &params {
                outgoing = outgoing.params(p);
            }
            prop_assert_eq!(outgoing.to_vec().unwrap(), reference.to_vec().unwrap());
            let message = outgoing.to_message().unwrap();
            prop_assert_eq!(message.to_vec().unwrap(), reference.to_vec().unwrap());
            // And what serde_json itself writes for the message.
            prop_assert_eq!(
                serde_json::to_vec(&reference).unwrap(),
                reference.to_vec().unwrap()
            );
        }
    }
}

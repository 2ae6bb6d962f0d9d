//! [`RawJson`]: one JSON value kept as its text, shared with the frame it
//! was read from.

use std::fmt;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON value kept as its raw text until the layer that knows its type
/// parses it.
///
/// Keeping `params` and `result` raw means a message is parsed once: the
/// codec checks the envelope, and the session parses the payload straight
/// into its own types ([`RawJson::parse`]).
///
/// The text is a [`Bytes`]: a member of a frame read by the codec (or an HTTP
/// body, an SSE event) is a slice of that frame's buffer, not a copy. A kept
/// member keeps the buffer it was read into alive; the session parses each
/// answer and drops it.
///
/// It always holds exactly one JSON value, valid UTF-8, without surrounding
/// whitespace: every way of making one either checks its text or takes it
/// from text already checked.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawJson(Bytes);

impl RawJson {
    /// Checks that `text` is one JSON value (surrounding whitespace is
    /// dropped) and keeps it.
    ///
    /// ```
    /// use mcp_stack_jsonrpc::RawJson;
    /// assert_eq!(RawJson::from_string(" {\"a\": 1}\n".into()).unwrap().get(), "{\"a\": 1}");
    /// assert!(RawJson::from_string("{".into()).is_err());
    /// ```
    pub fn from_string(text: String) -> Result<RawJson, serde_json::Error> {
        let range = {
            let value: &RawValue = serde_json::from_str(&text)?;
            offset_in(&text, value.get())
        };
        let bytes = Bytes::from(text);
        Ok(RawJson(match range {
            Some((start, end)) if (start, end) != (0, bytes.len()) => bytes.slice(start..end),
            _ => bytes,
        }))
    }

    /// The value `value` (one JSON value, checked), borrowed from `text`,
    /// as a slice of `frame`, the buffer `text` is (without copying); a copy
    /// when `text` is not in `frame` (then `frame` is `None`, or the caller
    /// erred).
    pub(crate) fn in_frame(frame: Option<&Bytes>, text: &str, value: &str) -> RawJson {
        if let Some(frame) = frame
            && let Some(text_at) = offset_in_bytes(frame, text)
            && let Some((start, end)) = offset_in(text, value)
            && let Some(slice) = frame.get(text_at + start..text_at + end)
            && slice.as_ptr() == value.as_ptr()
        {
            return RawJson(frame.slice(text_at + start..text_at + end));
        }
        RawJson(Bytes::copy_from_slice(value.as_bytes()))
    }

    /// Text that `serde_json` wrote for one value: checked by construction.
    pub(crate) fn from_serialized(json: Vec<u8>) -> RawJson {
        RawJson(Bytes::from(json))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        text_of(&self.0)
    }

    /// The JSON text as bytes (shared, not copied).
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// The JSON text's length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always `false`: a JSON value has at least one character.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text borrowed as serde_json's [`RawValue`], for an API that
    /// takes one (borrowing it so is one more scan of the text).
    pub fn raw_value(&self) -> Result<&RawValue, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// Parses the value into a type, straight from its text.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }
}

/// Where `inner` (a subslice of `outer`) starts and ends in `outer`.
fn offset_in(outer: &str, inner: &str) -> Option<(usize, usize)> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let end = start.checked_add(inner.len())?;
    (end <= outer.len()).then_some((start, end))
}

/// Where `text` starts in `frame`, when it lies inside it.
fn offset_in_bytes(frame: &Bytes, text: &str) -> Option<usize> {
    let start = (text.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
    (start.checked_add(text.len())? <= frame.len()).then_some(start)
}

/// The text of bytes known to be UTF-8.
///
/// Every [`RawJson`] is made from a `String`, from `serde_json`'s output, or
/// from a slice of text that was checked as UTF-8 once, when its frame was
/// read (and JSON values start and end on character boundaries). Checking it
/// again on every read would be a second pass over each answer, the very cost
/// the type exists to avoid.
#[allow(unsafe_code)]
fn text_of(bytes: &Bytes) -> &str {
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    // SAFETY: see above; the bytes of a `RawJson` never change.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawJson").field(&self.get()).finish()
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> Self {
        let text: Box<str> = raw.into();
        RawJson(Bytes::from(text.into_boxed_bytes()))
    }
}

impl From<&RawValue> for RawJson {
    fn from(raw: &RawValue) -> Self {
        RawJson(Bytes::copy_from_slice(raw.get().as_bytes()))
    }
}

impl Serialize for RawJson {
    /// As the raw value it is. The codec writes messages without this (see
    /// [`Message::to_vec`](crate::Message::to_vec)); through a serde
    /// serializer the text is borrowed as a `RawValue`, which checks it once more.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson::from)
    }
}

/// Serializes a value to raw JSON, for building `params` and `result`:
/// written once, into the buffer the value keeps.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    crate::compact::to_writer(&mut out, value)?;
    Ok(RawJson::from_serialized(out))
}

/// Parses raw JSON into a type.
pub fn from_raw<T: DeserializeOwned>(raw: &RawJson) -> Result<T, serde_json::Error> {
    raw.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_a_slice_of_its_frame() {
        let frame = Bytes::from_static(br#"{"result": {"a":[1,2]} }"#);
        let text = std::str::from_utf8(&frame).unwrap();
        let value: &RawValue = serde_json::from_str(text.get(11..23).unwrap()).unwrap();
        let raw = RawJson::in_frame(Some(&frame), text, value.get());
        assert_eq!(raw.get(), r#"{"a":[1,2]}"#);
        assert_eq!(raw.as_bytes().as_ptr(), frame.get(11..).unwrap().as_ptr());
        // Text that is not in the frame is copied.
        let other = String::from(text);
        let value: &RawValue = serde_json::from_str(other.get(11..23).unwrap()).unwrap();
        let copied = RawJson::in_frame(Some(&frame), &other, value.get());
        assert_eq!(copied.get(), r#"{"a":[1,2]}"#);
        assert_ne!(
            copied.as_bytes().as_ptr(),
            frame.get(11..).unwrap().as_ptr()
        );
    }

    #[test]
    fn raw_json_round_trips_through_serde() {
        let raw = to_raw(&serde_json::json!({"k": ["v", 1, null]})).unwrap();
        assert_eq!(raw.get(), r#"{"k":["v",1,null]}"#);
        let value = serde_json::to_value(&raw).unwrap();
        assert_eq!(value, serde_json::json!({"k": ["v", 1, null]}));
        let back: RawJson = serde_json::from_str(" [1, 2] ").unwrap();
        assert_eq!(back.get(), "[1, 2]");
        assert_eq!(serde_json::to_string(&back).unwrap(), "[1, 2]");
        assert_eq!(from_raw::<Vec<u8>>(&back).unwrap(), vec![1, 2]);
        let boxed = RawValue::from_string("{}".into()).unwrap();
        assert_eq!(RawJson::from(boxed).get(), "{}");
    }
}

//! Serializing messages: serde's `Serialize` for each kind, and the
//! compact writer the codec and `Message::to_vec` use.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::{ErrorResponse, Message, Notification, Request, Response};
use crate::id::Id;
use crate::raw::RawJson;

impl Message {
    /// About how many bytes the message takes as JSON: the envelope plus
    /// the raw members, for sizing a buffer once.
    pub(crate) fn encoded_len_hint(&self) -> usize {
        let raw = |r: &Option<RawJson>| r.as_ref().map_or(0, RawJson::len);
        64 + match self {
            Message::Request(r) => r.method.len() + raw(&r.params),
            Message::Notification(n) => n.method.len() + raw(&n.params),
            Message::Response(r) => r.result.len(),
            Message::Error(e) => e.error.message.len() + raw(&e.error.data),
        }
    }
}

const VERSION: &str = "2.0";

/// Writes `message` as compact JSON, byte for byte what `serde_json` writes.
///
/// Every kind is written directly: the envelope is fixed text around the
/// id, the method and the raw members, which are copied as they are.
/// serde's general path (a map serializer that escapes each key) cost about
/// 1,400 instructions of a `tools/call`, and would check each raw member's
/// text once more.
pub(crate) fn write_compact<W: std::io::Write>(
    message: &Message,
    w: &mut W,
) -> Result<(), serde_json::Error> {
    let io = serde_json::Error::io;
    match message {
        Message::Request(r) => write_request(
            Some(&r.id),
            &r.method,
            r.params.as_ref().map(|p| RawParams(p.get())),
            w,
        ),
        Message::Notification(n) => write_request(
            None,
            &n.method,
            n.params.as_ref().map(|p| RawParams(p.get())),
            w,
        ),
        Message::Response(r) => {
            w.write_all(br#"{"jsonrpc":"2.0","id":"#).map_err(io)?;
            write_id(&r.id, w)?;
            w.write_all(br#","result":"#).map_err(io)?;
            w.write_all(r.result.get().as_bytes()).map_err(io)?;
            w.write_all(b"}").map_err(io)
        }
        Message::Error(e) => {
            w.write_all(br#"{"jsonrpc":"2.0","#).map_err(io)?;
            if let Some(id) = &e.id {
                w.write_all(br#""id":"#).map_err(io)?;
                write_id(id, w)?;
                w.write_all(b",").map_err(io)?;
            }
            w.write_all(br#""error":{"code":"#).map_err(io)?;
            write_integer(i128::from(e.error.code), w).map_err(io)?;
            w.write_all(br#","message":"#).map_err(io)?;
            write_str(&e.error.message, w)?;
            if let Some(data) = &e.error.data {
                w.write_all(br#","data":"#).map_err(io)?;
                w.write_all(data.get().as_bytes()).map_err(io)?;
            }
            w.write_all(b"}}").map_err(io)
        }
    }
}

/// A request's or a notification's `params`, however they are written.
pub(crate) trait ParamsWriter {
    /// Writes the params' JSON.
    fn write_params(&self, w: &mut dyn std::io::Write) -> Result<(), serde_json::Error>;
}

/// Params already raw: copied.
struct RawParams<'a>(&'a str);

impl ParamsWriter for RawParams<'_> {
    fn write_params(&self, w: &mut dyn std::io::Write) -> Result<(), serde_json::Error> {
        w.write_all(self.0.as_bytes())
            .map_err(serde_json::Error::io)
    }
}

/// A request (`id` given) or a notification: the envelope as fixed text
/// around the id, the method and the params, which `params` writes itself.
pub(crate) fn write_request<W: std::io::Write>(
    id: Option<&Id>,
    method: &str,
    params: Option<impl ParamsWriter>,
    w: &mut W,
) -> Result<(), serde_json::Error> {
    let io = serde_json::Error::io;
    w.write_all(br#"{"jsonrpc":"2.0","#).map_err(io)?;
    if let Some(id) = id {
        w.write_all(br#""id":"#).map_err(io)?;
        write_id(id, w)?;
        w.write_all(b",").map_err(io)?;
    }
    w.write_all(br#""method":"#).map_err(io)?;
    write_str(method, w)?;
    if let Some(params) = params {
        w.write_all(br#","params":"#).map_err(io)?;
        params.write_params(w)?;
    }
    w.write_all(b"}").map_err(io)
}

fn write_id<W: std::io::Write>(id: &Id, w: &mut W) -> Result<(), serde_json::Error> {
    match id {
        Id::Number(n) => write_integer(*n, w).map_err(serde_json::Error::io),
        Id::String(s) => write_str(s, w),
    }
}

/// A JSON string, escaped as `serde_json` escapes it (a word at a time).
fn write_str<W: std::io::Write>(s: &str, w: &mut W) -> Result<(), serde_json::Error> {
    crate::compact::write_str(w, s)
}

/// An integer in decimal, as `serde_json` writes it.
fn write_integer<W: std::io::Write>(n: i128, w: &mut W) -> std::io::Result<()> {
    // "-" and u128::MAX's 39 digits.
    let mut digits = [0u8; 40];
    let mut at = digits.len();
    let mut v = n.unsigned_abs();
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        at -= 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0
        && let Some(slot) = at.checked_sub(1).and_then(|i| digits.get_mut(i))
    {
        *slot = b'-';
        at -= 1;
    }
    w.write_all(digits.get(at..).unwrap_or_default())
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(s),
            Message::Notification(n) => n.serialize(s),
            Message::Response(r) => r.serialize(s),
            Message::Error(e) => e.serialize(s),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3 + usize::from(self.params.is_some())))?;
        m.serialize_entry("jsonrpc", VERSION)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("method", &self.method)?;
        if let Some(p) = &self.params {
            m.serialize_entry("params", p)?;
        }
        m.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2 + usize::from(self.params.is_some())))?;
        m.serialize_entry("jsonrpc", VERSION)?;
        m.serialize_entry("method", &self.method)?;
        if let Some(p) = &self.params {
            m.serialize_entry("params", p)?;
        }
        m.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("jsonrpc", VERSION)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("result", &self.result)?;
        m.end()
    }
}

impl Serialize for ErrorResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2 + usize::from(self.id.is_some())))?;
        m.serialize_entry("jsonrpc", VERSION)?;
        if let Some(id) = &self.id {
            m.serialize_entry("id", id)?;
        }
        m.serialize_entry("error", &self.error)?;
        m.end()
    }
}

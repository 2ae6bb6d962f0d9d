//! Request ids.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON-RPC request id: an integer or a string, never null.
///
/// `1` and `"1"` are different ids. Integers cover the whole range a peer can
/// send as a JSON integer that fits in 64 bits, signed or unsigned; a float
/// (`1.0`, `1e3`) is not an id.
///
/// Strings are reference-counted so that cloning an id (the request table keeps
/// one, the cancellation path another) never copies the text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Id {
    /// An integer id.
    Number(i128),
    /// A string id.
    String(Arc<str>),
}

impl Id {
    /// The integer value, when this is an integer id.
    pub fn as_number(&self) -> Option<i128> {
        match self {
            Id::Number(n) => Some(*n),
            Id::String(_) => None,
        }
    }

    /// The text, when this is a string id.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Id::Number(_) => None,
            Id::String(s) => Some(s),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(i128::from(n))
    }
}

impl From<i32> for Id {
    fn from(n: i32) -> Self {
        Id::Number(i128::from(n))
    }
}

impl From<u32> for Id {
    fn from(n: u32) -> Self {
        Id::Number(i128::from(n))
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(i128::from(n))
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(Arc::from(s))
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(Arc::from(s))
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => {
                // Every id we hold fits in i64 or u64 (see `IdVisitor`); serialize
                // through those so any serializer, not only ones with i128
                // support, accepts it.
                if let Ok(v) = i64::try_from(*n) {
                    serializer.serialize_i64(v)
                } else if let Ok(v) = u64::try_from(*n) {
                    serializer.serialize_u64(v)
                } else {
                    serializer.serialize_i128(*n)
                }
            }
            Id::String(s) => serializer.serialize_str(s),
        }
    }
}

/// What a peer put in the `id` member, before we decide whether it is valid.
///
/// Parsing into this never fails on a well-formed JSON value, so the message
/// parser can give a precise reason ("id is a float") instead of serde's.
#[derive(Debug)]
pub(crate) enum WireId {
    Id(Id),
    Null,
    Invalid(&'static str),
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = WireId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<WireId, E> {
        Ok(WireId::Id(Id::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<WireId, E> {
        Ok(WireId::Id(Id::from(v)))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<WireId, E> {
        Ok(WireId::Invalid(
            "id is a fraction or an integer beyond 64 bits; ids are integers or strings",
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<WireId, E> {
        Ok(WireId::Id(Id::from(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<WireId, E> {
        Ok(WireId::Id(Id::from(v)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<WireId, E> {
        Ok(WireId::Invalid(
            "id is a boolean; ids are integers or strings",
        ))
    }

    fn visit_unit<E: de::Error>(self) -> Result<WireId, E> {
        Ok(WireId::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<WireId, E> {
        Ok(WireId::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<WireId, D::Error> {
        d.deserialize_any(IdVisitor)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<WireId, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(WireId::Invalid(
            "id is an array; ids are integers or strings",
        ))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<WireId, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(WireId::Invalid(
            "id is an object; ids are integers or strings",
        ))
    }
}

impl<'de> Deserialize<'de> for WireId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match WireId::deserialize(d)? {
            WireId::Id(id) => Ok(id),
            WireId::Null => Err(de::Error::custom("id is null; ids are integers or strings")),
            WireId::Invalid(why) => Err(de::Error::custom(why)),
        }
    }
}

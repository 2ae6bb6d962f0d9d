//! The top-level value, and a batch read as far as its setting allows:
//! each element parsed and charged against the budget as it is read, a
//! batch refused whole stopping the parse, its elements then counted by a
//! byte scan ([`count_elements`]).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::parse::{Source, Wire};
use super::{Message, MessageError};
use crate::batch::{BATCH_ELEMENT_COST, Batches};
use crate::id::Id;

/// A top-level value: an object, a batch within its bounds, or another
/// JSON value. (A batch refused whole stops the parse: see [`Refusal`].)
pub(super) enum TopLevel<'a> {
    Single(Wire<'a>),
    /// At least one element, each parsed on its own.
    Batch(Vec<Result<Message, MessageError>>),
    Other(&'static str),
}

/// Why a batch was refused whole. The parse stops there (with a serde
/// error, the only way to stop it) and the reason is kept here; the
/// elements are then counted by [`count_elements`], not parsed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Refusal {
    NotAccepted,
    TooLong { limit: usize },
    OverBudget { budget: usize },
}

impl Refusal {
    pub(super) fn error(self, elements: usize) -> MessageError {
        match self {
            Refusal::NotAccepted => MessageError::BatchRefused { elements },
            Refusal::TooLong { limit } => MessageError::BatchTooLong { elements, limit },
            Refusal::OverBudget { budget } => MessageError::BatchOverBudget { elements, budget },
        }
    }
}

/// Parses the top-level value; `batches` gives the batch setting, asked
/// only when the value is an array, and `refusal` says why a batch stopped
/// the parse.
pub(super) struct TopSeed<'s, F> {
    pub(super) batches: Option<F>,
    pub(super) refusal: Option<Refusal>,
    /// Where the raw members are kept from.
    pub(super) source: Source<'s>,
}

impl<'de, F: FnOnce() -> Batches> DeserializeSeed<'de> for &mut TopSeed<'_, F> {
    type Value = TopLevel<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopLevel<'de>, D::Error> {
        d.deserialize_any(TopVisitor(self))
    }
}

struct TopVisitor<'s, 't, F>(&'s mut TopSeed<'t, F>);

/// The kind of a value that is neither an object nor an array.
macro_rules! other_kind {
    ($wrap:path; $($fn:ident: $ty:ty => $kind:literal),* $(,)?) => {
        $(fn $fn<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok($wrap($kind))
        })*

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($wrap("null"))
        }
    };
}

impl<'de, F: FnOnce() -> Batches> Visitor<'de> for TopVisitor<'_, '_, F> {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object or a batch")
    }

    other_kind! {
        TopLevel::Other;
        visit_bool: bool => "boolean",
        visit_i64: i64 => "number",
        visit_u64: u64 => "number",
        visit_f64: f64 => "number",
        visit_str: &str => "string",
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TopLevel<'de>, A::Error> {
        Wire::deserialize(de::value::MapAccessDeserializer::new(map)).map(TopLevel::Single)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TopLevel<'de>, A::Error> {
        let limits = self.0.batches.take().map_or(Batches::REFUSED, |f| f());
        batch(seq, limits, self.0.source).map_err(|e| match e {
            BatchError::Refused(refusal) => {
                self.0.refusal = Some(refusal);
                de::Error::custom("a batch refused whole")
            }
            BatchError::Json(e) => e,
        })
    }
}

/// Reads a batch's elements as far as `limits` allows. Each element is
/// turned into its message (or the reason it is none) as soon as it is
/// read, and charged against the budget. A batch refused or over a bound
/// is dropped at once and the parse stopped (`Err(Ok(refusal))`); a JSON
/// error is `Err(Err(_))`.
fn batch<'de, A: SeqAccess<'de>>(
    mut seq: A,
    limits: Batches,
    source: Source<'_>,
) -> Result<TopLevel<'de>, BatchError<A::Error>> {
    if !limits.allowed() {
        return Err(BatchError::Refused(Refusal::NotAccepted));
    }
    let mut items: Vec<Result<Message, MessageError>> = Vec::new();
    let mut charged = 0usize;
    loop {
        if items.len() == limits.max_elements() {
            // Another element (skipped, not built) is one too many.
            if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            return Err(BatchError::Refused(Refusal::TooLong {
                limit: limits.max_elements(),
            }));
        }
        let Some(item) = seq.next_element_seed(ElementVisitor(source))? else {
            break;
        };
        charged = charged.saturating_add(element_cost(&item));
        if charged > limits.budget() {
            return Err(BatchError::Refused(Refusal::OverBudget {
                budget: limits.budget(),
            }));
        }
        items.push(item);
    }
    if items.is_empty() {
        return Err(BatchError::Refused(Refusal::NotAccepted));
    }
    Ok(TopLevel::Batch(items))
}

/// Why [`batch`] stopped.
enum BatchError<E> {
    /// Refused whole, for this reason.
    Refused(Refusal),
    /// Not JSON.
    Json(E),
}

impl<E> From<E> for BatchError<E> {
    fn from(e: E) -> Self {
        BatchError::Json(e)
    }
}

/// Counts a batch's top-level elements by scanning its text (strings and
/// nesting followed, nothing built): how a batch refused whole is
/// described. The text's first non-blank byte is its `[`. Elements are
/// counted, not checked: a refused batch is refused whatever they hold.
pub(super) fn count_elements(text: &str) -> Result<usize, MessageError> {
    let bytes = text.trim_start_matches(JSON_BLANK).as_bytes();
    let (mut depth, mut commas, mut any) = (0usize, 0usize, false);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                any |= depth == 1;
            }
            b'[' | b'{' => {
                any |= depth == 1;
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1).ok_or_else(not_a_batch)?;
                if depth == 0 {
                    let rest = bytes.get(i + 1..).unwrap_or_default();
                    if !rest.iter().all(|b| JSON_BLANK.contains(&char::from(*b))) {
                        return Err(MessageError::NotJson(
                            "trailing characters after a batch".into(),
                        ));
                    }
                    return Ok(if any { commas + 1 } else { commas });
                }
            }
            b',' if depth == 1 => commas += 1,
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => any |= depth == 1,
        }
    }
    Err(not_a_batch())
}

/// JSON's blanks.
const JSON_BLANK: [char; 4] = [' ', '\t', '\n', '\r'];

fn not_a_batch() -> MessageError {
    MessageError::NotJson("EOF while parsing a batch".into())
}

/// Skips the rest of a sequence without building anything; how many
/// elements it had.
fn skip_rest<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<usize, A::Error> {
    let mut n = 0usize;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// What a parsed batch element is charged: [`BATCH_ELEMENT_COST`] plus the
/// text it keeps.
fn element_cost(item: &Result<Message, MessageError>) -> usize {
    BATCH_ELEMENT_COST
        + match item {
            Ok(m) => m.kept_len(),
            Err(e) => e.kept_len(),
        }
}

impl Message {
    /// The bytes of text the message keeps on the heap (method, raw
    /// members, strings), for budgets.
    fn kept_len(&self) -> usize {
        let raw = |r: &Option<crate::RawJson>| r.as_ref().map_or(0, crate::RawJson::len);
        let id = |id: &Id| match id {
            Id::String(s) => s.len(),
            Id::Number(_) => 0,
        };
        match self {
            Message::Request(r) => id(&r.id) + r.method.len() + raw(&r.params),
            Message::Notification(n) => n.method.len() + raw(&n.params),
            Message::Response(r) => id(&r.id) + r.result.len(),
            Message::Error(e) => {
                e.id.as_ref().map_or(0, id) + e.error.message.len() + raw(&e.error.data)
            }
        }
    }
}

impl MessageError {
    /// The bytes of text the reason keeps on the heap, for budgets.
    fn kept_len(&self) -> usize {
        match self {
            MessageError::NotJson(s)
            | MessageError::WrongVersion(s)
            | MessageError::InvalidMember(s) => s.len(),
            _ => 0,
        }
    }
}

/// Reads a batch element: its message, or why it is none (an element that
/// is not an object, an array inside the batch, an object that is not a
/// message), its raw members kept from the source.
struct ElementVisitor<'s>(Source<'s>);

impl<'de> DeserializeSeed<'de> for ElementVisitor<'_> {
    type Value = Result<Message, MessageError>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        // A member of the wrong type inside one element is an error here:
        // serde cannot resume inside the array after one, so the whole
        // batch fails with this reason.
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ElementVisitor<'_> {
    type Value = Result<Message, MessageError>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    other_kind! {
        not_an_object;
        visit_bool: bool => "boolean",
        visit_i64: i64 => "number",
        visit_u64: u64 => "number",
        visit_f64: f64 => "number",
        visit_str: &str => "string",
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Wire::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|w| w.into_message(&self.0))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        skip_rest(&mut seq)?;
        Ok(not_an_object("array inside a batch"))
    }
}

fn not_an_object(kind: &'static str) -> Result<Message, MessageError> {
    Err(MessageError::NotAnObject(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Payload, parse_payload, parse_payload_with};

    fn err(s: &str) -> MessageError {
        Message::from_slice(s.as_bytes()).unwrap_err()
    }

    #[test]
    fn batches_parse_each_element() {
        let p = parse_payload(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}}, 5, {"jsonrpc":"2.0","method":"n"}, []]"#,
        )
        .unwrap();
        let Payload::Batch(items) = p else { panic!() };
        assert_eq!(items.len(), 4);
        assert!(matches!(items[0], Ok(Message::Response(_))));
        assert_eq!(
            items[1].as_ref().unwrap_err(),
            &MessageError::NotAnObject("number")
        );
        assert!(matches!(items[2], Ok(Message::Notification(_))));
        assert!(items[3].is_err());
        assert_eq!(
            err(r#"[{"jsonrpc":"2.0","method":"n"}]"#),
            MessageError::UnexpectedBatch
        );
    }

    #[test]
    fn a_refused_batch_is_counted_not_parsed() {
        let count = |t: &str| count_elements(t);
        assert_eq!(count("[0,0,0]"), Ok(3));
        assert_eq!(count(" \n[ ]\r\n"), Ok(0));
        assert_eq!(
            count(r#"[{"a":[1,2,{"b":","}]},"],[\"x\\",[[]],null]"#),
            Ok(4)
        );
        assert_eq!(count(r#"["\\"]"#), Ok(1));
        assert!(matches!(count("[0,0"), Err(MessageError::NotJson(_))));
        assert!(matches!(count("[0] 1"), Err(MessageError::NotJson(_))));
        assert!(matches!(count("[0]]"), Err(MessageError::NotJson(_))));
        // Through the parser: the setting refuses, the scan counts.
        let refused = |t: &str| parse_payload_with(t.as_bytes(), || Batches::REFUSED).unwrap_err();
        assert_eq!(
            refused(r#"[{"jsonrpc":"2.0","method":"a,b"}, 1, "]"]"#),
            MessageError::BatchRefused { elements: 3 }
        );
        assert_eq!(refused("[ ]"), MessageError::EmptyBatch);
        assert!(matches!(refused("[1,"), MessageError::NotJson(_)));
        // A JSON error inside an accepted batch is still a JSON error.
        let accepted = parse_payload_with(b"[1,}", Batches::default).unwrap_err();
        assert!(matches!(accepted, MessageError::NotJson(_)), "{accepted:?}");
    }
}

//! A compact JSON writer for outgoing values: byte for byte what
//! `serde_json::to_writer` writes, but its strings are escaped a word at a
//! time.
//!
//! serde_json escapes a string byte by byte (about 9 instructions a byte),
//! which made writing a `tools/call`'s params half of a 1 MB call. Here a
//! string is searched 8 bytes at a time for a byte that needs an escape
//! (a control, `"` or `\`), and each clean run between them is copied with
//! one `write_all`. Numbers, raw values (`RawValue`) and map keys that are
//! not strings are handed to serde_json itself, so they come out as it
//! writes them.

use std::io;

use serde::Serialize;
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct};

type Error = serde_json::Error;

/// Writes `value` as compact JSON, as `serde_json::to_writer` does.
pub(crate) fn to_writer<W: io::Write, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> Result<(), Error> {
    value.serialize(&mut Writer { w })
}

/// The names under which serde_json's own types (`RawValue`, and `Number`
/// with `arbitrary_precision`) pass their text to its serializer.
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

fn io_err(e: io::Error) -> Error {
    Error::io(e)
}

/// One in every byte of a word.
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
/// The high bit of every byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// A word with the high bit set in (at least) the lowest byte of `word`
/// that is zero: exact for the lowest such byte, which is all that is used.
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The high bit set in the lowest byte of `word` that needs an escape
/// (below 0x20, `"` or `\`), if any: 0 when the word is clean.
fn escape_bytes(word: u64) -> u64 {
    let controls = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    controls
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// How many bytes [`find_escape`] checks at once before it looks closer.
const BLOCK: usize = 64;

/// Whether a block holds a byte that needs an escape. The fold has no early
/// exit, so the compiler checks the block 16 bytes per instruction (SSE2,
/// x86-64's baseline): about 0.7 instructions a byte, against about 2 for
/// the word-at-a-time search, which then finds the byte in a dirty block.
fn block_needs_escape(block: &[u8]) -> bool {
    block.iter().fold(false, |bad, &b| {
        bad | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// How many bytes [`find_escape`] searches a word at a time before it
/// checks whole blocks: text dense in escapes finds the next one there,
/// without a block's cost.
const LEAD: usize = 16;

/// Where the first byte is that a JSON string cannot hold as it is: a
/// control character (below 0x20), `"` or `\`. Clean runs are checked 64
/// bytes at a time, so a long clean text costs well under one instruction
/// a byte: the end of a string without escapes is found by it, and so is
/// the next byte a writer must escape.
///
/// ```
/// use mcp_stack_jsonrpc::find_escape;
///
/// assert_eq!(find_escape(b"plain text"), None);
/// assert_eq!(find_escape(b"say \"hi\""), Some(4));
/// assert_eq!(find_escape(&[b'a'; 1000]), None);
/// ```
pub fn find_escape(bytes: &[u8]) -> Option<usize> {
    let (lead, tail) = bytes.split_at_checked(LEAD).unwrap_or((bytes, &[]));
    if let Some(at) = find_escape_by_words(lead) {
        return Some(at);
    }
    // Clean blocks skipped whole; the rest searched a word at a time.
    let skip = tail
        .chunks_exact(BLOCK)
        .take_while(|block| !block_needs_escape(block))
        .count()
        * BLOCK;
    let rest = tail.get(skip..).unwrap_or_default();
    find_escape_by_words(rest).map(|at| LEAD + skip + at)
}

/// Where the first byte that needs an escape is, a word at a time.
fn find_escape_by_words(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let hits = escape_bytes(u64::from_le_bytes(word));
        if hits != 0 {
            // Little-endian: the lowest set bit is in the first such byte.
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| needs_escape(b))
        .map(|i| at + i)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `s` as a JSON string, quotes included, escaped as serde_json escapes.
pub(crate) fn write_str<W: io::Write + ?Sized>(w: &mut W, s: &str) -> Result<(), Error> {
    w.write_all(b"\"").map_err(io_err)?;
    let mut rest = s.as_bytes();
    while let Some(at) = find_escape(rest) {
        let (clean, tail) = rest.split_at_checked(at).unwrap_or((rest, &[]));
        w.write_all(clean).map_err(io_err)?;
        let Some((&b, after)) = tail.split_first() else {
            rest = &[];
            break;
        };
        let short = match b {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            0x08 => Some(b'b'),
            0x0c => Some(b'f'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            _ => None,
        };
        match short {
            Some(c) => w.write_all(&[b'\\', c]),
            None => {
                let hex = |n: u8| HEX.get(usize::from(n & 0xf)).copied().unwrap_or(b'0');
                w.write_all(&[b'\\', b'u', b'0', b'0', hex(b >> 4), hex(b)])
            }
        }
        .map_err(io_err)?;
        rest = after;
    }
    w.write_all(rest).map_err(io_err)?;
    w.write_all(b"\"").map_err(io_err)
}

/// A primitive (a number): written by serde_json itself.
fn delegate<W: io::Write, T: Serialize>(w: &mut W, v: T) -> Result<(), Error> {
    serde_json::to_writer(w, &v)
}

struct Writer<'w, W> {
    w: &'w mut W,
}

impl<W: io::Write> Writer<'_, W> {
    fn raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.w.write_all(bytes).map_err(io_err)
    }
}

impl<'a, 'w, W: io::Write> ser::Serializer for &'a mut Writer<'w, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 'w, W>;
    type SerializeTuple = Compound<'a, 'w, W>;
    type SerializeTupleStruct = Compound<'a, 'w, W>;
    type SerializeTupleVariant = Compound<'a, 'w, W>;
    type SerializeMap = Compound<'a, 'w, W>;
    type SerializeStruct = Compound<'a, 'w, W>;
    type SerializeStructVariant = Compound<'a, 'w, W>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.raw(if v { b"true" } else { b"false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.w, v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.w, v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        delegate(self.w, v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.raw(b"null")
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        write_str(self.w, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.raw(b"{")?;
        write_str(self.w, variant)?;
        self.raw(b":")?;
        value.serialize(&mut *self)?;
        self.raw(b"}")
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        self.raw(b"[")?;
        Ok(Compound::new(self, b"]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        self.raw(b"{")?;
        write_str(self.w, variant)?;
        self.raw(b":[")?;
        Ok(Compound::new(self, b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        self.raw(b"{")?;
        Ok(Compound::new(self, b"}"))
    }
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            return Ok(Compound {
                ser: self,
                first: true,
                close: b"",
                private: Some(name),
            });
        }
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        self.raw(b"{")?;
        write_str(self.w, variant)?;
        self.raw(b":{")?;
        Ok(Compound::new(self, b"}}"))
    }
}

/// An array, an object, or one of serde_json's private structs.
struct Compound<'a, 'w, W> {
    ser: &'a mut Writer<'w, W>,
    first: bool,
    /// Written at the end.
    close: &'static [u8],
    /// The name of serde_json's private struct (a `RawValue`'s text):
    /// its field goes to serde_json as that struct, which writes it.
    private: Option<&'static str>,
}

impl<'a, 'w, W: io::Write> Compound<'a, 'w, W> {
    fn new(ser: &'a mut Writer<'w, W>, close: &'static [u8]) -> Self {
        Compound {
            ser,
            first: true,
            close,
            private: None,
        }
    }

    fn comma(&mut self) -> Result<(), Error> {
        if self.first {
            self.first = false;
            Ok(())
        } else {
            self.ser.raw(b",")
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma()?;
        value.serialize(&mut *self.ser)
    }

    fn end(self) -> Result<(), Error> {
        self.ser.raw(self.close)
    }
}

impl<W: io::Write> ser::SerializeSeq for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> ser::SerializeTuple for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> ser::SerializeTupleStruct for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> ser::SerializeTupleVariant for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> SerializeMap for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma()?;
        key.serialize(KeyWriter {
            w: &mut *self.ser.w,
        })
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.ser.raw(b":")?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> SerializeStruct for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if let Some(name) = self.private {
            return serde_json::to_writer(&mut *self.ser.w, &Private { name, key, value });
        }
        self.comma()?;
        write_str(self.ser.w, key)?;
        self.ser.raw(b":")?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl<W: io::Write> ser::SerializeStructVariant for Compound<'_, '_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

/// One field of one of serde_json's private structs, as that struct again,
/// for serde_json to write.
struct Private<'a, T: ?Sized> {
    name: &'static str,
    key: &'static str,
    value: &'a T,
}

impl<T: Serialize + ?Sized> Serialize for Private<'_, T> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct(self.name, 1)?;
        st.serialize_field(self.key, self.value)?;
        st.end()
    }
}

/// A map's key: a string written by the fast escaper, anything else as
/// serde_json writes it as a key (a number in quotes, or its error).
struct KeyWriter<'w, W> {
    w: &'w mut W,
}

impl<W: io::Write> KeyWriter<'_, W> {
    /// `key` as serde_json writes it as a map's key: taken from the
    /// one-entry object `{key:null}` it writes.
    fn delegate<K: Serialize>(self, key: K) -> Result<(), Error> {
        struct OneKey<K>(K);
        impl<K: Serialize> Serialize for OneKey<K> {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(&self.0, &())?;
                map.end()
            }
        }
        let text = serde_json::to_vec(&OneKey(key))?;
        let key = text
            .strip_prefix(b"{")
            .and_then(|t| t.strip_suffix(b":null}"))
            .ok_or_else(|| <Error as ser::Error>::custom("a map key serde_json did not write"))?;
        self.w.write_all(key).map_err(io_err)
    }
}

macro_rules! delegate_keys {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, v: $ty) -> Result<(), Error> {
            self.delegate(v)
        })*
    };
}

impl<W: io::Write> ser::Serializer for KeyWriter<'_, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.w, v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.w, v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        write_str(self.w, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    delegate_keys!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_bytes: &[u8]
    );
    // What serde_json refuses as a key: its own error.
    fn serialize_none(self) -> Result<(), Error> {
        self.delegate(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        self.delegate(())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.delegate(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.delegate(())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_error())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_error())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_error())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_error())
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_error())
    }
}

/// serde_json's error for a key that is not a string.
fn key_error() -> Error {
    match serde_json::to_vec(&std::collections::BTreeMap::from([((), ())])) {
        Err(e) => e,
        Ok(_) => <Error as ser::Error>::custom("key must be a string"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    fn ours<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        to_writer(&mut out, value).unwrap();
        out
    }

    /// Strings heavy in what needs escaping, in long clean runs, and in
    /// every width of UTF-8.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            ".{0,40}",
            "[\u{0}-\u{1f}\"\\\\\u{7f}/a]{0,24}",
            "[a-z\u{0}-\u{1f}\"\\\\é😀\u{7ff}\u{ffff}]{0,64}",
            ("[a-z]{0,70}", "[\n\"\\\\\u{1}]", "[a-zé]{0,70}").prop_map(|(a, b, c)| a + &b + &c),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0)].prop_map(Value::from),
            Just(Value::from(u64::MAX)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            prop_oneof![Just(0.1), Just(-0.0), Just(1e300), Just(5e-324), Just(1.0)]
                .prop_map(Value::from),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                prop::collection::btree_map(text(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn values_are_written_as_serde_json_writes_them(value in value()) {
            prop_assert_eq!(ours(&value), serde_json::to_vec(&value).unwrap());
        }

        #[test]
        fn strings_are_escaped_as_serde_json_escapes_them(s in text()) {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }

        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(s in any::<String>()) {
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }

        /// Every byte position within a word, for every byte that needs an
        /// escape and for its neighbours that do not.
        #[test]
        fn one_special_byte_anywhere(
            before in 0usize..20,
            after in 0usize..20,
            b in prop_oneof![0u8..0x23, Just(b'\\'), Just(0x5b), Just(0x5d), Just(0x7f)],
        ) {
            let s = format!("{}{}{}", "x".repeat(before), char::from(b), "y".repeat(after));
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Special bytes at any place around the lead and the block edges
        /// (16, 80, 144, …), and the search agrees with a byte-by-byte one.
        #[test]
        fn special_bytes_around_the_blocks(
            len in 0usize..300,
            at in prop::collection::vec((0usize..300, prop_oneof![0u8..0x20, Just(b'"'), Just(b'\\')]), 0..3),
            fill in prop_oneof![Just(b'a'), Just(0x7f), Just(b'/'), Just(0x21)],
        ) {
            let mut bytes = vec![fill; len];
            for (i, b) in at {
                if let Some(slot) = bytes.get_mut(i) {
                    *slot = b;
                }
            }
            let first = bytes.iter().position(|&b| needs_escape(b));
            prop_assert_eq!(find_escape(&bytes), first);
            let s = String::from_utf8(bytes).unwrap();
            prop_assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
        }
    }

    #[test]
    fn a_long_clean_run_with_one_escape_at_every_place() {
        for len in [15, 16, 17, 79, 80, 81, 143, 144, 200] {
            for i in 0..len {
                let mut bytes = vec![b'q'; len];
                if let Some(slot) = bytes.get_mut(i) {
                    *slot = b'"';
                }
                assert_eq!(find_escape(&bytes), Some(i), "len {len}, at {i}");
                let s = String::from_utf8(bytes).unwrap();
                assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap());
            }
            assert_eq!(find_escape(&vec![b'q'; len]), None);
        }
    }

    #[test]
    fn every_control_byte_and_the_word_edges() {
        for b in 0u8..0x80 {
            let c = char::from(b);
            for s in [
                c.to_string(),
                format!("abcdefg{c}"),
                format!("abcdefgh{c}ijklmnopq"),
            ] {
                assert_eq!(ours(&s), serde_json::to_vec(&s).unwrap(), "byte {b:#x}");
            }
        }
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        New(u8),
        Tuple(i32, String),
        Struct { a: Option<f32>, b: Vec<u8> },
    }

    #[derive(Serialize)]
    struct Everything<'a> {
        shapes: Vec<Shape>,
        unit: (),
        none: Option<u8>,
        chars: [char; 3],
        bytes: &'a serde_bytes_like::Bytes,
        big: (i128, u128),
        floats: (f32, f64, f64),
        int_keys: std::collections::BTreeMap<i32, bool>,
        bool_keys: std::collections::BTreeMap<bool, u8>,
        char_keys: std::collections::BTreeMap<char, u8>,
        raw: &'a serde_json::value::RawValue,
        raw_json: crate::RawJson,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
    }

    mod serde_bytes_like {
        /// Serialized with `serialize_bytes`.
        pub(super) struct Bytes(pub(super) Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    #[test]
    fn every_serde_shape_is_written_as_serde_json_writes_it() {
        let raw =
            serde_json::value::RawValue::from_string(r#"{ "a" : [1, "\u0041"] }"#.into()).unwrap();
        let everything = Everything {
            shapes: vec![
                Shape::Unit,
                Shape::New(7),
                Shape::Tuple(-3, "t\"\n".into()),
                Shape::Struct {
                    a: Some(1.5),
                    b: vec![],
                },
                Shape::Struct {
                    a: Some(f32::NAN),
                    b: vec![1, 2],
                },
            ],
            unit: (),
            none: None,
            chars: ['a', '"', '\u{1}'],
            bytes: &serde_bytes_like::Bytes(vec![0, 255, 10]),
            big: (i128::MIN, u128::MAX),
            floats: (0.1, f64::INFINITY, -2.5e-8),
            int_keys: [(-1, true), (i32::MAX, false)].into(),
            bool_keys: [(true, 1)].into(),
            char_keys: [('\n', 1), ('k', 2)].into(),
            raw: &raw,
            raw_json: crate::to_raw(&serde_json::json!({"k": "v\u{7}"})).unwrap(),
            skipped: None,
        };
        assert_eq!(ours(&everything), serde_json::to_vec(&everything).unwrap());
        // A key serde_json refuses is refused here too.
        let bad = std::collections::BTreeMap::from([(vec![1u8], 1)]);
        assert!(serde_json::to_vec(&bad).is_err());
        assert!(to_writer(&mut Vec::new(), &bad).is_err());
    }
}

//! A JSON value that borrows from the line it was parsed from: the adapters of the two
//! largest logs (Claude Code, Codex) read every line through it.
//!
//! Why not `serde_json::Value`: the ingest benchmark's profile showed a `Value` tree, which
//! allocates every string and a B-tree per object and is then dropped, costing as much as the
//! rest of parsing. [`Json`] keeps strings without escapes as slices of the line, objects as
//! small vectors in the order written, and leaves out, unparsed, the top-level fields a caller
//! names (Claude's `toolUseResult` repeats a tool's whole output). It is parsed by
//! `serde_json`, so what is valid JSON is decided there.
//!
//! The accessors have `serde_json::Value`'s names and meanings (`get`, `as_str`, `pointer`,
//! ...), so adapter code reads the same. Serializing a [`Json`] (for tool input shown as text)
//! writes compact JSON with keys in the order the agent wrote them.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A parsed JSON value borrowing from its input.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string, borrowed when it had no escapes.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object, keys in the order written (a repeated key: the last one wins in [`Json::get`]).
    Object(Object<'a>),
    /// A member named in [`Shape::raw`]: its JSON text exactly as written, unparsed.
    Raw(&'a str),
}

/// Which members [`Json::parse`] leaves out or keeps as text, wherever they appear.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape<'s> {
    /// Members left out (their values are still checked to be valid JSON).
    pub skip: &'s [&'s str],
    /// Members kept as their JSON text ([`Json::Raw`]).
    pub raw: &'s [&'s str],
}

/// The members of a JSON object, in the order written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object<'a>(pub Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Object<'a> {
    /// The value of `key` (the last, if the key repeats).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

static NULL: Json<'static> = Json::Null;

impl<'a> Json<'a> {
    /// Parses `bytes` as one JSON value of the given shape.
    pub fn parse(bytes: &'a [u8], shape: Shape<'_>) -> serde_json::Result<Json<'a>> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let v = Seed { shape }.deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(o) => o.get(key),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as an `i64`, if it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// The number as a `u64`, if it is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Json<'a>>> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// True for a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// The value at a JSON pointer (`/a/b/0`), as `serde_json::Value::pointer`.
    pub fn pointer(&self, pointer: &str) -> Option<&Json<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).try_fold(self, |v, token| match v {
            Json::Object(o) => o.get(&token),
            Json::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        })
    }

    /// The string member `key` of an object.
    pub fn str_of(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Json::as_str)
    }

    /// The member `key`, or `null`.
    pub fn member(&self, key: &str) -> &Json<'a> {
        self.get(key).unwrap_or(&NULL)
    }
}

impl fmt::Display for Json<'_> {
    /// Compact JSON, keys in the order written; a [`Json::Raw`] as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Json::Raw(text) = self {
            return f.write_str(text);
        }
        let s = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&s)
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Object(o) => {
                let mut map = s.serialize_map(Some(o.0.len()))?;
                for (k, v) in &o.0 {
                    map.serialize_entry(k.as_ref(), v)?;
                }
                map.end()
            }
            Json::Raw(text) => match serde_json::value::RawValue::from_string((*text).to_owned()) {
                Ok(raw) => raw.serialize(s),
                Err(e) => Err(serde::ser::Error::custom(e)),
            },
        }
    }
}

/// A string that borrows from the input when it can.
struct Str<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The visitor of any value of a shape.
struct ValueVisitor<'s> {
    shape: Shape<'s>,
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = seq.next_element_seed(Seed { shape: self.shape })? {
            out.push(v);
        }
        Ok(Json::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut out = Vec::new();
        while let Some(Str(k)) = map.next_key::<Str<'de>>()? {
            if self.shape.skip.contains(&k.as_ref()) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let v = if self.shape.raw.contains(&k.as_ref()) {
                Json::Raw(map.next_value::<&'de serde_json::value::RawValue>()?.get())
            } else {
                map.next_value_seed(Seed { shape: self.shape })?
            };
            out.push((k, v));
        }
        Ok(Json::Object(Object(out)))
    }
}

struct Seed<'s> {
    shape: Shape<'s>,
}

/// `line` with every `\u` escape of a lone UTF-16 surrogate written `\ufffd` (U+FFFD), or
/// `None` when it has none. JavaScript's `JSON.stringify` writes a string cut between the two
/// halves of a pair (an emoji in an output cut at a length) with such an escape; `serde_json`,
/// as the JSON standard's letter allows, refuses the whole text, so a line of an agent written
/// in JavaScript (Claude Code, ZCode) would be lost for one character. Escapes are read as a
/// JSON string reads them (`\\ud83d` is a backslash, then letters).
pub fn without_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    fn unit(b: &[u8], at: usize) -> Option<u16> {
        let hex = b.get(at..at + 6)?;
        if &hex[..2] != b"\\u" {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    }
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(found) = memchr::memchr(b'\\', &line[i..]) {
        let at = i + found;
        let Some(u) = unit(line, at) else {
            // Any other escape: two bytes (`\\` among them).
            i = at + 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        if high && unit(line, at + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n)) {
            i = at + 12;
            continue;
        }
        if high || low {
            let o = out.get_or_insert_with(|| Vec::with_capacity(line.len()));
            o.extend_from_slice(&line[copied..at]);
            o.extend_from_slice(b"\\ufffd");
            copied = at + 6;
        }
        i = at + 6;
    }
    out.map(|mut o| {
        o.extend_from_slice(&line[copied..]);
        o
    })
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(ValueVisitor { shape: self.shape })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lone_surrogates_are_written_as_the_replacement_character() {
        let fixed = |s: &str| without_lone_surrogates(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        // A pair, other escapes, an escaped backslash before letters: nothing to change.
        assert_eq!(fixed(r#"{"t":"ok \ud83d\ude00 \n \\ud83d \u00e9"}"#), None);
        assert_eq!(fixed(r#"{"t":"cut \ud83d"}"#).as_deref(), Some(r#"{"t":"cut \ufffd"}"#));
        assert_eq!(fixed(r#"{"t":"\uDE00 low first, \uD83D\u0041 high before a letter"}"#).as_deref(), Some(r#"{"t":"\ufffd low first, \ufffd\u0041 high before a letter"}"#));
        assert_eq!(fixed(r#"{"t":"\ud83d\ud83d\ude00"}"#).as_deref(), Some(r#"{"t":"\ufffd\ud83d\ude00"}"#));
        assert_eq!(fixed(r#"{"t":"\\\ud83d"}"#).as_deref(), Some(r#"{"t":"\\\ufffd"}"#));
        // Ends inside an escape: nothing to read, nothing changed.
        assert_eq!(fixed(r#"{"t":"\ud8"#), None);
        let v: serde_json::Value = serde_json::from_str(&fixed(r#"{"t":"cut \ud83d"}"#).unwrap()).unwrap();
        assert_eq!(v["t"], "cut \u{fffd}");
        assert!(serde_json::from_str::<serde_json::Value>(r#"{"t":"cut \ud83d"}"#).is_err(), "serde_json refuses it");
    }

    #[test]
    fn json_borrows_plain_strings_and_owns_escaped_ones() {
        let line = br#"{"a":"plain","b":"line\nbreak","c":[1,-2,3.5,true,null],"d":{"e":"x"}}"#;
        let v = Json::parse(line, Shape::default()).expect("parses");
        assert!(matches!(v.get("a"), Some(Json::String(Cow::Borrowed("plain")))));
        assert!(matches!(v.get("b"), Some(Json::String(Cow::Owned(s))) if s == "line\nbreak"));
        assert_eq!(v.pointer("/c/1").and_then(Json::as_i64), Some(-2));
        assert_eq!(v.pointer("/d/e").and_then(Json::as_str), Some("x"));
        assert_eq!(v.pointer("/c/9"), None);
        assert_eq!(v.to_string(), String::from_utf8(line.to_vec()).unwrap());
    }

    #[test]
    fn json_skips_and_keeps_raw_the_named_members_at_any_depth() {
        let line = br#"{"big":{"x":"y"},"keep":{"big":1,"in":{"b": 2, "a":"\u00e9"}},"n":2}"#;
        let shape = Shape { skip: &["big"], raw: &["in"] };
        let v = Json::parse(line, shape).expect("parses");
        assert_eq!(v.get("big"), None);
        assert_eq!(v.pointer("/keep/big"), None);
        assert_eq!(v.pointer("/keep/in"), Some(&Json::Raw(r#"{"b": 2, "a":"\u00e9"}"#)));
        assert_eq!(v.pointer("/keep/in").map(Json::to_string).as_deref(), Some(r#"{"b": 2, "a":"\u00e9"}"#));
        assert_eq!(v.get("n").and_then(Json::as_u64), Some(2));
        // Skipped and raw members must still be valid JSON.
        assert!(Json::parse(br#"{"big":{"x":},"n":2}"#, shape).is_err());
        assert!(Json::parse(br#"{"in":{"x":},"n":2}"#, shape).is_err());
        assert!(Json::parse(br#"{"n":2} x"#, shape).is_err());
    }

    #[test]
    fn json_keeps_the_last_of_a_repeated_key() {
        let v = Json::parse(br#"{"k":1,"k":2}"#, Shape::default()).expect("parses");
        assert_eq!(v.get("k").and_then(Json::as_i64), Some(2));
    }

    proptest! {
        /// Whatever serde_json accepts as a Value, Json accepts, with the same members.
        #[test]
        fn json_agrees_with_serde_json_value(bytes in proptest::collection::vec(any::<u8>(), 0..64), s in "[ -~\u{4e00}-\u{4e10}]{0,40}") {
            for input in [bytes.clone(), serde_json::to_vec(&serde_json::json!({"s": s, "a": [s.clone(), 1]})).unwrap()] {
                let ours = Json::parse(&input, Shape::default());
                let theirs: serde_json::Result<serde_json::Value> = serde_json::from_slice(&input);
                prop_assert_eq!(ours.is_ok(), theirs.is_ok());
                if let (Ok(o), Ok(t)) = (ours, theirs) {
                    let back: serde_json::Value = serde_json::from_str(&o.to_string()).unwrap();
                    prop_assert_eq!(back, t);
                }
            }
        }
    }
}

/// Bytes kept of each JSON string by [`ShortStrings`].
/// (256 KiB: an event keeps 50,000 characters of a text, and a prompt's 127 screenshots then
/// fit in the 32 MiB a parsed line may be; at 1 MiB, 32 of them made the line cut again.)
pub const LONG_STRING_KEPT_BYTES: usize = 256 * 1024;

/// A line too long to parse (over 32 MiB: the base64 of images pasted into a prompt, a tool's
/// output), made parseable: fed its bytes in order, in pieces of any size, it keeps each JSON
/// string's first [`LONG_STRING_KEPT_BYTES`] (or as many as it is told; cut where a character or an escape begins) and,
/// in place of the rest, ` [… N bytes left out of a line over 32 MiB …]`; everything outside
/// strings as it is. Nothing when what it keeps grows past `max` (a line long for its many
/// strings, not its long ones). Strings are read as JSON reads them, escapes included, so a
/// quote inside one (`\"`) does not end it; bytes that are not JSON give bytes that are not
/// either, which the parser then refuses.
pub struct ShortStrings {
    out: Vec<u8>,
    max: usize,
    /// Bytes kept of each string.
    keep_bytes: usize,
    over: bool,
    in_string: bool,
    /// After a backslash in a string: the escape's letter comes next.
    escape: bool,
    /// Hex digits of a `\u` escape still to come.
    hex_left: usize,
    /// Bytes of the current string kept.
    kept: usize,
    /// Bytes of the current string left out.
    dropped: u64,
}

impl ShortStrings {
    /// A reader whose output may grow to `max` bytes.
    pub fn new(max: usize) -> ShortStrings {
        ShortStrings::keeping(max, LONG_STRING_KEPT_BYTES)
    }

    /// A reader keeping `keep_bytes` of each string.
    pub fn keeping(max: usize, keep_bytes: usize) -> ShortStrings {
        ShortStrings { out: Vec::new(), max, keep_bytes, over: false, in_string: false, escape: false, hex_left: 0, kept: 0, dropped: 0 }
    }

    /// Reads the line's next bytes.
    pub fn feed(&mut self, mut b: &[u8]) {
        while !b.is_empty() && !self.over {
            if !self.in_string {
                let i = memchr::memchr(b'"', b).map_or(b.len(), |i| i + 1);
                self.out.extend_from_slice(&b[..i]);
                if b[i - 1] == b'"' {
                    (self.in_string, self.kept, self.dropped) = (true, 0, 0);
                }
                b = &b[i..];
            } else if self.escape {
                self.escape = false;
                if b[0] == b'u' {
                    self.hex_left = 4;
                }
                self.keep(&b[..1]);
                b = &b[1..];
            } else if self.hex_left > 0 {
                let n = self.hex_left.min(b.len());
                self.hex_left -= n;
                self.keep(&b[..n]);
                b = &b[n..];
            } else {
                let i = memchr::memchr2(b'"', b'\\', b).unwrap_or(b.len());
                self.plain(&b[..i]);
                match b.get(i) {
                    Some(b'"') => {
                        if self.dropped > 0 {
                            self.out.extend_from_slice(format!(" [… {} bytes left out of a line over 32 MiB …]", self.dropped).as_bytes());
                        }
                        self.out.push(b'"');
                        self.in_string = false;
                    }
                    Some(_) => {
                        // An escape begins: a character's start, where a string may be cut.
                        self.keep_from_here();
                        self.escape = true;
                        self.keep(b"\\");
                    }
                    None => {}
                }
                b = &b[(i + 1).min(b.len())..];
            }
        }
        if self.out.len() > self.max {
            self.over = true;
            self.out = Vec::new();
        }
    }

    /// The line as read, or nothing (see [`ShortStrings`]).
    pub fn finish(self) -> Option<Vec<u8>> {
        (!self.over).then_some(self.out)
    }

    /// Once a string's kept bytes reached the bound, the rest of it is left out.
    fn keep_from_here(&mut self) {
        if !self.dropping() && self.kept >= self.keep_bytes {
            self.kept = usize::MAX;
        }
    }

    fn dropping(&self) -> bool {
        self.kept == usize::MAX
    }

    fn keep(&mut self, b: &[u8]) {
        if self.dropping() {
            self.dropped += b.len() as u64;
        } else {
            self.out.extend_from_slice(b);
            self.kept += b.len();
        }
    }

    /// A run of a string with no quote or backslash: kept up to the bound, cut where a
    /// character begins (UTF-8 continuation bytes stay with theirs).
    fn plain(&mut self, run: &[u8]) {
        if self.dropping() {
            self.dropped += run.len() as u64;
            return;
        }
        let room = self.keep_bytes.saturating_sub(self.kept);
        if run.len() <= room {
            self.keep(run);
            return;
        }
        let mut cut = room;
        while cut < run.len() && run[cut] & 0xC0 == 0x80 {
            cut += 1;
        }
        self.keep(&run[..cut]);
        if cut < run.len() {
            self.kept = usize::MAX;
            self.dropped = (run.len() - cut) as u64;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod short_strings_tests {
    use super::*;
    use proptest::prelude::*;

    fn short(line: &[u8], keep: usize, pieces: usize) -> Option<Vec<u8>> {
        let mut r = ShortStrings::keeping(1 << 30, keep);
        for chunk in line.chunks(pieces.max(1)) {
            r.feed(chunk);
        }
        r.finish()
    }

    /// Long strings keep their beginning and a note of what was left out; short ones, keys and
    /// everything between strings stay as written; escapes (`\"` among them) are read as JSON
    /// reads them and never cut; a character is never cut; the result parses, whatever the
    /// pieces it was read in.
    #[test]
    fn long_strings_keep_their_beginning_and_the_line_parses() {
        let line = format!(r#"{{"type":"user","msg":{{"content":[{{"type":"text","text":"why \"this\" chart"}},{{"type":"image","data":"{}"}}],"n":[1,2.5,null,true]}}}}"#, "QUJD".repeat(1000));
        for pieces in [1, 2, 3, 7, 64, 1 << 20] {
            let out = String::from_utf8(short(line.as_bytes(), 100, pieces).expect("kept")).expect("utf-8");
            let v: serde_json::Value = serde_json::from_str(&out).expect("parses");
            assert_eq!(v["msg"]["content"][0]["text"], "why \"this\" chart");
            assert_eq!(v["msg"]["content"][1]["data"], format!("{} [… 3900 bytes left out of a line over 32 MiB …]", "QUJD".repeat(25)), "{pieces}");
            assert_eq!(v["msg"]["n"], serde_json::json!([1, 2.5, null, true]));
        }
        // Cuts at an escape and inside characters: the escape and the character kept whole. (A
        // pair of surrogate escapes may be cut between its halves: the line is then read with
        // U+FFFD for the half kept, see `without_lone_surrogates`.)
        for (s, keep) in [("aaaa\\u00e9bbbb", 5), ("aaaa\\u00e9bbbb", 4), ("aaaa\\\"bbbb", 5), ("aaaé😀bbbb", 4), ("aaaé😀bbbb", 6), ("aaaé😀bbbb", 8)] {
            let line = format!(r#"["{s}"]"#);
            for pieces in [1, 2, 5, 100] {
                let out = short(line.as_bytes(), keep, pieces).expect("kept");
                let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{s} {keep} {pieces}: {e}: {}", String::from_utf8_lossy(&out)));
                let full: String = serde_json::from_str(&format!(r#""{s}""#)).expect("json");
                let got = v[0].as_str().expect("a string");
                let kept = got.split(" [… ").next().expect("kept");
                assert!(full.starts_with(kept) && kept.len() >= keep.min(full.len()) - 3, "{s} {keep}: {got}");
            }
        }
        assert_eq!(short(b"[\"abc\"]", 3, 1).as_deref(), Some(&b"[\"abc\"]"[..]), "a string as long as the bound is whole");
        let mut r = ShortStrings::keeping(50, 10);
        r.feed(format!("[{}]", "1,".repeat(100)).as_bytes());
        assert_eq!(r.finish(), None, "long for what it keeps");
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\/\n\té😀\u{1}]{0,40}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 30, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                // Keys no longer than what is kept (two keys cut to one would be one key).
                prop::collection::btree_map("[a-z]{0,2}", inner, 0..6).prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Strings keep a beginning of what they held (every string no longer than kept, as JSON
    /// writes it, whole); the rest of the value stays as it was.
    fn shortened(full: &serde_json::Value, got: &serde_json::Value, keep: usize) -> bool {
        use serde_json::Value as V;
        match (full, got) {
            (V::String(f), V::String(g)) => match g.split_once(" [… ") {
                Some((k, note)) => serde_json::to_string(f).unwrap().len() - 2 > keep && f.starts_with(k) && note.ends_with("left out of a line over 32 MiB …]"),
                None => f == g,
            },
            (V::Array(f), V::Array(g)) => f.len() == g.len() && f.iter().zip(g).all(|(a, b)| shortened(a, b, keep)),
            (V::Object(f), V::Object(g)) => f.len() == g.len() && f.iter().zip(g).all(|((ka, a), (kb, b))| shortened(&V::from(ka.clone()), &V::from(kb.clone()), keep) && shortened(a, b, keep)),
            (f, g) => f == g,
        }
    }

    proptest! {
        #[test]
        fn short_strings_give_json_that_holds_a_beginning_of_every_string(v in json_value(), keep in 2usize..12, pieces in 1usize..9) {
            let line = serde_json::to_vec(&v).unwrap();
            let out = short(&line, keep, pieces).expect("kept");
            let got: serde_json::Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)));
            prop_assert!(shortened(&v, &got, keep), "{} -> {}", String::from_utf8_lossy(&line), String::from_utf8_lossy(&out));
        }

        #[test]
        fn short_strings_never_panic_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300), keep in 0usize..8, pieces in 1usize..9) {
            let _ = short(&bytes, keep, pieces);
        }
    }
}

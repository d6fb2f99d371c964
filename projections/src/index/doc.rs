//! A segment's document table: per document (by segment ordinal) its id, metadata, record
//! locator and length in tokens; `source` and `project` strings are interned per segment.
//! Keys and rows are held here for documents being added (the in-memory segment); an on-disk
//! segment reads them from its file when asked, and its table holds each document's length,
//! length code and time.

use std::collections::HashMap;
use std::sync::Arc;

use super::bm25;
use super::segment::reader::Backing;
use super::limits::{META_STRING_SIZE_BYTES_MAX, SEGMENT_DOCS_MAX};
use super::{DocId, DocMeta, Scope};

/// `source` or `project` absent.
pub(crate) const NO_STRING: u32 = u32::MAX;
/// Bytes of one encoded row.
pub(crate) const ROW_SIZE_BYTES: usize = 40;
/// Row flag bit: a tool call or tool result.
const FLAG_TOOL: u8 = 1;

/// A document's filter fields in one byte ([`DocTable::figures`]): its kind in bits 0..5,
/// bit 5 a tool call or result, bit 6 scope entry (else event).
const MARK_KIND: u8 = 0x1f;
const MARK_TOOL: u8 = 0x20;
const MARK_ENTRY: u8 = 0x40;
/// The mark of a document whose kind does not fit in five bits: its row is read instead.
const MARK_UNKNOWN: u8 = 0xff;

/// What a search asks of a document it offers, from memory: its filter fields, time and id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Figures {
    pub doc: DocId,
    pub scope: Scope,
    pub kind: u8,
    pub tool: bool,
    pub time_unix_ms: i64,
}

/// One document's metadata as a segment holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DocRow {
    pub doc: DocId,
    pub scope: Scope,
    pub kind: u8,
    pub tool: bool,
    pub time_unix_ms: i64,
    /// Index into the segment's strings, or [`NO_STRING`].
    pub source: u32,
    /// Index into the segment's strings, or [`NO_STRING`].
    pub project: u32,
    /// [`DocMeta::record`].
    pub record: u64,
    /// [`DocMeta::position`].
    pub position: u32,
}

/// A table's rows: held, for a table being built, or read from its segment's file where they
/// were checked when it opened (40 bytes a document that every process with the store open
/// shares through the page cache, instead of a copy in each).
#[derive(Clone)]
enum Rows {
    Held(Vec<DocRow>),
    InFile { file: Arc<Backing>, at: usize, count: usize },
}

impl Default for Rows {
    fn default() -> Rows {
        Rows::Held(Vec::new())
    }
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rows::Held(rows) => write!(f, "{} rows held", rows.len()),
            Rows::InFile { at, count, .. } => write!(f, "{count} rows in the file at byte {at}"),
        }
    }
}

/// Reads an encoded row ([`DocTable::encode_rows`]) that [`check_row`] accepted.
fn read_row(r: &[u8]) -> DocRow {
    let u32_le = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
    let mut time = [0u8; 8];
    time.copy_from_slice(&r[8..16]);
    let mut record = [0u8; 8];
    record.copy_from_slice(&r[28..36]);
    DocRow {
        doc: u32_le(0),
        scope: if r[4] == 1 { Scope::Entry } else { Scope::Event },
        kind: r[5],
        tool: r[6] & FLAG_TOOL != 0,
        time_unix_ms: i64::from_le_bytes(time),
        source: u32_le(16),
        project: u32_le(20),
        record: u64::from_le_bytes(record),
        position: u32_le(36),
    }
}

/// Checks an encoded row of a table of `string_count` strings: its length, or where it is
/// wrong (relative to the row) and why.
fn check_row(r: &[u8], string_count: u32) -> Result<u32, (usize, &'static str)> {
    let u32_le = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
    if !matches!(r[4], 1 | 2) {
        return Err((4, "unknown scope"));
    }
    if r[6] & !FLAG_TOOL != 0 || r[7] != 0 {
        return Err((6, "unknown flags"));
    }
    for s in [u32_le(16), u32_le(20)] {
        if s != NO_STRING && s >= string_count {
            return Err((16, "string index out of range"));
        }
    }
    let length = u32_le(24);
    if length > super::limits::DOC_TOKENS_MAX {
        return Err((24, "document length out of range"));
    }
    Ok(length)
}

/// The documents of one segment, in ordinal order.
#[derive(Clone, Debug, Default)]
pub(crate) struct DocTable {
    rows: Rows,
    /// Length of each document in positions (BM25's document length).
    lengths: Vec<u32>,
    /// Each length's one-byte code ([`bm25::length_code`]), what scores are computed from.
    codes: Vec<u8>,
    /// Each document's time (what block bounds of recency are made of).
    times: Vec<i64>,
    /// Of a table read from a segment: each document's kind, scope and tool flag in a byte
    /// (`MARK_*`), so that a search offering a document need not read its row from the file.
    marks: Vec<u8>,
    /// Of a table read from a segment: its first document's id, if its ids are consecutive
    /// (as the catalog numbers them), so that a document's id is this plus its ordinal.
    first_of_consecutive: Option<DocId>,
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    token_count: u64,
    /// Keys by ordinal, for tables being built (empty for a table decoded from a segment).
    keys: Vec<String>,
    /// Bytes of the strings and keys held, with their headers (what [`DocTable::heap_bytes`]
    /// counts without walking them).
    string_bytes: usize,
}

impl DocTable {
    pub(crate) fn len(&self) -> u32 {
        match &self.rows {
            Rows::Held(rows) => rows.len() as u32,
            Rows::InFile { count, .. } => *count as u32,
        }
    }

    /// About the bytes of memory the table takes (its vectors' room and its strings).
    pub(crate) fn heap_bytes(&self) -> usize {
        let rows = match &self.rows {
            Rows::Held(rows) => rows.capacity() * size_of::<DocRow>(),
            Rows::InFile { .. } => 0,
        };
        rows
            + self.lengths.capacity() * 4
            + self.codes.capacity()
            + self.times.capacity() * 8
            + self.marks.capacity()
            + self.keys.capacity() * size_of::<String>()
            + self.string_bytes
    }

    /// The row of the document at `ordinal` (below [`DocTable::len`]).
    #[inline]
    pub(crate) fn row(&self, ordinal: u32) -> DocRow {
        match &self.rows {
            Rows::Held(rows) => rows[ordinal as usize],
            Rows::InFile { file, at, .. } => {
                let at = at + ordinal as usize * ROW_SIZE_BYTES;
                read_row(&file.bytes()[at..at + ROW_SIZE_BYTES])
            }
        }
    }

    /// The filter fields, time and id of the document at `ordinal` from memory, without its
    /// row: for a table read from a segment whose ids are consecutive, of a document whose
    /// kind fits its mark (else `None`: read the row). A row read from the file was a cache
    /// miss, and often a miss of the page tables too, for each document a search offered: a
    /// tenth of a search of four Chinese characters with emptied caches.
    #[inline]
    pub(crate) fn figures(&self, ordinal: u32) -> Option<Figures> {
        let first = self.first_of_consecutive?;
        let i = ordinal as usize;
        let mark = *self.marks.get(i)?;
        if mark == MARK_UNKNOWN {
            return None;
        }
        Some(Figures {
            doc: first + ordinal,
            scope: if mark & MARK_ENTRY != 0 { Scope::Entry } else { Scope::Event },
            kind: mark & MARK_KIND,
            tool: mark & MARK_TOOL != 0,
            time_unix_ms: self.times[i],
        })
    }

    /// Reads the in-memory figures of `ordinals` (the rows of those that have none) together:
    /// independent loads, so the processor waits for their cache misses at once rather than
    /// one by one as the documents are offered. Returns a value made of what was read, for
    /// the caller to pass to [`std::hint::black_box`].
    pub(crate) fn touch(&self, ordinals: impl Iterator<Item = u32>) -> i64 {
        let mut x = 0i64;
        for o in ordinals {
            x ^= match self.figures(o) {
                Some(f) => f.time_unix_ms ^ i64::from(f.kind),
                None => self.row(o).time_unix_ms,
            };
        }
        x
    }

    /// The id of its last document, if it has any.
    pub(crate) fn last_doc(&self) -> Option<DocId> {
        self.len().checked_sub(1).map(|o| self.row(o).doc)
    }

    pub(crate) fn lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// Each document's length code, by ordinal ([`bm25::length_code`]).
    pub(crate) fn codes(&self) -> &[u8] {
        &self.codes
    }

    /// Each document's time, by ordinal.
    pub(crate) fn times(&self) -> &[i64] {
        &self.times
    }

    /// Sum of document lengths.
    pub(crate) fn token_count(&self) -> u64 {
        self.token_count
    }

    pub(crate) fn string(&self, id: u32) -> Option<&str> {
        self.strings.get(id as usize).map(String::as_str)
    }

    /// The id of `s` in this segment, if any document carries it.
    pub(crate) fn string_id(&self, s: &str) -> Option<u32> {
        self.string_ids.get(s).copied()
    }

    fn intern(&mut self, s: Option<&str>) -> u32 {
        let Some(s) = s else { return NO_STRING };
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        // Twice: the list and the map; with the map's entry.
        self.string_bytes += 2 * s.len() + 3 * size_of::<String>() + 4;
        id
    }

    /// Checks metadata a caller passes in.
    pub(crate) fn check_meta(meta: &DocMeta) -> Result<(), String> {
        Self::check_strings(&meta.key, meta.source.as_deref(), meta.project.as_deref())
    }

    /// Checks a document's key, source and project against the index's limit on them.
    pub(crate) fn check_strings(key: &str, source: Option<&str>, project: Option<&str>) -> Result<(), String> {
        for (name, s) in [("source", source), ("project", project), ("key", Some(key))] {
            if let Some(s) = s
                && s.len() > META_STRING_SIZE_BYTES_MAX
            {
                return Err(format!("{name} is {} bytes; the most is {META_STRING_SIZE_BYTES_MAX}", s.len()));
            }
        }
        Ok(())
    }

    /// Appends a document; returns its ordinal.
    pub(crate) fn push(&mut self, doc: DocId, meta: &DocMeta, length: u32) -> u32 {
        assert!(self.len() < SEGMENT_DOCS_MAX, "segment document limit");
        let source = self.intern(meta.source.as_deref());
        let project = self.intern(meta.project.as_deref());
        let row = DocRow {
            doc,
            scope: meta.scope,
            kind: meta.kind,
            tool: meta.tool,
            time_unix_ms: meta.time_unix_ms,
            source,
            project,
            record: meta.record,
            position: meta.position,
        };
        self.keys.push(meta.key.clone());
        self.string_bytes += meta.key.len();
        self.push_row(row, length)
    }

    /// Appends another table's row with its key, re-interning its strings; returns its ordinal.
    pub(crate) fn push_from(&mut self, other: &DocTable, ordinal: u32, key: &str) -> u32 {
        let mut row = other.row(ordinal);
        row.source = self.intern(other.string(row.source));
        row.project = self.intern(other.string(row.project));
        self.keys.push(key.to_owned());
        self.string_bytes += key.len();
        self.push_row(row, other.lengths[ordinal as usize])
    }

    /// The key of a document of a table being built.
    pub(crate) fn key(&self, ordinal: u32) -> Option<&str> {
        self.keys.get(ordinal as usize).map(String::as_str)
    }

    fn push_row(&mut self, row: DocRow, length: u32) -> u32 {
        let ordinal = self.len();
        match &mut self.rows {
            Rows::Held(rows) => rows.push(row),
            // Tables read from a file are never added to.
            Rows::InFile { .. } => unreachable!("a row pushed to a table read from its segment"),
        }
        self.push_figures(row.time_unix_ms, length);
        ordinal
    }

    /// Adds what the table holds in memory of each document, held rows or not: its time,
    /// length and length code, and its length to the token count.
    fn push_figures(&mut self, time_unix_ms: i64, length: u32) {
        self.times.push(time_unix_ms);
        self.lengths.push(length);
        self.codes.push(bm25::length_code(length));
        self.token_count += u64::from(length);
    }

    /// The metadata of a document, as it was added.
    #[cfg(test)]
    pub(crate) fn meta(&self, ordinal: u32) -> DocMeta {
        let row = self.row(ordinal);
        DocMeta {
            scope: row.scope,
            kind: row.kind,
            tool: row.tool,
            time_unix_ms: row.time_unix_ms,
            source: self.string(row.source).map(str::to_string),
            project: self.string(row.project).map(str::to_string),
            key: self.key(ordinal).unwrap_or_default().to_string(),
            record: row.record,
            position: row.position,
        }
    }

    /// The keys section (FORMAT.md): `len + 1` offsets (u64) into the key bytes, then the
    /// bytes. Only for a table being built, which holds every key.
    pub(crate) fn encode_keys(&self, out: &mut Vec<u8>) {
        assert_eq!(self.keys.len(), self.len() as usize, "a key per document");
        let mut at = 0u64;
        out.extend_from_slice(&at.to_le_bytes());
        for k in &self.keys {
            at += k.len() as u64;
            out.extend_from_slice(&at.to_le_bytes());
        }
        for k in &self.keys {
            out.extend_from_slice(k.as_bytes());
        }
    }

    /// The rows section (FORMAT.md: 40 bytes per document).
    pub(crate) fn encode_rows(&self, out: &mut Vec<u8>) {
        for (ordinal, &length) in (0..self.len()).zip(&self.lengths) {
            let row = self.row(ordinal);
            out.extend_from_slice(&row.doc.to_le_bytes());
            out.push(row.scope as u8);
            out.push(row.kind);
            out.push(if row.tool { FLAG_TOOL } else { 0 });
            out.push(0);
            out.extend_from_slice(&row.time_unix_ms.to_le_bytes());
            out.extend_from_slice(&row.source.to_le_bytes());
            out.extend_from_slice(&row.project.to_le_bytes());
            out.extend_from_slice(&length.to_le_bytes());
            out.extend_from_slice(&row.record.to_le_bytes());
            out.extend_from_slice(&row.position.to_le_bytes());
        }
    }

    /// The strings section (FORMAT.md: a count, then length-prefixed UTF-8).
    pub(crate) fn encode_strings(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.strings.len() as u32).to_le_bytes());
        for s in &self.strings {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }

    /// Decodes the two sections; an error is `(byte within the sections, reason)`, the
    /// strings section counted after the rows.
    /// The table of a segment whose rows are `file`'s bytes `rows` (read from there when
    /// asked, not copied) and whose strings section is `strings`, every byte checked: the
    /// rows' fields, and their ids rising. An error gives the offset within the rows and
    /// strings sections together, and why.
    pub(crate) fn decode(file: Arc<Backing>, rows: std::ops::Range<usize>, strings: &[u8]) -> Result<DocTable, (usize, String)> {
        let mut t = DocTable::default();
        let bytes = file.bytes().get(rows.clone()).ok_or((0, "document rows run past the file".to_string()))?;
        if !bytes.len().is_multiple_of(ROW_SIZE_BYTES) {
            return Err((0, "document rows are not a whole number of rows".into()));
        }
        // Strings first: rows refer to them.
        let base = bytes.len();
        let u32_at = |b: &[u8], at: usize| -> Option<u32> {
            b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        };
        let count = u32_at(strings, 0).ok_or((base, "strings section too short".to_string()))?;
        let row_count = bytes.len() / ROW_SIZE_BYTES;
        if u64::from(count) > 2 * row_count as u64 {
            return Err((base, format!("{count} strings for {row_count} documents")));
        }
        let mut at = 4;
        for _ in 0..count {
            let len = u32_at(strings, at).ok_or((base + at, "string length cut off".to_string()))? as usize;
            if len > META_STRING_SIZE_BYTES_MAX {
                return Err((base + at, format!("string of {len} bytes")));
            }
            let bytes = strings.get(at + 4..at + 4 + len).ok_or((base + at, "string cut off".to_string()))?;
            let s = std::str::from_utf8(bytes).map_err(|_| (base + at, "string is not UTF-8".to_string()))?;
            if t.string_ids.insert(s.to_string(), t.strings.len() as u32).is_some() {
                return Err((base + at, "string stored twice".to_string()));
            }
            t.strings.push(s.to_string());
            at += 4 + len;
        }
        if at != strings.len() {
            return Err((base + at, "bytes after the last string".into()));
        }
        t.lengths.reserve_exact(row_count);
        t.codes.reserve_exact(row_count);
        t.times.reserve_exact(row_count);
        t.marks.reserve_exact(row_count);
        let mut prev: Option<DocId> = None;
        let mut first: Option<DocId> = None;
        let mut consecutive = true;
        for (i, r) in bytes.chunks_exact(ROW_SIZE_BYTES).enumerate() {
            let at = i * ROW_SIZE_BYTES;
            let length = check_row(r, count).map_err(|(o, reason)| (at + o, reason.to_string()))?;
            let row = read_row(r);
            if prev.is_some_and(|p| row.doc <= p) {
                return Err((at, format!("document ids do not rise at {}", row.doc)));
            }
            consecutive &= prev.is_none_or(|p| row.doc == p + 1);
            first.get_or_insert(row.doc);
            prev = Some(row.doc);
            t.push_figures(row.time_unix_ms, length);
            t.marks.push(if row.kind > MARK_KIND {
                MARK_UNKNOWN
            } else {
                row.kind | if row.tool { MARK_TOOL } else { 0 } | if row.scope == Scope::Entry { MARK_ENTRY } else { 0 }
            });
        }
        t.first_of_consecutive = first.filter(|_| consecutive);
        t.rows = Rows::InFile { file, at: rows.start, count: row_count };
        Ok(t)
    }
}

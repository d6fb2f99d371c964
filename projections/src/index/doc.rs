//! A segment's document table: per document (by segment ordinal) its id, metadata, record
//! locator and length in tokens; `source` and `project` strings are interned per segment.
//! Keys are held here for documents being added (the in-memory segment); an on-disk segment
//! reads them from its file when asked.

use std::collections::HashMap;

use super::bm25;
use super::limits::{META_STRING_SIZE_BYTES_MAX, SEGMENT_DOCS_MAX};
use super::{DocId, DocMeta, Scope};

/// `source` or `project` absent.
pub(crate) const NO_STRING: u32 = u32::MAX;
/// Bytes of one encoded row.
pub(crate) const ROW_SIZE_BYTES: usize = 40;
/// Row flag bit: a tool call or tool result.
const FLAG_TOOL: u8 = 1;

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

/// The documents of one segment, in ordinal order.
#[derive(Clone, Debug, Default)]
pub(crate) struct DocTable {
    rows: Vec<DocRow>,
    /// Length of each document in positions (BM25's document length).
    lengths: Vec<u32>,
    /// Each length's one-byte code ([`bm25::length_code`]), what scores are computed from.
    codes: Vec<u8>,
    /// Each document's time (what block bounds of recency are made of).
    times: Vec<i64>,
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
        self.rows.len() as u32
    }

    /// About the bytes of memory the table takes (its vectors' room and its strings).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<DocRow>()
            + self.lengths.capacity() * 4
            + self.codes.capacity()
            + self.times.capacity() * 8
            + self.keys.capacity() * size_of::<String>()
            + self.string_bytes
    }

    pub(crate) fn row(&self, ordinal: u32) -> &DocRow {
        &self.rows[ordinal as usize]
    }

    pub(crate) fn rows(&self) -> &[DocRow] {
        &self.rows
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
        for (name, s) in [("source", &meta.source), ("project", &meta.project), ("key", &Some(meta.key.clone()))] {
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
        let mut row = *other.row(ordinal);
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
        self.times.push(row.time_unix_ms);
        self.rows.push(row);
        self.lengths.push(length);
        self.codes.push(bm25::length_code(length));
        self.token_count += u64::from(length);
        ordinal
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
        assert_eq!(self.keys.len(), self.rows.len(), "a key per document");
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
        for (row, &length) in self.rows.iter().zip(&self.lengths) {
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
    pub(crate) fn decode(rows: &[u8], strings: &[u8]) -> Result<DocTable, (usize, String)> {
        let mut t = DocTable::default();
        if !rows.len().is_multiple_of(ROW_SIZE_BYTES) {
            return Err((0, "document rows are not a whole number of rows".into()));
        }
        // Strings first: rows refer to them.
        let base = rows.len();
        let u32_at = |b: &[u8], at: usize| -> Option<u32> {
            b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        };
        let count = u32_at(strings, 0).ok_or((base, "strings section too short".to_string()))?;
        let row_count = rows.len() / ROW_SIZE_BYTES;
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
        for (i, r) in rows.chunks_exact(ROW_SIZE_BYTES).enumerate() {
            let at = i * ROW_SIZE_BYTES;
            let u32_le = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
            let scope = match r[4] {
                1 => Scope::Entry,
                2 => Scope::Event,
                _ => return Err((at + 4, "unknown scope".into())),
            };
            if r[6] & !FLAG_TOOL != 0 || r[7] != 0 {
                return Err((at + 6, "unknown flags".into()));
            }
            let mut time = [0u8; 8];
            time.copy_from_slice(&r[8..16]);
            let (source, project) = (u32_le(16), u32_le(20));
            for s in [source, project] {
                if s != NO_STRING && s >= count {
                    return Err((at + 16, "string index out of range".into()));
                }
            }
            let length = u32_le(24);
            if length > super::limits::DOC_TOKENS_MAX {
                return Err((at + 24, "document length out of range".into()));
            }
            let mut record = [0u8; 8];
            record.copy_from_slice(&r[28..36]);
            let row = DocRow {
                doc: u32_le(0),
                scope,
                kind: r[5],
                tool: r[6] & FLAG_TOOL != 0,
                time_unix_ms: i64::from_le_bytes(time),
                source,
                project,
                record: u64::from_le_bytes(record),
                position: u32_le(36),
            };
            t.push_row(row, length);
        }
        Ok(t)
    }
}

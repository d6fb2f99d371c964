//! Postings of one term in one segment: documents (segment ordinals), term frequencies and
//! positions; and their encoding as a term block (FORMAT.md, "Index segment").

use super::limits::{DOC_TOKENS_MAX, SEGMENT_DOCS_MAX};

/// Flag bit of a term block: positions follow the documents.
const FLAG_POSITIONS: u8 = 1;

/// Decoded postings of one term.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Postings {
    /// Segment ordinals of the documents holding the term, strictly ascending.
    pub ordinals: Vec<u32>,
    /// Occurrences per document (≥ 1), parallel to `ordinals`.
    pub tfs: Vec<u32>,
    /// All positions, document after document, each document's ascending; empty for terms
    /// stored without positions, or when positions were not asked for.
    pub positions: Vec<u32>,
    /// `positions[offsets[i]..offsets[i + 1]]` are document `i`'s; empty without positions.
    pub offsets: Vec<usize>,
}

impl Postings {
    /// Empty postings; `positions` says whether positions will be kept.
    pub(crate) fn new(positions: bool) -> Postings {
        Postings { offsets: if positions { vec![0] } else { Vec::new() }, ..Postings::default() }
    }

    /// True if positions are kept.
    pub(crate) fn has_positions(&self) -> bool {
        !self.offsets.is_empty()
    }

    /// Appends a document (its ordinal above every earlier one).
    pub(crate) fn push(&mut self, ordinal: u32, tf: u32, positions: &[u32]) {
        assert!(self.ordinals.last().is_none_or(|&last| last < ordinal), "ordinals ascend");
        assert!(tf >= 1);
        self.ordinals.push(ordinal);
        self.tfs.push(tf);
        if self.has_positions() {
            assert_eq!(positions.len(), tf as usize, "one position per occurrence");
            self.positions.extend_from_slice(positions);
            self.offsets.push(self.positions.len());
        }
    }

    /// Index of `ordinal` in these postings.
    pub(crate) fn find(&self, ordinal: u32) -> Option<usize> {
        self.ordinals.binary_search(&ordinal).ok()
    }

    /// Positions of the `i`th document (empty without positions).
    pub(crate) fn positions_of(&self, i: usize) -> &[u32] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.positions[a..b],
            _ => &[],
        }
    }

    /// Number of documents.
    pub(crate) fn len(&self) -> usize {
        self.ordinals.len()
    }
}

/// Appends `v` as LEB128.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A reader of LEB128 values over a byte slice; every read is bounds-checked.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Why a term block could not be decoded (the caller adds file and position).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BlockError {
    /// Byte within the block.
    pub at: usize,
    /// What was wrong.
    pub reason: &'static str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    pub(crate) fn at(&self) -> usize {
        self.at
    }

    fn err(&self, reason: &'static str) -> BlockError {
        BlockError { at: self.at, reason }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, BlockError> {
        let b = *self.bytes.get(self.at).ok_or(self.err("block ends early"))?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, BlockError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(self.err("varint overflows 64 bits"));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    fn varint_u32(&mut self, max: u32, reason: &'static str) -> Result<u32, BlockError> {
        let v = self.varint()?;
        if v > u64::from(max) {
            return Err(self.err(reason));
        }
        Ok(v as u32)
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], BlockError> {
        let rest = self.bytes.len() - self.at;
        if len > rest as u64 {
            return Err(self.err("length runs past the postings"));
        }
        let s = &self.bytes[self.at..self.at + len as usize];
        self.at += len as usize;
        Ok(s)
    }
}

/// Appends the term block of `p` (FORMAT.md: flags, document count, documents, positions).
pub(crate) fn encode_block(out: &mut Vec<u8>, p: &Postings) {
    assert!(!p.ordinals.is_empty(), "a term block has documents");
    let mut docs = Vec::with_capacity(p.len() * 3);
    let mut prev: Option<u32> = None;
    for (&ord, &tf) in p.ordinals.iter().zip(&p.tfs) {
        let delta = match prev {
            None => ord,
            Some(prev) => {
                assert!(ord > prev);
                ord - prev
            }
        };
        put_varint(&mut docs, u64::from(delta));
        put_varint(&mut docs, u64::from(tf));
        prev = Some(ord);
    }
    out.push(if p.has_positions() { FLAG_POSITIONS } else { 0 });
    put_varint(out, p.len() as u64);
    put_varint(out, docs.len() as u64);
    out.extend_from_slice(&docs);
    if p.has_positions() {
        let mut pos = Vec::with_capacity(p.positions.len() * 2);
        for i in 0..p.len() {
            let mut prev: Option<u32> = None;
            for &x in p.positions_of(i) {
                let delta = match prev {
                    None => x,
                    Some(prev) => {
                        assert!(x > prev);
                        x - prev
                    }
                };
                put_varint(&mut pos, u64::from(delta));
                prev = Some(x);
            }
        }
        put_varint(out, pos.len() as u64);
        out.extend_from_slice(&pos);
    }
}

/// Reads the document count of the term block at the start of `bytes`.
pub(crate) fn block_doc_count(bytes: &[u8], doc_count: u32) -> Result<u32, BlockError> {
    let mut c = Cursor::new(bytes);
    let flags = c.u8()?;
    if flags & !FLAG_POSITIONS != 0 {
        return Err(c.err("unknown flags"));
    }
    let n = c.varint_u32(doc_count, "more documents than the segment holds")?;
    if n == 0 {
        return Err(c.err("a term without documents"));
    }
    Ok(n)
}

/// Decodes the term block at the start of `bytes`, checking every value against the
/// segment: `doc_count` documents whose lengths (in tokens) are `lengths`. Positions are
/// decoded only if `positions` is true and the block has them.
pub(crate) fn decode_block(bytes: &[u8], lengths: &[u32], positions: bool) -> Result<Postings, BlockError> {
    let doc_count = lengths.len().min(SEGMENT_DOCS_MAX as usize) as u32;
    let mut c = Cursor::new(bytes);
    let flags = c.u8()?;
    if flags & !FLAG_POSITIONS != 0 {
        return Err(c.err("unknown flags"));
    }
    let n = c.varint_u32(doc_count, "more documents than the segment holds")?;
    if n == 0 {
        return Err(c.err("a term without documents"));
    }
    let docs_len = c.varint()?;
    let docs = c.take(docs_len)?;
    let docs_base = c.at() - docs.len();
    let mut d = Cursor::new(docs);
    let mut p = Postings::new(positions && flags & FLAG_POSITIONS != 0);
    p.ordinals.reserve(n as usize);
    p.tfs.reserve(n as usize);
    let mut prev: Option<u32> = None;
    let at = |d: &Cursor<'_>, reason| BlockError { at: docs_base + d.at(), reason };
    for _ in 0..n {
        let delta = d.varint_u32(doc_count, "ordinal out of range").map_err(|e| at(&d, e.reason))?;
        let ord = match prev {
            None => delta,
            Some(prev) if delta > 0 => prev.checked_add(delta).ok_or(at(&d, "ordinal overflows"))?,
            Some(_) => return Err(at(&d, "ordinals do not ascend")),
        };
        if ord >= doc_count {
            return Err(at(&d, "ordinal out of range"));
        }
        let tf = d.varint_u32(DOC_TOKENS_MAX, "term frequency out of range").map_err(|e| at(&d, e.reason))?;
        if tf == 0 || tf > lengths[ord as usize] {
            return Err(at(&d, "term frequency out of range"));
        }
        p.ordinals.push(ord);
        p.tfs.push(tf);
        prev = Some(ord);
    }
    if d.at() != docs.len() {
        return Err(at(&d, "documents end before their stated length"));
    }
    if flags & FLAG_POSITIONS != 0 {
        let pos_len = c.varint()?;
        let pos = c.take(pos_len)?;
        if positions {
            let base = c.at() - pos.len();
            let mut r = Cursor::new(pos);
            let at = |r: &Cursor<'_>, reason| BlockError { at: base + r.at(), reason };
            let total: u64 = p.tfs.iter().map(|&t| u64::from(t)).sum();
            if total > pos.len() as u64 {
                return Err(at(&r, "more positions than bytes"));
            }
            p.positions.reserve(total as usize);
            for i in 0..p.ordinals.len() {
                let length = lengths[p.ordinals[i] as usize];
                let mut prev: Option<u32> = None;
                for _ in 0..p.tfs[i] {
                    let delta = r.varint_u32(DOC_TOKENS_MAX, "position out of range").map_err(|e| at(&r, e.reason))?;
                    let x = match prev {
                        None => delta,
                        Some(prev) if delta > 0 => prev.checked_add(delta).ok_or(at(&r, "position overflows"))?,
                        Some(_) => return Err(at(&r, "positions do not ascend")),
                    };
                    if x >= length {
                        return Err(at(&r, "position past the document's end"));
                    }
                    p.positions.push(x);
                    prev = Some(x);
                }
                p.offsets.push(p.positions.len());
            }
            if r.at() != pos.len() {
                return Err(at(&r, "positions end before their stated length"));
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn index_postings_block_round_trip() {
        let mut p = Postings::new(true);
        p.push(0, 2, &[1, 5]);
        p.push(7, 1, &[0]);
        p.push(300, 3, &[2, 200, 70_000]);
        let mut lengths = vec![10u32; 301];
        lengths[300] = 70_001;
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p);
        assert_eq!(decode_block(&bytes, &lengths, true), Ok(p.clone()));
        let docs_only = decode_block(&bytes, &lengths, false).unwrap();
        assert_eq!(docs_only.ordinals, p.ordinals);
        assert!(docs_only.positions.is_empty());
        assert_eq!(block_doc_count(&bytes, 301), Ok(3));
        // A segment with fewer documents refuses the block.
        assert!(decode_block(&bytes, &lengths[..300], true).is_err());
    }

    proptest! {
        #[test]
        fn index_postings_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..50) {
            let lengths = vec![20u32; n];
            let _ = decode_block(&bytes, &lengths, true);
            let _ = block_doc_count(&bytes, n as u32);
        }
    }
}

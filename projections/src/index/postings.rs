//! Postings of one term in one segment: documents (segment ordinals), term frequencies and
//! positions; their encoding as a term block (FORMAT.md, "Index segment"); and a cursor that
//! walks them block by block, skipping what a query does not need.
//!
//! A term block splits its documents into blocks of [`BLOCK_DOCS`]. A directory at the
//! start gives, per block, its last ordinal, where its documents and positions start, and the
//! largest term frequency and smallest document length in it: enough to skip a block without
//! decoding it, either because it ends before the document sought or because no document in
//! it can score high enough (BM25 grows with the frequency and shrinks with the length, so
//! the pair bounds every document of the block).

use super::limits::{DOC_TOKENS_MAX, SEGMENT_DOCS_MAX};

/// Flag bit of a term block: positions follow the documents.
const FLAG_POSITIONS: u8 = 1;
/// Documents per block of a term block.
pub(crate) const BLOCK_DOCS: usize = 128;
/// The ordinal of a cursor past its last document.
pub(crate) const END: u32 = u32::MAX;

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
pub(crate) struct Bytes<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Why a term block could not be decoded (the caller adds file and position).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BlockError {
    /// Byte within the term block.
    pub at: usize,
    /// What was wrong.
    pub reason: &'static str,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Bytes<'a> {
        Bytes { bytes, at: 0 }
    }

    fn err(&self, reason: &'static str) -> BlockError {
        BlockError { at: self.at, reason }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, BlockError> {
        let b = *self.bytes.get(self.at).ok_or(self.err("block ends early"))?;
        self.at += 1;
        Ok(b)
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, BlockError> {
        // The common case: one byte.
        if let Some(&b) = self.bytes.get(self.at)
            && b < 0x80
        {
            self.at += 1;
            return Ok(u64::from(b));
        }
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

    #[inline]
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

/// Appends the term block of `p` (FORMAT.md): flags, document count, block count, the block
/// directory, the documents, the positions. `lengths` are the segment's document lengths.
pub(crate) fn encode_block(out: &mut Vec<u8>, p: &Postings, lengths: &[u32]) {
    assert!(!p.ordinals.is_empty(), "a term block has documents");
    let positions = p.has_positions();
    let mut dir = Vec::with_capacity(p.len() / BLOCK_DOCS * 8 + 8);
    let mut docs = Vec::with_capacity(p.len() * 3);
    let mut pos = Vec::with_capacity(if positions { p.positions.len() * 2 } else { 0 });
    let mut prev: Option<u32> = None;
    let block_count = p.len().div_ceil(BLOCK_DOCS);
    for b in 0..block_count {
        let range = b * BLOCK_DOCS..((b + 1) * BLOCK_DOCS).min(p.len());
        let (docs_start, pos_start) = (docs.len(), pos.len());
        let (mut max_tf, mut min_len) = (0u32, u32::MAX);
        for i in range.clone() {
            let (ord, tf) = (p.ordinals[i], p.tfs[i]);
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
            max_tf = max_tf.max(tf);
            min_len = min_len.min(lengths[ord as usize]);
            if positions {
                let mut last: Option<u32> = None;
                for &x in p.positions_of(i) {
                    let d = match last {
                        None => x,
                        Some(last) => {
                            assert!(x > last);
                            x - last
                        }
                    };
                    put_varint(&mut pos, u64::from(d));
                    last = Some(x);
                }
            }
        }
        put_varint(&mut dir, u64::from(p.ordinals[range.end - 1]));
        put_varint(&mut dir, (docs.len() - docs_start) as u64);
        if positions {
            put_varint(&mut dir, (pos.len() - pos_start) as u64);
        }
        put_varint(&mut dir, u64::from(max_tf));
        put_varint(&mut dir, u64::from(min_len));
    }
    out.push(if positions { FLAG_POSITIONS } else { 0 });
    put_varint(out, p.len() as u64);
    put_varint(out, block_count as u64);
    put_varint(out, dir.len() as u64);
    out.extend_from_slice(&dir);
    put_varint(out, docs.len() as u64);
    out.extend_from_slice(&docs);
    if positions {
        put_varint(out, pos.len() as u64);
        out.extend_from_slice(&pos);
    }
}

/// Reads the document count of the term block at the start of `bytes`.
pub(crate) fn block_doc_count(bytes: &[u8], doc_count: u32) -> Result<u32, BlockError> {
    let mut c = Bytes::new(bytes);
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

/// One block of a term block, as its directory entry says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockInfo {
    /// Ordinal of its last document.
    pub last: u32,
    /// Where its documents start, within the documents section.
    docs_at: u32,
    /// Where its positions start, within the positions section.
    pos_at: u32,
    /// Largest term frequency of its documents.
    pub max_tf: u32,
    /// Smallest length of its documents.
    pub min_len: u32,
    /// Documents in it.
    count: u32,
}

/// A term block opened for reading: its directory parsed, nothing else decoded.
#[derive(Clone, Debug)]
pub(crate) struct TermBlock<'a> {
    /// Number of documents.
    pub doc_count: u32,
    pub blocks: Vec<BlockInfo>,
    docs: &'a [u8],
    /// Empty when the term has no positions.
    positions: &'a [u8],
    has_positions: bool,
    /// Byte of the documents section within the term block (for error positions).
    docs_base: usize,
    pos_base: usize,
}

impl<'a> TermBlock<'a> {
    /// Parses the head and directory of the term block at the start of `bytes`, checking them
    /// against a segment of `doc_count` documents (every later read is bounds-checked too).
    pub(crate) fn open(bytes: &'a [u8], doc_count: u32) -> Result<TermBlock<'a>, BlockError> {
        let doc_count = doc_count.min(SEGMENT_DOCS_MAX);
        let mut c = Bytes::new(bytes);
        let flags = c.u8()?;
        if flags & !FLAG_POSITIONS != 0 {
            return Err(c.err("unknown flags"));
        }
        let has_positions = flags & FLAG_POSITIONS != 0;
        let n = c.varint_u32(doc_count, "more documents than the segment holds")?;
        if n == 0 {
            return Err(c.err("a term without documents"));
        }
        let k = c.varint()?;
        if k != (n as usize).div_ceil(BLOCK_DOCS) as u64 {
            return Err(c.err("block count does not match the document count"));
        }
        let dir_len = c.varint()?;
        let dir = c.take(dir_len)?;
        let dir_base = c.at - dir.len();
        let docs_len = c.varint()?;
        let docs = c.take(docs_len)?;
        let docs_base = c.at - docs.len();
        let (positions, pos_base) = if has_positions {
            let l = c.varint()?;
            let p = c.take(l)?;
            (p, c.at - p.len())
        } else {
            (&[][..], c.at)
        };
        let mut d = Bytes::new(dir);
        let mut blocks = Vec::with_capacity(k as usize);
        let (mut docs_at, mut pos_at) = (0u64, 0u64);
        let mut prev_last: Option<u32> = None;
        let shift = |e: BlockError| BlockError { at: dir_base + e.at, reason: e.reason };
        for b in 0..k as usize {
            let last = d.varint_u32(doc_count.saturating_sub(1), "ordinal out of range").map_err(shift)?;
            if prev_last.is_some_and(|p| last <= p) {
                return Err(shift(d.err("blocks do not ascend")));
            }
            let docs_size = d.varint().map_err(shift)?;
            let pos_size = if has_positions { d.varint().map_err(shift)? } else { 0 };
            let max_tf = d.varint_u32(DOC_TOKENS_MAX, "term frequency out of range").map_err(shift)?;
            let min_len = d.varint_u32(DOC_TOKENS_MAX, "document length out of range").map_err(shift)?;
            let count = if b + 1 == k as usize { n - (b * BLOCK_DOCS) as u32 } else { BLOCK_DOCS as u32 };
            if max_tf == 0 || docs_at + docs_size > docs.len() as u64 || pos_at + pos_size > positions.len() as u64 {
                return Err(shift(d.err("block runs past its section")));
            }
            blocks.push(BlockInfo { last, docs_at: docs_at as u32, pos_at: pos_at as u32, max_tf, min_len, count });
            docs_at += docs_size;
            pos_at += pos_size;
            prev_last = Some(last);
        }
        if d.at != dir.len() || docs_at != docs.len() as u64 || pos_at != positions.len() as u64 {
            return Err(BlockError { at: dir_base + d.at, reason: "directory does not cover its sections" });
        }
        Ok(TermBlock { doc_count: n, blocks, docs, positions, has_positions, docs_base, pos_base })
    }

    /// Decodes block `b`'s ordinals and frequencies into `ords` and `tfs` (cleared first),
    /// checking them against the segment's document `lengths`.
    fn decode(&self, b: usize, lengths: &[u32], ords: &mut Vec<u32>, tfs: &mut Vec<u32>) -> Result<(), BlockError> {
        let info = &self.blocks[b];
        let start = info.docs_at as usize;
        let end = self.blocks.get(b + 1).map_or(self.docs.len(), |n| n.docs_at as usize);
        let mut c = Bytes::new(&self.docs[start..end]);
        let shift = |e: BlockError| BlockError { at: self.docs_base + start + e.at, reason: e.reason };
        ords.clear();
        tfs.clear();
        let mut prev = if b == 0 { None } else { Some(self.blocks[b - 1].last) };
        let doc_count = lengths.len().min(SEGMENT_DOCS_MAX as usize) as u32;
        for _ in 0..info.count {
            let delta = c.varint_u32(doc_count, "ordinal out of range").map_err(shift)?;
            let ord = match prev {
                None => delta,
                Some(p) if delta > 0 => p.checked_add(delta).ok_or(shift(c.err("ordinal overflows")))?,
                Some(_) => return Err(shift(c.err("ordinals do not ascend"))),
            };
            if ord >= doc_count {
                return Err(shift(c.err("ordinal out of range")));
            }
            let tf = c.varint_u32(DOC_TOKENS_MAX, "term frequency out of range").map_err(shift)?;
            if tf == 0 || tf > lengths[ord as usize] || tf > info.max_tf || lengths[ord as usize] < info.min_len {
                return Err(shift(c.err("term frequency out of range")));
            }
            ords.push(ord);
            tfs.push(tf);
            prev = Some(ord);
        }
        if c.at != end - start || prev != Some(info.last) {
            return Err(shift(c.err("block does not end where its directory says")));
        }
        Ok(())
    }

    /// Decodes every document (and positions, if asked and stored): for merges and tests.
    pub(crate) fn decode_all(&self, lengths: &[u32], positions: bool) -> Result<Postings, BlockError> {
        let with_positions = positions && self.has_positions;
        let mut p = Postings::new(with_positions);
        let (mut ords, mut tfs) = (Vec::with_capacity(BLOCK_DOCS), Vec::with_capacity(BLOCK_DOCS));
        let mut buf = Vec::new();
        for b in 0..self.blocks.len() {
            self.decode(b, lengths, &mut ords, &mut tfs)?;
            let mut pos = PosReader::new(self, b);
            for (&ord, &tf) in ords.iter().zip(&tfs) {
                if with_positions {
                    pos.read(tf, lengths[ord as usize], &mut buf)?;
                    p.push(ord, tf, &buf);
                } else {
                    p.push(ord, tf, &[]);
                }
            }
            if with_positions {
                pos.finish()?;
            }
        }
        Ok(p)
    }
}

/// Reads the positions of one block's documents in order.
struct PosReader<'a> {
    bytes: Bytes<'a>,
    base: usize,
}

impl<'a> PosReader<'a> {
    fn new(t: &TermBlock<'a>, b: usize) -> PosReader<'a> {
        let start = t.blocks[b].pos_at as usize;
        let end = t.blocks.get(b + 1).map_or(t.positions.len(), |n| n.pos_at as usize);
        PosReader { bytes: Bytes::new(&t.positions[start..end]), base: t.pos_base + start }
    }

    /// Reads the next document's `tf` positions into `out`.
    fn read(&mut self, tf: u32, length: u32, out: &mut Vec<u32>) -> Result<(), BlockError> {
        out.clear();
        let mut prev: Option<u32> = None;
        for _ in 0..tf {
            let delta = self.bytes.varint_u32(DOC_TOKENS_MAX, "position out of range").map_err(|e| self.shift(e))?;
            let x = match prev {
                None => delta,
                Some(p) if delta > 0 => p.checked_add(delta).ok_or(self.shift(self.bytes.err("position overflows")))?,
                Some(_) => return Err(self.shift(self.bytes.err("positions do not ascend"))),
            };
            if x >= length {
                return Err(self.shift(self.bytes.err("position past the document's end")));
            }
            out.push(x);
            prev = Some(x);
        }
        Ok(())
    }

    /// Skips the next document's `tf` positions.
    fn skip(&mut self, tf: u32) -> Result<(), BlockError> {
        for _ in 0..tf {
            self.bytes.varint().map_err(|e| self.shift(e))?;
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), BlockError> {
        if self.bytes.at != self.bytes.bytes.len() {
            return Err(self.shift(self.bytes.err("positions end before their stated length")));
        }
        Ok(())
    }

    fn shift(&self, e: BlockError) -> BlockError {
        BlockError { at: self.base + e.at, reason: e.reason }
    }
}

/// Where a cursor's documents come from.
enum Source<'a> {
    /// A term block of an on-disk segment.
    Disk(TermBlock<'a>),
    /// Postings decoded for this cursor (of the in-memory segment).
    Owned(Box<Postings>),
}

/// Walks one term's postings in ordinal order, a block at a time.
pub(crate) struct PostingCursor<'a> {
    source: Source<'a>,
    lengths: &'a [u32],
    /// Per block (for memory postings: virtual blocks of [`BLOCK_DOCS`]).
    blocks: Vec<BlockInfo>,
    /// The block decoded into `ords`/`tfs`, or `usize::MAX`.
    block: usize,
    ords: Vec<u32>,
    tfs: Vec<u32>,
    /// Index of the current document within the block.
    i: usize,
    doc: u32,
    /// Positions: reader of the current block, index of the next document it reads.
    pos: Option<PosReader<'a>>,
    pos_next: usize,
    pos_buf: Vec<u32>,
    /// The document (index within the block) whose positions `pos_buf` holds.
    pos_cached: Option<usize>,
    want_positions: bool,
}

impl<'a> PostingCursor<'a> {
    /// A cursor over a disk term block, on its first document.
    pub(crate) fn disk(t: TermBlock<'a>, lengths: &'a [u32], positions: bool) -> Result<PostingCursor<'a>, BlockError> {
        let blocks = t.blocks.clone();
        let want_positions = positions && t.has_positions;
        let mut c = PostingCursor::with(Source::Disk(t), lengths, blocks, want_positions);
        c.load(0)?;
        Ok(c)
    }

    /// A cursor over postings it owns, on its first document.
    pub(crate) fn owned(p: Postings, lengths: &'a [u32], positions: bool) -> PostingCursor<'a> {
        let blocks = Self::memory_blocks(&p, lengths);
        let want_positions = positions && p.has_positions();
        let mut c = PostingCursor::with(Source::Owned(Box::new(p)), lengths, blocks, want_positions);
        let _ = c.load(0);
        c
    }

    fn memory_blocks(p: &Postings, lengths: &[u32]) -> Vec<BlockInfo> {
        let mut blocks = Vec::with_capacity(p.len().div_ceil(BLOCK_DOCS));
        for (b, chunk) in p.ordinals.chunks(BLOCK_DOCS).enumerate() {
            let tfs = &p.tfs[b * BLOCK_DOCS..b * BLOCK_DOCS + chunk.len()];
            blocks.push(BlockInfo {
                last: chunk[chunk.len() - 1],
                docs_at: (b * BLOCK_DOCS) as u32,
                pos_at: 0,
                max_tf: tfs.iter().copied().max().unwrap_or(1),
                min_len: chunk.iter().map(|&o| lengths[o as usize]).min().unwrap_or(0),
                count: chunk.len() as u32,
            });
        }
        blocks
    }

    fn with(source: Source<'a>, lengths: &'a [u32], blocks: Vec<BlockInfo>, want_positions: bool) -> PostingCursor<'a> {
        PostingCursor {
            source,
            lengths,
            blocks,
            block: usize::MAX,
            ords: Vec::with_capacity(BLOCK_DOCS),
            tfs: Vec::with_capacity(BLOCK_DOCS),
            i: 0,
            doc: END,
            pos: None,
            pos_next: 0,
            pos_buf: Vec::new(),
            pos_cached: None,
            want_positions,
        }
    }

    /// Decodes block `b` and stands on its first document (or at the end past the last block).
    fn load(&mut self, b: usize) -> Result<(), BlockError> {
        if b >= self.blocks.len() {
            self.block = self.blocks.len();
            self.doc = END;
            return Ok(());
        }
        match &self.source {
            Source::Disk(t) => {
                t.decode(b, self.lengths, &mut self.ords, &mut self.tfs)?;
                self.pos = if self.want_positions { Some(PosReader::new(t, b)) } else { None };
            }
            Source::Owned(p) => {
                let start = b * BLOCK_DOCS;
                let end = (start + BLOCK_DOCS).min(p.len());
                self.ords.clear();
                self.ords.extend_from_slice(&p.ordinals[start..end]);
                self.tfs.clear();
                self.tfs.extend_from_slice(&p.tfs[start..end]);
            }
        }
        self.pos_next = 0;
        self.pos_cached = None;
        self.block = b;
        self.i = 0;
        self.doc = self.ords[0];
        Ok(())
    }

    /// Number of documents holding the term.
    pub(crate) fn len(&self) -> u32 {
        match &self.source {
            Source::Disk(t) => t.doc_count,
            Source::Owned(p) => p.len() as u32,
        }
    }

    /// The current document, or [`END`].
    #[inline]
    pub(crate) fn doc(&self) -> u32 {
        self.doc
    }

    /// The current document's term frequency.
    #[inline]
    pub(crate) fn tf(&self) -> u32 {
        self.tfs[self.i]
    }

    /// Moves to the next document.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<u32, BlockError> {
        if self.doc == END {
            return Ok(END);
        }
        self.i += 1;
        if self.i < self.ords.len() {
            self.doc = self.ords[self.i];
            return Ok(self.doc);
        }
        self.load(self.block + 1)?;
        Ok(self.doc)
    }

    /// Moves to the first document at or after `target` (never backwards).
    pub(crate) fn seek(&mut self, target: u32) -> Result<u32, BlockError> {
        if self.doc >= target {
            return Ok(self.doc);
        }
        if self.blocks[self.block].last < target {
            // Skip whole blocks by their last ordinal, without decoding them.
            let from = self.block + 1;
            let b = from + self.blocks[from..].partition_point(|x| x.last < target);
            self.load(b)?;
            if self.doc >= target {
                return Ok(self.doc);
            }
        }
        let at = self.i + self.ords[self.i..].partition_point(|&o| o < target);
        self.i = at;
        self.doc = self.ords[at];
        Ok(self.doc)
    }

    /// The current block's directory entry (frequency and length bounds, last ordinal); past
    /// the end, an empty block that ends at [`END`].
    #[inline]
    pub(crate) fn block_info(&self) -> BlockInfo {
        self.blocks.get(self.block).copied().unwrap_or(BlockInfo { last: END, docs_at: 0, pos_at: 0, max_tf: 0, min_len: u32::MAX, count: 0 })
    }

    /// Every block's directory entry.
    pub(crate) fn blocks(&self) -> &[BlockInfo] {
        &self.blocks
    }

    /// The current document's positions (empty if the cursor was opened without them).
    pub(crate) fn positions(&mut self) -> Result<&[u32], BlockError> {
        if !self.want_positions || self.doc == END {
            return Ok(&[]);
        }
        match &self.source {
            Source::Owned(p) => {
                let global = self.block * BLOCK_DOCS + self.i;
                Ok(p.positions_of(global))
            }
            Source::Disk(_) => {
                if self.pos_cached == Some(self.i) {
                    return Ok(&self.pos_buf);
                }
                let Some(reader) = self.pos.as_mut() else { return Ok(&[]) };
                while self.pos_next < self.i {
                    reader.skip(self.tfs[self.pos_next])?;
                    self.pos_next += 1;
                }
                let length = self.lengths[self.doc as usize];
                reader.read(self.tfs[self.i], length, &mut self.pos_buf)?;
                self.pos_next = self.i + 1;
                self.pos_cached = Some(self.i);
                Ok(&self.pos_buf)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(n: u32, with_positions: bool) -> (Postings, Vec<u32>) {
        let lengths: Vec<u32> = (0..n * 3 + 10).map(|i| 5 + i % 7).collect();
        let mut p = Postings::new(with_positions);
        for k in 0..n {
            let ord = k * 3 + (k % 2);
            let tf = 1 + k % 4;
            let positions: Vec<u32> = (0..tf).collect();
            p.push(ord, tf, &positions);
        }
        (p, lengths)
    }

    #[test]
    fn index_postings_block_round_trip() {
        for n in [1, 2, 127, 128, 129, 300, 1000] {
            for with_positions in [true, false] {
                let (p, lengths) = sample(n, with_positions);
                let mut bytes = Vec::new();
                encode_block(&mut bytes, &p, &lengths);
                let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
                assert_eq!(t.doc_count, n);
                assert_eq!(t.decode_all(&lengths, true).unwrap(), p, "n={n}");
                let docs_only = t.decode_all(&lengths, false).unwrap();
                assert_eq!(docs_only.ordinals, p.ordinals);
                assert!(docs_only.positions.is_empty());
                assert_eq!(block_doc_count(&bytes, lengths.len() as u32), Ok(n));
                // A segment with fewer documents refuses the block.
                assert!(TermBlock::open(&bytes, p.ordinals[p.len() - 1]).is_err() || n == 0);
            }
        }
    }

    /// The cursor's documents, frequencies and positions, by next, seek and block skips,
    /// agree with the postings for disk and memory alike.
    #[test]
    fn index_postings_cursor_walks_seeks_and_skips() {
        let (p, lengths) = sample(1000, true);
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p, &lengths);
        let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let cursors: Vec<PostingCursor<'_>> =
            vec![PostingCursor::disk(t, &lengths, true).unwrap(), PostingCursor::owned(p.clone(), &lengths, true)];
        for mut c in cursors {
            assert_eq!(c.len(), 1000);
            let mut i = 0;
            while c.doc() != END {
                assert_eq!(c.doc(), p.ordinals[i]);
                assert_eq!(c.tf(), p.tfs[i]);
                if i % 3 == 0 {
                    assert_eq!(c.positions().unwrap(), p.positions_of(i));
                    // Asked twice, the same positions.
                    assert_eq!(c.positions().unwrap(), p.positions_of(i));
                }
                assert!(c.block_info().max_tf >= c.tf());
                assert!(c.block_info().min_len <= lengths[c.doc() as usize]);
                c.next().unwrap();
                i += 1;
            }
            assert_eq!(i, 1000);
        }
        for targets in [vec![0, 5, 400, 401, 2000, 2998, 2999], vec![1500], vec![3000]] {
            let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
            let mut c = PostingCursor::disk(t, &lengths, true).unwrap();
            for target in targets {
                let want = p.ordinals.iter().copied().find(|&o| o >= target).unwrap_or(END);
                assert_eq!(c.seek(target).unwrap(), want, "seek {target}");
                if want != END {
                    let i = p.ordinals.iter().position(|&o| o == want).unwrap();
                    assert_eq!(c.positions().unwrap(), p.positions_of(i));
                }
            }
        }
        let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let mut c = PostingCursor::disk(t, &lengths, false).unwrap();
        let second_block_first = p.ordinals[BLOCK_DOCS];
        assert_eq!(c.seek(p.ordinals[BLOCK_DOCS - 1] + 1).unwrap(), second_block_first);
        assert_eq!(c.block_info().last, p.ordinals[2 * BLOCK_DOCS - 1]);
    }

    proptest! {
        #[test]
        fn index_postings_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..50) {
            let lengths = vec![20u32; n];
            if let Ok(t) = TermBlock::open(&bytes, n as u32) {
                let _ = t.decode_all(&lengths, true);
                if let Ok(mut c) = PostingCursor::disk(t, &lengths, true) {
                    for _ in 0..300 {
                        let _ = c.positions();
                        if c.next().map_or(true, |d| d == END) {
                            break;
                        }
                    }
                }
            }
            let _ = block_doc_count(&bytes, n as u32);
        }
    }
}

//! Postings of one term in one segment: documents (segment ordinals), term frequencies and
//! positions; their encoding as a term block (FORMAT.md, "Index segment"); and a cursor that
//! walks them block by block, skipping what a query does not need.
//!
//! A term block splits its documents into blocks of [`BLOCK_DOCS`]. A directory at the
//! start gives, per block, its last ordinal, where its documents and positions start, and its
//! frontier: the (frequency, length) pairs of its documents that no other document of the
//! block beats on both (higher frequency, shorter document). BM25 grows with the frequency
//! and shrinks with the length, so the best score in the block, under any collection
//! statistics, is that of a frontier point: a search skips a block without decoding it when
//! it ends before the document sought, or when no document in it can score high enough.

use super::limits::{DOC_TOKENS_MAX, SEGMENT_DOCS_MAX};

/// Flag bit of a term block: positions follow the documents.
const FLAG_POSITIONS: u8 = 1;
/// Documents per block of a term block.
pub(crate) const BLOCK_DOCS: usize = 128;
/// The ordinal of a cursor past its last document.
pub(crate) const END: u32 = u32::MAX;
/// Most frontier points kept per block; a longer frontier is narrowed by merging neighbours
/// into one point that beats both (their larger frequency, their shorter length): still a
/// bound, a little looser.
pub(crate) const FRONTIER_POINTS_MAX: usize = 8;

/// The frontier of a block's (frequency, length) pairs (see the module docs), by rising
/// length and rising frequency, at most [`FRONTIER_POINTS_MAX`] points.
pub(crate) fn frontier(pairs: &mut [(u32, u32)]) -> Vec<(u32, u32)> {
    // By length, the higher frequency first; keep a pair if its frequency beats every shorter.
    pairs.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &(tf, len) in pairs.iter() {
        if out.last().is_none_or(|&(best, _)| tf > best) {
            out.push((tf, len));
        }
    }
    while out.len() > FRONTIER_POINTS_MAX {
        // Merge the pair of neighbours whose lengths are closest.
        let i = (0..out.len() - 1).min_by_key(|&i| out[i + 1].1 - out[i].1).unwrap_or(0);
        out[i] = (out[i + 1].0, out[i].1);
        out.remove(i + 1);
    }
    out
}

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
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(range.len());
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
            pairs.push((tf, lengths[ord as usize]));
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
        let points = frontier(&mut pairs);
        put_varint(&mut dir, points.len() as u64);
        let (mut tf0, mut len0) = (0u32, 0u32);
        for (k, &(tf, len)) in points.iter().enumerate() {
            // Both rise along the frontier: deltas (the first point absolute).
            let (dt, dl) = if k == 0 { (tf, len) } else { (tf - tf0, len - len0) };
            put_varint(&mut dir, u64::from(dt));
            put_varint(&mut dir, u64::from(dl));
            (tf0, len0) = (tf, len);
        }
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
    /// Its frontier: `frontier[points.0..points.1]` of the term block (or the cursor).
    points: (u32, u32),
    /// Largest term frequency of its documents (the frontier's last point).
    max_tf: u32,
    /// Smallest length of its documents (the frontier's first point).
    min_len: u32,
    /// Documents in it.
    count: u32,
}

/// A term block opened for reading: its directory parsed, nothing else decoded.
#[derive(Clone, Debug)]
pub(crate) struct TermBlock<'a> {
    /// Number of documents.
    pub doc_count: u32,
    pub blocks: Vec<BlockInfo>,
    /// Every block's frontier points (tf, length), block after block.
    pub frontier: Vec<(u32, u32)>,
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
        let mut frontier = Vec::with_capacity(k as usize * 2);
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
            let point_count = d.varint_u32(FRONTIER_POINTS_MAX as u32, "too many frontier points").map_err(shift)?;
            if point_count == 0 {
                return Err(shift(d.err("a block without a frontier")));
            }
            let first = frontier.len() as u32;
            let (mut tf, mut len) = (0u32, 0u32);
            for p in 0..point_count {
                let dt = d.varint_u32(DOC_TOKENS_MAX, "term frequency out of range").map_err(shift)?;
                let dl = d.varint_u32(DOC_TOKENS_MAX, "document length out of range").map_err(shift)?;
                if p > 0 && (dt == 0 || dl == 0) {
                    return Err(shift(d.err("frontier points do not rise")));
                }
                tf = tf.checked_add(dt).filter(|&t| t <= DOC_TOKENS_MAX).ok_or(shift(d.err("term frequency out of range")))?;
                len = len.checked_add(dl).filter(|&l| l <= DOC_TOKENS_MAX).ok_or(shift(d.err("document length out of range")))?;
                frontier.push((tf, len));
            }
            let (max_tf, min_len) = (tf, frontier[first as usize].1);
            let count = if b + 1 == k as usize { n - (b * BLOCK_DOCS) as u32 } else { BLOCK_DOCS as u32 };
            if max_tf == 0 || docs_at + docs_size > docs.len() as u64 || pos_at + pos_size > positions.len() as u64 {
                return Err(shift(d.err("block runs past its section")));
            }
            blocks.push(BlockInfo {
                last,
                docs_at: docs_at as u32,
                pos_at: pos_at as u32,
                points: (first, first + point_count),
                max_tf,
                min_len,
                count,
            });
            docs_at += docs_size;
            pos_at += pos_size;
            prev_last = Some(last);
        }
        if d.at != dir.len() || docs_at != docs.len() as u64 || pos_at != positions.len() as u64 {
            return Err(BlockError { at: dir_base + d.at, reason: "directory does not cover its sections" });
        }
        Ok(TermBlock { doc_count: n, blocks, frontier, docs, positions, has_positions, docs_base, pos_base })
    }

    /// Decodes block `b`'s ordinals and frequencies into `ords` and `tfs` (cleared first),
    /// checking them against the segment's document `lengths`.
    fn decode(&self, blocks: &[BlockInfo], b: usize, lengths: &[u32], ords: &mut Vec<u32>, tfs: &mut Vec<u32>) -> Result<(), BlockError> {
        let info = &blocks[b];
        let start = info.docs_at as usize;
        let end = blocks.get(b + 1).map_or(self.docs.len(), |n| n.docs_at as usize);
        let mut c = Bytes::new(&self.docs[start..end]);
        let shift = |e: BlockError| BlockError { at: self.docs_base + start + e.at, reason: e.reason };
        ords.clear();
        tfs.clear();
        let mut prev = if b == 0 { None } else { Some(blocks[b - 1].last) };
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
            self.decode(&self.blocks, b, lengths, &mut ords, &mut tfs)?;
            let mut pos = PosReader::new(self, &self.blocks, b);
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
    fn new(t: &TermBlock<'a>, blocks: &[BlockInfo], b: usize) -> PosReader<'a> {
        let start = blocks[b].pos_at as usize;
        let end = blocks.get(b + 1).map_or(t.positions.len(), |n| n.pos_at as usize);
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
    /// The blocks' frontier points.
    frontier: Vec<(u32, u32)>,
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
    pub(crate) fn disk(mut t: TermBlock<'a>, lengths: &'a [u32], positions: bool) -> Result<PostingCursor<'a>, BlockError> {
        let blocks = std::mem::take(&mut t.blocks);
        let frontier = std::mem::take(&mut t.frontier);
        let want_positions = positions && t.has_positions;
        let mut c = PostingCursor::with(Source::Disk(t), lengths, blocks, frontier, want_positions);
        c.load(0)?;
        Ok(c)
    }

    /// A cursor over postings it owns, on its first document.
    pub(crate) fn owned(p: Postings, lengths: &'a [u32], positions: bool) -> PostingCursor<'a> {
        let (blocks, frontier) = Self::memory_blocks(&p, lengths);
        let want_positions = positions && p.has_positions();
        let mut c = PostingCursor::with(Source::Owned(Box::new(p)), lengths, blocks, frontier, want_positions);
        let _ = c.load(0);
        c
    }

    fn memory_blocks(p: &Postings, lengths: &[u32]) -> (Vec<BlockInfo>, Vec<(u32, u32)>) {
        let mut blocks = Vec::with_capacity(p.len().div_ceil(BLOCK_DOCS));
        let mut all = Vec::new();
        let mut pairs = Vec::with_capacity(BLOCK_DOCS);
        for (b, chunk) in p.ordinals.chunks(BLOCK_DOCS).enumerate() {
            let tfs = &p.tfs[b * BLOCK_DOCS..b * BLOCK_DOCS + chunk.len()];
            pairs.clear();
            pairs.extend(tfs.iter().zip(chunk).map(|(&tf, &o)| (tf, lengths[o as usize])));
            let points = frontier(&mut pairs);
            let first = all.len() as u32;
            let (max_tf, min_len) = (points[points.len() - 1].0, points[0].1);
            all.extend_from_slice(&points);
            blocks.push(BlockInfo {
                last: chunk[chunk.len() - 1],
                docs_at: (b * BLOCK_DOCS) as u32,
                pos_at: 0,
                points: (first, all.len() as u32),
                max_tf,
                min_len,
                count: chunk.len() as u32,
            });
        }
        (blocks, all)
    }

    fn with(source: Source<'a>, lengths: &'a [u32], blocks: Vec<BlockInfo>, frontier: Vec<(u32, u32)>, want_positions: bool) -> PostingCursor<'a> {
        PostingCursor {
            source,
            lengths,
            blocks,
            frontier,
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
                t.decode(&self.blocks, b, self.lengths, &mut self.ords, &mut self.tfs)?;
                self.pos = if self.want_positions { Some(PosReader::new(t, &self.blocks, b)) } else { None };
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

    /// The current block's number (the number of blocks once past the end).
    #[inline]
    pub(crate) fn block(&self) -> usize {
        self.block
    }

    /// The last ordinal of the current block ([`END`] past the end).
    #[inline]
    pub(crate) fn block_last(&self) -> u32 {
        self.blocks.get(self.block).map_or(END, |b| b.last)
    }

    /// Number of blocks.
    pub(crate) fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// The last ordinal of block `b`.
    pub(crate) fn last_of(&self, b: usize) -> u32 {
        self.blocks[b].last
    }

    /// Block `b`'s frontier points (frequency, length).
    pub(crate) fn points(&self, b: usize) -> &[(u32, u32)] {
        let (a, z) = self.blocks[b].points;
        &self.frontier[a as usize..z as usize]
    }

    /// Every block's frontier points, block after block.
    pub(crate) fn all_points(&self) -> &[(u32, u32)] {
        &self.frontier
    }

    /// Stands on the first document of block `b` (decoding it), or at the end.
    pub(crate) fn goto_block(&mut self, b: usize) -> Result<u32, BlockError> {
        self.load(b)?;
        Ok(self.doc)
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
                // Some frontier point of the block beats (or ties) the document.
                let (tf, len) = (c.tf(), lengths[c.doc() as usize]);
                assert!(c.points(c.block()).iter().any(|&(ptf, plen)| ptf >= tf && plen <= len));
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
        assert_eq!(c.block_last(), p.ordinals[2 * BLOCK_DOCS - 1]);
        assert_eq!(c.goto_block(3).unwrap(), p.ordinals[3 * BLOCK_DOCS]);
    }

    #[test]
    fn index_postings_frontier_keeps_the_pairs_no_other_beats() {
        assert_eq!(frontier(&mut [(1, 10), (3, 40), (2, 5), (1, 5), (3, 50), (5, 100)]), [(2, 5), (3, 40), (5, 100)]);
        assert_eq!(frontier(&mut [(4, 7)]), [(4, 7)]);
        // Too many points: narrowed, and every pair still beaten by some point.
        let mut pairs: Vec<(u32, u32)> = (1..40).map(|i| (i, i * 3)).collect();
        let f = frontier(&mut pairs.clone());
        assert!(f.len() <= FRONTIER_POINTS_MAX);
        assert!(pairs.iter_mut().all(|&mut (tf, len)| f.iter().any(|&(a, b)| a >= tf && b <= len)));
    }

    proptest! {
        /// Every pair is beaten or tied by a frontier point, and the frontier's points are pairs
        /// (when not narrowed) or beat pairs (when narrowed).
        #[test]
        fn index_postings_frontier_bounds_every_pair(pairs in proptest::collection::vec((1u32..50, 1u32..500), 1..128)) {
            let f = frontier(&mut pairs.clone());
            prop_assert!(!f.is_empty() && f.len() <= FRONTIER_POINTS_MAX);
            prop_assert!(f.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
            for &(tf, len) in &pairs {
                prop_assert!(f.iter().any(|&(a, b)| a >= tf && b <= len), "({tf}, {len}) beats {f:?}");
            }
        }

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

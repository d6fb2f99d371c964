//! Postings of one term in one segment: documents (segment ordinals), term frequencies and
//! positions; their encoding as a term block (FORMAT.md, "Segment file"); and a cursor that
//! walks them block by block, skipping what a query does not need.
//!
//! A term block splits its documents into blocks of [`BLOCK_DOCS`]. A directory at the
//! start gives, per block, its last ordinal, where its documents and positions start, and its
//! frontier: the (frequency, length) pairs of its documents that no other document of the
//! block beats on both (higher frequency, shorter document). BM25 grows with the frequency
//! and shrinks with the length, so the best score in the block, under any collection
//! statistics, is that of a frontier point: a search skips a block without decoding it when
//! it ends before the document sought, or when no document in it can score high enough.

use bitpacking::{BitPacker, BitPacker4x};

use super::bm25;
use super::limits::{DOC_TOKENS_MAX, SEGMENT_DOCS_MAX};

/// Flag bit of a term block: positions follow the documents.
const FLAG_POSITIONS: u8 = 1;
/// Flag bit of a term block: a count of shared documents follows the document count (a stem
/// term's documents that also hold the word the stem spells, see [`Postings::shared`]).
const FLAG_SHARED: u8 = 2;
/// Documents per block of a term block.
pub(crate) const BLOCK_DOCS: usize = 128;
/// The ordinal of a cursor past its last document.
pub(crate) const END: u32 = u32::MAX;
/// Most frontier points kept per block; a longer frontier is narrowed by merging neighbours
/// into one point that beats both (their larger frequency, their shorter length): still a
/// bound, a little looser.
pub(crate) const FRONTIER_POINTS_MAX: usize = 16;

/// The frontier of a block's (frequency, length) pairs (see the module docs), by rising
/// length and rising frequency, at most [`FRONTIER_POINTS_MAX`] points.
///
/// Narrowing merges, each time, the neighbours whose merged point scores least under `avg`
/// (the segment's average length, near what queries will use): points that could hold a
/// block's best score are kept exact; only ones far below it are merged.
#[cfg(test)]
pub(crate) fn frontier(pairs: &mut [(u32, u32)], avg: f64) -> Vec<(u32, u32)> {
    frontier_and_best(pairs, avg).0
}

/// [`frontier`], and the best frequency part of BM25 among the pairs (found on the frontier:
/// the part rises with the frequency and falls with the length, so every pair has a point
/// of the frontier scoring at least as well).
fn frontier_and_best(pairs: &mut [(u32, u32)], avg: f64) -> (Vec<(u32, u32)>, f64) {
    // By length, the higher frequency first; keep a pair if its frequency beats every shorter.
    // (Sorted as one integer each: the index benchmark's merges spent 8% of their time in a
    // sort by pairs.)
    let mut out: Vec<(u32, u32)> = Vec::new();
    if let [one] = pairs {
        out.push(*one);
    } else {
        let mut keys: Vec<u64> = pairs.iter().map(|&(tf, len)| (u64::from(len) << 32) | u64::from(u32::MAX - tf)).collect();
        keys.sort_unstable();
        for k in keys {
            let (tf, len) = (u32::MAX - k as u32, (k >> 32) as u32);
            if out.last().is_none_or(|&(best, _)| tf > best) {
                out.push((tf, len));
            }
        }
    }
    let best = out.iter().map(|&(tf, len)| bm25::tf_part(tf, len, avg)).fold(0.0f64, f64::max);
    while out.len() > FRONTIER_POINTS_MAX {
        let merged = |i: usize| (out[i + 1].0, out[i].1);
        let i = (0..out.len() - 1)
            .min_by(|&a, &b| {
                let (fa, fb) = (merged(a), merged(b));
                bm25::tf_part(fa.0, fa.1, avg).total_cmp(&bm25::tf_part(fb.0, fb.1, avg))
            })
            .unwrap_or(0);
        out[i] = merged(i);
        out.remove(i + 1);
    }
    (out, best)
}

/// Decoded postings of one term.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Postings {
    /// Segment ordinals of the documents holding the term, strictly ascending.
    pub ordinals: Vec<u32>,
    /// Occurrences per document (≥ 1), parallel to `ordinals`.
    pub tfs: Vec<u32>,
    /// All positions, document after document, each document's ascending, encoded as the
    /// segment format keeps them: per document its first position, then the rise to each
    /// next, each a LEB128 varint. (Kept encoded, commits and merges copy them without decoding
    /// and encoding each again.) Empty for terms stored without positions, or when positions
    /// were not asked for.
    pub positions: Vec<u8>,
    /// `positions[offsets[i]..offsets[i + 1]]` are document `i`'s bytes; empty without
    /// positions.
    pub offsets: Vec<usize>,
    /// Of a stem term: how many of its documents also hold the word its stem spells (a word
    /// that is its own stem, `test` of `\u{1}test`, is not written in its stem's postings;
    /// its documents are the word's, see `stem.rs`). 0 for every other term. At most the
    /// document count.
    pub shared: u32,
}

impl Postings {
    /// Empty postings; `positions` says whether positions will be kept.
    pub(crate) fn new(positions: bool) -> Postings {
        Postings { offsets: if positions { vec![0] } else { Vec::new() }, ..Postings::default() }
    }

    /// Empties it, keeping its buffers, to hold a term with or without positions.
    pub(crate) fn reset(&mut self, positions: bool) {
        self.ordinals.clear();
        self.tfs.clear();
        self.positions.clear();
        self.offsets.clear();
        self.shared = 0;
        if positions {
            self.offsets.push(0);
        }
    }

    /// True if positions are kept.
    pub(crate) fn has_positions(&self) -> bool {
        !self.offsets.is_empty()
    }

    /// Appends a document (its ordinal above every earlier one), for tests.
    #[cfg(test)]
    pub(crate) fn push(&mut self, ordinal: u32, tf: u32, positions: &[u32]) {
        assert!(self.ordinals.last().is_none_or(|&last| last < ordinal), "ordinals ascend");
        assert!(tf >= 1);
        self.ordinals.push(ordinal);
        self.tfs.push(tf);
        if self.has_positions() {
            assert_eq!(positions.len(), tf as usize, "one position per occurrence");
            let mut last: Option<u32> = None;
            for &x in positions {
                let d = match last {
                    None => x,
                    Some(last) => {
                        assert!(x > last, "positions ascend within a document");
                        x - last
                    }
                };
                put_varint(&mut self.positions, u64::from(d));
                last = Some(x);
            }
            self.offsets.push(self.positions.len());
        }
    }

    /// Appends a document (its ordinal above every earlier one) whose positions are given
    /// encoded (see [`Postings::positions`]): `positions` must hold exactly `tf` of them,
    /// ascending (the callers read them from what they wrote, or checked them).
    pub(crate) fn push_encoded(&mut self, ordinal: u32, tf: u32, positions: &[u8]) {
        assert!(self.ordinals.last().is_none_or(|&last| last < ordinal), "ordinals ascend");
        assert!(tf >= 1);
        self.ordinals.push(ordinal);
        self.tfs.push(tf);
        if self.has_positions() {
            self.positions.extend_from_slice(positions);
            self.offsets.push(self.positions.len());
        }
    }

    /// The encoded positions of the `i`th document (empty without positions).
    pub(crate) fn positions_bytes_of(&self, i: usize) -> &[u8] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.positions[a..b],
            _ => &[],
        }
    }

    /// Positions of the `i`th document, decoded (none without positions).
    fn positions_iter(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        let mut r = Bytes::new(self.positions_bytes_of(i));
        let mut at: Option<u32> = None;
        std::iter::from_fn(move || {
            let d = r.varint_u32(u32::MAX, "").ok()?;
            let x = at.map_or(d, |a| a.wrapping_add(d));
            at = Some(x);
            Some(x)
        })
    }

    /// Positions of the `i`th document (empty without positions), for tests.
    #[cfg(test)]
    pub(crate) fn positions_of(&self, i: usize) -> Vec<u32> {
        self.positions_iter(i).collect()
    }

    /// The number of positions of the `i`th document and its last one.
    pub(crate) fn position_count_and_last(&self, i: usize) -> (u32, u32) {
        self.positions_iter(i).fold((0, 0), |(n, _), x| (n + 1, x))
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

/// Bytes of one directory entry: `last` u32, `docs_end` u32, `positions_end` u32,
/// `points_end` u32, `max_time` i64, `max_part` f32, 4 bytes reserved (0).
pub(crate) const DIR_ENTRY_BYTES: usize = 32;
/// Bytes of one frontier point: frequency u32, length u32.
const POINT_BYTES: usize = 8;

/// A varint of one to three bytes at `at` (below 2^21) and its length; none if the bytes end
/// or it is longer (for the checked path). Forms with needless zero bytes read as the checked
/// path reads them.
#[inline]
fn short_gap(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    let b0 = *bytes.get(at)?;
    if b0 < 0x80 {
        return Some((u32::from(b0), 1));
    }
    let b1 = *bytes.get(at + 1)?;
    let v = u32::from(b0 & 0x7f) | u32::from(b1 & 0x7f) << 7;
    if b1 < 0x80 {
        return Some((v, 2));
    }
    let b2 = *bytes.get(at + 2)?;
    (b2 < 0x80).then(|| (v | u32::from(b2) << 14, 3))
}

// An ordinal below the segment's documents plus a gap of [`short_gap`] cannot wrap.
const _: () = assert!(SEGMENT_DOCS_MAX <= 1 << 30);

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Appends the term block of `p` (FORMAT.md): flags, counts, the fixed-width block directory,
/// the frontier points, the documents, the positions. `lengths` and `times` are the segment's
/// document lengths and times, by ordinal; `avg` its average length.
/// Buffers [`encode_block`] reuses from term to term, per thread.
#[derive(Default)]
struct EncodeScratch {
    dir: Vec<u8>,
    points: Vec<u8>,
    docs: Vec<u8>,
    pos: Vec<u8>,
    pairs: Vec<(u32, u32)>,
}

thread_local! {
    static ENCODE_SCRATCH: std::cell::RefCell<EncodeScratch> = std::cell::RefCell::default();
}

pub(crate) fn encode_block(out: &mut Vec<u8>, p: &Postings, lengths: &[u32], times: &[i64], avg: f64) {
    ENCODE_SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut s) => encode_block_with(&mut s, out, p, lengths, times, avg),
        Err(_) => encode_block_with(&mut EncodeScratch::default(), out, p, lengths, times, avg),
    })
}

fn encode_block_with(scratch: &mut EncodeScratch, out: &mut Vec<u8>, p: &Postings, lengths: &[u32], times: &[i64], avg: f64) {
    assert!(!p.ordinals.is_empty(), "a term block has documents");
    let positions = p.has_positions();
    let block_count = p.len().div_ceil(BLOCK_DOCS);
    let EncodeScratch { dir, points: points_bytes, docs, pos, pairs } = scratch;
    dir.clear();
    points_bytes.clear();
    docs.clear();
    pos.clear();
    let mut prev: Option<u32> = None;
    let mut point_count = 0u32;
    let packer = BitPacker4x::new();
    let mut tfs1 = [0u32; BLOCK_DOCS];
    for b in 0..block_count {
        let range = b * BLOCK_DOCS..((b + 1) * BLOCK_DOCS).min(p.len());
        pairs.clear();
        let mut max_time = i64::MIN;
        if range.len() == BLOCK_DOCS {
            // A whole block: ordinals and frequencies bit-packed (BitPacker4x, 128 at a time).
            let ords = &p.ordinals[range.clone()];
            for (d, &t) in tfs1.iter_mut().zip(&p.tfs[range.clone()]) {
                *d = t - 1;
            }
            let nb_o = packer.num_bits_strictly_sorted(prev, ords);
            let nb_t = packer.num_bits(&tfs1);
            docs.push(nb_o);
            docs.push(nb_t);
            let at = docs.len();
            docs.resize(at + BitPacker4x::compressed_block_size(nb_o) + BitPacker4x::compressed_block_size(nb_t), 0);
            let n = packer.compress_strictly_sorted(prev, ords, &mut docs[at..], nb_o);
            packer.compress(&tfs1, &mut docs[at + n..], nb_t);
        }
        for i in range.clone() {
            let (ord, tf) = (p.ordinals[i], p.tfs[i]);
            if range.len() < BLOCK_DOCS {
                let delta = match prev {
                    None => ord,
                    Some(prev) => {
                        assert!(ord > prev);
                        ord - prev
                    }
                };
                put_varint(docs, u64::from(delta));
                put_varint(docs, u64::from(tf));
            }
            prev = Some(ord);
            pairs.push((tf, lengths[ord as usize]));
            max_time = max_time.max(times[ord as usize]);
            if positions {
                pos.extend_from_slice(p.positions_bytes_of(i));
            }
        }
        // Each document's length code, after the block's documents: a search reads them in
        // order with the frequencies instead of gathering them from the document table.
        docs.extend(p.ordinals[range.clone()].iter().map(|&o| bm25::length_code(lengths[o as usize])));
        let (points, max_part) = frontier_and_best(pairs, avg);
        for (tf, len) in points {
            points_bytes.extend_from_slice(&tf.to_le_bytes());
            points_bytes.extend_from_slice(&len.to_le_bytes());
            point_count += 1;
        }
        // Under 4 GiB: the encoder refuses a term whose positions are not (`Encoder::add_term`),
        // and a term's documents part is at most ten bytes a document.
        let end = |n: usize| u32::try_from(n).expect("a term's postings in one segment stay under 4 GiB");
        dir.extend_from_slice(&p.ordinals[range.end - 1].to_le_bytes());
        dir.extend_from_slice(&end(docs.len()).to_le_bytes());
        dir.extend_from_slice(&end(pos.len()).to_le_bytes());
        dir.extend_from_slice(&point_count.to_le_bytes());
        dir.extend_from_slice(&max_time.to_le_bytes());
        dir.extend_from_slice(&bm25::f32_up(max_part).to_le_bytes());
        dir.extend_from_slice(&[0u8; 4]);
    }
    assert!(p.shared as usize <= p.len(), "shared documents are some of the term's");
    out.push(if positions { FLAG_POSITIONS } else { 0 } | if p.shared > 0 { FLAG_SHARED } else { 0 });
    put_varint(out, p.len() as u64);
    if p.shared > 0 {
        put_varint(out, u64::from(p.shared));
    }
    put_varint(out, block_count as u64);
    put_varint(out, u64::from(point_count));
    out.extend_from_slice(dir);
    out.extend_from_slice(points_bytes);
    put_varint(out, docs.len() as u64);
    out.extend_from_slice(docs);
    if positions {
        put_varint(out, pos.len() as u64);
        out.extend_from_slice(pos);
    }
}

/// Reads the flags, the document count and the shared count (0 without the flag) at the
/// start of a term block, for a segment of `doc_count` documents.
fn read_counts(c: &mut Bytes<'_>, doc_count: u32) -> Result<(u8, u32, u32), BlockError> {
    let flags = c.u8()?;
    if flags & !(FLAG_POSITIONS | FLAG_SHARED) != 0 {
        return Err(c.err("unknown flags"));
    }
    let n = c.varint_u32(doc_count, "more documents than the segment holds")?;
    if n == 0 {
        return Err(c.err("a term without documents"));
    }
    let shared = if flags & FLAG_SHARED != 0 {
        if flags & FLAG_POSITIONS != 0 {
            return Err(c.err("a shared count on a term with positions"));
        }
        let k = c.varint_u32(n, "more shared documents than the term holds")?;
        if k == 0 {
            return Err(c.err("a shared count of 0 is written as no count"));
        }
        k
    } else {
        0
    };
    Ok((flags, n, shared))
}

/// Reads the document count and the shared count of the term block at the start of `bytes`.
pub(crate) fn block_doc_count(bytes: &[u8], doc_count: u32) -> Result<(u32, u32), BlockError> {
    let (_, n, shared) = read_counts(&mut Bytes::new(bytes), doc_count)?;
    Ok((n, shared))
}

/// Where the parts of a term block are, within its bytes.
#[derive(Clone, Debug)]
struct Layout {
    doc_count: u32,
    block_count: usize,
    dir: std::ops::Range<usize>,
    points: std::ops::Range<usize>,
    docs: std::ops::Range<usize>,
    positions: std::ops::Range<usize>,
    has_positions: bool,
    shared: u32,
}

impl Layout {
    /// Reads the counts and finds the parts of the term block at the start of `bytes`, for a
    /// segment of `doc_count` documents. The directory is not read here: each entry is
    /// checked when it is used.
    fn parse(bytes: &[u8], doc_count: u32) -> Result<Layout, BlockError> {
        let doc_count = doc_count.min(SEGMENT_DOCS_MAX);
        let mut c = Bytes::new(bytes);
        let (flags, n, shared) = read_counts(&mut c, doc_count)?;
        let has_positions = flags & FLAG_POSITIONS != 0;
        let k = c.varint()?;
        if k != (n as usize).div_ceil(BLOCK_DOCS) as u64 {
            return Err(c.err("block count does not match the document count"));
        }
        let point_count = c.varint()?;
        if point_count < k || point_count > k * FRONTIER_POINTS_MAX as u64 {
            return Err(c.err("frontier point count out of range"));
        }
        let dir_start = c.at;
        c.take(k * DIR_ENTRY_BYTES as u64)?;
        let points_start = c.at;
        c.take(point_count * POINT_BYTES as u64)?;
        let points_end = c.at;
        let docs_len = c.varint()?;
        let docs_start = c.at;
        c.take(docs_len)?;
        let docs_end = c.at;
        let positions = if has_positions {
            let l = c.varint()?;
            let start = c.at;
            c.take(l)?;
            start..c.at
        } else {
            c.at..c.at
        };
        Ok(Layout {
            doc_count: n,
            block_count: k as usize,
            dir: dir_start..points_start,
            points: points_start..points_end,
            docs: docs_start..docs_end,
            positions,
            has_positions,
            shared,
        })
    }
}

/// One block's directory entry, checked against its neighbours and sections.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    /// Ordinal of its last document.
    pub last: u32,
    /// Its documents, within the documents section.
    docs: (usize, usize),
    /// Its positions, within the positions section.
    positions: (usize, usize),
    /// Its frontier points, by number.
    points: (usize, usize),
    /// The latest time of its documents.
    pub max_time: i64,
    /// The largest BM25 frequency part ([`bm25::tf_part`]) of its documents under the
    /// segment's own average length, rounded up.
    pub max_part: f32,
    /// Documents in it.
    count: u32,
}

/// A term's postings as a cursor reads them: the term block's bytes (borrowed from a segment
/// or owned) and its layout.
#[derive(Clone, Debug)]
pub(crate) struct TermBlock<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    layout: Layout,
    /// Ordinals are below this (the segment's document count).
    doc_limit: u32,
}

/// True if the frequencies of a packed block (`tfs`, stored less one, `nb_t` bits each) are
/// below `DOC_TOKENS_MAX`: by construction when `nb_t` is at most 20 (2^20 is the limit), else
/// checked one by one.
fn packed_frequencies_fit(tfs: &[u32], nb_t: u8) -> bool {
    u32::from(nb_t) <= DOC_TOKENS_MAX.trailing_zeros() || tfs.iter().fold(0u32, |m, &t| m.max(t)) < DOC_TOKENS_MAX
}

/// True if the 128 ordinals of a packed block (`ords`, decoded from `prev` with gaps of `nb_o`
/// bits) rise from `prev`. Each is the one before plus its gap plus one
/// (`decompress_strictly_sorted`, in u32 arithmetic, which may wrap), so they rise unless a
/// sum wraps, which it cannot when `prev` plus 128 gaps of under 2^nb_o stays within u32
/// (every block of a segment of up to 2^24 documents, and of larger ones but for gaps of 2^24
/// or more); only such wider blocks are checked one by one. (The check, written without early
/// exits so that it vectorizes, was a sixth of a search of two common words.) Debug builds
/// check every block.
fn packed_ordinals_rise(prev: Option<u32>, ords: &[u32], nb_o: u8) -> bool {
    let rises = |ords: &[u32]| {
        let falls = ords[1..].iter().zip(&ords[..ords.len() - 1]).fold(false, |bad, (&b, &a)| bad | (a >= b));
        !falls && !prev.is_some_and(|p| ords[0] <= p)
    };
    let cannot_wrap = u64::from(prev.unwrap_or(0)) + ((BLOCK_DOCS as u64) << nb_o.min(32)) <= u64::from(u32::MAX);
    if cannot_wrap {
        debug_assert!(rises(ords), "packed ordinals that cannot wrap rise");
        return true;
    }
    rises(ords)
}

impl<'a> TermBlock<'a> {
    /// Opens the term block at the start of `bytes` (checking its counts and that its parts fit).
    pub(crate) fn open(bytes: &'a [u8], doc_count: u32) -> Result<TermBlock<'a>, BlockError> {
        let layout = Layout::parse(bytes, doc_count)?;
        Ok(TermBlock { bytes: std::borrow::Cow::Borrowed(bytes), layout, doc_limit: doc_count })
    }

    /// The term block of in-memory postings (encoded here, so it reads back).
    pub(crate) fn of(p: &Postings, lengths: &[u32], times: &[i64], avg: f64) -> TermBlock<'static> {
        let mut bytes = Vec::new();
        encode_block(&mut bytes, p, lengths, times, avg);
        let layout = Layout::parse(&bytes, lengths.len() as u32).unwrap_or_else(|e| panic!("a block just encoded reads back: {e:?}"));
        TermBlock { bytes: std::borrow::Cow::Owned(bytes), layout, doc_limit: lengths.len() as u32 }
    }

    /// Number of documents.
    pub(crate) fn doc_count(&self) -> u32 {
        self.layout.doc_count
    }

    /// Number of blocks.
    pub(crate) fn block_count(&self) -> usize {
        self.layout.block_count
    }

    fn entry(&self, b: usize) -> &[u8] {
        let at = self.layout.dir.start + b * DIR_ENTRY_BYTES;
        &self.bytes[at..at + DIR_ENTRY_BYTES]
    }

    /// The last ordinal of block `b` (unchecked: for searching the directory; a wrong value
    /// is caught when the block is read).
    pub(crate) fn last_of(&self, b: usize) -> u32 {
        u32_le(self.entry(b), 0)
    }

    /// Block `b`'s last ordinal, latest time and largest frequency part, for ordering and
    /// passing blocks without reading them: the bound checked as [`TermBlock::block`] checks
    /// it; the rest of the entry is checked when the block is read.
    pub(crate) fn bound(&self, b: usize) -> Result<(u32, i64, f32), BlockError> {
        let e = self.entry(b);
        let mut t = [0u8; 8];
        t.copy_from_slice(&e[16..24]);
        let max_part = f32::from_bits(u32_le(e, 24));
        let at = self.layout.dir.start + b * DIR_ENTRY_BYTES;
        if !(max_part.is_finite() && max_part > 0.0) || e[28..32] != [0; 4] {
            return Err(BlockError { at, reason: "block bound out of range" });
        }
        // The last ordinal too, as [`TermBlock::block`] checks it: bounds alone order and skip
        // blocks, and a last ordinal out of place would bound the wrong documents.
        let last = u32_le(e, 0);
        if (b > 0 && last <= self.last_of(b - 1)) || last >= self.layout_docs_limit() {
            return Err(BlockError { at, reason: "block ordinals do not rise within the segment" });
        }
        Ok((last, i64::from_le_bytes(t), max_part))
    }

    /// Block `b`'s directory entry, checked: its parts rise from the previous block's and fit.
    pub(crate) fn block(&self, b: usize) -> Result<Block, BlockError> {
        let err = |reason| BlockError { at: self.layout.dir.start + b * DIR_ENTRY_BYTES, reason };
        let (last, max_time, max_part) = self.bound(b)?;
        let e = self.entry(b);
        let (docs_end, pos_end, points_end) = (u32_le(e, 4) as usize, u32_le(e, 8) as usize, u32_le(e, 12) as usize);
        // (`bound` checked that the last ordinal rises and is below the documents.)
        let (docs_start, pos_start, points_start) = if b == 0 {
            (0, 0, 0)
        } else {
            let p = self.entry(b - 1);
            (u32_le(p, 4) as usize, u32_le(p, 8) as usize, u32_le(p, 12) as usize)
        };
        if docs_end <= docs_start || docs_end > self.layout.docs.len() {
            return Err(err("block documents run past their section"));
        }
        if pos_end < pos_start || pos_end > self.layout.positions.len() || (self.layout.has_positions && pos_end == pos_start) {
            return Err(err("block positions run past their section"));
        }
        let points_len = self.layout.points.len() / POINT_BYTES;
        if points_end <= points_start || points_end - points_start > FRONTIER_POINTS_MAX || points_end > points_len {
            return Err(err("block frontier out of range"));
        }
        if b + 1 == self.layout.block_count && (docs_end != self.layout.docs.len() || pos_end != self.layout.positions.len() || points_end != points_len) {
            return Err(err("the last block does not end its sections"));
        }
        let count = if b + 1 == self.layout.block_count { self.layout.doc_count - (b * BLOCK_DOCS) as u32 } else { BLOCK_DOCS as u32 };
        Ok(Block { last, docs: (docs_start, docs_end), positions: (pos_start, pos_end), points: (points_start, points_end), max_time, max_part, count })
    }

    fn layout_docs_limit(&self) -> u32 {
        // Ordinals are below the segment's document count; the caller passed it to `open`.
        self.doc_limit
    }

    /// Frontier point `i` (frequency, length).
    pub(crate) fn point(&self, i: usize) -> (u32, u32) {
        let at = self.layout.points.start + i * POINT_BYTES;
        (u32_le(&self.bytes, at), u32_le(&self.bytes, at + 4))
    }

    /// Decodes block `b`'s ordinals and frequencies into `ords` and `tfs` (cleared first),
    /// checking them against the segment's document `lengths` and the block's entry.
    fn decode(&self, b: usize, info: &Block, lengths: &[u32], ords: &mut Vec<u32>, tfs: &mut Vec<u32>, codes: &mut std::ops::Range<usize>) -> Result<(), BlockError> {
        let base = self.layout.docs.start;
        let bytes = &self.bytes[base + info.docs.0..base + info.docs.1];
        let err = |at: usize, reason| BlockError { at: base + info.docs.0 + at, reason };
        let prev = if b == 0 { None } else { Some(self.last_of(b - 1)) };
        let doc_count = lengths.len().min(SEGMENT_DOCS_MAX as usize) as u32;
        if info.count as usize == BLOCK_DOCS {
            // Bit-packed: both widths, then exactly the packed bytes they call for.
            let (Some(&nb_o), Some(&nb_t)) = (bytes.first(), bytes.get(1)) else { return Err(err(0, "block ends early")) };
            if nb_o > 32 || nb_t > 32 {
                return Err(err(0, "bit width over 32"));
            }
            let (so, st) = (BitPacker4x::compressed_block_size(nb_o), BitPacker4x::compressed_block_size(nb_t));
            if bytes.len() != 2 + so + st + BLOCK_DOCS {
                return Err(err(0, "block does not end where its directory says"));
            }
            let packer = BitPacker4x::new();
            // The packer writes every value: only a buffer of another length is resized.
            // (Clearing and zero-filling both first was about a tenth of a decode's
            // instructions.)
            ords.resize(BLOCK_DOCS, 0);
            tfs.resize(BLOCK_DOCS, 0);
            packer.decompress_strictly_sorted(prev, &bytes[2..2 + so], ords, nb_o);
            packer.decompress(&bytes[2 + so..2 + so + st], tfs, nb_t);
            *codes = base + info.docs.0 + 2 + so + st..base + info.docs.1;
            // Packed values are unchecked by the packer: ordinals must rise from the previous
            // block to this block's last, below the segment's documents.
            if !packed_ordinals_rise(prev, ords, nb_o) {
                return Err(err(2, "ordinals do not ascend"));
            }
            if ords[BLOCK_DOCS - 1] != info.last || info.last >= doc_count {
                return Err(err(2, "block does not end where its directory says"));
            }
            // Frequencies are stored less one.
            if !packed_frequencies_fit(tfs, nb_t) {
                return Err(err(2 + so, "term frequency out of range"));
            }
            tfs.iter_mut().for_each(|t| *t += 1);
            return Ok(());
        }
        let mut c = Bytes::new(bytes);
        let shift = |e: BlockError| BlockError { at: base + info.docs.0 + e.at, reason: e.reason };
        ords.clear();
        tfs.clear();
        let mut prev = prev;
        for _ in 0..info.count {
            // The common case: a gap of one to three bytes and a frequency of one byte, the
            // gap rising from the previous ordinal (or the first ordinal) below the documents,
            // the frequency not 0. Anything else is read by the checked path below, which
            // reports it where it is. (Two checked varints a document were a tenth of a
            // partial pass of rare CJK bigrams, whose lists are short blocks of this kind; a
            // rare term's gaps are mostly two bytes: 15 checked varints per short block
            // decoded by a search of a Chinese bigram, with only one-byte gaps on this path.)
            if let Some((gap, len)) = short_gap(bytes, c.at)
                && let Some(&t) = bytes.get(c.at + len)
                && t.wrapping_sub(1) < 0x7f
            {
                // No sum wraps: an ordinal is below 2^26, a gap below 2^21.
                let ord = match prev {
                    None => gap,
                    Some(p) => p + gap,
                };
                if (gap > 0 || prev.is_none()) && ord < doc_count {
                    c.at += len + 1;
                    ords.push(ord);
                    tfs.push(u32::from(t));
                    prev = Some(ord);
                    continue;
                }
            }
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
            if tf == 0 {
                return Err(shift(c.err("term frequency out of range")));
            }
            ords.push(ord);
            tfs.push(tf);
            prev = Some(ord);
        }
        if c.at + info.count as usize != bytes.len() || prev != Some(info.last) {
            return Err(shift(c.err("block does not end where its directory says")));
        }
        *codes = base + info.docs.0 + c.at..base + info.docs.1;
        Ok(())
    }

    /// Decodes every document (and positions, if asked and stored), for tests.
    #[cfg(test)]
    pub(crate) fn decode_all(&self, lengths: &[u32], positions: bool) -> Result<Postings, BlockError> {
        let mut p = Postings::new(positions && self.layout.has_positions);
        self.append_to(lengths, 0, &mut p)?;
        Ok(p)
    }

    /// True if the term's documents carry positions.
    pub(crate) fn has_positions(&self) -> bool {
        self.layout.has_positions
    }

    /// Of a stem term, its documents that also hold the word its stem spells
    /// ([`Postings::shared`]); 0 for other terms.
    #[cfg(test)]
    pub(crate) fn shared(&self) -> u32 {
        self.layout.shared
    }

    /// Appends every document to `p`, ordinals raised by `base` (above those `p` holds), with
    /// positions if `p` keeps them (and the term has them); adds its shared count to `p`'s
    /// (the documents of different segments are different documents).
    pub(crate) fn append_to(&self, lengths: &[u32], base: u32, p: &mut Postings) -> Result<(), BlockError> {
        let with_positions = p.has_positions() && self.layout.has_positions;
        p.shared += self.layout.shared;
        let (mut ords, mut tfs, mut codes) = (Vec::with_capacity(BLOCK_DOCS), Vec::with_capacity(BLOCK_DOCS), 0..0);
        for b in 0..self.layout.block_count {
            let info = self.block(b)?;
            self.decode(b, &info, lengths, &mut ords, &mut tfs, &mut codes)?;
            let mut pos = PosReader::new(self, &info);
            for ((&ord, &tf), &code) in ords.iter().zip(&tfs).zip(&self.bytes[codes.clone()]) {
                // What writers assert (a merge re-encodes these): checked here, not on the
                // search path, where a wrong frequency or code could only skew a score.
                if tf > lengths[ord as usize] {
                    return Err(BlockError { at: self.layout.docs.start + info.docs.0, reason: "term frequency past the document's length" });
                }
                if code != bm25::length_code(lengths[ord as usize]) {
                    return Err(BlockError { at: codes.start, reason: "length code is not its document's" });
                }
                if with_positions {
                    let (from, to) = pos.check(&self.bytes, tf, lengths[ord as usize])?;
                    p.push_encoded(base + ord, tf, &self.bytes[from..to]);
                } else {
                    p.push_encoded(base + ord, tf, &[]);
                }
            }
            if with_positions {
                pos.finish()?;
            }
        }
        Ok(())
    }
}

/// Reads the positions of one block's documents in order.
#[derive(Clone)]
struct PosReader {
    /// Within the term block's bytes.
    at: usize,
    end: usize,
}

impl PosReader {
    fn new(t: &TermBlock<'_>, info: &Block) -> PosReader {
        let base = t.layout.positions.start;
        PosReader { at: base + info.positions.0, end: base + info.positions.1 }
    }

    /// Reads the next document's `tf` positions into `out`, checked as [`PosReader::walk`]
    /// checks them: deltas of one or two bytes (nearly all) on a short path, anything else
    /// (longer varints, and every error, which the walk reports where it is) by the walk.
    fn read(&mut self, bytes: &[u8], tf: u32, length: u32, out: &mut Vec<u32>) -> Result<(), BlockError> {
        out.clear();
        let b = &bytes[..self.end];
        let mut at = self.at;
        let mut prev = 0u32;
        for k in 0..tf {
            let delta = match (b.get(at), b.get(at + 1)) {
                (Some(&b0), _) if b0 < 0x80 => {
                    at += 1;
                    u32::from(b0)
                }
                (Some(&b0), Some(&b1)) if b1 < 0x80 => {
                    at += 2;
                    u32::from(b0 & 0x7f) | (u32::from(b1) << 7)
                }
                _ => break,
            };
            // Below 2^14 + 2^20: no overflow.
            let x = if k == 0 { delta } else { prev + delta };
            if (k > 0 && delta == 0) || x >= length {
                break;
            }
            out.push(x);
            prev = x;
        }
        if out.len() == tf as usize {
            self.at = at;
            return Ok(());
        }
        out.clear();
        self.walk(bytes, tf, length, |x| out.push(x)).map(|_| ())
    }

    /// Checks the next document's `tf` positions (as [`PosReader::read`] does) and returns
    /// their bytes' range.
    fn check(&mut self, bytes: &[u8], tf: u32, length: u32) -> Result<(usize, usize), BlockError> {
        self.walk(bytes, tf, length, |_| {})
    }

    /// Reads the next document's `tf` positions, each checked (rising, within `length`) and
    /// handed to `each`; returns their bytes' range.
    fn walk(&mut self, bytes: &[u8], tf: u32, length: u32, mut each: impl FnMut(u32)) -> Result<(usize, usize), BlockError> {
        let from = self.at;
        let mut r = Bytes { bytes: &bytes[..self.end], at: self.at };
        let mut prev: Option<u32> = None;
        for _ in 0..tf {
            let delta = r.varint_u32(DOC_TOKENS_MAX, "position out of range")?;
            let x = match prev {
                None => delta,
                Some(p) if delta > 0 => p.checked_add(delta).ok_or(r.err("position overflows"))?,
                Some(_) => return Err(r.err("positions do not ascend")),
            };
            if x >= length {
                return Err(r.err("position past the document's end"));
            }
            each(x);
            prev = Some(x);
        }
        self.at = r.at;
        Ok((from, r.at))
    }

    /// Skips the next `count` positions (of as many documents as they fill): by counting the
    /// bytes that end a varint, thirty-two or eight at a time, without decoding them. (What is skipped is
    /// not checked; what is read is.)
    fn skip(&mut self, bytes: &[u8], count: u64) -> Result<(), BlockError> {
        let bytes = &bytes[..self.end];
        let (mut at, mut left) = (self.at, count);
        // Thirty-two bytes at a time while more than they can end is left.
        let word_at = |b: &[u8], i: usize| u64::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]]);
        while left > 32 {
            let Some(chunk) = bytes.get(at..at + 32) else { break };
            let n = (!word_at(chunk, 0) & 0x8080_8080_8080_8080).count_ones()
                + (!word_at(chunk, 8) & 0x8080_8080_8080_8080).count_ones()
                + (!word_at(chunk, 16) & 0x8080_8080_8080_8080).count_ones()
                + (!word_at(chunk, 24) & 0x8080_8080_8080_8080).count_ones();
            left -= u64::from(n);
            at += 32;
        }
        while left > 0 {
            if let Some(word) = bytes.get(at..at + 8) {
                let w = u64::from_le_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]);
                // The high bit of each byte that ends a varint.
                let mut ends = !w & 0x8080_8080_8080_8080;
                let n = u64::from(ends.count_ones());
                if n < left {
                    left -= n;
                    at += 8;
                    continue;
                }
                for _ in 1..left {
                    ends &= ends - 1;
                }
                at += ends.trailing_zeros() as usize / 8 + 1;
                left = 0;
            } else {
                let b = *bytes.get(at).ok_or(BlockError { at, reason: "positions end early" })?;
                at += 1;
                if b < 0x80 {
                    left -= 1;
                }
            }
        }
        self.at = at;
        Ok(())
    }

    fn finish(&self) -> Result<(), BlockError> {
        if self.at != self.end {
            return Err(BlockError { at: self.at, reason: "positions end before their stated length" });
        }
        Ok(())
    }
}

/// The first index at or after `from` whose ordinal is at least `target` (`ords.len()` if
/// none): the next one when it is (the most common step beside a term about as common); when
/// it is among the next sixteen (most steps of a walk beside a common term), the count of
/// those below `target` (ordinals ascend) among the next four or the twelve after, without a
/// branch per ordinal (a scan stopping at the first not below was 40% of the samples of "src
/// read path", most on its exit's mispredicted branch); past them, a binary search.
#[inline(always)]
fn first_at_or_after(ords: &[u32], mut from: usize, target: u32) -> usize {
    if let Some(next) = ords.get(from..from + 17) {
        // Beside a term about as common, the next ordinal most often is the one.
        if next[0] >= target {
            return from;
        }
        if next[4] >= target {
            return from + 1 + next[1..4].iter().map(|&o| usize::from(o < target)).sum::<usize>();
        }
        if next[16] < target {
            return from + 17 + ords[from + 17..].partition_point(|&o| o < target);
        }
        return from + 5 + next[5..16].iter().map(|&o| usize::from(o < target)).sum::<usize>();
    }
    while from < ords.len() && ords[from] < target {
        from += 1;
    }
    from
}

/// A document [`PostingCursor::find_all`] found: its index among the targets and its
/// frequency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Found {
    pub k: u32,
    pub tf: u32,
}

/// Walks one term's postings in ordinal order, a block at a time, reading the directory as it
/// goes (nothing is decoded before a block is entered).
#[derive(Clone)]
pub(crate) struct PostingCursor<'a> {
    term: TermBlock<'a>,
    lengths: &'a [u32],
    /// The block decoded into `ords`/`tfs` (the block count once past the end).
    block: usize,
    info: Option<Block>,
    ords: Vec<u32>,
    tfs: Vec<u32>,
    /// Where the current block's length codes are in the term block's bytes.
    codes: std::ops::Range<usize>,
    /// Index of the current document within the block.
    i: usize,
    doc: u32,
    /// Positions: reader of the current block, index of the next document it reads.
    pos: Option<PosReader>,
    pos_next: usize,
    pos_buf: Vec<u32>,
    /// The document (index within the block) whose positions `pos_buf` holds.
    pos_cached: Option<usize>,
    want_positions: bool,
}

/// [`PostingCursor::block`] of a cursor that has decoded nothing yet.
const NOT_LOADED: usize = usize::MAX;

impl<'a> PostingCursor<'a> {
    /// A cursor over a term block, on its first document.
    pub(crate) fn new(term: TermBlock<'a>, lengths: &'a [u32], positions: bool) -> Result<PostingCursor<'a>, BlockError> {
        let mut c = PostingCursor::unloaded(term, lengths, positions);
        c.load(0)?;
        Ok(c)
    }

    /// A cursor over a term block that decodes nothing until it is moved: for searches that
    /// take blocks in the order of their bounds, or seek the first document they want, the
    /// first block [`PostingCursor::new`] decodes was often never read (a sixth of a one-word
    /// search's time). Until [`PostingCursor::goto_entry`], [`PostingCursor::begin_at`],
    /// [`PostingCursor::find_all`], [`PostingCursor::seek`], [`PostingCursor::next`] or
    /// [`PostingCursor::advance_to`] it stands nowhere (the last three first stand where
    /// [`PostingCursor::new`] would); the directory (block count, bounds) reads as always.
    pub(crate) fn unloaded(term: TermBlock<'a>, lengths: &'a [u32], positions: bool) -> PostingCursor<'a> {
        let want_positions = positions && term.layout.has_positions;
        PostingCursor {
            term,
            lengths,
            block: NOT_LOADED,
            info: None,
            ords: Vec::with_capacity(BLOCK_DOCS),
            tfs: Vec::with_capacity(BLOCK_DOCS),
            codes: 0..0,
            i: 0,
            doc: END,
            pos: None,
            pos_next: 0,
            pos_buf: Vec::new(),
            pos_cached: None,
            want_positions,
        }
    }

    /// Stands where [`PostingCursor::new`] does if nothing is decoded yet.
    #[inline]
    fn loaded(&mut self) -> Result<(), BlockError> {
        if self.block == NOT_LOADED {
            self.load(0)?;
        }
        Ok(())
    }

    /// Decodes block `b` and stands on its first document (or at the end past the last block).
    fn load(&mut self, b: usize) -> Result<(), BlockError> {
        if b >= self.term.block_count() {
            self.block = self.term.block_count();
            self.info = None;
            self.doc = END;
            return Ok(());
        }
        let info = self.term.block(b)?;
        self.load_entry(b, info)
    }

    /// Decodes block `b`, of entry `info` (checked), and stands on its first document.
    fn load_entry(&mut self, b: usize, info: Block) -> Result<(), BlockError> {
        self.term.decode(b, &info, self.lengths, &mut self.ords, &mut self.tfs, &mut self.codes)?;
        self.pos = if self.want_positions { Some(PosReader::new(&self.term, &info)) } else { None };
        self.info = Some(info);
        self.pos_next = 0;
        self.pos_cached = None;
        self.block = b;
        self.i = 0;
        self.doc = self.ords[0];
        Ok(())
    }

    /// Number of documents holding the term.
    pub(crate) fn len(&self) -> u32 {
        self.term.doc_count()
    }

    /// The current document, or [`END`].
    #[inline]
    pub(crate) fn doc(&self) -> u32 {
        debug_assert!(self.block != NOT_LOADED, "a cursor read before it was moved");
        self.doc
    }

    /// The current document's term frequency.
    #[inline]
    pub(crate) fn tf(&self) -> u32 {
        self.tfs[self.i]
    }

    /// The current document's length code, as its block stores it (the same as the
    /// document table's, without reading that table at a random place: a cache miss per
    /// document scored, most of a partial pass with cold caches).
    #[inline]
    pub(crate) fn code(&self) -> u8 {
        self.term.bytes[self.codes.start + self.i]
    }

    /// The current block's ordinals and frequencies (empty past the end).
    #[inline]
    pub(crate) fn block_docs(&self) -> (&[u32], &[u32]) {
        if self.doc == END { (&[], &[]) } else { (&self.ords, &self.tfs) }
    }

    /// The length codes of the current block's documents ([`bm25::length_code`]; empty past
    /// the end), as the block stores them.
    #[inline]
    pub(crate) fn block_codes(&self) -> &[u8] {
        if self.doc == END { &[] } else { &self.term.bytes[self.codes.clone()] }
    }

    /// Stands on the `i`th document of the current block (`i` below its length).
    #[inline]
    pub(crate) fn stand_at(&mut self, i: usize) {
        self.i = i;
        self.doc = self.ords[i];
    }

    /// Moves to the next document.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<u32, BlockError> {
        self.loaded()?;
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

    /// The first block at or after `from` whose last ordinal is at least `target`.
    fn find_block(&self, from: usize, target: u32) -> usize {
        let (mut lo, mut hi) = (from, self.term.block_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.term.last_of(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Moves to the first document at or after `target` (never backwards).
    pub(crate) fn seek(&mut self, target: u32) -> Result<u32, BlockError> {
        self.loaded()?;
        if self.doc >= target {
            return Ok(self.doc);
        }
        if self.block_last() < target {
            // Skip whole blocks by their last ordinal, without decoding them.
            let b = self.find_block(self.block + 1, target);
            self.load(b)?;
            if self.doc >= target {
                return Ok(self.doc);
            }
        }
        let at = first_at_or_after(&self.ords, self.i, target);
        self.i = at;
        self.doc = self.ords[at];
        Ok(self.doc)
    }

    /// Moves to the first document at or after `target`, backwards too: the block that may
    /// hold it is found in the directory and decoded if it is not the current one (the start
    /// of a forward walk by [`PostingCursor::advance_to`]).
    pub(crate) fn begin_at(&mut self, target: u32) -> Result<u32, BlockError> {
        let in_block = self.doc != END && self.ords.first().is_some_and(|&f| f <= target) && target <= self.block_last();
        if !in_block {
            let b = self.find_block(0, target);
            if b != self.block || self.doc == END {
                self.load(b)?;
            }
            if self.doc == END {
                return Ok(END);
            }
        }
        // Forward from the current document when it is not past the target (documents of a
        // driver block are sought in order), by the walks' step.
        let from = if in_block && self.doc <= target { self.i } else { 0 };
        let at = first_at_or_after(&self.ords, from, target);
        self.i = at;
        self.doc = self.ords[at];
        Ok(self.doc)
    }

    /// Of `targets` (ordinals, ascending), finds those this term holds: for each, in order, its
    /// index in `targets` and its frequency, pushed to `found` (cleared first). The term's
    /// blocks are walked beside the targets ([`PostingCursor::advance_to`]), each decoded at
    /// most once, from the block that may hold the first target (the current one when it may:
    /// the targets of one call ascend, those of successive calls need not). The cursor is left
    /// on the last block read.
    pub(crate) fn find_all(&mut self, targets: &[u32], found: &mut Vec<Found>) -> Result<(), BlockError> {
        found.clear();
        let Some(&first) = targets.first() else { return Ok(()) };
        if self.begin_at(first)? == END {
            return Ok(());
        }
        // The walk of `advance_to` with its place kept in a local (the same steps through a
        // call per target measured 8-12% slower).
        let mut j = self.i;
        let mut k = 0;
        loop {
            let (ords, tfs) = (&self.ords, &self.tfs);
            // The decoded block's own last (not the directory's, which a damaged block may
            // contradict): every target up to it has a first ordinal at or past it here.
            let last = ords.last().copied().unwrap_or(0);
            while k < targets.len() {
                let t = targets[k];
                if t > last {
                    break;
                }
                j = first_at_or_after(ords, j, t);
                if ords[j] == t {
                    found.push(Found { k: k as u32, tf: tfs[j] });
                    j += 1;
                }
                k += 1;
            }
            if k == targets.len() {
                break;
            }
            // Past this block: the one that may hold the next target.
            let b = self.find_block(self.block + 1, targets[k]);
            self.load(b)?;
            if self.doc == END {
                return Ok(());
            }
            j = 0;
        }
        self.stand_at(j.min(self.ords.len() - 1));
        Ok(())
    }

    /// Moves forward to the first document at or after `target` (never back: targets ascend
    /// from a [`PostingCursor::begin_at`]); true if it is `target`.
    #[inline]
    pub(crate) fn advance_to(&mut self, target: u32) -> Result<bool, BlockError> {
        self.loaded()?;
        if self.doc == END {
            return Ok(false);
        }
        if target > self.ords.last().copied().unwrap_or(0) {
            let b = self.find_block(self.block + 1, target);
            self.load(b)?;
            if self.doc == END {
                return Ok(false);
            }
        }
        let ords = &self.ords;
        let j = first_at_or_after(ords, self.i, target);
        // Past the decoded block's end only if it contradicts its directory (damage the
        // block's checks did not see): the target is not here.
        let held = ords.get(j) == Some(&target);
        self.stand_at(j.min(ords.len() - 1));
        Ok(held)
    }

    /// The first block whose last ordinal is at least `target` (the block count if none).
    pub(crate) fn block_for(&self, target: u32) -> usize {
        self.find_block(0, target)
    }

    /// The last ordinal of block `b`, unchecked (for walking the directory; a wrong value is
    /// caught when the block is read).
    pub(crate) fn last_of_block(&self, b: usize) -> u32 {
        self.term.last_of(b)
    }

    /// The current block's number (the number of blocks once past the end).
    #[inline]
    pub(crate) fn block(&self) -> usize {
        self.block
    }

    /// The current block's entry (`None` past the end).
    #[cfg(test)]
    pub(crate) fn info(&self) -> Option<&Block> {
        self.info.as_ref()
    }

    /// The last ordinal of the current block ([`END`] past the end).
    #[inline]
    pub(crate) fn block_last(&self) -> u32 {
        self.info.map_or(END, |b| b.last)
    }

    /// Number of blocks.
    pub(crate) fn block_count(&self) -> usize {
        self.term.block_count()
    }

    /// Block `b`'s last ordinal, latest time and bound ([`TermBlock::bound`]).
    pub(crate) fn block_bound(&self, b: usize) -> Result<(u32, i64, f32), BlockError> {
        self.term.bound(b)
    }

    /// Block `b`'s entry, checked.
    pub(crate) fn block_at(&self, b: usize) -> Result<Block, BlockError> {
        self.term.block(b)
    }

    /// The frontier points of a block's entry.
    pub(crate) fn points(&self, info: &Block) -> impl Iterator<Item = (u32, u32)> + '_ {
        (info.points.0..info.points.1).map(|i| self.term.point(i))
    }

    /// Stands on the first document of block `b` (decoding it), whose entry `info`
    /// [`PostingCursor::block_at`] has just given (and checked): it is not checked again.
    pub(crate) fn goto_entry(&mut self, b: usize, info: Block) -> Result<u32, BlockError> {
        debug_assert_eq!(self.term.block(b), Ok(info), "the entry of block {b}");
        self.load_entry(b, info)?;
        Ok(self.doc)
    }

    /// The positions [`PostingCursor::positions`] read last (of the current document, once
    /// it has been called there).
    pub(crate) fn positions_read(&self) -> &[u32] {
        if self.want_positions && self.doc != END && self.pos_cached == Some(self.i) { &self.pos_buf } else { &[] }
    }

    /// The current document's positions (empty if the cursor was opened without them).
    pub(crate) fn positions(&mut self) -> Result<&[u32], BlockError> {
        if !self.want_positions || self.doc == END {
            return Ok(&[]);
        }
        if self.pos_cached == Some(self.i) {
            return Ok(&self.pos_buf);
        }
        if self.pos_next > self.i {
            // `begin_at` moved back within the block: read its positions from the start again.
            let Some(info) = self.info.as_ref() else { return Ok(&[]) };
            self.pos = Some(PosReader::new(&self.term, info));
            self.pos_next = 0;
        }
        let Some(reader) = self.pos.as_mut() else { return Ok(&[]) };
        if self.pos_next < self.i {
            let count: u64 = self.tfs[self.pos_next..self.i].iter().map(|&t| u64::from(t)).sum();
            reader.skip(&self.term.bytes, count)?;
            self.pos_next = self.i;
        }
        let length = self.lengths[self.doc as usize];
        reader.read(&self.term.bytes, self.tfs[self.i], length, &mut self.pos_buf)?;
        self.pos_next = self.i + 1;
        self.pos_cached = Some(self.i);
        Ok(&self.pos_buf)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn times(lengths: &[u32]) -> Vec<i64> {
        (0..lengths.len() as i64).map(|i| 1000 + (i * 7919) % 5000).collect()
    }

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
        for n in [1u32, 2, 127, 128, 129, 300, 1000] {
            // Positions; none; none, with a shared count (a stem term's).
            for (with_positions, shared) in [(true, 0), (false, 0), (false, n.div_ceil(2))] {
                let (mut p, lengths) = sample(n, with_positions);
                p.shared = shared;
                let mut bytes = Vec::new();
                encode_block(&mut bytes, &p, &lengths, &times(&lengths), 8.0);
                let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
                assert_eq!(t.doc_count(), n);
                assert_eq!(t.shared(), shared);
                assert_eq!(t.decode_all(&lengths, true).unwrap(), p, "n={n}");
                let docs_only = t.decode_all(&lengths, false).unwrap();
                assert_eq!(docs_only.ordinals, p.ordinals);
                assert!(docs_only.positions.is_empty());
                assert_eq!(block_doc_count(&bytes, lengths.len() as u32), Ok((n, shared)));
                // Appended after another segment's documents, the shared counts add up.
                let mut two = t.decode_all(&lengths, false).unwrap();
                t.append_to(&lengths, lengths.len() as u32, &mut two).unwrap();
                assert_eq!((two.len(), two.shared), (2 * n as usize, 2 * shared));
                // A segment with fewer documents refuses the block.
                let short = p.ordinals[p.len() - 1];
                assert!(TermBlock::open(&bytes, short).and_then(|t| t.decode_all(&lengths[..short as usize], true)).is_err());
                // Each block's latest time is that of its documents.
                for b in 0..t.block_count() {
                    let info = t.block(b).unwrap();
                    let docs = &p.ordinals[b * BLOCK_DOCS..((b + 1) * BLOCK_DOCS).min(p.len())];
                    assert_eq!(info.max_time, docs.iter().map(|&o| times(&lengths)[o as usize]).max().unwrap());
                    let best = (b * BLOCK_DOCS..((b + 1) * BLOCK_DOCS).min(p.len()))
                        .map(|i| bm25::tf_part(p.tfs[i], lengths[p.ordinals[i] as usize], 8.0))
                        .fold(0.0, f64::max);
                    assert!(f64::from(info.max_part) >= best && f64::from(info.max_part) < best * (1.0 + 1e-6), "{} {best}", info.max_part);
                }
            }
        }
    }

    /// Every byte of `docs` (a one-block term's documents in `bytes`) set to six values in
    /// turn: the block is refused, or read as rising ordinals below the segment's documents
    /// with frequencies of at least 1. Returns how many were refused and how many read.
    fn damage_each_byte(bytes: &[u8], docs: std::ops::Range<usize>, lengths: &[u32]) -> (usize, usize) {
        let (mut refused, mut read) = (0, 0);
        for at in docs {
            for v in [0u8, 1, 0x7f, 0x80, 0xff, bytes[at] ^ 1] {
                let mut damaged = bytes.to_vec();
                damaged[at] = v;
                let Ok(t) = TermBlock::open(&damaged, lengths.len() as u32) else {
                    refused += 1;
                    continue;
                };
                match PostingCursor::new(t, lengths, false) {
                    Err(_) => refused += 1,
                    Ok(c) => {
                        read += 1;
                        let (ords, tfs) = c.block_docs();
                        assert!(ords.windows(2).all(|w| w[0] < w[1]), "byte {at} = {v:#x}: {ords:?}");
                        assert!(ords.iter().all(|&o| o < lengths.len() as u32), "byte {at} = {v:#x}: {ords:?}");
                        assert!(tfs.iter().all(|&t| t >= 1), "byte {at} = {v:#x}: {tfs:?}");
                    }
                }
            }
        }
        (refused, read)
    }

    /// A short block (its documents as varints) with any byte of its documents damaged, to
    /// each of several values: refused, or read as documents that rise, below the segment's
    /// documents, each with a frequency of 1 or more (whichever path of the decoder reads
    /// them: gaps and frequencies of one byte, or longer).
    #[test]
    fn index_postings_damaged_short_block_is_refused_or_well_formed() {
        for n in [40u32, 127] {
            let (p, lengths) = sample(n, false);
            let mut bytes = Vec::new();
            encode_block(&mut bytes, &p, &lengths, &times(&lengths), 8.0);
            let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
            assert_eq!(t.block_count(), 1);
            let info = t.block(0).unwrap();
            let docs = t.layout.docs.start + info.docs.0..t.layout.docs.start + info.docs.1;
            let (refused, read) = damage_each_byte(&bytes, docs, &lengths);
            assert!(refused > 0 && read > 0, "n={n}: {refused} refused, {read} read");
            // Two bytes at once, so that the block still ends on its directory's last
            // ordinal: a gap of 0 (an ordinal repeated) with the next gap grown by as much, is
            // refused. (Here every gap and frequency is one byte: gap k at byte 2k.)
            let start = t.layout.docs.start + info.docs.0;
            for k in 1..n as usize - 1 {
                let (g, h) = (bytes[start + 2 * k], bytes[start + 2 * k + 2]);
                assert!(g < 0x80 && h < 0x80 && g + h < 0x80);
                let mut damaged = bytes.clone();
                damaged[start + 2 * k] = 0;
                damaged[start + 2 * k + 2] = g + h;
                let t = TermBlock::open(&damaged, lengths.len() as u32).unwrap();
                let e = PostingCursor::new(t, &lengths, false).map(|_| ()).unwrap_err();
                assert_eq!(e.reason, "ordinals do not ascend", "n={n}, gap {k}");
            }
        }
    }

    /// A short block whose gaps take one to four bytes (`k` its document's index) and whose
    /// frequencies one or two.
    fn spread_gap(k: u32) -> u32 {
        if k == 20 {
            return 1 << 21;
        }
        [1, 100, 127, 128, 200, 16_383, 16_384, 20_000][k as usize % 8]
    }

    fn spread_tf(k: u32) -> u32 {
        if k % 5 == 4 { 200 } else { 1 + k % 127 }
    }

    fn sample_spread(n: u32) -> (Postings, Vec<u32>) {
        let mut p = Postings::new(false);
        let mut ord = 0;
        for k in 0..n {
            ord += spread_gap(k);
            p.push(ord, spread_tf(k), &[]);
        }
        // Every document long enough for its frequency.
        let lengths = (0..ord + 10).map(|i| 300 + i % 7).collect();
        (p, lengths)
    }

    /// Gaps of one to four bytes and frequencies of one or two, in a short block: read as
    /// written, and damaged, refused or read as rising ordinals below the segment's documents
    /// with frequencies of at least 1.
    #[test]
    fn index_postings_short_block_of_long_gaps() {
        for n in [40u32, 127] {
            let (p, lengths) = sample_spread(n);
            let mut bytes = Vec::new();
            encode_block(&mut bytes, &p, &lengths, &times(&lengths), 8.0);
            let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
            assert_eq!(t.decode_all(&lengths, false).unwrap(), p, "n={n}");
            let info = t.block(0).unwrap();
            let start = t.layout.docs.start + info.docs.0;
            let end = t.layout.docs.start + info.docs.1;
            let c = PostingCursor::new(t, &lengths, false).unwrap();
            assert_eq!(c.block_docs(), (&p.ordinals[..], &p.tfs[..]), "n={n}");
            let (refused, read) = damage_each_byte(&bytes, start..end, &lengths);
            assert!(refused > 0 && read > 0, "n={n}: {refused} refused, {read} read");
            // A two-byte gap written as 0 (`0x80 0x00`, an ordinal repeated) with the next
            // two-byte gap grown by as much, so that the block still ends on its directory's
            // last ordinal: refused.
            let varint = |v: u32| {
                let mut b = Vec::new();
                put_varint(&mut b, u64::from(v));
                b
            };
            let mut at = start;
            let mut tried = 0;
            for k in 0..n - 1 {
                let (g, h) = (spread_gap(k), spread_gap(k + 1));
                let next = at + varint(g).len() + varint(spread_tf(k)).len();
                if varint(g).len() == 2 && varint(h).len() == 2 && varint(g + h).len() == 2 {
                    assert_eq!(bytes[at..at + 2], varint(g)[..], "gap {k}");
                    let mut damaged = bytes.clone();
                    damaged[at..at + 2].copy_from_slice(&[0x80, 0x00]);
                    damaged[next..next + 2].copy_from_slice(&varint(g + h));
                    let t = TermBlock::open(&damaged, lengths.len() as u32).unwrap();
                    let e = PostingCursor::new(t, &lengths, false).map(|_| ()).unwrap_err();
                    assert_eq!(e.reason, "ordinals do not ascend", "n={n}, gap {k}");
                    tried += 1;
                }
                at = next;
            }
            assert!(tried >= 4, "n={n}: {tried}");
        }
    }

    /// The cursor's documents, frequencies and positions, by next, seek and block skips,
    /// agree with the postings for disk and memory alike.
    #[test]
    fn index_postings_cursor_walks_seeks_and_skips() {
        let (p, lengths) = sample(1000, true);
        let tm = times(&lengths);
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p, &lengths, &tm, 8.0);
        let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let cursors: Vec<PostingCursor<'_>> = vec![
            PostingCursor::new(t, &lengths, true).unwrap(),
            PostingCursor::new(TermBlock::of(&p, &lengths, &tm, 8.0), &lengths, true).unwrap(),
        ];
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
                let info = *c.info().unwrap();
                assert!(c.points(&info).any(|(ptf, plen)| ptf >= tf && plen <= len));
                c.next().unwrap();
                i += 1;
            }
            assert_eq!(i, 1000);
        }
        for targets in [vec![0, 5, 400, 401, 2000, 2998, 2999], vec![1500], vec![3000]] {
            let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
            let mut c = PostingCursor::new(t, &lengths, true).unwrap();
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
        let mut c = PostingCursor::new(t, &lengths, false).unwrap();
        let second_block_first = p.ordinals[BLOCK_DOCS];
        assert_eq!(c.seek(p.ordinals[BLOCK_DOCS - 1] + 1).unwrap(), second_block_first);
        assert_eq!(c.block_last(), p.ordinals[2 * BLOCK_DOCS - 1]);
        assert_eq!(c.goto_entry(3, c.block_at(3).unwrap()).unwrap(), p.ordinals[3 * BLOCK_DOCS]);
    }

    #[test]
    fn index_postings_positions_follow_the_cursor_back_and_forth() {
        // Positions that differ from document to document, so reading another's shows.
        let lengths: Vec<u32> = vec![50; 1200];
        let mut p = Postings::new(true);
        for ord in (0..1200u32).filter(|o| o % 3 != 1) {
            let tf = 1 + ord % 4;
            let positions: Vec<u32> = (0..tf).map(|j| ord % 7 + j * 7).collect();
            p.push(ord, tf, &positions);
        }
        let tm = times(&lengths);
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p, &lengths, &tm, 8.0);
        let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let mut c = PostingCursor::new(t, &lengths, true).unwrap();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..4000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let target = (rng % 1210) as u32;
            let want = p.ordinals.iter().copied().find(|&o| o >= target).unwrap_or(END);
            assert_eq!(c.begin_at(target).unwrap(), want, "begin_at {target}");
            if want != END && rng % 3 != 0 {
                let i = p.ordinals.iter().position(|&o| o == want).unwrap();
                assert_eq!(c.positions().unwrap(), p.positions_of(i), "positions of {want} after begin_at {target}");
            }
        }
    }

    /// A cursor that decodes nothing until it is moved stands, after its first move of any
    /// kind, where one made on its first document stands after the same move, with the same
    /// frequency and positions; and nothing is decoded before.
    #[test]
    fn index_postings_unloaded_cursor_moves_as_a_loaded_one() {
        let (p, lengths) = sample(1000, true);
        let tm = times(&lengths);
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p, &lengths, &tm, 8.0);
        let open = || TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let last = *p.ordinals.last().unwrap();
        let (first, second) = (p.ordinals[0], p.ordinals[1]);
        let targets = [0, first, first + 1, second, p.ordinals[BLOCK_DOCS], p.ordinals[BLOCK_DOCS] + 1, last, last + 1];
        let state = |c: &mut PostingCursor<'_>| -> (u32, usize, Option<(u32, Vec<u32>)>) {
            let doc = c.doc();
            let rest = (doc != END).then(|| (c.tf(), c.positions().unwrap().to_vec()));
            (doc, c.block(), rest)
        };
        type Move = fn(&mut PostingCursor<'_>, u32) -> u32;
        let moves: [(&str, Move); 5] = [
            ("next", |c, _| c.next().unwrap()),
            ("seek", |c, t| c.seek(t).unwrap()),
            ("advance_to", |c, t| {
                c.advance_to(t).unwrap();
                c.doc()
            }),
            ("begin_at", |c, t| c.begin_at(t).unwrap()),
            ("goto_entry", |c, t| {
                let b = (t as usize / 200).min(7);
                c.goto_entry(b, c.block_at(b).unwrap()).unwrap()
            }),
        ];
        for (name, step) in moves {
            for &t in &targets {
                let mut lazy = PostingCursor::unloaded(open(), &lengths, true);
                assert_eq!(lazy.block(), NOT_LOADED, "nothing decoded before a move");
                assert_eq!(lazy.block_count(), open().block_count());
                let mut eager = PostingCursor::new(open(), &lengths, true).unwrap();
                assert_eq!(step(&mut lazy, t), step(&mut eager, t), "{name} {t}");
                assert_eq!(state(&mut lazy), state(&mut eager), "{name} {t}");
                // And on from there alike.
                for _ in 0..3 {
                    assert_eq!(lazy.next().unwrap(), eager.next().unwrap(), "{name} {t}, then next");
                }
            }
        }
        let mut found = (Vec::new(), Vec::new());
        let some: Vec<u32> = p.ordinals.iter().copied().step_by(7).collect();
        PostingCursor::unloaded(open(), &lengths, true).find_all(&some, &mut found.0).unwrap();
        PostingCursor::new(open(), &lengths, true).unwrap().find_all(&some, &mut found.1).unwrap();
        assert_eq!(found.0, found.1);
        assert_eq!(found.0.len(), some.len());
    }

    /// The walks beside ascending targets, one term at a time (`find_all`) and every term
    /// together (`begin_at`, then `advance_to`), against the list itself: each target the list
    /// holds is found with its frequency (and, walking together, its positions), none it does
    /// not hold, from wherever the cursor stood before (a driver's blocks come in any order),
    /// in lists dense, sparse and clustered beside the targets.
    #[test]
    fn index_postings_walks_beside_ascending_targets_agree_with_the_list() {
        let n = 6000u32;
        let lengths: Vec<u32> = vec![60; n as usize];
        let tm = times(&lengths);
        let lists: [fn(u32) -> bool; 3] = [|o| o % 7 != 3, |o| o % 23 == 0, |o| (o / 400) % 3 == 1 && o % 2 == 0];
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |m: u32| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % u64::from(m)) as u32
        };
        for holds in lists {
            let mut p = Postings::new(true);
            for ord in (0..n).filter(|&o| holds(o)) {
                let tf = 1 + ord % 5;
                let positions: Vec<u32> = (0..tf).map(|j| ord % 11 + j * 11).collect();
                p.push(ord, tf, &positions);
            }
            let mut bytes = Vec::new();
            encode_block(&mut bytes, &p, &lengths, &tm, 8.0);
            let t = TermBlock::open(&bytes, n).unwrap();
            assert!(t.block_count() > 2, "the list spans blocks");
            let mut c = PostingCursor::new(t, &lengths, true).unwrap();
            let (mut found, mut walked_all, mut walked_together) = (Vec::new(), 0usize, 0usize);
            for round in 0..400 {
                // Targets: up to 128 ascending ordinals from a window of random width (some
                // past the last ordinal), the list's own among them.
                let width = [200, 1500, n + 50][round % 3];
                let base = rand(n + 50 - width.min(n));
                let mut targets: Vec<u32> = (0..1 + rand(128)).map(|_| base + rand(width)).collect();
                targets.sort_unstable();
                targets.dedup();
                let want: Vec<Found> = targets
                    .iter()
                    .enumerate()
                    .filter_map(|(k, &o)| p.ordinals.binary_search(&o).ok().map(|i| Found { k: k as u32, tf: p.tfs[i] }))
                    .collect();
                c.begin_at(rand(n + 50)).unwrap();
                c.find_all(&targets, &mut found).unwrap();
                assert_eq!(found, want, "find_all {targets:?}");
                walked_all += found.len();
                c.begin_at(rand(n + 50)).unwrap();
                c.begin_at(targets[0]).unwrap();
                for (k, &target) in targets.iter().enumerate() {
                    let at = want.iter().find(|f| f.k as usize == k);
                    assert_eq!(c.advance_to(target).unwrap(), at.is_some(), "advance_to {target}");
                    if let Some(f) = at {
                        assert_eq!(c.doc(), target);
                        assert_eq!(c.tf(), f.tf);
                        if k % 2 == 0 {
                            let i = p.ordinals.binary_search(&target).unwrap();
                            assert_eq!(c.positions().unwrap(), p.positions_of(i), "positions of {target}");
                        }
                        walked_together += 1;
                    }
                }
            }
            assert!(walked_all > 400 && walked_together == walked_all, "{walked_all} {walked_together}");
        }
    }

    /// The step of both walks lands where a binary search from the same place does, from
    /// every place, for every target between and around the ordinals, in lists shorter and
    /// longer than the sixteen it counts (each of its four paths taken).
    #[test]
    fn index_postings_walk_step_lands_where_a_binary_search_does() {
        for len in [0usize, 1, 4, 5, 16, 17, 18, 40, 128] {
            let ords: Vec<u32> = (0..len as u32).map(|i| i * 3 + (i % 4)).collect();
            let top = ords.last().map_or(2, |&o| o + 2);
            for from in 0..=len {
                for target in 0..=top {
                    let want = from + ords[from..].partition_point(|&o| o < target);
                    assert_eq!(first_at_or_after(&ords, from, target), want, "len {len} from {from} target {target}");
                }
            }
        }
    }

    /// Positions whose gaps take one, two and three varint bytes (the short read path takes
    /// the first two, the checked walk the rest), and frequencies up to a thousand (skips of
    /// many words at a time), read back equal by walking and by seeking; positions that do not
    /// rise or run past the document are refused on either path.
    #[test]
    fn index_postings_positions_of_every_gap_size_read_back_and_damage_is_refused() {
        let lengths: Vec<u32> = (0..600u32).map(|o| if o % 5 == 0 { 1 << 20 } else { 3000 }).collect();
        let mut p = Postings::new(true);
        for ord in (0..600u32).filter(|o| o % 4 != 3) {
            let positions: Vec<u32> = if ord % 5 == 0 {
                // Gaps of 2^14 and more: three bytes.
                (0..3).map(|j| 5 + j * ((1 << 14) + ord)).collect()
            } else {
                // Gaps below 2^7 and below 2^14, and many positions.
                let tf = if ord % 7 == 0 { 1000 } else { 1 + ord % 6 };
                (0..tf).map(|j| j * if ord % 2 == 0 { 2 } else { 200 } % 2999).take_while(|&x| x < 3000).collect::<std::collections::BTreeSet<u32>>().into_iter().collect()
            };
            p.push(ord, positions.len() as u32, &positions);
        }
        let tm = times(&lengths);
        let mut bytes = Vec::new();
        encode_block(&mut bytes, &p, &lengths, &tm, 8.0);
        let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
        let mut c = PostingCursor::new(t, &lengths, true).unwrap();
        let mut i = 0;
        while c.doc() != END {
            if i % 2 == 0 || p.tfs[i] > 500 {
                let doc = c.doc();
                assert_eq!(c.positions().unwrap(), p.positions_of(i), "document {doc}");
            }
            c.next().unwrap();
            i += 1;
        }
        for target in [0u32, 13, 140, 141, 299, 300, 455, 598] {
            let t = TermBlock::open(&bytes, lengths.len() as u32).unwrap();
            let mut c = PostingCursor::new(t, &lengths, true).unwrap();
            let want = p.ordinals.iter().position(|&o| o >= target).unwrap();
            assert_eq!(c.seek(target).unwrap(), p.ordinals[want]);
            assert_eq!(c.positions().unwrap(), p.positions_of(want), "after seek {target}");
        }
        // The same positions read against shorter documents: the first position at or past a
        // document's length is refused, whichever path reads it.
        for ord in [1u32, 2, 5, 10] {
            let i = p.ordinals.iter().position(|&o| o == ord).unwrap();
            let mut short = lengths.clone();
            short[ord as usize] = *p.positions_of(i).last().unwrap();
            let t = TermBlock::open(&bytes, short.len() as u32).unwrap();
            let mut c = PostingCursor::new(t, &short, true).unwrap();
            assert_eq!(c.seek(ord).unwrap(), ord);
            let e = c.positions().unwrap_err();
            assert_eq!(e.reason, "position past the document's end", "document {ord}");
        }
    }

    #[test]
    fn index_postings_frontier_keeps_the_pairs_no_other_beats() {
        assert_eq!(frontier(&mut [(1, 10), (3, 40), (2, 5), (1, 5), (3, 50), (5, 100)], 20.0), [(2, 5), (3, 40), (5, 100)]);
        assert_eq!(frontier(&mut [(4, 7)], 20.0), [(4, 7)]);
        // Too many points: narrowed, and every pair still beaten by some point.
        let mut pairs: Vec<(u32, u32)> = (1..40).map(|i| (i, i * 3)).collect();
        let f = frontier(&mut pairs.clone(), 20.0);
        assert!(f.len() <= FRONTIER_POINTS_MAX);
        // Narrowing merges the lowest-scoring neighbours first: a peak in the middle of the
        // frontier is kept exact.
        let mut peaked: Vec<(u32, u32)> = (1..30).map(|i| (i, i * i)).collect();
        let g = frontier(&mut peaked.clone(), 20.0);
        let best = |ps: &[(u32, u32)]| ps.iter().map(|&(t, l)| bm25::tf_part(t, l, 20.0)).fold(0.0, f64::max);
        assert_eq!(best(&g), best(&peaked));
        assert!(peaked.iter_mut().all(|&mut (tf, len)| g.iter().any(|&(a, b)| a >= tf && b <= len)));
        assert!(pairs.iter_mut().all(|&mut (tf, len)| f.iter().any(|&(a, b)| a >= tf && b <= len)));
    }

    proptest! {
        /// Packed ordinals are taken as rising exactly when they rise from the previous block's
        /// last: for any previous ordinal, any width up to 32 bits and any packed bytes (gaps
        /// whose sums wrap u32 included), decoded by the packer itself.
        #[test]
        fn index_postings_packed_ordinals_rise_as_checked_one_by_one(
            prev in proptest::option::of(any::<u32>().prop_map(|p| p >> (p % 32))),
            nb_o in 0u8..=32,
            seed in any::<u64>(),
            small in any::<bool>(),
        ) {
            let packer = BitPacker4x::new();
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..BitPacker4x::compressed_block_size(nb_o))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly small gaps now and then, so that wide blocks that do not wrap occur.
                    if small { (x & 0x03) as u8 } else { x as u8 }
                })
                .collect();
            let mut ords = vec![0u32; BLOCK_DOCS];
            packer.decompress_strictly_sorted(prev, &bytes, &mut ords, nb_o);
            let rises = ords.windows(2).all(|w| w[0] < w[1]) && prev.is_none_or(|p| ords[0] > p);
            prop_assert_eq!(packed_ordinals_rise(prev, &ords, nb_o), rises, "prev {:?}, width {}", prev, nb_o);
        }

        /// Packed frequencies are taken as within the limit exactly when every one (stored
        /// less one) is below `DOC_TOKENS_MAX`, for any width up to 32 bits and any bytes.
        #[test]
        fn index_postings_packed_frequencies_fit_as_checked_one_by_one(nb_t in 0u8..=32, bytes in proptest::collection::vec(any::<u8>(), 512)) {
            let packer = BitPacker4x::new();
            let mut tfs = vec![0u32; BLOCK_DOCS];
            packer.decompress(&bytes[..BitPacker4x::compressed_block_size(nb_t)], &mut tfs, nb_t);
            let fit = tfs.iter().all(|&t| t < DOC_TOKENS_MAX);
            prop_assert_eq!(packed_frequencies_fit(&tfs, nb_t), fit, "width {}", nb_t);
        }

        /// Every pair is beaten or tied by a frontier point, and the frontier's points are pairs
        /// (when not narrowed) or beat pairs (when narrowed).
        #[test]
        fn index_postings_frontier_bounds_every_pair(pairs in proptest::collection::vec((1u32..50, 1u32..500), 1..128)) {
            let f = frontier(&mut pairs.clone(), 30.0);
            prop_assert!(!f.is_empty() && f.len() <= FRONTIER_POINTS_MAX);
            prop_assert!(f.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
            for &(tf, len) in &pairs {
                prop_assert!(f.iter().any(|&(a, b)| a >= tf && b <= len), "({tf}, {len}) beats {f:?}");
            }
        }

        /// Skipping positions by counting the bytes that end varints lands where decoding
        /// them one by one does, for values of every width, and fails past the end.
        #[test]
        fn index_postings_skip_lands_where_decoding_does(values in proptest::collection::vec(any::<u32>().prop_map(|v| v >> (v % 32)), 0..60), count in 0usize..70) {
            let mut bytes = Vec::new();
            for &v in &values {
                put_varint(&mut bytes, u64::from(v));
            }
            let mut r = PosReader { at: 0, end: bytes.len() };
            let skipped = r.skip(&bytes, count as u64);
            if count <= values.len() {
                let mut c = Bytes::new(&bytes);
                for _ in 0..count {
                    c.varint().unwrap();
                }
                prop_assert_eq!(skipped, Ok(()));
                prop_assert_eq!(r.at, c.at);
            } else {
                prop_assert!(skipped.is_err());
            }
        }

        #[test]
        fn index_postings_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..50) {
            let lengths = vec![20u32; n];
            if let Ok(t) = TermBlock::open(&bytes, n as u32) {
                let _ = t.decode_all(&lengths, true);
                for b in 0..t.block_count() {
                    let _ = t.block(b);
                }
                if let Ok(mut c) = PostingCursor::new(t, &lengths, true) {
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

//! The in-memory segment: where new documents go until the caller commits them to disk.
//!
//! Adding a document is a hash lookup per token, so the layout is built around cache misses
//! (the index benchmark's profile of the earlier layout, a map of boxed strings to vectors per
//! term, spent most of its time waiting on memory: a term's key, its postings' headers and
//! their tails were each a miss, for every occurrence):
//! - a table of 8-byte slots (the term's hash tag and number), open addressing, at most half
//!   full, so that a lookup usually reads one slot;
//! - per term one 64-byte record holding its key when short (15 bytes or less; longer keys
//!   are kept in an arena of their own), its stem, where its postings go, and what the
//!   document being added holds of it. A lookup that finds the slot reads the record to
//!   compare the key, and the occurrence is counted in the same cache line;
//! - each term's postings are one stream of varints, appended in chunks of a paged arena
//!   (chunks double in size, up to 32 KiB), written once per document and term when the
//!   document ends: positions of the document being added wait in a list threaded through a
//!   buffer of the document's occurrences.
//!
//! A term's stream holds, per document: the ordinal's delta from the term's previous document
//! (the first absolute), the term frequency, then (for terms with positions) as many position
//! deltas within the document (the first absolute).
//!
//! Each word's stem is computed once, the first time the word is seen. A word that is its own
//! stem (`test`) is not written in its stem term's stream (`\u{1}test` holds `tests`,
//! `tested`, …): a partial match reads the word's postings beside the stem's, and the stem
//! term counts the documents that hold both (`Postings::shared`), for the union's document
//! frequency. That spares a stream entry per document for most words.
//!
//! Two adjacent words of which one is a stop word also add their pair term (`pairs.rs`), a
//! term without positions, as a token of the document after the second word; whether a word
//! is a stop word is found by its hash, computed anyway (`stop_table`).

use std::hash::Hasher;

use rustc_hash::FxHasher;

use super::doc::DocTable;
use super::limits::SEGMENT_DOCS_MAX;
use super::pairs::{STOP_WORD_BYTES_MAX, push_pair};
use super::postings::{Postings, put_varint};
use super::stem::Stems;
use super::token::{TextForm, TokenKind, for_each_token_of};
use super::{DocId, DocMeta, IndexError};

/// No term, document, chunk or occurrence.
const NONE: u32 = u32::MAX;
/// A word's stem term is not computed yet.
const STEM_UNKNOWN: u32 = u32::MAX;
/// A word has no stem term (a stop word), or the term is not a word; of a stem term, no word
/// spells it.
const STEM_NONE: u32 = u32::MAX - 1;
/// A word is its own stem: its occurrences are not written in the stem term.
const STEM_SAME: u32 = u32::MAX - 2;
/// Keys up to this many bytes are kept in the term's record.
const INLINE_KEY: usize = 15;
/// log2 of an arena page's size.
const PAGE_BITS: u32 = 20;
/// An arena page's size. Chunks start at multiples of 8 bytes, and a chunk's address is
/// `page << (PAGE_BITS - 3) | offset / 8` in a `u32`.
const PAGE_SIZE: usize = 1 << PAGE_BITS;
/// Pages a segment's arena may hold (32 GiB of postings).
const PAGES_MAX: usize = 1 << (32 - (PAGE_BITS - 3));
/// A chunk's header: bytes used, next chunk (the capacity follows from the used bytes of a
/// chunk that is not the last: they fill it).
const CHUNK_HEADER: usize = 8;
/// log2 of the first chunk's capacity, and of the largest a chunk grows to (below 2^16: the
/// bytes used fit a `u16`).
const CHUNK_FIRST_LOG: u8 = 4;
const CHUNK_MAX_LOG: u8 = 15;

/// The most bytes [`MemorySegment::append_small`] stores: three varints of a `u32`.
const SMALL_ENTRY: usize = 16;

/// Writes `v` as a varint into `buf` at `at`; returns the end (`buf` has room: at most five
/// bytes per value, three values in [`SMALL_ENTRY`]).
#[inline]
fn put_varint_into(buf: &mut [u8; SMALL_ENTRY], mut at: usize, mut v: u32) -> usize {
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

/// One term: 64 bytes, one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Term {
    /// The high half of the key's hash (the low half places it in the slots).
    tag: u32,
    /// Of a word: its stem term's number, [`STEM_NONE`], [`STEM_SAME`] or [`STEM_UNKNOWN`].
    /// Of a stem term: the number of the word that spells it and is its own stem, or
    /// [`STEM_NONE`].
    stem: u32,
    /// First and last chunk of the postings stream ([`NONE`] before the first document).
    head: u32,
    tail: u32,
    /// Documents in the stream, and the ordinal of the last one.
    count: u32,
    last_ord: u32,
    /// The document being added, if it holds the term: its ordinal, the term's frequency in
    /// it, and the first and last of its occurrences in [`MemorySegment::occurrences`] (of a
    /// term without positions, `cur_last` is the position of its last occurrence).
    cur_ord: u32,
    cur_tf: u32,
    cur_first: u32,
    cur_last: u32,
    /// Bytes used in the last chunk, and log2 of its capacity: kept here so that appending
    /// reads nothing of the chunk (a write to its end, which the processor need not wait for).
    tail_used: u16,
    tail_capacity_log: u8,
    with_positions: bool,
    /// The key's bytes if at most [`INLINE_KEY`], zero after them, else its offset in the
    /// long-key arena (the first four bytes, little-endian); the last byte is the key's length.
    /// A short key is thus found by comparing 16 bytes as one number ([`key_form`]).
    key: [u8; 16],
    /// Of a stem term: its documents that also hold the word [`Term::stem`] names.
    shared: u32,
}

const _: () = assert!(std::mem::size_of::<Term>() == 64);

/// A term's postings in the in-memory segment.
#[derive(Clone, Copy)]
pub(crate) struct MemPostings<'a> {
    segment: &'a MemorySegment,
    term: &'a Term,
}

impl MemPostings<'_> {
    /// Number of documents.
    pub(crate) fn len(&self) -> u32 {
        self.term.count
    }

    /// Of a stem term, its documents that also hold the word it spells
    /// ([`Postings::shared`]).
    pub(crate) fn shared(&self) -> u32 {
        self.term.shared
    }

    /// The postings, decoded (the bytes were written here, so they decode).
    pub(crate) fn decode(&self) -> Postings {
        let mut p = Postings::new(self.term.with_positions);
        self.decode_into(&mut p, &mut Vec::new());
        p
    }

    /// The postings, decoded into `p` (emptied first); `bytes` is scratch space.
    pub(crate) fn decode_into(&self, p: &mut Postings, bytes: &mut Vec<u8>) {
        p.reset(self.term.with_positions);
        p.shared = self.term.shared;
        bytes.clear();
        self.segment.stream(self.term, bytes);
        let mut r = Reader(bytes, 0);
        let mut ord = 0u32;
        for i in 0..self.term.count {
            let delta = r.next();
            ord = if i == 0 { delta } else { ord + delta };
            let tf = r.next();
            // The positions are written as a segment keeps them: their bytes are copied.
            let from = r.1;
            if self.term.with_positions {
                for _ in 0..tf {
                    r.next();
                }
            }
            p.push_encoded(ord, tf, &bytes[from..r.1]);
        }
    }
}

/// Reads the varints the segment wrote.
struct Reader<'a>(&'a [u8], usize);

impl Reader<'_> {
    fn next(&mut self) -> u32 {
        let mut v = 0u32;
        let mut shift = 0;
        while let Some(&b) = self.0.get(self.1) {
            self.1 += 1;
            v |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        v
    }
}

/// New documents: their table, and per term its postings.
pub(crate) struct MemorySegment {
    pub(crate) docs: DocTable,
    /// Slots: the hash's high half (the tag) above the term's number; [`NONE`] numbers are
    /// free. The length is a power of two.
    slots: Vec<u64>,
    terms: Vec<Term>,
    long_keys: Vec<u8>,
    pages: Vec<Box<[u8]>>,
    /// Bytes used in the last page.
    page_used: usize,
    /// The document being added: each occurrence's position and the next occurrence of the
    /// same term ([`NONE`] for the last).
    occurrences: Vec<(u32, u32)>,
    /// Terms the document being added holds, to write when it ends.
    touched: Vec<u32>,
    /// Where a document's entry is encoded before it is appended.
    scratch: Vec<u8>,
    /// The document being added by [`MemorySegment::add`], tokenized.
    prepared: Prepared,
}

/// A document tokenized for [`MemorySegment::add_prepared`]: its tokens' terms, one after
/// another, and its tokens with their hashes and pair terms. Made by [`Prepared::prepare`],
/// which reads nothing of a segment, so that documents can be tokenized on one thread and
/// added on another.
#[derive(Default)]
pub(crate) struct Prepared {
    terms: String,
    tokens: Vec<DocToken>,
    /// Positions the document takes (its last token's, plus one).
    length: u32,
    /// Where a pair term's key is put together.
    pair: String,
    /// The words and parts at the last word's position and the one before it, while
    /// preparing ([`Prepared::prepare`]).
    before: Vec<(u32, u32, bool)>,
    here: Vec<(u32, u32, bool)>,
}

/// A token of a prepared document.
struct DocToken {
    /// Its term in [`Prepared::terms`].
    start: u32,
    end: u32,
    position: u32,
    /// A word or a part of one: it has a stem term.
    word: bool,
    /// A pair term ([`super::pairs`]): no positions, no stem.
    pair: bool,
    hash: u64,
}

/// Slots of [`stop_table`]: a power of two, at least twice the stop words.
const STOP_SLOTS: usize = 512;

/// The stop words by hash, open addressing on the hash's low bits: `(hash, one more than the
/// index in the list)`, 0 an empty slot. A token's hash, computed anyway, finds whether it is
/// a stop word in a load or two and, on a match, one comparison of a few bytes.
fn stop_table() -> &'static [(u64, u8); STOP_SLOTS] {
    static TABLE: std::sync::OnceLock<[(u64, u8); STOP_SLOTS]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [(0u64, 0u8); STOP_SLOTS];
        for (k, w) in super::stem::STOP_WORDS.iter().enumerate() {
            let h = hash(w.as_bytes());
            let mut i = h as usize & (STOP_SLOTS - 1);
            while t[i].1 != 0 {
                i = (i + 1) & (STOP_SLOTS - 1);
            }
            // Fewer than 255 stop words (a test checks), so the index fits.
            t[i] = (h, (k + 1) as u8);
        }
        t
    })
}

/// True if the word `term` (of hash `h`) is a stop word: exactly [`super::stem::is_stop_word`].
#[inline]
fn is_stop(table: &[(u64, u8); STOP_SLOTS], h: u64, term: &str) -> bool {
    if term.len() > STOP_WORD_BYTES_MAX {
        return false;
    }
    let mut i = h as usize & (STOP_SLOTS - 1);
    loop {
        match table[i] {
            (_, 0) => return false,
            (x, k) if x == h && super::stem::STOP_WORDS[usize::from(k) - 1] == term => return true,
            _ => i = (i + 1) & (STOP_SLOTS - 1),
        }
    }
}

/// Tokens whose slots and records are read ahead together.
const TOKEN_BATCH: usize = 64;

impl Default for MemorySegment {
    fn default() -> MemorySegment {
        MemorySegment {
            docs: DocTable::default(),
            slots: vec![u64::from(NONE); 1 << 12],
            terms: Vec::new(),
            long_keys: Vec::new(),
            pages: Vec::new(),
            page_used: 0,
            occurrences: Vec::new(),
            touched: Vec::new(),
            scratch: Vec::new(),
            prepared: Prepared::default(),
        }
    }
}

/// A key as a term record holds it ([`Term::key`]), as a number: its bytes if at most
/// [`INLINE_KEY`] (zero after them), and its length in the top byte. Of a longer key, only the
/// length byte counts.
fn key_form(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    if key.len() <= INLINE_KEY {
        b[..key.len()].copy_from_slice(key);
    }
    b[INLINE_KEY] = key.len().min(usize::from(u8::MAX)) as u8;
    u128::from_le_bytes(b)
}

/// [`key_form`] of the key `bytes[start..end]`, where `bytes` holds at least 16 bytes from
/// `start` on: one load of 16 bytes and a mask, no copy by length.
#[inline]
fn key_form_at(bytes: &[u8], start: usize, end: usize) -> u128 {
    let len = end - start;
    let length_byte = (len.min(usize::from(u8::MAX)) as u128) << 120;
    if len > INLINE_KEY {
        return length_byte;
    }
    let mut word = [0u8; 16];
    word.copy_from_slice(&bytes[start..start + 16]);
    let v = u128::from_le_bytes(word);
    (v & ((1u128 << (8 * len)) - 1)) | length_byte
}

fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

/// Bytes of terms a [`Prepared`] keeps room for between documents; one prepared for a larger
/// document gives the rest back ([`Prepared::trim`]).
const PREPARED_KEPT_BYTES: usize = 1 << 16;

impl Prepared {
    /// Gives back what a large document made it hold beyond a typical document's room.
    pub(crate) fn trim(&mut self) {
        self.terms.shrink_to(PREPARED_KEPT_BYTES);
        self.tokens.shrink_to(PREPARED_KEPT_BYTES / 8);
    }

    /// Tokenizes `text`: each token with its hash, and the pair terms of adjacent words of
    /// which one is a stop word. A word's parts (rule 5 of `token`) stand at its position, so
    /// they pair with the words (and parts) beside it as it does: a phrase matches a part
    /// next to a word, and a phrase a document holds must find its pair terms there.
    pub(crate) fn prepare(&mut self, text: &str, form: TextForm) {
        let Prepared { terms, tokens, length, pair, before, here } = self;
        terms.clear();
        tokens.clear();
        before.clear();
        here.clear();
        *length = 0;
        let stops = stop_table();
        // The words (and their parts) at the last word's position, and at the one before it
        // if that held words too: where each term is, and whether it is a stop word. Every
        // two at adjacent positions of which one is a stop word add their pair term.
        let mut here_position = 0;
        for_each_token_of(text, form, &mut |t| {
            let start = terms.len();
            terms.push_str(t.term);
            let end = terms.len() as u32;
            let h = hash(t.term.as_bytes());
            let word = t.kind == TokenKind::Word;
            let stemmed = word || t.kind == TokenKind::Part;
            tokens.push(DocToken { start: start as u32, end, position: t.position, word: stemmed, pair: false, hash: h });
            *length = t.position + 1;
            if !stemmed {
                before.clear();
                here.clear();
                return;
            }
            if word {
                std::mem::swap(before, here);
                if here_position + 1 != t.position {
                    before.clear();
                }
                here.clear();
                here_position = t.position;
            }
            let stop = is_stop(stops, h, t.term);
            for &(a_start, a_end, a_stop) in before.iter() {
                pair.clear();
                if push_pair(pair, &terms[a_start as usize..a_end as usize], a_stop, t.term, stop) {
                    let p_start = terms.len();
                    terms.push_str(pair);
                    tokens.push(DocToken {
                        start: p_start as u32,
                        end: terms.len() as u32,
                        position: t.position - 1,
                        word: false,
                        pair: true,
                        hash: hash(pair.as_bytes()),
                    });
                }
            }
            here.push((start as u32, end, stop));
        });
        // Room to read 16 bytes from any token's start ([`key_form_at`]).
        terms.push_str("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
    }
}

impl MemorySegment {
    fn key<'a>(&'a self, t: &'a Term) -> &'a [u8] {
        let n = usize::from(t.key[INLINE_KEY]);
        if n <= INLINE_KEY {
            &t.key[..n]
        } else {
            let at = u32::from_le_bytes([t.key[0], t.key[1], t.key[2], t.key[3]]) as usize;
            &self.long_keys[at..at + n]
        }
    }

    /// The term's number, added if new.
    fn intern(&mut self, term: &str, positions: bool) -> u32 {
        let key = term.as_bytes();
        self.intern_hashed(term, hash(key), key_form(key), positions)
    }

    /// Where `key` (hashed to `h`, of [`key_form`] `form`) is in the slots: its slot and
    /// number if held, else the free slot where it goes.
    #[inline]
    fn probe(&self, key: &[u8], h: u64, form: u128) -> (usize, Option<u32>) {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let slot = self.slots[i];
            let id = slot as u32;
            if id == NONE {
                return (i, None);
            }
            if slot >> 32 == h >> 32 {
                let t = &self.terms[id as usize];
                // A short key is its record's 16 bytes; a long one has the same length byte
                // and its bytes in the arena. (A call to `memcmp` per token was a tenth of the
                // feed's samples.)
                let same = if key.len() <= INLINE_KEY {
                    u128::from_le_bytes(t.key) == form
                } else {
                    t.key[INLINE_KEY] == (form >> 120) as u8 && self.key(t) == key
                };
                if same {
                    return (i, Some(id));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// [`MemorySegment::intern`] of a term whose hash is `h` and [`key_form`] `form`.
    #[inline]
    fn intern_hashed(&mut self, term: &str, h: u64, form: u128, positions: bool) -> u32 {
        let key = term.as_bytes();
        let tag = h >> 32;
        let (i, found) = self.probe(key, h, form);
        if let Some(id) = found {
            return id;
        }
        let id = self.terms.len() as u32;
        let mut t = Term {
            tag: tag as u32,
            stem: STEM_UNKNOWN,
            head: NONE,
            tail: NONE,
            count: 0,
            last_ord: NONE,
            cur_ord: NONE,
            cur_tf: 0,
            cur_first: NONE,
            cur_last: NONE,
            tail_used: 0,
            tail_capacity_log: 0,
            with_positions: positions,
            key: form.to_le_bytes(),
            shared: 0,
        };
        assert!(key.len() <= usize::from(u8::MAX), "terms are cut to at most 128 bytes");
        if key.len() > INLINE_KEY {
            let at = self.long_keys.len() as u32;
            self.long_keys.extend_from_slice(key);
            t.key = [0; 16];
            t.key[..4].copy_from_slice(&at.to_le_bytes());
            t.key[INLINE_KEY] = key.len() as u8;
        }
        self.terms.push(t);
        self.slots[i] = (tag << 32) | u64::from(id);
        if self.terms.len() * 2 > self.slots.len() {
            self.grow();
        }
        id
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let mask = size - 1;
        let mut slots = vec![u64::from(NONE); size];
        for (id, t) in self.terms.iter().enumerate() {
            // The slot's place is the hash's low half, computed again (growing is rare).
            let mut i = hash(self.key(t)) as usize & mask;
            while slots[i] as u32 != NONE {
                i = (i + 1) & mask;
            }
            slots[i] = (u64::from(t.tag) << 32) | id as u64;
        }
        self.slots = slots;
    }

    fn find(&self, term: &str) -> Option<&Term> {
        self.find_id(term).map(|id| &self.terms[id as usize])
    }

    fn find_id(&self, term: &str) -> Option<u32> {
        let key = term.as_bytes();
        self.probe(key, hash(key), key_form(key)).1
    }

    /// An occurrence of term `id` in document `ordinal` (the one being added) at `position`
    /// (rising within the document). A term without positions counts a position once: the
    /// parts of one word (rule 5 of `token`) may share a stem term (`parseParser`), and a
    /// term's frequency stays within the document's length.
    #[inline]
    fn occur(&mut self, id: u32, ordinal: u32, position: u32) {
        let t = &mut self.terms[id as usize];
        let first = t.cur_ord != ordinal;
        if first {
            t.cur_ord = ordinal;
            t.cur_tf = 0;
            t.cur_first = NONE;
            self.touched.push(id);
        } else if !t.with_positions && t.cur_last == position {
            return;
        }
        t.cur_tf += 1;
        if !t.with_positions {
            t.cur_last = position;
        } else {
            let at = self.occurrences.len() as u32;
            self.occurrences.push((position, NONE));
            if t.cur_first == NONE {
                t.cur_first = at;
            } else {
                self.occurrences[t.cur_last as usize].1 = at;
            }
            t.cur_last = at;
        }
    }

    /// What the word `word` (number `id`, just seen for the first time) does for its stem
    /// term: its number, [`STEM_SAME`] or [`STEM_NONE`]. Links a word that is its own stem and
    /// the stem term that it spells, whichever comes first.
    fn stem_of(&mut self, id: u32, word: &str, stems: &Stems) -> u32 {
        let Some(key) = stems.stem_word(word) else { return STEM_NONE };
        let spelled = &key[super::stem::STEM_PREFIX.len_utf8()..];
        if spelled == word {
            if let Some(sid) = self.find_id(&key) {
                self.terms[sid as usize].stem = id;
            }
            return STEM_SAME;
        }
        let known = self.find_id(&key);
        let sid = self.intern(&key, false);
        if known.is_none() {
            let link = self.find_id(spelled).filter(|&w| self.terms[w as usize].stem == STEM_SAME);
            self.terms[sid as usize].stem = link.unwrap_or(STEM_NONE);
        }
        sid
    }

    /// A new chunk of `1 << log` bytes of data; returns its address.
    fn chunk(&mut self, log: u8) -> u32 {
        let need = CHUNK_HEADER + (1usize << log);
        if self.pages.is_empty() || self.page_used + need > PAGE_SIZE {
            assert!(self.pages.len() < PAGES_MAX, "the in-memory segment's arena is full (checked before each document)");
            self.pages.push(vec![0u8; PAGE_SIZE].into_boxed_slice());
            self.page_used = 0;
        }
        let page = self.pages.len() - 1;
        let at = self.page_used;
        self.pages[page][at + 4..at + 8].copy_from_slice(&NONE.to_le_bytes());
        self.page_used += need;
        ((page as u32) << (PAGE_BITS - 3)) | (at >> 3) as u32
    }

    /// The page and byte offset of the chunk at `address`.
    fn place(address: u32) -> (usize, usize) {
        ((address >> (PAGE_BITS - 3)) as usize, ((address as usize) << 3) & (PAGE_SIZE - 1))
    }

    /// A chunk's header: bytes used (true of every chunk but a term's last), next chunk.
    fn header(&self, address: u32) -> (usize, u32) {
        let (page, at) = Self::place(address);
        let p = &self.pages[page][at..at + CHUNK_HEADER];
        let word = |i: usize| u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
        (word(0) as usize, word(4))
    }

    /// Appends an entry of at most [`SMALL_ENTRY`] bytes (the delta, the frequency, and the
    /// position if the term keeps positions and occurs once) to term `id`'s stream when its
    /// last chunk has that many bytes left: encoded on the stack and stored whole, so that
    /// nothing is copied by length (a copy of a few bytes by `memcpy` was 6% of the feed's
    /// samples). The bytes stored past the entry are in the chunk's unused part and are
    /// written over by the next entry. False, storing nothing, otherwise.
    #[inline]
    fn append_small(&mut self, id: u32, delta: u32, tf: u32, first: u32) -> bool {
        let t = &self.terms[id as usize];
        let (used, log) = (usize::from(t.tail_used), t.tail_capacity_log);
        if (t.with_positions && tf != 1) || t.tail == NONE || (1usize << log) - used < SMALL_ENTRY {
            return false;
        }
        let mut buf = [0u8; SMALL_ENTRY];
        let mut n = put_varint_into(&mut buf, 0, delta);
        n = put_varint_into(&mut buf, n, tf);
        if t.with_positions {
            n = put_varint_into(&mut buf, n, self.occurrences[first as usize].0);
        }
        let (page, at) = Self::place(t.tail);
        let from = at + CHUNK_HEADER + used;
        self.pages[page][from..from + SMALL_ENTRY].copy_from_slice(&buf);
        self.terms[id as usize].tail_used = (used + n) as u16;
        true
    }

    /// Appends `scratch` to term `id`'s stream.
    fn append(&mut self, id: u32) {
        let scratch = std::mem::take(&mut self.scratch);
        let mut bytes = &scratch[..];
        let t = &self.terms[id as usize];
        let (mut tail, mut used, mut log) = (t.tail, usize::from(t.tail_used), t.tail_capacity_log);
        if tail == NONE {
            log = CHUNK_FIRST_LOG;
            tail = self.chunk(log);
            self.terms[id as usize].head = tail;
            used = 0;
        }
        loop {
            let n = bytes.len().min((1usize << log) - used);
            let (page, at) = Self::place(tail);
            let from = at + CHUNK_HEADER + used;
            self.pages[page][from..from + n].copy_from_slice(&bytes[..n]);
            used += n;
            bytes = &bytes[n..];
            if bytes.is_empty() {
                break;
            }
            // The chunk is full: it records so, and links the next, twice as large.
            log = (log + 1).min(CHUNK_MAX_LOG);
            let next = self.chunk(log);
            let (page, at) = Self::place(tail);
            self.pages[page][at..at + 4].copy_from_slice(&(used as u32).to_le_bytes());
            self.pages[page][at + 4..at + 8].copy_from_slice(&next.to_le_bytes());
            tail = next;
            used = 0;
        }
        let t = &mut self.terms[id as usize];
        t.tail = tail;
        t.tail_used = used as u16;
        t.tail_capacity_log = log;
        self.scratch = scratch;
    }

    /// A term's stream, concatenated into `out`.
    fn stream(&self, t: &Term, out: &mut Vec<u8>) {
        let mut at = t.head;
        while at != NONE {
            let (used, next) = self.header(at);
            let used = if at == t.tail { usize::from(t.tail_used) } else { used };
            let (page, offset) = Self::place(at);
            out.extend_from_slice(&self.pages[page][offset + CHUNK_HEADER..offset + CHUNK_HEADER + used]);
            at = if at == t.tail { NONE } else { next };
        }
    }

    /// Ends the document being added: writes its entry in each term it holds.
    fn close(&mut self, ordinal: u32) {
        let touched = std::mem::take(&mut self.touched);
        // Where each entry goes is read first, all together: the ends of the streams are cache
        // misses, waited for at once rather than one by one as each entry is written.
        let mut ahead = 0u8;
        for &id in &touched {
            let t = &self.terms[id as usize];
            if t.tail != NONE {
                let (page, at) = Self::place(t.tail);
                let end = usize::from(t.tail_used).min((1usize << t.tail_capacity_log) - 1);
                ahead ^= self.pages[page][at + CHUNK_HEADER + end];
            }
        }
        std::hint::black_box(ahead);
        for &id in &touched {
            // A stem term: does the document also hold the word that spells it? (That word
            // stands on this ordinal, written already or not yet.)
            let word = self.terms[id as usize].stem;
            if !self.terms[id as usize].with_positions && word < STEM_SAME {
                let w = &self.terms[word as usize];
                if w.cur_ord == ordinal || w.last_ord == ordinal {
                    self.terms[id as usize].shared += 1;
                }
            }
            let t = &self.terms[id as usize];
            let (last_ord, cur_tf, cur_first, with_positions) = (t.last_ord, t.cur_tf, t.cur_first, t.with_positions);
            let delta = if last_ord == NONE { ordinal } else { ordinal - last_ord };
            if !self.append_small(id, delta, cur_tf, cur_first) {
                self.scratch.clear();
                put_varint(&mut self.scratch, u64::from(delta));
                put_varint(&mut self.scratch, u64::from(cur_tf));
                if with_positions {
                    let (mut at, mut last) = (cur_first, None);
                    while at != NONE {
                        let (p, next) = self.occurrences[at as usize];
                        put_varint(&mut self.scratch, u64::from(last.map_or(p, |l| p - l)));
                        last = Some(p);
                        at = next;
                    }
                }
                self.append(id);
            }
            let t = &mut self.terms[id as usize];
            t.count += 1;
            t.last_ord = ordinal;
            t.cur_ord = NONE;
        }
        self.touched = touched;
        self.touched.clear();
        self.occurrences.clear();
    }

    /// Tokenizes and adds one document (its id not yet in the index: the caller checks).
    pub(crate) fn add(&mut self, doc: DocId, meta: &DocMeta, text: &str, stems: &Stems) -> Result<(), IndexError> {
        let mut prepared = std::mem::take(&mut self.prepared);
        prepared.prepare(text, meta.text_form(text));
        let added = self.add_prepared(doc, meta, &prepared, stems);
        self.prepared = prepared;
        added
    }

    /// Adds one document tokenized by [`Prepared::prepare`] (its id not yet in the index: the
    /// caller checks). The same as [`MemorySegment::add`] of its text.
    pub(crate) fn add_prepared(&mut self, doc: DocId, meta: &DocMeta, prepared: &Prepared, stems: &Stems) -> Result<(), IndexError> {
        DocTable::check_meta(meta).map_err(IndexError::Invalid)?;
        if self.docs.len() >= SEGMENT_DOCS_MAX {
            return Err(IndexError::Invalid(format!(
                "the in-memory segment holds {SEGMENT_DOCS_MAX} documents; commit before adding more"
            )));
        }
        // What one document can add to the arena: its tokens (pair terms included) each write
        // at most 15 bytes of stream with its stem's, and 10 more of a pair term's, in chunks
        // at most 4 times what they hold (each chunk at most doubles the full one before it),
        // plus a header and page ends. 192 bytes per token and two pages bound it. (The
        // tokens counted, not the text's bytes: a character may fold to several units, `㌀`
        // to four katakana.)
        let tokens = prepared.tokens.len();
        let bound = tokens * 192 + 2 * PAGE_SIZE;
        if (self.pages.len() * PAGE_SIZE).saturating_add(bound) > PAGES_MAX * PAGE_SIZE {
            return Err(IndexError::Invalid("the in-memory segment's postings are full; commit before adding more".into()));
        }
        let ordinal = self.docs.len();
        // A batch of tokens at a time, the slots of the batch and the records they name are
        // read ahead of their use, so that the processor waits for many cache misses at once
        // rather than for two per token.
        let terms = prepared.terms.as_str();
        for batch in prepared.tokens.chunks(TOKEN_BATCH) {
            let mask = self.slots.len() - 1;
            let mut touched = 0u64;
            for t in batch {
                touched ^= self.slots[t.hash as usize & mask];
            }
            for t in batch {
                let id = self.slots[t.hash as usize & mask] as u32;
                if let Some(r) = self.terms.get(id as usize) {
                    touched ^= u64::from(r.tag);
                }
            }
            std::hint::black_box(touched);
            for t in batch {
                let term = &terms[t.start as usize..t.end as usize];
                let form = key_form_at(terms.as_bytes(), t.start as usize, t.end as usize);
                let id = self.intern_hashed(term, t.hash, form, !t.pair);
                self.occur(id, ordinal, t.position);
                if t.word {
                    let mut stem = self.terms[id as usize].stem;
                    if stem == STEM_UNKNOWN {
                        stem = self.stem_of(id, term, stems);
                        self.terms[id as usize].stem = stem;
                    }
                    if stem < STEM_SAME {
                        self.occur(stem, ordinal, t.position);
                    }
                }
            }
        }
        self.close(ordinal);
        let pushed = self.docs.push(doc, meta, prepared.length);
        assert_eq!(pushed, ordinal, "the document takes the ordinal its postings were given");
        Ok(())
    }

    /// About the bytes of memory the segment takes: its arena's pages, terms, slots, long
    /// keys and document table (what [`crate::catalog::Catalog::wants_commit`] weighs).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.pages.len() * PAGE_SIZE
            + self.terms.capacity() * size_of::<Term>()
            + self.slots.capacity() * 8
            + self.long_keys.capacity()
            + self.docs.heap_bytes()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// The postings of `term`, if a document added holds it.
    pub(crate) fn postings(&self, term: &str) -> Option<MemPostings<'_>> {
        let t = self.find(term)?;
        (t.count > 0).then_some(MemPostings { segment: self, term: t })
    }

    /// Terms that hold documents, in byte order, for encoding.
    pub(crate) fn sorted_terms(&self) -> Result<Vec<(&str, MemPostings<'_>)>, IndexError> {
        let mut v: Vec<(&[u8], &Term)> =
            self.terms.iter().filter(|t| t.count > 0).map(|t| (self.key(t), t)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v.into_iter()
            .map(|(k, t)| {
                // Keys are interned whole from `&str`s, so this never fails.
                let k = std::str::from_utf8(k)
                    .map_err(|e| IndexError::Invalid(format!("an in-memory term is not UTF-8: {e}")))?;
                Ok((k, MemPostings { segment: self, term: t }))
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A key's form read from a padded buffer is the form of the key alone, at every length,
    /// and keys that differ (in a byte, or only in length) intern as different terms.
    #[test]
    fn index_memory_key_forms_agree_and_tell_keys_apart() {
        let text = "abcdefghijklmnopqrstuvwxyz\0abcdefghijklmnopqrstuvwxyzé";
        let mut padded = text.as_bytes().to_vec();
        padded.extend_from_slice(&[0xAA; 16]);
        for start in 0..text.len() {
            for end in start..=text.len() {
                assert_eq!(key_form_at(&padded, start, end), key_form(&text.as_bytes()[start..end]), "{start}..{end}");
            }
        }
        let mut m = MemorySegment::default();
        let keys = ["", "a", "ab", "abc", "abc\0", "abd", "abcdefghijklmno", "abcdefghijklmnp", "abcdefghijklmnop",
            "abcdefghijklmnoq", "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyZ", "abcdefghijklmnopqrstuvwxy"];
        let ids: Vec<u32> = keys.iter().map(|k| m.intern(k, true)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(m.find_id(k), Some(ids[i]), "{k:?}");
            assert_eq!(m.key(&m.terms[ids[i] as usize]), k.as_bytes());
            for j in 0..i {
                assert_ne!(ids[i], ids[j], "{k:?} and {:?}", keys[j]);
            }
        }
        assert_eq!(m.find_id("abcdefghijklmnopq"), None);
        assert_eq!(m.find_id("b"), None);
        // Terms come out in byte order: keys sharing their first 15 bytes, prefixes of each
        // other, a NUL against the end of a key, bytes above 0x7f.
        for &id in &ids {
            m.terms[id as usize].count = 1;
        }
        for k in ["abcdefghijklmnopqrstuvwxya", "\u{1}abc", "\u{2}a b", "zé", "z", "abcdefghijklmnoa", "abcdefghijklmn"] {
            let id = m.intern(k, false);
            m.terms[id as usize].count = 1;
        }
        let got: Vec<&str> = m.sorted_terms().unwrap().into_iter().map(|(k, _)| k).collect();
        let mut want = got.clone();
        want.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(got, want);
        assert_eq!(got.len(), keys.len() + 7);
    }

    /// The hash table of stop words answers as the list does: every stop word, and no other
    /// word (prefixes, extensions, case, long words among them).
    #[test]
    fn index_memory_stop_table_agrees_with_the_stop_word_list() {
        let table = stop_table();
        for w in super::super::stem::STOP_WORDS {
            assert!(is_stop(table, hash(w.as_bytes()), w), "{w}");
            for other in [format!("{w}s"), format!("x{w}"), w[..w.len() - 1].to_string(), w.to_uppercase()] {
                let want = super::super::stem::is_stop_word(&other);
                assert_eq!(is_stop(table, hash(other.as_bytes()), &other), want, "{other:?}");
            }
        }
        for w in ["query", "line", "yourselvess", "", "中文"] {
            assert!(!is_stop(table, hash(w.as_bytes()), w), "{w}");
        }
    }
}

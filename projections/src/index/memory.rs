//! The in-memory segment: where new documents go until the caller commits them to disk.
//!
//! Terms are interned once (a fast hash map from term to a number, postings in a vector by
//! that number), and each word's stem is computed once, the first time the word is seen:
//! adding a document hashes each token once and allocates only for new terms. (The index
//! benchmark found stemming every occurrence, and a map and a string per token, to be most of
//! the cost of adding a document.)

use rustc_hash::FxHashMap;

use super::doc::DocTable;
use super::limits::SEGMENT_DOCS_MAX;
use super::postings::{Postings, put_varint};
use super::stem::Stems;
use super::token::{TokenKind, for_each_token};
use super::{DocId, DocMeta, IndexError};

/// A word's stem term is not computed yet.
const STEM_UNKNOWN: u32 = u32::MAX;
/// A word has no stem term (a stop word), or the term is not a word.
const STEM_NONE: u32 = u32::MAX - 1;

/// One term's postings while documents are added, as varints: about a fifth of the memory of
/// [`Postings`] (which the index benchmark found spending a quarter of the time of adding a
/// document growing vectors and faulting in pages), decoded when read.
#[derive(Default)]
pub(crate) struct MemPostings {
    /// Per document: ordinal delta (the first one absolute), frequency.
    docs: Vec<u8>,
    /// Per occurrence: position delta within its document (the first absolute). A document's
    /// positions are appended as its tokens come, before its entry in `docs` is written.
    positions: Vec<u8>,
    count: u32,
    last: Option<u32>,
    with_positions: bool,
    /// The document being added, if it holds the term: its ordinal, occurrences so far, and
    /// its last position.
    open: Option<(u32, u32, u32)>,
}

impl MemPostings {
    fn new(with_positions: bool) -> MemPostings {
        MemPostings { with_positions, ..MemPostings::default() }
    }

    /// An occurrence in document `ordinal` (the one being added) at `position` (rising within
    /// the document). Returns true for the document's first occurrence of the term.
    #[inline]
    fn occur(&mut self, ordinal: u32, position: u32) -> bool {
        match &mut self.open {
            Some((o, tf, last)) if *o == ordinal => {
                if self.with_positions {
                    assert!(position > *last, "positions rise within a document");
                    put_varint(&mut self.positions, u64::from(position - *last));
                }
                *tf += 1;
                *last = position;
                false
            }
            _ => {
                if self.with_positions {
                    put_varint(&mut self.positions, u64::from(position));
                }
                self.open = Some((ordinal, 1, position));
                true
            }
        }
    }

    /// Ends the document being added: writes its entry.
    fn close(&mut self) {
        let Some((ordinal, tf, _)) = self.open.take() else { return };
        let delta = match self.last {
            None => ordinal,
            Some(last) => {
                assert!(ordinal > last, "ordinals ascend");
                ordinal - last
            }
        };
        put_varint(&mut self.docs, u64::from(delta));
        put_varint(&mut self.docs, u64::from(tf));
        self.last = Some(ordinal);
        self.count += 1;
    }

    /// Number of documents.
    pub(crate) fn len(&self) -> u32 {
        self.count
    }

    /// The postings, decoded (the bytes were written here, so they decode).
    pub(crate) fn decode(&self) -> Postings {
        let mut p = Postings::new(self.with_positions);
        let (mut d, mut q) = (Reader(&self.docs, 0), Reader(&self.positions, 0));
        let mut ord = 0u32;
        let mut positions = Vec::new();
        for i in 0..self.count {
            let delta = d.next();
            ord = if i == 0 { delta } else { ord + delta };
            let tf = d.next();
            positions.clear();
            if self.with_positions {
                let mut at = 0u32;
                for k in 0..tf {
                    let x = q.next();
                    at = if k == 0 { x } else { at + x };
                    positions.push(at);
                }
            }
            p.push(ord, tf, &positions);
        }
        p
    }
}

/// Reads the varints [`MemPostings`] wrote.
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
#[derive(Default)]
pub(crate) struct MemorySegment {
    pub(crate) docs: DocTable,
    /// Term -> its number.
    ids: FxHashMap<Box<str>, u32>,
    /// By term number: the term and its postings.
    terms: Vec<(Box<str>, MemPostings)>,
    /// By term number: the number of its stem term, [`STEM_NONE`] or [`STEM_UNKNOWN`].
    stem_of: Vec<u32>,
    /// Terms (and stem terms) the document being added holds, to close when it ends.
    touched: Vec<u32>,
}

impl MemorySegment {
    fn intern(&mut self, term: &str, positions: bool) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.ids.insert(term.into(), id);
        self.terms.push((term.into(), MemPostings::new(positions)));
        self.stem_of.push(STEM_UNKNOWN);
        id
    }

    /// Tokenizes and adds one document (its id not yet in the index: the caller checks).
    pub(crate) fn add(&mut self, doc: DocId, meta: &DocMeta, text: &str, stems: &Stems) -> Result<(), IndexError> {
        DocTable::check_meta(meta).map_err(IndexError::Invalid)?;
        if self.docs.len() >= SEGMENT_DOCS_MAX {
            return Err(IndexError::Invalid(format!(
                "the in-memory segment holds {SEGMENT_DOCS_MAX} documents; commit before adding more"
            )));
        }
        // Each occurrence goes straight to its term's postings; the document's entry in each
        // list it touched is written when it ends (no sorting of its tokens).
        let ordinal = self.docs.len();
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        let mut length = 0;
        for_each_token(text, &mut |t| {
            let id = self.intern(t.term, true);
            if self.terms[id as usize].1.occur(ordinal, t.position) {
                touched.push(id);
            }
            length = t.position + 1;
            if t.kind == TokenKind::Word {
                let mut stem = self.stem_of[id as usize];
                if stem == STEM_UNKNOWN {
                    stem = match stems.stem_word(t.term) {
                        Some(s) => self.intern(&s, false),
                        None => STEM_NONE,
                    };
                    self.stem_of[id as usize] = stem;
                }
                if stem != STEM_NONE && self.terms[stem as usize].1.occur(ordinal, t.position) {
                    touched.push(stem);
                }
            }
        });
        for &id in &touched {
            self.terms[id as usize].1.close();
        }
        let pushed = self.docs.push(doc, meta, length);
        assert_eq!(pushed, ordinal, "the document takes the ordinal its postings were given");
        self.touched = touched;
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// The postings of `term`, if a document added holds it.
    pub(crate) fn postings(&self, term: &str) -> Option<&MemPostings> {
        let id = *self.ids.get(term)?;
        let p = &self.terms[id as usize].1;
        // A term interned for a document that then failed to be added has no documents.
        (p.len() > 0).then_some(p)
    }

    /// Terms that hold documents, in byte order, for encoding.
    pub(crate) fn sorted_terms(&self) -> Vec<(&str, &MemPostings)> {
        let mut v: Vec<(&str, &MemPostings)> =
            self.terms.iter().filter(|(_, p)| p.len() > 0).map(|(t, p)| (t.as_ref(), p)).collect();
        v.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }
}

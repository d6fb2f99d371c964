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
use super::postings::Postings;
use super::stem::Stems;
use super::token::{TokenKind, for_each_token};
use super::{DocId, DocMeta, IndexError};

/// A word's stem term is not computed yet.
const STEM_UNKNOWN: u32 = u32::MAX;
/// A word has no stem term (a stop word), or the term is not a word.
const STEM_NONE: u32 = u32::MAX - 1;

/// New documents: their table, and per term its postings.
#[derive(Default)]
pub(crate) struct MemorySegment {
    pub(crate) docs: DocTable,
    /// Term -> its number.
    ids: FxHashMap<Box<str>, u32>,
    /// By term number: the term and its postings.
    terms: Vec<(Box<str>, Postings)>,
    /// By term number: the number of its stem term, [`STEM_NONE`] or [`STEM_UNKNOWN`].
    stem_of: Vec<u32>,
    /// (term number, position) of the document being added.
    scratch: Vec<(u32, u32)>,
    /// (stem term number) of the document being added, one per occurrence.
    stem_scratch: Vec<u32>,
    /// Positions of one term of the document being added.
    positions: Vec<u32>,
}

impl MemorySegment {
    fn intern(&mut self, term: &str, positions: bool) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.ids.insert(term.into(), id);
        self.terms.push((term.into(), Postings::new(positions)));
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
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut stem_scratch = std::mem::take(&mut self.stem_scratch);
        scratch.clear();
        stem_scratch.clear();
        let mut length = 0;
        for_each_token(text, &mut |t| {
            let id = self.intern(t.term, true);
            scratch.push((id, t.position));
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
                if stem != STEM_NONE {
                    stem_scratch.push(stem);
                }
            }
        });
        let ordinal = self.docs.push(doc, meta, length);
        // Each term's positions, in term order: a stable sort keeps positions ascending.
        scratch.sort_by_key(|&(id, _)| id);
        let mut positions = std::mem::take(&mut self.positions);
        for group in scratch.chunk_by(|a, b| a.0 == b.0) {
            positions.clear();
            positions.extend(group.iter().map(|&(_, p)| p));
            self.terms[group[0].0 as usize].1.push(ordinal, positions.len() as u32, &positions);
        }
        stem_scratch.sort_unstable();
        for group in stem_scratch.chunk_by(|a, b| a == b) {
            self.terms[group[0] as usize].1.push(ordinal, group.len() as u32, &[]);
        }
        self.scratch = scratch;
        self.stem_scratch = stem_scratch;
        self.positions = positions;
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// The postings of `term`, if a document added holds it.
    pub(crate) fn postings(&self, term: &str) -> Option<&Postings> {
        let id = *self.ids.get(term)?;
        let p = &self.terms[id as usize].1;
        // A term interned for a document that then failed to be added has no documents.
        (p.len() > 0).then_some(p)
    }

    /// Terms that hold documents, in byte order, for encoding.
    pub(crate) fn sorted_terms(&self) -> Vec<(&str, &Postings)> {
        let mut v: Vec<(&str, &Postings)> =
            self.terms.iter().filter(|(_, p)| p.len() > 0).map(|(t, p)| (t.as_ref(), p)).collect();
        v.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }
}

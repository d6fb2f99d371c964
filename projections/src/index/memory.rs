//! The in-memory segment: where new documents go until the caller commits them to disk.

use std::collections::HashMap;

use super::doc::DocTable;
use super::limits::SEGMENT_DOCS_MAX;
use super::postings::Postings;
use super::stem::Stems;
use super::token::tokenize;
use super::{DocId, DocMeta, IndexError};

/// New documents: their table and a hash map from term to postings.
#[derive(Default)]
pub(crate) struct MemorySegment {
    pub(crate) docs: DocTable,
    pub(crate) terms: HashMap<String, Postings>,
}

impl MemorySegment {
    /// Tokenizes and adds one document (its id not yet in the index: the caller checks).
    pub(crate) fn add(&mut self, doc: DocId, meta: &DocMeta, text: &str, stems: &Stems) -> Result<(), IndexError> {
        DocTable::check_meta(meta).map_err(IndexError::Invalid)?;
        if self.docs.len() >= SEGMENT_DOCS_MAX {
            return Err(IndexError::Invalid(format!(
                "the in-memory segment holds {SEGMENT_DOCS_MAX} documents; commit before adding more"
            )));
        }
        let tokens = tokenize(text);
        let length = tokens.last().map_or(0, |t| t.position + 1);
        let mut words: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut stem_tfs: HashMap<String, u32> = HashMap::new();
        for t in &tokens {
            words.entry(t.term.as_str()).or_default().push(t.position);
            if let Some(s) = stems.stem_term(t) {
                *stem_tfs.entry(s).or_default() += 1;
            }
        }
        let ordinal = self.docs.push(doc, meta, length);
        for (term, positions) in words {
            let p = self.terms.entry(term.to_string()).or_insert_with(|| Postings::new(true));
            p.push(ordinal, positions.len() as u32, &positions);
        }
        for (term, tf) in stem_tfs {
            let p = self.terms.entry(term).or_insert_with(|| Postings::new(false));
            p.push(ordinal, tf, &[]);
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// Terms in byte order, for encoding.
    pub(crate) fn sorted_terms(&self) -> Vec<(&str, &Postings)> {
        let mut v: Vec<(&str, &Postings)> = self.terms.iter().map(|(t, p)| (t.as_str(), p)).collect();
        v.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }
}

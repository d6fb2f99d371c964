//! Common-word pairs: terms that let a phrase holding a stop word skip most documents.
//!
//! A phrase such as `"line and query"` or `"to the function"` names words that most documents
//! hold; checking positions in every document that holds them all took tens of milliseconds
//! on the index benchmark's 1M events (the slowest phrase queries were all of this kind).
//! So the index also stores, for every two adjacent word tokens of which at least one is a
//! stop word ([`is_stop_word`]), a pair term (Lucene's `CommonGramsFilter` and the HathiTrust
//! full-text search index such pairs too):
//! - two stop words: byte [`PAIR_PREFIX`], the first, a space, the second (`the if`);
//! - a stop word and another word: the stop word and the other word's bucket, `#` and
//!   [`bucket`] in three lower-case hex digits, in the order they occur (`and #1f3`,
//!   `#1f3 the`). Buckets, not words: one pair term per stop word, side and bucket keeps the
//!   number of terms small (a term of its own per word beside a stop word tripled a segment's
//!   terms and took the build of 1M events from 36 s to 62 s), and a bucket is still far
//!   rarer than the words themselves.
//!
//! Pair terms have no positions and count nothing toward a document's length. A phrase query
//! looks them up beside its words and requires them (one of them, rarer than any word, drives
//! the search), but gives them no weight, and still checks every word's position: a bucket
//! shared with other words only lets in documents the positions then turn away. Scores and
//! results are exactly those without pairs.
//!
//! Words only: the tokens of CJK runs and of the other runs of rule 2 (`token.rs`: Thai, Khmer…)
//! are bigrams already, and a word beside such a run makes no pair.

use super::stem::is_stop_word;
use super::token::{Run, run_of};

/// First byte of every pair term. No token contains it (a control character), nor a space
/// or `#`.
pub(crate) const PAIR_PREFIX: char = '\u{2}';

/// Buckets of the words beside a stop word (a power of two).
const PAIR_BUCKETS: u32 = 1 << 10;

/// The longest stop word, in bytes: a longer token is never one (a quick test before the
/// lookup).
pub(crate) const STOP_WORD_BYTES_MAX: usize = 10;

/// A word's bucket: CRC-32 (IEEE) of its term's bytes, modulo [`PAIR_BUCKETS`]. Part of the
/// segment format (FORMAT.md): a fixed function, never a hasher that may change.
pub(crate) fn bucket(word: &str) -> u32 {
    crc32fast::hash(word.as_bytes()) & (PAIR_BUCKETS - 1)
}

/// True if `term` is a word's term (not a unigram or bigram of a run of rule 2: those begin
/// with a character of a run, which no word holds).
fn is_word_term(term: &str) -> bool {
    term.chars().next().is_some_and(|c| run_of(c) == Run::None)
}

/// Appends `#` and the three lower-case hex digits of `word`'s bucket to `out` (by hand: the
/// formatting machinery was a measurable part of adding a document).
fn push_bucket(out: &mut String, word: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = bucket(word) as usize;
    out.push('#');
    for shift in [8, 4, 0] {
        out.push(char::from(HEX[(b >> shift) & 0xf]));
    }
}

/// Appends the pair term of adjacent words `a` then `b` to `out` and returns true, if one of
/// them is a stop word (`a_stop`, `b_stop`: whether each is); else appends nothing.
pub(crate) fn push_pair(out: &mut String, a: &str, a_stop: bool, b: &str, b_stop: bool) -> bool {
    if !(a_stop || b_stop) {
        return false;
    }
    out.push(PAIR_PREFIX);
    if a_stop {
        out.push_str(a);
    } else {
        push_bucket(out, a);
    }
    out.push(' ');
    if b_stop {
        out.push_str(b);
    } else {
        push_bucket(out, b);
    }
    true
}

/// The pair terms a phrase requires: one per two adjacent words of the clause (relative
/// positions one apart) of which one is a stop word, each once, in order, added to `out`.
pub(crate) fn phrase_pairs(terms: &[(String, u32)], out: &mut Vec<String>) {
    for w in terms.windows(2) {
        let ((a, ra), (b, rb)) = (&w[0], &w[1]);
        if ra.checked_add(1) != Some(*rb) || !is_word_term(a) || !is_word_term(b) {
            continue;
        }
        let mut key = String::new();
        if push_pair(&mut key, a, is_stop_word(a), b, is_stop_word(b)) && !out.contains(&key) {
            out.push(key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::index::stem::STOP_WORDS;

    #[test]
    fn index_pairs_stop_words_fit_the_length_bound() {
        assert!(STOP_WORDS.iter().all(|w| w.len() <= STOP_WORD_BYTES_MAX));
        assert!(STOP_WORDS.iter().any(|w| w.len() == STOP_WORD_BYTES_MAX));
    }

    #[test]
    fn index_pairs_buckets_are_crc32_of_the_word() {
        // Fixed values: the buckets are part of the segment format.
        assert_eq!(crc32fast::hash(b"query"), 0x24bd_b5eb);
        assert_eq!(bucket("query"), 0x1eb);
        assert!(bucket("anything") < PAIR_BUCKETS);
    }

    #[test]
    fn index_pairs_of_a_phrase_are_its_adjacent_words_with_a_stop_word() {
        let c = |v: &[(&str, u32)]| v.iter().map(|(t, p)| (t.to_string(), *p)).collect::<Vec<_>>();
        let mut out = Vec::new();
        phrase_pairs(&c(&[("line", 0), ("and", 1), ("query", 2), ("to", 3), ("the", 4)]), &mut out);
        let line = format!("\u{2}#{:03x} and", bucket("line"));
        let query = format!("\u{2}and #{:03x}", bucket("query"));
        let query_to = format!("\u{2}#{:03x} to", bucket("query"));
        assert_eq!(out, [line, query, query_to, "\u{2}to the".to_string()]);
        out.clear();
        // Two content words make none; a gap in positions, none; CJK terms, none.
        phrase_pairs(&c(&[("line", 0), ("query", 1), ("the", 3), ("中文", 4), ("the", 5)]), &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Repeated: listed once.
        phrase_pairs(&c(&[("the", 0), ("the", 1), ("the", 2)]), &mut out);
        assert_eq!(out, ["\u{2}the the"]);
    }
}

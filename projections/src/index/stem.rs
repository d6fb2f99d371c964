//! Partial-match terms: English stems of words, with stop words set aside.
//!
//! A stem is stored in the same term dictionary as the words, as a separate term: the byte
//! [`STEM_PREFIX`] followed by the stem. No word contains that byte (it is a control
//! character, never part of a token), so the two kinds of term never collide. A stem term
//! holds the documents of the words that stem to it, less those of the word it spells when
//! that word is its own stem ([`Stems::word_of_stem`]): their union is read at query time.

use rust_stemmers::{Algorithm, Stemmer};

use super::token::{Token, TokenKind};

/// First byte of every stem term.
pub(crate) const STEM_PREFIX: char = '\u{1}';

/// English stop words (Snowball's list, with the fragments contractions split into).
/// Sorted, for binary search.
#[rustfmt::skip]
pub(crate) const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "d", "did", "do", "does", "doing", "don", "down", "during", "each",
    "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "ll", "m", "me", "more", "most", "my", "myself", "no", "nor", "not", "now",
    "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over",
    "own", "re", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "ve", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "yourself", "yourselves",
];

/// True for an English stop word (already folded to lower case).
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Makes partial-match terms.
pub(crate) struct Stems {
    stemmer: Stemmer,
}

impl Stems {
    pub(crate) fn new() -> Stems {
        Stems { stemmer: Stemmer::create(Algorithm::English) }
    }

    /// The partial-match term of a token: a word's stem term (none for a stop word), or a CJK
    /// bigram or lone character as it is (a unigram of a longer run has none: its bigrams
    /// stand for it).
    pub(crate) fn partial_term(&self, token: &Token) -> Option<String> {
        match token.kind {
            TokenKind::Word => self.stem_word(&token.term),
            TokenKind::Lone | TokenKind::Bigram => Some(token.term.clone()),
            TokenKind::Unigram => None,
        }
    }

    /// The stem term of a word (already folded), or none for a stop word: what the index
    /// stores beside the word itself.
    pub(crate) fn stem_word(&self, word: &str) -> Option<String> {
        if is_stop_word(word) {
            return None;
        }
        let stem = self.stemmer.stem(word);
        let mut key = String::with_capacity(1 + stem.len());
        key.push(STEM_PREFIX);
        key.push_str(&stem);
        Some(key)
    }

    /// The word a stem term spells, if that word is its own stem (and so is not written in
    /// the stem term's postings: the index reads the word's beside them). None for other
    /// terms.
    pub(crate) fn word_of_stem(&self, term: &str) -> Option<String> {
        let word = term.strip_prefix(STEM_PREFIX)?;
        (self.stem_word(word).as_deref() == Some(term)).then(|| word.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::index::token::tokenize;

    #[test]
    fn index_stem_stop_words_are_sorted() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        // The memory segment's table of them numbers them in a byte.
        assert!(STOP_WORDS.len() < 255);
    }

    #[test]
    fn index_stem_inflections_share_a_stem() {
        let stems = Stems::new();
        let t = tokenize("release releases released the");
        let keys: Vec<Option<String>> = t.iter().map(|t| stems.partial_term(t)).collect();
        assert_eq!(keys[0], keys[1]);
        assert_eq!(keys[0], keys[2]);
        assert_eq!(keys[3], None);
    }
}

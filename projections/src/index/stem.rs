//! Partial-match terms: English stems of words, with stop words set aside.
//!
//! A stem is stored in the same term dictionary as the words, as a separate term: the byte
//! [`STEM_PREFIX`] followed by the stem. No word contains that byte (it is a control
//! character, never part of a token), so the two kinds of term never collide. A stem term
//! holds the documents of the words that stem to it, less those of the word it spells when
//! that word is its own stem ([`Stems::word_of_stem`]): their union is read at query time.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;

#[cfg(test)]
use super::token::Token;
use super::token::TokenKind;

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

    /// The partial-match term of a token: a word's stem term (none for a stop word), or a
    /// run's bigram or lone unit (CJK, Thai…) as it is (a unigram of a longer run has none:
    /// its bigrams stand for it). (For tests; the query borrows tokens,
    /// [`Stems::partial_term_of`].)
    #[cfg(test)]
    pub(crate) fn partial_term(&self, token: &Token) -> Option<String> {
        self.partial_term_of(&token.term, token.kind).map(Cow::into_owned)
    }

    /// [`Stems::partial_term`] of a token's term and kind; a run's term is borrowed.
    pub(crate) fn partial_term_of<'t>(&self, term: &'t str, kind: TokenKind) -> Option<Cow<'t, str>> {
        match kind {
            TokenKind::Word | TokenKind::Part => self.stem_word(term).map(Cow::Owned),
            TokenKind::Lone | TokenKind::Bigram => Some(Cow::Borrowed(term)),
            TokenKind::Unigram => None,
        }
    }

    /// The stem term of a word (already folded), or none for a stop word: what the index
    /// stores beside the word itself. The stem is of the word without its accents (the
    /// combining diacritical marks U+0300–U+036F of its canonical decomposition: `café`,
    /// `résumé`, `người` stem as `cafe`, `resum`, `nguoi`), so that a partial match meets a
    /// word written with or without them; full matches stay exact.
    pub(crate) fn stem_word(&self, word: &str) -> Option<String> {
        // Stop words are English words as written (`mỹ` is no `my`).
        if is_stop_word(word) {
            return None;
        }
        let plain;
        let word = if word.is_ascii() {
            word
        } else {
            plain = without_accents(word);
            plain.as_str()
        };
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

/// The character a word's stem begins with: the word's first character without its accents
/// (the English stemmer changes a word's end; at its start it drops an apostrophe and marks a
/// y, changed back, and the tokenizer never hands it a word that begins with an apostrophe or
/// holds upper case). Snippets rely on it to stem only the words that may match.
pub(crate) fn stem_first_char(word: &str) -> Option<char> {
    // The accents a word may begin with (after an underscore, say) are left out; then the
    // first character with the marks after it, as `without_accents` composes them.
    let start = word.find(|c: char| !is_accent(c))?;
    let rest = &word[start..];
    let first = rest.chars().next()?;
    if first.is_ascii() {
        return Some(first);
    }
    let end = rest.char_indices().skip(1).find(|&(_, c)| !is_combining_mark(c)).map_or(rest.len(), |(i, _)| i);
    without_accents(&rest[..end]).chars().next()
}

/// A combining diacritical mark (U+0300–U+036F): an accent.
fn is_accent(c: char) -> bool {
    ('\u{300}'..='\u{36F}').contains(&c)
}

/// `word` without the combining diacritical marks (U+0300–U+036F) of its canonical
/// decomposition, composed again (so that Hangul syllables, which decompose into letters that
/// are not marks, come back whole). Marks of other blocks (the vowel signs of Indic scripts,
/// which are letters of their words) stay.
fn without_accents(word: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    word.nfd().filter(|&c| !is_accent(c)).nfc().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::index::token::tokenize;

    /// A word's stem is of the word without its accents; other scripts' marks stay, Hangul
    /// comes back whole.
    #[test]
    fn index_stem_of_a_word_leaves_its_accents_out() {
        let stems = Stems::new();
        for (a, b) in [("café", "cafe"), ("résumé", "resume"), ("cafés", "cafe"), ("người", "nguoi"), ("ὁδός", "οδος")] {
            assert_eq!(stems.stem_word(a), stems.stem_word(b), "{a}");
        }
        assert_eq!(stems.stem_word("नमस्ते").as_deref(), Some("\u{1}नमस्ते"));
        assert_eq!(stems.stem_word("mỹ").as_deref(), Some("\u{1}my"), "a stop word of English only as written");
        assert_eq!(stems.stem_word("\u{301}test"), stems.stem_word("test"), "a word may begin with a mark");
        assert_eq!(stems.stem_word("분석기").as_deref(), Some("\u{1}분석기"));
        // A word with accents is not its own stem, so it is written in the stem term; the
        // word without them is, and is read beside it.
        assert_eq!(stems.word_of_stem("\u{1}cafe").as_deref(), Some("cafe"));
        assert_eq!(stems.word_of_stem("\u{1}café"), None);
    }

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

    /// Suffixes the English stemmer removes or rewrites, and its exceptional words.
    const SUFFIXES: &[&str] = &[
        "", "s", "es", "ies", "ied", "ed", "ing", "ingly", "edly", "ly", "ational", "tional", "enci", "anci", "izer", "ation",
        "ator", "alism", "aliti", "alli", "fulness", "ousli", "ousness", "iveness", "iviti", "biliti", "bli", "logi", "fulli",
        "lessli", "li", "ical", "ness", "ative", "alize", "icate", "iciti", "ful", "ement", "ment", "ent", "ism", "ate", "iti",
        "ous", "ive", "ize", "ion", "al", "er", "ic", "able", "ible", "ance", "ence", "y", "e", "l", "eed", "eedly", "sses", "ss",
        "us", "ys", "yed", "ying", "at", "bl", "iz", "bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt", "ogi", "ousli",
    ];
    const EXCEPTIONS: &[&str] = &[
        "skis", "skies", "dying", "lying", "tying", "idly", "gently", "ugly", "early", "only", "singly", "sky", "news", "howe",
        "atlas", "cosmos", "bias", "andes", "y", "ys", "yes", "yay", "yy", "ied", "ies", "ing", "s", "e", "eed", "ly",
    ];

    fn assert_stem_keeps_first_char(stems: &Stems, word: &str) {
        if let Some(key) = stems.stem_word(word) {
            let stem = key.strip_prefix(STEM_PREFIX).expect("a stem term begins with the prefix");
            assert_eq!(stem.chars().next(), stem_first_char(word), "{word:?} stems to {stem:?}");
        }
    }

    #[test]
    fn index_stem_exceptional_words_keep_their_first_character() {
        let stems = Stems::new();
        for w in EXCEPTIONS {
            assert_stem_keeps_first_char(&stems, w);
        }
        // The stemmer drops a leading apostrophe and marks an initial y; the tokenizer hands it
        // neither a word beginning with an apostrophe (it cuts words there) nor upper case.
        for t in tokenize("'tis ’twas y'all Yes YYZ 'y' ''quoted''") {
            assert!(!t.term.starts_with('\'') && t.term == t.term.to_lowercase(), "{t:?}");
            assert_stem_keeps_first_char(&stems, &t.term);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// What snippets rely on to stem only the words that may match (`snippet.rs`): a
        /// word's stem begins with the word's first character, without its accents
        /// ([`stem_first_char`]).
        #[test]
        fn index_stem_begins_with_the_words_first_character(
            base in "[a-z]{1,7}|[a-zé]{1,5}|[\\p{Ll}\\p{Lo}]{1,4}|[\u{301}\u{308}]{1,2}[a-zéü]{1,4}|[\\p{Ll}][\\p{Mn}]{1,3}",
            suffix in 0..SUFFIXES.len(),
            y_first in proptest::prelude::any::<bool>(),
        ) {
            let stems = Stems::new();
            let word = format!("{}{base}{}", if y_first { "y" } else { "" }, SUFFIXES[suffix]);
            assert_stem_keeps_first_char(&stems, &word);
        }
    }
}

//! The query language: words and "quoted phrases"; every word must occur.
//!
//! - Text outside quotes is split on white space into chunks. A chunk that tokenizes to one
//!   word is a word; a chunk of several (`record.rs`, `foo-bar`, a CJK run, `用rust写`) is a
//!   phrase of them, so it matches where they occur in that order, adjacent.
//! - Text between quotes (`"`, `“`, `”`, `„`, `＂`) is one phrase. A quote left open runs to the
//!   end of the query; nothing in a query is a syntax error.
//! - In a phrase, a CJK run of n ≥ 2 characters (or a run of n grapheme clusters of Thai,
//!   Lao, Khmer, Myanmar…: rule 2 of `token.rs`) is its n - 1 overlapping bigrams at
//!   consecutive positions (the text must hold the whole run); a run of one character is
//!   that character.
//!
//! Partial-match terms: the stem of every word that is not a stop word, and of every part of
//! a camelCase word (rule 5 of `token.rs`) that is not one, and every bigram or lone character
//! of a run, each once.
//!
//! Pair terms: of every two adjacent words of a phrase of which one is a stop word, the pair
//! term the index stores for them (`pairs.rs`), each once; required for full matches, with no
//! weight.

use std::fmt;

use super::limits::{QUERY_SIZE_BYTES_MAX, QUERY_TERMS_MAX};
use super::pairs::phrase_pairs;
use super::stem::Stems;
use super::token::{TokenKind, for_each_token};

/// A parsed query (see the module documentation for the syntax).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Every clause must match.
    pub(crate) clauses: Vec<Clause>,
    /// The distinct terms of all clauses, in query order (the order scores are summed in).
    pub(crate) terms: Vec<String>,
    /// Per clause, the index in `terms` of each of its terms.
    pub(crate) clause_terms: Vec<Vec<usize>>,
    /// The distinct partial-match terms, in query order.
    pub(crate) partial: Vec<String>,
    /// Per partial-match term, the word whose documents it also stands for: of a stem term,
    /// the word it spells when that word is its own stem (`test` for the stem of `tests`),
    /// which the index does not write in the stem term.
    pub(crate) partial_words: Vec<Option<String>>,
    /// The pair terms the phrases require ([`super::pairs`]): looked up beside `terms` for
    /// full matches, with no weight.
    pub(crate) pairs: Vec<String>,
}

/// Terms that must occur at the given positions relative to each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Clause {
    /// `(term, position relative to the clause's first term)`, positions ascending.
    pub terms: Vec<(String, u32)>,
}

/// Why a query was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// The query holds no searchable word (only spaces or punctuation).
    Empty,
    /// The query is longer than the limit.
    TooLong {
        /// Its size.
        size_bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The query has more terms than the limit.
    TooManyTerms {
        /// How many it has.
        count: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Worded to follow the argument's name ("Invalid input: `query` has no word …").
            QueryError::Empty => write!(f, "has no word to search for (only spaces or punctuation)"),
            QueryError::TooLong { size_bytes, max } => {
                write!(f, "is {size_bytes} bytes long; the most is {max}: shorten it")
            }
            QueryError::TooManyTerms { count, max } => write!(
                f,
                "asks for {count} terms (a word is one; a run of Chinese, Japanese, Korean, Thai, Lao, Khmer or Myanmar \
                 characters is one for each pair of characters side by side); the most is {max}: use fewer words"
            ),
        }
    }
}

impl std::error::Error for QueryError {}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{FF02}')
}

/// Parses a query. Never panics; refuses only empty, too long and too large queries.
pub fn parse_query(q: &str) -> Result<Query, QueryError> {
    if q.len() > QUERY_SIZE_BYTES_MAX {
        return Err(QueryError::TooLong { size_bytes: q.len(), max: QUERY_SIZE_BYTES_MAX });
    }
    let mut clauses = Vec::new();
    let mut quoted = false;
    let mut part_start = 0;
    for (i, c) in q.char_indices() {
        if is_quote(c) {
            add_part(&q[part_start..i], quoted, &mut clauses);
            quoted = !quoted;
            part_start = i + c.len_utf8();
        }
    }
    add_part(&q[part_start..], quoted, &mut clauses);
    if clauses.is_empty() {
        return Err(QueryError::Empty);
    }
    let count: usize = clauses.iter().map(|c: &Clause| c.terms.len()).sum();
    if count > QUERY_TERMS_MAX {
        return Err(QueryError::TooManyTerms { count, max: QUERY_TERMS_MAX });
    }
    let mut terms: Vec<String> = Vec::new();
    for clause in &clauses {
        for (t, _) in &clause.terms {
            if !terms.contains(t) {
                terms.push(t.clone());
            }
        }
    }
    let stems = Stems::new();
    let mut partial: Vec<String> = Vec::new();
    // Tokens borrowed, not collected: a term is copied only when it is kept.
    for_each_token(q, &mut |t| {
        if let Some(p) = stems.partial_term_of(t.term, t.kind)
            && !partial.iter().any(|x| *x == *p)
        {
            partial.push(p.into_owned());
        }
    });
    let partial_words = partial.iter().map(|p| stems.word_of_stem(p)).collect();
    let clause_terms = clauses
        .iter()
        .map(|c| c.terms.iter().map(|(t, _)| terms.iter().position(|x| x == t).unwrap_or(0)).collect())
        .collect();
    let mut pairs = Vec::new();
    for c in &clauses {
        phrase_pairs(&c.terms, &mut pairs);
    }
    Ok(Query { clauses, terms, clause_terms, partial, partial_words, pairs })
}

fn add_part(text: &str, quoted: bool, clauses: &mut Vec<Clause>) {
    if quoted {
        clauses.extend(clause(text));
    } else {
        clauses.extend(text.split_whitespace().filter_map(clause));
    }
}

/// The clause of a text: its tokens less the unigrams of runs (CJK, Thai…: their bigrams
/// cover them) and the parts of camelCase words (the word is the clause's term).
pub(crate) fn clause(text: &str) -> Option<Clause> {
    let (mut terms, mut first) = (Vec::new(), None);
    for_each_token(text, &mut |t| {
        if !matches!(t.kind, TokenKind::Unigram | TokenKind::Part) {
            let first = *first.get_or_insert(t.position);
            terms.push((t.term.to_owned(), t.position - first));
        }
    });
    first.map(|_| Clause { terms })
}

impl Query {
    /// How many clauses (words and phrases) must match.
    pub fn clause_count(&self) -> usize {
        self.clauses.len()
    }

    /// The same query without partial matches: only documents that hold every clause are
    /// returned (what the peers in the index benchmark answer, for a like-for-like figure).
    pub fn every_word_only(&self) -> Query {
        Query { partial: Vec::new(), partial_words: Vec::new(), ..self.clone() }
    }

    /// The same query without its pair terms: the same results, found without them (for
    /// tests that compare the two).
    #[cfg(test)]
    pub(crate) fn without_pairs(&self) -> Query {
        Query { pairs: Vec::new(), ..self.clone() }
    }

    /// True if every document holding a partial-match term is a full match, so there are no
    /// partial matches: a query of one term that is its own partial-match term (a CJK bigram
    /// or character; a word's is its stem, which other words share).
    pub(crate) fn partial_is_the_full_match(&self) -> bool {
        matches!(&self.clauses[..], [c] if c.terms.len() == 1 && self.partial == [c.terms[0].0.clone()] && self.partial_words == [None])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape(q: &str) -> Vec<Vec<(String, u32)>> {
        parse_query(q).map(|q| q.clauses.into_iter().map(|c| c.terms).collect()).unwrap_or_default()
    }

    fn c(terms: &[(&str, u32)]) -> Vec<(String, u32)> {
        terms.iter().map(|(t, p)| (t.to_string(), *p)).collect()
    }

    #[test]
    fn index_query_words_and_phrases() {
        assert_eq!(
            shape("Release \"tag from\" record.rs"),
            vec![c(&[("release", 0)]), c(&[("tag", 0), ("from", 1)]), c(&[("record", 0), ("rs", 1)])]
        );
    }

    #[test]
    fn index_query_cjk_run_is_a_phrase_of_bigrams() {
        assert_eq!(shape("机器学习"), vec![c(&[("机器", 0), ("器学", 1), ("学习", 2)])]);
        assert_eq!(shape("中"), vec![c(&[("中", 0)])]);
        assert_eq!(shape("用rust写"), vec![c(&[("用", 0), ("rust", 1), ("写", 2)])]);
    }

    #[test]
    fn index_query_open_quote_runs_to_the_end() {
        assert_eq!(shape("a \"b c"), vec![c(&[("a", 0)]), c(&[("b", 0), ("c", 1)])]);
    }

    #[test]
    fn index_query_refuses_empty_long_and_large() {
        assert_eq!(parse_query(" ,. \"\" "), Err(QueryError::Empty));
        assert!(matches!(parse_query(&"a ".repeat(5000)), Err(QueryError::TooLong { .. })));
        assert!(matches!(parse_query(&"a ".repeat(200)), Err(QueryError::TooManyTerms { .. })));
        // Every query the tools accept (2,000 characters, of up to four bytes each) is within
        // the size: a long one is refused for its terms, which the message explains.
        let long_chinese = "机器学习".repeat(500);
        let e = parse_query(&long_chinese).unwrap_err();
        assert!(matches!(e, QueryError::TooManyTerms { count: 1999, max: 128 }), "{e:?}");
        assert!(e.to_string().contains("one for each pair of characters side by side"), "{e}");
        assert!(matches!(parse_query(&"𠀀".repeat(2000)), Err(QueryError::TooManyTerms { .. })));
    }

    #[test]
    fn index_query_partial_terms_skip_stop_words() {
        let q = parse_query("how do we cut a release of the app?").unwrap();
        assert_eq!(q.partial.len(), 3, "{:?}", q.partial);
    }

    #[test]
    fn index_query_knows_when_partial_matches_cannot_exist() {
        assert!(parse_query("数据").unwrap().partial_is_the_full_match());
        assert!(parse_query("中").unwrap().partial_is_the_full_match());
        for q in ["tests", "test", "数据 库", "机器学习", "\"数据\""] {
            let q = parse_query(q).unwrap();
            // A quoted bigram is one clause of one term too.
            assert_eq!(q.partial_is_the_full_match(), q.clauses.len() == 1 && q.clauses[0].terms.len() == 1 && q.terms[0] == "数据", "{q:?}");
        }
    }

    #[test]
    fn index_query_partial_terms_name_the_word_that_is_its_own_stem() {
        // `tests` stems to `test`, which is its own stem; `releases` stems to `releas`, no
        // word; `others` to `other`, a stop word (never written beside its stem); a CJK
        // bigram is no stem.
        let q = parse_query("tests releases others 数据").unwrap();
        assert_eq!(q.partial, vec!["\u{1}test", "\u{1}releas", "\u{1}other", "数据"]);
        assert_eq!(q.partial_words, vec![Some("test".to_string()), None, None, None]);
    }

    proptest! {
        #[test]
        fn index_query_parser_never_panics(s in "\\PC{0,64}", b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_query(&s);
            let _ = parse_query(&String::from_utf8_lossy(&b));
        }
    }
}

//! Snippets: at most 200 characters of a text around its first match, every match in
//! brackets, white space runs shown as one space, `…` where the text is cut.
//!
//! A match is an occurrence of a query clause (each of its tokens is bracketed; the
//! overlapping bigrams of a run, CJK or Thai…, share one bracket); in a text that does not
//! hold every clause, also each word sharing a stem with a query word, and each bigram of a
//! run of the query.

use super::limits::{SNIPPET_CHARS_MAX, SNIPPET_CONTEXT_BEFORE_CHARS};
use super::query::Query;
use super::stem::{STEM_PREFIX, Stems, is_stop_word, stem_first_char};
use super::token::{TextForm, TokenKind, for_each_token_of};
use unicode_segmentation::{GraphemeCursor, UnicodeSegmentation};

/// A window's start moves past the word it cuts into when that word ends within this many
/// characters ([`window_start`]).
const WORD_CUT_CHARS_MAX: usize = 24;

/// A grapheme cluster of more characters than this (a letter under hundreds of marks, a long
/// chain of emoji joined by U+200D) is shown and cut by its characters: whole, it could fill a
/// snippet and hide the match after it.
const CLUSTER_WHOLE_CHARS_MAX: usize = 32;

/// The start of the grapheme cluster of `text` that byte `byte` (a character's start) is in;
/// `byte` itself if a cluster starts there, or if the cluster's start is more than
/// [`CLUSTER_WHOLE_CHARS_MAX`] characters back: where a cut of text before `byte` falls
/// (snippets here, the tools' cut texts).
pub fn cluster_start(text: &str, byte: usize) -> usize {
    let mut cursor = GraphemeCursor::new(byte, text.len(), true);
    // The whole text is the one chunk, so the cursor never asks for more context.
    let start = match cursor.is_boundary(text, 0) {
        Ok(false) => cursor.prev_boundary(text, 0).ok().flatten().unwrap_or(0),
        _ => byte,
    };
    if text[start..byte].chars().count() > CLUSTER_WHOLE_CHARS_MAX { byte } else { start }
}

/// The pieces `text` is shown and cut by: its grapheme clusters, those of more than
/// [`CLUSTER_WHOLE_CHARS_MAX`] characters by their characters.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    text.graphemes(true).flat_map(|g| {
        let whole = g.chars().nth(CLUSTER_WHOLE_CHARS_MAX).is_none();
        let split = (!whole).then(|| g.char_indices().map(move |(i, c)| &g[i..i + c.len_utf8()]));
        whole.then_some(g).into_iter().chain(split.into_iter().flatten())
    })
}

/// The snippet of `text` for `query`; the start of the text if nothing matches.
pub fn snippet(text: &str, query: &Query) -> String {
    snippet_of(text, TextForm::Plain, query)
}

/// [`snippet`] of a text of the form `form` (rule 0 of `token`: a tool call's input is
/// JSON, whose escapes part words).
pub fn snippet_of(text: &str, form: TextForm, query: &Query) -> String {
    // Terminal colour sequences are white space to the tokenizer (rule 0 of `token`); here
    // they are left out, neither shown nor spaces.
    let escapes = super::token::escape_ranges(text);
    let mut escape = escapes.iter().peekable();
    let marks = marks(text, form, query);
    let content_end = text.trim_end().len();
    let start = window_start(text, &marks, content_end);
    let mut out = String::new();
    let mut n = 0usize;
    // Only where something was left out: white space before the window is not text.
    // Whether the last thing shown is that `…` (white space after it is not shown; after a
    // `…` of the text's own, it is).
    let mut after_cut = false;
    if !text[..start].trim_start().is_empty() {
        out.push('…');
        n += 1;
        after_cut = true;
    }
    let mut mi = 0;
    let mut emitted_mark = false;
    let mut pending_space = false;
    let mut i = start;
    while i < content_end {
        while escape.next_if(|e| e.1 <= i).is_some() {}
        if let Some(&&(from, to)) = escape.peek()
            && from <= i
        {
            i = to;
            continue;
        }
        while mi < marks.len() && marks[mi].0 < i {
            mi += 1;
        }
        let (piece, next, is_mark) = match marks.get(mi) {
            Some(&(ms, me)) if ms == i => {
                mi += 1;
                (format!("[{}]", collapse(&super::token::blank_escapes(&text[ms..me], TextForm::Plain))), me, true)
            }
            next_mark => {
                // A grapheme cluster at a time (an accent stays with its letter, an emoji with
                // its modifiers and the emoji joined to it), ending where a match begins (a
                // match begins after `i`, so the cluster is not empty).
                let stop = next_mark.map_or(content_end, |m| m.0.min(content_end));
                let Some(g) = pieces(&text[i..stop]).next() else { break };
                if g.chars().all(char::is_whitespace) {
                    pending_space = n > 0 && !after_cut;
                    i += g.len();
                    continue;
                }
                (g.to_owned(), i + g.len(), false)
            }
        };
        let piece_chars = piece.chars().count();
        let space = usize::from(pending_space);
        let reserve = usize::from(next < content_end);
        if n + space + piece_chars + reserve > SNIPPET_CHARS_MAX {
            if is_mark && !emitted_mark {
                // A first match too long to show whole: show what fits of it, whole clusters.
                let room = SNIPPET_CHARS_MAX.saturating_sub(n + space + 3);
                if pending_space {
                    out.push(' ');
                }
                out.push('[');
                let inner = &piece[1..piece.len() - 1];
                let mut used = 0;
                for g in pieces(inner) {
                    used += g.chars().count();
                    if used > room {
                        break;
                    }
                    out.push_str(g);
                }
                out.push(']');
            }
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            n += 1;
            pending_space = false;
        }
        out.push_str(&piece);
        n += piece_chars;
        after_cut = false;
        emitted_mark |= is_mark;
        i = next;
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Byte ranges of the text's matches: sorted, merged where they overlap (a CJK run's bigrams).
///
/// The text is tokenized as the index tokenizes it, but only the tokens that are query terms
/// are kept (tokenizing into a list of owned tokens, a string per token, was about a tenth of
/// a search's time in process); the words' stems are computed only for a text that does not
/// hold every clause.
fn marks(text: &str, form: TextForm, query: &Query) -> Vec<(usize, usize)> {
    // The text's tokens that are one of the query's terms (the clauses' distinct terms), as
    // (position, which term, start, end), in position order.
    let mut found: Vec<(u32, usize, usize, usize)> = Vec::new();
    for_each_token_of(text, form, &mut |t| {
        if let Some(k) = query.terms.iter().position(|w| w == t.term) {
            found.push((t.position, k, t.start, t.end));
        }
    });
    let at = |position: u32, k: usize| -> Option<(usize, usize)> {
        let from = found.partition_point(|f| f.0 < position);
        found[from..].iter().take_while(|f| f.0 == position).find(|f| f.1 == k).map(|f| (f.2, f.3))
    };
    let mut marks = Vec::new();
    let mut clauses_found = 0;
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // Marks of clauses that are a stop word alone: shown only in a full match (a partial
    // match's score sets stop words aside, and `[the]` in its snippet says nothing).
    let mut stop_marks = Vec::new();
    for (clause, which) in query.clauses.iter().zip(&query.clause_terms) {
        let Some(&first) = which.first() else { continue };
        let stop = matches!(clause.terms.as_slice(), [(t, _)] if is_stop_word(t));
        let mut found_any = false;
        for &(position, _, _, _) in found.iter().filter(|f| f.1 == first) {
            spans.clear();
            let whole = clause.terms.iter().zip(which).all(|((_, rel), &k)| match position.checked_add(*rel).and_then(|p| at(p, k)) {
                Some(span) => {
                    spans.push(span);
                    true
                }
                None => false,
            });
            if whole {
                if stop { &mut stop_marks } else { &mut marks }.extend_from_slice(&spans);
                found_any = true;
            }
        }
        clauses_found += usize::from(found_any);
    }
    if clauses_found == query.clauses.len() {
        marks.extend(stop_marks);
    }
    // A full match shows its clauses; otherwise the words that match by stem show too. A
    // word's stem begins with the word's first character without its accents
    // ([`stem_first_char`]; tests of `stem.rs` check it), so only the words that begin as some
    // query stem does are stemmed (stemming every word of a partial hit's text was most of a
    // snippet).
    if clauses_found < query.clauses.len() {
        let stems = Stems::new();
        let firsts: Vec<char> = query.partial.iter().filter_map(|p| p.strip_prefix(STEM_PREFIX)?.chars().next()).collect();
        for_each_token_of(text, form, &mut |t| {
            if matches!(t.kind, TokenKind::Word | TokenKind::Part) && !stem_first_char(t.term).is_some_and(|c| firsts.contains(&c)) {
                return;
            }
            if let Some(p) = stems.partial_term_of(t.term, t.kind)
                && query.partial.iter().any(|q| *q == *p)
            {
                marks.push((t.start, t.end));
            }
        });
    }
    merge(marks)
}

/// Sorts `marks` and merges those that overlap.
fn merge(mut marks: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    marks.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(marks.len());
    for (s, e) in marks {
        match merged.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// Where the window starts: early enough to give the first match some context, or the whole
/// text before it when the rest is short; at a word start when one is near.
fn window_start(text: &str, marks: &[(usize, usize)], content_end: usize) -> usize {
    let start = window_start_near(text, marks, content_end);
    // Past white space, a window may stand on a mark that joins it (a space and U+0301, or
    // U+200D, are one cluster): it begins at the next cluster, not on the lone mark (not past
    // the first match).
    let first = marks.first().map_or(content_end, |m| m.0);
    if start >= first || start >= text.len() {
        return start;
    }
    let mut cursor = GraphemeCursor::new(start, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(false) => cursor.next_boundary(text, 0).ok().flatten().map_or(start, |b| b.min(first)),
        _ => start,
    }
}

/// [`window_start`] before it is moved to a cluster's start.
fn window_start_near(text: &str, marks: &[(usize, usize)], content_end: usize) -> usize {
    let lead = text.len() - text.trim_start().len();
    let Some(&(first, _)) = marks.first() else { return lead };
    let before = text[..first].chars().count();
    let after = text[first..content_end].chars().count();
    let room = SNIPPET_CHARS_MAX.saturating_sub(after + 2 * marks.len() + 2);
    let context = room.max(SNIPPET_CONTEXT_BEFORE_CHARS);
    if before <= context {
        return lead.min(first);
    }
    let cut = text[..first].char_indices().nth(before - context).map_or(first, |(i, _)| i);
    // Not inside a grapheme cluster: a window that began at an accent would show it alone.
    let cut = cluster_start(text, cut);
    // Not inside a word either, when one ends near: the window begins after the next white
    // space within a word's length. (Further, the text before the match is a run without
    // spaces, of emoji, flags or letters under marks: the window began at the match, with
    // none of the context there was room for.)
    let near = text[cut..first].char_indices().take(WORD_CUT_CHARS_MAX + 1).find(|(_, c)| c.is_whitespace()).map(|(w, _)| w);
    match near {
        Some(w) => {
            let after_space = cut + w;
            let rest = &text[after_space..first];
            after_space + (rest.len() - rest.trim_start().len())
        }
        None => cut,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::index::parse_query;
    use crate::index::token::tokenize;
    use proptest::prelude::*;

    /// [`marks`] as it was first written, from the list of every token: what it must equal.
    fn marks_of_every_token(text: &str, query: &Query) -> Vec<(usize, usize)> {
        let tokens = tokenize(text);
        let mut marks = Vec::new();
        // Tokens by position: tokens come in position order, at most a few per position.
        let mut first_at: Vec<usize> = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            while first_at.len() <= t.position as usize {
                first_at.push(i);
            }
        }
        first_at.push(tokens.len());
        let at_position = |p: u32| -> &[_] {
            let p = p as usize;
            match (first_at.get(p), first_at.get(p + 1)) {
                (Some(&a), Some(&b)) => &tokens[a..b],
                _ => &[],
            }
        };
        let mut clauses_found = 0;
        let mut stop_marks = Vec::new();
        for clause in &query.clauses {
            let Some((first_term, _)) = clause.terms.first() else { continue };
            let mut found_any = false;
            for t in tokens.iter().filter(|t| &t.term == first_term) {
                let found: Option<Vec<(usize, usize)>> = clause
                    .terms
                    .iter()
                    .map(|(term, rel)| {
                        let p = t.position.checked_add(*rel)?;
                        at_position(p).iter().find(|u| &u.term == term).map(|u| (u.start, u.end))
                    })
                    .collect();
                if let Some(found) = found {
                    if clause.terms.len() == 1 && is_stop_word(first_term) {
                        stop_marks.extend(found);
                    } else {
                        marks.extend(found);
                    }
                    found_any = true;
                }
            }
            clauses_found += usize::from(found_any);
        }
        if clauses_found == query.clauses.len() {
            marks.extend(stop_marks);
        }
        // A full match shows its clauses; otherwise the words that match by stem show too.
        if clauses_found < query.clauses.len() {
            let stems = Stems::new();
            for t in &tokens {
                if let Some(p) = stems.partial_term(t)
                    && query.partial.contains(&p)
                {
                    marks.push((t.start, t.end));
                }
            }
        }
        // Sorting and merging did not change: the test is of finding the marks.
        merge(marks)
    }

    fn snip(text: &str, q: &str) -> String {
        snippet(text, &parse_query(q).unwrap())
    }

    #[test]
    fn index_snippet_brackets_every_match() {
        assert_eq!(
            snip("Set up the release workflow: tag from master, publish with provenance.", "release workflow"),
            "Set up the [release] [workflow]: tag from master, publish with provenance."
        );
        // A camelCase word's parts, and two of them joined, are bracketed where they are.
        assert_eq!(snip("let c = new GitHubClient(token);", "github client"), "let c = new [GitHub][Client](token);");
    }

    /// White space before the text is not text left out: no `…` for it.
    #[test]
    fn index_snippet_does_not_mark_leading_white_space_as_cut() {
        assert_eq!(snip("\n  hello world", "world"), "hello [world]");
        assert_eq!(snip("\n\thello world", "zebra"), "hello world");
        let long = format!("\n{} the match", "word ".repeat(100));
        assert!(snip(&long, "match").starts_with('…'), "cut text is still marked");
    }

    /// A `…` of the text's own keeps the space after it (the one marking a cut does not: there
    /// the space is where the cut is).
    #[test]
    fn index_snippet_keeps_the_space_after_the_texts_own_ellipsis() {
        assert_eq!(snip("wait… what", "what"), "wait… [what]");
        assert_eq!(snip("x … y … z … target … end", "target"), "x … y … z … [target] … end");
        let long = format!("{} … the match … end", "word ".repeat(100));
        let s = snip(&long, "match");
        assert!(s.starts_with("…word") && s.ends_with("word … the [match] … end"), "{s}");
    }

    /// A stop word of the query is bracketed in a full match, not in a partial one (whose score
    /// sets it aside); a phrase holding one is bracketed whole either way.
    #[test]
    fn index_snippet_brackets_stop_words_only_in_full_matches() {
        assert_eq!(snip("how the cache is warmed", "how is the cache warmed"), "[how] [the] [cache] [is] [warmed]");
        assert_eq!(snip("how the cache is warmed", "how is the cache cooled"), "how the [cache] is warmed");
        assert_eq!(snip("the cache of the tree", "\"the cache\" pruned"), "[the] [cache] of the tree");
    }

    #[test]
    fn index_snippet_brackets_cjk_runs_and_stems() {
        assert_eq!(snip("我们在学习机器学习的方法", "机器学习"), "我们在学习[机器学习]的方法");
        assert_eq!(snip("Releases are tagged", "release"), "[Releases] are tagged");
    }

    #[test]
    fn index_snippet_is_at_most_200_characters_around_the_first_match() {
        let text = format!("{} needle {}", "hay ".repeat(300), "straw ".repeat(300));
        let s = snip(&text, "needle");
        assert!(s.chars().count() <= SNIPPET_CHARS_MAX, "{}", s.chars().count());
        assert!(s.contains("[needle]"));
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        let long_match = "机".repeat(500);
        let s = snip(&long_match, &"机".repeat(40));
        assert!(s.chars().count() <= SNIPPET_CHARS_MAX);
        assert!(s.starts_with('['));
    }

    /// Text before the match that is a run without spaces longer than a word (emoji, flags,
    /// letters under combining marks) is shown as context cut between its clusters; a word cut
    /// into is still passed to its end.
    #[test]
    fn index_snippet_shows_context_from_a_run_without_spaces() {
        for (run, cluster) in [("😀".repeat(300), "😀"), ("🇫🇷".repeat(100), "🇫🇷"), ("e\u{301}".repeat(100), "e\u{301}")] {
            let s = snip(&format!("{run} n12needle after"), "n12needle");
            assert!(s.starts_with(&format!("…{cluster}")) && s.contains(&format!("{cluster} [n12needle] after")), "{s}");
            assert!(s.chars().count() >= 150 && s.chars().count() <= SNIPPET_CHARS_MAX, "{} {s}", s.chars().count());
        }
        let s = snip(&format!("{} needle", "word ".repeat(100)), "needle");
        assert!(s.starts_with("…word word") && s.ends_with("[needle]"), "{s}");
        // White space that a mark joins (a space and U+0301, or U+200D: one cluster) is not
        // where a window begins: not on the lone mark, at the next cluster (it began on the
        // mark: "…\u{301}ab").
        for joiner in ["\u{301}", "\u{200d}"] {
            let s = snip(&format!("{}ab needle", format!("ab {joiner}").repeat(120)), "needle");
            assert!(s.starts_with("…ab") && s.contains("[needle]"), "{joiner:?}: {s:?}");
            // At the text's start, the mark left out is said.
            let s = snip(&format!(" {joiner}ab needle"), "needle");
            assert_eq!(s, "…ab [needle]", "{joiner:?}");
        }
    }

    /// The window's ends fall between grapheme clusters: an accent stays with its letter, a
    /// skin tone with its emoji, emoji joined by U+200D together; a first match too long to
    /// show whole is cut between clusters too.
    #[test]
    fn index_snippet_keeps_grapheme_clusters_whole() {
        let family = "👨\u{200D}👩\u{200D}👧";
        let s = snip(&format!("kw3 {}", family.repeat(100)), "kw3");
        assert!(s.chars().count() <= SNIPPET_CHARS_MAX);
        assert!(s.starts_with("[kw3] ") && s.ends_with(&format!("{family}…")), "{s:?}");
        let s = snip(&format!("thumbsword2 {}", "👍🏽".repeat(150)), "thumbsword2");
        assert!(s.ends_with("👍🏽…"), "{s:?}");
        let s = snip(&format!("{}。學習 tail", "e\u{301}".repeat(100)), "學習");
        assert!(s.starts_with("…e\u{301}") && s.ends_with("。[學習] tail"), "{s:?}");
        let s = snip(&"e\u{301}".repeat(150), &"e\u{301}".repeat(150));
        assert!(s.starts_with("[e\u{301}") && s.ends_with("e\u{301}]…") && s.chars().count() <= SNIPPET_CHARS_MAX, "{s:?}");
        // A cluster longer than a snippet (a letter under 300 marks, 121 emoji joined) is cut
        // by its characters: the match after it is still shown.
        for long in [format!("x{}", "\u{301}".repeat(300)), format!("👨{}", "\u{200D}👨".repeat(120))] {
            let s = snip(&format!("{long}學習 notes"), "學習");
            assert!(s.ends_with("[學習] notes") && s.chars().count() <= SNIPPET_CHARS_MAX, "{s:?}");
            let s = snip(&format!("學習 {long}"), &long);
            assert!(s.contains("[x\u{301}") || s.contains("[👨"), "{s:?}");
        }
    }

    /// Terminal colour sequences are left out of snippets: neither their bytes nor spaces (in
    /// a match across a line break, as the break, one space).
    #[test]
    fn index_snippet_leaves_terminal_colours_out() {
        assert_eq!(snip("\x1b[1m\x1b[31merror\x1b[0m: build failed", "error"), "[error]: build failed");
        assert_eq!(snip("\x1b[32mok\x1b[0m 数\x1b[0m\n据", "数据"), "ok [数 据]");
    }

    #[test]
    fn index_snippet_collapses_white_space() {
        assert_eq!(snip("tag\n\n  from master", "\"tag from\""), "[tag] [from] master");
    }

    /// Pieces of texts and queries: words and their inflections, stop words, CJK runs that
    /// share bigrams, punctuation and line breaks.
    const PIECES: &[&str] = &[
        "release", "releases", "Released", "the", "of", "tag", "tags", "master", "機器學習", "机器学习", "学习", "机器", "器学",
        "習", "データ", "ベース", "데이터", "ＡＢＣ", "abc", "record.rs", "don't", "e.g.", "3.14", "🚀", "x", "\n", ",", "\"",
        "  ", "-", "é", "naïve", "cafe\u{301}",
    ];

    fn text_of(parts: &[usize], glue: &[usize]) -> String {
        const GLUE: &[&str] = &[" ", "", "\n", ", ", "。", "\t"];
        let mut s = String::new();
        for (i, &p) in parts.iter().enumerate() {
            s.push_str(PIECES[p % PIECES.len()]);
            s.push_str(GLUE[glue.get(i).copied().unwrap_or(0) % GLUE.len()]);
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn index_snippet_marks_equal_those_of_every_token(
            parts in proptest::collection::vec(0..64usize, 0..40),
            glue in proptest::collection::vec(0..8usize, 0..40),
            qparts in proptest::collection::vec(0..64usize, 1..5),
            quoted in any::<bool>(),
        ) {
            let text = text_of(&parts, &glue);
            let q = text_of(&qparts, &[]);
            let q = if quoted { format!("\"{q}\"") } else { q };
            if let Ok(query) = parse_query(&q) {
                prop_assert_eq!(marks(&text, TextForm::Plain, &query), marks_of_every_token(&text, &query), "text {:?} query {:?}", text, q);
            }
        }
    }

    proptest! {
        #[test]
        fn index_snippet_never_panics_and_stays_short(text in "\\PC{0,400}", q in "[a-z中文 ]{1,12}") {
            if let Ok(q) = parse_query(&q) {
                let s = snippet(&text, &q);
                prop_assert!(s.chars().count() <= SNIPPET_CHARS_MAX);
            }
        }
    }
}

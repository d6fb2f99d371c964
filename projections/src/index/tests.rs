//! Behaviour tests of the index: against a linear scan, per script, ranking, partial matches,
//! filters, persistence, merging and damage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use proptest::prelude::*;

use super::token::{tokenize, tokenize_of};
use super::*;

fn meta(time_unix_ms: i64) -> DocMeta {
    DocMeta {
        scope: Scope::Event,
        kind: 0,
        tool: false,
        time_unix_ms,
        source: None,
        project: None,
        key: format!("claude-code:{time_unix_ms}"),
        record: time_unix_ms as u64,
        position: 1,
    }
}

fn q(s: &str) -> Query {
    parse_query(s).unwrap()
}

fn all(_: &Candidate<'_>) -> bool {
    true
}

/// An in-memory index of `texts`, document `i` at time `i`.
fn index_of(texts: &[&str]) -> Index {
    let mut index = Index::in_memory();
    for (i, t) in texts.iter().enumerate() {
        index.add(i as DocId, &meta(i as i64), t).unwrap();
    }
    index
}

fn search(index: &Index, query: &str, limit: usize) -> Vec<Hit> {
    index.search(&q(query), &Filters::default(), &all, limit).unwrap()
}

/// Documents matching fully, in order.
fn full(index: &Index, query: &str) -> Vec<DocId> {
    search(index, query, 100).into_iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect()
}

/// Documents matching fully, as a set.
fn found(index: &Index, query: &str) -> BTreeSet<DocId> {
    full(index, query).into_iter().collect()
}

fn set(docs: &[DocId]) -> BTreeSet<DocId> {
    docs.iter().copied().collect()
}

// ---------------------------------------------------------------------------------------------
// Scripts

#[test]
fn search_finds_two_character_chinese_query() {
    let index = index_of(&["我们用中文写文档", "中国文化很有意思", "english only"]);
    assert_eq!(full(&index, "中文"), [0]);
    assert_eq!(full(&index, "文档"), [0]);
    assert_eq!(found(&index, "中"), set(&[0, 1]));
    // 中 and 文 occur in document 1, but not adjacent: no partial match either.
    assert_eq!(search(&index, "中文", 10).len(), 1);
}

#[test]
fn search_finds_four_character_chinese_word() {
    let index = index_of(&["我在研究机器学习算法", "学习机器的原理", "机器学习"]);
    assert_eq!(found(&index, "机器学习"), set(&[0, 2]));
    let hits = search(&index, "机器学习", 10);
    assert_eq!(hits.len(), 3);
    assert_eq!((hits[2].doc, hits[2].matched), (1, Match::Partial));
    // A space between CJK words in a query does not keep them apart.
    assert_eq!(found(&index, "\"研究 机器学习\""), set(&[0]));
    assert_eq!(found(&index, "研究机器学习"), set(&[0]));
    assert_eq!(found(&index, "学习算法"), set(&[0]));
}

#[test]
fn search_finds_japanese_kana_and_kanji_mixed() {
    let index = index_of(&["昨日は東京タワーに行きました", "とうきょうタワー", "京都に行きます"]);
    assert_eq!(full(&index, "東京タワー"), [0]);
    assert_eq!(found(&index, "タワー"), set(&[0, 1]));
    assert_eq!(full(&index, "行きました"), [0]);
    assert_eq!(found(&index, "に行き"), set(&[0, 2]));
    // Half-width katakana fold to full width.
    assert_eq!(found(&index, "ﾀﾜｰ"), set(&[0, 1]));
}

#[test]
fn search_finds_korean_words() {
    let index = index_of(&["한국어 형태소 분석기를 만들었다", "분석 결과", "영어 문서"]);
    assert_eq!(full(&index, "분석기"), [0]);
    assert_eq!(found(&index, "분석"), set(&[0, 1]));
    assert_eq!(full(&index, "한국어 만들었다"), [0]);
    assert_eq!(full(&index, "한국"), [0]);
}

/// Thai, Lao, Khmer and Myanmar, written without spaces between words: a word inside a
/// sentence is found, in order; a question in other words finds what shares its syllables'
/// pairs, and a text that shares only letters is no match of any kind.
#[test]
fn search_finds_thai_lao_khmer_and_myanmar_words() {
    let index = index_of(&[
        "ฉันชอบกินข้าวผัดมาก",
        "ข้าวมันไก่อร่อย",
        "ผัดไทยกุ้งสด",
        "ดผัวาข้",
        "ຂ້ອຍກິນເຂົ້າແລ້ວ",
        "ខ្ញុំស្រឡាញ់ភាសាខ្មែរ",
        "မင်္ဂလာပါ ခင်ဗျာ",
        "we ate the ข้าวผัด at noon",
    ]);
    assert_eq!(found(&index, "ข้าวผัด"), set(&[0, 7]));
    assert_eq!(found(&index, "ข้าว"), set(&[0, 1, 7]));
    assert_eq!(found(&index, "ผัด"), set(&[0, 2, 7]));
    assert_eq!(full(&index, "ເຂົ້າ"), [4]);
    assert_eq!(full(&index, "ភាសាខ្មែរ"), [5]);
    assert_eq!(full(&index, "မင်္ဂလာ"), [6]);
    // A stop word beside a run makes no pair term, in the text or in a phrase.
    assert_eq!(full(&index, "\"the ข้าวผัด\""), [7]);
    // Partial matches share a pair of clusters with the query: document 3 holds the letters
    // of ข้าวผัด in another order, and is no match at all.
    let hits = search(&index, "ข้าวผัดกุ้ง", 10);
    assert!(hits.iter().all(|h| h.matched == Match::Partial), "{hits:?}");
    assert_eq!(hits.iter().map(|h| h.doc).collect::<BTreeSet<_>>(), set(&[0, 1, 2, 7]), "{hits:?}");
}

/// Arabic, Persian and Hebrew written with or without their optional marks, and with either
/// of the letters keyboards give for one another, find each other; the snippet shows the text
/// as written.
#[test]
fn search_finds_arabic_persian_and_hebrew_with_or_without_marks() {
    let index = index_of(&["كَتَبَ الطالبُ الدرسَ", "كتب المعلم", "این یک کتاب است", "שָׁלוֹם לכולם", "أحمد"]);
    assert_eq!(found(&index, "كتب"), set(&[0, 1]));
    assert_eq!(found(&index, "كَتَبَ"), set(&[0, 1]));
    assert_eq!(full(&index, "\"يك كتاب\""), [2]);
    assert_eq!(full(&index, "שלום"), [3]);
    assert_eq!(full(&index, "احمد"), [4]);
    assert_eq!(snippet("كَتَبَ الطالبُ الدرسَ", &q("كتب")), "[كَتَبَ] الطالبُ الدرسَ");
}

/// An index in `dir` of `texts` (ids and times their places), each committed as a segment of
/// its own, merged into one and opened again: what reading a segment's terms back asks of them.
fn committed_one_by_one_and_merged(dir: &std::path::Path, texts: &[impl AsRef<str>]) -> Index {
    let mut index = Index::open(dir).unwrap();
    for (i, t) in texts.iter().enumerate() {
        index.add(i as DocId, &meta(i as i64), t.as_ref()).unwrap();
        index.commit(i as u64 + 1).unwrap();
    }
    index.merge_all().unwrap();
    let index = Index::open(dir).unwrap();
    assert_eq!(index.segments.len(), 1);
    index
}

/// A grapheme cluster of any length (a letter under dozens of marks, as in "Zalgo" text) is a
/// unit cut to 64 bytes, so its bigrams stay other terms than it: the index writes, merges and
/// reads it (a term twice at one position is damage to the reader), and finds it.
#[test]
fn index_keeps_runs_of_long_grapheme_clusters_searchable() {
    let long = format!("ก{}", "\u{E49}".repeat(41));
    let texts = [format!("{long}ข ok"), format!("{long}\nข{long}"), format!("ข{long}{long}ค")];
    let dir = tempfile::tempdir().unwrap();
    let index = committed_one_by_one_and_merged(dir.path(), &texts);
    assert_eq!(found(&index, &format!("{long}ข")), set(&[0, 1]), "the second across its line break");
    assert_eq!(found(&index, &format!("\"{long}{long}\"")), set(&[2]));
    assert_eq!(found(&index, "ข"), set(&[0, 1, 2]));
}

/// The parts of one word may share a stem term with each other (`runs` and `running`) or with
/// the word (`testingS` and `testing`): it counts the word's position once, so its frequency
/// stays within the document's length, which a segment's writer checks. Committed, merged and
/// searched. (Found by fuzzing the query target.)
#[test]
fn index_writes_camel_case_words_whose_parts_share_a_stem() {
    // The last, the fuzzer's input (its document line, as bytes).
    let found_by_fuzzing = String::from_utf8([&b"ezsjh"[..], &[b'e'; 84], b"S"].concat()).unwrap();
    let texts = ["runsRunning", "testingS", "a runsRunning of runners", found_by_fuzzing.as_str()];
    let dir = tempfile::tempdir().unwrap();
    let index = committed_one_by_one_and_merged(dir.path(), &texts);
    assert_eq!(found(&index, "running"), set(&[0, 2]));
    assert_eq!(found(&index, "testing"), set(&[1]));
    let partial: BTreeSet<DocId> = search(&index, "run", 10).into_iter().map(|h| h.doc).collect();
    assert_eq!(partial, set(&[0, 2]));
    let partial: BTreeSet<DocId> = search(&index, "tests", 10).into_iter().map(|h| h.doc).collect();
    assert_eq!(partial, set(&[1]));
}

/// A word written with or without its accents is a partial match of the other: after every
/// full match, which stays exact; its snippet brackets the word as written.
#[test]
fn search_partial_matches_meet_words_with_or_without_accents() {
    let index = index_of(&["café au lait", "the cafe opens at nine", "résumé writing", "resume the job", "người dùng"]);
    let hits = |query: &str| search(&index, query, 10).into_iter().map(|h| (h.doc, h.matched)).collect::<Vec<_>>();
    assert_eq!(hits("cafe"), [(1, Match::All), (0, Match::Partial)]);
    assert_eq!(hits("café"), [(0, Match::All), (1, Match::Partial)]);
    assert_eq!(hits("resume"), [(3, Match::All), (2, Match::Partial)]);
    assert_eq!(hits("nguoi"), [(4, Match::Partial)]);
    assert_eq!(snippet("café au lait", &q("cafe")), "[café] au lait");
    assert_eq!(snippet("une école ferme", &q("ecole")), "une [école] ferme");
}

/// A word written in camelCase or PascalCase is found by its parts, and by itself in any
/// case; its parts keep its position, so a phrase of them does not match inside it.
#[test]
fn search_finds_camel_case_words_by_their_parts() {
    let index = index_of(&[
        "call parseQuery here",
        "the query was slow",
        "HTTPServer started",
        "parse the query",
        "parsequery in lower case",
        "getUserById returned nothing",
        "call getUser of it",
    ]);
    assert_eq!(found(&index, "query"), set(&[0, 1, 3]));
    assert_eq!(found(&index, "parseQuery"), set(&[0, 4]));
    assert_eq!(found(&index, "PARSEQUERY"), set(&[0, 4]));
    assert_eq!(found(&index, "parse query"), set(&[0, 3]));
    assert_eq!(found(&index, "http server"), set(&[2]));
    assert_eq!(found(&index, "user id"), set(&[5]));
    assert!(full(&index, "\"parse query\"").is_empty(), "parts are not adjacent words");
    assert_eq!(full(&index, "\"getUserById returned\""), [5], "the words after keep their positions");
    assert_eq!(full(&index, "\"user returned\""), [5], "a part stands where its word does");
    // Beside a stop word, through the phrase's pair term, which the part makes too.
    assert_eq!(full(&index, "\"user of\""), [6]);
    assert_eq!(full(&index, "\"call get\""), [6]);
    // Partial matches meet the parts' stems: `queries` is no word of these texts.
    let hits: Vec<(DocId, Match)> = search(&index, "queries", 10).into_iter().map(|h| (h.doc, h.matched)).collect();
    assert_eq!(hits.iter().map(|h| h.1).collect::<Vec<_>>(), [Match::Partial; 3]);
    assert_eq!(hits.iter().map(|h| h.0).collect::<BTreeSet<_>>(), set(&[0, 1, 3]));
    // A query's own camelCase word: its parts' stems count for partial matches, beside the
    // word's (`parsequery` stems as `parsequeries` does).
    let hits: Vec<(DocId, Match)> = search(&index, "parseQueries", 10).into_iter().map(|h| (h.doc, h.matched)).collect();
    assert_eq!(hits.iter().map(|h| h.1).collect::<Vec<_>>(), [Match::Partial; 4]);
    assert_eq!(hits.iter().map(|h| h.0).collect::<BTreeSet<_>>(), set(&[0, 1, 3, 4]));
    assert_eq!(snippet("call parseQuery here", &q("query")), "call parse[Query] here");
    assert_eq!(snippet("call parseQuery here", &q("parsequery query")), "call [parseQuery] here");
    assert_eq!(snippet("call parseQuery here", &q("queries")), "call parse[Query] here", "a partial match's part");
}

/// Words written with invisible characters inside (a soft hyphen, a left-to-right mark), and
/// words in terminal colours, are found as typed; a camelCase word followed by a non-joiner
/// keeps its parts.
#[test]
fn search_finds_words_past_invisible_characters_and_terminal_colours() {
    let index = index_of(&[
        "the Donau\u{AD}dampf\u{AD}schiff leaves",
        "label abc\u{200E}def here",
        "\x1b[1m\x1b[31merror\x1b[0m: build failed\n\x1b[33mwarning\x1b[0m: unused",
        "call parseQuery\u{200C} now",
        "plain error words",
    ]);
    assert_eq!(found(&index, "donaudampfschiff"), set(&[0]));
    assert_eq!(found(&index, "abcdef"), set(&[1]));
    assert_eq!(found(&index, "error"), set(&[2, 4]));
    assert_eq!(found(&index, "warning unused"), set(&[2]));
    assert_eq!(found(&index, "\"build failed\""), set(&[2]));
    assert_eq!(found(&index, "query"), set(&[3]));
    assert!(found(&index, "31merror").is_empty() && found(&index, "33mwarning").is_empty());
}

/// A tool call's input is JSON: the first word of each line it writes is found, by itself and
/// in a phrase, and bracketed in its snippet; in a message the same bytes are text.
#[test]
fn search_finds_words_after_json_escapes_in_tool_calls() {
    let mut index = Index::in_memory();
    let call = DocMeta { kind: EventKind::ToolUse as u8, tool: true, ..meta(1) };
    let input = r#"Write {"content":"import os\ndef main():\n\treturn 1"}"#;
    index.add(1, &call, input).unwrap();
    index.add(2, &meta(2), input).unwrap();
    // A tool result that is one JSON value (an MCP tool's answer) is read so too.
    let result = DocMeta { kind: EventKind::ToolResult as u8, tool: true, ..meta(3) };
    index.add(3, &result, r#"{"stdout":"built\nerror: failed"}"#).unwrap();
    let with_tools = Filters { include_tools: true, ..Filters::default() };
    let full = |query: &str| -> Vec<DocId> {
        index.search(&q(query), &with_tools, &all, 10).unwrap().into_iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect()
    };
    // The message holding the same bytes is found by both readings of a line break's escape
    // (rule 6): its letter glued to the word, and the word without it; a tab's is text.
    let set_of = |v: Vec<DocId>| v.into_iter().collect::<BTreeSet<DocId>>();
    assert_eq!(set_of(full("def")), set(&[1, 2]));
    assert_eq!(set_of(full("\"os def main\"")), set(&[1, 2]));
    assert_eq!(full("return"), [1]);
    assert_eq!(full("ndef"), [2], "a message's backslash is a break, its letter text");
    assert_eq!(full("error"), [3]);
    assert_eq!(Index::snippet_of(input, TextForm::Json, &q("def")), r#"Write {"content":"import os\n[def] main():\n\treturn 1"}"#);
}

#[test]
fn search_finds_emoji() {
    let index = index_of(&["shipped 🚀 today", "love it ❤️", "no emoji here", "🚀🚀 twice"]);
    assert_eq!(full(&index, "🚀"), [3, 0]);
    assert_eq!(full(&index, "❤"), [1]);
    assert_eq!(full(&index, "❤️"), [1]);
    assert_eq!(full(&index, "shipped 🚀"), [0]);
}

#[test]
fn search_matches_full_width_latin_to_ascii() {
    let index = index_of(&["ＲＥＬＥＡＳＥ notes", "release notes", "Ｒｅｌｅａｓｅ"]);
    assert_eq!(full(&index, "release").len(), 3);
    assert_eq!(full(&index, "ｒｅｌｅａｓｅ ＮＯＴＥＳ").len(), 2);
}

#[test]
fn search_matches_phrase_across_line_break_in_order() {
    let index = index_of(&["tag from\nmaster, then publish", "from a master", "master from"]);
    assert_eq!(full(&index, "\"from master\""), [0]);
    assert_eq!(full(&index, "\"master from\""), [2]);
    assert_eq!(found(&index, "from master"), set(&[0, 1, 2]));
}

/// Chinese and Japanese hard-wrapped across a line break: the word or phrase broken by the
/// wrap is a full match, and its snippet brackets it whole.
#[test]
fn search_matches_cjk_words_across_a_line_break() {
    let index = index_of(&["部署前先跑机器\n学习的测试", "机器\n\n学习", "データ\n  ベースの設定", "机器 学习"]);
    assert_eq!(full(&index, "机器学习"), [0]);
    assert_eq!(full(&index, "\"先跑机器学习\""), [0]);
    assert_eq!(full(&index, "データベース"), [2]);
    assert_eq!(found(&index, "机器 学习"), set(&[0, 1, 3]), "as two words, every text with both");
    // Snippets show whitespace as one space.
    assert_eq!(snippet("部署前先跑机器\n学习的测试", &q("机器学习")), "部署前先跑[机器 学习]的测试");
}

#[test]
fn search_requires_every_word() {
    let index = index_of(&["release workflow", "release notes", "workflow notes"]);
    assert_eq!(full(&index, "release workflow"), [0]);
    assert_eq!(full(&index, "release zebra"), Vec::<DocId>::new());
}

#[test]
fn search_matches_file_names_and_identifiers_by_part() {
    let index = index_of(&["edit engine/src/record.rs now", "call parse_query first"]);
    assert_eq!(full(&index, "record"), [0]);
    assert_eq!(full(&index, "record.rs"), [0]);
    assert_eq!(full(&index, "parse_query"), [1]);
    assert_eq!(full(&index, "query"), [1]);
}

// ---------------------------------------------------------------------------------------------
// Ranking

#[test]
fn search_ranks_by_bm25() {
    // Higher frequency at equal length first; shorter document at equal frequency first.
    let index = index_of(&[
        "rust memory archive index",
        "rust rust rust archive",
        "rust archive with a much longer body of other words around it",
    ]);
    let hits = search(&index, "rust archive", 10);
    assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [1, 0, 2]);
    assert!(hits.windows(2).all(|w| w[0].score > w[1].score));
    // A rarer term weighs more: "rare" is in one document, "common" in four, all of length 2.
    let index = index_of(&["rare common", "common x", "common y", "common z"]);
    let rare = search(&index, "rare", 10);
    let common = search(&index, "common", 10);
    assert_eq!(rare.len(), 1);
    assert!(rare[0].score > common[0].score);
    assert_eq!(common.iter().map(|h| h.doc).collect::<Vec<_>>(), [3, 2, 1, 0], "equal scores: newest first");
}

#[test]
fn search_breaks_score_ties_to_the_more_recent_document() {
    let mut index = Index::in_memory();
    for (doc, time) in [(1, 500), (2, 900), (3, 100), (4, 700)] {
        index.add(doc, &meta(time), "same words here").unwrap();
    }
    let hits = search(&index, "words", 10);
    assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [2, 4, 1, 3]);
    assert!(hits.windows(2).all(|w| w[0].score == w[1].score));
    // The limit keeps the most recent.
    assert_eq!(search(&index, "words", 2).iter().map(|h| h.doc).collect::<Vec<_>>(), [2, 4]);
}

// ---------------------------------------------------------------------------------------------
// Partial matches

#[test]
fn search_puts_partial_matches_after_every_full_match() {
    let long = format!("release zebra {}", "b c e f g h j k l n o p q r u v w x y z".repeat(1));
    let index =
        index_of(&[&long, "zebras", "x y", "x z", "y z", "w x", "releases released releasing", "nothing related"]);
    let hits = search(&index, "release zebra", 10);
    assert_eq!((hits[0].doc, hits[0].matched), (0, Match::All));
    assert_eq!(hits.iter().map(|h| h.doc).collect::<BTreeSet<_>>(), set(&[0, 1, 6]));
    assert!(hits[1..].iter().all(|h| h.matched == Match::Partial));
    assert!(hits[1].score > hits[0].score, "a partial match may score more and still come after");
}

#[test]
fn search_has_no_partial_matches_when_limit_full_matches_exist() {
    let index = index_of(&["release workflow one", "release workflow two", "release only"]);
    let hits = search(&index, "release workflow", 2);
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.matched == Match::All));
    let hits = search(&index, "release workflow", 3);
    assert_eq!(hits.iter().map(|h| h.matched).collect::<Vec<_>>(), [Match::All, Match::All, Match::Partial]);
}

#[test]
fn search_answers_a_question_in_other_words() {
    let index = index_of(&[
        "The parser reports errors with line numbers",
        "Releases are tagged from master once CI passes",
        "We use tabs, not spaces",
        "Who owns the database schema?",
    ]);
    let hits = search(&index, "how do we cut a release of the app?", 5);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!((hits[0].doc, hits[0].matched), (1, Match::Partial));
    let s = snippet("Releases are tagged from master once CI passes", &q("how do we cut a release of the app?"));
    assert_eq!(s, "[Releases] are tagged from master once CI passes");
}

#[test]
fn search_partial_matches_respect_filters_and_visibility() {
    let index = index_of(&["release notes", "releases", "released"]);
    let hits = index.search(&q("release workflow"), &Filters::default(), &|c| c.doc != 1, 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.doc).collect::<BTreeSet<_>>(), BTreeSet::from([0, 2]));
    let f = Filters { since_unix_ms: Some(2), ..Filters::default() };
    let hits = index.search(&q("release workflow"), &f, &all, 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [2]);
}

// ---------------------------------------------------------------------------------------------
// Filters and visibility

#[test]
fn search_applies_every_filter() {
    let mut index = Index::in_memory();
    let docs = [
        (
            1,
            DocMeta {
                scope: Scope::Entry,
                kind: 1,
                tool: false,
                time_unix_ms: 10,
                source: None,
                project: Some("a".into()),
                key: String::new(),
                record: 0,
                position: 0,
            },
        ),
        (
            2,
            DocMeta {
                scope: Scope::Event,
                kind: 0,
                tool: false,
                time_unix_ms: 20,
                source: Some("codex".into()),
                project: Some("a".into()),
                key: String::new(),
                record: 0,
                position: 0,
            },
        ),
        (
            3,
            DocMeta {
                scope: Scope::Event,
                kind: 2,
                tool: true,
                time_unix_ms: 30,
                source: Some("claude-code".into()),
                project: None,
                key: String::new(),
                record: 0,
                position: 0,
            },
        ),
        (
            4,
            DocMeta {
                scope: Scope::Event,
                kind: 0,
                tool: false,
                time_unix_ms: 40,
                source: Some("claude-code".into()),
                project: Some("b".into()),
                key: String::new(),
                record: 0,
                position: 0,
            },
        ),
    ];
    for (doc, m) in &docs {
        index.add(*doc, m, "deploy the service").unwrap();
    }
    let run = |f: Filters| -> BTreeSet<DocId> {
        index.search(&q("deploy"), &f, &all, 10).unwrap().into_iter().map(|h| h.doc).collect()
    };
    assert_eq!(run(Filters::default()), set(&[1, 2, 4]));
    assert_eq!(run(Filters { include_tools: true, ..Filters::default() }), set(&[1, 2, 3, 4]));
    assert_eq!(run(Filters { scope: Some(Scope::Entry), ..Filters::default() }), set(&[1]));
    assert_eq!(run(Filters { scope: Some(Scope::Event), kind: Some(0), ..Filters::default() }), set(&[2, 4]));
    assert_eq!(
        run(Filters { since_unix_ms: Some(20), until_unix_ms: Some(40), include_tools: true, ..Filters::default() }),
        set(&[2, 3])
    );
    assert_eq!(run(Filters { source: Some("claude-code".into()), ..Filters::default() }), set(&[4]));
    assert_eq!(run(Filters { source: Some("grok".into()), ..Filters::default() }), set(&[]));
    assert_eq!(run(Filters { project: Some("a".into()), ..Filters::default() }), set(&[1, 2]));
    let hidden = |c: &Candidate<'_>| c.doc != 2;
    let hits: BTreeSet<DocId> =
        index.search(&q("deploy"), &Filters::default(), &hidden, 10).unwrap().into_iter().map(|h| h.doc).collect();
    assert_eq!(hits, set(&[1, 4]));
}

#[test]
fn index_asks_visibility_of_the_hits_and_searches_again_when_one_is_hidden() {
    // 300 documents hold "deploy", the later ones more often (so the best are spread over the
    // segments and the memory one); two segments on disk and the memory segment.
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open(dir.path()).unwrap();
    for i in 0..300u32 {
        let text = format!("{} note {i}", "deploy ".repeat(1 + (i as usize * 7) % 5));
        index.add(i, &meta(i as i64), &text).unwrap();
        if i == 99 || i == 199 {
            index.commit(u64::from(i) + 1).unwrap();
        }
    }
    let asked = std::cell::RefCell::new(Vec::new());
    let asked = &asked;
    let counting = |hidden: Vec<DocId>| {
        move |c: &Candidate<'_>| {
            asked.borrow_mut().push(c.doc);
            !hidden.contains(&c.doc)
        }
    };
    // Nothing hidden: the predicate is asked about the ten hits only, each once.
    let hits = index.search(&q("deploy"), &Filters::default(), &counting(Vec::new()), 10).unwrap();
    let docs: Vec<DocId> = hits.iter().map(|h| h.doc).collect();
    assert_eq!(docs.len(), 10);
    assert_eq!(*asked.borrow(), docs, "asked about the hits, in rank order");
    // The best hit hidden: searched again, asking about entrants; the answer is the next ten.
    asked.borrow_mut().clear();
    let again: Vec<DocId> =
        index.search(&q("deploy"), &Filters::default(), &counting(vec![docs[0]]), 10).unwrap().iter().map(|h| h.doc).collect();
    let eleven: Vec<DocId> = index.search(&q("deploy"), &Filters::default(), &all, 11).unwrap().iter().map(|h| h.doc).collect();
    assert_eq!(again, eleven[1..].to_vec());
    assert!(asked.borrow().len() > 10, "the second search asked about its entrants: {:?}", asked.borrow());
}

#[test]
fn index_refuses_duplicate_documents_and_large_limits() {
    let mut index = index_of(&["one"]);
    assert!(matches!(index.add(0, &meta(0), "again"), Err(IndexError::DuplicateDoc(0))));
    index.commit(1).unwrap();
    assert!(matches!(index.add(0, &meta(0), "again"), Err(IndexError::DuplicateDoc(0))));
    assert!(index.search(&q("one"), &Filters::default(), &all, limits::SEARCH_LIMIT_MAX + 1).is_err());
    assert_eq!(index.search(&q("one"), &Filters::default(), &all, 0).unwrap(), []);
}

// ---------------------------------------------------------------------------------------------
// The index against a linear scan

const PIECES: &[&str] = &[
    "release",
    "Release",
    "ＲＥＬＥＡＳＥ",
    "releases",
    "workflow",
    "tag",
    "tags",
    "Tagged",
    "master",
    "rust",
    "Ｒｕｓｔ",
    "the",
    "of",
    "and the",
    "CI",
    "record.rs",
    "don’t",
    "发布",
    "流程",
    "机器学习",
    "中文",
    "学习",
    "机器",
    "東京タワー",
    "タワー",
    "ひらがな",
    "に行きました",
    "京都",
    "한국어",
    "분석기",
    "배포",
    "🚀",
    "❤️",
    "👍🏽",
    "🎉",
    "ข้าวผัด",
    "ผัด",
    "ที่",
    "ສະບາຍດີ",
    "ខ្ញុំ",
    "မင်္ဂလာ",
    "كَتَبَ",
    "كتب",
    "یک",
    "שָׁלוֹם",
    "café",
    "cafe",
    "x",
    "parseQuery",
    "ParseQuery",
    "parse",
    "query",
    "HTTPServer",
    "server",
    // Escapes of JSON strings: white space in a tool call's text that ends in a JSON value,
    // text in any other.
    "{\"c\":\"os\\ndef x\\u0041y\"}",
    "[\"a\\tb\"]",
    "os\\ndef",
    "def",
    "C:\\\\new",
    "new",
    "x\\u0041y",
];
const SEPARATORS: &[&str] = &[" ", "\n", "", ", ", "。", "  \n", "-"];

#[derive(Clone, Debug)]
struct Doc {
    id: DocId,
    meta: DocMeta,
    text: String,
    pieces: Vec<usize>,
    visible: bool,
}

fn doc_strategy() -> impl Strategy<Value = (Vec<(usize, usize)>, u8, bool, i64, u8, u8, bool)> {
    (
        proptest::collection::vec((0..PIECES.len(), 0..SEPARATORS.len()), 0..10),
        0u8..3,
        any::<bool>(),
        0i64..6,
        0u8..3,
        0u8..3,
        proptest::bool::weighted(0.85),
    )
}

/// Document `i` of a generated corpus, its id `i * spacing + 3` (consecutive ids, as the catalog
/// gives them, for a spacing of 1: searches then read a segment's document figures from memory,
/// else from its rows).
fn build_doc(i: usize, spacing: DocId, d: &(Vec<(usize, usize)>, u8, bool, i64, u8, u8, bool)) -> Doc {
    let (pieces, kind, tool, time, source, project, visible) = d;
    let mut text = String::new();
    for (p, s) in pieces {
        text.push_str(PIECES[*p]);
        text.push_str(SEPARATORS[*s]);
    }
    let pick = |n: u8, names: [&str; 2]| (n > 0).then(|| names[n as usize - 1].to_string());
    Doc {
        id: (i as DocId) * spacing + 3,
        meta: DocMeta {
            // Events of kinds 0 and 1 (messages, tool calls: plain text and JSON), entries of 2.
            scope: if *kind < 2 { Scope::Event } else { Scope::Entry },
            kind: *kind,
            tool: *tool,
            time_unix_ms: *time,
            source: pick(*source, ["codex", "claude-code"]),
            project: pick(*project, ["a", "b"]),
            key: String::new(),
            record: 0,
            position: 0,
        },
        text,
        pieces: pieces.iter().map(|p| p.0).collect(),
        visible: *visible,
    }
}

/// A query made from the corpus: a piece, two pieces, or two adjacent pieces quoted across a
/// line break (from one document, or from anywhere), or a slice of a text.
fn build_query(docs: &[Doc], shape: (u8, usize, usize, usize)) -> String {
    let (kind, a, b, len) = shape;
    let d = &docs[a % docs.len()];
    let piece = |i: usize| match d.pieces.len() {
        _ if kind >= 192 || d.pieces.is_empty() => PIECES[i % PIECES.len()],
        n => PIECES[d.pieces[i % n]],
    };
    match kind % 5 {
        0 => piece(b).to_string(),
        1 => format!("{} {}", piece(b), piece(len)),
        2 => format!("\"{}\n{}\"", piece(b), piece(b + 1)),
        // A phrase of two to four words of the document as written (stop words and their
        // neighbours: pair terms).
        4 => {
            let words: Vec<&str> = d.text.split_whitespace().collect();
            if words.is_empty() {
                return "the".into();
            }
            let start = b % words.len();
            format!("\"{}\"", words[start..(start + 2 + len % 3).min(words.len())].join(" "))
        }
        _ => {
            let chars: Vec<char> = d.text.chars().collect();
            if chars.is_empty() {
                return "x".into();
            }
            let start = b % chars.len();
            chars[start..(start + 1 + len % 6).min(chars.len())].iter().collect()
        }
    }
}

/// Filters, each mostly unset (so that most searches find something).
fn filters_of(f: (u8, u8, u8, u8, bool)) -> Filters {
    let (scope, time, source, project, tools) = f;
    let (since_unix_ms, until_unix_ms) = match time % 8 {
        1 => (Some(2), None),
        2 => (None, Some(4)),
        3 => (Some(1), Some(4)),
        _ => (None, None),
    };
    Filters {
        scope: match scope % 6 {
            1 => Some(Scope::Entry),
            2 => Some(Scope::Event),
            _ => None,
        },
        kind: (scope % 6 == 3).then_some(2),
        since_unix_ms,
        until_unix_ms,
        source: match source % 6 {
            1 => Some("codex".to_string()),
            2 => Some("grok".to_string()),
            _ => None,
        },
        project: (project % 4 == 1).then(|| "a".to_string()),
        include_tools: tools,
    }
}

/// The model of filters and visibility.
fn passes(d: &Doc, f: &Filters) -> bool {
    let m = &d.meta;
    d.visible
        && f.scope.is_none_or(|s| s == m.scope)
        && f.kind.is_none_or(|k| k == m.kind)
        && f.since_unix_ms.is_none_or(|t| m.time_unix_ms >= t)
        && f.until_unix_ms.is_none_or(|t| m.time_unix_ms < t)
        && (f.source.is_none() || f.source == m.source)
        && (f.project.is_none() || f.project == m.project)
        && (f.include_tools || !m.tool)
}

/// The model: documents holding every clause, by scanning each text's tokens.
fn scan(docs: &[Doc], query: &Query, f: &Filters) -> BTreeSet<DocId> {
    let mut out = BTreeSet::new();
    for d in docs {
        if !passes(d, f) {
            continue;
        }
        let tokens = tokenize_of(&d.text, d.meta.text_form(&d.text));
        let holds = query.clauses.iter().all(|c| {
            tokens.iter().any(|start| {
                c.terms
                    .iter()
                    .all(|(term, rel)| tokens.iter().any(|t| t.position == start.position + rel && &t.term == term))
            })
        });
        if holds {
            out.insert(d.id);
        }
    }
    out
}

/// The model of partial matches: every document that passes, is visible, is no full match
/// and holds a partial-match term of the query (a word's stem, a CJK token), with its BM25 score over those terms, in the index's statistics (every
/// document counts, hidden or not).
fn scan_partial(docs: &[Doc], query: &Query, f: &Filters, full: &BTreeSet<DocId>) -> std::collections::BTreeMap<DocId, f64> {
    let stems = super::stem::Stems::new();
    let bags: Vec<(std::collections::BTreeMap<String, u32>, u32)> = docs
        .iter()
        .map(|d| {
            let tokens = tokenize_of(&d.text, d.meta.text_form(&d.text));
            let length = tokens.iter().map(|t| t.position + 1).max().unwrap_or(0);
            let mut bag = std::collections::BTreeMap::new();
            // The index holds a word's partial-match occurrence in the word's own term when the
            // word is its own stem, else in the stem term, which counts a position once (a word
            // and its parts may share a stem); a document's frequency is the sum of the two.
            let mut seen = BTreeSet::new();
            for t in &tokens {
                // A word by its stem; a CJK token as it is (a query's lone character finds it
                // as a unigram of a longer run too: they are one term).
                let p = if matches!(t.kind, super::token::TokenKind::Word | super::token::TokenKind::Part) {
                    stems.partial_term(t)
                } else {
                    Some(t.term.clone())
                };
                if let Some(p) = p {
                    let own = p.strip_prefix(super::stem::STEM_PREFIX) == Some(t.term.as_str());
                    if own || seen.insert((p.clone(), t.position)) {
                        *bag.entry(p).or_insert(0) += 1;
                    }
                }
            }
            (bag, length)
        })
        .collect();
    let n = docs.len() as f64;
    let avg = bm25::avg_length(bags.iter().map(|b| u64::from(b.1)).sum(), docs.len() as u64);
    let idf: Vec<f64> = query
        .partial
        .iter()
        .map(|t| {
            let df = bags.iter().filter(|b| b.0.contains_key(t)).count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for (d, (bag, length)) in docs.iter().zip(&bags) {
        if !passes(d, f) || full.contains(&d.id) {
            continue;
        }
        let mut score = None;
        for (t, idf) in query.partial.iter().zip(&idf) {
            if let Some(&tf) = bag.get(t) {
                *score.get_or_insert(0.0) += idf * bm25::tf_part(tf, *length, avg);
            }
        }
        if let Some(score) = score {
            out.insert(d.id, score);
        }
    }
    out
}

/// The partial matches' scores of words whose parts share a stem with each other or with a
/// part that is its own stem (`tagTagged`: the word `tag` and the stem term of `tagged` at one
/// position, two occurrences; `runsRunning`: one stem term twice at one position, one) are the
/// model's, committed or not: fixed cases of the property test below.
#[test]
fn index_partial_scores_of_camel_case_parts_agree_with_the_model() {
    let texts = ["tagTagged", "tags and a tag", "runsRunning here", "the tagged release", "ran a run"];
    let docs: Vec<Doc> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Doc { id: i as DocId, meta: meta(i as i64), text: t.to_string(), pieces: Vec::new(), visible: true })
        .collect();
    for commit in [false, true] {
        let mut index = Index::in_memory();
        for d in &docs {
            index.add(d.id, &d.meta, &d.text).unwrap();
        }
        if commit {
            index.commit(1).unwrap();
        }
        for text in ["tagging", "running", "tagging runs"] {
            let query = parse_query(text).unwrap();
            let f = Filters::default();
            let full = scan(&docs, &query, &f);
            let want = scan_partial(&docs, &query, &f, &full);
            let hits = index.search(&query, &f, &all, 100).unwrap();
            let got: std::collections::BTreeMap<DocId, f64> =
                hits.iter().filter(|h| h.matched == Match::Partial).map(|h| (h.doc, f64::from(h.score))).collect();
            assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{text}");
            for (doc, score) in &want {
                assert!((got[doc] - score).abs() <= 1e-5 * score.abs().max(1.0), "{text}: document {doc} scores {} against {score}", got[doc]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Whatever the scripts, filters, visibility and segment layout, the full matches are
    /// exactly the documents a linear scan finds; partial matches follow them, pass the same
    /// filters, and hold no full match; and results equal those of a single in-memory segment.
    #[test]
    fn index_search_agrees_with_a_linear_scan(
        raw_docs in proptest::collection::vec(doc_strategy(), 1..24),
        commits in proptest::collection::vec(any::<bool>(), 24),
        merge_at_end in any::<bool>(),
        queries in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()), 1..8),
        filters in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<bool>()), 0..3),
        spaced in any::<bool>(),
    ) {
        let spacing = if spaced { 7 } else { 1 };
        let docs: Vec<Doc> = raw_docs.iter().enumerate().map(|(i, d)| build_doc(i, spacing, d)).collect();
        let mut reference = Index::in_memory();
        let mut index = Index::in_memory();
        for (i, d) in docs.iter().enumerate() {
            reference.add(d.id, &d.meta, &d.text).unwrap();
            index.add(d.id, &d.meta, &d.text).unwrap();
            if commits[i] {
                index.commit(i as u64).unwrap();
            }
        }
        if merge_at_end {
            index.commit(99).unwrap();
            index.merge_all().unwrap();
        }
        let visible = |c: &Candidate<'_>| docs.iter().any(|d| d.id == c.doc && d.visible);
        let everything = Filters { include_tools: true, ..Filters::default() };
        let filters: Vec<Filters> = std::iter::once(everything).chain(filters.into_iter().map(filters_of)).collect();
        for shape in &queries {
            let text = build_query(&docs, *shape);
            let Ok(query) = parse_query(&text) else { continue };
            for f in &filters {
                let f = f.clone();
                let hits = index.search(&query, &f, &visible, 1000).unwrap();
                let expected = scan(&docs, &query, &f);
                let got: BTreeSet<DocId> = hits.iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect();
                prop_assert_eq!(&got, &expected, "query {:?} filters {:?}", text, f);
                let first_partial = hits.iter().position(|h| h.matched == Match::Partial).unwrap_or(hits.len());
                prop_assert!(hits[first_partial..].iter().all(|h| h.matched == Match::Partial));
                for h in &hits[first_partial..] {
                    prop_assert!(!expected.contains(&h.doc));
                    let d = docs.iter().find(|d| d.id == h.doc).unwrap();
                    prop_assert!(passes(d, &f), "partial hit {} fails the filters", h.doc);
                }
                // Partial matches: exactly the model's documents, with its scores.
                let want = scan_partial(&docs, &query, &f, &expected);
                let partial: std::collections::BTreeMap<DocId, f32> = hits[first_partial..].iter().map(|h| (h.doc, h.score)).collect();
                prop_assert_eq!(partial.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "query {:?} filters {:?}", text, f);
                for (doc, score) in &want {
                    let got = f64::from(partial[doc]);
                    prop_assert!((got - score).abs() <= 1e-5 * score.abs().max(1.0), "query {:?}: document {} scores {} against the model's {}", text, doc, got, score);
                }
                let same = reference.search(&query, &f, &visible, 1000).unwrap();
                prop_assert_eq!(&hits, &same);
                // Pair terms only find the documents sooner: without them, the same hits.
                let unpaired = index.search(&query.without_pairs(), &f, &visible, 1000).unwrap();
                prop_assert_eq!(hits, unpaired, "query {:?}: pair terms changed the hits", text);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// A query with a rare word beside common ones (whose partial pass scores the rare word's
    /// documents first, then walks the rest without them): full matches are those of a linear
    /// scan, and the partial matches are exactly the model's, with its scores, for a limit that
    /// takes them all; a smaller limit takes the first of those.
    #[test]
    fn index_partial_matches_of_a_rare_word_beside_common_ones_agree_with_a_linear_scan(
        doc_count in 100usize..400,
        seed in any::<u64>(),
        commit_every in 30usize..300,
        merge in any::<bool>(),
        queries in proptest::collection::vec((16usize..PRUNE_WORDS.len(), 1usize..8, 1usize..12, 0u8..3), 1..5),
        limit in 1usize..30,
        hide_every in 2u32..9,
    ) {
        let docs: Vec<Doc> = (0..doc_count)
            .map(|i| Doc {
                id: i as DocId,
                meta: DocMeta {
                    scope: Scope::Event,
                    kind: 0,
                    tool: i % 7 == 0,
                    time_unix_ms: ((seed as usize ^ (i * 31)) % 50) as i64,
                    source: None,
                    project: (i % 3 == 0).then(|| "a".to_string()),
                    key: String::new(),
                    record: 0,
                    position: 0,
                },
                text: skewed_text(seed ^ i as u64, 1 + (seed as usize ^ i) % 30),
                pieces: Vec::new(),
                visible: i as u32 % hide_every != 1,
            })
            .collect();
        let mut index = Index::in_memory();
        for (i, d) in docs.iter().enumerate() {
            index.add(d.id, &d.meta, &d.text).unwrap();
            if (i + 1) % commit_every == 0 {
                index.commit(i as u64).unwrap();
            }
        }
        if merge {
            index.commit(u64::from(u32::MAX)).unwrap();
            index.merge_all().unwrap();
        }
        let visible = |c: &Candidate<'_>| docs[c.doc as usize].visible;
        for (rare, a, b, shape) in &queries {
            let (rare, a, b) = (PRUNE_WORDS[*rare], PRUNE_WORDS[*a], PRUNE_WORDS[*b]);
            let text = match shape {
                0 => format!("{rare} {a}"),
                1 => format!("{a} {rare} {b}"),
                _ => format!("\"{a} {rare}\" {b}"),
            };
            let query = parse_query(&text).unwrap();
            for f in [Filters { include_tools: true, ..Filters::default() }, Filters { project: Some("a".into()), ..Filters::default() }] {
                let hits = index.search(&query, &f, &visible, 5000).unwrap();
                let expected = scan(&docs, &query, &f);
                let got: BTreeSet<DocId> = hits.iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect();
                prop_assert_eq!(&got, &expected, "query {:?} filters {:?}", text, f);
                let first_partial = hits.iter().position(|h| h.matched == Match::Partial).unwrap_or(hits.len());
                let want = scan_partial(&docs, &query, &f, &expected);
                let partial: std::collections::BTreeMap<DocId, f32> = hits[first_partial..].iter().map(|h| (h.doc, h.score)).collect();
                prop_assert_eq!(partial.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "query {:?} filters {:?}", text, f);
                for (doc, score) in &want {
                    let got = f64::from(partial[doc]);
                    prop_assert!((got - score).abs() <= 1e-5 * score.abs().max(1.0), "query {:?}: document {} scores {} against the model's {}", text, doc, got, score);
                }
                let cut = index.search(&query, &f, &visible, limit).unwrap();
                prop_assert_eq!(&cut[..], &hits[..limit.min(hits.len())], "query {:?} limit {}", text, limit);
            }
        }
    }
}

/// A document of common words of the pruning corpus (its indices 1 to 7, about 14% of the
/// words each) with, one word in fifty, a rare one (indices 16 to 23, about 0.25% each): rare
/// enough beside the common ones for a partial pass to score their documents first.
fn skewed_text(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut words = Vec::with_capacity(len);
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let pick = (x / 1000) as usize;
        words.push(if x % 1000 < 20 { PRUNE_WORDS[16 + pick % 8] } else { PRUNE_WORDS[1 + pick % 7] });
    }
    words.join(if seed % 5 == 0 { "\n" } else { " " })
}

/// Words of the pruning corpus: a few common, many rare, so that lists span many blocks and
/// scores spread.
const PRUNE_WORDS: &[&str] = &[
    "the", "index", "release", "tag", "master", "cache", "retry", "journal", "segment", "offset", "token", "parser",
    "发布", "流程", "タワー", "분석", "zebra", "quartz", "lumen", "ember", "flint", "onyx", "basalt", "cobalt",
];

/// A document of the pruning corpus: `seed` picks words with a skew (low indices often).
fn prune_text(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut words = Vec::with_capacity(len);
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = (x % 1000) as f64 / 1000.0;
        let i = ((r * r * r) * PRUNE_WORDS.len() as f64) as usize;
        words.push(PRUNE_WORDS[i.min(PRUNE_WORDS.len() - 1)]);
    }
    words.join(if seed % 5 == 0 { "\n" } else { " " })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Pruning never changes results: for any limit, a search returns exactly the first
    /// `limit` hits of the same search with a limit no pruning can act on, whatever the
    /// segment layout (lists of hundreds of documents, spanning many blocks), filters and
    /// visibility.
    #[test]
    fn index_top_k_equals_the_unpruned_ranking_cut_to_the_limit(
        doc_count in 150usize..700,
        seed in any::<u64>(),
        commit_every in 40usize..400,
        merge in any::<bool>(),
        queries in proptest::collection::vec((0usize..PRUNE_WORDS.len(), 0usize..PRUNE_WORDS.len(), 0u8..4), 1..6),
        limits in proptest::collection::vec(1usize..40, 1..4),
        hide_every in 2u32..9,
    ) {
        let mut index = Index::in_memory();
        for i in 0..doc_count {
            let text = prune_text(seed ^ i as u64, 1 + (seed as usize ^ i) % 30);
            let m = DocMeta {
                scope: Scope::Event,
                kind: 0,
                tool: i % 7 == 0,
                time_unix_ms: ((seed as usize ^ (i * 31)) % 50) as i64,
                source: None,
                project: (i % 3 == 0).then(|| "a".to_string()),
                key: String::new(),
                record: 0,
                position: 0,
            };
            index.add(i as DocId, &m, &text).unwrap();
            if (i + 1) % commit_every == 0 {
                index.commit(i as u64).unwrap();
            }
        }
        if merge {
            index.commit(u64::from(u32::MAX)).unwrap();
            index.merge_all().unwrap();
        }
        let visible = |c: &Candidate<'_>| c.doc % hide_every != 1;
        for (a, b, shape) in &queries {
            let text = match shape {
                0 => PRUNE_WORDS[*a].to_string(),
                1 => format!("{} {}", PRUNE_WORDS[*a], PRUNE_WORDS[*b]),
                2 => format!("\"{} {}\"", PRUNE_WORDS[*a], PRUNE_WORDS[*b]),
                _ => format!("how does {} relate to {}", PRUNE_WORDS[*a], PRUNE_WORDS[*b]),
            };
            let query = parse_query(&text).unwrap();
            for f in [Filters::default(), Filters { include_tools: true, project: Some("a".into()), ..Filters::default() }] {
                let all_hits = index.search(&query, &f, &visible, 5000).unwrap();
                prop_assert!(all_hits.len() < 5000);
                for &limit in &limits {
                    let hits = index.search(&query, &f, &visible, limit).unwrap();
                    let want: Vec<Hit> = all_hits.iter().take(limit).cloned().collect();
                    prop_assert_eq!(&hits, &want, "query {:?} limit {} filters {:?}", text, limit, f);
                    let unpaired = index.search(&query.without_pairs(), &f, &visible, limit).unwrap();
                    prop_assert_eq!(&hits, &unpaired, "query {:?} limit {}: pair terms changed the hits", text, limit);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Segments on disk

fn corpus() -> Vec<(DocId, DocMeta, String)> {
    let texts = [
        "Set up the release workflow: tag from master, publish with provenance.",
        "Releases are tagged from master once CI passes on Ubuntu and Windows.",
        "我们用中文写文档，机器学习很有意思",
        "昨日は東京タワーに行きました 🚀",
        "한국어 형태소 분석기를 만들었다",
        "ＲＥＬＥＡＳＥ notes for the\nworkflow",
        "tool output: cargo test -p origin-projections",
        "record.rs holds every payload struct",
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let m = DocMeta {
                scope: if i % 3 == 0 { Scope::Entry } else { Scope::Event },
                kind: (i % 2) as u8,
                tool: i == 6,
                time_unix_ms: 1000 + (i as i64 % 4),
                source: (i % 3 != 0).then(|| "claude-code".to_string()),
                project: (i % 2 == 0).then(|| "demo-app".to_string()),
                key: if i % 3 == 0 { format!("ent_{i:012x}") } else { format!("claude-code:发布-{i}") },
                record: 7_000_000_000 + i as u64,
                position: (i * 3) as u32,
            };
            (100 + i as DocId, m, t.to_string())
        })
        .collect()
}

const QUERIES: &[&str] = &[
    "release workflow",
    "master",
    "\"from master\"",
    "中文",
    "机器学习",
    "タワー",
    "분석기",
    "🚀",
    "release notes",
    "how do we cut a release?",
    "record",
    "cargo test",
];

fn results(index: &Index) -> Vec<Vec<Hit>> {
    let mut out = Vec::new();
    for query in QUERIES {
        for f in [Filters::default(), Filters { include_tools: true, scope: Some(Scope::Event), ..Filters::default() }]
        {
            out.push(index.search(&q(query), &f, &|c| c.doc != 103, 20).unwrap());
        }
    }
    out
}

fn add_all(index: &mut Index, docs: &[(DocId, DocMeta, String)]) {
    for (id, m, t) in docs {
        index.add(*id, m, t).unwrap();
    }
}

#[test]
fn index_segment_round_trip_keeps_results_identical() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let mut index = Index::open(dir.path()).unwrap();
    add_all(&mut index, &docs);
    let before = results(&index);
    assert!(before.iter().any(|r| !r.is_empty()));
    assert_eq!(index.commit(42).unwrap(), Some(0));
    assert_eq!(index.memory_doc_count(), 0);
    assert_eq!(results(&index), before);
    drop(index);
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(index.mark(), Some(42));
    assert_eq!(index.doc_count(), docs.len());
    assert_eq!(results(&index), before);
    // Metadata and keys come back as they went in.
    let seg = &index.segments[0];
    for (ord, (id, m, _)) in docs.iter().enumerate() {
        assert_eq!(seg.docs().row(ord as u32).doc, *id);
        assert_eq!(seg.key(ord as u32).unwrap(), m.key);
        assert_eq!(&DocMeta { key: m.key.clone(), ..seg.docs().meta(ord as u32) }, m);
    }
}

/// Documents of every script and size, from [`PIECES`] and the corpus's texts, with a few
/// far longer than the rest: enough text for [`Index::add_all`] to tokenize on its helper.
fn many_docs(seed: u64, count: usize) -> Vec<(DocId, DocMeta, String)> {
    let mut rng = seed;
    let mut next = || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 33) as usize
    };
    let base = corpus();
    (0..count)
        .map(|i| {
            let words = if i % 97 == 5 { 3_000 } else { 5 + next() % 120 };
            let mut text = base[next() % base.len()].2.clone();
            for _ in 0..words {
                text.push_str(PIECES[next() % PIECES.len()]);
                text.push_str(SEPARATORS[next() % SEPARATORS.len()]);
            }
            (i as DocId * 2 + 1, DocMeta { key: format!("k{i}"), ..meta(i as i64 % 50) }, text)
        })
        .collect()
}

/// `Index::add_all` (tokenizing on a helper thread when given enough text) writes the very
/// segment that adding the same documents one by one writes, byte for byte, whatever the
/// runs it is given; and it stops at the first document that fails, keeping those before.
#[test]
fn index_add_all_writes_the_segment_adding_one_by_one_writes() {
    let docs = many_docs(7, 700);
    let text_bytes: usize = docs.iter().map(|d| d.2.len()).sum();
    assert!(text_bytes > 4 * PARALLEL_TEXT_BYTES, "{text_bytes} bytes");
    let one_by_one = tempfile::tempdir().unwrap();
    let mut index = Index::open(one_by_one.path()).unwrap();
    add_all(&mut index, &docs);
    let before = results(&index);
    index.commit(9).unwrap();
    let expected = fs::read(segment_file(one_by_one.path())).unwrap();
    for runs in [vec![700], vec![1, 2, 3, 300, 394], vec![350, 350], vec![64; 11]] {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        let mut at = 0;
        for n in runs {
            let n = n.min(docs.len() - at);
            let run: Vec<(DocId, DocMeta, &str)> = docs[at..at + n].iter().map(|(d, m, t)| (*d, m.clone(), t.as_str())).collect();
            index.add_all(&run).unwrap();
            at += n;
        }
        assert_eq!(at, docs.len());
        assert_eq!(results(&index), before);
        index.commit(9).unwrap();
        assert!(fs::read(segment_file(dir.path())).unwrap() == expected, "the segments differ");
    }
    // A document that fails (its id not above the last) stops the run there.
    let mut index = Index::in_memory();
    let mut run: Vec<(DocId, DocMeta, &str)> = docs[..400].iter().map(|(d, m, t)| (*d, m.clone(), t.as_str())).collect();
    run[300].0 = run[299].0;
    assert!(matches!(index.add_all(&run), Err(IndexError::DuplicateDoc(d)) if d == run[299].0));
    assert_eq!(index.doc_count(), 300);
    assert_eq!(index.last_doc(), Some(run[299].0));
    index.add_all(&run[300..].iter().map(|(d, m, t)| (*d + 1, m.clone(), *t)).collect::<Vec<_>>()).unwrap();
    assert_eq!(index.doc_count(), 400);
}

#[test]
fn index_merge_keeps_results_identical() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let mut reference = Index::in_memory();
    add_all(&mut reference, &docs);
    let expected = results(&reference);
    let mut index = Index::open(dir.path()).unwrap();
    for (i, chunk) in docs.chunks(3).enumerate() {
        add_all(&mut index, chunk);
        index.commit(i as u64).unwrap();
    }
    assert_eq!(index.segments().len(), 3);
    assert_eq!(results(&index), expected);
    index.merge_all().unwrap();
    assert_eq!(index.segments().len(), 1);
    assert_eq!(results(&index), expected);
    let files: Vec<String> =
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(files.iter().filter(|f| f.ends_with(".segment")).count(), 1, "{files:?}");
    drop(index);
    assert_eq!(results(&Index::open(dir.path()).unwrap()), expected);
}

#[test]
fn index_merge_of_older_neighbours_into_a_newer_id_reopens_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let mut reference = Index::in_memory();
    add_all(&mut reference, &docs);
    let expected = results(&reference);
    let mut index = Index::open(dir.path()).unwrap();
    let mut other = Index::open(dir.path()).unwrap();
    for (i, chunk) in docs.chunks(3).enumerate() {
        add_all(&mut index, chunk);
        index.commit(i as u64).unwrap();
    }
    let ids: Vec<SegmentId> = index.segments().iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 3);
    // The two oldest become one segment whose id is above the newest's: document order and
    // id order now differ.
    let job = index.plan_merge(&ids[..2]).unwrap();
    index.install_merge(merge(&job).unwrap()).unwrap();
    let after: Vec<SegmentId> = index.segments().iter().map(|s| s.id).collect();
    assert_eq!(after.len(), 2);
    assert!(after[0] > after[1], "{after:?}");
    assert_eq!(results(&index), expected);
    assert!(other.reload().unwrap());
    assert_eq!(results(&other), expected);
    assert!(!other.reload().unwrap(), "an unchanged manifest is not a change");
    drop(index);
    assert_eq!(results(&Index::open(dir.path()).unwrap()), expected);
}

#[test]
fn index_merge_runs_on_another_thread_while_documents_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let mut reference = Index::in_memory();
    add_all(&mut reference, &docs);
    let mut index = Index::open(dir.path()).unwrap();
    for chunk in docs[..6].chunks(2) {
        add_all(&mut index, chunk);
        index.commit(1).unwrap();
    }
    let policy = MergePolicy { merge_factor: 3, segments_max: 8, idle: false };
    let job = index.plan_merge_by(&policy).unwrap().expect("three small segments make a tier");
    let worker = std::thread::spawn(move || merge(&job));
    add_all(&mut index, &docs[6..]);
    index.commit(2).unwrap();
    index.install_merge(worker.join().unwrap().unwrap()).unwrap();
    assert_eq!(index.segments().len(), 2);
    assert_eq!(results(&index), results(&reference));
    assert!(index.plan_merge_by(&policy).unwrap().is_none());
}

#[test]
fn index_open_deletes_leftovers_and_keeps_listed_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open(dir.path()).unwrap();
    add_all(&mut index, &corpus());
    index.commit(7).unwrap();
    drop(index);
    fs::write(dir.path().join("00000000000000000009.segment"), b"left by a crash").unwrap();
    fs::write(dir.path().join("manifest.tmp"), b"half").unwrap();
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(index.doc_count(), corpus().len());
    assert!(!dir.path().join("00000000000000000009.segment").exists());
    assert!(!dir.path().join("manifest.tmp").exists());
}

/// A process that opened the index before another committed (or merged) keeps its older
/// list of segments; its clean-up under the writer's lock deletes only what the manifest it
/// reads then does not list: the other's new segment stays, and the index opens whole.
#[test]
fn index_leftovers_are_judged_by_the_manifest_read_at_the_clean_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Index::open(dir.path()).unwrap();
    add_all(&mut writer, &corpus()[..2]);
    writer.commit(1).unwrap();
    let stale = Index::open_shared(dir.path()).unwrap();
    add_all(&mut writer, &corpus()[2..]);
    let written = writer.commit(2).unwrap().expect("a second segment");
    fs::write(dir.path().join("00000000000000000099.segment"), b"left by a crash").unwrap();
    stale.remove_leftovers().unwrap();
    assert!(dir.path().join(segment::file_name(written)).exists(), "the other's new segment stays");
    assert!(!dir.path().join("00000000000000000099.segment").exists(), "what no one lists goes");
    let reopened = Index::open(dir.path()).unwrap();
    assert_eq!(reopened.doc_count(), corpus().len());
}

/// A segment the manifest lists whose file is gone is said as missing (what a reader takes for
/// a newer manifest, and reads again), naming the file.
#[test]
fn index_says_a_listed_segment_whose_file_is_gone_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open(dir.path()).unwrap();
    add_all(&mut index, &corpus());
    let id = index.commit(1).unwrap().expect("a segment");
    fs::remove_file(dir.path().join(segment::file_name(id))).unwrap();
    let e = Index::open_shared(dir.path()).err().expect("the open fails");
    assert!(e.is_missing_segment() && e.to_string().contains(&segment::file_name(id)), "{e}");
}

fn segment_file(dir: &Path) -> std::path::PathBuf {
    dir.join(segment::file_name(0))
}

fn small_index(dir: &Path) -> Vec<u8> {
    let mut index = Index::open(dir).unwrap();
    index.add(1, &meta(1), "release workflow 中文 🚀").unwrap();
    index.add(2, &DocMeta { source: Some("codex".into()), ..meta(2) }, "tag from master").unwrap();
    index.commit(1).unwrap();
    fs::read(segment_file(dir)).unwrap()
}

#[test]
fn index_detects_every_damaged_byte_of_a_segment() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_index(dir.path());
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[i] ^= bit;
            fs::write(segment_file(dir.path()), &bad).unwrap();
            match Index::open(dir.path()) {
                Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
                // Structures intact: the body's checksum finds it, and no search reads it.
                Ok(index) => {
                    match index.verify() {
                        Err(e) => assert!(e.is_corruption() && e.to_string().contains("body CRC"), "byte {i}: {e}"),
                        Ok(()) => panic!("flipped bit {bit:#x} of byte {i} was not detected"),
                    }
                    assert!(index.damage().is_some_and(|e| e.is_corruption()), "byte {i}");
                    assert!(!index.is_verified());
                    let searched = index.search(&q("release"), &Filters::default(), &all, 10);
                    assert!(searched.as_ref().is_err_and(IndexError::is_corruption), "byte {i}: {searched:?}");
                }
            }
        }
    }
    fs::write(segment_file(dir.path()), &good).unwrap();
    let index = Index::open(dir.path()).unwrap();
    index.verify().unwrap();
    assert!(index.is_verified() && index.damage().is_none());
}

/// A segment opened from a file has its body verified by a thread of the index's own once the
/// index verifies ahead, with no call asking for it; otherwise by the first search. A search
/// waits for that check (or makes it) and reads no segment whose body was not found good.
#[test]
fn index_segment_bodies_are_verified_in_the_background_and_before_any_search() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_index(dir.path());
    // Not ahead: nothing reads the body until a search needs it.
    let index = Index::open(dir.path()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!index.is_verified(), "verified though no one asked");
    assert_eq!(index.search(&q("release"), &Filters::default(), &all, 10).unwrap().len(), 1);
    assert!(index.is_verified(), "a search verifies what it reads");
    // Ahead.
    let mut index = Index::open(dir.path()).unwrap();
    index.verify_ahead();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !index.is_verified() {
        assert!(std::time::Instant::now() < deadline, "the background check never verified the segment");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(index.unverified().verify().is_ok());
    // Damage found in the background is kept: a later search refuses the index without
    // being the one that reads the body.
    let mut bad = good.clone();
    let body_byte = footer_of(&good).postings_offset as usize + 3;
    bad[body_byte] ^= 0x10;
    fs::write(segment_file(dir.path()), &bad).unwrap();
    let mut index = Index::open(dir.path()).unwrap();
    index.verify_ahead();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while index.damage().is_none() {
        assert!(std::time::Instant::now() < deadline, "the background check never found the damage");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let e = index.search(&q("release"), &Filters::default(), &all, 10).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains(&segment_file(dir.path()).display().to_string()), "{e}");
    // A merge verifies its inputs first: damage is not copied into a segment whose own
    // checksums would be good.
    let mut two = Index::open(dir.path()).unwrap();
    two.add(10, &meta(10), "another release").unwrap();
    two.commit(2).unwrap();
    let ids: Vec<SegmentId> = two.segments().iter().map(|s| s.id).collect();
    let job = two.plan_merge(&ids).unwrap();
    let e = merge(&job).err().expect("a merge of a damaged segment fails");
    assert!(e.is_corruption() && e.to_string().contains("body CRC"), "{e}");
}

#[test]
fn index_detects_every_truncation_of_a_segment() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_index(dir.path());
    for len in 0..good.len() {
        fs::write(segment_file(dir.path()), &good[..len]).unwrap();
        match Index::open(dir.path()) {
            Err(e) => assert!(e.is_corruption(), "length {len}: {e}"),
            Ok(_) => panic!("segment cut to {len} bytes was not detected"),
        }
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 16]);
    fs::write(segment_file(dir.path()), &longer).unwrap();
    assert!(Index::open(dir.path()).is_err());
}

#[test]
fn index_detects_a_damaged_or_missing_manifest_entry() {
    let dir = tempfile::tempdir().unwrap();
    small_index(dir.path());
    let manifest = dir.path().join("manifest");
    let good = fs::read(&manifest).unwrap();
    let mut bad = good.clone();
    bad[20] ^= 1;
    fs::write(&manifest, &bad).unwrap();
    assert!(Index::open(dir.path()).unwrap_err().is_corruption());
    fs::write(&manifest, &good).unwrap();
    fs::remove_file(segment_file(dir.path())).unwrap();
    assert!(Index::open(dir.path()).unwrap_err().is_corruption());
}

/// Recomputes a segment's body and footer checksums, so damage reaches the decoders.
fn reseal(bytes: &mut [u8]) {
    let n = bytes.len();
    if n < segment::FOOTER_SIZE_BYTES {
        return;
    }
    let footer = n - segment::FOOTER_SIZE_BYTES;
    let body = crc32fast::hash(&bytes[..footer]);
    let (body_at, crc_at) = (footer + segment::FOOTER_BODY_CRC_AT, footer + segment::FOOTER_CRC_AT);
    bytes[body_at..body_at + 4].copy_from_slice(&body.to_le_bytes());
    let fcrc = crc32fast::hash(&bytes[footer..crc_at]);
    bytes[crc_at..crc_at + 4].copy_from_slice(&fcrc.to_le_bytes());
    if n >= 32 {
        let h = crc32fast::hash(&bytes[..28]);
        bytes[28..32].copy_from_slice(&h.to_le_bytes());
    }
}

/// The footer of a well-formed segment.
fn footer_of(bytes: &[u8]) -> segment::Footer {
    let mut f = [0u8; segment::FOOTER_SIZE_BYTES];
    f.copy_from_slice(&bytes[bytes.len() - segment::FOOTER_SIZE_BYTES..]);
    segment::Footer::decode(&f).unwrap()
}

#[test]
fn index_reseal_makes_a_damaged_segment_reach_the_decoders() {
    // Damage a term block's flags byte: without resealing, the body CRC refuses the file;
    // resealed, it opens (postings are checked when read) and the search that reads the block
    // reports the damage.
    let good = small_segment_bytes();
    let footer = footer_of(good);
    let postings = footer.postings_offset as usize;
    let mut bad = good.to_vec();
    // The first term's block (after its bytes and their length byte).
    let (first_term, first) = dictionary(&Segment::from_bytes(good.to_vec(), 0).unwrap()).swap_remove(0);
    bad[postings + first as usize] = 0xff;
    let err = Segment::from_bytes(bad.clone(), 0).unwrap_err();
    assert!(err.to_string().contains("body CRC"), "{err}");
    reseal(&mut bad);
    let seg = Segment::from_bytes(bad, 0).expect("resealed damage in the postings opens");
    let offset = seg.term_offset(std::str::from_utf8(&first_term).unwrap()).expect("the table finds the term");
    assert!(seg.term_block_at(offset).is_err(), "the damaged block is refused when read");
}

fn small_segment_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut disk = Index::open(dir.path()).unwrap();
        for (i, t) in ["release workflow 中文 🚀", "tag from master", "releases released"].iter().enumerate() {
            disk.add(i as DocId, &DocMeta { project: Some("p".into()), ..meta(i as i64) }, t).unwrap();
        }
        disk.commit(0).unwrap();
        fs::read(segment_file(dir.path())).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Arbitrary bytes are an error, never a panic.
    #[test]
    fn index_segment_reader_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400), reseal_it in any::<bool>()) {
        let mut bytes = bytes;
        if reseal_it {
            reseal(&mut bytes);
        }
        prop_assert!(Segment::from_bytes(bytes, 0).is_err());
    }

    /// Damage to the documents, strings or postings of a segment whose checksums were
    /// recomputed (as a buggy writer would leave it) is found by the decoders: opening and
    /// searching return errors or results, never panic.
    #[test]
    fn index_segment_reader_never_panics_on_resealed_damage(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let good = small_segment_bytes();
        let fst_at = footer_of(good).fst_offset as usize;
        let footer_at = good.len() - segment::FOOTER_SIZE_BYTES;
        let mut bad = good.to_vec();
        for (at, v) in edits {
            // Bytes before the term dictionary (the term table included), header excluded
            // (its damage is caught anyway), and the footer's fields before its checksums.
            let span = fst_at - 32 + segment::FOOTER_BODY_CRC_AT;
            let at = at % span;
            let at = if at < fst_at - 32 { 32 + at } else { footer_at + at - (fst_at - 32) };
            bad[at] = v;
        }
        reseal(&mut bad);
        if let Ok(segment) = Segment::from_bytes(bad, 0) {
            let view = [search::View::Disk(&segment, search::Lookups::default())];
            for query in ["release", "中文", "\"tag from\"", "how do we release?"] {
                let _ = search::search(&view, &q(query), &Filters { include_tools: true, ..Filters::default() }, &all, 10);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Damage anywhere in a segment file, its checksums left as they were, opened from the file
    /// (whose body's checksum is verified after the open, not during it): the open reads the
    /// header, footer, rows, strings, key offsets, term table and dictionary of damaged bytes
    /// and returns an error or a segment, never panics; the verification then finds any damage
    /// the open did not; and the decoders a search would use (were it not to wait for that
    /// verification) return errors or results, never panic.
    #[test]
    fn index_segment_opened_from_a_damaged_file_never_panics_and_its_damage_is_found(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let good = small_segment_bytes();
        let mut bad = good.to_vec();
        for (at, v) in edits {
            let at = at % bad.len();
            bad[at] = v;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(segment::file_name(0));
        fs::write(&path, &bad).unwrap();
        if let Ok(segment) = Segment::open(&crate::index::folder::Folder::os(dir.path()), &path, 0) {
            prop_assert_eq!(segment.verify().is_ok(), bad == good);
            let view = [search::View::Disk(&segment, search::Lookups::default())];
            for query in ["release", "中文", "\"tag from\"", "how do we release?"] {
                let _ = search::search(&view, &q(query), &Filters { include_tools: true, ..Filters::default() }, &all, 10);
            }
        }
    }
}

/// A segment's document figures in memory agree with its rows, for every document: of
/// consecutive ids; none for a document whose kind does not fit its mark (its row is read);
/// none at all for a segment whose ids are not consecutive.
#[test]
fn index_segment_document_figures_agree_with_the_rows() {
    for spacing in [1, 2] {
        let mut index = Index::in_memory();
        let kinds = [0u8, 1, 2, 5, 31, 32, 40, 255];
        for (i, &kind) in kinds.iter().enumerate() {
            let meta = DocMeta {
                scope: if i % 3 == 0 { Scope::Entry } else { Scope::Event },
                kind,
                tool: i % 2 == 1,
                source: Some("codex".into()),
                ..meta(1_000 + i as i64 * 7)
            };
            index.add(10 + i as DocId * spacing, &meta, "release workflow").unwrap();
        }
        index.commit(1).unwrap();
        let docs = index.segments[0].docs();
        for o in 0..docs.len() {
            let row = docs.row(o);
            match docs.figures(o) {
                Some(f) => {
                    assert_eq!(spacing, 1);
                    assert!(row.kind <= 31, "kind {}", row.kind);
                    assert_eq!((f.doc, f.scope, f.kind, f.tool, f.time_unix_ms), (row.doc, row.scope, row.kind, row.tool, row.time_unix_ms));
                }
                None => assert!(spacing != 1 || row.kind > 31, "ordinal {o} of kind {} has no figures", row.kind),
            }
        }
        // Filters by kind, scope and tools find the same through either.
        for (kind, want) in [(40u8, 1usize), (5, 1), (255, 1), (3, 0)] {
            let f = Filters { kind: Some(kind), include_tools: true, ..Filters::default() };
            assert_eq!(index.search(&q("release"), &f, &all, 20).unwrap().len(), want, "kind {kind}");
        }
        let tools = Filters { include_tools: false, ..Filters::default() };
        assert_eq!(index.search(&q("release"), &tools, &all, 20).unwrap().len(), 4);
        let entries = Filters { scope: Some(Scope::Entry), include_tools: true, ..Filters::default() };
        assert_eq!(index.search(&q("release"), &entries, &all, 20).unwrap().len(), 3);
    }
}

#[test]
fn index_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Index>();
    shareable::<MergeJob>();
    shareable::<Merged>();
}

#[test]
fn index_doc_meta_from_records() {
    use origin_engine::record::{EntryKind, Role};
    let event = Event {
        id: "codex:1".into(),
        time_unix_ms: 5,
        session: "s".into(),
        project: Some("p".into()),
        role: Role::Assistant,
        kind: EventKind::ToolResult,
        text: "out".into(),
        text_cut_chars: 0,
        cwd: None,
        git_branch: None,
        agent_version: None,
        line: 1,
    };
    let m = DocMeta::event("codex", &event, 41, 3);
    assert!(m.tool && m.scope == Scope::Event && m.kind == EventKind::ToolResult as u8);
    assert_eq!(m.source.as_deref(), Some("codex"));
    assert_eq!((m.key.as_str(), m.record, m.position), (event.id.as_str(), 41, 3));
    let v = EntryVersion {
        id: "ent_1".into(),
        root: "ent_1".into(),
        supersedes: None,
        kind: EntryKind::Knowledge,
        text: "t".into(),
        confidence: 1.0,
        project: None,
        author: "a@b".into(),
        created_unix_ms: 9,
        valid_from_unix_ms: None,
        valid_to_unix_ms: None,
        sources: Vec::new(),
        imported: false,
    };
    let m = DocMeta::entry(&v, 77);
    assert!(!m.tool && m.scope == Scope::Entry && m.kind == EntryKind::Knowledge as u8 && m.time_unix_ms == 9);
    assert_eq!((m.key.as_str(), m.record, m.position), ("ent_1", 77, 0));
}

#[test]
fn index_refuses_ids_that_do_not_rise_and_merges_of_non_neighbours() {
    let mut index = Index::in_memory();
    index.add(5, &meta(1), "one").unwrap();
    assert!(matches!(index.add(5, &meta(1), "again"), Err(IndexError::DuplicateDoc(5))));
    assert!(matches!(index.add(4, &meta(1), "lower"), Err(IndexError::DuplicateDoc(4))));
    index.commit(1).unwrap();
    for (doc, text) in [(6, "two"), (7, "three")] {
        index.add(doc, &meta(2), text).unwrap();
        index.commit(u64::from(doc)).unwrap();
    }
    assert_eq!(index.last_doc(), Some(7));
    let ids: Vec<SegmentId> = index.segments().iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 3);
    assert!(index.plan_merge(&[ids[0], ids[2]]).is_err(), "not neighbours");
    let job = index.plan_merge(&[ids[2], ids[1]]).unwrap();
    index.install_merge(merge(&job).unwrap()).unwrap();
    assert_eq!(index.segments().len(), 2);
    assert_eq!(full(&index, "three"), [7]);
    assert!(matches!(index.add(7, &meta(3), "again"), Err(IndexError::DuplicateDoc(7))));
}

/// Two handles on one directory, as two processes: what one commits or merges, the other
/// takes with `reload`, reusing the segments it had open.
#[test]
fn index_reload_takes_what_another_handle_committed_and_merged() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Index::open(dir.path()).unwrap();
    let mut reader = Index::open(dir.path()).unwrap();
    writer.add(1, &meta(1), "release workflow").unwrap();
    writer.commit(10).unwrap();
    assert!(!reader.reload().unwrap() || reader.mark() == Some(10));
    assert_eq!(reader.mark(), Some(10));
    assert_eq!(full(&reader, "release"), [1]);
    assert!(!reader.reload().unwrap(), "nothing changed");
    writer.add(2, &meta(2), "release notes").unwrap();
    writer.commit(20).unwrap();
    writer.merge_all().unwrap();
    assert!(reader.reload().unwrap());
    assert_eq!(reader.segments().len(), 1);
    assert_eq!(found(&reader, "release"), set(&[1, 2]));
    // The reader's own documents wait in memory until it clears them.
    reader.add(3, &meta(3), "release candidate").unwrap();
    assert_eq!(found(&reader, "release"), set(&[1, 2, 3]));
    reader.clear_memory();
    assert_eq!(reader.last_doc(), Some(2));
}

/// Equal scores everywhere (the same text in every document, over many blocks and segments):
/// the list is the most recent documents, then the smaller ids, whichever blocks and segments
/// hold them. Pins the tie rules of pruning (time, then id).
#[test]
fn index_ties_across_blocks_keep_the_most_recent_then_smaller_ids() {
    for (commit_every, merge) in [(10_000usize, false), (300, false), (300, true), (1000, false)] {
        let mut index = Index::in_memory();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut docs = Vec::new();
        for i in 0..3000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let time = (x % 400) as i64;
            index.add(i, &meta(time), "tag from master").unwrap();
            docs.push((i, time));
            if (i as usize + 1) % commit_every == 0 {
                index.commit(u64::from(i)).unwrap();
            }
        }
        if merge {
            index.commit(1 << 40).unwrap();
            index.merge_all().unwrap();
        }
        docs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for limit in [1, 7, 20, 129, 300] {
            for query in ["tag", "tag master", "\"from master\""] {
                let got: Vec<DocId> = search(&index, query, limit).into_iter().map(|h| h.doc).collect();
                let want: Vec<DocId> = docs.iter().take(limit).map(|d| d.0).collect();
                assert_eq!(got, want, "query {query} limit {limit} commit every {commit_every} merge {merge}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Commits written on another thread, and the in-memory segment's postings

#[test]
fn index_commit_written_on_another_thread_keeps_results_while_documents_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus();
    let mut reference = Index::in_memory();
    add_all(&mut reference, &docs[..5]);
    let mut index = Index::open(dir.path()).unwrap();
    add_all(&mut index, &docs[..5]);
    let job = index.freeze(5).unwrap().expect("documents wait in memory");
    assert!(index.committing());
    assert_eq!((index.memory_doc_count(), index.doc_count()), (0, 5));
    // The frozen documents are searched as before; one commit at a time.
    assert_eq!(results(&index), results(&reference));
    assert!(index.freeze(6).is_err());
    assert!(index.commit(6).is_err());
    let worker = std::thread::spawn(move || write_commit(&job));
    add_all(&mut index, &docs[5..]);
    add_all(&mut reference, &docs[5..]);
    assert_eq!(index.last_doc(), Some(107));
    assert_eq!(results(&index), results(&reference));
    let id = index.install_commit(worker.join().unwrap().unwrap()).unwrap();
    assert!(!index.committing());
    assert_eq!((id, index.mark(), index.memory_doc_count(), index.doc_count()), (0, Some(5), 3, 8));
    assert_eq!(results(&index), results(&reference));
    // On disk: the segment and its mark, and not the documents added after the freeze.
    let reopened = Index::open(dir.path()).unwrap();
    assert_eq!((reopened.mark(), reopened.doc_count()), (Some(5), 5));
    index.commit(8).unwrap();
    let reopened = Index::open(dir.path()).unwrap();
    assert_eq!(results(&reopened), results(&reference));
}

#[test]
fn index_commit_that_fails_to_be_written_gives_its_documents_back_or_drops_them() {
    let docs = corpus();
    let mut reference = Index::in_memory();
    add_all(&mut reference, &docs);
    for added_after in [false, true] {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("index");
        let mut index = Index::open(&dir).unwrap();
        add_all(&mut index, &docs[..3]);
        index.commit(3).unwrap();
        add_all(&mut index, &docs[3..6]);
        let job = index.freeze(6).unwrap().unwrap();
        if added_after {
            add_all(&mut index, &docs[6..]);
        }
        // The directory is gone: the segment cannot be written.
        fs::rename(&dir, base.path().join("away")).unwrap();
        let written = write_commit(&job);
        assert!(written.is_err(), "writing into a missing directory fails");
        drop(job);
        fs::rename(base.path().join("away"), &dir).unwrap();
        let kept = index.thaw();
        assert!(!index.committing());
        assert_eq!(kept, !added_after);
        if kept {
            // Back in memory, searched as before, and committed by the next commit.
            assert_eq!(index.memory_doc_count(), 3);
            add_all(&mut index, &docs[6..]);
            assert_eq!(results(&index), results(&reference));
            index.commit(8).unwrap();
        } else {
            // Dropped, frozen and new alike: the caller feeds them again from the mark.
            assert_eq!((index.doc_count(), index.last_doc(), index.mark()), (3, Some(102), Some(3)));
            add_all(&mut index, &docs[3..]);
            index.commit(8).unwrap();
        }
        assert_eq!(results(&Index::open(&dir).unwrap()), results(&reference));
    }
}

/// The documents and frequencies of every pair term of `texts` ([`super::pairs`]), from
/// `tokenize` and the stop-word list: two word tokens (words or their parts) at adjacent
/// positions, one a stop word, with no other token between their positions; a pair term
/// counts a position once.
fn naive_pairs(texts: &[String]) -> std::collections::BTreeMap<String, Vec<(u32, u32)>> {
    use super::token::TokenKind;
    let mut out: std::collections::BTreeMap<String, Vec<(u32, u32)>> = Default::default();
    for (ord, t) in texts.iter().enumerate() {
        let tokens = tokenize(t);
        let mut seen = BTreeSet::new();
        for a in &tokens {
            for b in &tokens {
                let word_like = |t: &super::token::Token| matches!(t.kind, TokenKind::Word | TokenKind::Part);
                // Positions hold either words (with their parts) or a run's tokens, never both.
                if !word_like(a) || !word_like(b) || a.position + 1 != b.position {
                    continue;
                }
                let (a_stop, b_stop) = (super::stem::is_stop_word(&a.term), super::stem::is_stop_word(&b.term));
                if !(a_stop || b_stop) {
                    continue;
                }
                let side = |t: &str, stop: bool| if stop { t.to_string() } else { format!("#{:03x}", crc32fast::hash(t.as_bytes()) % 1024) };
                let term = format!("\u{2}{} {}", side(&a.term, a_stop), side(&b.term, b_stop));
                if !seen.insert((term.clone(), a.position)) {
                    continue;
                }
                let list = out.entry(term).or_default();
                match list.last_mut() {
                    Some((o, tf)) if *o == ord as u32 => *tf += 1,
                    _ => list.push((ord as u32, 1)),
                }
            }
        }
    }
    out
}

/// The postings `tokenize` gives for every term of `texts` (document `i` has ordinal `i`).
fn naive_postings(texts: &[String]) -> std::collections::BTreeMap<String, Vec<(u32, Vec<u32>)>> {
    let mut out: std::collections::BTreeMap<String, Vec<(u32, Vec<u32>)>> = Default::default();
    for (ord, t) in texts.iter().enumerate() {
        for tok in tokenize(t) {
            let list = out.entry(tok.term).or_default();
            match list.last_mut() {
                Some((o, ps)) if *o == ord as u32 => ps.push(tok.position),
                _ => list.push((ord as u32, vec![tok.position])),
            }
        }
    }
    out
}

#[test]
fn index_memory_postings_equal_a_naive_build_with_long_terms_many_terms_and_long_lists() {
    let mut texts: Vec<String> = Vec::new();
    // A word 40,000 times in one document: its positions outgrow every chunk size.
    texts.push(vec!["again"; 40_000].join(" "));
    // Thousands of distinct terms (the table of terms grows), some longer than a record
    // holds inline, one longer than a term may be (cut to 128 bytes).
    texts.push((0..6000).map(|i| format!("t{i:x}")).collect::<Vec<_>>().join(" "));
    texts.push((0..300).map(|i| format!("averyveryverylongidentifier{i}")).collect::<Vec<_>>().join(" "));
    texts.push(format!("{} again", "x".repeat(300)));
    texts.push("我们用中文写文档 again 中文".to_string());
    // Pair terms: stop words beside words, across a line break and punctuation, beside a cut
    // word, beside CJK (no pair), and stop words side by side.
    texts.push(format!("the cache and the index.\nOf the {} the 中文 the to the don't again", "y".repeat(300)));
    // Words in camelCase: their parts pair with the words and parts beside them.
    texts.push("the getUserById of toString the fooFoo and the APIs of URLsToFetch the again".to_string());
    for i in 0..200 {
        texts.push(format!("again t{:x} averyveryverylongidentifier{} 文档", i * 7, i % 13));
    }
    let mut index = Index::in_memory();
    for (i, t) in texts.iter().enumerate() {
        index.add(i as DocId, &meta(i as i64), t).unwrap();
    }
    let naive = naive_postings(&texts);
    for (term, want) in &naive {
        let got = index.memory.postings(term).unwrap_or_else(|| panic!("{term} has postings")).decode();
        let got: Vec<(u32, Vec<u32>)> =
            got.ordinals.iter().enumerate().map(|(i, &o)| (o, got.positions_of(i).to_vec())).collect();
        assert_eq!(&got, want, "{term}");
    }
    let terms = index.memory.sorted_terms().unwrap();
    let words: Vec<&str> = terms
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| !t.starts_with(super::stem::STEM_PREFIX) && !t.starts_with(super::pairs::PAIR_PREFIX))
        .collect();
    assert_eq!(words, naive.keys().map(String::as_str).collect::<Vec<_>>());
    // Pair terms: exactly those of the naive build, with their documents and frequencies.
    let pairs = naive_pairs(&texts);
    let held: Vec<&str> = terms.iter().map(|(t, _)| *t).filter(|t| t.starts_with(super::pairs::PAIR_PREFIX)).collect();
    assert_eq!(held, pairs.keys().map(String::as_str).collect::<Vec<_>>());
    assert!(pairs.len() >= 3, "{pairs:?}");
    for (term, want) in &pairs {
        let got = index.memory.postings(term).unwrap().decode();
        let got: Vec<(u32, u32)> = got.ordinals.iter().zip(&got.tfs).map(|(&o, &tf)| (o, tf)).collect();
        assert_eq!(&got, want, "{term:?}");
    }
    assert!(naive.keys().any(|t| t.len() == limits::TERM_SIZE_BYTES_MAX));
    // Committed, a segment answers as the memory did.
    let before: Vec<BTreeSet<DocId>> = ["again", "\"again again\"", "t3f", "averyveryverylongidentifier12", "中文", "\"and the index of the\"", "用中文写文档"]
        .iter()
        .map(|x| search(&index, x, 300).into_iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect())
        .collect();
    assert_eq!(before[0].len(), texts.len() - 2);
    assert_eq!(before[5], BTreeSet::from([5]), "the phrase of stop words across a line break");
    assert_eq!(before[6], BTreeSet::from([4]), "six characters of a CJK run");
    index.commit(1).unwrap();
    let after: Vec<BTreeSet<DocId>> = ["again", "\"again again\"", "t3f", "averyveryverylongidentifier12", "中文", "\"and the index of the\"", "用中文写文档"]
        .iter()
        .map(|x| search(&index, x, 300).into_iter().filter(|h| h.matched == Match::All).map(|h| h.doc).collect())
        .collect();
    assert_eq!(after, before);
}

/// A stem term holds the documents of the words that stem to it but not those of the word it
/// spells when that word is its own stem (`tag` of `\u{1}tag`); it counts the documents it
/// shares with that word, whichever of the two a segment met first, and the counts add up in
/// a commit and a merge.
#[test]
fn index_stem_term_leaves_out_the_word_that_is_its_own_stem_and_counts_what_they_share() {
    let stem = "\u{1}tag";
    for (texts, stem_docs, shared) in [
        (&["tags", "tag", "tag tags", "tagged tag", "tag", "release"][..], vec![0, 2, 3], 2),
        (&["tag", "tags", "tags tag tag", "release", "tagged"][..], vec![1, 2, 4], 1),
        (&["tag", "tag"][..], vec![], 0),
    ] {
        let mut index = Index::in_memory();
        for (i, t) in texts.iter().enumerate() {
            index.add(i as DocId, &meta(i as i64), t).unwrap();
        }
        match index.memory.postings(stem) {
            Some(p) => {
                assert_eq!(p.decode().ordinals, stem_docs, "{texts:?}");
                assert_eq!(p.shared(), shared, "{texts:?}");
            }
            None => assert!(stem_docs.is_empty(), "{texts:?}"),
        }
        let releases = texts.contains(&"release");
        assert_eq!(index.memory.postings("\u{1}releas").is_some(), releases, "a word that is not its own stem is written in its stem");
        // Every document holding a form of the word is a partial match of the stem, in memory,
        // committed (twice over, in two segments) and merged.
        let with_form = texts.iter().filter(|t| t.contains("tag")).count();
        let partial = |index: &Index| search(index, "tags nowhere", 100).iter().filter(|h| h.matched == Match::Partial).count();
        assert_eq!(partial(&index), with_form);
        let before = search(&index, "tags nowhere", 100);
        index.commit(1).unwrap();
        for (i, t) in texts.iter().enumerate() {
            index.add((100 + i) as DocId, &meta(i as i64), t).unwrap();
        }
        index.commit(2).unwrap();
        assert_eq!(partial(&index), 2 * with_form);
        let two = search(&index, "tags nowhere", 100);
        index.merge_all().unwrap();
        assert_eq!(index.segments().len(), 1);
        assert_eq!(search(&index, "tags nowhere", 100), two, "a merge keeps the union's statistics");
        assert_eq!(before.len(), with_form);
    }
}

/// A partial pass that passes windows whose terms cannot reach the weakest held must not pass
/// the documents after them: strong documents first (they set the threshold), then a long
/// stretch of weak ones (every window there is passed), then stronger ones at the end, which
/// must enter. The words come in two forms each (`alpha`, `alphas`), so that each partial
/// term is a stem's list and its word's together (not a single list, which another walk takes).
#[test]
fn index_partial_pass_finds_strong_documents_after_a_stretch_of_weak_ones() {
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor";
    let mut index = Index::in_memory();
    let mut texts: Vec<String> = Vec::new();
    for _ in 0..12 {
        texts.push("alpha alpha beta beta".into());
    }
    // Long documents with the words once (weak), between short ones without them (which keep
    // the average length low, so the long ones weaker still).
    let long = format!("{filler} {filler} {filler} {filler} {filler} {filler} {filler} {filler}");
    for i in 0..12000 {
        texts.push(match i % 4 {
            0 => format!("{long} alpha beta {long}"),
            2 => format!("{long} alphas betas {long}"),
            _ => "lorem ipsum".to_string(),
        });
    }
    for _ in 0..10 {
        texts.push("alpha alpha alpha beta beta beta".into());
    }
    for (i, t) in texts.iter().enumerate() {
        index.add(i as DocId, &meta(i as i64), t).unwrap();
    }
    index.commit(1).unwrap();
    // No document holds `zeta`: every hit is partial.
    let unpruned = search(&index, "alpha beta zeta", 5000);
    assert!(unpruned.iter().all(|h| h.matched == Match::Partial));
    // The last ten documents are the best ten: the pass has to reach them.
    assert!(unpruned[..10].iter().all(|h| h.doc >= 12012), "{:?}", unpruned[..12].iter().map(|h| (h.doc, h.score)).collect::<Vec<_>>());
    for limit in [3, 5, 10, 20] {
        let hits = search(&index, "alpha beta zeta", limit);
        assert_eq!(hits, unpruned[..limit].to_vec(), "limit {limit}");
    }
}

/// The bytes of a segment of `texts` (one document each), committed to disk.
fn segment_of(texts: &[String]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut index = Index::open(dir.path()).unwrap();
    for (i, t) in texts.iter().enumerate() {
        index.add(i as DocId, &meta(i as i64), t).unwrap();
    }
    index.commit(0).unwrap();
    fs::read(segment_file(dir.path())).unwrap()
}

/// Every term of the segment's dictionary, with its block offset.
fn dictionary(seg: &Segment) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    let mut stream = seg.fst().stream();
    while let Some((k, v)) = fst::Streamer::next(&mut stream) {
        out.push((k.to_vec(), v));
    }
    out
}

fn table_text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        "[a-z]{1,12}",
        "(release|releases|released|the|to|of|and|tests|testing)",
        "[\u{4e00}-\u{4e20}]{1,6}",
        "[\u{3041}-\u{3050}\u{30a1}-\u{30b0}]{1,4}",
        "[\u{ac00}-\u{ac10}]{1,3}",
        "[\u{ff21}-\u{ff3a}]{1,5}",
        "x{120,140}",
    ];
    proptest::collection::vec(word, 1..30).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// The term table finds every term of the dictionary at the dictionary's offset, and no
    /// term the segment does not hold.
    #[test]
    fn index_term_table_answers_as_the_dictionary(
        texts in proptest::collection::vec(table_text(), 1..40),
        absent in proptest::collection::vec("\\PC{1,8}", 0..40),
    ) {
        let seg = Segment::from_bytes(segment_of(&texts), 0).unwrap();
        let dict = dictionary(&seg);
        prop_assert!(!dict.is_empty());
        for (term, offset) in &dict {
            let term = std::str::from_utf8(term).unwrap();
            prop_assert_eq!(seg.term_offset(term), Some(*offset), "{:?}", term);
        }
        for a in &absent {
            prop_assert_eq!(seg.term_offset(a), seg.fst().get(a.as_bytes()), "{:?}", a);
        }
    }

    /// Slots moved about in the table, or given another slot's block (resealed, as a
    /// writer's bug would leave them), never name another term's block: a lookup finds the
    /// term's own block or nothing.
    #[test]
    fn index_term_table_never_names_another_terms_block(
        texts in proptest::collection::vec(table_text(), 1..20),
        swaps in proptest::collection::vec((any::<usize>(), any::<usize>()), 1..8),
        retargets in proptest::collection::vec((any::<usize>(), any::<usize>()), 1..8),
    ) {
        let good = segment_of(&texts);
        let footer = footer_of(&good);
        let (table_at, fst_at) = (footer.table_offset as usize, footer.fst_offset as usize);
        let slots = (fst_at - table_at) / 8;
        let mut bad = good.clone();
        for (a, b) in swaps {
            let (a, b) = (table_at + 8 * (a % slots), table_at + 8 * (b % slots));
            let (x, y) = (bad[a..a + 8].to_vec(), bad[b..b + 8].to_vec());
            bad[a..a + 8].copy_from_slice(&y);
            bad[b..b + 8].copy_from_slice(&x);
        }
        // A used slot given the block of another used slot, its own hash bits kept.
        let used: Vec<usize> = (0..slots).map(|i| table_at + 8 * i).filter(|&at| bad[at..at + 8] != [0; 8]).collect();
        for (a, b) in retargets {
            let (a, b) = (used[a % used.len()], used[b % used.len()]);
            let offset_bits = bad[b..b + 5].to_vec();
            bad[a..a + 5].copy_from_slice(&offset_bits);
        }
        reseal(&mut bad);
        let seg = Segment::from_bytes(bad, 0).expect("moved slots still open");
        for (term, offset) in dictionary(&seg) {
            let found = seg.term_offset(std::str::from_utf8(&term).unwrap());
            prop_assert!(found.is_none() || found == Some(offset), "{:?}: {:?} against {}", term, found, offset);
        }
    }
}

#[test]
fn index_term_table_is_three_quarters_full_at_most() {
    // The smallest power of two at or above n + ceil(n / 3) + 1.
    for (n, want) in [(0u32, 1u64), (1, 4), (2, 4), (3, 8), (5, 8), (6, 16), (767, 1024), (768, 2048), (769, 2048), (1_000_000, 2_097_152), (u32::MAX, 1 << 33)] {
        assert_eq!(segment::table::slot_count(n), want, "{n}");
    }
}

#[test]
fn index_term_table_walks_past_a_slot_of_the_same_hash_that_names_another_term() {
    // Postings of two terms, each term's bytes and count before its (stand-in) block.
    let mut postings = Vec::new();
    postings.extend_from_slice(b"ab\x02BLOCK-AB");
    let at_ab = 3u64;
    postings.extend_from_slice(b"cd\x02BLOCK-CD");
    let at_cd = 14u64;
    let h = segment::table::term_hash(b"ab");
    // The first slot of the walk for "ab" carries its hash but names the block of "cd" (a
    // writer's bug); the next one names its own.
    let mut slots = Vec::new();
    segment::table::encode(&[(h, at_cd), (h, at_ab)], &mut slots).unwrap();
    assert_eq!(segment::table::lookup(&slots, &postings, b"ab"), Some(at_ab));
    assert_eq!(segment::table::lookup(&slots, &postings, b"cd"), None, "no slot of its hash");
    // Term bytes that are a suffix of the stored ones do not match.
    assert_eq!(segment::table::stored_term(&postings, at_ab), Some(&b"ab"[..]));
    let mut slots = Vec::new();
    segment::table::encode(&[(segment::table::term_hash(b"b"), at_ab)], &mut slots).unwrap();
    assert_eq!(segment::table::lookup(&slots, &postings, b"b"), None);
    // Offsets at the very start, or past the end, of the postings find nothing.
    for at in [0u64, 1, postings.len() as u64 + 5] {
        let mut slots = Vec::new();
        segment::table::encode(&[(h, at)], &mut slots).unwrap();
        assert_eq!(segment::table::lookup(&slots, &postings, b"ab"), None, "{at}");
    }
}

#[test]
fn index_term_table_refuses_a_slot_outside_the_postings_or_a_wrong_count() {
    let good = small_segment_bytes();
    let footer = footer_of(good);
    let table_at = footer.table_offset as usize;
    let postings_len = footer.table_offset - footer.postings_offset;
    let used = (0..(footer.fst_offset as usize - table_at) / 8)
        .map(|i| table_at + 8 * i)
        .find(|&at| good[at..at + 8] != [0; 8])
        .unwrap();
    let empty = (0..(footer.fst_offset as usize - table_at) / 8)
        .map(|i| table_at + 8 * i)
        .find(|&at| good[at..at + 8] == [0; 8])
        .unwrap();
    // A slot pointing at the end of the postings.
    let mut bad = good.to_vec();
    bad[used..used + 5].copy_from_slice(&(postings_len + 1).to_le_bytes()[..5]);
    reseal(&mut bad);
    let err = Segment::from_bytes(bad, 0).unwrap_err();
    assert!(err.to_string().contains("outside the postings"), "{err}");
    // One slot more than there are terms.
    let mut bad = good.to_vec();
    let copy = good[used..used + 8].to_vec();
    bad[empty..empty + 8].copy_from_slice(&copy);
    reseal(&mut bad);
    let err = Segment::from_bytes(bad, 0).unwrap_err();
    assert!(err.to_string().contains("one slot per term"), "{err}");
    // A slot naming offset 0 (no room for the term's bytes before it).
    let mut bad = good.to_vec();
    bad[used..used + 5].copy_from_slice(&1u64.to_le_bytes()[..5]);
    reseal(&mut bad);
    let err = Segment::from_bytes(bad, 0).unwrap_err();
    assert!(err.to_string().contains("outside the postings"), "{err}");
    // A slot with hash bits and no offset.
    let mut bad = good.to_vec();
    bad[used..used + 5].fill(0);
    bad[used + 5..used + 8].copy_from_slice(&[1, 2, 3]);
    reseal(&mut bad);
    let err = Segment::from_bytes(bad, 0).unwrap_err();
    assert!(err.to_string().contains("without an offset"), "{err}");
    // A term count the table's size does not fit (the dictionary's count is checked after).
    let mut bad = good.to_vec();
    let count_at = good.len() - segment::FOOTER_SIZE_BYTES + 52;
    bad[count_at..count_at + 4].copy_from_slice(&(footer.term_count * 4 + 4).to_le_bytes());
    reseal(&mut bad);
    let err = Segment::from_bytes(bad, 0).unwrap_err();
    assert!(err.to_string().contains("wrong size"), "{err}");
}

#[test]
fn index_term_reads_ahead_touch_the_slot_and_the_terms_count_byte() {
    // What the read-ahead before a search touches: the slot a lookup starts at, and the byte
    // before the term's block, which holds the term's size (a wrong place would still be
    // harmless, but would leave the lookup's misses where they were).
    let seg = Segment::from_bytes(small_segment_bytes().to_vec(), 0).unwrap();
    let dict = dictionary(&seg);
    let mut found = 0;
    for (term, _) in &dict {
        let hash = segment::table::term_hash(term);
        let _ = seg.touch_slot(hash);
        let byte = seg.touch_term_block(hash);
        // Read ahead from the first slot matching the hash within the first four of the walk.
        if byte != 0 {
            assert_eq!(usize::from(byte), term.len(), "{:?}", String::from_utf8_lossy(term));
            found += 1;
        }
    }
    assert!(found * 10 >= dict.len() * 9, "{found} of {} terms read ahead", dict.len());
    assert_eq!(seg.touch_term_block(segment::table::term_hash(b"no such term here")), 0);
}

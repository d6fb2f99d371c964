//! The query parser and the search behind it: `parse_query` on arbitrary text, then, when the
//! query parses, a search of a small index whose documents the input also gives.
//! Input: `[mode, query bytes…, NUL, document lines…]` (documents split at `\n`, at most 32;
//! bytes read as UTF-8 with invalid bytes replaced, as the tools receive text). Mode bit 0
//! commits the documents into an immutable segment (written and read back through the on-disk
//! format, in memory) before searching; bit 1 includes tool documents; bits 2..6 are the limit
//! (1 to 32). Every third document is a tool call, whose text is JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use origin_engine::record::EventKind;
use origin_projections::index::{DocMeta, Filters, Index, Match, Scope, TextForm};
use origin_projections::parse_query;

const DOCS_MAX: usize = 32;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (query, docs) = match rest.iter().position(|&b| b == 0) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let query = String::from_utf8_lossy(query);
    let Ok(q) = parse_query(&query) else { return };
    let texts: Vec<String> = docs.split(|&b| b == b'\n').take(DOCS_MAX).map(|l| String::from_utf8_lossy(l).into_owned()).collect();
    let mut index = Index::in_memory();
    for (i, text) in texts.iter().enumerate() {
        let meta = DocMeta {
            scope: if i % 5 == 4 { Scope::Entry } else { Scope::Event },
            // Tool documents are tool calls, whose texts are JSON (escapes part words).
            kind: if i % 3 == 2 { EventKind::ToolUse as u8 } else { 0 },
            tool: i % 3 == 2,
            time_unix_ms: 1_700_000_000_000 + (i as i64 % 7) * 1000,
            source: Some("claude-code".into()),
            project: (i % 2 == 0).then(|| "demo".into()),
            key: format!("doc-{i}"),
            record: i as u64,
            position: 0,
        };
        index.add(i as u32, &meta, text).expect("ids rise and metadata is within limits");
    }
    if mode & 1 != 0 {
        index.commit(1).expect("an in-memory commit");
    }
    let filters = Filters { include_tools: mode & 2 != 0, ..Filters::default() };
    let limit = 1 + ((mode >> 2) & 31) as usize;
    let hits = index.search(&q, &filters, &|_| true, limit).expect("a search of a sound index");
    assert!(hits.len() <= limit);
    let mut seen = std::collections::HashSet::new();
    let mut partial_seen = false;
    for h in &hits {
        assert!(seen.insert(h.doc), "a document returned twice");
        let i = h.doc as usize;
        assert!(i < texts.len());
        assert_eq!(h.key, format!("doc-{i}"));
        if !filters.include_tools {
            assert!(i % 3 != 2, "a tool document without include_tools");
        }
        match h.matched {
            Match::All => assert!(!partial_seen, "a full match after a partial one"),
            Match::Partial => partial_seen = true,
        }
        assert!(h.score.is_finite());
        let form = if i % 3 == 2 && i % 5 != 4 { TextForm::of(EventKind::ToolUse, &texts[i]) } else { TextForm::Plain };
        let s = Index::snippet_of(&texts[i], form, &q);
        // 200 characters at most, brackets and cut marks included.
        assert!(s.chars().count() <= 200, "snippet of {} characters", s.chars().count());
    }
});

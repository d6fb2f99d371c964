//! Native memory files: `items` of two arbitrary texts (an old and a new version of a file),
//! and `match_items` of the new items against the old.
//!
//! Input: `old NUL new`: the bytes before the first NUL are the old version, the rest the new
//! one, each read as ingest reads a memory file (UTF-8, invalid bytes replaced).
//!
//! Checks: never panics; item keys are unique (a heading path that comes back later in the
//! file once restarted the numbering: fuzz/regressions/memory_items/); item texts are
//! non-empty and trimmed; one match per new item; no old key is matched twice, and every old
//! key is either matched or ended.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use origin_ingest::memory::{items, match_items, Match};

fn unique_keys<'a>(keys: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = HashSet::new();
    keys.into_iter().all(|k| seen.insert(k))
}

fuzz_target!(|data: &[u8]| {
    let (old_bytes, new_bytes) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&b""[..], data),
    };
    let (old_text, new_text) = (String::from_utf8_lossy(old_bytes), String::from_utf8_lossy(new_bytes));
    let old: Vec<(String, String)> = items(&old_text).into_iter().map(|i| (i.key, i.text)).collect();
    let new = items(&new_text);
    for t in old.iter().map(|(_, t)| t).chain(new.iter().map(|i| &i.text)) {
        assert!(!t.is_empty() && t.trim() == t, "item text {t:?} empty or untrimmed");
    }
    assert!(unique_keys(old.iter().map(|(k, _)| k.as_str())), "duplicate item keys in {old:?}");
    assert!(unique_keys(new.iter().map(|i| i.key.as_str())), "duplicate item keys in {new:?}");
    let (matches, ended) = match_items(&old, &new);
    assert_eq!(matches.len(), new.len());
    let mut used = HashSet::new();
    for m in &matches {
        if let Match::Unchanged(k) | Match::Changed(k) = m {
            assert!(used.insert(k.clone()), "old key {k} matched twice");
        }
    }
    for k in &ended {
        assert!(!used.contains(k), "ended key {k} was also matched");
    }
    assert_eq!(used.len() + ended.len(), old.len());
});

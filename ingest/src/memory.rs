//! Native memory files (CLAUDE.md, AGENTS.md, rules, memory folders) as items: one per bullet,
//! paragraph or code block, keyed by the headings above it and its position below them, so a
//! later version of the file can tell a changed item from a new one.

/// One item of a memory file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// `<heading path>#<index>`, e.g. `demo-app / Commands#1`.
    pub key: String,
    /// The item's text, trimmed.
    pub text: String,
}

fn is_bullet(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// Splits a memory file into items. YAML frontmatter is left out; headings are not items but
/// name the items below them.
pub fn items(content: &str) -> Vec<Item> {
    let mut lines = content.lines().peekable();
    if lines.peek().map(|l| l.trim_end()) == Some("---") {
        lines.next();
        for l in lines.by_ref() {
            if l.trim_end() == "---" {
                break;
            }
        }
    }
    let mut headings: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    // Items are numbered per heading path, across the whole file: a heading path that comes
    // back later goes on counting, so no two items share a key.
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut current: Option<String> = None;
    let mut in_fence = false;
    let path = |headings: &[(usize, String)]| headings.iter().map(|(_, h)| h.as_str()).collect::<Vec<_>>().join(" / ");
    let flush = |current: &mut Option<String>, out: &mut Vec<Item>, index: &mut std::collections::HashMap<String, usize>, headings: &[(usize, String)]| {
        if let Some(text) = current.take() {
            let text = text.trim().to_owned();
            if !text.is_empty() {
                let p = path(headings);
                let n = index.entry(p.clone()).or_insert(0);
                out.push(Item { key: format!("{p}#{n}"), text });
                *n += 1;
            }
        }
    };
    for line in lines {
        let trimmed = line.trim_end();
        if in_fence {
            if let Some(c) = current.as_mut() {
                c.push('\n');
                c.push_str(trimmed);
            }
            if trimmed.trim_start().starts_with("```") {
                in_fence = false;
                flush(&mut current, &mut out, &mut index, &headings);
            }
            continue;
        }
        if trimmed.trim_start().starts_with("```") {
            flush(&mut current, &mut out, &mut index, &headings);
            current = Some(trimmed.to_owned());
            in_fence = true;
            continue;
        }
        let level = trimmed.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&level) && trimmed[level..].starts_with(' ') {
            flush(&mut current, &mut out, &mut index, &headings);
            while headings.last().is_some_and(|(l, _)| *l >= level) {
                headings.pop();
            }
            headings.push((level, trimmed[level..].trim().to_owned()));
            continue;
        }
        if trimmed.trim().is_empty() {
            flush(&mut current, &mut out, &mut index, &headings);
            continue;
        }
        if is_bullet(trimmed) {
            flush(&mut current, &mut out, &mut index, &headings);
            current = Some(trimmed.trim().to_owned());
            continue;
        }
        match current.as_mut() {
            Some(c) => {
                c.push('\n');
                c.push_str(trimmed.trim());
            }
            None => current = Some(trimmed.trim().to_owned()),
        }
    }
    flush(&mut current, &mut out, &mut index, &headings);
    out
}

/// How an item of a new version relates to the items of the version before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// The same text (possibly moved): the entry stays as it is, under the old key.
    Unchanged(String),
    /// The text at this position changed: a new version of the entry under the old key.
    Changed(String),
    /// A new item.
    New,
}

/// Matches the items of a new version (`new`) against the previous version's (`old`, key and
/// text): first identical texts, wherever they moved; then what is left at the same key is a
/// change; the rest is new. Returns one match per new item, and the old keys left unmatched
/// (items the file no longer has). Deterministic: the importer and every replay agree.
pub fn match_items(old: &[(String, String)], new: &[Item]) -> (Vec<Match>, Vec<String>) {
    let mut used = vec![false; old.len()];
    let mut out = vec![Match::New; new.len()];
    for (i, item) in new.iter().enumerate() {
        // Prefer the same key, then the first unmatched old item with the same text.
        let same_key = old.iter().position(|(k, t)| *k == item.key && *t == item.text);
        let found = same_key.filter(|&j| !used[j]).or_else(|| (0..old.len()).find(|&j| !used[j] && old[j].1 == item.text));
        if let Some(j) = found {
            used[j] = true;
            out[i] = Match::Unchanged(old[j].0.clone());
        }
    }
    for (i, item) in new.iter().enumerate() {
        if out[i] != Match::New {
            continue;
        }
        if let Some(j) = old.iter().position(|(k, _)| *k == item.key) {
            if !used[j] {
                used[j] = true;
                out[i] = Match::Changed(old[j].0.clone());
            }
        }
    }
    let ended = old.iter().zip(&used).filter(|(_, u)| !**u).map(|((k, _), _)| k.clone()).collect();
    (out, ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_paragraphs_and_code_blocks_are_items_under_their_headings() {
        let md = "---\nname: x\n---\n# demo-app\n\nTypeScript API\nwith React UI.\n\n## Commands\n- Install: `pnpm install`\n- Tests: `pnpm test`\n  (needs redis)\n\n```sh\npnpm dev\n```\n@AGENTS.md\n";
        let items = items(md);
        let got: Vec<(&str, &str)> = items.iter().map(|i| (i.key.as_str(), i.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("demo-app#0", "TypeScript API\nwith React UI."),
                ("demo-app / Commands#0", "- Install: `pnpm install`"),
                ("demo-app / Commands#1", "- Tests: `pnpm test`\n(needs redis)"),
                ("demo-app / Commands#2", "```sh\npnpm dev\n```"),
                ("demo-app / Commands#3", "@AGENTS.md"),
            ]
        );
    }

    #[test]
    fn a_removed_item_ends_and_the_items_after_it_stay_unchanged() {
        let old: Vec<(String, String)> = items("- a\n- b\n- c\n- d\n").into_iter().map(|i| (i.key, i.text)).collect();
        let new = items("- a\n- c\n- d2\n");
        let (m, ended) = match_items(&old, &new);
        assert_eq!(m, vec![Match::Unchanged("#0".into()), Match::Unchanged("#2".into()), Match::New]);
        assert_eq!(ended, vec!["#1".to_owned(), "#3".to_owned()]);
        let new = items("- a\n- B\n- c\n- d\n- e\n");
        let (m, ended) = match_items(&old, &new);
        assert_eq!(m, vec![Match::Unchanged("#0".into()), Match::Changed("#1".into()), Match::Unchanged("#2".into()), Match::Unchanged("#3".into()), Match::New]);
        assert!(ended.is_empty());
    }

    #[test]
    fn a_changed_item_keeps_its_key() {
        let a = items("## Tests\n- Run `pnpm vitest run src/server`.\n- Needs redis.\n");
        let b = items("## Tests\n- Run `pnpm test:server`.\n- Needs redis.\n");
        assert_eq!(a[0].key, b[0].key);
        assert_ne!(a[0].text, b[0].text);
        assert_eq!(a[1], b[1]);
    }

    /// Found by `cargo fuzz run memory_items` (fuzz/regressions/memory_items/): a heading path
    /// that came back later in the file restarted the numbering, so two items got one key (the
    /// importer recorded two entries under one key and replay lost track of the second).
    #[test]
    fn items_under_a_repeated_heading_path_get_distinct_keys() {
        for text in ["# *\n*\n# *\n\u{7}", "# demo\n## Tests\n- a\n## Build\n- b\n## Tests\n- c\n"] {
            let items = items(text);
            let mut keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), items.len(), "duplicate keys in {items:?}");
        }
    }
}

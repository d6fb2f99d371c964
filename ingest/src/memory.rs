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
    let mut index = 0usize;
    let mut current: Option<String> = None;
    let mut in_fence = false;
    let path = |headings: &[(usize, String)]| headings.iter().map(|(_, h)| h.as_str()).collect::<Vec<_>>().join(" / ");
    let flush = |current: &mut Option<String>, out: &mut Vec<Item>, index: &mut usize, headings: &[(usize, String)]| {
        if let Some(text) = current.take() {
            let text = text.trim().to_owned();
            if !text.is_empty() {
                out.push(Item { key: format!("{}#{}", path(headings), index), text });
                *index += 1;
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
            index = 0;
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
    fn a_changed_item_keeps_its_key() {
        let a = items("## Tests\n- Run `pnpm vitest run src/server`.\n- Needs redis.\n");
        let b = items("## Tests\n- Run `pnpm test:server`.\n- Needs redis.\n");
        assert_eq!(a[0].key, b[0].key);
        assert_ne!(a[0].text, b[0].text);
        assert_eq!(a[1], b[1]);
    }
}

//! Small pieces every adapter uses: cutting text, reading times, naming projects, building
//! events.

use std::path::Path;

use origin_engine::record::{Event, EventKind, Role};
use serde_json::Value;

use crate::limits::{cut_marker, EVENT_TEXT_CHARS_MAX, EVENT_TEXT_TAIL_CHARS, FIRST_PROMPT_CHARS_MAX, SESSION_FIELD_CHARS_MAX};

/// The string at `key` of a JSON object, if it is one.
pub fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Text of message content given as a string, or as blocks (strings or objects with `text`;
/// an image block as `[image]`, so that it is not lost without a trace) joined by newlines.
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.clone()),
                _ if str_of(b, "type") == Some("image") => Some("[image]".to_owned()),
                _ => str_of(b, "text").map(str::to_owned),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// [`content_text`] of a [`Json`](crate::json::Json) value.
pub fn content_text_json(v: &crate::json::Json<'_>) -> String {
    use crate::json::Json;
    match v {
        Json::String(s) => s.to_string(),
        Json::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Json::String(s) => Some(s.to_string()),
                _ if b.str_of("type") == Some("image") => Some("[image]".to_owned()),
                _ => b.str_of("text").map(str::to_owned),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

/// Characters a cut may move to end (or start) at a line's end.
const CUT_AT_LINE_CHARS_MAX: usize = 1_000;

/// Cuts `text` to the event text limit, keeping its beginning and its last
/// [`EVENT_TEXT_TAIL_CHARS`] with the marker between them; returns the text and how many
/// characters were cut.
pub fn cut_text(text: String) -> (String, u64) {
    cut_middle(text, EVENT_TEXT_CHARS_MAX, EVENT_TEXT_TAIL_CHARS)
}

/// Cuts `text` to at most `max` characters: its first `max - tail` and its last `tail`, with
/// the marker between them when anything was cut. Where a line ends at most
/// [`CUT_AT_LINE_CHARS_MAX`] characters before the beginning's end (or after the end's
/// beginning), the cut is made there, so that whole lines are kept.
pub fn cut_middle(text: String, max: usize, tail: usize) -> (String, u64) {
    if text.len() <= max {
        return (text, 0);
    }
    let chars = text.chars().count();
    if chars <= max {
        return (text, 0);
    }
    let tail = tail.min(max);
    let mut head_end = text.char_indices().nth(max - tail).map_or(text.len(), |(b, _)| b);
    let mut tail_start = text.char_indices().nth(chars - tail).map_or(text.len(), |(b, _)| b);
    if tail > 0 {
        // The byte after a line's end within the limit's characters of the place.
        let line_end = |(b, c): (usize, char)| (c == '\n').then_some(b + 1);
        if let Some(b) = text[..head_end].char_indices().rev().take(CUT_AT_LINE_CHARS_MAX).find_map(line_end) {
            head_end = b;
        }
        if !text[..tail_start].ends_with('\n')
            && let Some(b) = text[tail_start..].char_indices().take(CUT_AT_LINE_CHARS_MAX).find_map(line_end)
        {
            tail_start += b;
        }
    }
    let cut = text[head_end..tail_start].chars().count() as u64;
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 48);
    out.push_str(&text[..head_end]);
    out.push_str(&cut_marker(cut));
    if tail > 0 {
        out.push(' ');
        out.push_str(&text[tail_start..]);
    }
    (out, cut)
}

/// Cuts `text` to `max` characters, with a marker when anything was cut.
pub fn cut_chars(text: String, max: usize) -> (String, u64) {
    // A text of at most `max` bytes has at most `max` characters: nothing to count.
    if text.len() <= max {
        return (text, 0);
    }
    match text.char_indices().nth(max) {
        None => (text, 0),
        Some((byte, _)) => {
            let cut = text[byte..].chars().count() as u64;
            let mut out = text[..byte].to_owned();
            out.push_str(&cut_marker(cut));
            (out, cut)
        }
    }
}

/// A first prompt, cut to the kept length.
pub fn first_prompt(text: &str) -> String {
    text.chars().take(FIRST_PROMPT_CHARS_MAX).collect()
}

/// A session's title (or project, or parent) as ingest keeps it: its first
/// [`SESSION_FIELD_CHARS_MAX`] characters.
pub fn session_field(text: &str) -> String {
    text.chars().take(SESSION_FIELD_CHARS_MAX).collect()
}

/// `change` with every field within what ingest keeps ([`session_field`], [`first_prompt`]);
/// its session id as it is (the events name it whole; adapters refuse ids over
/// [`crate::limits::LINE_ID_BYTES_MAX`]).
pub fn bounded(mut change: origin_engine::record::SessionChange) -> origin_engine::record::SessionChange {
    let cut = |s: &mut Option<String>, f: fn(&str) -> String| {
        if let Some(t) = s.as_mut() {
            *t = f(t);
        }
    };
    cut(&mut change.title, session_field);
    cut(&mut change.project, session_field);
    cut(&mut change.parent, session_field);
    cut(&mut change.first_prompt, first_prompt);
    change
}

/// Unix milliseconds of an ISO 8601 / RFC 3339 time (`2026-10-20T09:12:04.118Z`).
pub fn parse_time(s: &str) -> Option<i64> {
    let t: jiff::Timestamp = s.trim().parse().ok()?;
    Some(t.as_millisecond())
}

/// The project name for a working directory: its last component (`/home/dev/demo-app` →
/// `demo-app`).
pub fn project_of(cwd: &str) -> Option<String> {
    let p = Path::new(cwd.trim_end_matches('/'));
    p.file_name().and_then(|n| n.to_str()).map(str::to_owned).filter(|s| !s.is_empty())
}

/// Builds an event, cutting its text to the limit.
#[allow(clippy::too_many_arguments)]
pub fn event(
    id: String,
    time_unix_ms: i64,
    session: &str,
    cwd: Option<&str>,
    role: Role,
    kind: EventKind,
    text: String,
    line: u64,
) -> Event {
    let (text, text_cut_chars) = cut_text(text);
    Event {
        id,
        time_unix_ms,
        session: session.to_owned(),
        project: cwd.and_then(project_of),
        role,
        kind,
        text,
        text_cut_chars,
        cwd: cwd.map(str::to_owned),
        git_branch: None,
        agent_version: None,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_blocks_keep_their_text_and_mark_images() {
        let v: Value = serde_json::from_str(r#"[{"type":"text","text":"see the chart"},{"type":"image","source":{"type":"base64","data":"iVBOR"}},"plain"]"#).expect("json");
        assert_eq!(content_text(&v), "see the chart\n[image]\nplain");
        let raw = serde_json::to_vec(&v).expect("bytes");
        let j = crate::json::Json::parse(&raw, crate::json::Shape { skip: &[], raw: &[] }).expect("json");
        assert_eq!(content_text_json(&j), "see the chart\n[image]\nplain");
    }

    /// A long text keeps its beginning and its end, the marker between them counting what
    /// was cut; the kept characters are the limit's.
    #[test]
    fn a_cut_text_keeps_its_beginning_and_its_end() {
        let text: String = (0..120).map(|i| char::from_u32(0x4e00 + i).expect("han")).collect();
        let (cut, n) = cut_middle(text.clone(), 100, 30);
        assert_eq!(n, 20);
        let head: String = text.chars().take(70).collect();
        let tail: String = text.chars().skip(90).collect();
        assert_eq!(cut, format!("{head}{} {tail}", cut_marker(20)));
        assert_eq!(cut_middle(text.clone(), 120, 30), (text.clone(), 0));
        let (no_tail, n) = cut_middle(text.clone(), 100, 0);
        assert_eq!((no_tail, n), cut_chars(text, 100));
        let long = format!("{} test result: ok. 972 passed", "x".repeat(EVENT_TEXT_CHARS_MAX));
        let (kept, n) = cut_text(long);
        assert!(kept.ends_with("test result: ok. 972 passed") && n > 0, "the end stays");
        assert_eq!(kept.chars().count(), EVENT_TEXT_CHARS_MAX + cut_marker(n).chars().count() + 1);
        // Lines: cut where one ends, near the limit's place.
        let lines: String = (0..30).map(|i| format!("line {i:02} ok\n")).collect();
        let (kept, n) = cut_middle(lines.clone(), 100, 40);
        let (head, tail) = kept.split_once(&format!("{} ", cut_marker(n))).expect("marker");
        assert!(head.ends_with('\n') && lines.starts_with(head) && lines.ends_with(tail) && tail.starts_with("line "), "{kept}");
        assert_eq!(head.chars().count() + tail.chars().count() + n as usize, lines.chars().count());
        assert!(head.chars().count() <= 60 && tail.chars().count() <= 40);
        // The end's first line begins where the end does: kept whole, not passed over.
        let (kept, _) = cut_middle(lines.clone(), 110, 44);
        assert!(kept.ends_with(&lines[lines.len() - 44..]), "{kept}");
    }

    #[test]
    fn cutting_counts_characters_not_bytes() {
        let (t, n) = cut_chars("发布流程🚀abc".to_owned(), 4);
        assert_eq!(n, 4);
        assert!(t.starts_with("发布流程 …[4 characters cut at ingest]"));
        assert_eq!(cut_chars("short".into(), 10), ("short".into(), 0));
    }

    #[test]
    fn times_and_projects_parse() {
        assert_eq!(parse_time("2026-10-20T09:12:04.118Z"), Some(1_792_487_524_118));
        assert_eq!(parse_time("2026-10-20T11:12:04.118+02:00"), Some(1_792_487_524_118));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(project_of("/home/dev/demo-app/"), Some("demo-app".into()));
        assert_eq!(project_of("/"), None);
    }
}

//! Formatting for people and scripts: sizes, times, store ids, record bodies as JSON.

use origin_engine::record::Body;
use serde_json::{json, Value};

/// `1.5 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// ISO 8601 in the local time zone (`TZ` honoured) with milliseconds and offset, as the tools
/// give times; a time out of range (a damaged record's) said as such.
pub fn time(unix_ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(unix_ms) {
        Ok(_) => origin::tools::conventions::format_time(unix_ms, &origin::tools::conventions::local_tz()),
        Err(_) => format!("(invalid time {unix_ms})"),
    }
}

/// A record body as JSON; large opaque byte fields are shown by size only.
pub fn body_json(body: &Body) -> Value {
    let v = match body {
        Body::Ingested(b) => {
            let mut v = serde_json::to_value(b).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("raw_zstd".into(), json!({ "bytes": b.raw_zstd.len() }));
                o.insert("superseded".into(), json!(b.superseded));
            }
            v
        }
        Body::Remembered(b) | Body::Corrected(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::Forgotten(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::Restored(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::Imported(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::TokenCreated(b) => json!({ "name": b.name, "time_unix_ms": b.time_unix_ms }),
        Body::TokenRevoked(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::DeviceSeen(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Body::Scratch(b) => json!({ "bytes": b.len(), "crc32": crc32fast::hash(b) }),
    };
    v
}

/// One line summarising a body.
pub fn body_summary(body: &Body) -> String {
    fn cut(s: &str) -> String {
        let mut out: String = s.chars().take(60).collect();
        if s.chars().count() > 60 {
            out.push('…');
        }
        out.replace('\n', " ")
    }
    match body {
        Body::Ingested(b) => {
            let abandoned = if b.superseded.is_empty() { String::new() } else { format!(", {} abandoned", b.superseded.len()) };
            format!("{} {} lines {}..{}, {} events{abandoned}", b.source, b.path, b.line_start, b.line_end, b.events.len())
        }
        Body::Remembered(b) | Body::Corrected(b) => format!("{} {:?}: {}", b.id, b.kind, cut(&b.text)),
        Body::Forgotten(b) => format!("{} forgets {}", b.tombstone, b.target),
        Body::Restored(b) => format!("{} restored by {}", b.tombstone, b.author),
        Body::Imported(b) => format!("{} {} ({} entries)", b.source, b.path, b.entries.len()),
        Body::TokenCreated(b) => format!("token for {}", b.name),
        Body::TokenRevoked(b) => format!("token of {} revoked", b.name),
        Body::DeviceSeen(b) => format!("device {}", b.name),
        Body::Scratch(b) => format!("{} bytes, crc32 {:08x}", b.len(), crc32fast::hash(b)),
    }
}

/// `1 entry`, `2 entries`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` padded with spaces to `width` columns as a terminal shows them (a Chinese character
/// takes two), or cut to them with `…`.
pub fn pad(s: &str, width: usize) -> String {
    let fitted = fit(s, width);
    let shown = unicode_width::UnicodeWidthStr::width(fitted.as_str());
    format!("{fitted}{}", " ".repeat(width.saturating_sub(shown)))
}

/// `s` cut to `width` columns as a terminal shows them, with `…` where it was cut.
pub fn fit(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if unicode_width::UnicodeWidthStr::width(s) <= width {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Every line of `text` after `prefix` (a block of text under its heading line).
fn indented(text: &str, prefix: &str) -> String {
    let lines: Vec<String> = text.lines().map(|l| if l.is_empty() { String::new() } else { format!("{prefix}{l}") }).collect();
    if lines.is_empty() { prefix.trim_end().to_owned() } else { lines.join("\n") }
}

fn str_of<'v>(o: &'v Value, k: &str) -> &'v str {
    o.get(k).and_then(Value::as_str).unwrap_or("")
}

/// What else an entry says beyond its heading, as `a · b · c` (empty when nothing).
fn entry_details(e: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(p) = e.get("project").and_then(Value::as_str) {
        parts.push(format!("project {p}"));
    }
    match (e.get("valid_from").and_then(Value::as_str), e.get("valid_to").and_then(Value::as_str)) {
        (Some(f), Some(t)) => parts.push(format!("valid from {f} to {t}")),
        (Some(f), None) => parts.push(format!("valid from {f}")),
        (None, Some(t)) => parts.push(format!("valid to {t}")),
        (None, None) => {}
    }
    if let Some(s) = e.get("supersedes").and_then(Value::as_str) {
        parts.push(format!("corrects {s}"));
    }
    if let Some(s) = e.get("superseded_by").and_then(Value::as_str) {
        let how = if e.get("concurrent").and_then(Value::as_bool) == Some(true) { " (a concurrent correction won)" } else { "" };
        parts.push(format!("superseded by {s}{how}"));
    }
    if e.get("imported").and_then(Value::as_bool) == Some(true) {
        parts.push("from an agent's memory file".to_owned());
    }
    parts.join(" · ")
}

/// An entry: its heading line, its details, its text.
fn entry_block(out: &mut Vec<String>, e: &Value, mark: &str) {
    let confidence = e.get("confidence").and_then(Value::as_f64).map(|c| format!("  confidence {c}")).unwrap_or_default();
    let status = str_of(e, "status");
    let status = if status.is_empty() || status == "active" { String::new() } else { format!("  {status}") };
    out.push(format!("{}  {}  {}  {}{confidence}{status}{mark}", str_of(e, "id"), str_of(e, "kind"), str_of(e, "created"), str_of(e, "author")));
    let details = entry_details(e);
    if !details.is_empty() {
        out.push(format!("  ({details})"));
    }
    out.push(indented(str_of(e, "text"), "  "));
}

/// An event's heading line: id, time, role and kind.
fn event_heading(e: &Value, mark: &str) -> String {
    format!("{}  {}  {} {}{mark}", str_of(e, "id"), str_of(e, "time"), str_of(e, "role"), str_of(e, "kind"))
}

/// The answer of `tool` (its name: `search`, `sources`, `tombstones`, ...) for a person:
/// entries, events, sessions, sources and tombstones as short blocks, each text under its
/// heading, indented; anything else as indented JSON. Ends without a newline.
pub fn readable(v: &Value, tool: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let has = |k: &str| v.get(k).is_some();
    if let (Some(entries), Some(events)) = (v.get("entries").and_then(Value::as_array), v.get("events").and_then(Value::as_array)) {
        // A partial match (`"match": "partial"`) lacks some of the query's words: said on its
        // line and counted in the heading, so that no reader takes it for a full match.
        let partial = |e: &Value| e.get("match").and_then(Value::as_str) == Some("partial");
        let mark = |e: &Value| if partial(e) { "  (partial match)" } else { "" };
        let partials = entries.iter().chain(events).filter(|e| partial(e)).count();
        let mut heading = format!("{}, {}", count(entries.len(), "entry", "entries"), count(events.len(), "event", "events"));
        if partials > 0 {
            let them = if partials == 1 { "1 partial match".to_owned() } else { format!("{partials} partial matches") };
            heading.push_str(&format!(" ({them}: a word missing, or only in another form)"));
        }
        out.push(heading);
        for e in entries {
            out.push(String::new());
            entry_block(&mut out, e, mark(e));
        }
        for e in events {
            let text = e.get("snippet").and_then(Value::as_str).unwrap_or_else(|| str_of(e, "text"));
            out.push(String::new());
            out.push(event_heading(e, mark(e)));
            out.push(format!("  {}", text.replace('\n', " ")));
        }
    } else if let Some(sessions) = v.get("sessions").and_then(Value::as_array) {
        out.push(count(sessions.len(), "session", "sessions"));
        for s in sessions {
            out.push(session_line(s));
            out.push(format!("  session {}", str_of(s, "session")));
        }
    } else if let (Some(session), Some(events)) = (v.get("session"), v.get("events").and_then(Value::as_array)) {
        out.push(session_line(session));
        out.push(format!("  session {}, from {} to {}", str_of(session, "session"), str_of(session, "started"), str_of(session, "ended")));
        for e in events {
            out.push(String::new());
            out.push(event_heading(e, ""));
            out.push(indented(str_of(e, "text"), "  "));
        }
    } else if let (Some(entry), true) = (v.get("entry"), has("history")) {
        entry_block(&mut out, entry, "");
        let sources = v.get("sources").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        out.push(String::new());
        out.push(format!("cites {}", count(sources.len(), "event", "events")));
        for s in sources {
            out.push(format!("  {}  {}  {} {}", str_of(s, "id"), str_of(s, "time"), str_of(s, "role"), str_of(s, "kind")));
            if let Some(q) = s.get("quote").and_then(Value::as_str) {
                out.push(format!("    quote \"{q}\""));
            }
            out.push(indented(str_of(s, "text"), "    "));
        }
        let history = v.get("history").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        out.push(String::new());
        out.push(format!("history: {}, oldest first", count(history.len(), "version", "versions")));
        let this = str_of(entry, "id");
        for h in history {
            let here = if str_of(h, "id") == this { "  (this one)" } else { "" };
            out.push(format!("  {}  {}  {}  {}{here}", str_of(h, "id"), str_of(h, "created"), str_of(h, "author"), str_of(h, "status")));
        }
    } else if let Some(entry) = v.get("entry") {
        // What remember and correct saved.
        entry_block(&mut out, entry, "");
    } else if has("tombstone") && has("forgotten_entries") {
        let entries: Vec<&str> = v["forgotten_entries"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let events = v.get("excluded_events").and_then(Value::as_u64).unwrap_or(0);
        match v.get("tombstone").and_then(Value::as_str) {
            None => out.push("nothing recorded: everything it reaches was hidden already".to_owned()),
            Some(t) => {
                let listed = if entries.is_empty() { String::new() } else { format!(" ({})", entries.join(", ")) };
                out.push(format!(
                    "{t}: hid {}{listed} and {}",
                    count(entries.len(), "entry version", "entry versions"),
                    count(events as usize, "event", "events")
                ));
            }
        }
    } else if has("restored") {
        match (v.get("restored").and_then(Value::as_str), v.get("lifted_before")) {
            (Some(t), _) => out.push(format!("{t} lifted: what it hid is back, but for what another tombstone hides")),
            (None, Some(l)) => out.push(format!("nothing recorded: it was lifted already, by {} at {}", str_of(l, "author"), str_of(l, "time"))),
            (None, None) => out.push("nothing recorded".to_owned()),
        }
    } else if let (Some(list), "tombstones") = (v.as_array(), tool) {
        out.push(count(list.len(), "tombstone", "tombstones"));
        for t in list {
            let lifted = match t.get("restored").filter(|r| r.is_object()) {
                Some(r) => format!("  (lifted {} by {})", str_of(r, "time"), str_of(r, "author")),
                None => String::new(),
            };
            let entries = t.get("forgotten_entries").and_then(Value::as_array).map_or(0, Vec::len);
            let events = t.get("excluded_events").and_then(Value::as_u64).unwrap_or(0) as usize;
            out.push(String::new());
            out.push(format!("{}  {}  {}  forgets {}{lifted}", str_of(t, "tombstone"), str_of(t, "time"), str_of(t, "author"), str_of(t, "target")));
            out.push(format!("  hides {} and {}", count(entries, "entry version", "entry versions"), count(events, "event", "events")));
            out.push(indented(&format!("reason: {}", str_of(t, "reason")), "  "));
        }
    } else if let (Some(list), "sources") = (v.as_array(), tool) {
        // `sources`: the lines behind an answer.
        out.push(count(list.len(), "source line", "source lines"));
        for s in list {
            out.push(String::new());
            out.push(format!("{}  {}", str_of(s, "event_id"), str_of(s, "time")));
            if let Some(q) = s.get("quote").and_then(Value::as_str) {
                out.push(format!("  quote   \"{q}\""));
            }
            let line = s.get("line").and_then(Value::as_u64).map(|l| format!(", line {l}")).unwrap_or_default();
            out.push(format!("  file    {}{line}", str_of(s, "original_file")));
            // A memory file's version is kept whole in the journal, with no mirror.
            if let Some(mirror) = s.get("mirror_file").and_then(Value::as_str) {
                out.push(format!("  mirror  {mirror}{line}"));
            }
            let raw = indented(str_of(s, "raw"), "          ");
            out.push(format!("  raw     {}", raw.trim_start()));
        }
    } else if has("kind") && has("role") && has("text") {
        // `get` of an event.
        out.push(format!("{}  {}  {} {}", str_of(v, "id"), str_of(v, "time"), str_of(v, "role"), str_of(v, "kind")));
        let mut parts = vec![format!("source {}", str_of(v, "source"))];
        for (key, word) in [("project", "project"), ("session", "session"), ("cwd", "cwd"), ("git_branch", "branch"), ("agent_version", "agent")] {
            if let Some(x) = v.get(key).and_then(Value::as_str) {
                parts.push(format!("{word} {x}"));
            }
        }
        out.push(format!("  ({})", parts.join(" · ")));
        out.push(indented(str_of(v, "text"), "  "));
    } else {
        return serde_json::to_string_pretty(v).unwrap_or_default();
    }
    out.join("\n")
}

/// A session on one line: last activity, source, project, events, title (or first prompt).
fn session_line(s: &Value) -> String {
    let title = s.get("title").and_then(Value::as_str).or_else(|| s.get("prompt").and_then(Value::as_str)).unwrap_or("(untitled)");
    let events = s.get("events").and_then(Value::as_u64).unwrap_or(0);
    format!(
        "{}  {}  {}  {:>5} {}  {}",
        str_of(s, "ended"),
        pad(str_of(s, "source"), 11),
        pad(s.get("project").and_then(Value::as_str).unwrap_or("-"), 16),
        events,
        if events == 1 { "event " } else { "events" },
        fit(&title.replace('\n', " "), 80)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
        // In the local zone, with its offset: the same instant.
        let shown = time(1_760_951_550_123);
        assert_eq!(shown.parse::<jiff::Timestamp>().map(|t| t.as_millisecond()).ok(), Some(1_760_951_550_123), "{shown}");
        assert!(shown.contains(".123") && !shown.ends_with('Z'), "{shown}");
        assert_eq!(time(i64::MAX), format!("(invalid time {})", i64::MAX));
    }

    /// Partial matches are told apart from full ones in what a person reads (the JSON says
    /// `"match"`), and counts read as English.
    #[test]
    fn a_search_for_a_person_marks_partial_matches() {
        let event = |id: &str, m: &str| json!({"id": id, "time": "t", "role": "user", "kind": "message", "snippet": "the [redis] cache", "match": m});
        let v = json!({
            "entries": [{"id": "ent_1", "kind": "memory", "created": "c", "author": "a", "text": "redis", "match": "partial"}],
            "events": [event("e1", "all"), event("e2", "partial")],
        });
        let out = readable(&v, "search");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "1 entry, 2 events (2 partial matches: a word missing, or only in another form)", "{out}");
        let marked: Vec<&str> = lines.iter().filter(|l| l.ends_with("(partial match)")).copied().collect();
        assert_eq!(marked.len(), 2, "{out}");
        assert!(marked[0].starts_with("ent_1") && marked[1].starts_with("e2"), "{out}");
        let full = readable(&json!({"entries": [], "events": [event("e1", "all")]}), "search");
        assert_eq!(full.lines().next(), Some("0 entries, 1 event"), "{full}");
        assert!(!full.contains("partial"), "{full}");
        assert_eq!(readable(&json!({"sessions": [{"session": "s"}]}), "timeline").lines().next(), Some("1 session"));
    }

    /// Columns are as wide as a terminal shows them: a Chinese project name is padded by its
    /// width (two columns a character), and a long one cut with `…`.
    #[test]
    fn columns_are_padded_by_their_width_on_screen() {
        assert_eq!(pad("数据同步", 10), "数据同步  ");
        assert_eq!(pad("demo", 6), "demo  ");
        assert_eq!(pad("数据同步工具链", 10), "数据同步… ", "nine columns, padded to ten");
        assert_eq!(fit("abcdef", 4), "abc…");
        let session = |project: &str| json!({"ended": "t", "source": "zcode", "project": project, "events": 12, "title": "x", "session": "s"});
        let out = readable(&json!({"sessions": [session("数据同步"), session("weather-api")]}), "timeline");
        let lines: Vec<&str> = out.lines().collect();
        let column = |l: &str| unicode_width::UnicodeWidthStr::width(&l[..l.find("12 events").expect("count")]);
        assert_eq!(column(lines[1]), column(lines[3]), "{out}");
    }

    /// Every tool's answer reads as blocks for a person, each text indented under its heading
    /// (an entry's lines after the first were at the margin), not as JSON.
    #[test]
    fn every_answer_reads_as_blocks() {
        let entry = json!({"id": "ent_1", "kind": "knowledge", "text": "first line\nsecond line", "confidence": 0.9, "status": "superseded",
            "concurrent": true, "project": "app", "author": "codex@vm", "created": "c1", "valid_from": null, "valid_to": "v2",
            "supersedes": null, "superseded_by": "ent_2", "root": "ent_1", "imported": false});
        let search = readable(&json!({"entries": [entry.clone()], "events": []}), "search");
        assert!(search.contains("\n  first line\n  second line"), "{search}");
        let got = readable(&json!({
            "entry": entry,
            "sources": [{"id": "codex:s:3", "time": "t3", "role": "user", "kind": "message", "text": "said\nthen", "quote": "said"}],
            "history": [{"id": "ent_1", "created": "c1", "author": "codex@vm", "status": "superseded"}, {"id": "ent_2", "created": "c2", "author": "codex@vm", "status": "active"}],
        }), "get");
        for want in [
            "ent_1  knowledge  c1  codex@vm  confidence 0.9  superseded",
            "  (project app · valid to v2 · superseded by ent_2 (a concurrent correction won))",
            "cites 1 event",
            "    quote \"said\"",
            "    said\n    then",
            "history: 2 versions, oldest first",
            "  ent_1  c1  codex@vm  superseded  (this one)",
        ] {
            assert!(got.contains(want), "{want:?} in:\n{got}");
        }
        let event = readable(&json!({"id": "claude-code:s:1", "time": "t", "source": "claude-code", "project": null, "session": "s",
            "role": "user", "kind": "message", "text": "a\nb", "cwd": "/w", "git_branch": null, "agent_version": "2.1"}), "get");
        assert_eq!(event, "claude-code:s:1  t  user message\n  (source claude-code · session s · cwd /w · agent 2.1)\n  a\n  b");
        let sources = readable(&json!([{"event_id": "e", "time": "t", "quote": null, "original_file": "/o", "mirror_file": "/m", "line": 4, "raw": "{}"}]), "sources");
        assert_eq!(sources, "1 source line\n\ne  t\n  file    /o, line 4\n  mirror  /m, line 4\n  raw     {}");
        // A memory file's version: no mirror, its lines under the first.
        let memory = readable(&json!([{"event_id": "m", "time": "t", "quote": null, "original_file": "/AGENTS.md", "mirror_file": null, "line": 1, "raw": "# Rules\n- one"}]), "sources");
        assert_eq!(memory, "1 source line\n\nm  t\n  file    /AGENTS.md, line 1\n  raw     # Rules\n          - one");
        // No sources (every event an entry cites forgotten), and no tombstones: each said as itself.
        assert_eq!(readable(&json!([]), "sources"), "0 source lines");
        assert_eq!(readable(&json!([]), "tombstones"), "0 tombstones");
        let session = readable(&json!({"session": {"session": "s", "source": "codex", "project": null, "title": null, "prompt": "p", "started": "t0", "ended": "t1", "events": 1},
            "events": [{"id": "codex:s:1", "time": "t0", "role": "user", "kind": "message", "text": "x\ny"}]}), "timeline");
        assert!(session.contains("  session s, from t0 to t1") && session.ends_with("codex:s:1  t0  user message\n  x\n  y"), "{session}");
        assert_eq!(
            readable(&json!({"tombstone": "tmb_1", "forgotten_entries": ["ent_1"], "excluded_events": 2}), "forget"),
            "tmb_1: hid 1 entry version (ent_1) and 2 events"
        );
        assert!(readable(&json!({"tombstone": null, "forgotten_entries": [], "excluded_events": 0}), "forget").starts_with("nothing recorded"));
        assert!(readable(&json!({"restored": "tmb_1"}), "restore").starts_with("tmb_1 lifted"));
        assert!(readable(&json!({"restored": null, "lifted_before": {"author": "a", "time": "t"}}), "restore").contains("lifted already, by a at t"));
        let tombstones = readable(&json!([{"tombstone": "tmb_1", "target": "ent_1", "reason": "asked", "author": "a", "time": "t",
            "forgotten_entries": ["ent_1"], "excluded_events": 0, "restored": null}]), "tombstones");
        assert!(tombstones.starts_with("1 tombstone\n\ntmb_1  t  a  forgets ent_1\n  hides 1 entry version and 0 events\n  reason: asked"), "{tombstones}");
        for answer in [search, got, event, sources, session, tombstones] {
            assert!(!answer.trim_start().starts_with('{') && !answer.ends_with('\n'), "{answer}");
        }
    }
}

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

/// ISO 8601 in UTC with milliseconds, for operator output.
pub fn time(unix_ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(unix_ms) {
        Ok(t) => format!("{t:.3}"),
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
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A tool result for a person: entries and events as short blocks, anything else as
/// indented JSON.
pub fn readable(v: &Value) -> String {
    let mut out = String::new();
    let line = |out: &mut String, s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let field = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
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
        line(&mut out, heading);
        for e in entries {
            line(&mut out, format!("\n{}  {}  {}  {}{}", field(e, "id"), field(e, "kind"), field(e, "created"), field(e, "author"), mark(e)));
            line(&mut out, format!("  {}", field(e, "text")));
        }
        for e in events {
            let text = e.get("snippet").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| field(e, "text"));
            line(&mut out, format!("\n{}  {}  {} {}{}", field(e, "id"), field(e, "time"), field(e, "role"), field(e, "kind"), mark(e)));
            line(&mut out, format!("  {}", text.replace('\n', " ")));
        }
        return out;
    }
    if let Some(sessions) = v.get("sessions").and_then(Value::as_array) {
        line(&mut out, count(sessions.len(), "session", "sessions"));
        for s in sessions {
            let title = s.get("title").and_then(Value::as_str).or_else(|| s.get("prompt").and_then(Value::as_str)).unwrap_or("(untitled)");
            line(
                &mut out,
                format!(
                    "{}  {:<11}  {:<16}  {} events  {}",
                    field(s, "ended"),
                    field(s, "source"),
                    s.get("project").and_then(Value::as_str).unwrap_or("-"),
                    s.get("events").and_then(Value::as_u64).unwrap_or(0),
                    title
                ),
            );
            line(&mut out, format!("  session {}", field(s, "session")));
        }
        return out;
    }
    serde_json::to_string_pretty(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(time(1_760_951_550_123), "2025-10-20T09:12:30.123Z");
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
        let out = readable(&v);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "1 entry, 2 events (2 partial matches: a word missing, or only in another form)", "{out}");
        let marked: Vec<&str> = lines.iter().filter(|l| l.ends_with("(partial match)")).copied().collect();
        assert_eq!(marked.len(), 2, "{out}");
        assert!(marked[0].starts_with("ent_1") && marked[1].starts_with("e2"), "{out}");
        let full = readable(&json!({"entries": [], "events": [event("e1", "all")]}));
        assert_eq!(full.lines().next(), Some("0 entries, 1 event"), "{full}");
        assert!(!full.contains("partial"), "{full}");
        assert_eq!(readable(&json!({"sessions": [{"session": "s"}]})).lines().next(), Some("1 session"));
    }
}

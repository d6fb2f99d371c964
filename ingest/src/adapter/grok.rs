//! Grok Build (xAI): `<GROK_HOME or ~/.grok>/sessions/<url-encoded cwd>/<session id>/chat_history.jsonl`,
//! one item sent to the model per line (`chat_format_version` 1: `type` = system, user,
//! assistant, tool_result, reasoning, backend_tool_call; version 0's `role`-based lines are read
//! the same way). Event id `grok:<session id>:<line>` (a second event of one line:
//! `<line>:<n>`, n counting the line's events from 0).
//!
//! The items carry no times, session id, cwd or title: [`Adapter::begin`] reads them from the
//! session folder's side files into the state. `summary.json` gives the session id
//! (`info.id`, else the folder name), the cwd (`info.cwd`, else the URL-decoded group folder,
//! else the group's `.cwd` file), the title (`generated_title` > `title` > `session_summary`),
//! the git branch (`head_branch`) and `created_at`/`updated_at`. `updates.jsonl` (append-only,
//! often huge) is never indexed: begin reads it once, incrementally (the state keeps how many
//! bytes were read), keeping for every prompt index (`_meta.promptIndex`) the Unix time of
//! its first update and of the last update before the next prompt. A sub-agent's parent comes
//! from `<group>/<parent id>/subagents/<session id>/meta.json`.
//!
//! Times: an item belongs to the turn of the last item with a `prompt_index` before it; items
//! of a turn are spread linearly over the turn's update times by line (begin counts where each
//! turn starts and ends in the file), so the prompt gets the turn's first update and the turn's
//! last line its last update. Items before the first prompt get `created_at`. Without update
//! times for the turn: a linear spread of the file's lines over `created_at`..`updated_at`;
//! without a summary: the file's modification time. Times never go backwards within a file.
//!
//! Mapping: `system` → system/meta; `user` → user/message, but user/meta when it has a
//! `synthetic_reason` other than `interjection` (AGENTS.md, reminders, compaction notes); the
//! first prompt is the first `user` item with `prompt_index` and no `synthetic_reason`;
//! `assistant` → assistant/message for non-empty `content`, then assistant/tool_use per
//! `tool_calls[]` (`<name> <arguments>`); `tool_result` → user/tool_result (`content`, images as
//! `[image]`); `reasoning` → assistant/meta (the summary text, never `encrypted_content`);
//! `backend_tool_call` → assistant/tool_use (`<tool_type> <rest of kind>`); other types: nothing.
//!
//! `chat_history.jsonl` is replaced wholesale on rewind and compaction; ingest sees a changed
//! beginning and starts a new file version, whose lines kept byte for byte keep their ids
//! (`line_ref`). A rewind's dropped turns are recorded as superseded
//! (`rewrite_abandons_tail`); a compaction's (a new `compaction_meta` item) stay current.
//! `.corrupt` and `.pre-strip` copies and every other file of the folder are not logs.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use origin_engine::record::{EventKind, Role, SessionChange};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{line_ref, Adapter, Line, LogFile, MemoryFile, MemoryScope, Parsed, Project, State};
use crate::limits::LINE_SIZE_BYTES_MAX;
use crate::source::{Homes, Source};
use crate::text::{str_of, event, first_prompt, parse_time, project_of};
use crate::walk;

/// The Grok adapter.
pub struct Grok;

/// The transcript's file name.
const CHAT: &str = "chat_history.jsonl";
/// Side files read whole are small; anything bigger than this is ignored.
const SIDE_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;

fn num(state: &State, key: &str) -> Option<i64> {
    state.get(key).and_then(Value::as_i64)
}

/// A `[a, b]` pair of integers stored under `map[key]` in the state.
fn pair(state: &State, map: &str, key: u64) -> Option<(i64, i64)> {
    let a = state.get(map)?.get(key.to_string())?.as_array()?;
    Some((a.first()?.as_i64()?, a.get(1)?.as_i64()?))
}

/// Text of a content value: a string, or parts whose texts are joined (images as `[image]`).
fn parts_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                _ => match str_of(p, "text") {
                    Some(t) => Some(t.to_owned()),
                    None if str_of(p, "type").is_some_and(|t| t.contains("image")) => Some("[image]".to_owned()),
                    None => None,
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `%XX`-decodes `s`; None if it is not valid UTF-8 afterwards.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Reads a small side file whole (None if missing, unreadable or too big).
/// Adapter state key: a batch has read this session's `summary.json`.
const SUMMARY_READ: &str = "summary_read";

/// State key: `summary.json`'s size and time of change when `begin` last read it.
const SUMMARY_SEEN: &str = "summary_seen";

/// `summary.json`'s size and time of change (ms), if it is there.
fn summary_seen(path: &Path) -> Option<Value> {
    let m = std::fs::metadata(path).ok()?;
    let changed = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64;
    Some(Value::from(vec![m.len(), changed]))
}

/// The session's id: `summary.json`'s as `begin` read it, else the folder's name.
fn session_of(file: &LogFile, state: &State) -> String {
    match state.get("session").and_then(Value::as_str) {
        Some(s) => s.to_owned(),
        None => file.path.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
    }
}

/// The session's change when its project, title or parent differ from what was last said (or
/// it has its first prompt), the state marked as having said it.
fn told_change(state: &mut State, session: String, first: Option<String>) -> Option<SessionChange> {
    let project = state.get("cwd").and_then(Value::as_str).and_then(project_of);
    let title = state.get("title").and_then(Value::as_str).map(str::to_owned);
    let parent = state.get("parent").and_then(Value::as_str).map(str::to_owned);
    let told = Value::from(vec![
        project.clone().map_or(Value::Null, Value::String),
        title.clone().map_or(Value::Null, Value::String),
        parent.clone().map_or(Value::Null, Value::String),
    ]);
    if first.is_none() && state.get("told") == Some(&told) {
        return None;
    }
    state.insert("told".into(), told);
    Some(SessionChange { session, project, title, first_prompt: first, parent })
}

/// What `summary.json` says into the state: session id, cwd, title, branch, times (and its size
/// and time of change), and the session's parent (looked for in the sibling sessions' folders)
/// when `find_parent` or the session id changed. One that cannot be read leaves what an earlier
/// read learnt.
fn read_summary(file: &LogFile, state: &mut State, find_parent: bool) {
    let session_before = state.get("session").cloned();
    let Some(dir) = file.path.parent() else { return };
    let group = dir.parent();
    let summary_path = dir.join("summary.json");
    // Its size and time of change before it is read (a change while it is read is seen later).
    let seen = summary_seen(&summary_path);
    let summary: Value = match read_small(&summary_path).map(|b| serde_json::from_slice::<Value>(&b)) {
        Some(Ok(v)) => {
            state.insert(SUMMARY_READ.into(), Value::Bool(true));
            match seen {
                Some(seen) => state.insert(SUMMARY_SEEN.into(), seen),
                None => state.remove(SUMMARY_SEEN),
            };
            v
        }
        // There but unreadable, too large or half written (Grok rewrites it as the session
        // goes): what an earlier batch learnt from it stands, rather than the fallbacks
        // (the folder's name for the session, the file's time for every event).
        _ if state.contains_key(SUMMARY_READ) && summary_path.exists() => return,
        _ => {
            state.remove(SUMMARY_SEEN);
            Value::Null
        }
    };
    let info = summary.get("info").unwrap_or(&Value::Null);
    let nonempty = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let session = nonempty(str_of(info, "id"))
        .or_else(|| nonempty(str_of(&summary, "id")))
        .or_else(|| dir.file_name().and_then(|n| n.to_str()).map(str::to_owned));
    let cwd = summary_cwd(&summary).or_else(|| group.and_then(group_cwd));
    let title = nonempty(str_of(&summary, "generated_title"))
        .or_else(|| nonempty(str_of(&summary, "title")))
        .or_else(|| nonempty(str_of(&summary, "session_summary")));
    let mut set = |key: &str, v: Option<Value>| match v {
        Some(v) => {
            state.insert(key.into(), v);
        }
        None => {
            state.remove(key);
        }
    };
    set("session", session.clone().map(Value::String));
    set("cwd", cwd.map(Value::String));
    set("title", title.map(Value::String));
    set("branch", nonempty(str_of(&summary, "head_branch")).map(Value::String));
    let created = str_of(&summary, "created_at").and_then(parse_time);
    let updated = str_of(&summary, "updated_at").and_then(parse_time);
    set("created_ms", created.map(Value::from));
    set("updated_ms", updated.map(Value::from));
    let mtime = || {
        let m = std::fs::metadata(&file.path).ok()?.modified().ok()?;
        Some(m.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64)
    };
    set("mtime_ms", if created.or(updated).is_none() { mtime().map(Value::from) } else { None });
    if find_parent || state.get("session") != session_before.as_ref() {
        let parent = match (group, session.as_deref()) {
            (Some(g), Some(s)) => parent_of(g, dir, s),
            _ => None,
        };
        match parent {
            Some(p) => state.insert("parent".into(), Value::String(p)),
            None => state.remove("parent"),
        };
    }
}

fn read_small(path: &Path) -> Option<Vec<u8>> {
    let f = crate::bytes::open_regular(path).ok()?;
    let mut buf = Vec::new();
    f.take(SIDE_FILE_BYTES_MAX + 1).read_to_end(&mut buf).ok()?;
    (buf.len() as u64 <= SIDE_FILE_BYTES_MAX).then_some(buf)
}

/// Calls `f` with every complete line of `r` (without its newline; None for a line longer than
/// `max`, whose bytes are skipped, never held). A final fragment without newline is left
/// unread. Returns the bytes consumed (through the last newline).
fn each_line(r: &mut dyn BufRead, max: usize, f: &mut dyn FnMut(Option<&[u8]>)) -> io::Result<u64> {
    let mut consumed = 0u64;
    let mut line: Vec<u8> = Vec::new();
    let mut line_len = 0usize;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(nl) => (nl + 1, true),
            None => (buf.len(), false),
        };
        let body = if done { &buf[..take - 1] } else { buf };
        line_len += body.len();
        if line_len <= max {
            line.extend_from_slice(body);
        }
        r.consume(take);
        if done {
            consumed += (line_len + 1) as u64;
            f((line_len <= max).then_some(&line[..]));
            line.clear();
            line_len = 0;
        }
    }
}

/// The parts of an `updates.jsonl` line begin needs (everything else is skipped unread).
#[derive(Deserialize)]
struct Update {
    #[serde(default)]
    timestamp: Option<Value>,
    #[serde(default)]
    params: Option<UpdateParams>,
}

#[derive(Deserialize)]
struct UpdateParams {
    #[serde(default, rename = "_meta")]
    meta: Option<UpdateMeta>,
}

#[derive(Deserialize)]
struct UpdateMeta {
    #[serde(default, rename = "promptIndex")]
    prompt_index: Option<Value>,
}

/// Reads new lines of `updates.jsonl` into `turn_times` (`{"<prompt index>": [first ms, last ms]}`).
fn read_updates(path: &Path, state: &mut State) {
    let Ok(mut f) = crate::bytes::open_regular(path) else { return };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut from = state.get("updates_read").and_then(Value::as_u64).unwrap_or(0);
    if len < from {
        // Shorter than what was read: not the file we read before. Start over.
        from = 0;
        state.remove("turn_times");
        state.remove("updates_turn");
    }
    if len == from || f.seek(SeekFrom::Start(from)).is_err() {
        state.insert("updates_read".into(), Value::from(from));
        return;
    }
    let mut times = match state.remove("turn_times") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut turn = state.get("updates_turn").and_then(Value::as_u64);
    let mut reader = BufReader::with_capacity(64 * 1024, f);
    let read = each_line(&mut reader, LINE_SIZE_BYTES_MAX, &mut |line| {
        let Some(u) = line.and_then(|l| serde_json::from_slice::<Update>(l).ok()) else { return };
        let Some(secs) = u.timestamp.as_ref().and_then(Value::as_f64).filter(|s| s.is_finite() && s.abs() < 1e11) else { return };
        let ms = (secs * 1000.0).round() as i64;
        if let Some(k) = u.params.and_then(|p| p.meta).and_then(|m| m.prompt_index).and_then(|v| v.as_u64()) {
            turn = Some(k);
        }
        let Some(k) = turn else { return };
        let entry = times.entry(k.to_string()).or_insert_with(|| Value::from(vec![ms, ms]));
        if let Some(Value::Number(end)) = entry.get_mut(1) {
            if end.as_i64().is_some_and(|e| ms > e) {
                *end = ms.into();
            }
        }
    });
    let read = read.unwrap_or(0);
    state.insert("updates_read".into(), Value::from(from + read));
    if let Some(k) = turn {
        state.insert("updates_turn".into(), Value::from(k));
    }
    state.insert("turn_times".into(), Value::Object(times));
}

/// Where each turn starts and ends in the transcript (`{"<prompt index>": [first line, last line]}`)
/// and how many complete lines it has.
fn scan_turns(path: &Path, state: &mut State) {
    let Ok(f) = crate::bytes::open_regular(path) else { return };
    let mut reader = BufReader::with_capacity(64 * 1024, f);
    let mut starts: Vec<(u64, u64)> = Vec::new();
    let mut n = 0u64;
    let needle = b"\"prompt_index\"";
    let _ = each_line(&mut reader, LINE_SIZE_BYTES_MAX, &mut |line| {
        n += 1;
        let Some(line) = line else { return };
        if !line.windows(needle.len()).any(|w| w == needle) {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { return };
        let is_user = str_of(&v, "type").or_else(|| str_of(&v, "role")) == Some("user");
        if let (true, Some(k)) = (is_user, v.get("prompt_index").and_then(Value::as_u64)) {
            if !starts.iter().any(|&(seen, _)| seen == k) {
                starts.push((k, n));
            }
        }
    });
    let mut lines = Map::new();
    for (i, &(k, first)) in starts.iter().enumerate() {
        let last = starts.get(i + 1).map_or(n, |&(_, next)| next.saturating_sub(1)).max(first);
        lines.insert(k.to_string(), Value::from(vec![first, last]));
    }
    state.insert("turn_lines".into(), Value::Object(lines));
    state.insert("lines".into(), Value::from(n));
}

/// The working directory a session group folder stands for: its URL-decoded name, or the
/// `.cwd` file Grok writes when the encoded name would be too long.
fn group_cwd(group: &Path) -> Option<String> {
    let name = group.file_name()?.to_str()?;
    if let Some(decoded) = percent_decode(name).filter(|d| d != name && (d.contains('/') || d.contains('\\'))) {
        return Some(decoded);
    }
    let text = String::from_utf8(read_small(&group.join(".cwd"))?).ok()?;
    Some(text.trim().to_owned()).filter(|s| !s.is_empty())
}

/// The parent of a sub-agent session: a sibling session folder holding
/// `subagents/<session>/meta.json`.
fn parent_of(group: &Path, session_dir: &Path, session: &str) -> Option<String> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(group).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    dirs.into_iter().filter(|d| d != session_dir).find_map(|d| {
        let meta = d.join("subagents").join(session).join("meta.json");
        let v: Value = serde_json::from_slice(&read_small(&meta)?).ok()?;
        let named = str_of(&v, "parent_session_id").map(str::to_owned);
        named.or_else(|| d.file_name().and_then(|n| n.to_str()).map(str::to_owned))
    })
}

/// The time of the item on `line_no` (see the module docs), not yet clamped.
fn item_time(state: &State, line_no: u64, starts_turn: bool) -> i64 {
    let spread = |a: i64, b: i64, x: u64, lo: u64, hi: u64| -> i64 {
        if x <= lo || hi <= lo {
            return if x > lo { b } else { a };
        }
        if x >= hi {
            return b;
        }
        let (a, b) = (a as i128, b as i128);
        (b - a).checked_mul((x - lo) as i128).map_or(b, |d| a + d / (hi - lo) as i128) as i64
    };
    let fallback = || {
        let lines = state.get("lines").and_then(Value::as_u64).unwrap_or(line_no).max(1);
        match (num(state, "created_ms"), num(state, "updated_ms")) {
            (Some(c), Some(u)) => spread(c, u.max(c), line_no, 1, lines),
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => num(state, "mtime_ms").unwrap_or(0),
        }
    };
    match state.get("turn").and_then(Value::as_u64) {
        None => num(state, "created_ms")
            .or_else(|| {
                let times = state.get("turn_times")?.as_object()?;
                times.values().filter_map(|v| v.get(0)?.as_i64()).min()
            })
            .unwrap_or_else(fallback),
        Some(k) => match pair(state, "turn_times", k) {
            Some((start, end)) => match pair(state, "turn_lines", k) {
                Some((first, last)) => spread(start, end, line_no, first as u64, last as u64),
                None if starts_turn => start,
                None => end,
            },
            None => fallback(),
        },
    }
}

/// Lower-case words joined by `-` (to compare memory folder slugs with project names).
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// The project directory a `memory/<slug>-<hash8>` folder belongs to, when exactly one of
/// `projects` has that slug.
fn memory_project(folder: &str, projects: &[Project]) -> Option<String> {
    let (name, hash) = folder.rsplit_once('-')?;
    if hash.len() != 8 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let want = slug(name);
    let mut hits = projects.iter().filter(|p| p.cwd.file_name().and_then(|n| n.to_str()).is_some_and(|n| slug(n) == want));
    let hit = hits.next()?;
    hits.next().is_none().then(|| hit.name()).flatten()
}

/// The cwd a session's `summary.json` names: `info.cwd`, else `cwd` (trimmed, not empty).
fn summary_cwd(summary: &Value) -> Option<String> {
    let named = |v: &Value| str_of(v, "cwd").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned);
    summary.get("info").and_then(named).or_else(|| named(summary))
}

/// The working directories of Grok's sessions below `sessions`: each group folder's, and each
/// session's own as its `summary.json` names it (as the events take it).
fn own_cwds(sessions: &Path) -> std::collections::HashSet<PathBuf> {
    let dirs = |p: &Path| -> Vec<PathBuf> { std::fs::read_dir(p).map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect()).unwrap_or_default() };
    let mut out = std::collections::HashSet::new();
    for group in dirs(sessions) {
        out.extend(group_cwd(&group).map(PathBuf::from));
        for session in dirs(&group) {
            let summary: Option<Value> = read_small(&session.join("summary.json")).and_then(|b| serde_json::from_slice(&b).ok());
            out.extend(summary.as_ref().and_then(summary_cwd).map(PathBuf::from));
        }
    }
    out
}

/// The instruction files Grok reads in each folder from a repository's root to the cwd.
const PROJECT_INSTRUCTIONS: [&str; 5] = ["AGENTS.md", "Agents.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md"];
/// Most folders looked at above a cwd for its repository's root.
const REPO_LEVELS_MAX: usize = 32;

impl Adapter for Grok {
    fn source(&self) -> Source {
        Source::Grok
    }

    fn logs_rewritten(&self) -> bool {
        true
    }

    /// A rewind, unless the new version adds a compaction's summary (a `user` item whose
    /// `synthetic_reason` is `compaction_meta`; one kept from an earlier compaction says
    /// nothing): a compaction drops the turns it sums up, which stay current.
    fn rewrite_abandons_tail(&self, _file: &LogFile, added: &[&[u8]]) -> bool {
        !added.iter().any(|line| {
            memchr::memmem::find(line, b"compaction_meta").is_some()
                && serde_json::from_slice::<Value>(line).is_ok_and(|v| v.get("synthetic_reason").and_then(Value::as_str) == Some("compaction_meta"))
        })
    }

    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        let root = homes.grok.join("sessions");
        let mut problems = Vec::new();
        // Exactly `<group>/<session>/chat_history.jsonl`: not `.corrupt`/`.pre-strip` copies,
        // not updates.jsonl, not copies kept deeper (checkpoints).
        let in_session = |p: &Path| p.strip_prefix(&root).is_ok_and(|r| r.components().count() == 3);
        let keep = |p: &Path| p.file_name().is_some_and(|n| n == CHAT) && in_session(p);
        // Its side files, read with it, are said too where their name is given to a pipe (the
        // session's title, times and turns' times are then not read).
        let beside = |p: &Path| p.file_name().is_some_and(|n| n == "summary.json" || n == "updates.jsonl") && in_session(p);
        let files = walk::files_beside(&root, &keep, &beside, &mut problems)
            .into_iter()
            .map(|path| LogFile::lines(Source::Grok, &root, path))
            .collect();
        (files, problems)
    }

    fn side_stamp(&self, file: &LogFile) -> Option<Value> {
        summary_seen(&file.path.parent()?.join("summary.json"))
    }

    fn side_changes(&self, file: &LogFile, state: &mut State) -> Vec<SessionChange> {
        let Some(dir) = file.path.parent() else { return Vec::new() };
        if state.get(SUMMARY_SEEN) != summary_seen(&dir.join("summary.json")).as_ref() {
            // `summary.json` alone (small; the parent as it was): the update times and turns
            // matter to lines only.
            read_summary(file, state, false);
        }
        // What the state holds and was not said yet (a title read before a batch whose lines
        // said nothing, all malformed or cut), as well as what was just read.
        let session = session_of(file, state);
        told_change(state, session, None).into_iter().collect()
    }

    fn begin(&self, file: &LogFile, state: &mut State) {
        let Some(dir) = file.path.parent() else { return };
        read_summary(file, state, true);
        read_updates(&dir.join("updates.jsonl"), state);
        scan_turns(&file.path, state);
    }

    fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Line::Malformed("not a JSON object".into()),
            Err(e) => return Line::Malformed(format!("invalid JSON: {e}")),
        };
        // Version 1 items have `type`; version 0 messages have `role` (`tool` for results).
        let ty = match (str_of(&v, "type"), str_of(&v, "role")) {
            (Some(t), _) => t,
            (None, Some("tool")) => "tool_result",
            (None, Some(r)) => r,
            (None, None) => return Line::Malformed("no type".into()),
        };
        let session = session_of(file, state);
        let prompt_index = v.get("prompt_index").and_then(Value::as_u64);
        if let (Some(k), true) = (prompt_index, ty == "user") {
            state.insert("turn".into(), Value::from(k));
        }
        let time = item_time(state, line_no, prompt_index.is_some()).max(num(state, "last_ms").unwrap_or(i64::MIN));
        let cwd = state.get("cwd").and_then(Value::as_str).map(str::to_owned);
        let branch = state.get("branch").and_then(Value::as_str).map(str::to_owned);

        let mut items: Vec<(Role, EventKind, String)> = Vec::new();
        let mut prompt = None;
        match ty {
            "system" => items.push((Role::System, EventKind::Meta, parts_text(v.get("content").unwrap_or(&Value::Null)))),
            "user" => {
                let text = parts_text(v.get("content").unwrap_or(&Value::Null));
                let synthetic = v.get("synthetic_reason").filter(|r| !r.is_null());
                let kind = match synthetic {
                    None => EventKind::Message,
                    Some(r) if r.as_str() == Some("interjection") => EventKind::Message,
                    Some(_) => EventKind::Meta,
                };
                if synthetic.is_none() && prompt_index.is_some() {
                    prompt = Some(text.clone());
                }
                items.push((Role::User, kind, text));
            }
            "assistant" => {
                let text = parts_text(v.get("content").unwrap_or(&Value::Null));
                if !text.trim().is_empty() {
                    items.push((Role::Assistant, EventKind::Message, text));
                }
                for call in v.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let f = call.get("function").unwrap_or(call);
                    let name = str_of(f, "name").unwrap_or("tool");
                    let args = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    };
                    items.push((Role::Assistant, EventKind::ToolUse, format!("{name} {args}").trim_end().to_owned()));
                }
            }
            "tool_result" => {
                let mut text = parts_text(v.get("content").unwrap_or(&Value::Null));
                let images = v.get("images").and_then(Value::as_array).map_or(0, Vec::len);
                for _ in 0..images {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str("[image]");
                }
                items.push((Role::User, EventKind::ToolResult, text));
            }
            "reasoning" => {
                let summary = parts_text(v.get("summary").unwrap_or(&Value::Null));
                let text = if summary.is_empty() { parts_text(v.get("content").unwrap_or(&Value::Null)) } else { summary };
                items.push((Role::Assistant, EventKind::Meta, text));
            }
            "backend_tool_call" => {
                let mut kind = v.get("kind").cloned().unwrap_or(Value::Null);
                let name = match kind.as_object_mut().and_then(|k| k.shift_remove("tool_type")) {
                    Some(Value::String(s)) => s,
                    _ => "backend_tool".to_owned(),
                };
                items.push((Role::Assistant, EventKind::ToolUse, format!("{name} {kind}")));
            }
            // Types this build does not know: nothing to index, nothing wrong.
            _ => {}
        }

        let mut out = Parsed::default();
        for (n, (role, kind, text)) in items.into_iter().enumerate() {
            let line = line_ref(state, line_no);
            let id = if n == 0 { format!("grok:{session}:{line}") } else { format!("grok:{session}:{line}:{n}") };
            let mut e = event(id, time, &session, cwd.as_deref(), role, kind, text, line_no);
            e.git_branch = branch.clone();
            out.events.push(e);
        }
        if !out.events.is_empty() {
            state.insert("last_ms".into(), Value::from(time));
        }

        // Session properties: whenever they differ from what was last said, and the first prompt.
        let first = match prompt {
            Some(p) if !state.contains_key("first_prompt") => {
                state.insert("first_prompt".into(), Value::Bool(true));
                Some(first_prompt(&p))
            }
            _ => None,
        };
        out.sessions.extend(told_change(state, session, first));
        Line::Parsed(out)
    }

    fn memory_files(&self, homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
        let mut out = Vec::new();
        let md = |p: &Path| p.extension().is_some_and(|e| e == "md");
        let user = |path: PathBuf| MemoryFile { source: Source::Grok, path, scope: MemoryScope::User, project: None };
        out.push(user(homes.grok.join("AGENTS.md")));
        out.extend(walk::files(&homes.grok.join("rules"), &md, problems).into_iter().map(user));
        // Memory (experimental): `memory/MEMORY.md` is the user's; `memory/<slug>-<hash8>/…`
        // belongs to one repository (keyed by its remote, so only its slug can be matched).
        let memory = homes.grok.join("memory");
        for path in walk::files(&memory, &md, problems) {
            let rel = path.strip_prefix(&memory).map(Path::to_path_buf).unwrap_or_default();
            let mut parts = rel.components();
            let (first, more) = (parts.next(), parts.next().is_some());
            if !more {
                out.push(user(path));
                continue;
            }
            let folder = first.and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
            out.push(MemoryFile { source: Source::Grok, path, scope: MemoryScope::Project, project: memory_project(folder, projects) });
        }
        // Grok's own projects only: the working directories its session folders stand for
        // (the projects of other agents' logs are theirs; their instruction files are not
        // what Grok read).
        let own = own_cwds(&homes.grok.join("sessions"));
        for p in projects.iter().filter(|p| own.contains(&p.cwd)) {
            let Some(dir) = &p.dir else { continue };
            // Grok reads the instruction files of every folder from the repository's root (the
            // nearest folder up that has `.git`) down to the cwd; each file is named by its
            // folder's project, the folder as the logs would write it.
            let up = dir.ancestors().take(REPO_LEVELS_MAX).position(|a| a.join(".git").exists()).unwrap_or(0);
            for (k, folder) in dir.ancestors().take(up + 1).enumerate() {
                let named = p.cwd.ancestors().nth(k).unwrap_or(folder);
                let project = Some(named.to_string_lossy().into_owned());
                for name in PROJECT_INSTRUCTIONS {
                    out.push(MemoryFile { source: Source::Grok, path: folder.join(name), scope: MemoryScope::Project, project: project.clone() });
                }
            }
            let mk = |path: PathBuf| MemoryFile { source: Source::Grok, path, scope: MemoryScope::Project, project: p.name() };
            out.extend(walk::files(&dir.join(".grok/rules"), &md, problems).into_iter().map(mk));
        }
        super::keep_regular(&mut out, problems);
        // A folder two projects share (their repository's root) once; `AGENTS.md` and
        // `Agents.md` once where the file system does not tell them apart.
        let mut seen = std::collections::HashSet::new();
        out.retain(|m| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&m.path).map_or(true, |md| seen.insert((md.dev(), md.ino())))
        });
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::adapter::FileFormat;
    use crate::adapter::golden;
    use crate::limits::EVENT_TEXT_CHARS_MAX;
    use proptest::prelude::*;
    use serde_json::json;

    const WEATHER: &str = "01a1a0af-e7c0-7226-b63c-5ab791b7584a";
    const INVENTORY: &str = "01a1a6c1-3355-7f4b-bca9-349edcf4bb99";

    fn homes() -> Homes {
        Homes::under(&golden::fixture_home())
    }

    fn fixture(session: &str) -> LogFile {
        let (files, problems) = Grok.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        files.into_iter().find(|f| f.mirror.contains(session)).expect("fixture session")
    }

    fn events(run: &Value) -> &Vec<Value> {
        run["events"].as_array().expect("events")
    }

    fn event_at<'a>(run: &'a Value, id: &str) -> &'a Value {
        events(run).iter().find(|e| e["id"] == id).unwrap_or_else(|| panic!("no event {id}"))
    }

    #[test]
    fn grok_discovers_only_chat_histories() {
        let (files, problems) = Grok.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        let mirrors: Vec<&str> = files.iter().map(|f| f.mirror.as_str()).collect();
        assert_eq!(
            mirrors,
            [
                "%2Fhome%2Fdev%2Fsrc%2Finventory_sync/01a1a6c1-3355-7f4b-bca9-349edcf4bb99/chat_history.jsonl",
                "%2Fhome%2Fdev%2Fwork%2Fweather-api/01a1a0af-e7c0-7226-b63c-5ab791b7584a/chat_history.jsonl",
            ]
        );
        for f in &files {
            assert_eq!(f.source, Source::Grok);
            assert_eq!(f.format, FileFormat::Lines);
            assert_eq!(f.key, f.path.to_string_lossy());
            assert!(f.path.is_file());
        }
        let none = Homes::under(Path::new("/nonexistent/origin-test-home"));
        assert_eq!(Grok.discover(&none), (Vec::new(), Vec::new()));
    }

    /// A session's `summary.json` or `updates.jsonl` whose name is given to a pipe is said, as
    /// a log's is (the session's title and times are then not read), and its log still found;
    /// side files elsewhere, and regular ones, are not said.
    #[test]
    fn grok_side_files_that_are_pipes_are_said() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let homes = Homes::under(tmp.path());
        let session = homes.grok.join("sessions/%2Fhome%2Fdev%2Fapp/01a1a0af-0000-7000-8000-000000000001");
        std::fs::create_dir_all(&session).expect("mkdir");
        std::fs::write(session.join(CHAT), b"").expect("chat");
        let mkfifo = |p: &Path| assert!(std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo").success());
        mkfifo(&session.join("summary.json"));
        mkfifo(&session.join("updates.jsonl"));
        // Deeper (a checkpoint's copy) is not the session's own.
        std::fs::create_dir_all(session.join("checkpoints")).expect("mkdir");
        mkfifo(&session.join("checkpoints/summary.json"));
        let (files, mut problems) = Grok.discover(&homes);
        assert_eq!(files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(), [session.join(CHAT)]);
        problems.sort();
        let said = |name: &str| format!("{} is not a regular file (a pipe, socket or device): not read", session.join(name).display());
        assert_eq!(problems, [said("summary.json"), said("updates.jsonl")]);
    }

    /// A backend tool call's text is its tool type, then the rest of its `kind` in the order
    /// the log wrote it (taking the type out moves no other key).
    #[test]
    fn grok_backend_tool_call_keeps_its_fields_in_order() {
        let file = fixture(WEATHER);
        let mut state = State::default();
        let line = r#"{"type":"backend_tool_call","id":"bt_1","kind":{"tool_type":"web_search","query":"q","max":3,"lang":"en"}}"#;
        let Line::Parsed(p) = Grok.parse_line(&file, &mut state, line.as_bytes(), 40) else { panic!("parsed") };
        assert_eq!(p.events.len(), 1, "{:?}", p.events);
        assert_eq!(p.events[0].text, r#"web_search {"query":"q","max":3,"lang":"en"}"#);
    }

    /// [`golden::run`] with `summary.json`'s time of change (a checkout's) named, not written.
    fn golden_run(file: &LogFile) -> Value {
        let mut v = golden::run(&Grok, file);
        if let Some(seen) = v["state"].get_mut(SUMMARY_SEEN) {
            seen[1] = json!("<summary.json mtime>");
        }
        v
    }

    #[test]
    fn grok_golden_weather_api() {
        golden::check("grok-weather-api.json", &golden_run(&fixture(WEATHER)));
    }

    #[test]
    fn grok_golden_inventory_sync() {
        golden::check("grok-inventory-sync.json", &golden_run(&fixture(INVENTORY)));
    }

    #[test]
    fn grok_weather_api_maps_items_as_the_format_notes_say() {
        let run = golden::run(&Grok, &fixture(WEATHER));
        let id = |line: &str| format!("grok:{WEATHER}:{line}");
        // Injected items are meta; the interjection is the user's own text but not the first prompt.
        assert_eq!(event_at(&run, &id("1"))["role"], "System");
        assert_eq!(event_at(&run, &id("1"))["kind"], "Meta");
        assert_eq!(event_at(&run, &id("2"))["kind"], "Meta");
        assert_eq!(event_at(&run, &id("3"))["kind"], "Message");
        assert_eq!(event_at(&run, &id("9"))["kind"], "Message");
        assert_eq!(event_at(&run, &id("9"))["role"], "User");
        // Content then one tool_use per call; results are the user's.
        assert_eq!(event_at(&run, &id("7"))["kind"], "Message");
        assert_eq!(event_at(&run, &id("7:1"))["kind"], "ToolUse");
        assert_eq!(event_at(&run, &id("10"))["text"], r#"run_terminal_cmd {"command":"pnpm vitest run test/routes","is_background":false}"#);
        assert_eq!(event_at(&run, &id("10:1"))["kind"], "ToolUse");
        assert_eq!(event_at(&run, &id("12"))["role"], "User");
        assert_eq!(event_at(&run, &id("12"))["kind"], "ToolResult");
        assert_eq!(event_at(&run, &id("14"))["text"], "Here is the staging error from this morning, is it the same bug?\n[image]");
        assert_eq!(event_at(&run, &id("16"))["kind"], "ToolUse");
        // Reasoning shows its summary, never the encrypted content.
        let reasoning = event_at(&run, &id("4"));
        assert_eq!((reasoning["role"].as_str(), reasoning["kind"].as_str()), (Some("Assistant"), Some("Meta")));
        assert!(reasoning["text"].as_str().is_some_and(|t| t.starts_with("The handler probably")));
        // The healed torn line in the middle is malformed; nothing pending at the end.
        assert_eq!(run["malformed"].as_array().map(|m| m.iter().map(|x| x["line"].clone()).collect::<Vec<_>>()), Some(vec![json!(15)]));
        assert_eq!(run["pending_bytes"], 0);
        assert_eq!(run["lines"], 17);
        // Session, project, branch on every event.
        for e in events(&run) {
            assert_eq!(e["session"], WEATHER);
            assert_eq!(e["project"], "weather-api");
            assert_eq!(e["cwd"], "/home/dev/work/weather-api");
            assert_eq!(e["git_branch"], "fix/forecast-encoding");
            assert_eq!(e["agent_version"], Value::Null);
        }
        let sessions = run["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions[0]["title"], "Encode city names in forecast URLs");
        assert_eq!(sessions[0]["first_prompt"], Value::Null);
        assert_eq!(
            sessions[1]["first_prompt"],
            "GET /forecast?city=New York returns 500. Cities with a space in the name break it. Fix it and add a test."
        );
    }

    #[test]
    fn grok_times_come_from_updates_by_prompt_index() {
        let run = golden::run(&Grok, &fixture(WEATHER));
        let created = parse_time("2026-11-03T09:14:05.120Z").expect("time");
        let updated = parse_time("2026-11-03T09:15:50.120Z").expect("time");
        let times: Vec<i64> = events(&run).iter().map(|e| e["time_unix_ms"].as_i64().expect("time")).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert!(times.iter().all(|&t| (created..=updated).contains(&t)), "{times:?}");
        let at = |id: &str| event_at(&run, &format!("grok:{WEATHER}:{id}"))["time_unix_ms"].as_i64().expect("time");
        // Before the first prompt: the summary's created_at.
        assert_eq!(at("1"), created);
        // Prompt 0's first update is at second 1793697245 (created_at is later within that
        // second, and times never go back); its last one 31 s later is the turn's last line.
        assert_eq!(at("3"), created);
        assert_eq!(at("13"), 1_793_697_276_000);
        // Prompt 1 starts at its own update.
        assert_eq!(at("14"), 1_793_697_340_000);
        assert_eq!(at("17"), 1_793_697_350_000);
        // The torn last line of updates.jsonl was not read.
        let state = &run["state"];
        let size = std::fs::metadata(fixture(WEATHER).path.with_file_name("updates.jsonl")).expect("updates").len();
        assert!(state["updates_read"].as_u64().is_some_and(|n| n < size));
        assert_eq!(state["turn_times"], json!({"0": [1_793_697_245_000i64, 1_793_697_276_000i64], "1": [1_793_697_340_000i64, 1_793_697_350_000i64]}));
        assert_eq!(state["turn_lines"], json!({"0": [3, 13], "1": [14, 17]}));
    }

    #[test]
    fn grok_inventory_sync_cuts_long_results_and_reads_the_group_folder() {
        let run = golden::run(&Grok, &fixture(INVENTORY));
        let id = |line: &str| format!("grok:{INVENTORY}:{line}");
        let result = event_at(&run, &id("6"));
        assert_eq!(result["kind"], "ToolResult");
        assert!(result["text_cut_chars"].as_u64().is_some_and(|n| n > 0));
        // Its beginning and its end are kept: the run's result line, last, stays searchable.
        assert!(result["text"].as_str().is_some_and(|t| t.chars().count() > EVENT_TEXT_CHARS_MAX - 2_000 && t.contains("characters cut at ingest] ") && t.contains("test result: ok. 972 passed")));
        assert_eq!(event_at(&run, &id("8"))["kind"], "Meta");
        assert_eq!(event_at(&run, &id("9"))["kind"], "Message");
        assert_eq!(event_at(&run, &id("7"))["text"], "全部测试通过。最慢的是 `sync::retry`：它用真实计时器 sleep，一共约 18 秒。");
        // No info.cwd in summary.json: the URL-encoded group gives it.
        assert!(events(&run).iter().all(|e| e["project"] == "inventory_sync" && e["cwd"] == "/home/dev/src/inventory_sync"));
        // Torn tail pending, never parsed.
        assert_eq!(run["lines"], 11);
        assert!(run["pending_bytes"].as_u64().is_some_and(|n| n > 0));
        assert_eq!(run["malformed"], json!([]));
        let sessions = run["sessions"].as_array().expect("sessions");
        assert_eq!(sessions[0]["title"], "排查库存重复入库和慢测试");
        assert_eq!(sessions[1]["first_prompt"], "库存同步从上周开始偶尔重复入库。先跑一遍完整测试，看看哪些模块最慢。");
        assert_eq!(sessions.len(), 2);
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn log_file(path: PathBuf) -> LogFile {
        LogFile { source: Source::Grok, key: path.to_string_lossy().into_owned(), mirror: String::new(), path, format: FileFormat::Lines }
    }

    #[test]
    fn grok_updates_are_read_incrementally_and_reread_when_replaced() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("sessions/%2Fw%2Fp/s1");
        write(&dir.join(CHAT), "{\"type\":\"user\",\"content\":\"hi\",\"prompt_index\":0}\n");
        let updates = dir.join("updates.jsonl");
        let line = |t: i64, k: Option<u64>| {
            let meta = k.map_or(json!({}), |k| json!({"promptIndex": k}));
            json!({"timestamp": t, "params": {"update": {}, "_meta": meta}}).to_string() + "\n"
        };
        write(&updates, &(line(100, Some(0)) + &line(105, None) + "{\"timestamp\":1"));
        let file = log_file(dir.join(CHAT));
        let mut state = State::new();
        Grok.begin(&file, &mut state);
        assert_eq!(state["turn_times"], json!({"0": [100_000, 105_000]}));
        let first = state["updates_read"].as_u64().expect("read");
        // Appended: the torn line completes, a new turn starts; only the new bytes are read.
        let mut text = std::fs::read_to_string(&updates).expect("read");
        text.push_str("10}\n");
        text.push_str(&line(200, Some(1)));
        text.push_str(&line(230, None));
        write(&updates, &text);
        Grok.begin(&file, &mut state);
        assert_eq!(state["turn_times"], json!({"0": [100_000, 110_000], "1": [200_000, 230_000]}));
        assert!(state["updates_read"].as_u64().expect("read") > first);
        // Replaced by something shorter: read again from the start.
        write(&updates, &line(50, Some(0)));
        Grok.begin(&file, &mut state);
        assert_eq!(state["turn_times"], json!({"0": [50_000, 50_000]}));
        // No summary: the session id is the folder's name, the cwd the group's.
        assert_eq!(state["session"], "s1");
        assert_eq!(state["cwd"], "/w/p");
    }

    #[test]
    fn grok_keeps_what_summary_json_said_while_it_cannot_be_read() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("sessions/%2Fw%2Fp/s1");
        let summary = r#"{"info":{"id":"sess-9","cwd":"/w/p"},"generated_title":"Fix the cache","created_at":"2026-10-20T09:00:00Z","updated_at":"2026-10-20T10:00:00Z"}"#;
        write(&dir.join("summary.json"), summary);
        write(&dir.join(CHAT), "");
        let file = log_file(dir.join(CHAT));
        let mut state = State::new();
        Grok.begin(&file, &mut state);
        let learnt = state.clone();
        assert_eq!(learnt["session"], "sess-9");
        assert_eq!(learnt["title"], "Fix the cache");
        assert!(learnt.contains_key("created_ms") && learnt.contains_key("updated_ms"), "{learnt:?}");
        // Half written, as while Grok rewrites it: the next batch keeps what was learnt.
        write(&dir.join("summary.json"), &summary[..40]);
        Grok.begin(&file, &mut state);
        assert_eq!(state, learnt);
        // Gone: nothing to keep it by; the fallbacks.
        std::fs::remove_file(dir.join("summary.json")).expect("remove");
        Grok.begin(&file, &mut state);
        assert_eq!(state["session"], "s1");
        assert!(!state.contains_key("created_ms"), "{state:?}");
        // A fresh state with a summary that cannot be read: the fallbacks too.
        write(&dir.join("summary.json"), &summary[..40]);
        let mut fresh = State::new();
        Grok.begin(&file, &mut fresh);
        assert_eq!(fresh["session"], "s1");
    }

    #[test]
    fn grok_sub_agent_parent_comes_from_the_parents_meta_json() {
        let home = tempfile::tempdir().expect("tempdir");
        let group = home.path().join("sessions/long-group-0123456789abcdef");
        write(&group.join(".cwd"), "/home/dev/a very long path\n");
        write(&group.join("parent-1").join(CHAT), "");
        write(
            &group.join("parent-1/subagents/child-2/meta.json"),
            r#"{"parent_session_id":"parent-1","child_session_id":"child-2","subagent_type":"explore"}"#,
        );
        write(&group.join("child-2").join(CHAT), "{\"type\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"}],\"prompt_index\":0}\n");
        let file = log_file(group.join("child-2").join(CHAT));
        let run = golden::run(&Grok, &file);
        assert_eq!(run["sessions"][0]["parent"], "parent-1");
        assert_eq!(run["sessions"][0]["project"], "a very long path");
        assert_eq!(run["sessions"][0]["first_prompt"], "look");
        // Without summary.json or updates.jsonl the time is the file's modification time.
        assert!(run["events"][0]["time_unix_ms"].as_i64().is_some_and(|t| t > 1_700_000_000_000));
        let parent = golden::run(&Grok, &log_file(group.join("parent-1").join(CHAT)));
        assert_eq!(parent["lines"], 0);
    }

    #[test]
    fn grok_memory_files_cover_rules_memory_and_projects() {
        let projects_root = tempfile::tempdir().expect("tempdir");
        let weather = projects_root.path().join("weather-api");
        write(&weather.join("AGENTS.md"), "- rule\n");
        write(&weather.join(".grok/rules/tests.md"), "- tests\n");
        let other = projects_root.path().join("other");
        std::fs::create_dir_all(&other).expect("mkdir");
        // As the fixture's Grok sessions name them; another agent's project is not Grok's.
        let as_logged = PathBuf::from("/home/dev/work/weather-api");
        let here = Project { cwd: as_logged.clone(), dir: Some(weather.clone()) };
        let files = Grok.memory_files(&homes(), &[here.clone(), Project::here(other)], &mut Vec::new());
        let grok = homes().grok;
        let got: Vec<(String, MemoryScope, Option<String>)> = files
            .iter()
            .map(|m| {
                assert_eq!(m.source, Source::Grok);
                let p = m.path.strip_prefix(&grok).or_else(|_| m.path.strip_prefix(projects_root.path())).expect("known root");
                (p.to_string_lossy().into_owned(), m.scope, m.project.clone())
            })
            .collect();
        let w = Some(as_logged.to_string_lossy().into_owned());
        assert_eq!(
            got,
            vec![
                ("AGENTS.md".to_owned(), MemoryScope::User, None),
                ("rules/typescript.md".to_owned(), MemoryScope::User, None),
                ("memory/MEMORY.md".to_owned(), MemoryScope::User, None),
                ("memory/weather-api-7d2f0c1e/MEMORY.md".to_owned(), MemoryScope::Project, w.clone()),
                ("memory/weather-api-7d2f0c1e/sessions/2026-11-03-encode-city-names-01a1a0af.md".to_owned(), MemoryScope::Project, w.clone()),
                ("weather-api/AGENTS.md".to_owned(), MemoryScope::Project, w.clone()),
                ("weather-api/.grok/rules/tests.md".to_owned(), MemoryScope::Project, w.clone()),
            ]
        );
        // A cwd below its repository's root: every folder's instruction files from the root
        // down, each named by its folder; a root two projects share, once.
        let mono = projects_root.path().join("mono");
        std::fs::create_dir_all(mono.join(".git")).expect("mkdir");
        write(&mono.join("AGENTS.md"), "- root rules\n");
        write(&mono.join("Agents.md"), "- root rules, other case\n");
        write(&mono.join("packages/CLAUDE.md"), "- packages\n");
        write(&mono.join("packages/web/AGENT.md"), "- web\n");
        write(&mono.join("packages/web/CLAUDE.local.md"), "- web, mine\n");
        std::fs::create_dir_all(mono.join("packages/api")).expect("mkdir");
        let (web, api) = (mono.join("packages/web"), mono.join("packages/api"));
        let recorded = |p: &Path| PathBuf::from("/home/dev/mono").join(p.strip_prefix(&mono).expect("below"));
        let both = [Project { cwd: recorded(&web), dir: Some(web.clone()) }, Project { cwd: recorded(&api), dir: Some(api.clone()) }];
        let grok_home = tempfile::tempdir().expect("tempdir");
        let mono_homes = Homes::under(grok_home.path());
        // The web session's folder names the repository's root; its summary its cwd.
        let root_group = mono_homes.grok.join("sessions").join("%2Fhome%2Fdev%2Fmono");
        write(&root_group.join("01a20000-0000-7000-8000-00000000000a/summary.json"), &format!(r#"{{"info":{{"cwd":"{}"}}}}"#, both[0].cwd.display()));
        let api = both[1].cwd.to_string_lossy().replace('/', "%2F");
        std::fs::create_dir_all(mono_homes.grok.join("sessions").join(api).join("01a20000-0000-7000-8000-00000000000b")).expect("mkdir");
        assert!(Grok.memory_files(&homes(), &both, &mut Vec::new()).iter().all(|m| !m.path.starts_with(&mono)), "projects without a Grok session");
        let files = Grok.memory_files(&mono_homes, &both, &mut Vec::new());
        let got: Vec<(String, Option<String>)> = files.iter().filter(|m| m.path.starts_with(&mono)).map(|m| (m.path.strip_prefix(&mono).expect("below").to_string_lossy().into_owned(), m.project.clone())).collect();
        let named = |s: &str| Some(s.to_owned());
        assert_eq!(
            got,
            vec![
                ("packages/web/AGENT.md".to_owned(), named("/home/dev/mono/packages/web")),
                ("packages/web/CLAUDE.local.md".to_owned(), named("/home/dev/mono/packages/web")),
                ("packages/CLAUDE.md".to_owned(), named("/home/dev/mono/packages")),
                ("AGENTS.md".to_owned(), named("/home/dev/mono")),
                ("Agents.md".to_owned(), named("/home/dev/mono")),
            ]
        );
        // Without a matching project the repository memory has no project.
        let unresolved = Grok.memory_files(&homes(), &[], &mut Vec::new());
        assert!(unresolved.iter().filter(|m| m.scope == MemoryScope::Project).all(|m| m.project.is_none()));
        assert_eq!(unresolved.len(), 5);
    }

    #[test]
    fn grok_small_helpers() {
        assert_eq!(percent_decode("%2Fhome%2Fdev%2F%E5%BA%93"), Some("/home/dev/库".into()));
        assert_eq!(percent_decode("100%"), Some("100%".into()));
        assert_eq!(percent_decode("%FF"), None);
        assert_eq!(slug("Ledger_Sync"), "ledger-sync");
        assert_eq!(memory_project("ledger-sync-0badf00d", &[Project::here(PathBuf::from("/x/ledger_sync"))]), Some("/x/ledger_sync".into()));
        assert_eq!(memory_project("ledger-sync-0badf00d", &[Project::here(PathBuf::from("/x/ledger_sync")), Project::here(PathBuf::from("/y/ledger-sync"))]), None);
        assert_eq!(memory_project("ledger-sync", &[Project::here(PathBuf::from("/x/ledger_sync"))]), None);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop::sample::select(vec!["user", "assistant", "system", "tool", "tool_result", "reasoning", "backend_tool_call", "text", "interjection", "x"])
                .prop_map(|s| Value::String(s.to_owned())),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "type", "role", "content", "text", "prompt_index", "synthetic_reason", "tool_calls", "name", "arguments",
                            "function", "summary", "images", "kind", "tool_type", "tool_call_id"
                        ]),
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn grok_parse_line_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512), line_no in 1u64..1_000_000) {
            let file = fixture(WEATHER);
            let mut state = State::new();
            Grok.begin(&file, &mut state);
            let _ = Grok.parse_line(&file, &mut state, &bytes, line_no);
        }

        #[test]
        fn grok_parse_line_never_panics_on_odd_json(v in json_value(), turn in any::<Option<u64>>(), line_no in any::<u64>()) {
            let file = log_file(PathBuf::from("/nonexistent/s/chat_history.jsonl"));
            let mut state = State::new();
            if let Some(t) = turn {
                state.insert("turn".into(), json!(t));
                state.insert("turn_times".into(), json!({t.to_string(): [i64::MIN, i64::MAX]}));
                state.insert("turn_lines".into(), json!({t.to_string(): [0, u64::MAX]}));
            }
            let _ = Grok.parse_line(&file, &mut state, v.to_string().as_bytes(), line_no);
        }

        #[test]
        fn grok_parse_line_never_panics_on_odd_fields(
            (ty, content, prompt_index, synthetic, calls, summary) in (json_value(), json_value(), json_value(), json_value(), json_value(), json_value()),
            (kind, images, name, args) in (json_value(), json_value(), json_value(), json_value()),
            line_no in any::<u64>(),
        ) {
            let line = json!({"type": ty, "content": content, "prompt_index": prompt_index, "synthetic_reason": synthetic,
                              "tool_calls": [calls, {"name": name, "arguments": args}], "summary": summary, "kind": kind, "images": images});
            let file = fixture(INVENTORY);
            let mut state = State::new();
            Grok.begin(&file, &mut state);
            let _ = Grok.parse_line(&file, &mut state, line.to_string().as_bytes(), line_no);
            let _ = Grok.parse_line(&file, &mut state, line.to_string().as_bytes(), line_no.wrapping_add(1));
        }
    }
}

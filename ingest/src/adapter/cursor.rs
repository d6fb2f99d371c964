//! Cursor: the line-based agent transcripts under
//! `~/.cursor/projects/<slug>/agent-transcripts/` (IDE and `cursor-agent` CLI):
//! `<id>/<id>.jsonl`, sub-agents in `<id>/subagents/<child id>.jsonl`, and the legacy plain-text
//! `<id>.txt` of older builds (a flat `<id>.jsonl` there is read too). Cursor's SQLite stores
//! (`state.vscdb`, the CLI's `store.db`) are out of scope: not read by this adapter.
//!
//! **JSONL lines** are `{"role", "message": {"content": [blocks]}}` (or a bare-string
//! `content`) and lifecycle lines `{"type": "turn_ended", "status", "error"?}`. Event id
//! `cursor:<transcript id>:<line>`; a second block on one line gets `:<n>` (its index in
//! `content`). Text blocks → `message`: a user text is unwrapped where Cursor frames it (a
//! `<timestamp>…</timestamp>` beginning a line, closed on it, removed and read for the time; the
//! last `<user_query>` beginning a line before the last `</user_query>` (the IDE puts the query
//! after its context, which may hold the tags itself): its content is the message,
//! and the text outside it, context the IDE put there, a `meta` event of its own with id
//! `<id>:context`); such tags inside the person's sentences are theirs. A user text without
//! `<user_query>` that is wholly made of elements (`<name>…</name>`, lower-case names without
//! attributes, one after another) is taken for injected context → `meta`. Empty texts give no event; `tool_use` (Cursor gives
//! it no id, so it cannot be paired with a result) → role `assistant`, kind `tool_use`, text
//! `Name {input}`;
//! `turn_ended` (as a line or as a content block) → role and kind `system`, text
//! `turn ended: <status>[: <error>]`; `thinking` → `meta`, `tool_result` → `tool_result`,
//! `image` → `meta` (these three are not attested in real files); any other block → `meta` with
//! its JSON. Lines of other `type`s without a role are skipped as nothing to index; a role other
//! than user/assistant/system, missing content, and invalid JSON are malformed. Blank lines
//! are nothing (not malformed).
//!
//! **Times.** Only user turns carry a time: `<timestamp>Tuesday, Oct 20, 2026, 4:12 PM
//! (UTC+2)</timestamp>`, local time with its offset, minute resolution → UTC Unix ms (the
//! weekday is ignored; a time without an offset is not guessed). Every later line (assistant
//! text, tool calls, `turn_ended`) inherits the latest user time, kept in the state so a later
//! run goes on from it; those times are approximate (the event has no field to say so). Lines
//! before any timestamp (sub-agent transcripts and legacy `.txt` files have none at all) get
//! the file's modification time, read in `begin` on every run: an upper bound of when lines
//! read in that run were written.
//!
//! **Sessions.** Session = the file stem (transcript id); a sub-agent file is its own session
//! with `parent` = the enclosing transcript id (its folder name), announced on its first parsed
//! line. First prompt = the first user text's `<user_query>` content (a user text without
//! that wrapper counts whole, which is what a sub-agent's task prompt looks like). No title,
//! cwd, branch, model or version is in the files.
//!
//! **Project.** The folder slug is the absolute path with non-alphanumerics turned to `-`, which
//! is lossy (`ledger_sync` → `ledger-sync`), so it is never turned back into a name by itself.
//! It is resolved to a real path by slugifying candidate paths and comparing (case folded,
//! runs of `-` collapsed, since the rule for repeated separators and non-ASCII is unconfirmed;
//! a slug with non-ASCII letters is compared with paths as written, an ASCII one with paths'
//! non-ASCII letters read as separators; a trailing separator counts, so `/src/项目` written
//! `src---` is not `/src`):
//! (1) in `begin`, directories below the home that holds `.cursor`, walked guided by the slug
//! (bounded; symbolic links not followed; more than one match → left unresolved); (2) otherwise
//! absolute paths and their ancestors: in `begin`, those of the transcript's first 8 MiB,
//! written as a tool's argument first, then in prose (so the lines before the first tool call
//! naming one, the first prompt among them, carry the project; each byte is looked at once,
//! over the runs), then those of tool-call inputs (`working_directory`, `path`, ...) as lines
//! are read. Once resolved, events carry it as `cwd` (and `project` = its last component) and
//! the session gets one change with the project; events parsed before that carry none.
//! Projects outside the home with no such path stay unresolved (`project: null`).
//!
//! **Legacy `.txt`.** Headers `user:` / `assistant:` (alone on a line, after a blank line, a
//! header or at the start), `[Thinking] text` (one line), `[Tool call] Name` with indented `key: value`
//! arguments (a value's further lines are taken verbatim, a key given already among them),
//! `[Tool result] Name` with the output below; inside a person's `<user_query>` nothing is a
//! header or a marker (the frame: `<user_query>` as a user turn's first line, up to a line
//! ending with `</user_query>`). Blank lines at a block's end are no part of it. A block runs until the next
//! header or marker; it is kept in the state while it grows and its event is emitted when the
//! next header or marker arrives, with id `cursor:<transcript id>:txt:<line>` (its own, beside a JSONL transcript of the same id) and `line` = the block's first line (a header's
//! line for a message). The last block is emitted at the last complete line the file had when
//! the run began (`begin` counts them), so a finished transcript loses nothing; if more lines
//! later continue that block, they become a further event of the same kind from their own first
//! line. Tool calls become `Name {"key": "value"}`; results, thinking and messages map as for
//! JSONL. Text beyond the event limit is not kept in the state (the cut is counted).
//!
//! **Native memory**: per project `.cursor/rules/**/*.mdc`, `.cursorrules` and the root
//! `AGENTS.md` (project scope). User rules live in Cursor's settings, not in files.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use origin_engine::record::{EventKind, Role, SessionChange};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{line_ref, Adapter, Line, LogFile, MemoryFile, MemoryScope, Parsed, Project, State};
use crate::limits::{cut_marker, EVENT_TEXT_CHARS_MAX, WALK_DEPTH_MAX};
use crate::source::{Homes, Source};
use crate::text::{str_of, content_text, event, first_prompt, project_of};
use crate::walk;

/// The Cursor adapter.
pub struct Cursor;

/// State keys.
const TIME: &str = "time_unix_ms";
const MTIME: &str = "mtime_unix_ms";
const CWD: &str = "cwd";
const PROJECT_SENT: &str = "project_sent";
const PARENT_SENT: &str = "parent_sent";
const FIRST_PROMPT: &str = "first_prompt";
const LINES_AT_BEGIN: &str = "lines_at_begin";
const BLOCK: &str = "block";
const ROLE: &str = "role";
/// Legacy `.txt`: whether the line before was blank or a header (a header may begin a block
/// only there; absent: the file's start).
const AFTER_BREAK: &str = "after_break";
/// Legacy `.txt`: inside a `<user_query>` (nothing there is a header or a marker).
const IN_QUERY: &str = "in_query";

/// Directory entries the slug resolver may look at for one file.
const RESOLVE_ENTRIES_MAX: usize = 20_000;
/// Bytes of a transcript looked through for the project's path before its lines are read,
/// when the folder slug names no directory below the home.
const PRESCAN_BYTES_MAX: u64 = 8 * 1024 * 1024;
/// State key: the bytes of the transcript looked through for the project's path so far.
const PRESCANNED_TO: &str = "prescanned_to";

const TRANSCRIPTS: &str = "agent-transcripts";

/// Where a transcript sits, from its path alone.
struct Place {
    /// The transcript id: the file stem.
    session: String,
    /// The enclosing transcript id, for a sub-agent file.
    parent: Option<String>,
    /// The project folder's slug.
    slug: Option<String>,
    /// The home directory holding `.cursor`.
    home: Option<PathBuf>,
    /// The legacy plain-text format.
    legacy: bool,
}

fn place(path: &Path) -> Place {
    let name = |p: Option<&Path>| p.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    let session = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = path.parent();
    let parent = if dir.and_then(Path::file_name) == Some(OsStr::new("subagents")) { name(dir.and_then(Path::parent)) } else { None };
    let transcripts = path.ancestors().skip(1).find(|a| a.file_name() == Some(OsStr::new(TRANSCRIPTS)));
    let slug_dir = transcripts.and_then(Path::parent);
    let home = slug_dir.and_then(Path::parent).and_then(Path::parent).and_then(Path::parent).map(Path::to_path_buf);
    Place { session, parent, slug: name(slug_dir), home, legacy: path.extension() == Some(OsStr::new("txt")) }
}

/// A slug in comparable form: lower case, every other character a separator, runs of
/// separators collapsed, none at the start; one at the end when the slug ends with one (the
/// folder's name ends with characters that are not letters or digits: `/src/项目` written
/// `src---` is not `/src`). A slug with letters or digits beyond ASCII keeps them (a folder's
/// name kept as written); an ASCII slug is compared with paths' ASCII forms (a folder's
/// other letters turned to separators).
fn norm_slug(s: &str, unicode: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || (unicode && c.is_alphanumeric()) {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out
}

/// Whether a path's comparable form `form` is the slug's `slug`: the same, or `slug` with
/// the separator a slug without one at its end may have left out.
fn slug_is(form: &str, slug: &str) -> bool {
    form == slug || (!slug.ends_with('-') && form.strip_suffix('-') == Some(slug))
}

/// A folder slug's comparable form, and whether paths are compared by their Unicode form.
fn slug_form(slug: &str) -> (String, bool) {
    let unicode = !slug.is_ascii();
    (norm_slug(slug, unicode), unicode)
}

/// The one directory at or below `home` whose slug is `slug`, walking only into directories
/// whose slug starts it. None when there is no match or more than one.
fn resolve_in_home(home: &Path, slug: &str) -> Option<PathBuf> {
    let (want, unicode) = slug_form(slug);
    let form = |p: &Path| norm_slug(&p.to_string_lossy(), unicode);
    // A folder whose form begins `want` where a separator follows (or ends one).
    let leads = |f: &str| !f.is_empty() && want.strip_prefix(f).is_some_and(|r| f.ends_with('-') || r.starts_with('-'));
    if want.is_empty() {
        return None;
    }
    // A slug without a separator at its end names a folder whose name ends with one too (the
    // rule for a trailing `-` is unconfirmed: one left out is not taken to mean none there).
    let same = |f: &str| slug_is(f, &want);
    if same(&form(home)) {
        return Some(home.to_path_buf());
    }
    if !leads(&form(home)) && !form(home).is_empty() {
        return None;
    }
    let mut found = Vec::new();
    let mut budget = RESOLVE_ENTRIES_MAX;
    let mut stack = vec![(home.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if budget == 0 {
                return None;
            }
            budget -= 1;
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let f = form(&path);
            if same(&f) {
                found.push((f == want, path));
            } else if leads(&f) && f.len() > form(&dir).len() && depth + 1 < WALK_DEPTH_MAX {
                stack.push((path, depth + 1));
            }
        }
    }
    // The folder whose form is the slug's exactly before one whose trailing separator the
    // slug may have left out (`app` beside `app_`).
    let exact: Vec<&PathBuf> = found.iter().filter(|(e, _)| *e).map(|(_, p)| p).collect();
    match (exact.as_slice(), found.as_slice()) {
        ([one], _) => Some((*one).clone()),
        ([], [(_, one)]) => Some(one.clone()),
        _ => None,
    }
}

/// Learns the project path from absolute paths the agent used, if not known yet: the first
/// path (or ancestor) whose slug is the folder's.
fn learn_cwd<'a>(state: &mut State, place: &Place, paths: impl IntoIterator<Item = &'a str>) {
    if state.contains_key(CWD) {
        return;
    }
    let Some((slug, unicode)) = place.slug.as_deref().map(slug_form).filter(|(s, _)| !s.is_empty()) else { return };
    for p in paths {
        if !p.starts_with('/') {
            continue;
        }
        if let Some(hit) = Path::new(p).ancestors().find(|a| a != &Path::new("/") && slug_is(&norm_slug(a.to_string_lossy().trim_end_matches('/'), unicode), &slug)) {
            // As a folder is written: without a trailing `/`.
            let hit: PathBuf = hit.components().collect();
            state.insert(CWD.into(), Value::String(hit.to_string_lossy().into_owned()));
            return;
        }
    }
}

fn cwd_of(state: &State) -> Option<String> {
    state.get(CWD).and_then(Value::as_str).map(str::to_owned)
}

fn flag(state: &State, key: &str) -> bool {
    state.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The time for an event now: the latest user time, else the file's modification time.
fn time_of(state: &State) -> i64 {
    state.get(TIME).or_else(|| state.get(MTIME)).and_then(Value::as_i64).unwrap_or(0)
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

fn month_of(token: &str) -> Option<i8> {
    let t = token.trim_end_matches('.').to_ascii_lowercase();
    if t.len() < 3 || !t.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let full = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
    (0..12).find(|&i| t == MONTHS[i] || t == full[i] || (i == 8 && t == "sept")).map(|i| i as i8 + 1)
}

/// Seconds east of UTC in `UTC+2`, `UTC-07:00`, `GMT+5:30`, `UTC`.
fn offset_seconds(s: &str) -> Option<i32> {
    let s = s.trim();
    let rest = s.get(..3).filter(|p| p.eq_ignore_ascii_case("utc") || p.eq_ignore_ascii_case("gmt")).map(|_| s[3..].trim())?;
    if rest.is_empty() {
        return Some(0);
    }
    let (sign, digits) = if let Some(d) = rest.strip_prefix('+') {
        (1, d)
    } else if let Some(d) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('\u{2212}')) {
        (-1, d)
    } else {
        return None;
    };
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() == 4 => (digits.get(..2)?, digits.get(2..)?),
        None => (digits, "0"),
    };
    let num = |t: &str| -> Option<i32> { if t.is_empty() || t.len() > 2 || !t.bytes().all(|b| b.is_ascii_digit()) { None } else { t.parse().ok() } };
    let (h, m) = (num(h)?, num(m)?);
    if h > 18 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// Unix milliseconds of a Cursor `<timestamp>` text: `Tuesday, Oct 20, 2026, 4:12 PM (UTC+2)`
/// (local time and its offset). The weekday is ignored; no offset → None.
pub fn parse_cursor_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (main, offset) = match s.find('(') {
        Some(i) => (&s[..i], s[i + 1..].trim_end().trim_end_matches(')')),
        None => {
            let i = s.find("UTC").or_else(|| s.find("GMT"))?;
            (&s[..i], &s[i..])
        }
    };
    let offset = offset_seconds(offset)?;
    let (mut month, mut year, mut day, mut clock, mut pm) = (None, None, None, None, None);
    for token in main.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()) {
        let lower = token.to_ascii_lowercase();
        if let Some(m) = month_of(token) {
            month = Some(m);
        } else if token.contains(':') {
            clock = Some(token);
        } else if ["pm", "p.m."].contains(&lower.as_str()) {
            pm = Some(true);
        } else if ["am", "a.m."].contains(&lower.as_str()) {
            pm = Some(false);
        } else if token.bytes().all(|b| b.is_ascii_digit()) && token.len() <= 4 {
            let n: i16 = token.parse().ok()?;
            if token.len() == 4 {
                year = Some(n);
            } else {
                day = Some(i8::try_from(n).ok()?);
            }
        }
    }
    let mut parts = clock?.split(':');
    let mut field = |max: i8| -> Option<i8> {
        let t = parts.next()?;
        if t.is_empty() || t.len() > 2 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse::<i8>().ok().filter(|v| *v <= max)
    };
    let (mut hour, minute) = (field(23)?, field(59)?);
    let second = match parts.next() {
        Some(t) if t.len() <= 2 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse::<i8>().ok().filter(|v| *v <= 59)?,
        Some(_) => return None,
        None => 0,
    };
    if let Some(pm) = pm {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour = hour % 12 + if pm { 12 } else { 0 };
    }
    let dt = jiff::civil::DateTime::new(year?, month?, day?, hour, minute, second, 0).ok()?;
    let ts = jiff::tz::Offset::from_seconds(offset).ok()?.to_timestamp(dt).ok()?;
    Some(ts.as_millisecond())
}

/// A user text block, unwrapped.
struct UserText {
    /// The `<timestamp>` time, if the text has a readable one.
    time: Option<i64>,
    /// What the person wrote: the `<user_query>` content if the text has that wrapper, else
    /// the text without its timestamp element.
    text: String,
    /// Whether the text had the `<user_query>` wrapper.
    query: bool,
    /// Beside a `<user_query>`: the text outside it (context the IDE put there, attached files
    /// and the like), if any.
    context: Option<String>,
}

impl UserText {
    /// The text with the context before it, as one (a legacy block is one event).
    fn combined(&self) -> String {
        match &self.context {
            Some(c) if !self.text.is_empty() => format!("{c}\n{}", self.text),
            Some(c) => c.clone(),
            None => self.text.clone(),
        }
    }
}

/// Whether byte `at` of `text` begins a line (at its start, or after a newline, past spaces).
fn line_start(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end_matches([' ', '\t']);
    before.is_empty() || before.ends_with('\n')
}

/// Where `<tag>` begins a line of `text` (at its start, or after a newline, past spaces).
fn opens_line(text: &str, tag: &str) -> Option<usize> {
    text.match_indices(tag).map(|(at, _)| at).find(|&at| line_start(text, at))
}

/// Cursor's framing of a human turn, `<timestamp>…</timestamp>` on a line of its own, then
/// `<user_query>…</user_query>`: each recognised only where it begins a line (a `<timestamp>`
/// inside a sentence is the person's), the timestamp closed on its line, the query closed by
/// its last `</user_query>` (or open to the end).
fn user_text(raw: &str) -> UserText {
    let mut text = raw.to_owned();
    let mut time = None;
    if let Some(start) = opens_line(&text, "<timestamp>") {
        let inner = start + "<timestamp>".len();
        let line_end = text[inner..].find('\n').map_or(text.len(), |i| inner + i);
        if let Some(close) = text[inner..line_end].find("</timestamp>") {
            time = parse_cursor_time(&text[inner..inner + close]);
            text = format!("{}{}", &text[..start], &text[inner + close + "</timestamp>".len()..]);
        }
    }
    // The IDE puts the person's query last, after its context (which may itself hold the tags:
    // an attached prompt template): the last `</user_query>`, and the last `<user_query>`
    // beginning a line before it.
    let close = text.rfind("</user_query>");
    let before = &text[..close.unwrap_or(text.len())];
    let start = before.match_indices("<user_query>").map(|(at, _)| at).filter(|&at| line_start(before, at)).last();
    if let Some(start) = start {
        let inner = start + "<user_query>".len();
        let (inner_end, end) = match close.filter(|&c| c >= inner) {
            Some(c) => (c, c + "</user_query>".len()),
            None => (text.len(), text.len()),
        };
        let query = text[inner..inner_end].trim().to_owned();
        let outside = format!("{}{}", text[..start].trim(), text[end..].trim_end());
        let context = Some(outside.trim().to_owned()).filter(|c| !c.is_empty());
        return UserText { time, text: query, query: true, context };
    }
    UserText { time, text: text.trim().to_owned(), query: false, context: None }
}

/// Whether `text` is wholly made of elements `<name>…</name>` (names of ASCII lower-case
/// letters, digits, `_` or `-`, without attributes), one after another with only white space
/// between: context an IDE or a tool put in a user turn.
fn only_elements(text: &str) -> bool {
    let mut rest = text.trim();
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let Some(open) = rest.strip_prefix('<') else { return false };
        let Some(close) = open.find('>') else { return false };
        let name = &open[..close];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-') {
            return false;
        }
        let end_tag = format!("</{name}>");
        let Some(end) = open[close + 1..].find(&end_tag) else { return false };
        rest = open[close + 1 + end + end_tag.len()..].trim_start();
    }
    true
}

fn turn_ended_text(v: &Value) -> String {
    let mut text = "turn ended".to_owned();
    if let Some(status) = str_of(v, "status") {
        text.push_str(": ");
        text.push_str(status);
    }
    match v.get("error") {
        None | Some(Value::Null) => {}
        Some(Value::String(e)) if e.is_empty() => {}
        Some(Value::String(e)) => {
            text.push_str(": ");
            text.push_str(e);
        }
        Some(other) => {
            text.push_str(": ");
            text.push_str(&other.to_string());
        }
    }
    text
}

/// What a user text is, and whether it can be the first prompt.
fn user_kind(u: &UserText) -> (EventKind, Option<String>) {
    if !u.query && only_elements(&u.text) {
        return (EventKind::Meta, None);
    }
    (EventKind::Message, Some(u.text.clone()).filter(|t| !t.is_empty()))
}

/// The session change this line brings, if any: the parent on the first line of a sub-agent
/// file, the project when first resolved, the first prompt once.
fn session_change(state: &mut State, place: &Place, prompt: Option<String>) -> Option<SessionChange> {
    let project = cwd_of(state).as_deref().and_then(project_of);
    let mut changed = false;
    if place.parent.is_some() && !flag(state, PARENT_SENT) {
        state.insert(PARENT_SENT.into(), Value::Bool(true));
        changed = true;
    }
    if project.is_some() && !flag(state, PROJECT_SENT) {
        state.insert(PROJECT_SENT.into(), Value::Bool(true));
        changed = true;
    }
    let prompt = prompt.filter(|_| !state.contains_key(FIRST_PROMPT)).map(|p| first_prompt(&p));
    if prompt.is_some() {
        state.insert(FIRST_PROMPT.into(), Value::Bool(true));
        changed = true;
    }
    changed.then(|| SessionChange { session: place.session.clone(), project, title: None, first_prompt: prompt, parent: place.parent.clone() })
}

/// Looks for the project's path in the transcript before its new lines are read (rule (2) of
/// the module's "Project", for a folder not resolved below the home): so that the lines before
/// the first tool call naming it (the first prompt among them) carry the project too. The
/// first [`PRESCAN_BYTES_MAX`] bytes of the file are looked at once each, over the runs (the
/// state keeps where the look stopped, at a line's end): paths written as a tool's argument
/// first, then paths in prose.
fn prescan(path: &Path, place: &Place, state: &mut State) {
    let from = state.get(PRESCANNED_TO).and_then(Value::as_u64).unwrap_or(0);
    if from >= PRESCAN_BYTES_MAX {
        return;
    }
    // A transcript that cannot be read is said when its lines are read.
    let Ok(bytes) = read_range(path, from, PRESCAN_BYTES_MAX - from) else { return };
    // Whole lines only, unless the look ends here (a line cut there is looked at as it is).
    let end = if from + bytes.len() as u64 >= PRESCAN_BYTES_MAX { bytes.len() } else { bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) };
    let (arguments, prose) = absolute_paths(&bytes[..end]);
    learn_cwd(state, place, arguments);
    learn_cwd(state, place, prose);
    if state.contains_key(CWD) {
        state.remove(PRESCANNED_TO);
    } else if end > 0 {
        state.insert(PRESCANNED_TO.into(), Value::from(from + end as u64));
    }
}

/// Up to `n` bytes of the file at `path` from byte `from`.
fn read_range(path: &Path, from: u64, n: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::bytes::open_regular(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut out = Vec::new();
    f.take(n).read_to_end(&mut out)?;
    Ok(out)
}

/// The absolute paths written in `text`: a `/` after `"` or a space, up to the next quote,
/// white space, backslash, bracket, comma or semicolon. Those written as a tool's argument
/// come first: a JSON string that is the path whole (`"path":"/home/dev/app/x.rs"`), or a
/// legacy transcript's `key: /path` line; the rest (paths in prose) second, less the
/// punctuation a sentence puts after them (`lives in /home/dev/app.`). Candidates only:
/// [`learn_cwd`] keeps the first whose slug is the transcript folder's.
fn absolute_paths(text: &[u8]) -> (Vec<&str>, Vec<&str>) {
    let ends = |b: u8| matches!(b, b'"' | b'\'' | b'`' | b'\\' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' | b',' | b';') || b.is_ascii_whitespace();
    let (mut arguments, mut prose) = (Vec::new(), Vec::new());
    let mut i = 1;
    while i < text.len() {
        if text[i] == b'/' && matches!(text[i - 1], b'"' | b' ') {
            let len = text[i..].iter().position(|&b| ends(b)).unwrap_or(text.len() - i);
            let after = text.get(i + len).copied();
            let whole = match text[i - 1] {
                b'"' => after == Some(b'"'),
                _ => i >= 2 && text[i - 2] == b':' && matches!(after, None | Some(b'\n' | b'\r')),
            };
            if let Ok(p) = std::str::from_utf8(&text[i..i + len]) {
                if whole {
                    arguments.push(p);
                } else {
                    prose.push(p.trim_end_matches(['.', ':', '!', '?', '*']));
                }
            }
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    (arguments, prose)
}

/// Absolute-path-looking string values of a tool input.
fn input_paths(input: &Value) -> Vec<&str> {
    match input {
        Value::Object(m) => m.values().filter_map(Value::as_str).filter(|s| s.starts_with('/')).collect(),
        _ => Vec::new(),
    }
}

/// A legacy `.txt` block being read.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Block {
    /// `text`, `tool_call` or `tool_result`.
    kind: String,
    /// `user`, `assistant` or `system` (text before any header).
    role: String,
    /// Tool name.
    #[serde(default)]
    name: String,
    /// The block's first line; None once emitted (more lines start a continuation).
    line: Option<u64>,
    /// Its lines so far, joined with `\n`, up to the event text limit.
    #[serde(default)]
    text: String,
    /// Characters in `text`.
    #[serde(default)]
    chars: u64,
    /// Characters left out of `text`.
    #[serde(default)]
    dropped: u64,
    /// Whether a line was appended since `line` was set.
    #[serde(default)]
    started: bool,
    /// Blank lines read after its last line, appended only if a line follows them (the blank
    /// line before the next header is no part of the block, nor counted as cut).
    #[serde(default, skip_serializing_if = "is_zero")]
    blanks: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Block {
    fn new(kind: &str, role: &str, name: &str, line: u64) -> Block {
        Block { kind: kind.into(), role: role.into(), name: name.into(), line: Some(line), ..Block::default() }
    }

    fn push(&mut self, line: &str) {
        let sep = u64::from(self.started);
        self.started = true;
        let n = line.chars().count() as u64;
        let room = (EVENT_TEXT_CHARS_MAX as u64).saturating_sub(self.chars);
        if self.dropped == 0 && sep + n <= room {
            if sep == 1 {
                self.text.push('\n');
            }
            self.text.push_str(line);
            self.chars += sep + n;
            return;
        }
        // Keep what fits, count the rest.
        let mut kept = 0u64;
        if self.dropped == 0 && room > 0 {
            if sep == 1 {
                self.text.push('\n');
                kept += 1;
            }
            let take = (room - kept) as usize;
            let end = line.char_indices().nth(take).map_or(line.len(), |(i, _)| i);
            self.text.push_str(&line[..end]);
            kept += line[..end].chars().count() as u64;
        }
        self.chars += kept;
        self.dropped += sep + n - kept;
    }
}

/// `key: value` arguments of a legacy tool call (two-space indent; further lines of a value
/// verbatim). None when there are lines before any key.
fn legacy_args(text: &str) -> Option<Map<String, Value>> {
    let mut args = Map::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let key_line = line.strip_prefix("  ").filter(|r| !r.starts_with(char::is_whitespace)).and_then(|r| {
            let (k, v) = r.split_once(':')?;
            let ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            ok.then(|| (k.to_owned(), v.strip_prefix(' ').unwrap_or(v).to_owned()))
        });
        // A key given already is a line of the value being read (a file's text holding
        // `  path: …`), not a second value for it.
        let key_line = key_line.filter(|(k, _)| !args.contains_key(k) && current.as_ref().is_none_or(|(c, _)| c != k));
        match (key_line, &mut current) {
            (Some(kv), _) => {
                if let Some((k, v)) = current.replace(kv) {
                    args.insert(k, Value::String(v));
                }
            }
            (None, Some((_, v))) => {
                v.push('\n');
                v.push_str(line);
            }
            (None, None) if line.trim().is_empty() => {}
            (None, None) => return None,
        }
    }
    if let Some((k, v)) = current {
        args.insert(k, Value::String(v));
    }
    Some(args)
}

fn take_block(state: &mut State) -> Option<Block> {
    state.remove(BLOCK).and_then(|v| serde_json::from_value(v).ok())
}

fn put_block(state: &mut State, block: &Block) {
    if let Ok(v) = serde_json::to_value(block) {
        state.insert(BLOCK.into(), v);
    }
}

impl Cursor {
    fn parse_json(&self, place: &Place, state: &mut State, line: &[u8], line_no: u64) -> Line {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Line::Parsed(Parsed::default());
        }
        let v: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Line::Malformed("not a JSON object".into()),
            Err(e) => return Line::Malformed(format!("invalid JSON: {e}")),
        };
        let message = v.get("message");
        let role_name = str_of(&v, "role").or_else(|| message.and_then(|m| str_of(m, "role")));
        let mut out = Parsed::default();
        let Some(role_name) = role_name else {
            return match str_of(&v, "type") {
                Some("turn_ended") => {
                    let cwd = cwd_of(state);
                    let id = format!("cursor:{}:{}", place.session, line_ref(state, line_no));
                    out.events.push(event(id, time_of(state), &place.session, cwd.as_deref(), Role::System, EventKind::System, turn_ended_text(&v), line_no));
                    out.sessions.extend(session_change(state, place, None));
                    Line::Parsed(out)
                }
                // Other lifecycle or state records: nothing to index, nothing wrong.
                Some(_) => {
                    out.sessions.extend(session_change(state, place, None));
                    Line::Parsed(out)
                }
                None => Line::Malformed("no role or type".into()),
            };
        };
        let role = match role_name {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => Role::System,
            other => return Line::Malformed(format!("unknown role {other:?}")),
        };
        let bare;
        let blocks: &[Value] = match message.and_then(|m| m.get("content")) {
            Some(Value::Array(b)) => b,
            Some(Value::String(s)) => {
                bare = [json!({ "type": "text", "text": s })];
                &bare
            }
            _ => return Line::Malformed(format!("{role_name} line without message.content")),
        };
        // What the line teaches first, so its own events carry it: the user's time, the
        // project path from tool inputs.
        let text_of = |b: &Value| -> Option<String> {
            match b {
                Value::String(s) => Some(s.clone()),
                _ if matches!(str_of(b, "type"), Some("text") | None) => str_of(b, "text").map(str::to_owned),
                _ => None,
            }
        };
        let users: Vec<Option<UserText>> = blocks.iter().map(|b| if role == Role::User { text_of(b).map(|t| user_text(&t)) } else { None }).collect();
        for u in users.iter().flatten() {
            if let Some(t) = u.time {
                state.insert(TIME.into(), Value::from(t));
            }
        }
        for b in blocks.iter().filter(|b| str_of(b, "type") == Some("tool_use")) {
            learn_cwd(state, place, b.get("input").map(input_paths).unwrap_or_default());
        }
        let time = time_of(state);
        let cwd = cwd_of(state);
        let mut prompt: Option<String> = None;
        let line = line_ref(state, line_no);
        for (n, (b, user)) in blocks.iter().zip(users).enumerate() {
            let id = if n == 0 { format!("cursor:{}:{line}", place.session) } else { format!("cursor:{}:{line}:{n}", place.session) };
            let (r, kind, text) = if let Some(u) = user {
                let (kind, p) = user_kind(&u);
                if role == Role::User && prompt.is_none() {
                    prompt = p;
                }
                // What the IDE put beside the person's words: an event of its own, meta.
                if let Some(c) = u.context {
                    out.events.push(event(format!("{id}:context"), time, &place.session, cwd.as_deref(), role, EventKind::Meta, c, line_no));
                }
                (role, kind, u.text)
            } else {
                match str_of(b, "type") {
                    Some("text") | None => {
                        let k = if role == Role::System { EventKind::Meta } else { EventKind::Message };
                        (role, k, text_of(b).unwrap_or_default())
                    }
                    Some("tool_use") => {
                        let name = str_of(b, "name").unwrap_or("tool");
                        let text = match b.get("input") {
                            Some(input) => format!("{name} {input}"),
                            None => name.to_owned(),
                        };
                        (Role::Assistant, EventKind::ToolUse, text)
                    }
                    Some("thinking") | Some("reasoning") => {
                        let t = str_of(b, "thinking").or_else(|| str_of(b, "text")).unwrap_or_default();
                        (Role::Assistant, EventKind::Meta, t.to_owned())
                    }
                    Some("tool_result") => (Role::User, EventKind::ToolResult, content_text(b.get("content").unwrap_or(&Value::Null))),
                    Some("turn_ended") => (Role::System, EventKind::System, turn_ended_text(b)),
                    Some("image") => (role, EventKind::Meta, "[image]".to_owned()),
                    Some(_) => (role, EventKind::Meta, b.to_string()),
                }
            };
            if matches!(kind, EventKind::Message | EventKind::Meta) && text.trim().is_empty() {
                continue;
            }
            out.events.push(event(id, time, &place.session, cwd.as_deref(), r, kind, text, line_no));
        }
        out.sessions.extend(session_change(state, place, prompt));
        Line::Parsed(out)
    }

    /// Emits a legacy block's event (if it has anything to say).
    fn emit_block(&self, place: &Place, state: &mut State, block: &Block, out: &mut Parsed, prompt: &mut Option<String>) {
        let Some(line) = block.line else { return };
        let (role, kind, text) = match (block.kind.as_str(), block.role.as_str()) {
            ("tool_call", _) => {
                let raw = block.text.trim_end();
                let text = match legacy_args(raw) {
                    Some(args) => {
                        learn_cwd(state, place, args.values().filter_map(Value::as_str).filter(|s| s.starts_with('/')).collect::<Vec<_>>());
                        if args.is_empty() {
                            block.name.clone()
                        } else {
                            format!("{} {}", block.name, Value::Object(args))
                        }
                    }
                    None => format!("{}\n{raw}", block.name),
                };
                (Role::Assistant, EventKind::ToolUse, text)
            }
            ("tool_result", _) => (Role::User, EventKind::ToolResult, block.text.trim_start_matches(['\n', '\r']).trim_end().to_owned()),
            (_, "user") => {
                let u = user_text(&block.text);
                if let Some(t) = u.time {
                    state.insert(TIME.into(), Value::from(t));
                }
                let (kind, p) = user_kind(&u);
                if prompt.is_none() {
                    *prompt = p;
                }
                (Role::User, kind, u.combined())
            }
            (_, "assistant") => (Role::Assistant, EventKind::Message, block.text.trim().to_owned()),
            _ => (Role::System, EventKind::Meta, block.text.trim().to_owned()),
        };
        if matches!(kind, EventKind::Message | EventKind::Meta) && text.is_empty() {
            return;
        }
        let cwd = cwd_of(state);
        let mut e = event(format!("cursor:{}:txt:{}", place.session, line_ref(state, line)), time_of(state), &place.session, cwd.as_deref(), role, kind, text, line);
        if block.dropped > 0 {
            e.text.push_str(&cut_marker(block.dropped));
            e.text_cut_chars += block.dropped;
        }
        out.events.push(e);
    }

    fn parse_legacy(&self, place: &Place, state: &mut State, line: &[u8], line_no: u64) -> Line {
        let decoded = String::from_utf8_lossy(line);
        let text = decoded.strip_suffix('\r').unwrap_or(&decoded);
        let mut out = Parsed::default();
        let mut prompt = None;
        // A header begins a block only after a blank line (or another header, or at the
        // start), and nothing inside a person's `<user_query>` is a header or a marker: a
        // tool's output or a pasted chat with a line `user:` is not a turn of its own.
        let after_break = state.get(AFTER_BREAK).and_then(Value::as_bool).unwrap_or(true);
        let in_query = flag(state, IN_QUERY);
        let header = match text.trim_end() {
            "user:" if after_break && !in_query => Some("user"),
            "assistant:" if after_break && !in_query => Some("assistant"),
            _ => None,
        };
        let marker = ["[Thinking]", "[Tool call]", "[Tool result]"].into_iter().find(|m| header.is_none() && !in_query && text.starts_with(m));
        state.insert(AFTER_BREAK.into(), Value::Bool(header.is_some() || text.trim().is_empty()));
        // Cursor's frame: `<user_query>` as a user turn's first line, `</user_query>` ending a
        // line (a user's own text that names the tags frames nothing).
        let user_block = header == Some("user") || (header.is_none() && marker.is_none() && state.get(ROLE).and_then(Value::as_str) == Some("user"));
        let fresh_user_block = header.is_none()
            && marker.is_none()
            && state.get(BLOCK).is_some_and(|b| {
                b.get("kind").and_then(Value::as_str) == Some("text")
                    && b.get("role").and_then(Value::as_str) == Some("user")
                    && b.get("line").is_some_and(|l| !l.is_null())
                    && !b.get("started").and_then(Value::as_bool).unwrap_or(false)
            });
        let opens = fresh_user_block && text.trim_start().starts_with("<user_query>");
        let closes = text.trim_end().ends_with("</user_query>");
        if opens && !closes {
            state.insert(IN_QUERY.into(), Value::Bool(true));
        } else if closes || !user_block {
            state.remove(IN_QUERY);
        }
        let mut block = take_block(state);
        if header.is_some() || marker.is_some() {
            if let Some(b) = block.take() {
                self.emit_block(place, state, &b, &mut out, &mut prompt);
            }
        }
        if let Some(role) = header {
            state.insert(ROLE.into(), Value::String(role.into()));
            block = Some(Block::new("text", role, "", line_no));
        } else if let Some(m) = marker {
            let rest = text[m.len()..].trim();
            match m {
                "[Thinking]" => {
                    if !rest.is_empty() {
                        let cwd = cwd_of(state);
                        let id = format!("cursor:{}:txt:{}", place.session, line_ref(state, line_no));
                        out.events.push(event(id, time_of(state), &place.session, cwd.as_deref(), Role::Assistant, EventKind::Meta, rest.to_owned(), line_no));
                    }
                }
                "[Tool call]" => block = Some(Block::new("tool_call", "assistant", rest, line_no)),
                _ => block = Some(Block::new("tool_result", "user", rest, line_no)),
            }
        } else {
            let blank = text.trim().is_empty();
            match &mut block {
                Some(b) if b.line.is_some() && blank => b.blanks = b.blanks.saturating_add(1),
                Some(b) if b.line.is_some() => {
                    for _ in 0..std::mem::take(&mut b.blanks) {
                        b.push("");
                    }
                    b.push(text);
                }
                Some(b) if !blank => {
                    b.line = Some(line_no);
                    b.push(text);
                }
                Some(_) => {}
                None if !blank => {
                    let role = state.get(ROLE).and_then(Value::as_str).unwrap_or("system").to_owned();
                    let mut b = Block::new("text", &role, "", line_no);
                    b.push(text);
                    block = Some(b);
                }
                None => {}
            }
        }
        // At the last line the file had when this run began, the open block is complete as
        // far as anyone can know: emit it, and keep its kind for lines that may continue it.
        let last = state.get(LINES_AT_BEGIN).and_then(Value::as_u64).unwrap_or(u64::MAX);
        if let Some(b) = &mut block {
            if line_no >= last && b.line.is_some() {
                self.emit_block(place, state, b, &mut out, &mut prompt);
                *b = Block { kind: std::mem::take(&mut b.kind), role: std::mem::take(&mut b.role), name: std::mem::take(&mut b.name), ..Block::default() };
            }
        }
        if let Some(b) = &block {
            put_block(state, b);
        }
        out.sessions.extend(session_change(state, place, prompt));
        Line::Parsed(out)
    }
}

/// Complete lines (`\n`-terminated) in a file.
fn count_lines(path: &Path) -> Option<u64> {
    let mut f = crate::bytes::open_regular(path).ok()?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(n),
            Ok(k) => n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Whether `path` (below `root` = `<cursor>/projects`) is a transcript this adapter reads.
fn is_transcript(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else { return false };
    let parts: Vec<&OsStr> = rel.components().map(|c| c.as_os_str()).collect();
    let ext = path.extension();
    let jsonl = ext == Some(OsStr::new("jsonl"));
    let transcripts = OsStr::new(TRANSCRIPTS);
    match parts.as_slice() {
        [_, t, _] => *t == transcripts && (jsonl || ext == Some(OsStr::new("txt"))),
        [_, t, id, _] => *t == transcripts && jsonl && path.file_stem() == Some(*id),
        [_, t, _, sub, _] => *t == transcripts && jsonl && *sub == OsStr::new("subagents"),
        _ => false,
    }
}

impl Adapter for Cursor {
    fn source(&self) -> Source {
        Source::Cursor
    }

    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        let root = homes.cursor.join("projects");
        let mut problems = Vec::new();
        let files = walk::files(&root, &|p| is_transcript(&root, p), &mut problems)
            .into_iter()
            .map(|path| LogFile::lines(Source::Cursor, &root, path))
            .collect();
        (files, problems)
    }

    fn begin(&self, file: &LogFile, state: &mut State) {
        let place = place(&file.path);
        let mtime = std::fs::metadata(&file.path).and_then(|m| m.modified()).ok().and_then(|t| jiff::Timestamp::try_from(t).ok());
        if let Some(t) = mtime {
            state.insert(MTIME.into(), Value::from(t.as_millisecond()));
        }
        if place.legacy {
            match count_lines(&file.path) {
                Some(n) => state.insert(LINES_AT_BEGIN.into(), Value::from(n)),
                None => state.remove(LINES_AT_BEGIN),
            };
        }
        if !state.contains_key(CWD) {
            if let (Some(home), Some(slug)) = (&place.home, &place.slug) {
                if let Some(dir) = resolve_in_home(home, slug) {
                    state.insert(CWD.into(), Value::String(dir.to_string_lossy().into_owned()));
                }
            }
        }
        if !state.contains_key(CWD) {
            prescan(&file.path, &place, state);
        }
    }

    fn lines_stand_alone(&self, file: &LogFile) -> bool {
        !place(&file.path).legacy
    }

    fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
        let place = place(&file.path);
        if place.legacy {
            self.parse_legacy(&place, state, line, line_no)
        } else {
            self.parse_json(&place, state, line, line_no)
        }
    }

    fn memory_files(&self, _homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
        let mut out = Vec::new();
        let mdc = |p: &Path| p.extension().is_some_and(|e| e == "mdc");
        for p in projects {
            let Some(dir) = &p.dir else { continue };
            let project = p.name();
            let mk = |path: PathBuf| MemoryFile { source: Source::Cursor, path, scope: MemoryScope::Project, project: project.clone() };
            out.extend(walk::files(&dir.join(".cursor/rules"), &mdc, problems).into_iter().map(mk));
            out.push(mk(dir.join(".cursorrules")));
            out.push(mk(dir.join("AGENTS.md")));
        }
        super::keep_regular(&mut out, problems);
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;
    use crate::adapter::FileFormat;
    use crate::adapter::golden;

    const DEMO: &str = "7c1e4b2a-3d5f-4e6a-9b8c-0d1e2f3a4b5c";
    const SUB: &str = "b4a3c2d1-6e5f-4a7b-8c9d-1e2f3a4b5c6d";
    const LEDGER: &str = "e9d8c7b6-a5f4-4e3d-8c2b-1a0f9e8d7c6b";
    const LEGACY: &str = "3a2b1c0d-9e8f-4a7b-b6c5-d4e3f2a1b0c9";

    fn homes() -> Homes {
        Homes::under(&golden::fixture_home())
    }

    fn fixture(stem: &str) -> LogFile {
        let (files, _) = Cursor.discover(&homes());
        files.into_iter().find(|f| f.path.file_stem() == Some(OsStr::new(stem))).unwrap_or_else(|| panic!("fixture {stem} not discovered"))
    }

    fn mtime_ms(path: &Path) -> i64 {
        let t = std::fs::metadata(path).and_then(|m| m.modified()).expect("mtime");
        jiff::Timestamp::try_from(t).expect("time").as_millisecond()
    }

    /// Replaces every number equal to `mtime` with a marker (a checkout sets its own mtimes).
    fn mark_mtime(v: &mut Value, mtime: i64) {
        match v {
            Value::Number(n) if n.as_i64() == Some(mtime) => *v = Value::String("<file mtime>".into()),
            Value::Array(a) => a.iter_mut().for_each(|x| mark_mtime(x, mtime)),
            Value::Object(o) => o.values_mut().for_each(|x| mark_mtime(x, mtime)),
            _ => {}
        }
    }

    /// `golden::run` with the file's mtime marked.
    fn run(file: &LogFile) -> Value {
        let mut v = golden::run(&Cursor, file);
        mark_mtime(&mut v, mtime_ms(&file.path));
        v
    }

    fn events(v: &Value) -> &Vec<Value> {
        v["events"].as_array().expect("events")
    }

    /// Unix ms of a UTC time.
    fn utc(s: &str) -> i64 {
        s.parse::<jiff::Timestamp>().expect("timestamp").as_millisecond()
    }

    fn log_file(path: &Path) -> LogFile {
        LogFile { source: Source::Cursor, path: path.to_path_buf(), key: path.to_string_lossy().into_owned(), mirror: String::new(), format: FileFormat::Lines }
    }

    /// Parses `lines` (1-based numbers from `first`) and returns events and sessions.
    fn parse(file: &LogFile, state: &mut State, lines: &[&str], first: u64) -> (Vec<origin_engine::record::Event>, Vec<SessionChange>) {
        let mut out = Parsed::default();
        for (i, l) in lines.iter().enumerate() {
            match Cursor.parse_line(file, state, l.as_bytes(), first + i as u64) {
                Line::Parsed(p) => {
                    out.events.extend(p.events);
                    out.sessions.extend(p.sessions);
                }
                Line::Malformed(r) => panic!("line {} malformed: {r}", first + i as u64),
            }
        }
        (out.events, out.sessions)
    }

    #[test]
    fn discover_finds_exactly_the_transcripts() {
        let (files, problems) = Cursor.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        let got: Vec<&str> = files.iter().map(|f| f.mirror.as_str()).collect();
        assert_eq!(
            got,
            vec![
                format!("home-dev-demo-app/agent-transcripts/{DEMO}/{DEMO}.jsonl"),
                format!("home-dev-demo-app/agent-transcripts/{DEMO}/subagents/{SUB}.jsonl"),
                format!("home-dev-src-ledger-sync/agent-transcripts/{LEGACY}.txt"),
                format!("home-dev-src-ledger-sync/agent-transcripts/{LEDGER}/{LEDGER}.jsonl"),
            ]
        );
        for f in &files {
            assert_eq!((f.source, &f.format), (Source::Cursor, &FileFormat::Lines));
            assert_eq!(f.key, f.path.to_string_lossy());
            assert!(f.path.starts_with(golden::fixture_home().join(".cursor/projects")));
        }
    }

    #[test]
    fn discover_ignores_other_files_and_a_missing_folder() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let t = tmp.path().join(".cursor/projects/home-dev-x/agent-transcripts");
        for p in ["a/a.jsonl", "a/b.jsonl", "a/subagents/c.jsonl", "a/subagents/c.txt", "d.txt", "e.jsonl", "worker.log", "a/nested/x/x.jsonl"] {
            let p = t.join(p);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, b"").expect("write");
        }
        std::fs::write(tmp.path().join(".cursor/projects/home-dev-x/worker.log"), b"").expect("write");
        let (files, problems) = Cursor.discover(&Homes::under(tmp.path()));
        assert!(problems.is_empty());
        let got: Vec<&str> = files.iter().map(|f| f.mirror.as_str()).collect();
        assert_eq!(got, ["home-dev-x/agent-transcripts/a/a.jsonl", "home-dev-x/agent-transcripts/a/subagents/c.jsonl", "home-dev-x/agent-transcripts/d.txt", "home-dev-x/agent-transcripts/e.jsonl"]);
        assert_eq!(Cursor.discover(&Homes::under(&tmp.path().join("nobody"))), (Vec::new(), Vec::new()));
    }

    #[test]
    fn golden_demo_app() {
        golden::check("cursor-demo-app.json", &run(&fixture(DEMO)));
    }

    #[test]
    fn golden_demo_app_subagent() {
        golden::check("cursor-demo-app-subagent.json", &run(&fixture(SUB)));
    }

    #[test]
    fn golden_ledger_sync() {
        golden::check("cursor-ledger-sync.json", &run(&fixture(LEDGER)));
    }

    #[test]
    fn golden_ledger_sync_legacy() {
        golden::check("cursor-ledger-sync-legacy.json", &run(&fixture(LEGACY)));
    }

    #[test]
    fn timestamps_convert_from_the_local_offset() {
        assert_eq!(parse_cursor_time("Tuesday, Oct 20, 2026, 4:12 PM (UTC+2)"), Some(utc("2026-10-20T14:12:00Z")));
        assert_eq!(parse_cursor_time("Thursday, Oct 22, 2026, 1:05 AM (UTC+2)"), Some(utc("2026-10-21T23:05:00Z")));
        assert_eq!(parse_cursor_time("Monday, Oct 19, 2026, 9:30 PM (UTC-7)"), Some(utc("2026-10-20T04:30:00Z")));
        assert_eq!(parse_cursor_time("Tuesday, Oct 20, 2026, 12:00 AM (UTC+5:30)"), Some(utc("2026-10-19T18:30:00Z")));
        assert_eq!(parse_cursor_time("Tuesday, October 20, 2026, 12:15 PM (UTC)"), Some(utc("2026-10-20T12:15:00Z")));
        assert_eq!(parse_cursor_time("Tuesday, 20 Oct 2026, 16:12 (GMT+02:00)"), Some(utc("2026-10-20T14:12:00Z")));
        for bad in ["Tuesday, Oct 20, 2026, 4:12 PM", "Oct 32, 2026, 4:12 PM (UTC+2)", "Oct 20, 2026, 13:12 PM (UTC+2)", "Oct 20, 2026 (UTC+2)", "Oct 20, 2026, 4:12 PM (UTC+99)", "yesterday", ""] {
            assert_eq!(parse_cursor_time(bad), None, "{bad}");
        }
        // In the fixtures: the user lines of both projects, converted from UTC+2.
        let demo = run(&fixture(DEMO));
        assert_eq!(events(&demo)[0]["time_unix_ms"], utc("2026-10-20T14:12:00Z"));
        let ledger = run(&fixture(LEDGER));
        assert_eq!(events(&ledger)[0]["time_unix_ms"], utc("2026-10-21T23:05:00Z"));
    }

    #[test]
    fn assistant_lines_inherit_the_latest_user_time() {
        let demo = run(&fixture(DEMO));
        let (t1, t2) = (utc("2026-10-20T14:12:00Z"), utc("2026-10-20T14:31:00Z"));
        for e in events(&demo) {
            let line = e["line"].as_u64().expect("line");
            assert_eq!(e["time_unix_ms"], if line < 8 { t1 } else { t2 }, "line {line}");
        }
        assert_eq!(demo["state"][TIME], t2, "the latest time is kept for a later run");
        // A later run starts from the state alone.
        let mut state: State = serde_json::from_value(demo["state"].clone()).expect("state");
        let (es, _) = parse(&fixture(DEMO), &mut state, &[r#"{"role":"assistant","message":{"content":"later"}}"#], 12);
        assert_eq!(es[0].time_unix_ms, t2);
    }

    #[test]
    fn torn_last_line_is_pending_and_a_bad_line_is_counted() {
        let ledger = run(&fixture(LEDGER));
        assert_eq!(ledger["lines"], 8);
        assert!(ledger["pending_bytes"].as_u64().expect("pending") > 0);
        let malformed = ledger["malformed"].as_array().expect("malformed");
        assert_eq!(malformed.len(), 1);
        assert_eq!(malformed[0]["line"], 5);
        // Parsing went on after it.
        assert!(events(&ledger).iter().any(|e| e["line"] == 6));
        let aborted = events(&ledger).last().expect("event");
        assert_eq!((&aborted["kind"], &aborted["role"], &aborted["text"]), (&json!("System"), &json!("System"), &json!("turn ended: error: User aborted request.")));
    }

    #[test]
    fn lines_before_any_timestamp_get_the_file_mtime() {
        for stem in [SUB, LEGACY] {
            let v = run(&fixture(stem));
            assert!(!events(&v).is_empty());
            assert!(events(&v).iter().all(|e| e["time_unix_ms"] == "<file mtime>"), "{stem}");
        }
    }

    #[test]
    fn sessions_carry_prompt_parent_and_project_once() {
        let sessions = |stem| run(&fixture(stem))["sessions"].as_array().expect("sessions").clone();
        let demo = sessions(DEMO);
        let prompts: Vec<&Value> = demo.iter().filter(|s| !s["first_prompt"].is_null()).collect();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0]["first_prompt"], "The invoice list flickers when the filter changes. Keep the old rows visible until the new page arrives.");
        assert!(demo.iter().all(|s| s["session"] == DEMO && s["parent"].is_null()));
        assert_eq!(demo.iter().filter(|s| s["project"] == "demo-app").count(), 1);
        let sub = sessions(SUB);
        // Line 1 announces the parent, the task prompt and the project (line 2's tool path,
        // found before the lines are read: the project folder is not below the fixture's home).
        assert_eq!(sub.len(), 1);
        assert!(sub.iter().all(|s| s["session"] == SUB && s["parent"] == DEMO));
        assert_eq!((&sub[0]["first_prompt"], &sub[0]["project"]), (&json!("List every component under src/web that clears its rows while a query refetches; give file:line."), &json!("demo-app")));
        let first = &run(&fixture(SUB))["events"][0];
        assert_eq!((&first["line"], &first["project"]), (&json!(1), &json!("demo-app")), "the first line's event carries the project");
        // The lossy slug `ledger-sync` comes back as `ledger_sync` from the paths the agent used.
        let ledger = sessions(LEDGER);
        assert!(ledger.iter().any(|s| s["project"] == "ledger_sync"));
        assert!(sessions(LEGACY).iter().any(|s| s["project"] == "ledger_sync"));
    }

    #[test]
    fn a_later_run_goes_on_where_the_last_stopped() {
        for stem in [DEMO, LEDGER, LEGACY] {
            let file = fixture(stem);
            let whole = golden::run(&Cursor, &file);
            let bytes = std::fs::read(&file.path).expect("read");
            let text = String::from_utf8(bytes).expect("utf-8");
            let lines: Vec<&str> = text.split_inclusive('\n').filter(|l| l.ends_with('\n')).map(|l| &l[..l.len() - 1]).collect();
            for cut in 1..lines.len() {
                let mut state = State::new();
                let mut events = Vec::new();
                let mut sessions = Vec::new();
                for (first, part) in [(1, &lines[..cut]), (cut as u64 + 1, &lines[cut..])] {
                    Cursor.begin(&file, &mut state);
                    for (i, l) in part.iter().enumerate() {
                        if let Line::Parsed(p) = Cursor.parse_line(&file, &mut state, l.as_bytes(), first + i as u64) {
                            events.extend(p.events.into_iter().map(|e| serde_json::to_value(e).expect("json")));
                            sessions.extend(p.sessions.into_iter().map(|s| serde_json::to_value(s).expect("json")));
                        }
                    }
                    // The state goes through the journal as JSON bytes.
                    state = serde_json::from_slice(&serde_json::to_vec(&state).expect("json")).expect("json");
                }
                assert_eq!(&Value::Array(events), &whole["events"], "{stem} cut after line {cut}");
                assert_eq!(&Value::Array(sessions), &whole["sessions"], "{stem} cut after line {cut}");
            }
        }
    }

    #[test]
    fn legacy_block_is_emitted_at_the_end_and_continued_later() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join(".cursor/projects/x/agent-transcripts/t.txt");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let file = log_file(&path);
        std::fs::write(&path, "user:\n<user_query>\nhello\n</user_query>\n").expect("write");
        let mut state = State::new();
        Cursor.begin(&file, &mut state);
        let (es, ss) = parse(&file, &mut state, &["user:", "<user_query>", "hello", "</user_query>"], 1);
        assert_eq!(es.len(), 1);
        assert_eq!((es[0].id.as_str(), es[0].line, es[0].text.as_str()), ("cursor:t:txt:1", 1, "hello"));
        assert_eq!(ss[0].first_prompt.as_deref(), Some("hello"));
        // The agent appends more to the same block, then an answer.
        std::fs::write(&path, "user:\n<user_query>\nhello\n</user_query>\nand more\n\nassistant:\nhi 👋\n").expect("write");
        Cursor.begin(&file, &mut state);
        let (es, ss) = parse(&file, &mut state, &["and more", "", "assistant:", "hi 👋"], 5);
        let got: Vec<(&str, u64, Role, &str)> = es.iter().map(|e| (e.id.as_str(), e.line, e.role, e.text.as_str())).collect();
        assert_eq!(got, vec![("cursor:t:txt:5", 5, Role::User, "and more"), ("cursor:t:txt:7", 7, Role::Assistant, "hi 👋")]);
        assert!(ss.is_empty(), "the first prompt is given once");
    }

    /// A legacy header begins a turn only after a blank line, never inside a person's
    /// `<user_query>`; an argument's key given again is a line of the value being read. (A
    /// tool's YAML with a line `user:` was a user message; a pasted chat's `assistant:` made
    /// the rest of the prompt the assistant's; a file's text holding `  path: …` replaced the
    /// call's path.)
    #[test]
    fn legacy_headers_and_arguments_inside_what_was_written_are_text() {
        let file = log_file(Path::new("/nowhere/.cursor/projects/x/agent-transcripts/t.txt"));
        let lines = [
            "user:",
            "<user_query>",
            "Why did the bot say this?",
            "",
            "assistant:",
            "I WILL DELETE YOUR FILES",
            "</user_query>",
            "",
            "assistant:",
            "[Tool call] Read",
            "  path: /home/dev/app/deploy.yml",
            "",
            "[Tool result] Read",
            "service:",
            "user:",
            "  name: root",
            "",
            "[Tool call] StrReplace",
            "  path: /home/dev/app/deploy.yml",
            "  old_string: service:",
            "  path: /etc/old.conf",
            "  new_string: service:",
            "  path: /etc/new.conf",
            "",
            "assistant:",
            "Done.",
            "",
        ];
        let mut state = State::new();
        let (es, _) = parse(&file, &mut state, &lines, 1);
        let got: Vec<(Role, EventKind, &str)> = es.iter().map(|e| (e.role, e.kind, e.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (Role::User, EventKind::Message, "Why did the bot say this?\n\nassistant:\nI WILL DELETE YOUR FILES"),
                (Role::Assistant, EventKind::ToolUse, r#"Read {"path":"/home/dev/app/deploy.yml"}"#),
                (Role::User, EventKind::ToolResult, "service:\nuser:\n  name: root"),
                (Role::Assistant, EventKind::ToolUse, r#"StrReplace {"path":"/home/dev/app/deploy.yml","old_string":"service:\n  path: /etc/old.conf","new_string":"service:\n  path: /etc/new.conf"}"#),
            ]
        );
        // The last block waits for the lines that may continue it.
        assert_eq!(state[BLOCK]["text"], "Done.");
        // The frame is Cursor's only: `<user_query>` as a turn's first line, closed by a line
        // that ends with `</user_query>` (the tag inside a sentence closes nothing; a turn the
        // person wrote without the frame, naming the tag on a later line, opens nothing: the
        // rest of the file was one user message).
        let lines = [
            "user:",
            "<user_query>",
            "My template prints </user_query> twice. The bot then said:",
            "",
            "assistant:",
            "PASTEDREPLY I will delete your files",
            "</user_query>",
            "",
            "user:",
            "fix the parser, the log begins:",
            "<user_query>",
            "",
            "assistant:",
            "SECONDANSWER it was the lexer",
            "",
            "user:",
            "thanks",
        ];
        let mut state = State::new();
        let (es, _) = parse(&file, &mut state, &lines, 1);
        let got: Vec<(Role, &str)> = es.iter().map(|e| (e.role, e.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (Role::User, "My template prints </user_query> twice. The bot then said:\n\nassistant:\nPASTEDREPLY I will delete your files"),
                (Role::User, "fix the parser, the log begins:"),
                (Role::Assistant, "SECONDANSWER it was the lexer"),
            ]
        );
    }

    #[test]
    fn legacy_text_over_the_limit_is_cut_and_counted() {
        let file = log_file(Path::new("/nowhere/.cursor/projects/x/agent-transcripts/t.txt"));
        let mut state = State::new();
        let long = "é".repeat(EVENT_TEXT_CHARS_MAX - 2);
        let (es, _) = parse(&file, &mut state, &["[Tool result] Shell", &long, "abcdef", "", "assistant:"], 1);
        assert_eq!(es.len(), 1);
        assert_eq!(es[0].text_cut_chars, 5, "a newline and one character still fit");
        assert!(es[0].text.ends_with(&format!("a{}", cut_marker(5))));
        assert!(state[BLOCK]["text"].as_str().expect("text").is_empty(), "the new block holds nothing yet");
    }

    /// The project's path looked for before the lines are read, for a folder not below the
    /// home: a tool's argument before prose (the slug is lossy: `work/api` and `work-api` give
    /// one), prose without a sentence's punctuation, no trailing `/`; each byte looked at once.
    #[test]
    fn a_project_folder_not_below_the_home_is_found_in_the_transcript_before_its_lines() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let transcript = |id: &str, lines: &[&str]| -> LogFile {
            let path = tmp.path().join(".cursor/projects/home-dev-work-api/agent-transcripts").join(id).join(format!("{id}.jsonl"));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
            log_file(&path)
        };
        let prompt = |text: &str| format!(r#"{{"role":"user","message":{{"content":[{{"type":"text","text":"<user_query>\n{text}\n</user_query>"}}]}}}}"#);
        let read = |path: &str| format!(r#"{{"role":"assistant","message":{{"content":[{{"type":"tool_use","name":"Read","input":{{"path":"{path}"}}}}]}}}}"#);
        let cwd_after_begin = |file: &LogFile| {
            let mut state = State::new();
            Cursor.begin(file, &mut state);
            cwd_of(&state)
        };
        let both = transcript("a", &[&prompt("see /home/dev/work/api/client.py first"), &read("/home/dev/work-api/src/retry.rs")]);
        assert_eq!(cwd_after_begin(&both).as_deref(), Some("/home/dev/work-api"), "the tool's argument first");
        let prose = transcript("b", &[&prompt("The service lives in /home/dev/work-api. Make it back off.")]);
        assert_eq!(cwd_after_begin(&prose).as_deref(), Some("/home/dev/work-api"), "without the full stop");
        let slash = transcript("c", &[&read("/home/dev/work-api/")]);
        assert_eq!(cwd_after_begin(&slash).as_deref(), Some("/home/dev/work-api"), "without the slash");
        let legacy = tmp.path().join(".cursor/projects/home-dev-work-api/agent-transcripts/d.txt");
        std::fs::write(&legacy, "user:\nfix /home/dev/work/api now\n\nassistant:\n[Tool call] Read\n  path: /home/dev/work-api/src/a.rs\n").expect("write");
        assert_eq!(cwd_after_begin(&log_file(&legacy)).as_deref(), Some("/home/dev/work-api"), "a legacy argument first");

        // Never resolved: the next run looks only at what was added since.
        let none = transcript("e", &[&prompt("no paths here"), &prompt("none here either")]);
        let mut state = State::new();
        Cursor.begin(&none, &mut state);
        let len = std::fs::metadata(&none.path).expect("stat").len();
        assert_eq!((cwd_of(&state), state[PRESCANNED_TO].as_u64()), (None, Some(len)));
        let mut f = std::fs::OpenOptions::new().append(true).open(&none.path).expect("open");
        std::io::Write::write_all(&mut f, format!("{}\n{{\"role\":\"user\",\"mess", read("/home/dev/work-api/b.rs")).as_bytes()).expect("append");
        Cursor.begin(&none, &mut state);
        assert_eq!(cwd_of(&state).as_deref(), Some("/home/dev/work-api"), "found in what was added");
        assert!(state.get(PRESCANNED_TO).is_none());
        // A path before where the last look stopped is not looked at again.
        let mut state = State::new();
        state.insert(PRESCANNED_TO.into(), Value::from(len + read("/home/dev/work-api/b.rs").len() as u64 + 1));
        Cursor.begin(&none, &mut state);
        assert_eq!(cwd_of(&state), None);
    }

    #[test]
    fn slug_resolves_below_the_home() {
        fn cursor_slug(p: &Path) -> String {
            let s: String = p.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
            s.trim_start_matches('-').to_owned()
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        for d in ["src/ledger_sync", "demo-app", "demo", "a_b", "a-b"] {
            std::fs::create_dir_all(home.join(d)).expect("mkdir");
        }
        let resolve = |rel: &str| resolve_in_home(&home, &cursor_slug(&home.join(rel)));
        assert_eq!(resolve("src/ledger_sync"), Some(home.join("src/ledger_sync")));
        assert_eq!(resolve("demo-app"), Some(home.join("demo-app")));
        assert_eq!(resolve_in_home(&home, &cursor_slug(&home)), Some(home.clone()), "the home itself");
        assert_eq!(resolve("a_b"), None, "two folders slugify alike");
        assert_eq!(resolve("gone"), None);
        assert_eq!(resolve_in_home(&home, "home-dev-src-ledger-sync"), None, "another home");
        // A folder named in other letters than ASCII: not its parent, whether the slug keeps
        // its letters or turns them to separators.
        std::fs::create_dir_all(home.join("src/项目")).expect("mkdir");
        let kept = |p: &Path| -> String {
            let s: String = p.to_string_lossy().chars().map(|c| if c.is_alphanumeric() { c } else { '-' }).collect();
            s.trim_start_matches('-').to_owned()
        };
        assert_eq!(resolve("src/项目"), Some(home.join("src/项目")), "{}", cursor_slug(&home.join("src/项目")));
        assert_eq!(resolve_in_home(&home, &kept(&home.join("src/项目"))), Some(home.join("src/项目")));
        std::fs::create_dir_all(home.join("src/日志")).expect("mkdir");
        assert_eq!(resolve("src/项目"), None, "two folders slugify alike, as ASCII");
        assert_eq!(resolve_in_home(&home, &kept(&home.join("src/项目"))), Some(home.join("src/项目")), "as written, one");
        assert_eq!(resolve("src"), Some(home.join("src")));
        // A folder whose name ends with a separator, its slug's trailing `-` kept or left out.
        std::fs::create_dir_all(home.join("notes_")).expect("mkdir");
        assert_eq!(resolve("notes_"), Some(home.join("notes_")));
        assert_eq!(resolve_in_home(&home, cursor_slug(&home.join("notes_")).trim_end_matches('-')), Some(home.join("notes_")));
        // Beside a folder of that name without the separator, the slug without one is that.
        std::fs::create_dir_all(home.join("notes")).expect("mkdir");
        assert_eq!(resolve("notes"), Some(home.join("notes")));
        assert_eq!(resolve("notes_"), Some(home.join("notes_")));
        // From the transcript's own paths, with the slug's letters turned to separators.
        let place = Place { session: "t".into(), parent: None, slug: Some(cursor_slug(&home.join("src/项目"))), home: None, legacy: false };
        let mut state = State::new();
        learn_cwd(&mut state, &place, [home.join("src/项目/main.rs").to_string_lossy().as_ref()]);
        assert_eq!(cwd_of(&state), Some(home.join("src/项目").to_string_lossy().into_owned()));
        let mut state = State::new();
        learn_cwd(&mut state, &place, [home.join("src/main.rs").to_string_lossy().as_ref()]);
        assert_eq!(cwd_of(&state), None, "the parent is not the folder");
        // Through begin: the project is known from the first line on.
        let path = home.join(".cursor/projects").join(cursor_slug(&home.join("src/ledger_sync"))).join("agent-transcripts/t/t.jsonl");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, "").expect("write");
        let file = log_file(&path);
        let mut state = State::new();
        Cursor.begin(&file, &mut state);
        let line = r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\nhi\n</user_query>"}]}}"#;
        let (es, ss) = parse(&file, &mut state, &[line], 1);
        assert_eq!(es[0].project.as_deref(), Some("ledger_sync"));
        assert_eq!(es[0].cwd, Some(home.join("src/ledger_sync").to_string_lossy().into_owned()));
        assert_eq!(es[0].time_unix_ms, mtime_ms(&path), "no timestamp: the file's mtime");
        assert_eq!((ss[0].project.as_deref(), ss[0].first_prompt.as_deref()), (Some("ledger_sync"), Some("hi")));
    }

    /// Cursor's framing is recognised where Cursor puts it only: a `<timestamp>` or a
    /// `<user_query>` inside the person's sentence is theirs (the rest of a message after such
    /// a word was lost); a message beginning with markup is the person's (it was meta, and no
    /// first prompt); what the IDE puts beside the query is meta, not the person's words.
    #[test]
    fn user_text_is_unwrapped_only_where_cursor_frames_it() {
        let file = log_file(Path::new("/nowhere/.cursor/projects/home-dev-x/agent-transcripts/t/t.jsonl"));
        let user = |text: &str| serde_json::json!({"role": "user", "message": {"content": [{"type": "text", "text": text}]}}).to_string();
        let bare = |text: &str| serde_json::json!({"role": "user", "message": {"content": text}}).to_string();
        let shown = |es: &[origin_engine::record::Event]| es.iter().map(|e| (e.id.clone(), e.kind, e.text.clone())).collect::<Vec<_>>();
        let mut state = State::new();
        let (es, ss) = parse(&file, &mut state, &[&user("How do I print a <timestamp> element in XSLT? It shows PAGEFOOTER twice.")], 1);
        assert_eq!(shown(&es), vec![("cursor:t:1".into(), EventKind::Message, "How do I print a <timestamp> element in XSLT? It shows PAGEFOOTER twice.".into())]);
        assert_eq!(ss[0].first_prompt.as_deref(), Some("How do I print a <timestamp> element in XSLT? It shows PAGEFOOTER twice."));
        let mut state = State::new();
        let (es, ss) = parse(&file, &mut state, &[&bare("<div className=\"grid\"> does not center, CENTERBUG")], 1);
        assert_eq!(shown(&es), vec![("cursor:t:1".into(), EventKind::Message, "<div className=\"grid\"> does not center, CENTERBUG".into())]);
        assert!(ss[0].first_prompt.is_some());
        let mut state = State::new();
        let framed = "<timestamp>Tuesday, Oct 20, 2026, 4:12 PM (UTC+2)</timestamp>\n<attached_files>\nsrc/a.rs\n</attached_files>\n<user_query>\nRename the <user_query> tag in the template\n</user_query>";
        let (es, ss) = parse(&file, &mut state, &[&user(framed)], 1);
        assert_eq!(
            shown(&es),
            vec![
                ("cursor:t:1:context".into(), EventKind::Meta, "<attached_files>\nsrc/a.rs\n</attached_files>".into()),
                ("cursor:t:1".into(), EventKind::Message, "Rename the <user_query> tag in the template".into()),
            ]
        );
        assert_eq!(es[1].time_unix_ms, 1_792_505_520_000, "4:12 PM at UTC+2");
        assert_eq!(ss[0].first_prompt.as_deref(), Some("Rename the <user_query> tag in the template"));
        let mut state = State::new();
        let (es, _) = parse(&file, &mut state, &[&user("<system_reminder>\nthe plan changed\n</system_reminder>")], 1);
        assert_eq!(shown(&es), vec![("cursor:t:1".into(), EventKind::Meta, "<system_reminder>\nthe plan changed\n</system_reminder>".into())]);
        // Elements one after another: context too, and no first prompt.
        let mut state = State::new();
        let two = "<system_reminder>\nbe brief\n</system_reminder>\n<open_files>\nsrc/a.rs\n</open_files>";
        let (es, ss) = parse(&file, &mut state, &[&user(two)], 1);
        assert_eq!(shown(&es), vec![("cursor:t:1".into(), EventKind::Meta, two.into())]);
        assert!(ss.iter().all(|s| s.first_prompt.is_none()), "{ss:?}");
        // Context that holds the tags itself (an attached prompt template): the query is the
        // last one, as the IDE puts it.
        let mut state = State::new();
        let attached = "<attached_files>\n<file path=\"t.md\">\n<user_query>\ntemplatequery {{q}}\n</user_query>\n</file>\n</attached_files>";
        let (es, ss) = parse(&file, &mut state, &[&user(&format!("{attached}\n<user_query>\nrealquery why does t.md fail\n</user_query>"))], 1);
        assert_eq!(
            shown(&es),
            vec![("cursor:t:1:context".into(), EventKind::Meta, attached.into()), ("cursor:t:1".into(), EventKind::Message, "realquery why does t.md fail".into())]
        );
        assert_eq!(ss[0].first_prompt.as_deref(), Some("realquery why does t.md fail"));
        // An element, then words: the person's.
        let mut state = State::new();
        let (es, _) = parse(&file, &mut state, &[&user("<b>bold</b> does not render in the preview")], 1);
        assert_eq!(es[0].kind, EventKind::Message);
    }

    #[test]
    fn json_shapes_at_the_edges() {
        let file = log_file(Path::new("/nowhere/.cursor/projects/home-dev-x/agent-transcripts/t/t.jsonl"));
        let mut state = State::new();
        let lines = [
            "",
            r#"{"type":"turn_started"}"#,
            r#"{"role":"assistant","message":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":""},{"type":"turn_ended","status":"success"}]}}"#,
            r#"{"role":"user","message":{"content":"<attached_files>a.rs</attached_files>"}}"#,
            r#"{"role":"user","message":{"content":"<timestamp>Tuesday, Oct 20, 2026, 4:12 PM (UTC+2)</timestamp>\n<user_query>\nfirst\n</user_query>"}}"#,
        ];
        let (es, ss) = parse(&file, &mut state, &lines, 1);
        let got: Vec<(&str, Role, EventKind, &str)> = es.iter().map(|e| (e.id.as_str(), e.role, e.kind, e.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("cursor:t:3", Role::Assistant, EventKind::Meta, "hmm"),
                ("cursor:t:3:2", Role::System, EventKind::System, "turn ended: success"),
                ("cursor:t:4", Role::User, EventKind::Meta, "<attached_files>a.rs</attached_files>"),
                ("cursor:t:5", Role::User, EventKind::Message, "first"),
            ]
        );
        assert_eq!(ss.len(), 1, "injected context is not the first prompt");
        assert_eq!(ss[0].first_prompt.as_deref(), Some("first"));
        for bad in ["[1]", "{", r#"{"role":"tool","message":{"content":"x"}}"#, r#"{"role":"user"}"#, r#"{"status":"x"}"#] {
            assert!(matches!(Cursor.parse_line(&file, &mut state, bad.as_bytes(), 9), Line::Malformed(_)), "{bad}");
        }
    }

    #[test]
    fn memory_files_are_rules_cursorrules_and_agents_md() {
        let home = golden::fixture_home();
        let projects = [home.join("demo-app"), home.join("src/ledger_sync"), home.join("nowhere")];
        let got = Cursor.memory_files(&homes(), &projects.clone().map(Project::here), &mut Vec::new());
        let want = [
            (home.join("demo-app/.cursor/rules/testing.mdc"), &projects[0]),
            (home.join("demo-app/.cursor/rules/web-hooks.mdc"), &projects[0]),
            (home.join("src/ledger_sync/.cursorrules"), &projects[1]),
        ];
        for (path, dir) in &want {
            let m = got.iter().find(|m| &m.path == path).unwrap_or_else(|| panic!("{} not listed", path.display()));
            assert_eq!((m.source, m.scope, m.project.clone()), (Source::Cursor, MemoryScope::Project, Some(dir.to_string_lossy().into_owned())));
        }
        // Other sources' fixtures may add AGENTS.md files; nothing else may appear.
        assert!(got.iter().all(|m| want.iter().any(|(p, _)| p == &m.path) || m.path.file_name() == Some(OsStr::new("AGENTS.md"))));
        // Nested rule folders, AGENTS.md, and no other files.
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("p");
        for f in [".cursor/rules/a.mdc", ".cursor/rules/sub/b.mdc", ".cursor/rules/notes.md", "AGENTS.md", "sub/AGENTS.md"] {
            std::fs::create_dir_all(dir.join(f).parent().expect("parent")).expect("mkdir");
            std::fs::write(dir.join(f), "x").expect("write");
        }
        let got: Vec<PathBuf> = Cursor.memory_files(&homes(), &[Project::here(dir.clone())], &mut Vec::new()).into_iter().map(|m| m.path).collect();
        assert_eq!(got, vec![dir.join(".cursor/rules/a.mdc"), dir.join(".cursor/rules/sub/b.mdc"), dir.join("AGENTS.md")]);
    }

    const PIECES: &[&str] = &[
        r#"{"role":"user","message":{"content":["#,
        r#"{"role":"assistant","message":{"content":"#,
        r#"{"type":"text","text":""#,
        r#"{"type":"tool_use","name":"Shell","input":{"path":"/home/dev/x/y"}}"#,
        r#"{"type":"turn_ended","status":"error","error":null}"#,
        r#""}]}}"#,
        "<timestamp>",
        "</timestamp>",
        "Tuesday, Oct 20, 2026, 4:12 PM (UTC+2)",
        "(UTC-",
        "(GMT+5:3",
        "\u{2212}",
        "1é2",
        "12:60",
        "<user_query>",
        "</user_query>",
        "user:",
        "assistant:",
        "[Thinking]",
        "[Tool call] Read",
        "[Tool result] Read",
        "  path: /home/dev/x",
        "  k:",
        "🚀",
        "\r",
        " ",
        ",",
        ":",
    ];

    fn line_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            proptest::collection::vec(proptest::sample::select(PIECES), 0..10).prop_map(|v| v.concat().into_bytes()),
        ]
    }

    proptest! {
        #[test]
        fn parse_line_never_panics(lines in proptest::collection::vec(line_bytes(), 1..12)) {
            for path in [
                "/nowhere/.cursor/projects/home-dev-x/agent-transcripts/t/t.jsonl",
                "/nowhere/.cursor/projects/home-dev-x/agent-transcripts/t/subagents/c.jsonl",
                "/nowhere/.cursor/projects/home-dev-x/agent-transcripts/t.txt",
                "",
            ] {
                let file = log_file(Path::new(path));
                let mut state = State::new();
                state.insert(LINES_AT_BEGIN.into(), Value::from(3));
                for (i, l) in lines.iter().enumerate() {
                    let _ = Cursor.parse_line(&file, &mut state, l, i as u64 + 1);
                }
            }
            for l in &lines {
                let _ = parse_cursor_time(&String::from_utf8_lossy(l));
            }
        }
    }
}

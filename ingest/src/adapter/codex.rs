//! OpenAI Codex CLI: rollouts `<CODEX_HOME or ~/.codex>/sessions/YYYY/MM/DD/rollout-<local
//! time>-<thread id>.jsonl`, cold ones compressed to `….jsonl.zst`, archived ones flat in
//! `archived_sessions/`; thread names in `session_index.jsonl`. One JSON record per line,
//! `{"timestamp", "type", "payload"}`; lines have no ids, so an event is
//! `codex:<thread id>:<line>` (the logical, decompressed line), one event per line at most.
//!
//! What each line gives:
//!
//! - `session_meta` (first line): no event. Sets the session (its `id`), the working directory,
//!   git branch and CLI version kept in the file's state and set on every later event, and gives
//!   a session change with the project and, for a sub-agent, its parent
//!   (`source.subagent.thread_spawn.parent_thread_id`). A later `session_meta` with the same id
//!   (a resume) refreshes cwd/branch/version; one with another id is the parent's header copied
//!   into a fork and is ignored. A fork's `forked_from_id` is not a parent (only sub-agents are
//!   children); the lines a fork copies from its parent's rollout after its header give nothing
//!   when the parent's rollout is found (`fork.rs`: each line compared, less its time, with the
//!   parent's line at the same place), so the history before a fork is indexed once, in the
//!   parent's session; without the parent's rollout they are read as the fork's lines.
//! - `turn_context`: no event; its `cwd` replaces the kept one (events after it carry it).
//! - `response_item` `message`: `user` → user/message, or user/meta when any text part is
//!   injected context (Codex's own rule: `# AGENTS.md instructions for`, `<environment_context>`,
//!   `<user_instructions>`, `<permissions instructions>`, `<turn_aborted>`, `<skill>`, … and
//!   any text wholly wrapped in one tag whose name has `_` or a space); `assistant` →
//!   assistant/message (commentary and final answer alike); `developer`/`system` (and unknown
//!   roles) → system/meta, as those are harness instructions. Text: the parts joined with `\n`,
//!   an image as `[image]`. The first user/message of the file is the session's first prompt.
//! - `reasoning` → assistant/meta: summary texts, then raw reasoning texts; encrypted content is
//!   never indexed, and a reasoning item with no readable text gives no event.
//! - `function_call`, `custom_tool_call` (`apply_patch`), `local_shell_call`,
//!   `web_search_call`, `image_generation_call` and any other `*_call` → assistant/tool_use,
//!   text `<name> <arguments or input>` (local shell: the command; web search: the query or
//!   URL; image generation: the revised prompt, never the image bytes).
//! - `function_call_output`, `custom_tool_call_output` and any other `*_output` →
//!   user/tool_result: the output string; when that string is a JSON object with an `output`
//!   string (the `{output, metadata}` form), its `output`, plus `[exit code N]` when the
//!   metadata says it failed; content-item arrays are joined like messages.
//! - `compacted` → system/meta with the summary `message` (never `replacement_history`,
//!   which can carry megabytes of copied history and images).
//! - `event_msg`: UI events that duplicate response items (`user_message`, `agent_message`,
//!   `agent_reasoning`, `patch_apply_end`, `exec_command_end`, `task_complete`,
//!   `turn_aborted`, `context_compacted`) or are bookkeeping (`token_count`, `task_started`):
//!   never indexed, so nothing is indexed twice. Two exceptions: `thread_name_updated` gives a
//!   session title (no event), and `error` (extended persistence only) → system/system with
//!   its message, as nothing else records it. And `thread_rolled_back` (`num_turns`): Codex
//!   drops the newest turns from the thread (they stay in the file); the events from the line
//!   where the earliest of them began are recorded as superseded (`Parsed::abandons_from`; the
//!   state keeps where the latest 64 turns began, `turns`: the person's prompts and other
//!   agents' messages, [`is_agent_turn`]).
//! - `world_state`, `ghost_snapshot`, encrypted `compaction` items and any type this build does
//!   not know: no event, not malformed.
//! - Not a JSON object, no `type`, a known record without a payload object, or an indexed record
//!   without a valid `timestamp` or any session id: malformed.
//! - A rollout written before that envelope (Codex builds of 2025): its first line
//!   `{id, timestamp, instructions}` gives the session (and no event), its bare items
//!   (`{"type": "message", …}`) are read as `response_item` payloads, all at the header's time
//!   (they carry none), and its `{"record_type": "state"}` lines give nothing.
//!
//! The session is `session_meta.id`, else the UUID at the end of the file name (a file whose
//! header was lost); it is kept in the state with cwd, branch and version, so later batches of
//! the file, parsed in a later run, still know them.
//!
//! `session_index.jsonl` (`{id, thread_name, updated_at}`, append-only) is read as its own log
//! of lines that give session titles only; the file is append-only, so the last line for an id
//! is the newest and wins when changes are applied in order. It is listed after every rollout
//! so that, within a run, its names are applied after any `thread_name_updated` (the doc gives
//! it precedence; in practice both carry the same rename).
//!
//! A cold `….jsonl.zst` is mirrored under its plain `….jsonl` name (the same logical file); while
//! both exist (Codex re-materializing a resumed thread) only the plain file is listed. Both give
//! the same event ids for the same lines. `history.jsonl` (prompt history, not a transcript) and
//! `state.db` (an index rebuilt from rollouts) are not read.
//!
//! Native memory: `AGENTS.override.md`, else `AGENTS.md`, in `CODEX_HOME` (user) and in each
//! project directory (project); the experimental `memories/*.md` (top level only) as user memory.

use std::path::{Path, PathBuf};

use origin_engine::record::{EventKind, Role, SessionChange};
use serde_json::Value;

use super::fork;
use super::{first_prompt_abandoned, first_prompt_at, line_ref, state_array, Adapter, FIRST_PROMPT_KEY, FileFormat, Line, LogFile, MemoryFile, MemoryScope, Parsed, Project, State};
use crate::limits::LINE_ID_BYTES_MAX;
use crate::source::{Homes, Source};
use crate::json::{Json, Shape};
use crate::text::{event, first_prompt, parse_time, project_of};

static NULL: Json<'static> = Json::Null;

/// The string member `key` of a JSON object.
fn str_of<'a>(v: &'a Json<'_>, key: &str) -> Option<&'a str> {
    v.str_of(key)
}
use crate::walk;

/// The Codex adapter.
pub struct Codex;

/// What a line is parsed into: encrypted reasoning and the base instructions are never read.
const CODEX_SHAPE: Shape<'static> = Shape { skip: &["encrypted_content", "base_instructions"], raw: &[] };

/// The side file of thread names.
const SESSION_INDEX: &str = "session_index.jsonl";

/// Prefixes of text parts Codex injects into user-role messages (compared ignoring ASCII case,
/// after leading whitespace).
const INJECTED_PREFIXES: &[&str] = &[
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<skill>",
    "<user_shell_command>",
    "<model_switch>",
    "<collaboration_mode>",
    "<personality_spec>",
];

fn state_str<'a>(state: &'a State, key: &str) -> Option<&'a str> {
    state.get(key).and_then(Value::as_str)
}

fn set_opt(state: &mut State, key: &str, value: Option<&str>) {
    match value {
        Some(v) => state.insert(key.into(), Value::String(v.to_owned())),
        None => state.remove(key),
    };
}

/// Whether a text part is context Codex injected rather than what the person typed.
fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.get(..p.len()).is_some_and(|c| c.eq_ignore_ascii_case(p))) || wrapped_in_tag(t)
}

/// `<some_tag>…</some_tag>` as the whole text, with a tag name holding `_` or a space (Codex's
/// wrappers do; HTML a person pastes, `<div>`, does not).
fn wrapped_in_tag(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('<') else { return false };
    let Some(end) = rest.find('>') else { return false };
    let name = &rest[..end];
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ' ')
        && name.contains(['_', ' '])
        && t.trim_end().ends_with(&format!("</{name}>"))
}

/// The thread id at the end of a rollout's file name (`rollout-<time>-<uuid>.jsonl[.zst]`).
fn thread_id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let stem = stem.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    let shape_ok = id.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() });
    shape_ok.then(|| id.to_ascii_lowercase())
}

/// Text of message-like content parts: texts joined with `\n`, images as `[image]`; also
/// whether any text part is injected context.
fn content_text(content: &Json<'_>) -> (String, bool) {
    let mut parts = Vec::new();
    let mut injected = false;
    match content {
        Json::String(s) => {
            injected = is_injected(s);
            parts.push(s.to_string());
        }
        Json::Array(items) => {
            for item in items {
                match item {
                    Json::String(s) => {
                        injected |= is_injected(s);
                        parts.push(s.to_string());
                    }
                    _ => match (str_of(item, "type"), str_of(item, "text")) {
                        (_, Some(text)) => {
                            injected |= is_injected(text);
                            parts.push(text.to_owned());
                        }
                        (Some(t), None) if t.contains("image") => parts.push("[image]".to_owned()),
                        _ => {}
                    },
                }
            }
        }
        _ => {}
    }
    (parts.join("\n"), injected)
}

/// Text of a tool output: a string (unwrapping the `{output, metadata}` JSON form), content
/// items, or anything else as JSON.
fn output_text(v: &Json<'_>) -> String {
    match v {
        Json::String(s) => {
            if s.trim_start().starts_with('{') {
                if let Ok(Json::Object(m)) = Json::parse(s.as_bytes(), Shape::default()) {
                    if let Some(Json::String(out)) = m.get("output") {
                        let code = m.get("metadata").and_then(|md| md.get("exit_code")).and_then(Json::as_i64);
                        return match code {
                            Some(c) if c != 0 => format!("{out}\n[exit code {c}]"),
                            _ => out.to_string(),
                        };
                    }
                }
            }
            s.to_string()
        }
        Json::Array(_) => content_text(v).0,
        Json::Object(m) => match m.get("content").or_else(|| m.get("output")) {
            Some(inner) => output_text(inner),
            None => v.to_string(),
        },
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

/// A JSON value as call arguments: a string as is, anything else as JSON.
fn as_text(v: &Json<'_>) -> String {
    match v {
        Json::String(s) => s.to_string(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn join_name(name: &str, rest: String) -> String {
    if rest.is_empty() { name.to_owned() } else { format!("{name} {rest}") }
}

/// What one response item is, if it is indexed: role, kind, text, and whether it is a
/// candidate first prompt.
fn response_item(p: &Json<'_>) -> Option<(Role, EventKind, String, bool)> {
    let ty = str_of(p, "type")?;
    match ty {
        "message" => {
            let (text, injected) = content_text(p.get("content").unwrap_or(&NULL));
            if text.trim().is_empty() {
                return None;
            }
            Some(match str_of(p, "role") {
                Some("user") if injected => (Role::User, EventKind::Meta, text, false),
                Some("user") => (Role::User, EventKind::Message, text, true),
                Some("assistant") => (Role::Assistant, EventKind::Message, text, false),
                _ => (Role::System, EventKind::Meta, text, false),
            })
        }
        "reasoning" => {
            let mut parts = Vec::new();
            for key in ["summary", "content"] {
                if let Some(Json::Array(items)) = p.get(key) {
                    parts.extend(items.iter().filter_map(|i| str_of(i, "text")).filter(|t| !t.trim().is_empty()).map(str::to_owned));
                }
            }
            let text = parts.join("\n\n");
            (!text.is_empty()).then_some((Role::Assistant, EventKind::Meta, text, false))
        }
        "function_call" | "custom_tool_call" => {
            let name = str_of(p, "name").unwrap_or(ty);
            let args = p.get("arguments").or_else(|| p.get("input")).map(as_text).unwrap_or_default();
            Some((Role::Assistant, EventKind::ToolUse, join_name(name, args), false))
        }
        "local_shell_call" => {
            let action = p.get("action").unwrap_or(&NULL);
            let cmd = match action.get("command") {
                Some(Json::Array(words)) if words.iter().all(Json::is_string) => {
                    words.iter().filter_map(Json::as_str).collect::<Vec<_>>().join(" ")
                }
                _ => as_text(action),
            };
            Some((Role::Assistant, EventKind::ToolUse, join_name("local_shell", cmd), false))
        }
        "web_search_call" => {
            let action = p.get("action").unwrap_or(&NULL);
            let what = str_of(action, "query").or_else(|| str_of(action, "url")).map(str::to_owned).unwrap_or_else(|| as_text(action));
            Some((Role::Assistant, EventKind::ToolUse, join_name("web_search", what), false))
        }
        "image_generation_call" => {
            let prompt = str_of(p, "revised_prompt").unwrap_or_default().to_owned();
            Some((Role::Assistant, EventKind::ToolUse, join_name("image_generation", prompt), false))
        }
        _ if ty.ends_with("_output") => {
            Some((Role::User, EventKind::ToolResult, output_text(p.get("output").unwrap_or(&NULL)), false))
        }
        _ if ty.ends_with("_call") => {
            let name = str_of(p, "name").unwrap_or_else(|| ty.trim_end_matches("_call"));
            let args = ["arguments", "input", "action", "query"].iter().find_map(|k| p.get(*k)).map(as_text).unwrap_or_default();
            Some((Role::Assistant, EventKind::ToolUse, join_name(name, args), false))
        }
        // ghost_snapshot (legacy noise), compaction (encrypted), and types this build does not know.
        _ => None,
    }
}

/// The session of a rollout: kept in the state, else the thread id in the file name (kept too).
fn session_of(file: &LogFile, state: &mut State) -> Option<String> {
    if let Some(s) = state_str(state, "session") {
        return Some(s.to_owned());
    }
    let id = thread_id_of(&file.path)?;
    state.insert("session".into(), Value::String(id.clone()));
    Some(id)
}

fn is_index(file: &LogFile) -> bool {
    file.path.file_name().is_some_and(|n| n == SESSION_INDEX)
}

/// One `session_index.jsonl` line: a title.
fn index_line(v: &Json<'_>) -> Line {
    let Some(id) = str_of(v, "id").filter(|s| !s.is_empty()) else {
        return Line::Malformed("session index entry without id".into());
    };
    let Some(name) = str_of(v, "thread_name") else {
        return Line::Malformed("session index entry without thread_name".into());
    };
    let mut out = Parsed::default();
    if !name.trim().is_empty() {
        out.sessions.push(SessionChange { session: id.to_owned(), project: None, title: Some(name.to_owned()), first_prompt: None, parent: None });
    }
    Line::Parsed(out)
}

/// A `session_meta` line: state and the session's project and parent.
fn session_meta(file: &LogFile, state: &mut State, p: &Json<'_>, line_no: u64) -> Line {
    let mut out = Parsed::default();
    let seen = state.get("meta_seen").and_then(Value::as_bool).unwrap_or(false);
    let id = str_of(p, "id").filter(|s| !s.is_empty()).map(str::to_owned);
    if seen {
        // The same thread again (a resume) refreshes what it says; another thread's header is
        // history copied into a fork and changes nothing (but may name the parent of a missing
        // parent, whose copied lines are then compared: `fork.rs`).
        if id.is_some() && id.as_deref() == state_str(state, "session") {
            refresh(state, p);
        } else if let Some(id) = id.as_deref() {
            fork::missing_parent_header(state, &file.path, id, str_of(p, "forked_from_id"), line_no);
        }
        return Line::Parsed(out);
    }
    let Some(session) = id.or_else(|| thread_id_of(&file.path)) else {
        return Line::Malformed("session_meta without id".into());
    };
    state.insert("session".into(), Value::String(session.clone()));
    state.insert("meta_seen".into(), Value::Bool(true));
    refresh(state, p);
    if let Some(from) = str_of(p, "forked_from_id").filter(|f| !f.is_empty() && !f.eq_ignore_ascii_case(&session)) {
        fork::begin(state, &file.path, from, line_no);
    }
    let parent = p.pointer("/source/subagent/thread_spawn/parent_thread_id").and_then(Json::as_str).map(str::to_owned);
    out.sessions.push(SessionChange { session, project: state_str(state, "cwd").and_then(project_of), title: None, first_prompt: None, parent });
    Line::Parsed(out)
}

/// The event of an indexed item of line `line_no`, said at `time`.
fn item_event(file: &LogFile, state: &mut State, line_no: u64, time: i64, item: (Role, EventKind, String, bool)) -> Line {
    let mut out = Parsed::default();
    let Some(session) = session_of(file, state) else {
        return Line::Malformed("no session id: no session_meta yet and no thread id in the file name".into());
    };
    let (role, kind, text, prompt) = item;
    let cwd = state_str(state, "cwd");
    if prompt && !state.contains_key(FIRST_PROMPT_KEY) {
        out.sessions.push(SessionChange { session: session.clone(), project: cwd.and_then(project_of), title: None, first_prompt: Some(first_prompt(&text)), parent: None });
    }
    let mut e = event(format!("codex:{session}:{}", line_ref(state, line_no)), time, &session, cwd, role, kind, text, line_no);
    e.git_branch = state_str(state, "branch").map(str::to_owned);
    e.agent_version = state_str(state, "version").map(str::to_owned);
    out.events.push(e);
    if prompt {
        if !state.contains_key(FIRST_PROMPT_KEY) {
            first_prompt_at(state, line_no);
        }
        push_turn(state, line_no);
    }
    Line::Parsed(out)
}

/// Notes that a turn begins on line `line_no`, for a rollback to come.
fn push_turn(state: &mut State, line_no: u64) {
    let turns = state_array(state, TURNS_KEY);
    turns.push(Value::from(line_no));
    if turns.len() > TURNS_KEPT {
        turns.remove(0);
    }
}

/// Whether a `response_item` payload is another agent's message, which begins a turn of a
/// thread with sub-agents: an `agent_message` item, or an assistant message whose one text is
/// an inter-agent message (a JSON object with `author`, `recipient` and `content` strings, or
/// the same as `author: …`, `recipient: …` and `Content: …` lines).
fn is_agent_turn(p: &Json<'_>) -> bool {
    match str_of(p, "type") {
        Some("agent_message") => true,
        Some("message") if str_of(p, "role") == Some("assistant") => {
            let Some([part]) = p.get("content").and_then(Json::as_array).map(Vec::as_slice) else { return false };
            let Some(text) = str_of(part, "text") else { return false };
            let t = text.trim_start();
            let strings = |v: &Value, keys: &[&str]| keys.iter().all(|k| v.get(*k).is_some_and(Value::is_string));
            // (Parsed only when it names a recipient: an assistant's text is rarely JSON.)
            (t.starts_with('{') && t.contains("\"recipient\"") && serde_json::from_str::<Value>(t).is_ok_and(|v| strings(&v, &["author", "recipient", "content"])))
                || (t.starts_with("author: ") && t.contains("\nrecipient: ") && t.contains("\nContent: "))
        }
        _ => false,
    }
}

/// State key: the lines where the latest turns begin (a user message not of injected context,
/// or another agent's message: [`is_agent_turn`]), at most [`TURNS_KEPT`], the turns a rollback
/// dropped taken off.
const TURNS_KEY: &str = "turns";

/// Most turns whose first lines are kept for a rollback: one of more turns abandons those kept
/// (the rest stay current).
const TURNS_KEPT: usize = 64;

/// A rollback (`event_msg` `thread_rolled_back`): Codex drops the newest `num_turns` turns
/// from the thread's history; they stay in the file. Their events, from the line where
/// the earliest of them began, are abandoned.
fn rolled_back(state: &mut State, p: &Json<'_>) -> Parsed {
    let n = p.get("num_turns").and_then(Json::as_u64).unwrap_or(0) as usize;
    let turns = state_array(state, TURNS_KEY);
    let from = turns.len().saturating_sub(n);
    let abandons_from = if n == 0 { None } else { turns.drain(from..).next().and_then(|v| v.as_u64()) };
    if let Some(from) = abandons_from {
        first_prompt_abandoned(state, from);
    }
    Parsed { abandons_from, ..Parsed::default() }
}

/// State key of a rollout written before the envelope: its header's time (ms), which its items
/// carry (they have none of their own).
const LEGACY_TIME_KEY: &str = "legacy_time";

/// A line without a `type`: in a rollout written before the `{timestamp, type, payload}`
/// envelope (Codex builds of 2025), its header `{id, timestamp, instructions}` (the session,
/// and the time its items are given) or a `{"record_type": "state"}` line (nothing to index);
/// otherwise malformed.
fn legacy_line(file: &LogFile, state: &mut State, v: &Json<'_>) -> Line {
    if v.get("record_type").is_some() {
        return Line::Parsed(Parsed::default());
    }
    let header = (!state.contains_key("meta_seen")).then(|| str_of(v, "timestamp").and_then(parse_time)).flatten();
    let Some(time) = header else { return Line::Malformed("no type".into()) };
    let Some(session) = str_of(v, "id").filter(|s| !s.is_empty()).map(str::to_owned).or_else(|| thread_id_of(&file.path)) else {
        return Line::Malformed("no type".into());
    };
    state.insert("session".into(), Value::String(session.clone()));
    state.insert("meta_seen".into(), Value::Bool(true));
    state.insert(LEGACY_TIME_KEY.into(), Value::from(time));
    let mut out = Parsed::default();
    out.sessions.push(SessionChange { session, project: None, title: None, first_prompt: None, parent: None });
    Line::Parsed(out)
}

fn refresh(state: &mut State, p: &Json<'_>) {
    if let Some(cwd) = str_of(p, "cwd") {
        state.insert("cwd".into(), Value::String(cwd.to_owned()));
    }
    set_opt(state, "branch", p.get("git").and_then(|g| str_of(g, "branch")));
    set_opt(state, "version", str_of(p, "cli_version"));
}

impl Adapter for Codex {
    fn source(&self) -> Source {
        Source::Codex
    }

    fn logs_move(&self) -> bool {
        true
    }

    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        let root = &homes.codex;
        let mut problems = Vec::new();
        let rollout = |p: &Path| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rollout-") && (n.ends_with(".jsonl") || n.ends_with(".jsonl.zst")))
        };
        let mut files = Vec::new();
        for dir in ["sessions", "archived_sessions"] {
            for path in walk::files(&root.join(dir), &rollout, &mut problems) {
                let zst = path.extension().is_some_and(|e| e == "zst");
                // While both exist, the plain file is the live one (and holds everything).
                if zst && path.with_extension("").is_file() {
                    continue;
                }
                let rel = walk::relative(root, &path);
                let mirror = rel.strip_suffix(".zst").unwrap_or(&rel).to_owned();
                files.push(LogFile {
                    source: Source::Codex,
                    key: path.to_string_lossy().into_owned(),
                    mirror,
                    path,
                    format: if zst { FileFormat::ZstdLines } else { FileFormat::Lines },
                });
            }
        }
        fork::listed(root, files.iter().filter_map(|f| Some((thread_id_of(&f.path)?, f.path.clone()))));
        let index = root.join(SESSION_INDEX);
        if index.is_file() {
            files.push(LogFile { source: Source::Codex, key: index.to_string_lossy().into_owned(), mirror: SESSION_INDEX.into(), path: index, format: FileFormat::Lines });
        }
        (files, problems)
    }

    fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
        if fork::is_copy(state, &file.path, line, line_no) {
            return Line::Parsed(Parsed::default());
        }
        let v = match Json::parse(line, CODEX_SHAPE) {
            Ok(v @ Json::Object(_)) => v,
            Ok(_) => return Line::Malformed("not a JSON object".into()),
            Err(e) => return Line::Malformed(format!("invalid JSON: {e}")),
        };
        if is_index(file) {
            return index_line(&v);
        }
        let payload_id = v.get("payload").and_then(|p| str_of(p, "id")).or_else(|| str_of(&v, "id"));
        if payload_id.is_some_and(|id| id.len() > LINE_ID_BYTES_MAX) {
            return Line::Malformed(format!("id longer than {LINE_ID_BYTES_MAX} bytes"));
        }
        let Some(ty) = str_of(&v, "type") else { return legacy_line(file, state, &v) };
        let mut out = Parsed::default();
        match ty {
            "session_meta" | "turn_context" | "response_item" | "compacted" | "event_msg" => {}
            // A bare item of a rollout written before the envelope, timed by its header.
            _ if state.contains_key(LEGACY_TIME_KEY) && v.get("payload").is_none() => {
                let Some(item) = response_item(&v) else { return Line::Parsed(out) };
                let time = state.get(LEGACY_TIME_KEY).and_then(Value::as_i64).unwrap_or_default();
                return item_event(file, state, line_no, time, item);
            }
            // world_state and types this build does not know: nothing to index, nothing wrong.
            _ => return Line::Parsed(out),
        }
        let Some(p) = v.get("payload").filter(|p| p.is_object()) else {
            return Line::Malformed(format!("{ty} line without a payload object"));
        };
        let item = match ty {
            "session_meta" => return session_meta(file, state, p, line_no),
            "turn_context" => {
                if let Some(cwd) = str_of(p, "cwd") {
                    state.insert("cwd".into(), Value::String(cwd.to_owned()));
                }
                return Line::Parsed(out);
            }
            "compacted" => {
                let text = str_of(p, "message").unwrap_or_default().to_owned();
                if text.trim().is_empty() {
                    return Line::Parsed(out);
                }
                (Role::System, EventKind::Meta, text, false)
            }
            "event_msg" => match str_of(p, "type") {
                Some("thread_name_updated") => {
                    let session = session_of(file, state).or_else(|| str_of(p, "thread_id").map(str::to_owned));
                    match (session, str_of(p, "thread_name")) {
                        (Some(session), Some(name)) if !name.trim().is_empty() => {
                            out.sessions.push(SessionChange { session, project: None, title: Some(name.to_owned()), first_prompt: None, parent: None })
                        }
                        _ => {}
                    }
                    return Line::Parsed(out);
                }
                Some("thread_rolled_back") => return Line::Parsed(rolled_back(state, p)),
                Some("error") => (Role::System, EventKind::System, str_of(p, "message").unwrap_or("error").to_owned(), false),
                // Duplicates of response items and bookkeeping: indexed once, from the response item.
                _ => return Line::Parsed(out),
            },
            _ => {
                // Another agent's message begins a turn too (Codex counts it as one when it
                // rolls back), though it is no prompt of the person's.
                if is_agent_turn(p) {
                    push_turn(state, line_no);
                }
                match response_item(p) {
                    Some(item) => item,
                    None => return Line::Parsed(out),
                }
            }
        };
        let Some(time) = str_of(&v, "timestamp").and_then(parse_time) else {
            return Line::Malformed(format!("{ty} line without a valid timestamp"));
        };
        item_event(file, state, line_no, time, item)
    }

    fn memory_files(&self, homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
        let mut out = Vec::new();
        let agents = |dir: &Path| {
            let o = dir.join("AGENTS.override.md");
            if o.is_file() { o } else { dir.join("AGENTS.md") }
        };
        let user = |path: PathBuf| MemoryFile { source: Source::Codex, path, scope: MemoryScope::User, project: None };
        out.push(user(agents(&homes.codex)));
        let memories = homes.codex.join("memories");
        let top_md = |p: &Path| p.extension().is_some_and(|e| e == "md") && p.parent() == Some(memories.as_path());
        out.extend(walk::files(&memories, &top_md, problems).into_iter().map(user));
        for p in projects {
            if let Some(dir) = &p.dir {
                out.push(MemoryFile { source: Source::Codex, path: agents(dir), scope: MemoryScope::Project, project: p.name() });
            }
        }
        super::keep_regular(&mut out, problems);
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::{Path, PathBuf};

    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;
    use crate::adapter::golden::{self, fixture_home};

    const A: &str = "019a0f3e-7c21-7d40-9b8e-2f61a4c0d5e1";
    const B: &str = "019a0f40-1b55-7a32-8c07-93d2e6f1b4a8";
    const C: &str = "019a1322-9e04-7b6f-a1d3-5c8e07f2b961";
    const D: &str = "0199a6b1-3f2c-7e18-b4a5-6d0c91e8f273";
    const E: &str = "0199c4d0-8a7e-7c35-9f12-b3e5a8d04c6f";

    /// Every log file of the fixture home, in discovery order, with its golden file.
    fn expected() -> Vec<(String, FileFormat, &'static str)> {
        vec![
            (format!("sessions/2026/10/02/rollout-2026-10-02T13-20-09-{D}.jsonl"), FileFormat::ZstdLines, "codex-cold-zst.json"),
            (format!("sessions/2026/10/20/rollout-2026-10-20T16-03-11-{A}.jsonl"), FileFormat::Lines, "codex-orders-export.json"),
            (format!("sessions/2026/10/20/rollout-2026-10-20T16-05-40-{B}.jsonl"), FileFormat::Lines, "codex-subagent.json"),
            (format!("sessions/2026/10/21/rollout-2026-10-21T10-47-55-{C}.jsonl"), FileFormat::Lines, "codex-ledger-sync.json"),
            (format!("archived_sessions/rollout-2026-10-09T09-14-02-{E}.jsonl"), FileFormat::Lines, "codex-archived-exec.json"),
            ("session_index.jsonl".to_owned(), FileFormat::Lines, "codex-session-index.json"),
        ]
    }

    fn homes() -> Homes {
        Homes::under(&fixture_home())
    }

    fn files() -> Vec<LogFile> {
        let (files, problems) = Codex.discover(&homes());
        assert!(problems.is_empty(), "{problems:?}");
        files
    }

    fn file(thread: &str) -> LogFile {
        files().into_iter().find(|f| f.mirror.contains(thread)).expect("fixture file")
    }

    fn run(thread: &str) -> Value {
        golden::run(&Codex, &file(thread))
    }

    fn events(v: &Value) -> &Vec<Value> {
        v["events"].as_array().expect("events")
    }

    /// A rollout that is not on disk, for lines made up in a test.
    fn synthetic(name: &str) -> LogFile {
        let path = PathBuf::from("/home/dev/.codex/sessions/2026/10/22").join(name);
        LogFile { source: Source::Codex, key: path.to_string_lossy().into_owned(), mirror: format!("sessions/2026/10/22/{name}"), path, format: FileFormat::Lines }
    }

    fn parsed(line: Line) -> Parsed {
        match line {
            Line::Parsed(p) => p,
            Line::Malformed(r) => panic!("malformed: {r}"),
        }
    }

    #[test]
    fn codex_discovers_exactly_the_fixture_logs() {
        let home = homes();
        let got: Vec<(String, FileFormat)> = files().iter().map(|f| (f.mirror.clone(), f.format.clone())).collect();
        let want: Vec<(String, FileFormat)> = expected().into_iter().map(|(m, f, _)| (m, f)).collect();
        assert_eq!(got, want);
        for f in files() {
            assert_eq!(f.source, Source::Codex);
            assert_eq!(f.key, f.path.to_string_lossy());
            assert!(f.path.starts_with(&home.codex) && f.path.is_file());
        }
        // The cold rollout is read from its .zst, mirrored under the plain name.
        assert!(file(D).path.to_string_lossy().ends_with(".jsonl.zst"));
    }

    #[test]
    fn codex_golden() {
        for (mirror, _, golden_name) in expected() {
            let f = files().into_iter().find(|f| f.mirror == mirror).expect("discovered");
            golden::check(golden_name, &golden::run(&Codex, &f));
        }
    }

    #[test]
    fn codex_discover_prefers_the_plain_rollout_and_tolerates_a_missing_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = dir.path().join(".codex/sessions/2026/10/22");
        std::fs::create_dir_all(&day).expect("mkdir");
        let name = format!("rollout-2026-10-22T09-00-00-{A}.jsonl");
        std::fs::write(day.join(&name), b"").expect("write");
        std::fs::write(day.join(format!("{name}.zst")), b"").expect("write");
        std::fs::write(day.join(format!("rollout-2026-10-22T10-00-00-{B}.jsonl.zst")), b"").expect("write");
        std::fs::write(day.join("notes.jsonl"), b"").expect("write");
        let (files, problems) = Codex.discover(&Homes::under(dir.path()));
        assert!(problems.is_empty());
        let got: Vec<(String, FileFormat)> = files.into_iter().map(|f| (f.mirror, f.format)).collect();
        assert_eq!(
            got,
            vec![
                (format!("sessions/2026/10/22/{name}"), FileFormat::Lines),
                (format!("sessions/2026/10/22/rollout-2026-10-22T10-00-00-{B}.jsonl"), FileFormat::ZstdLines),
            ]
        );
        let (files, problems) = Codex.discover(&Homes::under(&dir.path().join("nobody")));
        assert!(files.is_empty() && problems.is_empty());
    }

    #[test]
    fn codex_big_tool_output_is_one_whole_tool_result() {
        let v = run(A);
        let raw = std::fs::read_to_string(file(A).path).expect("read");
        let line11: Value = serde_json::from_str(raw.lines().nth(10).expect("line 11")).expect("json");
        let want = line11["payload"]["output"].as_str().expect("output");
        assert!(want.chars().count() > 25_000 && want.chars().count() < 50_000);
        let results: Vec<&Value> = events(&v).iter().filter(|e| e["line"] == 11).collect();
        assert_eq!(results.len(), 1);
        let e = results[0];
        assert_eq!(e["id"], format!("codex:{A}:11"));
        assert_eq!(e["kind"], "ToolResult");
        assert_eq!(e["role"], "User");
        assert_eq!(e["text"], want);
        assert_eq!(e["text_cut_chars"], 0);
    }

    #[test]
    fn codex_output_over_the_limit_is_cut_with_a_count() {
        let f = synthetic(&format!("rollout-2026-10-22T09-00-00-{A}.jsonl"));
        let mut state = State::new();
        let big = "é".repeat(60_000);
        let line = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c", "output": big}});
        let p = parsed(Codex.parse_line(&f, &mut state, line.to_string().as_bytes(), 7));
        assert_eq!(p.events[0].text_cut_chars, 10_000);
        let (head, tail) = p.events[0].text.split_once(" …[10000 characters cut at ingest] ").expect("the marker between its beginning and its end");
        assert_eq!((head.chars().count(), tail.chars().count()), (40_000, 10_000));
    }

    #[test]
    fn codex_torn_last_line_is_pending_and_the_healed_fragment_is_counted() {
        let c = run(C);
        assert_eq!(c["malformed"], json!([]));
        let raw = std::fs::read(file(C).path).expect("read");
        let tail = raw.len() - raw.iter().rposition(|&b| b == b'\n').expect("newline") - 1;
        assert!(tail > 0);
        assert_eq!(c["pending_bytes"], tail);
        let a = run(A);
        let malformed = a["malformed"].as_array().expect("malformed");
        assert_eq!(malformed.len(), 1);
        assert_eq!(malformed[0]["line"], 12);
        assert!(malformed[0]["reason"].as_str().expect("reason").starts_with("invalid JSON"));
        // Lines after it still parse: the unknown line type (13) and legacy item (14) are
        // tolerated without events, and line 15 (apply_patch) is indexed.
        let lines: Vec<u64> = events(&a).iter().map(|e| e["line"].as_u64().expect("line")).collect();
        assert!(!lines.contains(&12) && !lines.contains(&13) && !lines.contains(&14) && lines.contains(&15));
    }

    #[test]
    fn codex_event_msg_duplicates_are_not_indexed_twice() {
        for (mirror, format, _) in expected() {
            if mirror == "session_index.jsonl" {
                continue;
            }
            let f = files().into_iter().find(|f| f.mirror == mirror).expect("discovered");
            let bytes = match format {
                FileFormat::ZstdLines => zstd::decode_all(std::fs::File::open(&f.path).expect("open")).expect("zstd"),
                _ => std::fs::read(&f.path).expect("read"),
            };
            let v = golden::run(&Codex, &f);
            for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
                let Ok(line) = serde_json::from_slice::<Value>(raw) else { continue };
                if line["type"] != "event_msg" {
                    continue;
                }
                let n = i as u64 + 1;
                let indexed: Vec<&Value> = events(&v).iter().filter(|e| e["line"] == n).collect();
                if line["payload"]["type"] == "error" {
                    assert_eq!(indexed.len(), 1);
                    assert_eq!(indexed[0]["kind"], "System");
                } else {
                    assert!(indexed.is_empty(), "{mirror}:{n} event_msg was indexed");
                }
                // The message an event_msg repeats is indexed exactly once (from the response item).
                if let Some(text) = line["payload"]["message"].as_str().filter(|_| line["payload"]["type"] != "error") {
                    let count = events(&v).iter().filter(|e| e["text"] == text).count();
                    assert_eq!(count, 1, "{mirror}:{n}: {text}");
                }
            }
        }
    }

    #[test]
    fn codex_sessions_first_prompt_title_and_parent() {
        let a = run(A);
        let sessions = a["sessions"].as_array().expect("sessions");
        let prompts: Vec<&Value> = sessions.iter().filter(|s| !s["first_prompt"].is_null()).collect();
        assert_eq!(prompts.len(), 1);
        assert_eq!(prompts[0]["first_prompt"], "Add a CSV export for the orders table at GET /api/orders/export.csv. Money stays in cents 💶");
        assert_eq!(prompts[0]["project"], "demo-app");
        let titles: Vec<&str> = sessions.iter().filter_map(|s| s["title"].as_str()).collect();
        assert_eq!(titles, vec!["Orders CSV export"]);
        assert!(sessions.iter().all(|s| s["session"] == A && s["parent"].is_null()));

        let b = run(B);
        let meta = &b["sessions"][0];
        assert_eq!(meta["session"], B);
        assert_eq!(meta["parent"], A);
        assert_eq!(meta["project"], "demo-app");

        // The injected AGENTS.md + environment_context message is meta, never the first prompt.
        for thread in [A, B, C, D, E] {
            let v = run(thread);
            let injected: Vec<&Value> = events(&v)
                .iter()
                .filter(|e| e["text"].as_str().is_some_and(|t| t.starts_with("# AGENTS.md instructions for") || t.starts_with("<user_instructions>")))
                .collect();
            assert_eq!(injected.len(), 1, "{thread}");
            assert_eq!(injected[0]["kind"], "Meta");
            assert_eq!(injected[0]["role"], "User");
            let prompts: Vec<&Value> = v["sessions"].as_array().expect("sessions").iter().filter(|s| !s["first_prompt"].is_null()).collect();
            assert_eq!(prompts.len(), 1, "{thread}");
            assert!(!is_injected(prompts[0]["first_prompt"].as_str().expect("prompt")));
        }

        let index = golden::run(&Codex, files().last().expect("index"));
        let titles: Vec<(&str, &str)> = index["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| (s["session"].as_str().expect("id"), s["title"].as_str().expect("title")))
            .collect();
        // Applied in order, the last entry for A (the newest) wins.
        assert_eq!(titles, vec![(A, "Orders CSV export"), (C, "sync_batch 幂等键"), (A, "Orders CSV export (streaming)")]);
        assert_eq!(index["events"], json!([]));
    }

    #[test]
    fn codex_state_carries_across_runs() {
        // Parse A in two runs, the state going through JSON between them as ingest stores it.
        let f = file(A);
        let whole = run(A);
        let raw = std::fs::read(&f.path).expect("read");
        let lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
        let mut events = Vec::new();
        let mut state = State::new();
        for (i, line) in lines.iter().enumerate().take(lines.len() - 1) {
            if i == 10 {
                let stored = serde_json::to_vec(&state).expect("state json");
                state = serde_json::from_slice(&stored).expect("state back");
            }
            if let Line::Parsed(p) = Codex.parse_line(&f, &mut state, line, i as u64 + 1) {
                events.extend(p.events.into_iter().map(|e| serde_json::to_value(e).expect("json")));
            }
        }
        assert_eq!(&events, self::events(&whole));
        let late = events.last().expect("events");
        assert_eq!(late["session"], A);
        assert_eq!(late["git_branch"], "feat/orders-export");
        assert_eq!(late["agent_version"], "0.158.1");
        assert_eq!(late["project"], "demo-app");
    }

    #[test]
    fn codex_session_falls_back_to_the_file_name_and_follows_turn_context() {
        let f = synthetic(&format!("rollout-2026-10-22T09-00-00-{C}.jsonl.zst"));
        let mut state = State::new();
        let tc = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "turn_context", "payload": {"turn_id": "t", "cwd": "/home/dev/src/ledger_sync"}});
        assert_eq!(parsed(Codex.parse_line(&f, &mut state, tc.to_string().as_bytes(), 1)), Parsed::default());
        let user = json!({"timestamp": "2026-10-22T07:00:01.5Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "继续"}]}});
        let p = parsed(Codex.parse_line(&f, &mut state, user.to_string().as_bytes(), 2));
        assert_eq!(p.events[0].id, format!("codex:{C}:2"));
        assert_eq!(p.events[0].session, C);
        assert_eq!(p.events[0].time_unix_ms, 1_792_652_401_500);
        assert_eq!(p.events[0].project.as_deref(), Some("ledger_sync"));
        assert_eq!(p.sessions[0].first_prompt.as_deref(), Some("继续"));
        // A later run (state through JSON) still knows the session; a later cwd is followed.
        let mut state: State = serde_json::from_str(&serde_json::to_string(&state).expect("json")).expect("state");
        let tc2 = json!({"timestamp": "2026-10-22T07:01:00Z", "type": "turn_context", "payload": {"cwd": "/home/dev/demo-app"}});
        parsed(Codex.parse_line(&f, &mut state, tc2.to_string().as_bytes(), 3));
        let p = parsed(Codex.parse_line(&f, &mut state, user.to_string().as_bytes(), 4));
        assert_eq!(p.events[0].session, C);
        assert_eq!(p.events[0].project.as_deref(), Some("demo-app"));
        assert!(p.sessions.is_empty(), "first prompt given once");

        // No session_meta and no id in the name: an indexed line is malformed, a turn_context is not.
        let nameless = synthetic("rollout-broken.jsonl");
        let mut state = State::new();
        assert!(matches!(Codex.parse_line(&nameless, &mut state, tc.to_string().as_bytes(), 1), Line::Parsed(_)));
        assert!(matches!(Codex.parse_line(&nameless, &mut state, user.to_string().as_bytes(), 2), Line::Malformed(_)));
    }

    const F: &str = "019a1400-0c2d-7e5f-8a9b-0c1d2e3f4a5b";

    /// The fixture's thread A as a Codex home of its own below `dir`, and a fork of it made at
    /// its line `upto` (its own header, A's first `upto` lines copied as Codex copies them,
    /// then three lines of its own), in another day's folder. Codex copies the lines it loads,
    /// each as it was but for its time: not A's torn twelfth line, and, unless `newer` (a
    /// version that knows them), not its record of a type older versions do not know nor its
    /// legacy ghost snapshot. Returns the fork's file and A's path.
    fn forked_home(dir: &Path, upto: usize, newer: bool) -> (LogFile, PathBuf) {
        let a = file(A).path;
        let root = dir.join(".codex");
        let a_dir = root.join("sessions/2026/10/20");
        std::fs::create_dir_all(&a_dir).unwrap();
        let parent = a_dir.join(a.file_name().unwrap());
        std::fs::copy(&a, &parent).unwrap();
        let own = json!({"timestamp": "2026-10-22T09:00:00.000Z", "type": "session_meta", "payload": {"id": F, "timestamp": "2026-10-22T09:00:00.000Z", "cwd": "/home/dev/demo-app", "forked_from_id": A, "cli_version": "0.160.0", "source": "cli"}});
        let mut lines = vec![own.to_string()];
        let (mut unknown, mut ghost) = (0, 0);
        for (i, l) in std::fs::read_to_string(&a).unwrap().lines().take(upto).enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(l) else { continue };
            if v["type"] == "rollout_annotation" {
                unknown += 1;
                if !newer {
                    continue;
                }
            }
            if v["payload"]["type"] == "ghost_snapshot" {
                ghost += 1;
                if !newer {
                    continue;
                }
            }
            let rest = &l[l.find("\",\"type\"").unwrap()..];
            lines.push(format!("{{\"timestamp\":\"2026-10-22T09:00:00.{:03}Z{rest}", i + 1));
        }
        if upto > 14 {
            assert_eq!((unknown, ghost), (1, 1), "the fixture's lines Codex may leave out");
        }
        lines.push(json!({"timestamp": "2026-10-22T09:00:05.000Z", "type": "turn_context", "payload": {"turn_id": "t-fork", "cwd": "/home/dev/demo-app"}}).to_string());
        lines.push(json!({"timestamp": "2026-10-22T09:00:05.100Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Try the export with a streaming writer instead"}]}}).to_string());
        lines.push(json!({"timestamp": "2026-10-22T09:00:09.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Switched the export to a streaming writer."}]}}).to_string());
        let f_dir = root.join("sessions/2026/10/22");
        std::fs::create_dir_all(&f_dir).unwrap();
        let path = f_dir.join(format!("rollout-2026-10-22T11-00-00-{F}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let f = LogFile { source: Source::Codex, key: path.to_string_lossy().into_owned(), mirror: format!("sessions/2026/10/22/{}", path.file_name().unwrap().to_string_lossy()), path, format: FileFormat::Lines };
        (f, parent)
    }

    fn texts(v: &Value) -> Vec<String> {
        events(v).iter().map(|e| e["text"].as_str().unwrap().to_owned()).collect()
    }

    fn own_texts() -> Vec<String> {
        vec!["Try the export with a streaming writer instead".to_owned(), "Switched the export to a streaming writer.".to_owned()]
    }

    fn line_count(path: &Path) -> u64 {
        std::fs::read_to_string(path).unwrap().lines().count() as u64
    }

    #[test]
    fn codex_a_fork_indexes_its_own_lines_not_the_history_it_copied() {
        let whole = run(A);
        let a_lines = line_count(&file(A).path) as usize;
        assert!(events(&whole).len() >= 10, "the parent gives events: {whole}");
        for newer in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (fork, _) = forked_home(dir.path(), a_lines, newer);
            let got = golden::run(&Codex, &fork);
            assert_eq!(texts(&got), own_texts(), "{got}");
            // Its own lines keep their places in its ids; its first prompt is its own; the
            // parent's title, copied, is not the fork's.
            let n = line_count(&fork.path);
            let ids: Vec<&str> = events(&got).iter().map(|e| e["id"].as_str().unwrap()).collect();
            assert_eq!(ids, vec![format!("codex:{F}:{}", n - 1), format!("codex:{F}:{n}")]);
            let sessions = got["sessions"].as_array().unwrap();
            assert!(sessions.iter().all(|s| s["title"].is_null()), "{sessions:?}");
            assert_eq!(sessions.iter().filter_map(|s| s["first_prompt"].as_str()).collect::<Vec<_>>(), vec!["Try the export with a streaming writer instead"]);
            assert!(got["malformed"].as_array().unwrap().is_empty(), "{got}");
        }

        // A fork made halfway through: only the lines it copied are left out.
        let dir = tempfile::tempdir().unwrap();
        let (half, _) = forked_home(dir.path(), 12, false);
        assert_eq!(texts(&golden::run(&Codex, &half)), own_texts());

        // The parent compressed (Codex's cold rollouts), the plain file gone: found all the same.
        let dir = tempfile::tempdir().unwrap();
        let (fork, parent) = forked_home(dir.path(), a_lines, false);
        let zst = parent.with_extension("jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(std::fs::read(&parent).unwrap().as_slice(), 3).unwrap()).unwrap();
        std::fs::remove_file(&parent).unwrap();
        assert_eq!(texts(&golden::run(&Codex, &fork)), own_texts());

        // The parent gone: the copies are read as the fork's lines, as before (listed twice,
        // never lost).
        std::fs::remove_file(&zst).unwrap();
        let alone = golden::run(&Codex, &fork);
        let mut want = texts(&whole);
        want.extend(own_texts());
        assert_eq!(texts(&alone), want);
    }

    #[test]
    fn codex_a_fork_line_that_differs_from_its_parents_ends_the_copy_for_good() {
        let a_lines = line_count(&file(A).path) as usize;
        let dir = tempfile::tempdir().unwrap();
        let (fork, _) = forked_home(dir.path(), a_lines, false);
        // The fork's copy of A's sixth line (its first prompt) says something else: that line
        // and every one after it are the fork's own, though the later ones equal A's.
        let text = std::fs::read_to_string(&fork.path).unwrap();
        let changed = text.replacen("Add a CSV export", "Add an XLSX export", 1);
        assert_ne!(changed, text);
        std::fs::write(&fork.path, changed).unwrap();
        let got = golden::run(&Codex, &fork);
        let whole = run(A);
        let from_sixth: Vec<String> = events(&whole).iter().filter(|e| e["line"].as_u64().unwrap() >= 6).map(|e| e["text"].as_str().unwrap().replacen("Add a CSV export", "Add an XLSX export", 1)).collect();
        let mut want = from_sixth;
        want.extend(own_texts());
        assert_eq!(texts(&got), want);
    }

    /// A fork of a fork whose middle rollout is gone: the middle's copied header names its own
    /// parent, whose copied lines are left out; the middle's own lines, copied here only, are
    /// read as the fork's. Its parent gone too, everything is read, as before.
    #[test]
    fn codex_a_fork_of_a_fork_whose_middle_is_gone_leaves_out_the_first_parents_lines() {
        const F1: &str = "019a1401-0000-7000-8000-000000000001";
        let a_lines = line_count(&file(A).path) as usize;
        let dir = tempfile::tempdir().unwrap();
        // `forked_home` makes the fork F of A; this test's F2 copies F as its missing middle.
        let (f, parent) = forked_home(dir.path(), a_lines, false);
        let f_lines: Vec<String> = std::fs::read_to_string(&f.path).unwrap().lines().map(str::to_owned).collect();
        let middle_header = f_lines[0].replace(F, F1);
        let own = json!({"timestamp": "2026-10-23T09:00:00.000Z", "type": "session_meta", "payload": {"id": C, "cwd": "/home/dev/demo-app", "forked_from_id": F1, "source": "cli"}});
        let mut lines = vec![own.to_string(), middle_header];
        lines.extend(f_lines[1..].iter().cloned());
        lines.push(json!({"timestamp": "2026-10-23T09:00:05.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And now in the fork of the fork"}]}}).to_string());
        std::fs::remove_file(&f.path).unwrap();
        let path = f.path.with_file_name(format!("rollout-2026-10-23T11-00-00-{C}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let f2 = LogFile { path: path.clone(), key: path.to_string_lossy().into_owned(), ..f.clone() };
        let mut want = own_texts();
        want.push("And now in the fork of the fork".to_owned());
        assert_eq!(texts(&golden::run(&Codex, &f2)), want);
        // The first parent gone as well: everything is the fork's.
        std::fs::remove_file(&parent).unwrap();
        fork::forget_cached();
        assert_eq!(texts(&golden::run(&Codex, &f2)).len(), events(&run(A)).len() + 3);
    }

    /// Parses `fork`'s lines with `state`, a run ending (the state saved, the process gone)
    /// after every `every` lines, `between` called then with the number of lines read; the
    /// events' texts.
    fn in_runs(fork: &LogFile, state: &mut State, every: usize, between: &mut dyn FnMut(usize)) -> Vec<String> {
        let text = std::fs::read_to_string(&fork.path).unwrap();
        let mut got = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if i > 0 && i % every == 0 {
                *state = serde_json::from_str(&serde_json::to_string(&*state).unwrap()).unwrap();
                fork::forget_cached();
                between(i);
            }
            got.extend(parsed(Codex.parse_line(fork, state, line.as_bytes(), i as u64 + 1)).events.into_iter().map(|e| e.text));
        }
        got
    }

    #[test]
    fn codex_a_fork_read_over_several_runs_and_processes_leaves_out_the_same_lines() {
        let a_lines = line_count(&file(A).path) as usize;
        let dir = tempfile::tempdir().unwrap();
        let (fork, parent) = forked_home(dir.path(), a_lines, false);
        let mut state = State::new();
        assert_eq!(in_runs(&fork, &mut state, 5, &mut |_| {}), own_texts());
        assert_eq!(state.get(fork::COPIES_KEY), Some(&Value::from(line_count(&fork.path) - 4)));
        assert!(!state.contains_key(fork::PARENT_KEY), "the copy ended: {state:?}");

        // The parent compressed when cold, then archived, between the runs: found again by
        // its id.
        let dir = tempfile::tempdir().unwrap();
        let (fork, parent2) = forked_home(dir.path(), a_lines, false);
        let archived = dir.path().join(".codex/archived_sessions");
        let mut state = State::new();
        let got = in_runs(&fork, &mut state, 7, &mut |read| match read {
            7 => {
                let zst = parent2.with_extension("jsonl.zst");
                std::fs::write(&zst, zstd::encode_all(std::fs::read(&parent2).unwrap().as_slice(), 3).unwrap()).unwrap();
                std::fs::remove_file(&parent2).unwrap();
            }
            14 => {
                std::fs::create_dir_all(&archived).unwrap();
                let zst = parent2.with_extension("jsonl.zst");
                std::fs::rename(&zst, archived.join(zst.file_name().unwrap())).unwrap();
            }
            _ => {}
        });
        assert_eq!(got, own_texts());

        // A parent read while it was shorter than the fork's copy (it went on after an earlier
        // fork): read again when the copy runs past what was read.
        let dir = tempfile::tempdir().unwrap();
        let (short, parent3) = forked_home(dir.path(), 6, false);
        let full = std::fs::read(&parent3).unwrap();
        let six: Vec<&[u8]> = full.split_inclusive(|&b| b == b'\n').take(6).collect();
        std::fs::write(&parent3, six.concat()).unwrap();
        assert_eq!(texts(&golden::run(&Codex, &short)), own_texts());
        std::fs::write(&parent3, &full).unwrap();
        let (longer, _) = forked_home(dir.path(), a_lines, false);
        assert_eq!(texts(&golden::run(&Codex, &longer)), own_texts());
        assert!(parent.is_file());
    }

    /// A rollout written before the `{timestamp, type, payload}` envelope (Codex builds of
    /// 2025): its header gives the session and the time, its bare items are read as response
    /// items are, its state lines give nothing; a line without a type anywhere else is still
    /// malformed.
    #[test]
    fn codex_a_rollout_written_before_the_envelope_is_read() {
        const T: &str = "5973b6c0-94b8-487b-a530-2aeb6098ae0e";
        let f = synthetic(&format!("rollout-2025-05-07T17-24-21-{T}.jsonl"));
        let lines = [
            json!({"id": T, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": null}),
            json!({"record_type": "state"}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "Port the scheduler to tokio"}]}),
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"test\"]}", "call_id": "c1"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "test result: ok"}),
            json!({"type": "message", "id": null, "role": "assistant", "content": [{"type": "output_text", "text": "Ported the scheduler."}]}),
            json!({"record_type": "state"}),
            json!({"id": "x", "timestamp": "2025-05-07T17:30:00Z"}),
        ];
        let mut state = State::new();
        let (mut events, mut sessions, mut malformed) = (Vec::new(), Vec::new(), Vec::new());
        for (i, l) in lines.iter().enumerate() {
            match Codex.parse_line(&f, &mut state, l.to_string().as_bytes(), i as u64 + 1) {
                Line::Parsed(p) => {
                    events.extend(p.events);
                    sessions.extend(p.sessions);
                }
                Line::Malformed(r) => malformed.push((i + 1, r)),
            }
        }
        let got: Vec<(String, Role, EventKind, &str, i64)> = events.iter().map(|e| (e.id.clone(), e.role, e.kind, e.text.as_str(), e.time_unix_ms)).collect();
        let t = parse_time("2025-05-07T17:24:21.123Z").unwrap();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!((got[0].0.as_str(), got[0].1, got[0].2, got[0].3, got[0].4), (format!("codex:{T}:3").as_str(), Role::User, EventKind::Message, "Port the scheduler to tokio", t));
        assert_eq!((got[1].2, got[2].2, got[3].3), (EventKind::ToolUse, EventKind::ToolResult, "Ported the scheduler."));
        assert!(sessions.iter().any(|s| s.first_prompt.as_deref() == Some("Port the scheduler to tokio")), "{sessions:?}");
        assert_eq!(malformed.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![8], "a second header is not one");
        // A line without a type in a rollout of today is malformed, and bare items are not read.
        let mut state = State::new();
        let own = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "session_meta", "payload": {"id": B, "cwd": "/home/dev/demo-app"}});
        let f = synthetic(&format!("rollout-2026-10-22T09-00-00-{B}.jsonl"));
        assert!(matches!(Codex.parse_line(&f, &mut state, own.to_string().as_bytes(), 1), Line::Parsed(_)));
        assert!(matches!(Codex.parse_line(&f, &mut state, lines[0].to_string().as_bytes(), 2), Line::Malformed(_)));
        assert_eq!(parsed(Codex.parse_line(&f, &mut state, lines[2].to_string().as_bytes(), 3)), Parsed::default());
    }

    /// An id longer than any agent writes makes its line malformed: readers keep ids in the
    /// state that every record of the file carries.
    #[test]
    fn codex_an_id_longer_than_any_agent_writes_is_malformed() {
        let f = synthetic(&format!("rollout-2026-10-22T09-00-00-{B}.jsonl"));
        let long = "x".repeat(LINE_ID_BYTES_MAX + 1);
        let mut state = State::new();
        let meta = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "session_meta", "payload": {"id": long, "cwd": "/home/dev/demo-app"}});
        assert!(matches!(Codex.parse_line(&f, &mut state, meta.to_string().as_bytes(), 1), Line::Malformed(r) if r.contains("longer than")));
        assert!(state.is_empty(), "{state:?}");
        let legacy = json!({"id": long, "timestamp": "2025-05-07T17:24:21.123Z"});
        assert!(matches!(Codex.parse_line(&f, &mut state, legacy.to_string().as_bytes(), 1), Line::Malformed(_)));
        let fine = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "session_meta", "payload": {"id": B, "cwd": "/home/dev/demo-app"}});
        assert!(matches!(Codex.parse_line(&f, &mut state, fine.to_string().as_bytes(), 1), Line::Parsed(_)));
    }

    #[test]
    fn codex_forked_history_header_does_not_change_the_session() {
        let f = synthetic(&format!("rollout-2026-10-22T09-00-00-{B}.jsonl"));
        let mut state = State::new();
        let own = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "session_meta", "payload": {"id": B, "cwd": "/home/dev/demo-app", "forked_from_id": A, "cli_version": "0.160.0", "source": "cli"}});
        let copied = json!({"timestamp": "2026-10-22T07:00:00Z", "type": "session_meta", "payload": {"id": A, "cwd": "/home/dev/other", "cli_version": "0.150.0", "git": {"branch": "old"}}});
        let p = parsed(Codex.parse_line(&f, &mut state, own.to_string().as_bytes(), 1));
        assert_eq!(p.sessions, vec![SessionChange { session: B.into(), project: Some("demo-app".into()), title: None, first_prompt: None, parent: None }]);
        assert_eq!(parsed(Codex.parse_line(&f, &mut state, copied.to_string().as_bytes(), 2)), Parsed::default());
        assert_eq!(state_str(&state, "session"), Some(B));
        assert_eq!(state_str(&state, "cwd"), Some("/home/dev/demo-app"));
        assert_eq!(state_str(&state, "version"), Some("0.160.0"));
    }

    #[test]
    fn codex_injected_context_is_recognised() {
        for t in [
            "# AGENTS.md instructions for /home/dev/demo-app\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
            "  <environment_context>\n<cwd>/x</cwd>\n</environment_context>",
            "<user_instructions>be brief</user_instructions>",
            "<permissions instructions>\nsandbox\n</permissions instructions>",
            "<TURN_ABORTED>interrupted</TURN_ABORTED>",
            "<skill>\n<name>x</name>\n</skill>",
            "<some_future_context>\nsomething\n</some_future_context>\n",
        ] {
            assert!(is_injected(t), "{t}");
        }
        for t in ["Add a CSV export", "<div>hello</div>", "<b>bold</b> claim", "<environment_ctx is a typo", "为 sync_batch 加上幂等键", "🚀", ""] {
            assert!(!is_injected(t), "{t}");
        }
    }

    #[test]
    fn codex_thread_id_comes_from_the_file_name_only_when_it_is_a_uuid() {
        assert_eq!(thread_id_of(Path::new(&format!("/x/rollout-2026-10-20T16-03-11-{A}.jsonl"))).as_deref(), Some(A));
        assert_eq!(thread_id_of(Path::new(&format!("/x/rollout-2026-10-20T16-03-11-{A}.jsonl.zst"))).as_deref(), Some(A));
        assert_eq!(thread_id_of(Path::new("/x/rollout-2026-10-20T16-03-11-not-a-uuid.jsonl")), None);
        assert_eq!(thread_id_of(Path::new("/x/rollout-ééééééééééééééééééééééééééééééééééééé.jsonl")), None);
        assert_eq!(thread_id_of(Path::new(&format!("/x/rollout-{A}.json"))), None);
    }

    #[test]
    fn codex_memory_files() {
        let home = homes();
        let got: Vec<(PathBuf, MemoryScope)> = Codex.memory_files(&home, &[], &mut Vec::new()).into_iter().map(|m| (m.path, m.scope)).collect();
        assert_eq!(
            got,
            vec![
                (home.codex.join("AGENTS.md"), MemoryScope::User),
                (home.codex.join("memories/MEMORY.md"), MemoryScope::User),
                (home.codex.join("memories/memory_summary.md"), MemoryScope::User),
            ]
        );

        let dir = tempfile::tempdir().expect("tempdir");
        let h = Homes::under(dir.path());
        let with_override = dir.path().join("demo-app");
        let plain = dir.path().join("src/ledger_sync");
        let empty = dir.path().join("empty");
        for d in [&h.codex, &with_override, &plain, &empty] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        for p in [h.codex.join("AGENTS.md"), h.codex.join("AGENTS.override.md"), with_override.join("AGENTS.md"), with_override.join("AGENTS.override.md"), plain.join("AGENTS.md")] {
            std::fs::write(p, "- rule\n").expect("write");
        }
        let got = Codex.memory_files(&h, &[Project::here(with_override.clone()), Project::here(plain.clone()), Project::here(empty)], &mut Vec::new());
        let got: Vec<(PathBuf, MemoryScope, Option<String>)> = got.into_iter().map(|m| (m.path, m.scope, m.project)).collect();
        assert_eq!(
            got,
            vec![
                (h.codex.join("AGENTS.override.md"), MemoryScope::User, None),
                (with_override.join("AGENTS.override.md"), MemoryScope::Project, Some(with_override.to_string_lossy().into_owned())),
                (plain.join("AGENTS.md"), MemoryScope::Project, Some(plain.to_string_lossy().into_owned())),
            ]
        );
    }

    const TYPES: &[&str] = &["session_meta", "turn_context", "response_item", "compacted", "event_msg", "world_state", "x"];
    const PAYLOAD_TYPES: &[&str] = &[
        "message", "reasoning", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "local_shell_call",
        "web_search_call", "image_generation_call", "tool_search_call", "ghost_snapshot", "user_message", "agent_message", "thread_name_updated", "error",
    ];
    const KEYS: &[&str] = &[
        "type", "role", "content", "text", "id", "cwd", "git", "branch", "source", "subagent", "thread_spawn", "parent_thread_id", "output",
        "arguments", "input", "name", "summary", "message", "thread_name", "thread_id", "action", "command", "query", "metadata", "exit_code",
        "cli_version", "url",
    ];

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z_<>#{}\":\\\\ 中é🚀-]{0,16}".prop_map(Value::String),
            proptest::sample::select(PAYLOAD_TYPES).prop_map(Value::from),
            Just(Value::from("{\"output\":\"ok\",\"metadata\":{\"exit_code\":2}}")),
            Just(Value::from("<environment_context>x</environment_context>")),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(proptest::sample::select(KEYS), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            ]
        })
    }

    /// A record shaped like a rollout line, with random payload fields.
    fn record() -> impl Strategy<Value = Value> {
        (
            proptest::sample::select(TYPES),
            prop_oneof![Just(json!("2026-10-20T14:03:11.402Z")), Just(json!("yesterday")), leaf()],
            proptest::sample::select(PAYLOAD_TYPES),
            value(),
        )
            .prop_map(|(ty, ts, pty, fields)| {
                let mut payload = match fields {
                    Value::Object(m) => m,
                    other => [("content".to_owned(), other)].into_iter().collect(),
                };
                payload.insert("type".into(), Value::from(pty));
                json!({"timestamp": ts, "type": ty, "payload": payload})
            })
    }

    proptest! {
        #[test]
        fn codex_parse_line_never_panics_on_bytes(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..256), 1..8)) {
            let mut state = State::new();
            let mut index_state = State::new();
            let rollout = synthetic(&format!("rollout-2026-10-22T09-00-00-{A}.jsonl"));
            let index = synthetic("session_index.jsonl");
            for (i, line) in lines.iter().enumerate() {
                let _ = Codex.parse_line(&rollout, &mut state, line, i as u64 + 1);
                let _ = Codex.parse_line(&index, &mut index_state, line, i as u64 + 1);
            }
        }

        #[test]
        fn codex_parse_line_never_panics_on_json_ish_lines(records in proptest::collection::vec(record(), 1..8), cut in any::<usize>(), flip in any::<(usize, u8)>()) {
            let mut state = State::new();
            let rollout = synthetic("rollout-no-id.jsonl");
            for (i, r) in records.iter().enumerate() {
                let text = r.to_string();
                let _ = Codex.parse_line(&rollout, &mut state, text.as_bytes(), i as u64 + 1);
                // The same line torn at any byte, and with one byte changed.
                let bytes = text.as_bytes();
                let _ = Codex.parse_line(&rollout, &mut state, &bytes[..cut % (bytes.len() + 1)], i as u64 + 1);
                let mut changed = bytes.to_vec();
                let at = flip.0 % changed.len();
                changed[at] = flip.1;
                let _ = Codex.parse_line(&rollout, &mut state, &changed, i as u64 + 1);
            }
        }

        #[test]
        fn codex_parse_line_never_panics_on_damaged_fixture_lines(n in 0usize..32, cut in any::<usize>(), flip in any::<(usize, u8)>()) {
            let f = file(B);
            let raw = std::fs::read(&f.path).expect("read");
            let lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
            let line = lines[n % lines.len()];
            let mut state = State::new();
            let _ = Codex.parse_line(&f, &mut state, &line[..cut % (line.len() + 1)], 1);
            let mut changed = line.to_vec();
            let at = flip.0 % changed.len();
            changed[at] = flip.1;
            let _ = Codex.parse_line(&f, &mut state, &changed, 2);
        }
    }
}

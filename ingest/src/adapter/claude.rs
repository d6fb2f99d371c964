//! Claude Code: `<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<escaped cwd>/<session>.jsonl`,
//! sub-agents in `<session>/subagents/*.jsonl`; one JSON record per line, one line per content
//! block. Event id `claude-code:<uuid>` (a second block on one line: `<uuid>:<n>`). The title:
//! the last `custom-title`, else the last `ai-title`, else the last legacy `summary` whose
//! `leafUuid` is a line of the file (read after it, or among the last 8 conversation lines
//! before it; a file resumed from others starts with their summaries, whose leaves it does not
//! hold). A resumed session's file begins with the lines of the session it resumes, uuids and
//! times as they were: they give the same event ids, and the state keeps each such event in
//! the session it was first read in (`projections/src/state`, `put_rec`); the resumed
//! session's first prompt is the copied one (its conversation's first). A prompt queued while
//! the agent worked (`attachment.type: queued_command`) is the person's message, its text from
//! its blocks too; one queued by a background task (`commandMode` other than `prompt`), by
//! another session (`origin.kind` other than `human`) or marked `isMeta` is meta, as are a
//! task's `<task-notification>` and the `[Request interrupted by user…]` marker. A rewind
//! (a prompt sent in the place of an earlier one: the same `parentUuid`) leaves the branch it
//! left in the file: that prompt and every line after it, up to the new one, are abandoned
//! (`Parsed::abandons_from`, recorded as superseded; the latest 64 prompts are kept, `prompts`;
//! the same prompt written again, its uuid, is no rewind). A user line without a parent is sent
//! in the place of the one before it, the conversation's start (`root_prompt`), once a later
//! line named that one as its parent (a log that chains its lines); a system line without a
//! parent (a compaction's boundary) starts the conversation again.

use std::io::Read;
use std::path::{Path, PathBuf};

use origin_engine::record::{EventKind, Role, SessionChange};
use serde_json::Value;

use super::{first_prompt_abandoned, first_prompt_at, state_array, Adapter, FIRST_PROMPT_KEY, Line, LogFile, MemoryFile, MemoryScope, Parsed, Project, State};
use crate::json::{Json, Shape};
use crate::limits::LINE_ID_BYTES_MAX;
use crate::source::{Homes, Source};
use crate::text::{content_text_json as content_text, event, first_prompt, parse_time, project_of, session_field};
use crate::walk;

/// The Claude Code adapter.
pub struct Claude;

/// What a line is parsed into: `toolUseResult` repeats a tool's output (often its whole text)
/// in another shape, `signature` (of thinking) and `usage` are never read, and `data` is an
/// image's or a document's base64 (megabytes in a prompt with a screenshot; a document block
/// is kept as its JSON, without it), so they are left out; a tool call's `input` is kept as
/// the JSON text the agent wrote, which is its event text.
const CLAUDE_SHAPE: Shape<'static> = Shape { skip: &["toolUseResult", "signature", "usage", "data"], raw: &["input"] };

/// The session's title so far: last `custom-title` > last `ai-title` > last `summary` whose
/// `leafUuid` is in the file.
fn title_of(state: &State) -> Option<String> {
    ["custom_title", "ai_title", "summary"].iter().find_map(|k| state.get(*k).and_then(Value::as_str)).map(str::to_owned)
}

/// Adapter state: the uuids of the last conversation lines read, oldest first.
const RECENT_UUIDS: &str = "recent_uuids";
/// How many of them: a summary written once its conversation ended follows its leaf by a few
/// lines (turn durations, titles, state lines).
const RECENT_UUIDS_MAX: usize = 8;
/// Adapter state: legacy summaries whose leaf was not read yet, by `leafUuid`: `[line, text]`.
const PENDING_SUMMARIES: &str = "pending_summaries";
/// State key: the latest prompts of the file's own conversation (not a sidechain's) that have a
/// parent, as `[parentUuid, line, uuid]`, at most [`PROMPTS_KEPT`]: a later prompt with the
/// `parentUuid` of one of them is an edit of it (a rewind), which abandons it and what followed.
const PROMPTS: &str = "prompts";
/// Most prompts kept under [`PROMPTS`]: a rewind to an earlier one abandons nothing.
const PROMPTS_KEPT: usize = 64;
/// State key: the latest user line of the file's own conversation without a parent (its start:
/// a prompt, a command's lines, a picture alone), as `[line, uuid]`, and `[line, uuid, true]`
/// once a later line names it as its parent (the log chains its lines, as Claude Code does): a
/// later user line without a parent is then sent in its place (a rewind to the conversation's
/// start). Taken off at a system line without a parent (a compaction's boundary: the
/// conversation starts again from there).
const ROOT_PROMPT: &str = "root_prompt";
/// Adapter state: the line of the summary that titles the session.
const SUMMARY_LINE: &str = "summary_line";
/// Most legacy summaries kept waiting for their leaf (a file resumed many times starts with
/// one per earlier conversation, whose leaves are in other files); the earliest go first.
const PENDING_SUMMARIES_MAX: usize = 16;

/// A legacy `summary` (at `line_no`) whose leaf is in the file: it titles the session if no
/// later summary does already. (A summary names the conversation that ends at its `leafUuid`;
/// a file resumed from others starts with the summaries of theirs, whose leaves it does not
/// hold: those are not its title.)
fn summary_found(state: &mut State, line_no: u64, text: &str) {
    if state.get(SUMMARY_LINE).and_then(Value::as_u64).is_some_and(|l| l > line_no) {
        return;
    }
    state.insert("summary".into(), Value::String(session_field(text)));
    state.insert(SUMMARY_LINE.into(), Value::from(line_no));
}

/// Most bytes of a tool's output saved beside the transcript that are read.
const PERSISTED_OUTPUT_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// The full output of a tool result too large for the transcript: Claude Code writes it to
/// `<session>/tool-results/<id>.txt` beside the log and leaves in the line a preview that names
/// it (`<persisted-output>\nOutput too large (40.2KB). Full output saved to: <path>\n\nPreview
/// (first 2KB): …`). The file is looked for by its session folder's and its own name, beside
/// the log being read (the path in the line is the recording machine's): `None` when the text
/// is no such preview, or the file is not there or too large (the preview stands). Bytes that
/// are not UTF-8 are replaced (the raw line stays as written).
fn persisted_output(log: &Path, text: &str) -> Option<String> {
    let rest = text.strip_prefix("<persisted-output>")?;
    let (_, after) = rest.split_once("Full output saved to: ")?;
    let saved = Path::new(after.lines().next()?.trim());
    let name = saved.file_name()?;
    let tool_results = saved.parent()?;
    let session = tool_results.parent()?.file_name()?;
    if tool_results.file_name()? != "tool-results" {
        return None;
    }
    let here = log.parent()?;
    // A session's log sits beside its folder; a sub-agent's inside it (`<session>/subagents/`).
    let candidates = [here.join(session), here.parent().map_or_else(PathBuf::new, Path::to_path_buf)];
    let folder = candidates.iter().find(|c| c.file_name() == Some(session) && c.is_dir())?;
    let path = folder.join("tool-results").join(name);
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > PERSISTED_OUTPUT_BYTES_MAX {
        return None;
    }
    let mut bytes = Vec::new();
    crate::bytes::open_regular(&path).ok()?.take(PERSISTED_OUTPUT_BYTES_MAX).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The whole output a line's `toolUseResult` keeps (a command's `stdout`, then its `stderr`;
/// else its `content` text), read only for a tool result whose text is a `<persisted-output>`
/// preview whose file is gone (cleaned up, or the log copied from another machine without it):
/// `toolUseResult` is otherwise left out of parsing ([`CLAUDE_SHAPE`]).
fn full_result(line: &[u8]) -> Option<String> {
    let v = Json::parse(line, Shape { skip: &["signature", "usage", "data"], raw: &["input"] }).ok()?;
    let r = v.get("toolUseResult")?;
    if let Some(out) = r.str_of("stdout") {
        let err = r.str_of("stderr").filter(|e| !e.trim().is_empty());
        return Some(match err {
            Some(e) => format!("{out}\n{e}"),
            None => out.to_owned(),
        });
    }
    r.str_of("content").map(str::to_owned).filter(|c| !c.is_empty())
}

/// The `type` an auto-memory topic file's front matter gives (`user`, `feedback`, `project`,
/// `reference`), read from its first 4 KiB; `None` without one.
fn memory_type(path: &Path) -> Option<String> {
    let mut head = Vec::new();
    crate::bytes::open_regular(path).ok()?.take(4096).read_to_end(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    lines.take_while(|l| l.trim_end() != "---").find_map(|l| l.strip_prefix("type:").map(|t| t.trim().to_owned()))
}

/// Injected wrappers that look like user text but are not what the person typed.
fn is_wrapper(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
        "<system-reminder>",
        "Caveat: The messages below were generated by the user while running local commands",
        // A `!` shell command and its output, and what the IDE says it has open or selected.
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<ide_opened_file>",
        "<ide_selection>",
        // A background task's notice, and the marker of a turn the person stopped.
        "<task-notification>",
        "[Request interrupted by user",
    ]
        .iter()
        .any(|w| t.starts_with(w))
}

/// Notes the prompt `uuid` of line `line_no`, whose parent is `parent`, among the
/// latest ([`PROMPTS`]); when one of them has the same parent, it was rewound: gives its line
/// (where what it abandoned begins) and forgets it and those after it. The same prompt written
/// again (its uuid: Claude Code writes a line twice at times, or its history again) is none.
fn rewound_to(state: &mut State, parent: &str, uuid: &str, line_no: u64) -> Option<u64> {
    let prompts = state_array(state, PROMPTS);
    let same = prompts.iter().rposition(|p| p.get(0).and_then(Value::as_str) == Some(parent));
    if same.is_some_and(|k| prompts[k].get(2).and_then(Value::as_str) == Some(uuid)) {
        return None;
    }
    let from = same.and_then(|k| {
        let line = prompts[k].get(1).and_then(Value::as_u64);
        prompts.truncate(k);
        line
    });
    prompts.push(serde_json::json!([parent, line_no, uuid]));
    if prompts.len() > PROMPTS_KEPT {
        prompts.remove(0);
    }
    from
}

/// Notes a line of the file's own conversation (not a sidechain's) whose parent is `parent`:
/// the root prompt it names is chained ([`ROOT_PROMPT`]).
fn root_chained(state: &mut State, parent: &str) {
    if let Some(Value::Array(root)) = state.get_mut(ROOT_PROMPT)
        && root.len() == 2
        && root[1].as_str() == Some(parent)
    {
        root.push(Value::Bool(true));
    }
}

/// Notes the user line `uuid` (line `line_no`), which has no parent, as the conversation's
/// start ([`ROOT_PROMPT`]); when the start before it was chained (its log names parents, so a
/// line without one is sent in the start's place), gives that start's line, where what it
/// abandoned begins, and forgets the prompts after it. The same line written again is none.
fn root_rewound(state: &mut State, uuid: &str, line_no: u64) -> Option<u64> {
    let held = state.get(ROOT_PROMPT).and_then(Value::as_array);
    if held.is_some_and(|r| r.get(1).and_then(Value::as_str) == Some(uuid)) {
        return None;
    }
    let from = held.filter(|r| r.get(2).and_then(Value::as_bool) == Some(true)).and_then(|r| r.first()).and_then(Value::as_u64);
    if let Some(from) = from {
        state_array(state, PROMPTS).retain(|p| p.get(1).and_then(Value::as_u64).is_some_and(|line| line < from));
    }
    state.insert(ROOT_PROMPT.into(), serde_json::json!([line_no, uuid]));
    from
}

impl Adapter for Claude {
    fn source(&self) -> Source {
        Source::ClaudeCode
    }

    fn logs_copy_their_folder(&self) -> bool {
        true
    }

    fn line_time(&self, line: &[u8]) -> Option<i64> {
        #[derive(serde::Deserialize)]
        struct Dated<'a> {
            #[serde(borrow)]
            timestamp: Option<std::borrow::Cow<'a, str>>,
        }
        serde_json::from_slice::<Dated<'_>>(line).ok()?.timestamp.as_deref().and_then(parse_time)
    }

    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
        let root = homes.claude.join("projects");
        let mut problems = Vec::new();
        let files = walk::files(&root, &|p| p.extension().is_some_and(|e| e == "jsonl"), &mut problems)
            .into_iter()
            // Mirrors below `projects/`, as the spec's `sources` example shows (`raw/claude-code/-home-dev-demo-app/…`).
            .map(|path| LogFile::lines(Source::ClaudeCode, &root, path))
            .collect();
        (files, problems)
    }

    fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
        let v = match Json::parse(line, CLAUDE_SHAPE) {
            Ok(v @ Json::Object(_)) => v,
            Ok(_) => return Line::Malformed("not a JSON object".into()),
            Err(e) => return Line::Malformed(format!("invalid JSON: {e}")),
        };
        let Some(ty) = v.str_of("type") else { return Line::Malformed("no type".into()) };
        if let Some(key) = ["uuid", "sessionId", "agentId", "leafUuid", "parentUuid"].into_iter().find(|k| v.str_of(k).is_some_and(|id| id.len() > LINE_ID_BYTES_MAX)) {
            return Line::Malformed(format!("{key} longer than {LINE_ID_BYTES_MAX} bytes"));
        }
        let session = v.str_of("sessionId").map(str::to_owned).or_else(|| state.get("session").and_then(Value::as_str).map(str::to_owned));
        let mut out = Parsed::default();
        match ty {
            "custom-title" | "ai-title" | "summary" => {
                match ty {
                    "custom-title" | "ai-title" => {
                        let (key, field) = if ty == "custom-title" { ("custom_title", "customTitle") } else { ("ai_title", "aiTitle") };
                        if let Some(t) = v.str_of(field) {
                            state.insert(key.into(), Value::String(session_field(t)));
                        }
                    }
                    _ => {
                        if let Some(text) = v.str_of("summary") {
                            match v.str_of("leafUuid") {
                                // Its leaf was read already (a summary written after its
                                // conversation), or it names none.
                                Some(leaf)
                                    if !state
                                        .get(RECENT_UUIDS)
                                        .and_then(Value::as_array)
                                        .is_some_and(|r| r.iter().any(|u| u.as_str() == Some(leaf))) =>
                                {
                                    let pending = state.entry(PENDING_SUMMARIES).or_insert_with(|| Value::Object(Default::default()));
                                    if let Value::Object(p) = pending {
                                        p.insert(leaf.to_owned(), serde_json::json!([line_no, session_field(text)]));
                                        while p.len() > PENDING_SUMMARIES_MAX {
                                            let first = p.iter().min_by_key(|(_, v)| v[0].as_u64()).map(|(k, _)| k.clone());
                                            match first {
                                                Some(k) => p.remove(&k),
                                                None => break,
                                            };
                                        }
                                    }
                                }
                                _ => summary_found(state, line_no, text),
                            }
                        }
                    }
                }
                if let Some(s) = session.as_ref().filter(|_| !state.contains_key("session")) {
                    state.insert("session".into(), Value::String(s.clone()));
                }
                if let (Some(session), Some(title)) = (session, title_of(state)) {
                    out.sessions.push(SessionChange { session, project: None, title: Some(title), first_prompt: None, parent: None });
                }
                return Line::Parsed(out);
            }
            "user" | "assistant" | "system" | "attachment" => {}
            // Session-state lines (mode, last-prompt, file-history-snapshot, queue-operation, ...)
            // and types this build does not know: nothing to index, nothing wrong.
            _ => return Line::Parsed(out),
        }
        let (Some(uuid), Some(session)) = (v.str_of("uuid"), session) else {
            return Line::Malformed(format!("{ty} line without uuid or sessionId"));
        };
        let Some(time) = v.str_of("timestamp").and_then(parse_time) else {
            return Line::Malformed(format!("{ty} line without a valid timestamp"));
        };
        // A sub-agent's lines (`isSidechain`, with the `agentId` its file is named by) carry the
        // parent's `sessionId`, but they are not the person's conversation: its first user line
        // is the parent agent's prompt. They form a session of their own,
        // `<session>/agent-<agentId>`, whose parent is the session, as the other agents' sub-agents do.
        let sidechain = v.get("isSidechain").and_then(Json::as_bool).unwrap_or(false);
        let (session, parent) = match v.str_of("agentId").filter(|a| sidechain && !a.is_empty()) {
            Some(agent) => (format!("{session}/agent-{agent}"), Some(session)),
            None => (session, None),
        };
        // A legacy summary of the conversation ending here titles the session.
        if let Value::Array(recent) = state.entry(RECENT_UUIDS).or_insert_with(|| Value::Array(Vec::new())) {
            recent.push(Value::String(uuid.to_owned()));
            if recent.len() > RECENT_UUIDS_MAX {
                recent.remove(0);
            }
        }
        let waiting = state.get_mut(PENDING_SUMMARIES).and_then(Value::as_object_mut).and_then(|p| p.remove(uuid));
        if state.get(PENDING_SUMMARIES).and_then(Value::as_object).is_some_and(serde_json::Map::is_empty) {
            state.remove(PENDING_SUMMARIES);
        }
        // (The title can change here only by a summary that waited for this line.)
        let mut retitled = false;
        if let Some(Value::Array(found)) = waiting
            && let (Some(line), Some(text)) = (found.first().and_then(Value::as_u64), found.get(1).and_then(Value::as_str))
        {
            let before = title_of(state);
            summary_found(state, line, text);
            retitled = title_of(state) != before;
        }
        // A title line seen before the session was known (a legacy `summary` has no sessionId)
        // could not name its session: give it now.
        let first_seen = state.insert("session".into(), Value::String(session.clone())).is_none();
        if first_seen || retitled {
            if let Some(title) = title_of(state) {
                out.sessions.push(SessionChange { session: session.clone(), project: None, title: Some(title), first_prompt: None, parent: None });
            }
        }
        let cwd = v.str_of("cwd");
        let branch = v.str_of("gitBranch");
        let version = v.str_of("version");
        // The person's prompt only: a sidechain without its own session (no `agentId`) is not it.
        let may_prompt = !sidechain || parent.is_some();
        let meta_line = v.get("isMeta").and_then(Json::as_bool).unwrap_or(false)
            || v.get("isCompactSummary").and_then(Json::as_bool).unwrap_or(false);
        let mut push = |n: usize, role: Role, kind: EventKind, text: String| {
            let id = if n == 0 { format!("claude-code:{uuid}") } else { format!("claude-code:{uuid}:{n}") };
            let mut e = event(id, time, &session, cwd, role, kind, text, line_no);
            e.git_branch = branch.map(str::to_owned);
            e.agent_version = version.map(str::to_owned);
            out.events.push(e);
        };
        let mut prompt: Option<String> = None;
        match ty {
            "system" => {
                let text = v.str_of("content").map(str::to_owned).or_else(|| v.str_of("subtype").map(str::to_owned)).unwrap_or_default();
                push(0, Role::System, EventKind::System, text);
            }
            "attachment" => {
                let a = v.member("attachment");
                if a.str_of("type") == Some("queued_command") {
                    // A prompt typed while the agent worked (its text, or its blocks with a
                    // pasted image); a background task's notice or a message from another
                    // session queued the same way is not the person's.
                    let text = content_text(a.member("prompt"));
                    let mode_typed = a.str_of("commandMode").is_none_or(|m| m == "prompt");
                    let from_person = a.member("origin").str_of("kind").is_none_or(|k| k == "human");
                    let typed = mode_typed && from_person && !meta_line && !a.get("isMeta").and_then(Json::as_bool).unwrap_or(false) && !is_wrapper(&text);
                    push(0, Role::User, if typed { EventKind::Message } else { EventKind::Meta }, text);
                } else {
                    push(0, Role::System, EventKind::Meta, a.to_string());
                }
            }
            _ => {
                let message = v.member("message");
                // Synthetic assistant lines (an API error shown in the transcript) are not model
                // output: system notices.
                let synthetic = v.get("isApiErrorMessage").and_then(Json::as_bool).unwrap_or(false) || message.str_of("model") == Some("<synthetic>");
                let role = if synthetic {
                    Role::System
                } else if message.str_of("role") == Some("assistant") || ty == "assistant" {
                    Role::Assistant
                } else {
                    Role::User
                };
                let text_kind = |t: &str| {
                    if synthetic {
                        EventKind::System
                    } else if meta_line || is_wrapper(t) {
                        EventKind::Meta
                    } else {
                        EventKind::Message
                    }
                };
                match message.get("content") {
                    Some(Json::String(s)) => {
                        let kind = text_kind(s);
                        if kind == EventKind::Message && role == Role::User && may_prompt {
                            prompt = Some(s.to_string());
                        }
                        push(0, role, kind, s.to_string());
                    }
                    Some(Json::Array(blocks)) => {
                        let mut result_read = false;
                        for (n, b) in blocks.iter().enumerate() {
                            let (r, kind, text) = match b.str_of("type") {
                                Some("text") => {
                                    let t = b.str_of("text").unwrap_or_default().to_owned();
                                    let k = text_kind(&t);
                                    if k == EventKind::Message && role == Role::User && may_prompt && prompt.is_none() {
                                        prompt = Some(t.clone());
                                    }
                                    (role, k, t)
                                }
                                Some("thinking") => (role, EventKind::Meta, b.str_of("thinking").unwrap_or_default().to_owned()),
                                Some("tool_use") | Some("server_tool_use") => {
                                    let name = b.str_of("name").unwrap_or("tool");
                                    let input = b.get("input").map(Json::to_string).unwrap_or_default();
                                    (Role::Assistant, EventKind::ToolUse, format!("{name} {input}"))
                                }
                                Some("tool_result") => {
                                    let text = content_text(b.member("content"));
                                    // The line's `toolUseResult` is one tool's: read once, for one block.
                                    let from_line = || (text.starts_with("<persisted-output>") && !std::mem::replace(&mut result_read, true)).then(|| full_result(line)).flatten();
                                    let whole = persisted_output(&file.path, &text).or_else(from_line);
                                    (Role::User, EventKind::ToolResult, whole.unwrap_or(text))
                                }
                                Some("image") => (role, EventKind::Meta, "[image]".to_owned()),
                                _ => (role, EventKind::Meta, b.to_string()),
                            };
                            // An empty thinking block (its text withheld, only a signature kept) or
                            // empty text says nothing: no event.
                            if matches!(kind, EventKind::Meta | EventKind::Message) && text.trim().is_empty() {
                                continue;
                            }
                            push(n, r, kind, text);
                        }
                    }
                    _ => return Line::Malformed(format!("{ty} line without message content")),
                }
            }
        }
        // A prompt that takes the place of an earlier one (the same parent: Claude Code's
        // rewind goes back to a prompt and sends it again or another in its place, leaving the
        // branch it left in the file) abandons that one and every line after it; the first
        // prompt among them is no longer the session's (this one is). A user line without a
        // parent takes the place of the one before it only when a later line named that one
        // as its parent: every line of a log some other tool wrote may have none, and its
        // prompts would each abandon the one before.
        if !sidechain {
            match v.str_of("parentUuid").filter(|p| !p.is_empty()) {
                Some(p) => {
                    root_chained(state, p);
                    if prompt.is_some() {
                        out.abandons_from = rewound_to(state, p, uuid, line_no);
                    }
                }
                // Claude Code writes a person's line without a parent only where nothing comes
                // before it: at the start, and sent in the start's place (a prompt, a command's
                // lines, a picture alone). Not a tool's result, nor a compaction's summary:
                // neither is sent in a prompt's place.
                None if ty == "user" && !v.get("isCompactSummary").and_then(Json::as_bool).unwrap_or(false) && !out.events.iter().all(|e| e.kind == EventKind::ToolResult) => {
                    out.abandons_from = root_rewound(state, uuid, line_no);
                }
                // A compaction's boundary: the conversation starts again there.
                None if ty == "system" => {
                    state.remove(ROOT_PROMPT);
                }
                None => {}
            }
            if let Some(from) = out.abandons_from {
                first_prompt_abandoned(state, from);
                if state.get(ROOT_PROMPT).and_then(Value::as_array).and_then(|r| r.first()).and_then(Value::as_u64).is_some_and(|line| line >= from && line != line_no) {
                    state.remove(ROOT_PROMPT);
                }
            }
        }
        let first = prompt.filter(|_| !state.contains_key(FIRST_PROMPT_KEY));
        let new_child = parent.is_some() && !state.contains_key("parent");
        if first.is_some() || new_child {
            if first.is_some() {
                first_prompt_at(state, line_no);
            }
            if let Some(p) = parent.as_ref().filter(|_| new_child) {
                state.insert("parent".into(), Value::String(p.clone()));
            }
            out.sessions.push(SessionChange {
                session: session.clone(),
                project: cwd.and_then(project_of),
                title: None,
                first_prompt: first.map(|p| first_prompt(&p)),
                parent,
            });
        }
        Line::Parsed(out)
    }

    fn memory_files(&self, homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
        let mut out = Vec::new();
        let md = |p: &Path| p.extension().is_some_and(|e| e == "md");
        let user = |path: PathBuf| MemoryFile { source: Source::ClaudeCode, path, scope: MemoryScope::User, project: None };
        out.push(user(homes.claude.join("CLAUDE.md")));
        out.extend(walk::files(&homes.claude.join("rules"), &md, problems).into_iter().map(user));
        for p in projects {
            let Some(dir) = &p.dir else { continue };
            let project = p.name();
            let mk = |path: PathBuf| MemoryFile { source: Source::ClaudeCode, path, scope: MemoryScope::Project, project: project.clone() };
            for name in ["CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"] {
                out.push(mk(dir.join(name)));
            }
            out.extend(walk::files(&dir.join(".claude/rules"), &md, problems).into_iter().map(mk));
        }
        // Auto memory lives under the escaped path of the project's git root (as the logs write
        // it, whether or not the folder is here), which a session's cwd may be below: the
        // nearest folder, the cwd's own or an ancestor's, that has one.
        let mut found = std::collections::BTreeSet::new();
        // Each folder looked at once: the cwds share their ancestors (the home, its parents).
        let mut looked: std::collections::HashMap<&Path, Option<PathBuf>> = std::collections::HashMap::new();
        for p in projects {
            let Some((root, memory)) = p.cwd.ancestors().find_map(|a| {
                let memory = looked.entry(a).or_insert_with(|| {
                    let escaped: String = a.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                    let memory = homes.claude.join("projects").join(escaped).join("memory");
                    memory.is_dir().then_some(memory)
                });
                memory.clone().map(|m| (a, m))
            }) else {
                continue;
            };
            if !found.insert(memory.clone()) {
                continue;
            }
            let project = Some(root.to_string_lossy().into_owned());
            for path in walk::files(&memory, &md, problems) {
                // A topic file about the user (`type: user` in its front matter) is theirs, not
                // the project's.
                let (scope, project) = if memory_type(&path).as_deref() == Some("user") {
                    (MemoryScope::User, None)
                } else {
                    (MemoryScope::Project, project.clone())
                };
                out.push(MemoryFile { source: Source::ClaudeCode, path, scope, project });
            }
        }
        super::keep_regular(&mut out, problems);
        out
    }
}

#[cfg(test)]
#[path = "claude_tests.rs"]
mod tests;

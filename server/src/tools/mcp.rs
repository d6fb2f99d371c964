//! `origin mcp`: the seven tools over MCP on stdio (rmcp). Arguments are checked here, so a
//! bad argument is a tool error naming the argument and why, never a protocol error; the
//! operations are in `archive`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

use super::archive::{
    Archive, EntryArgs, Limit, SearchArgs, SourceArg, TimelineArgs, ToolError, ENTRY_TEXT_CHARS_MAX, NAME_CHARS_MAX, QUERY_CHARS_MAX,
    QUOTE_CHARS_MAX, SEARCH_LIMIT, SOURCES_MAX, TIMELINE_LIMIT,
};

/// The server's instructions to agents (the spec's "server's MCP instructions").
pub const INSTRUCTIONS: &str = "Origin is the archive of what coding agents said on this user's machines, and of the \
entries (memories, knowledge, preferences) remembered from it. Before answering a question about past work, search \
and read: use search, timeline, get and sources, and cite entry ids (ent_…) and event ids (<source>:<id>) in your \
answer. Remember decisions with their reasons, stable facts, and the user's preferences, methods, goals and \
boundaries, each as one self-contained statement citing the events it comes from (quote a line you just saw: new \
lines are read before saving). Entries marked imported mirror an agent's own memory files (CLAUDE.md, AGENTS.md and \
the like); a later version of the file supersedes them. Correct entries that are wrong. Forget only when the user \
asks, with the user's reason.";

type Args = Map<String, Value>;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn check_known(tool: &str, args: &Args, known: &[&str]) -> Result<(), ToolError> {
    for k in args.keys() {
        if !known.contains(&k.as_str()) {
            return Err(ToolError::invalid(k, format!("is not an argument of {tool} (it takes {})", known.join(", "))));
        }
    }
    Ok(())
}

fn opt_str(args: &Args, name: &str) -> Result<Option<String>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ToolError::invalid(name, format!("must be a string, not {}", type_name(other)))),
    }
}

fn req_str(args: &Args, name: &str) -> Result<String, ToolError> {
    opt_str(args, name)?.ok_or_else(|| ToolError::invalid(name, "is required"))
}

/// An entry's or an event's id. Of any length: an event's id is its source's and the agent's
/// own id for the line (a log line may carry a uuid of any length), and every event the store
/// holds can be read, traced and forgotten by it (a message's size bounds it).
fn id_arg(args: &Args, name: &str) -> Result<String, ToolError> {
    req_str(args, name)
}

fn opt_bool(args: &Args, name: &str) -> Result<Option<bool>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ToolError::invalid(name, format!("must be true or false, not {}", type_name(other)))),
    }
}

/// A tool's `limit`: a whole number (`5.0` too); one too large for any limit (`1e20`,
/// `18446744073709551615`) is refused as out of the tool's range.
fn opt_limit(args: &Args, limit: Limit) -> Result<Option<i64>, ToolError> {
    let name = "limit";
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => Ok(Some(f as i64)),
                Some(f) if f.is_finite() && f.fract() == 0.0 => Err(limit.refusal(n)),
                _ => Err(ToolError::invalid(name, format!("must be a whole number, not {n}"))),
            },
        },
        Some(other) => Err(ToolError::invalid(name, format!("must be a whole number, not {}", type_name(other)))),
    }
}

fn opt_num(args: &Args, name: &str) -> Result<Option<f64>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| ToolError::invalid(name, "must be a number")),
        Some(other) => Err(ToolError::invalid(name, format!("must be a number, not {}", type_name(other)))),
    }
}

fn sources_arg(args: &Args) -> Result<Vec<SourceArg>, ToolError> {
    match args.get("sources") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let Value::Object(o) = item else {
                    return Err(ToolError::invalid(&format!("sources[{i}]"), format!("must be an object {{ event_id, quote }}, not {}", type_name(item))));
                };
                check_known(&format!("sources[{i}]"), o, &["event_id", "quote"])?;
                Ok(SourceArg {
                    event_id: opt_str(o, "event_id").map_err(|e| ToolError::new(e.0.replace("`event_id`", &format!("`sources[{i}].event_id`"))))?,
                    quote: opt_str(o, "quote").map_err(|e| ToolError::new(e.0.replace("`quote`", &format!("`sources[{i}].quote`"))))?,
                })
            })
            .collect(),
        Some(other) => Err(ToolError::invalid("sources", format!("must be a list of {{ event_id, quote }}, not {}", type_name(other)))),
    }
}

fn entry_args(args: &Args, with_id: bool) -> Result<EntryArgs, ToolError> {
    Ok(EntryArgs {
        id: if with_id { Some(id_arg(args, "id")?) } else { None },
        kind: opt_str(args, "kind")?,
        text: opt_str(args, "text")?,
        sources: sources_arg(args)?,
        confidence: opt_num(args, "confidence")?,
        project: opt_str(args, "project")?,
        valid_from: opt_str(args, "valid_from")?,
        valid_to: opt_str(args, "valid_to")?,
    })
}

/// Set by [`fix_arguments`] when a call's `arguments` was not a JSON object.
const NOT_AN_OBJECT: &str = "\u{0}origin: arguments not an object";
/// Set by [`fix_arguments`] when an argument could not be read: why.
const NOT_READABLE: &str = "\u{0}origin: arguments not readable";
/// Begins the name [`fix_arguments`] gives a call without a name (or not a string).
const NO_NAME: &str = "\u{0}origin: no name: ";

/// Runs one tool call against the archive. `agent` is the client's name.
pub fn call(archive: &Archive, name: &str, args: &Args, agent: &str) -> Result<Value, ToolError> {
    if let Some(what) = name.strip_prefix(NO_NAME) {
        let why = if what == "missing" { "is missing".to_owned() } else { format!("must be a tool's name, not {what}") };
        return Err(ToolError::new(format!(
            "Invalid input: the call's `name` {why}: Origin's tools are search, timeline, get, sources, remember, correct and forget."
        )));
    }
    if let Some(Value::String(what)) = args.get(NOT_AN_OBJECT) {
        return Err(ToolError::invalid("arguments", format!("must be an object of named arguments, not {what}")));
    }
    if let Some(Value::String(why)) = args.get(NOT_READABLE) {
        return Err(ToolError::new(format!("Invalid input: {why}")));
    }
    match name {
        "search" => {
            check_known(name, args, &["query", "scope", "kind", "since", "until", "source", "project", "include_tools", "limit"])?;
            archive.search(&SearchArgs {
                query: opt_str(args, "query")?,
                scope: opt_str(args, "scope")?,
                kind: opt_str(args, "kind")?,
                since: opt_str(args, "since")?,
                until: opt_str(args, "until")?,
                source: opt_str(args, "source")?,
                project: opt_str(args, "project")?,
                include_tools: opt_bool(args, "include_tools")?.unwrap_or(false),
                limit: opt_limit(args, SEARCH_LIMIT)?,
            })
        }
        "timeline" => {
            check_known(name, args, &["since", "until", "source", "project", "session", "include_tools", "limit"])?;
            archive.timeline(&TimelineArgs {
                since: opt_str(args, "since")?,
                until: opt_str(args, "until")?,
                source: opt_str(args, "source")?,
                project: opt_str(args, "project")?,
                session: opt_str(args, "session")?,
                include_tools: opt_bool(args, "include_tools")?.unwrap_or(false),
                limit: opt_limit(args, TIMELINE_LIMIT)?,
            })
        }
        "get" => {
            check_known(name, args, &["id"])?;
            archive.get(&id_arg(args, "id")?)
        }
        "sources" => {
            check_known(name, args, &["id"])?;
            archive.sources(&id_arg(args, "id")?)
        }
        "remember" => {
            check_known(name, args, &["kind", "text", "sources", "confidence", "project", "valid_from", "valid_to"])?;
            archive.remember(&entry_args(args, false)?, agent)
        }
        "correct" => {
            check_known(name, args, &["id", "text", "kind", "confidence", "sources", "valid_from", "valid_to"])?;
            archive.correct(&entry_args(args, true)?, agent)
        }
        "forget" => {
            check_known(name, args, &["id", "reason"])?;
            let reason = req_str(args, "reason")?;
            archive.forget(&id_arg(args, "id")?, &reason, agent)
        }
        other => Err(ToolError::new(format!("Unknown tool {other:?}: Origin's tools are search, timeline, get, sources, remember, correct and forget."))),
    }
}

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

const TIME_DOC: &str = "relative (30m, 24h, 7d, 2w, counted back from now) or absolute (2026-10-20, or ISO 8601)";

/// The seven tools with their input schemas (the spec's parameters, types, ranges, defaults,
/// and each parameter's meaning in the spec's words).
pub fn tools() -> Vec<Tool> {
    let kinds = json!(["memory", "knowledge", "cognition"]);
    let source = |doc: &str| json!({ "type": "string", "enum": ["claude-code", "codex", "cursor", "zcode", "grok"], "description": doc });
    let time = |doc: &str| json!({ "type": "string", "description": format!("{doc}: {TIME_DOC}") });
    // Strings with the longest the tools accept (they refuse longer ones, naming the argument).
    let text = |doc: &str, max: usize| json!({ "type": "string", "maxLength": max, "description": doc });
    let confidence = |doc: &str| json!({ "type": "number", "minimum": 0, "maximum": 1, "description": doc });
    let sources = |doc: &str, min: u32| {
        json!({
            "type": "array",
            "minItems": min,
            "maxItems": SOURCES_MAX,
            "description": doc,
            "items": {
                "type": "object",
                "properties": {
                    "event_id": { "type": "string", "description": "An event id" },
                    "quote": { "type": "string", "maxLength": QUOTE_CHARS_MAX, "description": "An exact quote from the event (or, without event_id, from the most recent message holding it)" }
                },
                "additionalProperties": false
            }
        })
    };
    let id = json!({ "type": "string", "description": "An entry id (ent_…) or an event id (<source>:…)" });
    let flag = |doc: &str| json!({ "type": "boolean", "default": false, "description": doc });
    let limit = |l: Limit, doc: &str| json!({ "type": "integer", "minimum": 1, "maximum": l.max, "default": l.default, "description": doc });
    vec![
        Tool::new(
            "search",
            "Full-text search over entries and session events, best match first; every word must occur, in any language. When fewer than limit results hold every word, the best partial matches follow them, marked \"match\": \"partial\" (full matches are \"all\"). Without a query, lists the most recent entries.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": text("Words or phrases; every word must occur, in any language (\"quoted phrases\" match in order)", QUERY_CHARS_MAX),
                    "scope": { "type": "string", "enum": ["all", "entries", "events"], "default": "all", "description": "What to search" },
                    "kind": { "type": "string", "enum": kinds, "description": "Entries of this kind only" },
                    "since": time("When entries were written and events happened, from"),
                    "until": time("When entries were written and events happened, before"),
                    "source": source("Events of this source only"),
                    "project": text("Entries and events of this project only", NAME_CHARS_MAX),
                    "include_tools": flag("Also search tool calls and tool results, not only messages"),
                    "limit": limit(SEARCH_LIMIT, "At most this many entries, and this many events")
                },
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "timeline",
            "Sessions in a time range, newest first; or, with session, the events of one session in order.",
            schema(json!({
                "type": "object",
                "properties": {
                    "since": { "type": "string", "default": "7d", "description": format!("Sessions active since then: {TIME_DOC}") },
                    "until": time("Sessions started before then"),
                    "source": source("Sessions of this source only; with session, the source of that session"),
                    "project": text("Sessions of this project only", NAME_CHARS_MAX),
                    "session": text("A session id: list its events instead", NAME_CHARS_MAX),
                    "include_tools": flag("With session: also list tool calls and results, injected context, and system events, not only messages"),
                    "limit": limit(TIMELINE_LIMIT, "At most this many sessions, or events")
                },
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "get",
            "An entry with its sources and versions, or an event with its full text.",
            schema(json!({ "type": "object", "properties": { "id": id }, "required": ["id"], "additionalProperties": false })),
        ),
        Tool::new(
            "sources",
            "The original log lines behind an entry or an event: the provenance of an answer.",
            schema(json!({ "type": "object", "properties": { "id": id }, "required": ["id"], "additionalProperties": false })),
        ),
        Tool::new(
            "remember",
            "Save a new entry: one self-contained statement citing at least one event (an event id, an exact quote, or both).",
            schema(json!({
                "type": "object",
                "properties": {
                    "kind": { "type": "string", "enum": kinds, "default": "memory", "description": "What happened (a decision and why), a stable fact, or the user's preferences, methods, goals, or boundaries" },
                    "text": text("One self-contained statement", ENTRY_TEXT_CHARS_MAX),
                    "sources": sources("Each { event_id, quote }: an event id, an exact quote, or both", 1),
                    "confidence": confidence("How sure the agent is"),
                    "project": text("The project it belongs to, if any", NAME_CHARS_MAX),
                    "valid_from": time("When it starts to hold, if known"),
                    "valid_to": time("When it stops holding, if known")
                },
                "required": ["text", "sources", "confidence"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "correct",
            "Replace an entry with a corrected version; the old version stays in the history.",
            schema(json!({
                "type": "object",
                "properties": {
                    "id": { "type": "string", "description": "The entry's current version" },
                    "text": text("The corrected statement", ENTRY_TEXT_CHARS_MAX),
                    "kind": { "type": "string", "enum": kinds, "description": "A new kind; the old one by default" },
                    "confidence": confidence("A new confidence; the old one by default"),
                    "sources": sources("More sources, added to those that carry over", 0),
                    "valid_from": time("New validity start; the old one by default"),
                    "valid_to": time("New validity end; the old one by default")
                },
                "required": ["id", "text"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "forget",
            "Hide an entry, every version of it and the events it cites; or an event and every entry citing it. Only when the user asks, with their reason.",
            schema(json!({
                "type": "object",
                "properties": {
                    "id": id,
                    "reason": { "type": "string", "minLength": 1, "maxLength": 2000, "description": "Why the user wants it forgotten; kept with the record" }
                },
                "required": ["id", "reason"],
                "additionalProperties": false
            })),
        ),
    ]
}

/// The longest a tool call waits for the store to finish opening before it answers with a tool
/// error saying so (under the 60 s request timeout common among MCP clients).
pub const OPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(25);

type Opened = Option<Result<Arc<Archive>, String>>;

/// The archive as it opens on its own thread: a first start on a large store replays the
/// journal and builds the text index, which takes minutes, and an MCP client does not wait that
/// long for the handshake. The handshake and `tools/list` are answered at once; tool calls wait.
#[derive(Clone)]
pub struct Opening {
    rx: tokio::sync::watch::Receiver<Opened>,
    started: std::time::Instant,
    /// How to open the store again after a failed attempt (none for one opened or pending).
    again: Option<Arc<Again>>,
}

/// What opens the store again: a store that could not be opened (its lock file or journal
/// unreadable for a while, descriptors exhausted) is tried again at a later call, at most every
/// [`OPEN_RETRY_AFTER`], rather than failing every call until the agent restarts the server.
struct Again {
    open: Box<dyn Fn() -> anyhow::Result<Archive> + Send + Sync>,
    tx: tokio::sync::watch::Sender<Opened>,
    /// An attempt is under way.
    running: std::sync::atomic::AtomicBool,
    /// When the last attempt ended.
    ended: std::sync::Mutex<std::time::Instant>,
    /// When the attempt under way (or the last) began.
    began: std::sync::Mutex<std::time::Instant>,
    /// When a store opened to read only was last looked at to see if it can be written now.
    rechecked: std::sync::Mutex<std::time::Instant>,
    /// The least time between two such looks ([`READ_ONLY_RECHECK_AFTER`]), doubled for each
    /// attempt in a row that looked writable and did not open so (at most 64 times).
    recheck_after: std::time::Duration,
    /// Attempts in a row that looked writable and did not open so.
    recheck_failures: std::sync::atomic::AtomicU32,
}

/// The least time between two attempts to open the store.
pub const OPEN_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The least time between two looks at a store opened to read only, to see whether it can be
/// written now (remounted to write, its files given back to their user): each look opens its
/// journal to write, which reads its last segment's tail.
pub const READ_ONLY_RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

impl Again {
    /// Starts an attempt on a thread of its own, unless one is under way, or (`after_failure`)
    /// the last attempt did not fail: two calls that saw the same failure start one attempt,
    /// and neither replaces a store another attempt opened meanwhile.
    fn attempt(self: &Arc<Again>, after_failure: bool) -> anyhow::Result<()> {
        self.attempt_as(if after_failure { Attempt::AfterFailure } else { Attempt::First })
    }

    fn attempt_as(self: &Arc<Again>, kind: Attempt) -> anyhow::Result<()> {
        use std::sync::atomic::Ordering;
        if self.running.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        // An attempt that ended published its outcome before it let `running` go.
        let current = match &*self.tx.borrow() {
            Some(Ok(a)) => Some(a.clone()),
            _ => None,
        };
        let stale = match kind {
            Attempt::First => false,
            Attempt::AfterFailure => !matches!(&*self.tx.borrow(), Some(Err(_))),
            Attempt::ToWrite => current.as_ref().is_none_or(|a| !a.limited()),
        };
        if stale {
            self.running.store(false, Ordering::SeqCst);
            return Ok(());
        }
        *self.began.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
        // A store read only meanwhile answers until the one opened to write replaces it.
        if kind != Attempt::ToWrite {
            self.tx.send_replace(None);
        }
        let again = self.clone();
        let spawned = std::thread::Builder::new().name("origin-open".into()).spawn(move || {
            let opened = (again.open)().map(Arc::new).map_err(|e| {
                crate::say_err!("origin: opening the store failed: {e:#}");
                format!("Origin could not open its store: {e:#}")
            });
            *again.ended.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
            let was = current.as_ref().map_or(u8::MAX, |a| a.limitation());
            match (&opened, kind) {
                // Opened with no more of it writable, or not at all: looked at less often. One as
                // limited takes the place of the one answering all the same, so that what it
                // says (and looks at again) is what refuses now, not what refused before.
                (Ok(a), Attempt::ToWrite) if a.limitation() >= was => {
                    again.recheck_failures.fetch_add(1, Ordering::SeqCst);
                    if a.limitation() == was {
                        again.tx.send_replace(Some(opened));
                    }
                }
                (Err(_), Attempt::ToWrite) => {
                    again.recheck_failures.fetch_add(1, Ordering::SeqCst);
                }
                (Ok(a), Attempt::ToWrite) => {
                    again.recheck_failures.store(0, Ordering::SeqCst);
                    let what = match (was >= 4, a.read_only().is_some(), a.limited()) {
                        (true, false, false) => "the store can be written again: it was opened again, to write",
                        (true, false, true) => "the store's journal can be written again: it was opened again, to write (some of its projections still cannot be saved)",
                        _ if was & 0b10 != 0 => "the store's projections can be saved again: it was opened again",
                        _ => "the store's text index can be saved again: it was opened again",
                    };
                    crate::say_err!("origin: {what}");
                    again.tx.send_replace(Some(opened));
                }
                _ => {
                    again.tx.send_replace(Some(opened));
                }
            }
            again.running.store(false, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            self.tx.send_replace(Some(Err(format!("Origin could not open its store: no thread could be started ({e})"))));
            self.running.store(false, Ordering::SeqCst);
            return Err(e.into());
        }
        Ok(())
    }
}

/// What an attempt to open the store is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attempt {
    /// The first.
    First,
    /// After a failed one.
    AfterFailure,
    /// A store opened to read only can be written now: opened again, to write, replacing it
    /// once open (it answers meanwhile; if the new one is read only too, it stays).
    ToWrite,
}

impl Opening {
    /// An archive already open.
    pub fn ready(archive: Arc<Archive>) -> Opening {
        let (_tx, rx) = tokio::sync::watch::channel(Some(Ok(archive)));
        Opening { rx, started: std::time::Instant::now(), again: None }
    }

    /// Runs `open` on a thread of its own; its failure is what tool calls then answer, until
    /// an attempt made at a later call (at most every [`OPEN_RETRY_AFTER`]) opens the store.
    pub fn start(open: impl Fn() -> anyhow::Result<Archive> + Send + Sync + 'static) -> anyhow::Result<Opening> {
        Opening::start_rechecking(open, READ_ONLY_RECHECK_AFTER)
    }

    /// [`Opening::start`], a store opened to read only looked at again at most every
    /// `recheck_after` (tests).
    fn start_rechecking(open: impl Fn() -> anyhow::Result<Archive> + Send + Sync + 'static, recheck_after: std::time::Duration) -> anyhow::Result<Opening> {
        let (tx, rx) = tokio::sync::watch::channel(None);
        let again = Arc::new(Again {
            open: Box::new(open),
            tx,
            running: std::sync::atomic::AtomicBool::new(false),
            ended: std::sync::Mutex::new(std::time::Instant::now()),
            began: std::sync::Mutex::new(std::time::Instant::now()),
            rechecked: std::sync::Mutex::new(std::time::Instant::now()),
            recheck_after,
            recheck_failures: std::sync::atomic::AtomicU32::new(0),
        });
        again.attempt(false)?;
        Ok(Opening { rx, started: std::time::Instant::now(), again: Some(again) })
    }

    /// A pending opening and the sender that completes it (for tests).
    #[cfg(test)]
    fn pending() -> (tokio::sync::watch::Sender<Opened>, Opening) {
        let (tx, rx) = tokio::sync::watch::channel(None);
        (tx, Opening { rx, started: std::time::Instant::now(), again: None })
    }

    /// Why the store could not be opened, if its last attempt failed.
    pub fn failure(&self) -> Option<String> {
        match &*self.rx.borrow() {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    /// The archive if it is open now.
    pub fn now(&self) -> Option<Arc<Archive>> {
        match &*self.rx.borrow() {
            Some(Ok(a)) => Some(a.clone()),
            _ => None,
        }
    }

    /// The archive, waiting for it at most `wait`; the error is the tool error to answer. A
    /// store that could not be opened is tried again first (see [`Again`]).
    pub async fn archive(&self, wait: std::time::Duration) -> Result<Arc<Archive>, ToolError> {
        if let Some(again) = &self.again
            && self.failure().is_some()
            && again.ended.lock().unwrap_or_else(|p| p.into_inner()).elapsed() >= OPEN_RETRY_AFTER
        {
            // A thread that cannot be started leaves the failure saying so.
            let _ = again.attempt(true);
        }
        // A store of which anything cannot be written: once more of it can be, opened again
        // (looked at on a thread of its own, as it reads the journal's last segment; this call
        // is answered by the store as it is).
        if let Some(again) = &self.again
            && let Some(current) = self.now()
            && current.limited()
        {
            let due = {
                let mut at = again.rechecked.lock().unwrap_or_else(|p| p.into_inner());
                let failures = again.recheck_failures.load(std::sync::atomic::Ordering::SeqCst).min(6);
                let due = at.elapsed() >= again.recheck_after * (1 << failures);
                if due {
                    *at = std::time::Instant::now();
                }
                due
            };
            if due {
                let again = again.clone();
                // A thread that cannot be started looks again at a later call.
                let _ = std::thread::Builder::new().name("origin-recheck".into()).spawn(move || {
                    if current.writable_again() {
                        let _ = again.attempt_as(Attempt::ToWrite);
                    }
                });
            }
        }
        let mut rx = self.rx.clone();
        let waited = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(opened)) => match &*opened {
                Some(Ok(a)) => Ok(a.clone()),
                Some(Err(e)) => Err(ToolError::new(e.clone())),
                None => Err(ToolError::new("The Origin store failed to open.")),
            },
            Ok(Err(_)) => Err(ToolError::new("Origin stopped opening its store unexpectedly; restart the server.")),
            Err(_) => Err(ToolError::new(format!(
                "Origin is still opening its store ({} s so far): a first start builds its index of the agents' \
                 history, a minute or two per million events. Try this call again shortly.",
                self.again.as_ref().map_or(self.started, |a| *a.began.lock().unwrap_or_else(|p| p.into_inner())).elapsed().as_secs()
            ))),
        }
    }
}

/// The MCP handler over one archive.
pub struct Server {
    opening: Opening,
    /// Whether the session's `initialize` was answered: a second is refused (it was taken, and
    /// changed the agent later writes are signed by).
    initialized: std::sync::atomic::AtomicBool,
}

impl Server {
    /// A handler answering from `archive`.
    pub fn new(archive: Arc<Archive>) -> Server {
        Server::opening(Opening::ready(archive))
    }

    /// A handler answering from the archive once it has opened.
    pub fn opening(opening: Opening) -> Server {
        Server { opening, initialized: std::sync::atomic::AtomicBool::new(false) }
    }
}

fn client_name(ctx: &RequestContext<RoleServer>) -> String {
    ctx.peer
        .peer_info()
        .map(|info| info.client_info.name.clone())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "agent".to_owned())
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("origin", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// The session's first `initialize` (whose client the loop has taken for the peer) is
    /// answered; another is refused, and the peer stays the first.
    async fn initialize(&self, request: InitializeRequestParams, _context: RequestContext<RoleServer>) -> Result<InitializeResult, ErrorData> {
        if self.initialized.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(ErrorData::invalid_request("this session is initialized already: initialize is the session's first request, sent once", None));
        }
        self.negotiate_initialize(&request)
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let agent = client_name(&context);
        let archive = match self.opening.archive(OPEN_WAIT).await {
            Ok(a) => a,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e.0)]).into()),
        };
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // The store does blocking I/O: keep it off the protocol's threads. A call its client
        // cancels before it records anything records nothing.
        let cancelled = context.ct.clone();
        let result = tokio::task::spawn_blocking(move || {
            super::archive::while_wanted(move || !cancelled.is_cancelled(), || call(&archive, &name, &args, &agent))
        })
        .await;
        let result = match result {
            Ok(r) => r,
            Err(e) => Err(ToolError::new(format!("The Origin tool failed unexpectedly: {e}"))),
        };
        Ok(match result {
            Ok(v) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.0)]),
        }
        .into())
    }
}

/// What the server's reader does with a line from the client ([`fix_arguments`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// Passed on as it is.
    AsIs,
    /// Passed on as this line instead.
    Rewritten(String),
    /// Not JSON, and no call whose id it names: passed on as it is (the protocol layer passes
    /// over most such lines without an answer) and said on stderr, with why.
    NotJson(String),
}

/// Rewrites a line from the client that the protocol layer would refuse or drop without an
/// answer, where the spec wants a tool error (or the call to go through):
/// - `arguments` that is not an object (refused as "method not found"): the call reaches
///   [`call`], which answers that it must be an object;
/// - a `name` missing or not a string (refused likewise): the call answers which tools there are;
/// - a string holding half of a UTF-16 surrogate pair (`\ud83d` alone: a JavaScript string cut
///   inside an emoji), which is not JSON a parser takes (the line was dropped): the half is
///   read as U+FFFD, the replacement character, and the call goes through;
/// - an argument that is JSON no value can hold (a number beyond the floating-point range,
///   `1e400`; the line was dropped): the call answers naming the argument;
/// - a call that is not JSON (cut short, a brace missing) whose `id` can be read before where
///   it goes wrong, or at its end (the line was dropped, and its client waited for good): the
///   call answers that it is not JSON, and why.
///
/// Any other line that is not JSON is [`Pass::NotJson`]: it names no call to answer, and an
/// answer with a null id (JSON-RPC's parse error) is what rmcp and the official MCP SDKs do
/// not send, since a peer that echoes what it cannot read would answer it in turn, and so on.
///
/// (Bytes that are not UTF-8 are read as U+FFFD before this, by the server's reader.)
pub fn fix_arguments(line: &str) -> Pass {
    // As the protocol layer reads a line: without a byte order mark or its line end.
    let body = line.strip_prefix('\u{feff}').unwrap_or(line).trim_end_matches(['\n', '\r']);
    if body.trim().is_empty() {
        return Pass::AsIs;
    }
    let is_call = |v: &Value| v.get("method").and_then(Value::as_str) == Some("tools/call");
    // Parsed once as written: almost every line is JSON as it is, so it is looked at for
    // surrogates only when it is not.
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return if is_call(&v) { fix_call(v).map_or(Pass::AsIs, Pass::Rewritten) } else { Pass::AsIs };
    }
    let mended = whole_surrogates(body);
    let text = mended.as_deref().unwrap_or(body);
    match serde_json::from_str::<Value>(text) {
        Ok(v) if is_call(&v) => Pass::Rewritten(fix_call(v).unwrap_or_else(|| text.to_owned())),
        Ok(_) => Pass::Rewritten(text.to_owned()),
        // A call whose head (or whose own `id`, written last) can be read is answered.
        Err(e) => unreadable_arguments(text)
            .or_else(|| {
                let why = format!("the call is not JSON Origin can read ({e})");
                call_from_ends(text.as_bytes(), || outer_id(text.as_bytes()), &why)
            })
            .map_or_else(|| Pass::NotJson(e.to_string()), Pass::Rewritten),
    }
}

/// An id a request may have (JSON-RPC's: a string or a number; MCP's: not null, and a whole
/// number): a call answered under any other would be refused by the protocol layer.
fn request_id(id: Value) -> Option<Value> {
    match &id {
        Value::String(_) => Some(id),
        // As the protocol layer reads a number id: a whole one, written `1.0` or `1e2` too,
        // that a 64-bit signed integer holds.
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= -(2f64.powi(63)) && *f < 2f64.powi(63)).map(|f| f as i64))
            .map(Value::from),
        _ => None,
    }
}

/// How deep a line's text is nested in objects and lists, outside strings, as it is read in
/// pieces: a line read whole and back at depth 0 is whole (not cut short), so an `id` written
/// last in it is the outer object's ([`id_at_end`]).
#[derive(Default)]
struct Nesting {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Nesting {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }

    fn closed(&self) -> bool {
        self.depth == 0 && !self.in_string
    }
}

/// The `id` written last in a line too long to read whole, of which `nesting` read every byte
/// and `tail` holds the last: only when the line closed every object it opened (else the id
/// found may be one inside the call's arguments, its own cut off).
fn end_id(nesting: &Nesting, tail: &[u8]) -> Option<Value> {
    nesting.closed().then(|| id_at_end(tail)).flatten()
}

/// The last `id` member of the object `line` begins with (not of an object inside it, as a
/// call's arguments may name one), when its value can be read; `line` need not be JSON as a
/// whole (its depth is told by the braces and brackets outside strings before the member).
fn outer_id(line: &[u8]) -> Option<Value> {
    let (mut depth, mut i, mut found) = (0usize, 0usize, None);
    while i < line.len() {
        match line[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                // The string's end: the next quote not escaped.
                let start = i + 1;
                let mut j = start;
                while j < line.len() && line[j] != b'"' {
                    j += if line[j] == b'\\' { 2 } else { 1 };
                }
                let key = &line[start..j.min(line.len())];
                i = j;
                if depth == 1 && key == b"id" {
                    let after = &line[(j + 1).min(line.len())..];
                    let colon = after.iter().position(|b| !b.is_ascii_whitespace());
                    if let Some(c) = colon.filter(|&c| after[c] == b':') {
                        let value = &after[c + 1..];
                        let mut values = serde_json::Deserializer::from_slice(value).into_iter::<Value>();
                        // Whole only when something follows it (a number cut short reads as
                        // another number): the next member, or the object's end.
                        if let Some(Ok(v)) = values.next()
                            && value[values.byte_offset()..].iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b',' | b'}'))
                        {
                            found = Some(v);
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// [`fix_arguments`] of a `tools/call` that parsed.
fn fix_call(mut v: Value) -> Option<String> {
    let params = v.get_mut("params")?.as_object_mut()?;
    let mut fixed = false;
    if !params.get("name").is_some_and(Value::is_string) {
        let what = params.get("name").map_or("missing", type_name);
        params.insert("name".into(), Value::String(format!("{NO_NAME}{what}")));
        fixed = true;
    }
    if let Some(args) = params.get_mut("arguments") {
        if !args.is_object() && !args.is_null() {
            let what = type_name(args);
            *args = json!({ NOT_AN_OBJECT: what });
            fixed = true;
        }
    }
    fixed.then(|| v.to_string())
}

/// `line` with each lone half of a UTF-16 surrogate pair written as an escape (`\uD800` to
/// `\uDFFF` without its other half beside it) replaced by `\uFFFD`; `None` when it has none.
fn whole_surrogates(line: &str) -> Option<String> {
    let b = line.as_bytes();
    // The value of the `\uXXXX` escape at `i` (a backslash after an even run of others).
    let escape_at = |i: usize| -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let run = b[..i].iter().rev().take_while(|&&c| c == b'\\').count();
        if run % 2 == 1 {
            return None;
        }
        let hex = b.get(i + 2..i + 6)?;
        hex.iter().all(u8::is_ascii_hexdigit).then(|| hex.iter().fold(0u16, |v, &h| v << 4 | (h as char).to_digit(16).unwrap_or(0) as u16))
    };
    let mut out = String::with_capacity(line.len());
    let (mut copied, mut mended, mut i) = (0, false, 0);
    while let Some(at) = b[i..].iter().position(|&c| c == b'\\') {
        let at = i + at;
        i = at + 1;
        let Some(unit) = escape_at(at) else { continue };
        i = at + 6;
        let lone = match unit {
            0xD800..=0xDBFF => match escape_at(at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i = at + 12;
                    false
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            out.push_str(&line[copied..at]);
            out.push_str("\\uFFFD");
            copied = at + 6;
            mended = true;
        }
    }
    mended.then(|| {
        out.push_str(&line[copied..]);
        out
    })
}

/// A `tools/call` line that is JSON in its shape but holds an argument no JSON value can hold,
/// rewritten as the same call whose arguments say which and why; `None` for any other line.
fn unreadable_arguments(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        method: Option<String>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        arguments: Option<std::collections::BTreeMap<String, &'a serde_json::value::RawValue>>,
    }
    let head: Head<'_> = serde_json::from_str(line).ok()?;
    if head.method.as_deref() != Some("tools/call") {
        return None;
    }
    let id = request_id(serde_json::from_str(head.id?.get()).ok()?)?;
    let params = head.params?;
    let why = params.arguments?.iter().find_map(|(arg, raw)| {
        serde_json::from_str::<Value>(raw.get()).err().map(|e| format!("`{arg}` is not a JSON value Origin can read ({e})"))
    })?;
    let mut call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "arguments": { NOT_READABLE: why } } });
    // The name as given (a name that does not parse either, as null); none when none was.
    if let Some(n) = params.name {
        call["params"]["name"] = serde_json::from_str(n.get()).unwrap_or(Value::Null);
    }
    // A name missing too is answered as one.
    Some(fix_call(call.clone()).unwrap_or_else(|| call.to_string()))
}

/// The last bytes of a line too long to read that are kept, to find its `id` in.
const TAIL_BYTES: usize = 4096;

/// The `id` of a JSON object whose last bytes are `tail` (to its end of line), when it is the
/// object's last member: a key `"id"`, a value, then only the object's closing brace (as the
/// TypeScript SDK writes a request: `method`, `params`, `jsonrpc`, `id`). The last such key is
/// taken; a string cannot hide one, since quotes inside strings are escaped.
fn id_at_end(tail: &[u8]) -> Option<Value> {
    let mut end = tail.len();
    while let Some(at) = tail[..end].windows(4).rposition(|w| w == b"\"id\"") {
        end = at;
        let after = &tail[at + 4..];
        let colon = after.iter().position(|b| !b.is_ascii_whitespace())?;
        if after[colon] != b':' {
            continue;
        }
        let value_bytes = &after[colon + 1..];
        let mut values = serde_json::Deserializer::from_slice(value_bytes).into_iter::<Value>();
        let Some(Ok(value)) = values.next() else { continue };
        let rest = &value_bytes[values.byte_offset()..];
        let closing: Vec<u8> = rest.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
        if closing == b"}" {
            return Some(value);
        }
    }
    None
}

/// A `tools/call` whose line cannot be read whole (longer than the server reads, or not JSON),
/// rewritten from the line's first bytes (its `method` and `params.name`, and its `id` when it
/// comes before the arguments), else with the id `end_id` finds (written last), as the same
/// call whose arguments say `why`; `None` when they do not name a call with an id a request
/// may have ([`request_id`]).
fn call_from_ends(head: &[u8], end_id: impl FnOnce() -> Option<Value>, why: &str) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use std::cell::RefCell;
    #[derive(Default)]
    struct Seen {
        id: Option<Value>,
        method: Option<String>,
        name: Option<String>,
    }
    // Reads the keys of an object in order into `Seen`, stopping (with an error, which ends
    // the read) at the first value that is not one of those: the line is cut, so no read of
    // the whole succeeds. (The line's bytes, to tell an id whole from one cut short.)
    struct Keys<'s>(&'s RefCell<Seen>, bool, &'s [u8]);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match (self.1, key.as_str()) {
                    (false, "id") => {
                        // Whole only when something follows it (a number cut short reads as
                        // another number): the next member, or the object's end.
                        let raw: &serde_json::value::RawValue = map.next_value()?;
                        let end = (raw.get().as_ptr() as usize).wrapping_sub(self.2.as_ptr() as usize).saturating_add(raw.get().len());
                        let whole = self.2.get(end..).and_then(|rest| rest.iter().find(|b| !b.is_ascii_whitespace())).is_some_and(|b| matches!(b, b',' | b'}'));
                        if whole {
                            self.0.borrow_mut().id = serde_json::from_str(raw.get()).ok();
                        }
                    }
                    (false, "method") => self.0.borrow_mut().method = Some(map.next_value()?),
                    (false, "params") => map.next_value_seed(ParamsSeed(self.0, self.2))?,
                    (true, "name") => self.0.borrow_mut().name = Some(map.next_value()?),
                    (_, "jsonrpc") => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    _ => return Err(serde::de::Error::custom("stop")),
                }
            }
            Ok(())
        }
    }
    struct ParamsSeed<'s>(&'s RefCell<Seen>, &'s [u8]);
    impl<'de> serde::de::DeserializeSeed<'de> for ParamsSeed<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(Keys(self.0, true, self.1))
        }
    }
    let seen = RefCell::new(Seen::default());
    let _cut_short = serde_json::Deserializer::from_slice(head).deserialize_map(Keys(&seen, false, head));
    let seen = seen.into_inner();
    if seen.method.as_deref() != Some("tools/call") {
        return None;
    }
    let id = request_id(match seen.id {
        Some(id) => id,
        None => end_id()?,
    })?;
    Some(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": seen.name.unwrap_or_default(), "arguments": { NOT_READABLE: why } } }).to_string())
}

/// The background merging of the text index's segments; stops when asked. Its thread is not
/// joined (see [`Merges::stop`]), so no handle is kept.
struct Merges {
    stop: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl Merges {
    /// Tells the thread to stop at its next look, without waiting for it: a merge under way
    /// (settling a large store takes tens of seconds) is left to the process's end, which
    /// clients allow only seconds. What it leaves is a temporary file the next start deletes;
    /// its inputs stay listed until a merge is installed (the manifest is renamed into place).
    fn stop(self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }
}

/// Failures in a row of a background task, and when to try it again: one that keeps failing (a
/// full disk) is not rerun, at its whole cost, every interval ([`super::archive::retry_wait`]).
struct Retry {
    failed: u32,
    at: std::time::Instant,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry { failed: 0, at: std::time::Instant::now() }
    }
}

impl Retry {
    fn due(&self) -> bool {
        std::time::Instant::now() >= self.at
    }

    fn went_well(&mut self) {
        self.failed = 0;
    }

    /// Counts a failure, says `what` failed and when it is tried again.
    fn failed(&mut self, interval: std::time::Duration, what: &str) {
        self.failed = self.failed.saturating_add(1);
        let wait = super::archive::retry_wait(interval, self.failed);
        self.at = std::time::Instant::now() + wait;
        crate::say_err!("origin: {what}; trying again in {:.1} s", wait.as_secs_f64());
    }
}

/// Journal records the state may reflect beyond its saved snapshot before the background
/// thread saves it again (records are ingest batches and writes, so this is a few minutes of
/// busy agents, or the whole store after a first start).
const CHECKPOINT_RECORDS: u64 = 256;

/// Installs the text index's segments written on threads of their own and merges them in the
/// background, as the policy calls for, so that searches keep reading few segments (one, once
/// the store has been idle for an interval and has grown enough since it last settled); and saves
/// the projections' snapshot when it is behind.
fn spawn_merges(archive: Arc<Archive>) -> Merges {
    let stop = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let flag = stop.clone();
    let interval = archive.interval();
    let spawned = std::thread::Builder::new()
        .name("origin-merge".into())
        .spawn(move || {
            let (lock, cv) = &*flag;
            // Where the store's writes stood at the last look: the same again means nothing
            // was written or indexed for a whole interval, and the segments may settle into one.
            let mut looked: Option<(u64, u64)> = None;
            // Merges that failed in a row, and when to try again: a merge that keeps failing
            // (a full disk) is not rerun, at a whole merge's cost, every interval.
            let mut merges = Retry::default();
            // The same for saving the snapshot: one that keeps failing (a folder that refuses
            // writes in a way its check did not see) is said and tried less and less often.
            let mut saves = Retry::default();
            loop {
                let stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                // A stop asked while this thread was working is seen here, not an interval later.
                if *stopped {
                    return;
                }
                let (stopped, _) = cv.wait_timeout(stopped, interval).unwrap_or_else(|p| p.into_inner());
                if *stopped {
                    return;
                }
                drop(stopped);
                archive.commit_step();
                // One merge at a time until none is called for; a failure is reported and
                // tried again later (the index stays correct without merges).
                let mark = archive.write_mark();
                let idle = looked == Some(mark);
                looked = Some(mark);
                while merges.due() {
                    match archive.merge_step(idle) {
                        Ok(true) => merges.went_well(),
                        Ok(false) => {
                            merges.went_well();
                            break;
                        }
                        Err(e) => {
                            merges.failed(interval, &format!("merging the text index failed ({e})"));
                            break;
                        }
                    }
                }
                if saves.due() {
                    match archive.checkpoint(CHECKPOINT_RECORDS) {
                        Ok(_) => saves.went_well(),
                        Err(e) => saves.failed(interval, &format!("saving the projections snapshot failed ({e})")),
                    }
                }
            }
        });
    if let Err(e) = spawned {
        crate::say_err!("origin: could not start the thread that merges the text index ({e}); its segments are merged at a later start");
    }
    Merges { stop }
}

/// The server's input and output. When they are pipes or sockets (as MCP clients start
/// servers: pipes from Python's and Rust's process libraries, socket pairs from Node's), they
/// are read and written without blocking, woken by the runtime's poller; otherwise (a terminal,
/// a file) through tokio's `stdin` and `stdout`, which read and write on its blocking threads,
/// each a hand-over from one thread to another and back. On this machine's 2 cores, switching
/// threads was most of the server's CPU per call: a `get` took 0.34 ms over stdio against 0.03
/// ms in process. Output stays on the blocking path when stderr is the same pipe or socket:
/// a message to stderr must not meet a non-blocking descriptor. When the session ends,
/// [`restore_blocking`] puts both back in blocking mode: whoever shares them, or holds them
/// after the server, expects it.
/// stdout as the protocol layer writes it, telling `gone` once a write, flush or shutdown fails
/// (the client stopped reading: a closed pipe), so that the session ends.
struct Watched {
    inner: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    gone: Arc<tokio::sync::Notify>,
    failed: bool,
}

impl Watched {
    fn watch<T>(&mut self, polled: std::task::Poll<std::io::Result<T>>) -> std::task::Poll<std::io::Result<T>> {
        if matches!(polled, std::task::Poll::Ready(Err(_))) && !self.failed {
            self.failed = true;
            self.gone.notify_one();
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(polled)
    }
    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(polled)
    }
    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(polled)
    }
}

fn stdio_streams() -> (Box<dyn tokio::io::AsyncRead + Send + Unpin>, Box<dyn tokio::io::AsyncWrite + Send + Unpin>) {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
        let input: Box<dyn tokio::io::AsyncRead + Send + Unpin> = match unblocked(stdin.as_fd()) {
            Some(Unblocked::Pipe(fd)) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
                Ok(p) => Box::new(p),
                Err(_) => blocking_stdin(),
            },
            Some(Unblocked::Socket(s)) => Box::new(s),
            None => blocking_stdin(),
        };
        let shares_stderr = identity(stdout.as_fd()).zip(identity(stderr.as_fd())).is_some_and(|(o, e)| o == e);
        let output: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = match (!shares_stderr).then(|| unblocked(stdout.as_fd())).flatten() {
            Some(Unblocked::Pipe(fd)) => match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
                Ok(p) => Box::new(p),
                Err(_) => blocking_stdout(),
            },
            Some(Unblocked::Socket(s)) => Box::new(s),
            None => blocking_stdout(),
        };
        (input, output)
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

/// A copy of stdin or stdout made to be polled: a pipe (made non-blocking by tokio's pipe types)
/// or a socket (made non-blocking here).
#[cfg(unix)]
enum Unblocked {
    Pipe(std::os::fd::OwnedFd),
    Socket(tokio::net::UnixStream),
}

/// A copy of `fd` (the same pipe or socket) if it is a pipe or a Unix socket that the runtime
/// can poll; none otherwise.
#[cfg(unix)]
fn unblocked(fd: std::os::fd::BorrowedFd<'_>) -> Option<Unblocked> {
    use rustix::fs::FileType;
    let kind = FileType::from_raw_mode(rustix::fs::fstat(fd).ok()?.st_mode);
    if kind != FileType::Fifo && kind != FileType::Socket {
        return None;
    }
    let owned = fd.try_clone_to_owned().ok()?;
    if kind == FileType::Fifo {
        return Some(Unblocked::Pipe(owned));
    }
    let s = std::os::unix::net::UnixStream::from(owned);
    // Not a Unix socket (a TCP one, say): left as it was.
    s.local_addr().ok()?;
    s.set_nonblocking(true).ok()?;
    match tokio::net::UnixStream::from_std(s) {
        Ok(s) => Some(Unblocked::Socket(s)),
        Err(_) => {
            set_blocking(fd);
            None
        }
    }
}

/// Which file `fd` is (device, inode).
#[cfg(unix)]
fn identity(fd: std::os::fd::BorrowedFd<'_>) -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(fd).ok()?;
    // `st_dev` is a u64 on Linux, an i32 on macOS: its bits name the device either way.
    #[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
    Some((st.st_dev as u64, st.st_ino as u64))
}

/// Puts `fd` back in blocking mode if it is non-blocking; says so on stderr if it cannot.
#[cfg(unix)]
fn set_blocking(fd: std::os::fd::BorrowedFd<'_>) {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let restored = fcntl_getfl(fd).and_then(|flags| if flags.contains(OFlags::NONBLOCK) { fcntl_setfl(fd, flags - OFlags::NONBLOCK) } else { Ok(()) });
    if let Err(e) = restored {
        crate::say_err!("origin: could not put a standard stream back in blocking mode ({e})");
    }
}

/// tokio's `stdin`, after making sure a failed attempt at polling left it blocking.
fn blocking_stdin() -> Box<dyn tokio::io::AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    set_blocking(std::os::fd::AsFd::as_fd(&std::io::stdin()));
    Box::new(tokio::io::stdin())
}

/// tokio's `stdout`, after making sure a failed attempt at polling left it blocking.
fn blocking_stdout() -> Box<dyn tokio::io::AsyncWrite + Send + Unpin> {
    #[cfg(unix)]
    set_blocking(std::os::fd::AsFd::as_fd(&std::io::stdout()));
    Box::new(tokio::io::stdout())
}

/// Puts stdin and stdout back in blocking mode (see [`stdio_streams`]), once nothing reads or
/// writes them through the runtime any more.
fn restore_blocking() {
    #[cfg(unix)]
    {
        set_blocking(std::os::fd::AsFd::as_fd(&std::io::stdin()));
        set_blocking(std::os::fd::AsFd::as_fd(&std::io::stdout()));
    }
}

/// Stops the task reading stdin and waits until it has (no read can follow), then puts stdin
/// and stdout back in blocking mode.
async fn stop_reader(reader: tokio::task::JoinHandle<()>) {
    reader.abort();
    if let Err(e) = reader.await
        && e.is_panic()
    {
        crate::say_err!("origin: the task reading stdin failed ({e})");
    }
    restore_blocking();
}

/// The longest line rmcp's stdio transport takes (`DEFAULT_MAX_LINE_LENGTH`, 16 MiB): it
/// drops a longer one without an answer, so the server's reader must catch every line that long.
const PROTOCOL_LINE_BYTES_MAX: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Most lines that are not JSON a session says on stderr (a client that writes something
/// else on its output would fill the log).
const NOT_JSON_SAID_MAX: usize = 8;

/// Longest line the server passes on to the protocol layer, newline included: below
/// [`PROTOCOL_LINE_BYTES_MAX`] by a margin for [`fix_arguments`]' rewriting (which may write a
/// number longer than the client did). A longer line is answered as too long (a call) or
/// passed over and said on stderr.
const LINE_BYTES_MAX: usize = PROTOCOL_LINE_BYTES_MAX - 64 * 1024;

/// Why the session could not begin, as a person reads it: for a failed write or read (standard
/// output full or closed), what it was doing and the I/O error, without the protocol layer's
/// internal type names; else as the error says itself.
fn session_error(e: &rmcp::service::ServerInitializeError) -> anyhow::Error {
    match e {
        rmcp::service::ServerInitializeError::TransportError { error, context } => {
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&*error.error);
            while let Some(err) = cause {
                if let Some(io) = err.downcast_ref::<std::io::Error>() {
                    return anyhow::anyhow!("the connection to the client failed when {context} ({io})");
                }
                cause = err.source();
            }
            anyhow::anyhow!("the connection to the client failed when {context}: {}", error.error)
        }
        other => anyhow::anyhow!("the session with the client could not begin: {other}"),
    }
}

/// Serves MCP on stdin/stdout until the client closes it, then ingests once more (5 s at most).
/// The store opens in the background (see [`Opening`]); ingest and merges start once it is open.
pub async fn serve_stdio(opening: Opening) -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    // Lines pass from stdin to the protocol through a pipe, with `fix_arguments` applied.
    let (mut feed, server_in) = tokio::io::duplex(1 << 20);
    let (input, output) = stdio_streams();
    let gone = Arc::new(tokio::sync::Notify::new());
    let output = Watched { inner: output, gone: gone.clone(), failed: false };
    let reader = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(input);
        let mut buf = Vec::new();
        let mut not_json_said = 0usize;
        loop {
            buf.clear();
            match (&mut lines).take(LINE_BYTES_MAX as u64).read_until(b'\n', &mut buf).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    crate::say_err!("origin: reading stdin failed ({e}); the session ends");
                    break;
                }
            }
            let fixed = if buf.len() == LINE_BYTES_MAX && buf.last() != Some(&b'\n') {
                // Longer than the server reads: the rest of the line is passed over (not read
                // as lines of its own), and a call whose head names it is answered.
                // Its last bytes are kept: a client may write the call's `id` last.
                // And how deep its end is nested: an id written last is the call's only in a
                // line that closes every object it opens.
                let (mut rest, mut tail) = (Vec::new(), buf[buf.len() - TAIL_BYTES..].to_vec());
                let mut nesting = Nesting::default();
                nesting.feed(&buf);
                loop {
                    rest.clear();
                    let read = (&mut lines).take(1 << 20).read_until(b'\n', &mut rest).await;
                    nesting.feed(&rest);
                    tail.extend_from_slice(&rest);
                    tail.drain(..tail.len().saturating_sub(TAIL_BYTES));
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) if rest.last() == Some(&b'\n') => break,
                        Ok(_) => {}
                    }
                }
                crate::say_err!("origin: a message longer than {} MiB was passed over", PROTOCOL_LINE_BYTES_MAX >> 20);
                let why = format!("the call is longer than the {} MiB Origin reads in one message", PROTOCOL_LINE_BYTES_MAX >> 20);
                let head = buf.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&buf);
                match call_from_ends(head, || end_id(&nesting, &tail), &why) {
                    Some(answer) => Some(answer),
                    None => continue,
                }
            } else {
                let pass = match std::str::from_utf8(&buf) {
                    Ok(line) => fix_arguments(line),
                    // Bytes that are not UTF-8 (the protocol layer dropped the line unanswered)
                    // are read as U+FFFD, as half of a surrogate pair is, and the call goes on.
                    Err(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches('\n');
                        match fix_arguments(line) {
                            Pass::AsIs => Pass::Rewritten(line.to_owned()),
                            other => other,
                        }
                    }
                };
                match pass {
                    Pass::AsIs => None,
                    Pass::Rewritten(line) => Some(line),
                    Pass::NotJson(why) => {
                        not_json_said += 1;
                        if not_json_said <= NOT_JSON_SAID_MAX {
                            let more = if not_json_said == NOT_JSON_SAID_MAX { "; later ones are not said" } else { "" };
                            crate::say_err!("origin: a message that is not JSON came in ({why}); it names no call Origin can answer{more}");
                        }
                        None
                    }
                }
            };
            let mut out = match fixed {
                Some(f) => f.into_bytes(),
                None => buf.clone(),
            };
            // The last line, at the end of the input, may have no end of its own.
            if out.last() != Some(&b'\n') {
                out.push(b'\n');
            }
            if out.len() > PROTOCOL_LINE_BYTES_MAX {
                // Grown past what the protocol layer reads by its rewriting (bytes that are not
                // UTF-8 each read as U+FFFD, three bytes; numbers written out): answered as a
                // call too long.
                let how = if std::str::from_utf8(&buf).is_err() { "once its bytes that are not UTF-8 are read as U+FFFD" } else { "once rewritten for the tool to answer" };
                let why = format!("the call is longer than the {} MiB Origin reads in one message {how}", PROTOCOL_LINE_BYTES_MAX >> 20);
                let line = out.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&out);
                match call_from_ends(line, || outer_id(line), &why) {
                    Some(answer) => out = format!("{answer}\n").into_bytes(),
                    None => {
                        crate::say_err!("origin: a message longer than {} MiB {how} was passed over", PROTOCOL_LINE_BYTES_MAX >> 20);
                        continue;
                    }
                }
            }
            if feed.write_all(&out).await.is_err() {
                break;
            }
        }
        // Closing the pipe ends the session, as the end of stdin does.
        let _ = feed.shutdown().await;
    });
    let merges: Arc<std::sync::Mutex<Option<Merges>>> = Arc::default();
    let started = {
        let (opening, merges) = (opening.clone(), merges.clone());
        tokio::spawn(async move {
            let mut rx = opening.rx.clone();
            let mut running: Option<Arc<Archive>> = None;
            loop {
                // Once open (a failed attempt may be followed by one that opens it), and again
                // whenever another archive takes its place (a store opened to read only, opened
                // again to write once it can be): the background work is the current one's.
                let new = |o: &Opened| matches!(o, Some(Ok(a)) if running.as_ref().is_none_or(|r| !Arc::ptr_eq(r, a)));
                if rx.wait_for(new).await.is_err() {
                    return;
                }
                let Some(archive) = opening.now() else { continue };
                if let Some(old) = running.take() {
                    old.freshness().stop();
                }
                if let Some(m) = merges.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    m.stop();
                }
                archive.freshness().start();
                *merges.lock().unwrap_or_else(|p| p.into_inner()) = Some(spawn_merges(archive.clone()));
                running = Some(archive);
            }
        })
    };
    let service = match Server::opening(opening.clone()).serve((server_in, output)).await {
        Ok(service) => service,
        Err(e) => {
            stop_reader(reader).await;
            return Err(session_error(&e));
        }
    };
    // A client that stops reading (its end of stdout closed) ends the session as the end of
    // stdin does: the protocol layer only logs a failed write, and the server went on, idle.
    let cancel = service.cancellation_token();
    let unread = tokio::spawn(async move {
        gone.notified().await;
        crate::say_err!("origin: the client stopped reading (writing to stdout failed); the session ends");
        cancel.cancel();
    });
    // SIGTERM ends the session as the end of stdin does, so that what follows still runs:
    // clients that close stdin wait a few seconds, then send SIGTERM, then SIGKILL. So does
    // SIGINT (a terminal's Ctrl-C, or a client that interrupts its servers).
    let cancel = service.cancellation_token();
    let terminated = tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (mut term, mut int) = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(term), Ok(int)) => (term, int),
                (Err(e), _) | (_, Err(e)) => {
                    crate::say_err!(
                        "origin: cannot handle SIGTERM and SIGINT ({e}); a client that sends them ends the server without its last ingest and snapshot"
                    );
                    return;
                }
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            cancel.cancel();
        }
        #[cfg(not(unix))]
        drop(cancel);
    });
    let ended = service.waiting().await;
    unread.abort();
    stop_reader(reader).await;
    started.abort();
    if let Some(m) = merges.lock().unwrap_or_else(|p| p.into_inner()).take() {
        m.stop();
    }
    match opening.now() {
        Some(archive) => {
            let finished = archive.freshness().on_exit(origin_ingest::freshness::EXIT_INGEST_BUDGET);
            if !finished {
                crate::say_err!("origin: the last ingest did not finish within 5 s; the next start picks up the rest");
            }
            if let Err(e) = archive.sync().and_then(|()| archive.save_snapshot()) {
                crate::say_err!("origin: saving the projections snapshot failed ({e}); the next start rebuilds it from the journal");
            }
        }
        None => match opening.failure() {
            Some(why) => crate::say_err!("origin: the session ends with the store not open ({why})"),
            None => crate::say_err!("origin: the client left before the store finished opening; the next start goes on from what was saved"),
        },
    }
    // The handler stays installed: a SIGTERM during the work above did not cut it short.
    drop(terminated);
    ended?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_of_every_tool_says_what_it_means() {
        for tool in tools() {
            let props = tool.input_schema.get("properties").and_then(Value::as_object).expect("properties");
            for (name, p) in props {
                let doc = p.get("description").and_then(Value::as_str).unwrap_or_default();
                assert!(doc.len() > 5, "{}.{name} has no description", tool.name);
            }
        }
        let remember = tools().into_iter().find(|t| t.name == "remember").expect("remember");
        assert_eq!(remember.input_schema["properties"]["sources"]["minItems"], 1, "the spec: at least one");
        let search = tools().into_iter().find(|t| t.name == "search").expect("search");
        // The longest strings and most sources the tools take are told in the schemas, as the
        // archive refuses past them.
        let bound = |tool: &str, path: &[&str]| {
            let t = tools().into_iter().find(|t| t.name == tool).expect("tool");
            let mut v = Value::Object((*t.input_schema).clone());
            for p in path {
                v = v[*p].clone();
            }
            v.as_u64().unwrap_or_else(|| panic!("{tool} {path:?}: no bound"))
        };
        let chars = |tool: &str, arg: &str| bound(tool, &["properties", arg, "maxLength"]);
        let expected = [
            (chars("search", "query"), QUERY_CHARS_MAX),
            (chars("search", "project"), NAME_CHARS_MAX),
            (chars("timeline", "project"), NAME_CHARS_MAX),
            (chars("timeline", "session"), NAME_CHARS_MAX),
            (chars("remember", "text"), ENTRY_TEXT_CHARS_MAX),
            (chars("remember", "project"), NAME_CHARS_MAX),
            (chars("correct", "text"), ENTRY_TEXT_CHARS_MAX),
            (bound("remember", &["properties", "sources", "items", "properties", "quote", "maxLength"]), QUOTE_CHARS_MAX),
            (bound("correct", &["properties", "sources", "items", "properties", "quote", "maxLength"]), QUOTE_CHARS_MAX),
            (bound("remember", &["properties", "sources", "maxItems"]), SOURCES_MAX),
            (bound("correct", &["properties", "sources", "maxItems"]), SOURCES_MAX),
        ];
        for (i, (told, refused_past)) in expected.into_iter().enumerate() {
            assert_eq!(told, refused_past as u64, "bound {i}");
        }
        assert!(search.description.as_deref().is_some_and(|d| d.contains("\"match\": \"partial\"")), "partial matches are announced");
    }

    /// A limit is a whole number however it is written; one larger than any limit is refused
    /// as out of the tool's range (the number as JSON writes it), not as not whole.
    #[test]
    fn a_limit_too_large_for_any_range_is_refused_as_out_of_range() {
        let limit_of = |v: Value, l: Limit| {
            let args: Args = [("limit".to_owned(), v)].into_iter().collect();
            opt_limit(&args, l).map_err(|e| e.to_string())
        };
        assert_eq!(limit_of(json!(5.0), SEARCH_LIMIT), Ok(Some(5)));
        assert_eq!(limit_of(json!(-3), SEARCH_LIMIT), Ok(Some(-3)), "the range is the archive's to check");
        assert_eq!(limit_of(Value::Null, SEARCH_LIMIT), Ok(None));
        assert_eq!(limit_of(json!(1e20), SEARCH_LIMIT), Err("Invalid input: `limit` must be an integer from 1 to 100, not 1e+20".to_owned()));
        assert_eq!(limit_of(json!(-1e300), TIMELINE_LIMIT), Err("Invalid input: `limit` must be an integer from 1 to 500, not -1e+300".to_owned()));
        assert_eq!(
            limit_of(json!(u64::MAX), TIMELINE_LIMIT),
            Err("Invalid input: `limit` must be an integer from 1 to 500, not 18446744073709551615".to_owned())
        );
        assert_eq!(limit_of(json!(2.5), SEARCH_LIMIT), Err("Invalid input: `limit` must be a whole number, not 2.5".to_owned()));
        assert_eq!(limit_of(json!("5"), SEARCH_LIMIT), Err("Invalid input: `limit` must be a whole number, not a string".to_owned()));
    }

    #[test]
    fn merge_and_commit_retries_wait_twice_as_long_after_each_failure_up_to_ten_minutes() {
        use super::super::archive::retry_wait;
        let second = std::time::Duration::from_secs;
        let waits: Vec<u64> = (1..=10).map(|f| retry_wait(second(5), f).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 600, 600, 600]);
        assert_eq!(retry_wait(second(5), u32::MAX), second(600));
        // An interval longer than the cap is kept: retrying never comes sooner than merging does.
        assert_eq!(retry_wait(second(900), 1), second(900));
        assert_eq!(retry_wait(second(900), 5), second(900));
        assert_eq!(retry_wait(std::time::Duration::from_millis(50), 3).as_millis(), 200);
    }

    fn err(r: Result<Arc<Archive>, ToolError>, what: &str) -> ToolError {
        match r {
            Ok(_) => panic!("expected an error: {what}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_call_waits_for_the_opening_store_and_says_so_when_it_takes_too_long() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let (tx, opening) = Opening::pending();
            let e = err(opening.archive(std::time::Duration::from_millis(20)).await, "not open yet");
            assert!(e.0.starts_with("Origin is still opening its store ("), "{}", e.0);
            assert!(opening.now().is_none());
            let waiting = {
                let opening = opening.clone();
                tokio::spawn(async move { opening.archive(std::time::Duration::from_secs(30)).await })
            };
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            tx.send_replace(Some(Err("Origin could not open its store: disk on fire".into())));
            let e = err(waiting.await.expect("task"), "failed to open");
            assert_eq!(e.0, "Origin could not open its store: disk on fire");
            let e = err(opening.archive(std::time::Duration::from_millis(1)).await, "still failed");
            assert_eq!(e.0, "Origin could not open its store: disk on fire");
            drop(tx);
            let (tx, opening) = Opening::pending();
            drop(tx);
            let e = err(opening.archive(std::time::Duration::from_secs(30)).await, "sender gone");
            assert!(e.0.contains("stopped opening"), "{}", e.0);
        });
    }

    /// A store that could not be opened is tried again at a later call (not sooner than
    /// `OPEN_RETRY_AFTER` after the attempt that failed), and opens once it can.
    #[test]
    fn a_store_that_could_not_be_opened_is_tried_again_at_a_later_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().to_path_buf();
        let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let opening = {
            let attempts = attempts.clone();
            Opening::start(move || {
                if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    anyhow::bail!("its lock file is not readable");
                }
                Archive::open(&home, None, None, origin_projections::Verify::WhenNeeded)
            })
            .expect("start")
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let e = err(opening.archive(std::time::Duration::from_secs(30)).await, "the first attempt fails");
            assert_eq!(e.0, "Origin could not open its store: its lock file is not readable");
            let e = err(opening.archive(std::time::Duration::from_secs(30)).await, "too soon to try again");
            assert!(e.0.contains("not readable"), "{}", e.0);
            assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 1);
            tokio::time::sleep(OPEN_RETRY_AFTER).await;
            let archive = opening.archive(std::time::Duration::from_secs(30)).await;
            assert!(archive.is_ok(), "opened at the next call");
            assert!(opening.now().is_some() && opening.failure().is_none());
            assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 2);
        });
    }

    /// How often the tests of a store that cannot be written look at it again.
    const RECHECK: std::time::Duration = std::time::Duration::from_millis(50);

    /// A store made in `dir` (its folder `store`): its home.
    fn made_store(dir: &std::path::Path) -> std::path::PathBuf {
        let home = dir.join("store");
        drop(Archive::open(&home, None, None, origin_projections::Verify::WhenNeeded).expect("a store"));
        home
    }

    /// An opening of the store at `home` on `vfs`, looked at again every [`RECHECK`], and a
    /// runtime to drive it.
    fn rechecking(home: std::path::PathBuf, vfs: Arc<dyn origin_engine::vfs::Vfs>) -> (Opening, tokio::runtime::Runtime) {
        let opening = Opening::start_rechecking(move || Archive::open_on(vfs.clone(), &home, None, None, origin_projections::Verify::WhenNeeded), RECHECK)
            .expect("start");
        (opening, tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"))
    }

    /// A store opened to read only (a read-only mount) answers as it is; looked at again at a
    /// later call, it stays so while it cannot be written, and is opened again, to write, once
    /// it can be (it was read only until the server was started again).
    #[test]
    fn a_store_opened_to_read_only_is_opened_to_write_once_it_can_be() {
        use origin_engine::sim::ReadOnlyFs;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = made_store(dir.path());
        let mount = ReadOnlyFs::new(Arc::new(origin_engine::vfs::OsFs));
        let vfs: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(mount.clone());
        let recheck = RECHECK;
        // Opening again takes a while (a large store's projections), during which the store read
        // only answers.
        let opens = std::sync::atomic::AtomicUsize::new(0);
        let open = move || {
            if opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            Archive::open_on(vfs.clone(), &home, None, None, origin_projections::Verify::WhenNeeded)
        };
        let opening = Opening::start_rechecking(open, recheck).expect("start");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let wait = std::time::Duration::from_secs(30);
            let first = opening.archive(wait).await.expect("opened");
            assert!(first.read_only().is_some_and(|why| why.contains("Read-only file system")), "{:?}", first.read_only());
            let refused = first.forget("ent_0123456789ab", "a test", "test").expect_err("refused");
            assert!(refused.to_string().contains("cannot be written"), "{refused}");
            // Still read-only: looked at, and kept, with no attempt to open it again.
            let began = || *opening.again.as_ref().expect("again").began.lock().expect("began");
            let first_began = began();
            for _ in 0..4 {
                tokio::time::sleep(recheck * 2).await;
                let a = opening.archive(wait).await.expect("open");
                assert!(Arc::ptr_eq(&a, &first), "the same store, read only");
            }
            tokio::time::sleep(recheck * 4).await;
            assert!(Arc::ptr_eq(&opening.now().expect("open"), &first), "not replaced while it cannot be written");
            assert_eq!(began(), first_began, "not opened again while it cannot be written");
            // Written to again: the next call looks, and the store is opened to write.
            mount.remount(false);
            tokio::time::sleep(recheck * 2).await;
            let answered = opening.archive(wait).await.expect("open");
            assert!(answered.read_only().is_some(), "the call that looks is answered by the store as it is");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let written = loop {
                // The store read only answers until the one opened to write takes its place.
                let now = opening.now().expect("a store answers all along");
                if now.read_only().is_none() {
                    break now;
                }
                assert!(std::time::Instant::now() < deadline, "not opened to write");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            };
            let unknown = written.forget("ent_0123456789ab", "a test", "test").expect_err("an unknown entry");
            assert!(unknown.to_string().contains("Unknown entry"), "{unknown}");
        });
    }

    /// A store whose projections folder cannot be written (journal writable) is looked at again
    /// as one read only is, and opened again once its projections can be saved.
    #[test]
    fn a_store_whose_projections_cannot_be_written_is_opened_again_once_they_can_be() {
        use origin_engine::sim::ReadOnlyFs;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = made_store(dir.path());
        let mount = ReadOnlyFs::below(Arc::new(origin_engine::vfs::OsFs), &home.join("projections"));
        let vfs: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(mount.clone());
        let recheck = RECHECK;
        let (opening, rt) = rechecking(home, vfs);
        rt.block_on(async {
            let wait = std::time::Duration::from_secs(30);
            let first = opening.archive(wait).await.expect("opened");
            assert!(first.read_only().is_none() && first.limited());
            tokio::time::sleep(recheck * 2).await;
            let _ = opening.archive(wait).await.expect("open");
            tokio::time::sleep(recheck * 4).await;
            assert!(Arc::ptr_eq(&opening.now().expect("open"), &first), "not replaced while it cannot be written");
            mount.remount(false);
            tokio::time::sleep(recheck * 2).await;
            let _ = opening.archive(wait).await.expect("open");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while opening.now().expect("a store answers all along").limited() {
                assert!(std::time::Instant::now() < deadline, "not opened again");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        });
    }

    /// A store read only whose journal can be written again while its projections still cannot
    /// (a segment given back to its user, the index's folder not yet) is opened again to write
    /// its journal, then again once its projections can be saved: each open that writes more
    /// replaces the one before.
    #[test]
    fn a_store_is_opened_again_each_time_more_of_it_can_be_written() {
        use origin_engine::sim::ReadOnlyFs;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = made_store(dir.path());
        let projections = ReadOnlyFs::below(Arc::new(origin_engine::vfs::OsFs), &home.join("projections"));
        let whole = ReadOnlyFs::new(Arc::new(projections.clone()));
        let vfs: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(whole.clone());
        let recheck = RECHECK;
        let (opening, rt) = rechecking(home, vfs);
        rt.block_on(async {
            let wait = std::time::Duration::from_secs(30);
            let reopened_to = |limitation: u8| {
                let opening = opening.clone();
                async move {
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                    loop {
                        tokio::time::sleep(recheck * 2).await;
                        let _ = opening.archive(wait).await.expect("open");
                        if opening.now().expect("a store answers all along").limitation() == limitation {
                            return;
                        }
                        assert!(std::time::Instant::now() < deadline, "not opened again to {limitation}");
                    }
                }
            };
            let first = opening.archive(wait).await.expect("opened");
            assert_eq!(first.limitation(), 0b111, "read only, nothing saved");
            whole.remount(false);
            reopened_to(0b011).await;
            let now = opening.now().expect("open");
            assert!(now.read_only().is_none());
            let unknown = now.forget("ent_0123456789ab", "a test", "test").expect_err("an unknown entry");
            assert!(unknown.to_string().contains("Unknown entry"), "{unknown}");
            projections.remount(false);
            reopened_to(0).await;
        });
    }

    /// A store whose projections could not be saved is not opened again while its journal
    /// cannot be written (a reopen would be read only, and is not even tried), even once its
    /// projections can be saved.
    #[test]
    fn a_store_is_not_opened_again_while_its_journal_cannot_be_written() {
        use origin_engine::sim::ReadOnlyFs;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = made_store(dir.path());
        let projections = ReadOnlyFs::below(Arc::new(origin_engine::vfs::OsFs), &home.join("projections"));
        let journal = ReadOnlyFs::below(Arc::new(projections.clone()), &home.join("journal"));
        journal.remount(false);
        let vfs: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(journal.clone());
        let recheck = RECHECK;
        let (opening, rt) = rechecking(home, vfs);
        rt.block_on(async {
            let wait = std::time::Duration::from_secs(30);
            let first = opening.archive(wait).await.expect("opened");
            assert_eq!(first.limitation(), 0b011);
            journal.remount(true);
            projections.remount(false);
            let began = || *opening.again.as_ref().expect("again").began.lock().expect("began");
            let first_began = began();
            for _ in 0..4 {
                tokio::time::sleep(recheck * 2).await;
                let _ = opening.archive(wait).await.expect("open");
            }
            tokio::time::sleep(recheck * 4).await;
            assert_eq!(began(), first_began, "no reopen tried while the journal cannot be written");
            assert!(Arc::ptr_eq(&opening.now().expect("open"), &first));
        });
    }

    #[test]
    fn arguments_that_are_not_an_object_reach_the_tool_as_an_error() {
        let line = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":[1,2]}}"#;
        let Pass::Rewritten(fixed) = fix_arguments(line) else { panic!("not rewritten") };
        let fixed: Value = serde_json::from_str(&fixed).expect("json");
        assert_eq!(fixed["params"]["arguments"][NOT_AN_OBJECT], "a list");
        assert_eq!(fixed["id"], 2);
        let ok = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}"#;
        assert_eq!(fix_arguments(ok), Pass::AsIs);
        assert_eq!(fix_arguments(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#), Pass::AsIs);
        assert!(matches!(fix_arguments("not json tools/call"), Pass::NotJson(why) if why == "expected ident at line 1 column 2"));
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// A call as clients write it (its id before or after its method and its arguments, a
        /// string or a number; arguments holding ids, braces, quotes and escapes of their own)
        /// passes as it is; every line it is cut to is answered, if at all, under its own id,
        /// never another (a number cut short is another number).
        #[test]
        fn a_cut_call_is_answered_only_under_its_own_id(
            id in proptest::prop_oneof![(0i64..100_000).prop_map(Value::from), "[a-z0-9-]{1,8}".prop_map(Value::from)],
            inner_id in proptest::prop_oneof![(0i64..100_000).prop_map(Value::from), "[a-z0-9-]{1,8}".prop_map(Value::from)],
            text in "[a-z{}\\[\\]\"\\\\:, 中]{0,12}",
            order in 0usize..4,
            cut_at in 0.0f64..1.0,
            from_end in proptest::option::of(1usize..12),
        ) {
            use proptest::prop_assert_eq;
            let args = json!({ "query": text, "sources": [{ "id": inner_id }], "id": inner_id });
            let params = json!({ "name": "search", "arguments": args }).to_string();
            let line = match order {
                0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#),
                1 => format!(r#"{{"method":"tools/call","id":{id},"params":{params},"jsonrpc":"2.0"}}"#),
                2 => format!(r#"{{"method":"tools/call","params":{params},"id":{id},"jsonrpc":"2.0"}}"#),
                _ => format!(r#"{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":{id}}}"#),
            };
            prop_assert_eq!(fix_arguments(&line), Pass::AsIs);
            // Anywhere, or within its last bytes (where an id written last is).
            let at = from_end.map_or((cut_at * line.len() as f64) as usize, |k| line.len().saturating_sub(k));
            let cut = &line[..line.floor_char_boundary(at)];
            if let Pass::Rewritten(answer) = fix_arguments(cut) {
                let v: Value = serde_json::from_str(&answer).expect("json");
                prop_assert_eq!(&v["id"], &id, "{} answered as {}", cut, answer);
            }
        }
    }

    /// Lines the protocol layer would drop or refuse reach the tools: a lone half of a
    /// surrogate pair read as U+FFFD, an argument no JSON value holds named, a missing name
    /// answered; a call's whole head read from a line cut short.
    #[test]
    fn calls_the_protocol_would_drop_reach_the_tool() {
        let call_of = |line: &str| -> Value {
            let Pass::Rewritten(fixed) = fix_arguments(line) else { panic!("not rewritten: {line}") };
            serde_json::from_str(&fixed).expect("json")
        };
        let lone = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search","arguments":{"query":"cut \ud83d","project":"\udc00x \ud83d\ude80 \\ud83d"}}}"#;
        let v = call_of(lone);
        assert_eq!(v["params"]["arguments"]["query"], "cut \u{FFFD}");
        assert_eq!(v["params"]["arguments"]["project"], "\u{FFFD}x \u{1F680} \\ud83d", "pairs and escaped backslashes kept");
        assert_eq!(v["id"], 8);
        let v = call_of(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search","arguments":{"query":"x","limit":1e400}}}"#);
        let why = v["params"]["arguments"][NOT_READABLE].as_str().expect("why");
        assert!(why.starts_with("`limit` is not a JSON value Origin can read (number out of range"), "{why}");
        assert_eq!((v["id"].as_str(), v["params"]["name"].as_str()), (Some("a"), Some("search")));
        // Both at once: the surrogate mended, then the number named.
        let v = call_of(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"remember","arguments":{"text":"\ud83d","confidence":1e999}}}"#);
        assert!(v["params"]["arguments"][NOT_READABLE].as_str().expect("why").starts_with("`confidence`"), "{v}");
        let v = call_of(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"limit":1e400}}}"#);
        assert_eq!(v["params"]["name"], format!("{NO_NAME}missing"), "no name and an unreadable argument: {v}");
        for (params, what) in [(r#"{"arguments":{}}"#, "missing"), (r#"{"name":5,"arguments":{}}"#, "a number")] {
            let v = call_of(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#));
            assert_eq!(v["params"]["name"], format!("{NO_NAME}{what}"));
        }
        // Not a call, and not JSON even mended: said, passed on as it is.
        assert!(matches!(fix_arguments(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"\ud83d"}} tools/call"#), Pass::NotJson(why) if why.contains("trailing characters")));
        // Not a call, mended: passed on mended.
        assert_eq!(fix_arguments(r#"{"jsonrpc":"2.0","id":1,"result":{"x":"tools/call \ud83d"}}"#), Pass::Rewritten(r#"{"jsonrpc":"2.0","id":1,"result":{"x":"tools/call \uFFFD"}}"#.into()));
        // A call cut short (a brace missing) whose id is read before: answered.
        let v = call_of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":{"id":"x"}"#);
        assert_eq!((v["id"].as_i64(), v["params"]["name"].as_str()), (Some(1), Some("get")));
        let why = v["params"]["arguments"][NOT_READABLE].as_str().expect("why");
        assert_eq!(why, "the call is not JSON Origin can read (EOF while parsing an object at line 1 column 91)");
        // The same with its line's end, as the reader gives it: not read as a second line.
        let v = call_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get\",\"arguments\":{\"id\":\"x\"}\r\n");
        assert_eq!(v["params"]["arguments"][NOT_READABLE], why, "the line's end not read as a line");
        // ... or after its arguments (the TypeScript SDK's order), the object's own, not an
        // "id" inside the arguments; a line with a byte order mark or its slash escaped alike.
        for (line, id) in [
            (r#"{"method":"tools/call","params":{"name":"search","arguments":{"query":"x",}},"jsonrpc":"2.0","id":"t-1"}"#, "t-1"),
            (r#"{"method":"tools/call","params":{"name":"search","arguments":{"query":"x",}},"id":"t-2","jsonrpc":"2.0"}"#, "t-2"),
            ("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"t-3\",\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"query\":\"x\"}}\r\n", "t-3"),
            (r#"{"jsonrpc":"2.0","id":"t-4","method":"tools\/call","params":{"name":"search","arguments":{"query":"x"}}"#, "t-4"),
        ] {
            let v = call_of(line);
            assert_eq!((v["id"].as_str(), v["params"]["name"].as_str()), (Some(id), Some("search")), "{line}");
        }
        for line in [
            // Its own id cut off: an id in its arguments is not its.
            r#"{"method":"tools/call","params":{"name":"get","arguments":{"id":"ent_abc"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":{"query":"x","id":9}"#,
            // An id no request has.
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"search","arguments":{"limit":1e400}}}"#,
        ] {
            assert!(matches!(fix_arguments(line), Pass::NotJson(_)), "{line}");
        }
        // A valid call with a byte order mark: as it is (the protocol layer passes over the mark).
        assert_eq!(fix_arguments("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":{\"query\":\"x\"}}}\n"), Pass::AsIs);
        // Any line with a lone surrogate half is mended; a number no JSON value holds in a line
        // that is no call is said.
        assert_eq!(
            fix_arguments(r#"{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"cursor":"\ud83d"}}"#),
            Pass::Rewritten(r#"{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"cursor":"\uFFFD"}}"#.into())
        );
        assert!(matches!(fix_arguments(r#"{"jsonrpc":"2.0","id":22,"method":"ping","params":{"_meta":{"n":1e400}}}"#), Pass::NotJson(why) if why.starts_with("number out of range")));
        // A whole-number id written as a float is read as the protocol layer reads it; one no
        // 64-bit signed integer holds is none.
        for (id, read) in [("1.0", json!(1)), ("1e2", json!(100)), ("-7", json!(-7))] {
            let v = call_of(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{{"query":"x"}}"#));
            assert_eq!(v["id"], read, "{id}");
        }
        for id in ["18446744073709551615", "9.3e18", "1.5"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{{"query":"x"}}"#);
            assert!(matches!(fix_arguments(&line), Pass::NotJson(_)), "{id}");
        }
        // A line too long to read whole: its last id is the call's only when the line closed
        // every object it opened, read in pieces.
        let whole: &[&[u8]] = &[br##"{"method":"tools/call","params":{"name":"get","arguments":{"q":"a{[\"}""##, br#"}},"id":"t-9"}"#];
        let cut: &[&[u8]] = &[br#"{"method":"tools/call","params":{"name":"get","arguments":{"q":"a","#, br#""id":"ent_abc"}"#];
        for (pieces, want) in [(whole, Some(json!("t-9"))), (cut, None)] {
            let mut nesting = Nesting::default();
            pieces.iter().for_each(|p| nesting.feed(p));
            assert_eq!(end_id(&nesting, pieces[1]), want);
        }
        // Lines that are not calls: JSON as the protocol layer reads it (a byte order mark, white
        // space) or not.
        assert_eq!(fix_arguments("\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"), Pass::AsIs);
        assert_eq!(fix_arguments("  \r"), Pass::AsIs);
        assert!(matches!(fix_arguments("hello"), Pass::NotJson(why) if why.starts_with("expected value")));
        assert!(matches!(fix_arguments(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list""#), Pass::NotJson(why) if why.starts_with("EOF while parsing")));
        // A head cut short.
        let too_long_call = |head: &[u8], tail: &[u8]| call_from_ends(head, || id_at_end(tail), "too long");
        let head = r#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"remember","arguments":{"text":"aaaaaaaa"#;
        let v: Value = serde_json::from_str(&too_long_call(head.as_bytes(), b"aaaa\"}}}\n").expect("a call")).expect("json");
        assert_eq!((v["id"].as_i64(), v["params"]["name"].as_str()), (Some(77), Some("remember")));
        assert_eq!(v["params"]["arguments"][NOT_READABLE].as_str(), Some("too long"));
        assert_eq!(too_long_call(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"#, b"aaa\"}}}"), None, "no id");
        assert_eq!(too_long_call(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":""#, b"\"}}"), None);
        // The id written last (the TypeScript SDK's order), found in the line's last bytes; an
        // "id" of an object inside the arguments is not the call's.
        let head = br#"{"method":"tools/call","params":{"name":"remember","arguments":{"text":"aaaa"#;
        let v: Value = serde_json::from_str(&too_long_call(head, b"aaaa\",\"confidence\":1}},\"jsonrpc\":\"2.0\",\"id\" : \"x-9\" }\n").expect("a call")).expect("json");
        assert_eq!((v["id"].as_str(), v["params"]["name"].as_str()), (Some("x-9"), Some("remember")));
        assert_eq!(too_long_call(head, br#"a","sources":[{"id":3}]}},"jsonrpc":"2.0"}"#), None);
    }
}

//! The operations behind the seven tools and the CLI: one store (journal, projections, text
//! index, ingest freshness), answering in the spec's JSON shapes.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use origin_engine::record::{Body, Citation, EntryKind, EntryVersion, Event, EventKind, Forgotten, Restored};
use origin_engine::vfs::{OsFs, Vfs};
use origin_engine::{Access, Journal, NewRecord, Options};
use origin_ingest::{Freshness, Homes, Ingester};
use origin_projections::catalog::{CatalogOpened, CommitInFlight, Committed};
use origin_projections::ahead::read_records;
use origin_projections::index::MergePolicy;
use origin_projections::{Catalog, Entry, EntryFilter, Filters, Index, Lookup, Match, Scope, SessionFilter, State};
use serde_json::{json, Value};

use super::conventions::{cut, cut_event, format_time, is_entry_id, is_event_id, is_tombstone_id, parse_time_arg};

/// Characters of text per tool (spec: search 400, timeline 1,000, get 20,000, an entry's
/// sources 500, sources' raw line 4,000).
pub const SEARCH_TEXT_CHARS: usize = 400;
/// See [`SEARCH_TEXT_CHARS`].
pub const TIMELINE_TEXT_CHARS: usize = 1_000;
/// See [`SEARCH_TEXT_CHARS`].
pub const GET_EVENT_TEXT_CHARS: usize = 20_000;
/// See [`SEARCH_TEXT_CHARS`].
pub const SOURCE_TEXT_CHARS: usize = 500;
/// See [`SEARCH_TEXT_CHARS`].
pub const RAW_LINE_CHARS: usize = 4_000;
/// A line `sources` shows, taken as its bytes are read: its first bytes, as many as
/// [`RAW_LINE_CHARS`] characters can take, and of the rest only how many characters they are
/// (as `String::from_utf8_lossy` counts them): a line of hundreds of megabytes (a prompt with
/// screenshots) is never held whole to show 4,000 characters of it.
#[derive(Default)]
struct LineShown {
    head: Vec<u8>,
    /// Characters after `head`.
    rest_chars: u64,
    /// Bytes after `head` that may begin a character the next bytes end.
    carry: Vec<u8>,
    /// `head` holds all it may: what follows is only counted.
    full: bool,
}

impl LineShown {
    /// Bytes of the line kept: a character takes at most 4, and a little past the cut lets the
    /// grapheme cluster there be seen whole.
    const HEAD_BYTES: usize = RAW_LINE_CHARS * 4 + 64;

    fn push(&mut self, mut b: &[u8]) {
        if !self.full {
            let n = (Self::HEAD_BYTES - self.head.len()).min(b.len());
            self.head.extend_from_slice(&b[..n]);
            b = &b[n..];
            if self.head.len() < Self::HEAD_BYTES {
                return;
            }
            self.full = true;
            // The head ends before its last character if that has continuation bytes to
            // come: the character is counted with the rest (a complete one too, harmlessly).
            let mut end = self.head.len();
            while end > 0 && self.head.len() - end < 3 && self.head[end - 1] & 0xC0 == 0x80 {
                end -= 1;
            }
            let lead = end > 0 && self.head[end - 1] >= 0xC0;
            self.carry = self.head.split_off(if lead { end - 1 } else { self.head.len() });
        }
        self.carry.extend_from_slice(b);
        let mut at = 0;
        loop {
            match std::str::from_utf8(&self.carry[at..]) {
                Ok(s) => {
                    self.rest_chars += s.chars().count() as u64;
                    self.carry.clear();
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // Valid UTF-8 by its own check: never fails.
                    self.rest_chars += std::str::from_utf8(&self.carry[at..at + valid]).map_or(0, |s| s.chars().count() as u64);
                    match e.error_len() {
                        // One replacement character for each invalid sequence.
                        Some(n) => {
                            self.rest_chars += 1;
                            at += valid + n;
                        }
                        // A character the next bytes may end.
                        None => {
                            self.carry.drain(..at + valid);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The line cut to [`RAW_LINE_CHARS`] characters, as [`cut`] cuts the whole line.
    fn shown(mut self) -> String {
        // What never ended: one replacement character, as the lossy reading of the whole gives.
        if !self.carry.is_empty() {
            self.rest_chars += 1;
        }
        crate::tools::conventions::cut_noting(&String::from_utf8_lossy(&self.head), RAW_LINE_CHARS, self.rest_chars)
    }
}

/// Most records `sources` reads on from a long line's first piece to its last (its pieces,
/// other files' records between them): a line of 32 MiB is 17 pieces; a giant's, which has
/// events since 2026-12-07, are as many as its length asks (2 MiB each).
const LINE_PIECES_RECORDS_MAX: usize = 65_536;
/// Longest entry text accepted by remember and correct.
pub const ENTRY_TEXT_CHARS_MAX: usize = 20_000;
/// Longest quote accepted.
pub const QUOTE_CHARS_MAX: usize = 2_000;
/// Most sources one remember or correct may cite.
pub const SOURCES_MAX: usize = 50;
/// Longest query.
pub const QUERY_CHARS_MAX: usize = 2_000;
/// Longest project name or session id accepted as an argument.
pub const NAME_CHARS_MAX: usize = 500;

/// Checks an optional name-like argument (project, session) against [`NAME_CHARS_MAX`].
fn name_arg(arg: &str, value: &Option<String>) -> Result<(), ToolError> {
    match value {
        Some(v) if v.chars().count() > NAME_CHARS_MAX => Err(ToolError::invalid(arg, format!("is longer than {NAME_CHARS_MAX} characters"))),
        _ => Ok(()),
    }
}

/// Checks a filter by project or session: [`name_arg`], and not blank (a filter by the empty
/// name matched nothing, an answer an agent would take for "none there", where it meant no
/// filter; `remember` takes a blank project for none).
fn filter_arg(arg: &str, value: &Option<String>) -> Result<(), ToolError> {
    name_arg(arg, value)?;
    match value {
        Some(v) if v.trim().is_empty() => Err(ToolError::invalid(arg, "is empty (leave it out for no filter)")),
        _ => Ok(()),
    }
}

/// How a refused argument's message begins.
const INVALID: &str = "Invalid input: ";

/// A failure the caller can act on: becomes a tool error with this exact text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String, Failure);

/// What kind of failure a [`ToolError`] is (the command line's exit code tells them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// An argument is not one the tool takes ([`ToolError::invalid`]).
    Invalid,
    /// The store failed because its journal is damaged.
    Damage,
    /// Anything else: an unknown id, a refused operation, the store's other failures.
    Other,
}

impl std::error::Error for ToolError {}

impl ToolError {
    /// A failure with this text (not the journal's damage).
    pub fn new(text: impl Into<String>) -> ToolError {
        ToolError(text.into(), Failure::Other)
    }

    /// True if the store failed because its journal is damaged (a command exits 1 for it).
    pub fn is_journal_damage(&self) -> bool {
        self.1 == Failure::Damage
    }

    /// True if an argument was refused (a command exits 2 for it, as for a bad command line).
    pub fn is_invalid_input(&self) -> bool {
        self.1 == Failure::Invalid
    }

    /// `Unknown entry or event <id>.`
    pub fn unknown(id: &str) -> ToolError {
        ToolError::new(format!("Unknown entry or event {id}."))
    }
    /// `<id> has been forgotten.`
    pub fn forgotten(id: &str) -> ToolError {
        ToolError::new(format!("{id} has been forgotten."))
    }
    /// Invalid input, naming the argument and why.
    pub fn invalid(arg: &str, why: impl std::fmt::Display) -> ToolError {
        ToolError(format!("{INVALID}`{arg}` {why}"), Failure::Invalid)
    }

    /// For a refused argument ([`ToolError::invalid`]): its name and why (the command line
    /// names it as its flag).
    pub fn refused_argument(&self) -> Option<(&str, &str)> {
        if self.1 != Failure::Invalid {
            return None;
        }
        self.0.strip_prefix(INVALID)?.strip_prefix('`')?.split_once("` ")
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type ToolResult = Result<Value, ToolError>;

/// A failure of the store itself (I/O, damage): reported as a tool error too, with its cause.
fn store_error<E: std::error::Error + 'static>(e: E) -> ToolError {
    let damaged = is_journal_damage(&e);
    ToolError(format!("The Origin store failed: {e}"), if damaged { Failure::Damage } else { Failure::Other })
}

/// A write's failure ([`store_error`]); where the store was busy (another process held one of
/// its locks for all the time a server's write waits: [`Archive::open_for_agents`]), nothing was
/// recorded, and the agent is told so and to try again.
fn write_error<E: std::error::Error + 'static>(e: E) -> ToolError {
    use origin_ingest::ingest::IngestError;
    let err: &(dyn std::error::Error + 'static) = &e;
    let busy = match (err.downcast_ref::<IngestError>(), err.downcast_ref::<origin_engine::Error>()) {
        (Some(IngestError::Busy { .. } | IngestError::RunUnderWay { .. } | IngestError::Journal(origin_engine::Error::Busy { .. })), _) => true,
        (_, Some(origin_engine::Error::Busy { .. })) => true,
        _ => false,
    };
    if busy {
        ToolError(format!("Nothing was recorded: the Origin store is busy ({e}). Try again in a moment."), Failure::Other)
    } else {
        store_error(e)
    }
}

/// A catch-up's failure ([`Archive::sync`]): reading the journal or applying a record.
struct SyncFailed(ToolError);

impl From<ToolError> for SyncFailed {
    fn from(e: ToolError) -> SyncFailed {
        SyncFailed(e)
    }
}

impl From<origin_engine::Error> for SyncFailed {
    fn from(e: origin_engine::Error) -> SyncFailed {
        SyncFailed(store_error(e))
    }
}

/// [`store_error`] for a failure the store's code found and words itself.
fn store_failed(why: impl std::fmt::Display) -> ToolError {
    ToolError(format!("The Origin store failed: {why}"), Failure::Other)
}

/// True if `e` is the journal's corruption, or an error that carries it: the store's errors
/// that hold the journal's (`#[error(transparent)]` shows the inner error as itself, so a chain
/// of sources never reaches it) and a tool's failure that knew it. The command line exits 1
/// for it.
pub fn is_journal_damage(e: &(dyn std::error::Error + 'static)) -> bool {
    use origin_projections::{CatalogError, OpenError, state};
    if let Some(t) = e.downcast_ref::<ToolError>() {
        return t.is_journal_damage();
    }
    let journal = if let Some(j) = e.downcast_ref::<origin_engine::Error>() {
        Some(j)
    } else if let Some(state::Error::Journal(j)) = e.downcast_ref() {
        Some(j)
    } else if let Some(CatalogError::Journal(j)) = e.downcast_ref() {
        Some(j)
    } else if let Some(origin_ingest::ingest::IngestError::Journal(j)) = e.downcast_ref() {
        Some(j)
    } else if let Some(OpenError::State(s)) = e.downcast_ref() {
        return is_journal_damage(s);
    } else if let Some(OpenError::Catalog(c)) = e.downcast_ref() {
        return is_journal_damage(c);
    } else {
        None
    };
    journal.is_some_and(origin_engine::Error::is_corruption)
}

struct Inner {
    state: State,
    /// The offset the saved snapshot reflects.
    saved_to: u64,
    /// The text index (on disk, shared with the store's other processes).
    catalog: Catalog,
    /// A commit of the text index being written on a thread of its own: feeding and the tools
    /// go on meanwhile (its documents stay searchable); installed once written by the catch-up
    /// (`sync`), the background thread ([`Archive::commit_step`]) or [`Archive::save_snapshot`].
    commit: Option<CommitInFlight>,
    /// Commits of the text index that failed in a row, and when to start the next: until then
    /// none is started (a full disk is not written to at every call).
    commit_failures: Option<(u32, std::time::Instant)>,
    /// The background thread's interval ([`background_interval`]): the first wait after a
    /// failed commit.
    interval: std::time::Duration,
    /// How many documents left out of the text index were said on stderr
    /// ([`Inner::say_left_out`]).
    left_out_said: u64,
}

impl Inner {
    /// Says on stderr that documents were left out of the text index (it cannot hold their
    /// metadata: an event id longer than 4,096 bytes, say), when more were since last said.
    fn say_left_out(&mut self) {
        let left = self.catalog.left_out();
        if left.count > self.left_out_said {
            crate::say_err!(
                "origin: {} left out of search since this process started (the store keeps them: get and timeline show them); the last because {}",
                if left.count == 1 { "1 document was".to_owned() } else { format!("{} documents were", left.count) },
                left.last.as_deref().unwrap_or("the text index cannot hold it"),
            );
        }
        self.left_out_said = left.count;
    }

    /// Notes how a commit of the text index ended. A failure is not the failure of the call
    /// that finds it: the documents stay in memory, searchable (or are fed again from the
    /// journal), so every answer is whole. It is reported on stderr, and the next commit
    /// waits ([`retry_wait`] after the failures in a row).
    fn commit_ended(&mut self, done: Result<(), origin_projections::CatalogError>) {
        match done {
            Ok(()) => self.commit_failures = None,
            Err(e) => {
                let failed = self.commit_failures.map_or(1, |(n, _)| n.saturating_add(1));
                let wait = retry_wait(self.interval, failed);
                self.commit_failures = Some((failed, std::time::Instant::now() + wait));
                crate::say_err!(
                    "origin: writing the text index failed ({e}); its documents stay searchable in memory; trying again in {:.1} s",
                    wait.as_secs_f64()
                );
            }
        }
    }
}

/// How often the background thread commits and merges the text index and checkpoints the
/// snapshot: `ORIGIN_MERGE_INTERVAL_MS`, or 5 s.
pub(crate) fn background_interval() -> std::time::Duration {
    positive_setting("ORIGIN_MERGE_INTERVAL_MS", "merging every 5 s").map_or(BACKGROUND_INTERVAL, std::time::Duration::from_millis)
}

/// The background thread's interval unless set.
const BACKGROUND_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest wait before a commit or merge that keeps failing is tried again.
const RETRY_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(600);

/// How long to wait before trying a commit or merge again after `failed` failures in a row:
/// doubling from one `interval`, at most [`RETRY_WAIT_MAX`] (or one interval, if that is
/// longer).
pub(crate) fn retry_wait(interval: std::time::Duration, failed: u32) -> std::time::Duration {
    let doubled = interval.saturating_mul(1u32 << failed.saturating_sub(1).min(16));
    doubled.min(RETRY_WAIT_MAX.max(interval))
}

/// Records read per step of a catch-up: between steps, the text index may commit, and the
/// store's lock is let go.
const SYNC_STEP_RECORDS: usize = 256;

/// A positive whole number from the environment variable `name`: `None` when unset or empty,
/// and (with a warning that says what is used instead) when it is not one.
pub(crate) fn positive_setting(name: &str, instead: &str) -> Option<u64> {
    parse_positive(std::env::var(name).ok().as_deref()).unwrap_or_else(|v| {
        crate::say_err!("origin: {name}={v:?} is not a positive whole number; {instead}");
        None
    })
}

/// A setting's value read as a positive whole number: `Ok(None)` when unset or empty, `Err`
/// with the value when it is not one.
fn parse_positive(value: Option<&str>) -> Result<Option<u64>, String> {
    match value.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(v.to_owned()),
        },
    }
}

/// `ORIGIN_INDEX_COMMIT_DOCS`: in-memory documents that call for a segment of the text index.
fn commit_docs_setting() -> Option<u32> {
    let instead = format!("writing a segment every {} documents", origin_projections::catalog::COMMIT_DOCS);
    positive_setting("ORIGIN_INDEX_COMMIT_DOCS", &instead).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// `ORIGIN_INDEX_COMMIT_MB`: megabytes (MiB) of in-memory documents that call for a segment of
/// the text index.
fn commit_bytes_setting() -> Option<usize> {
    let instead = format!("writing a segment every {} MiB", origin_projections::catalog::COMMIT_BYTES >> 20);
    positive_setting("ORIGIN_INDEX_COMMIT_MB", &instead).map(|n| usize::try_from(n.saturating_mul(1 << 20)).unwrap_or(usize::MAX))
}

/// Arguments of `search`.
#[derive(Debug, Default, Clone)]
pub struct SearchArgs {
    /// Words or phrases.
    pub query: Option<String>,
    /// all, entries or events.
    pub scope: Option<String>,
    /// memory, knowledge or cognition.
    pub kind: Option<String>,
    /// Time argument.
    pub since: Option<String>,
    /// Time argument.
    pub until: Option<String>,
    /// Source id.
    pub source: Option<String>,
    /// Project.
    pub project: Option<String>,
    /// Also tool calls and results.
    pub include_tools: bool,
    /// 1 to 100.
    pub limit: Option<i64>,
}

/// Arguments of `timeline`.
#[derive(Debug, Default, Clone)]
pub struct TimelineArgs {
    /// Time argument (default 7d).
    pub since: Option<String>,
    /// Time argument.
    pub until: Option<String>,
    /// Source id.
    pub source: Option<String>,
    /// Project.
    pub project: Option<String>,
    /// A session id.
    pub session: Option<String>,
    /// With session: also tools, injected context, system events.
    pub include_tools: bool,
    /// 1 to 500.
    pub limit: Option<i64>,
}

/// One source of remember / correct.
#[derive(Debug, Default, Clone)]
pub struct SourceArg {
    /// An event id.
    pub event_id: Option<String>,
    /// A quote.
    pub quote: Option<String>,
}

/// Arguments of `remember` and `correct`.
#[derive(Debug, Default, Clone)]
pub struct EntryArgs {
    /// correct: the entry's current version.
    pub id: Option<String>,
    /// memory, knowledge or cognition.
    pub kind: Option<String>,
    /// The statement.
    pub text: Option<String>,
    /// Sources.
    pub sources: Vec<SourceArg>,
    /// 0 to 1.
    pub confidence: Option<f64>,
    /// Project.
    pub project: Option<String>,
    /// Time argument.
    pub valid_from: Option<String>,
    /// Time argument.
    pub valid_to: Option<String>,
}

/// An entry's validity must end after it starts: one that ends first would never hold.
/// Adds `c` to `list`, which cites each event once (the spec: one source per cited event): a
/// citation of an event already cited gives it its quote when it had none, or, with `replace`,
/// whenever it brings one (a correction's own source over the one it carries over).
fn cite(list: &mut Vec<Citation>, c: Citation, replace: bool) {
    match list.iter_mut().find(|x| x.event_id == c.event_id) {
        Some(x) => {
            if c.quote.is_some() && (replace || x.quote.is_none()) {
                x.quote = c.quote;
            }
        }
        None => list.push(c),
    }
}

/// An event its agent abandoned (a turn rewound; FORMAT.md, "Abandoned events") is found by id
/// and shown with `"status": "superseded"`; every other event is shown as the spec gives it.
fn mark_abandoned(j: &mut Value, state: &origin_projections::State, id: &str) {
    if state.is_superseded(id) {
        j["status"] = json!("superseded");
    }
}

/// An entry's citations, each event once, as [`cite`] keeps them (entries written before
/// citations were made one per event may cite an event twice: the first place, with a quote
/// if any of them has one).
fn one_per_event<'a>(sources: impl IntoIterator<Item = &'a Citation>) -> Vec<Citation> {
    let mut out = Vec::new();
    for c in sources {
        cite(&mut out, c.clone(), false);
    }
    out
}

/// Refuses a validity that ends at or before it starts, naming the bound the caller gave:
/// `valid_to` when it was given, else `valid_from` (a correction that moves the start past the
/// end it keeps from the version it corrects).
fn validity_order(from: Option<i64>, to: Option<i64>, to_given: bool) -> Result<(), ToolError> {
    match (from, to) {
        (Some(f), Some(t)) if t <= f => Err(if to_given {
            ToolError::invalid("valid_to", "must be after `valid_from`: an entry whose validity ends before it starts never holds")
        } else {
            ToolError::invalid(
                "valid_from",
                "must be before the `valid_to` the corrected version keeps (give `valid_to` too to move it): an entry whose validity ends before it starts never holds",
            )
        }),
        _ => Ok(()),
    }
}

/// Installs the commit in flight if it is finished ([`Inner::commit_ended`] says how).
fn install_finished_commit(inner: &mut Inner) {
    if inner.commit.as_ref().is_some_and(CommitInFlight::is_finished)
        && let Some(c) = inner.commit.take()
    {
        let done = inner.catalog.finish_commit(c);
        inner.commit_ended(done);
    }
}

/// Starts a commit on a thread of its own if enough documents wait in memory, none is in
/// flight, and none failed too recently; says why one that was wanted did not start (a
/// failure to start is noted as a failed commit: [`Inner::commit_ended`]).
fn start_wanted_commit(inner: &mut Inner) -> Option<Committed> {
    if !inner.catalog.wants_commit() || inner.commit_failures.is_some_and(|(_, at)| std::time::Instant::now() < at) {
        return None;
    }
    match inner.catalog.start_commit() {
        Ok(Ok(c)) => {
            inner.commit = Some(c);
            None
        }
        Ok(Err(r)) => Some(r),
        Err(e) => {
            inner.commit_ended(Err(e));
            None
        }
    }
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn parse_kind(kind: &str) -> Result<EntryKind, ToolError> {
    match kind {
        "memory" => Ok(EntryKind::Memory),
        "knowledge" => Ok(EntryKind::Knowledge),
        "cognition" => Ok(EntryKind::Cognition),
        other => Err(ToolError::invalid("kind", format!("must be memory, knowledge or cognition, not {other:?}"))),
    }
}

fn kind_str(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Memory => "memory",
        EntryKind::Knowledge => "knowledge",
        EntryKind::Cognition => "cognition",
    }
}

fn event_kind_str(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Message => "message",
        EventKind::ToolUse => "tool_use",
        EventKind::ToolResult => "tool_result",
        EventKind::Meta => "meta",
        EventKind::System => "system",
        EventKind::Memory => "memory",
    }
}

fn role_str(role: origin_engine::record::Role) -> &'static str {
    match role {
        origin_engine::record::Role::User => "user",
        origin_engine::record::Role::Assistant => "assistant",
        origin_engine::record::Role::System => "system",
    }
}

fn random_hex(bytes: usize) -> Result<String, ToolError> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| store_failed(format!("no randomness for a new id: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A tool's `limit`: its default and its largest value (the smallest is 1).
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// The limit when none is given.
    pub default: i64,
    /// The largest limit taken.
    pub max: i64,
}

/// `search`'s limit (the spec: 1 to 100, 20 by default).
pub const SEARCH_LIMIT: Limit = Limit { default: 20, max: 100 };
/// `timeline`'s limit (the spec: 1 to 500, 50 by default).
pub const TIMELINE_LIMIT: Limit = Limit { default: 50, max: 500 };

impl Limit {
    /// The refusal of a limit out of range, `shown` as the caller wrote it.
    pub fn refusal(self, shown: impl std::fmt::Display) -> ToolError {
        ToolError::invalid("limit", format!("must be an integer from 1 to {}, not {shown}", self.max))
    }

    fn arg(self, value: Option<i64>) -> Result<usize, ToolError> {
        let v = value.unwrap_or(self.default);
        if !(1..=self.max).contains(&v) {
            return Err(self.refusal(v));
        }
        Ok(v as usize)
    }
}

fn source_arg(value: &Option<String>) -> Result<Option<String>, ToolError> {
    match value.as_deref() {
        None => Ok(None),
        Some(s) if super::conventions::SOURCES.contains(&s) => Ok(Some(s.to_owned())),
        Some(s) => Err(ToolError::invalid("source", format!("must be one of claude-code, codex, cursor, zcode, grok, not {s:?}"))),
    }
}

/// Says what opening the journal for writing repaired: a torn tail cut (the last write of a
/// process that crashed or lost power, never acknowledged) with where its bytes were kept, and
/// files an interrupted compaction left. Each is repaired, so said, by the one open that finds it.
pub fn say_journal_repairs(j: &Journal) {
    let report = j.open_report();
    for t in &report.torn_tails {
        // A torn tail is cut by the open that finds it, which keeps its bytes; an open that
        // refuses writes (a failed sync) leaves it for the next.
        let done = match &t.copy {
            Some(c) => format!("were cut; they are kept in {}", c.display()),
            None if j.is_read_only() => "are read past and left as they are (the store cannot be written)".to_owned(),
            None => "are left for the next open to cut (this one refuses writes)".to_owned(),
        };
        crate::say_err!(
            "origin: the journal's last write was cut short (a crash or power cut, before it was acknowledged): {} bytes after byte {} of {} {done}",
            t.size_bytes,
            t.position,
            t.segment.display()
        );
    }
    for l in &report.leftovers {
        crate::say_err!("origin: removed {}, left by an interrupted compaction", l.display());
    }
    for m in [&report.tip_rewritten, &report.tip_unwritten].into_iter().flatten() {
        crate::say_err!("origin: {m}");
    }
    for m in j.take_index_write_failures() {
        crate::say_err!("origin: {m}");
    }
}

/// One store, open for the tools.
pub struct Archive {
    home: PathBuf,
    /// For a replay's store ([`REPLAY_FILE`]): the time it shows the store as of, which reads
    /// take as now (relative times, entries' validity).
    as_of: Option<Timestamp>,
    /// Where the mirrors of the agents' logs are: the store's `raw/`, or for a replay's store
    /// its store's (the lines of its records are those lines, at the same places).
    mirrors: PathBuf,
    journal: Arc<Journal>,
    /// Why the store cannot be written, when it was opened to read only ([`open_journal`]).
    read_only: Option<String>,
    /// What refused the write then, looked at again by [`Archive::writable_again`].
    refused_at: Option<PathBuf>,
    /// Why the projections' snapshots are not saved: the store cannot be written, or its
    /// projections folder cannot ([`projections_unwritable`]).
    unsaved: Option<String>,
    /// Why the text index's catalog may not write, if it may not (taken at the open).
    index_unsaved: Option<String>,
    freshness: Arc<Freshness>,
    inner: Mutex<Inner>,
    device: String,
    tz: TimeZone,
    /// That reads answer from what this process has read of the store, the journal's lock being
    /// held by another for longer than [`JOURNAL_LOCK_WAIT`], was said (and not since taken).
    busy_said: std::sync::atomic::AtomicBool,
}

/// How long a server answering an agent ([`Archive::open_for_agents`]) waits for the journal's lock
/// while another process holds it (a commit holds it for milliseconds; a compaction, longer):
/// past it, a read answers from what this process has read of the store, and a write records
/// nothing and says the store is busy.
pub const JOURNAL_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the projections folder `dir` (made if missing) cannot be written, if it cannot: a
/// read-only mount of it, or another user's folder, in a store whose journal can be written.
fn projections_unwritable(vfs: &dyn Vfs, dir: &Path) -> Option<String> {
    // Anything else than a refusal is met, and said, where the snapshots are read and written.
    let refused = match vfs.create_dir_all(dir) {
        Err(e) if origin_engine::vfs::is_read_only_error(&e) => Some(e),
        _ => origin_engine::vfs::folder_refusal(vfs, dir),
    };
    refused.map(|e| format!("{}: {}", dir.display(), origin_engine::vfs::refusal_text(&e)))
}

thread_local! {
    /// Whether the call this thread runs is still wanted ([`while_wanted`]).
    static WANTED: std::cell::RefCell<Option<Box<dyn Fn() -> bool>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` (a tool call, on this thread) with `wanted` asked before it records anything: a
/// call its client cancelled while it ingested first records nothing (its answer is not read;
/// a client that cancels, then asks again, would otherwise find two entries).
pub fn while_wanted<T>(wanted: impl Fn() -> bool + 'static, f: impl FnOnce() -> T) -> T {
    /// Lets the question go however `f` ends, a panic included: the thread runs other calls.
    struct Asked;
    impl Drop for Asked {
        fn drop(&mut self) {
            WANTED.with(|w| *w.borrow_mut() = None);
        }
    }
    WANTED.with(|w| *w.borrow_mut() = Some(Box::new(wanted)));
    let _asked = Asked;
    f()
}

/// Whether the call this thread runs is still wanted (always, outside [`while_wanted`]).
fn still_wanted() -> bool {
    WANTED.with(|w| w.borrow().as_ref().is_none_or(|wanted| wanted()))
}

/// What `remember`, `correct`, `forget` and `restore` answer of the store in `home`, which
/// cannot be written for the reason `why`.
pub fn write_refusal(home: &Path, why: &str) -> String {
    format!(
        "The Origin store in {} cannot be written ({why}), so Origin reads it as it is and records nothing there: \
         nothing can be remembered, corrected, forgotten or restored until it can be written.",
        home.display()
    )
}

/// Opens the store's journal in `dir` to write; where the store cannot be written (a
/// read-only mount, a backup, a store another user owns: the journal's lock or files refuse
/// write access), to read only, with why it cannot be written. A journal that cannot be
/// opened to read either gives the first error when there is none to read (it says what
/// refused the write), else the second.
/// The store's lock is waited for as `lock_wait` says (`None`: as long as it is held).
fn open_journal(vfs: Arc<dyn Vfs>, dir: &Path, lock_wait: Option<std::time::Duration>) -> Result<(Journal, Option<Refusal>), origin_engine::Error> {
    let opts = Options { open_lock_wait: lock_wait, ..Options::default() };
    let read_only = |refused: origin_engine::Error| match Journal::open_with(vfs.clone(), dir, Options { access: Access::ReadOnly, ..opts.clone() }) {
        Ok(j) => Ok((j, Some(Refusal::of(&refused)))),
        Err(origin_engine::Error::NoJournal { .. }) => Err(refused),
        Err(e) => Err(e),
    };
    // Refused before anything is tried: read at once (a writer's open would take the lock its
    // owner's writes wait on).
    if let Some(refused) = origin_engine::journal::write_refused(&*vfs, dir) {
        return read_only(refused);
    }
    match Journal::open_with(vfs.clone(), dir, opts.clone()) {
        Ok(j) => Ok((j, None)),
        Err(refused) if refused.is_write_refused() => read_only(refused),
        Err(e) => Err(e),
    }
}

/// Why a store was opened to read only: the refusal in words, and the file or folder that
/// refused, which is looked at again to tell when the store can be written.
struct Refusal {
    why: String,
    path: Option<PathBuf>,
}

impl Refusal {
    fn of(e: &origin_engine::Error) -> Refusal {
        let path = match e {
            origin_engine::Error::Io { path, .. } => Some(path.clone()),
            _ => None,
        };
        Refusal { why: e.to_string(), path }
    }
}

/// In a store made by `origin journal replay --to`: what it is a replay of, and up to where.
/// Origin reads no agents' logs into such a store (it shows another store as it was).
pub const REPLAY_FILE: &str = "replay.json";
/// In a `REPLAY_FILE` a replay writes first, before anything else of the store it makes: what
/// is making it (the summary replaces it last). Such a store does not open.
pub const REPLAY_UNFINISHED_KEY: &str = "unfinished";

/// What is making the replay's store whose [`REPLAY_FILE`] holds `v`, if it is not finished
/// (written first by a replay into a folder of its own, replaced by the summary last).
fn unfinished_replay(v: &Value) -> Option<&str> {
    v.get(REPLAY_UNFINISHED_KEY).and_then(Value::as_str)
}

/// Whether the store in `home` is a replay's that did not finish ([`unfinished_replay`]).
pub fn replay_unfinished(home: &Path) -> bool {
    std::fs::read(home.join(REPLAY_FILE)).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()).is_some_and(|v| unfinished_replay(&v).is_some())
}

/// What a replay's store is ([`REPLAY_FILE`]): the time it shows its store as of, and that
/// store's home (whose mirrors hold its lines: a replay copies no mirrors).
pub struct Replay {
    /// The time the store is shown as of (`as_of_unix_ms`).
    pub as_of: Timestamp,
    /// The store replayed (`of`; a relative path taken from the replay's store).
    pub of: PathBuf,
}

/// The [`Replay`] the store at `home` is, if it is one (read by every open of it, and by a
/// replay of it). A replay file that cannot be read is an error (the store would otherwise
/// take agents' logs it must not).
pub fn replay_of(home: &Path) -> anyhow::Result<Option<Replay>> {
    // (Looked at before the store's journal is opened: a replay stopped before its journal was
    // made must not have one made for it.) A folder a replay is making now (it holds it,
    // `hold_folder`) is neither a store to read nor one to make, even before its first word.
    if origin_engine::vfs::Vfs::is_held(&origin_engine::vfs::OsFs, home).unwrap_or(false) {
        anyhow::bail!("the store in {} is being made now by a replay (origin journal replay --to); wait for it to finish", home.display());
    }
    let path = home.join(REPLAY_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| anyhow::anyhow!("{} is not a replay's summary: {e}", path.display()))?;
    if let Some(what) = unfinished_replay(&v) {
        anyhow::bail!(
            "the store in {} is unfinished: {what} was making it and stopped before the end; run it again (it starts over there)",
            home.display()
        );
    }
    let as_of = v["as_of_unix_ms"]
        .as_i64()
        .and_then(|ms| Timestamp::from_millisecond(ms).ok())
        .ok_or_else(|| anyhow::anyhow!("{} names no as_of_unix_ms Origin can read", path.display()))?;
    let of = v["of"].as_str().ok_or_else(|| anyhow::anyhow!("{} names no store it is of", path.display()))?;
    // A relative path is taken from the store (the file was edited: replays write absolute ones).
    Ok(Some(Replay { as_of, of: home.join(of) }))
}

impl Archive {
    /// Opens the store at `home`, reading agent logs from `homes` (none for a command that
    /// reads no logs: `get`, `sources`, `forget`, `restore` and `tombstones` on the command
    /// line); the text index's segments are verified as `verify` says (ahead for a server or
    /// a search; when needed for a command that may not search, which then never reads the
    /// index's postings).
    pub fn open(home: &Path, homes: Option<Homes>, recorded_home: Option<&str>, verify: origin_projections::Verify) -> anyhow::Result<Archive> {
        Archive::open_on(Arc::new(OsFs), home, homes, recorded_home, verify)
    }

    /// [`Archive::open`] for a server answering an agent (`origin mcp`): what it waits for
    /// while another process holds one of the store's locks is bounded (a command at a
    /// terminal waits, saying who holds it). The open waits for the journal's lock
    /// [`JOURNAL_LOCK_WAIT`] at most (then fails, naming who holds it: the server's next call
    /// opens it again), and so does every append and catch-up afterwards; the ingest lock is
    /// waited for as [`Freshness::bound_waits`] says. Past a wait, a read answers from what
    /// this process has read of the store, and a write records nothing and tells the agent the
    /// store is busy. A process stopped while it held a lock (Ctrl-Z on `origin ingest`) kept
    /// every call waiting.
    pub fn open_for_agents(home: &Path, homes: Option<Homes>, recorded_home: Option<&str>, verify: origin_projections::Verify) -> anyhow::Result<Archive> {
        Archive::open_waiting(Arc::new(OsFs), home, homes, recorded_home, verify, Some(JOURNAL_LOCK_WAIT))
    }

    /// [`Archive::open`] with the journal and the projections on `vfs` (tests: a file system
    /// that refuses writes).
    pub(crate) fn open_on(
        vfs: Arc<dyn Vfs>,
        home: &Path,
        homes: Option<Homes>,
        recorded_home: Option<&str>,
        verify: origin_projections::Verify,
    ) -> anyhow::Result<Archive> {
        Archive::open_waiting(vfs, home, homes, recorded_home, verify, None)
    }

    /// [`Archive::open_on`], waiting for the store's locks as `lock_wait` says: as long as they
    /// are held (`None`), or as [`Archive::open_for_agents`] says.
    fn open_waiting(
        vfs: Arc<dyn Vfs>,
        home: &Path,
        homes: Option<Homes>,
        recorded_home: Option<&str>,
        verify: origin_projections::Verify,
        lock_wait: Option<std::time::Duration>,
    ) -> anyhow::Result<Archive> {
        // A replay of another store as it was takes no logs and no memory files, and reads it
        // as of then; one that did not finish does not open (before a journal is made there).
        let replay = replay_of(home)?;
        let (journal, refusal) = open_journal(vfs.clone(), &home.join("journal"), lock_wait)?;
        journal.set_lock_wait(lock_wait);
        let refused_at = refusal.as_ref().and_then(|r| r.path.clone());
        let read_only = refusal.map(|r| r.why);
        let journal = Arc::new(journal);
        if let Some(why) = &read_only {
            let logs = if homes.is_some() { ", no agents' logs are read into it," } else { "" };
            crate::say_err!(
                "origin: the store in {} cannot be written ({why}); it is read as it is{logs} and nothing can be remembered, \
                 corrected, forgotten or restored there",
                home.display()
            );
        }
        say_journal_repairs(&journal);
        let unsaved = match &read_only {
            Some(why) => Some(why.clone()),
            None => projections_unwritable(&*vfs, &home.join("projections")),
        };
        let reads_logs = homes.is_some() && read_only.is_none();
        let homes = homes.unwrap_or_else(|| Homes::under(home));
        let mut ingester = Ingester::new(journal.clone(), home, homes).with_snapshot(origin_ingest::snapshot::path_in(home));
        if !reads_logs {
            ingester = ingester.reading_nothing();
        }
        if replay.is_some() {
            ingester = ingester.reading_nothing();
        }
        if let Some(r) = recorded_home {
            ingester = ingester.with_recorded_home(r);
        }
        let freshness = Freshness::new(Arc::new(ingester), Arc::new(|m: &str| crate::say_err!("origin: {m}")));
        if lock_wait.is_some() {
            freshness.bound_waits();
        }
        let snapshot_path = home.join("projections").join(origin_projections::state::SNAPSHOT_FILE_NAME);
        let index_dir = home.join("projections").join("index");
        let origin_projections::OpenedProjections { state, state_opened, mut catalog, catalog_opened: opened } =
            origin_projections::open_projections(&journal, &snapshot_path, &index_dir, verify, origin_projections::StateRead::ByCaller)?;
        // Projections that cannot be saved and are behind the journal: what they lack is read
        // into memory at every start, which the user should know of (it is slow on a large store).
        // (A store that cannot be written said so; a text index built in memory says so below.)
        let index_unsaved = catalog.read_only().map(str::to_owned);
        let index_said = index_unsaved.as_deref().filter(|_| read_only.is_none() && !matches!(opened, CatalogOpened::InMemory { .. }));
        match (read_only.is_none().then_some(()).and(unsaved.as_ref()), index_said) {
            (Some(why), Some(_)) => crate::say_err!(
                "origin: the projections folder cannot be written ({why}): their snapshots are not saved and what the text index \
                 adds is kept in memory, so each start reads the journal past what was saved"
            ),
            (Some(why), None) => crate::say_err!(
                "origin: the projections folder cannot be written ({why}): their snapshots are not saved, so each start reads the \
                 journal past the last ones saved"
            ),
            (None, Some(why)) => crate::say_err!(
                "origin: {why}: what the text index adds is kept in memory, so each start indexes the journal past what was saved"
            ),
            (None, None) => {}
        }
        if unsaved.is_some() || index_unsaved.is_some() {
            let state_to = match state_opened.snapshot {
                origin_projections::SnapshotUse::Loaded { read_to } if unsaved.is_some() => read_to,
                _ if unsaved.is_some() => 0,
                _ => u64::MAX,
            };
            let index_to = match &opened {
                _ if catalog.read_only().is_none() => u64::MAX,
                CatalogOpened::Loaded { mark } => *mark,
                _ => 0,
            };
            let (saved, end) = (state_to.min(index_to), journal.next_offset());
            // The state's snapshot counts only where it is not saved: else only the index is behind.
            let (what, folder, are, they) =
                if unsaved.is_some() { ("projections", home.join("projections"), "reflect", "they") } else { ("text index", index_dir.clone(), "reflects", "it") };
            if saved == 0 && end > 0 {
                crate::say_err!(
                    "origin: no {what} saved in {}: this process reads the journal's {end} records into its memory, as \
                     every start does while {they} cannot be saved",
                    folder.display()
                );
            } else if saved < end {
                crate::say_err!(
                    "origin: the {what} saved in {} {are} the journal's first {saved} of {end} records: this process reads \
                     the rest into its memory, as every start does while {they} cannot be saved",
                    folder.display()
                );
            }
        }
        // What the snapshot on disk reflects: nothing unless one was loaded, so a state rebuilt
        // from the journal is saved at the next checkpoint.
        let saved_to = match state_opened.snapshot {
            origin_projections::SnapshotUse::Loaded { read_to } => read_to,
            _ => 0,
        };
        if let Some(n) = commit_docs_setting() {
            catalog.set_commit_docs(n);
        }
        if let Some(n) = commit_bytes_setting() {
            catalog.set_commit_bytes(n);
        }
        catalog.seed_entries(&state)?;
        if let origin_projections::SnapshotUse::Rejected { reason } = &state_opened.snapshot {
            crate::say_err!("origin: the projections' snapshot {} was not used ({reason}); they were rebuilt from the journal", snapshot_path.display());
        }
        match &opened {
            CatalogOpened::Rebuilt { reason } => crate::say_err!("origin: rebuilding the text index from the journal: {reason}"),
            CatalogOpened::InMemory { reason } => crate::say_err!(
                "origin: the text index cannot be kept on disk ({reason}); this process builds it in memory from the journal"
            ),
            CatalogOpened::Loaded { .. } | CatalogOpened::Fresh => {}
        }
        let archive = Archive {
            home: home.to_path_buf(),
            as_of: replay.as_ref().map(|r| r.as_of),
            mirrors: replay.map_or_else(|| home.join("raw"), |r| r.of.join("raw")),
            journal,
            read_only,
            refused_at,
            unsaved,
            index_unsaved,
            freshness,
            inner: Mutex::new(Inner { saved_to, state, catalog, commit: None, commit_failures: None, interval: background_interval(), left_out_said: 0 }),
            device: origin_ingest::ingest::device_name(),
            tz: super::conventions::local_tz(),
            busy_said: std::sync::atomic::AtomicBool::new(false),
        };
        archive.sync().map_err(anyhow::Error::new)?;
        Ok(archive)
    }

    /// Why the store cannot be written, if it was opened to read only.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// For a store of which something cannot be written ([`Archive::limited`]): whether an open
    /// now would write more of it (the file system remounted to write, its files given back to
    /// their user): for a store opened to read only, its journal (what refused it then, and
    /// [`origin_engine::journal::write_refused`]); else the projections' folders. Nothing is
    /// written, repaired or locked to find out.
    pub fn writable_again(&self) -> bool {
        let vfs = &**self.journal.vfs();
        let journal_writable = origin_engine::journal::write_refused(vfs, self.journal.dir()).is_none();
        if self.read_only.is_some() {
            // The journal decides (what it holds is what is refused to be added): what a writer
            // needs, and what else refused the open (a segment is what `write_refused` judges:
            // one that is no longer the last does not count).
            let segment = |p: &Path| {
                p.parent() == Some(self.journal.dir())
                    && p.file_name().and_then(|n| n.to_str()).and_then(origin_engine::segment::parse_segment_file_name).is_some()
            };
            return journal_writable
                && !self.refused_at.as_deref().is_some_and(|p| !segment(p) && origin_engine::journal::still_refused(vfs, p));
        }
        let projections = self.home.join("projections");
        let folder_writable = |dir: &Path| origin_engine::vfs::folder_refusal(vfs, dir).is_none();
        // A reopen must write the journal as this one does, or it would be read only.
        self.limited() && journal_writable && folder_writable(&projections) && folder_writable(&projections.join("index"))
    }

    /// True if anything of the store cannot be written by this process: the store itself
    /// (opened to read only), its projections folder (snapshots not saved), or its text index's
    /// folder (what the index adds kept in memory).
    pub fn limited(&self) -> bool {
        self.limitation() > 0
    }

    /// How much of the store cannot be written, to compare two opens of it: the store itself
    /// counts most, then its projections folder, then its text index's folder (0: none).
    pub fn limitation(&self) -> u8 {
        (u8::from(self.read_only.is_some()) << 2) | (u8::from(self.unsaved.is_some()) << 1) | u8::from(self.index_unsaved.is_some())
    }

    /// How often the background thread commits, merges and checkpoints
    /// ([`background_interval`], read when the store was opened).
    pub fn interval(&self) -> std::time::Duration {
        guard(&self.inner).interval
    }

    /// The ingest freshness of this process.
    pub fn freshness(&self) -> &Arc<Freshness> {
        &self.freshness
    }

    fn now(&self) -> Zoned {
        Zoned::now().with_time_zone(self.tz.clone())
    }

    /// Now, for reads: in a replay's store, the time it shows the store as of.
    fn read_now(&self) -> Zoned {
        match self.as_of {
            Some(t) => t.to_zoned(self.tz.clone()),
            None => self.now(),
        }
    }

    fn time(&self, ms: i64) -> String {
        format_time(ms, &self.tz)
    }

    fn opt_time(&self, ms: Option<i64>) -> Value {
        ms.map_or(Value::Null, |m| Value::String(self.time(m)))
    }

    /// Catches the projections and the text index up with the journal (records any process
    /// wrote): each record is decoded once for both. The text index writes a segment whenever
    /// enough documents wait in memory. The store's lock is taken a step at a time (at most
    /// [`SYNC_STEP_RECORDS`] records), so that during a long catch-up the background thread
    /// installs commits and merges segments between steps, and other calls get their turn.
    pub fn sync(&self) -> Result<(), ToolError> {
        self.synced().map(drop)
    }

    /// [`Archive::sync`], returning the store's lock as its last step left it: a search made
    /// under it sees every record the step fed (let go and taken again, the background thread
    /// could take another process's commit in between and drop the in-memory documents past
    /// its mark, fed again only by the next call).
    fn synced(&self) -> Result<MutexGuard<'_, Inner>, ToolError> {
        use std::sync::atomic::Ordering;
        // The journal's lock held by another for all of a bounded wait: what this process has
        // read is what it answers from (and what it appended: the journal's view has it).
        match self.journal.refresh() {
            Ok(()) => self.busy_said.store(false, Ordering::SeqCst),
            Err(e @ origin_engine::Error::Busy { .. }) => {
                if !self.busy_said.swap(true, Ordering::SeqCst) {
                    crate::say_err!("origin: {e}; reads answer from what this process has read of the store meanwhile, and writes record nothing");
                }
            }
            Err(e) => return Err(store_error(e)),
        }
        loop {
            let mut inner = guard(&self.inner);
            install_finished_commit(&mut inner);
            // A segment the background check found damaged: the text index is built again
            // from the journal (this call and the next steps feed it), as at a start.
            if let Some(reason) = inner.catalog.repair(&self.journal).map_err(store_error)? {
                crate::say_err!("origin: rebuilding the text index from the journal: {reason}");
            }
            // What another process wrote, or, when it is damaged (a segment it lists missing or
            // failing its checks), the text index built again from the journal.
            if let Some(reason) = inner.catalog.refresh_repairing(&self.journal).map_err(store_error)? {
                crate::say_err!("origin: rebuilding the text index from the journal: {reason}");
            }
            let Inner { state, catalog, commit, .. } = &mut *inner;
            let from = state.read_to().min(catalog.read_to());
            let mut read = 0usize;
            let mut stopped = false;
            // What each projection reads is fixed for the step (their cursors move only past
            // the records given), so a helper can decode, and tokenize for the text index, a
            // record ahead (`read_records`, on a long catch-up).
            let (state_from, cursors) = (state.read_to(), catalog.cursors());
            let decode = |offset: u64, kind: u8| (offset >= state_from && State::reads_kind(kind)) || cursors.wants(offset, kind);
            read_records(&self.journal, from, cursors.events, decode, |mut r, runs| {
                read += 1;
                let for_state = r.offset >= state.read_to() && State::reads_kind(r.kind);
                let for_catalog = catalog.wants(r.offset, r.kind);
                if let Some(body) = r.body.take() {
                    // Never skip a record a projection needs: stop here and report it.
                    let body = body.map_err(store_error)?;
                    if for_state {
                        state.apply(r.offset, &body);
                    }
                    if for_catalog {
                        catalog.apply_read(&r, &body, runs).map_err(store_error)?;
                    }
                }
                if !for_state {
                    state.pass(r.offset);
                }
                if !for_catalog {
                    catalog.pass(r.offset);
                }
                // A step ends to write a segment, or to install one written meanwhile.
                stopped = read >= SYNC_STEP_RECORDS
                    || catalog.wants_commit()
                    || commit.as_ref().is_some_and(CommitInFlight::is_finished);
                Ok::<_, SyncFailed>(if stopped { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
            })
            .map_err(|SyncFailed(e)| e)?;
            // Another process wrote these documents first: read on from its mark.
            if start_wanted_commit(&mut inner) == Some(Committed::Superseded) {
                continue;
            }
            if !stopped {
                inner.say_left_out();
                return Ok(inner);
            }
        }
    }

    /// Installs the text index's commit written on a thread of its own once it is finished,
    /// and starts the next if enough documents wait: the background thread calls it, so that
    /// the segments of a catch-up are installed (and their memory freed) without waiting for
    /// the next tool call. A failure is said on stderr ([`Inner::commit_ended`]).
    pub fn commit_step(&self) {
        let mut inner = guard(&self.inner);
        install_finished_commit(&mut inner);
        // A commit another process wrote first is read past by the next `sync`.
        start_wanted_commit(&mut inner);
    }

    /// One merge of the text index's segments, if the policy calls for one and this process
    /// can write the index: planned and installed under the store's lock, run without it, so
    /// the tools keep answering meanwhile. `idle`: nothing was written to the store for a
    /// while, so the segments may settle into one (see [`MergePolicy`]). Returns true if a
    /// merge was done.
    pub fn merge_step(&self, idle: bool) -> Result<bool, ToolError> {
        let policy = MergePolicy { idle, ..MergePolicy::default() };
        let planned = guard(&self.inner).catalog.plan_merge(&policy).map_err(store_error)?;
        let Some(planned) = planned else { return Ok(false) };
        let merged = origin_projections::index::merge(&planned.job).map_err(store_error)?;
        guard(&self.inner).catalog.install_merge(merged, planned).map_err(store_error)?;
        Ok(true)
    }

    /// Where the store's writes stand: the journal's end as this process knows it, and the
    /// offset the text index has read to. The same at two looks: nothing was written to the
    /// store (as far as this process saw) and nothing indexed meanwhile.
    pub fn write_mark(&self) -> (u64, u64) {
        (self.journal.next_offset(), guard(&self.inner).catalog.read_to())
    }

    /// Saves the state's snapshot if it reflects records the saved one does not, and writes the
    /// text index's in-memory documents (so the next start replays and indexes only what
    /// follows).
    pub fn save_snapshot(&self) -> Result<(), ToolError> {
        // The state's snapshot first: it is what a next start needs most (rebuilding the state
        // reads the whole journal), and writing it takes a fraction of a second, while the
        // index's commit below may take seconds, which a client ending the process may not
        // wait for (its documents are then fed again from the index's mark).
        // A snapshot that cannot be saved (a full disk) does not keep the index from being
        // written: both are tried, and the first failure is returned.
        let saved = {
            let mut inner = guard(&self.inner);
            // Nothing is written where nothing can be (the text index's catalog knows its own).
            if inner.state.read_to() == inner.saved_to || self.unsaved.is_some() {
                Ok(())
            } else {
                // The snapshot's writer creates its folder.
                let path = self.home.join("projections").join(origin_projections::state::SNAPSHOT_FILE_NAME);
                let saved = inner.state.save_snapshot(&self.journal, &**self.journal.vfs(), &path).map_err(store_error);
                if saved.is_ok() {
                    inner.saved_to = inner.state.read_to();
                }
                saved
            }
        };
        // Then ingest's cursors (without one, a next start reads the whole journal to rebuild
        // them before it ingests anything).
        let saved = if self.unsaved.is_some() { saved } else { saved.and(self.freshness.ingester().save_snapshot().map_err(store_error)) };
        // A commit being written is waited for without holding the archive, then installed.
        let pending = guard(&self.inner).commit.take();
        let waited = pending.map(CommitInFlight::wait);
        // One hold of the archive from installing to committing, so that no other commit
        // starts between them.
        let mut inner = guard(&self.inner);
        let finished = waited.map_or(Ok(()), |c| inner.catalog.finish_commit(c).map_err(store_error));
        // Another process may hold the index's lock: then its documents stay for it to write.
        let committed = finished.and_then(|()| inner.catalog.commit().map(|_| ()).map_err(store_error));
        saved.and(committed)
    }

    /// Saves the snapshot and commits the text index (as [`Archive::save_snapshot`]) when
    /// either reflects at least `records` journal records more than what is saved of it, or
    /// nothing of it is saved (no snapshot, or one that was refused; an index with no commit,
    /// deleted or rebuilt) while it reflects any: so a server that is killed rather than closed
    /// (agents often end their MCP servers that way), and every command after a rebuild, still
    /// start quickly next time, however few records the store holds.
    pub fn checkpoint(&self, records: u64) -> Result<bool, ToolError> {
        {
            let inner = guard(&self.inner);
            let state_to = inner.state.read_to();
            // What cannot be saved is never due.
            let state_due = self.unsaved.is_none() && (state_to.saturating_sub(inner.saved_to) >= records || (inner.saved_to == 0 && state_to > 0));
            let index = inner.catalog.index();
            let index_due = inner.catalog.read_only().is_none()
                && match index.mark() {
                    Some(mark) => inner.catalog.read_to().saturating_sub(mark) >= records,
                    None => index.memory_doc_count() > 0,
                };
            if !state_due && !index_due {
                return Ok(false);
            }
        }
        self.save_snapshot()?;
        Ok(true)
    }

    /// Waits until the text index's segments are verified (their bodies are read in the
    /// background from when they were opened), without holding the store: a search reads no
    /// segment whose checksum was not checked. Damage found is repaired by the `sync` that
    /// follows (the index is built again from the journal).
    fn verified_index(&self) -> Result<(), ToolError> {
        let pending = guard(&self.inner).catalog.index().unverified();
        match pending.verify() {
            Err(e) if e.is_corruption() => Ok(()),
            other => other.map_err(store_error),
        }
    }

    /// Ingests new lines if the last read ingest is old enough, then catches up. An ingest that
    /// fails is said on stderr and the read answers from what the store holds.
    fn fresh_for_read(&self) -> Result<(), ToolError> {
        self.freshness.before_read();
        self.sync()
    }

    /// Catches up before a write planned from what the store holds (`forget`, `restore`): where
    /// the journal's lock is held by another past the wait, the write fails, recording nothing
    /// ([`write_error`]), rather than plan from a view that may lack what another process wrote
    /// (and answer that an id it wrote is unknown).
    fn sync_for_write(&self) -> Result<(), ToolError> {
        self.journal.refresh().map_err(write_error)?;
        self.sync()
    }

    /// Always ingests, then catches up (before writes, so a line just said can be cited).
    fn fresh_for_write(&self) -> Result<(), ToolError> {
        self.freshness.before_write().map_err(write_error)?;
        self.sync()
    }

    fn entry_json(&self, e: &Entry) -> Value {
        let v = &e.version;
        json!({
            "id": v.id,
            "kind": kind_str(v.kind),
            "text": v.text,
            "confidence": v.confidence,
            "status": e.status.as_str(),
            "concurrent": e.concurrent,
            "project": v.project,
            "author": v.author,
            "created": self.time(v.created_unix_ms),
            "valid_from": self.opt_time(v.valid_from_unix_ms),
            "valid_to": self.opt_time(e.valid_to_unix_ms()),
            "supersedes": v.supersedes,
            "superseded_by": e.superseded_by,
            "root": v.root,
            "imported": v.imported,
        })
    }

    fn event_json(&self, source: &str, e: &Event, max_chars: usize) -> Value {
        json!({
            "id": e.id,
            "time": self.time(e.time_unix_ms),
            "source": source,
            "project": e.project,
            // A version of a memory file belongs to no session.
            "session": (!e.session.is_empty()).then_some(e.session.as_str()),
            "role": role_str(e.role),
            "kind": event_kind_str(e.kind),
            "text": cut_event(&e.text, e.text_cut_chars, max_chars),
        })
    }

    fn time_arg(&self, name: &str, value: &Option<String>) -> Result<Option<i64>, ToolError> {
        let now = self.read_now();
        value.as_deref().map(|v| parse_time_arg(v, &now).map_err(|why| ToolError::invalid(name, why))).transpose()
    }

    /// `search`.
    pub fn search(&self, a: &SearchArgs) -> ToolResult {
        let limit = SEARCH_LIMIT.arg(a.limit)?;
        filter_arg("project", &a.project)?;
        let scope = match a.scope.as_deref().unwrap_or("all") {
            "all" => None,
            "entries" => Some(Scope::Entry),
            "events" => Some(Scope::Event),
            other => return Err(ToolError::invalid("scope", format!("must be all, entries or events, not {other:?}"))),
        };
        let kind = a.kind.as_deref().map(parse_kind).transpose()?;
        let since = self.time_arg("since", &a.since)?;
        let until = self.time_arg("until", &a.until)?;
        // Search's range holds times (entries written, events happened): one whose end comes
        // before its start holds none, and is an argument mixed up rather than an empty answer.
        // (Timeline's is not: a session started before `until` may be active since `since`.)
        if let (Some(s), Some(u)) = (since, until)
            && u < s
        {
            return Err(ToolError::invalid(
                "until",
                format!("({}) is before `since` ({}): no entry was written and no event happened in that range", self.time(u), self.time(s)),
            ));
        }
        let source = source_arg(&a.source)?;
        let query_text = a.query.as_deref().map(str::trim).filter(|q| !q.is_empty());
        if let Some(q) = query_text {
            if q.chars().count() > QUERY_CHARS_MAX {
                return Err(ToolError::invalid("query", format!("is longer than {QUERY_CHARS_MAX} characters")));
            }
        }
        if query_text.is_some() {
            self.verified_index()?;
        }
        // Read-fresh (`fresh_for_read`), the lock kept from the catch-up to the answer.
        self.freshness.before_read();
        let inner = self.synced()?;
        let now_ms = self.read_now().timestamp().as_millisecond();
        let Some(q) = query_text else {
            // Without a query: the most recent entries.
            let filter = EntryFilter { kind, project: a.project.clone(), since_unix_ms: since, until_unix_ms: until };
            let entries: Vec<Value> = if scope == Some(Scope::Event) {
                Vec::new()
            } else {
                inner.state.entries(&filter, now_ms, limit).iter().map(|e| self.entry_json(e)).collect()
            };
            return Ok(json!({ "entries": entries, "events": [] }));
        };
        let query = origin_projections::parse_query(q).map_err(|e| ToolError::invalid("query", e))?;
        let mut out_entries = Vec::new();
        let mut out_events = Vec::new();
        let state = &inner.state;
        let matched = |m: Match| json!(if m == Match::All { "all" } else { "partial" });
        // Each filter applies to the half the spec names ("Entries of this kind only", "Events
        // of this source only", "Entries and events of this project only"); only `scope`
        // leaves a half out.
        if scope != Some(Scope::Event) {
            let filters = Filters {
                scope: Some(Scope::Entry),
                kind: kind.map(|k| k as u8),
                since_unix_ms: since,
                until_unix_ms: until,
                source: None,
                project: a.project.clone(),
                include_tools: false,
            };
            let visible = |c: &origin_projections::Candidate<'_>| state.doc_is_listed(Scope::Entry, c.key, c.record, c.position, now_ms);
            for hit in inner.catalog.search(&query, &filters, &visible, limit).map_err(store_error)? {
                if let Lookup::Found(e) = state.entry(&hit.key) {
                    let mut j = self.entry_json(&e);
                    j["match"] = matched(hit.matched);
                    out_entries.push(j);
                }
            }
        }
        if scope != Some(Scope::Entry) {
            // Messages always; tool calls and results only when asked (the filter does that);
            // injected context, reasoning, system events and memory versions are not indexed.
            let filters = Filters {
                scope: Some(Scope::Event),
                kind: None,
                since_unix_ms: since,
                until_unix_ms: until,
                source: source.clone(),
                project: a.project.clone(),
                include_tools: a.include_tools,
            };
            let visible = |c: &origin_projections::Candidate<'_>| state.doc_is_listed(Scope::Event, c.key, c.record, c.position, now_ms);
            let mut found = Vec::new();
            let mut metas = Vec::new();
            for hit in inner.catalog.search(&query, &filters, &visible, limit).map_err(store_error)? {
                if let Lookup::Found(meta) = state.event(&hit.key) {
                    metas.push(meta);
                    found.push(hit);
                }
            }
            let bodies = state.event_bodies(&self.journal, &metas).map_err(store_error)?;
            for ((hit, meta), e) in found.into_iter().zip(&metas).zip(bodies) {
                let mut j = self.event_json(&meta.source, &e, SEARCH_TEXT_CHARS);
                j["snippet"] = json!(Index::snippet_of(&e.text, origin_projections::TextForm::of(e.kind, &e.text), &query));
                j["match"] = matched(hit.matched);
                out_events.push(j);
            }
        }
        Ok(json!({ "entries": out_entries, "events": out_events }))
    }

    /// `timeline`.
    pub fn timeline(&self, a: &TimelineArgs) -> ToolResult {
        let limit = TIMELINE_LIMIT.arg(a.limit)?;
        filter_arg("project", &a.project)?;
        filter_arg("session", &a.session)?;
        let source = source_arg(&a.source)?;
        let since = self.time_arg("since", &Some(a.since.clone().unwrap_or_else(|| "7d".to_owned())))?;
        let until = self.time_arg("until", &a.until)?;
        self.fresh_for_read()?;
        let inner = guard(&self.inner);
        if let Some(session) = a.session.as_deref() {
            let metas = inner.state.session_events(source.as_deref(), session, a.include_tools, limit);
            let Some(first) = metas.first() else {
                // A listed session whose visible events are all tool calls and results (or other
                // kinds left out without `include_tools`) is known: none of its events was asked
                // for.
                return match inner.state.find_session(source.as_deref(), session) {
                    Some(info) => Ok(json!({ "session": self.session_json(&self.with_prompts(&inner, vec![info])?[0]), "events": [] })),
                    // Known under another source: said, so that `source` is the one to change.
                    None => match source.as_deref().and(inner.state.find_session(None, session)) {
                        Some(other) => Err(ToolError::new(format!(
                            "Unknown session {session} of {}: it is a session of {} (leave out `source`, or give that one).",
                            source.as_deref().unwrap_or_default(),
                            other.source
                        ))),
                        None => Err(ToolError::new(format!("Unknown session {session}."))),
                    },
                };
            };
            let info = self.with_prompts(&inner, inner.state.session(&first.source, session).into_iter().collect())?;
            let bodies = inner.state.event_bodies(&self.journal, &metas).map_err(store_error)?;
            let events: Vec<Value> = metas.iter().zip(&bodies).map(|(m, e)| self.event_json(&m.source, e, TIMELINE_TEXT_CHARS)).collect();
            return Ok(json!({ "session": info.first().map(|s| self.session_json(s)), "events": events }));
        }
        let filter = SessionFilter { since_unix_ms: since, until_unix_ms: until, source, project: a.project.clone() };
        let sessions: Vec<Value> = self.with_prompts(&inner, inner.state.sessions(&filter, limit))?.iter().map(|s| self.session_json(s)).collect();
        Ok(json!({ "sessions": sessions }))
    }

    /// `sessions` with the prompts of those whose first prompt was forgotten filled in
    /// ([`origin_projections::State::fill_prompts`]).
    fn with_prompts(&self, inner: &Inner, mut sessions: Vec<origin_projections::Session>) -> Result<Vec<origin_projections::Session>, ToolError> {
        inner.state.fill_prompts(&self.journal, &mut sessions).map_err(store_error)?;
        Ok(sessions)
    }

    fn session_json(&self, s: &origin_projections::Session) -> Value {
        json!({
            "session": s.session,
            "source": s.source,
            "project": s.project,
            "title": s.title,
            "prompt": s.prompt,
            "started": self.time(s.started_unix_ms),
            "ended": self.time(s.ended_unix_ms),
            "events": s.event_count,
        })
    }

    fn check_id(id: &str) -> Result<(), ToolError> {
        if is_entry_id(id) || is_event_id(id) {
            Ok(())
        } else {
            Err(ToolError::invalid("id", format!("must be an entry id (ent_ and 12 to 32 hex characters) or an event id (<source>:<id>), not {id:?}")))
        }
    }

    /// `get`.
    pub fn get(&self, id: &str) -> ToolResult {
        Self::check_id(id)?;
        self.sync()?;
        let inner = guard(&self.inner);
        if is_entry_id(id) {
            let e = match inner.state.entry(id) {
                Lookup::Found(e) => e,
                Lookup::Forgotten { .. } => return Err(ToolError::forgotten(id)),
                Lookup::Unknown => return Err(ToolError::unknown(id)),
            };
            let mut sources = Vec::new();
            for c in &one_per_event(&e.version.sources) {
                if let Lookup::Found(ev) = inner.state.event_body(&self.journal, &c.event_id).map_err(store_error)? {
                    let source = c.event_id.split(':').next().unwrap_or_default().to_owned();
                    let mut j = json!({ "quote": c.quote });
                    if let (Value::Object(o), Value::Object(ev)) = (&mut j, self.event_json(&source, &ev, SOURCE_TEXT_CHARS)) {
                        o.extend(ev);
                    }
                    mark_abandoned(&mut j, &inner.state, &c.event_id);
                    sources.push(j);
                }
            }
            let history: Vec<Value> = inner
                .state
                .history(id)
                .iter()
                .map(|h| {
                    json!({
                        "id": h.id,
                        "supersedes": h.supersedes,
                        "author": h.author,
                        "created": self.time(h.created_unix_ms),
                        "status": h.status.as_str(),
                    })
                })
                .collect();
            return Ok(json!({ "entry": self.entry_json(&e), "sources": sources, "history": history }));
        }
        match inner.state.event_body(&self.journal, id).map_err(store_error)? {
            Lookup::Found(e) => {
                let source = id.split(':').next().unwrap_or_default();
                let mut j = self.event_json(source, &e, GET_EVENT_TEXT_CHARS);
                j["cwd"] = json!(e.cwd);
                j["git_branch"] = json!(e.git_branch);
                j["agent_version"] = json!(e.agent_version);
                mark_abandoned(&mut j, &inner.state, id);
                Ok(j)
            }
            Lookup::Forgotten { .. } => Err(ToolError::forgotten(id)),
            Lookup::Unknown => Err(ToolError::unknown(id)),
        }
    }

    /// `sources`.
    pub fn sources(&self, id: &str) -> ToolResult {
        Self::check_id(id)?;
        self.sync()?;
        let inner = guard(&self.inner);
        let cited: Vec<(String, Option<String>)> = if is_entry_id(id) {
            match inner.state.entry(id) {
                Lookup::Found(e) => one_per_event(&e.version.sources).into_iter().map(|c| (c.event_id, c.quote)).collect(),
                Lookup::Forgotten { .. } => return Err(ToolError::forgotten(id)),
                Lookup::Unknown => return Err(ToolError::unknown(id)),
            }
        } else {
            match inner.state.event(id) {
                Lookup::Found(_) => vec![(id.to_owned(), None)],
                Lookup::Forgotten { .. } => return Err(ToolError::forgotten(id)),
                Lookup::Unknown => return Err(ToolError::unknown(id)),
            }
        };
        let mut out = Vec::new();
        let mut sources_of = Vec::new();
        for (event_id, quote) in cited {
            let Lookup::Found(meta) = inner.state.event(&event_id) else { continue };
            let mut shown = self.provenance(&meta, quote)?;
            mark_abandoned(&mut shown, &inner.state, &event_id);
            out.push(shown);
            sources_of.push(meta.source.clone());
        }
        drop(inner);
        // A log its agent moved (archived, compressed, written plain beside its `.zst`) since
        // these lines were read is named where it was last read, while that is there: its
        // records name the path first read, which is named where the last is gone (a log moved
        // back since, unread). Asked of the ingest's cursors once the store is let go, without
        // waiting for a run that holds them.
        for (shown, source) in out.iter_mut().zip(&sources_of) {
            let Some(recorded) = shown["original_file"].as_str().map(str::to_owned) else { continue };
            match self.freshness.ingester().read_at(source, &recorded) {
                Ok(Some(now)) if Path::new(&now).exists() || !Path::new(&recorded).exists() => shown["original_file"] = Value::String(now),
                Ok(_) => {}
                Err(e) => crate::say_err!("origin: where {recorded} was last read could not be told ({e}); it is named as recorded"),
            }
        }
        Ok(Value::Array(out))
    }

    /// The original line behind an event, from the record that brought it.
    fn provenance(&self, meta: &origin_projections::EventMeta, quote: Option<String>) -> ToolResult {
        let recs = self.journal.read_vec(meta.offset, 1).map_err(store_error)?;
        let r = recs.first().filter(|r| r.offset == meta.offset).ok_or_else(|| store_failed(format!("record {} is missing", meta.offset)))?;
        let mirrors = origin_ingest::mirror::Mirrors::new(self.mirrors.clone());
        let (original, mirror, line, raw, time) = if r.kind == origin_engine::RecordKind::Ingested as u8 {
            let view = origin_engine::codec::IngestedView::open(r.kind_version, &r.payload, r.offset).map_err(store_error)?;
            let e = view.event(u64::from(meta.index)).map_err(store_error)?.ok_or_else(|| store_failed("event position does not hold"))?;
            let h = view.head();
            let raw_bytes = view.raw_lines().map_err(store_error)?;
            let raw_line = e
                .line
                .checked_sub(h.line_start)
                .and_then(|want| raw_bytes.split(|&c| c == b'\n').nth(usize::try_from(want).ok()?))
                .ok_or_else(|| store_failed(format!("line {} is not among the lines of record {}", e.line, meta.offset)))?;
            // A long line recorded in pieces (its record holds only its end): read whole from
            // the records of its pieces, or else the mirror, from where the record says it began.
            let state = (e.line == h.line_start).then(|| serde_json::from_slice::<Value>(&h.state).ok()).flatten();
            let key = |k: &str| state.as_ref().and_then(|s| s.get(k)).and_then(Value::as_u64);
            let began = key(origin_ingest::ingest::FIRST_LINE_START_KEY).filter(|&at| at < h.byte_start);
            let pieces = began.zip(key(origin_ingest::ingest::FIRST_LINE_RECORD_KEY)).and_then(|(at, first)| self.line_pieces(h, at, first, meta.offset));
            let whole = match (began, pieces) {
                (Some(_), Some(mut line)) => {
                    line.push(raw_line);
                    line
                }
                (Some(at), None) => {
                    let len = h.byte_start - at + raw_line.len() as u64;
                    let mut line = LineShown::default();
                    let mut read = 0u64;
                    let mut newline = false;
                    mirrors
                        .read_range_each(&h.mirror, at, len, &mut |b| {
                            read += b.len() as u64;
                            newline |= b.contains(&b'\n');
                            line.push(b);
                        })
                        .map_err(store_error)?;
                    if read != len || newline {
                        return Err(store_failed(format!("the mirror {} does not hold line {} where record {} says it began", h.mirror, e.line, meta.offset)));
                    }
                    line
                }
                (None, _) => {
                    let mut line = LineShown::default();
                    line.push(raw_line);
                    line
                }
            };
            (h.path.clone(), Value::String(mirrors.display_path(&h.mirror).to_string_lossy().into_owned()), e.line, whole.shown(), e.time_unix_ms)
        } else {
            match origin_engine::codec::decode(r.kind, r.kind_version, &r.payload, r.offset).map_err(store_error)?.1 {
                Body::Imported(b) => (b.path.clone(), Value::Null, 1, cut(&b.event.text, RAW_LINE_CHARS), b.event.time_unix_ms),
                _ => return Err(store_failed("an event points at a record that holds no events")),
            }
        };
        Ok(json!({
            "event_id": meta.id,
            "time": self.time(time),
            "quote": quote,
            "original_file": original,
            "mirror_file": mirror,
            "line": line,
            "raw": raw,
        }))
    }

    /// The bytes of a line recorded in pieces before the record (at `before`, of head `h`)
    /// that ends it: the records of `h`'s mirror from `first` on, whose bytes follow each other
    /// from `at` to where `h`'s begin, raw lines with no newline. `None` when the journal does
    /// not hold them so (a store from before the pieces' record was kept); the mirror then.
    fn line_pieces(&self, h: &origin_engine::record::IngestedHead, at: u64, first: u64, before: u64) -> Option<LineShown> {
        let mut line = LineShown::default();
        let mut next = at;
        let mut seen = 0usize;
        let walked = self.journal.read_from(first, |r| {
            seen += 1;
            if r.offset >= before || seen > LINE_PIECES_RECORDS_MAX {
                return Ok(ControlFlow::Break(()));
            }
            if r.kind != origin_engine::RecordKind::Ingested as u8 {
                return Ok(ControlFlow::Continue(()));
            }
            let view = origin_engine::codec::IngestedView::open(r.kind_version, r.payload, r.offset)?;
            let p = view.head();
            if p.mirror != h.mirror || p.byte_start != next || p.line_end != p.line_start {
                // Another file's record; or this mirror's, not the next piece: the walk ends.
                return Ok(if p.mirror == h.mirror { ControlFlow::Break(()) } else { ControlFlow::Continue(()) });
            }
            let bytes = view.raw_lines()?;
            if bytes.len() as u64 != p.byte_end - p.byte_start || bytes.contains(&b'\n') {
                return Ok(ControlFlow::Break(()));
            }
            line.push(&bytes);
            next = p.byte_end;
            Ok(if next == h.byte_start { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        });
        (walked.is_ok() && next == h.byte_start).then_some(line)
    }

    /// Resolves the sources of remember / correct to citations.
    fn resolve_sources(&self, inner: &Inner, sources: &[SourceArg]) -> Result<Vec<Citation>, ToolError> {
        let mut out = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            let quote = s.quote.as_deref().map(str::trim).filter(|q| !q.is_empty());
            if let Some(q) = quote {
                if q.chars().count() > QUOTE_CHARS_MAX {
                    return Err(ToolError::invalid(&format!("sources[{i}].quote"), format!("is longer than {QUOTE_CHARS_MAX} characters")));
                }
            }
            match (s.event_id.as_deref(), quote) {
                (Some(id), q) => {
                    if !is_event_id(id) {
                        return Err(ToolError::invalid(&format!("sources[{i}].event_id"), format!("must be an event id (<source>:<id>), not {id:?}")));
                    }
                    let e = match inner.state.event_body(&self.journal, id).map_err(store_error)? {
                        Lookup::Found(e) => e,
                        Lookup::Forgotten { .. } => return Err(ToolError::new(format!("Event {id} has been forgotten and cannot be cited."))),
                        Lookup::Unknown => return Err(ToolError::unknown(id)),
                    };
                    if let Some(q) = q {
                        if !origin_projections::state::quote_matches(&e.text, q) {
                            return Err(ToolError::new(format!("Quote not found in event {id}: \"{q}\"")));
                        }
                    }
                    cite(&mut out, Citation { event_id: id.to_owned(), quote: q.map(str::to_owned) }, false);
                }
                (None, Some(q)) => match inner.state.find_quote(&self.journal, q).map_err(store_error)? {
                    Some(m) => cite(&mut out, Citation { event_id: m.id, quote: Some(q.to_owned()) }, false),
                    None => return Err(ToolError::new(format!("No event contains the quote \"{q}\". Search for the event and cite its id instead."))),
                },
                (None, None) => return Err(ToolError::invalid(&format!("sources[{i}]"), "needs an event_id, a quote, or both")),
            }
        }
        Ok(out)
    }

    fn check_entry_text(text: Option<&str>) -> Result<String, ToolError> {
        let t = text.map(str::trim).unwrap_or_default();
        if t.is_empty() {
            return Err(ToolError::invalid("text", "is required and must not be empty"));
        }
        if t.chars().count() > ENTRY_TEXT_CHARS_MAX {
            return Err(ToolError::invalid("text", format!("is longer than {ENTRY_TEXT_CHARS_MAX} characters")));
        }
        Ok(t.to_owned())
    }

    fn check_confidence(c: f64) -> Result<f64, ToolError> {
        if !(0.0..=1.0).contains(&c) || c.is_nan() {
            return Err(ToolError::invalid("confidence", format!("must be a number from 0 to 1, not {c}")));
        }
        Ok(c)
    }

    /// Refuses a write to a store opened to read only, before anything else is looked at (the
    /// lines it would cite were never read into it, so an argument's check would send the agent
    /// the wrong way).
    fn writable(&self) -> Result<(), ToolError> {
        match &self.read_only {
            None => Ok(()),
            Some(why) => Err(ToolError::new(write_refusal(&self.home, why))),
        }
    }

    fn append(&self, body: &Body) -> Result<(), ToolError> {
        self.writable()?;
        if !still_wanted() {
            return Err(ToolError::new("The call was cancelled before anything was recorded."));
        }
        let rec = NewRecord::new(body).map_err(store_error)?;
        self.journal.append(vec![rec]).map_err(write_error)?;
        self.sync()
    }

    /// `remember`; `agent` names the author (`<agent>@<device>`).
    pub fn remember(&self, a: &EntryArgs, agent: &str) -> ToolResult {
        self.writable()?;
        let text = Self::check_entry_text(a.text.as_deref())?;
        let kind = parse_kind(a.kind.as_deref().unwrap_or("memory"))?;
        name_arg("project", &a.project)?;
        let confidence = Self::check_confidence(a.confidence.ok_or_else(|| ToolError::invalid("confidence", "is required (a number from 0 to 1)"))?)?;
        if a.sources.is_empty() {
            return Err(ToolError::invalid("sources", "needs at least one source ({ event_id, quote })"));
        }
        if a.sources.len() > SOURCES_MAX {
            return Err(ToolError::invalid("sources", format!("holds more than {SOURCES_MAX} sources")));
        }
        let valid_from = self.time_arg("valid_from", &a.valid_from)?;
        let valid_to = self.time_arg("valid_to", &a.valid_to)?;
        validity_order(valid_from, valid_to, true)?;
        self.fresh_for_write()?;
        let version = {
            let inner = guard(&self.inner);
            let sources = self.resolve_sources(&inner, &a.sources)?;
            let id = format!("ent_{}", random_hex(8)?);
            EntryVersion {
                root: id.clone(),
                id,
                supersedes: None,
                kind,
                text,
                confidence,
                project: a.project.clone().filter(|p| !p.trim().is_empty()),
                author: format!("{agent}@{}", self.device),
                created_unix_ms: self.now().timestamp().as_millisecond(),
                valid_from_unix_ms: valid_from,
                valid_to_unix_ms: valid_to,
                sources,
                imported: false,
            }
        };
        let id = version.id.clone();
        let cited: Vec<String> = version.sources.iter().map(|c| c.event_id.clone()).collect();
        self.append(&Body::Remembered(version))?;
        let inner = guard(&self.inner);
        match inner.state.entry(&id) {
            Lookup::Found(e) => Ok(json!({ "entry": self.entry_json(&e) })),
            // Another process forgot an event it cites while this was written: the entry is
            // hidden with it, as the spec's "cannot be cited" asks.
            Lookup::Forgotten { .. } => {
                let gone = cited.iter().find(|e| inner.state.is_hidden(e).is_some()).map_or(id.as_str(), String::as_str);
                Err(ToolError::new(format!("Event {gone} has been forgotten and cannot be cited.")))
            }
            Lookup::Unknown => Err(store_failed("the new entry did not appear")),
        }
    }

    /// `correct`.
    pub fn correct(&self, a: &EntryArgs, agent: &str) -> ToolResult {
        self.writable()?;
        let id = a.id.as_deref().ok_or_else(|| ToolError::invalid("id", "is required"))?;
        if !is_entry_id(id) {
            return Err(ToolError::invalid("id", format!("must be an entry id (ent_ and 12 to 32 hex characters), not {id:?}")));
        }
        let text = Self::check_entry_text(a.text.as_deref())?;
        let kind = a.kind.as_deref().map(parse_kind).transpose()?;
        let confidence = a.confidence.map(Self::check_confidence).transpose()?;
        if a.sources.len() > SOURCES_MAX {
            return Err(ToolError::invalid("sources", format!("holds more than {SOURCES_MAX} sources")));
        }
        let valid_from = self.time_arg("valid_from", &a.valid_from)?;
        let valid_to = self.time_arg("valid_to", &a.valid_to)?;
        self.fresh_for_write()?;
        let version = {
            let inner = guard(&self.inner);
            let old = match inner.state.entry(id) {
                Lookup::Found(e) => e,
                Lookup::Forgotten { .. } => return Err(ToolError::forgotten(id)),
                Lookup::Unknown => return Err(ToolError::unknown(id)),
            };
            if old.superseded_by.is_some() || inner.state.current_of(id) != Some(id) {
                let current = inner.state.current_of(id).unwrap_or_default().to_owned();
                return Err(ToolError::new(format!("Entry {id} was already corrected; its current version is {current}. Correct that one instead.")));
            }
            // A forgotten event cannot be cited: a source of the old version forgotten since (a
            // forget of another entry that cites it too) does not carry over.
            let mut sources = one_per_event(old.version.sources.iter().filter(|c| inner.state.is_hidden(&c.event_id).is_none()));
            for c in self.resolve_sources(&inner, &a.sources)? {
                cite(&mut sources, c, true);
            }
            if sources.is_empty() {
                return Err(ToolError::invalid(
                    "sources",
                    format!("must be given: every event {id} cited has been forgotten since it was written, and a version must cite at least one event (an `event_id` or a `quote` the corrected text comes from)"),
                ));
            }
            let new_id = format!("ent_{}", random_hex(8)?);
            EntryVersion {
                id: new_id,
                root: old.version.root.clone(),
                supersedes: Some(id.to_owned()),
                kind: kind.unwrap_or(old.version.kind),
                text,
                confidence: confidence.unwrap_or(old.version.confidence),
                project: old.version.project.clone(),
                author: format!("{agent}@{}", self.device),
                // A correction is dated after the version it corrects.
                created_unix_ms: self.now().timestamp().as_millisecond().max(old.version.created_unix_ms + 1),
                valid_from_unix_ms: valid_from.or(old.version.valid_from_unix_ms),
                valid_to_unix_ms: valid_to.or(old.version.valid_to_unix_ms),
                sources,
                imported: false,
            }
        };
        // With the old version's bounds where none is given.
        validity_order(version.valid_from_unix_ms, version.valid_to_unix_ms, valid_to.is_some())?;
        let new_id = version.id.clone();
        self.append(&Body::Corrected(version))?;
        let inner = guard(&self.inner);
        match inner.state.entry(&new_id) {
            Lookup::Found(e) => Ok(json!({ "entry": self.entry_json(&e) })),
            // Another process forgot the entry (or an event it cites) while this was written.
            Lookup::Forgotten { .. } => Err(ToolError::forgotten(id)),
            Lookup::Unknown => Err(store_failed("the new version did not appear")),
        }
    }

    /// `forget`.
    pub fn forget(&self, id: &str, reason: &str, agent: &str) -> ToolResult {
        self.writable()?;
        Self::check_id(id)?;
        let reason = reason.trim();
        let n = reason.chars().count();
        if !(1..=2000).contains(&n) {
            return Err(ToolError::invalid("reason", format!("must be 1 to 2,000 characters, not {n}")));
        }
        self.sync_for_write()?;
        let body = {
            let inner = guard(&self.inner);
            let known = if is_entry_id(id) {
                !matches!(inner.state.entry(id), Lookup::Unknown)
            } else {
                !matches!(inner.state.event(id), Lookup::Unknown)
            };
            if !known {
                return Err(ToolError::unknown(id));
            }
            let plan = match inner.state.forget_plan(id) {
                Some(p) if !p.is_empty() => p,
                // Everything was hidden already: nothing is recorded.
                _ => return Ok(json!({ "tombstone": null, "forgotten_entries": [], "excluded_events": 0 })),
            };
            Body::Forgotten(Forgotten {
                tombstone: format!("tmb_{}", random_hex(8)?),
                target: id.to_owned(),
                reason: reason.to_owned(),
                author: format!("{agent}@{}", self.device),
                time_unix_ms: self.now().timestamp().as_millisecond(),
                hidden_entries: plan.entries,
                hidden_events: plan.events,
            })
        };
        let Body::Forgotten(f) = &body else { return Err(store_failed("forget built something else")) };
        let out = json!({ "tombstone": f.tombstone, "forgotten_entries": f.hidden_entries, "excluded_events": f.hidden_events.len() });
        self.append(&body)?;
        Ok(out)
    }

    /// `origin tombstones`: every forget, oldest first, with what it hides and whether it was
    /// lifted.
    pub fn tombstones(&self) -> ToolResult {
        self.sync()?;
        let inner = guard(&self.inner);
        let list: Vec<Value> = inner
            .state
            .tombstones()
            .iter()
            .map(|t| {
                let f = t.forgotten;
                json!({
                    "tombstone": f.tombstone,
                    "target": f.target,
                    "reason": f.reason,
                    "author": f.author,
                    "time": self.time(f.time_unix_ms),
                    "forgotten_entries": f.hidden_entries,
                    "excluded_events": f.hidden_events.len(),
                    "restored": t.restored.map(|r| json!({ "author": r.author, "time": self.time(r.time_unix_ms) })),
                })
            })
            .collect();
        Ok(Value::Array(list))
    }

    /// `origin restore`: lifts a tombstone (CLI and admin only; no tool).
    pub fn restore(&self, tombstone: &str, author: &str) -> ToolResult {
        self.writable()?;
        if !is_tombstone_id(tombstone) {
            return Err(ToolError::invalid("tombstone", format!("must be a tombstone id (tmb_ and 12 to 32 hex characters), not {tombstone:?}")));
        }
        self.sync_for_write()?;
        let lifted = match guard(&self.inner).state.tombstone(tombstone) {
            None => return Err(ToolError::new(format!("Unknown tombstone {tombstone}."))),
            Some(t) => t.restored.map(|r| json!({ "author": r.author, "time": self.time(r.time_unix_ms) })),
        };
        // Lifted already: nothing is recorded (as `forget` records nothing when everything was
        // hidden already), and the answer says by whom and when.
        if let Some(lifted) = lifted {
            return Ok(json!({ "restored": null, "lifted_before": lifted }));
        }
        let body = Body::Restored(Restored {
            tombstone: tombstone.to_owned(),
            author: format!("{author}@{}", self.device),
            time_unix_ms: self.now().timestamp().as_millisecond(),
        });
        self.append(&body)?;
        Ok(json!({ "restored": tombstone }))
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_positive, store_error, store_failed, LineShown, RAW_LINE_CHARS};
    use super::{Archive, EntryArgs, SearchArgs, SourceArg};
    use origin_engine::sim::files_under;
    use std::path::Path;
    use std::sync::Arc;

    /// The question of a call that panicked is let go: the thread's next call is not taken for
    /// cancelled (the blocking pool runs it on the same thread).
    #[test]
    fn a_call_that_panics_leaves_no_question_behind() {
        let panicked = std::panic::catch_unwind(|| super::while_wanted(|| false, || panic!("a tool failed")));
        assert!(panicked.is_err());
        assert!(super::still_wanted());
    }

    /// A call no longer wanted (its client cancelled it while it ingested first) records
    /// nothing; the same call wanted records its entry.
    #[test]
    fn a_call_cancelled_before_it_records_records_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/agent-home");
        let a = Archive::open(&dir.path().join("store"), Some(origin_ingest::Homes::under(&agents)), None, origin_projections::Verify::Ahead).expect("open");
        let args = EntryArgs {
            text: Some("Query strings are built with URLSearchParams.".into()),
            sources: vec![SourceArg { quote: Some("URLSearchParams".into()), ..SourceArg::default() }],
            confidence: Some(0.9),
            ..EntryArgs::default()
        };
        let records = || a.journal.next_offset();
        let before = records();
        let cancelled = super::while_wanted(|| false, || a.remember(&args, "test"));
        assert_eq!(cancelled.map_err(|e| e.0), Err("The call was cancelled before anything was recorded.".to_owned()));
        let after_ingest = records();
        assert!(after_ingest > before, "the ingest before the write went on");
        let entries = |a: &Archive| a.search(&SearchArgs { scope: Some("entries".into()), ..SearchArgs::default() }).expect("search")["entries"].as_array().map_or(0, Vec::len);
        let imported = entries(&a);
        super::while_wanted(|| true, || a.remember(&args, "test")).expect("remember");
        assert_eq!((records(), entries(&a)), (after_ingest + 1, imported + 1));
    }

    /// A store that cannot be written is opened to read at once, without the writer's lock: a
    /// reader holding the lock shared (`origin journal verify` listing the segments) does not
    /// keep it waiting, nor does it keep the owner's writes waiting while it reads the segments.
    #[test]
    fn a_store_that_cannot_be_written_is_opened_without_the_writers_lock() {
        use origin_engine::vfs::{LockMode, OsFs, Vfs};
        let dir = tempfile::tempdir().expect("tempdir");
        let journal = dir.path().join("journal");
        drop(origin_engine::Journal::open(&journal, origin_engine::Options::default()).expect("a journal"));
        let shared = OsFs.lock(&journal.join(origin_engine::journal::LOCK_FILE_NAME), LockMode::Shared).expect("a reader's lock");
        let (tx, rx) = std::sync::mpsc::channel();
        let opening = std::thread::spawn(move || {
            let ro: Arc<dyn Vfs> = Arc::new(origin_engine::sim::ReadOnlyFs::new(Arc::new(OsFs)));
            tx.send(super::open_journal(ro, &journal, None).map(|(j, why)| (j.is_read_only(), why.map(|r| r.why)))).expect("send");
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(20));
        drop(shared);
        opening.join().expect("join");
        let (read_only, why) = opened.expect("opened while another holds the lock shared").expect("opened");
        assert!(read_only && why.is_some_and(|w| w.contains("Read-only file system")));
    }

    /// A store on a file system that refuses every write (a read-only mount, a backup) is
    /// read as it is: searches answer from what it holds, with its snapshot and text index;
    /// no agents' logs are read into it; remember and forget say it cannot be written; saving,
    /// committing and merging write nothing; and nothing in it changes.
    #[test]
    fn a_store_that_cannot_be_written_is_read_as_it_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("store");
        let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/agent-home");
        let homes = || Some(origin_ingest::Homes::under(&agents));
        let verify = origin_projections::Verify::Ahead;
        let remembered = {
            let a = Archive::open(&home, homes(), None, verify).expect("open");
            a.fresh_for_write().expect("ingest");
            let args = EntryArgs {
                text: Some("Query strings are built with URLSearchParams.".into()),
                sources: vec![SourceArg { quote: Some("URLSearchParams".into()), ..SourceArg::default() }],
                confidence: Some(0.9),
                ..EntryArgs::default()
            };
            let entry = a.remember(&args, "test").expect("remember");
            a.save_snapshot().expect("save");
            // A record the snapshot does not reflect: the read-only open reads it from the
            // journal, and has it to save.
            a.remember(&EntryArgs { text: Some("Releases wait for CI.".into()), ..args }, "test").expect("remember");
            entry["entry"]["id"].as_str().expect("an id").to_owned()
        };
        // Made by the first ingest: a read-only store may lack it (and cannot make it).
        std::fs::remove_file(home.join("ingest.lock")).expect("the ingest lock");
        let before = files_under(dir.path());
        let ro: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(origin_engine::sim::ReadOnlyFs::new(Arc::new(origin_engine::vfs::OsFs)));
        let a = Archive::open_on(ro.clone(), &home, homes(), None, verify).expect("a read-only open");
        assert!(a.read_only.as_deref().is_some_and(|why| why.contains("Read-only file system")), "{:?}", a.read_only);
        let search = |q: &str| a.search(&SearchArgs { query: Some(q.into()), ..SearchArgs::default() }).expect("search");
        let found = search("URLSearchParams");
        assert_eq!(found["entries"][0]["id"], remembered.as_str(), "{found}");
        assert_eq!(search("Releases wait")["entries"].as_array().map(Vec::len), Some(1), "read past the snapshot");
        assert!(!found["events"].as_array().expect("events").is_empty(), "{found}");
        // Every write is refused first, whatever its arguments (a quote of a line never read
        // into the store would send the agent looking for it).
        let quoting = |quote: &str| EntryArgs {
            text: Some("Another fact.".into()),
            sources: vec![SourceArg { quote: Some(quote.into()), ..SourceArg::default() }],
            confidence: Some(0.5),
            ..EntryArgs::default()
        };
        for args in [quoting("URLSearchParams"), quoting("a line never read"), EntryArgs::default()] {
            let refused = a.remember(&args, "test").expect_err("remember refused");
            assert!(refused.to_string().contains("cannot be written") && refused.to_string().contains("Read-only file system"), "{refused}");
        }
        let refused = a.correct(&EntryArgs { id: Some(remembered.clone()), ..quoting("URLSearchParams") }, "test").expect_err("correct refused");
        assert!(refused.to_string().contains("cannot be written"), "{refused}");
        for id in [remembered.as_str(), "not an id"] {
            let refused = a.forget(id, "a test", "test").expect_err("forget refused");
            assert!(refused.to_string().contains("cannot be written"), "{refused}");
        }
        let refused = a.restore("tmb_000000000000", "test").expect_err("restore refused");
        assert!(refused.to_string().contains("cannot be written"), "{refused}");
        assert!(a.freshness().ingester().discover().iter().all(|(_, files, _)| files.is_empty()), "no agents' logs looked at");
        assert!(a.freshness().before_write().expect("an ingest that reads nothing").sources.is_empty());
        a.save_snapshot().expect("nothing to save");
        assert!(!a.checkpoint(0).expect("checkpoint"));
        assert!(!a.merge_step(true).expect("merge"));
        a.commit_step();
        assert_eq!(search("URLSearchParams")["entries"][0]["id"], remembered.as_str());
        drop(a);
        assert_eq!(files_under(dir.path()), before, "nothing written");
        // No store there: the refusal to make one is said.
        let e = Archive::open_on(ro, &dir.path().join("nowhere"), homes(), None, verify).err().expect("no store");
        assert!(format!("{e:#}").contains("Read-only file system"), "{e:#}");
        // Only the projections folder read-only: the store is written and read, its index
        // as it is on disk (not built again), what it adds and the state kept in memory, and
        // nothing written in that folder.
        let projections = home.join("projections");
        let before = files_under(&projections);
        let partly: Arc<dyn origin_engine::vfs::Vfs> =
            Arc::new(origin_engine::sim::ReadOnlyFs::below(Arc::new(origin_engine::vfs::OsFs), &projections));
        let a = Archive::open_on(partly, &home, homes(), None, verify).expect("open");
        assert!(a.read_only.is_none());
        assert!(a.unsaved.as_deref().is_some_and(|why| why.contains("Read-only file system")), "{:?}", a.unsaved);
        assert!(a.inner.lock().expect("inner").catalog.index().mark().is_some(), "the index on disk read");
        let added = a.remember(&quoting("URLSearchParams"), "test").expect("remembered");
        let found = a.search(&SearchArgs { query: Some("Another fact".into()), ..SearchArgs::default() }).expect("search");
        assert_eq!(found["entries"][0]["id"], added["entry"]["id"]);
        a.save_snapshot().expect("nothing to save");
        assert!(!a.checkpoint(0).expect("checkpoint"));
        assert!(!a.merge_step(true).expect("merge"));
        a.commit_step();
        drop(a);
        assert_eq!(files_under(&projections), before, "nothing written in the projections folder");
        // Only the text index's folder read-only (what `sudo` leaves when it makes it): its
        // index read as it is, what it adds kept in memory, said; the state's snapshot saved.
        let index = projections.join("index");
        let index_before = files_under(&index);
        let snapshot = projections.join(origin_projections::state::SNAPSHOT_FILE_NAME);
        let snapshot_before = std::fs::read(&snapshot).expect("a snapshot");
        let partly: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(origin_engine::sim::ReadOnlyFs::below(Arc::new(origin_engine::vfs::OsFs), &index));
        let a = Archive::open_on(partly, &home, homes(), None, verify).expect("open");
        assert!(a.read_only.is_none() && a.unsaved.is_none());
        assert!(a.index_unsaved.as_deref().is_some_and(|why| why.contains("Read-only file system")), "{:?}", a.index_unsaved);
        assert!(a.limited());
        a.remember(&quoting("URLSearchParams"), "test").expect("remembered");
        a.save_snapshot().expect("saved");
        drop(a);
        assert_eq!(files_under(&index), index_before, "nothing written in the index's folder");
        assert_ne!(std::fs::read(&snapshot).expect("a snapshot"), snapshot_before, "the state's snapshot saved");
    }

    /// A line taken a piece at a time shows what cutting it whole shows: lines shorter and
    /// longer than the head, of one-, two-, three- and four-byte characters, a combining mark at
    /// the cut, invalid bytes and a character left unfinished at the end, in pieces of every
    /// size from one byte up (one piece ending inside a character).
    #[test]
    fn a_line_taken_in_pieces_is_shown_as_the_whole_line_cut() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let alphabet: [&[u8]; 8] = [b"a", b" ", "é".as_bytes(), "漢".as_bytes(), "😀".as_bytes(), "e\u{301}".as_bytes(), b"\xff", b"\xe6\xbc"];
        for case in 0..300 {
            let chars = [0, 10, 3_999, 4_000, 4_001, 4_100, 6_000, 20_000][case % 8];
            let mut line = Vec::new();
            for _ in 0..chars {
                line.extend_from_slice(alphabet[next(if case % 3 == 0 { 5 } else { 8 }) as usize]);
            }
            if case % 5 == 0 {
                line.extend_from_slice(&"😀".as_bytes()[..2]);
            }
            let whole = super::cut(&String::from_utf8_lossy(&line), RAW_LINE_CHARS);
            for piece in [1, 2, 3, 5, 1000, 16_063, 16_064, 16_065, 1 << 20, 1 + next(40_000) as usize] {
                let mut shown = LineShown::default();
                for chunk in line.chunks(piece) {
                    shown.push(chunk);
                }
                assert_eq!(shown.shown(), whole, "case {case}, {} bytes, pieces of {piece}", line.len());
            }
        }
    }

    #[test]
    fn a_store_failure_knows_when_it_is_the_journals_damage() {
        let corrupt = || origin_engine::Error::Corrupt { segment: "s".into(), position: 9, reason: "x".into() };
        assert!(store_error(corrupt()).is_journal_damage());
        assert!(store_error(origin_projections::state::Error::Journal(corrupt())).is_journal_damage());
        assert!(store_error(origin_projections::CatalogError::Journal(corrupt())).is_journal_damage());
        assert!(store_error(origin_ingest::ingest::IngestError::Journal(corrupt())).is_journal_damage());
        let io = origin_engine::Error::Io { op: "read", path: "p".into(), source: std::io::Error::other("x") };
        assert!(!store_error(io).is_journal_damage());
        assert!(!store_failed("record 7 is missing").is_journal_damage());
        let e = store_error(corrupt());
        assert!(e.0.starts_with("The Origin store failed: ") && e.0.contains("at byte 9"), "{}", e.0);
    }

    #[test]
    fn a_setting_is_a_positive_whole_number_or_unset() {
        assert_eq!(parse_positive(None), Ok(None));
        assert_eq!(parse_positive(Some("")), Ok(None));
        assert_eq!(parse_positive(Some("300")), Ok(Some(300)));
        assert_eq!(parse_positive(Some(" 50 ")), Ok(Some(50)));
        assert_eq!(parse_positive(Some("0")), Err("0".to_owned()));
        assert_eq!(parse_positive(Some("-5")), Err("-5".to_owned()));
        assert_eq!(parse_positive(Some("lots")), Err("lots".to_owned()));
    }
}

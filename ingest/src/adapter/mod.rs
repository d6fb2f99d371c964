//! The adapter trait: one implementation per source turns that agent's log records into
//! events and session changes.

use std::io;
use std::path::PathBuf;

use origin_engine::record::{Event, SessionChange};
use serde_json::{Map, Value};

use crate::source::{Homes, Source};

pub mod claude;
pub mod codex;
pub mod cursor;
mod fork;
#[cfg(test)]
pub mod golden;
pub mod grok;
pub mod zcode;

/// How a log file's bytes are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// A plain file of lines, appended to by the agent.
    Lines,
    /// A zstd-compressed file of lines (Codex's cold rollouts); read whole and decompressed.
    ZstdLines,
    /// Not line-based on disk (a SQLite database): the adapter exports it as JSON lines
    /// (see [`Adapter::export`]), and those lines are what Origin keeps and cites.
    Export,
}

/// One log file (or exported log) to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// Whose log it is.
    pub source: Source,
    /// The file on disk (for an export: the database).
    pub path: PathBuf,
    /// The identity Origin keeps for it and shows as `original_file`: the path, or for an
    /// export the database path plus `#session/<id>`.
    pub key: String,
    /// Path of its mirror below `raw/<source>/` (no `.zst`; a later version of the file gets
    /// `.v<N>` appended by ingest).
    pub mirror: String,
    /// How to read it.
    pub format: FileFormat,
}

impl LogFile {
    /// The file as a person is told about it: its path, or for an export its key (the
    /// database and the session). A log read under a name it no longer has (moved by its
    /// agent) is named where it is now.
    pub fn shown(&self) -> String {
        match self.format {
            FileFormat::Export => self.key.clone(),
            FileFormat::Lines | FileFormat::ZstdLines => self.path.display().to_string(),
        }
    }

    /// A plain log file of lines, mirrored under its path relative to `root` (the agent's log
    /// folder).
    pub fn lines(source: Source, root: &std::path::Path, path: PathBuf) -> LogFile {
        LogFile {
            source,
            key: path.to_string_lossy().into_owned(),
            mirror: crate::walk::relative(root, &path),
            path,
            format: FileFormat::Lines,
        }
    }
}

/// An adapter's state for one file, carried from line to line and from run to run (it is
/// stored with every journal record of the file, as JSON).
pub type State = Map<String, Value>;

/// Adapter state key: for a file's version N ≥ 2, which line's id each of its lines takes, as
/// `[[last line, version, shift], ...]` in line order, the last open-ended: the lines up to
/// `last` (after the entry before) take the id of line `n - shift` of `version` (a missing
/// `shift` is 0). Set by ingest when a rewritten file starts a new version; see [`line_ref`].
pub const LINE_REFS_KEY: &str = "_line_refs";

/// Most entries of [`LINE_REFS_KEY`] (a rewrite that keeps lines scattered past it gives the
/// rest ids of their own).
pub const LINE_REFS_MAX: usize = 256;

/// Adapter state key of the first prompt of a file's session, once given: the line it is on
/// (`true` in states written before 2026-12-07, whose line is not known).
pub const FIRST_PROMPT_KEY: &str = "first_prompt";

/// The array under `key` in an adapter's state, made (empty) if it is missing or not one.
pub fn state_array<'s>(state: &'s mut State, key: &str) -> &'s mut Vec<Value> {
    let v = state.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if !v.is_array() {
        *v = Value::Array(Vec::new());
    }
    match v {
        Value::Array(a) => a,
        _ => unreachable!("made an array above"),
    }
}

/// Notes that the first prompt of the file's session is on line `line_no`.
pub fn first_prompt_at(state: &mut State, line_no: u64) {
    state.insert(FIRST_PROMPT_KEY.into(), Value::from(line_no));
}

/// After a line abandoned the turns from line `from` on ([`Parsed::abandons_from`]): a first
/// prompt among them is no longer the session's, and the next prompt is given as its first.
pub fn first_prompt_abandoned(state: &mut State, from: u64) {
    if state.get(FIRST_PROMPT_KEY).and_then(Value::as_u64).is_some_and(|line| line >= from) {
        state.remove(FIRST_PROMPT_KEY);
    }
}

/// What names line `line_no` in an event id made from a line number (`<session>:<line>`): the
/// number in a file's first version; `v<N>:<line>` for a line of version N ≥ 2, except the
/// lines a rewrite kept as they were, byte for byte (Grok's rewind keeps the turns before the
/// one rewound; its compaction and repair keep later turns, moved up), which keep the ids they
/// had. A rewritten file (Grok replaces its transcript on compaction, rewind and repair)
/// numbers other lines than before: its new lines get ids of their own, and the earlier
/// version's events, and the entries citing them, keep theirs and what they said.
pub fn line_ref(state: &State, line_no: u64) -> String {
    let (v, shift) = line_source(state, line_no);
    let line = line_no.saturating_add_signed(-shift).max(1);
    match v {
        v if v > 1 => format!("v{v}:{line}"),
        _ => line.to_string(),
    }
}

/// The version and shift whose id line `line_no` takes ((1, 0) without [`LINE_REFS_KEY`]).
fn line_source(state: &State, line_no: u64) -> (u64, i64) {
    let Some(refs) = state.get(LINE_REFS_KEY).and_then(Value::as_array) else { return (1, 0) };
    let entry = |r: &Value| Some((r.get(0)?.as_u64()?, r.get(1)?.as_u64()?, r.get(2).and_then(Value::as_i64).unwrap_or(0)));
    refs.iter().filter_map(entry).find(|&(last, _, _)| line_no <= last).map_or((1, 0), |(_, v, s)| (v, s))
}

/// [`LINE_REFS_KEY`] for version `version` of a file whose lines `pairs` (new line, line of the
/// version read with `previous`, its state; both rising) are those lines as they were: they
/// keep the ids they had, the rest take `version`'s. At most [`LINE_REFS_MAX`] entries.
pub fn line_refs_mapped(previous: &State, pairs: &[(u64, u64)], version: u32) -> Value {
    let own = (u64::from(version), 0i64);
    // Entries `(last line, version, shift)`, each line after the entry before up to `last`.
    let mut out: Vec<(u64, u64, i64)> = Vec::new();
    let extend = |out: &mut Vec<(u64, u64, i64)>, last: u64, source: (u64, i64)| match out.last_mut() {
        Some(e) if (e.1, e.2) == source => e.0 = last,
        _ => out.push((last, source.0, source.1)),
    };
    let mut next = 1;
    for &(new, old) in pairs {
        if new < next || out.len() + 2 > LINE_REFS_MAX {
            break;
        }
        if new > next {
            // The lines between take the version's own ids.
            extend(&mut out, new - 1, own);
        }
        let (v, shift) = line_source(previous, old);
        let id_line = old.saturating_add_signed(-shift);
        extend(&mut out, new, (v, new as i64 - id_line as i64));
        next = new + 1;
    }
    let mut refs: Vec<Value> = out
        .into_iter()
        .map(|(last, v, shift)| if shift == 0 { Value::from(vec![last, v]) } else { serde_json::json!([last, v, shift]) })
        .collect();
    refs.push(Value::from(vec![u64::MAX, u64::from(version)]));
    Value::from(refs)
}

/// What one complete line gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Events, in order. Ids are `<source>:<id in the source>`.
    pub events: Vec<Event>,
    /// Session properties learnt from the line (title, project, first prompt, parent).
    pub sessions: Vec<SessionChange>,
    /// The line says its agent abandoned the turns from this line of the file's version up to
    /// it, itself not among them (Codex's rollback, Claude's rewind): the record holding the line names their events
    /// as superseded (`Ingested::superseded`).
    pub abandons_from: Option<u64>,
}

/// The verdict on one line.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// Parsed; may hold no events (a line that only updates state or sessions).
    Parsed(Parsed),
    /// Not valid for this source (bad JSON, a required field missing): skipped and counted.
    Malformed(String),
}

/// One agent's log format.
pub trait Adapter: Send + Sync {
    /// Which source this is.
    fn source(&self) -> Source;

    /// The log files under this machine's folders for the agent. Unreadable folders are
    /// skipped and described in the returned problems (never a panic).
    fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>);

    /// Whether the agent moves its logs to other paths under the same file name, which names
    /// the log (Codex: a rollout compressed, archived, written plain again on resume, its
    /// thread id in its name). Such a file, unknown under its own path, is looked for among
    /// the known logs of its name whose paths are gone ([`crate::ingest`], `Aliases`). Not
    /// for agents whose file names repeat from log to log (Grok's `chat_history.jsonl`).
    fn logs_move(&self) -> bool {
        false
    }

    /// Whether a new log of the agent may begin with the lines of another in its folder, ids
    /// and all (Claude Code resumes a session in a new file that copies the one it resumes):
    /// then a folder's logs are read one after another, oldest first, so that the first
    /// record of a copied line, which the state keeps, is the original's.
    fn logs_copy_their_folder(&self) -> bool {
        false
    }

    /// The time (Unix milliseconds) a line of the agent's log says it was written, if it says.
    /// With [`Adapter::logs_copy_their_folder`], the logs of a folder none of which was read
    /// yet (only they can begin with copies), when there are several, are read in the order of
    /// their first dated lines, then their last (a copied line keeps its time; a home copied
    /// without the files' times of change keeps them too), an end with no dated line near it at
    /// the file's time of change.
    fn line_time(&self, _line: &[u8]) -> Option<i64> {
        None
    }

    /// Whether each line of `file` gives its events alone, so that a line a rewrite kept as it
    /// was keeps the ids it had (see [`line_ref`]). Not so where an event is a block of lines
    /// named by its first (Cursor's legacy `.txt`, whose header lines repeat): a rewrite of such
    /// a file gives all its lines ids of their own.
    fn lines_stand_alone(&self, _file: &LogFile) -> bool {
        true
    }

    /// Whether a rewrite of `file` abandoned the turns the previous version held after the
    /// lines the new version kept in place, given the new version's lines that it did not keep
    /// (`added`, its unfinished last line too): a session rewound (Grok keeps the turns before the one rewound, byte for
    /// byte, and drops the rest), not compacted (earlier turns summed up) nor repaired. Those
    /// lines' events are then named superseded (`Ingested::superseded`): kept, found by id, no
    /// longer current. False by default (a rewrite keeps every event as current).
    fn rewrite_abandons_tail(&self, _file: &LogFile, _added: &[&[u8]]) -> bool {
        false
    }

    /// Whether the agent rewrites its logs whole (Grok replaces a transcript on compaction
    /// and rewind; an export changes where a row is updated in place): a log that grew is then
    /// checked to begin with every byte read of it so far (its CRC-32, kept in the state as
    /// `_read_crc`), not only its first 4 KiB and the newline before the old end.
    fn logs_rewritten(&self) -> bool {
        false
    }

    /// A cheap stamp of `file`'s side files (their sizes and times of change), None when it
    /// has none: ingest asks for [`Adapter::side_changes`] only when a log with no new line has
    /// a stamp this process has not looked at yet.
    fn side_stamp(&self, _file: &LogFile) -> Option<Value> {
        None
    }

    /// Called when `file` has no new lines in a run and a side file may have changed: what its
    /// side files say that no line has said yet (a title written after the transcript's last
    /// line), as session changes, `state` updated to match.
    fn side_changes(&self, _file: &LogFile, _state: &mut State) -> Vec<SessionChange> {
        Vec::new()
    }

    /// Called before new lines of `file` are parsed in a run: a chance to read side files
    /// (titles, timestamps) into `state`.
    fn begin(&self, _file: &LogFile, _state: &mut State) {}

    /// Parses one complete line (without its newline). `line_no` is 1-based in the file
    /// version. Must not panic on any bytes.
    fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line;

    /// For [`FileFormat::Export`]: a stamp of everything [`Adapter::export`] makes the log of,
    /// much cheaper to take than the export (equal stamps, equal exports), or None. Ingest keeps
    /// it in the file's state with the export's length, and does not export again while both
    /// hold (see FORMAT.md, `_export_stamp`).
    fn export_stamp(&self, _file: &LogFile) -> Option<String> {
        None
    }

    /// For [`FileFormat::Export`]: the log as JSON lines, deterministic for unchanged data.
    fn export(&self, file: &LogFile) -> io::Result<Vec<u8>> {
        Err(io::Error::new(io::ErrorKind::Unsupported, format!("{} is not an exported log", file.key)))
    }

    /// For [`FileFormat::Export`]: the row an export line stands for (its key), None for a line
    /// of no row. An export made again is recorded as growth of what was recorded of it: the
    /// lines of rows new or changed since (those whose line differs from the row's last line
    /// recorded; lines of no row, those recorded nowhere before), appended, so that a row
    /// updated in place does not make the whole export a new version (see FORMAT.md).
    fn export_row(&self, _line: &[u8]) -> Option<String> {
        None
    }

    /// For [`FileFormat::Export`]: the times (Unix ms) the events of an export line take, as
    /// [`Adapter::parse_line`] dates them. A line recorded again as an export grows is followed
    /// by the export's later lines with events at one of those times, so that events of one
    /// millisecond keep the export's order.
    fn export_times(&self, file: &LogFile, line: &[u8]) -> Vec<i64> {
        match self.parse_line(file, &mut State::new(), line, 0) {
            Line::Parsed(p) => p.events.iter().map(|e| e.time_unix_ms).collect(),
            Line::Malformed(_) => Vec::new(),
        }
    }

    /// The agent's native memory files (user-level, and project-level for the projects the
    /// logs name, read in their folders here or, for files the agent keeps by project in its
    /// own folder, found by the project's path as the logs write it). Only regular files that
    /// exist ([`keep_regular`]). Folders that could not be listed, and a memory file's name given
    /// to something else (a pipe, a folder), are added to `problems`, for the user to be told.
    fn memory_files(&self, homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile>;
}

/// Keeps the memory files of `out` that are regular files (or links to one); one whose name is
/// given to something else (a pipe, a socket, a device, a folder) is said in `problems`, as a
/// log's name given to a pipe is, and not read.
pub(crate) fn keep_regular(out: &mut Vec<MemoryFile>, problems: &mut Vec<String>) {
    out.retain(|m| match std::fs::metadata(&m.path) {
        Ok(meta) if meta.is_file() => true,
        Ok(_) => {
            problems.push(format!("{} is not a regular file (a pipe, socket, device or folder): not read as a memory file", m.path.display()));
            false
        }
        Err(_) => false,
    });
}

/// Whose memory a native memory file holds.
pub use origin_engine::record::MemoryScope;

/// A native memory file (CLAUDE.md, AGENTS.md, rules, memory folders).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFile {
    /// Which agent reads it.
    pub source: Source,
    /// The file.
    pub path: PathBuf,
    /// User-level or project-level.
    pub scope: MemoryScope,
    /// The project it belongs to (its directory), for project scope.
    pub project: Option<String>,
}

/// A project the logs name: its working directory as the logs write it, and its folder on
/// this machine when there is one (the same path; for logs recorded under another home, the
/// same place below this machine's home).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    /// The working directory as the logs write it.
    pub cwd: PathBuf,
    /// Its folder here, if it exists.
    pub dir: Option<PathBuf>,
}

impl Project {
    /// A project whose folder is `dir`, on this machine as in the logs.
    pub fn here(dir: PathBuf) -> Project {
        Project { cwd: dir.clone(), dir: Some(dir) }
    }

    /// The project as memory files name it: its working directory as the logs write it.
    pub fn name(&self) -> Option<String> {
        Some(self.cwd.to_string_lossy().into_owned())
    }
}

/// Every adapter.
pub fn all() -> Vec<Box<dyn Adapter>> {
    vec![
        Box::new(claude::Claude),
        Box::new(codex::Codex),
        Box::new(cursor::Cursor),
        Box::new(zcode::Zcode),
        Box::new(grok::Grok),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod line_refs_tests {
    use super::*;

    /// A line of a rewritten file takes the id of the line it was (composed over versions),
    /// the others the new version's; entries stay within [`LINE_REFS_MAX`], the lines past
    /// them taking the version's own ids; entries of two elements (before shifts) still read.
    #[test]
    fn line_refs_compose_over_versions_and_stay_bounded() {
        let mut v2 = State::new();
        // Version 2: its lines 1-2 were version 1's 1-2, line 3 its own, 4-5 version 1's 5-6.
        v2.insert(LINE_REFS_KEY.into(), line_refs_mapped(&State::new(), &[(1, 1), (2, 2), (4, 5), (5, 6)], 2));
        let refs: Vec<String> = (1..=6).map(|n| line_ref(&v2, n)).collect();
        assert_eq!(refs, ["1", "2", "v2:3", "5", "6", "v2:6"]);
        // Version 3: line 1 its own, lines 2-4 version 2's 3-5.
        let mut v3 = State::new();
        v3.insert(LINE_REFS_KEY.into(), line_refs_mapped(&v2, &[(2, 3), (3, 4), (4, 5)], 3));
        let refs: Vec<String> = (1..=5).map(|n| line_ref(&v3, n)).collect();
        assert_eq!(refs, ["v3:1", "v2:3", "5", "6", "v3:5"]);
        // Every other line kept, far more than the bound.
        let pairs: Vec<(u64, u64)> = (1..=20_000u64).filter(|n| n % 2 == 0).map(|n| (n, n + 1)).collect();
        let bounded = line_refs_mapped(&State::new(), &pairs, 2);
        assert!(bounded.as_array().unwrap().len() <= LINE_REFS_MAX + 1, "{}", bounded.as_array().unwrap().len());
        let mut s = State::new();
        s.insert(LINE_REFS_KEY.into(), bounded);
        assert_eq!((line_ref(&s, 2), line_ref(&s, 3), line_ref(&s, 19_998)), ("3".to_owned(), "v2:3".to_owned(), "v2:19998".to_owned()));
        // Before shifts: `[last, version]`.
        let mut old = State::new();
        old.insert(LINE_REFS_KEY.into(), serde_json::json!([[2, 1], [u64::MAX, 2]]));
        assert_eq!((line_ref(&old, 2), line_ref(&old, 3)), ("2".to_owned(), "v2:3".to_owned()));
    }
}

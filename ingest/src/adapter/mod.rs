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

/// Adapter state key: for a file's version N ≥ 2, which version's ids its lines take, as
/// `[[last line, version], ...]` in line order, the last open-ended (set by ingest when a
/// rewritten file starts a new version; see [`line_ref`]).
pub const LINE_REFS_KEY: &str = "_line_refs";

/// What names line `line_no` in an event id made from a line number (`<session>:<line>`): the
/// number in a file's first version; `v<N>:<line>` for a line of version N ≥ 2, except the
/// leading lines a rewrite kept as they were (Grok's rewind keeps the turns before the one
/// rewound), which keep the ids they had. A rewritten file (Grok replaces its transcript on
/// compaction and rewind) numbers other lines than before: its new lines get ids of their own,
/// and the earlier version's events, and the entries citing them, keep theirs and what they
/// said.
pub fn line_ref(state: &State, line_no: u64) -> String {
    match line_version(state, line_no) {
        v if v > 1 => format!("v{v}:{line_no}"),
        _ => line_no.to_string(),
    }
}

/// The version whose ids line `line_no` takes (1 without [`LINE_REFS_KEY`]).
fn line_version(state: &State, line_no: u64) -> u64 {
    let Some(refs) = state.get(LINE_REFS_KEY).and_then(Value::as_array) else { return 1 };
    let pair = |r: &Value| Some((r.get(0)?.as_u64()?, r.get(1)?.as_u64()?));
    refs.iter().filter_map(pair).find(|&(last, _)| line_no <= last).map_or(1, |(_, v)| v)
}

/// [`LINE_REFS_KEY`] for version `version` of a file whose first `kept` lines are those of the
/// version read with `previous` (its state): those lines keep the ids they had, the rest take
/// `version`'s.
pub fn line_refs_after(previous: &State, kept: u64, version: u32) -> Value {
    let mut out: Vec<Value> = Vec::new();
    let mut from = 1;
    while from <= kept {
        let v = line_version(previous, from);
        let mut last = from;
        while last < kept && line_version(previous, last + 1) == v {
            last += 1;
        }
        out.push(Value::from(vec![last, v]));
        from = last + 1;
    }
    out.push(Value::from(vec![u64::MAX, u64::from(version)]));
    Value::from(out)
}

/// What one complete line gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Events, in order. Ids are `<source>:<id in the source>`.
    pub events: Vec<Event>,
    /// Session properties learnt from the line (title, project, first prompt, parent).
    pub sessions: Vec<SessionChange>,
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

    /// The agent's native memory files (user-level, and project-level for the projects the
    /// logs name, read in their folders here or, for files the agent keeps by project in its
    /// own folder, found by the project's path as the logs write it). Only files that exist. Folders that could not be listed are added to
    /// `problems`, for the user to be told.
    fn memory_files(&self, homes: &Homes, projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile>;
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

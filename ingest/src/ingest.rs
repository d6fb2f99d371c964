//! One ingest run: under the store's ingest lock, catch up with the journal, read every log
//! file's new complete lines, append them with their events, write the mirrors, import native
//! memory files.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use origin_engine::record::{Body, Citation, EntryKind, EntryVersion, Event, EventKind, Imported, Ingested, MemoryScope, Role};
use origin_engine::{Journal, NewRecord};
use serde_json::Value;

use crate::adapter::{Adapter, FileFormat, Line, LogFile, MemoryFile, Parsed, Project, State};
use crate::bytes::Bytes;
use crate::json::ShortStrings;
use crate::cursor::{memory_hash, Cursors, FileCursor};
use crate::limits::{
    BATCH_RAW_BYTES_MAX, DECODED_LOG_SIZE_BYTES_MAX, BATCH_EVENTS_BYTES_MAX, EVENT_FIXED_BYTES, LINE_EVENTS_BYTES_MAX, LINE_SIZE_BYTES_MAX, MEMORY_FILE_SIZE_BYTES_MAX, RAW_ZSTD_LEVEL, SPLIT_LINE_BYTES_MIN, STATE_BYTES_MAX, SUPERSEDED_BYTES_MAX,
};
use crate::memory;
use crate::mirror::Mirrors;
use crate::snapshot::{self, SnapshotUse};
use crate::source::{Homes, Source};

/// Bytes of a file version's beginning whose hash tells a rewritten file from a grown one.
const PREFIX_HASH_BYTES: u64 = crate::bytes::HEAD_BYTES;
/// Bytes read from a log file per step.
const WINDOW_BYTES: u64 = 32 * 1024 * 1024;
/// State key: byte where the line that a record ended inside of began.
const PARTIAL_LINE_KEY: &str = "_partial_line_start";
/// State key beside [`PARTIAL_LINE_KEY`]: the CRC-32 of the line's bytes recorded so far, from
/// where it began to the cursor, checked before a later run reads on inside it (a file
/// rewritten between with the same beginning is a new version, not the rest of the line).
const PARTIAL_LINE_CRC_KEY: &str = "_partial_line_crc";
/// State key beside [`PARTIAL_LINE_KEY`]: the journal offset of the record that holds the
/// line's first piece (in the records after that one).
const PARTIAL_LINE_RECORD_KEY: &str = "_partial_line_record";
/// State key in the one record that ends a line recorded in pieces (see
/// [`SPLIT_LINE_BYTES_MIN`]): where that line, the record's first, began (before the record's
/// bytes), for `sources` to read it whole.
pub const FIRST_LINE_START_KEY: &str = "_first_line_start";
/// State key beside [`FIRST_LINE_START_KEY`]: the journal offset of the record that holds the
/// line's first piece, from which `sources` reads the pieces (the mirror when it is absent).
pub const FIRST_LINE_RECORD_KEY: &str = "_first_line_record";
/// State key of a log read at another path than the one its cursor and records are known by
/// (its agent moved it: see `Aliases`): the path it was last read at.
const READ_AT_KEY: &str = "_read_at";
/// State key: the CRC-32 of the file version's bytes read so far (`0..byte_end`), carried from
/// record to record; checked, for an agent that rewrites its logs, before a grown file is read
/// on (see [`Adapter::logs_rewritten`]).
const READ_CRC_KEY: &str = "_read_crc";
/// State key, in memory only (taken off before a record's state is written): the events a
/// rewrite abandoned, as `[line, id]`, for the new version's first record to name.
const ABANDONED_KEY: &str = "_abandoned";
/// State key of a log its agent rewrites (a plain file): `[device, inode, time of change in
/// ns]` as the file was when last read; when they moved and its length did not, every byte
/// read of it is checked (a rewrite to the same length, renamed over it, was taken as
/// unchanged).
const FILE_STAT_KEY: &str = "_file_stat";
/// State key: a log its agent only appends to was seen cut short to a prefix of what was read
/// (a copy or a restore part way): the CRC-32 of what was read (`0..byte_end`), which the log
/// must give again, once it has grown back, to be read on in its version.
const CUT_CRC_KEY: &str = "_cut_crc";
/// State key of an exported log: `[stamp, length]`, its adapter's [`Adapter::export_stamp`]
/// taken before the export ingest read, and that export's length. While the stamp is the same
/// and the file was read to that length, the log is not exported again.
const EXPORT_STAMP_KEY: &str = "_export_stamp";
/// Most bytes of a rewritten file compared with its previous version for the lines it kept.
const KEPT_COMPARE_BYTES_MAX: u64 = 64 * 1024 * 1024;
/// An export's version read as growth ([`Ingester::export_as_growth`]) is made again whole, as a
/// new version, once what was recorded of it is more than this many times the export, and
/// [`EXPORT_HISTORY_SLACK_BYTES`]: every run that finds the session changed reads all of it (a
/// part of 900 KB rewritten 120 times took each run to 282 ms and 264 MiB).
const EXPORT_HISTORY_TIMES: u64 = 4;
/// See [`EXPORT_HISTORY_TIMES`].
const EXPORT_HISTORY_SLACK_BYTES: u64 = 1024 * 1024;

/// Errors that stop a run (problems with single files do not: they are counted).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The journal refused.
    #[error(transparent)]
    Journal(#[from] origin_engine::Error),
    /// A worker thread failed outside any file (a bug: reported, never hidden).
    #[error("{0}")]
    Worker(String),
    /// The cursor snapshot could not be written.
    #[error("cursor snapshot: {0}")]
    Snapshot(#[source] origin_engine::snapshot::WriteError),
    /// Another process held the store's ingest lock for all the time a read, or a server's
    /// write, waits for it ([`Ingester::run_within`]): it is reading the agents' logs, or was
    /// stopped while it did.
    #[error("another process has held the store's ingest lock {} for {:.0} s (it is reading the agents' logs, or was stopped while it did): {holders}", path.display(), waited.as_secs_f64())]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long it was waited for (by a read after an earlier wait ran out, that wait's
        /// time: [`crate::freshness::OTHERS_RUN_RETRY`]).
        waited: std::time::Duration,
        /// Who holds it, in words ([`origin_engine::vfs::lock_holders`]).
        holders: String,
    },
    /// A run of this process was under way for all the time a write waits for it
    /// ([`crate::freshness::WRITE_WAITS_FOR_RUN`]).
    #[error(
        "this process has been reading the agents' logs into the store for more than {} s (a first read of a long history takes a while)",
        waited.as_secs()
    )]
    RunUnderWay {
        /// How long it was waited for.
        waited: std::time::Duration,
    },
    /// The store's ingest lock could not be taken.
    #[error("ingest lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Most malformed lines a run says where they are, per source (each run says the lines it
/// skipped; a store's total stays in the counters).
pub const MALFORMED_SAID_MAX: usize = 8;

/// What one run did, per source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceRun {
    /// Log files found.
    pub files_found: u64,
    /// Log files that had new lines.
    pub files_read: u64,
    /// Complete lines read.
    pub lines: u64,
    /// Events.
    pub events: u64,
    /// Malformed lines skipped.
    pub malformed: u64,
    /// Where the first malformed lines are, and why they were skipped (`<file> line <n>: why`;
    /// [`MALFORMED_SAID_MAX`] of them, the others counted in `malformed` only).
    pub malformed_at: Vec<String>,
    /// Lines not parsed for their length, or giving more events than a record holds (kept raw).
    pub cut: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Native memory file versions imported.
    pub memory_versions: u64,
    /// Files or folders that could not be read (the run went on without them).
    pub problems: Vec<String>,
    /// The log files of `problems` (their new lines wait for a run that can read them).
    pub unread: Vec<PathBuf>,
}

impl SourceRun {
    /// Adds what another worker did for the same source (files found are counted once, by the
    /// run itself).
    fn add(&mut self, o: SourceRun) {
        self.files_read += o.files_read;
        self.lines += o.lines;
        self.events += o.events;
        self.malformed += o.malformed;
        self.malformed_at.extend(o.malformed_at);
        self.malformed_at.truncate(MALFORMED_SAID_MAX);
        self.cut += o.cut;
        self.bytes += o.bytes;
        self.memory_versions += o.memory_versions;
        self.problems.extend(o.problems);
        self.unread.extend(o.unread);
    }
}

/// Most threads one run reads files with.
const INGEST_WORKERS_MAX: usize = 8;

/// What one run did.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Source id -> what happened.
    pub sources: BTreeMap<&'static str, SourceRun>,
}

/// Progress of a run, for a progress bar.
#[derive(Clone, Debug)]
pub enum Progress {
    /// Files were found; `total_bytes` is their size.
    Found {
        /// Files.
        files: u64,
        /// Their bytes.
        total_bytes: u64,
    },
    /// Bytes were read.
    Read {
        /// How many.
        bytes: u64,
    },
}

/// Reads agents' logs into one store.
pub struct Ingester {
    journal: Arc<Journal>,
    homes: Homes,
    adapters: Vec<Box<dyn Adapter>>,
    mirrors: Mirrors,
    lock_path: PathBuf,
    device: String,
    /// The home directory as recorded inside the logs, when they come from another machine
    /// (the shipped samples say `/home/dev`): used to find project folders here.
    recorded_home: Option<String>,
    cursors: Mutex<Cursors>,
    /// Where the cursors are saved for the next process ([`Ingester::with_snapshot`]).
    snapshot: Option<PathBuf>,
    /// What became of that snapshot, once the cursors were first needed.
    snapshot_use: Mutex<Option<SnapshotUse>>,
    /// The offset the snapshot file reflects, when this ingester loaded or wrote it.
    saved_to: Mutex<Option<u64>>,
    /// Compressed logs as this process last read them ([`ZstdSeen`]).
    zstd_seen: Mutex<HashMap<PathBuf, ZstdSeen>>,
    /// Per log, the stamp of its side files ([`Adapter::side_stamp`]) this process last looked
    /// at with no new line in the log.
    side_seen: Mutex<HashMap<PathBuf, Value>>,
}

/// Files Origin knows under one name found again under another, read under the first name
/// rather than read again whole under the new one:
/// - another spelling of a path that still names the file (the agents' folder reached through
///   a symbolic link, or with `..`): the same file (device and inode) as one the cursors name;
/// - a log its agent moved, for agents that move logs under the same file name
///   ([`Adapter::logs_move`]: Codex compresses a cold rollout to `….jsonl.zst` and deletes the
///   plain file, archives rollouts into `archived_sessions/`, and writes one plain again beside
///   its `.zst` when the thread resumes): a file the cursors do not name, with the file name
///   (less `.zst`) of a log of the same agent whose path no longer exists (or is the `.zst`
///   twin that discovery passes over while the plain file exists), and that log's beginning
///   (the first bytes its cursor hashed). Read under the old name, only its new lines are
///   read, and its mirror stays one file (a later version's too); its records name the path
///   where the log was first read.
///
/// A moved log is looked for by its name first (one look at each known path of that name, and
/// its first 4 KiB read); the files the cursors name are looked at (one `stat` each) only when a
/// run finds a file they do not name that is not a moved log. A file found twice in one run is
/// read under the first spelling found, and a moved log is taken up by one file per run.
#[derive(Default)]
struct Aliases {
    /// (device, inode) → the key the cursors know the log file by, and the path to read it at.
    logs: Option<HashMap<(u64, u64), (String, PathBuf)>>,
    /// (device, inode) → how this run reads a file it found that the cursors do not name.
    decided: HashMap<(u64, u64), (String, PathBuf)>,
    /// (source, file name less `.zst`) → the keys of the logs the cursors know by that name.
    names: Option<HashMap<(String, String), Vec<String>>>,
    /// Keys of moved logs a file of this run is read under.
    taken: HashSet<String>,
    /// (device, inode) → the memory file path the cursors know it by.
    memory: Option<HashMap<(u64, u64), String>>,
}

/// A file's device and inode, if it can be looked at.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// A log's file name less `.zst`: what stays when its agent moves or compresses it.
fn log_name(key: &str) -> &str {
    let name = key.rsplit('/').next().unwrap_or(key);
    name.strip_suffix(".zst").unwrap_or(name)
}

/// The first `n` bytes of a log file as its lines read (decoded when compressed), fewer when
/// it is shorter.
fn log_head(file: &LogFile, n: u64) -> io::Result<Vec<u8>> {
    let f = crate::bytes::open_regular(&file.path)?;
    let mut out = Vec::new();
    match file.format {
        FileFormat::ZstdLines => zstd::Decoder::new(f)?.take(n).read_to_end(&mut out)?,
        FileFormat::Lines | FileFormat::Export => f.take(n).read_to_end(&mut out)?,
    };
    Ok(out)
}

impl Aliases {
    /// `file` as it is to be read: under the name the cursors know it by, when that is not its
    /// own. `moves`: its agent moves logs ([`Adapter::logs_move`]).
    fn log_read_as(&mut self, cursors: &Cursors, file: LogFile, moves: bool) -> LogFile {
        if file.format == FileFormat::Export || cursors.files.contains_key(&(file.source.id().to_owned(), file.key.clone())) {
            return file;
        }
        let id = file_id(&file.path);
        // A file found twice in one run, under two spellings, is read under the first.
        if let Some((key, path)) = id.and_then(|id| self.decided.get(&id)) {
            return LogFile { key: key.clone(), path: path.clone(), ..file };
        }
        let file = match moves.then(|| self.moved_from(cursors, &file)).flatten() {
            Some(old) => LogFile { key: old, ..file },
            None => {
                let known = self.logs.get_or_insert_with(|| {
                    cursors.files.keys().filter_map(|(_, key)| file_id(Path::new(key)).map(|id| (id, (key.clone(), PathBuf::from(key))))).collect()
                });
                match id.and_then(|id| known.get(&id)) {
                    Some((key, path)) => LogFile { key: key.clone(), path: path.clone(), ..file },
                    None => file,
                }
            }
        };
        if let Some(id) = id {
            self.decided.insert(id, (file.key.clone(), file.path.clone()));
        }
        file
    }

    /// The key of the log `file` is, moved by its agent: of the candidates (same agent, same
    /// name, path gone or the `.zst` twin discovery passes over, same beginning), the one read
    /// furthest.
    fn moved_from(&mut self, cursors: &Cursors, file: &LogFile) -> Option<String> {
        let source = file.source.id();
        let names = self.names.get_or_insert_with(|| {
            let mut names: HashMap<(String, String), Vec<String>> = HashMap::new();
            for (s, key) in cursors.files.keys() {
                names.entry((s.clone(), log_name(key).to_owned())).or_default().push(key.clone());
            }
            names
        });
        let candidates = names.get(&(source.to_owned(), log_name(&file.key).to_owned()))?;
        let twin = format!("{}.zst", file.key);
        let mut head: Option<Vec<u8>> = None;
        let mut best: Option<(&String, &FileCursor)> = None;
        for key in candidates {
            let Some(cur) = cursors.files.get(&(source.to_owned(), key.clone())) else { continue };
            if cur.byte_end == 0 || self.taken.contains(key) {
                continue;
            }
            let gone = matches!(std::fs::symlink_metadata(key), Err(e) if e.kind() == io::ErrorKind::NotFound);
            if !gone && *key != twin {
                continue;
            }
            if head.is_none() {
                // A file that cannot be read is not anyone's: its run says why.
                head = Some(log_head(file, PREFIX_HASH_BYTES).ok()?);
            }
            let head = head.as_deref().unwrap_or_default();
            let n = cur.byte_end.min(PREFIX_HASH_BYTES) as usize;
            if head.len() < n || u64::from(crc32fast::hash(&head[..n])) != cur.prefix_hash {
                continue;
            }
            let further = |b: &FileCursor| (b.byte_end, b.offsets.last().copied());
            if best.is_none_or(|(_, b)| further(cur) > further(b)) {
                best = Some((key, cur));
            }
        }
        let (key, _) = best?;
        self.taken.insert(key.clone());
        Some(key.clone())
    }

    /// The path the cursors know the memory file at `path` by, when it is not this one.
    fn memory_known_as(&mut self, cursors: &Cursors, path: &Path) -> Option<String> {
        let name = path.to_string_lossy();
        if cursors.memory.contains_key(name.as_ref()) {
            return None;
        }
        let id = file_id(path)?;
        let known = self.memory.get_or_insert_with(|| {
            cursors.memory.keys().filter_map(|p| file_id(Path::new(p)).map(|id| (id, p.clone()))).collect()
        });
        let first = known.entry(id).or_insert_with(|| name.clone().into_owned());
        (*first != name).then(|| first.clone())
    }
}

/// A compressed log as a run of this process left it: the file's size and modification time
/// then, and the end its cursor reached (or why it could not be read). Decoding the whole
/// file is the only way to compare its contents, so a file that has not changed since is not
/// decoded again at every run (a long-lived server ingests before reads).
#[derive(Clone, Debug)]
struct ZstdSeen {
    size: u64,
    modified: Option<SystemTime>,
    outcome: Result<u64, String>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    // getrandom only fails where the OS has no randomness source at all; then ids fall back to
    // time and a counter, which are still unique within a store.
    if getrandom::fill(&mut b).is_err() {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = (now_unix_ms() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n;
        for (i, x) in b.iter_mut().enumerate() {
            *x = (seed >> ((i % 8) * 8)) as u8;
        }
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A new entry id: `ent_` and 16 hex characters.
pub fn new_entry_id() -> String {
    format!("ent_{}", random_hex(8))
}

impl Ingester {
    /// An ingester for the store at `origin_home`, whose journal is `journal`, reading the
    /// agents' folders in `homes`.
    pub fn new(journal: Arc<Journal>, origin_home: &Path, homes: Homes) -> Ingester {
        Ingester {
            journal,
            homes,
            adapters: crate::adapter::all(),
            mirrors: Mirrors::new(origin_home.join("raw")),
            lock_path: origin_home.join("ingest.lock"),
            device: device_name(),
            recorded_home: None,
            cursors: Mutex::new(Cursors::default()),
            snapshot: None,
            snapshot_use: Mutex::new(None),
            saved_to: Mutex::new(None),
            zstd_seen: Mutex::new(HashMap::new()),
            side_seen: Mutex::new(HashMap::new()),
        }
    }

    /// The same ingester reading no agents' logs and no memory files (a store that shows
    /// another as it was: `origin journal replay --to`); its runs write nothing.
    pub fn reading_nothing(mut self) -> Ingester {
        self.adapters.clear();
        self
    }

    /// The same ingester starting its cursors from the snapshot at `path` when it checks out
    /// ([`crate::snapshot`]; else from the journal's start), and saving them there on
    /// [`Ingester::save_snapshot`].
    pub fn with_snapshot(mut self, path: PathBuf) -> Ingester {
        self.snapshot = Some(path);
        self
    }

    /// Where the cursors' snapshot is, if there is one.
    pub fn snapshot_path(&self) -> Option<&Path> {
        self.snapshot.as_deref()
    }

    /// What became of the snapshot: `None` before the cursors were first needed, or without one.
    pub fn snapshot_use(&self) -> Option<SnapshotUse> {
        guard(&self.snapshot_use).clone()
    }

    /// The cursors, caught up with the journal as this handle sees it (refresh it first for
    /// other processes' records); the first time, from the snapshot when it checks out.
    fn caught_up(&self) -> Result<MutexGuard<'_, Cursors>, IngestError> {
        self.caught_up_from(guard(&self.cursors))
    }

    /// [`Ingester::caught_up`], the cursors held already.
    fn caught_up_from<'a>(&'a self, mut c: MutexGuard<'a, Cursors>) -> Result<MutexGuard<'a, Cursors>, IngestError> {
        if let Some(path) = &self.snapshot {
            let mut used = guard(&self.snapshot_use);
            if used.is_none() {
                let (loaded, outcome) = snapshot::caught_up(&self.journal, path)?;
                if let SnapshotUse::Loaded { read_to } = outcome {
                    *guard(&self.saved_to) = Some(read_to);
                }
                *c = loaded;
                *used = Some(outcome);
                return Ok(c);
            }
        }
        c.catch_up(&self.journal)?;
        Ok(c)
    }

    /// Saves the cursors, caught up with the journal, to the snapshot for the next process to
    /// start from (nothing without [`Ingester::with_snapshot`]).
    pub fn save_snapshot(&self) -> Result<(), IngestError> {
        let Some(path) = &self.snapshot else { return Ok(()) };
        self.journal.refresh()?;
        let c = self.caught_up()?;
        let mut saved_to = guard(&self.saved_to);
        if *saved_to == Some(c.read_to) {
            // The file already holds these cursors.
            return Ok(());
        }
        snapshot::save(path, &c, &self.journal)
            .map_err(IngestError::Snapshot)?;
        *saved_to = Some(c.read_to);
        Ok(())
    }

    /// The same ingester reading through other adapters (tests).
    pub fn with_adapters(mut self, adapters: Vec<Box<dyn Adapter>>) -> Ingester {
        self.adapters = adapters;
        self
    }

    /// Logs recorded on another machine under `recorded_home` (e.g. `/home/dev`) are read here
    /// from `homes.home`: project folders named in them are looked up there.
    pub fn with_recorded_home(mut self, recorded_home: &str) -> Ingester {
        self.recorded_home = Some(recorded_home.trim_end_matches('/').to_owned());
        self
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<Journal> {
        &self.journal
    }

    /// The mirrors.
    pub fn mirrors(&self) -> &Mirrors {
        &self.mirrors
    }

    /// The agents' folders.
    pub fn homes(&self) -> &Homes {
        &self.homes
    }

    /// A copy of the ingest state, caught up with the journal.
    pub fn cursors(&self) -> Result<Cursors, IngestError> {
        self.journal.refresh()?;
        Ok(self.caught_up()?.clone())
    }

    /// The path a log known by `key` (the path its records name) was last read at, where its
    /// agent moved it since ([`READ_AT_KEY`]); `None` where it is read at `key`, is not
    /// known, or a run in this process holds the cursors (not waited for: a run can take
    /// minutes, and the caller answers with the path recorded).
    pub fn read_at(&self, source: &str, key: &str) -> Result<Option<String>, IngestError> {
        let held = match self.cursors.try_lock() {
            Ok(held) => held,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        let cursors = self.caught_up_from(held)?;
        let Some(cur) = cursors.files.get(&(source.to_owned(), key.to_owned())) else { return Ok(None) };
        let state: State = serde_json::from_slice(&cur.state).unwrap_or_default();
        Ok(state.get(READ_AT_KEY).and_then(Value::as_str).map(str::to_owned))
    }

    /// Every log file the adapters find now, with the problems met finding them.
    pub fn discover(&self) -> Vec<(Source, Vec<LogFile>, Vec<String>)> {
        self.adapters
            .iter()
            .map(|a| {
                let (files, problems) = a.discover(&self.homes);
                (a.source(), files, problems)
            })
            .collect()
    }

    /// Reads every new complete line of every log file (or only of the files in `only`), and
    /// imports changed native memory files. On a journal opened to read only (a store that
    /// cannot be written: its opener says so), nothing is read and nothing is locked: the
    /// summary is empty.
    pub fn run(&self, only: Option<&HashSet<PathBuf>>, progress: &mut (dyn FnMut(Progress) + Send)) -> Result<RunSummary, IngestError> {
        self.run_waiting(only, progress, None)
    }

    /// [`Ingester::run`], for a read that answers from the store rather than wait long: where
    /// another process holds the store's ingest lock for all of `wait`, nothing is read and
    /// [`IngestError::Busy`] is returned (a run stopped while it held the lock, Ctrl-Z on an
    /// `origin ingest`, kept every read waiting).
    pub fn run_within(&self, only: Option<&HashSet<PathBuf>>, progress: &mut (dyn FnMut(Progress) + Send), wait: std::time::Duration) -> Result<RunSummary, IngestError> {
        self.run_waiting(only, progress, Some(wait))
    }

    fn run_waiting(&self, only: Option<&HashSet<PathBuf>>, progress: &mut (dyn FnMut(Progress) + Send), wait: Option<std::time::Duration>) -> Result<RunSummary, IngestError> {
        if self.journal.is_read_only() {
            return Ok(RunSummary::default());
        }
        // Through the store's file system, which opens a lock file it may not write (another
        // user's, left by a run under `sudo`) for reading: the lock is the file's all the same.
        let vfs = self.journal.vfs();
        let refused = |source| IngestError::Lock { path: self.lock_path.clone(), source };
        let Some(lock) = origin_engine::vfs::lock_within(&**vfs, &self.lock_path, origin_engine::vfs::LockMode::Exclusive, wait).map_err(refused)? else {
            let holders = origin_engine::vfs::lock_holders(&self.lock_path, false);
            return Err(IngestError::Busy { path: self.lock_path.clone(), waited: wait.unwrap_or_default(), holders });
        };
        self.journal.refresh()?;
        let mut cursors = self.caught_up()?;
        let mut summary = RunSummary::default();
        let found = self.discover();
        // Every file stated once: its size for the progress bar, its time of change for the
        // order a folder's logs are read in ([`Ingester::read_groups`]).
        let mut total: (u64, u64) = (0, 0);
        let mut modified: HashMap<PathBuf, std::time::SystemTime> = HashMap::new();
        for (ai, (_, files, _)) in found.iter().enumerate() {
            let ordered = self.adapters[ai].logs_copy_their_folder();
            for f in files {
                let meta = std::fs::metadata(&f.path).ok();
                total = (total.0 + 1, total.1 + meta.as_ref().map_or(0, |m| m.len()));
                if let Some(t) = meta.filter(|_| ordered).and_then(|m| m.modified().ok()) {
                    modified.insert(f.path.clone(), t);
                }
            }
        }
        progress(Progress::Found { files: total.0, total_bytes: total.1 });
        let mut work: Vec<(usize, LogFile)> = Vec::new();
        let mut aliases = Aliases::default();
        for (ai, (source, files, problems)) in found.into_iter().enumerate() {
            let run = summary.sources.entry(source.id()).or_default();
            run.files_found = files.len() as u64;
            run.problems.extend(problems);
            let files = files.into_iter().filter(|f| only.is_none_or(|o| o.contains(&f.path)));
            // A file known by another name (another spelling of its path, or moved by its
            // agent) is read under that name.
            let moves = self.adapters[ai].logs_move();
            let files: Vec<LogFile> = files.map(|f| aliases.log_read_as(&cursors, f, moves)).collect();
            work.extend(files.into_iter().map(|f| (ai, f)));
        }
        // Files are independent (one cursor each, under the ingest lock): read them on every
        // core. Each worker applies its own records to a copy of the cursors; afterwards the
        // cursors catch up with the journal, which holds everything every worker appended.
        // The logs of a folder whose new logs may copy the others' lines are read by one worker,
        // oldest first ([`Adapter::logs_copy_their_folder`]).
        let groups = self.read_groups(work, &modified, &cursors);
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(INGEST_WORKERS_MAX).min(groups.len()).max(1);
        let base = cursors.clone();
        let progress = Mutex::new(progress);
        let results: Vec<Result<BTreeMap<&'static str, SourceRun>, IngestError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let (base, groups, progress) = (&base, &groups, &progress);
                    scope.spawn(move || -> Result<BTreeMap<&'static str, SourceRun>, IngestError> {
                        let mut local = base.clone();
                        let mut runs: BTreeMap<&'static str, SourceRun> = BTreeMap::new();
                        let mut window_buf = Vec::new();
                        for (ai, file) in groups.iter().enumerate().filter(|(g, _)| g % workers == w).flat_map(|(_, group)| group) {
                            let run = runs.entry(file.source.id()).or_default();
                            let mut report = |p: Progress| (guard(progress))(p);
                            match self.ingest_file(&mut local, self.adapters[*ai].as_ref(), file, run, &mut report, &mut window_buf) {
                                Ok(()) => {}
                                Err(FileError::Journal(e)) => return Err(e.into()),
                                Err(FileError::Io(e)) => {
                                    run.problems.push(format!("skipped {}: {e}", file.shown()));
                                    run.unread.push(file.path.clone());
                                }
                                Err(FileError::Mirror(e)) => {
                                    run.problems.push(format!(
                                        "{}: its lines were stored, but its mirror could not be written ({e}); it is tried again at the next run",
                                        file.shown()
                                    ));
                                    // Looked at again by the watch too (lines may be left to read).
                                    run.unread.push(file.path.clone());
                                }
                            }
                        }
                        Ok(runs)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(IngestError::Worker("an ingest worker panicked".into())))).collect()
        });
        for r in results {
            for (id, run) in r? {
                summary.sources.entry(id).or_default().add(run);
            }
        }
        cursors.catch_up(&self.journal)?;
        let projects = self.projects(&cursors);
        for adapter in &self.adapters {
            let run = summary.sources.entry(adapter.source().id()).or_default();
            let mut unlisted = Vec::new();
            let files = adapter.memory_files(&self.homes, &projects, &mut unlisted);
            run.problems.extend(unlisted);
            for mut m in files {
                if let Some(known) = aliases.memory_known_as(&cursors, &m.path) {
                    m.path = PathBuf::from(known);
                }
                match self.import_memory(&mut cursors, &m) {
                    Ok(true) => run.memory_versions += 1,
                    Ok(false) => {}
                    Err(FileError::Journal(e)) => return Err(e.into()),
                    Err(FileError::Io(e) | FileError::Mirror(e)) => run.problems.push(format!("skipped {}: {e}", m.path.display())),
                }
            }
        }
        drop(cursors);
        // Dropping the guard releases the lock.
        drop(lock);
        Ok(summary)
    }

    /// The projects of the working directories seen in events, with their folders on this
    /// machine where they exist.
    fn projects(&self, cursors: &Cursors) -> Vec<Project> {
        cursors
            .cwds
            .iter()
            .map(|cwd| {
                let here = match &self.recorded_home {
                    Some(rec) if cwd.starts_with(rec.as_str()) => self.homes.home.join(cwd[rec.len()..].trim_start_matches('/')),
                    _ => PathBuf::from(cwd),
                };
                Project { cwd: PathBuf::from(cwd), dir: here.is_dir().then_some(here) }
            })
            .collect()
    }

    /// The bytes of `file`; `keep`: a position whose byte a compressed log keeps from its first
    /// pass (the byte before the cursor: an unchanged file is then decoded once).
    fn open_bytes(&self, adapter: &dyn Adapter, file: &LogFile, keep: Option<u64>) -> io::Result<Bytes> {
        match file.format {
            FileFormat::Lines => {
                let f = crate::bytes::open_regular(&file.path)?;
                let len = f.metadata()?.len();
                Ok(Bytes::Disk(f, len))
            }
            FileFormat::ZstdLines => Bytes::zstd(&file.path, DECODED_LOG_SIZE_BYTES_MAX, keep),
            FileFormat::Export => {
                let out = adapter.export(file)?;
                if out.len() as u64 > DECODED_LOG_SIZE_BYTES_MAX {
                    return Err(io::Error::other(format!("exports to more than {DECODED_LOG_SIZE_BYTES_MAX} bytes")));
                }
                Ok(Bytes::Mem(out))
            }
        }
    }

    fn ingest_file(
        &self,
        cursors: &mut Cursors,
        adapter: &dyn Adapter,
        file: &LogFile,
        run: &mut SourceRun,
        progress: &mut dyn FnMut(Progress),
        window_buf: &mut Vec<u8>,
    ) -> Result<(), FileError> {
        let source = file.source.id();
        let key = (source.to_owned(), file.key.clone());
        if file.format == FileFormat::ZstdLines {
            let stat = std::fs::metadata(&file.path)?;
            let (size, modified) = (stat.len(), stat.modified().ok());
            let seen = guard(&self.zstd_seen).get(&file.path).cloned().filter(|z| z.size == size && z.modified == modified);
            match seen.map(|z| z.outcome) {
                Some(Err(why)) => return Err(FileError::Io(io::Error::new(io::ErrorKind::FileTooLarge, why))),
                Some(Ok(end)) => {
                    if let Some(cur) = cursors.files.get(&key).filter(|c| c.byte_end == end) {
                        return self.repair_mirror(cur).map_err(mirror_problem);
                    }
                }
                None => {}
            }
            let result = self.ingest_decoded(cursors, adapter, file, run, progress, window_buf);
            // Kept: where it was read to, or a refusal its bytes alone decide (too large once
            // decoded); anything else (an open that failed for want of descriptors, a journal
            // that refused the append) is tried again at the next run.
            let outcome = match &result {
                // A run that stopped early (its mirror not written) left lines to read.
                Ok(()) => Some(Ok(cursors.files.get(&key).map_or(0, |c| c.byte_end))),
                Err(FileError::Io(e)) if e.kind() == io::ErrorKind::FileTooLarge => Some(Err(e.to_string())),
                Err(_) => None,
            };
            let mut seen = guard(&self.zstd_seen);
            match outcome {
                Some(outcome) => seen.insert(file.path.clone(), ZstdSeen { size, modified, outcome }),
                None => seen.remove(&file.path),
            };
            drop(seen);
            return result;
        }
        self.ingest_decoded(cursors, adapter, file, run, progress, window_buf)
    }

    /// [`Ingester::ingest_file`] once a compressed file is known to need reading.
    fn ingest_decoded(
        &self,
        cursors: &mut Cursors,
        adapter: &dyn Adapter,
        file: &LogFile,
        run: &mut SourceRun,
        progress: &mut dyn FnMut(Progress),
        window_buf: &mut Vec<u8>,
    ) -> Result<(), FileError> {
        let source = file.source.id();
        let key = (source.to_owned(), file.key.clone());
        let mut cur = cursors.files.get(&key).cloned().unwrap_or_default();
        // An export made of what its last complete read was made of is not made again.
        let mut state: State = serde_json::from_slice(&cur.state).unwrap_or_default();
        let stamp = if file.format == FileFormat::Export { adapter.export_stamp(file) } else { None };
        if let Some(s) = &stamp {
            if cur.version > 0 && state.get(EXPORT_STAMP_KEY) == Some(&serde_json::json!([s, cur.byte_end])) {
                return self.repair_mirror(&cur).map_err(mirror_problem);
            }
        }
        let bytes = match self.open_bytes(adapter, file, cur.byte_end.checked_sub(1))? {
            Bytes::Mem(export) if file.format == FileFormat::Export => Bytes::Mem(self.export_as_growth(adapter, file, &cur, &state, export, &mut run.problems)),
            b => b,
        };
        let len = bytes.len();
        let stamp = stamp.map(|s| serde_json::json!([s, len]));
        // Said only by the record that ends a line recorded in pieces.
        state.remove(FIRST_LINE_START_KEY);
        let partial = state.get(PARTIAL_LINE_KEY).and_then(Value::as_u64);
        // A log its agent rewrites, as a plain file: whether it may have been rewritten to the
        // same length (its inode or time of change moved since it was read).
        let stat = if adapter.logs_rewritten() && file.format == FileFormat::Lines { file_stat(&file.path) } else { None };
        let restated = stat.as_ref().is_some_and(|st| state.get(FILE_STAT_KEY) != Some(st));
        // Every byte read of it is checked when it grew, was made again (an export), or may
        // have been rewritten in place of itself.
        let check_whole = adapter.logs_rewritten() && (len > cur.byte_end || file.format == FileFormat::Export || restated);
        // A log its agent rewrites, read by a build before `_read_crc`: the CRC of the bytes read
        // is taken from its mirror, which holds them (the version's state then carries it on).
        if check_whole && cur.byte_end > 0 && !state.contains_key(READ_CRC_KEY) {
            // Made whole first, if a write of it failed (rebuilt from the records). A repair
            // that fails leaves the version unchecked, as before this key; it is said by the
            // repair below when the version is read on.
            let _ = self.repair_mirror(&cur);
            if let Some(read) = self.mirrors.read_head(&cur.mirror, cur.byte_end).ok().filter(|m| m.len() as u64 == cur.byte_end) {
                state.insert(READ_CRC_KEY.into(), Value::from(crc32fast::hash(&read)));
            }
        }
        let same_version = cur.version > 0 && len >= cur.byte_end && {
            let head = bytes.read(0, cur.byte_end.min(PREFIX_HASH_BYTES))?;
            let last = if cur.byte_end > 0 { bytes.read(cur.byte_end - 1, 1)? } else { vec![b'\n'] };
            u64::from(crc32fast::hash(&head)) == cur.prefix_hash && (last == b"\n" || partial.is_some())
        } && match (partial, state.get(PARTIAL_LINE_CRC_KEY).and_then(Value::as_u64)) {
            // Inside a line recorded in pieces: the bytes recorded of it must still be the file's.
            (Some(p), Some(crc)) if p < cur.byte_end => crc_of(&bytes, p, cur.byte_end)? == crc,
            _ => true,
        } && match state.get(READ_CRC_KEY).and_then(Value::as_u64) {
            // A log its agent rewrites, grown (or an export made again): every byte read of
            // it must still be its own (a change past its first 4 KiB, the byte before the
            // old end still a newline, was read as growth and never seen).
            Some(crc) if check_whole => crc_of(&bytes, 0, cur.byte_end)? == crc,
            _ => true,
        } && match state.get(CUT_CRC_KEY).and_then(Value::as_u64) {
            // Seen cut short, and grown back: every byte read must be what it was.
            Some(crc) => crc_of(&bytes, 0, cur.byte_end)? == crc,
            None => true,
        };
        // Grown back as it was: read on (the key goes with the next record written).
        let restored = same_version && state.remove(CUT_CRC_KEY).is_some();
        // A log its agent only appends to, now shorter than what was read and its bytes all
        // the start of what was read (a copy over it, a sync tool, a restore, caught part way):
        // nothing to read until it grows past the old end (the same version, read on) or its
        // bytes differ (a new version). Read as a new version at once, the lines written back
        // after were lines of that version, ids of their own: the same events listed twice.
        // (Its length taken again: cut after it was opened, a read of it came up short.) The
        // cut is recorded once (`CUT_CRC_KEY`), so that bytes written back otherwise past its
        // first 4 KiB, once it has grown past the old end, are a new version, not growth.
        if !same_version && cur.version > 0 && !adapter.logs_rewritten() && file.format == FileFormat::Lines && cur.byte_end <= KEPT_COMPARE_BYTES_MAX {
            let now = bytes.len_now()?.min(len);
            if now < cur.byte_end
                && let Ok(read) = self.mirrors.read_head(&cur.mirror, cur.byte_end)
                && read.len() as u64 == cur.byte_end
                && bytes.read(0, now).is_ok_and(|b| b.len() as u64 == now && b[..] == read[..now as usize])
            {
                if !state.contains_key(CUT_CRC_KEY) {
                    state.insert(CUT_CRC_KEY.into(), Value::from(crc32fast::hash(&read)));
                    let head = read[..cur.byte_end.min(PREFIX_HASH_BYTES) as usize].to_vec();
                    let batch = Batch::new(cur.byte_end, cur.line_end);
                    self.append_batch(cursors, file, &mut cur, &mut state, partial, batch, &[], &head, run)?;
                }
                return self.repair_mirror(&cur).map_err(mirror_problem);
            }
        }
        let mut abandoned: Vec<(u64, String)> = Vec::new();
        if !same_version {
            let version = cur.version + 1;
            // The leading lines a rewrite kept as they were keep their ids (see `line_ref`).
            let refs = if version > 1 {
                // The new version's first bytes, read once for the lines it kept and the turns it
                // abandoned (when they cannot be read, it kept none: see `kept_lines`).
                let now = if adapter.lines_stand_alone(file) { bytes.read(0, KEPT_COMPARE_BYTES_MAX.min(bytes.len())).ok() } else { None };
                let kept = now.as_deref().map(|now| self.kept_lines(&cur, now)).unwrap_or_default();
                // The turns a rewind abandoned, named by the new version's first record (a run
                // stopped before it finds the rewrite again).
                abandoned = match now.as_deref().map(|now| self.abandoned_events(adapter, file, &cur, now, bytes.len(), &kept)) {
                    Some(Ok(ids)) => ids,
                    Some(Err(e)) => {
                        run.problems.push(format!("{}: the turns a rewrite of it abandoned could not be told ({e}); they stay current", file.shown()));
                        Vec::new()
                    }
                    None => Vec::new(),
                };
                Some(crate::adapter::line_refs_mapped(&state, &kept, version))
            } else {
                None
            };
            // A later version is mirrored beside the first, wherever the file is read from now
            // (a log moved by its agent, or reached under another spelling, keeps its mirrors).
            let base = match cur.version {
                _ if cur.version == 0 || cur.mirror.is_empty() => format!("{source}/{}", file.mirror),
                1 => cur.mirror.clone(),
                n => cur.mirror.strip_suffix(&format!(".v{n}")).unwrap_or(&cur.mirror).to_owned(),
            };
            let mirror = if version == 1 { base } else { format!("{base}.v{version}") };
            cur = FileCursor { version, line_end: 1, mirror, ..FileCursor::default() };
            state = State::new();
            if let Some(refs) = refs {
                state.insert(crate::adapter::LINE_REFS_KEY.into(), refs);
            }
            if !abandoned.is_empty() {
                let pairs: Vec<Value> = std::mem::take(&mut abandoned).into_iter().map(|(line, id)| serde_json::json!([line, id])).collect();
                state.insert(ABANDONED_KEY.into(), Value::Array(pairs));
            }
        }
        // A log read at another path than the one it is known by (moved by its agent: archived,
        // compressed): the path it is read at now, carried from record to record for `sources`
        // to name the file where it is (every record of the log, the earlier ones too, through
        // [`Ingester::read_at`]); recorded without lines when only that changed.
        // (An export's key is its database and session, never a path it is read at.)
        let read_at = Some(file.path.as_path()).filter(|p| file.format != FileFormat::Export && *p != Path::new(&file.key)).and_then(Path::to_str);
        let moved = cur.byte_end > 0 && state.get(READ_AT_KEY).and_then(Value::as_str) != read_at;
        match read_at {
            Some(at) => state.insert(READ_AT_KEY.into(), Value::from(at)),
            None => state.remove(READ_AT_KEY),
        };
        if len == cur.byte_end && same_version {
            // Its mirror is made whole all the same (a write that failed at an earlier run is
            // made good now, not when the log next grows).
            self.repair_mirror(&cur).map_err(mirror_problem)?;
            // An export with nothing new whose stamp moved (what it is made of changed where
            // the export does not show it): the stamp recorded, without lines, so that the next
            // run need not export it again.
            // Likewise a plain file's stat that moved with its bytes the same (checked whole
            // above): recorded, so that it is not read whole again at every run.
            // Grown back to its old end exactly: the cut is no longer recorded.
            let mut restamped = restored || moved;
            if let Some(s) = stamp.clone().filter(|s| state.get(EXPORT_STAMP_KEY) != Some(s)) {
                state.insert(EXPORT_STAMP_KEY.into(), s);
                restamped = true;
            }
            if let Some(st) = stat.clone().filter(|_| restated) {
                state.insert(FILE_STAT_KEY.into(), st);
                restamped = true;
            }
            // No new line; what its side files say may be new (a title written after the last
            // line), recorded without lines: looked at once per change of their stamp in this
            // process (a side file rewritten with nothing new is not read at every run).
            let side = adapter.side_stamp(file).filter(|st| guard(&self.side_seen).get(&file.path) != Some(st));
            let changes = if side.is_some() { adapter.side_changes(file, &mut state) } else { Vec::new() };
            if !changes.is_empty() || restamped {
                let head = bytes.read(0, cur.byte_end.min(PREFIX_HASH_BYTES))?;
                let batch = Batch { sessions: changes.into_iter().map(crate::text::bounded).collect(), ..Batch::new(cur.byte_end, cur.line_end) };
                self.append_batch(cursors, file, &mut cur, &mut state, partial, batch, &[], &head, run)?;
            }
            if let Some(st) = side {
                guard(&self.side_seen).insert(file.path.clone(), st);
            }
            return Ok(());
        }
        if let Some(st) = stat {
            state.insert(FILE_STAT_KEY.into(), st);
        }
        if let Some(s) = stamp {
            state.insert(EXPORT_STAMP_KEY.into(), s);
        }
        adapter.begin(file, &mut state);
        self.repair_mirror(&cur)?;
        let head_end = PREFIX_HASH_BYTES;
        let mut head = if cur.byte_end > 0 { bytes.read(0, cur.byte_end.min(head_end))? } else { Vec::new() };
        let start_pos = cur.byte_end;
        let mut pos = cur.byte_end;
        let mut line_no = cur.line_end;
        // A line longer than a read window ("giant") is recorded in chunks as it is read, and
        // parsed as read with each string cut to its first 256 KiB (`json::ShortStrings`).
        // `partial` says a previous run stopped inside a line recorded in pieces (a giant, or a
        // long line): it is read again from where it began, its bytes recorded from where the
        // run stopped; if it is no giant it is parsed whole.
        // (A giant recorded further than a window from its start goes on as one.)
        let resumed = partial.filter(|&p| same_version && p < pos);
        let mut giant = resumed.is_some_and(|p| pos - p >= WINDOW_BYTES);
        let mut giant_start = match resumed {
            Some(p) if giant => p,
            _ => pos,
        };
        // Where the line being read began.
        let mut line_start = match resumed {
            Some(p) if !giant => p,
            _ => pos,
        };
        // Where a line recorded in pieces began, until the record that ends it is appended.
        let mut first_line_start: Option<u64> = None;
        // A giant's bytes read as they go by, its long strings shortened so that it can be
        // parsed (`json::ShortStrings`); what a stopped run recorded of it read again first.
        let mut giant_short: Option<ShortStrings> = None;
        if giant {
            let mut r = ShortStrings::new(LINE_SIZE_BYTES_MAX);
            let mut at = giant_start;
            while at < pos {
                bytes.read_into(at, (pos - at).min(WINDOW_BYTES), window_buf)?;
                if window_buf.is_empty() {
                    break;
                }
                r.feed(without_bom(at, window_buf));
                at += window_buf.len() as u64;
            }
            giant_short = (at >= pos).then_some(r);
        }
        let mut read_any = false;
        while pos < len {
            let window_start = if giant { pos } else { line_start };
            bytes.read_into(window_start, (len - window_start).min(WINDOW_BYTES), window_buf)?;
            let window: &[u8] = window_buf;
            if window.is_empty() {
                break;
            }
            let window_end = window_start + window.len() as u64;
            let mut cursor_in_window = (pos - window_start) as usize;
            // The batch's raw bytes are `window[raw_from..cursor_in_window]`.
            let mut raw_from = cursor_in_window;
            let mut batch = Batch::new(pos, line_no);
            let mut ls = 0usize; // start of the current line within the window
            let mut complete_any = false;
            while let Some(nl) = memchr::memchr(b'\n', &window[cursor_in_window..]) {
                let end = cursor_in_window + nl + 1;
                let line_at = window_start + ls as u64;
                if (giant || end - 1 - ls > SPLIT_LINE_BYTES_MIN) && end - raw_from > BATCH_RAW_BYTES_MAX {
                    // A long line, or the rest of a giant: the lines before it recorded, then
                    // its bytes but its last chunk in records that end no line (as a giant's
                    // are); the last chunk, in a record of its own, closes it below. (A giant's
                    // rest in one record could be more than a record stores: the file was
                    // stuck there for good.)
                    let began = if giant { giant_start } else { line_at };
                    if ls > raw_from {
                        pos = line_at;
                        let raw = &window[raw_from..ls];
                        head = extend_head(head, raw);
                        let done = std::mem::replace(&mut batch, Batch::new(pos, line_no));
                        self.append_lines(cursors, file, &mut cur, &mut state, &mut first_line_start, done, raw, &head, run)?;
                        raw_from = ls;
                    }
                    let last = end - BATCH_RAW_BYTES_MAX;
                    let mut at = raw_from;
                    while at < last {
                        let to = (at + BATCH_RAW_BYTES_MAX).min(last);
                        let chunk = &window[at..to];
                        head = extend_head(head, chunk);
                        let b = Batch::new(window_start + at as u64, line_no);
                        self.append_batch(cursors, file, &mut cur, &mut state, Some(began), b, chunk, &head, run)?;
                        at = to;
                    }
                    read_any = true;
                    pos = window_start + last as u64;
                    raw_from = last;
                    batch = Batch::new(pos, line_no);
                }
                // The record that ends a line it holds only the end of says where it began.
                if line_at < window_start + raw_from as u64 {
                    first_line_start = Some(line_at);
                }
                let line = &window[ls..end - 1];
                // A byte order mark before a file's first line is no part of it.
                let line = if line_at == 0 { line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line) } else { line };
                let parsed = if giant {
                    // Parsed as read, its long strings shortened; kept whole in the raw bytes. Cut
                    // when even so it is more than a line may be.
                    giant = false;
                    first_line_start = Some(giant_start);
                    match giant_short.take().and_then(|mut r| {
                        r.feed(line);
                        r.finish()
                    }) {
                        Some(short) => Some(parse_line(adapter, file, &mut state, &short, line_no)),
                        None => {
                            batch.cut += 1;
                            None
                        }
                    }
                } else if line.len() > LINE_SIZE_BYTES_MAX {
                    batch.cut += 1;
                    None
                } else {
                    Some(parse_line(adapter, file, &mut state, line, line_no))
                };
                match parsed {
                    Some(Line::Parsed(p)) => {
                        if let Some(from) = p.abandons_from.filter(|&from| from < line_no) {
                            batch.abandoned.push(Abandoned { from, to: line_no, session: p.events.first().map(|e| e.session.clone()) });
                        }
                        let sessions: Vec<_> = p.sessions.into_iter().map(crate::text::bounded).collect();
                        let events = events_bytes(&p.events);
                        batch.events_bytes += sessions_bytes(&sessions);
                        batch.sessions.extend(sessions);
                        // Events more than a record holds: the line is counted as cut.
                        if events > LINE_EVENTS_BYTES_MAX {
                            batch.cut += 1;
                        } else {
                            batch.events_bytes += events;
                            batch.events.extend(p.events);
                        }
                    }
                    Some(Line::Malformed(why)) => {
                        batch.malformed += 1;
                        if batch.malformed_at.len() < MALFORMED_SAID_MAX {
                            batch.malformed_at.push((line_no, why));
                        }
                    }
                    None => {}
                }
                batch.lines += 1;
                line_no += 1;
                cursor_in_window = end;
                ls = end;
                complete_any = true;
                if end - raw_from >= BATCH_RAW_BYTES_MAX || batch.events_bytes >= BATCH_EVENTS_BYTES_MAX {
                    pos = window_start + end as u64;
                    let raw = &window[raw_from..end];
                    head = extend_head(head, raw);
                    let done = std::mem::replace(&mut batch, Batch::new(pos, line_no));
                    self.append_lines(cursors, file, &mut cur, &mut state, &mut first_line_start, done, raw, &head, run)?;
                    raw_from = end;
                    read_any = true;
                }
            }
            if cursor_in_window > raw_from {
                pos = window_start + cursor_in_window as u64;
                let raw = &window[raw_from..cursor_in_window];
                head = extend_head(head, raw);
                self.append_lines(cursors, file, &mut cur, &mut state, &mut first_line_start, batch, raw, &head, run)?;
                read_any = true;
            }
            let rest = &window[cursor_in_window..];
            if window_end >= len {
                // A last line without its newline waits for the agent to finish it.
                self.mirrors.write_tail(&cur.mirror, rest).map_err(FileError::Io)?;
                break;
            }
            let runs_past_window = !complete_any && window.len() as u64 >= WINDOW_BYTES;
            if giant || runs_past_window {
                // The current line does not fit in a window. Record its bytes so far (raw only)
                // once its newline is in the file; until then it waits like any last line.
                if !giant {
                    if !bytes.newline_after(window_end, len, WINDOW_BYTES)? {
                        // Read a window at a time: it may be hundreds of megabytes.
                        // Written at an earlier run, of this length, and the log not changed
                        // since it was (its time of change not after the tail's): kept as it is,
                        // not written again at every run (gigabytes, for a line a crash left
                        // unfinished).
                        let changed = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
                        if let Some(tail) = self.mirrors.tail_meta(&cur.mirror)
                            && tail.len() == len - pos
                            && let (Some(log), Ok(written)) = (changed(&file.path), tail.modified())
                            && log <= written
                        {
                            break;
                        }
                        let mut at = pos;
                        let mut next = || -> io::Result<Option<Vec<u8>>> {
                            let n = (len - at).min(WINDOW_BYTES);
                            if n == 0 {
                                return Ok(None);
                            }
                            at += n;
                            bytes.read(at - n, n).map(Some)
                        };
                        self.mirrors.write_tail_each(&cur.mirror, &mut next).map_err(FileError::Io)?;
                        break;
                    }
                    giant = true;
                    giant_start = window_start + ls as u64;
                    let mut r = ShortStrings::new(LINE_SIZE_BYTES_MAX);
                    r.feed(without_bom(giant_start, &window[ls..]));
                    giant_short = Some(r);
                } else if let Some(r) = &mut giant_short {
                    r.feed(rest);
                }
                for chunk in rest.chunks(BATCH_RAW_BYTES_MAX) {
                    let b = Batch::new(pos, line_no);
                    pos += chunk.len() as u64;
                    head = extend_head(head, chunk);
                    self.append_batch(cursors, file, &mut cur, &mut state, Some(giant_start), b, chunk, &head, run)?;
                }
                read_any = true;
                continue;
            }
            line_start = window_start + ls as u64;
            pos = pos.max(line_start);
        }
        progress(Progress::Read { bytes: pos.saturating_sub(start_pos) });
        if read_any {
            run.files_read += 1;
        }
        Ok(())
    }

    /// [`Ingester::append_batch`] of a batch that ends its last line: when its first line began
    /// before its bytes (a line recorded in pieces), its state says where
    /// ([`FIRST_LINE_START_KEY`]), in this record only.
    #[allow(clippy::too_many_arguments)]
    fn append_lines(
        &self,
        cursors: &mut Cursors,
        file: &LogFile,
        cur: &mut FileCursor,
        state: &mut State,
        first_line_start: &mut Option<u64>,
        batch: Batch,
        raw: &[u8],
        head: &[u8],
        run: &mut SourceRun,
    ) -> Result<(), FileError> {
        if let Some(at) = first_line_start.take() {
            state.insert(FIRST_LINE_START_KEY.into(), Value::from(at));
            if state.get(PARTIAL_LINE_KEY).and_then(Value::as_u64) == Some(at) {
                if let Some(first) = state.get(PARTIAL_LINE_RECORD_KEY).cloned() {
                    state.insert(FIRST_LINE_RECORD_KEY.into(), first);
                }
            }
        }
        let appended = self.append_batch(cursors, file, cur, state, None, batch, raw, head, run);
        state.remove(FIRST_LINE_START_KEY);
        state.remove(FIRST_LINE_RECORD_KEY);
        appended
    }

    /// The files to read, in groups each read in order by one worker: a file on its own, or
    /// the logs of one folder of an agent whose new logs may copy the others' lines, oldest
    /// first: those read before (by `modified`, the time of change the run found), then those
    /// new to the cursors, when there are several, by the times their first and last dated
    /// lines say ([`dated_ends`]; a resumed session's copy of the lines it resumes begins at
    /// the same time and most often ends later; an end with no dated line within reach at its
    /// time of change, which a home copied without its times gives in any order). Groups are in
    /// the order their first file was found.
    fn read_groups(&self, work: Vec<(usize, LogFile)>, modified: &HashMap<PathBuf, std::time::SystemTime>, cursors: &Cursors) -> Vec<Vec<(usize, LogFile)>> {
        let mut groups: Vec<Vec<(usize, LogFile)>> = Vec::new();
        let mut folders: HashMap<(usize, PathBuf), usize> = HashMap::new();
        for (ai, file) in work {
            match file.path.parent().filter(|_| self.adapters[ai].logs_copy_their_folder()) {
                Some(folder) => {
                    let g = *folders.entry((ai, folder.to_path_buf())).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    });
                    groups[g].push((ai, file));
                }
                None => groups.push(vec![(ai, file)]),
            }
        }
        for g in groups.iter_mut().filter(|g| g.len() > 1) {
            // Only a log none of which was read yet can begin with copies of others' lines:
            // those read before come first, by time of change (their ends are not read), and a
            // folder's only new log comes after them, its ends not read either.
            let is_new = |f: &LogFile| !cursors.files.contains_key(&(f.source.id().to_owned(), f.key.clone()));
            let several_new = g.iter().filter(|(_, f)| is_new(f)).nth(1).is_some();
            g.sort_by_cached_key(|(ai, f)| {
                let changed = modified.get(&f.path).and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                let new = is_new(f);
                let (first, last) = if new && several_new && f.format == FileFormat::Lines { dated_ends(&*self.adapters[*ai], &f.path) } else { (None, None) };
                // An end with no dated line within reach stands at the time of change.
                let or_changed = |t: Option<i64>| t.or(changed).unwrap_or(i64::MAX);
                (new, or_changed(first), or_changed(last), changed, f.path.clone())
            });
        }
        groups
    }

    /// Appends one batch as a record, then updates cursors and the mirror.
    #[allow(clippy::too_many_arguments)]
    fn append_batch(
        &self,
        cursors: &mut Cursors,
        file: &LogFile,
        cur: &mut FileCursor,
        state: &mut State,
        partial_line_start: Option<u64>,
        batch: Batch,
        raw: &[u8],
        head: &[u8],
        run: &mut SourceRun,
    ) -> Result<(), FileError> {
        // Whether this record holds a line's first piece, or a later one.
        let held = partial_line_start.is_some() && state.get(PARTIAL_LINE_KEY).and_then(Value::as_u64) == partial_line_start;
        let first_piece = !held && partial_line_start == Some(batch.byte_start);
        // The CRC of the bytes recorded of a line in pieces, carried from piece to piece (none
        // when a store from before it began the line).
        let crc = partial_line_start.and_then(|_| match state.get(PARTIAL_LINE_CRC_KEY).and_then(Value::as_u64) {
            Some(c) if held => u32::try_from(c).ok(),
            _ if first_piece => Some(0),
            _ => None,
        });
        // Where the line's first piece is: set once that record is appended (below); a run
        // that stopped right after it finds it as the file's last record.
        if held && !state.contains_key(PARTIAL_LINE_RECORD_KEY) {
            if let Some(&last) = cur.offsets.last() {
                state.insert(PARTIAL_LINE_RECORD_KEY.into(), Value::from(last));
            }
        }
        if !held {
            state.remove(PARTIAL_LINE_RECORD_KEY);
        }
        carry_crc(state, PARTIAL_LINE_CRC_KEY, crc, raw);
        match partial_line_start {
            Some(p) => state.insert(PARTIAL_LINE_KEY.into(), Value::from(p)),
            None => state.remove(PARTIAL_LINE_KEY),
        };
        // For an agent that rewrites its logs, the CRC of every byte of the version read so far
        // (none when a store from before it read the beginning).
        let rewritten = self.adapters.iter().any(|a| a.source() == file.source && a.logs_rewritten());
        let read_crc = match state.get(READ_CRC_KEY).and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()) {
            _ if !rewritten => None,
            Some(c) if batch.byte_start == cur.byte_end && batch.byte_start > 0 => Some(c),
            _ if batch.byte_start == 0 => Some(0),
            _ => None,
        };
        carry_crc(state, READ_CRC_KEY, read_crc, raw);
        // Events their agent abandoned, named in this record: those a rewrite left (this
        // version's first record), and those of the turns its lines say were.
        let mut superseded: Vec<(u64, String)> = match state.remove(ABANDONED_KEY) {
            Some(Value::Array(pairs)) => pairs.iter().filter_map(|v| Some((v.get(0)?.as_u64()?, v.get(1)?.as_str()?.to_owned()))).collect(),
            _ => Vec::new(),
        };
        for a in &batch.abandoned {
            // Of the session whose line says so (a resumed log's copies of another session's
            // lines are that session's), and not brought again by a later line of the batch
            // (a line written twice).
            let again: HashSet<&str> = batch.events.iter().filter(|e| e.line >= a.to).map(|e| e.id.as_str()).collect();
            let of = |e: &Event| from_line_of(a, e);
            match self.events_of_lines(cur, &batch.events, a.from, &of) {
                Ok(ids) => superseded.extend(ids.into_iter().filter(|(_, id)| !again.contains(id.as_str()))),
                Err(e) => run.problems.push(format!("{}: the turns its lines say were abandoned could not be found ({e}); they stay current", file.shown())),
            }
        }
        let superseded = bound_superseded(superseded, file, run);
        let batch_start = batch.byte_start;
        let state_json = serde_json::to_vec(state).unwrap_or_default();
        if state_json.len() > STATE_BYTES_MAX {
            return Err(FileError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("what its agent's reader keeps of it grew to {} bytes (more than {STATE_BYTES_MAX}) at byte {batch_start}", state_json.len()),
            )));
        }
        let raw_zstd = compress_raw(raw).map_err(FileError::Io)?;
        let byte_end = batch.byte_start + raw.len() as u64;
        let malformed_at = batch.malformed_at;
        let body = Body::Ingested(Ingested {
            source: file.source.id().to_owned(),
            path: file.key.clone(),
            mirror: cur.mirror.clone(),
            file_version: cur.version,
            byte_start: batch.byte_start,
            byte_end,
            line_start: batch.line_start,
            line_end: batch.line_start + batch.lines,
            prefix_hash: u64::from(crc32fast::hash(&head[..head.len().min(PREFIX_HASH_BYTES as usize)])),
            raw_zstd,
            events: batch.events,
            sessions: batch.sessions,
            malformed_lines: batch.malformed,
            cut_lines: batch.cut,
            state: state_json,
            superseded,
        });
        // A body that does not encode (more than a record's payload may decode to) is this
        // file's problem, as a record the journal refuses is.
        let record = NewRecord::new(&body).map_err(|e| FileError::Io(io::Error::new(io::ErrorKind::InvalidData, format!("a record of its lines at byte {batch_start} could not be made: {e}"))))?;
        // A record the journal refuses before writing anything (more than a record stores:
        // the bounds above keep ingest's records below it) is this file's problem, said and
        // tried again at the next run, not every file's.
        let offsets = self.journal.append(vec![record]).map_err(|e| match e {
            origin_engine::Error::Invalid(why) => FileError::Io(io::Error::new(io::ErrorKind::InvalidData, format!("a record of its lines at byte {} was refused: {why}", batch_start))),
            other => FileError::Journal(other),
        })?;
        let mirror_at = cur.mirror_size;
        cursors.apply(offsets.start, &body);
        if first_piece {
            state.insert(PARTIAL_LINE_RECORD_KEY.into(), Value::from(offsets.start));
        }
        let Body::Ingested(b) = &body else { unreachable!("built as Ingested above") };
        if let Some(c) = cursors.files.get(&(file.source.id().to_owned(), file.key.clone())) {
            *cur = c.clone();
        }
        run.lines += b.line_end - b.line_start;
        run.events += b.events.len() as u64;
        run.malformed += b.malformed_lines;
        for (line, why) in malformed_at {
            if run.malformed_at.len() < MALFORMED_SAID_MAX {
                run.malformed_at.push(format!("{} line {line}: {why}", file.shown()));
            }
        }
        run.cut += b.cut_lines;
        run.bytes += b.byte_end - b.byte_start;
        self.mirrors.write_at(&b.mirror, mirror_at, &b.raw_zstd).map_err(FileError::Mirror)?;
        Ok(())
    }

    /// An export made again, as growth of what was recorded of its version (its mirror): those
    /// bytes, then the export's lines whose rows are new or changed since, in the export's
    /// order (see [`Adapter::export_row`]). A row updated in place (a ZCode tool finishing, a
    /// text streamed) made the whole export a new version, recorded again with a mirror of its
    /// own: a 2 MB session took 34 MB of journal after ten runs with a part finished between
    /// each. The export as made when nothing of the version is recorded, a run stopped inside
    /// one of its lines, what was recorded is more than [`EXPORT_HISTORY_TIMES`] the export
    /// (and 1 MiB: each run reads all of it), cannot be read back as recorded (its mirror's
    /// bytes against `_read_crc`; said in `problems`), or the whole would be more than a log
    /// may decode to: a changed export then begins a new version, as before.
    fn export_as_growth(&self, adapter: &dyn Adapter, file: &LogFile, cur: &FileCursor, state: &State, export: Vec<u8>, problems: &mut Vec<String>) -> Vec<u8> {
        let recorded = cur.byte_end as usize;
        if cur.version == 0 || recorded == 0 || state.contains_key(PARTIAL_LINE_KEY) || export.last().is_some_and(|&b| b != b'\n') {
            return export;
        }
        let read_crc = state.get(READ_CRC_KEY).and_then(Value::as_u64);
        // Grown by appending, or the same: read on as it is.
        if export.len() >= recorded && read_crc == Some(u64::from(crc32fast::hash(&export[..recorded]))) {
            return export;
        }
        if cur.byte_end > EXPORT_HISTORY_TIMES * export.len() as u64 + EXPORT_HISTORY_SLACK_BYTES {
            return export;
        }
        let unread = |why: String| format!("the mirror {} {why}: the session's export was recorded whole again, as a new version", self.mirrors.display_path(&cur.mirror).display());
        if let Err(e) = self.repair_mirror(cur) {
            problems.push(unread(format!("could not be made whole ({e})")));
            return export;
        }
        let mut history = match self.mirrors.read_head(&cur.mirror, cur.byte_end) {
            Ok(h) => h,
            Err(e) => {
                problems.push(unread(format!("could not be read ({e})")));
                return export;
            }
        };
        if history.len() != recorded || history.last() != Some(&b'\n') || read_crc.is_some_and(|c| c != u64::from(crc32fast::hash(&history))) {
            problems.push(unread(format!("does not give back the {recorded} bytes recorded")));
            return export;
        }
        let grown = {
            // Per row, its last line recorded; the lines of no row.
            let mut rows: HashMap<String, &[u8]> = HashMap::new();
            let mut loose: HashSet<&[u8]> = HashSet::new();
            for line in history.split_inclusive(|&b| b == b'\n') {
                match adapter.export_row(line) {
                    Some(row) => {
                        rows.insert(row, line);
                    }
                    None => {
                        loose.insert(line);
                    }
                }
            }
            let mut grown = Vec::new();
            // The times the events of the lines appended take: a later line (in the export's
            // order) with an event at one of them is appended again too, so that events of one
            // millisecond stay in the export's order (they are ordered by their records).
            let mut tied: HashSet<i64> = HashSet::new();
            for line in export.split_inclusive(|&b| b == b'\n') {
                let kept = match adapter.export_row(line) {
                    Some(row) => rows.get(&row) == Some(&line),
                    None => loose.contains(line),
                };
                let times = if !kept || !tied.is_empty() { adapter.export_times(file, line) } else { Vec::new() };
                if !kept || times.iter().any(|t| tied.contains(t)) {
                    grown.extend_from_slice(line);
                    tied.extend(times);
                }
            }
            grown
        };
        if (history.len() + grown.len()) as u64 > DECODED_LOG_SIZE_BYTES_MAX {
            return export;
        }
        history.extend_from_slice(&grown);
        history
    }

    /// The complete lines of `now` (a file's new version, its first `KEPT_COMPARE_BYTES_MAX`)
    /// that are lines of the version `old` read, byte for byte, as its mirror holds them
    /// (within its first `KEPT_COMPARE_BYTES_MAX` too), as `(new line, old line)`, both rising: each new line taken,
    /// in order, with the first line after the last one taken that is the same (a rewind
    /// keeps the lines before the turn rewound; a compaction or a repair keeps later lines,
    /// moved up). When the mirror (or the new version) cannot be read, none: the new version's
    /// lines then all take ids of their own, which duplicates what was kept but never gives an
    /// old id to other words.
    fn kept_lines(&self, old: &FileCursor, now: &[u8]) -> Vec<(u64, u64)> {
        let Ok(before) = self.mirrors.read_head(&old.mirror, KEPT_COMPARE_BYTES_MAX) else { return Vec::new() };
        let complete = |b: &[u8]| -> Vec<(u64, usize, usize)> {
            let mut out = Vec::new();
            let mut at = 0;
            while let Some(nl) = memchr::memchr(b'\n', &b[at..]) {
                out.push((xxhash_rust::xxh3::xxh3_64(&b[at..=at + nl]), at, at + nl + 1));
                at += nl + 1;
            }
            out
        };
        let (was, is) = (complete(&before), complete(&now));
        // Where each old line is, by its hash, in order.
        let mut by_hash: HashMap<u64, std::collections::VecDeque<usize>> = HashMap::new();
        for (k, &(h, _, _)) in was.iter().enumerate() {
            by_hash.entry(h).or_default().push_back(k);
        }
        let mut pairs = Vec::new();
        let mut next_old = 0;
        for (i, &(h, from, to)) in is.iter().enumerate() {
            let Some(q) = by_hash.get_mut(&h) else { continue };
            while q.front().is_some_and(|&k| k < next_old) {
                q.pop_front();
            }
            let line = &now[from..to];
            if let Some(pos) = q.iter().position(|&k| &before[was[k].1..was[k].2] == line) {
                let k = q[pos];
                q.drain(..=pos);
                pairs.push((i as u64 + 1, k as u64 + 1));
                next_old = k + 1;
            }
        }
        pairs
    }

    /// The ids of the events of the version `old` read that a rewrite into `new` (its first
    /// bytes, of `new_len`) abandoned,
    /// by its agent's word ([`Adapter::rewrite_abandons_tail`], asked with the new version's
    /// lines it did not keep): a rewind keeps the lines before the turn it rewinds, byte for
    /// byte, so those of the old version's lines after the leading lines kept in place that
    /// no new line kept (a line sent again after the rewind keeps its id, and is current).
    /// None when no leading line was kept (nothing tells a rewind from a new beginning), or
    /// when either version is longer than the lines compared (a line kept past them would be
    /// taken for abandoned).
    fn abandoned_events(&self, adapter: &dyn Adapter, file: &LogFile, old: &FileCursor, new: &[u8], new_len: u64, kept: &[(u64, u64)]) -> Result<Vec<(u64, String)>, FileError> {
        let prefix = kept.iter().zip(1u64..).take_while(|&(&(n, o), i)| n == i && o == i).count() as u64;
        if prefix == 0 || old.byte_end > KEPT_COMPARE_BYTES_MAX || new_len > KEPT_COMPARE_BYTES_MAX {
            return Ok(Vec::new());
        }
        let kept_new: HashSet<u64> = kept.iter().map(|&(n, _)| n).collect();
        // Its lines not kept, the last one unfinished too.
        let added: Vec<&[u8]> = new.split_inclusive(|&b| b == b'\n').zip(1u64..).filter(|(_, n)| !kept_new.contains(n)).map(|(l, _)| l).collect();
        if !adapter.rewrite_abandons_tail(file, &added) {
            return Ok(Vec::new());
        }
        let kept_old: HashSet<u64> = kept.iter().map(|&(_, o)| o).collect();
        self.events_of_lines(old, &[], prefix + 1, &|e| e.line > prefix && !kept_old.contains(&e.line))
    }

    /// The events of the version `cur` reads (those recorded, and `pending`, about to be) that
    /// `within` takes, none before line `first`, as (line, id).
    fn events_of_lines(&self, cur: &FileCursor, pending: &[Event], first: u64, within: &dyn Fn(&Event) -> bool) -> Result<Vec<(u64, String)>, FileError> {
        let mut ids: Vec<(u64, String)> = pending.iter().filter(|e| within(e)).map(|e| (e.line, e.id.clone())).collect();
        // The version's records, latest first, down to the one holding the first line named.
        for &offset in cur.offsets.iter().rev() {
            let recs = self.journal.read_vec(offset, 1).map_err(FileError::Journal)?;
            // The cursors name records the journal holds (as for a mirror's repair): one
            // missing is said, not passed over.
            let Some(r) = recs.iter().find(|r| r.offset == offset) else {
                return Err(FileError::Io(io::Error::other(format!("no record at journal offset {offset}, which its cursor names"))));
            };
            let view = origin_engine::codec::IngestedView::open(r.kind_version, &r.payload, r.offset).map_err(FileError::Journal)?;
            if view.head().line_end <= first {
                break;
            }
            ids.extend(view.events().map_err(FileError::Journal)?.into_iter().filter(|e| within(e)).map(|e| (e.line, e.id)));
        }
        Ok(ids)
    }

    /// Rebuilds a mirror from the journal when it is shorter than its records say (a crash
    /// between the journal append and the mirror write); cuts it when it is longer.
    fn repair_mirror(&self, cur: &FileCursor) -> Result<(), FileError> {
        let have = self.mirrors.size(&cur.mirror);
        if have == cur.mirror_size {
            return Ok(());
        }
        let mut frames = Vec::with_capacity(cur.mirror_size as usize);
        for &offset in &cur.offsets {
            let recs = self.journal.read_vec(offset, 1).map_err(FileError::Journal)?;
            // The cursors name records the journal holds: anything else would rebuild the
            // mirror with frames missing or of another file, so the file is left out instead.
            let Some(r) = recs.first().filter(|r| r.offset == offset) else {
                return Err(FileError::Io(io::Error::other(format!(
                    "its mirror {} cannot be rebuilt: no record at journal offset {offset}",
                    self.mirrors.display_path(&cur.mirror).display()
                ))));
            };
            let view = origin_engine::codec::IngestedView::open(r.kind_version, &r.payload, r.offset).map_err(FileError::Journal)?;
            frames.extend_from_slice(view.raw_zstd());
        }
        self.mirrors.write_at(&cur.mirror, 0, &frames).map_err(FileError::Io)
    }

    /// Imports a native memory file if it changed; returns whether a version was recorded.
    fn import_memory(&self, cursors: &mut Cursors, m: &MemoryFile) -> Result<bool, FileError> {
        let meta = std::fs::metadata(&m.path)?;
        if meta.len() > MEMORY_FILE_SIZE_BYTES_MAX {
            return Err(FileError::Io(io::Error::other(format!("memory file over {MEMORY_FILE_SIZE_BYTES_MAX} bytes"))));
        }
        let mut content = Vec::new();
        crate::bytes::open_regular(&m.path)?.take(MEMORY_FILE_SIZE_BYTES_MAX + 1).read_to_end(&mut content)?;
        if content.len() as u64 > MEMORY_FILE_SIZE_BYTES_MAX {
            return Err(FileError::Io(io::Error::other(format!("memory file over {MEMORY_FILE_SIZE_BYTES_MAX} bytes"))));
        }
        let path = m.path.to_string_lossy().into_owned();
        let prev = cursors.memory.get(&path).cloned().unwrap_or_default();
        if prev.version > 0 && prev.hash == memory_hash(&content) {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(&content).into_owned();
        let source = m.source.id();
        let now = now_unix_ms();
        let version = prev.version + 1;
        let event_id = format!("{source}:memory:{path}#v{version}");
        // The whole file is the event's text (memory files are small), so that replay can
        // split it into the same items.
        let mut event: Event = crate::text::event(event_id.clone(), now, "", m.project.as_deref(), Role::System, EventKind::Memory, String::new(), 1);
        event.text = text.clone();
        event.cwd = m.project.clone();
        let kind = if m.scope == MemoryScope::User { EntryKind::Cognition } else { EntryKind::Knowledge };
        let project = m.project.as_deref().and_then(crate::text::project_of);
        let mut entries = Vec::new();
        let mut keys = Vec::new();
        let items = memory::items(&text);
        let old: Vec<(String, String)> = prev.items.iter().map(|(k, i)| (k.clone(), i.text.clone())).collect();
        let (matches, ended_keys) = memory::match_items(&old, &items);
        for (item, m) in items.iter().zip(&matches) {
            let previous = match m {
                memory::Match::Unchanged(_) => continue,
                memory::Match::Changed(old_key) => prev.items.get(old_key),
                memory::Match::New => None,
            };
            let id = new_entry_id();
            let (root, supersedes) = match previous {
                Some(o) => (o.root.clone(), Some(o.current.clone())),
                None => (id.clone(), None),
            };
            let created = match previous {
                // A new version is dated after the version it supersedes.
                Some(o) => now.max(o.current_created_unix_ms + 1),
                None => now,
            };
            entries.push(EntryVersion {
                id,
                root,
                supersedes,
                kind,
                text: item.text.clone(),
                confidence: 1.0,
                project: project.clone(),
                author: format!("{source}@{}", self.device),
                created_unix_ms: created,
                valid_from_unix_ms: None,
                valid_to_unix_ms: None,
                sources: vec![Citation { event_id: event_id.clone(), quote: None }],
                imported: true,
            });
            keys.push(item.key.clone());
        }
        let ended: Vec<String> = ended_keys.iter().filter_map(|k| prev.items.get(k)).map(|i| i.root.clone()).collect();
        let body = Body::Imported(Imported {
            source: source.to_owned(),
            path,
            scope: m.scope,
            event,
            entries,
            keys,
            ended,
        });
        self.journal.append(vec![NewRecord::new(&body).map_err(FileError::Journal)?]).map_err(FileError::Journal)?;
        // Read back with whatever else the journal holds before it (a correction another
        // process made without the ingest lock): applying this record alone would move the
        // cursors past those, for good once a snapshot holds them.
        cursors.catch_up(&self.journal).map_err(FileError::Journal)?;
        Ok(true)
    }
}

/// Why one file was not (fully) read.
#[derive(Debug)]
enum FileError {
    Io(io::Error),
    /// The file's lines were stored, but its mirror could not be written.
    Mirror(io::Error),
    Journal(origin_engine::Error),
}

/// A failure to make an unchanged log's mirror whole (its lines are stored): said as a
/// problem of the mirror, never the end of the run (a record that cannot be read is named).
fn mirror_problem(e: FileError) -> FileError {
    match e {
        FileError::Io(e) | FileError::Mirror(e) => FileError::Mirror(e),
        FileError::Journal(e) => FileError::Mirror(io::Error::other(format!("its records cannot be read: {e}"))),
    }
}

/// The ids a record names of the events its agent abandoned (`(line, id)`, in any order, ids
/// twice at most once): ascending, at most [`SUPERSEDED_BYTES_MAX`] of them, those of the latest
/// lines (one run of lines up to where the turns were left, the record's own events among
/// them: only it can name them after them); says how many stay current. (The lines are of
/// one version: a rewrite's, of the version before, never meet a line's, of this one, as no
/// agent whose logs are rewritten says so in a line.)
fn bound_superseded(mut found: Vec<(u64, String)>, file: &LogFile, run: &mut SourceRun) -> Vec<String> {
    found.sort_unstable_by(|a, b| b.cmp(a));
    let mut seen = HashSet::new();
    found.retain(|(_, id)| seen.insert(id.clone()));
    let mut total = 0;
    let keep = found
        .iter()
        .take_while(|(_, id)| {
            total += id.len() + 8;
            total <= SUPERSEDED_BYTES_MAX
        })
        .count();
    if keep < found.len() {
        run.problems.push(format!("{}: {} of the events its agent abandoned stay current (more than a record names)", file.shown(), found.len() - keep));
    }
    let mut ids: Vec<String> = found.into_iter().take(keep).map(|(_, id)| id).collect();
    ids.sort_unstable();
    ids
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Io(e) | FileError::Mirror(e) => e.fmt(f),
            FileError::Journal(e) => e.fmt(f),
        }
    }
}

impl From<io::Error> for FileError {
    fn from(e: io::Error) -> Self {
        FileError::Io(e)
    }
}

struct Batch {
    byte_start: u64,
    line_start: u64,
    lines: u64,
    events: Vec<Event>,
    /// What `events` take in a record ([`events_bytes`]).
    events_bytes: usize,
    sessions: Vec<origin_engine::record::SessionChange>,
    malformed: u64,
    /// The first malformed lines (line number in the file's version, why).
    malformed_at: Vec<(u64, String)>,
    cut: u64,
    /// Lines of the file's version whose events their agent abandoned, as its lines say.
    abandoned: Vec<Abandoned>,
}

/// Lines of a file's version whose events their agent abandoned: from [`Parsed::abandons_from`]
/// to the line that said so, of the session of that line's events (any, when it has none).
struct Abandoned {
    from: u64,
    to: u64,
    session: Option<String>,
}

/// Whether event `e` is one of those `a` names.
fn from_line_of(a: &Abandoned, e: &Event) -> bool {
    a.from <= e.line && e.line < a.to && a.session.as_ref().is_none_or(|s| *s == e.session)
}

impl Batch {
    fn new(byte_start: u64, line_start: u64) -> Batch {
        Batch { byte_start, line_start, lines: 0, events: Vec::new(), events_bytes: 0, sessions: Vec::new(), malformed: 0, malformed_at: Vec::new(), cut: 0, abandoned: Vec::new() }
    }
}

/// What session changes take in a record, counted high.
fn sessions_bytes(changes: &[origin_engine::record::SessionChange]) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    changes.iter().map(|c| EVENT_FIXED_BYTES + c.session.len() + opt(&c.project) + opt(&c.title) + opt(&c.first_prompt) + opt(&c.parent)).sum()
}

/// Bytes of a log's beginning, then of its end, read at first by [`dated_ends`]; four times
/// as many at each step while no complete dated line is found, up to [`DATED_SCAN_BYTES_MAX`].
const DATED_SCAN_BYTES: u64 = 64 * 1024;
/// See [`DATED_SCAN_BYTES`]. (A log ending in a prompt with a screenshot of 5 MB, its time on
/// that line, had no dated end at 4 MiB.)
const DATED_SCAN_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// The times (Unix ms) of the first and of the last complete lines of the log at `path` that
/// say when they were written ([`Adapter::line_time`]), each if such a line is within
/// [`DATED_SCAN_BYTES_MAX`] of its end of the file.
fn dated_ends(adapter: &dyn Adapter, path: &Path) -> (Option<i64>, Option<i64>) {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = crate::bytes::open_regular(path) else { return (None, None) };
    let Ok(len) = f.metadata().map(|m| m.len()) else { return (None, None) };
    let mut read = |from: u64, n: u64| -> Option<Vec<u8>> {
        f.seek(SeekFrom::Start(from)).ok()?;
        let mut out = Vec::new();
        (&mut f).take(n).read_to_end(&mut out).ok()?;
        Some(out)
    };
    let time = |line: &[u8]| adapter.line_time(line.strip_suffix(b"\n").unwrap_or(line));
    let mut first = None;
    let mut n = DATED_SCAN_BYTES;
    while let Some(head) = read(0, n.min(len)) {
        // Complete lines only.
        let end = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        first = head[..end].split_inclusive(|&b| b == b'\n').find_map(time);
        if first.is_some() || n >= len || n >= DATED_SCAN_BYTES_MAX {
            break;
        }
        n *= 4;
    }
    let mut last = None;
    let mut n = DATED_SCAN_BYTES;
    while let Some(tail) = read(len.saturating_sub(n), n.min(len)) {
        let from = len.saturating_sub(n);
        // Complete lines only: from the first newline (unless at the file's start) to the last.
        let start = if from == 0 { Some(0) } else { tail.iter().position(|&b| b == b'\n').map(|i| i + 1) };
        let end = tail.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        last = start.filter(|&s| s < end).and_then(|s| tail[s..end].split_inclusive(|&b| b == b'\n').rev().find_map(time));
        if last.is_some() || from == 0 || n >= DATED_SCAN_BYTES_MAX {
            break;
        }
        n *= 4;
    }
    (first, last)
}

/// One complete line parsed; a line whose only fault is a lone surrogate's escape is read with
/// U+FFFD in its place (see `json::without_lone_surrogates`; the mirror keeps it).
fn parse_line(adapter: &dyn Adapter, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
    match adapter.parse_line(file, state, line, line_no) {
        // A blank line (white space only, a `\r` of a line ended `\r\n`) holds nothing, and
        // is nothing malformed: passed over, counted as a line, not said.
        Line::Malformed(_) if line.iter().all(u8::is_ascii_whitespace) => Line::Parsed(Parsed::default()),
        Line::Malformed(why) => match crate::json::without_lone_surrogates(line) {
            Some(fixed) => adapter.parse_line(file, state, &fixed, line_no),
            None => Line::Malformed(why),
        },
        p => p,
    }
}

/// `b`, read from byte `at` of a file, without the byte order mark that may open a file.
fn without_bom(at: u64, b: &[u8]) -> &[u8] {
    if at == 0 { b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b) } else { b }
}

/// The CRC-32 of `bytes[from..to]`, read a window at a time.
fn crc_of(bytes: &Bytes, from: u64, to: u64) -> io::Result<u64> {
    let mut h = crc32fast::Hasher::new();
    let mut at = from;
    while at < to {
        let n = (to - at).min(WINDOW_BYTES);
        h.update(&bytes.read(at, n)?);
        at += n;
    }
    Ok(u64::from(h.finalize()))
}

/// Sets state key `key` to the CRC-32 `crc` carried on over `raw`, or removes it (`None`: the
/// bytes before are not all known to it).
fn carry_crc(state: &mut State, key: &str, crc: Option<u32>, raw: &[u8]) {
    match crc {
        Some(c) => {
            let mut h = crc32fast::Hasher::new_with_initial(c);
            h.update(raw);
            state.insert(key.into(), Value::from(h.finalize()));
        }
        None => {
            state.remove(key);
        }
    }
}

/// A plain file's `[device, inode, time of change in ns]` (see [`FILE_STAT_KEY`]).
fn file_stat(path: &Path) -> Option<Value> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(serde_json::json!([m.dev(), m.ino(), m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec())]))
}

/// What events take in a record, counted high: their strings, and [`EVENT_FIXED_BYTES`] each.
fn events_bytes(events: &[Event]) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    events.iter().map(|e| EVENT_FIXED_BYTES + e.id.len() + e.session.len() + e.text.len() + opt(&e.project) + opt(&e.cwd) + opt(&e.git_branch) + opt(&e.agent_version)).sum()
}

/// `head` (a version's first bytes, as far as they are kept to hash) with `more` after it.
fn extend_head(mut head: Vec<u8>, more: &[u8]) -> Vec<u8> {
    let room = (PREFIX_HASH_BYTES as usize).saturating_sub(head.len());
    head.extend_from_slice(&more[..room.min(more.len())]);
    head
}

fn compress_raw(raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(RAW_ZSTD_LEVEL)?;
    c.include_checksum(true)?;
    c.include_contentsize(true)?;
    c.compress(raw)
}

/// This device's name: `ORIGIN_DEVICE`, else the host name.
pub fn device_name() -> String {
    if let Some(d) = std::env::var("ORIGIN_DEVICE").ok().filter(|d| !d.is_empty()) {
        return d;
    }
    let mut buf = [0u8; 256];
    // SAFETY-free: gethostname through libc writes at most buf.len() bytes.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if let Ok(s) = std::str::from_utf8(&buf[..end]) {
            if !s.is_empty() {
                return s.to_owned();
            }
        }
    }
    "device".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::claude::Claude;

    /// Claude's parsing, over a list of files that includes one that is gone by the time it
    /// is read (vanished between discovery and reading).
    struct Vanishing {
        files: Vec<PathBuf>,
        /// Memory folders that could not be listed, as the adapter words them.
        unlisted: Vec<String>,
    }

    impl Adapter for Vanishing {
        fn source(&self) -> Source {
            Source::ClaudeCode
        }
        fn discover(&self, _homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
            let files = self
                .files
                .iter()
                .map(|p| LogFile {
                    source: Source::ClaudeCode,
                    path: p.clone(),
                    key: p.to_string_lossy().into_owned(),
                    mirror: p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                    format: FileFormat::Lines,
                })
                .collect();
            (files, Vec::new())
        }
        fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
            Claude.parse_line(file, state, line, line_no)
        }
        fn memory_files(&self, _homes: &Homes, _projects: &[Project], problems: &mut Vec<String>) -> Vec<MemoryFile> {
            problems.extend(self.unlisted.iter().cloned());
            Vec::new()
        }
    }

    #[test]
    fn a_file_that_vanishes_before_it_is_read_is_reported_and_the_rest_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("good.jsonl");
        let gone = dir.path().join("gone.jsonl");
        std::fs::write(
            &good,
            "{\"type\":\"user\",\"uuid\":\"v1\",\"sessionId\":\"s\",\"timestamp\":\"2026-10-20T09:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
        )
        .expect("write");
        let journal = Journal::open(dir.path().join("store/journal"), origin_engine::Options::default()).expect("open");
        let ing = Ingester::new(Arc::new(journal), &dir.path().join("store"), Homes::under(dir.path()))
            .with_adapters(vec![Box::new(Vanishing { files: vec![gone.clone(), good.clone()], unlisted: Vec::new() })]);
        let summary = ing.run(None, &mut |_| {}).expect("run");
        let run = &summary.sources["claude-code"];
        assert_eq!(run.events, 1, "the readable file is read");
        assert_eq!(run.problems.len(), 1, "{:?}", run.problems);
        assert!(run.problems[0].contains("gone.jsonl"), "{:?}", run.problems);
    }

    /// Where a moved log was last read is not waited for while a run holds the cursors (a
    /// `sources` call would wait for the whole run): said unknown, at once; once they are let
    /// go, it is told.
    #[test]
    fn where_a_moved_log_was_read_is_not_waited_for_while_a_run_holds_the_cursors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let journal = Journal::open(dir.path().join("store/journal"), origin_engine::Options::default()).expect("open");
        let ing = Arc::new(Ingester::new(Arc::new(journal), &dir.path().join("store"), Homes::under(dir.path())));
        let key = ("codex".to_owned(), "/old/rollout.jsonl".to_owned());
        let state = serde_json::to_vec(&serde_json::json!({ READ_AT_KEY: "/new/rollout.jsonl" })).expect("json");
        ing.caught_up().expect("cursors").files.insert(key.clone(), FileCursor { version: 1, state, ..FileCursor::default() });
        let held = guard(&ing.cursors);
        let (tx, rx) = std::sync::mpsc::channel();
        let asker = Arc::clone(&ing);
        let asked = std::thread::spawn(move || tx.send(asker.read_at(&key.0, &key.1).map_err(|e| e.to_string())).expect("send"));
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)), Ok(Ok(None)), "answered at once, unknown");
        drop(held);
        asked.join().expect("asked");
        assert_eq!(ing.read_at("codex", "/old/rollout.jsonl").map_err(|e| e.to_string()), Ok(Some("/new/rollout.jsonl".to_owned())));
        assert_eq!(ing.read_at("codex", "/other.jsonl").map_err(|e| e.to_string()), Ok(None));
    }

    /// A home below `dir` with an empty ZCode database: its homes, the database's path and a
    /// connection to it.
    fn zcode_home(dir: &Path) -> (Homes, PathBuf, rusqlite::Connection) {
        let homes = Homes::under(dir);
        let db = homes.zcode.join("cli/db/db.sqlite");
        std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
        let conn = rusqlite::Connection::open(&db).expect("db");
        (homes, db, conn)
    }

    /// ZCode's tables (the columns these tests use) with session `id` titled `title` in
    /// `/home/dev/p`, and its message `msg_1`, the assistant's.
    fn zcode_session(conn: &rusqlite::Connection, id: &str, title: &str) {
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);",
        )
        .expect("schema");
        conn.execute("INSERT INTO session VALUES (?1, '/home/dev/p', ?2)", [id, title]).expect("session");
        conn.execute("INSERT INTO message VALUES ('msg_1', ?1, 10, '{\"role\":\"assistant\"}')", [id]).expect("message");
    }

    /// Part `id` of `msg_1` in `session`, created and updated at `at`, holding `data` (put in
    /// place of one with its id).
    fn zcode_part(conn: &rusqlite::Connection, session: &str, id: &str, at: i64, data: &serde_json::Value) {
        conn.execute("INSERT OR REPLACE INTO part VALUES (?1, 'msg_1', ?2, ?3, ?3, ?4)", rusqlite::params![id, session, at, data.to_string()]).expect("part");
    }

    /// ZCode's adapter, noting the sessions it exports; with a database, writing to it at
    /// every export (ZCode at work while a run reads).
    struct CountingExports(Arc<Mutex<Vec<String>>>, Option<PathBuf>);

    impl Adapter for CountingExports {
        fn source(&self) -> Source {
            Source::Zcode
        }
        fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
            crate::adapter::zcode::Zcode.discover(homes)
        }
        fn export_stamp(&self, file: &LogFile) -> Option<String> {
            crate::adapter::zcode::Zcode.export_stamp(file)
        }
        fn logs_rewritten(&self) -> bool {
            crate::adapter::zcode::Zcode.logs_rewritten()
        }
        fn export(&self, file: &LogFile) -> io::Result<Vec<u8>> {
            guard(&self.0).push(file.key.rsplit('/').next().unwrap_or_default().to_owned());
            if let Some(db) = &self.1 {
                let c = rusqlite::Connection::open(db).map_err(io::Error::other)?;
                c.execute_batch("INSERT INTO usage VALUES (1);").map_err(io::Error::other)?;
            }
            crate::adapter::zcode::Zcode.export(file)
        }
        fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
            crate::adapter::zcode::Zcode.parse_line(file, state, line, line_no)
        }
        fn memory_files(&self, _homes: &Homes, _projects: &[Project], _problems: &mut Vec<String>) -> Vec<MemoryFile> {
            Vec::new()
        }
    }

    /// A ZCode session is exported again only when what its export is made of changed (every
    /// session was exported at every run: seconds for a large database, and every search
    /// ingests first): not after a run with nothing new, in this process or the next, nor
    /// when only a message's other fields moved (its tokens); a new part, a changed part or a
    /// new title exports that session alone, and what changed is read.
    #[test]
    fn a_zcode_session_is_exported_again_only_when_its_rows_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, _, conn) = zcode_home(dir.path());
        conn.execute_batch(
            r#"CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT, parent_id TEXT, version TEXT, task_type TEXT);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
             INSERT INTO session VALUES ('sess_a', '/home/dev/p', 'A', NULL, '1.0', 'interactive');
             INSERT INTO session VALUES ('sess_b', '/home/dev/q', 'B', NULL, '1.0', 'interactive');
             INSERT INTO message VALUES ('msg_a', 'sess_a', 10, 10, '{"role":"user","tokens":1}');
             INSERT INTO part VALUES ('prt_a1', 'msg_a', 'sess_a', 11, 11, '{"type":"text","text":"first in a"}');
             INSERT INTO message VALUES ('msg_b', 'sess_b', 20, 20, '{"role":"user"}');
             INSERT INTO part VALUES ('prt_b1', 'msg_b', 'sess_b', 21, 21, '{"type":"text","text":"first in b"}');"#,
        )
        .expect("schema");
        let store = dir.path().join("store");
        let exported = Arc::new(Mutex::new(Vec::new()));
        let ingester = || {
            let journal = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
            Ingester::new(Arc::new(journal), &store, homes.clone()).with_adapters(vec![Box::new(CountingExports(exported.clone(), None))])
        };
        // The sessions a run exported, and the events it read.
        let run = |ing: &Ingester| {
            let summary = ing.run(None, &mut |_| {}).expect("run");
            let mut sessions = std::mem::take(&mut *guard(&exported));
            sessions.sort();
            (sessions, summary.sources.get("zcode").map_or(0, |r| r.events))
        };
        let ing = ingester();
        assert_eq!(run(&ing), (vec!["sess_a".to_owned(), "sess_b".to_owned()], 2));
        assert_eq!(run(&ing), (vec![], 0), "nothing new");
        drop(ing);
        let ing = ingester();
        assert_eq!(run(&ing), (vec![], 0), "nothing new, in the next process");
        conn.execute_batch(r#"UPDATE message SET data = '{"role":"user","tokens":2}', time_updated = 12 WHERE id = 'msg_a';"#).expect("update");
        assert_eq!(run(&ing), (vec![], 0), "a message's tokens are no part of the export");
        conn.execute_batch(r#"INSERT INTO part VALUES ('prt_a2', 'msg_a', 'sess_a', 13, 13, '{"type":"text","text":"second in a"}');"#).expect("insert");
        assert_eq!(run(&ing), (vec!["sess_a".to_owned()], 1), "a new part");
        assert_eq!(run(&ing), (vec![], 0));
        conn.execute_batch(r#"UPDATE part SET data = '{"type":"text","text":"first in b, edited"}' WHERE id = 'prt_b1';"#).expect("update");
        assert_eq!(run(&ing).0, vec!["sess_b".to_owned()], "a part changed in place, its time unchanged");
        conn.execute_batch("UPDATE session SET title = 'A, renamed' WHERE id = 'sess_a';").expect("update");
        assert_eq!(run(&ing).0, vec!["sess_a".to_owned()], "a new title");
        // What the stamp reads and the export does not show (a message whose data is not
        // JSON: its role is none either way): exported once, the stamp then kept without lines.
        conn.execute_batch("UPDATE message SET data = 'not json, 1' WHERE id = 'msg_b';").expect("update");
        assert_eq!(run(&ing).0, vec!["sess_b".to_owned()]);
        conn.execute_batch("UPDATE message SET data = 'not json, 2' WHERE id = 'msg_b';").expect("update");
        assert_eq!(run(&ing), (vec!["sess_b".to_owned()], 0), "the same export");
        assert_eq!(run(&ing), (vec![], 0));
        drop(ing);
        let ing = ingester();
        assert_eq!(run(&ing), (vec![], 0), "nothing new, in the next process");
        let texts = texts(&store);
        assert!(texts.iter().any(|t| t == "first in b, edited") && texts.iter().any(|t| t == "second in a"), "{texts:?}");
    }

    /// Every event in the store's journal, as (id, text), in order.
    fn events(store: &Path) -> Vec<(String, String)> {
        let j = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        let mut out = Vec::new();
        j.read_from(0, |r| {
            if let Ok((_, Body::Ingested(b))) = r.decode() {
                out.extend(b.events.into_iter().map(|e| (e.id, e.text)));
            }
            Ok(std::ops::ControlFlow::Continue(()))
        })
        .expect("read");
        out
    }

    /// Every event's text in the store's journal, in order.
    fn texts(store: &Path) -> Vec<String> {
        events(store).into_iter().map(|(_, t)| t).collect()
    }

    /// A log its agent rewrites that comes back longer, its first 4 KiB the same and a newline
    /// before the old end, is a new version when any byte read of it changed (it was read on
    /// from the old end as grown, and what changed before it never seen): a ZCode part updated
    /// in place (the tool finished) as a new part is added; a Grok transcript rewound and
    /// written again (a new file renamed over it) before the next run.
    #[test]
    fn a_rewritten_log_that_grew_past_a_newline_is_read_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, _, conn) = zcode_home(dir.path());
        let store = dir.path().join("store");
        let long = "a long first answer ".repeat(300);
        zcode_session(&conn, "sess_z", "Z");
        conn.execute_batch(&format!(
            r#"INSERT INTO part VALUES ('prt_1', 'msg_1', 'sess_z', 11, 11, '{{"type":"text","text":"{long}"}}');
             INSERT INTO part VALUES ('prt_2', 'msg_1', 'sess_z', 12, 12, '{{"type":"text","text":"build status: AAAA"}}');"#
        ))
        .expect("schema");
        // Grok: a system prompt of 5 KB opens every version of the transcript.
        let session = "01a20000-0000-7000-8000-000000000001";
        let folder = dir.path().join(".grok/sessions/%2Fhome%2Fdev%2Fshop").join(session);
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::write(folder.join("summary.json"), format!(r#"{{"info":{{"id":"{session}","cwd":"/home/dev/shop"}}}}"#)).expect("write");
        let line = |v: serde_json::Value| format!("{v}\n");
        let user = |text: &str, i: u64| line(serde_json::json!({"type": "user", "content": [{"type": "text", "text": text}], "prompt_index": i}));
        let system = line(serde_json::json!({"type": "system", "content": "Follow the rules carefully. ".repeat(180)}));
        let kept = format!("{system}{}{}", user("first question about the cart", 0), line(serde_json::json!({"type": "assistant", "content": "The cart is fine."})));
        let v1 = format!("{kept}{}{}", user("ABANDONED_PROMPT rename everything", 1), line(serde_json::json!({"type": "assistant", "content": "Renaming now"})));
        let chat = folder.join("chat_history.jsonl");
        std::fs::write(&chat, &v1).expect("write");
        let ingester = || Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, homes.clone());
        ingester().run(None, &mut |_| {}).expect("run");
        // The ZCode part finished in place, its length the same; a part added.
        conn.execute_batch(
            r#"UPDATE part SET data = '{"type":"text","text":"build status: DONE"}', time_updated = 12 WHERE id = 'prt_2';
             INSERT INTO part VALUES ('prt_3', 'msg_1', 'sess_z', 13, 13, '{"type":"text","text":"next step"}');"#,
        )
        .expect("update");
        // Grok rewound, a new prompt ending where the old version ended, then one more.
        let rewound = user("REWOUND_PROMPT fix the tax rounding", 1);
        let filler = line(serde_json::json!({"type": "assistant", "content": ""}));
        let pad = v1.len() - kept.len() - rewound.len() - filler.len();
        let answer = line(serde_json::json!({"type": "assistant", "content": "x".repeat(pad)}));
        let v2 = format!("{kept}{rewound}{answer}{}", user("LATER_PROMPT now add a test", 2));
        assert_eq!((v2.as_bytes()[..4096] == v1.as_bytes()[..4096], v2.as_bytes()[v1.len() - 1]), (true, b'\n'), "the case: grown past a newline");
        std::fs::write(folder.join("chat_history.jsonl.tmp"), &v2).expect("write");
        std::fs::rename(folder.join("chat_history.jsonl.tmp"), &chat).expect("rename");
        ingester().run(None, &mut |_| {}).expect("run");
        let texts = texts(&store);
        for want in ["build status: DONE", "next step", "REWOUND_PROMPT fix the tax rounding", "LATER_PROMPT now add a test"] {
            assert!(texts.iter().any(|t| t == want), "{want:?} read: {:?}", texts.iter().map(|t| t.chars().take(40).collect::<String>()).collect::<Vec<_>>());
        }
    }

    /// A Grok transcript read by a build before `_read_crc` (its state without it) and then
    /// rewritten past its first 4 KiB, a newline before the old end: the CRC of what was read
    /// is taken from the mirror, and the rewrite seen.
    #[test]
    fn a_version_read_before_the_read_crc_is_checked_against_its_mirror() {
        for mirror_lost in [false, true] {
            read_before_the_read_crc(mirror_lost);
        }
    }

    /// See [`a_version_read_before_the_read_crc_is_checked_against_its_mirror`]; with
    /// `mirror_lost`, its mirror's `.zst` is gone too (rebuilt from the records first).
    fn read_before_the_read_crc(mirror_lost: bool) {
        let dir = tempfile::tempdir().expect("tempdir");
        let homes = Homes::under(dir.path());
        let store = dir.path().join("store");
        let session = "01a20000-0000-7000-8000-000000000002";
        let folder = dir.path().join(".grok/sessions/%2Fhome%2Fdev%2Fshop").join(session);
        std::fs::create_dir_all(&folder).expect("mkdir");
        let line = |v: serde_json::Value| format!("{v}\n");
        let user = |text: &str, i: u64| line(serde_json::json!({"type": "user", "content": [{"type": "text", "text": text}], "prompt_index": i}));
        let system = line(serde_json::json!({"type": "system", "content": "Follow the rules carefully. ".repeat(180)}));
        let v1 = format!("{system}{}{}", user("OLD_PROMPT aaaa", 0), user("second", 1));
        let chat = folder.join("chat_history.jsonl");
        std::fs::write(&chat, &v1).expect("write");
        let snap = store.join("cursors.snap");
        let journal = || Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open"));
        let ing = Ingester::new(journal(), &store, homes.clone());
        ing.run(None, &mut |_| {}).expect("run");
        // The state as a build before `_read_crc` left it, kept in the cursors' snapshot.
        let mut cursors = ing.cursors().expect("cursors");
        drop(ing);
        for c in cursors.files.values_mut() {
            let mut st: State = serde_json::from_slice(&c.state).expect("state");
            assert!(st.remove(READ_CRC_KEY).is_some(), "this build keeps it");
            c.state = serde_json::to_vec(&st).expect("json");
        }
        crate::snapshot::save(&snap, &cursors, &journal()).expect("save");
        // Rewritten in place (same length), then grown.
        let v2 = format!("{system}{}{}{}", user("NEW_PROMPT bbbb", 0), user("second", 1), user("third", 2));
        assert_eq!((v2.as_bytes()[..4096] == v1.as_bytes()[..4096], v2.as_bytes()[v1.len() - 1]), (true, b'\n'));
        std::fs::write(&chat, &v2).expect("write");
        if mirror_lost {
            let mirror = &cursors.files.values().next().expect("a cursor").mirror;
            std::fs::remove_file(store.join("raw").join(format!("{mirror}.zst"))).expect("the mirror removed");
        }
        let ing = Ingester::new(journal(), &store, homes.clone()).with_snapshot(snap);
        ing.run(None, &mut |_| {}).expect("run");
        assert!(matches!(ing.snapshot_use(), Some(crate::snapshot::SnapshotUse::Loaded { .. })), "{:?}", ing.snapshot_use());
        let texts = texts(&store);
        assert!(texts.iter().any(|t| t == "NEW_PROMPT bbbb"), "{:?}", texts.iter().map(|t| t.chars().take(30).collect::<String>()).collect::<Vec<_>>());
    }

    /// The times a Claude log's first and last complete dated lines say: past lines without a
    /// time and long lines at either end (read in growing steps), not from a last line still
    /// without its newline; none for a log without dated lines; each end on its own.
    #[test]
    fn dated_ends_are_the_first_and_last_complete_dated_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dated = |t: &str, pad: usize| format!("{{\"type\":\"user\",\"timestamp\":\"{t}\",\"message\":{{\"content\":\"{}\"}}}}\n", "x".repeat(pad));
        let undated = |pad: usize| format!("{{\"type\":\"summary\",\"summary\":\"{}\"}}\n", "y".repeat(pad));
        let ms = |t: &str| crate::text::parse_time(t).expect("time");
        let log = dir.path().join("a.jsonl");
        let write = |body: String| std::fs::write(&log, body).expect("write");
        let ends = || dated_ends(&crate::adapter::claude::Claude, &log);
        write(format!("{}{}{}{}{}", undated(100), dated("2026-10-20T09:00:00Z", 10), dated("2026-10-20T09:30:00Z", 10), dated("2026-10-21T10:00:00Z", 10), undated(50)));
        assert_eq!(ends(), (Some(ms("2026-10-20T09:00:00Z")), Some(ms("2026-10-21T10:00:00Z"))));
        // Long lines at both ends: found past the first step; a last line without its newline
        // is no line yet.
        let unfinished = dated("2026-10-22T00:00:00Z", 10);
        write(format!("{}{}{}{}{}", undated(200_000), dated("2026-10-20T09:00:00Z", 300_000), dated("2026-10-21T10:00:00Z", 10), undated(900_000), unfinished.trim_end()));
        assert_eq!(ends(), (Some(ms("2026-10-20T09:00:00Z")), Some(ms("2026-10-21T10:00:00Z"))));
        write(format!("{}{}", undated(10), undated(10)));
        assert_eq!(ends(), (None, None));
        // A dated line past a long undated one (a screenshot's 5 MB): found past 4 MiB.
        write(format!("{}{}", dated("2026-10-20T09:00:00Z", 10), undated(5_000_000)));
        assert_eq!(ends(), (Some(ms("2026-10-20T09:00:00Z")), Some(ms("2026-10-20T09:00:00Z"))));
        // Each end on its own: nothing dated within the bytes looked at from one end.
        write(format!("{}{}", undated(70_000_000), dated("2026-10-20T09:00:00Z", 10)));
        assert_eq!(ends(), (None, Some(ms("2026-10-20T09:00:00Z"))));
        write(format!("{}{}", dated("2026-10-20T09:00:00Z", 10), undated(70_000_000)));
        assert_eq!(ends(), (Some(ms("2026-10-20T09:00:00Z")), None));
    }

    /// A Claude Code session resumed in a new file that copies its lines, both new to the store
    /// in one run: the original is read first, so its events stay in its session, when the
    /// resumed file is the older by time of change (a home copied without its times), when the
    /// original ends with a dated line of 5 MB (a screenshot: its time found past 4 MiB), and
    /// when the original's last 64 MiB hold no dated line (that end stands at its time of
    /// change, its first line's time still counting). Both ends undated in a copied home: the
    /// time of change decides, as before (the limit of what its lines say).
    #[test]
    fn a_folders_new_claude_logs_are_read_oldest_by_what_their_lines_say() {
        let line = |uuid: &str, session: &str, t: &str, text: &str| {
            format!("{}\n", serde_json::json!({"type": "user", "uuid": uuid, "sessionId": session, "timestamp": t, "message": {"role": "user", "content": text}}))
        };
        let undated = format!("{}\n", serde_json::json!({"type": "file-history-snapshot", "messageId": "m", "snapshot": {"note": "z".repeat(70_000_000)}}));
        let screenshot = line("u-2b", "bbbb-original", "2026-10-20T09:00:06Z", &"QUJD".repeat(1_300_000));
        // (the home copied without its times, how the original ends, the session the copied
        // lines stay in)
        let cases = [(true, "", "bbbb-original"), (true, screenshot.as_str(), "bbbb-original"), (false, undated.as_str(), "bbbb-original"), (true, "both undated", "aaaa-resumed")];
        for (copied, ending, want) in cases {
            let dir = tempfile::tempdir().expect("tempdir");
            let folder = dir.path().join(".claude/projects/-home-dev-p");
            std::fs::create_dir_all(&folder).expect("mkdir");
            let (s1, s2) = ("bbbb-original", "aaaa-resumed");
            let lines = format!("{}{}", line("u-1", s1, "2026-10-20T09:00:00Z", "first words"), line("u-2", s1, "2026-10-20T09:00:05Z", "second words"));
            let original = if ending == "both undated" { format!("{undated}{lines}{undated}") } else { format!("{lines}{ending}") };
            let resumed = format!("{}{}{}", line("u-1", s2, "2026-10-20T09:00:00Z", "first words"), line("u-2", s2, "2026-10-20T09:00:05Z", "second words"), line("u-3", s2, "2026-10-21T10:00:00Z", "later words"));
            std::fs::write(folder.join(format!("{s1}.jsonl")), &original).expect("write");
            std::fs::write(folder.join(format!("{s2}.jsonl")), &resumed).expect("write");
            // Times of change as written (a minute after each file's last line), or as a copy
            // made now gives them (the resumed file copied first).
            let at = |t: &str| std::time::UNIX_EPOCH + std::time::Duration::from_millis(crate::text::parse_time(t).expect("time") as u64);
            let now = std::time::SystemTime::now();
            let (m1, m2) = if copied { (now, now - std::time::Duration::from_secs(60)) } else { (at("2026-10-20T09:01:05Z"), at("2026-10-21T10:01:00Z")) };
            for (session, m) in [(s1, m1), (s2, m2)] {
                std::fs::File::options().write(true).open(folder.join(format!("{session}.jsonl"))).expect("open").set_modified(m).expect("mtime");
            }
            let store = dir.path().join("store");
            let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, Homes::under(dir.path()));
            ing.run(None, &mut |_| {}).expect("run");
            // The session of each event's first record.
            let j = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
            let mut first_in: HashMap<String, String> = HashMap::new();
            j.read_from(0, |r| {
                if let Ok((_, Body::Ingested(b))) = r.decode() {
                    for e in b.events {
                        first_in.entry(e.id).or_insert(e.session);
                    }
                }
                Ok(std::ops::ControlFlow::Continue(()))
            })
            .expect("read");
            assert_eq!(first_in.get("claude-code:u-1").map(String::as_str), Some(want), "copied: {copied}, ending of {} bytes", ending.len());
        }
    }

    /// Claude Code's adapter, counting the lines asked for their time.
    struct CountingTimes(Arc<std::sync::atomic::AtomicUsize>);

    impl Adapter for CountingTimes {
        fn source(&self) -> Source {
            Source::ClaudeCode
        }
        fn logs_copy_their_folder(&self) -> bool {
            true
        }
        fn line_time(&self, line: &[u8]) -> Option<i64> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Claude.line_time(line)
        }
        fn discover(&self, homes: &Homes) -> (Vec<LogFile>, Vec<String>) {
            Claude.discover(homes)
        }
        fn parse_line(&self, file: &LogFile, state: &mut State, line: &[u8], line_no: u64) -> Line {
            Claude.parse_line(file, state, line, line_no)
        }
        fn memory_files(&self, _homes: &Homes, _projects: &[Project], _problems: &mut Vec<String>) -> Vec<MemoryFile> {
            Vec::new()
        }
    }

    /// Only logs new to the store are ordered by what their lines say (only they can begin
    /// with copies), and only when a folder has more than one: a run with nothing new, with a
    /// log read before grown, or with one new log, reads no line of any for its time (every
    /// run read both ends of every log of a folder).
    #[test]
    fn only_new_logs_are_read_for_their_times() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join(".claude/projects/-home-dev-p");
        std::fs::create_dir_all(&folder).expect("mkdir");
        let line = |uuid: &str, session: &str| format!("{}\n", serde_json::json!({"type": "user", "uuid": uuid, "sessionId": session, "timestamp": "2026-10-20T09:00:00Z", "message": {"role": "user", "content": "words"}}));
        for s in ["s1", "s2"] {
            std::fs::write(folder.join(format!("{s}.jsonl")), line(&format!("{s}-1"), s)).expect("write");
        }
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let store = dir.path().join("store");
        let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, Homes::under(dir.path()))
            .with_adapters(vec![Box::new(CountingTimes(asked.clone()))]);
        let run = |grow: Option<&str>| {
            if let Some(s) = grow {
                let mut f = std::fs::OpenOptions::new().append(true).open(folder.join(format!("{s}.jsonl"))).expect("open");
                std::io::Write::write_all(&mut f, line(&format!("{s}-x"), s).as_bytes()).expect("append");
            }
            ing.run(None, &mut |_| {}).expect("run");
            asked.swap(0, std::sync::atomic::Ordering::Relaxed)
        };
        assert!(run(None) >= 4, "both new: each read at both ends");
        assert_eq!(run(None), 0, "nothing new");
        assert_eq!(run(Some("s1")), 0, "a log read before, grown");
        std::fs::write(folder.join("s3.jsonl"), line("s3-1", "s3")).expect("write");
        assert_eq!(run(None), 0, "a folder's one new log: after those read before, unread");
        for s in ["s4", "s5"] {
            std::fs::write(folder.join(format!("{s}.jsonl")), line(&format!("{s}-1"), s)).expect("write");
        }
        assert_eq!(run(None), 4, "two new logs, each at both ends");
    }

    /// Every ingested record of the store's journal: (file version, raw bytes it covers).
    fn recorded(store: &Path) -> Vec<(u32, u64)> {
        let j = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        let mut out = Vec::new();
        j.read_from(0, |r| {
            if let Ok((_, Body::Ingested(b))) = r.decode() {
                out.push((b.file_version, b.byte_end - b.byte_start));
            }
            Ok(std::ops::ControlFlow::Continue(()))
        })
        .expect("read");
        out
    }

    /// A ZCode part updated in place (a tool finishing, a text streamed) appends its line to
    /// what was recorded of the session: the export is not recorded again as a new version
    /// (ten runs, each with a tool finished and another started, took a 2 MB session to 34 MB
    /// of journal). Each part's events are its last line's, a part changed back to an earlier
    /// line included; the mirror holds what was recorded, each row's lines in the order they
    /// were read; a lost mirror is rebuilt from the records and read on the same way.
    #[test]
    fn a_zcode_part_updated_in_place_appends_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, _, conn) = zcode_home(dir.path());
        zcode_session(&conn, "sess_u", "U");
        let part = |id: &str, at: i64, data: serde_json::Value| zcode_part(&conn, "sess_u", id, at, &data);
        // 40 answers of 10 KB each, all different.
        for i in 0..40 {
            let text: String = (0..1_000).map(|w| format!("w{}x{i} ", w * 7919 % 10_007)).collect();
            part(&format!("prt_text_{i:02}"), 100 + i, serde_json::json!({"type": "text", "text": text}));
        }
        let tool = |i: i64, status: &str| {
            let output = if status == "completed" { format!("OUTPUT_{i} done") } else { String::new() };
            serde_json::json!({"type": "tool", "tool": "bash", "state": {"status": status, "input": {"command": format!("make step{i}")}, "output": output}})
        };
        part("prt_tool_00", 200, tool(0, "running"));
        let store = dir.path().join("store");
        let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, homes.clone());
        ing.run(None, &mut |_| {}).expect("run");
        let first: u64 = recorded(&store).iter().map(|r| r.1).sum();
        assert!(first > 300_000, "{first}");
        let mirror = || {
            let c = ing.cursors().expect("cursors");
            let cur = c.files.values().next().expect("a cursor").clone();
            (cur.mirror.clone(), Mirrors::new(store.join("raw")).read(&cur.mirror).expect("mirror"))
        };
        let (name, _) = mirror();
        for i in 1..=10 {
            // The tool started last finishes; another starts.
            part(&format!("prt_tool_{:02}", i - 1), 200 + i - 1, tool(i - 1, "completed"));
            part(&format!("prt_tool_{i:02}"), 200 + i, tool(i, "running"));
            if i == 5 {
                // Lost: rebuilt from the records before it is read on.
                std::fs::remove_file(store.join("raw").join(format!("{name}.zst"))).expect("the mirror removed");
            }
            ing.run(None, &mut |_| {}).expect("run");
        }
        let records = recorded(&store);
        assert!(records.iter().all(|r| r.0 == 1), "no new version: {records:?}");
        let later: u64 = records.iter().map(|r| r.1).sum::<u64>() - first;
        // Two tool lines of about 300 bytes each per run.
        assert!(later < 10_000, "{later} bytes recorded after the first run (the export is {first})");
        // A text streamed on, then back to its first line (its time unchanged).
        let original: String = conn.query_row("SELECT data FROM part WHERE id = 'prt_text_07'", [], |r| r.get(0)).expect("data");
        conn.execute("UPDATE part SET data = ?1 WHERE id = 'prt_text_07'", [serde_json::json!({"type": "text", "text": "STREAMED for a while"}).to_string()]).expect("update");
        ing.run(None, &mut |_| {}).expect("run");
        conn.execute("UPDATE part SET data = ?1 WHERE id = 'prt_text_07'", [&original]).expect("update");
        ing.run(None, &mut |_| {}).expect("run");
        // Each event's last record holds its part's last line.
        let last: HashMap<String, String> = events(&store).into_iter().collect();
        for i in 0..10 {
            assert_eq!(last.get(&format!("zcode:prt_tool_{i:02}:result")).map(String::as_str), Some(format!("OUTPUT_{i} done").as_str()));
        }
        assert!(!last.contains_key("zcode:prt_tool_10:result"), "still running");
        assert_eq!(last.get("zcode:prt_text_07").map(|t| &t[..8]), Some("w0x7 w79"), "changed back");
        assert_eq!(last.len(), 40 + 11 + 10, "{:?}", last.keys().collect::<Vec<_>>());
        // The mirror: the first export, then each changed row's line as read.
        let (_, bytes) = mirror();
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), 41 + 10 + 10 + 2, "41 rows, 10 finished, 10 started, one text twice");
        let export = crate::adapter::zcode::Zcode.export(&LogFile { source: Source::Zcode, path: dir.path().join(".zcode/cli/db/db.sqlite"), key: format!("{}#session/sess_u", dir.path().join(".zcode/cli/db/db.sqlite").display()), mirror: String::new(), format: FileFormat::Export }).expect("export");
        for line in export.split_inclusive(|&b| b == b'\n') {
            let row = crate::adapter::zcode::Zcode.export_row(line).expect("a row");
            let recorded = lines.iter().rev().find(|l| crate::adapter::zcode::Zcode.export_row(l).as_ref() == Some(&row)).expect("recorded");
            assert_eq!(recorded, &line, "each row's last line recorded is its line now");
        }
    }

    /// Parts of one millisecond, some updated in place: their events' last records are in the
    /// export's order (events of one millisecond are ordered by their records: the updated part
    /// came after the sibling that did not change, an order that depended on when ingest ran).
    #[test]
    fn zcode_events_of_one_millisecond_keep_the_exports_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, _, conn) = zcode_home(dir.path());
        zcode_session(&conn, "sess_t", "T");
        let put = |id: &str, at: i64, data: serde_json::Value| zcode_part(&conn, "sess_t", id, at, &data);
        let tool = |status: &str| serde_json::json!({"type": "tool", "tool": "bash", "state": {"status": status, "input": {"command": "make"}, "output": "built", "time": {"start": 50, "end": 70}}});
        put("prt_0", 40, serde_json::json!({"type": "text", "text": "before"}));
        put("prt_a1", 50, serde_json::json!({"type": "text", "text": "a1 streaming"}));
        put("prt_a2", 50, serde_json::json!({"type": "text", "text": "a2"}));
        put("prt_a3", 50, tool("running"));
        put("prt_b", 60, serde_json::json!({"type": "text", "text": "b"}));
        put("prt_c", 70, serde_json::json!({"type": "text", "text": "c, at the tool's end"}));
        let store = dir.path().join("store");
        let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, homes.clone());
        ing.run(None, &mut |_| {}).expect("run");
        put("prt_a1", 50, serde_json::json!({"type": "text", "text": "a1 streamed"}));
        put("prt_a3", 50, tool("completed"));
        ing.run(None, &mut |_| {}).expect("run");
        // Where each event's last record put it.
        let j = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        let mut at: HashMap<String, (u64, usize)> = HashMap::new();
        j.read_from(0, |r| {
            if let Ok((_, Body::Ingested(b))) = r.decode() {
                for (i, e) in b.events.into_iter().enumerate() {
                    at.insert(e.id, (r.offset, i));
                }
            }
            Ok(std::ops::ControlFlow::Continue(()))
        })
        .expect("read");
        let order = ["zcode:prt_a1", "zcode:prt_a2", "zcode:prt_a3:use"];
        assert!(order.windows(2).all(|w| at[w[0]] < at[w[1]]), "{order:?} at {:?}", order.map(|id| at[id]));
        // The tool's result is dated 70, as `prt_c` is, and the export puts the tool (created
        // at 50) before `prt_c`: so the result is before it.
        assert!(at["zcode:prt_a3:result"] < at["zcode:prt_c"], "{:?} {:?}", at["zcode:prt_a3:result"], at["zcode:prt_c"]);
        // A part at another time is not recorded again.
        let first_records = at["zcode:prt_0"].0.min(at["zcode:prt_b"].0);
        assert!(at["zcode:prt_0"].0 == first_records && at["zcode:prt_b"].0 == first_records, "{at:?}");
    }

    /// What is recorded of a ZCode session read as growth stays within a few times its export
    /// (every run that finds it changed reads all of it): a part of 237 KB rewritten at every
    /// run starts a new version, the export whole, once the recorded bytes pass 4 times the
    /// export and 1 MiB. A mirror that does not give back what was recorded (damaged in place)
    /// is said, and the export recorded whole as a new version.
    #[test]
    fn a_zcode_sessions_recorded_growth_is_bounded_and_a_damaged_mirror_is_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, db, conn) = zcode_home(dir.path());
        zcode_session(&conn, "sess_b", "B");
        conn.execute_batch(r#"INSERT INTO part VALUES ('prt_small', 'msg_1', 'sess_b', 11, 11, '{"type":"text","text":"a small part"}');"#).expect("part");
        let streamed = |n: usize| {
            let text: String = (0..30_000).map(|w| format!("s{}r{n} ", w * 31 % 997)).collect();
            conn.execute("INSERT OR REPLACE INTO part VALUES ('prt_big', 'msg_1', 'sess_b', 12, 12, ?1)", [serde_json::json!({"type": "text", "text": text}).to_string()]).expect("part");
        };
        streamed(0);
        let store = dir.path().join("store");
        let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, homes.clone());
        let file = LogFile { source: Source::Zcode, path: db.clone(), key: format!("{}#session/sess_b", db.display()), mirror: String::new(), format: FileFormat::Export };
        let export_len = || crate::adapter::zcode::Zcode.export(&file).expect("export").len() as u64;
        let cursor = || ing.cursors().expect("cursors").files.values().next().expect("a cursor").clone();
        ing.run(None, &mut |_| {}).expect("run");
        let mut versions = Vec::new();
        for n in 1..=16 {
            streamed(n);
            let run = ing.run(None, &mut |_| {}).expect("run");
            assert!(run.sources["zcode"].problems.is_empty(), "{:?}", run.sources["zcode"].problems);
            let c = cursor();
            let bound = EXPORT_HISTORY_TIMES * export_len() + EXPORT_HISTORY_SLACK_BYTES;
            assert!(c.byte_end <= bound + export_len(), "run {n}: {} bytes recorded, the export {}", c.byte_end, export_len());
            versions.push(c.version);
        }
        assert!(export_len() > 200_000, "{}", export_len());
        assert!(versions.windows(2).any(|w| w[1] == w[0] + 1) && versions.windows(2).filter(|w| w[1] == w[0]).count() >= 10, "mostly growth, a new version at the bound: {versions:?}");
        // The mirror's bytes damaged in place (its size the same).
        let c = cursor();
        let zst = store.join("raw").join(format!("{}.zst", c.mirror));
        let mut bytes = std::fs::read(&zst).expect("mirror");
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x55;
        std::fs::write(&zst, &bytes).expect("write");
        streamed(99);
        let run = ing.run(None, &mut |_| {}).expect("run");
        let problems = &run.sources["zcode"].problems;
        assert!(problems.len() == 1 && problems[0].contains("recorded whole again") && problems[0].contains(&c.mirror), "{problems:?}");
        assert_eq!(cursor().version, c.version + 1);
        let last: HashMap<String, String> = events(&store).into_iter().collect();
        assert!(last["zcode:prt_big"].starts_with("s0r99 s31r99"), "{}", &last["zcode:prt_big"][..40]);
        assert_eq!(last["zcode:prt_small"], "a small part");
    }

    /// A ZCode tool whose output is larger than ingest parses a line (32 MiB): its call and
    /// its output's beginning and end are read (the export keeps a string's first and last
    /// 512 KiB); the line was cut, and the tool call with it.
    #[test]
    fn a_zcode_tool_with_an_output_over_what_a_line_may_hold_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, _, conn) = zcode_home(dir.path());
        zcode_session(&conn, "sess_big", "T");
        let output = format!("HEADMARK {}TAILMARK", "log line é 😀\n".repeat(2_400_000));
        assert!(output.len() > crate::limits::LINE_SIZE_BYTES_MAX);
        // Six strings of control characters, 1.2 MB each, 7.2 MB each written in JSON.
        let binary: String = "\u{1}\u{2}".repeat(600_000);
        let data = serde_json::json!({"type": "tool", "tool": "bash", "callID": "c1", "state": {"status": "completed", "input": {"command": "cat build.log"}, "output": output, "metadata": {"a": binary, "b": binary, "c": binary, "d": binary, "e": binary, "f": binary}}});
        conn.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'sess_big', 11, 11, ?1)", [data.to_string()]).expect("part");
        let store = dir.path().join("store");
        let journal = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        let summary = Ingester::new(Arc::new(journal), &store, homes.clone()).run(None, &mut |_| {}).expect("run");
        assert_eq!((summary.sources["zcode"].cut, summary.sources["zcode"].malformed), (0, 0), "{summary:?}");
        let events: HashMap<String, String> = events(&store).into_iter().collect();
        assert!(events.get("zcode:prt_1:use").is_some_and(|t| t.contains("cat build.log")), "{:?}", events.keys().collect::<Vec<_>>());
        let result = events.get("zcode:prt_1:result").expect("the output");
        assert!(result.starts_with("HEADMARK log line é 😀") && result.ends_with("TAILMARK"), "{}…{}", &result[..40], &result[result.len() - 40..]);
    }

    /// A Grok transcript rewritten to the same length (a compaction's summary as long as the
    /// last, renamed over it) is read again: its inode and time of change moved, so every byte
    /// read of it is checked. A file only touched is checked once and its stat recorded (one
    /// record without lines); one left alone is not read again.
    #[test]
    fn a_grok_transcript_rewritten_to_the_same_length_is_read_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let homes = Homes::under(dir.path());
        let store = dir.path().join("store");
        let folder = dir.path().join(".grok/sessions/%2Fhome%2Fdev%2Fshop/01a20000-0000-7000-8000-000000000003");
        std::fs::create_dir_all(&folder).expect("mkdir");
        let line = |v: serde_json::Value| format!("{v}\n");
        let system = line(serde_json::json!({"type": "system", "content": "Follow the rules carefully. ".repeat(180)}));
        let summary = |text: &str| line(serde_json::json!({"type": "assistant", "content": text}));
        let chat = folder.join("chat_history.jsonl");
        let v1 = format!("{system}{}", summary("SUMMARYONE of the work so far"));
        let v2 = format!("{system}{}", summary("SUMMARYTWO of the work so far"));
        assert_eq!(v1.len(), v2.len());
        std::fs::write(&chat, &v1).expect("write");
        let ing = Ingester::new(Arc::new(Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open")), &store, homes.clone());
        let records = || {
            let mut n = 0;
            Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open").read_from(0, |_| {
                n += 1;
                Ok(std::ops::ControlFlow::Continue(()))
            })
            .expect("read");
            n
        };
        ing.run(None, &mut |_| {}).expect("run");
        std::fs::write(folder.join("chat_history.jsonl.tmp"), &v2).expect("write");
        std::fs::rename(folder.join("chat_history.jsonl.tmp"), &chat).expect("rename");
        ing.run(None, &mut |_| {}).expect("run");
        assert!(texts(&store).iter().any(|t| t == "SUMMARYTWO of the work so far"), "{:?}", texts(&store));
        let before = records();
        ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(records(), before, "left alone: nothing recorded");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options().write(true).open(&chat).expect("open").set_modified(later).expect("touch");
        ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(records(), before + 1, "touched: its stat recorded once");
        ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(records(), before + 1);
        assert_eq!(texts(&store).iter().filter(|t| t.starts_with("SUMMARY")).count(), 2, "each summary once");
    }

    /// The stamps of a ZCode database are taken once a run, at discovery: a database written
    /// to while the run reads (ZCode at work) was hashed whole again for every session.
    #[test]
    fn zcode_stamps_are_taken_once_a_run_while_the_database_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (homes, db, conn) = zcode_home(dir.path());
        conn.execute_batch("CREATE TABLE usage (n INTEGER); CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT); CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT); CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);").expect("schema");
        for s in 0..6 {
            conn.execute_batch(&format!(
                r#"INSERT INTO session VALUES ('sess_{s}', '/home/dev/p', 'T');
                 INSERT INTO message VALUES ('msg_{s}', 'sess_{s}', 10, '{{"role":"user"}}');
                 INSERT INTO part VALUES ('prt_{s}', 'msg_{s}', 'sess_{s}', 11, 11, '{{"type":"text","text":"question {s}"}}');"#
            ))
            .expect("rows");
        }
        let store = dir.path().join("store");
        let exported = Arc::new(Mutex::new(Vec::new()));
        let journal = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        let ing = Ingester::new(Arc::new(journal), &store, homes.clone()).with_adapters(vec![Box::new(CountingExports(exported.clone(), Some(db.clone())))]);
        let passes = || crate::adapter::zcode::STAMP_PASSES.load(std::sync::atomic::Ordering::Relaxed);
        let before = passes();
        let summary = ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(summary.sources["zcode"].events, 6);
        assert_eq!((guard(&exported).len(), passes() - before), (6, 1), "six sessions exported, the database written at each; one pass");
        guard(&exported).clear();
        let before = passes();
        ing.run(None, &mut |_| {}).expect("run");
        assert_eq!((guard(&exported).len(), passes() - before), (0, 1), "nothing new to export; the writes of the last run looked at once");
        let before = passes();
        ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(passes() - before, 0, "the database as at the last run: no pass");
    }

    /// A Cursor transcript id with both a legacy `.txt` and a JSONL transcript: each keeps its
    /// events (the two gave the same ids, `cursor:<id>:<line>`, to other words, and whichever
    /// was read last took them).
    #[test]
    fn a_cursor_transcript_in_both_formats_keeps_both() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join(".cursor/projects/home-dev-x/agent-transcripts");
        std::fs::create_dir_all(t.join("t1")).expect("mkdir");
        std::fs::write(t.join("t1.txt"), "user:\n<user_query>\nLEGACYQUESTION about the parser\n</user_query>\n\nassistant:\nLEGACYANSWER it was the lexer\n").expect("write");
        let json = |role: &str, text: &str| serde_json::json!({"role": role, "message": {"content": [{"type": "text", "text": text}]}}).to_string();
        std::fs::write(t.join("t1/t1.jsonl"), format!("{}\n{}\n", json("user", "<user_query>\nNEWQUESTION about the cache\n</user_query>"), json("assistant", "NEWANSWER evict it"))).expect("write");
        let store = dir.path().join("store");
        let journal = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
        Ingester::new(Arc::new(journal), &store, Homes::under(dir.path())).run(None, &mut |_| {}).expect("run");
        let ids: HashMap<String, String> = events(&store).into_iter().collect();
        let mut texts: Vec<&str> = ids.values().map(String::as_str).collect();
        texts.sort();
        assert_eq!(texts, ["LEGACYANSWER it was the lexer", "LEGACYQUESTION about the parser", "NEWANSWER evict it", "NEWQUESTION about the cache"], "{ids:?}");
    }

    /// A Cursor legacy `.txt` rewritten: its blocks are named by their first line, a header
    /// that repeats, so no line keeps an id across the rewrite (its headers matched the old
    /// ones, and the new turns took the old turns' ids and words).
    #[test]
    fn a_rewritten_cursor_legacy_transcript_gives_no_old_id_to_new_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().join(".cursor/projects/home-dev-x/agent-transcripts");
        std::fs::create_dir_all(&t).expect("mkdir");
        let store = dir.path().join("store");
        let run = || {
            let journal = Journal::open(store.join("journal"), origin_engine::Options::default()).expect("open");
            Ingester::new(Arc::new(journal), &store, Homes::under(dir.path())).run(None, &mut |_| {}).expect("run");
        };
        std::fs::write(t.join("t1.txt"), "user:\nOLDQUESTION one\n\nassistant:\nOLDANSWER one\n\nuser:\nOLDQUESTION two\n\nassistant:\nsomething\n").expect("write");
        run();
        std::fs::write(t.join("t1.txt"), "user:\nNEWQUESTION\n\nassistant:\nNEWANSWER\n\nuser:\nsomething else\n\nassistant:\nmore\n\nuser:\nlast\n").expect("write");
        run();
        // The last text each id was given, as the store keeps it.
        let ids: HashMap<String, String> = events(&store).into_iter().collect();
        let texts: std::collections::BTreeSet<&str> = ids.values().map(String::as_str).collect();
        for old in ["OLDQUESTION one", "OLDANSWER one", "OLDQUESTION two", "something"] {
            assert!(texts.contains(old), "{old:?} kept: {ids:?}");
        }
        assert!(texts.contains("NEWQUESTION") && texts.contains("NEWANSWER"), "{ids:?}");
    }

    /// Memory folders an adapter could not list are the run's problems, beside its logs'.
    #[test]
    fn memory_folders_that_cannot_be_listed_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let journal = Journal::open(dir.path().join("store/journal"), origin_engine::Options::default()).expect("open");
        let unlisted = "cannot list /home/dev/.claude/rules: Permission denied (os error 13)".to_owned();
        let ing = Ingester::new(Arc::new(journal), &dir.path().join("store"), Homes::under(dir.path()))
            .with_adapters(vec![Box::new(Vanishing { files: Vec::new(), unlisted: vec![unlisted.clone()] })]);
        let summary = ing.run(None, &mut |_| {}).expect("run");
        assert_eq!(summary.sources["claude-code"].problems, vec![unlisted]);
    }
}

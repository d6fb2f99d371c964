//! The text index of a store, as a projection of its journal: every searchable event and
//! every entry version, fed record by record, kept on disk with the journal offset it
//! reflects, and shared by every process that has the store open.
//!
//! - **What is indexed.** Events of kinds [`is_searchable`] (messages, tool calls, tool
//!   results) from `ingested` records; every entry version of `remembered`, `corrected` and
//!   `imported` records. A document's key is the event or version id, its locator the record
//!   offset and the event's index in it, so a search hit says where it came from; whether it
//!   may be shown (hidden, replaced, superseded, expired) is the caller's question to the
//!   state ([`crate::State::doc_is_listed`]).
//! - **On disk.** `dir` holds the index ([`Index`]) and a file naming the journal (store id,
//!   epoch) it reflects. The index's mark is the journal offset its segments cover; on open,
//!   what follows is fed again into memory. An index of another journal, ahead of this one, of
//!   an older format, or damaged is deleted and rebuilt: it is a cache.
//! - **Entries apart.** Entry versions are few next to events, and a search of entries alone
//!   must not walk the events' postings: they are held in an index of their own, in memory,
//!   with their own cursor in the journal. A process seeds it from the state
//!   ([`Catalog::seed_entries`]) instead of reading the journal from the start.
//! - **Many processes.** Any may read the directory; the one holding `dir/lock` writes it (a
//!   commit, a merge, a rebuild). A process that sees the manifest move (another committed)
//!   drops its in-memory documents and feeds the journal again from the new mark.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use origin_engine::record::{Body, EntryVersion, Event, EventKind, RecordKind};
use origin_engine::segment::StoreId;
use origin_engine::Journal;

use crate::State;
use crate::ahead::{ReadRecord, Runs, read_records, searchable_texts};
use crate::index::folder::Folder;
use crate::index::{merge, write_commit, Candidate, CommitJob, WrittenCommit, DocId, DocMeta, Filters, Hit, Index, IndexError, Match, MergeJob, MergePolicy, Merged, Query, Scope, TOKEN_RUN_DOCS};

/// The in-memory documents are written as a segment once there are this many, or once they
/// take [`COMMIT_BYTES`], whichever comes first.
pub const COMMIT_DOCS: u32 = 1_000_000;
/// The in-memory documents are written as a segment once they take about this many bytes of
/// memory (the budget the index benchmark gives tantivy's writer). A larger budget means fewer
/// segments to write and merge during a long catch-up (the benchmark's build of 1M events:
/// 50,000 documents a segment, about 60 MB, took 63 s of CPU with two merges of 400,000
/// documents; 200,000 a segment, about 240 MB, 47 s and no merge); while a segment is written,
/// the documents fed meanwhile take memory besides.
pub const COMMIT_BYTES: usize = 256 << 20;
/// The file that names the journal an index directory reflects.
const IDENTITY_FILE: &str = "journal";
/// The writer's lock file.
const LOCK_FILE: &str = "lock";
const IDENTITY_MAGIC: &[u8; 8] = b"ORGNIJNL";
/// The size of the `journal` file as written (layout 2, naming the record kinds read).
const IDENTITY_SIZE_BYTES: u64 = 44;
/// Its size before it named the record kinds the index was fed from (2026-12-06).
const IDENTITY_SIZE_BYTES_UNNAMED_KINDS: usize = 40;
/// The layout of an index directory: 2 since entries left it for their own index (a directory
/// of layout 1 also holds entry versions, and is rebuilt).
const LAYOUT_VERSION: u16 = 2;
/// The tokenizer's rules the index's terms were cut by (FORMAT.md lists each version): 8 since
/// a camelCase word also gives each two neighbouring parts joined, and a zero width joiner
/// in a letter's cluster folds away; 7: only the line break's escape (`\n`) gives a word without its letter; 6: a word glued to any
/// string escape's letters outside the JSON form also gave the word without them; 5: Han and kana runs join across a lone carriage return, U+2028 or U+0085 and with any
/// white space beside the break, not across a page or paragraph break; 4: terminal colour
/// sequences are white space, the soft hyphen and the bidirectional marks fold away, a
/// camelCase word's parts are taken from its letters and digits; 3: camelCase and PascalCase
/// ASCII words give their parts; 2: the scripts of the line-breaking class SA are runs of
/// bigrams, Arabic's and Hebrew's optional marks and Arabic and Persian letter variants fold
/// away, stems are of words without their accents; 1: variation selectors and the final sigma
/// fold away, Han and kana join across a line break; 0 before. An index of an older version is
/// rebuilt.
const TOKENS_VERSION: u16 = 8;
/// Records after an index's newest document that its open reads, at most, to see that none
/// below its mark holds a searchable event ([`of_another_copy`]): the check is for a journal
/// restored from a backup, and bounds the open's work when many records without events
/// follow the last event (a store of memory files alone, whose index has a mark and no
/// document).
const LINEAGE_RECORDS_MAX: u64 = 4096;
/// Entry documents are numbered from here, so that a hit's id says which index it came from.
pub const ENTRY_DOC_BASE: DocId = 1 << 31;

/// True for the event kinds the text index holds (search looks for nothing else).
pub fn is_searchable(kind: EventKind) -> bool {
    matches!(kind, EventKind::Message | EventKind::ToolUse | EventKind::ToolResult)
}

/// Why the text index cannot hold the document of event `e` of a record from `source`, if it
/// cannot: a string longer than the index's limit on them ([`crate::index::check_meta`]'s rule;
/// a log line can carry an id or a project of any length). Such an event is left out of search,
/// and counted ([`Catalog::left_out`]); the store still has it (`get`, `timeline`).
pub(crate) fn index_refuses(source: &str, e: &Event) -> Option<String> {
    crate::index::check_event_strings(&e.id, source, e.project.as_deref()).err().map(|why| format!("event {}: {why}", short_id(&e.id)))
}

/// An id to name in a message: at most its first 80 bytes.
fn short_id(id: &str) -> String {
    let mut end = id.len().min(80);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    if end < id.len() { format!("{}…", &id[..end]) } else { id.to_owned() }
}

/// Documents left out of the text index because it cannot hold their metadata
/// ([`index_refuses`], and entries alike): how many, and why the last was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// How many, since the catalog was opened.
    pub count: u64,
    /// Why the last one was left out.
    pub last: Option<String>,
}

/// True for the record kinds the catalog decodes.
pub fn reads_kind(kind: u8) -> bool {
    matches!(
        RecordKind::from_u8(kind),
        Some(RecordKind::Ingested | RecordKind::Remembered | RecordKind::Corrected | RecordKind::Imported)
    )
}

/// Where a catalog reads the journal from ([`Catalog::cursors`]): its events' cursor and its
/// entries'. They move only past the records the catalog is given, in order, so what a
/// catalog wants of the records after them is known before they are read (a reader that
/// decodes ahead, [`crate::ahead::read_records`], asks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursors {
    /// The first offset whose `ingested` record the catalog has not fed.
    pub events: u64,
    /// The first offset whose entry record the catalog has not fed.
    pub entries: u64,
}

impl Cursors {
    /// [`Catalog::wants`] of a catalog at these cursors.
    pub fn wants(&self, offset: u64, kind: u8) -> bool {
        if kind == RecordKind::Ingested as u8 {
            offset >= self.events
        } else {
            reads_kind(kind) && offset >= self.entries
        }
    }
}

/// What [`Catalog::open`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogOpened {
    /// An index was there and is used; the journal after `mark` is fed again.
    Loaded {
        /// The journal offset its segments cover.
        mark: u64,
    },
    /// There was none: everything is fed from the journal.
    Fresh,
    /// One was there but could not be used, and was deleted.
    Rebuilt {
        /// Why.
        reason: String,
    },
    /// The index's folder could not be read or written (a full disk, the folder read-only or
    /// not permitted: [`CatalogError::is_io`]): an index in this process's memory, fed from the
    /// journal's start, answers instead ([`open_projections`](crate::open_projections) opens it
    /// so; a read of the archive does not fail for a projection it can build).
    InMemory {
        /// Why.
        reason: String,
    },
}

/// Errors of the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The journal failed (or a record the index needs could not be decoded).
    #[error(transparent)]
    Journal(#[from] origin_engine::Error),
    /// A file of the catalog could not be read or written.
    #[error("catalog {op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl CatalogError {
    /// True if a file of the index could not be read or written (not damage, not the
    /// journal's failure).
    pub fn is_io(&self) -> bool {
        matches!(self, CatalogError::Io { .. } | CatalogError::Index(IndexError::Io { .. }))
    }
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CatalogError {
    let path = path.to_path_buf();
    move |source| CatalogError::Io { op, path, source }
}

/// What a commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// The in-memory documents are in a new segment.
    Written,
    /// Nothing to write.
    Nothing,
    /// Another process holds the writer's lock: the documents stay in memory.
    Busy,
    /// Another process committed first: the in-memory documents were dropped, and the
    /// journal after the new mark must be fed again ([`Catalog::read_to`] moved back).
    Superseded,
}

/// A merge planned under the writer's lock, to run on any thread ([`merge`]) and install with
/// [`Catalog::install_merge`]. The lock is held until then.
pub struct PlannedMerge {
    /// The merge to run.
    pub job: MergeJob,
    lock: Arc<WriterLock>,
    _merging: Arc<()>,
}

/// A commit planned under the writer's lock ([`Catalog::plan_commit`]), to write on any thread
/// ([`write_commit`]) and install with [`Catalog::install_commit`]. The lock is held until then.
pub struct PlannedCommit {
    /// The commit to write.
    pub job: CommitJob,
    lock: Arc<WriterLock>,
}

/// A commit being written on a thread of its own ([`Catalog::start_commit`]); the documents
/// stay searchable meanwhile. Install it with [`Catalog::finish_commit`].
pub struct CommitInFlight {
    planned: PlannedCommit,
    writer: Writer,
}

enum Writer {
    Thread(std::thread::JoinHandle<Result<WrittenCommit, IndexError>>),
    /// Written (no thread could be started, or the thread was waited for).
    Done(Box<Result<WrittenCommit, IndexError>>),
}

impl CommitInFlight {
    /// Waits until the segment is written (or writing failed), without the catalog: finishing
    /// it then does not wait.
    pub fn wait(self) -> CommitInFlight {
        let writer = match self.writer {
            Writer::Thread(t) => Writer::Done(Box::new(join(t))),
            done => done,
        };
        CommitInFlight { planned: self.planned, writer }
    }

    /// True once the segment is written (or writing failed): finishing it will not wait.
    pub fn is_finished(&self) -> bool {
        match &self.writer {
            Writer::Thread(t) => t.is_finished(),
            Writer::Done(_) => true,
        }
    }
}

fn join(t: std::thread::JoinHandle<Result<WrittenCommit, IndexError>>) -> Result<WrittenCommit, IndexError> {
    t.join().unwrap_or_else(|_| Err(IndexError::Invalid("the thread writing a commit panicked".into())))
}

impl std::fmt::Debug for CommitInFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitInFlight").field("job", &self.planned.job).field("finished", &self.is_finished()).finish()
    }
}

/// What [`Catalog::plan_commit`] did.
pub enum CommitPlan {
    /// A segment to write.
    Write(PlannedCommit),
    /// Nothing to write elsewhere: what was done.
    Done(Committed),
}

/// The text index of a store.
pub struct Catalog {
    dir: Option<Folder>,
    /// Events.
    index: Index,
    /// The offset after the last record fed to `index`.
    read_to: u64,
    /// Entry versions (in memory only).
    entries: Index,
    /// The offset after the last record fed to `entries`.
    entries_to: u64,
    /// The writer's lock while a commit or merge of this catalog holds it: the others this
    /// process starts meanwhile share it (each installs under `&mut self`, so they never race;
    /// a merge only replaces installed segments, and a commit only adds one).
    writer: Weak<WriterLock>,
    /// Held by the merge planned and not yet installed (or given up): one at a time.
    merging: Weak<()>,
    /// In-memory documents that call for a commit ([`COMMIT_DOCS`] unless set).
    commit_docs: u32,
    /// Bytes of in-memory documents that call for a commit ([`COMMIT_BYTES`] unless set).
    commit_bytes: usize,
    /// Documents fed since the open that the index could not hold, and the first offset not yet
    /// counted for events and for entries: a record fed again (after another process's commit
    /// or a rebuild) is not counted twice.
    left_out: LeftOut,
    left_out_events_to: u64,
    left_out_entries_to: u64,
    /// Why the catalog may not write, if it may not: the store cannot be written
    /// ([`Journal::is_read_only`]), or its folder cannot. This process then never takes the
    /// writer's lock, so it writes no segment and merges none (its documents stay in memory, as
    /// those of a process whose writer's lock another holds), and an index that must be built
    /// again is built in memory.
    read_only: Option<String>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("dir", &self.dir)
            .field("read_to", &self.read_to)
            .field("entries_to", &self.entries_to)
            .field("index", &self.index)
            .field("entries", &self.entries)
            .finish()
    }
}

fn identity_bytes(store: StoreId, epoch: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(IDENTITY_SIZE_BYTES as usize);
    b.extend_from_slice(IDENTITY_MAGIC);
    b.extend_from_slice(&LAYOUT_VERSION.to_le_bytes());
    b.extend_from_slice(&TOKENS_VERSION.to_le_bytes());
    b.extend_from_slice(&store);
    b.extend_from_slice(&epoch.to_le_bytes());
    b.extend_from_slice(&origin_engine::record::kinds_read_fingerprint(reads_kind).to_le_bytes());
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Why `index` is of another copy of `journal` (the same store and epoch, its records others: a
/// journal restored from a backup and written to since), if it is: the record its newest
/// written document came from does not hold that document's event there, or a record after it
/// and below the index's mark holds a searchable event (the index says it has every such event
/// below its mark, and holds none after that document). (The state's and the cursors'
/// snapshots name their last record for this; the index's commits do not see the records'
/// bytes, so its own documents say where they came from.) A segment that cannot be read is a
/// reason too: it is rebuilt as at any open.
fn of_another_copy(index: &Index, journal: &Journal) -> Result<Option<String>, CatalogError> {
    let another = "its documents are of another copy of the journal";
    let mark = index.mark().unwrap_or(0);
    let after = match index.last_written_doc() {
        Ok(Some((key, record, position))) => {
            let holds = journal.read_one(record, |r| {
                let (_, body) = r.decode()?;
                Ok(matches!(&body, Body::Ingested(b) if b.events.get(position as usize).is_some_and(|e| e.id == key)))
            })?;
            if holds != Some(true) {
                return Ok(Some(format!("{another}: the record at offset {record} does not hold event {key}")));
            }
            record + 1
        }
        Ok(None) => 0,
        Err(e) if e.is_corruption() => return Ok(Some(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    // Only `ingested` records are decoded (most records after the last event are entries,
    // cursors or tombstones), at most [`LINEAGE_RECORDS_MAX`] records are read, and the read
    // stops at the mark. A record that does not decode is not judged (one of a newer version
    // after a downgrade, say): the catch-up never reads below the mark, and the index is not
    // thrown away for it.
    let mut found = None;
    let until = mark.min(after.saturating_add(LINEAGE_RECORDS_MAX));
    if after < until {
        journal.read_from(after, |r| {
            if r.offset >= until {
                return Ok(ControlFlow::Break(()));
            }
            if r.kind == RecordKind::Ingested as u8
                && let Ok((_, body)) = r.decode()
                && searchable_texts(&body).next().is_some()
            {
                found = Some(r.offset);
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
    }
    Ok(found.map(|offset| format!("{another}: the record at offset {offset} holds events it has not indexed, below its mark {mark}")))
}

/// The writer's lock of an index folder, held (released when dropped).
pub(crate) struct WriterLock(#[allow(dead_code)] Mutex<Box<dyn Send>>);

/// Takes the writer's lock of `dir`: waiting for it, or (`wait` false) only if it is free.
fn lock(dir: &Folder, wait: bool) -> Result<Option<WriterLock>, CatalogError> {
    let path = dir.join(LOCK_FILE);
    let held = if wait {
        Some(dir.vfs().lock(&path, origin_engine::vfs::LockMode::Exclusive).map_err(io("lock", &path))?)
    } else {
        dir.vfs().try_lock(&path).map_err(io("lock", &path))?
    };
    Ok(held.map(|g| WriterLock(Mutex::new(Box::new(g)))))
}

/// Takes the writer's lock of `dir`, waiting for it as long as `wait` says (`None`: as long as
/// another holds it): `None` if another still held it when the wait ran out
/// ([`origin_engine::vfs::lock_within`]).
fn lock_waiting(dir: &Folder, wait: Option<std::time::Duration>) -> Result<Option<WriterLock>, CatalogError> {
    let path = dir.join(LOCK_FILE);
    let held = origin_engine::vfs::lock_within(dir.vfs(), &path, origin_engine::vfs::LockMode::Exclusive, wait).map_err(io("lock", &path))?;
    Ok(held.map(|g| WriterLock(Mutex::new(g))))
}

/// A lock of `dir` another process held past `wait` ([`lock_waiting`]), as an error.
fn held_past(dir: &Folder, wait: std::time::Duration) -> CatalogError {
    let path = dir.join(LOCK_FILE);
    let why = format!("another process has held it for {:.0} s ({})", wait.as_secs_f64(), origin_engine::vfs::lock_holders(&path, false));
    CatalogError::Io { op: "lock", path, source: std::io::Error::new(std::io::ErrorKind::WouldBlock, why) }
}

/// What a repair holds while it looks again at what it found damaged ([`Catalog::repair_lock`]).
enum RepairLock {
    /// The lock (or none, where a shared one cannot be taken).
    Held(#[allow(dead_code)] Option<Box<dyn Send>>),
    /// Another process held it past the journal's wait: a later call repairs.
    Busy,
}

impl Catalog {
    /// A catalog of `index`, in `dir` if any, fed up to `read_to`, with the default commit
    /// budget and no entries yet.
    fn with(dir: Option<Folder>, index: Index, read_to: u64) -> Catalog {
        Catalog {
            dir,
            index,
            read_to,
            entries: Index::in_memory(),
            entries_to: 0,
            writer: Weak::new(),
            merging: Weak::new(),
            commit_docs: COMMIT_DOCS,
            commit_bytes: COMMIT_BYTES,
            left_out: LeftOut::default(),
            left_out_events_to: 0,
            left_out_entries_to: 0,
            read_only: None,
        }
    }

    /// Why this catalog may not write (the store or its folder cannot be written), if it may
    /// not: what it adds is kept in memory.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// An empty catalog in memory (tests, and stores opened read-only).
    pub fn in_memory() -> Catalog {
        Catalog::with(None, Index::in_memory(), 0)
    }

    /// Opens the catalog in `dir` for `journal`'s store, creating it if needed; an index that
    /// cannot be used is deleted (under the writer's lock) and built again from the journal.
    ///
    /// On a journal opened to read only, or where the folder cannot be written (a read-only
    /// mount of the projections, another user's folder: [`Vfs::check_writable`]), nothing is
    /// written: an index that is whole and of the journal is read as it is, and one that is
    /// missing or must be built again is built in this process's memory
    /// ([`CatalogOpened::InMemory`]).
    ///
    /// [`Vfs::check_writable`]: origin_engine::vfs::Vfs::check_writable
    pub fn open(dir: &Path, journal: &Journal) -> Result<(Catalog, CatalogOpened), CatalogError> {
        let dir = &Folder::new(journal.vfs().clone(), dir);
        let unwritable = if journal.is_read_only() { Some("the store cannot be written".to_owned()) } else { Catalog::unwritable(dir)? };
        let identity = identity_bytes(journal.store_id(), journal.epoch());
        // One over the size written is another file: it differs (and is rebuilt), unread.
        let found = match dir.read(IDENTITY_FILE, IDENTITY_SIZE_BYTES) {
            Ok(found) => found,
            Err(e) if e.is_corruption() => Some(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let problem = match found {
            Some(b) if b == identity => match Index::open_shared_in(dir.clone()) {
                Ok(index) => match index.mark() {
                    // Another process may have committed records it appended after this handle
                    // last looked at the journal: look again before calling the index ahead
                    // (and deleting what every process shares).
                    Some(m) if m > journal.next_offset() && {
                        journal.refresh()?;
                        m > journal.next_offset()
                    } =>
                    {
                        Some(format!("it reflects journal offset {m} but the journal ends at {}", journal.next_offset()))
                    }
                    _ => match of_another_copy(&index, journal)? {
                        Some(reason) => Some(reason),
                        None => {
                        let read_to = index.mark().unwrap_or(0);
                        let mut c = Catalog::with(Some(dir.clone()), index, read_to);
                        c.read_only = unwritable;
                        // Clean up what a crashed writer left, if no one is writing now.
                        if let Some(_lock) = c.writer_lock(dir)? {
                            c.index.remove_leftovers()?;
                        }
                        let opened = match c.index.mark() {
                            Some(mark) => CatalogOpened::Loaded { mark },
                            None => CatalogOpened::Fresh,
                        };
                        return Ok((c, opened));
                        }
                    },
                },
                Err(e) if e.is_corruption() => Some(e.to_string()),
                Err(e) => return Err(e.into()),
            },
            Some(b) if b.len() == 36 && b.starts_with(IDENTITY_MAGIC) => {
                Some("it was built by an older version of Origin (entries and events in one index)".into())
            }
            // Whole and of this journal, but of an older tokenizer's version: its terms are
            // not what this build cuts.
            Some(b)
                if (b.len() == identity.len() || b.len() == IDENTITY_SIZE_BYTES_UNNAMED_KINDS)
                    && b[..10] == identity[..10]
                    && b[12..36] == identity[12..36]
                    && u16::from_le_bytes([b[10], b[11]]) < TOKENS_VERSION
                    && crc32fast::hash(&b[..b.len() - 4]).to_le_bytes() == b[b.len() - 4..] =>
            {
                Some("its words were cut by an older version of Origin's tokenizer".into())
            }
            // Whole and of this journal, but fed from other kinds of record than this build
            // reads (or not saying which): records below its mark were passed over unread.
            Some(b)
                if (b.len() == identity.len() || b.len() == IDENTITY_SIZE_BYTES_UNNAMED_KINDS)
                    && b[..36] == identity[..36]
                    && crc32fast::hash(&b[..b.len() - 4]).to_le_bytes() == b[b.len() - 4..] =>
            {
                Some(if b.len() == IDENTITY_SIZE_BYTES_UNNAMED_KINDS {
                    "it was built by an older version of Origin (it does not name the record kinds it was fed from)".into()
                } else {
                    "it was fed from other kinds of record than this version of Origin reads".into()
                })
            }
            Some(_) => Some("it belongs to another journal (store id or epoch differ), or its journal file is damaged".into()),
            None => None,
        };
        // Start over: no index, or one that cannot be used; in memory where nothing may be
        // written.
        if let Some(why) = unwritable {
            let reason = match problem {
                Some(reason) => format!("{why}, and its text index cannot be used: {reason}"),
                None => format!("{why}, and it holds no text index"),
            };
            let mut c = Catalog::in_memory();
            c.read_only = Some(why);
            return Ok((c, CatalogOpened::InMemory { reason }));
        }
        let opened = match problem {
            Some(reason) => CatalogOpened::Rebuilt { reason },
            None => CatalogOpened::Fresh,
        };
        Ok((Catalog::start_over_in(dir, journal)?, opened))
    }

    /// Why the catalog's folder cannot be written (made first if missing), if it cannot.
    fn unwritable(dir: &Folder) -> Result<Option<String>, CatalogError> {
        let path = dir.path();
        let refused = |e: std::io::Error| {
            Some(format!("the text index's folder {} cannot be written ({})", path.display(), origin_engine::vfs::refusal_text(&e)))
        };
        match dir.vfs().create_dir_all(path) {
            Ok(()) => {}
            Err(e) if origin_engine::vfs::is_read_only_error(&e) => return Ok(refused(e)),
            Err(e) => return Err(io("create", path)(e)),
        }
        Ok(origin_engine::vfs::folder_refusal(dir.vfs(), path).and_then(refused))
    }

    /// An empty catalog in `dir` for `journal`'s store: whatever index the directory held is
    /// deleted (under the writer's lock, waiting for it), to be fed from the journal's start
    /// (`origin journal replay` rebuilds this way).
    pub fn start_over(dir: &Path, journal: &Journal) -> Result<Catalog, CatalogError> {
        Catalog::start_over_in(&Folder::new(journal.vfs().clone(), dir), journal)
    }

    fn start_over_in(dir: &Folder, journal: &Journal) -> Result<Catalog, CatalogError> {
        dir.create()?;
        // As long as the journal's lock is waited for (a server's is bounded).
        let _lock = match lock_waiting(dir, journal.lock_wait())? {
            Some(held) => held,
            None => return Err(held_past(dir, journal.lock_wait().unwrap_or_default())),
        };
        let index = Catalog::clear(dir, journal)?;
        Ok(Catalog::with(Some(dir.clone()), index, 0))
    }

    /// Deletes whatever `dir` holds but its lock file, names `journal` in it, and opens the
    /// empty index there. The caller holds the writer's lock.
    fn clear(dir: &Folder, journal: &Journal) -> Result<Index, CatalogError> {
        // Segment ids go on from those of the index deleted: other processes may still hold
        // its segments, by id.
        let next_id = Index::next_id_in(dir);
        // An empty manifest first, naming that floor: a process reading the index meanwhile
        // finds it empty (and feeds it from the journal), never a manifest naming segments
        // already deleted; and a clear cut short by a crash leaves the floor for the next.
        crate::index::write_empty_manifest(dir, next_id)?;
        for name in dir.list()? {
            if name == LOCK_FILE || name == crate::index::MANIFEST_FILE_NAME {
                continue;
            }
            let path = dir.join(&name);
            dir.vfs().remove_all(&path).map_err(io("remove", &path))?;
        }
        dir.replace(IDENTITY_FILE, &identity_bytes(journal.store_id(), journal.epoch()))?;
        Ok(Index::open_with_ids_from(dir.clone(), next_id)?)
    }

    /// From now on, the index verifies segments' bodies as soon as it opens them, those open
    /// now first, a rebuilt index's too ([`Index::verify_ahead`]): for a process that will
    /// search.
    pub fn verify_ahead(&mut self) {
        self.index.verify_ahead();
    }

    /// The offset from which records are still to be fed (to the events' index or the
    /// entries').
    pub fn read_to(&self) -> u64 {
        self.read_to.min(self.entries_to)
    }

    /// The events' index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The entries' index.
    pub fn entries(&self) -> &Index {
        &self.entries
    }

    /// Feeds the entries' index, before any record was fed to it, with the state's entry
    /// versions of the records it would otherwise read again: those below both the state's
    /// offset and the events' index's. A process need not read the journal from its start for
    /// them; records from there on are fed as usual.
    pub fn seed_entries(&mut self, state: &State) -> Result<(), CatalogError> {
        if self.entries_to != 0 || self.entries.doc_count() != 0 {
            return Err(IndexError::Invalid("the entries' index was fed already".into()).into());
        }
        let upto = state.read_to().min(self.read_to);
        let mut versions: Vec<(u64, &EntryVersion)> = state.entry_versions().filter(|(o, _)| *o < upto).collect();
        versions.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
        for (offset, v) in versions {
            self.add_entry(v, offset)?;
        }
        self.left_out_entries_to = self.left_out_entries_to.max(upto);
        self.entries_to = upto;
        Ok(())
    }

    /// Adds entry version `v`, written by the record at `offset`, to the entries' index; one
    /// whose metadata the index cannot hold is left out and counted, as events are.
    fn add_entry(&mut self, v: &EntryVersion, offset: u64) -> Result<(), CatalogError> {
        let meta = DocMeta::entry(v, offset);
        if let Err(why) = crate::index::check_meta(&meta) {
            if offset >= self.left_out_entries_to {
                self.left_out.count += 1;
                self.left_out.last = Some(format!("entry {}: {why}", short_id(&v.id)));
            }
            return Ok(());
        }
        let doc = self.next_entry_doc()?;
        self.entries.add(doc, &meta, &v.text)?;
        Ok(())
    }

    /// Documents fed since the open that the text index could not hold, left out of search
    /// (the store keeps them): how many, and why the last was.
    pub fn left_out(&self) -> &LeftOut {
        &self.left_out
    }

    /// True if the record at `offset`, of `kind`, is one the catalog still has to be fed.
    pub fn wants(&self, offset: u64, kind: u8) -> bool {
        self.cursors().wants(offset, kind)
    }

    /// The catalog's cursors: what it wants of the records after them.
    pub fn cursors(&self) -> Cursors {
        Cursors { events: self.read_to, entries: self.entries_to }
    }

    /// If verifying a segment's body found damage ([`Index::damage`]; segments are verified
    /// in the background after they are opened when the index verifies ahead, else by the
    /// first search or merge that reads them), deletes the events' index (under the
    /// writer's lock, waiting for it) and starts it over, to be fed again from the journal's
    /// start; the entries' index is kept. Returns what was found, or `None` if nothing was,
    /// or if a commit or merge of this catalog is under way (it holds the lock; the next call
    /// repairs), or if another process held the lock for all the time `journal` waits for its
    /// own ([`Journal::lock_wait`]: a server's is bounded; the next call repairs).
    /// [`Catalog::catch_up`] calls it first.
    pub fn repair(&mut self, journal: &Journal) -> Result<Option<String>, CatalogError> {
        let Some(damage) = self.index.damage() else { return Ok(None) };
        let Some(dir) = self.dir.clone() else { return Err(damage.into()) };
        if self.writing() {
            return Ok(None);
        }
        let damaged = self.index.damaged_segments();
        let RepairLock::Held(_lock) = self.repair_lock(&dir, journal.lock_wait())? else { return Ok(None) };
        // Another process that found the same damage may have repaired it first: its
        // manifest then no longer lists the damaged segments, and what it wrote since is
        // taken as it is (deleting it would make every process start over again).
        let listed = Index::listed_in(&dir)?;
        if !damaged.iter().any(|id| listed.contains(id)) {
            self.refresh()?;
            return Ok(None);
        }
        if self.read_only.is_some() {
            self.start_over_in_memory();
        } else {
            self.start_over_under_lock(&dir, journal)?;
        }
        Ok(Some(damage.to_string()))
    }

    /// The lock a repair holds while it looks again at what it found damaged: the writer's,
    /// waiting for it; for a catalog that may not write, the lock shared, waiting for a writer
    /// (another process's repair) to finish, so that what that writer wrote is read rather than
    /// the index given up for one in memory (a reader of a live store, another user's or a
    /// read-only mount of it). A shared lock that cannot be taken is gone without. Waited for
    /// at most `wait` (`None`: as long as it is held).
    fn repair_lock(&self, dir: &Folder, wait: Option<std::time::Duration>) -> Result<RepairLock, CatalogError> {
        if self.read_only.is_some() {
            let path = dir.join(LOCK_FILE);
            return Ok(match origin_engine::vfs::lock_within(dir.vfs(), &path, origin_engine::vfs::LockMode::Shared, wait) {
                Ok(Some(held)) => RepairLock::Held(Some(held)),
                Ok(None) => RepairLock::Busy,
                Err(_) => RepairLock::Held(None),
            });
        }
        Ok(match lock_waiting(dir, wait)? {
            Some(held) => RepairLock::Held(Some(Box::new(held))),
            None => RepairLock::Busy,
        })
    }

    /// True while a commit or merge of this catalog is under way (it holds the writer's lock).
    fn writing(&self) -> bool {
        self.writer.upgrade().is_some() || self.merging.upgrade().is_some() || self.index.committing()
    }

    /// Deletes the events' index in `dir` and starts it over, to be fed from the journal's
    /// start (verifying ahead as it did); the entries' index is kept. The caller holds the
    /// writer's lock.
    fn start_over_under_lock(&mut self, dir: &Folder, journal: &Journal) -> Result<(), CatalogError> {
        let ahead = self.index.verifies_ahead();
        self.index = Catalog::clear(dir, journal)?;
        if ahead {
            self.index.verify_ahead();
        }
        self.read_to = 0;
        Ok(())
    }

    /// Starts the events' index over in this process's memory, to be fed from the journal's
    /// start (verifying ahead as it did), leaving the damaged one on disk as it is: what a
    /// catalog that may not write does where another would delete it and start over there.
    fn start_over_in_memory(&mut self) {
        let ahead = self.index.verifies_ahead();
        self.index = Index::in_memory();
        if ahead {
            self.index.verify_ahead();
        }
        self.dir = None;
        self.read_to = 0;
    }

    /// Takes what another process committed or merged. If the mark moved, the in-memory
    /// documents are dropped and [`Catalog::read_to`] goes back to the new mark (feed the
    /// journal again from there). Returns true if it did.
    pub fn refresh(&mut self) -> Result<bool, CatalogError> {
        let before = self.index.mark();
        if !self.index.reload()? || self.index.mark() == before {
            // Nothing new, or only a merge: the in-memory documents still follow the mark.
            return Ok(false);
        }
        self.index.clear_memory();
        self.read_to = self.index.mark().unwrap_or(0);
        Ok(true)
    }

    /// [`Catalog::refresh`]; when what it reads is damaged (a listed segment missing or
    /// failing its checks, a damaged manifest), the index is deleted and started over, to be
    /// fed from the journal's start, as an open that finds it so does: returns why, or `None`.
    /// Under the writer's lock (waiting for it), and after reading the manifest once more:
    /// another process that found the damage may have repaired it first, and what it wrote is
    /// taken. Not while a commit or merge of this catalog is under way (which holds the lock),
    /// nor when another process held the lock for all the time `journal` waits for its own
    /// ([`Journal::lock_wait`]): the error is returned, and a later call repairs.
    pub fn refresh_repairing(&mut self, journal: &Journal) -> Result<Option<String>, CatalogError> {
        let damage = match self.refresh() {
            Err(CatalogError::Index(e)) if e.is_corruption() => e,
            other => return other.map(|_| None),
        };
        let Some(dir) = self.dir.clone() else { return Err(damage.into()) };
        if self.writing() {
            return Err(damage.into());
        }
        let RepairLock::Held(_lock) = self.repair_lock(&dir, journal.lock_wait())? else { return Err(damage.into()) };
        let damage = match self.refresh() {
            Err(CatalogError::Index(e)) if e.is_corruption() => e,
            other => return other.map(|_| None),
        };
        if self.read_only.is_some() {
            self.start_over_in_memory();
        } else {
            self.start_over_under_lock(&dir, journal)?;
        }
        Ok(Some(damage.to_string()))
    }

    fn next_doc(&self) -> Result<DocId, CatalogError> {
        match self.index.last_doc() {
            None => Ok(0),
            Some(d) => Self::doc_after(d),
        }
    }

    /// The event id after `d`, if events may take it.
    fn doc_after(d: DocId) -> Result<DocId, CatalogError> {
        if d + 1 < ENTRY_DOC_BASE { Ok(d + 1) } else { Err(IndexError::Invalid("the index holds 2^31 events".into()).into()) }
    }

    fn next_entry_doc(&self) -> Result<DocId, CatalogError> {
        match self.entries.last_doc() {
            None => Ok(ENTRY_DOC_BASE),
            Some(d) => d.checked_add(1).ok_or_else(|| IndexError::Invalid("the index holds 2^31 entry versions".into()).into()),
        }
    }

    /// Feeds one record at `offset` (records in offset order; one below
    /// [`Catalog::read_to`] was fed already and is ignored).
    pub fn apply(&mut self, offset: u64, body: &Body) -> Result<(), CatalogError> {
        self.apply_with(offset, body, None)
    }

    /// [`Catalog::apply`] of a record given by [`read_records`]: its documents' tokens are
    /// taken from `runs` when the reader tokenized them ahead.
    pub fn apply_read(&mut self, record: &ReadRecord, body: &Body, runs: &mut Runs) -> Result<(), CatalogError> {
        self.apply_with(record.offset, body, record.tokenized.then_some(runs))
    }

    fn apply_with(&mut self, offset: u64, body: &Body, runs: Option<&mut Runs>) -> Result<(), CatalogError> {
        let (for_events, for_entries) = (offset >= self.read_to, offset >= self.entries_to);
        match body {
            Body::Ingested(b) if for_events => {
                // Events the index cannot hold are left out of it (not of the store): an error
                // here would stop every later record from being fed.
                if offset >= self.left_out_events_to {
                    for e in b.events.iter().filter(|e| is_searchable(e.kind)) {
                        if let Some(why) = index_refuses(&b.source, e) {
                            self.left_out.count += 1;
                            self.left_out.last = Some(why);
                        }
                    }
                    self.left_out_events_to = offset + 1;
                }
                // The record's searchable events, added together (tokenized on a second thread
                // when there is enough text, or ahead by the reader); ids follow the index's
                // last, as one by one.
                let mut docs = Vec::new();
                let (mut next, mut over) = (self.next_doc(), None);
                for (i, e) in searchable_texts(body) {
                    match next {
                        Ok(doc) => {
                            // A record's payload is at most 64 MiB: far fewer than 2^32 events.
                            let position = u32::try_from(i).unwrap_or(u32::MAX);
                            docs.push((doc, DocMeta::event(&b.source, e, offset, position), e.text.as_str()));
                            next = Self::doc_after(doc);
                        }
                        Err(e) => {
                            over = Some(e);
                            break;
                        }
                    }
                }
                match runs {
                    // Runs of the reader's come whole: with the ids run out, the documents that
                    // still have one are tokenized here.
                    Some(runs) if over.is_none() => {
                        for chunk in docs.chunks(TOKEN_RUN_DOCS) {
                            let Some(run) = runs.next_run() else {
                                return Err(IndexError::Invalid("the reader tokenized fewer documents than the record holds".into()).into());
                            };
                            let added = self.index.add_tokens(chunk.iter().map(|(doc, meta, _)| (*doc, meta)), &run);
                            runs.give_back(run);
                            added?;
                        }
                    }
                    _ => self.index.add_all(&docs)?,
                }
                if let Some(e) = over {
                    return Err(e);
                }
            }
            Body::Remembered(v) | Body::Corrected(v) if for_entries => {
                self.add_entry(v, offset)?;
                self.left_out_entries_to = self.left_out_entries_to.max(offset + 1);
            }
            Body::Imported(b) if for_entries => {
                for v in &b.entries {
                    self.add_entry(v, offset)?;
                }
                self.left_out_entries_to = self.left_out_entries_to.max(offset + 1);
            }
            _ => {}
        }
        self.pass(offset);
        Ok(())
    }

    /// Passes over a record the catalog does not read.
    pub fn pass(&mut self, offset: u64) {
        self.read_to = self.read_to.max(offset + 1);
        self.entries_to = self.entries_to.max(offset + 1);
    }

    /// Feeds every record after [`Catalog::read_to`] (after [`Catalog::refresh`]); returns
    /// how many records were read. A record the catalog reads that cannot be decoded is an
    /// error, and nothing after it is fed.
    pub fn catch_up(&mut self, journal: &Journal) -> Result<u64, CatalogError> {
        self.repair(journal)?;
        self.refresh_repairing(journal)?;
        let mut count = 0u64;
        let cursors = self.cursors();
        read_records(journal, self.read_to(), cursors.events, |o, k| cursors.wants(o, k), |mut r, runs| {
            count += 1;
            match r.body.take() {
                None => self.pass(r.offset),
                // A record the catalog reads that cannot be decoded: nothing after it is fed.
                Some(Err(e)) => return Err(CatalogError::from(e)),
                Some(Ok(body)) => self.apply_read(&r, &body, runs)?,
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(count)
    }

    /// The writer's lock: shared with a commit or merge of this catalog that holds it, else
    /// taken if no other process holds it (`None` then).
    fn writer_lock(&mut self, dir: &Folder) -> Result<Option<Arc<WriterLock>>, CatalogError> {
        if let Some(held) = self.writer.upgrade() {
            return Ok(Some(held));
        }
        if self.read_only.is_some() {
            return Ok(None);
        }
        let Some(file) = lock(dir, false)? else { return Ok(None) };
        let held = Arc::new(file);
        self.writer = Arc::downgrade(&held);
        Ok(Some(held))
    }

    /// True once enough documents wait in memory to be worth a segment (and no commit is
    /// being written).
    pub fn wants_commit(&self) -> bool {
        // One that may not write keeps its documents in memory.
        !(self.read_only.is_some() && self.dir.is_some())
            && !self.index.committing()
            && (self.index.memory_doc_count() >= self.commit_docs || self.index.memory_bytes() >= self.commit_bytes)
    }

    /// Sets how many in-memory documents call for a commit (at least 1; [`COMMIT_DOCS`] by
    /// default). Smaller segments cost more merging; tests use them to reach commits and
    /// merges with small stores.
    pub fn set_commit_docs(&mut self, docs: u32) {
        self.commit_docs = docs.clamp(1, crate::index::limits::SEGMENT_DOCS_MAX);
    }

    /// Sets how many bytes of in-memory documents call for a commit ([`COMMIT_BYTES`] by
    /// default; at least 1 MiB).
    pub fn set_commit_bytes(&mut self, bytes: usize) {
        self.commit_bytes = bytes.max(1 << 20);
    }

    /// Starts a commit to write on another thread (so that feeding never waits for a segment
    /// to be written): takes the writer's lock, freezes the in-memory documents with the
    /// journal offset they reach (searches still read them), and returns the job to run with
    /// [`write_commit`] and install with [`Catalog::install_commit`]; the lock is held until
    /// then. A commit with nothing to write, in memory, or that cannot start is done (or not)
    /// here: [`CommitPlan::Done`] says which, as [`Catalog::commit`] would.
    pub fn plan_commit(&mut self) -> Result<CommitPlan, CatalogError> {
        if self.index.committing() {
            return Ok(CommitPlan::Done(Committed::Busy));
        }
        let Some(dir) = self.dir.clone() else {
            self.index.commit(self.read_to)?;
            return Ok(CommitPlan::Done(Committed::Written));
        };
        let Some(lock) = self.writer_lock(&dir)? else { return Ok(CommitPlan::Done(Committed::Busy)) };
        if self.refresh()? {
            return Ok(CommitPlan::Done(Committed::Superseded));
        }
        if self.index.memory_doc_count() == 0 {
            if self.index.mark() == Some(self.read_to) {
                return Ok(CommitPlan::Done(Committed::Nothing));
            }
            self.index.commit(self.read_to)?;
            return Ok(CommitPlan::Done(Committed::Written));
        }
        match self.index.freeze(self.read_to)? {
            Some(job) => Ok(CommitPlan::Write(PlannedCommit { job, lock })),
            None => Ok(CommitPlan::Done(Committed::Nothing)),
        }
    }

    /// Starts a commit whose segment is written on a thread of its own (see
    /// [`Catalog::plan_commit`]); `Err` says what was done instead when there is nothing to
    /// write elsewhere.
    pub fn start_commit(&mut self) -> Result<Result<CommitInFlight, Committed>, CatalogError> {
        let planned = match self.plan_commit()? {
            CommitPlan::Write(p) => p,
            CommitPlan::Done(c) => return Ok(Err(c)),
        };
        let job = planned.job.clone();
        let writer = match std::thread::Builder::new().name("origin-commit".into()).spawn(move || write_commit(&job)) {
            Ok(t) => Writer::Thread(t),
            Err(_) => Writer::Done(Box::new(write_commit(&planned.job))),
        };
        Ok(Ok(CommitInFlight { planned, writer }))
    }

    /// Waits for a commit started with [`Catalog::start_commit`] to be written, and installs
    /// it (as [`Catalog::install_commit`]).
    pub fn finish_commit(&mut self, commit: CommitInFlight) -> Result<(), CatalogError> {
        let written = match commit.writer {
            Writer::Thread(t) => join(t),
            Writer::Done(w) => *w,
        };
        self.install_commit(written, commit.planned)
    }

    /// Installs a commit planned with [`Catalog::plan_commit`], given what [`write_commit`]
    /// returned, then releases the writer's lock. If writing or installing failed, the
    /// frozen documents go back to memory, or (when more were added since) the in-memory
    /// documents are dropped and [`Catalog::read_to`] goes back to the index's mark, to be fed
    /// again; the error is returned.
    pub fn install_commit(&mut self, written: Result<WrittenCommit, IndexError>, planned: PlannedCommit) -> Result<(), CatalogError> {
        let PlannedCommit { job, lock } = planned;
        drop(job);
        let result = written.and_then(|w| self.index.install_commit(w));
        drop(lock);
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                if !self.index.thaw() {
                    self.read_to = self.index.mark().unwrap_or(0);
                }
                Err(e.into())
            }
        }
    }

    /// Writes the in-memory documents as a segment with the journal offset they reach, if this
    /// process can take the writer's lock and nobody committed since it last looked.
    /// (What [`Catalog::plan_commit`] and [`Catalog::install_commit`] do, the segment written
    /// here; if writing fails, the documents stay in memory.)
    pub fn commit(&mut self) -> Result<Committed, CatalogError> {
        match self.plan_commit()? {
            CommitPlan::Done(c) => Ok(c),
            CommitPlan::Write(planned) => {
                let written = write_commit(&planned.job);
                self.install_commit(written, planned)?;
                Ok(Committed::Written)
            }
        }
    }

    /// Plans the merge `policy` calls for, taking the writer's lock (held until
    /// [`Catalog::install_merge`]; a commit of this catalog may share it meanwhile); `None` if
    /// there is none, another process writes, or a merge planned earlier is not installed.
    pub fn plan_merge(&mut self, policy: &MergePolicy) -> Result<Option<PlannedMerge>, CatalogError> {
        if self.merging.upgrade().is_some() {
            return Ok(None);
        }
        let lock_file = match &self.dir {
            Some(dir) => match self.writer_lock(&dir.clone())? {
                Some(f) => Some(f),
                None => return Ok(None),
            },
            None => None,
        };
        if self.refresh()? {
            // The caller feeds the journal again; the next call plans on the new segments.
            return Ok(None);
        }
        let Some(job) = self.index.plan_merge_by(policy)? else { return Ok(None) };
        match lock_file {
            Some(lock) => {
                let merging = Arc::new(());
                self.merging = Arc::downgrade(&merging);
                Ok(Some(PlannedMerge { job, lock, _merging: merging }))
            }
            None => {
                // In memory: nothing to lock; run it here.
                let merged = merge(&job)?;
                self.index.install_merge(merged)?;
                Ok(None)
            }
        }
    }

    /// Installs a merge planned with [`Catalog::plan_merge`] and run with [`merge`], then
    /// releases the writer's lock.
    pub fn install_merge(&mut self, merged: Merged, planned: PlannedMerge) -> Result<(), CatalogError> {
        self.index.install_merge(merged)?;
        drop(planned.lock);
        Ok(())
    }

    /// Searches the index (see [`Index::search`]). With no scope, entries' and events' hits
    /// are merged by match and score, each scored by its own index's statistics (so not on one
    /// scale), an entry before an event at an equal score whatever their times: the tools ask
    /// for each scope on its own, and callers that need one order across both should too.
    pub fn search(
        &self,
        query: &Query,
        filters: &Filters,
        visible: &dyn Fn(&Candidate<'_>) -> bool,
        limit: usize,
    ) -> Result<Vec<Hit>, CatalogError> {
        match filters.scope {
            Some(Scope::Event) => Ok(self.index.search(query, filters, visible, limit)?),
            Some(Scope::Entry) => Ok(self.entries.search(query, filters, visible, limit)?),
            None => {
                // Both, full matches first, each kind by score (each index's own BM25).
                let mut hits = self.entries.search(query, filters, visible, limit)?;
                hits.extend(self.index.search(query, filters, visible, limit)?);
                hits.sort_by(|a, b| {
                    (a.matched != Match::All).cmp(&(b.matched != Match::All)).then(b.score.total_cmp(&a.score))
                });
                hits.truncate(limit);
                Ok(hits)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::fs;
    use origin_engine::record::{EntryKind, EntryVersion, Event, Ingested, Role};
    use origin_engine::{NewRecord, Options};

    use super::*;
    use crate::index::{parse_query, Scope};
    use crate::ahead::read_records;

    fn event(i: u64, kind: EventKind, text: &str) -> Event {
        Event {
            id: format!("claude-code:e{i}"),
            time_unix_ms: 1_000 + i as i64,
            session: "s1".into(),
            project: Some("demo".into()),
            role: Role::User,
            kind,
            text: text.into(),
            text_cut_chars: 0,
            cwd: None,
            git_branch: None,
            agent_version: None,
            line: i + 1,
        }
    }

    fn ingested(events: Vec<Event>) -> Body {
        Body::Ingested(Ingested {
            source: "claude-code".into(),
            path: "/p".into(),
            mirror: "claude-code/p".into(),
            file_version: 1,
            byte_start: 0,
            byte_end: 1,
            line_start: 1,
            line_end: 2,
            prefix_hash: 0,
            raw_zstd: Vec::new(),
            events,
            sessions: Vec::new(),
            malformed_lines: 0,
            cut_lines: 0,
            state: Vec::new(),
            superseded: Vec::new(),
        })
    }

    fn entry(id: &str, text: &str) -> Body {
        Body::Remembered(EntryVersion {
            id: id.into(),
            root: id.into(),
            supersedes: None,
            kind: EntryKind::Knowledge,
            text: text.into(),
            confidence: 1.0,
            project: None,
            author: "a@b".into(),
            created_unix_ms: 5,
            valid_from_unix_ms: None,
            valid_to_unix_ms: None,
            sources: Vec::new(),
            imported: false,
        })
    }

    fn append(j: &Journal, b: &Body) {
        j.append(vec![NewRecord::new(b).unwrap()]).unwrap();
    }

    /// A store whose journal holds one message, "release workflow", and its catalog fed
    /// and committed.
    fn committed_store_of_one_event() -> (tempfile::TempDir, Journal, PathBuf, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(&j, &ingested(vec![event(1, EventKind::Message, "release workflow")]));
        let idx = dir.path().join("index");
        let (mut c, _) = Catalog::open(&idx, &j).unwrap();
        c.catch_up(&j).unwrap();
        assert_eq!(c.commit().unwrap(), Committed::Written);
        (dir, j, idx, c)
    }

    /// The keys found, sorted.
    fn keys(c: &Catalog, q: &str, scope: Scope) -> Vec<String> {
        keys_up_to(c, q, scope, 50)
    }

    fn keys_up_to(c: &Catalog, q: &str, scope: Scope, limit: usize) -> Vec<String> {
        let f = Filters { scope: Some(scope), include_tools: true, ..Filters::default() };
        let mut k: Vec<String> = c.search(&parse_query(q).unwrap(), &f, &|_| true, limit).unwrap().into_iter().map(|h| h.key).collect();
        k.sort();
        k
    }

    /// A journal of records of every kind the catalog meets: `ingested` records of many
    /// searchable events (runs of 32 and a part), of few, of none and of only unsearchable
    /// ones; entries; a scratch record. Enough of them for [`read_records`] to read ahead.
    fn mixed_journal(dir: &Path) -> Journal {
        let j = Journal::open(dir.join("journal"), Options::default()).unwrap();
        let kinds = [EventKind::Message, EventKind::ToolUse, EventKind::ToolResult, EventKind::Meta, EventKind::System];
        let mut i = 0u64;
        for r in 0..12u64 {
            let events = match r % 4 {
                0 => 70 + r as usize,
                1 => 3,
                2 => 0,
                _ => 33,
            };
            let mut batch = Vec::new();
            for k in 0..events {
                i += 1;
                let kind = if r == 6 { EventKind::Meta } else { kinds[k % kinds.len()] };
                batch.push(event(i, kind, &format!("record {r} event {k} word{} 发布流程 shared {{\"c\":\"x\\ndef\"}}", i % 17)));
            }
            append(&j, &ingested(batch));
            if r % 5 == 2 {
                append(&j, &entry(&format!("k{r}"), &format!("entry {r} word{r} shared")));
            }
            if r == 7 {
                j.append(vec![NewRecord::raw(RecordKind::Scratch as u8, 1, b"scratch".to_vec())]).unwrap();
            }
        }
        assert!(j.next_offset() >= crate::ahead::AHEAD_RECORDS_MIN, "enough records to read ahead");
        j
    }

    /// A catalog fed record by record with [`Catalog::apply`] (each record's documents
    /// tokenized in place or by `add_all`'s helper): what reading ahead must match.
    fn fed_in_place(idx: &Path, j: &Journal) -> Catalog {
        let (mut c, _) = Catalog::open(idx, j).unwrap();
        j.read_from(0, |r| {
            if c.wants(r.offset, r.kind) {
                c.apply(r.offset, &r.decode().unwrap().1).unwrap();
            } else {
                c.pass(r.offset);
            }
            Ok(ControlFlow::Continue(()))
        })
        .unwrap();
        c
    }

    /// Every file of a committed index but its lock, by name, with its bytes.
    fn index_files(idx: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(idx)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap() != LOCK_FILE)
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    }

    /// Reading ahead (decoded and tokenized on a helper) feeds the catalog exactly as feeding
    /// each record in place does: the same segment, byte for byte, and the same entries.
    #[test]
    fn catalog_fed_by_reading_ahead_writes_what_feeding_in_place_writes() {
        let dir = tempfile::tempdir().unwrap();
        let j = mixed_journal(dir.path());
        let mut reference = fed_in_place(&dir.path().join("in-place"), &j);
        let (mut c, _) = Catalog::open(&dir.path().join("ahead"), &j).unwrap();
        assert_eq!(c.catch_up(&j).unwrap(), j.next_offset());
        assert_eq!(c.read_to(), j.next_offset());
        assert_eq!(c.index().doc_count(), reference.index().doc_count());
        assert_eq!(keys(&c, "shared", Scope::Entry), ["k2", "k7"]);
        assert_eq!(keys(&c, "shared", Scope::Entry), keys(&reference, "shared", Scope::Entry));
        assert_eq!(keys(&c, "发布 shared", Scope::Event), keys(&reference, "发布 shared", Scope::Event));
        // A tool call's text is JSON (its escape parts words), any other's plain (where the
        // escape's letter stays glued to the word, which also gives the word without it).
        let every = keys_up_to(&c, "def", Scope::Event, 10_000);
        assert!(every == keys_up_to(&reference, "def", Scope::Event, 10_000));
        let others = keys_up_to(&c, "ndef", Scope::Event, 10_000);
        assert!(!others.is_empty() && others == keys_up_to(&reference, "ndef", Scope::Event, 10_000));
        assert!(others.iter().all(|k| every.contains(k)), "a plain text holds the word both ways");
        assert!(every.iter().any(|k| !others.contains(k)), "a tool call's JSON holds it one way");
        assert_eq!(c.commit().unwrap(), Committed::Written);
        assert_eq!(reference.commit().unwrap(), Committed::Written);
        let (ahead, in_place) = (index_files(&dir.path().join("ahead")), index_files(&dir.path().join("in-place")));
        assert!(ahead.len() >= 3, "{:?}", ahead.iter().map(|f| &f.0).collect::<Vec<_>>());
        assert!(ahead == in_place, "the index files differ");
    }

    /// A reader stopped after any record (runs of later records tokenized already) leaves
    /// the catalog at that record; the next read goes on from there to the same index.
    #[test]
    fn catalog_read_ahead_stops_where_told_and_goes_on_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let j = mixed_journal(dir.path());
        let mut reference = fed_in_place(&dir.path().join("in-place"), &j);
        assert_eq!(reference.commit().unwrap(), Committed::Written);
        let want = index_files(&dir.path().join("in-place"));
        for stop in 0..j.next_offset() {
            let idx = dir.path().join(format!("ahead-{stop}"));
            let (mut c, _) = Catalog::open(&idx, &j).unwrap();
            let cursors = c.cursors();
            let mut seen = 0;
            read_records(&j, 0, cursors.events, |o, k| cursors.wants(o, k), |mut r, runs| {
                seen += 1;
                match r.body.take() {
                    Some(body) => c.apply_read(&r, &body.unwrap(), runs).unwrap(),
                    None => c.pass(r.offset),
                }
                Ok::<_, CatalogError>(if r.offset == stop { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
            })
            .unwrap();
            assert_eq!((seen, c.read_to()), (stop + 1, stop + 1));
            c.catch_up(&j).unwrap();
            assert_eq!(c.commit().unwrap(), Committed::Written);
            assert!(index_files(&idx) == want, "stopped after offset {stop}: the index files differ");
        }
    }

    /// A record the catalog reads that does not decode stops a read ahead there, with the
    /// records before it fed and none after; a damaged frame further on is the journal's
    /// error, after every record before it.
    #[test]
    fn catalog_read_ahead_stops_at_a_record_that_does_not_decode_or_a_damaged_frame() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        for r in 0..10u64 {
            if r == 5 {
                j.append(vec![NewRecord::raw(RecordKind::Ingested as u8, 1, b"not an ingested record".to_vec())]).unwrap();
                continue;
            }
            let events = (0..40).map(|k| event(r * 100 + k, EventKind::Message, &format!("word{r} filler {k}"))).collect();
            append(&j, &ingested(events));
        }
        let (mut c, _) = Catalog::open(&dir.path().join("index"), &j).unwrap();
        let failed = c.catch_up(&j).unwrap_err();
        assert!(failed.to_string().contains("offset 5"), "{failed}");
        assert_eq!(c.read_to(), 5, "fed up to the record that does not decode");
        assert_eq!(c.index().doc_count(), 5 * 40);
        assert_eq!(keys(&c, "word4", Scope::Event).len(), 40);
        assert!(keys(&c, "word6", Scope::Event).is_empty());
        drop(c);

        // The last record's frame damaged once the journal is open (its payload's bytes are
        // the file's last but the trailer's four): a read ahead fails there, after feeding
        // every record before it.
        let seg = fs::read_dir(dir.path().join("journal"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "seg"))
            .expect("a segment file");
        let file = fs::OpenOptions::new().read(true).write(true).open(&seg).unwrap();
        let at = file.metadata().unwrap().len() - 20;
        let mut byte = [0u8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut byte, at).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, &[byte[0] ^ 0x40], at).unwrap();
        let (mut c, _) = Catalog::open(&dir.path().join("index-2"), &j).unwrap();
        assert!(c.catch_up(&j).unwrap_err().to_string().contains("offset 5"));
        c.pass(5);
        let failed = c.catch_up(&j).unwrap_err();
        assert_eq!(c.read_to(), 9, "fed up to the damaged record");
        assert_eq!(c.index().doc_count(), 8 * 40);
        let name = seg.file_name().unwrap().to_string_lossy().into_owned();
        assert!(failed.to_string().contains(&name), "names the segment: {failed}");
        assert!(failed.to_string().contains("seg"), "names the segment: {failed}");
    }

    /// An index built from another copy of the journal (the same store and epoch, at least as
    /// long, other records there: restored from a backup and written to since) is rebuilt; the
    /// journal it was built from still loads it.
    #[test]
    fn an_index_of_another_copy_of_the_journal_is_rebuilt() {
        let (dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        let other = copy_of(&j, &dir.path().join("other"));
        append(&other, &ingested(vec![event(9, EventKind::Message, "something else")]));
        let mut c = rebuilt_for_the_copy(&idx, &other, "the record at offset 0 does not hold event claude-code:e1");
        assert!(keys(&c, "release", Scope::Event).is_empty());
        assert_eq!(c.commit().unwrap(), Committed::Written);
        drop(c);
        let (_, opened) = Catalog::open(&idx, &other).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 }, "its own copy loads it");
    }

    /// Opens the index in `idx` for `other`, a copy of its journal holding the message "something
    /// else" (`e9`): rebuilt, saying `why`, then fed from the copy.
    fn rebuilt_for_the_copy(idx: &Path, other: &Journal, why: &str) -> Catalog {
        let (mut c, opened) = Catalog::open(idx, other).unwrap();
        assert_eq!(opened, CatalogOpened::Rebuilt { reason: format!("its documents are of another copy of the journal: {why}") });
        c.catch_up(other).unwrap();
        assert_eq!(keys(&c, "else", Scope::Event), ["claude-code:e9"]);
        c
    }

    /// A new journal in `path` with `j`'s store id and epoch: another copy of it, as one
    /// restored from a backup and written to since.
    fn copy_of(j: &Journal, path: &Path) -> Journal {
        Journal::open(path, Options { new_store_identity: Some((j.store_id(), j.epoch())), ..Options::default() }).unwrap()
    }

    /// Another copy of the journal that agrees up to the index's newest document but holds
    /// searchable events after it, below the index's mark (where this copy had an entry): the
    /// index would never feed them, so it is rebuilt; an entry there, as in its own copy, is
    /// no reason.
    #[test]
    fn an_index_of_a_copy_that_differs_after_its_newest_document_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(&j, &ingested(vec![event(1, EventKind::Message, "release workflow")]));
        append(&j, &entry("k1", "an entry after the last event"));
        append(&j, &ingested(vec![event(2, EventKind::Meta, "injected context, not searchable")]));
        let idx = dir.path().join("index");
        let (mut c, _) = Catalog::open(&idx, &j).unwrap();
        c.catch_up(&j).unwrap();
        assert_eq!(c.commit().unwrap(), Committed::Written);
        drop(c);
        let (_, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 3 }, "its own copy, records after its newest document included");
        let copy = |name: &str, second: &NewRecord| {
            let other = copy_of(&j, &dir.path().join(name));
            append(&other, &ingested(vec![event(1, EventKind::Message, "release workflow")]));
            other.append(vec![second.clone()]).unwrap();
            append(&other, &entry("k2", "written since"));
            other
        };
        let same_kind = copy("same", &NewRecord::new(&entry("k9", "another entry")).unwrap());
        let (_, opened) = Catalog::open(&idx, &same_kind).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 3 });
        // A record there that does not decode cannot be judged: the index stays, and the open
        // does not fail (the catch-up never reads below the mark).
        let undecodable = copy("undecodable", &NewRecord::raw(RecordKind::Ingested as u8, 1, b"not a record".to_vec()));
        let (_, opened) = Catalog::open(&idx, &undecodable).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 3 });
        let other = copy("other", &NewRecord::new(&ingested(vec![event(9, EventKind::Message, "something else")])).unwrap());
        rebuilt_for_the_copy(&idx, &other, "the record at offset 1 holds events it has not indexed, below its mark 3");
    }

    /// Sets the last four bytes of an index's `journal` file to the CRC of the rest.
    fn reseal_identity(b: &mut Vec<u8>) {
        let n = b.len() - 4;
        let crc = crc32fast::hash(&b[..n]);
        b[n..].copy_from_slice(&crc.to_le_bytes());
    }

    /// An index fed from other kinds of record than this build reads (a later build that
    /// indexes a kind this one passes over would find records below the mark never read), or
    /// whose `journal` file does not say which (written before it named them), is rebuilt
    /// from the journal, and says why; a damaged byte there is damage.
    #[test]
    fn an_index_fed_from_other_record_kinds_is_rebuilt() {
        let (_dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        let ours = fs::read(idx.join(IDENTITY_FILE)).unwrap();
        assert_eq!(ours.len(), IDENTITY_SIZE_BYTES as usize);
        let mut other = ours.clone();
        other[36..40].copy_from_slice(&origin_engine::record::kinds_read_fingerprint(|k| reads_kind(k) || k == 7).to_le_bytes());
        reseal_identity(&mut other);
        let mut unnamed = ours[..36].to_vec();
        unnamed.extend_from_slice(&[0; 4]);
        reseal_identity(&mut unnamed);
        let mut damaged = ours.clone();
        damaged[37] ^= 1;
        for (file, why) in [
            (other, "it was fed from other kinds of record than this version of Origin reads"),
            (unnamed, "it was built by an older version of Origin (it does not name the record kinds it was fed from)"),
            (damaged, "it belongs to another journal (store id or epoch differ), or its journal file is damaged"),
        ] {
            fs::write(idx.join(IDENTITY_FILE), &file).unwrap();
            let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
            assert_eq!(opened, CatalogOpened::Rebuilt { reason: why.into() });
            assert_eq!(c.read_to(), 0, "fed again from the journal's start");
            c.catch_up(&j).unwrap();
            assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1"]);
            assert_eq!(c.commit().unwrap(), Committed::Written);
            drop(c);
            assert_eq!(fs::read(idx.join(IDENTITY_FILE)).unwrap(), ours, "its journal file written as this build writes it");
            let (_, opened) = Catalog::open(&idx, &j).unwrap();
            assert!(matches!(opened, CatalogOpened::Loaded { .. }), "{opened:?}");
        }
    }

    /// An index whose terms an older tokenizer cut (its `journal` file names tokenizer
    /// version 0) is rebuilt from the journal, and says why.
    #[test]
    fn an_index_of_an_older_tokenizer_is_rebuilt() {
        let (_dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        let mut old = fs::read(idx.join(IDENTITY_FILE)).unwrap();
        old[10..12].copy_from_slice(&0u16.to_le_bytes());
        reseal_identity(&mut old);
        fs::write(idx.join(IDENTITY_FILE), &old).unwrap();
        // A newer version, or the byte damaged (its CRC not fixed): not called older.
        let mut newer = old.clone();
        newer[10..12].copy_from_slice(&(TOKENS_VERSION + 1).to_le_bytes());
        reseal_identity(&mut newer);
        let mut damaged = old.clone();
        damaged[10] ^= 1;
        for other in [newer, damaged] {
            fs::write(idx.join(IDENTITY_FILE), &other).unwrap();
            let (_, opened) = Catalog::open(&idx, &j).unwrap();
            assert!(matches!(&opened, CatalogOpened::Rebuilt { reason } if reason.contains("damaged")), "{opened:?}");
        }
        fs::write(idx.join(IDENTITY_FILE), &old).unwrap();
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Rebuilt { reason: "its words were cut by an older version of Origin's tokenizer".into() });
        assert_eq!(c.read_to(), 0, "fed again from the journal's start");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1"]);
        let (_, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Fresh, "its journal file written again, with no segment yet");
        // The version just before this one is older too.
        let mut previous = fs::read(idx.join(IDENTITY_FILE)).unwrap();
        previous[10..12].copy_from_slice(&(TOKENS_VERSION - 1).to_le_bytes());
        reseal_identity(&mut previous);
        fs::write(idx.join(IDENTITY_FILE), &previous).unwrap();
        let (_, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Rebuilt { reason: "its words were cut by an older version of Origin's tokenizer".into() });
        // As builds before the file named the record kinds wrote it (40 bytes).
        let mut short = previous[..36].to_vec();
        short.extend_from_slice(&[0; 4]);
        reseal_identity(&mut short);
        fs::write(idx.join(IDENTITY_FILE), &short).unwrap();
        let (_, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Rebuilt { reason: "its words were cut by an older version of Origin's tokenizer".into() });
    }

    /// An index another process committed, of records it appended after this process's
    /// journal handle last looked, is not "ahead of the journal": the open looks again, loads
    /// it, and deletes nothing.
    #[test]
    fn an_index_of_records_this_handle_has_not_seen_yet_is_loaded_not_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let j1 = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let j2 = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(&j2, &ingested(vec![event(1, EventKind::Message, "release workflow")]));
        let idx = dir.path().join("index");
        let (mut c2, _) = Catalog::open(&idx, &j2).unwrap();
        c2.catch_up(&j2).unwrap();
        assert_eq!(c2.commit().unwrap(), Committed::Written);
        assert_eq!(j1.next_offset(), 0, "the first handle has not looked since");
        let (c1, opened) = Catalog::open(&idx, &j1).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 });
        assert_eq!(keys(&c1, "release", Scope::Event), ["claude-code:e1"]);
        assert_eq!(keys(&c2, "workflow", Scope::Event), ["claude-code:e1"], "the segment the other process holds is still there");
    }

    /// A commit is called for by the documents' count or their bytes in memory, whichever
    /// comes first; large records are fed through the helper thread with the same answers.
    #[test]
    fn catalog_wants_a_commit_by_documents_or_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let (mut c, _) = Catalog::open(&dir.path().join("index"), &j).unwrap();
        c.set_commit_docs(u32::MAX);
        c.set_commit_bytes(1);
        assert_eq!(c.commit_bytes, 1 << 20, "at least 1 MiB");
        let mut n = 0u64;
        while !c.wants_commit() {
            // Records of 200 events of about 700 bytes: over the helper's threshold.
            let events = (0..200)
                .map(|k| {
                    n += 1;
                    let words: Vec<String> = (0..100).map(|w| format!("w{}", (n * 7919 + k * 31 + w) % 100_003)).collect();
                    event(n, EventKind::Message, &format!("release {}", words.join(" ")))
                })
                .collect();
            append(&j, &ingested(events));
            c.catch_up(&j).unwrap();
            assert!(n < 1_000_000, "never asked for a commit");
        }
        let bytes = c.index().memory_bytes();
        assert!(bytes >= 1 << 20, "{bytes}");
        assert_eq!(u64::from(c.index().memory_doc_count()), n);
        assert!(n < 20_000, "{n} documents before 1 MiB");
        assert_eq!(keys(&c, "release", Scope::Event).len(), 50, "the limit of hits");
        assert_eq!(c.commit().unwrap(), Committed::Written);
        assert!(!c.wants_commit());
        // By count: one document more than the count set.
        c.set_commit_bytes(usize::MAX);
        c.set_commit_docs(2);
        append(&j, &ingested(vec![event(n + 1, EventKind::Message, "one"), event(n + 2, EventKind::Message, "two")]));
        c.catch_up(&j).unwrap();
        assert!(c.wants_commit());
    }

    #[test]
    fn catalog_commit_on_a_thread_of_its_own_holds_the_lock_and_keeps_documents_searchable() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(&j, &ingested(vec![event(1, EventKind::Message, "release workflow"), event(2, EventKind::Message, "release notes")]));
        let idx = dir.path().join("index");
        let (mut c, _) = Catalog::open(&idx, &j).unwrap();
        let (mut other, _) = Catalog::open(&idx, &j).unwrap();
        c.catch_up(&j).unwrap();
        let mark = c.read_to();
        let f = c.start_commit().unwrap().expect("a segment to write");
        // Written meanwhile: feeding goes on, every document is found, no second commit
        // starts, and another process cannot write the index.
        append(&j, &ingested(vec![event(3, EventKind::Message, "release later")]));
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1", "claude-code:e2", "claude-code:e3"]);
        assert!(!c.wants_commit());
        assert_eq!(c.commit().unwrap(), Committed::Busy);
        assert!(matches!(c.start_commit().unwrap(), Err(Committed::Busy)));
        other.catch_up(&j).unwrap();
        assert_eq!(other.commit().unwrap(), Committed::Busy);
        let f = f.wait();
        assert!(f.is_finished());
        c.finish_commit(f).unwrap();
        assert_eq!(c.index().mark(), Some(mark));
        assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1", "claude-code:e2", "claude-code:e3"]);
        // The other process takes the segment and feeds what follows its mark.
        assert_eq!(other.commit().unwrap(), Committed::Superseded);
        other.catch_up(&j).unwrap();
        assert_eq!(keys(&other, "release", Scope::Event), ["claude-code:e1", "claude-code:e2", "claude-code:e3"]);
        assert_eq!(other.commit().unwrap(), Committed::Written);
        let (reopened, _) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(reopened.index().doc_count(), 3);
    }

    #[test]
    fn catalog_commit_that_fails_on_its_thread_feeds_its_documents_again() {
        let (dir, j, idx, mut c) = committed_store_of_one_event();
        append(&j, &ingested(vec![event(2, EventKind::Message, "release notes")]));
        c.catch_up(&j).unwrap();
        let mark = c.index().mark();
        let f = c.start_commit().unwrap().expect("a segment to write");
        append(&j, &ingested(vec![event(3, EventKind::Message, "release later")]));
        c.catch_up(&j).unwrap();
        // The segment is written; then the directory goes away, so its manifest cannot be.
        let f = f.wait();
        let away = dir.path().join("away");
        fs::rename(&idx, &away).unwrap();
        let result = c.finish_commit(f);
        fs::rename(&away, &idx).unwrap();
        assert!(result.is_err(), "the manifest could not be written");
        // The frozen and newer documents were dropped; the catalog reads again from the mark.
        assert_eq!(c.index().mark(), mark);
        assert_eq!(c.read_to(), mark.unwrap());
        assert!(keys(&c, "release", Scope::Event).len() == 1);
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1", "claude-code:e2", "claude-code:e3"]);
        assert_eq!(c.commit().unwrap(), Committed::Written);
    }

    #[test]
    fn catalog_indexes_searchable_events_and_entries_and_picks_up_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(
            &j,
            &ingested(vec![
                event(1, EventKind::Message, "release workflow"),
                event(2, EventKind::Meta, "release thinking"),
                event(3, EventKind::ToolResult, "release output"),
            ]),
        );
        append(&j, &entry("ent_000000000001", "release entry"));
        let idx = dir.path().join("index");
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Fresh);
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1", "claude-code:e3"], "meta events are not indexed");
        assert_eq!(keys(&c, "release", Scope::Entry), ["ent_000000000001"]);
        let hits = c.search(&parse_query("workflow").unwrap(), &Filters::default(), &|_| true, 5).unwrap();
        assert_eq!((hits[0].record, hits[0].position), (0, 0));
        assert_eq!(c.commit().unwrap(), Committed::Written);
        append(&j, &ingested(vec![event(4, EventKind::Message, "release after commit")]));
        c.catch_up(&j).unwrap();
        drop(c);
        append(&j, &entry("ent_000000000002", "release later entry"));
        // Reopened: the committed events from disk, the rest fed again from the journal; the
        // entries, which live in memory, seeded from the state or else read from the start.
        for seeded in [true, false] {
            let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
            assert_eq!(opened, CatalogOpened::Loaded { mark: 2 });
            assert_eq!(c.read_to(), 0, "the entries are still to be fed");
            if seeded {
                // A state that read only the first record: seeds below it, the rest is fed.
                let mut state = crate::State::replay(&j, crate::Until::End).unwrap();
                assert_eq!(state.read_to(), 4);
                c.seed_entries(&state).unwrap();
                assert_eq!(c.read_to(), 2);
                assert!(c.seed_entries(&state).is_err(), "seeded twice");
                state = crate::State::new();
                c = Catalog::open(&idx, &j).unwrap().0;
                c.seed_entries(&state).unwrap();
                assert_eq!(c.read_to(), 0, "an empty state seeds nothing");
                let state = crate::State::replay(&j, crate::Until::End).unwrap();
                c = Catalog::open(&idx, &j).unwrap().0;
                c.seed_entries(&state).unwrap();
                assert!(c.wants(3, RecordKind::Remembered as u8) && !c.wants(1, RecordKind::Remembered as u8));
                assert!(c.wants(2, RecordKind::Ingested as u8) && !c.wants(0, RecordKind::Ingested as u8));
            }
            c.catch_up(&j).unwrap();
            assert_eq!(c.read_to(), 4);
            assert_eq!(keys(&c, "release", Scope::Event), ["claude-code:e1", "claude-code:e3", "claude-code:e4"]);
            assert_eq!(keys(&c, "release", Scope::Entry), ["ent_000000000001", "ent_000000000002"], "seeded: {seeded}");
            assert_eq!(c.index().doc_count(), 3, "events only, none twice");
            assert_eq!(c.entries().doc_count(), 2, "seeded: {seeded}");
            // Both scopes at once: full matches of both.
            let all = c.search(&parse_query("release").unwrap(), &Filters { include_tools: true, ..Filters::default() }, &|_| true, 10).unwrap();
            assert_eq!(all.len(), 5);
            assert_eq!(all.iter().filter(|h| h.doc >= ENTRY_DOC_BASE).count(), 2);
        }
    }

    /// An event whose id (or project) is longer than the index holds, and an entry whose
    /// project is, are left out of the index and counted: the rest of their records is fed
    /// once, and every later record too (an error there stopped the feed for good, and each
    /// retry added the record's earlier documents again). Read in place and read ahead alike.
    #[test]
    fn catalog_leaves_out_documents_whose_metadata_the_index_cannot_hold() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let long = "x".repeat(crate::index::limits::META_STRING_SIZE_BYTES_MAX + 1);
        let mut odd = event(2, EventKind::Message, "release too long an id");
        odd.id = format!("claude-code:{long}");
        let mut far = event(3, EventKind::ToolResult, "release too long a project");
        far.project = Some(long.clone());
        append(&j, &ingested(vec![event(0, EventKind::Message, "release zero")]));
        append(&j, &ingested(vec![event(1, EventKind::Message, "release first"), odd, far, event(4, EventKind::Message, "release last")]));
        let Body::Remembered(mut v) = entry("ent_000000000009", "release entry of a long project") else { unreachable!() };
        v.project = Some(long.clone());
        append(&j, &Body::Remembered(v));
        append(&j, &entry("ent_000000000001", "release entry"));
        for r in 5..9 {
            append(&j, &ingested(vec![event(r, EventKind::Message, "release later")]));
        }
        let fed_in_place = fed_in_place(&dir.path().join("in-place"), &j);
        let (mut ahead, _) = Catalog::open(&dir.path().join("ahead"), &j).unwrap();
        ahead.catch_up(&j).unwrap();
        for c in [&fed_in_place, &ahead] {
            assert_eq!(c.read_to(), j.next_offset(), "fed to the end");
            assert_eq!(
                keys(c, "release", Scope::Event),
                ["claude-code:e0", "claude-code:e1", "claude-code:e4", "claude-code:e5", "claude-code:e6", "claude-code:e7", "claude-code:e8"]
            );
            assert_eq!(keys(c, "release", Scope::Entry), ["ent_000000000001"]);
            assert_eq!((c.index().doc_count(), c.entries().doc_count()), (7, 1), "none twice");
            assert_eq!(c.left_out().count, 3);
            assert!(c.left_out().last.as_deref().is_some_and(|w| w.contains("entry ent_000000000009") && w.contains("4097 bytes")), "{:?}", c.left_out());
        }
        assert_eq!(ahead.catch_up(&j).unwrap(), 0, "nothing left to feed");
        assert_eq!(ahead.left_out().count, 3, "counted once");
        // Another process commits the first record: this one takes its segment and feeds the
        // rest again from its mark, the record it left events out of too; still counted once.
        let (mut other, _) = Catalog::open(&dir.path().join("ahead"), &j).unwrap();
        j.read_from(0, |r| {
            other.apply(r.offset, &r.decode().unwrap().1).unwrap();
            Ok(ControlFlow::Break(()))
        })
        .unwrap();
        assert_eq!(other.commit().unwrap(), Committed::Written);
        ahead.catch_up(&j).unwrap();
        assert_eq!(ahead.index().doc_count(), 7, "the other's segment and the rest fed again");
        assert_eq!(keys(&ahead, "release", Scope::Event).len(), 7);
        assert_eq!(ahead.left_out().count, 3, "not counted again");
    }

    /// A journal and two catalogs on one index directory, as two processes: the folder, the
    /// journal, the index's path and the two.
    fn two_catalogs() -> (tempfile::TempDir, Journal, PathBuf, Catalog, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let idx = dir.path().join("index");
        let (a, _) = Catalog::open(&idx, &j).unwrap();
        let (b, _) = Catalog::open(&idx, &j).unwrap();
        (dir, j, idx, a, b)
    }

    /// Two catalogs on one directory, as two processes: each feeds what the other has not
    /// committed; after one commits, the other takes the segment and feeds on from its mark,
    /// and both answer alike, without a document twice.
    #[test]
    fn catalog_two_processes_share_one_index_without_duplicates() {
        let (_dir, j, _idx, mut a, mut b) = two_catalogs();
        for i in 0..6u64 {
            append(&j, &ingested(vec![event(i, EventKind::Message, &format!("shared words {i}"))]));
            a.catch_up(&j).unwrap();
            b.catch_up(&j).unwrap();
            if i == 2 {
                assert_eq!(a.commit().unwrap(), Committed::Written);
                // B's in-memory documents were committed by A: B is told, and feeds on.
                assert_eq!(b.commit().unwrap(), Committed::Superseded);
                assert_eq!(b.read_to(), 3);
                b.catch_up(&j).unwrap();
                assert_eq!(b.commit().unwrap(), Committed::Nothing);
            }
            if i == 4 {
                assert_eq!(b.commit().unwrap(), Committed::Written);
            }
        }
        for c in [&mut a, &mut b] {
            c.catch_up(&j).unwrap();
            let k = keys(c, "shared words", Scope::Event);
            assert_eq!(k.len(), 6, "{k:?}");
            assert_eq!(c.index().doc_count(), 6);
        }
        // While one holds the writer's lock, the other's commit waits its turn.
        let planned = a.plan_merge(&MergePolicy { merge_factor: 2, segments_max: 4, idle: false }).unwrap().expect("two segments");
        append(&j, &ingested(vec![event(9, EventKind::Message, "shared words 9")]));
        b.catch_up(&j).unwrap();
        assert_eq!(b.commit().unwrap(), Committed::Busy);
        let merged = merge(&planned.job).unwrap();
        a.install_merge(merged, planned).unwrap();
        assert_eq!(b.commit().unwrap(), Committed::Written);
        a.catch_up(&j).unwrap();
        assert_eq!(keys(&a, "shared words", Scope::Event).len(), 7);
        assert_eq!(a.index().doc_count(), 7);
    }

    /// Opening the state and the index side by side gives what opening them one after the
    /// other gives: the snapshot loaded, the segments used, the same state and answers.
    #[test]
    fn catalog_opened_beside_the_state_answers_as_opened_alone() {
        let (dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        append(&j, &entry("k1", "the release workflow signs tags"));
        let snap = dir.path().join("state.snap");
        State::replay(&j, crate::Until::End).unwrap().save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
        append(&j, &ingested(vec![event(2, EventKind::Message, "workflow after the snapshot")]));
        let (alone, alone_opened) = State::open(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
        let both = crate::open_projections(&j, &snap, &idx, crate::Verify::Ahead, crate::StateRead::ToEnd).unwrap();
        assert!(matches!(both.state_opened.snapshot, crate::SnapshotUse::Loaded { .. }), "{:?}", both.state_opened.snapshot);
        assert_eq!(both.state_opened.snapshot, alone_opened.snapshot);
        assert_eq!(both.catalog_opened, CatalogOpened::Loaded { mark: 1 });
        assert_eq!(both.state.digest(), alone.digest());
        assert_eq!(both.state.digest(), State::replay(&j, crate::Until::End).unwrap().digest());
        let mut c = both.catalog;
        c.seed_entries(&both.state).unwrap();
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1", "claude-code:e2"]);
        assert_eq!(keys(&c, "signs", Scope::Entry), ["k1"]);
    }

    /// A process whose reload finds the index damaged (a segment another process committed
    /// that fails its checks, a damaged manifest) builds it again from the journal, as an open
    /// would, and answers whole; the other process takes the new index.
    #[test]
    fn catalog_that_finds_damage_reloading_rebuilds_the_index() {
        let (_dir, j, idx, mut a, mut b) = two_catalogs();
        let all = |n: u64| (0..n).map(|i| format!("claude-code:e{i}")).collect::<std::collections::BTreeSet<_>>();
        let found = |c: &Catalog| keys(c, "shared", Scope::Event).into_iter().collect::<std::collections::BTreeSet<_>>();
        for i in 0..4u64 {
            append(&j, &ingested(vec![event(i, EventKind::Message, &format!("shared words {i}"))]));
        }
        a.catch_up(&j).unwrap();
        assert_eq!(a.commit().unwrap(), Committed::Written);
        b.catch_up(&j).unwrap();
        for i in 4..8u64 {
            append(&j, &ingested(vec![event(i, EventKind::Message, &format!("shared words {i}"))]));
        }
        a.catch_up(&j).unwrap();
        assert_eq!(a.commit().unwrap(), Committed::Written);
        let newest = segment_files(&idx).into_iter().max().unwrap();
        let mut bytes = fs::read(&newest).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        fs::write(&newest, &bytes).unwrap();
        let why = b.refresh_repairing(&j).unwrap().expect("rebuilt");
        assert!(why.contains(&newest.file_name().unwrap().to_string_lossy().into_owned()), "{why}");
        b.catch_up(&j).unwrap();
        assert_eq!(found(&b), all(8));
        assert_eq!(b.commit().unwrap(), Committed::Written);
        a.catch_up(&j).unwrap();
        assert_eq!(found(&a), all(8), "the other takes the new index");
        // A damaged manifest: the same.
        append(&j, &ingested(vec![event(8, EventKind::Message, "shared words 8")]));
        a.catch_up(&j).unwrap();
        assert_eq!(a.commit().unwrap(), Committed::Written);
        damage_the_manifest(&idx);
        assert!(b.refresh_repairing(&j).unwrap().is_some(), "rebuilt");
        b.catch_up(&j).unwrap();
        assert_eq!(found(&b), all(9));
    }

    /// A damaged snapshot is rebuilt beside the index; an index folder that cannot be made is
    /// an index in memory, the reason said; a record the state cannot decode fails the state,
    /// whose error is given (also when the index's folder cannot be made).
    #[test]
    fn catalog_opened_beside_the_state_reports_what_failed() {
        let (dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        let snap = dir.path().join("state.snap");
        State::replay(&j, crate::Until::End).unwrap().save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).unwrap();
        let mut bytes = fs::read(&snap).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        fs::write(&snap, &bytes).unwrap();
        let both = crate::open_projections(&j, &snap, &idx, crate::Verify::Ahead, crate::StateRead::ToEnd).unwrap();
        assert!(matches!(&both.state_opened.snapshot, crate::SnapshotUse::Rejected { .. }), "{:?}", both.state_opened.snapshot);
        assert_eq!(both.state.digest(), State::replay(&j, crate::Until::End).unwrap().digest());
        assert_eq!(both.catalog_opened, CatalogOpened::Loaded { mark: 1 });
        drop(both);
        // The index's folder is a file.
        let file = dir.path().join("not-a-folder");
        fs::write(&file, b"x").unwrap();
        let mut in_file = crate::open_projections(&j, &snap, &file, crate::Verify::Ahead, crate::StateRead::ToEnd).unwrap();
        assert!(matches!(&in_file.catalog_opened, CatalogOpened::InMemory { reason } if reason.contains("not-a-folder")), "{:?}", in_file.catalog_opened);
        in_file.catalog.catch_up(&j).unwrap();
        assert_eq!(keys(&in_file.catalog, "release", Scope::Event).len(), 1, "searched in memory");
        assert_eq!(fs::read(&file).unwrap(), b"x", "the file left as it was");
        drop(in_file);
        // A record the state cannot decode (the index reads no record until it catches up):
        // the state's error, alone and when the index fails too.
        let version = RecordKind::Remembered.current_version();
        j.append(vec![NewRecord::raw(RecordKind::Remembered as u8, version, b"not an entry".to_vec())]).unwrap();
        for index_dir in [&idx, &file] {
            match crate::open_projections(&j, &dir.path().join("missing.snap"), index_dir, crate::Verify::Ahead, crate::StateRead::ToEnd) {
                Err(crate::OpenError::State(e)) => assert!(e.to_string().contains("offset"), "{e}"),
                Err(e) => panic!("the index's error was given: {e}"),
                Ok(_) => panic!("a record that cannot be decoded was applied"),
            }
        }
    }

    /// A first open of the index on a full disk (each write it makes failing in turn with
    /// ENOSPC: its manifest, its journal file) answers from an index in memory, the reason
    /// said, instead of failing every read of the store; the disk freed, the next open writes
    /// the index on it.
    #[test]
    fn an_index_that_cannot_be_written_at_its_first_open_is_built_in_memory() {
        use origin_engine::sim::{Fault, SimFs};
        let store = || {
            let fs = SimFs::new(5);
            let vfs: Arc<dyn origin_engine::vfs::Vfs> = Arc::new(fs.clone());
            let j = Journal::open_with(vfs, Path::new("/s/journal"), Options::default()).unwrap();
            append(&j, &ingested(vec![event(1, EventKind::Message, "release workflow")]));
            (fs, j)
        };
        let open = |j: &Journal| crate::open_projections(j, Path::new("/s/state.snap"), Path::new("/s/index"), crate::Verify::WhenNeeded, crate::StateRead::ToEnd).unwrap();
        // The writes a first open makes, counted on a disk with room.
        let (fs, j) = store();
        let from = fs.ops();
        assert_eq!(open(&j).catalog_opened, CatalogOpened::Fresh);
        let writes: Vec<u64> = fs.kinds()[from as usize..].iter().enumerate().filter(|(_, k)| **k == "write").map(|(i, _)| from + i as u64).collect();
        assert!(writes.len() >= 2, "{:?}", fs.kinds());
        for at in writes {
            let (fs, j) = store();
            fs.inject(at, Fault::DiskFull);
            let mut o = open(&j);
            assert!(matches!(&o.catalog_opened, CatalogOpened::InMemory { reason } if reason.contains("No space left on device")), "{at}: {:?}", o.catalog_opened);
            o.catalog.catch_up(&j).unwrap();
            assert_eq!(keys(&o.catalog, "release", Scope::Event), ["claude-code:e1"], "{at}: searched in memory");
            drop(o);
            let mut again = open(&j);
            assert!(matches!(again.catalog_opened, CatalogOpened::Fresh | CatalogOpened::Rebuilt { .. }), "{at}: {:?}", again.catalog_opened);
            again.catalog.catch_up(&j).unwrap();
            assert_eq!(again.catalog.commit().unwrap(), Committed::Written, "{at}: on disk once there is room");
        }
    }

    /// A store that cannot be written (a read-only mount): its index is read as it is and
    /// nothing is written to its folder: no leftover of a crashed writer removed, no segment
    /// committed or merged (the documents it lacks stay in memory), a damaged segment built
    /// again in memory and not deleted, and a missing index built in memory.
    #[test]
    fn an_index_on_a_store_that_cannot_be_written_is_read_as_it_is() {
        use origin_engine::sim::{files_under, ReadOnlyFs};
        use origin_engine::vfs::{OsFs, Vfs};
        let (dir, j, idx, mut c) = committed_store_of_one_event();
        append(&j, &ingested(vec![event(2, EventKind::Message, "release notes")]));
        c.catch_up(&j).unwrap();
        assert_eq!(c.commit().unwrap(), Committed::Written);
        drop(c);
        assert_eq!(segment_files(&idx).len(), 2, "two segments, which an idle index would merge");
        // Records the index has not read, and what a crashed writer left.
        append(&j, &ingested(vec![event(3, EventKind::Message, "release checklist")]));
        fs::write(idx.join("9.segment.tmp"), b"left by a crash").unwrap();
        drop(j);
        let before = files_under(dir.path());
        let ro: Arc<dyn Vfs> = Arc::new(ReadOnlyFs::new(Arc::new(OsFs)));
        let j = Journal::open_with(ro, &dir.path().join("journal"), Options { access: origin_engine::Access::ReadOnly, ..Options::default() }).unwrap();
        let all = ["claude-code:e1", "claude-code:e2", "claude-code:e3"];
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert!(matches!(opened, CatalogOpened::Loaded { .. }), "{opened:?}");
        c.set_commit_docs(1);
        c.catch_up(&j).unwrap();
        assert!(!c.wants_commit(), "a catalog that may not write keeps its documents in memory");
        assert_eq!(keys(&c, "release", Scope::Event), all);
        assert_eq!(c.commit().unwrap(), Committed::Busy);
        assert!(c.plan_merge(&MergePolicy { idle: true, ..MergePolicy::default() }).unwrap().is_none());
        assert_eq!(c.index().segments().len(), 2);
        assert_eq!(files_under(dir.path()), before, "nothing written");
        drop(c);
        // A damaged segment (the file system under the mount changed it): built again in
        // memory, the file left as it is.
        let seg = segment_files(&idx)[0].clone();
        let mut bytes = fs::read(&seg).unwrap();
        bytes[40] ^= 0x01;
        fs::write(&seg, &bytes).unwrap();
        let before = files_under(dir.path());
        let (mut c, _) = Catalog::open(&idx, &j).unwrap();
        assert!(c.index().verify().is_err_and(|e| e.to_string().contains("body CRC")));
        let reason = c.repair(&j).unwrap().expect("repaired");
        assert!(reason.contains("body CRC"), "{reason}");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), all);
        assert_eq!(files_under(dir.path()), before, "the damaged index left as it is");
        // A manifest damaged after the open (read again by a refresh): the same.
        fs::write(&seg, {
            bytes[40] ^= 0x01;
            &bytes
        })
        .unwrap();
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert!(matches!(opened, CatalogOpened::Loaded { .. }), "{opened:?}");
        let manifest = idx.join(crate::index::MANIFEST_FILE_NAME);
        let mut m = fs::read(&manifest).unwrap();
        let last = m.len() - 1;
        m[last] ^= 0x01;
        fs::write(&manifest, &m).unwrap();
        let before = files_under(dir.path());
        let reason = c.refresh_repairing(&j).unwrap().expect("repaired");
        assert!(reason.contains("manifest"), "{reason}");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), all);
        assert_eq!(files_under(dir.path()), before, "the damaged manifest left as it is");
        // The journal writable, the index's folder not (a read-only mount of it): the same.
        m[last] ^= 0x01;
        fs::write(&manifest, &m).unwrap();
        let rw = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        append(&rw, &ingested(vec![event(4, EventKind::Message, "release party")]));
        let before = files_under(&idx);
        let below: Arc<dyn Vfs> = Arc::new(ReadOnlyFs::below(Arc::new(OsFs), &idx));
        let rw = Journal::open_with(below, &dir.path().join("journal"), Options::default()).unwrap();
        let (mut c, opened) = Catalog::open(&idx, &rw).unwrap();
        assert!(matches!(opened, CatalogOpened::Loaded { .. }), "{opened:?}");
        c.set_commit_docs(1);
        c.catch_up(&rw).unwrap();
        assert!(!c.wants_commit());
        assert_eq!(c.commit().unwrap(), Committed::Busy);
        assert_eq!(keys(&c, "release", Scope::Event).len(), 4);
        assert_eq!(files_under(&idx), before, "nothing written in the index's folder");
        drop((c, rw));
        let before = files_under(dir.path());
        // No index: built in memory, the folder not made.
        let none = dir.path().join("no-index");
        let (mut c, opened) = Catalog::open(&none, &j).unwrap();
        assert!(matches!(&opened, CatalogOpened::InMemory { reason } if reason.contains("cannot be written")), "{opened:?}");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "release", Scope::Event), all);
        assert!(!none.exists());
        assert_eq!(files_under(dir.path()), before);
        // Damage a writer of the store repairs before this reader looks again (a read-only
        // mount of a live store): the writer's index is read, not given up for one in memory.
        let seg = segment_files(&idx)[0].clone();
        let mut bytes = fs::read(&seg).unwrap();
        bytes[40] ^= 0x01;
        fs::write(&seg, &bytes).unwrap();
        let (mut reader, _) = Catalog::open(&idx, &j).unwrap();
        assert!(reader.index().verify().is_err_and(|e| e.to_string().contains("body CRC")));
        // Its waits bounded (a server's), while a writer holds the index's lock past them: the
        // reader repairs nothing now, and waits no longer.
        j.set_lock_wait(Some(std::time::Duration::from_millis(300)));
        let held = OsFs.lock(&idx.join(LOCK_FILE), origin_engine::vfs::LockMode::Exclusive).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(reader.repair(&j).unwrap(), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(reader.index().damage().is_some(), "not repaired while held");
        drop(held);
        let writer_journal = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let (mut writer, _) = Catalog::open(&idx, &writer_journal).unwrap();
        assert!(writer.index().verify().is_err());
        assert!(writer.repair(&writer_journal).unwrap().is_some(), "the writer repairs");
        writer.catch_up(&writer_journal).unwrap();
        assert_eq!(writer.commit().unwrap(), Committed::Written);
        assert_eq!(reader.repair(&j).unwrap(), None, "the reader takes the writer's repair");
        assert!(!reader.index().segments().is_empty(), "the writer's segment read");
        reader.catch_up(&j).unwrap();
        assert_eq!(keys(&reader, "release", Scope::Event).len(), 4);
    }

    /// Flips a bit in the body of the index's one segment (its check finds it): the segment.
    fn damage_the_one_segment(idx: &Path) -> PathBuf {
        let [seg] = &segment_files(idx)[..] else { panic!("one segment") };
        let mut bytes = fs::read(seg).unwrap();
        bytes[40] ^= 0x01;
        fs::write(seg, &bytes).unwrap();
        seg.clone()
    }

    /// Flips bits in the first byte of the index's manifest (its magic; a reload finds it).
    fn damage_the_manifest(idx: &Path) {
        let manifest = idx.join(crate::index::MANIFEST_FILE_NAME);
        let mut bytes = fs::read(&manifest).unwrap();
        bytes[0] ^= 0x55;
        fs::write(&manifest, &bytes).unwrap();
    }

    /// The segment files of an index directory, sorted.
    fn segment_files(idx: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(idx).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "segment")).collect();
        v.sort();
        v
    }

    /// Three processes find the same damage (each verifies the segment it opened): the first
    /// to repair builds the index again; the others take what it did (before and after it
    /// wrote its new segment) instead of deleting that and starting over too.
    #[test]
    fn catalog_damage_several_processes_find_is_repaired_once() {
        let (_dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        let seg = &damage_the_one_segment(&idx);
        let (mut a, _) = Catalog::open(&idx, &j).unwrap();
        let (mut b, _) = Catalog::open(&idx, &j).unwrap();
        let (mut c, _) = Catalog::open(&idx, &j).unwrap();
        for x in [&a, &b, &c] {
            assert!(x.index().verify().is_err_and(|e| e.to_string().contains("body CRC")));
        }
        let reason = a.repair(&j).unwrap().expect("the first repairs");
        assert!(reason.contains("body CRC"), "{reason}");
        assert!(segment_files(&idx).is_empty());
        // Before the first wrote anything: the second takes the empty index and feeds it.
        assert_eq!(b.repair(&j).unwrap(), None, "the second takes the first's repair");
        assert!(b.index().damage().is_none() && b.index().segments().is_empty());
        b.catch_up(&j).unwrap();
        assert_eq!(keys(&b, "workflow", Scope::Event), ["claude-code:e1"]);
        // After the first wrote its segment: the third takes it.
        a.catch_up(&j).unwrap();
        assert_eq!(a.commit().unwrap(), Committed::Written);
        let written = segment_files(&idx);
        assert_eq!(written.len(), 1);
        assert_ne!(&written[0], seg, "a segment id the deleted index used is not used again");
        assert_eq!(c.repair(&j).unwrap(), None, "the third takes the first's repair");
        c.catch_up(&j).unwrap();
        assert_eq!(c.index().segments().len(), 1, "the third reads the first's segment");
        c.index().verify().unwrap();
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"]);
        b.catch_up(&j).unwrap();
        assert_eq!(keys(&b, "workflow", Scope::Event), ["claude-code:e1"]);
        assert_eq!(segment_files(&idx), written, "nothing the first wrote was deleted");
    }

    /// Where the journal's waits for its lock are bounded (a server's), a repair whose
    /// index writer's lock another process holds past that wait repairs nothing, and a later
    /// one does; a start-over (an open's rebuild) fails, saying who holds it.
    #[test]
    fn catalog_repair_waits_for_the_writers_lock_as_the_journal_waits_for_its_own() {
        let (_dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        damage_the_one_segment(&idx);
        let (mut a, _) = Catalog::open(&idx, &j).unwrap();
        assert!(a.index().verify().is_err());
        let wait = std::time::Duration::from_millis(300);
        j.set_lock_wait(Some(wait));
        let held = origin_engine::vfs::Vfs::lock(&origin_engine::vfs::OsFs, &idx.join(LOCK_FILE), origin_engine::vfs::LockMode::Exclusive).unwrap();
        let started = std::time::Instant::now();
        assert_eq!(a.repair(&j).unwrap(), None, "not repaired while held");
        // The journal's wait (300 ms), not another's.
        assert!(started.elapsed() >= wait && started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(a.index().damage().is_some() && segment_files(&idx).len() == 1, "nothing deleted");
        let started = std::time::Instant::now();
        let e = Catalog::start_over(&idx, &j).err().expect("held past the wait");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(e.to_string().contains("another process has held it for 0 s ("), "{e}");
        drop(held);
        assert!(a.repair(&j).unwrap().expect("repaired").contains("body CRC"));
        a.catch_up(&j).unwrap();
        assert_eq!(keys(&a, "workflow", Scope::Event), ["claude-code:e1"]);
        // Damage another process's reload finds (a damaged manifest): the same.
        assert_eq!(a.commit().unwrap(), Committed::Written);
        let (mut b, _) = Catalog::open(&idx, &j).unwrap();
        append(&j, &ingested(vec![event(2, EventKind::Message, "release workflow two")]));
        a.catch_up(&j).unwrap();
        assert_eq!(a.commit().unwrap(), Committed::Written);
        damage_the_manifest(&idx);
        let held = origin_engine::vfs::Vfs::lock(&origin_engine::vfs::OsFs, &idx.join(LOCK_FILE), origin_engine::vfs::LockMode::Exclusive).unwrap();
        let started = std::time::Instant::now();
        assert!(b.refresh_repairing(&j).is_err(), "not repaired while held");
        assert!(started.elapsed() >= wait && started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        drop(held);
        assert!(b.refresh_repairing(&j).unwrap().is_some(), "repaired");
        b.catch_up(&j).unwrap();
        assert_eq!(keys(&b, "workflow", Scope::Event).len(), 2);
    }

    #[test]
    fn catalog_rebuilds_an_index_it_cannot_use() {
        let (dir, j, idx, c) = committed_store_of_one_event();
        drop(c);
        // A damaged segment.
        let seg = fs::read_dir(&idx).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "segment")).unwrap();
        let mut bytes = fs::read(&seg).unwrap();
        bytes[40] ^= 0xff;
        fs::write(&seg, &bytes).unwrap();
        // Its structures intact, it opens; the check of its body finds the damage, and no
        // search reads it.
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 });
        assert!(c.index().verify().is_err_and(|e| e.to_string().contains("body CRC")));
        let q = parse_query("workflow").unwrap();
        let refused = c.search(&q, &Filters { scope: Some(Scope::Event), ..Filters::default() }, &|_| true, 10);
        assert!(refused.is_err(), "{refused:?}");
        // Repaired (by `catch_up`, which starts with it): the index is built again.
        c.catch_up(&j).unwrap();
        assert!(c.index().damage().is_none());
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"]);
        assert_eq!(c.repair(&j).unwrap(), None, "nothing left to repair");
        c.commit().unwrap();
        drop(c);
        let (c, opened) = Catalog::open(&idx, &j).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 });
        c.index().verify().unwrap();
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"]);
        drop(c);
        // A damaged segment whose structures do not check out is rebuilt on open.
        let seg = fs::read_dir(&idx).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "segment")).unwrap();
        let mut bytes = fs::read(&seg).unwrap();
        let at = bytes.len() - 10;
        bytes[at] ^= 0xff;
        fs::write(&seg, &bytes).unwrap();
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        assert!(matches!(&opened, CatalogOpened::Rebuilt { reason } if reason.contains("damaged")), "{opened:?}");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"]);
        c.commit().unwrap();
        drop(c);
        // A segment of the format before this build's, its header otherwise intact.
        let seg = fs::read_dir(&idx).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "segment")).unwrap();
        let mut bytes = fs::read(&seg).unwrap();
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        bytes[8..10].copy_from_slice(&(version - 1).to_le_bytes());
        let crc = crc32fast::hash(&bytes[0..28]);
        bytes[28..32].copy_from_slice(&crc.to_le_bytes());
        fs::write(&seg, &bytes).unwrap();
        let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
        let older = format!("format version {}", version - 1);
        assert!(matches!(&opened, CatalogOpened::Rebuilt { reason } if reason.contains(&older)), "{opened:?}");
        c.catch_up(&j).unwrap();
        assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"]);
        c.commit().unwrap();
        drop(c);
        // The index of another journal, with a folder someone left inside.
        fs::create_dir_all(idx.join("left-here").join("deeper")).unwrap();
        fs::write(idx.join("left-here").join("deeper").join("f"), b"x").unwrap();
        let other = Journal::open(dir.path().join("other"), Options::default()).unwrap();
        append(&other, &ingested(vec![event(7, EventKind::Message, "another store")]));
        let (mut c, opened) = Catalog::open(&idx, &other).unwrap();
        assert!(matches!(&opened, CatalogOpened::Rebuilt { reason } if reason.contains("another journal")), "{opened:?}");
        assert!(!idx.join("left-here").exists(), "a rebuild clears the folder");
        c.catch_up(&other).unwrap();
        assert!(keys(&c, "workflow", Scope::Event).is_empty());
        assert_eq!(keys(&c, "another", Scope::Event), ["claude-code:e7"]);
        c.commit().unwrap();
        // An unfinished write another process left behind is cleaned up.
        fs::write(idx.join("00000000000000000099.segment.tmp"), b"half").unwrap();
        drop(c);
        let (c, opened) = Catalog::open(&idx, &other).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 });
        assert!(!idx.join("00000000000000000099.segment.tmp").exists());
        drop(c);
        // So is a folder in the place of one (Origin writes none, but one kept every open from
        // working), with what it holds.
        fs::create_dir_all(idx.join("00000000000000000098.segment.tmp").join("inside")).unwrap();
        fs::write(idx.join("00000000000000000098.segment.tmp").join("inside").join("f"), b"x").unwrap();
        let (_c, opened) = Catalog::open(&idx, &other).unwrap();
        assert_eq!(opened, CatalogOpened::Loaded { mark: 1 });
        assert!(!idx.join("00000000000000000098.segment.tmp").exists());
    }

    /// A manifest or `journal` file far larger than any the index writes is not read into
    /// memory: the index is rebuilt, and answers as before.
    #[test]
    fn catalog_rebuilds_an_index_whose_small_files_are_huge_without_reading_them() {
        for name in ["manifest", IDENTITY_FILE] {
            let (_dir, j, idx, c) = committed_store_of_one_event();
            drop(c);
            fs::write(idx.join(name), vec![7u8; 1 << 20]).unwrap();
            let (mut c, opened) = Catalog::open(&idx, &j).unwrap();
            let CatalogOpened::Rebuilt { reason } = &opened else { panic!("{name}: {opened:?}") };
            if name == "manifest" {
                assert!(reason.contains("1048576 bytes, over the 32804-byte limit"), "{reason}");
            }
            c.catch_up(&j).unwrap();
            assert_eq!(keys(&c, "workflow", Scope::Event), ["claude-code:e1"], "{name}");
        }
    }

    // ---- faults at every I/O call ----

    use origin_engine::sim::{Fault, SimFs};

    const SIM_INDEX: &str = "/store/projections/index";
    const FAULT_QUERIES: [&str; 5] = ["release", "数据库", "\"tag from master\"", "how do we release the build?", "索引"];

    fn sim_journal(fs: &SimFs) -> Journal {
        Journal::open_with(Arc::new(fs.clone()), Path::new("/store/journal"), Options::default()).unwrap()
    }

    /// Three batches of events in a journal on a simulated machine, the first two fed and
    /// committed (two segments), the third not fed yet.
    fn sim_store_of_two_segments() -> SimFs {
        let fs = SimFs::new(41);
        let j = sim_journal(&fs);
        let texts = [
            "release workflow: tag from master once CI passes",
            "数据库的索引在合并后重建",
            "we release the build on Fridays",
            "索引 segments are merged in the background",
            "tag from master, then publish the release notes",
            "数据库 backups run nightly",
        ];
        let (mut c, _) = Catalog::open(Path::new(SIM_INDEX), &j).unwrap();
        for batch in 0..3u64 {
            let events = (0..4u64).map(|i| event(batch * 10 + i, EventKind::Message, texts[((batch * 4 + i) % 6) as usize])).collect();
            append(&j, &ingested(events));
            if batch < 2 {
                c.catch_up(&j).unwrap();
                assert_eq!(c.commit().unwrap(), Committed::Written);
            }
        }
        assert_eq!(c.index().segments().len(), 2);
        fs
    }

    /// The keys and kinds of match of each of [`FAULT_QUERIES`].
    fn fault_answers(c: &Catalog) -> Vec<Vec<(String, Match)>> {
        let f = Filters { include_tools: true, ..Filters::default() };
        FAULT_QUERIES
            .iter()
            .map(|q| c.search(&parse_query(q).unwrap(), &f, &|_| true, 50).unwrap().into_iter().map(|h| (h.key, h.matched)).collect())
            .collect()
    }

    /// What a writer does after a start: feeds what is new, commits it, merges by twos.
    fn commit_and_merge(c: &mut Catalog, j: &Journal) -> Result<(), CatalogError> {
        c.catch_up(j)?;
        c.commit()?;
        let policy = MergePolicy { merge_factor: 2, segments_max: 16, idle: false };
        while let Some(planned) = c.plan_merge(&policy)? {
            let merged = merge(&planned.job)?;
            c.install_merge(merged, planned)?;
        }
        Ok(())
    }

    /// Unfinished writes left in the index folder.
    fn temporaries(fs: &SimFs) -> Vec<String> {
        let names = origin_engine::vfs::Vfs::list_dir(fs, Path::new(SIM_INDEX)).unwrap();
        names.into_iter().filter(|n| n.ends_with(".tmp")).collect()
    }

    /// What a process does, given a journal: the catalog it opened (if it did), and whether
    /// all went well.
    type Phase = dyn Fn(&Journal) -> (Option<Catalog>, Result<(), CatalogError>);

    /// A writer's start: opens the catalog, feeds what is new, commits it, merges by twos.
    fn start_commit_and_merge(j: &Journal) -> (Option<Catalog>, Result<(), CatalogError>) {
        match Catalog::open(Path::new(SIM_INDEX), j) {
            Ok((mut c, _)) => {
                let done = commit_and_merge(&mut c, j);
                (Some(c), done)
            }
            Err(e) => (None, Err(e)),
        }
    }

    /// Runs `phase` on copies of `base` with a fault at each of its I/O calls in turn: a power
    /// cut, a failing fsync (at each sync), a full disk (at each write). A failed sync or
    /// write is an error, never passed over, and leaves no unfinished file; the process's
    /// catalog (if it opened) then answers `want` (as an index built in memory from the
    /// journal does) and commits and merges again, and so does the store opened again. After
    /// the power cut (three ways of what reached the disk), the store opens, answers `want`,
    /// and commits and merges. Returns how many runs each fault had.
    fn every_fault(base: &SimFs, want: &[Vec<(String, Match)>], phase: &Phase) -> [u32; 3] {
        // The calls the phase makes, on a copy of the machine.
        let kinds = {
            let m = base.snapshot();
            let j = sim_journal(&m);
            let before = m.ops() as usize;
            let (c, done) = phase(&j);
            done.unwrap();
            assert_eq!(fault_answers(&c.unwrap()), want);
            m.kinds()[before..].to_vec()
        };
        for k in ["create", "write", "sync_data", "rename", "sync_dir"] {
            assert!(kinds.contains(&k), "no {k} in {kinds:?}");
        }
        // No segment id is given twice in the folder, whatever the fault: ids stay at or above
        // the floor they had.
        let floor = |m: &SimFs| Index::next_id_in(&Folder::new(Arc::new(m.snapshot()), Path::new(SIM_INDEX)));
        let before = floor(base);
        let mut runs = [0u32; 3];
        for (call, kind) in kinds.iter().enumerate() {
            for (f, fault) in [Fault::PowerCut, Fault::SyncFails, Fault::DiskFull].into_iter().enumerate() {
                let reaches = match fault {
                    Fault::PowerCut => true,
                    Fault::SyncFails => kind.starts_with("sync"),
                    Fault::DiskFull => *kind == "write",
                    Fault::Denied => false,
                };
                if !reaches {
                    continue;
                }
                runs[f] += 1;
                let what = format!("{fault:?} at call {call} ({kind})");
                let m = base.snapshot();
                let j = sim_journal(&m);
                m.inject(m.ops() + call as u64, fault);
                let (c, done) = phase(&j);
                if fault != Fault::PowerCut {
                    assert!(done.is_err(), "{what}: said it was done");
                    assert_eq!(temporaries(&m), Vec::<String>::new(), "{what}");
                    if let Some(mut c) = c {
                        c.catch_up(&j).unwrap();
                        assert_eq!(fault_answers(&c), want, "{what}: the process's answers");
                        commit_and_merge(&mut c, &j).unwrap_or_else(|e| panic!("{what}: again: {e}"));
                        assert_eq!(fault_answers(&c), want, "{what}: after committing again");
                    }
                    let (mut c, _) = Catalog::open(Path::new(SIM_INDEX), &j).unwrap();
                    c.catch_up(&j).unwrap();
                    assert_eq!(fault_answers(&c), want, "{what}: opened again");
                    commit_and_merge(&mut c, &j).unwrap_or_else(|e| panic!("{what}: opened again: {e}"));
                    assert!(floor(&m) >= before, "{what}: segment ids from {} below {before}", floor(&m));
                } else {
                    drop(c);
                }
                for seed in 0..3 {
                    let after = m.after_power_cut(call as u64 * 7 + seed);
                    let j = sim_journal(&after);
                    let (mut c, opened) = Catalog::open(Path::new(SIM_INDEX), &j).unwrap_or_else(|e| panic!("{what}, power cut {seed}: {e}"));
                    c.catch_up(&j).unwrap();
                    assert_eq!(fault_answers(&c), want, "{what}, power cut {seed}: opened {opened:?}");
                    commit_and_merge(&mut c, &j).unwrap_or_else(|e| panic!("{what}, power cut {seed}: then: {e}"));
                    assert_eq!(fault_answers(&c), want, "{what}, power cut {seed}: committed and merged");
                    assert!(floor(&after) >= before, "{what}, power cut {seed}: segment ids from {} below {before}", floor(&after));
                }
            }
        }
        assert!(runs.iter().all(|&n| n > 0), "{runs:?}");
        runs
    }

    /// The answers of an index built in memory from the journal on `fs`.
    fn built_in_memory(fs: &SimFs) -> Vec<Vec<(String, Match)>> {
        let j = sim_journal(&fs.snapshot());
        let mut c = Catalog::in_memory();
        c.catch_up(&j).unwrap();
        let answers = fault_answers(&c);
        assert!(answers.iter().all(|a| !a.is_empty()), "{answers:?}");
        answers
    }

    /// A commit and its merges (26 calls: two segments and two manifests written, the merged
    /// segments' files removed), with a fault at each call ([`every_fault`]).
    #[test]
    fn catalog_with_a_fault_at_any_io_call_of_a_commit_or_merge_answers_as_before() {
        let base = sim_store_of_two_segments();
        let runs = every_fault(&base, &built_in_memory(&base), &start_commit_and_merge);
        assert_eq!(runs, [26, 8, 4]);
    }

    /// An index that must be rebuilt (its folder names another journal): deleted, started
    /// over, fed, committed and merged, with a fault at each call ([`every_fault`]).
    #[test]
    fn catalog_with_a_fault_at_any_io_call_of_a_rebuild_answers_as_before() {
        let base = sim_store_of_two_segments();
        let identity = Path::new(SIM_INDEX).join(IDENTITY_FILE);
        let bytes = base.read_file(&identity).unwrap();
        base.flip_bit(&identity, (bytes.len() as u64 - 5) * 8).unwrap();
        let want = built_in_memory(&base);
        let runs = every_fault(&base, &want, &|j| {
            match Catalog::open(Path::new(SIM_INDEX), j) {
                Ok((mut c, opened)) => {
                    assert!(matches!(opened, CatalogOpened::Rebuilt { .. }), "{opened:?}");
                    let done = commit_and_merge(&mut c, j);
                    (Some(c), done)
                }
                Err(e) => (None, Err(e)),
            }
        });
        // 27 calls: the manifest of an empty index written (naming the segment ids' floor), the
        // three other files removed, the identity file written, then one segment and its
        // manifest (no merge: the three batches make one segment).
        assert_eq!(runs, [27, 8, 4]);
    }
}

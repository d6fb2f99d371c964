//! The multilingual full-text index over entries and events.
//!
//! What it does: tokenizes text in any script ([`token`]: NFKC-folded, lower-cased words on
//! Unicode word boundaries; Han, Hiragana, Katakana and Hangul runs, and runs of the scripts
//! written without spaces such as Thai, as overlapping bigrams plus unigrams, with
//! positions), keeps new documents in an in-memory segment, writes
//! immutable, checksummed, memory-mapped segments on [`Index::commit`], merges them
//! ([`merge`], [`MergePolicy`]) and answers queries ([`parse_query`]): every word must occur,
//! phrases in order, BM25 ranking with ties to the more recent document, filters, and a
//! caller's visibility predicate; when fewer than `limit` documents match fully, the best
//! partial matches (English stems, stop words set aside) follow, marked [`Match::Partial`].
//! [`snippet`] shows a text around its first match with every match in brackets.
//!
//! What it does not do: decide what is visible (the caller's predicate says which documents
//! are hidden, superseded or expired), assign document ids, read the journal, or run merges in
//! the background (the caller may run [`merge`] on any thread).
//!
//! Usage:
//! ```
//! use origin_projections::index::{DocMeta, Filters, Index, Match, Scope, parse_query};
//! let mut index = Index::in_memory();
//! let meta = DocMeta {
//!     scope: Scope::Entry, kind: 0, tool: false, time_unix_ms: 1, source: None, project: None,
//!     key: "ent_3f9a1c2b7d4e".into(), record: 12, position: 0,
//! };
//! index.add(7, &meta, "Releases are tagged from master once CI passes").unwrap();
//! let query = parse_query("how do we cut a release of the app?").unwrap();
//! let hits = index.search(&query, &Filters::default(), &|_| true, 20).unwrap();
//! assert_eq!((hits[0].doc, hits[0].matched, hits[0].key.as_str()), (7, Match::Partial, "ent_3f9a1c2b7d4e"));
//! ```
//!
//! Invariants callers may rely on:
//! - Results do not depend on how documents are split into segments: committing, reopening
//!   and merging give the same hits with the same scores.
//! - Every full match ([`Match::All`]) comes before every partial match; partial matches are
//!   absent when `limit` documents match fully.
//! - A document the predicate rejects, or the filters exclude, is never returned.
//! - A damaged segment or manifest is an error ([`IndexError::Corrupt`]), never wrong
//!   results: on open (structures), or from the check of a segment's body, which every search
//!   and merge waits for (or makes), run in the background from the open when the index
//!   verifies ahead ([`Index::verify_ahead`]). The index is a
//!   projection, so the fix is to delete it and rebuild it ([`crate::Catalog::repair`]).
//! - Document ids rise in the order documents are added; segments hold neighbouring runs of
//!   them and only neighbours are merged.
//! - One process writes an index directory at a time (the caller holds a lock); others may
//!   read it and [`Index::reload`] what the writer committed.

mod bm25;
mod doc;
mod error;
pub mod folder;
pub mod limits;
mod manifest;
pub(crate) use manifest::FILE_NAME as MANIFEST_FILE_NAME;
mod memory;
mod merge;
mod pairs;
mod postings;
mod query;
mod search;
mod segment;
mod snippet;
mod stem;
mod token;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::record::{EntryVersion, Event, EventKind};

pub use error::IndexError;
pub use merge::{MergeJob, MergePolicy, Merged, SegmentInfo, merge};
pub use query::{Query, QueryError, parse_query};
pub use segment::{Segment, SegmentId};
pub use snippet::{cluster_start, snippet};
pub use token::TextForm;

/// Writes in `dir` the manifest of an empty index whose segment ids start at `next` (the first
/// step of deleting an index: [`crate::catalog`]'s clear).
pub(crate) fn write_empty_manifest(dir: &Folder, next: SegmentId) -> Result<(), IndexError> {
    Manifest { segments: Vec::new(), mark: None, next_segment_id: next }.write(dir)
}

/// Checks the metadata of a document to add: its strings within the index's limits.
pub(crate) fn check_meta(meta: &DocMeta) -> Result<(), String> {
    doc::DocTable::check_meta(meta)
}

/// [`check_meta`] of an event's document, from its strings (nothing copied): its id, the
/// source of its record, its project.
pub(crate) fn check_event_strings(key: &str, source: &str, project: Option<&str>) -> Result<(), String> {
    doc::DocTable::check_strings(key, Some(source), project)
}

use folder::Folder;
use manifest::Manifest;
use memory::MemorySegment;
use postings::Postings;
use search::View;
use segment::writer::{Target, write_segment};
use stem::Stems;

/// A document's id, chosen by the caller (unique within the index).
pub type DocId = u32;

/// Text [`Index::add_all`] must be given before it tokenizes on a helper thread: below this,
/// starting the thread (tens of microseconds) costs about what it saves.
pub const PARALLEL_TEXT_BYTES: usize = 64 * 1024;

/// Documents a [`TokenRun`] holds in [`Index::add_all`] and in readers that tokenize ahead
/// ([`crate::ahead::read_records`]): a run handed from one thread to another at a time.
pub const TOKEN_RUN_DOCS: usize = 32;

/// Texts tokenized for [`Index::add_tokens`], on any thread: tokenizing reads nothing of an
/// index, so one thread can tokenize the next documents while another adds these. Its
/// buffers are kept when it is cleared, for the next run.
#[derive(Default)]
pub struct TokenRun {
    docs: Vec<memory::Prepared>,
    /// Texts pushed since the last [`TokenRun::clear`] (`docs` may hold more buffers).
    len: usize,
}

impl TokenRun {
    /// Empties the run, keeping its buffers.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Tokenizes the next document's text, of the form `form` (a tool call's input is JSON:
    /// [`DocMeta::text_form`]).
    pub fn push(&mut self, text: &str, form: TextForm) {
        if self.len == self.docs.len() {
            self.docs.push(memory::Prepared::default());
        }
        self.docs[self.len].prepare(text, form);
        self.len += 1;
    }

    /// Texts pushed since the run was cleared.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no text was pushed since the run was cleared.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gives back what a large document made its buffers hold beyond a typical document's.
    pub fn trim(&mut self) {
        self.docs.iter_mut().for_each(memory::Prepared::trim);
    }
}

/// Entries or events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Scope {
    /// A version of an entry.
    Entry = 1,
    /// An event.
    Event = 2,
}

/// What the index keeps of a document besides its text: what filters see, and where it
/// came from (returned with every hit, so a caller needs no map of its own from document
/// ids back to its records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocMeta {
    /// Entry or event.
    pub scope: Scope,
    /// `EventKind as u8` or `EntryKind as u8`, per scope.
    pub kind: u8,
    /// A tool call or tool result (left out unless [`Filters::include_tools`]).
    pub tool: bool,
    /// Its time: when an event happened or an entry version was written (Unix ms); ties in
    /// score go to the larger.
    pub time_unix_ms: i64,
    /// Source id (`claude-code`, ...), for events.
    pub source: Option<String>,
    /// Project, if known.
    pub project: Option<String>,
    /// The caller's name for the document (an event id, an entry version id); at most
    /// [`limits::META_STRING_SIZE_BYTES_MAX`] bytes.
    pub key: String,
    /// The journal offset of the record it came from.
    pub record: u64,
    /// Its place in that record (an event's index among the record's events).
    pub position: u32,
}

impl DocMeta {
    /// The metadata of an event read from `source`, event `position` of the record at
    /// journal offset `record`. Tool calls and tool results are tools.
    pub fn event(source: &str, event: &Event, record: u64, position: u32) -> DocMeta {
        DocMeta {
            scope: Scope::Event,
            kind: event.kind as u8,
            tool: matches!(event.kind, EventKind::ToolUse | EventKind::ToolResult),
            time_unix_ms: event.time_unix_ms,
            source: Some(source.to_string()),
            project: event.project.clone(),
            key: event.id.clone(),
            record,
            position,
        }
    }

    /// The form of the document's text `text` ([`TextForm::of`]): JSON for a tool call whose
    /// text ends in a JSON value or a tool result that is one, else plain.
    pub fn text_form(&self, text: &str) -> TextForm {
        match (self.scope, self.kind) {
            (Scope::Event, k) if k == EventKind::ToolUse as u8 => TextForm::of(EventKind::ToolUse, text),
            (Scope::Event, k) if k == EventKind::ToolResult as u8 => TextForm::of(EventKind::ToolResult, text),
            _ => TextForm::Plain,
        }
    }

    /// The metadata of an entry version written by the record at journal offset `record`.
    pub fn entry(version: &EntryVersion, record: u64) -> DocMeta {
        DocMeta {
            scope: Scope::Entry,
            kind: version.kind as u8,
            tool: false,
            time_unix_ms: version.created_unix_ms,
            source: None,
            project: version.project.clone(),
            key: version.id.clone(),
            record,
            position: 0,
        }
    }
}

/// A document a search is about to return, as the caller's visibility predicate sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Its id.
    pub doc: DocId,
    /// Its key ([`DocMeta::key`]).
    pub key: &'a str,
    /// Its record ([`DocMeta::record`]).
    pub record: u64,
    /// Its place in the record ([`DocMeta::position`]).
    pub position: u32,
}

/// Which documents a search may return. The default admits everything but tool events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// Entries only, or events only.
    pub scope: Option<Scope>,
    /// This kind only (kinds are per scope: pair it with `scope`).
    pub kind: Option<u8>,
    /// Documents at or after this time (Unix ms).
    pub since_unix_ms: Option<i64>,
    /// Documents before this time (Unix ms).
    pub until_unix_ms: Option<i64>,
    /// Documents of this source only.
    pub source: Option<String>,
    /// Documents of this project only.
    pub project: Option<String>,
    /// Also documents marked `tool`.
    pub include_tools: bool,
}

/// How a hit matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Every word and phrase of the query occurs.
    All,
    /// Only some of the query's words (by stem) occur.
    Partial,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The document.
    pub doc: DocId,
    /// Its BM25 score (full and partial scores are not comparable).
    pub score: f32,
    /// Full or partial match.
    pub matched: Match,
    /// Its key ([`DocMeta::key`]).
    pub key: String,
    /// Its record ([`DocMeta::record`]).
    pub record: u64,
    /// Its place in the record ([`DocMeta::position`]).
    pub position: u32,
}

/// The text index: an in-memory segment for new documents and immutable segments, in a
/// directory or (for [`Index::in_memory`]) in memory.
///
/// Document ids rise: each document added has an id above every id the index holds. So each
/// segment holds a contiguous run of the additions, segments are kept in the order of their
/// documents, and merges combine neighbours only; no set of ids is kept to refuse repeats.
pub struct Index {
    dir: Option<Folder>,
    memory: MemorySegment,
    /// The documents of a commit being written ([`Index::freeze`]): after the segments', before
    /// the in-memory segment's.
    frozen: Option<Arc<MemorySegment>>,
    /// In document order: each segment's ids are above the previous segment's.
    segments: Vec<Arc<Segment>>,
    next_segment_id: SegmentId,
    mark: Option<u64>,
    /// The largest id in the index (segments and memory), if any.
    last_doc: Option<DocId>,
    stems: Stems,
    /// Buffers [`Index::add_all`]'s helper tokenizes into, kept from one call to the next.
    spare_runs: Vec<TokenRun>,
    /// Whether segments' bodies are verified on a thread of their own as soon as they are
    /// opened ([`Index::verify_ahead`]), or only when a search or merge needs them.
    verify_ahead: bool,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("dir", &self.dir)
            .field("memory_docs", &self.memory.docs.len())
            .field("frozen_docs", &self.frozen.as_ref().map(|f| f.docs.len()))
            .field("segments", &self.segments)
            .field("mark", &self.mark)
            .finish()
    }
}

/// The first and last document id of a segment (it holds at least one document).
fn range_of(s: &Segment) -> (DocId, DocId) {
    let docs = s.docs();
    (if docs.len() == 0 { 0 } else { docs.row(0).doc }, docs.last_doc().unwrap_or(0))
}

/// A commit started with [`Index::freeze`]: the frozen documents, to write with
/// [`write_commit`] on any thread.
#[derive(Clone)]
pub struct CommitJob {
    id: SegmentId,
    mark: u64,
    memory: Arc<MemorySegment>,
    dir: Option<Folder>,
}

impl std::fmt::Debug for CommitJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitJob").field("id", &self.id).field("mark", &self.mark).field("docs", &self.memory.docs.len()).finish()
    }
}

/// A commit's segment, written (durably, in a directory) but not yet in the index.
pub struct WrittenCommit {
    segment: Segment,
    mark: u64,
}

/// Writes a commit's segment (see [`Index::freeze`]).
pub fn write_commit(job: &CommitJob) -> Result<WrittenCommit, IndexError> {
    let target = match &job.dir {
        Some(d) => Target::Dir(d),
        None => Target::Memory,
    };
    let memory = &*job.memory;
    let terms = memory.sorted_terms()?;
    let segment = write_segment(target, job.id, &memory.docs, |add| {
        let (mut postings, mut bytes) = (Postings::new(true), Vec::new());
        for (t, p) in terms {
            p.decode_into(&mut postings, &mut bytes);
            add(t, &postings)?;
        }
        Ok(())
    })?;
    if segment.doc_count() != memory.docs.len() {
        return Err(IndexError::corrupt(segment.path(), 0, "segment read back with a different document count"));
    }
    Ok(WrittenCommit { segment, mark: job.mark })
}

/// Segments whose bodies are to be verified ([`Index::unverified`]).
pub struct Unverified(Vec<Arc<Segment>>);

impl Unverified {
    /// Verifies each ([`Index::verify`]).
    pub fn verify(&self) -> Result<(), IndexError> {
        self.0.iter().try_for_each(|s| s.verify())
    }
}

impl Index {
    /// An empty index that keeps its segments in memory (for tests and hubs without disk).
    pub fn in_memory() -> Index {
        Index {
            dir: None,
            memory: MemorySegment::default(),
            frozen: None,
            segments: Vec::new(),
            next_segment_id: 0,
            mark: None,
            last_doc: None,
            stems: Stems::new(),
            spare_runs: Vec::new(),
            verify_ahead: false,
        }
    }

    /// Opens the index in `dir`, creating it if needed, for the one process that writes it.
    /// Every listed segment's structures are checked (its body later: see [`Index::verify`]
    /// and [`Index::verify_ahead`]); files the manifest does not list (left by a crash or by a merge)
    /// are deleted.
    pub fn open(dir: &Path) -> Result<Index, IndexError> {
        Index::open_in(Folder::os(dir))
    }

    /// Opens the index in `folder` as [`Index::open`] does, on the folder's file system.
    pub fn open_in(folder: Folder) -> Result<Index, IndexError> {
        let index = Index::open_shared_in(folder)?;
        index.remove_leftovers()?;
        Ok(index)
    }

    /// Opens the index in `dir` (creating it if needed) without touching files the manifest
    /// does not list: for a process that may share the directory with a writer.
    pub fn open_shared(dir: &Path) -> Result<Index, IndexError> {
        Index::open_shared_in(Folder::os(dir))
    }

    /// Opens the index in `folder` as [`Index::open_shared`] does, on the folder's file system.
    pub fn open_shared_in(folder: Folder) -> Result<Index, IndexError> {
        folder.create()?;
        let mut index = Index::in_memory();
        index.dir = Some(folder);
        index.reload()?;
        Ok(index)
    }

    /// Segment files in the directory that neither the manifest (read now) lists nor this
    /// index holds, and unfinished writes: what a writer that crashed left. (The manifest this
    /// index was opened from may be older: another process may have committed or merged since,
    /// and its new segments are not leftovers.) None when the manifest cannot be read now.
    pub fn leftovers(&self) -> Result<Vec<PathBuf>, IndexError> {
        let Some(dir) = &self.dir else { return Ok(Vec::new()) };
        let Ok(now) = Index::listed_in(dir) else { return Ok(Vec::new()) };
        let listed: HashSet<String> = self.segments.iter().map(|s| s.id()).chain(now).map(segment::file_name).collect();
        let mut found = Vec::new();
        for name in dir.list()? {
            if (name.ends_with(".segment") && !listed.contains(&name)) || name.ends_with(".tmp") {
                found.push(dir.join(&name));
            }
        }
        Ok(found)
    }

    /// Deletes [`Index::leftovers`]: only while no other process writes the directory. One
    /// that is a folder goes with what it holds (Origin writes none: a folder in its place kept
    /// every later open of the store from working).
    pub fn remove_leftovers(&self) -> Result<(), IndexError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        for path in self.leftovers()? {
            match dir.vfs().remove_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(IndexError::io("remove", &path, e)),
            }
        }
        Ok(())
    }

    /// Reads the manifest again (another process may have committed or merged) and takes its
    /// segments, opening only those it did not hold already (and verifying their bodies in
    /// the background, if it verifies ahead). The in-memory
    /// segment is kept; a caller whose documents the new segments now hold clears it with
    /// [`Index::clear_memory`]. Returns true if the segments or the mark changed.
    pub fn reload(&mut self) -> Result<bool, IndexError> {
        // A writer's merge deletes its inputs after writing the manifest: a listed file that
        // vanished between reading the manifest and opening the file means a newer manifest.
        let mut tries = 0;
        loop {
            match self.reload_once() {
                Err(e) if tries < 8 && e.is_missing_segment() => tries += 1,
                other => return other,
            }
        }
    }

    fn reload_once(&mut self) -> Result<bool, IndexError> {
        let Some(dir) = self.dir.clone() else { return Ok(false) };
        let manifest = Manifest::read(&dir)?.unwrap_or_default();
        let mut held: Vec<SegmentId> = self.segments.iter().map(|s| s.id()).collect();
        held.sort_unstable();
        let same = manifest.mark == self.mark && manifest.segments == held;
        if same {
            self.next_segment_id = self.next_segment_id.max(manifest.next_segment_id);
            return Ok(false);
        }
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for &id in &manifest.segments {
            if let Some(s) = self.segments.iter().find(|s| s.id() == id) {
                segments.push(s.clone());
                continue;
            }
            let path = dir.join(&segment::file_name(id));
            match Segment::open(&dir, &path, id) {
                Ok(s) => segments.push(Arc::new(s)),
                // Missing, or deleted while it was opened (by another process's merge or
                // rebuild, after it wrote a newer manifest): said as missing, which
                // [`Index::reload`] reads again for.
                Err(_) if !dir.vfs().exists(&path).map_err(|e| IndexError::io("stat", &path, e))? => {
                    return Err(IndexError::corrupt(&path, 0, error::MISSING_SEGMENT));
                }
                Err(e) => return Err(e),
            }
        }
        // In document order, without overlaps: each segment's first id above the previous
        // segment's last.
        segments.sort_by_key(|s| range_of(s).0);
        for w in segments.windows(2) {
            if range_of(&w[0]).1 >= range_of(&w[1]).0 {
                return Err(IndexError::corrupt(
                    w[1].path(),
                    0,
                    format!("its documents overlap those of segment {}", w[0].id()),
                ));
            }
        }
        self.segments = segments;
        self.mark = manifest.mark;
        self.next_segment_id = self.next_segment_id.max(manifest.next_segment_id);
        let disk_last = self.segments.last().map(|s| range_of(s).1);
        self.last_doc = match (disk_last, self.memory_last()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if self.verify_ahead {
            self.verify_in_background();
        }
        Ok(true)
    }

    /// Verifies the body of every segment not verified yet ([`Segment::verify`]), waiting
    /// for the background check where it is under way; the first damage found is returned.
    pub fn verify(&self) -> Result<(), IndexError> {
        self.unverified().verify()
    }

    /// The segments whose bodies are not verified yet, to verify without holding the index.
    pub fn unverified(&self) -> Unverified {
        Unverified(self.segments.iter().filter(|s| !s.is_verified()).cloned().collect())
    }

    /// Damage the verification of a segment's body found (see [`Index::verify`]), without
    /// waiting for checks under way.
    pub fn damage(&self) -> Option<IndexError> {
        self.segments.iter().find_map(|s| s.damage())
    }

    /// The segments whose bodies the verification found damaged.
    pub(crate) fn damaged_segments(&self) -> Vec<SegmentId> {
        self.segments.iter().filter(|s| s.damage().is_some()).map(|s| s.id()).collect()
    }

    /// The least segment id above every id `dir` has used, as far as it shows: its manifest's
    /// next id (if it can be read) and the ids of its segment files, finished or not.
    pub(crate) fn next_id_in(dir: &Folder) -> SegmentId {
        let mut next = Manifest::read(dir).ok().flatten().map_or(0, |m| m.next_segment_id);
        if let Ok(names) = dir.list() {
            for name in names {
                let digits = name.strip_suffix(".tmp").unwrap_or(&name);
                if let Some(id) = digits.strip_suffix(".segment").and_then(|d| d.parse::<SegmentId>().ok()) {
                    next = next.max(id.saturating_add(1));
                }
            }
        }
        next
    }

    /// Opens the index in `dir` as [`Index::open`] does, its segment ids starting at `next`
    /// or above, written in its manifest at once: after an index was deleted, so that no id
    /// a process may still hold a segment of is given to a new segment (a process that reads
    /// the manifest keeps the segments it holds by id).
    pub(crate) fn open_with_ids_from(dir: Folder, next: SegmentId) -> Result<Index, IndexError> {
        let mut index = Index::open_in(dir)?;
        if next > index.next_segment_id {
            index.next_segment_id = next;
            index.write_manifest()?;
        }
        Ok(index)
    }

    /// The segments the manifest in `dir` lists now (none if there is no manifest).
    pub(crate) fn listed_in(dir: &Folder) -> Result<Vec<SegmentId>, IndexError> {
        Ok(Manifest::read(dir)?.map(|m| m.segments).unwrap_or_default())
    }

    /// True once every segment's body has been verified (and found good).
    pub fn is_verified(&self) -> bool {
        self.segments.iter().all(|s| s.is_verified())
    }

    /// From now on, verifies segments' bodies on a thread of its own as soon as they are
    /// opened, those open now first: for a process that will search (a server), so that its
    /// first search finds them checked. Opening a segment checks its structures, but reading
    /// its whole body (the postings, most of an index) held up the start of every process by
    /// a quarter of a second per million events. Without it a body is verified when a search
    /// or merge first needs it ([`Index::search`] waits for the check either way), and a
    /// process that never searches (`origin get`) never reads the index's postings.
    pub fn verify_ahead(&mut self) {
        self.verify_ahead = true;
        self.verify_in_background();
    }

    /// True once [`Index::verify_ahead`] was called.
    pub fn verifies_ahead(&self) -> bool {
        self.verify_ahead
    }

    /// Starts the check of the bodies not verified yet on a thread of its own. If no thread
    /// can be started, the first search or merge verifies.
    fn verify_in_background(&self) {
        let pending = self.unverified();
        if pending.0.is_empty() {
            return;
        }
        // What the check finds is kept in each segment (damage), or found again by the next
        // caller (a failed read): there is no one to hand it to here.
        let _ = std::thread::Builder::new().name("origin-verify".into()).spawn(move || pending.verify());
    }

    fn memory_last(&self) -> Option<DocId> {
        let frozen = self.frozen.as_ref().and_then(|f| f.docs.last_doc());
        self.memory.docs.last_doc().or(frozen)
    }

    /// Drops the documents of the in-memory segment (they are in the segments now, or will be
    /// added again).
    pub fn clear_memory(&mut self) {
        self.memory = MemorySegment::default();
        self.frozen = None;
        self.last_doc = self.segments.last().map(|s| range_of(s).1);
    }

    /// Adds a document. Its id must be above every id the index holds.
    pub fn add(&mut self, doc: DocId, meta: &DocMeta, text: &str) -> Result<(), IndexError> {
        if self.last_doc.is_some_and(|last| doc <= last) {
            return Err(IndexError::DuplicateDoc(doc));
        }
        self.memory.add(doc, meta, text, &self.stems)?;
        self.last_doc = Some(doc);
        Ok(())
    }

    /// Adds documents in order: the same as [`Index::add`] of each in turn, and stops at the
    /// first that fails (those before it stay added). When they hold enough text to be worth a
    /// thread ([`PARALLEL_TEXT_BYTES`]), a helper thread tokenizes each run of documents while
    /// the one before it goes into the in-memory segment, so that a catch-up keeps two cores
    /// busy.
    pub fn add_all(&mut self, docs: &[(DocId, DocMeta, &str)]) -> Result<(), IndexError> {
        let text_bytes: usize = docs.iter().map(|d| d.2.len()).sum();
        if docs.len() < 2 || text_bytes < PARALLEL_TEXT_BYTES {
            return docs.iter().try_for_each(|(doc, meta, text)| self.add(*doc, meta, text));
        }
        // The helper tokenizes runs of documents into buffers the adder hands back, a run or
        // two ahead: handing over each document alone woke a thread per document, which cost
        // more than the tokenizing saved. The buffers are kept for the next call.
        const AHEAD: usize = 2;
        let mut spare = std::mem::take(&mut self.spare_runs);
        spare.resize_with(AHEAD + 1, TokenRun::default);
        let (result, spare) = std::thread::scope(|s| {
            let (prepared_tx, prepared_rx) = std::sync::mpsc::sync_channel::<TokenRun>(AHEAD);
            let (spare_tx, spare_rx) = std::sync::mpsc::channel::<TokenRun>();
            for run in spare {
                // The receiver is alive here; a send cannot fail.
                let _ = spare_tx.send(run);
            }
            let helper = std::thread::Builder::new().name("origin-tokenize".into()).spawn_scoped(s, move || {
                for docs in docs.chunks(TOKEN_RUN_DOCS) {
                    let Ok(mut run) = spare_rx.recv() else { break };
                    run.clear();
                    docs.iter().for_each(|(_, meta, text)| run.push(text, meta.text_form(text)));
                    if prepared_tx.send(run).is_err() {
                        break;
                    }
                }
                spare_rx
            });
            let Ok(helper) = helper else {
                // No thread to be had: tokenize here.
                drop((prepared_rx, spare_tx));
                let result = docs.iter().try_for_each(|(doc, meta, text)| self.add(*doc, meta, text));
                return (result, Vec::new());
            };
            let mut result = Ok(());
            let mut kept = Vec::new();
            for docs in docs.chunks(TOKEN_RUN_DOCS) {
                // The helper sends one run per chunk unless it panicked (passed on below).
                let Ok(run) = prepared_rx.recv() else { break };
                result = self.add_tokens(docs.iter().map(|(doc, meta, _)| (*doc, meta)), &run);
                if result.is_err() {
                    kept.push(run);
                    break;
                }
                let _ = spare_tx.send(run);
            }
            // The helper stops at its next send or wait once these are gone (what it had
            // sent is taken back first).
            kept.extend(prepared_rx.try_iter());
            drop((prepared_rx, spare_tx));
            match helper.join() {
                Ok(spare_rx) => kept.extend(spare_rx.try_iter()),
                // A panic while tokenizing is this call's, as it is when `add` tokenizes (joined
                // here, it would otherwise be caught, and the documents not added would look
                // added).
                Err(panic) => std::panic::resume_unwind(panic),
            }
            (result, kept)
        });
        self.spare_runs = spare;
        self.spare_runs.iter_mut().for_each(TokenRun::trim);
        result
    }

    /// Adds documents tokenized already, in order: the `i`th of `docs` is the `i`th text
    /// pushed to `run`. The same as [`Index::add`] of each in turn with its text, and stops at
    /// the first that fails (those before it stay added). `docs` must name as many documents
    /// as `run` holds.
    pub fn add_tokens<'m>(&mut self, docs: impl IntoIterator<Item = (DocId, &'m DocMeta)>, run: &TokenRun) -> Result<(), IndexError> {
        let mut count = 0;
        for (doc, meta) in docs {
            let Some(prepared) = run.docs[..run.len].get(count) else {
                return Err(IndexError::Invalid(format!("more documents than the {} texts tokenized for them", run.len)));
            };
            self.add_prepared(doc, meta, prepared)?;
            count += 1;
        }
        if count != run.len {
            return Err(IndexError::Invalid(format!("{count} documents for the {} texts tokenized for them", run.len)));
        }
        Ok(())
    }

    /// [`Index::add`] of a document tokenized already.
    fn add_prepared(&mut self, doc: DocId, meta: &DocMeta, prepared: &memory::Prepared) -> Result<(), IndexError> {
        if self.last_doc.is_some_and(|last| doc <= last) {
            return Err(IndexError::DuplicateDoc(doc));
        }
        self.memory.add_prepared(doc, meta, prepared, &self.stems)?;
        self.last_doc = Some(doc);
        Ok(())
    }

    /// Where the newest document written to a segment came from: its key, and the record
    /// offset and position its caller gave ([`DocMeta`]); none without a segment.
    pub fn last_written_doc(&self) -> Result<Option<(String, u64, u32)>, IndexError> {
        let mut newest: Option<(DocId, &Arc<Segment>, u32)> = None;
        for s in &self.segments {
            let Some(last) = s.doc_count().checked_sub(1) else { continue };
            let row = s.docs().row(last);
            if newest.is_none_or(|(doc, _, _)| row.doc > doc) {
                newest = Some((row.doc, s, last));
            }
        }
        let Some((_, s, ordinal)) = newest else { return Ok(None) };
        let row = s.docs().row(ordinal);
        Ok(Some((s.key(ordinal)?.to_owned(), row.record, row.position)))
    }

    /// The largest document id in the index: the next one added must be above it.
    pub fn last_doc(&self) -> Option<DocId> {
        self.last_doc
    }

    /// Documents in the index.
    pub fn doc_count(&self) -> usize {
        self.segments.iter().map(|s| s.doc_count() as usize).sum::<usize>()
            + self.frozen.as_ref().map_or(0, |f| f.docs.len() as usize)
            + self.memory.docs.len() as usize
    }

    /// About the bytes of memory the in-memory segment takes (commit when it grows large).
    pub fn memory_bytes(&self) -> usize {
        self.memory.heap_bytes()
    }

    /// Documents waiting in the in-memory segment (commit when it grows large).
    pub fn memory_doc_count(&self) -> u32 {
        self.memory.docs.len()
    }

    /// The caller's mark saved by the last commit (such as the journal offset the index
    /// reflects), if any.
    pub fn mark(&self) -> Option<u64> {
        self.mark
    }

    /// Writes the in-memory segment as an immutable segment (if it holds documents) and
    /// records `mark` in the manifest; durable when it returns. Returns the new segment's id.
    /// (The same as [`Index::freeze`], [`write_commit`] and [`Index::install_commit`] on one
    /// thread; if writing fails, the documents stay in memory.)
    pub fn commit(&mut self, mark: u64) -> Result<Option<SegmentId>, IndexError> {
        let Some(job) = self.freeze(mark)? else {
            let old_mark = self.mark;
            self.mark = Some(mark);
            if let Err(e) = self.write_manifest() {
                self.mark = old_mark;
                return Err(e);
            }
            return Ok(None);
        };
        match write_commit(&job).and_then(|w| {
            drop(job);
            self.install_commit(w)
        }) {
            Ok(id) => Ok(Some(id)),
            Err(e) => {
                self.thaw();
                Err(e)
            }
        }
    }

    /// Starts a commit of the in-memory documents with `mark`: they move to a frozen segment
    /// that searches still read, new documents go to a fresh in-memory segment, and the job
    /// returned writes the frozen one ([`write_commit`], on any thread, without this index)
    /// for [`Index::install_commit`]. `None` if no document waits in memory (then
    /// [`Index::commit`] records a mark alone). One commit at a time.
    pub fn freeze(&mut self, mark: u64) -> Result<Option<CommitJob>, IndexError> {
        if mark == u64::MAX {
            return Err(IndexError::Invalid("the mark u64::MAX is reserved".into()));
        }
        if self.frozen.is_some() {
            return Err(IndexError::Invalid("a commit is being written; install it first".into()));
        }
        if self.memory.is_empty() {
            return Ok(None);
        }
        if self.segments.len() >= limits::SEGMENTS_MAX as usize {
            return Err(IndexError::Invalid(format!(
                "the index holds {} segments; merge before committing more",
                self.segments.len()
            )));
        }
        let frozen = Arc::new(std::mem::take(&mut self.memory));
        self.frozen = Some(frozen.clone());
        let id = self.next_segment_id;
        self.next_segment_id += 1;
        Ok(Some(CommitJob { id, mark, memory: frozen, dir: self.dir.clone() }))
    }

    /// True while a commit started with [`Index::freeze`] is not installed.
    pub fn committing(&self) -> bool {
        self.frozen.is_some()
    }

    /// Installs a commit written by [`write_commit`]: its segment joins the index and the
    /// manifest records it with its mark, durably.
    pub fn install_commit(&mut self, written: WrittenCommit) -> Result<SegmentId, IndexError> {
        let Some(frozen) = &self.frozen else {
            return Err(IndexError::Invalid("no commit is being written".into()));
        };
        if written.segment.doc_count() != frozen.docs.len() {
            return Err(IndexError::Invalid("the commit written is not the one frozen".into()));
        }
        let id = written.segment.id();
        let old_mark = self.mark;
        self.segments.push(Arc::new(written.segment));
        self.mark = Some(written.mark);
        if let Err(e) = self.write_manifest() {
            self.mark = old_mark;
            self.segments.pop();
            return Err(e);
        }
        self.frozen = None;
        Ok(id)
    }

    /// Gives up a commit that failed to be written or installed: its documents go back to
    /// memory when no document was added since it started; otherwise the frozen and the
    /// in-memory documents are both dropped (returns false: feed them again from the mark).
    pub fn thaw(&mut self) -> bool {
        let Some(frozen) = self.frozen.take() else { return true };
        if self.memory.is_empty()
            && let Ok(m) = Arc::try_unwrap(frozen)
        {
            self.memory = m;
            return true;
        }
        self.clear_memory();
        false
    }

    fn write_manifest(&self) -> Result<(), IndexError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        // The manifest lists ids rising; segments are held in document order, which differs
        // once older neighbours were merged into a newer id.
        let mut segments: Vec<SegmentId> = self.segments.iter().map(|s| s.id()).collect();
        segments.sort_unstable();
        Manifest {
            segments,
            mark: self.mark,
            next_segment_id: self.next_segment_id,
        }
        .write(dir)
    }

    /// The immutable segments, in document order.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.segments
            .iter()
            .map(|s| SegmentInfo { id: s.id(), doc_count: s.doc_count(), size_bytes: s.size_bytes() })
            .collect()
    }

    /// A merge of the given segments, which must be neighbours (in document order), to run
    /// with [`merge`] (on any thread) and install with [`Index::install_merge`].
    pub fn plan_merge(&mut self, ids: &[SegmentId]) -> Result<MergeJob, IndexError> {
        let at = |id: &SegmentId| self.segments.iter().position(|s| s.id() == *id);
        let mut places = Vec::with_capacity(ids.len());
        for id in ids {
            let p = at(id).ok_or_else(|| IndexError::Invalid(format!("no segment {id} to merge")))?;
            if places.contains(&p) {
                return Err(IndexError::Invalid(format!("segment {id} named twice")));
            }
            places.push(p);
        }
        places.sort_unstable();
        if places.windows(2).any(|w| w[1] != w[0] + 1) {
            return Err(IndexError::Invalid("only neighbouring segments can be merged".into()));
        }
        let inputs: Vec<Arc<Segment>> = places.iter().map(|&p| self.segments[p].clone()).collect();
        let output = self.next_segment_id;
        self.next_segment_id += 1;
        Ok(MergeJob { inputs, output, dir: self.dir.clone() })
    }

    /// The merge the policy calls for, if any.
    pub fn plan_merge_by(&mut self, policy: &MergePolicy) -> Result<Option<MergeJob>, IndexError> {
        match policy.pick(&self.segments()) {
            Some(ids) => self.plan_merge(&ids).map(Some),
            None => Ok(None),
        }
    }

    /// Replaces a merge's inputs with its output, durably, then deletes the inputs' files.
    pub fn install_merge(&mut self, merged: Merged) -> Result<(), IndexError> {
        for id in &merged.inputs {
            if !self.segments.iter().any(|s| s.id() == *id) {
                return Err(IndexError::Invalid(format!("segment {id} is no longer in the index")));
            }
        }
        let before = self.segments.clone();
        self.segments.retain(|s| !merged.inputs.contains(&s.id()));
        self.segments.push(merged.segment);
        self.segments.sort_by_key(|s| range_of(s).0);
        if let Err(e) = self.write_manifest() {
            self.segments = before;
            return Err(e);
        }
        if let Some(dir) = &self.dir {
            for id in &merged.inputs {
                // A file left behind is deleted on the next open.
                let _ = dir.remove(&segment::file_name(*id));
            }
        }
        Ok(())
    }

    /// Merges every segment into one (after committing, for the smallest index).
    pub fn merge_all(&mut self) -> Result<(), IndexError> {
        if self.segments.len() < 2 {
            return Ok(());
        }
        let ids: Vec<SegmentId> = self.segments.iter().map(|s| s.id()).collect();
        let job = self.plan_merge(&ids)?;
        let merged = merge(&job)?;
        self.install_merge(merged)
    }

    /// Searches: full matches first (BM25, ties to the more recent), then partial matches
    /// when fewer than `limit` documents match fully. Documents the filters exclude or
    /// `visible` rejects are never returned.
    pub fn search(
        &self,
        query: &Query,
        filters: &Filters,
        visible: &dyn Fn(&Candidate<'_>) -> bool,
        limit: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        if limit > limits::SEARCH_LIMIT_MAX {
            return Err(IndexError::Invalid(format!(
                "a limit of {limit} is over the most, {}",
                limits::SEARCH_LIMIT_MAX
            )));
        }
        // Never a segment whose body's checksum was not verified (waiting for the background
        // check if it is still under way); damage is an error, and the catalog rebuilds the
        // index ([`crate::Catalog::repair`]).
        self.verify()?;
        // Room for the memory views too: growing the list was a reallocation on every search.
        let mut views: Vec<View<'_>> = Vec::with_capacity(self.segments.len() + 2);
        views.extend(self.segments.iter().map(|s| View::Disk(s, search::Lookups::default())));
        if let Some(f) = &self.frozen {
            views.push(View::Memory(f));
        }
        views.push(View::Memory(&self.memory));
        search::search(&views, query, filters, visible, limit)
    }

    /// The snippet of `text` for `query` (see [`snippet`]).
    pub fn snippet(text: &str, query: &Query) -> String {
        snippet(text, query)
    }

    /// [`Index::snippet`] of a text of the form `form` ([`TextForm::of`] an event's kind).
    pub fn snippet_of(text: &str, form: TextForm, query: &Query) -> String {
        snippet::snippet_of(text, form, query)
    }
}

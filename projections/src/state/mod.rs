//! The read models of entries, tombstones, sessions and events, rebuilt from the journal.
//!
//! [`State`] is fed journal records in offset order ([`State::apply`], [`State::catch_up`]),
//! in every process: records other processes wrote arrive through the journal. It never
//! writes to the journal. It is saved as a snapshot with the offset it reflects
//! ([`State::save_snapshot`]); [`State::open`] loads the snapshot and replays only what
//! follows, and rebuilds from the journal when the snapshot does not check out.
//!
//! Rules (the spec is `origin-mcp-tools.txt`; DESIGN.md, "Projections"):
//! - **Versions.** Each root's current version is the one nothing supersedes. When several
//!   are (two corrections of one version raced), the winner has the later `created`, then the
//!   larger id; the others are superseded with `concurrent: true`. The graph is recomputed from
//!   the root's versions alone, so every store picks the same winner whatever the order the
//!   records arrived in. It ignores tombstones: forgetting never makes an older version current.
//! - **Tombstones.** A `Forgotten` record hides the versions and events it lists (what was
//!   visible when it was written; [`State::forget_plan`] computes them for the writer) and
//!   everything its target reaches among the entries known, then and later
//!   ([`State::reach`]): for an entry, every version of it and every event they cite; for an
//!   event, itself and every version of every entry citing it. So a forget hides what it was
//!   aimed at even when another tombstone hid it first (lifting that one does not show it),
//!   and a version written after it, by a process that had not seen it yet (a correction of
//!   the forgotten entry, an entry citing the forgotten event), is hidden too. A `Restored`
//!   record lifts its tombstone; an id another tombstone in force hides stays hidden. Hidden
//!   versions and events leave every query; by id they answer [`Lookup::Forgotten`]. What is
//!   hidden depends on the records alone, not on the order they arrived in.
//! - **Listings** hold, per root, its current version if it is not hidden and not expired
//!   (`valid_to <= now`); an expired or superseded version is still returned by id.
//! - **Ended imports.** The roots an `Imported` record lists as ended (its memory file no
//!   longer has their item) end their validity: versions created at or before that import get
//!   `valid_to` = the import's time ([`Entry::valid_to_unix_ms`]), so they leave listings and
//!   search by the same rule as expired entries, and the reason is visible in the entry. A
//!   correction made later holds again.
//! - **Abandoned events.** An `Ingested` record may name events their agent abandoned (a
//!   turn rewound or rolled back), applied after its own events. They are found by id as
//!   before (and [`State::is_superseded`] says so) but leave search, timelines and session
//!   counts, like hidden events (a quote finds one only when no current event says it); a tombstone hiding one, or lifted, changes no
//!   count. A later record bringing one again makes it current again (its log says it again,
//!   or another log still says it: the one a copy held by another session was made of). A
//!   record's ids apply only to events held in its own events' sessions (to any, when it has
//!   none). The first prompt
//!   of a session, abandoned, is no longer its prompt: the record's session changes, or a
//!   later record's, name the one that stands.
//! - **Sessions** count visible events only (neither hidden nor abandoned); started and ended
//!   are the times of the first and last visible event; a session without visible events is
//!   not listed. Its prompt is shown only without a title, and not when the event it came
//!   from is hidden or abandoned.
//! - **Events** are kept as locators (record offset, index); a later event with the same id
//!   replaces the earlier (a re-ingested file version) unless the earlier is in another
//!   session (the later is a copy: a resumed Claude Code session repeats the lines of the one
//!   it resumes, ids and all), which keeps it. Text is decoded on demand.

mod bytes;
mod digest;
mod entry;
mod error;
mod event;
pub mod limits;
mod quote;
mod session;
pub mod snapshot;
mod tombstone;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::Path;

use origin_engine::record::{Body, EntryVersion, Event, Imported, Ingested, RecordKind};
use origin_engine::vfs::Vfs;
use origin_engine::Journal;

pub use entry::{Entry, EntryFilter, EntryStatus, HistoryItem};
pub use error::{Error, Result};
pub use event::{listed_by_default, EventMeta};
pub use quote::{fold as fold_quote, quote_matches};
pub use session::{Session, SessionFilter};
pub use snapshot::{SnapshotUse, SNAPSHOT_FILE_NAME};
pub use tombstone::{Hides, TombstoneRef};

use entry::Entries;
use event::{EventRec, Events};
use limits::{FIRST_PROMPT_CHARS_MAX, LISTING_COUNT_MAX};
use session::{NO_SESSION, SessionState, Sessions};
use tombstone::{StoredTombstone, Tombstones};

/// The answer to a lookup by id.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<T> {
    /// It exists and is visible.
    Found(T),
    /// It exists and a tombstone in force hides it.
    Forgotten {
        /// The tombstone hiding it.
        tombstone: String,
    },
    /// No such id.
    Unknown,
}

impl<T> Lookup<T> {
    /// The value, if found.
    pub fn found(self) -> Option<T> {
        match self {
            Lookup::Found(t) => Some(t),
            _ => None,
        }
    }
}

/// How far a replay goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// To the end of the journal.
    End,
    /// Records whose offset is below this one.
    OffsetBelow(u64),
    /// Records committed at or before this time (Unix milliseconds); stops at the first record
    /// committed later.
    TimeAtOrBefore(i64),
}

/// What [`State::open`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// What became of the snapshot.
    pub snapshot: SnapshotUse,
    /// Records read from the journal after it.
    pub records_read: u64,
}

/// Entries, tombstones, sessions and event locators, as of journal offset [`State::read_to`].
#[derive(Clone, Debug, Default)]
pub struct State {
    pub(crate) read_to: u64,
    pub(crate) entries: Entries,
    pub(crate) tombstones: Tombstones,
    pub(crate) events: Events,
    pub(crate) sessions: Sessions,
    /// Events their agent abandoned ([`Ingested::superseded`]): kept, found by id, not listed
    /// nor counted, until a later record brings one again.
    pub(crate) superseded: BTreeSet<String>,
}

/// Record kinds the state reads; the others are skipped without decoding.
fn is_read(kind: u8) -> bool {
    matches!(
        RecordKind::from_u8(kind),
        Some(
            RecordKind::Ingested
                | RecordKind::Remembered
                | RecordKind::Corrected
                | RecordKind::Forgotten
                | RecordKind::Restored
                | RecordKind::Imported
        )
    )
}

fn cut_prompt(s: &str) -> String {
    s.chars().take(FIRST_PROMPT_CHARS_MAX).collect()
}

impl State {
    /// An empty state (offset 0).
    pub fn new() -> State {
        State::default()
    }

    /// The offset after the last record applied.
    pub fn read_to(&self) -> u64 {
        self.read_to
    }

    /// Every entry version the state holds (current, superseded, hidden alike), with the
    /// journal offset of its record, in no particular order.
    pub fn entry_versions(&self) -> impl Iterator<Item = (u64, &EntryVersion)> + '_ {
        self.entries.versions.values().map(|s| (s.offset, &s.version))
    }

    /// Heap bytes the state's largest parts hold, by part, estimated from their capacities
    /// (lower bounds; entries and tombstones, few beside events, are left out): for memory
    /// benchmarks.
    pub fn heap_bytes(&self) -> Vec<(&'static str, usize)> {
        let mut parts: Vec<(&'static str, usize)> = self.events.heap_bytes().to_vec();
        parts.extend(self.sessions.heap_bytes());
        parts
    }

    /// A deterministic hash of the whole state, derived structures included: equal states
    /// built in any way (record by record, from a snapshot, by a full replay) hash equal.
    pub fn digest(&self) -> u64 {
        digest::digest(self)
    }

    // ---- building ----

    /// Applies one record. Records must come in offset order; a record below
    /// [`read_to`](State::read_to) was applied already and is ignored. A process that appended
    /// records calls [`catch_up`](State::catch_up) rather than applying its own records, so
    /// that records other processes wrote before them are not skipped.
    pub fn apply(&mut self, offset: u64, body: &Body) {
        if offset < self.read_to {
            return;
        }
        self.read_to = offset + 1;
        match body {
            Body::Ingested(b) => self.ingested(offset, b),
            Body::Remembered(v) | Body::Corrected(v) => self.add_version(offset, v),
            Body::Forgotten(f) => {
                let newly = self.add_tombstone(StoredTombstone { offset, forgotten: f.clone(), restored: None });
                newly.iter().for_each(|id| self.event_visibility(id, false));
            }
            Body::Restored(r) => {
                let visible = self.tombstones.restore(r);
                visible.iter().for_each(|id| self.event_visibility(id, true));
            }
            Body::Imported(b) => self.imported(offset, b),
            Body::TokenCreated(_) | Body::TokenRevoked(_) | Body::DeviceSeen(_) | Body::Scratch(_) => {}
        }
    }

    fn ingested(&mut self, offset: u64, b: &Ingested) {
        let abandons: rustc_hash::FxHashSet<&str> = b.superseded.iter().map(String::as_str).collect();
        for (i, e) in b.events.iter().enumerate() {
            // A record's payload is at most 64 MiB, so it holds far fewer than 2^32 events.
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            // A copy held by another session is current again unless this record abandons it
            // too (a log copied with a branch its rewind left).
            let lifts = !abandons.contains(e.id.as_str());
            self.put_event(&b.source, e, offset, index, lifts);
        }
        // After its own events (some of which it may name), before its session changes (which
        // may name the first prompt that stands in place of one abandoned). Only events held in
        // the sessions of its own events: an event another session holds (a resumed log's
        // copy of a line of the session it resumes) was not abandoned there.
        if !b.superseded.is_empty() {
            let mut own: Vec<&str> = b.events.iter().map(|e| e.session.as_str()).collect();
            own.sort_unstable();
            own.dedup();
            for id in &b.superseded {
                let held_elsewhere = self.events.get(id).is_some_and(|r| !own.is_empty() && !own.contains(&self.session_name(&r)));
                if !held_elsewhere {
                    self.supersede(id);
                }
            }
        }
        for c in &b.sessions {
            if c.session.is_empty() {
                continue;
            }
            let source = self.events.source_number(&b.source);
            let n = self.sessions.get_or_insert(source, &c.session);
            let s = &mut self.sessions.slots[n as usize];
            if let Some(p) = &c.project {
                s.project = Some(p.clone());
            }
            if let Some(t) = &c.title {
                s.title = Some(t.clone());
            }
            // None yet, or one whose event was abandoned (in this record, say: a first turn
            // rolled back with the next prompt after it), or that this record names abandoned
            // though another session holds it (a resumed log's copy of the first prompt, which
            // the resumed conversation rewound: the other session still says it).
            let abandoned = s.prompt_event.as_deref().is_some_and(|e| self.superseded.contains(e) || abandons.contains(e));
            if s.first_prompt.is_none() || abandoned {
                if let Some(p) = &c.first_prompt {
                    let prompt = cut_prompt(p);
                    s.prompt_event = prompt_event(b, &c.session, &prompt, &self.superseded);
                    s.first_prompt = Some(prompt);
                }
            }
        }
    }

    /// Marks event `id` abandoned by its agent: no longer counted in its session, nor its
    /// session's first prompt (a later record of the session names the one that stands).
    pub(crate) fn supersede(&mut self, id: &str) {
        if self.superseded.contains(id) {
            return;
        }
        if self.tombstones.hidden_by(id).is_none() {
            self.event_visibility(id, false);
        }
        self.superseded.insert(id.to_owned());
        if let Some(rec) = self.events.get(id).filter(|r| r.session != NO_SESSION) {
            let s = &mut self.sessions.slots[rec.session as usize];
            if s.prompt_event.as_deref() == Some(id) {
                s.first_prompt = None;
                s.prompt_event = None;
            }
        }
    }

    /// True for an event that is neither hidden by a tombstone in force nor abandoned by its
    /// agent: what sessions count and list.
    pub(crate) fn counted(&self, id: &str) -> bool {
        self.tombstones.hidden_by(id).is_none() && !self.superseded.contains(id)
    }

    fn imported(&mut self, offset: u64, b: &Imported) {
        let e = &b.event;
        self.put_event(&b.source, e, offset, 0, true);
        for v in &b.entries {
            self.add_version(offset, v);
        }
        for root in &b.ended {
            self.entries.end_root(root, e.time_unix_ms);
        }
    }

    /// Adds an entry version; the tombstones in force whose target now reaches it (or, through
    /// it, more of its entry) hide it too.
    fn add_version(&mut self, offset: u64, v: &EntryVersion) {
        if !self.entries.insert(offset, v) {
            return;
        }
        let Some(root) = self.entries.roots.get(&v.root) else { return };
        // Targets whose reach holds this root: a version of it, or an event a version cites.
        let mut targets: BTreeSet<&str> = BTreeSet::new();
        for u in &root.versions {
            targets.insert(u);
            if let Some(st) = self.entries.get(u) {
                targets.extend(st.version.sources.iter().map(|c| c.event_id.as_str()));
            }
        }
        let aimed: Vec<(String, String)> = targets
            .into_iter()
            .flat_map(|t| self.tombstones.aimed_at(t).map(move |tmb| (tmb.to_owned(), t.to_owned())))
            .collect();
        for (tombstone, target) in aimed {
            let reach = self.reach(&target);
            let newly = self.tombstones.hide(&tombstone, reach);
            newly.iter().for_each(|id| self.event_visibility(id, false));
        }
    }

    /// Adds a tombstone, hiding (while in force) what its record lists and what its target
    /// reaches among the entries known. Returns the ids it made hidden.
    pub(crate) fn add_tombstone(&mut self, t: StoredTombstone) -> Vec<String> {
        let reach = if t.restored.is_none() { self.reach(&t.forgotten.target) } else { BTreeSet::new() };
        self.tombstones.insert(t, reach)
    }

    /// Everything a forget of `target` reaches among the entries known, hidden or not: for an
    /// entry version, every version of its entry and every event they cite (known to this store
    /// or not); for an event, itself and every version of every entry with a version citing it.
    /// It depends on the entries alone, so what a tombstone hides does not depend on the order
    /// versions, events and tombstones arrived in.
    pub(crate) fn reach(&self, target: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        if let Some(root) = self.entries.root_of(target) {
            for v in &root.versions {
                out.insert(v.clone());
                if let Some(st) = self.entries.get(v) {
                    out.extend(st.version.sources.iter().map(|c| c.event_id.clone()));
                }
            }
        } else {
            out.insert(target.to_owned());
            for v in self.entries.citing(target) {
                if let Some(root) = self.entries.root_of(v) {
                    out.extend(root.versions.iter().cloned());
                }
            }
        }
        out
    }

    /// Adds event `e` of `source` at (`offset`, `index`), replacing an earlier event with the
    /// same id.
    fn put_event(&mut self, source: &str, e: &Event, offset: u64, index: u32, lifts: bool) {
        let src = self.events.source_number(source);
        let session = if e.session.is_empty() { NO_SESSION } else { self.sessions.get_or_insert(src, &e.session) };
        let rec = EventRec { time_unix_ms: e.time_unix_ms, offset, index, session, source: src, kind: e.kind, role: e.role };
        self.put_rec(&e.id, rec, e.project.as_deref(), lifts);
    }

    /// Puts an event's record, replacing an earlier one with the same id in the same session
    /// (a file's version read again). An event held in another session stays there: the later
    /// record is a copy (Claude Code's resumed session begins with the lines of the one it
    /// resumes, uuids and times as they were), which must not take the event, and with it the
    /// session's conversation, away from where it was first said.
    ///
    /// An event brought again is current again, if it was abandoned: the later record is
    /// what its agent's log now says (a line a rewrite kept takes the id it had; a record
    /// that abandons events of its own names them after them, [`State::ingested`]). So is a
    /// copy held by another session, when `lifts` (its record does not abandon it too).
    pub(crate) fn put_rec(&mut self, id: &str, rec: EventRec, project: Option<&str>, lifts: bool) {
        let copy = |held: &EventRec| held.session != NO_SESSION && rec.session != NO_SESSION && held.session != rec.session;
        let Some((n, old)) = self.events.put_unless(id, rec, copy) else {
            // A copy: the session holding it keeps it, and if it was abandoned there (a
            // resumed log read first, which a rewind then left), this log still says it
            // (`lifts`: unless its record abandons it too).
            if lifts && self.superseded.remove(id) && self.tombstones.hidden_by(id).is_none() {
                self.event_visibility(id, true);
            }
            return;
        };
        if let Some(old) = old {
            self.detach(id, n, &old);
        }
        self.superseded.remove(id);
        self.attach(id, n, &rec, project);
    }

    fn attach(&mut self, id: &str, n: u32, rec: &EventRec, project: Option<&str>) {
        if rec.session == NO_SESSION {
            return;
        }
        let visible = self.counted(id);
        let s = &mut self.sessions.slots[rec.session as usize];
        s.events.insert(n, &self.events);
        if visible {
            s.visible_count += 1;
        }
        if s.project.is_none() {
            s.project = project.map(str::to_owned);
        }
    }

    fn detach(&mut self, id: &str, n: u32, old: &EventRec) {
        if old.session == NO_SESSION {
            return;
        }
        let visible = self.counted(id);
        let s = &mut self.sessions.slots[old.session as usize];
        if s.events.remove(n, old.order_key(), &self.events) && visible {
            assert!(s.visible_count > 0, "session {} counts no visible event to remove", s.session);
            s.visible_count -= 1;
        }
    }

    /// Counts event `id` in its session again (`visible`) or no longer, as a tombstone in force
    /// stops or starts hiding it; an event its agent abandoned is not counted either way.
    fn event_visibility(&mut self, id: &str, visible: bool) {
        if self.superseded.contains(id) {
            return;
        }
        let Some(rec) = self.events.get(id) else { return };
        if rec.session == NO_SESSION {
            return;
        }
        let s = &mut self.sessions.slots[rec.session as usize];
        if visible {
            s.visible_count += 1;
        } else {
            assert!(s.visible_count > 0, "session {} counts no visible event to hide", s.session);
            s.visible_count -= 1;
        }
    }

    /// The session id of an event's record ("" for none).
    fn session_name(&self, rec: &EventRec) -> &str {
        if rec.session == NO_SESSION { "" } else { &self.sessions.slots[rec.session as usize].session }
    }

    /// The public view of event number `n` (for the quote search).
    pub(crate) fn event_meta_of(&self, n: u32) -> EventMeta {
        self.event_meta(n)
    }

    /// The public view of event number `n`.
    fn event_meta(&self, n: u32) -> EventMeta {
        let rec = self.events.rec(n);
        self.events.meta(n, self.session_name(&rec))
    }

    /// Passes over a record of a kind the state does not read (see [`State::reads_kind`]).
    pub fn pass(&mut self, offset: u64) {
        self.read_to = self.read_to.max(offset + 1);
    }

    /// True for the record kinds the state decodes; a caller that reads the journal itself
    /// applies those ([`State::apply`]) and passes over the rest ([`State::pass`]).
    pub fn reads_kind(kind: u8) -> bool {
        is_read(kind)
    }

    /// Reads records after [`read_to`](State::read_to) up to `until`; returns how many.
    fn read(&mut self, journal: &Journal, until: Until) -> Result<u64> {
        let mut err = None;
        let mut count = 0u64;
        journal.read_from(self.read_to, |r| {
            let stop = match until {
                Until::End => false,
                Until::OffsetBelow(n) => r.offset >= n,
                Until::TimeAtOrBefore(t) => r.time_unix_ms > t,
            };
            if stop {
                return Ok(ControlFlow::Break(()));
            }
            if is_read(r.kind) {
                match r.decode() {
                    Ok((_, body)) => self.apply(r.offset, &body),
                    Err(e) => {
                        err = Some(e);
                        return Ok(ControlFlow::Break(()));
                    }
                }
            } else {
                self.read_to = self.read_to.max(r.offset + 1);
            }
            count += 1;
            Ok(ControlFlow::Continue(()))
        })?;
        match err {
            Some(e) => Err(e.into()),
            None => Ok(count),
        }
    }

    /// Learns what other processes appended ([`Journal::refresh`]) and applies every record
    /// after [`read_to`](State::read_to). Returns how many records were read. A record of a
    /// kind the state reads that this build cannot decode is an error, and nothing after it is
    /// applied; kinds it does not read (tokens, devices, scratch, kinds newer than this build)
    /// are passed over without decoding.
    pub fn catch_up(&mut self, journal: &Journal) -> Result<u64> {
        journal.refresh()?;
        self.read(journal, Until::End)
    }

    /// Builds the state from scratch from every record up to `until` (for
    /// `origin journal replay [--until]`).
    pub fn replay(journal: &Journal, until: Until) -> Result<State> {
        let mut s = State::new();
        s.read(journal, until)?;
        Ok(s)
    }

    /// Loads the snapshot at `path` (through `vfs`) and replays the journal after it. A
    /// snapshot that is missing, damaged, truncated, of another format, of another store or
    /// epoch, ahead of the journal, or of another copy of it (its last record not the
    /// journal's) is not trusted: the state is rebuilt from the journal.
    pub fn open(journal: &Journal, vfs: &dyn Vfs, path: &Path) -> Result<(State, Opened)> {
        let (mut state, snapshot) = State::open_snapshot(journal, vfs, path)?;
        let records_read = state.read(journal, Until::End)?;
        Ok((state, Opened { snapshot, records_read }))
    }

    /// [`State::open`] without reading the journal after the snapshot: the state as its
    /// snapshot left it (empty when the snapshot is not used), for a caller that reads the
    /// records after [`read_to`](State::read_to) itself, decoding each once for the state and
    /// the text index ([`State::apply`], [`State::pass`]).
    pub fn open_snapshot(journal: &Journal, vfs: &dyn Vfs, path: &Path) -> Result<(State, SnapshotUse)> {
        journal.refresh()?;
        let loaded = snapshot::load(vfs, path, journal.store_id(), journal.epoch());
        if let snapshot::Load::Loaded(s, _) = &loaded
            && s.read_to > journal.next_offset()
        {
            // Saved by another process after the refresh above, of records it appended since:
            // look again before calling the snapshot ahead of the journal.
            journal.refresh()?;
        }
        Ok(match loaded {
            snapshot::Load::Missing => (State::new(), SnapshotUse::Missing),
            snapshot::Load::Rejected(reason) => (State::new(), SnapshotUse::Rejected { reason }),
            snapshot::Load::Loaded(s, _) if s.read_to > journal.next_offset() => {
                let reason = format!("reflects offset {} but the journal ends at {}", s.read_to, journal.next_offset());
                (State::new(), SnapshotUse::Rejected { reason })
            }
            // Of this store and epoch, and not past the journal's end: but the journal may be
            // another of the same store (a copy restored from a backup, written to since), whose
            // record there is not the one the snapshot saw last.
            snapshot::Load::Loaded(s, last) => match origin_engine::snapshot::of_another_copy(journal, s.read_to, last)? {
                Some(reason) => (State::new(), SnapshotUse::Rejected { reason }),
                None => {
                    let read_to = s.read_to;
                    (s, SnapshotUse::Loaded { read_to })
                }
            },
        })
    }

    /// Saves the state as a snapshot of `journal`'s store at `path` (written beside it and
    /// renamed into place).
    pub fn save_snapshot(&self, journal: &Journal, vfs: &dyn Vfs, path: &Path) -> Result<()> {
        let last = origin_engine::snapshot::last_record(journal, self.read_to)?;
        snapshot::save(vfs, path, self, journal.store_id(), journal.epoch(), last, journal.lock_wait())
    }

    // ---- entries ----

    /// A version by id, whatever its status or validity.
    pub fn entry(&self, id: &str) -> Lookup<Entry> {
        if self.entries.get(id).is_none() {
            return Lookup::Unknown;
        }
        if let Some(t) = self.tombstones.hidden_by(id) {
            return Lookup::Forgotten { tombstone: t.to_owned() };
        }
        self.entries.view(id).map_or(Lookup::Unknown, Lookup::Found)
    }

    /// Every visible version of the entry `id` belongs to, oldest first (`created`, then id),
    /// forks included. Empty for an unknown id.
    pub fn history(&self, id: &str) -> Vec<HistoryItem> {
        let Some(root) = self.entries.root_of(id) else { return Vec::new() };
        let mut out: Vec<HistoryItem> = root
            .versions
            .iter()
            .filter(|v| self.tombstones.hidden_by(v).is_none())
            .filter_map(|v| {
                let s = self.entries.get(v)?;
                let st = self.entries.standing(v)?;
                Some(HistoryItem {
                    id: v.clone(),
                    supersedes: s.version.supersedes.clone(),
                    author: s.version.author.clone(),
                    created_unix_ms: s.version.created_unix_ms,
                    status: st.status,
                    concurrent: st.concurrent,
                })
            })
            .collect();
        out.sort_by(|a, b| (a.created_unix_ms, &a.id).cmp(&(b.created_unix_ms, &b.id)));
        out
    }

    /// The current version of the entry `id` belongs to (what a correction of `id` must name),
    /// hidden or not; `None` for an unknown id.
    pub fn current_of(&self, id: &str) -> Option<&str> {
        self.entries.root_of(id).map(|r| r.current.as_str())
    }

    /// True if `id` is a current, visible version whose validity has not ended: what search
    /// and listings may show.
    pub fn entry_is_listed(&self, id: &str, now_unix_ms: i64) -> bool {
        self.tombstones.hidden_by(id).is_none()
            && self.entries.view(id).is_some_and(|e| e.status == EntryStatus::Active && !e.is_expired(now_unix_ms))
    }

    /// True if a document of the text index may be shown now: for an event, it is the
    /// event's latest copy (the record and position the state holds for its id) and not
    /// hidden; for an entry version, [`State::entry_is_listed`].
    pub fn doc_is_listed(&self, scope: crate::index::Scope, key: &str, record: u64, position: u32, now_unix_ms: i64) -> bool {
        match scope {
            crate::index::Scope::Entry => self.entry_is_listed(key, now_unix_ms),
            crate::index::Scope::Event => {
                self.events.get(key).is_some_and(|m| m.offset == record && m.index == position) && self.counted(key)
            }
        }
    }

    /// Current entries (see the listing rule in the module docs), most recently written
    /// first (then larger id), at most `limit`.
    pub fn entries(&self, filter: &EntryFilter, now_unix_ms: i64, limit: usize) -> Vec<Entry> {
        let mut out: Vec<Entry> = self
            .entries
            .roots
            .values()
            .filter(|r| self.tombstones.hidden_by(&r.current).is_none())
            .filter(|r| self.entries.get(&r.current).is_some_and(|s| filter.accepts(&s.version)))
            .filter_map(|r| self.entries.view(&r.current))
            .filter(|e| !e.is_expired(now_unix_ms))
            .collect();
        out.sort_by(|a, b| (b.version.created_unix_ms, &b.version.id).cmp(&(a.version.created_unix_ms, &a.version.id)));
        out.truncate(limit.min(LISTING_COUNT_MAX));
        out
    }

    /// Visible versions citing an event.
    pub fn citing_entries(&self, event_id: &str) -> Vec<String> {
        self.entries.citing(event_id).filter(|v| self.tombstones.hidden_by(v).is_none()).map(str::to_owned).collect()
    }

    // ---- tombstones ----

    /// True for an event its agent abandoned (a turn rewound): found by id, never listed.
    pub fn is_superseded(&self, id: &str) -> bool {
        self.superseded.contains(id)
    }

    /// The tombstone in force hiding an entry version or event, if one does.
    pub fn is_hidden(&self, id: &str) -> Option<&str> {
        self.tombstones.hidden_by(id)
    }

    /// A tombstone by id, lifted or not.
    pub fn tombstone(&self, id: &str) -> Option<TombstoneRef<'_>> {
        self.tombstones.get(id)
    }

    /// Every tombstone, lifted ones included, oldest first.
    pub fn tombstones(&self) -> Vec<TombstoneRef<'_>> {
        let mut all: Vec<TombstoneRef<'_>> = self.tombstones.all.keys().filter_map(|id| self.tombstones.get(id)).collect();
        all.sort_by(|a, b| (a.forgotten.time_unix_ms, &a.forgotten.tombstone).cmp(&(b.forgotten.time_unix_ms, &b.forgotten.tombstone)));
        all
    }

    /// What a forget of `id` would hide now, leaving out what is hidden already: for an entry
    /// version, every version of its entry and every event they cite; for an event, itself and
    /// every version of every entry with a version citing it ([`State::reach`], of the entries
    /// and events this store has). `None` for an unknown id; an empty [`Hides`] when everything
    /// is hidden already (then nothing is recorded).
    pub fn forget_plan(&self, id: &str) -> Option<Hides> {
        if self.entries.get(id).is_none() && !self.events.contains(id) {
            return None;
        }
        let visible = |x: &&String| self.tombstones.hidden_by(x).is_none();
        let reach = self.reach(id);
        let entries = reach.iter().filter(|x| self.entries.get(x).is_some()).filter(visible).cloned().collect();
        let events = reach.iter().filter(|x| self.events.contains(x)).filter(visible).cloned().collect();
        Some(Hides { entries, events })
    }

    // ---- sessions ----

    fn session_view(&self, s: &SessionState) -> Option<Session> {
        if s.visible_count == 0 {
            return None;
        }
        let visible = |n: u32| self.counted(self.events.id(n));
        let time = |n: u32| self.events.order_key(n).0;
        let started = time(s.events.iter().find(|&n| visible(n))?);
        let ended = time(s.events.iter().rev().find(|&n| visible(n))?);
        let prompt = match (&s.title, &s.prompt_event) {
            (Some(_), _) => None,
            (None, Some(e)) if !self.counted(e) => None,
            (None, _) => s.first_prompt.clone(),
        };
        Some(Session {
            source: self.events.source_name(s.source).to_owned(),
            session: s.session.to_string(),
            project: s.project.clone(),
            title: s.title.clone(),
            prompt,
            started_unix_ms: started,
            ended_unix_ms: ended,
            event_count: s.visible_count,
        })
    }

    /// Sessions with visible events, by last activity, newest first (ties by source and
    /// session), at most `limit`.
    pub fn sessions(&self, filter: &SessionFilter, limit: usize) -> Vec<Session> {
        let source = match filter.source.as_deref() {
            Some(name) => match self.events.source_known(name) {
                Some(n) => Some(n),
                None => return Vec::new(),
            },
            None => None,
        };
        let mut out: Vec<Session> = self
            .sessions
            .slots
            .iter()
            .filter(|s| source.is_none_or(|n| s.source == n))
            .filter(|s| filter.project.as_deref().is_none_or(|p| s.project.as_deref() == Some(p)))
            .filter_map(|s| self.session_view(s))
            .filter(|s| filter.since_unix_ms.is_none_or(|t| s.ended_unix_ms >= t))
            .filter(|s| filter.until_unix_ms.is_none_or(|t| s.started_unix_ms < t))
            .collect();
        out.sort_by(|a, b| {
            b.ended_unix_ms.cmp(&a.ended_unix_ms).then_with(|| (&a.source, &a.session).cmp(&(&b.source, &b.session)))
        });
        out.truncate(limit.min(LISTING_COUNT_MAX));
        out
    }

    /// One session, if it has visible events.
    pub fn session(&self, source: &str, session: &str) -> Option<Session> {
        let n = self.sessions.find(self.events.source_known(source)?, session)?;
        self.session_view(&self.sessions.slots[n as usize])
    }

    /// Fills in the prompt of each listed session without a title whose first prompt's event
    /// is no longer counted (forgotten; abandoned, until a later record names the prompt that
    /// stands): the first visible user message after that event, cut to 80 characters, its
    /// text read from the journal. (A forget names no new first prompt, as an agent's later
    /// record names one after a rewind: without this, such a session listed neither title nor
    /// prompt.)
    pub fn fill_prompts(&self, journal: &Journal, sessions: &mut [Session]) -> Result<()> {
        for s in sessions.iter_mut().filter(|s| s.title.is_none() && s.prompt.is_none()) {
            let Some(n) = self.events.source_known(&s.source).and_then(|src| self.sessions.find(src, &s.session)) else { continue };
            let st = &self.sessions.slots[n as usize];
            let Some(gone) = st.prompt_event.as_deref().filter(|e| !self.counted(e)).and_then(|e| self.events.find(e)) else { continue };
            let after = (self.events.order_key(gone), gone);
            let next = st.events.iter().find(|&m| {
                let r = self.events.rec(m);
                (r.order_key(), m) > after
                    && r.role == origin_engine::record::Role::User
                    && r.kind == origin_engine::record::EventKind::Message
                    && self.counted(self.events.id(m))
            });
            if let Some(m) = next {
                s.prompt = Some(cut_prompt(&event::decode(journal, &self.events.meta(m, &s.session))?.text));
            }
        }
        Ok(())
    }

    /// A listed session (one with visible events) of this id, of `source` when given (of the
    /// first source that has one otherwise).
    pub fn find_session(&self, source: Option<&str>, session: &str) -> Option<Session> {
        let source = match source {
            Some(name) => Some(self.events.source_known(name)?),
            None => None,
        };
        self.sessions
            .with_id(session)
            .iter()
            .filter(|(s, _)| source.is_none_or(|n| *s == n))
            .find_map(|&(_, n)| self.session_view(&self.sessions.slots[n as usize]))
    }

    /// The first `limit` visible events of a session, oldest first (time, then journal
    /// position). Without `include_tools`, messages only. Without `source`, the sessions of
    /// that id in every source, merged.
    pub fn session_events(&self, source: Option<&str>, session: &str, include_tools: bool, limit: usize) -> Vec<EventMeta> {
        let source = match source {
            Some(name) => match self.events.source_known(name) {
                Some(n) => Some(n),
                None => return Vec::new(),
            },
            None => None,
        };
        let slots: Vec<u32> = self.sessions.with_id(session).iter().filter(|(s, _)| source.is_none_or(|n| *s == n)).map(|&(_, n)| n).collect();
        let mut numbers: Vec<u32> = slots.iter().flat_map(|&n| self.sessions.slots[n as usize].events.iter()).collect();
        // One session's events are in this order already; those of several are merged.
        if slots.len() > 1 {
            numbers.sort_by_cached_key(|&n| (self.events.order_key(n), n));
        }
        numbers
            .into_iter()
            .filter(|&n| self.counted(self.events.id(n)))
            .filter(|&n| include_tools || listed_by_default(self.events.rec(n).kind))
            .take(limit.min(LISTING_COUNT_MAX))
            .map(|n| self.event_meta(n))
            .collect()
    }

    // ---- events ----

    /// Where an event is, and what it is (not its text).
    pub fn event(&self, id: &str) -> Lookup<EventMeta> {
        match self.events.find(id) {
            None => Lookup::Unknown,
            Some(n) => match self.tombstones.hidden_by(id) {
                Some(t) => Lookup::Forgotten { tombstone: t.to_owned() },
                None => Lookup::Found(self.event_meta(n)),
            },
        }
    }

    /// An event in full, decoded from its record in the journal.
    pub fn event_body(&self, journal: &Journal, id: &str) -> Result<Lookup<Event>> {
        Ok(match self.event(id) {
            Lookup::Found(m) => Lookup::Found(event::decode(journal, &m)?),
            Lookup::Forgotten { tombstone } => Lookup::Forgotten { tombstone },
            Lookup::Unknown => Lookup::Unknown,
        })
    }

    /// Several events in full (the events `metas` locate, in that order), each record read
    /// and each chunk decompressed once.
    pub fn event_bodies(&self, journal: &Journal, metas: &[EventMeta]) -> Result<Vec<Event>> {
        event::decode_many(journal, metas)
    }

    /// The event a quote-only source cites: the most recent visible message containing the
    /// quote (ignoring whitespace and case), else the most recent such tool result; never a
    /// tool call. Decodes event text from the journal.
    pub fn find_quote(&self, journal: &Journal, quote: &str) -> Result<Option<EventMeta>> {
        quote::find(self, journal, quote)
    }
}

/// The event the first prompt of `session` came from: the batch's user message of that
/// session whose text begins with it (one not abandoned first: the same prompt sent again in
/// place of one abandoned), else its first user message.
fn prompt_event(b: &Ingested, session: &str, prompt: &str, abandoned: &BTreeSet<String>) -> Option<String> {
    let mut user = b.events.iter().filter(|e| {
        e.session == session && e.role == origin_engine::record::Role::User && e.kind == origin_engine::record::EventKind::Message
    });
    let exact = |current: bool| user.clone().find(|e| cut_prompt(&e.text) == prompt && (!current || !abandoned.contains(&e.id)));
    exact(true).or_else(|| exact(false)).or_else(|| user.next()).map(|e| e.id.clone())
}

//! Events: where each event's record is in the journal, so its text is decoded on demand and
//! never kept in memory.


use origin_engine::codec::IngestedView;
use origin_engine::record::{Body, Event, EventKind, RecordKind, Role};
use origin_engine::vfs::Mapped;
use origin_engine::Journal;
use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::state::error::{Error, Result};

/// What the state keeps of an event: enough to list, filter and find it; its text stays in
/// the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventMeta {
    /// `<source>:<id in the source>`.
    pub id: String,
    /// Source id of the record that brought it.
    pub source: String,
    /// Session id (empty for a memory file version).
    pub session: String,
    /// When it happened.
    pub time_unix_ms: i64,
    /// What it is.
    pub kind: EventKind,
    /// Who said it.
    pub role: Role,
    /// Offset of the `Ingested` (or `Imported`) record holding it.
    pub offset: u64,
    /// Its index in that record's events (0 for the event of an `Imported` record).
    pub index: u32,
}

impl EventMeta {
    /// The locator of `event`, brought by the record at `offset` from `source`, at `index` in
    /// that record's events.
    pub fn of(source: &str, event: &origin_engine::record::Event, offset: u64, index: u32) -> EventMeta {
        EventMeta {
            id: event.id.clone(),
            source: source.to_owned(),
            session: event.session.clone(),
            time_unix_ms: event.time_unix_ms,
            kind: event.kind,
            role: event.role,
            offset,
            index,
        }
    }

}

/// True for the kinds listed without `include_tools`: messages only (tool calls and results,
/// meta and system events need the flag; memory file versions belong to no session).
pub fn listed_by_default(kind: EventKind) -> bool {
    kind == EventKind::Message
}

/// What the state keeps of an event, compactly: its id is kept once, in [`Events`], and
/// source and session are numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventRec {
    pub(crate) time_unix_ms: i64,
    pub(crate) offset: u64,
    pub(crate) index: u32,
    /// Its session's number ([`crate::state::session::NO_SESSION`] for none).
    pub(crate) session: u32,
    /// Its source's number ([`Events::source_name`]).
    pub(crate) source: u16,
    pub(crate) kind: EventKind,
    pub(crate) role: Role,
}

impl EventRec {
    /// The key that orders events within a session: time, then journal position.
    pub(crate) fn order_key(&self) -> (i64, u64, u32) {
        (self.time_unix_ms, self.offset, self.index)
    }
}

fn hash_id(id: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(id)
}

/// Every event by number (first seen first); ids looked up through tables of numbers, so
/// each id is stored once. A later event with the same id (a re-ingested file version)
/// replaces the earlier in place, keeping its number.
///
/// The events of a loaded snapshot stay in its file ([`Base`], numbers `0..base.len()`): their
/// ids, records and id table are read from its map when asked, shared by every process with
/// the store open instead of copied into each one's memory. Events applied after it are held
/// in memory (numbers from `base.len()` on, found through `table`); a snapshot event replaced
/// since is held in `replaced`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    base: Option<Arc<Base>>,
    /// Records of base events replaced since the snapshot.
    replaced: FxHashMap<u32, EventRec>,
    /// Every id of the events after the base, one after another, in number order (one
    /// allocation for all of them, not one each).
    id_text: String,
    /// Where each of those ids ends in `id_text` (it starts where the one before ends).
    id_ends: Vec<usize>,
    /// The records of the events after the base.
    recs: Vec<EventRec>,
    /// The numbers of the events after the base, by id.
    table: hashbrown::HashTable<u32>,
    sources: Vec<Box<str>>,
}

/// Size of an event's record in a snapshot: source and session (`u32` each), time (`i64`),
/// kind and role (a byte each), offset (`u64`) and index (`u32`).
pub(crate) const BASE_REC_SIZE: usize = 30;
/// An empty slot of a snapshot's id table.
pub(crate) const EMPTY_SLOT: u32 = u32::MAX;

/// The hash that places an id in a snapshot's id table: XXH3-64 of its bytes (part of the
/// format, so a specified function, unlike the in-memory table's).
pub(crate) fn slot_hash(id: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id)
}

/// The slot where a probe for an id of hash `hash` starts, in a table of `slots` slots (a
/// power of two).
pub(crate) fn home_slot(hash: u64, slots: usize) -> usize {
    (hash & (slots as u64 - 1)) as usize
}

/// Where the parts of a snapshot's events are in its bytes (FORMAT.md, "State snapshot").
#[derive(Clone, Copy, Debug)]
pub(crate) struct BaseLayout {
    /// Number of events.
    pub(crate) count: u32,
    /// The ids' text.
    pub(crate) text_at: usize,
    /// Where each id ends in the text (`u64` each).
    pub(crate) ends_at: usize,
    /// The records ([`BASE_REC_SIZE`] bytes each).
    pub(crate) recs_at: usize,
    /// The id table (`u32` slots, a power of two of them, or none when there are no events).
    pub(crate) table_at: usize,
    pub(crate) slots: usize,
}

/// The events of a loaded snapshot, read from its bytes. Built only by the snapshot's decoder
/// once it has checked every byte of them ([`crate::state::snapshot`]): the text is UTF-8,
/// each end is on a character of it and none before the one before, each record reads back,
/// the table finds every event's id at its number and has an empty slot.
pub(crate) struct Base {
    bytes: Arc<Mapped>,
    at: BaseLayout,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base({} events)", self.at.count)
    }
}

impl Base {
    /// The events laid out at `at` in `bytes`, unchecked: the decoder checks them through
    /// these accessors before it keeps them.
    pub(crate) fn new(bytes: Arc<Mapped>, at: BaseLayout) -> Base {
        Base { bytes, at }
    }

    pub(crate) fn len(&self) -> u32 {
        self.at.count
    }

    /// Where event `n`'s id ends in the ids' text.
    pub(crate) fn end(&self, n: u32) -> u64 {
        le_u64(&self.bytes, self.at.ends_at + 8 * n as usize)
    }

    pub(crate) fn id_bytes(&self, n: u32) -> &[u8] {
        let start = if n == 0 { 0 } else { self.end(n - 1) as usize };
        &self.bytes[self.at.text_at + start..self.at.text_at + self.end(n) as usize]
    }

    fn id(&self, n: u32) -> &str {
        std::str::from_utf8(self.id_bytes(n)).unwrap_or_else(|_| unreachable!("event {n}'s id was checked as UTF-8 when the snapshot was loaded"))
    }

    /// Every id, one after another: the snapshot's text.
    fn text(&self) -> &[u8] {
        let len = if self.at.count == 0 { 0 } else { self.end(self.at.count - 1) as usize };
        &self.bytes[self.at.text_at..self.at.text_at + len]
    }

    /// The number of the event `id`, through the id table: linear probing from its
    /// [`slot_hash`] to the first slot that holds it or is empty.
    fn find(&self, id: &[u8]) -> Option<u32> {
        if self.at.slots == 0 {
            return None;
        }
        let mask = self.at.slots - 1;
        let mut slot = home_slot(slot_hash(id), self.at.slots);
        loop {
            let n = le_u32(&self.bytes, self.at.table_at + 4 * slot);
            if n == EMPTY_SLOT {
                return None;
            }
            if self.id_bytes(n) == id {
                return Some(n);
            }
            slot = (slot + 1) & mask;
        }
    }

    fn order_key(&self, n: u32) -> (i64, u64, u32) {
        let b = self.rec_bytes(n);
        (le_u64(b, 8) as i64, le_u64(b, 18), le_u32(b, 26))
    }

    fn rec_bytes(&self, n: u32) -> &[u8] {
        let at = self.at.recs_at + n as usize * BASE_REC_SIZE;
        &self.bytes[at..at + BASE_REC_SIZE]
    }

    pub(crate) fn rec(&self, n: u32) -> EventRec {
        decode_rec(self.rec_bytes(n)).unwrap_or_else(|e| unreachable!("event {n}'s record was checked when the snapshot was loaded: {e}"))
    }

    /// Decodes event `n`'s record, for the decoder's checks.
    pub(crate) fn try_rec(&self, n: u32) -> std::result::Result<EventRec, String> {
        decode_rec(self.rec_bytes(n))
    }
}

/// An event's record as a snapshot writes it ([`BASE_REC_SIZE`] bytes); the source number is
/// not checked against the sources.
fn decode_rec(b: &[u8]) -> std::result::Result<EventRec, String> {
    let source = le_u32(b, 0);
    Ok(EventRec {
        source: u16::try_from(source).map_err(|_| format!("source number {source}"))?,
        session: le_u32(b, 4),
        time_unix_ms: le_u64(b, 8) as i64,
        kind: crate::state::snapshot::event_kind_of(b[16])?,
        role: crate::state::snapshot::role_of(b[17])?,
        offset: le_u64(b, 18),
        index: le_u32(b, 26),
    })
}

#[inline]
pub(crate) fn le_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

#[inline]
fn le_u64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]])
}

/// The id of event `n`, given the ids' text and ends.
fn id_in<'a>(text: &'a str, ends: &[usize], n: u32) -> &'a str {
    let n = n as usize;
    let start = if n == 0 { 0 } else { ends[n - 1] };
    &text[start..ends[n]]
}

impl Events {
    /// Heap bytes held, by part, from the structures' capacities (a lower bound: the
    /// allocator's own overhead is not counted; the snapshot's map is not heap).
    pub(crate) fn heap_bytes(&self) -> [(&'static str, usize); 5] {
        // hashbrown: a bucket and a control byte per slot, slots a power of two at most 8/7
        // of the capacity.
        let slots = |capacity: usize| if capacity == 0 { 0 } else { (capacity * 8 / 7).next_power_of_two() };
        [
            ("event ids' text", self.id_text.capacity()),
            ("event ids' ends", self.id_ends.capacity() * std::mem::size_of::<usize>()),
            ("event locators", self.recs.capacity() * std::mem::size_of::<EventRec>()),
            ("event id table", slots(self.table.capacity()) * (std::mem::size_of::<u32>() + 1)),
            ("replaced snapshot events", slots(self.replaced.capacity()) * (std::mem::size_of::<(u32, EventRec)>() + 1)),
        ]
    }

    fn base_len(&self) -> u32 {
        self.base.as_ref().map_or(0, |b| b.len())
    }

    /// The id of event `n`.
    pub(crate) fn id(&self, n: u32) -> &str {
        match self.base.as_deref() {
            Some(b) if n < b.len() => b.id(n),
            Some(b) => id_in(&self.id_text, &self.id_ends, n - b.len()),
            None => id_in(&self.id_text, &self.id_ends, n),
        }
    }

    /// The record of event `n`.
    pub(crate) fn rec(&self, n: u32) -> EventRec {
        match self.base.as_deref() {
            Some(b) if n < b.len() => self.replaced.get(&n).copied().unwrap_or_else(|| b.rec(n)),
            Some(b) => self.recs[(n - b.len()) as usize],
            None => self.recs[n as usize],
        }
    }

    /// The key that orders event `n` within its session ([`EventRec::order_key`]): of a
    /// snapshot's event, read from the map without decoding the rest of its record.
    pub(crate) fn order_key(&self, n: u32) -> (i64, u64, u32) {
        match self.base.as_deref() {
            Some(b) if n < b.len() => match self.replaced.get(&n) {
                Some(r) => r.order_key(),
                None => b.order_key(n),
            },
            Some(b) => self.recs[(n - b.len()) as usize].order_key(),
            None => self.recs[n as usize].order_key(),
        }
    }

    /// Every event's id, by number.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        (0..self.len() as u32).map(|n| self.id(n))
    }

    /// Every event's id, one after another, by number, in pieces.
    pub(crate) fn id_text(&self) -> [&[u8]; 2] {
        [self.base.as_ref().map_or(&[][..], |b| b.text()), self.id_text.as_bytes()]
    }

    /// The number of the event `id` among those after the base, if any.
    fn find_later(&self, id: &str) -> Option<u32> {
        let base_len = self.base_len();
        let (text, ends) = (self.id_text.as_str(), &self.id_ends[..]);
        self.table.find(hash_id(id.as_bytes()), |&n| id_in(text, ends, n - base_len) == id).copied()
    }

    /// The number of the event `id`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        match self.base.as_deref().and_then(|b| b.find(id.as_bytes())) {
            Some(n) => Some(n),
            None => self.find_later(id),
        }
    }

    /// The event `id`.
    pub(crate) fn get(&self, id: &str) -> Option<EventRec> {
        self.find(id).map(|n| self.rec(n))
    }

    /// True if an event `id` is known.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.find(id).is_some()
    }

    /// Number of events.
    pub(crate) fn len(&self) -> usize {
        self.base_len() as usize + self.recs.len()
    }

    /// Takes the events of a loaded snapshot, checked, as its first (the state holds none yet).
    pub(crate) fn set_base(&mut self, base: Base) {
        assert!(self.base.is_none() && self.recs.is_empty(), "a snapshot's events are the state's first");
        self.base = Some(Arc::new(base));
    }

    /// Puts an event: a new number, or the number of the event with the same id, whose
    /// record it replaces (returned).
    #[cfg(test)]
    pub(crate) fn put(&mut self, id: &str, rec: EventRec) -> (u32, Option<EventRec>) {
        self.put_unless(id, rec, |_| false).unwrap_or_else(|| unreachable!("a put that keeps nothing puts"))
    }

    /// [`Events::put`], unless an event with the same id is held whose record `keep` says
    /// stays: then nothing changes and None is returned.
    pub(crate) fn put_unless(&mut self, id: &str, rec: EventRec, keep: impl Fn(&EventRec) -> bool) -> Option<(u32, Option<EventRec>)> {
        if let Some(b) = self.base.as_deref()
            && let Some(n) = b.find(id.as_bytes())
        {
            let old = self.replaced.get(&n).copied().unwrap_or_else(|| b.rec(n));
            if keep(&old) {
                return None;
            }
            self.replaced.insert(n, rec);
            return Some((n, Some(old)));
        }
        // One hash and one probe: the id is found, or its slot taken, in one pass.
        let base_len = self.base_len();
        let Events { id_text, id_ends, recs, table, .. } = self;
        let (text, ends) = (&*id_text, &*id_ends);
        match table.entry(hash_id(id.as_bytes()), |&n| id_in(text, ends, n - base_len) == id, |&m| hash_id(id_in(text, ends, m - base_len).as_bytes())) {
            hashbrown::hash_table::Entry::Occupied(e) => {
                let n = *e.get();
                let held = &mut recs[(n - base_len) as usize];
                if keep(held) {
                    return None;
                }
                Some((n, Some(std::mem::replace(held, rec))))
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let n = u32::try_from(base_len as usize + recs.len()).unwrap_or_else(|_| panic!("more than 2^32 events in one state"));
                e.insert(n);
                id_text.push_str(id);
                id_ends.push(id_text.len());
                recs.push(rec);
                Some((n, None))
            }
        }
    }

    /// The number of source `name`, added if new.
    pub(crate) fn source_number(&mut self, name: &str) -> u16 {
        if let Some(i) = self.sources.iter().position(|s| **s == *name) {
            return i as u16;
        }
        assert!(self.sources.len() < usize::from(u16::MAX), "more than 65,535 sources");
        self.sources.push(name.into());
        (self.sources.len() - 1) as u16
    }

    /// The number of source `name`, if known.
    pub(crate) fn source_known(&self, name: &str) -> Option<u16> {
        self.sources.iter().position(|s| **s == *name).map(|i| i as u16)
    }

    /// The name of source `n`.
    pub(crate) fn source_name(&self, n: u16) -> &str {
        self.sources.get(usize::from(n)).map_or("", |s| s)
    }

    /// Every source name, by number.
    pub(crate) fn source_names(&self) -> &[Box<str>] {
        &self.sources
    }

    /// The public view of event `n`.
    pub(crate) fn meta(&self, n: u32, session: &str) -> EventMeta {
        let r = self.rec(n);
        EventMeta {
            id: self.id(n).to_owned(),
            source: self.source_name(r.source).to_owned(),
            session: session.to_owned(),
            time_unix_ms: r.time_unix_ms,
            kind: r.kind,
            role: r.role,
            offset: r.offset,
            index: r.index,
        }
    }
}

/// Decodes the record at `offset`, if the journal holds it.
pub(crate) fn body_at(journal: &Journal, offset: u64) -> Result<Option<Body>> {
    Ok(journal.read_one(offset, |r| Ok(r.decode().map(|(_, body)| body)))?.transpose()?)
}

/// The event `meta` locates, taken out of a decoded record.
pub(crate) fn event_in<'a>(body: &'a Body, meta: &EventMeta) -> Result<&'a Event> {
    let inconsistent = |reason: String| Error::Inconsistent { id: meta.id.clone(), offset: meta.offset, index: meta.index, reason };
    let ev = match body {
        Body::Ingested(b) => b.events.get(meta.index as usize),
        Body::Imported(b) if meta.index == 0 => Some(&b.event),
        other => return Err(inconsistent(format!("the record there is {}", other.kind().name()))),
    };
    match ev {
        Some(e) if e.id == meta.id => Ok(e),
        Some(e) => Err(inconsistent(format!("the event there is {}", e.id))),
        None => Err(inconsistent("the record has no event at that index".into())),
    }
}

/// Reads one event in full from the journal: for an `ingested` record, only the chunk that
/// holds it is decompressed.
pub(crate) fn decode(journal: &Journal, meta: &EventMeta) -> Result<Event> {
    let inconsistent = |reason: String| Error::Inconsistent { id: meta.id.clone(), offset: meta.offset, index: meta.index, reason };
    let found = journal.read_one(meta.offset, |r| {
        Ok(if r.kind == RecordKind::Ingested as u8 {
            match IngestedView::open(r.kind_version, r.payload, r.offset).and_then(|v| v.event(u64::from(meta.index))) {
                Ok(Some(e)) if e.id == meta.id => Ok(e),
                Ok(Some(e)) => Err(inconsistent(format!("the event there is {}", e.id))),
                Ok(None) => Err(inconsistent("the record has no event at that index".into())),
                Err(e) => Err(e.into()),
            }
        } else {
            match r.decode() {
                Ok((_, body)) => event_in(&body, meta).cloned(),
                Err(e) => Err(e.into()),
            }
        })
    })?;
    found.unwrap_or_else(|| Err(inconsistent("the journal has no record at that offset".into())))
}

/// Reads several events in full (in the order of `metas`): each record is read once, and each
/// of its chunks decompressed once, however many of the events it holds.
pub(crate) fn decode_many(journal: &Journal, metas: &[EventMeta]) -> Result<Vec<Event>> {
    let mut order: Vec<usize> = (0..metas.len()).collect();
    order.sort_by_key(|&i| (metas[i].offset, metas[i].index));
    let mut out: Vec<Option<Event>> = vec![None; metas.len()];
    for group in order.chunk_by(|&a, &b| metas[a].offset == metas[b].offset) {
        let first = &metas[group[0]];
        let inconsistent = |m: &EventMeta, reason: String| Error::Inconsistent { id: m.id.clone(), offset: m.offset, index: m.index, reason };
        let found = journal.read_one(first.offset, |r| {
            if r.kind == RecordKind::Ingested as u8 {
                let view = IngestedView::open(r.kind_version, r.payload, r.offset)?;
                let indexes: Vec<u64> = group.iter().map(|&i| u64::from(metas[i].index)).collect();
                Ok(Ok(view.events_at(&indexes)?))
            } else {
                let (_, body) = r.decode()?;
                Ok(group.iter().map(|&i| event_in(&body, &metas[i]).cloned().map(Some)).collect::<Result<Vec<_>>>())
            }
        })?;
        let Some(events) = found else { return Err(inconsistent(first, "the journal has no record at that offset".into())) };
        for (&i, e) in group.iter().zip(events?) {
            let m = &metas[i];
            match e {
                Some(e) if e.id == m.id => out[i] = Some(e),
                Some(e) => return Err(inconsistent(m, format!("the event there is {}", e.id))),
                None => return Err(inconsistent(m, "the record has no event at that index".into())),
            }
        }
    }
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rec(offset: u64) -> EventRec {
        EventRec { time_unix_ms: 1, offset, index: 0, session: crate::state::session::NO_SESSION, source: 0, kind: EventKind::Message, role: Role::User }
    }

    /// Ids kept one after another are each found by number and by id, whatever their length;
    /// an id put again keeps its number and its text, and its record is replaced.
    #[test]
    fn events_keep_each_id_once_and_find_it_by_number_and_by_id() {
        let mut e = Events::default();
        let ids = ["claude-code:a", "", "é", "codex:ééé-long-id-0123456789", "claude-code:a2"];
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(e.put(id, rec(k as u64)), (k as u32, None));
        }
        assert_eq!(e.put("é", rec(99)), (2, Some(rec(2))));
        assert_eq!(e.len(), ids.len());
        assert_eq!(e.ids().collect::<Vec<_>>(), ids);
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(e.id(k as u32), *id);
            assert_eq!(e.find(id), Some(k as u32));
        }
        assert_eq!(e.get("é").unwrap().offset, 99);
        assert_eq!(e.find("claude-code:"), None);
        assert_eq!(e.find("claude-code:a22"), None);
        // Enough more that the table grows several times over.
        for k in 0..5000u64 {
            e.put(&format!("x{k}"), rec(k));
        }
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(e.find(id), Some(k as u32), "{id:?}");
        }
        assert_eq!(e.find("x4999"), Some(ids.len() as u32 + 4999));
        assert_eq!(e.id(ids.len() as u32 + 17), "x17");
    }
}

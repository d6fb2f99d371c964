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

/// Every event by number (first seen first); ids looked up through a table of numbers, so
/// each id is stored once. A later event with the same id (a re-ingested file version)
/// replaces the earlier in place, keeping its number.
///
/// The events of a loaded snapshot stay in its file ([`Base`], numbers `0..base.count`): their
/// ids and records are read from its map when asked, shared by every process with the store
/// open instead of copied into each one's memory. Events applied after it are held in memory
/// (numbers from `base.count` on); a snapshot event replaced since is held in `replaced`.
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
    table: hashbrown::HashTable<u32>,
    sources: Vec<Box<str>>,
}

/// The events of a loaded snapshot, read from its bytes (FORMAT.md, "State snapshot"): the
/// ids' text and the fixed-width records, checked when the snapshot was loaded
/// ([`crate::state::snapshot`]).
pub(crate) struct Base {
    bytes: Arc<Mapped>,
    /// Where the ids' text is in `bytes`.
    text_at: usize,
    /// Where event 0's record is in `bytes`; event `n`'s is [`BASE_REC_SIZE`] bytes later per
    /// number.
    recs_at: usize,
    /// Where each id ends in the ids' text.
    ends: Vec<u64>,
}

/// Size of an event's record in a snapshot: its id's length, source and session (`u32`
/// each), time (`i64`), kind and role (a byte each), offset (`u64`) and index (`u32`).
pub(crate) const BASE_REC_SIZE: usize = 34;

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base({} events)", self.ends.len())
    }
}

impl Base {
    /// The events whose ids' text is at `text_at` in `bytes`, ending at `ends`, and whose
    /// records start at `recs_at`. The caller has checked every byte of them: the text is
    /// UTF-8, each end is on a character of it, each record reads back ([`Base::rec`]).
    pub(crate) fn new(bytes: Arc<Mapped>, text_at: usize, recs_at: usize, ends: Vec<u64>) -> Base {
        Base { bytes, text_at, recs_at, ends }
    }

    fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    fn id_bytes(&self, n: u32) -> &[u8] {
        let n = n as usize;
        let start = if n == 0 { 0 } else { self.ends[n - 1] as usize };
        &self.bytes[self.text_at + start..self.text_at + self.ends[n] as usize]
    }

    fn id(&self, n: u32) -> &str {
        std::str::from_utf8(self.id_bytes(n)).unwrap_or_else(|_| unreachable!("event {n}'s id was checked as UTF-8 when the snapshot was loaded"))
    }

    /// Every id, one after another: the snapshot's text.
    fn text(&self) -> &[u8] {
        let len = self.ends.last().map_or(0, |&e| e as usize);
        &self.bytes[self.text_at..self.text_at + len]
    }

    fn order_key(&self, n: u32) -> (i64, u64, u32) {
        let at = self.recs_at + n as usize * BASE_REC_SIZE;
        let b = &self.bytes[at..at + BASE_REC_SIZE];
        (le_u64(b, 12) as i64, le_u64(b, 22), le_u32(b, 30))
    }

    fn rec(&self, n: u32) -> EventRec {
        let at = self.recs_at + n as usize * BASE_REC_SIZE;
        decode_rec(&self.bytes[at..at + BASE_REC_SIZE]).unwrap_or_else(|e| unreachable!("event {n}'s record was checked when the snapshot was loaded: {e}"))
    }
}

/// An event's record as a snapshot writes it ([`BASE_REC_SIZE`] bytes, the id's length
/// first, not read here); the source number is not checked against the sources.
pub(crate) fn decode_rec(b: &[u8]) -> std::result::Result<EventRec, String> {
    let source = le_u32(b, 4);
    Ok(EventRec {
        source: u16::try_from(source).map_err(|_| format!("source number {source}"))?,
        session: le_u32(b, 8),
        time_unix_ms: le_u64(b, 12) as i64,
        kind: crate::state::snapshot::event_kind_of(b[20])?,
        role: crate::state::snapshot::role_of(b[21])?,
        offset: le_u64(b, 22),
        index: le_u32(b, 30),
    })
}

fn le_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn le_u64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]])
}

/// The id of event `n`, given the ids' text and ends.
fn id_in<'a>(text: &'a str, ends: &[usize], n: u32) -> &'a str {
    let n = n as usize;
    let start = if n == 0 { 0 } else { ends[n - 1] };
    &text[start..ends[n]]
}

/// The id of event `n` (of the base if below its count, else of the text after it), as bytes.
fn id_of<'a>(base: Option<&'a Base>, text: &'a str, ends: &[usize], n: u32) -> &'a [u8] {
    match base {
        Some(b) if n < b.len() => b.id_bytes(n),
        Some(b) => id_in(text, ends, n - b.len()).as_bytes(),
        None => id_in(text, ends, n).as_bytes(),
    }
}

impl Events {
    /// Heap bytes held, by part, from the structures' capacities (a lower bound: the
    /// allocator's own overhead is not counted; the snapshot's map is not heap).
    pub(crate) fn heap_bytes(&self) -> [(&'static str, usize); 5] {
        // hashbrown: a bucket of 4 bytes and a control byte per slot, slots a power of two
        // at most 8/7 of the capacity.
        let slots = |capacity: usize| if capacity == 0 { 0 } else { (capacity * 8 / 7).next_power_of_two() };
        let base_ends = self.base.as_ref().map_or(0, |b| b.ends.capacity() * std::mem::size_of::<u64>());
        [
            ("event ids' text", self.id_text.capacity()),
            ("event ids' ends", self.id_ends.capacity() * std::mem::size_of::<usize>() + base_ends),
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

    /// The number of the event `id`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        let (base, text, ends) = (self.base.as_deref(), self.id_text.as_str(), &self.id_ends[..]);
        self.table.find(hash_id(id.as_bytes()), |&n| id_of(base, text, ends, n) == id.as_bytes()).copied()
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

    /// Takes the events of a loaded snapshot as its first (every event, when the state holds
    /// none yet), with the sources already read; `Err` names an id the snapshot lists twice.
    pub(crate) fn set_base(&mut self, base: Base) -> std::result::Result<(), String> {
        assert!(self.base.is_none() && self.recs.is_empty(), "a snapshot's events are the state's first");
        let mut table = hashbrown::HashTable::with_capacity(base.ends.len());
        for n in 0..base.len() {
            let id = base.id_bytes(n);
            match table.entry(hash_id(id), |&m| base.id_bytes(m) == id, |&m| hash_id(base.id_bytes(m))) {
                hashbrown::hash_table::Entry::Occupied(_) => return Err(format!("event {:?} listed twice", base.id(n))),
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert(n);
                }
            }
        }
        self.table = table;
        self.base = Some(Arc::new(base));
        Ok(())
    }

    /// Puts an event: a new number, or the number of the event with the same id, whose
    /// record it replaces (returned).
    pub(crate) fn put(&mut self, id: &str, rec: EventRec) -> (u32, Option<EventRec>) {
        // One hash and one probe: the id is found, or its slot taken, in one pass.
        let Events { base, replaced, id_text, id_ends, recs, table, .. } = self;
        let (base, text, ends) = (base.as_deref(), id_text.as_str(), &id_ends[..]);
        let base_len = base.map_or(0, |b| b.len());
        match table.entry(hash_id(id.as_bytes()), |&n| id_of(base, text, ends, n) == id.as_bytes(), |&m| hash_id(id_of(base, text, ends, m))) {
            hashbrown::hash_table::Entry::Occupied(e) => {
                let n = *e.get();
                let old = match base {
                    Some(b) if n < base_len => replaced.insert(n, rec).unwrap_or_else(|| b.rec(n)),
                    _ => std::mem::replace(&mut recs[(n - base_len) as usize], rec),
                };
                (n, Some(old))
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let n = u32::try_from(base_len as usize + recs.len()).unwrap_or_else(|_| panic!("more than 2^32 events in one state"));
                e.insert(n);
                id_text.push_str(id);
                id_ends.push(id_text.len());
                recs.push(rec);
                (n, None)
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

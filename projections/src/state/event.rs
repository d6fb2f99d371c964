//! Events: where each event's record is in the journal, so its text is decoded on demand and
//! never kept in memory.


use origin_engine::codec::IngestedView;
use origin_engine::record::{Body, Event, EventKind, RecordKind, Role};
use origin_engine::Journal;

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

fn hash_id(id: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(id)
}

/// Every event by number (first seen first); ids looked up through a table of numbers, so
/// each id is stored once. A later event with the same id (a re-ingested file version)
/// replaces the earlier in place, keeping its number.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    /// Every id, one after another, in number order (one allocation for all of them, not one
    /// each: a million events' ids took a million allocations to load).
    id_text: String,
    /// Where each id ends in `id_text` (it starts where the one before ends).
    id_ends: Vec<usize>,
    pub(crate) recs: Vec<EventRec>,
    table: hashbrown::HashTable<u32>,
    sources: Vec<Box<str>>,
}

/// The id of event `n`, given the ids' text and ends.
fn id_in<'a>(text: &'a str, ends: &[usize], n: u32) -> &'a str {
    let n = n as usize;
    let start = if n == 0 { 0 } else { ends[n - 1] };
    &text[start..ends[n]]
}

impl Events {
    /// Heap bytes held, by part, from the structures' capacities (a lower bound: the
    /// allocator's own overhead is not counted).
    pub(crate) fn heap_bytes(&self) -> [(&'static str, usize); 4] {
        // hashbrown: a bucket of 4 bytes and a control byte per slot, slots a power of two
        // at most 8/7 of the capacity.
        let slots = if self.table.capacity() == 0 { 0 } else { (self.table.capacity() * 8 / 7).next_power_of_two() };
        [
            ("event ids' text", self.id_text.capacity()),
            ("event ids' ends", self.id_ends.capacity() * std::mem::size_of::<usize>()),
            ("event locators", self.recs.capacity() * std::mem::size_of::<EventRec>()),
            ("event id table", slots * (std::mem::size_of::<u32>() + 1)),
        ]
    }

    /// The id of event `n`.
    pub(crate) fn id(&self, n: u32) -> &str {
        id_in(&self.id_text, &self.id_ends, n)
    }

    /// Every event's id, by number.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        (0..self.id_ends.len() as u32).map(|n| self.id(n))
    }

    /// Every event's id, one after another, by number.
    pub(crate) fn id_text(&self) -> &str {
        &self.id_text
    }

    /// The number of the event `id`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        self.table.find(hash_id(id), |&n| self.id(n) == id).copied()
    }

    /// The event `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&EventRec> {
        self.find(id).map(|n| &self.recs[n as usize])
    }

    /// True if an event `id` is known.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.find(id).is_some()
    }

    /// Number of events.
    pub(crate) fn len(&self) -> usize {
        self.recs.len()
    }

    /// Makes room for `n` more events (a snapshot says how many it holds).
    pub(crate) fn reserve(&mut self, n: usize, id_bytes: usize) {
        self.id_text.reserve(id_bytes);
        self.id_ends.reserve(n);
        self.recs.reserve(n);
        let (text, ends) = (&self.id_text, &self.id_ends);
        self.table.reserve(n, |&m| hash_id(id_in(text, ends, m)));
    }

    /// Puts an event: a new number, or the number of the event with the same id, whose
    /// record it replaces (returned).
    pub(crate) fn put(&mut self, id: &str, rec: EventRec) -> (u32, Option<EventRec>) {
        // One hash and one probe: the id is found, or its slot taken, in one pass.
        let Events { id_text, id_ends, recs, table, .. } = self;
        let (text, ends) = (&*id_text, &*id_ends);
        match table.entry(hash_id(id), |&n| id_in(text, ends, n) == id, |&m| hash_id(id_in(text, ends, m))) {
            hashbrown::hash_table::Entry::Occupied(e) => {
                let n = *e.get();
                (n, Some(std::mem::replace(&mut recs[n as usize], rec)))
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let n = u32::try_from(recs.len()).unwrap_or_else(|_| panic!("more than 2^32 events in one state"));
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
        let r = &self.recs[n as usize];
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
        e.reserve(1000, 10);
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

//! Events: where each event's record is in the journal, so its text is decoded on demand and
//! never kept in memory.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

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

    /// The key that orders events within a session: time, then journal position.
    pub(crate) fn order_key(&self) -> (i64, u64, u32) {
        (self.time_unix_ms, self.offset, self.index)
    }
}

/// True for the kinds listed without `include_tools`: messages only (tool calls and results,
/// meta and system events need the flag; memory file versions belong to no session).
pub fn listed_by_default(kind: EventKind) -> bool {
    kind == EventKind::Message
}

/// Event id -> where it is. A later event with the same id (a re-ingested file version)
/// replaces the earlier.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    pub(crate) by_id: BTreeMap<String, EventMeta>,
}

/// Decodes the record at `offset`, if the journal holds it.
pub(crate) fn body_at(journal: &Journal, offset: u64) -> Result<Option<Body>> {
    let mut out = None;
    let mut err = None;
    journal.read_from(offset, |r| {
        if r.offset == offset {
            match r.decode() {
                Ok((_, body)) => out = Some(body),
                Err(e) => err = Some(e),
            }
        }
        Ok(ControlFlow::Break(()))
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    Ok(out)
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
    let mut out: Option<Result<Event>> = None;
    journal.read_from(meta.offset, |r| {
        if r.offset != meta.offset {
            return Ok(ControlFlow::Break(()));
        }
        out = Some(if r.kind == RecordKind::Ingested as u8 {
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
        });
        Ok(ControlFlow::Break(()))
    })?;
    out.unwrap_or_else(|| Err(inconsistent("the journal has no record at that offset".into())))
}

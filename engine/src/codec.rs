//! The one place payloads are encoded and decoded: bincode 2.0.1 with a fixed configuration,
//! behind a codec id stored in every segment header so compaction can migrate it.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::limits::{EVENT_CHUNK_SIZE_BYTES, EVENT_CHUNKS_MAX, RECORD_PAYLOAD_DECODED_SIZE_MAX};
use crate::record::{Body, Event, Ingested, IngestedHead, RecordKind, RecordOrigin};

/// Codec id written in segment headers: bincode 2.0.1, standard configuration (little-endian,
/// variable-length integers), payload = `(Option<RecordOrigin>, body)`.
pub const CODEC_ID: u8 = 1;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_little_endian().with_variable_int_encoding().with_limit::<RECORD_PAYLOAD_DECODED_SIZE_MAX>()
}

fn to_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(v, config()).map_err(|e| Error::Invalid(format!("payload does not encode: {e}")))
}

/// What a payload that does not decode is, in words (bincode's own text is its type's debug
/// form: `Utf8 { inner: Utf8Error { valid_up_to: 3, error_len: Some(1) } }`).
fn why(e: &bincode::error::DecodeError) -> String {
    use bincode::error::DecodeError as D;
    match e {
        D::UnexpectedEnd { additional } => format!("it ends {additional} bytes early"),
        D::LimitExceeded => "it claims more than a record may hold".into(),
        D::Utf8 { inner } => format!("a text in it is not UTF-8 ({inner})"),
        D::UnexpectedVariant { type_name, found, .. } => format!("it names variant {found} of {type_name}, which has none such"),
        D::InvalidBooleanValue(b) => format!("it holds {b} where a true or false is"),
        D::InvalidCharEncoding(_) => "a character in it is not one".into(),
        D::OutsideUsizeRange(n) => format!("it claims a length of {n}"),
        other => format!("{other:?}"),
    }
}

fn from_bytes<T: DeserializeOwned>(bytes: &[u8], offset: u64) -> Result<T> {
    let (v, used) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| Error::Decode { offset, reason: why(&e) })?;
    if used != bytes.len() {
        return Err(Error::Decode { offset, reason: format!("{} trailing bytes after the payload", bytes.len() - used) });
    }
    Ok(v)
}

/// Compresses one event chunk: its decoded size (u32 LE), then an LZ4 block. LZ4, not zstd:
/// the ingest benchmark measured zstd level 1 spending a fifth of ingest's CPU on these
/// chunks (64 KiB each then, 8 KiB now; mostly the same text the raw lines' frame already
/// compressed), and reading one event decompresses a chunk, which LZ4 does several times
/// faster.
fn compress_chunk(plain: &[u8], out: &mut Vec<u8>) -> Result<usize> {
    let size = u32::try_from(plain.len()).map_err(|_| Error::Invalid("an event chunk over 4 GiB".into()))?;
    let start = out.len();
    out.extend_from_slice(&size.to_le_bytes());
    let bound = lz4::block::compress_bound(plain.len()).map_err(|e| Error::Invalid(format!("lz4: {e}")))?;
    out.resize(start + 4 + bound, 0);
    let n = lz4::block::compress_to_buffer(plain, None, false, &mut out[start + 4..]).map_err(|e| Error::Invalid(format!("lz4: {e}")))?;
    out.truncate(start + 4 + n);
    Ok(4 + n)
}

thread_local! {
    /// The decompressed bytes of the last event chunk read on this thread (reused: a fresh
    /// buffer per chunk cost more in page faults than the decompression).
    static CHUNK_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An [`Event`] as the wire holds it, its strings borrowed: what [`IngestedView::events_at`]
/// reads past (decoding every event before a wanted one whole, six strings each, was a tenth
/// of a search's time in process). Its fields are [`Event`]'s, in its order and of its wire
/// types; a test decodes both from the same bytes.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct EventSkipped<'a> {
    id: &'a str,
    time_unix_ms: i64,
    session: &'a str,
    project: Option<&'a str>,
    role: crate::record::Role,
    kind: crate::record::EventKind,
    text: &'a str,
    text_cut_chars: u64,
    cwd: Option<&'a str>,
    git_branch: Option<&'a str>,
    agent_version: Option<&'a str>,
    line: u64,
}

/// Decompresses one event chunk (see [`compress_chunk`]), refusing sizes over the limit
/// before allocating.
fn decompress_chunk(stored: &[u8], out: &mut Vec<u8>, offset: u64) -> Result<()> {
    let bad = |reason: String| Error::Decode { offset, reason };
    let size_bytes: [u8; 4] = stored.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| bad("event chunk shorter than its size".into()))?;
    let size = u32::from_le_bytes(size_bytes) as usize;
    if size > RECORD_PAYLOAD_DECODED_SIZE_MAX {
        return Err(bad(format!("event chunk claims {size} bytes decompressed")));
    }
    out.clear();
    out.resize(size, 0);
    let n = lz4::block::decompress_to_buffer(&stored[4..], Some(size as i32), out).map_err(|e| bad(format!("event chunk: {e}")))?;
    if n != size {
        return Err(bad(format!("event chunk decompresses to {n} bytes, not the {size} it claims")));
    }
    Ok(())
}

/// True if the journal should offer this record's payload to zstd: every kind but `ingested`
/// versions 2 and 3, whose payloads hold their own zstd frames (compressing them again only
/// costs).
pub fn compress_payload(kind: u8, kind_version: u8) -> bool {
    !(kind == RecordKind::Ingested as u8 && kind_version >= 2)
}

/// Encodes a body (and the origin of a record received from another store) as a payload.
pub fn encode(origin: Option<&RecordOrigin>, body: &Body) -> Result<Vec<u8>> {
    match body {
        Body::Scratch(b) => Ok(b.clone()),
        Body::Ingested(v) => encode_ingested(origin, v, EVENT_CHUNK_SIZE_BYTES),
        Body::Remembered(v) | Body::Corrected(v) => to_bytes(&(origin, v)),
        Body::Forgotten(v) => to_bytes(&(origin, v)),
        Body::Restored(v) => to_bytes(&(origin, v)),
        Body::Imported(v) => to_bytes(&(origin, v)),
        Body::TokenCreated(v) => to_bytes(&(origin, v)),
        Body::TokenRevoked(v) => to_bytes(&(origin, v)),
        Body::DeviceSeen(v) => to_bytes(&(origin, v)),
    }
}

/// What an `ingested` payload of version 2 says before its raw lines and event chunks.
type IngestedWireHead = (Option<RecordOrigin>, IngestedHead, Vec<ChunkEntry>);
/// What an `ingested` payload of version 3 says before its raw lines and event chunks: version
/// 2's, then the events the record says were abandoned ([`Ingested::superseded`]).
type IngestedWireHeadV3 = (Option<RecordOrigin>, IngestedHead, Vec<ChunkEntry>, Vec<String>);

/// One event chunk: how many events it holds and its stored (compressed) size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
struct ChunkEntry {
    events: u32,
    stored_size: u32,
}

/// `ingested` version 3 (FORMAT.md, "Ingested records in detail"): `u32` head size, the head
/// (bincode: origin, [`IngestedHead`], chunk table, abandoned events' ids; version 2 without
/// the ids), the raw lines' zstd frame as it is, then
/// the events in LZ4 blocks of about [`EVENT_CHUNK_SIZE_BYTES`] each, so one event is read
/// by decompressing its chunk alone. `chunk_bytes` closes a chunk (the constant; tests write
/// the chunks of older writers too).
fn encode_ingested(origin: Option<&RecordOrigin>, v: &Ingested, chunk_bytes: usize) -> Result<Vec<u8>> {
    let mut chunks: Vec<ChunkEntry> = Vec::new();
    let mut stored: Vec<u8> = Vec::new();
    let mut plain: Vec<u8> = Vec::new();
    let mut pending: u32 = 0;
    for (i, e) in v.events.iter().enumerate() {
        bincode::serde::encode_into_std_write(e, &mut plain, config())
            .map_err(|e| Error::Invalid(format!("event does not encode: {e}")))?;
        pending += 1;
        if plain.len() >= chunk_bytes || i + 1 == v.events.len() {
            let n = compress_chunk(&plain, &mut stored)?;
            let stored_size = u32::try_from(n).map_err(|_| Error::Invalid("an event chunk over 4 GiB".into()))?;
            chunks.push(ChunkEntry { events: pending, stored_size });
            plain.clear();
            pending = 0;
        }
    }
    if chunks.len() > EVENT_CHUNKS_MAX {
        return Err(Error::Invalid(format!("{} event chunks; the most is {EVENT_CHUNKS_MAX}", chunks.len())));
    }
    let head = to_bytes(&(origin, v.head(), &chunks, &v.superseded))?;
    let head_size = u32::try_from(head.len()).map_err(|_| Error::Invalid("an ingested head over 4 GiB".into()))?;
    let mut out = Vec::with_capacity(4 + head.len() + v.raw_zstd.len() + stored.len());
    out.extend_from_slice(&head_size.to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(&v.raw_zstd);
    out.extend_from_slice(&stored);
    Ok(out)
}

/// An `ingested` payload opened without decompressing its events: the head, the raw lines'
/// zstd frame, and one event (or all) decoded on demand. Version 1 payloads, which have no
/// chunks, are decoded whole when opened.
#[derive(Debug)]
pub struct IngestedView<'a> {
    origin: Option<RecordOrigin>,
    head: IngestedHead,
    raw_zstd: &'a [u8],
    /// Per chunk: index of its first event, number of events, stored bytes.
    chunks: Vec<(u64, u32, &'a [u8])>,
    /// A version 1 payload, decoded whole.
    whole: Option<Ingested>,
    /// The events the record says were abandoned (version 3; empty before).
    superseded: Vec<String>,
    offset: u64,
}

impl<'a> IngestedView<'a> {
    /// Opens the payload of an `ingested` record of schema `kind_version` at `offset`.
    pub fn open(kind_version: u8, payload: &'a [u8], offset: u64) -> Result<IngestedView<'a>> {
        let bad = |reason: String| Error::Decode { offset, reason };
        match kind_version {
            1 => {
                let (origin, v): (Option<RecordOrigin>, Ingested) = from_bytes(payload, offset)?;
                Ok(IngestedView { origin, head: v.head(), raw_zstd: &[], chunks: Vec::new(), whole: Some(v), superseded: Vec::new(), offset })
            }
            2 | 3 => {
                let size_bytes: [u8; 4] =
                    payload.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| bad("ingested payload shorter than its head size".into()))?;
                let head_size = u32::from_le_bytes(size_bytes) as usize;
                let head_bytes = payload.get(4..4 + head_size).ok_or_else(|| bad(format!("ingested head of {head_size} bytes runs past the payload")))?;
                let (origin, head, table, superseded) = if kind_version == 2 {
                    let (origin, head, table): IngestedWireHead = from_bytes(head_bytes, offset)?;
                    (origin, head, table, Vec::new())
                } else {
                    from_bytes::<IngestedWireHeadV3>(head_bytes, offset)?
                };
                if table.len() > EVENT_CHUNKS_MAX {
                    return Err(bad(format!("{} event chunks", table.len())));
                }
                let mut at = 4 + head_size;
                let raw_end = usize::try_from(head.raw_zstd_size).ok().and_then(|n| at.checked_add(n)).filter(|&e| e <= payload.len());
                let raw_end = raw_end.ok_or_else(|| bad(format!("raw lines of {} bytes run past the payload", head.raw_zstd_size)))?;
                let raw_zstd = &payload[at..raw_end];
                at = raw_end;
                let mut chunks = Vec::with_capacity(table.len());
                let mut first = 0u64;
                for (i, c) in table.iter().enumerate() {
                    if c.events == 0 {
                        return Err(bad(format!("event chunk {i} holds no events")));
                    }
                    let end = at + c.stored_size as usize;
                    let bytes = payload.get(at..end).ok_or_else(|| bad(format!("event chunk {i} runs past the payload")))?;
                    chunks.push((first, c.events, bytes));
                    first += u64::from(c.events);
                    at = end;
                }
                if at != payload.len() {
                    return Err(bad(format!("{} bytes after the last event chunk", payload.len() - at)));
                }
                if first != head.event_count {
                    return Err(bad(format!("the chunks hold {first} events, the head says {}", head.event_count)));
                }
                Ok(IngestedView { origin, head, raw_zstd, chunks, whole: None, superseded, offset })
            }
            v => Err(Error::Unreadable { offset, what: format!("an ingested record of version {v}") }),
        }
    }

    /// The origin of a record received from another store.
    pub fn origin(&self) -> Option<&RecordOrigin> {
        self.origin.as_ref()
    }

    /// Everything but the raw lines and events.
    pub fn head(&self) -> &IngestedHead {
        &self.head
    }

    /// The events the record says were abandoned ([`Ingested::superseded`]).
    pub fn superseded(&self) -> &[String] {
        &self.superseded
    }

    /// The raw lines, decompressed (their frame's checksum checked: damage is an
    /// [`Error::Decode`] naming the record).
    pub fn raw_lines(&self) -> Result<Vec<u8>> {
        zstd::decode_all(self.raw_zstd()).map_err(|e| Error::Decode { offset: self.offset, reason: format!("its raw lines do not decompress: {e}") })
    }

    /// The raw lines, one zstd frame (what the mirror holds for this record).
    pub fn raw_zstd(&self) -> &[u8] {
        match &self.whole {
            Some(v) => &v.raw_zstd,
            None => self.raw_zstd,
        }
    }

    fn chunk_events(&self, bytes: &[u8], count: u32) -> Result<Vec<Event>> {
        let mut plain = Vec::new();
        decompress_chunk(bytes, &mut plain, self.offset)?;
        let mut events = Vec::with_capacity(count as usize);
        let mut rest: &[u8] = &plain;
        for _ in 0..count {
            let (e, used): (Event, usize) = bincode::serde::decode_from_slice(rest, config())
                .map_err(|e| Error::Decode { offset: self.offset, reason: format!("event chunk: {}", why(&e)) })?;
            events.push(e);
            rest = &rest[used..];
        }
        if !rest.is_empty() {
            return Err(Error::Decode { offset: self.offset, reason: format!("{} bytes after an event chunk's events", rest.len()) });
        }
        Ok(events)
    }

    /// The event at `index` (decompressing only its chunk); `None` past the last.
    pub fn event(&self, index: u64) -> Result<Option<Event>> {
        if let Some(v) = &self.whole {
            return Ok(usize::try_from(index).ok().and_then(|i| v.events.get(i)).cloned());
        }
        let at = self.chunks.partition_point(|c| c.0 <= index);
        let Some(&(first, count, bytes)) = at.checked_sub(1).and_then(|i| self.chunks.get(i)) else { return Ok(None) };
        if index >= first + u64::from(count) {
            return Ok(None);
        }
        let mut events = self.chunk_events(bytes, count)?;
        Ok(Some(events.swap_remove((index - first) as usize)))
    }

    /// The events at `indexes` (in that order; `None` past the last). Each chunk they fall in
    /// is decompressed once, into a buffer the thread reuses, and its events are decoded only
    /// up to the last one wanted.
    pub fn events_at(&self, indexes: &[u64]) -> Result<Vec<Option<Event>>> {
        if let Some(v) = &self.whole {
            return Ok(indexes.iter().map(|&i| usize::try_from(i).ok().and_then(|i| v.events.get(i)).cloned()).collect());
        }
        let mut out: Vec<Option<Event>> = vec![None; indexes.len()];
        // (chunk, index within it, slot in `out`), in chunk and index order.
        let mut wanted: Vec<(usize, u64, usize)> = indexes
            .iter()
            .enumerate()
            .filter_map(|(slot, &index)| {
                let chunk = self.chunks.partition_point(|c| c.0 <= index).checked_sub(1)?;
                let (first, count, _) = self.chunks[chunk];
                (index < first + u64::from(count)).then_some((chunk, index - first, slot))
            })
            .collect();
        wanted.sort_unstable();
        let mut i = 0;
        while i < wanted.len() {
            let chunk = wanted[i].0;
            let end = i + wanted[i..].partition_point(|w| w.0 == chunk);
            let (_, count, bytes) = self.chunks[chunk];
            let want = &wanted[i..end];
            CHUNK_BUFFER.with_borrow_mut(|plain| -> Result<()> {
                decompress_chunk(bytes, plain, self.offset)?;
                let mut rest: &[u8] = plain;
                let mut w = 0;
                let bad = |e: bincode::error::DecodeError| Error::Decode { offset: self.offset, reason: format!("event chunk: {}", why(&e)) };
                for k in 0..u64::from(count) {
                    if w == want.len() {
                        break;
                    }
                    if want[w].1 != k {
                        // Not wanted: read past, its strings borrowed, not copied.
                        let (_, used): (EventSkipped<'_>, usize) = bincode::serde::borrow_decode_from_slice(rest, config()).map_err(bad)?;
                        rest = &rest[used..];
                        continue;
                    }
                    let (e, used): (Event, usize) = bincode::serde::decode_from_slice(rest, config()).map_err(bad)?;
                    rest = &rest[used..];
                    let mut e = Some(e);
                    while w < want.len() && want[w].1 == k {
                        // The last slot wanting it takes the event; repeats get copies.
                        let last = want.get(w + 1).is_none_or(|n| n.1 != k);
                        out[want[w].2] = if last { e.take() } else { e.clone() };
                        w += 1;
                    }
                }
                Ok(())
            })?;
            i = end;
        }
        Ok(out)
    }

    /// Every event, in order.
    pub fn events(&self) -> Result<Vec<Event>> {
        if let Some(v) = &self.whole {
            return Ok(v.events.clone());
        }
        let mut out = Vec::with_capacity(self.head.event_count.min(1 << 20) as usize);
        for &(_, count, bytes) in &self.chunks {
            out.extend(self.chunk_events(bytes, count)?);
        }
        Ok(out)
    }

    /// The whole record.
    pub fn into_ingested(self) -> Result<Ingested> {
        if let Some(v) = self.whole {
            return Ok(v);
        }
        let events = self.events()?;
        let h = self.head;
        Ok(Ingested {
            source: h.source,
            path: h.path,
            mirror: h.mirror,
            file_version: h.file_version,
            byte_start: h.byte_start,
            byte_end: h.byte_end,
            line_start: h.line_start,
            line_end: h.line_end,
            prefix_hash: h.prefix_hash,
            raw_zstd: self.raw_zstd.to_vec(),
            events,
            sessions: h.sessions,
            malformed_lines: h.malformed_lines,
            cut_lines: h.cut_lines,
            state: h.state,
            superseded: self.superseded,
        })
    }
}

/// Decodes a payload of the given kind and schema version.
pub fn decode(kind: u8, kind_version: u8, payload: &[u8], offset: u64) -> Result<(Option<RecordOrigin>, Body)> {
    let kind = RecordKind::from_u8(kind).ok_or_else(|| Error::Unreadable { offset, what: format!("a record of kind {kind}") })?;
    if !kind.reads_version(kind_version) {
        return Err(Error::Unreadable { offset, what: format!("a {} record of version {kind_version}", kind.name()) });
    }
    fn with<T: DeserializeOwned>(p: &[u8], offset: u64, f: impl FnOnce(T) -> Body) -> Result<(Option<RecordOrigin>, Body)> {
        let (origin, v): (Option<RecordOrigin>, T) = from_bytes(p, offset)?;
        Ok((origin, f(v)))
    }
    match kind {
        RecordKind::Scratch => Ok((None, Body::Scratch(payload.to_vec()))),
        RecordKind::Ingested => {
            let view = IngestedView::open(kind_version, payload, offset)?;
            let origin = view.origin.clone();
            Ok((origin, Body::Ingested(view.into_ingested()?)))
        }
        RecordKind::Remembered => with(payload, offset, Body::Remembered),
        RecordKind::Corrected => with(payload, offset, Body::Corrected),
        RecordKind::Forgotten => with(payload, offset, Body::Forgotten),
        RecordKind::Restored => with(payload, offset, Body::Restored),
        RecordKind::Imported => with(payload, offset, Body::Imported),
        RecordKind::TokenCreated => with(payload, offset, Body::TokenCreated),
        RecordKind::TokenRevoked => with(payload, offset, Body::TokenRevoked),
        RecordKind::DeviceSeen => with(payload, offset, Body::DeviceSeen),
    }
}

/// Compresses a payload if that is worth it; returns the frame flags and stored bytes.
pub fn compress(payload: Vec<u8>) -> (u16, Vec<u8>) {
    use crate::frame::FLAG_ZSTD;
    use crate::limits::{COMPRESS_LEVEL, COMPRESS_SIZE_BYTES_MIN};
    if payload.len() < COMPRESS_SIZE_BYTES_MIN {
        return (0, payload);
    }
    match zstd::bulk::compress(&payload, COMPRESS_LEVEL) {
        // Keep compression only when it saves at least an eighth.
        Ok(c) if c.len() < payload.len() - payload.len() / 8 => (FLAG_ZSTD, c),
        _ => (0, payload),
    }
}

/// Decompresses a stored payload into `out`, refusing sizes over the limit before allocating.
pub fn decompress_into(stored: &[u8], out: &mut Vec<u8>, offset: u64) -> Result<()> {
    let size = zstd::zstd_safe::get_frame_content_size(stored)
        .map_err(|_| Error::Decode { offset, reason: "payload is not a zstd frame".into() })?
        .ok_or_else(|| Error::Decode { offset, reason: "zstd frame without a content size".into() })?;
    if size > RECORD_PAYLOAD_DECODED_SIZE_MAX as u64 {
        return Err(Error::Decode { offset, reason: format!("payload claims {size} bytes decompressed") });
    }
    out.clear();
    out.reserve(size as usize);
    let mut d = zstd::bulk::Decompressor::new().map_err(|e| Error::Decode { offset, reason: e.to_string() })?;
    let n = d.decompress_to_buffer(stored, out).map_err(|e| Error::Decode { offset, reason: e.to_string() })?;
    if n as u64 != size {
        return Err(Error::Decode { offset, reason: "zstd frame shorter than it claims".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::*;

    fn sample_bodies() -> Vec<Body> {
        let ev = Event {
            id: "claude-code:7d0c".into(),
            time_unix_ms: 1_760_000_000_123,
            session: "s1".into(),
            project: Some("demo-app".into()),
            role: Role::User,
            kind: EventKind::Message,
            text: "发布流程 リリース 🚀".into(),
            text_cut_chars: 0,
            cwd: Some("/home/dev/demo-app".into()),
            git_branch: None,
            agent_version: Some("2.1.281".into()),
            line: 3,
        };
        let ver = EntryVersion {
            id: "ent_3f9a1c2b7d4e".into(),
            root: "ent_3f9a1c2b7d4e".into(),
            supersedes: None,
            kind: EntryKind::Memory,
            text: "Releases are tagged from master.".into(),
            confidence: 0.9,
            project: None,
            author: "claude-code@laptop".into(),
            created_unix_ms: 5,
            valid_from_unix_ms: None,
            valid_to_unix_ms: Some(9),
            sources: vec![Citation { event_id: ev.id.clone(), quote: Some("tag".into()) }],
            imported: false,
        };
        vec![
            Body::Ingested(Ingested {
                source: "claude-code".into(),
                path: "/p".into(),
                mirror: "claude-code/p".into(),
                file_version: 1,
                byte_start: 0,
                byte_end: 10,
                line_start: 1,
                line_end: 2,
                prefix_hash: 7,
                raw_zstd: vec![1, 2, 3],
                events: vec![ev.clone()],
                sessions: vec![SessionChange {
                    session: "s1".into(),
                    project: None,
                    title: Some("t".into()),
                    first_prompt: None,
                    parent: None,
                }],
                malformed_lines: 1,
                cut_lines: 0,
                state: br#"{"cwd":"/home/dev/demo-app"}"#.to_vec(),
                superseded: vec!["claude-code:abandoned".into()],
            }),
            Body::Remembered(ver.clone()),
            Body::Corrected(ver.clone()),
            Body::Forgotten(Forgotten {
                tombstone: "tmb_1".into(),
                target: ev.id.clone(),
                reason: "key".into(),
                author: "user@laptop".into(),
                time_unix_ms: 1,
                hidden_entries: vec![],
                hidden_events: vec![ev.id.clone()],
            }),
            Body::Restored(Restored { tombstone: "tmb_1".into(), author: "user@laptop".into(), time_unix_ms: 2 }),
            Body::Imported(Imported {
                source: "claude-code".into(),
                path: "/home/dev/CLAUDE.md".into(),
                scope: MemoryScope::User,
                event: ev,
                entries: vec![ver],
                keys: vec!["# Releases/0".into()],
                ended: vec!["ent_1".into()],
            }),
            Body::TokenCreated(TokenCreated { name: "laptop".into(), hash: [3; 32], time_unix_ms: 1 }),
            Body::TokenRevoked(TokenRevoked { name: "laptop".into(), time_unix_ms: 1 }),
            Body::DeviceSeen(DeviceSeen { name: "laptop".into(), store_id: [1; 16], epoch: 0, time_unix_ms: 1 }),
            Body::Scratch(vec![0, 1, 2]),
        ]
    }

    #[test]
    fn every_body_round_trips_with_and_without_origin() {
        let origin = RecordOrigin { store_id: [9; 16], epoch: 2, offset: 77 };
        for body in sample_bodies() {
            let kind = body.kind();
            for o in [None, Some(&origin)] {
                let bytes = encode(o, &body).expect("encodes");
                let (got_origin, got) = decode(kind as u8, kind.current_version(), &bytes, 0).expect("decodes");
                assert_eq!(got, body);
                if kind != RecordKind::Scratch {
                    assert_eq!(got_origin.as_ref(), o);
                }
            }
        }
    }

    fn big_ingested(events: usize) -> Ingested {
        let Body::Ingested(mut b) = sample_bodies().remove(0) else { unreachable!() };
        let base = b.events[0].clone();
        b.events = (0..events)
            .map(|i| Event {
                id: format!("claude-code:{i}"),
                text: format!("event {i}: {}", "発布 release workflow ".repeat(i % 300)),
                cwd: Some(format!("/home/dev/p{}", i % 3)),
                line: i as u64 + 1,
                ..base.clone()
            })
            .collect();
        b
    }

    #[test]
    fn ingested_version_3_reads_any_one_event_without_the_others() {
        let b = big_ingested(2_000);
        let bytes = encode(None, &Body::Ingested(b.clone())).expect("encodes");
        let view = IngestedView::open(3, &bytes, 9).expect("opens");
        assert!(view.chunks.len() > 10, "events span many chunks: {}", view.chunks.len());
        assert_eq!(view.head(), &b.head());
        assert_eq!(view.head().cwds, vec!["/home/dev/p0", "/home/dev/p1", "/home/dev/p2"]);
        assert_eq!(view.raw_zstd(), &b.raw_zstd[..]);
        for i in [0usize, 1, 399, 1000, 1999] {
            assert_eq!(view.event(i as u64).expect("event"), Some(b.events[i].clone()), "event {i}");
        }
        assert_eq!(view.event(2_000).expect("past the end"), None);
        assert_eq!(view.events().expect("events"), b.events);
        // Many at once: any order, repeats, past the end, across and within chunks.
        let picks = [1999u64, 3, 3, 2_000, 0, 1000, 401, 400, 5_000, 1998, 3];
        let got = view.events_at(&picks).expect("events_at");
        let want: Vec<Option<Event>> = picks.iter().map(|&i| b.events.get(i as usize).cloned()).collect();
        assert_eq!(got, want);
        assert_eq!(view.events_at(&[]).expect("none"), Vec::<Option<Event>>::new());
        assert!(!compress_payload(RecordKind::Ingested as u8, 2));
        assert!(compress_payload(RecordKind::Ingested as u8, 1));
    }

    #[test]
    fn ingested_chunks_of_any_size_read_the_same_events() {
        // Records written before 2026-12-04 close their chunks at 64 KiB; readers take the
        // sizes the chunk table gives.
        let b = big_ingested(2_000);
        let mut counts = Vec::new();
        for chunk_bytes in [1usize, 4096, EVENT_CHUNK_SIZE_BYTES, 65536, 1 << 24] {
            let bytes = encode_ingested(None, &b, chunk_bytes).expect("encodes");
            let view = IngestedView::open(3, &bytes, 9).expect("opens");
            counts.push(view.chunks.len());
            assert_eq!(view.events().expect("events"), b.events, "chunks of {chunk_bytes} bytes");
            for i in [0u64, 7, 1000, 1999] {
                assert_eq!(view.event(i).expect("event"), Some(b.events[i as usize].clone()), "event {i}, chunks of {chunk_bytes}");
            }
            let picks = [1999u64, 3, 1000, 999];
            let want: Vec<Option<Event>> = picks.iter().map(|&i| b.events.get(i as usize).cloned()).collect();
            assert_eq!(view.events_at(&picks).expect("events_at"), want, "chunks of {chunk_bytes}");
        }
        // One event per chunk, then fewer and fewer chunks, then one.
        assert_eq!(counts[0], 2_000);
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
        assert_eq!(counts[4], 1);
    }

    fn arb_event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        let opt = || proptest::option::of("\\PC{0,12}");
        let kinds = [EventKind::Message, EventKind::ToolUse, EventKind::ToolResult, EventKind::Meta, EventKind::System, EventKind::Memory];
        let roles = [Role::User, Role::Assistant, Role::System];
        (
            ("\\PC{0,20}", any::<i64>(), "\\PC{0,10}", opt(), 0..roles.len(), 0..kinds.len()),
            ("\\PC{0,300}", any::<u64>(), opt(), opt(), opt(), any::<u64>()),
        )
            .prop_map(move |((id, time_unix_ms, session, project, r, k), (text, text_cut_chars, cwd, git_branch, agent_version, line))| Event {
                id,
                time_unix_ms,
                session,
                project,
                role: roles[r],
                kind: kinds[k],
                text,
                text_cut_chars,
                cwd,
                git_branch,
                agent_version,
                line,
            })
    }

    proptest::proptest! {
        /// `events_at` reads past the events it does not want as [`EventSkipped`]: each must
        /// take exactly an [`Event`]'s bytes, or the next event would be read from the wrong
        /// place.
        #[test]
        fn a_skipped_event_takes_the_bytes_of_the_event(events in proptest::collection::vec(arb_event(), 1..8)) {
            let mut bytes = Vec::new();
            for e in &events {
                bytes.extend(bincode::serde::encode_to_vec(e, config()).expect("encodes"));
            }
            let mut rest: &[u8] = &bytes;
            for e in &events {
                let (skipped, used): (EventSkipped<'_>, usize) = bincode::serde::borrow_decode_from_slice(rest, config()).expect("skips");
                let (whole, whole_used): (Event, usize) = bincode::serde::decode_from_slice(rest, config()).expect("decodes");
                proptest::prop_assert_eq!(used, whole_used);
                proptest::prop_assert_eq!(&whole, e);
                proptest::prop_assert_eq!(skipped.text, e.text.as_str());
                proptest::prop_assert_eq!(skipped.agent_version, e.agent_version.as_deref());
                proptest::prop_assert_eq!(skipped.line, e.line);
                rest = &rest[used..];
            }
            proptest::prop_assert!(rest.is_empty());
        }
    }

    #[test]
    fn ingested_version_1_payloads_still_decode() {
        let mut b = big_ingested(30);
        // Version 1 knows no abandoned events.
        b.superseded.clear();
        let v1 = to_bytes(&(None::<RecordOrigin>, &b)).expect("v1");
        let (_, got) = decode(RecordKind::Ingested as u8, 1, &v1, 0).expect("decodes v1");
        assert_eq!(got, Body::Ingested(b.clone()));
        let view = IngestedView::open(1, &v1, 0).expect("opens v1");
        assert_eq!(view.event(29).expect("event"), Some(b.events[29].clone()));
        assert_eq!(view.events_at(&[29, 0, 30]).expect("events_at"), vec![Some(b.events[29].clone()), Some(b.events[0].clone()), None]);
        assert_eq!(view.raw_zstd(), &b.raw_zstd[..]);
        assert!(decode(RecordKind::Ingested as u8, 4, &v1, 0).is_err());
    }

    #[test]
    fn damaged_ingested_version_3_payloads_are_errors() {
        let b = big_ingested(300);
        let bytes = encode(None, &Body::Ingested(b)).expect("encodes");
        // Cut anywhere: never a panic, and an error unless nothing was cut.
        for cut in (0..bytes.len()).step_by(97) {
            assert!(decode(RecordKind::Ingested as u8, 3, &bytes[..cut], 0).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(RecordKind::Ingested as u8, 3, &longer, 0).is_err());
        // A flipped byte: either an error or (inside text) a different but well-formed record.
        for at in (0..bytes.len()).step_by(211) {
            let mut b2 = bytes.clone();
            b2[at] ^= 0x5a;
            let _ = decode(RecordKind::Ingested as u8, 3, &b2, 0);
            if let Ok(v) = IngestedView::open(3, &b2, 0) {
                for i in 0..300 {
                    let _ = v.event(i);
                }
            }
        }
    }

    #[test]
    fn decode_refuses_unknown_kind_version_and_garbage() {
        assert!(decode(200, 1, b"", 0).is_err());
        assert!(decode(RecordKind::Remembered as u8, 2, b"", 0).is_err());
        assert!(decode(RecordKind::Remembered as u8, 1, &[0xff; 40], 0).is_err());
    }

    #[test]
    fn compression_round_trips_and_refuses_oversized_claims() {
        let payload = "the same line again\n".repeat(1000).into_bytes();
        let (flags, stored) = compress(payload.clone());
        assert_eq!(flags, crate::frame::FLAG_ZSTD);
        let mut out = Vec::new();
        decompress_into(&stored, &mut out, 0).expect("decompresses");
        assert_eq!(out, payload);
        assert!(decompress_into(b"not zstd at all", &mut out, 0).is_err());
    }
}

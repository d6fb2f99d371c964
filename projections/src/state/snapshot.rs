//! The state saved with the journal offset it reflects: a 72-byte header (naming the last
//! record it reflects) and a checksummed body, encoded by hand (FORMAT.md, "State snapshot").
//! A snapshot that does not check out in every byte, or whose last record is not the
//! journal's, is never trusted: the state is rebuilt from the journal instead.

use std::path::Path;
use std::sync::Arc;

use origin_engine::record::{Citation, EntryKind, EntryVersion, EventKind, Forgotten, Restored, Role};
use origin_engine::vfs::{Mapped, Vfs};
use origin_engine::snapshot::SnapshotOf;
use origin_engine::StoreId;

use crate::state::bytes::{Reader, Refusal, Writer};
use crate::state::entry::Stored;
use crate::state::error::{Error, Result};
use crate::state::event::{BASE_REC_SIZE, Base, BaseLayout, EMPTY_SLOT, home_slot, le_u32, slot_hash};
use crate::state::session::{SessionEvents, NO_SESSION};
use crate::state::limits::SNAPSHOT_SIZE_BYTES_MAX;
use crate::state::tombstone::StoredTombstone;
use crate::state::State;

/// The snapshot's usual file name, in `$ORIGIN_HOME/projections/`.
pub const SNAPSHOT_FILE_NAME: &str = "state.snap";
/// Magic bytes at the start of a snapshot.
pub const SNAPSHOT_MAGIC: [u8; 8] = *b"ORGNSNAP";
/// The snapshot format this build writes and the only one it reads; any other is rebuilt.
/// (2: sources, sessions and events by number, events naming their session by number. 3: the
/// events' ids as one text, checked as UTF-8 at once. 4: events' ends, fixed-width records and
/// an id table, read in place by a loaded state. 5: the bytes of 4, from a state in which an
/// event held in one session is not moved to another by a later copy of it: a snapshot of 4
/// may hold events so moved, and is rebuilt. 6: the events their agent abandoned, after the
/// tombstones.)
pub const SNAPSHOT_FORMAT_VERSION: u16 = 6;
/// Size of the header ([`origin_engine::snapshot`], shared with ingest's cursor snapshot).
pub const SNAPSHOT_HEADER_SIZE: usize = origin_engine::snapshot::SNAPSHOT_HEADER_SIZE;

/// What became of the snapshot when the state was opened.
pub use origin_engine::snapshot::SnapshotUse;

/// The result of reading a snapshot file.
pub(crate) enum Load {
    Missing,
    Rejected(String),
    /// The state, and the fingerprint of the last record it reflects
    /// ([`origin_engine::snapshot::last_record`]), for the caller to check against the journal.
    Loaded(State, u32),
}

fn kind_byte(k: EntryKind) -> u8 {
    match k {
        EntryKind::Memory => 0,
        EntryKind::Knowledge => 1,
        EntryKind::Cognition => 2,
    }
}

fn kind_of(b: u8) -> Result<EntryKind, Refusal> {
    Ok(match b {
        0 => EntryKind::Memory,
        1 => EntryKind::Knowledge,
        2 => EntryKind::Cognition,
        _ => return Err(format!("entry kind byte {b}")),
    })
}

fn event_kind_byte(k: EventKind) -> u8 {
    match k {
        EventKind::Message => 0,
        EventKind::ToolUse => 1,
        EventKind::ToolResult => 2,
        EventKind::Meta => 3,
        EventKind::System => 4,
        EventKind::Memory => 5,
    }
}

pub(crate) fn event_kind_of(b: u8) -> Result<EventKind, Refusal> {
    Ok(match b {
        0 => EventKind::Message,
        1 => EventKind::ToolUse,
        2 => EventKind::ToolResult,
        3 => EventKind::Meta,
        4 => EventKind::System,
        5 => EventKind::Memory,
        _ => return Err(format!("event kind byte {b}")),
    })
}

fn role_byte(r: Role) -> u8 {
    match r {
        Role::User => 0,
        Role::Assistant => 1,
        Role::System => 2,
    }
}

pub(crate) fn role_of(b: u8) -> Result<Role, Refusal> {
    Ok(match b {
        0 => Role::User,
        1 => Role::Assistant,
        2 => Role::System,
        _ => return Err(format!("role byte {b}")),
    })
}

fn put_version(w: &mut Writer, s: &Stored) {
    let v = &s.version;
    w.u64(s.offset);
    w.str(&v.id);
    w.str(&v.root);
    w.opt_str(v.supersedes.as_deref());
    w.u8(kind_byte(v.kind));
    w.str(&v.text);
    w.f64(v.confidence);
    w.opt_str(v.project.as_deref());
    w.str(&v.author);
    w.i64(v.created_unix_ms);
    w.opt_i64(v.valid_from_unix_ms);
    w.opt_i64(v.valid_to_unix_ms);
    w.count(v.sources.len());
    for c in &v.sources {
        w.str(&c.event_id);
        w.opt_str(c.quote.as_deref());
    }
    w.bool(v.imported);
}

fn get_version(r: &mut Reader<'_>) -> Result<Stored, Refusal> {
    let offset = r.u64()?;
    let id = r.str()?;
    let root = r.str()?;
    let supersedes = r.opt_str()?;
    let kind = kind_of(r.u8()?)?;
    let text = r.str()?;
    let confidence = r.f64()?;
    let project = r.opt_str()?;
    let author = r.str()?;
    let created_unix_ms = r.i64()?;
    let valid_from_unix_ms = r.opt_i64()?;
    let valid_to_unix_ms = r.opt_i64()?;
    let n = r.count(5)?;
    let mut sources = Vec::with_capacity(n);
    for _ in 0..n {
        sources.push(Citation { event_id: r.str()?, quote: r.opt_str()? });
    }
    let imported = r.bool()?;
    let version = EntryVersion {
        id,
        root,
        supersedes,
        kind,
        text,
        confidence,
        project,
        author,
        created_unix_ms,
        valid_from_unix_ms,
        valid_to_unix_ms,
        sources,
        imported,
    };
    Ok(Stored { offset, version })
}

fn put_strs(w: &mut Writer, v: &[String]) {
    w.count(v.len());
    v.iter().for_each(|s| w.str(s));
}

fn get_strs(r: &mut Reader<'_>) -> Result<Vec<String>, Refusal> {
    let n = r.count(4)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(r.str()?);
    }
    Ok(v)
}

/// The body: seven sections, each a count and its items. Entries, ended roots, tombstones and
/// abandoned events' ids in ascending key order; sources, sessions and events by number (the order they were
/// first seen in, which every state built from the same journal shares).
pub(crate) fn encode_body(s: &State) -> Vec<u8> {
    let mut w = Writer::default();
    w.count(s.entries.versions.len());
    s.entries.versions.values().for_each(|v| put_version(&mut w, v));
    w.count(s.entries.ended.len());
    for (root, at) in &s.entries.ended {
        w.str(root);
        w.i64(*at);
    }
    w.count(s.tombstones.all.len());
    for t in s.tombstones.all.values() {
        let f = &t.forgotten;
        w.u64(t.offset);
        w.str(&f.tombstone);
        w.str(&f.target);
        w.str(&f.reason);
        w.str(&f.author);
        w.i64(f.time_unix_ms);
        put_strs(&mut w, &f.hidden_entries);
        put_strs(&mut w, &f.hidden_events);
        match &t.restored {
            None => w.u8(0),
            Some(r) => {
                w.u8(1);
                w.str(&r.author);
                w.i64(r.time_unix_ms);
            }
        }
    }
    w.count(s.superseded.len());
    s.superseded.iter().for_each(|id| w.str(id));
    let sources = s.events.source_names();
    w.count(sources.len());
    sources.iter().for_each(|n| w.str(n));
    w.count(s.sessions.slots.len());
    for st in &s.sessions.slots {
        w.u32(u32::from(st.source));
        w.str(&st.session);
        w.opt_str(st.project.as_deref());
        w.opt_str(st.title.as_deref());
        w.opt_str(st.first_prompt.as_deref());
        w.opt_str(st.prompt_event.as_deref());
    }
    let count = s.events.len();
    w.count(count);
    // The ids as one text (checked as UTF-8 at once when loaded), where each ends, the
    // records, then the id table: fixed widths, so that a loaded state reads them in place.
    w.text_of(&s.events.id_text());
    let mut end = 0u64;
    for id in s.events.ids() {
        end += id.len() as u64;
        w.u64(end);
    }
    for n in 0..count as u32 {
        let m = s.events.rec(n);
        w.u32(u32::from(m.source));
        w.u32(m.session);
        w.i64(m.time_unix_ms);
        w.u8(event_kind_byte(m.kind));
        w.u8(role_byte(m.role));
        w.u64(m.offset);
        w.u32(m.index);
    }
    // At most half full, so that a probe meets an empty slot soon (and at most 2^32 slots,
    // above any count of events: numbers are `u32`).
    let slots = if count == 0 { 0 } else { (2 * count).next_power_of_two().min(1 << 32) };
    let mut table = vec![EMPTY_SLOT; slots];
    for (n, id) in s.events.ids().enumerate() {
        let mut slot = home_slot(slot_hash(id.as_bytes()), slots);
        while table[slot] != EMPTY_SLOT {
            slot = (slot + 1) & (slots - 1);
        }
        table[slot] = n as u32;
    }
    w.u64(slots as u64);
    table.iter().for_each(|&n| w.u32(n));
    w.buf
}

fn ascending<K: Ord + std::fmt::Debug>(prev: &mut Option<K>, next: K, what: &str) -> Result<(), Refusal> {
    if prev.as_ref().is_some_and(|p| *p >= next) {
        return Err(format!("{what} {next:?} out of order"));
    }
    *prev = Some(next);
    Ok(())
}

fn before(offset: u64, read_to: u64, what: &str) -> Result<(), Refusal> {
    if offset >= read_to {
        return Err(format!("{what} from offset {offset}, at or after the snapshot's offset {read_to}"));
    }
    Ok(())
}

/// Rebuilds a state from the body at `body_at` in `bytes`, through the same code that applies
/// records, so the derived structures are exactly what applying would have made; but the
/// events are checked and left in `bytes` ([`Base`]), and each session's order of events is
/// gathered and built once at the end instead of event by event (the property test of reopens
/// compares digests).
fn decode_body(bytes: &Arc<Mapped>, body_at: usize, read_to: u64) -> Result<State, Refusal> {
    let mut r = Reader::new(&bytes[body_at..]);
    let mut s = State::new();
    let mut prev = None;
    for _ in 0..r.count(40)? {
        let v = get_version(&mut r)?;
        ascending(&mut prev, v.version.id.clone(), "entry version")?;
        before(v.offset, read_to, "entry version")?;
        s.entries.insert(v.offset, &v.version);
    }
    let mut prev = None;
    for _ in 0..r.count(12)? {
        let root = r.str()?;
        let at = r.i64()?;
        ascending(&mut prev, root.clone(), "ended root")?;
        s.entries.end_root(&root, at);
    }
    let mut prev = None;
    for _ in 0..r.count(45)? {
        let offset = r.u64()?;
        before(offset, read_to, "tombstone")?;
        let forgotten = Forgotten {
            tombstone: r.str()?,
            target: r.str()?,
            reason: r.str()?,
            author: r.str()?,
            time_unix_ms: r.i64()?,
            hidden_entries: get_strs(&mut r)?,
            hidden_events: get_strs(&mut r)?,
        };
        let restored = match r.u8()? {
            0 => None,
            1 => Some(Restored { tombstone: forgotten.tombstone.clone(), author: r.str()?, time_unix_ms: r.i64()? }),
            t => return Err(format!("restore tag {t}")),
        };
        ascending(&mut prev, forgotten.tombstone.clone(), "tombstone")?;
        // After every entry version: what it hides is what applying the records made it hide.
        s.add_tombstone(StoredTombstone { offset, forgotten, restored });
    }
    let mut prev = None;
    for _ in 0..r.count(4)? {
        let id = r.str()?;
        ascending(&mut prev, id.clone(), "abandoned event")?;
        s.superseded.insert(id);
    }
    for _ in 0..r.count(4)? {
        let name = r.str()?;
        let before = s.events.source_names().len();
        if usize::from(s.events.source_number(&name)) != before {
            return Err(format!("source {name:?} listed twice"));
        }
    }
    let source_count = s.events.source_names().len() as u32;
    let source = |n: u32| -> Result<u16, Refusal> {
        if n < source_count { Ok(n as u16) } else { Err(format!("source number {n} of {source_count}")) }
    };
    for i in 0..r.count(12)? {
        let src = source(r.u32()?)?;
        let session = r.str()?;
        if session.is_empty() {
            return Err("a session without an id".into());
        }
        let n = s.sessions.get_or_insert(src, &session);
        if n as usize != i {
            return Err(format!("session {session:?} listed twice"));
        }
        let st = &mut s.sessions.slots[i];
        st.project = r.opt_str()?;
        st.title = r.opt_str()?;
        st.first_prompt = r.opt_str()?;
        st.prompt_event = r.opt_str()?;
    }
    let session_count = s.sessions.slots.len() as u32;
    // Each event takes its end, its record and at least one slot.
    let count = r.count(8 + BASE_REC_SIZE + 4)?;
    let text_at = body_at + r.position() + 8;
    let id_text = r.text()?;
    let ends_at = body_at + r.position();
    r.skip(count * 8)?;
    let recs_at = body_at + r.position();
    r.skip(count * BASE_REC_SIZE)?;
    let slots = r.u64()?;
    let slots_ok = if count == 0 { slots == 0 } else { slots.is_power_of_two() && slots > count as u64 && slots <= 1 << 32 };
    if !slots_ok {
        return Err(format!("an id table of {slots} slots for {count} events"));
    }
    let table_at = body_at + r.position();
    let table = r.skip(usize::try_from(slots).ok().and_then(|n| n.checked_mul(4)).ok_or_else(|| format!("an id table of {slots} slots"))?)?;
    // The events stay in the file ([`Base`]): checked here through the accessors that will
    // read them.
    let layout = BaseLayout { count: count as u32, text_at, ends_at, recs_at, table_at, slots: slots as usize };
    let base = Base::new(Arc::clone(bytes), layout);
    let mut orders: Vec<Vec<u32>> = vec![Vec::new(); s.sessions.slots.len()];
    // The low 32 bits of each event's id hash (the table has at most 2^32 slots, so they
    // give its home slot), for the table's check below.
    let mut hashes: Vec<u32> = Vec::with_capacity(count);
    let mut id_start = 0u64;
    for n in 0..count as u32 {
        let id_end = base.end(n);
        if id_end < id_start || id_end > id_text.len() as u64 || !id_text.is_char_boundary(id_end as usize) {
            return Err(format!("event {n}'s id ends at byte {id_end} of the ids' text, not on a character of it at or after byte {id_start}"));
        }
        let id = &id_text[id_start as usize..id_end as usize];
        id_start = id_end;
        hashes.push(slot_hash(id.as_bytes()) as u32);
        let rec = base.try_rec(n)?;
        source(u32::from(rec.source))?;
        if rec.session != NO_SESSION && rec.session >= session_count {
            return Err(format!("event {id:?} names session {} of {session_count}", rec.session));
        }
        if rec.session != NO_SESSION && s.sessions.slots[rec.session as usize].source != rec.source {
            return Err(format!("event {id:?} and its session have different sources"));
        }
        before(rec.offset, read_to, "event")?;
        // What `State::attach` does for an event of a session, except that the session's
        // events are gathered in a list and put in order once at the end.
        if rec.session != NO_SESSION {
            orders[rec.session as usize].push(n);
            if s.counted(id) {
                s.sessions.slots[rec.session as usize].visible_count += 1;
            }
        }
    }
    if id_start != id_text.len() as u64 {
        return Err(format!("the ids' text holds {} bytes after the last event's id", id_text.len() as u64 - id_start));
    }
    check_id_table(&base, table, &hashes)?;
    s.events.set_base(base);
    for (slot, numbers) in s.sessions.slots.iter_mut().zip(orders) {
        slot.events = SessionEvents::from_numbers(numbers, &s.events);
    }
    if r.remaining() != 0 {
        return Err(format!("{} bytes after the last section", r.remaining()));
    }
    s.read_to = read_to;
    Ok(s)
}

/// Checks a snapshot's id table (`table`, its bytes) against the events of `base`, whose
/// ids' hashes' low 32 bits are `hashes`: each event in exactly one slot; each found by a probe from its
/// home slot (no empty slot between its home and its slot); no id twice. A probe then finds
/// every event at its number and ends at an empty slot. Checked in slot order, so that only
/// the ids of events whose hashes agree in those bits are read again (at random places in the
/// text).
fn check_id_table(base: &Base, table: &[u8], hashes: &[u32]) -> Result<(), Refusal> {
    let (count, slots) = (hashes.len(), table.len() / 4);
    if count == 0 {
        return Ok(());
    }
    let slot = |k: usize| le_u32(table, 4 * k);
    let mut seen = vec![false; count];
    let mut used = 0usize;
    for k in 0..slots {
        let n = slot(k);
        if n != EMPTY_SLOT {
            let Some(s) = seen.get_mut(n as usize) else { return Err(format!("the id table names event {n} of {count}")) };
            if std::mem::replace(s, true) {
                return Err(format!("the id table names event {n} twice"));
            }
            used += 1;
        }
    }
    if used != count {
        return Err(format!("the id table holds {used} events of {count}"));
    }
    // Runs of slots between empty ones, from one after an empty slot round to it.
    let mask = slots - 1;
    let first_empty = (0..slots).find(|&k| slot(k) == EMPTY_SLOT).unwrap_or(0);
    let mut run: Vec<(u32, u32)> = Vec::new();
    let mut run_start = (first_empty + 1) & mask;
    for i in 1..=slots {
        let k = (first_empty + i) & mask;
        let n = slot(k);
        if n == EMPTY_SLOT {
            check_run(base, &mut run)?;
            run.clear();
            run_start = (k + 1) & mask;
            continue;
        }
        let hash = hashes[n as usize];
        let home = home_slot(u64::from(hash), slots);
        if (home.wrapping_sub(run_start) & mask) > (k.wrapping_sub(run_start) & mask) {
            return Err(format!("event {:?} is not where the id table says", String::from_utf8_lossy(base.id_bytes(n))));
        }
        run.push((hash, n));
    }
    Ok(())
}

/// Within one run of the id table, `(low 32 bits of the id hash, event)` pairs: refused if two
/// events of one hash have the same id (equal ids share a hash, a home slot, and so a run).
fn check_run(base: &Base, run: &mut [(u32, u32)]) -> Result<(), Refusal> {
    run.sort_unstable();
    for group in run.chunk_by_mut(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
        group.sort_unstable_by(|a, b| base.id_bytes(a.1).cmp(base.id_bytes(b.1)));
        if let Some(w) = group.windows(2).find(|w| base.id_bytes(w[0].1) == base.id_bytes(w[1].1)) {
            return Err(format!("event {:?} listed twice", String::from_utf8_lossy(base.id_bytes(w[0].1))));
        }
    }
    Ok(())
}

/// What a state snapshot of the journal of `store_id` and `epoch` is, for its header.
fn of(store_id: StoreId, epoch: u64) -> SnapshotOf {
    SnapshotOf {
        magic: SNAPSHOT_MAGIC,
        version: SNAPSHOT_FORMAT_VERSION,
        reads: origin_engine::record::kinds_read_fingerprint(State::reads_kind),
        store_id,
        epoch,
    }
}

/// A whole snapshot file: header (naming the fingerprint of the last record the state
/// reflects, `last_record`), then body.
pub(crate) fn encode(s: &State, store_id: StoreId, epoch: u64, last_record: u32) -> Vec<u8> {
    of(store_id, epoch).seal(s.read_to, last_record, &encode_body(s))
}

/// Checks every byte of a snapshot file and rebuilds the state it holds, whose events stay in
/// `bytes` ([`Base`]).
pub(crate) fn decode(bytes: Arc<Mapped>, store_id: StoreId, epoch: u64) -> Result<(State, u32), Refusal> {
    let (read_to, last_record, body) = of(store_id, epoch).open(&bytes)?;
    let body_at = bytes.len() - body.len();
    Ok((decode_body(&bytes, body_at, read_to)?, last_record))
}

/// Checks every byte of a snapshot file written for `store_id` and `epoch`, as
/// [`crate::State::open`] does, and encodes the state it holds again: the bytes a snapshot of
/// that state has, or why the file is refused. For fuzzing and inspection.
pub fn reencode(bytes: &[u8], store_id: StoreId, epoch: u64) -> std::result::Result<Vec<u8>, String> {
    decode_copy(bytes, store_id, epoch).map(|(s, last)| encode(&s, store_id, epoch, last))
}

/// [`decode`] of a copy of `bytes`.
pub(crate) fn decode_copy(bytes: &[u8], store_id: StoreId, epoch: u64) -> Result<(State, u32), Refusal> {
    decode(Arc::new(Mapped::Owned(Arc::new(bytes.to_vec()))), store_id, epoch)
}

/// Writes a snapshot next to `path` and renames it into place
/// ([`origin_engine::snapshot::write_file_within`], waiting for its turn at most `turn_wait`).
pub(crate) fn save(vfs: &dyn Vfs, path: &Path, s: &State, store_id: StoreId, epoch: u64, last_record: u32, turn_wait: Option<std::time::Duration>) -> Result<()> {
    origin_engine::snapshot::write_file_within(vfs, path, &encode(s, store_id, epoch, last_record), turn_wait).map_err(|e| Error::io(e.op, e.path, e.source))
}

/// Reads a snapshot; anything wrong with it (including failing to read it) means rebuild.
pub(crate) fn load(vfs: &dyn Vfs, path: &Path, store_id: StoreId, epoch: u64) -> Load {
    match origin_engine::snapshot::read_file(vfs, path, SNAPSHOT_SIZE_BYTES_MAX) {
        Ok(None) => Load::Missing,
        Err(reason) => Load::Rejected(reason),
        Ok(Some(bytes)) => match decode(Arc::new(bytes), store_id, epoch) {
            Ok((s, last)) => Load::Loaded(s, last),
            Err(reason) => Load::Rejected(reason),
        },
    }
}

//! `origin status` and `origin journal verify|dump|salvage|compact|stress`.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use origin_engine::segment::store_id_hex;
use origin_engine::salvage::Identity;
use origin_engine::verify::Damage;
use origin_engine::vfs::{Synced, sync_durably};
use origin_engine::{Access, Durability, Journal, NewRecord, Options};
use serde_json::json;

use crate::exit::{BadValue, Exit};
use crate::out::{say, Out};
use crate::show;

fn open_read_only(dir: &Path) -> Result<Journal> {
    Journal::open(dir, Options { access: Access::ReadOnly, ..Options::default() })
        .with_context(|| format!("opening the journal in {}", dir.display()))
}

/// Why the journal in `dir` cannot be written, if it cannot: what [`origin_engine::journal::write_refused`]
/// finds, or a torn tail pending whose copy the read-write open that cuts it cannot keep (in a
/// `recovered/` folder another user owns). `torn`: whether a tail is pending, if known; else,
/// only where `recovered/` refuses, a read-only open is made to tell.
pub fn write_refused(dir: &Path, torn: Option<bool>) -> Option<String> {
    if let Some(e) = origin_engine::journal::write_refused(&origin_engine::vfs::OsFs, dir) {
        return Some(e.to_string());
    }
    let recovered = dir.join(origin_engine::journal::RECOVERED_DIR_NAME);
    let refused = recovered.is_dir().then(|| origin_engine::vfs::folder_refusal(&origin_engine::vfs::OsFs, &recovered))??;
    let torn = torn.unwrap_or_else(|| open_read_only(dir).is_ok_and(|j| !j.open_report().torn_tails.is_empty()));
    torn.then(|| {
        format!(
            "{}: {} (a torn tail is pending, and the open that cuts it keeps a copy there)",
            recovered.display(),
            origin_engine::vfs::refusal_text(&refused)
        )
    })
}

/// `origin status`.
pub fn status(home: &Path, dir: &Path, json: bool) -> Result<Exit> {
    let mut out = Out::new();
    let j = open_read_only(dir)?;
    let s = j.status()?;
    let torn_pending = j.open_report().torn_tails;
    let records = s.next_offset - s.first_offset;
    // Why the store cannot be written, if it cannot (commands then read it as it is).
    let unwritable = write_refused(dir, Some(!torn_pending.is_empty()));
    // Why the projections (the state's snapshot, the text index) cannot be saved, if they cannot.
    let folder_refused = |d: &Path| {
        origin_engine::vfs::folder_refusal(&origin_engine::vfs::OsFs, d).map(|e| format!("{}: {}", d.display(), origin_engine::vfs::refusal_text(&e)))
    };
    let projections = home.join("projections");
    // The state's snapshot (and ingest's cursors) are saved in the projections folder, the
    // text index in its own below it: either may refuse alone.
    let unsaved = unwritable.clone().or_else(|| folder_refused(&projections));
    let index_unsaved = unsaved.clone().or_else(|| folder_refused(&projections.join("index")));
    // From the cursor snapshot when it checks out (else the whole journal is read).
    let (cursors, _) = origin_ingest::snapshot::caught_up(&j, &origin_ingest::snapshot::path_in(home)).context("reading ingest counters from the journal")?;
    if json {
        let sources: serde_json::Map<String, serde_json::Value> = cursors
            .totals
            .iter()
            .map(|(id, t)| {
                (
                    id.clone(),
                    json!({ "files": t.files, "lines": t.lines, "events": t.events, "malformed": t.malformed,
                            "cut": t.cut, "bytes": t.bytes, "memory_versions": t.memory_versions }),
                )
            })
            .collect();
        let v = json!({
            "home": home,
            "journal": dir,
            "store_id": store_id_hex(&s.store_id),
            "epoch": s.epoch,
            "segments": s.segments,
            "records": records,
            "bytes": s.bytes,
            "first_offset": s.first_offset,
            "last_offset": if records > 0 { Some(s.next_offset - 1) } else { None },
            "torn_tails_repaired": s.torn_tails_repaired,
            "torn_tails_pending": torn_pending.len(),
            "writable": unwritable.is_none(),
            "not_writable_because": unwritable,
            "projections_saved": unsaved.is_none(),
            "projections_not_saved_because": unsaved,
            "index_saved": index_unsaved.is_none(),
            "index_not_saved_because": index_unsaved,
            "sources": sources,
        });
        say!(out, "{}", serde_json::to_string_pretty(&v)?);
        return Ok(Exit::Ok);
    }
    // Labels in a column as wide as the longest source's name.
    let row = |label: &str, text: String| format!("{}{text}", show::pad(label, 12));
    say!(out, "{}", row("store", format!("{} (id {}, epoch {})", home.display(), store_id_hex(&s.store_id), s.epoch)));
    let last = if records > 0 { format!("last offset {}", s.next_offset - 1) } else { "empty".to_owned() };
    say!(out, "{}", row("journal", format!("{}, {}, {}, {last}", show::count(s.segments as usize, "segment", "segments"), show::count(records as usize, "record", "records"), show::bytes(s.bytes))));
    say!(out, "{}", row("tails", format!("{} repaired (copies in {}/recovered)", show::count(s.torn_tails_repaired as usize, "torn tail", "torn tails"), dir.display())));
    let cut_by = if unwritable.is_some() { "the first write once the store can be written cuts it" } else { "the next write cuts it" };
    for t in torn_pending {
        say!(out, "{}", row("", format!("torn tail pending in {} at byte {} ({} bytes): {cut_by}", t.segment.display(), t.position, t.size_bytes)));
    }
    if let Some(why) = &unwritable {
        say!(out, "{}", row("writable", format!("no ({why}): commands read it as it is; no agents' logs are read into it, and nothing is remembered, corrected, forgotten or restored")));
    } else if let Some(why) = &unsaved {
        say!(out, "{}", row("projections", format!("not saved ({why}): each start reads the journal past what was saved into memory")));
    } else if let Some(why) = &index_unsaved {
        say!(out, "{}", row("text index", format!("not saved ({why}): each start indexes the journal past what was saved, in memory")));
    }
    for (id, t) in &cursors.totals {
        let text = [
            show::count(t.files as usize, "file", "files"),
            show::count(t.lines as usize, "line", "lines"),
            show::count(t.events as usize, "event", "events"),
            format!("{} skipped", show::count(t.malformed as usize, "malformed line", "malformed lines")),
            format!("{} cut", show::count(t.cut as usize, "line", "lines")),
            format!("{} read", show::bytes(t.bytes)),
            show::count(t.memory_versions as usize, "memory file version", "memory file versions"),
        ]
        .join(", ");
        say!(out, "{}", row(id, text));
    }
    Ok(Exit::Ok)
}

fn damage_line(d: &Damage) -> String {
    let lost = match d.offsets_lost {
        Some((a, b)) if a == b => format!("; offset {a} lost"),
        Some((a, b)) => format!("; offsets {a} to {b} lost"),
        None => String::new(),
    };
    format!("{} at byte {}: {} ({} bytes){lost}", d.segment.display(), d.position, d.reason, d.size_bytes)
}

fn damage_json(d: &Damage) -> serde_json::Value {
    json!({
        "segment": d.segment,
        "position": d.position,
        "reason": d.reason,
        "size_bytes": d.size_bytes,
        "offsets_lost": d.offsets_lost.map(|(a, b)| json!([a, b])),
        "undecodable": d.undecodable,
    })
}

/// `origin journal verify`.
pub fn verify(dir: &Path, json: bool) -> Result<Exit> {
    let mut out = Out::new();
    let r = origin_engine::verify::verify_dir(dir).with_context(|| format!("verifying {}", dir.display()))?;
    let exit = if !r.damage.is_empty() {
        Exit::Damaged
    } else if r.torn_tail.is_some() {
        Exit::TornTail
    } else {
        Exit::Ok
    };
    if json {
        let v = json!({
            "journal": dir,
            "clean": r.is_clean(),
            "segments": r.segments.len(),
            "records": r.records,
            "bytes": r.bytes,
            "first_offset": r.first_offset,
            "next_offset": r.next_offset,
            "damage": r.damage.iter().map(damage_json).collect::<Vec<_>>(),
            "torn_tail": r.torn_tail.as_ref().map(damage_json),
            "index_notes": r.index_notes,
            "leftovers": r.leftovers,
            "tip_note": r.tip_note,
        });
        say!(out, "{}", serde_json::to_string_pretty(&v)?);
        return Ok(exit);
    }
    for d in &r.damage {
        say!(out, "DAMAGED {}", damage_line(d));
    }
    if let Some(t) = &r.torn_tail {
        say!(out, "torn tail {}", damage_line(t));
    }
    for n in &r.index_notes {
        say!(out, "note: index {n}");
    }
    for l in &r.leftovers {
        say!(out, "note: {} is left over from an interrupted compaction; the next open removes it", l.display());
    }
    if let Some(n) = &r.tip_note {
        say!(out, "note: {n}");
    }
    let verdict = match exit {
        Exit::Ok => "clean".to_owned(),
        Exit::TornTail if origin_engine::journal::write_refused(&origin_engine::vfs::OsFs, dir).is_some() => {
            "no corruption; a torn tail will be cut by the first write once the store can be written".to_owned()
        }
        Exit::TornTail => "no corruption; a torn tail will be cut by the next write".to_owned(),
        // A writer judges the last segment whole at every open and append; of a sealed segment
        // it checks the header and seal, and its records only as they are read.
        // A record that does not decode stops no write (its frame, and those around it, check out).
        // The journal's newest segment files are gone (`TIP` names one): an open refuses.
        _ if r.damage.iter().any(|d| d.is_file_gone(&r)) => format!(
            "{} damaged region(s); the journal's newest segment file is gone: the store does not open; \
             `origin journal salvage --to DIR` copies every readable record",
            r.damage.len()
        ),
        _ if r.damage.iter().any(|d| !d.undecodable && r.segments.last().is_some_and(|s| s.path == d.segment)) => format!(
            "{} damaged region(s), in the last segment: writes are refused; `origin journal salvage --to DIR` copies every readable record",
            r.damage.len()
        ),
        _ if r.damage.iter().all(|d| d.undecodable) => format!(
            "{} record(s) that pass their checksums and do not decode: every read that reaches one fails, naming its offset; \
             `origin journal salvage --to DIR` copies every other record",
            r.damage.len()
        ),
        _ => format!(
            "{} damaged region(s) in sealed segments: a read of a record there fails, naming its segment and byte, and a damaged \
             header or seal stops the store from opening; `origin journal salvage --to DIR` copies every readable record",
            r.damage.len()
        ),
    };
    say!(out, 
        "verified {} segments, {} records, {}: {verdict}",
        r.segments.len(),
        r.records,
        show::bytes(r.bytes)
    );
    Ok(exit)
}

/// `origin journal dump`. A journal that does not open for its damage is walked as `verify`
/// walks it: every readable record printed, each damaged region said on stderr where it is
/// met, and exit 1.
pub fn dump(dir: &Path, from: u64, limit: usize, json: bool) -> Result<Exit> {
    let mut out = Out::new();
    if limit == 0 {
        return Ok(Exit::Ok);
    }
    let j = match open_read_only(dir) {
        Ok(j) => j,
        Err(e) if e.chain().any(crate::tools::archive::is_journal_damage) => return dump_damaged(dir, from, limit, json, &e),
        Err(e) => return Err(e),
    };
    let mut printed = 0usize;
    let mut write_err = None;
    j.read_from(from, |r| {
        if let Err(e) = writeln!(out, "{}", dump_line(&r, json)) {
            write_err = Some(e);
            return Ok(ControlFlow::Break(()));
        }
        printed += 1;
        // Nothing more to read for once the reader has gone.
        Ok(if printed >= limit || out.gone() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
    })?;
    if printed == 0 && from >= j.next_offset() && write_err.is_none() {
        origin::say_err!("origin: no record at or after offset {from}: the journal's records end before offset {}", j.next_offset());
    }
    match write_err {
        Some(e) => Err(e).context("writing to standard output"),
        None => Ok(Exit::Ok),
    }
}

/// [`dump`] of a journal whose damage stops it from opening (`why`).
fn dump_damaged(dir: &Path, from: u64, limit: usize, json: bool, why: &anyhow::Error) -> Result<Exit> {
    use origin_engine::verify::Walked;
    let mut out = Out::new();
    origin::say_err!("origin: {why:#}");
    origin::say_err!("origin: the journal is damaged: its readable records follow, each damaged region said where it is met");
    let mut printed = 0usize;
    let mut write_err = None;
    let mut plain = Vec::new();
    let walked = origin_engine::verify::walk(&origin_engine::vfs::OsFs, dir, |w| {
        if printed >= limit || write_err.is_some() || out.gone() {
            return Ok(());
        }
        match w {
            Walked::Damage(d) => origin::say_err!("origin: damage: {}", damage_line(d)),
            Walked::Record(f) if f.offset >= from => {
                let payload = if f.flags & origin_engine::frame::FLAG_ZSTD != 0 {
                    match origin_engine::codec::decompress_into(f.payload, &mut plain, f.offset) {
                        Ok(()) => plain.as_slice(),
                        // Said as the record's own failure to decode, as a read would.
                        Err(_) => f.payload,
                    }
                } else {
                    f.payload
                };
                let r = origin_engine::Record { offset: f.offset, time_unix_ms: f.time_unix_ms, kind: f.kind, kind_version: f.kind_version, payload };
                match writeln!(out, "{}", dump_line(&r, json)) {
                    Ok(()) => printed += 1,
                    Err(e) => write_err = Some(e),
                }
            }
            Walked::Record(_) => {}
        }
        Ok(())
    });
    if let Some(e) = write_err {
        return Err(e).context("writing to standard output");
    }
    walked.with_context(|| format!("reading the damaged journal in {}", dir.display()))?;
    Ok(Exit::Damaged)
}

/// One record as `dump` prints it: a line of JSON, or offset, time, kind, version, size and a
/// summary of its body.
fn dump_line(r: &origin_engine::Record<'_>, json: bool) -> String {
    let kind = origin_engine::RecordKind::from_u8(r.kind).map_or("unknown", |k| k.name());
    let decoded = r.decode();
    if json {
        let (body, error) = match &decoded {
            Ok((_, b)) => (show::body_json(b), None),
            Err(e) => (serde_json::Value::Null, Some(e.to_string())),
        };
        let origin = decoded
            .as_ref()
            .ok()
            .and_then(|(o, _)| o.as_ref())
            .map(|o| json!({ "store_id": store_id_hex(&o.store_id), "epoch": o.epoch, "offset": o.offset }));
        json!({
            "offset": r.offset,
            "time": show::time(r.time_unix_ms),
            "kind": kind,
            "kind_version": r.kind_version,
            "size": r.payload.len(),
            "origin": origin,
            "body": body,
            "error": error,
        })
        .to_string()
    } else {
        let summary = match &decoded {
            Ok((_, b)) => show::body_summary(b),
            Err(e) => format!("(undecodable: {e})"),
        };
        format!("{:>10}  {}  {:<13} v{}  {:>8}  {summary}", r.offset, show::time(r.time_unix_ms), kind, r.kind_version, r.payload.len())
    }
}

/// `origin journal salvage --to DIR`.
pub fn salvage(dir: &Path, to: &Path) -> Result<Exit> {
    let mut out = Out::new();
    if std::fs::canonicalize(to).is_ok_and(|t| std::fs::canonicalize(dir).is_ok_and(|d| d == t)) {
        return Err(BadValue(format!("{} is the journal salvaged: salvage writes a new journal elsewhere", to.display())).into());
    }
    // Not empty: refused, unless a salvage stopped part way left it (it starts over there).
    if std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some()) && origin_engine::journal::unfinished(&origin_engine::vfs::OsFs, to).is_none() {
        return Err(BadValue(format!("{} is not empty: salvage writes a new journal there", to.display())).into());
    }
    let r = origin_engine::salvage::salvage_dir(dir, to).with_context(|| format!("salvaging {} into {}", dir.display(), to.display()))?;
    say!(out, "copied {} records into {} (epoch {})", r.records_copied, r.to.display(), r.epoch);
    match r.identity {
        Identity::Header => {}
        Identity::UncheckedHeader => say!(
            out,
            "no segment header checks out: the store id was read from the damaged headers (if the damage is in the id itself, \
             the projections take the salvaged store for another and are rebuilt)"
        ),
        Identity::New => say!(out, "no segment header could be read: the salvaged journal has a new store id"),
    }
    if r.duplicates_skipped > 0 {
        say!(out, "skipped {} duplicate copies of records already taken", r.duplicates_skipped);
    }
    if r.lost.is_empty() {
        say!(out, "nothing was lost");
    }
    for d in &r.lost {
        say!(out, "LOST {}", damage_line(d));
    }
    if let Some(t) = &r.torn_tail {
        say!(out, "left out a torn tail (never acknowledged): {}", damage_line(t));
    }
    say!(out, "to use it: move {} aside and put {} in its place", dir.display(), r.to.display());
    Ok(Exit::Ok)
}

/// `origin journal compact`.
pub fn compact(dir: &Path, segment_size: u64) -> Result<Exit> {
    let mut out = Out::new();
    let r = origin_engine::compact::compact_dir(dir, segment_size).with_context(|| format!("compacting {}", dir.display()))?;
    for (from, into) in &r.merged {
        say!(out, "merged {} segments into {}", from.len(), into.display());
    }
    say!(out, 
        "segments {} -> {}, bytes {} -> {}",
        r.segments_before,
        r.segments_after,
        show::bytes(r.bytes_before),
        show::bytes(r.bytes_after)
    );
    Ok(Exit::Ok)
}

/// The payload of stress record (`thread`, `seq`): 16 bytes of identity, then filler that
/// depends on both, so a wrong or shifted payload never passes for a right one.
pub fn stress_payload(thread: u64, seq: u64, size: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(size.max(16));
    p.extend_from_slice(&thread.to_le_bytes());
    p.extend_from_slice(&seq.to_le_bytes());
    let mut x = thread.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seq.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    while p.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p.push(x as u8);
    }
    p
}

/// `origin journal stress`.
pub fn stress(dir: &Path, records: u64, size: usize, threads: u64, segment_size: u64, quiet: bool) -> Result<Exit> {
    if threads == 0 || threads > 1024 {
        return Err(BadValue("--threads must be 1 to 1024".into()).into());
    }
    if !(16..=origin_engine::limits::RECORD_PAYLOAD_SIZE_MAX).contains(&size) {
        return Err(BadValue(format!("--size must be 16 to {} bytes", origin_engine::limits::RECORD_PAYLOAD_SIZE_MAX)).into());
    }
    let opts = Options { segment_size_bytes_max: segment_size, durability: Durability::Sync, ..Options::default() };
    let j = Arc::new(Journal::open(dir, opts).with_context(|| format!("opening the journal in {}", dir.display()))?);
    for t in j.open_report().torn_tails {
        origin::say_err!("origin: cut a torn tail in {} at byte {} ({} bytes)", t.segment.display(), t.position, t.size_bytes);
    }
    let start = std::time::Instant::now();
    let per = records / threads;
    let extra = records % threads;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let j = j.clone();
            let n = per + u64::from(t < extra);
            std::thread::spawn(move || -> Result<u64> {
                for seq in 0..n {
                    let p = stress_payload(t, seq, size);
                    let crc = crc32fast::hash(&p);
                    let r = j.append(vec![NewRecord::scratch(p)])?;
                    if !quiet {
                        let mut out = Out::new();
                        say!(out, "ack {} {t} {seq} {crc:08x}", r.start);
                        out.flush().context("writing to standard output")?;
                        // Its reader gone, the acknowledgements are for no one: stop.
                        if out.gone() {
                            return Ok(seq + 1);
                        }
                    }
                }
                Ok(n)
            })
        })
        .collect();
    let mut records = 0;
    for h in handles {
        records += h.join().map_err(|_| anyhow::anyhow!("an appender thread panicked"))??;
    }
    let secs = start.elapsed().as_secs_f64();
    let s = j.status()?;
    origin::say_err!(
        "appended {records} records of {size} bytes with {threads} threads in {secs:.2} s ({:.0} records/s, {} group commits); journal now holds offsets {}..{}",
        records as f64 / secs.max(1e-9),
        s.batches,
        s.first_offset,
        s.next_offset
    );
    Ok(Exit::Ok)
}

/// `origin journal replay [--until OFFSET|TIME] [--to DIR]`. Without `--to`, the store's own
/// projections are rebuilt (the state's snapshot, ingest's cursors, the text index). With it,
/// `DIR` becomes a store of its own holding the journal's records up to the bound (every record
/// with `--until` absent), copied in a new lineage, with the state's snapshot built from them
/// and [`origin::tools::archive::REPLAY_FILE`], which says what it is and keeps Origin from
/// reading agents' logs into it: `origin --home DIR search …` (and every other read) answers as
/// the store did then.
pub fn replay(home: &Path, dir: &Path, until: Option<&str>, to: Option<&Path>) -> Result<Exit> {
    let mut out = Out::new();
    use origin_projections::state::{State, SNAPSHOT_FILE_NAME};
    let j = open_read_only(dir)?;
    let until_at = match until {
        None => None,
        Some(u) if !u.is_empty() && u.bytes().all(|b| b.is_ascii_digit()) => {
            Some((Some(u.parse::<u64>().map_err(|e| BadValue(format!("--until {u} is no offset ({e})")))?), None))
        }
        Some(u) => {
            let now = jiff::Zoned::now();
            // Records at or before the time are replayed: a finer time rounds down.
            let ms = crate::tools::conventions::parse_time_arg_inclusive(u, &now).map_err(|why| BadValue(format!("--until {why}")))?;
            Some((None, Some(ms)))
        }
    };
    if let Some((Some(offset), _)) = until_at
        && offset > j.next_offset()
    {
        return Err(BadValue(format!(
            "--until {offset} is past the journal's end: its records end before offset {} (a time is given with a date, e.g. 2026-10-20T09:00:00Z)",
            j.next_offset()
        ))
        .into());
    }
    if let Some(to) = to {
        check_replay_folder(home, to)?;
    }
    // Where the replay writes, looked at before the journal is read (the snapshot's save at
    // the end met the refusal after the whole journal had been read).
    let writes_in = match to {
        None => vec![home.join("projections"), home.join("projections").join("index")],
        Some(to) => vec![to.to_path_buf()],
    };
    if let Some((folder, why)) = writes_in.iter().find_map(|d| refused_folder(d).map(|why| (d, why))) {
        anyhow::bail!(
            "{} cannot be written ({}), where the replay would write{}; nothing was replayed",
            folder.display(),
            origin_engine::vfs::refusal_text(&why),
            if to.is_none() { " the store's projections (--to DIR writes a store as of then elsewhere)" } else { " its store" }
        );
    }
    // The store it makes says it is unfinished before anything else of it is made, and until
    // its summary replaces that, last: stopped (killed, a full disk), no command opens it, and
    // a replay run again there starts over.
    let _held = to.map(hold_replay_folder).transpose()?;
    if let Some(to) = to {
        let what = json!({ crate::tools::archive::REPLAY_UNFINISHED_KEY: format!("a replay of {} (origin journal replay --to)", home.display()) });
        replace_synced(&to.join(crate::tools::archive::REPLAY_FILE), &(serde_json::to_string_pretty(&what)? + "\n"))?;
    }
    // A replay's store replayed again: its records' times are those of its copy, so its own
    // `as_of` and the store it shows are carried over.
    let replayed = crate::tools::archive::replay_of(home)?;
    let mut state = State::new();
    // A full replay of the store rebuilds ingest's cursors too (from the same records), and
    // saves them.
    let mut cursors = to.is_none().then(origin_ingest::cursor::Cursors::default);
    let mut last_time = None;
    walk_with_bar(&j, "replaying", 0, |r| {
        if let Some((off, time)) = until_at {
            if off.is_some_and(|o| r.offset >= o) || time.is_some_and(|t| r.time_unix_ms > t) {
                return Ok(ControlFlow::Break(()));
            }
        }
        last_time = Some(r.time_unix_ms);
        // The records the projections read, decoded as they decode them; the others (tokens,
        // devices, scratch, kinds newer than this build) passed over as they pass them.
        if !State::reads_kind(r.kind) {
            state.pass(r.offset);
            return Ok(ControlFlow::Continue(()));
        }
        let (_, body) = r.decode().map_err(|e| anyhow::Error::from(e).context("a record could not be decoded; nothing was saved"))?;
        state.apply(r.offset, &body);
        if let Some(c) = cursors.as_mut() {
            c.apply(r.offset, &body);
        }
        Ok(ControlFlow::Continue(()))
    })?;
    // Entries current as of the bound: its time, else (of a replay's store, the time it shows,
    // at the latest) the last record's.
    let shown_as_of = replayed.as_ref().map(|r| r.as_of.as_millisecond());
    let as_of = until_at
        .and_then(|(_, t)| t)
        .map(|t| shown_as_of.map_or(t, |s| t.min(s)))
        .or(shown_as_of)
        .or(last_time)
        .unwrap_or_else(|| jiff::Timestamp::now().as_millisecond());
    let filter = origin_projections::EntryFilter { kind: None, project: None, since_unix_ms: None, until_unix_ms: None };
    let sessions_filter = origin_projections::SessionFilter { since_unix_ms: None, until_unix_ms: None, source: None, project: None };
    let mut summary = json!({
        "read_to": state.read_to(),
        "digest": format!("{:016x}", state.digest()),
        "current_entries": state.entries(&filter, as_of, usize::MAX).len(),
        "sessions": state.sessions(&sessions_filter, usize::MAX).len(),
    });
    let snap = match to {
        None => {
            let snap = home.join("projections").join(SNAPSHOT_FILE_NAME);
            state.save_snapshot(&j, &origin_engine::vfs::OsFs, &snap).with_context(|| format!("saving {}", snap.display()))?;
            if let Some(mut c) = cursors {
                // Past the records that carry nothing for cursors, to the journal's end.
                c.catch_up(&j).context("reading ingest's cursors from the journal")?;
                let path = home.join("projections").join(origin_ingest::snapshot::CURSORS_FILE_NAME);
                origin_ingest::snapshot::save(&path, &c, &j).with_context(|| format!("saving {}", path.display()))?;
            }
            snap
        }
        Some(to) => {
            let (copy, mark) = copy_records(&j, &to.join("journal"), state.read_to(), home)?;
            let snap = to.join("projections").join(SNAPSHOT_FILE_NAME);
            state.save_snapshot(&copy, &origin_engine::vfs::OsFs, &snap).with_context(|| format!("saving {}", snap.display()))?;
            // A replay of a replay shows the same store: its lines are in that store's mirrors.
            let of = match replayed {
                Some(r) => r.of,
                None => std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf()),
            };
            summary["of"] = json!(of);
            summary["as_of"] = json!(crate::tools::conventions::format_time(as_of, &crate::tools::conventions::local_tz()));
            summary["as_of_unix_ms"] = json!(as_of);
            // The last steps: the summary in place of the word that the store is unfinished,
            // then the journal's mark: the store as of then is whole, and opens.
            replace_synced(&to.join(crate::tools::archive::REPLAY_FILE), &(serde_json::to_string_pretty(&summary)? + "\n"))?;
            mark.finish(&origin_engine::vfs::OsFs).context("finishing the replay's journal")?;
            snap
        }
    };
    say!(out,
        "replayed {} records: {} current entries, {} sessions (digest {}); snapshot in {}",
        state.read_to(),
        summary["current_entries"],
        summary["sessions"],
        summary["digest"].as_str().unwrap_or_default(),
        snap.display()
    );
    match to {
        None => rebuild_index(&home.join("projections").join("index"), &j)?,
        Some(to) => say!(out, "a store as of then in {}: origin --home {} search …", to.display(), to.display()),
    }
    Ok(Exit::Ok)
}

/// Why this process may not write in `dir`, or, where `dir` is not there yet, in the nearest
/// folder above it that is (where it would be made); `None` if it may, or if that cannot be
/// told.
fn refused_folder(dir: &Path) -> Option<std::io::Error> {
    let there = dir.ancestors().find(|a| a.as_os_str().is_empty() || a.is_dir())?;
    let there = if there.as_os_str().is_empty() { Path::new(".") } else { there };
    origin_engine::vfs::folder_refusal(&origin_engine::vfs::OsFs, there)
}

/// Refuses a replay's folder that is the store's or inside its journal, projections or
/// mirrors (what it holds is looked at once it is held: [`hold_replay_folder`]).
fn check_replay_folder(home: &Path, to: &Path) -> Result<()> {
    // Where `to` is: its longest part that exists resolved by the file system (symlinks and
    // `..` as the system takes them), then the rest, which does not exist, read as written.
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let absolute = if to.is_absolute() { to.to_path_buf() } else { std::env::current_dir().context("the current folder")?.join(to) };
    let parts: Vec<std::path::Component<'_>> = absolute.components().collect();
    let existing = (0..=parts.len()).rev().find(|&n| parts[..n].iter().collect::<PathBuf>().exists()).unwrap_or(0);
    let mut resolved = std::fs::canonicalize(parts[..existing].iter().collect::<PathBuf>()).unwrap_or_default();
    for part in &parts[existing..] {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    if resolved == home || ["journal", "projections", "raw"].iter().any(|f| resolved.starts_with(home.join(f))) {
        return Err(BadValue(format!("{} is inside the store ({}): the replay writes a store of its own elsewhere", to.display(), home.display())).into());
    }
    Ok(())
}

/// Makes the replay's folder `to` if it is not there and holds it for this replay
/// ([`origin_engine::journal::hold_folder`]: a replay or salvage into it running already
/// refuses this one), then clears what a replay stopped there part way left
/// ([`start_replay_over`]).
fn hold_replay_folder(to: &Path) -> Result<Option<Box<dyn origin_engine::vfs::LockGuard>>> {
    std::fs::create_dir_all(to).with_context(|| format!("making {}", to.display()))?;
    let held = origin_engine::journal::hold_folder(&origin_engine::vfs::OsFs, to)?;
    if std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some()) {
        start_replay_over(to)?;
    }
    Ok(held)
}

/// Writes `text` to `path` by a file beside it renamed over it, each synced (the file, then its
/// folder): `path` holds the old text or the new, whenever it is cut.
fn replace_synced(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        sync_durably(&f, Synced::Data)
    });
    written.with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(folder).and_then(|d| sync_durably(&d, Synced::Folder)).with_context(|| format!("syncing {}", folder.display()))
}

/// Clears the folder `to` of a replay that stopped part way (killed, a full disk), to start
/// over there: only a store a replay writes (its journal marked unfinished, with nothing but a
/// journal's files; its projections; `replay.json`), and only once the replay is gone (its
/// mark is not held). The journal's files go last, its mark after them, so that a cut here
/// leaves the folder still marked. Anything else in the folder refuses it, untouched.
fn start_replay_over(to: &Path) -> Result<()> {
    use crate::tools::archive::REPLAY_FILE;
    let journal = to.join("journal");
    let summary = to.join(REPLAY_FILE);
    let said_unfinished = crate::tools::archive::replay_unfinished(to);
    let marked = origin_engine::journal::unfinished(&origin_engine::vfs::OsFs, &journal).is_some();
    let names: Vec<String> = std::fs::read_dir(to)
        .with_context(|| format!("listing {}", to.display()))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("listing {}", to.display()))?;
    // A replay stopped while it wrote its first word, that its store is unfinished, left that
    // word's file beside where it goes, and nothing else.
    let first_word_only = names == ["replay.json.tmp"];
    if !said_unfinished && !marked && !first_word_only {
        return Err(BadValue(format!("{} is not empty: the replay writes a store of its own there", to.display())).into());
    }
    let replays = ["journal", "projections", REPLAY_FILE, "replay.json.tmp"];
    let others: Vec<&str> = names.iter().map(String::as_str).filter(|n| !replays.contains(n)).collect();
    if !others.is_empty() {
        return Err(BadValue(format!("{} holds files no replay writes ({}): nothing there is removed", to.display(), others.join(", "))).into());
    }
    // The journal: marked (its files, then its mark, go), or an empty folder (stopped before
    // its mark); one holding anything else is not the replay's.
    let empty = |d: &Path| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_none());
    let journal_mark = if marked {
        Some(origin_engine::journal::take_over_unfinished(&origin_engine::vfs::OsFs, &journal).with_context(|| format!("starting the replay over in {}", to.display()))?)
    } else if journal.exists() && !empty(&journal) {
        return Err(BadValue(format!("{} holds a journal no replay left unfinished: nothing there is removed", to.display())).into());
    } else {
        None
    };
    for made in [to.join("projections"), to.join("replay.json.tmp")] {
        let removed = if made.is_dir() { std::fs::remove_dir_all(&made) } else if made.exists() { std::fs::remove_file(&made) } else { Ok(()) };
        removed.with_context(|| format!("removing {}, which a stopped replay wrote", made.display()))?;
    }
    if let Some(mark) = journal_mark {
        mark.clear(&origin_engine::vfs::OsFs).with_context(|| format!("removing the journal a stopped replay wrote in {}", journal.display()))?;
    }
    if journal.exists() {
        std::fs::remove_dir(&journal).with_context(|| format!("removing {}, which a stopped replay made", journal.display()))?;
    }
    // Last, the word that the store is unfinished.
    if summary.exists() {
        std::fs::remove_file(&summary).with_context(|| format!("removing {}, which a stopped replay wrote", summary.display()))?;
    }
    Ok(())
}

/// Copies the records of `j` below offset `end` into a new journal in `to` (same offsets; a
/// new lineage of the same store: its epoch one higher, as a salvage's), and returns it.
fn copy_records(j: &Journal, to: &Path, end: u64, home: &Path) -> Result<(Journal, origin_engine::journal::UnfinishedMark)> {
    // Marked unfinished until the replay's last step ([`replay`]): a replay stopped part way
    // leaves a store that no command opens (it took agents' logs, holding part of the records).
    let what = format!("a replay of {} (origin journal replay --to)", home.display());
    let mark = origin_engine::journal::mark_unfinished(&origin_engine::vfs::OsFs, to, &what)
        .with_context(|| format!("marking the journal in {} unfinished", to.display()))?;
    let opts = Options { new_store_identity: Some((j.store_id(), j.epoch() + 1)), unfinished_ok: true, ..Options::default() };
    let copy = Journal::open(to, opts).with_context(|| format!("creating the journal in {}", to.display()))?;
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    let mut failure = None;
    j.read_from(0, |r| {
        if r.offset >= end {
            return Ok(ControlFlow::Break(()));
        }
        bytes += r.payload.len();
        batch.push(NewRecord::raw(r.kind, r.kind_version, r.payload.to_vec()));
        if batch.len() >= 4096 || bytes >= 64 << 20 {
            if let Err(e) = copy.append(std::mem::take(&mut batch)) {
                failure = Some(e);
                return Ok(ControlFlow::Break(()));
            }
            bytes = 0;
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if let Some(e) = failure {
        return Err(e).with_context(|| format!("copying records into {}", to.display()));
    }
    if !batch.is_empty() {
        copy.append(batch).with_context(|| format!("copying records into {}", to.display()))?;
    }
    Ok((copy, mark))
}

/// A progress bar over journal records on a terminal, none otherwise.
fn records_bar(what: &str, total: u64) -> Option<indicatif::ProgressBar> {
    std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!("{what} [{{bar:30}}] {{pos}}/{{len}} records {{per_sec}}"))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Reads every record from offset `from` through `f`, with a progress bar on a terminal;
/// stops where `f` breaks or fails (its error, naming the record's offset, is returned).
fn walk_with_bar(j: &Journal, what: &str, from: u64, mut f: impl FnMut(&origin_engine::Record<'_>) -> Result<ControlFlow<()>>) -> Result<()> {
    let bar = records_bar(what, j.next_offset());
    if let Some(b) = &bar {
        b.set_position(from);
    }
    let mut failure = None;
    j.read_from(from, |r| {
        match f(&r) {
            Ok(ControlFlow::Continue(())) => {}
            Ok(ControlFlow::Break(())) => return Ok(ControlFlow::Break(())),
            Err(e) => {
                failure = Some(e.context(format!("{what} the record at offset {}", r.offset)));
                return Ok(ControlFlow::Break(()));
            }
        }
        if let Some(b) = &bar {
            b.set_position(r.offset + 1);
        }
        Ok(ControlFlow::Continue(()))
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    failure.map_or(Ok(()), Err)
}

/// Builds the store's text index again from the journal's start, with a progress bar, then
/// runs the merges the policy calls for.
fn rebuild_index(dir: &Path, j: &Journal) -> Result<()> {
    let mut out = Out::new();
    use origin_projections::index::{merge, MergePolicy};
    use origin_projections::Catalog;
    let mut catalog = Catalog::start_over(dir, j).with_context(|| format!("clearing the text index in {}", dir.display()))?;
    index_journal(&mut catalog, j)?;
    while let Some(planned) = catalog.plan_merge(&MergePolicy::default())? {
        let merged = merge(&planned.job)?;
        catalog.install_merge(merged, planned)?;
    }
    say!(out, 
        "indexed {} documents in {} segments; index in {}",
        catalog.index().doc_count(),
        catalog.index().segments().len(),
        dir.display()
    );
    Ok(())
}

/// Feeds `catalog` every record of the journal from its mark on, with a progress bar, and
/// commits what it holds at the end.
fn index_journal(catalog: &mut origin_projections::Catalog, j: &Journal) -> Result<()> {
    use origin_projections::Committed;
    loop {
        let mut superseded = false;
        walk_with_bar(j, "indexing", catalog.read_to(), |r| {
            if catalog.wants(r.offset, r.kind) {
                let (_, body) = r.decode()?;
                catalog.apply(r.offset, &body)?;
            } else {
                catalog.pass(r.offset);
            }
            // A commit another process holds the lock for waits for the next record. One that
            // another process (a server on this store) wrote first, from the emptied index, took
            // this catalog back to its mark: the walk starts again from there.
            if catalog.wants_commit() && catalog.commit()? == Committed::Superseded {
                superseded = true;
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        if !superseded {
            break;
        }
    }
    loop {
        match catalog.commit()? {
            Committed::Written | Committed::Nothing => break,
            Committed::Busy => std::thread::sleep(std::time::Duration::from_millis(50)),
            // Another process committed what it had fed: go on from its mark.
            Committed::Superseded => {
                catalog.catch_up(j)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use origin_engine::record::{Event, EventKind, Ingested, Role};
    use origin_engine::{Body, NewRecord, Options};
    use origin_projections::{Catalog, Committed, Filters, Scope};

    use super::*;

    fn ingested(i: u64) -> Body {
        let event = Event {
            id: format!("claude-code:e{i}"),
            time_unix_ms: 1_000 + i as i64,
            session: "s1".into(),
            project: None,
            role: Role::User,
            kind: EventKind::Message,
            text: format!("common word{i}"),
            text_cut_chars: 0,
            cwd: None,
            git_branch: None,
            agent_version: None,
            line: i + 1,
        };
        Body::Ingested(Ingested {
            source: "claude-code".into(),
            path: "/p".into(),
            mirror: "claude-code/p".into(),
            file_version: 1,
            byte_start: i,
            byte_end: i + 1,
            line_start: i + 1,
            line_end: i + 2,
            prefix_hash: 0,
            raw_zstd: Vec::new(),
            events: vec![event],
            sessions: Vec::new(),
            malformed_lines: 0,
            cut_lines: 0,
            state: Vec::new(),
            superseded: Vec::new(),
        })
    }

    /// `origin journal replay` empties the index and feeds it again while a server on the store
    /// may commit first from the emptied index (taking replay's catalog back to its mark):
    /// every record is indexed all the same.
    #[test]
    fn an_index_rebuilt_beside_a_process_that_commits_first_misses_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal"), Options::default()).unwrap();
        let bodies: Vec<Body> = (0..6).map(ingested).collect();
        for b in &bodies {
            j.append(vec![NewRecord::new(b).unwrap()]).unwrap();
        }
        let idx = dir.path().join("index");
        let mut replay = Catalog::start_over(&idx, &j).unwrap();
        replay.set_commit_docs(3);
        // The server opens the emptied index, feeds the first record and commits it.
        let (mut server, _) = Catalog::open(&idx, &j).unwrap();
        server.apply(0, &bodies[0]).unwrap();
        assert_eq!(server.commit().unwrap(), Committed::Written);
        index_journal(&mut replay, &j).unwrap();
        let filters = Filters { scope: Some(Scope::Event), ..Filters::default() };
        let query = origin_projections::parse_query("common").unwrap();
        let mut keys: Vec<String> = replay.search(&query, &filters, &|_| true, 50).unwrap().into_iter().map(|h| h.key).collect();
        keys.sort();
        assert_eq!(keys, (0..6).map(|i| format!("claude-code:e{i}")).collect::<Vec<_>>());
        assert_eq!(replay.index().doc_count(), 6);
    }
}

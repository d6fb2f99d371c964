//! Bit rot: every single-bit flip of every segment file is detected, never returned as data,
//! and never cut away as if a crash had torn it. Damaged index files are rebuilt silently.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use origin_engine::frame::{check_frame, Check, FLAG_ZSTD, KIND_SEAL};
use origin_engine::journal::RECOVERED_DIR_NAME;
use origin_engine::segment::SEGMENT_HEADER_SIZE;
use origin_engine::sim::{Fault, SimFs};
use origin_engine::verify::verify;
use origin_engine::vfs::Vfs;
use origin_engine::{Error, Journal, NewRecord, Options, StoreId};

const DIR: &str = "/store/journal";
const STORE_ID: StoreId = [0x17; 16];
const FAILURES_SHOWN: usize = 25;

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn opts() -> Options {
    Options { segment_size_bytes_max: 4096, new_store_identity: Some((STORE_ID, 0)), ..Options::default() }
}

/// A small journal: three segments (two sealed, with index files), 30 records, some of them
/// zstd-compressed.
struct Fixture {
    fs: SimFs,
    payloads: Vec<Vec<u8>>,
    segments: Vec<PathBuf>,
}

fn record_payload(k: usize) -> Vec<u8> {
    if k % 7 == 3 {
        format!("record {k}: a compressible tool result line\n").repeat(150).into_bytes()
    } else {
        (0..(k * 131 % 640)).map(|b| ((b as u32).wrapping_mul(2_654_435_761) >> 24) as u8 ^ k as u8).collect()
    }
}

fn build() -> Fixture {
    let fs = SimFs::new(7);
    let j = Journal::open_with(Arc::new(fs.clone()), dir(), opts()).expect("open a new journal");
    let mut payloads = Vec::new();
    let mut batch_size = 0;
    while payloads.len() < 30 {
        batch_size = batch_size % 3 + 1;
        let batch: Vec<Vec<u8>> = (payloads.len()..payloads.len() + batch_size).map(record_payload).collect();
        let range = j.append(batch.iter().cloned().map(NewRecord::scratch).collect()).expect("append");
        assert_eq!(range.start, payloads.len() as u64);
        payloads.extend(batch);
    }
    let segments = j.segment_paths();
    drop(j);
    assert!(segments.len() >= 3, "the fixture must span several segments: {segments:?}");
    let mut compressed = 0;
    for (i, p) in segments.iter().enumerate() {
        let bytes = fs.read_file(p).expect("read segment");
        let frames = frames(&bytes);
        assert!(frames.iter().any(|f| !f.seal), "segment {i} holds records");
        assert_eq!(frames.last().is_some_and(|f| f.seal), i + 1 < segments.len(), "only sealed segments end with a seal");
        compressed += frames.iter().filter(|f| f.compressed).count();
        if i + 1 < segments.len() {
            assert!(Vfs::exists(&fs, &p.with_extension("idx")).expect("stat"), "sealed segment {i} has an index");
        }
    }
    assert!(compressed >= 3, "the fixture must hold compressed records, it holds {compressed}");
    let report = verify(&fs, dir()).expect("verify");
    assert!(report.is_clean() && report.index_notes.is_empty(), "fixture not clean: {report:?}");
    Fixture { fs, payloads, segments }
}

struct FrameAt {
    start: usize,
    len: usize,
    seal: bool,
    compressed: bool,
}

/// The frames of an intact segment, in order.
fn frames(bytes: &[u8]) -> Vec<FrameAt> {
    let mut out = Vec::new();
    let mut pos = SEGMENT_HEADER_SIZE as usize;
    while pos < bytes.len() {
        match check_frame(&bytes[pos..]) {
            Check::Valid(f) => {
                out.push(FrameAt { start: pos, len: f.frame_len, seal: f.kind == KIND_SEAL, compressed: f.flags & FLAG_ZSTD != 0 });
                pos += f.frame_len;
            }
            other => panic!("fixture segment unreadable at {pos}: {other:?}"),
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Region {
    Header,
    Record,
    Seal,
}

fn region(frames: &[FrameAt], byte: usize) -> Region {
    if byte < SEGMENT_HEADER_SIZE as usize {
        return Region::Header;
    }
    match frames.iter().find(|f| byte >= f.start && byte < f.start + f.len) {
        Some(f) if f.seal => Region::Seal,
        Some(_) => Region::Record,
        None => panic!("byte {byte} is outside every frame"),
    }
}

/// The error must be corruption in `path` at a byte position at or before the flipped byte,
/// and say so in its message.
fn names_the_damage(e: &Error, path: &Path, byte: u64) -> Result<(), String> {
    match e {
        Error::Corrupt { segment, position, .. } => {
            let msg = e.to_string();
            if segment != path {
                return Err(format!("error names segment {}, the flip is in {}: {msg}", segment.display(), path.display()));
            }
            if *position > byte {
                return Err(format!("error names byte {position}, after the flipped byte {byte}: {msg}"));
            }
            if !msg.contains(&path.display().to_string()) || !msg.contains(&format!("at byte {position}")) {
                return Err(format!("error message does not name the segment and byte: {msg}"));
            }
            Ok(())
        }
        other => Err(format!("expected corruption, got: {other}")),
    }
}

/// Checks one flipped copy of the fixture. `open_must_fail`: the open validates the flipped
/// bytes (header, seal, active segment, or a sealed segment without an index), so it must
/// refuse; otherwise it may succeed but reading must then refuse.
fn check_flip(fx: &Fixture, fs: &SimFs, path: &Path, bit: u64, open_must_fail: bool) -> Result<(), String> {
    let byte = bit / 8;
    // (a) verify sees it.
    let report = verify(fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
    if report.is_clean() {
        return Err("verify reports the journal clean".into());
    }
    let named = report.damage.iter().chain(report.torn_tail.iter()).any(|d| d.segment == path);
    if !named {
        return Err(format!("verify's findings do not name the flipped segment: {:?} / {:?}", report.damage, report.torn_tail));
    }
    if report.torn_tail.is_some() {
        return Err(format!("verify calls the flip a torn tail: {:?}", report.torn_tail));
    }
    let before: Vec<Vec<u8>> = fx.segments.iter().map(|p| fs.read_file(p).unwrap_or_default()).collect();
    // (b), (c): open refuses, or it opens and reading refuses; nothing is cut or repaired.
    let outcome = match Journal::open_with(Arc::new(fs.clone()), dir(), opts()) {
        Err(e) => names_the_damage(&e, path, byte).map_err(|m| format!("open: {m}")),
        Ok(j) => {
            let report = j.open_report();
            if !report.torn_tails.is_empty() {
                Err(format!("open cut the flip as a torn tail: {:?}", report.torn_tails))
            } else if open_must_fail {
                Err("open accepted bytes it validates".into())
            } else {
                match j.read_vec(0, usize::MAX) {
                    Ok(got) if got.iter().map(|r| &r.payload).eq(fx.payloads.iter()) => {
                        Err("reading the damaged journal returned every record unchanged".into())
                    }
                    Ok(got) => Err(format!("reading the damaged journal returned {} records, some wrong", got.len())),
                    Err(e) => names_the_damage(&e, path, byte).map_err(|m| format!("read: {m}")),
                }
                .and_then(|()| {
                    // Reads that start past the damage may succeed, but only with true data.
                    for from in [10u64, 20, 29] {
                        if let Ok(got) = j.read_vec(from, usize::MAX) {
                            let want = &fx.payloads[from as usize..];
                            if got.len() != want.len() || got.iter().zip(want).any(|(r, w)| &r.payload != w) {
                                return Err(format!("read from {from} returned wrong records"));
                            }
                        }
                    }
                    // Point reads: the true record or an error naming the damage, never wrong bytes.
                    let mut refused = 0;
                    for (k, want) in fx.payloads.iter().enumerate() {
                        match j.read_one(k as u64, |r| Ok(r.payload.to_vec())) {
                            Ok(Some(got)) if got == *want => {}
                            Ok(other) => return Err(format!("read_one({k}) returned {:?} bytes, not the record", other.map(|g| g.len()))),
                            Err(e) => {
                                names_the_damage(&e, path, byte).map_err(|m| format!("read_one({k}): {m}"))?;
                                refused += 1;
                            }
                        }
                    }
                    if refused == 0 && region(&frames(&fx.fs.read_file(path).unwrap_or_default()), byte as usize) == Region::Record {
                        return Err("every point read succeeded although a record's frame is damaged".into());
                    }
                    Ok(())
                })
            }
        }
    };
    outcome?;
    for (p, b) in fx.segments.iter().zip(&before) {
        if fs.read_file(p).unwrap_or_default() != *b {
            return Err(format!("open changed {} (damage must be left as it is)", p.display()));
        }
    }
    if Vfs::exists(fs, &dir().join(RECOVERED_DIR_NAME)).unwrap_or(false) {
        return Err("open set bytes aside in recovered/ as if a crash had torn them".into());
    }
    Ok(())
}

fn fail_report(what: &str, flips: u64, failures: &[String]) -> String {
    let shown: Vec<&str> = failures.iter().take(FAILURES_SHOWN).map(String::as_str).collect();
    format!("{what}: {} of {flips} flips mishandled:\n{}", failures.len(), shown.join("\n"))
}

#[test]
fn point_reads_return_every_record_and_nothing_past_the_end() {
    let fx = build();
    let j = Journal::open_with(Arc::new(fx.fs.clone()), dir(), opts()).expect("open");
    for pass in 0..2 {
        for (k, want) in fx.payloads.iter().enumerate() {
            let got = j.read_one(k as u64, |r| Ok((r.offset, r.payload.to_vec()))).expect("read_one");
            assert_eq!(got, Some((k as u64, want.clone())), "pass {pass}, record {k}");
        }
    }
    for k in [fx.payloads.len() as u64, fx.payloads.len() as u64 + 1, u64::MAX] {
        assert_eq!(j.read_one(k, |_| Ok(())).expect("read_one past the end"), None, "record {k}");
    }
    // A record appended after the handle opened is read too.
    j.append(vec![NewRecord::scratch(b"late".to_vec())]).expect("append");
    let k = fx.payloads.len() as u64;
    assert_eq!(j.read_one(k, |r| Ok(r.payload.to_vec())).expect("read_one"), Some(b"late".to_vec()));
}

#[test]
fn every_bit_flip_in_a_segment_is_detected_never_returned_and_never_cut_as_torn() {
    let fx = build();
    let last = fx.segments.len() - 1;
    let (mut flips, mut failures) = (0u64, Vec::new());
    for (si, path) in fx.segments.iter().enumerate() {
        let bytes = fx.fs.read_file(path).expect("read segment");
        let frames = frames(&bytes);
        for bit in 0..bytes.len() as u64 * 8 {
            let fs = fx.fs.snapshot();
            fs.flip_bit(path, bit).expect("flip");
            flips += 1;
            let r = region(&frames, (bit / 8) as usize);
            // Open reads headers, seals and the whole active segment; the records of sealed
            // segments it takes on the word of their intact index, and reads check them.
            let open_must_fail = r != Region::Record || si == last;
            if let Err(e) = check_flip(&fx, &fs, path, bit, open_must_fail) {
                failures.push(format!("{} bit {bit} (byte {}, {r:?}): {e}", path.display(), bit / 8));
            }
        }
    }
    eprintln!("journal_bitflip: {flips} bit flips over {} segments", fx.segments.len());
    assert!(failures.is_empty(), "{}", fail_report("segment bit flips", flips, &failures));
}

#[test]
fn without_index_files_open_rejects_every_bit_flip_in_a_sealed_segment() {
    let fx = build();
    for p in &fx.segments {
        let idx = p.with_extension("idx");
        if Vfs::exists(&fx.fs, &idx).expect("stat") {
            Vfs::remove_file(&fx.fs, &idx).expect("remove index");
        }
    }
    let (mut flips, mut failures) = (0u64, Vec::new());
    for path in &fx.segments[..fx.segments.len() - 1] {
        let bytes = fx.fs.read_file(path).expect("read segment");
        let frames = frames(&bytes);
        for bit in 0..bytes.len() as u64 * 8 {
            let fs = fx.fs.snapshot();
            fs.flip_bit(path, bit).expect("flip");
            flips += 1;
            if let Err(e) = check_flip(&fx, &fs, path, bit, true) {
                let r = region(&frames, (bit / 8) as usize);
                failures.push(format!("{} bit {bit} (byte {}, {r:?}): {e}", path.display(), bit / 8));
            }
        }
    }
    eprintln!("journal_bitflip: {flips} bit flips in sealed segments without index files");
    assert!(failures.is_empty(), "{}", fail_report("sealed segment bit flips without an index", flips, &failures));
}

#[test]
fn a_damaged_index_file_is_rebuilt_and_reads_stay_correct() {
    let fx = build();
    let indexes: Vec<PathBuf> = fx.segments[..fx.segments.len() - 1].iter().map(|p| p.with_extension("idx")).collect();
    let (mut flips, mut failures) = (0u64, Vec::new());
    for idx in &indexes {
        let len = fx.fs.read_file(idx).expect("read index").len() as u64;
        for bit in 0..len * 8 {
            let fs = fx.fs.snapshot();
            fs.flip_bit(idx, bit).expect("flip");
            flips += 1;
            let check = || -> Result<(), String> {
                let before = verify(&fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
                if !before.is_clean() {
                    return Err(format!("a damaged index counts as damage: {:?}", before.damage));
                }
                let noted = before.index_notes.iter().any(|n| n.contains(&idx.display().to_string()));
                if !noted {
                    return Err(format!("verify does not note the damaged index: {:?}", before.index_notes));
                }
                let j = Journal::open_with(Arc::new(fs.clone()), dir(), opts()).map_err(|e| format!("open failed: {e}"))?;
                let report = j.open_report();
                if !report.torn_tails.is_empty() {
                    return Err(format!("open reports torn tails: {:?}", report.torn_tails));
                }
                for from in 0..fx.payloads.len() {
                    for limit in [1usize, 3, usize::MAX] {
                        let got = j.read_vec(from as u64, limit).map_err(|e| format!("read from {from} failed: {e}"))?;
                        let want = &fx.payloads[from..fx.payloads.len().min(from.saturating_add(limit))];
                        let offsets_ok = got.iter().enumerate().all(|(i, r)| r.offset == (from + i) as u64);
                        if got.len() != want.len() || !offsets_ok || got.iter().zip(want).any(|(r, w)| &r.payload != w) {
                            return Err(format!("read from {from} limit {limit} returned wrong records"));
                        }
                    }
                }
                drop(j);
                let after = verify(&fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
                if !after.is_clean() || !after.index_notes.is_empty() {
                    return Err(format!("the index was not rebuilt by the open: {:?}", after.index_notes));
                }
                Ok(())
            };
            if let Err(e) = check() {
                failures.push(format!("{} bit {bit}: {e}", idx.display()));
            }
        }
    }
    eprintln!("journal_bitflip: {flips} bit flips over {} index files", indexes.len());
    assert!(flips > 0);
    assert!(failures.is_empty(), "{}", fail_report("index bit flips", flips, &failures));
}

/// A journal whose active segment holds only its header, as a power cut right after a segment
/// roll leaves it (sealed segments before it hold the records).
fn journal_with_empty_active_segment() -> (SimFs, Vec<Vec<u8>>, PathBuf) {
    let payloads: Vec<Vec<u8>> = (0..12).map(|k| vec![k as u8 + 1; 900]).collect();
    let append_all = |fs: &SimFs| -> Vec<Vec<u8>> {
        let mut acked = Vec::new();
        if let Ok(j) = Journal::open_with(Arc::new(fs.clone()), dir(), opts()) {
            for p in &payloads {
                if j.append(vec![NewRecord::scratch(p.clone())]).is_err() {
                    break;
                }
                acked.push(p.clone());
            }
        }
        acked
    };
    let probe = SimFs::new(11);
    append_all(&probe);
    for k in 0..probe.ops() {
        let fs = SimFs::new(11);
        fs.inject(k, Fault::PowerCut);
        let acked = append_all(&fs);
        let survivor = fs.after_power_cut(k);
        let Ok(j) = Journal::open_with(Arc::new(survivor.clone()), dir(), opts()) else { continue };
        let segments = j.segment_paths();
        let active = segments.last().expect("a segment").clone();
        if segments.len() >= 2 && j.open_report().torn_tails.is_empty() && survivor.read_file(&active).map(|b| b.len()).ok() == Some(SEGMENT_HEADER_SIZE as usize) {
            let held = j.read_vec(0, usize::MAX).expect("read");
            assert!(held.len() >= acked.len());
            return (survivor, held.into_iter().map(|r| r.payload).collect(), active);
        }
    }
    panic!("no power cut left a journal whose active segment is only a header");
}

#[test]
fn a_bit_flip_in_the_header_of_an_empty_active_segment_is_corruption_not_a_torn_tail() {
    let mut failures = Vec::new();
    let mut flips = 0u64;
    // A store just created (one segment, no records yet), and a store whose newest segment
    // was created by a roll just before a power cut.
    let fresh = SimFs::new(5);
    drop(Journal::open_with(Arc::new(fresh.clone()), dir(), opts()).expect("create"));
    let fresh_seg = dir().join("00000000000000000000.seg");
    let (rolled, rolled_payloads, rolled_seg) = journal_with_empty_active_segment();
    for (name, base, payloads, path) in [("new store", &fresh, Vec::new(), fresh_seg), ("after a roll", &rolled, rolled_payloads, rolled_seg)] {
        assert_eq!(base.read_file(&path).expect("read").len(), SEGMENT_HEADER_SIZE as usize);
        for bit in 0..SEGMENT_HEADER_SIZE * 8 {
            let fs = base.snapshot();
            fs.flip_bit(&path, bit).expect("flip");
            flips += 1;
            let check = || -> Result<(), String> {
                let report = verify(&fs, dir()).map_err(|e| format!("verify failed: {e}"))?;
                if report.is_clean() {
                    return Err("verify reports the journal clean".into());
                }
                let verify_says = if report.torn_tail.is_some() { "verify calls it a torn tail" } else { "verify calls it damage" };
                match Journal::open_with(Arc::new(fs.clone()), dir(), Options { new_store_identity: None, ..opts() }) {
                    Err(e) => names_the_damage(&e, &path, bit / 8).map_err(|m| format!("open: {m}")).and_then(|()| {
                        if report.torn_tail.is_some() { Err(verify_says.to_owned()) } else { Ok(()) }
                    }),
                    Ok(j) => {
                        let r = j.open_report();
                        let got = j.read_vec(0, usize::MAX).map(|v| v.len()).unwrap_or(usize::MAX);
                        Err(format!(
                            "open succeeded: torn tails {:?}, created {}, store id {} ({}), {got} of {} records; {verify_says}",
                            r.torn_tails.iter().map(|t| (t.position, t.size_bytes)).collect::<Vec<_>>(),
                            r.created,
                            if j.store_id() == STORE_ID { "kept" } else { "REPLACED" },
                            origin_engine::segment::store_id_hex(&j.store_id()),
                            payloads.len()
                        ))
                    }
                }
            };
            if let Err(e) = check() {
                failures.push(format!("{name}: {} bit {bit}: {e}", path.display()));
            }
        }
    }
    eprintln!("journal_bitflip: {flips} bit flips in the headers of empty active segments");
    // Show some of each fixture's failures.
    let (fresh_failures, rolled_failures): (Vec<&String>, Vec<&String>) = failures.iter().partition(|f| f.starts_with("new store"));
    let shown: Vec<&str> = fresh_failures.iter().take(5).chain(rolled_failures.iter().take(5)).map(|s| s.as_str()).collect();
    assert!(
        failures.is_empty(),
        "header flips of an empty active segment: {} of {flips} flips mishandled ({} in the new store, {} after a roll):\n{}",
        failures.len(),
        fresh_failures.len(),
        rolled_failures.len(),
        shown.join("\n")
    );
}

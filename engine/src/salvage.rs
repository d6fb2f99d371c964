//! `origin journal salvage`: copy every readable record of a damaged journal into a new one,
//! and list what was lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::frame::FLAG_ZSTD;
use crate::journal::{Access, Durability, Journal, NewRecord, Options};
use crate::segment::{parse_segment_file_name, segment_file_name, SegmentHeader, StoreId, SEGMENT_HEADER_SIZE};
use crate::verify::{walk, Damage, Walked};
use crate::vfs::{OsFs, Vfs};

/// What salvage did.
#[derive(Clone, Debug)]
pub struct SalvageReport {
    /// The new journal.
    pub to: PathBuf,
    /// Records copied.
    pub records_copied: u64,
    /// Records skipped because an earlier copy of the same offset was already taken.
    pub duplicates_skipped: u64,
    /// Damaged regions, with the offsets lost where they are known.
    pub lost: Vec<Damage>,
    /// The torn tail left out, if any (never acknowledged, so nothing durable was lost).
    pub torn_tail: Option<Damage>,
    /// The new journal's epoch (the old one plus one): a salvaged store is a new lineage.
    pub epoch: u64,
    /// Where the store id came from.
    pub identity: Identity,
}

/// Where a salvage took the store id and epoch from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The first segment header that checks out.
    Header,
    /// No header checks out: the fields of those whose checksum fails but whose magic, format,
    /// length and base offset hold (the damage elsewhere in the header, as a flipped bit of its
    /// creation time), the value most of them give. A flip inside the id itself gives another
    /// id: the salvaged store is then taken for another store's copy, and its projections are
    /// rebuilt (nothing else is tied to the id yet).
    UncheckedHeader,
    /// No header could be read at all: a new random store id, epoch 0.
    New,
}

const BATCH_RECORDS: usize = 4096;

/// Salvages the journal in `from` into a new journal directory `to`, on the real file system.
pub fn salvage_dir(from: &Path, to: &Path) -> Result<SalvageReport> {
    salvage(Arc::new(OsFs), from, to)
}

/// Salvages through `vfs`. `to` must not hold a journal. Records keep their order and payload
/// and are renumbered densely from 0; the store id stays, the epoch goes up by one.
pub fn salvage(vfs: Arc<dyn Vfs>, from: &Path, to: &Path) -> Result<SalvageReport> {
    if from.components().eq(to.components()) {
        return Err(Error::Invalid(format!("{} is the journal salvaged: salvage writes a new journal elsewhere", to.display())));
    }
    // First pass, before anything in `to` is touched: identity (from the first readable
    // header, else see [`Identity`]).
    let first = crate::verify::verify(&*vfs, from)?;
    let (store_id, old_epoch, identity) = match (first.store_id, first.epoch) {
        (Some(id), Some(epoch)) => (id, epoch, Identity::Header),
        _ => match unchecked_identity(&*vfs, from)? {
            Some((id, epoch)) => (id, epoch, Identity::UncheckedHeader),
            None => {
                let mut id = [0u8; 16];
                getrandom::fill(&mut id).map_err(|e| Error::io("getrandom", from, std::io::Error::other(e.to_string())))?;
                (id, 0, Identity::New)
            }
        },
    };
    let epoch = old_epoch.saturating_add(1);
    let opts = Options {
        durability: Durability::Sync,
        access: Access::ReadWrite,
        new_store_identity: Some((store_id, epoch)),
        unfinished_ok: true,
        ..Options::default()
    };
    // `to`: absent, empty, or what a salvage stopped part way left there (marked unfinished,
    // its writer gone, nothing but a journal's files), cleared to start over.
    let made = !vfs.exists(to).map_err(|e| Error::io("stat", to, e))?;
    vfs.create_dir_all(to).map_err(|e| Error::io("create directory", to, e))?;
    // Held for the whole salvage: another started into it at once is refused, and leaves the
    // folder, which is that one's (empty yet, maybe), as it is.
    let _held = match crate::journal::hold_folder(&*vfs, to) {
        Ok(held) => held,
        Err(e @ Error::Invalid(_)) => return Err(e),
        Err(e) => return Err(remove_made(&*vfs, made, to, e)),
    };
    if !vfs.list_dir(to).map_err(|e| Error::io("list", to, e))?.is_empty() {
        crate::journal::take_over_unfinished(&*vfs, to)?.clear(&*vfs)?;
    }
    // Marked unfinished before anything is written, the mark removed once every record is
    // synced: a salvage stopped part way leaves a journal that neither opens nor verifies,
    // which could otherwise be put in the store's place holding part of its records.
    let mark = match crate::journal::mark_unfinished(&*vfs, to, &format!("a salvage of {}", from.display())) {
        Ok(mark) => mark,
        // A folder it made for nothing is removed, if nothing is in it (another salvage
        // started at once may be writing it); said with the failure if it cannot be.
        Err(e) => return Err(remove_made(&*vfs, made, to, e)),
    };
    let (copied, duplicates, report) = match copy(&vfs, from, to, opts) {
        Ok(c) => {
            mark.finish(&*vfs)?;
            c
        }
        Err(e) => {
            // What it wrote is no journal anyone asked for: `to` is left as it was found
            // (absent, or empty), its journal's files removed before the mark, so that a
            // cut here leaves it marked; if even that fails, both are said.
            return Err(match mark.clear(&*vfs) {
                Ok(()) => remove_made(&*vfs, made, to, e),
                Err(c) => cleanup_failed("remove what a failed salvage wrote in", to, c, &e),
            });
        }
    };
    Ok(SalvageReport {
        to: to.to_path_buf(),
        records_copied: copied,
        duplicates_skipped: duplicates,
        lost: report.damage,
        torn_tail: report.torn_tail,
        epoch,
        identity,
    })
}

/// A salvage's failure `e`, once the folder `to` it `made` is removed if nothing is in it
/// (anything there is another's, left as it is); if it cannot be, both are said.
fn remove_made(vfs: &dyn Vfs, made: bool, to: &Path, e: Error) -> Error {
    match made.then(|| vfs.remove_dir(to)) {
        Some(Err(c)) if c.raw_os_error() != Some(libc::ENOTEMPTY) && c.raw_os_error() != Some(libc::EEXIST) => {
            cleanup_failed("remove the folder a failed salvage made", to, c, &e)
        }
        _ => e,
    }
}

/// A salvage's failure `e` whose cleanup (`op` in `to`) failed too (`c`): both said.
fn cleanup_failed(op: &'static str, to: &Path, c: impl std::fmt::Display, e: &Error) -> Error {
    Error::io(op, to, std::io::Error::other(format!("{c} (the salvage failed: {e})")))
}

/// The second pass of [`salvage`]: every readable record of `from` appended to a new journal
/// in `to`; (records copied, duplicates skipped, the walk's report).
fn copy(vfs: &Arc<dyn Vfs>, from: &Path, to: &Path, opts: Options) -> Result<(u64, u64, crate::verify::VerifyReport)> {
    let out = Journal::open_with(vfs.clone(), to, opts)?;
    let mut batch = Vec::with_capacity(BATCH_RECORDS);
    let mut last: Option<u64> = None;
    let mut copied = 0u64;
    let mut duplicates = 0u64;
    let mut decode_buf = Vec::new();
    let flush = |batch: &mut Vec<NewRecord>| -> Result<()> {
        if !batch.is_empty() {
            out.append(std::mem::take(batch))?;
        }
        Ok(())
    };
    let report = walk(&**vfs, from, |w| {
        if let Walked::Record(f) = w {
            if last.is_some_and(|l| f.offset <= l) {
                duplicates += 1;
                return Ok(());
            }
            last = Some(f.offset);
            let payload = if f.flags & FLAG_ZSTD != 0 {
                crate::codec::decompress_into(f.payload, &mut decode_buf, f.offset)?;
                decode_buf.clone()
            } else {
                f.payload.to_vec()
            };
            batch.push(NewRecord::raw(f.kind, f.kind_version, payload));
            copied += 1;
            if batch.len() >= BATCH_RECORDS {
                flush(&mut batch)?;
            }
        }
        Ok(())
    })?;
    flush(&mut batch)?;
    Ok((copied, duplicates, report))
}

/// The store id and epoch that most segment headers failing their checksum give, counting
/// only those whose magic, format version, length and base offset (against the file's name)
/// hold ([`Identity::UncheckedHeader`]).
fn unchecked_identity(vfs: &dyn Vfs, dir: &Path) -> Result<Option<(StoreId, u64)>> {
    let mut seen: Vec<((StoreId, u64), usize)> = Vec::new();
    let mut bases: Vec<u64> = vfs.list_dir(dir).map_err(|e| Error::io("list", dir, e))?.iter().filter_map(|n| parse_segment_file_name(n)).collect();
    bases.sort_unstable();
    for base in bases {
        let path = dir.join(segment_file_name(base));
        let file = vfs.open_read(&path).map_err(|e| Error::io("open", &path, e))?;
        if file.len().map_err(|e| Error::io("stat", &path, e))? < SEGMENT_HEADER_SIZE {
            continue;
        }
        let mut b = [0u8; SEGMENT_HEADER_SIZE as usize];
        file.read_exact_at(&mut b, 0).map_err(|e| Error::io("read", &path, e))?;
        let Ok(h) = SegmentHeader::decode_unchecked(&b, &path) else { continue };
        if h.base_offset != base {
            continue;
        }
        let key = (h.store_id, h.epoch);
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => seen.push((key, 1)),
        }
    }
    // The most given; of as many, the earliest segment's.
    let mut best: Option<((StoreId, u64), usize)> = None;
    for &(k, n) in &seen {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((k, n));
        }
    }
    Ok(best.map(|(k, _)| k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;

    #[test]
    fn salvage_copies_every_readable_record_and_names_what_was_lost() {
        let fs = SimFs::new(9);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options { segment_size_bytes_max: 4096, ..Options::default() })
            .expect("open");
        for i in 0..60u8 {
            j.append(vec![NewRecord::scratch(vec![i; 200])]).expect("append");
        }
        let paths = j.segment_paths();
        drop(j);
        // Damage one record in the middle of the second segment.
        let seg = &paths[1];
        fs.flip_bit(seg, (64 + 40) * 8).expect("flip");
        let r = salvage(Arc::new(fs.clone()), dir, Path::new("/b/journal")).expect("salvage");
        assert_eq!(r.lost.len(), 1, "{:?}", r.lost);
        assert_eq!(r.lost[0].segment, *seg);
        assert_eq!(r.records_copied, 59);
        let (a, b) = r.lost[0].offsets_lost.expect("offsets known");
        assert_eq!(a, b, "one record lost");
        let out = Journal::open_with(Arc::new(fs.clone()), Path::new("/b/journal"), Options::default()).expect("open salvaged");
        let recs = out.read_vec(0, usize::MAX).expect("read");
        let firsts: Vec<u8> = recs.iter().map(|r| r.payload[0]).collect();
        let want: Vec<u8> = (0..60u8).filter(|&i| u64::from(i) != a).collect();
        assert_eq!(firsts, want);
        assert_eq!(out.epoch(), 1);
    }

    /// A journal of one segment whose header fails its checksum (a flipped bit of its creation
    /// time, which nothing else reads) is salvaged whole under its store id; one whose header is
    /// not readable at all (its magic flipped) is salvaged whole under a new id. Either header's
    /// damage is its 64 bytes, not the segment.
    #[test]
    fn a_journal_whose_only_header_is_damaged_is_salvaged_whole() {
        for (bit, identity) in [(50 * 8, Identity::UncheckedHeader), (3, Identity::New)] {
            let fs = SimFs::new(11);
            let dir = Path::new("/a/journal");
            let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
            for i in 0..30u8 {
                j.append(vec![NewRecord::scratch(vec![i; 100])]).expect("append");
            }
            let (id, seg) = (j.store_id(), j.segment_paths()[0].clone());
            drop(j);
            fs.flip_bit(&seg, bit).expect("flip");
            let r = salvage(Arc::new(fs.clone()), dir, Path::new("/b/journal")).expect("salvage");
            assert_eq!((r.records_copied, r.identity), (30, identity), "{:?}", r.lost);
            assert_eq!(r.lost.len(), 1, "{:?}", r.lost);
            assert_eq!((r.lost[0].position, r.lost[0].size_bytes, r.lost[0].offsets_lost), (0, 64, None), "{:?}", r.lost);
            let out = Journal::open_with(Arc::new(fs.clone()), Path::new("/b/journal"), Options::default()).expect("open salvaged");
            assert_eq!(out.store_id() == id, identity == Identity::UncheckedHeader);
            let firsts: Vec<u8> = out.read_vec(0, usize::MAX).expect("read").iter().map(|r| r.payload[0]).collect();
            assert_eq!(firsts, (0..30u8).collect::<Vec<u8>>());
        }
    }

    /// A record that passes its checksum but whose payload does not decode (a kind this build
    /// reads, its bytes not that kind's) is damage to verify, named by segment, byte and offset,
    /// and salvage leaves it out (every other record copied); a record of a kind this build
    /// does not read is another build's and is neither.
    #[test]
    fn a_record_that_does_not_decode_is_damage_and_salvage_leaves_it_out() {
        let fs = SimFs::new(12);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
        j.append(vec![NewRecord::scratch(vec![1; 10])]).expect("append");
        j.append(vec![NewRecord::raw(crate::record::RecordKind::Remembered as u8, 1, vec![0xff; 40])]).expect("append");
        j.append(vec![NewRecord::raw(77, 1, vec![0xff; 40])]).expect("append");
        j.append(vec![NewRecord::scratch(vec![3; 10])]).expect("append");
        let seg = j.segment_paths()[0].clone();
        drop(j);
        let v = crate::verify::verify(&fs, dir).expect("verify");
        assert_eq!(v.damage.len(), 1, "{:?}", v.damage);
        let d = &v.damage[0];
        assert_eq!((&d.segment, d.offsets_lost), (&seg, Some((1, 1))), "{d:?}");
        assert!(d.position > 64 && d.reason.starts_with("record at offset 1 passes its checksum but does not decode: "), "{d:?}");
        let r = salvage(Arc::new(fs.clone()), dir, Path::new("/b/journal")).expect("salvage");
        assert_eq!((r.records_copied, r.lost.clone()), (3, v.damage.clone()));
        let out = Journal::open_with(Arc::new(fs.clone()), Path::new("/b/journal"), Options::default()).expect("open salvaged");
        let kinds: Vec<u8> = out.read_vec(0, usize::MAX).expect("read").iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [250, 77, 250]);
    }

    /// Rewrites the frame of record `offset` in `seg` with `flags` (the same length: its bytes
    /// and checksum those of a frame written so).
    fn reflag(fs: &SimFs, seg: &Path, offset: u64, flags: u16) {
        let mut bytes = fs.read_file(seg).expect("read");
        let mut found = None;
        crate::recovery::scan_frames(&bytes, 0, crate::segment::SEGMENT_HEADER_SIZE, 0, None, |f, at| {
            if f.offset == offset {
                found = Some((at as usize, f.frame_len, f.time_unix_ms, f.kind, f.kind_version, f.payload.to_vec()));
            }
        });
        let (at, len, time, kind, version, payload) = found.expect("the frame");
        let mut frame = Vec::new();
        crate::frame::encode_frame(&mut frame, offset, time, kind, version, flags, &payload);
        assert_eq!(frame.len(), len);
        bytes[at..at + len].copy_from_slice(&frame);
        fs.write_file(seg, &bytes).expect("write");
    }

    /// Whatever a read of the journal cannot pass is damage, whatever the record's kind, and
    /// salvage leaves it out: frame flags the journal does not know, a payload marked
    /// compressed that does not decompress (of a kind this build does not know, which a read
    /// decompresses all the same). A newer build's kind or version of a kind is not damage, and
    /// salvage copies it; a read of it says a newer version wrote it (not damage either). An
    /// `ingested` record whose raw lines are not a zstd frame decodes, and fails where its raw
    /// lines are read, naming its offset.
    #[test]
    fn what_a_read_cannot_pass_is_damage_and_a_newer_builds_record_is_not() {
        use crate::record::{Body, Ingested, RecordKind};
        let ingested = |raw_zstd: Vec<u8>| {
            let body = Body::Ingested(Ingested {
                source: "claude-code".into(),
                path: "/p".into(),
                mirror: "claude-code/p".into(),
                file_version: 1,
                byte_start: 0,
                byte_end: 5,
                line_start: 1,
                line_end: 2,
                prefix_hash: 7,
                raw_zstd,
                events: Vec::new(),
                sessions: Vec::new(),
                malformed_lines: 0,
                cut_lines: 0,
                state: b"{}".to_vec(),
                superseded: Vec::new(),
            });
            NewRecord::new(&body).expect("record")
        };
        let fs = SimFs::new(13);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
        j.append(vec![ingested(zstd::encode_all(&b"line\n"[..], 0).expect("zstd"))]).expect("append"); // 0: whole
        j.append(vec![ingested(vec![1, 2, 3])]).expect("append"); // 1: raw lines that are no zstd
        j.append(vec![NewRecord::raw(77, 1, vec![0x41; 100])]).expect("append"); // 2: marked compressed below
        j.append(vec![NewRecord::raw(77, 1, vec![0x42; 100])]).expect("append"); // 3: a flag no build sets
        j.append(vec![NewRecord::raw(RecordKind::Remembered as u8, 9, vec![0x43; 100])]).expect("append"); // 4: a newer version
        j.append(vec![NewRecord::raw(78, 1, vec![0x44; 100])]).expect("append"); // 5: a newer kind
        let seg = j.segment_paths()[0].clone();
        drop(j);
        reflag(&fs, &seg, 2, crate::frame::FLAG_ZSTD);
        reflag(&fs, &seg, 3, 0x2);
        let v = crate::verify::verify(&fs, dir).expect("verify");
        let lost: Vec<Option<(u64, u64)>> = v.damage.iter().map(|d| d.offsets_lost).collect();
        assert_eq!(lost, [Some((2, 2)), Some((3, 3))], "{:?}", v.damage);
        assert!(v.damage.iter().all(|d| d.undecodable), "{:?}", v.damage);
        assert!(v.damage[1].reason.contains("unknown frame flags 0x2"), "{:?}", v.damage[1]);
        let r = salvage(Arc::new(fs.clone()), dir, Path::new("/b/journal")).expect("salvage");
        assert_eq!(r.records_copied, 4);
        let out = Journal::open_with(Arc::new(fs.clone()), Path::new("/b/journal"), Options::default()).expect("open salvaged");
        let recs = out.read_vec(0, usize::MAX).expect("read");
        let kinds: Vec<(u8, u8)> = recs.iter().map(|r| (r.kind, r.kind_version)).collect();
        let ingested = (RecordKind::Ingested as u8, RecordKind::Ingested.current_version());
        assert_eq!(kinds, [ingested, ingested, (RecordKind::Remembered as u8, 9), (78, 1)]);
        let newer = crate::codec::decode(recs[2].kind, recs[2].kind_version, &recs[2].payload, recs[2].offset).expect_err("a newer version");
        assert!(!newer.is_corruption() && newer.to_string().contains("a newer version wrote it"), "{newer}");
        let view = |i: usize| crate::codec::IngestedView::open(recs[i].kind_version, &recs[i].payload, recs[i].offset).expect("opens");
        assert_eq!(view(0).raw_lines().expect("whole"), b"line\n");
        let raw = view(1).raw_lines().expect_err("not a zstd frame");
        assert!(raw.is_corruption() && raw.to_string().contains("record at offset 1 could not be decoded: its raw lines do not decompress"), "{raw}");
    }

    /// A simulated disk seeded `seed` holding, in `/a/journal`, `records` scratch records of
    /// `size` bytes each (the first byte their number), in segments of `segment` bytes.
    fn journal_of(seed: u64, records: u8, size: usize, segment: u64) -> SimFs {
        let fs = SimFs::new(seed);
        let opts = Options { segment_size_bytes_max: segment, ..Options::default() };
        let j = Journal::open_with(Arc::new(fs.clone()), Path::new("/a/journal"), opts).expect("open");
        for i in 0..records {
            j.append(vec![NewRecord::scratch(vec![i; size])]).expect("append");
        }
        fs
    }

    /// A salvage cut short at any of its calls (killed, a power cut) leaves a journal that
    /// either holds every record it copies, or is refused as unfinished by an open and by
    /// verify (it verified clean holding part of the records, and could be put in the store's
    /// place), or nothing; a salvage run again there finishes it.
    #[test]
    fn a_salvage_cut_short_leaves_a_journal_marked_unfinished_or_whole() {
        let (fs, dir, to) = (journal_of(15, 40, 200, 4096), Path::new("/a/journal"), Path::new("/b/journal"));
        let probe = fs.snapshot();
        let start = probe.ops();
        salvage(Arc::new(probe.clone()), dir, to).expect("salvage");
        let calls = probe.ops() - start;
        let (mut unfinished, mut whole) = (0, 0);
        for k in 0..calls {
            let run = fs.snapshot();
            run.inject(run.ops() + k, crate::sim::Fault::PowerCut);
            let _ = salvage(Arc::new(run.clone()), dir, to);
            let after = run.after_power_cut(k * 7 + 1);
            // Read-only: a read-write open would make a journal where there is none.
            let open = Journal::open_with(Arc::new(after.clone()), to, Options { access: Access::ReadOnly, ..Options::default() });
            match open {
                Err(Error::Unfinished { .. }) => {
                    unfinished += 1;
                    assert!(matches!(crate::verify::verify(&after, to), Err(Error::Unfinished { .. })), "verify at call {k}");
                }
                Err(Error::NoJournal { .. }) => {}
                Ok(j) => {
                    whole += 1;
                    assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 40, "a journal that opens holds every record (call {k})");
                }
                Err(e) => panic!("power cut at salvage call {k}: {e}"),
            }
            if after.exists(to).expect("stat") && crate::journal::unfinished(&after, to).is_none() {
                continue;
            }
            salvage(Arc::new(after.clone()), dir, to).unwrap_or_else(|e| panic!("salvage again after a cut at call {k}: {e}"));
            let j = Journal::open_with(Arc::new(after.clone()), to, Options::default()).expect("open");
            assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 40, "call {k}");
        }
        assert!(unfinished > 0 && whole > 0, "cuts fell both before and after the end ({unfinished}, {whole})");
    }

    /// A salvage into a folder it would start over in never removes what it did not write: a
    /// stopped salvage's mark beside a person's file, a person's own file named like the mark,
    /// a salvage still running (its mark held), or the journal salvaged itself, are refused
    /// and left as they are.
    #[test]
    fn a_salvage_starts_over_only_where_a_stopped_salvage_left_nothing_else() {
        let (fs, dir, to) = (journal_of(16, 10, 100, Options::default().segment_size_bytes_max), Path::new("/a/journal"), Path::new("/b/journal"));
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let write = |path: &Path, bytes: &[u8]| {
            fs.create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs.create_new(path).expect("create").write_all_at(bytes, 0).expect("write");
        };
        // A stopped salvage's mark, and a person's file beside it.
        drop(crate::journal::mark_unfinished(&fs, to, "a salvage of /a/journal").expect("mark"));
        write(&to.join("thesis.txt"), b"mine");
        let e = salvage(vfs.clone(), dir, to).expect_err("a person's file is there");
        assert!(e.to_string().contains("thesis.txt"), "{e}");
        assert!(fs.exists(&to.join("thesis.txt")).expect("stat") && crate::journal::unfinished(&fs, to).is_some());
        fs.remove_all(Path::new("/b")).expect("clean");
        // A person's file named like the mark (not one): not empty, refused.
        write(&to.join(crate::journal::UNFINISHED_FILE_NAME), b"my list of unfinished things");
        write(&to.join(crate::segment::segment_file_name(0)), b"a file of mine");
        salvage(vfs.clone(), dir, to).expect_err("not a salvage's folder");
        assert_eq!(fs.list_dir(to).expect("list").len(), 2);
        fs.remove_all(Path::new("/b")).expect("clean");
        // A salvage still running there (its mark held).
        let running = crate::journal::mark_unfinished(&fs, to, "a salvage of /a/journal").expect("mark");
        write(&to.join(crate::segment::segment_file_name(0)), b"being written");
        let e = salvage(vfs.clone(), dir, to).expect_err("running");
        assert!(e.to_string().contains("being written now"), "{e}");
        assert_eq!(fs.list_dir(to).expect("list").len(), 2);
        drop(running);
        // Its writer gone: started over, and finished.
        let r = salvage(vfs.clone(), dir, to).expect("salvage over a stopped one");
        assert_eq!(r.records_copied, 10);
        assert!(crate::journal::unfinished(&fs, to).is_none());
        // Into the journal salvaged.
        salvage(vfs.clone(), dir, dir).expect_err("into itself");
        assert_eq!(Journal::open_with(vfs.clone(), dir, Options::default()).expect("open").read_vec(0, usize::MAX).expect("read").len(), 10);
    }

    /// A salvage starting over where one stopped, itself cut short at any of its calls, leaves
    /// the folder still marked unfinished, or a whole journal: the mark goes after the files it
    /// marks.
    #[test]
    fn a_salvage_starting_over_cut_short_leaves_the_folder_marked_or_whole() {
        let (fs, dir, to) = (journal_of(17, 30, 200, 4096), Path::new("/a/journal"), Path::new("/b/journal"));
        // A stopped salvage's folder: a whole copy, marked.
        salvage(Arc::new(fs.clone()), dir, to).expect("salvage");
        drop(crate::journal::mark_unfinished(&fs, to, "a salvage of /a/journal").expect("mark"));
        let probe = fs.snapshot();
        let start = probe.ops();
        salvage(Arc::new(probe.clone()), dir, to).expect("starting over");
        let calls = probe.ops() - start;
        for k in 0..calls {
            let run = fs.snapshot();
            run.inject(run.ops() + k, crate::sim::Fault::PowerCut);
            let _ = salvage(Arc::new(run.clone()), dir, to);
            let after = run.after_power_cut(k * 11 + 3);
            let marked = crate::journal::unfinished(&after, to).is_some();
            let opened = Journal::open_with(Arc::new(after.clone()), to, Options { access: Access::ReadOnly, ..Options::default() });
            match opened {
                Ok(j) => assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 30, "cut at call {k}: a journal that opens is whole"),
                Err(Error::Unfinished { .. }) => assert!(marked),
                Err(Error::NoJournal { .. }) => {}
                Err(e) => panic!("cut at call {k}: {e}"),
            }
        }
    }

    /// A salvage into a folder another run holds (a salvage or a replay writing it) is
    /// refused, and leaves the folder as it is: two started at once wrote one journal holding
    /// both copies, each saying it had copied the records.
    #[test]
    fn a_salvage_into_a_folder_another_run_holds_is_refused_and_leaves_it() {
        let fs = SimFs::new(15);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
        j.append((0..20u8).map(|i| NewRecord::scratch(vec![i; 100])).collect()).expect("append");
        drop(j);
        let to = Path::new("/b/journal");
        fs.create_dir_all(to).expect("mkdir");
        let held = crate::journal::hold_folder(&fs, to).expect("hold").expect("held");
        let e = salvage(Arc::new(fs.clone()), dir, to).expect_err("another run holds it");
        assert!(e.to_string().contains("is being written by another process"), "{e}");
        assert!(fs.list_dir(to).expect("list").is_empty());
        drop(held);
        assert_eq!(salvage(Arc::new(fs.clone()), dir, to).expect("salvage once let go").records_copied, 20);
    }

    /// A salvage that fails part way (the disk full as it writes the new journal, or a sync
    /// failing: each write and file sync in turn) leaves its folder as it found it: absent, or
    /// empty, so that it can be run again there.
    #[test]
    fn a_salvage_that_fails_leaves_its_folder_as_it_found_it() {
        let fs = SimFs::new(14);
        let dir = Path::new("/a/journal");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).expect("open");
        for i in 0..20u8 {
            j.append(vec![NewRecord::scratch(vec![i; 100])]).expect("append");
        }
        drop(j);
        for existed in [false, true] {
            let to = Path::new("/b/journal");
            if existed {
                fs.create_dir_all(to).expect("mkdir");
            }
            // Every write (the disk full there) and every file sync (failing there) a salvage
            // makes, its mark's first among them, found on a copy of the machine.
            let probe = fs.snapshot();
            let from = probe.ops() as usize;
            salvage(Arc::new(probe.clone()), dir, to).expect("salvage on the copy");
            let calls: Vec<(usize, crate::sim::Fault)> = probe.kinds()[from..]
                .iter()
                .enumerate()
                .filter_map(|(i, k)| match *k {
                    "write" => Some((i, crate::sim::Fault::DiskFull)),
                    "sync_data" => Some((i, crate::sim::Fault::SyncFails)),
                    _ => None,
                })
                .collect();
            assert!(calls.len() >= 6, "{calls:?}");
            for (at, fault) in calls {
                fs.inject(fs.ops() + at as u64, fault);
                salvage(Arc::new(fs.clone()), dir, to).expect_err("the call fails");
                assert_eq!(fs.exists(to).expect("stat"), existed, "{fault:?} at call {at}");
                if existed {
                    assert!(fs.list_dir(to).expect("list").is_empty(), "{fault:?} at call {at}: {:?}", fs.list_dir(to));
                }
            }
            salvage(Arc::new(fs.clone()), dir, to).expect("salvaged once there is room");
            let _ = fs.remove_all(Path::new("/b"));
        }
    }
}

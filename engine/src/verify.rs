//! Reading a whole journal without trusting anything: `origin journal verify`, and the walk
//! that salvage uses to copy every readable record.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::frame::{check_frame, Check, FrameView, KIND_SEAL};
use crate::index::{decode_index, INDEX_SUFFIX};
use crate::journal::LOCK_FILE_NAME;
use crate::record::RecordKind;
use crate::recovery::{classify_tail, find_next_valid, scan_frames, Stop, Tail};
use crate::segment::{parse_segment_file_name, SegmentHeader, StoreId, SEGMENT_HEADER_SIZE};
use crate::tip::{all_segments_gone, read_tip, segments_gone, tip_path, TipFile};
use crate::vfs::{LockMode, OsFs, Vfs};

/// Damage found: never skipped silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The segment file.
    pub segment: PathBuf,
    /// Byte position in it.
    pub position: u64,
    /// What is wrong.
    pub reason: String,
    /// Bytes from the damage to the next readable frame (or the end of the segment).
    pub size_bytes: u64,
    /// Offsets lost, if the records around the damage tell: first and last, inclusive.
    pub offsets_lost: Option<(u64, u64)>,
    /// A record whose frame checks out and whose payload does not decode: the frames around
    /// it are whole, so the journal takes writes after it (a read of it fails).
    pub undecodable: bool,
}

/// One segment as verify saw it.
#[derive(Clone, Debug)]
pub struct SegmentReport {
    /// Its file.
    pub path: PathBuf,
    /// Base offset from its name.
    pub base: u64,
    /// Records read.
    pub records: u64,
    /// File size.
    pub bytes: u64,
    /// True if it ends with a seal.
    pub sealed: bool,
}

/// What `verify` found.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// The journal directory.
    pub dir: PathBuf,
    /// Store id (of the first readable header).
    pub store_id: Option<StoreId>,
    /// Epoch.
    pub epoch: Option<u64>,
    /// Every segment, in order.
    pub segments: Vec<SegmentReport>,
    /// Records read in all.
    pub records: u64,
    /// Bytes of segment files.
    pub bytes: u64,
    /// First record offset read.
    pub first_offset: Option<u64>,
    /// Offset after the last record read.
    pub next_offset: Option<u64>,
    /// Corruption, in order.
    pub damage: Vec<Damage>,
    /// A torn tail (a crash cut the last write): the next read-write open cuts it.
    pub torn_tail: Option<Damage>,
    /// Index files that are missing, unreadable or stale (not damage: they are rebuilt).
    pub index_notes: Vec<String>,
    /// Segments left over by an interrupted compaction (covered by the segment before).
    pub leftovers: Vec<PathBuf>,
    /// A `TIP` that does not read or was written for another store or epoch (not damage: the
    /// next read-write open writes it again), said.
    pub tip_note: Option<String>,
}

impl Damage {
    /// True for a segment file that is gone (`TIP` names it; the walk found no such file).
    pub fn is_file_gone(&self, report: &VerifyReport) -> bool {
        report.segments.iter().all(|s| s.path != self.segment)
    }
}

impl VerifyReport {
    /// True when nothing is damaged and no tail is torn.
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty() && self.torn_tail.is_none()
    }
}

/// What the walk hands its visitor.
pub enum Walked<'a> {
    /// A readable record frame.
    Record(&'a FrameView<'a>),
    /// Damage (also collected in the report).
    Damage(&'a Damage),
}

/// Verifies the journal in `dir` on the real file system.
pub fn verify_dir(dir: &Path) -> Result<VerifyReport> {
    verify(&OsFs, dir)
}

/// Verifies the journal in `dir` through `vfs`. A journal a salvage or replay did not finish
/// is refused ([`Error::Unfinished`]): its records check out, and are not all there.
pub fn verify(vfs: &dyn Vfs, dir: &Path) -> Result<VerifyReport> {
    crate::journal::refuse_unfinished(vfs, dir)?;
    walk(vfs, dir, |_| Ok(()))
}

/// Reads every segment of the journal in `dir`, checking every header and frame, and every
/// record's payload of a kind this build reads, and passes every readable record and every
/// damage to `visit`, in order. After damage it looks for the next readable frame and goes on.
/// Errors only for I/O that stops the walk itself.
pub fn walk(vfs: &dyn Vfs, dir: &Path, visit: impl FnMut(Walked<'_>) -> Result<()>) -> Result<VerifyReport> {
    walk_inner(vfs, dir, true, Payloads::Decoded, visit)
}

/// Whether a walk reads records' payloads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Payloads {
    /// Every record is read as a read of the journal reads it (its frame's flags, its payload
    /// decompressed) and, of a kind and version this build reads, decoded ([`unreadable`]):
    /// one that passes its checksum and cannot be read so (written by a faulty build, or by
    /// memory that flipped a bit before the checksum was taken) is damage, at its frame, and is
    /// not passed on as a record. (Every read that reaches such a record stops there.)
    Decoded,
    /// Frames are checked, payloads are not read (compaction, which copies frames as they are).
    Unread,
}

/// Why a record that passed its checksum cannot be read, if so: its frame's flags are not the
/// journal's, or its payload does not decompress (any kind: every read of the journal
/// decompresses every record it passes), or, of a kind and version this build reads, does not
/// decode. A kind or a version this build does not read is a newer build's record, not damage.
/// (An `ingested` record's raw lines, a zstd frame of their own with its own checksum, are
/// checked where they are read: `sources`, a mirror written again.)
fn unreadable(f: &FrameView<'_>, scratch: &mut Vec<u8>) -> Option<String> {
    let checked = crate::journal::to_record(f, scratch).and_then(|r| match RecordKind::from_u8(f.kind) {
        // Opaque bytes decode as they are.
        Some(RecordKind::Scratch) | None => Ok(()),
        Some(k) if !k.reads_version(f.kind_version) => Ok(()),
        Some(_) => r.decode().map(drop),
    });
    match checked {
        Ok(()) => None,
        Err(Error::Decode { reason, .. }) => Some(reason),
        Err(e) => Some(e.to_string()),
    }
}

/// [`walk`], for a caller that already holds the store's exclusive lock (`lock_last` false).
pub(crate) fn walk_inner(
    vfs: &dyn Vfs,
    dir: &Path,
    lock_last: bool,
    payloads: Payloads,
    mut visit: impl FnMut(Walked<'_>) -> Result<()>,
) -> Result<VerifyReport> {
    if !vfs.exists(dir).map_err(|e| Error::io("stat", dir, e))? {
        return Err(Error::NoJournal { dir: dir.to_path_buf() });
    }
    let lock_path = dir.join(LOCK_FILE_NAME);
    let lock = || vfs.lock(&lock_path, LockMode::Shared).map_err(|e| crate::journal::reader_lock_refused(vfs, dir, e));
    // The segment files as one moment saw them, under the shared lock (a compaction, which
    // holds the exclusive lock, replaces and removes files: a listing taken while it runs, or
    // before it, would name files gone by the time they are read). Every segment but the last
    // is mapped then, the last opened: what they hold stays readable, removed or not.
    let (bases, maps, last_file, tip) = {
        let _lock = if lock_last { Some(lock()?) } else { None };
        let names = vfs.list_dir(dir).map_err(|e| Error::io("list", dir, e))?;
        let mut bases: Vec<u64> = names.iter().filter_map(|n| parse_segment_file_name(n)).collect();
        bases.sort_unstable();
        let tip = read_tip(vfs, dir);
        let Some((&last, sealed)) = bases.split_last() else {
            return Err(all_segments_gone(dir, &tip).unwrap_or_else(|| Error::NoJournal { dir: dir.to_path_buf() }));
        };
        let mut maps = Vec::with_capacity(sealed.len());
        for &base in sealed {
            let path = dir.join(crate::segment::segment_file_name(base));
            let file = vfs.open_read(&path).map_err(|e| Error::io("open", &path, e))?;
            maps.push(file.map().map_err(|e| Error::io("map", &path, e))?);
        }
        let path = dir.join(crate::segment::segment_file_name(last));
        let last_file = vfs.open_read(&path).map_err(|e| Error::io("open", &path, e))?;
        (bases, maps, last_file, tip)
    };
    // Each map is let go once its segment is walked.
    let mut maps = maps.into_iter();
    let mut report = VerifyReport { dir: dir.to_path_buf(), ..Default::default() };
    let mut scratch = Vec::new();
    // Every journal starts at offset 0 (see `Journal::open`).
    let mut expected: u64 = 0;
    let count = bases.len();
    for (i, base) in bases.into_iter().enumerate() {
        let last = i + 1 == count;
        let path = dir.join(crate::segment::segment_file_name(base));
        let bytes: Vec<u8>;
        let mapped;
        let data: &[u8] = if last {
            // The last segment may be growing: read it under the shared lock, so no writer is
            // mid-append and no torn tail is being cut while it is read.
            let _lock = if lock_last { Some(lock()?) } else { None };
            let len = last_file.len().map_err(|e| Error::io("stat", &path, e))?;
            bytes = {
                let mut b = vec![0u8; len as usize];
                last_file.read_exact_at(&mut b, 0).map_err(|e| Error::io("read", &path, e))?;
                b
            };
            &bytes
        } else {
            mapped = maps.next().ok_or_else(|| Error::Invalid(format!("segment {} was not mapped", path.display())))?;
            &mapped
        };
        report.bytes += data.len() as u64;
        let mut seg = SegmentReport { path: path.clone(), base, records: 0, bytes: data.len() as u64, sealed: false };

        let damage = |report: &mut VerifyReport, d: Damage, visit: &mut dyn FnMut(Walked<'_>) -> Result<()>| -> Result<()> {
            visit(Walked::Damage(&d))?;
            report.damage.push(d);
            Ok(())
        };

        let header = SegmentHeader::decode(data, &path);
        match &header {
            Ok(h) => {
                if h.base_offset != base {
                    damage(
                        &mut report,
                        Damage {
                            segment: path.clone(),
                            position: 40,
                            reason: format!("header says base offset {}, file name says {base}", h.base_offset),
                            size_bytes: 8,
                            offsets_lost: None,
                            undecodable: false,
                        },
                        &mut visit,
                    )?;
                }
                match (report.store_id, report.epoch) {
                    (None, _) => {
                        report.store_id = Some(h.store_id);
                        report.epoch = Some(h.epoch);
                    }
                    (Some(id), Some(ep)) if id != h.store_id || ep != h.epoch => damage(
                        &mut report,
                        Damage {
                            segment: path.clone(),
                            position: 16,
                            reason: "segment belongs to another store or epoch".into(),
                            size_bytes: 24,
                            offsets_lost: None,
                            undecodable: false,
                        },
                        &mut visit,
                    )?,
                    _ => {}
                }
            }
            Err(e) => {
                // Under the disk model a header that reached the disk is whole: only a file shorter than
                // a header, or all zeros, is a creation cut short (the same rule as open).
                let empty_tail = last && (data.len() < SEGMENT_HEADER_SIZE as usize || data.iter().all(|&b| b == 0));
                let reason = match e {
                    Error::Corrupt { reason, .. } => reason.clone(),
                    other => other.to_string(),
                };
                if empty_tail {
                    let d = Damage { segment: path.clone(), position: 0, reason, size_bytes: data.len() as u64, offsets_lost: None, undecodable: false };
                    // A segment whose creation a crash cut short: it holds no records.
                    report.torn_tail = Some(d);
                    report.segments.push(seg);
                    continue;
                }
                // The header alone: the frames after it are checked on their own, and read on.
                let size_bytes = SEGMENT_HEADER_SIZE.min(data.len() as u64);
                let reason = format!("{reason} (the records after it are read on)");
                damage(&mut report, Damage { segment: path.clone(), position: 0, reason, size_bytes, offsets_lost: None, undecodable: false }, &mut visit)?;
            }
        }

        // Offsets continue from the segment before, unless this one is a compaction leftover.
        let mut next = match expected {
            e if base < e => {
                if let Ok((_, n)) = crate::journal::find_seal(data, &path) {
                    if n <= e {
                        report.leftovers.push(path.clone());
                        report.segments.push(seg);
                        continue;
                    }
                }
                damage(
                    &mut report,
                    Damage {
                        segment: path.clone(),
                        position: 0,
                        reason: format!("segment starts at offset {base}, inside the segment before (which ends at {e})"),
                        size_bytes: 0,
                        offsets_lost: None,
                        undecodable: false,
                    },
                    &mut visit,
                )?;
                base
            }
            e if base > e => {
                damage(
                    &mut report,
                    Damage {
                        segment: path.clone(),
                        position: 0,
                        reason: if e == 0 {
                            crate::journal::misplaced_segment(base, 0)
                        } else {
                            format!("offsets {e} to {} are missing between segments", base - 1)
                        },
                        size_bytes: 0,
                        offsets_lost: Some((e, base - 1)),
                        undecodable: false,
                    },
                    &mut visit,
                )?;
                base
            }
            _ => base,
        };
        if report.first_offset.is_none() {
            report.first_offset = Some(base);
        }

        let mut pos = SEGMENT_HEADER_SIZE.min(data.len() as u64);
        loop {
            let mut visit_error = None;
            let mut undecoded = Vec::new();
            let scan = scan_frames(data, 0, pos, next, None, |f, at| {
                if visit_error.is_some() {
                    return;
                }
                if payloads == Payloads::Decoded
                    && let Some(why) = unreadable(f, &mut scratch)
                {
                    let d = Damage {
                        segment: path.clone(),
                        position: at,
                        reason: format!("record at offset {} passes its checksum but does not decode: {why}", f.offset),
                        size_bytes: f.frame_len as u64,
                        offsets_lost: Some((f.offset, f.offset)),
                        undecodable: true,
                    };
                    visit_error = visit(Walked::Damage(&d)).err();
                    undecoded.push(d);
                    return;
                }
                visit_error = visit(Walked::Record(f)).err();
            });
            if let Some(e) = visit_error {
                return Err(e);
            }
            report.damage.append(&mut undecoded);
            seg.records += scan.records;
            next = scan.next_offset;
            match scan.stop {
                Stop::End => {
                    if !last {
                        damage(
                            &mut report,
                            Damage {
                                segment: path.clone(),
                                position: scan.end_pos,
                                reason: "sealed segment does not end with a seal frame".into(),
                                size_bytes: 0,
                                offsets_lost: None,
                                undecodable: false,
                            },
                            &mut visit,
                        )?;
                    }
                    break;
                }
                Stop::Sealed { .. } => {
                    seg.sealed = true;
                    break;
                }
                Stop::Bad { pos: p, reason } => {
                    let resume = find_next_valid(data, p as usize + 1, 0);
                    if last && resume.is_none() {
                        if let Tail::Torn = classify_tail(data, 0, p as usize, next, reason) {
                            report.torn_tail = Some(Damage {
                                segment: path.clone(),
                                position: p,
                                reason: "torn tail: the last write was cut by a crash; a read-write open cuts it".into(),
                                size_bytes: data.len() as u64 - p,
                                offsets_lost: None,
                                undecodable: false,
                            });
                            break;
                        }
                    }
                    let (end, offsets_lost) = match resume {
                        Some(q) => {
                            let lost = match check_frame(&data[q..]) {
                                Check::Valid(f) if f.kind != KIND_SEAL && f.offset > next => Some((next, f.offset - 1)),
                                Check::Valid(f) if f.kind == KIND_SEAL && f.offset > next => Some((next, f.offset - 1)),
                                _ => None,
                            };
                            (q as u64, lost)
                        }
                        None => (data.len() as u64, None),
                    };
                    let reason = match classify_tail(data, 0, p as usize, next, reason) {
                        Tail::Corrupt(r) => r,
                        Tail::Torn => reason.to_owned(),
                    };
                    damage(
                        &mut report,
                        Damage { segment: path.clone(), position: p, reason, size_bytes: end - p, offsets_lost, undecodable: false },
                        &mut visit,
                    )?;
                    match resume {
                        Some(q) => {
                            if let Check::Valid(f) = check_frame(&data[q..]) {
                                next = f.offset.max(next);
                                if f.offset < next {
                                    // An older copy of records already read: step over it.
                                    pos = q as u64 + f.frame_len as u64;
                                    continue;
                                }
                            }
                            pos = q as u64;
                        }
                        None => break,
                    }
                }
            }
        }
        report.records += seg.records;
        expected = next;
        report.next_offset = Some(next);

        if seg.sealed {
            let idx = path.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
            match vfs.open_read(&idx).and_then(|f| {
                let mut b = vec![0u8; f.len()? as usize];
                f.read_exact_at(&mut b, 0)?;
                Ok(b)
            }) {
                Ok(b) if decode_index(&b, base, data.len() as u64).is_some() => {}
                Ok(_) => report.index_notes.push(format!("{}: stale or damaged, rebuilt on next open", idx.display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    report.index_notes.push(format!("{}: missing, rebuilt on next open", idx.display()))
                }
                // Not a damage of the journal (the segment holds everything the index does),
                // but not a missing file either: the reason is the user's to see.
                Err(e) => report.index_notes.push(format!("{}: could not be read ({e}), rebuilt on next open", idx.display())),
            }
        }
        report.segments.push(seg);
    }
    // A last segment whose file was removed leaves no trace in the segments before it.
    // (A journal whose every header is damaged names no store to compare `TIP` with.)
    let store = report.store_id.zip(report.epoch);
    let gone = match (store, report.segments.last()) {
        (Some(store), Some(last)) => segments_gone(dir, &tip, store, last.base, report.next_offset),
        _ => None,
    };
    if let Some(Error::Corrupt { segment, position, reason }) = gone {
        let d = Damage { segment, position, reason, size_bytes: 0, offsets_lost: None, undecodable: false };
        visit(Walked::Damage(&d))?;
        report.damage.push(d);
    }
    report.tip_note = match tip {
        TipFile::Unreadable(why) => Some(format!("{}: does not read ({why}); the next read-write open writes it again", tip_path(dir).display())),
        TipFile::Read(t) if store.is_some_and(|(id, epoch)| !t.is_of(id, epoch)) => {
            Some(format!("{}: written for another store or epoch; the next read-write open writes it again", tip_path(dir).display()))
        }
        _ => None,
    };
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::journal::{Journal, Options};
    use crate::segment::segment_file_name;
    use crate::sim::SimFs;

    /// A compaction while a walk is under way (here, as the walk reads the first record)
    /// replaces the first segment and removes the ones it merged: the walk reads the journal
    /// as it was when it began, every record once, where it failed to open a file the
    /// compaction removed (`origin journal verify` beside `origin journal compact`).
    #[test]
    fn a_walk_reads_the_journal_as_it_began_while_a_compaction_merges_its_segments() {
        let fs = SimFs::new(8);
        let dir = Path::new("/w/journal");
        let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts).expect("open");
        for i in 0..100u8 {
            j.append(vec![crate::journal::NewRecord::scratch(vec![i; 150])]).expect("append");
        }
        let before = j.segment_paths().len();
        assert!(before >= 4, "{before} segments");
        let (mut offsets, mut compacted) = (Vec::new(), None);
        let report = walk(&fs, dir, |w| {
            if let Walked::Record(f) = w {
                offsets.push(f.offset);
                if compacted.is_none() {
                    compacted = Some(crate::compact::compact(Arc::new(fs.clone()), dir, 64 * 1024).expect("compact"));
                }
            }
            Ok(())
        })
        .expect("walk beside a compaction");
        let compacted = compacted.expect("compacted during the walk");
        assert!(compacted.segments_after < before, "{compacted:?}");
        assert!(report.is_clean(), "{:?}", report.damage);
        assert_eq!(offsets, (0..100).collect::<Vec<u64>>());
        assert_eq!(report.segments.len(), before, "the files as the walk began");
        assert!(verify(&fs, dir).expect("verify after").is_clean());
    }

    /// Found by `cargo fuzz run journal_open` (fuzz/regressions/journal_open/): a segment named
    /// for offset u64::MAX (its header damaged) holding a valid frame with that offset. Verify
    /// resumed scanning at that offset and overflowed counting past it.
    #[test]
    fn a_segment_at_the_last_offset_is_reported_as_damage_not_an_overflow() {
        let bytes: [u8; 107] = [
            0x00, 0x28, 0x4f, 0xba, 0xc6, 0xff, 0x4f, 0xba, 0xc6, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0xb4, 0x5c,
            0x57, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xba, 0xc6,
            0xff, 0x4f, 0xba, 0xc6, 0x90, 0x40, 0xe7, 0xe3, 0x5e, 0x90, 0x2b, 0x00, 0x00, 0x00, 0x2b, 0xf2, 0x1d, 0x51,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xba, 0xc6, 0xff, 0x4f, 0xba, 0xc6, 0x90, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x71, 0x0f, 0xc3, 0xa5,
        ];
        let fs = SimFs::new(0);
        let dir = Path::new("/fuzz/journal");
        fs.create_dir_all(dir).expect("mkdir");
        let seg = dir.join(segment_file_name(u64::MAX));
        drop(fs.create_new(&seg).expect("create"));
        fs.write_file(&seg, &bytes).expect("write");
        assert!(Journal::open_with(Arc::new(fs.clone()), dir, Options::default()).is_err());
        let report = verify(&fs, dir).expect("verify walks a damaged journal");
        assert!(!report.is_clean());
        assert_eq!(report.records, 0);
        assert!(report.damage.iter().any(|d| d.position == 64 && d.reason.contains("end of the offset space")), "{report:?}");
    }

    /// An index file that is there but cannot be read is worded as such, not as missing.
    #[test]
    fn an_index_that_cannot_be_read_is_not_called_missing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("journal");
        let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
        let j = Journal::open(&dir, opts).expect("open");
        for i in 0..60u8 {
            j.append(vec![crate::journal::NewRecord::scratch(vec![i; 150])]).expect("append");
        }
        let first = j.segment_paths()[0].clone();
        drop(j);
        let idx = first.with_extension(INDEX_SUFFIX.trim_start_matches('.'));
        assert!(verify_dir(&dir).expect("verify").index_notes.is_empty(), "the sealed segment's index was written");
        // A directory where the index file should be: it opens, and reading it fails.
        std::fs::remove_file(&idx).expect("remove the index");
        std::fs::create_dir(&idx).expect("a directory in its place");
        let notes = verify_dir(&dir).expect("verify").index_notes;
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with(&format!("{}: could not be read (", idx.display())) && notes[0].ends_with("), rebuilt on next open"), "{notes:?}");
        std::fs::remove_dir(&idx).expect("remove the directory");
        let notes = verify_dir(&dir).expect("verify").index_notes;
        assert_eq!(notes, vec![format!("{}: missing, rebuilt on next open", idx.display())]);
    }
}

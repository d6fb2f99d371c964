//! `origin journal compact`: rewrite sealed segments, merging small neighbours, verifying the
//! journal before and each new segment after it is written, before anything is replaced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::frame::{encode_frame, KIND_SEAL};
use crate::index::encode_index;
use crate::journal::{find_seal, LOCK_FILE_NAME};
use crate::limits::{SEGMENT_SIZE_BYTES_MAX, SEGMENT_SIZE_BYTES_MIN};
use crate::recovery::{scan_frames, Stop};
use crate::segment::{segment_file_name, SegmentHeader, SEGMENT_HEADER_SIZE};
use crate::verify::{walk_inner, Payloads};
use crate::vfs::{LockMode, OsFs, Vfs};

/// What compaction did.
#[derive(Clone, Debug, Default)]
pub struct CompactReport {
    /// Segment files before.
    pub segments_before: usize,
    /// Segment files after.
    pub segments_after: usize,
    /// Bytes of segment files before.
    pub bytes_before: u64,
    /// Bytes after.
    pub bytes_after: u64,
    /// Each merge: the segments merged, and the segment that now holds them.
    pub merged: Vec<(Vec<PathBuf>, PathBuf)>,
}

/// Compacts the journal in `dir` on the real file system.
pub fn compact_dir(dir: &Path, segment_size_bytes_max: u64) -> Result<CompactReport> {
    compact(Arc::new(OsFs), dir, segment_size_bytes_max)
}

/// Merges runs of consecutive sealed segments whose records fit in one segment of
/// `segment_size_bytes_max`. Writers wait for it (it holds the store's lock); readers in other
/// processes keep reading the files they mapped.
pub fn compact(vfs: Arc<dyn Vfs>, dir: &Path, segment_size_bytes_max: u64) -> Result<CompactReport> {
    if !(SEGMENT_SIZE_BYTES_MIN..=SEGMENT_SIZE_BYTES_MAX).contains(&segment_size_bytes_max) {
        return Err(Error::Invalid(format!("segment size {segment_size_bytes_max} out of range")));
    }
    // No folder, no journal (the lock's open would say its file is missing instead).
    if !vfs.exists(dir).map_err(|e| Error::io("stat", dir, e))? {
        return Err(Error::NoJournal { dir: dir.to_path_buf() });
    }
    let lock_path = dir.join(LOCK_FILE_NAME);
    let _lock = vfs.lock(&lock_path, LockMode::Exclusive).map_err(|e| Error::io("lock", &lock_path, e))?;
    // What an interrupted compaction left is removed first, as a read-write open removes it
    // (this holds the same exclusive lock).
    let refused = |segment: PathBuf, position: u64, reason: &str| Error::Corrupt {
        segment,
        position,
        reason: format!("{reason} (compaction refuses a damaged journal: run `origin journal salvage`)"),
    };
    crate::journal::tidy(&*vfs, dir).map_err(|e| match e {
        Error::Corrupt { segment, position, reason } => refused(segment, position, &reason),
        e => e,
    })?;
    let before = walk_inner(&*vfs, dir, false, Payloads::Unread, |_| Ok(()))?;
    if let Some(d) = before.damage.first() {
        return Err(refused(d.segment.clone(), d.position, &d.reason));
    }
    let mut report = CompactReport {
        segments_before: before.segments.len(),
        bytes_before: before.bytes,
        ..CompactReport::default()
    };
    // Sealed segments only: the last one may be growing.
    let sealed: Vec<_> = before.segments.iter().filter(|s| s.sealed).take(before.segments.len().saturating_sub(1)).collect();
    let overhead = SEGMENT_HEADER_SIZE + crate::frame::FRAME_OVERHEAD as u64;
    let mut groups: Vec<Vec<&crate::verify::SegmentReport>> = Vec::new();
    let mut current: Vec<&crate::verify::SegmentReport> = Vec::new();
    let mut size = overhead;
    for s in sealed {
        let body = s.bytes - overhead;
        if !current.is_empty() && size + body > segment_size_bytes_max {
            groups.push(std::mem::take(&mut current));
            size = overhead;
        }
        size += body;
        current.push(s);
    }
    groups.push(current);

    for group in groups.into_iter().filter(|g| g.len() >= 2) {
        let first = group[0];
        let tmp = dir.join(format!("{}.compact", segment_file_name(first.base)));
        let mut out = Vec::new();
        let mut header = None;
        let mut next = first.base;
        for s in &group {
            let bytes = vfs.open_read(&s.path).and_then(|f| f.map()).map_err(|e| Error::io("map", &s.path, e))?;
            let h = SegmentHeader::decode(&bytes, &s.path)?;
            let (seal_pos, seal_next) = find_seal(&bytes, &s.path)?;
            if header.is_none() {
                header = Some(h);
                out.extend_from_slice(&h.encode());
            }
            out.extend_from_slice(&bytes[SEGMENT_HEADER_SIZE as usize..seal_pos as usize]);
            next = seal_next;
        }
        let Some(h) = header else { continue };
        encode_frame(&mut out, next, h.created_unix_ms, KIND_SEAL, 1, 0, &[]);
        // Check the new segment before it replaces anything.
        let records: u64 = group.iter().map(|s| s.records).sum();
        let scan = scan_frames(&out, 0, SEGMENT_HEADER_SIZE, first.base, None, |_, _| {});
        let sealed_right = matches!(scan.stop, Stop::Sealed { next_offset, .. } if next_offset == next);
        if !sealed_right || scan.records != records {
            return Err(Error::corrupt(&tmp, scan.end_pos, "merged segment did not verify; nothing was replaced"));
        }
        let f = vfs.create_new(&tmp).map_err(|e| Error::io("create", &tmp, e))?;
        let written = (|| {
            f.write_all_at(&out, 0).map_err(|e| Error::io("write", &tmp, e))?;
            f.sync_data().map_err(|e| Error::io("fdatasync", &tmp, e))?;
            let mut back = vec![0u8; out.len()];
            f.read_exact_at(&mut back, 0).map_err(|e| Error::io("read", &tmp, e))?;
            if back != out {
                return Err(Error::corrupt(&tmp, 0, "merged segment read back differently; nothing was replaced"));
            }
            vfs.rename(&tmp, &first.path).map_err(|e| Error::io("rename", &tmp, e))
        })();
        if let Err(e) = written {
            // Nothing was replaced: the merged copy goes, so that a full disk is not kept full
            // by it until the next open or compaction (which would remove it too).
            drop(f);
            let _ = vfs.remove_file(&tmp);
            return Err(e);
        }
        vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))?;
        // From here the merged segment covers the others: removing them is cleanup, and an
        // open after a crash here removes them too.
        for s in &group[1..] {
            vfs.remove_file(&s.path).map_err(|e| Error::io("remove", &s.path, e))?;
        }
        for s in &group {
            let idx = s.path.with_extension("idx");
            if vfs.exists(&idx).unwrap_or(false) {
                vfs.remove_file(&idx).map_err(|e| Error::io("remove", &idx, e))?;
            }
        }
        vfs.sync_dir(dir).map_err(|e| Error::io("fsync directory", dir, e))?;
        let idx = encode_index(first.base, out.len() as u64, &scan.sparse);
        let idx_path = first.path.with_extension("idx");
        if let Ok(f) = vfs.create_new(&idx_path) {
            // The index is a cache: a failed write only costs a rebuild at the next open.
            let _ = f.write_all_at(&idx, 0);
        }
        report.merged.push((group.iter().map(|s| s.path.clone()).collect(), first.path.clone()));
    }
    let after = walk_inner(&*vfs, dir, false, Payloads::Unread, |_| Ok(()))?;
    if !after.damage.is_empty() || after.records != before.records || after.next_offset != before.next_offset {
        return Err(Error::corrupt(dir, 0, "journal after compaction does not match the journal before"));
    }
    report.segments_after = after.segments.len();
    report.bytes_after = after.bytes;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Journal, NewRecord, Options};
    use crate::sim::SimFs;

    #[test]
    fn compaction_merges_sealed_segments_and_keeps_every_record() {
        let fs = SimFs::new(4);
        let dir = Path::new("/c/journal");
        let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts.clone()).expect("open");
        for i in 0..100u8 {
            j.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
        }
        let before = j.segment_paths().len();
        drop(j);
        let r = compact(Arc::new(fs.clone()), dir, 64 * 1024).expect("compact");
        assert_eq!(r.segments_before, before);
        assert_eq!(r.segments_after, 2, "all sealed segments merge into one, the active stays");
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts).expect("reopen");
        let recs = j.read_vec(0, usize::MAX).expect("read");
        assert_eq!(recs.iter().map(|r| r.payload[0]).collect::<Vec<_>>(), (0..100u8).collect::<Vec<_>>());
        j.append(vec![NewRecord::scratch(vec![7])]).expect("append after compaction");
        assert!(crate::verify::verify(&fs, dir).expect("verify").is_clean());
    }

    /// Handles that have not looked at the journal since a compaction merged segments they had
    /// not reached (their files gone, the segment after their last seal missing with segments
    /// after it): one that reads learns every record, through the merged segment; one that
    /// appends at once writes after the last record. Neither creates the missing segment again
    /// (which wrote offsets the merged segment holds: a damaged journal).
    #[test]
    fn handles_behind_a_compaction_read_and_append_past_it() {
        for group_bytes in [64 * 1024, 8 * 1024] {
            let fs = SimFs::new(6);
            let dir = Path::new("/c/journal");
            let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
            let open = || Journal::open_with(Arc::new(fs.clone()), dir, opts.clone()).expect("open");
            let (reader, writer, other) = (open(), open(), open());
            for i in 0..100u8 {
                other.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
            }
            assert!(other.segment_paths().len() >= 4, "{:?}", other.segment_paths());
            let r = compact(Arc::new(fs.clone()), dir, group_bytes).expect("compact");
            assert!(r.segments_after < r.segments_before, "{r:?}");
            assert_eq!(reader.next_offset(), 0, "the reader has not looked since it opened");
            reader.refresh().expect("refresh");
            assert_eq!(reader.next_offset(), 100);
            let payloads = |j: &Journal| j.read_vec(0, usize::MAX).expect("read").iter().map(|r| r.payload[0]).collect::<Vec<_>>();
            assert_eq!(payloads(&reader), (0..100u8).collect::<Vec<_>>());
            assert_eq!(writer.append(vec![NewRecord::scratch(vec![100])]).expect("append behind"), 100..101);
            assert!(crate::verify::verify(&fs, dir).expect("verify").is_clean(), "group {group_bytes}");
            for j in [&reader, &other] {
                j.refresh().expect("refresh");
                assert_eq!(payloads(j), (0..=100u8).collect::<Vec<_>>());
            }
            assert_eq!(payloads(&open()), (0..=100u8).collect::<Vec<_>>());
        }
    }

    /// Every `.idx` in `dir` beside its segment: none left of a segment that is gone.
    fn orphan_indexes(fs: &SimFs, dir: &Path) -> Vec<String> {
        let names = fs.list_dir(dir).expect("list");
        names.iter().filter(|n| n.ends_with(".idx") && !names.contains(&n.replace(".idx", ".seg"))).cloned().collect()
    }

    /// A writer whose segment was sealed by another and then merged away by a compaction,
    /// while the segment after it stayed, appends past it without writing that segment's
    /// index again: it wrote an index of a segment that was gone (left for good; the probe
    /// beside real processes found up to 23 in a journal). A writer's open removes such
    /// leftovers.
    #[test]
    fn a_writer_behind_a_compaction_writes_no_index_of_a_segment_gone() {
        let fs = SimFs::new(8);
        let dir = Path::new("/c/journal");
        let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
        let open = || Journal::open_with(Arc::new(fs.clone()), dir, opts.clone()).expect("open");
        let other = open();
        let mut i = 0u8;
        while other.segment_paths().len() < 2 {
            other.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
            i += 1;
        }
        // Its active segment is the second; the other seals it and starts a third.
        let writer = open();
        while other.segment_paths().len() < 3 {
            other.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
            i += 1;
        }
        let r = compact(Arc::new(fs.clone()), dir, 64 * 1024).expect("compact");
        assert_eq!((r.segments_before, r.segments_after), (3, 2), "{r:?}");
        writer.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append behind");
        assert_eq!(orphan_indexes(&fs, dir), Vec::<String>::new());
        assert!(crate::verify::verify(&fs, dir).expect("verify").is_clean());
        // One left by an earlier build is removed by a writer's open.
        let gone = dir.join(crate::segment::segment_file_name(1)).with_extension("idx");
        fs.create_new(&gone).expect("create").write_all_at(b"stale", 0).expect("write");
        drop(open());
        assert_eq!(orphan_indexes(&fs, dir), Vec::<String>::new());
    }

    /// A journal of 60 records in segments of 4 KiB on a simulated disk seeded `seed`.
    fn sixty_records_in_small_segments(seed: u64) -> (SimFs, &'static Path, Options) {
        let fs = SimFs::new(seed);
        let dir = Path::new("/c/journal");
        let opts = Options { segment_size_bytes_max: 4096, ..Options::default() };
        let j = Journal::open_with(Arc::new(fs.clone()), dir, opts.clone()).expect("open");
        for i in 0..60u8 {
            j.append(vec![NewRecord::scratch(vec![i; 150])]).expect("append");
        }
        (fs, dir, opts)
    }

    /// How many I/O calls a compaction of the journal in `dir` makes (on a copy of `fs`).
    fn compaction_calls(fs: &SimFs, dir: &Path) -> u64 {
        let probe = fs.snapshot();
        let start = probe.ops();
        compact(Arc::new(probe.clone()), dir, 64 * 1024).expect("compact");
        probe.ops() - start
    }

    /// A compaction failing at any of its calls (a full disk, a failed fsync) loses nothing
    /// and leaves no merged copy behind (it kept a full disk full until the next open).
    #[test]
    fn a_compaction_that_fails_leaves_no_merged_copy() {
        let (fs, dir, opts) = sixty_records_in_small_segments(6);
        let calls = compaction_calls(&fs, dir);
        let mut failed = 0;
        for k in 0..calls {
            for fault in [crate::sim::Fault::DiskFull, crate::sim::Fault::SyncFails] {
                let run = fs.snapshot();
                run.inject(run.ops() + k, fault);
                if compact(Arc::new(run.clone()), dir, 64 * 1024).is_ok() {
                    continue;
                }
                failed += 1;
                let left: Vec<String> = run.list_dir(dir).expect("list").into_iter().filter(|n| n.ends_with(".compact")).collect();
                assert!(left.is_empty(), "{fault:?} at compaction call {k} left {left:?}");
                let j = Journal::open_with(Arc::new(run.clone()), dir, opts.clone()).expect("open");
                assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60, "{fault:?} at compaction call {k}");
            }
        }
        assert!(failed > 0, "some faults met a call that can fail");
    }

    #[test]
    fn a_crash_after_the_rename_leaves_leftovers_that_open_removes() {
        let (fs, dir, opts) = sixty_records_in_small_segments(5);
        // Crash at every I/O call of the compaction; every survivor opens with all records.
        let calls = compaction_calls(&fs, dir);
        for k in 0..calls {
            let run = fs.snapshot();
            run.inject(run.ops() + k, crate::sim::Fault::PowerCut);
            let _ = compact(Arc::new(run.clone()), dir, 64 * 1024);
            for seed in 0..3 {
                let after = run.after_power_cut(seed * 31 + k);
                // Compacting again at once (no open first) cleans up what the crash left.
                let direct = after.snapshot();
                compact(Arc::new(direct.clone()), dir, 64 * 1024)
                    .unwrap_or_else(|e| panic!("compaction after a crash at compaction call {k}, seed {seed}: {e}"));
                assert!(crate::verify::verify(&direct, dir).expect("verify").is_clean());
                let j = Journal::open_with(Arc::new(direct.clone()), dir, opts.clone()).expect("open");
                assert_eq!(j.read_vec(0, usize::MAX).expect("read").len(), 60, "crash at compaction call {k}, seed {seed}, compacted again");
                drop(j);
                let j = Journal::open_with(Arc::new(after.clone()), dir, opts.clone())
                    .unwrap_or_else(|e| panic!("open after crash at compaction call {k}, seed {seed}: {e}"));
                let recs = j.read_vec(0, usize::MAX).expect("read");
                assert_eq!(recs.len(), 60, "crash at compaction call {k}, seed {seed}");
                drop(j);
                assert!(crate::verify::verify(&after, dir).expect("verify").is_clean());
            }
        }
    }
}
